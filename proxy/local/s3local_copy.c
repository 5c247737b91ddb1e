/* s3local_copy.c — the embedded S3 server's copies and the read-only
 * answers S3 tools expect of any bucket: CopyObject (both metadata
 * directives; the copy carries the writer's fencing stamp and goes through
 * the same compare-and-swap as a PUT), the source of UploadPartCopy, and
 * GetObjectAcl / GetBucketAcl (the one owner has FULL_CONTROL). A source
 * is read from disk as it is copied (the store's file of that version), so
 * copies up to S3's 5 GiB take no more memory than a small one. Buckets are
 * unversioned: ListObjectVersions is a listing (s3local_list.c). It does
 * not parse requests (s3local.c) and never changes ACLs. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "s3/s3req.h"
#include "wire/pct.h"
#include "s3local.h"
#include "s3local_int.h"
#include "lock/store/store.h"

int s3l_read_copy_source(struct s3l_call *c, struct store_result *res, int *fd)
{
	struct s3_copy_source cs;
	const char *why = NULL, *bucket, *key;
	struct store *st = NULL;
	int owned = 0, rc = -1, pr;

	*fd = -1;
	/* the one parse authz authorised (s3req.h) */
	pr = s3_copy_source_parse(c->copy_source, &cs, &why);
	if (pr != 0) {
		s3l_call_fail(c, pr < 0 ? 503 : 400, pr < 0 ? "SlowDown" : "InvalidArgument", "%s",
			      pr < 0 ? "out of memory" : why);
		goto out;
	}
	if (cs.version && strcmp(cs.version, "null") != 0) {
		s3l_call_fail(c, 404, "NoSuchVersion", "buckets of the embedded store are not versioned");
		goto out;
	}
	bucket = cs.bucket;
	key = cs.key;
	if (!s3_bucket_name_valid(bucket, strlen(bucket)) || strlen(key) > S3L_KEY_MAX) {
		s3l_call_fail(c, 400, "InvalidArgument", "x-amz-copy-source names no valid bucket and key");
		goto out;
	}
	st = s3l_named_store(c, bucket, &owned);
	if (!st)
		goto out;
	/* the bytes of the very version whose metadata res holds, read from
	 * disk as they are copied: never whole in memory */
	if (store_get_file(st, key, fd, res) != STORE_OK) {
		if (res->code == STORE_NOT_FOUND)
			s3l_call_fail(c, 404, "NoSuchKey", "the copy source \"%s\" does not exist", key);
		else
			s3l_fail_from_store(c, res);
		goto out;
	}
	if ((c->copy_if_match && !store_etag_matches(c->copy_if_match, res->etag)) ||
	    (c->copy_if_none_match && store_etag_matches(c->copy_if_none_match, res->etag))) {
		s3l_call_fail(c, 412, "PreconditionFailed",
			      "the copy source is at ETag %s (x-amz-copy-source-if-*)", res->etag);
		goto out;
	}
	if (c->op == OP_COPY && res->content_length > S3L_COPY_MAX) {
		s3l_call_fail(c, 400, "InvalidRequest",
			      "The specified copy source is larger than the maximum allowable size "
			      "for a copy source: %lld", (long long)S3L_COPY_MAX);
		goto out;
	}
	if (strcmp(bucket, c->bucket) == 0 && strcmp(key, c->key) == 0 && c->op == OP_COPY &&
	    !c->replace_metadata) {
		s3l_call_fail(c, 400, "InvalidRequest",
			      "This copy request is illegal because it is trying to copy an object to "
			      "itself without changing the object's metadata");
		goto out;
	}
	rc = 0;
out:
	if (rc < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	if (st)
		s3l_release_store(st, owned);
	s3_copy_source_clear(&cs);
	return rc;
}

void s3l_run_copy(struct s3l_call *c)
{
	struct store_result src = STORE_RESULT_INIT;
	struct store_file_range from = { .fd = -1 };
	int src_fd = -1;
	struct store_put_opts opts = { 0 };
	struct store_meta meta[STORE_META_MAX];
	struct evbuffer *b = NULL;
	struct store *st = NULL;
	size_t i, n = 0;
	int owned = 0;
	char when[40];

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st || s3l_read_copy_source(c, &src, &src_fd) < 0)
		goto out;
	from.fd = src_fd;
	from.len = src.content_length;
	if (c->replace_metadata) {
		s3l_object_opts(c, &opts);
	} else {
		/* COPY: the source's metadata, except the proxy's stamp, which
		 * is this request's (the writer's epoch) */
		for (i = 0; i < src.nmeta && n < STORE_META_MAX; i++)
			if (strncasecmp(src.meta[i].name, S3LOCAL_OWNED_META_PREFIX,
					strlen(S3LOCAL_OWNED_META_PREFIX)) != 0)
				meta[n++] = src.meta[i];
		for (i = 0; i < c->nmeta && n < STORE_META_MAX; i++)
			if (strncasecmp(c->meta[i].name, S3LOCAL_OWNED_META_PREFIX,
					strlen(S3LOCAL_OWNED_META_PREFIX)) == 0)
				meta[n++] = c->meta[i];
		opts.meta = meta;
		opts.nmeta = n;
		opts.content_type = src.content_type[0] ? src.content_type : NULL;
		opts.headers = (const char *const *)src.headers;
	}
	/* the same bytes: the source's checksum holds for the copy */
	if (src.checksum_name[0]) {
		opts.checksum_name = src.checksum_name;
		opts.checksum_value = src.checksum_value;
	}
	opts.files = &from;
	opts.nfiles = 1;
	s3l_put_object(c, st, &opts, NULL, 0);
	if (c->err_code)
		goto out;
	b = evbuffer_new();
	if (!b) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		goto out;
	}
	s3l_iso8601(c->res.last_modified ? c->res.last_modified : (int64_t)time(NULL), when, sizeof(when));
	evbuffer_add_printf(b, S3L_XML_DECL "<CopyObjectResult xmlns=\"" S3L_XMLNS "\">"
			    "<LastModified>%s</LastModified>", when);
	s3l_xml_elem(b, "ETag", c->res.etag, 0);
	evbuffer_add_printf(b, "</CopyObjectResult>");
	s3l_take_xml(c, b);
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
	if (src_fd >= 0)
		close(src_fd);
	store_result_clear(&src);
	if (b)
		evbuffer_free(b);
}

void s3l_run_get_acl(struct s3l_call *c)
{
	static const char body[] = S3L_XML_DECL "<AccessControlPolicy xmlns=\"" S3L_XMLNS "\">"
		S3L_OWNER "<AccessControlList><Grant>"
		"<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">"
		"<ID>fencegate</ID><DisplayName>fencegate</DisplayName></Grantee>"
		"<Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>";
	struct store *st = NULL;
	int owned = 0;

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st)
		goto out;
	if (c->op == OP_GET_ACL && store_head(st, c->key, &c->res) != STORE_OK) {
		s3l_fail_from_store(c, &c->res);
		goto out;
	}
	store_result_clear(&c->res);
	c->xml = strdup(body);
	if (!c->xml) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		goto out;
	}
	c->xml_len = sizeof(body) - 1;
	c->status = 200;
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
}
