/* s3local_object.c — the embedded S3 server's objects: the jobs of
 * GetObject, HeadObject, PutObject and DeleteObject (the client's
 * conditions, ranges, Content-MD5, aws-chunked framing, and the fencing
 * contract's object-level compare-and-swap of s3local.h, on ETag and
 * stored epoch), the write every other writer (copies, multipart
 * completion) goes through, and the object headers of the reply. Plain
 * bodies arrive spooled to a file (s3local_spool.c), aws-chunked ones with
 * signed chunks in memory, whose signatures it does not check (nothing
 * here authenticates). Request headers are read by s3local_headers.c. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "http/proxy.h"
#include "wire/pct.h"
#include "s3local.h"
#include "s3local_int.h"
#include "lock/store/store.h"

/* ---- small helpers ----------------------------------------------------- */

/* "1".."18446744073709551615" without sign or blanks; 0 on success. */
int s3l_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t n = 0;

	if (!s || !*s)
		return -1;
	for (; *s; s++, n++) {
		if (*s < '0' || *s > '9' || n >= 19)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* After a conditional write of the object CAS: 1 when it is settled (done:
 * c->status = ok_status; or failed: the store's error answered), 0 when
 * another writer came in between and the caller looks again. */
static int cas_settled(struct s3l_call *c, enum store_code code, int ok_status)
{
	if (code == STORE_OK) {
		c->status = ok_status;
		return 1;
	}
	if (code != STORE_PRECONDITION_FAILED && code != STORE_NOT_FOUND) {
		s3l_fail_from_store(c, &c->res);
		return 1;
	}
	return 0;
}

/* 1 if any entry of the comma-separated ETag list matches have. */
static int etag_list_match(const char *list, const char *have)
{
	char buf[STORE_ETAG_MAX * 2];
	const char *p = list;

	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			if (store_etag_matches(buf, have))
				return 1;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

/* ---- object jobs -------------------------------------------------------- */

/* Decodes an aws-chunked body in place ("SIZE[;ext]\r\nDATA\r\n" ... "0..."
 * then trailers). Chunk signatures are not checked: this server does not
 * authenticate. Returns 0, or -1 with c failed. */
static int aws_chunked_decode(struct s3l_call *c)
{
	char *in = c->body, *end = c->body + c->body_len, *out = c->body;

	for (;;) {
		char *eol = memmem(in, (size_t)(end - in), "\r\n", 2);
		uint64_t size = 0;
		char *p;

		if (!eol)
			goto bad;
		for (p = in; p < eol && hex_value((unsigned char)*p) >= 0; p++) {
			if (size > (UINT64_MAX >> 4))
				goto bad;
			size = size * 16 + (uint64_t)hex_value((unsigned char)*p);
		}
		if (p == in || (p < eol && *p != ';'))
			goto bad;
		in = eol + 2;
		if (size == 0)
			break; /* trailers follow; not needed */
		if (size > (uint64_t)(end - in) || (uint64_t)(end - in) - size < 2 ||
		    memcmp(in + size, "\r\n", 2) != 0)
			goto bad;
		memmove(out, in, (size_t)size);
		out += size;
		in += size + 2;
	}
	c->body_len = (size_t)(out - c->body);
	if (c->decoded_length >= 0 && (uint64_t)c->decoded_length != c->body_len) {
		s3l_call_fail(c, 400, "IncompleteBody",
			      "the aws-chunked body holds %zu bytes, x-amz-decoded-content-length says %" PRId64,
			      c->body_len, c->decoded_length);
		return -1;
	}
	return 0;
bad:
	s3l_call_fail(c, 400, "InvalidChunkSizeError", "the aws-chunked request body is malformed");
	return -1;
}

/* Checks Content-MD5 (base64 of the MD5 of the body) against the body's
 * MD5 have (NULL: of the body in memory). Returns 0 or -1. */
static int check_content_md5(struct s3l_call *c, const unsigned char *have)
{
	unsigned char want[32], mem[EVP_MAX_MD_SIZE];
	unsigned int hlen = 16;
	size_t n = strlen(c->content_md5);

	if (n != 24 || EVP_DecodeBlock(want, (const unsigned char *)c->content_md5, (int)n) != 18) {
		s3l_call_fail(c, 400, "InvalidDigest", "the Content-MD5 you specified is not valid");
		return -1;
	}
	if (!have && !EVP_Digest(c->body ? c->body : "", c->body_len, mem, &hlen, EVP_md5(), NULL))
		hlen = 0;
	if (!have)
		have = mem;
	if (hlen != 16 || memcmp(want, have, 16) != 0) {
		s3l_call_fail(c, 400, "BadDigest",
			      "the Content-MD5 you specified did not match what was received");
		return -1;
	}
	return 0;
}

/* The epoch an object was last written under (fencing-epoch metadata). */
static uint64_t object_epoch(const struct store_result *res)
{
	const char *v = store_result_meta(res, S3LOCAL_EPOCH_META);
	uint64_t e = 0;

	if (!v || s3l_parse_u64(v, &e) < 0)
		return 0;
	return e;
}

/* A fenced write meets an object written under a newer epoch than its own:
 * 409 FencingTokenStale (and 1); else 0. */
static int refused_newer_object(struct s3l_call *c, const struct store_result *cur)
{
	if (object_epoch(cur) <= c->epoch)
		return 0;
	c->has_object_epoch = 1;
	c->object_epoch = object_epoch(cur);
	s3l_call_fail(c, 409, "FencingTokenStale",
		      "the object \"%s\" was written under epoch %" PRIu64
		      ", newer than the presented epoch %" PRIu64,
		      c->key, c->object_epoch, c->epoch);
	return 1;
}

/* The stored fencing-epoch text of a version as the store compares it
 * ("" when absent). */
static const char *stored_epoch(const struct store_result *res)
{
	const char *v = store_result_meta(res, S3LOCAL_EPOCH_META);

	return v ? v : "";
}

/* The client's If-Match / If-None-Match against the version in cur
 * (exists: found). Returns 0 if they hold, -1 with c failed. */
static int client_write_conditions(struct s3l_call *c, int exists, const struct store_result *cur)
{
	if (c->if_match) {
		if (!exists) {
			s3l_call_fail(c, 404, "NoSuchKey", "the key \"%s\" does not exist (If-Match)", c->key);
			return -1;
		}
		if (!etag_list_match(c->if_match, cur->etag)) {
			s3l_call_fail(c, 412, "PreconditionFailed",
				      "the object is at ETag %s, not the one given in If-Match", cur->etag);
			return -1;
		}
	}
	if (c->if_none_match && exists) {
		s3l_call_fail(c, 412, "PreconditionFailed",
			      "the key \"%s\" already exists (If-None-Match: *)", c->key);
		return -1;
	}
	return 0;
}

/* The body's checksum (c->checksum_algo) into c->checksum_value, checked
 * against the x-amz-checksum-* value the client sent. 0, or -1 with c
 * failed (400 BadDigest, as S3: nothing is written). */
static int check_checksum(struct s3l_call *c)
{
	if (c->checksum_algo == CHECKSUM_NONE)
		return 0;
	if (c->spool ? s3l_spool_checksum(c->spool, c->checksum_value) < 0
		     : checksum_of(c->checksum_algo, c->body ? c->body : "", c->body_len,
				   c->checksum_value) < 0) {
		s3l_call_fail(c, 500, "InternalError", "computing the body's checksum failed");
		return -1;
	}
	if (c->checksum_want && strcmp(c->checksum_want, c->checksum_value) != 0) {
		s3l_call_fail(c, 400, "BadDigest", "The %s you specified did not match the "
			      "calculated checksum.", checksum_name(c->checksum_algo));
		return -1;
	}
	return 0;
}

int s3l_prepare_body(struct s3l_call *c, struct store_file_range *r)
{
	unsigned char md5[16];

	if (c->spool) {
		if (s3l_spool_finish(c, md5, r) < 0 ||
		    (c->content_md5 && check_content_md5(c, md5) < 0))
			return -1;
		return check_checksum(c);
	}
	if (c->aws_chunked && aws_chunked_decode(c) < 0)
		return -1;
	if (c->body_len > c->s->max_object) {
		s3l_call_fail(c, 413, "EntityTooLarge",
			      "the embedded store takes objects up to %zu bytes", c->s->max_object);
		return -1;
	}
	if (c->content_md5 && check_content_md5(c, NULL) < 0)
		return -1;
	return check_checksum(c);
}

void s3l_put_object(struct s3l_call *c, struct store *st, struct store_put_opts *opts,
		    const void *body, size_t len)
{
	struct store_result cur = STORE_RESULT_INIT;
	char etag[STORE_ETAG_MAX], seen_epoch[S3L_META_BYTES + 1];
	int attempt;
	enum store_code code;

	if (!c->has_epoch) {
		if (c->if_none_match) {
			opts->cond = STORE_COND_IF_NONE_MATCH_ANY;
		} else if (c->if_match) {
			opts->cond = STORE_COND_IF_MATCH;
			opts->etag = c->if_match;
		}
		code = store_put(st, c->key, body, len, opts, &c->res);
		if (code != STORE_OK)
			s3l_fail_from_store(c, &c->res);
		else
			c->status = 200;
		return;
	}
	/* the object-level compare-and-swap of the fencing contract */
	for (attempt = 0; attempt < S3LOCAL_CAS_ATTEMPTS; attempt++) {
		int exists;

		code = store_head(st, c->key, &cur);
		if (code != STORE_OK && code != STORE_NOT_FOUND) {
			s3l_fail_from_store(c, &cur);
			goto out;
		}
		exists = code == STORE_OK;
		if (exists && refused_newer_object(c, &cur))
			goto out;
		if (client_write_conditions(c, exists, &cur) < 0)
			goto out;
		/* exactly that version: its ETag and its epoch (the same bytes
		 * rewritten under a newer epoch keep the ETag) */
		if (exists) {
			snprintf(etag, sizeof(etag), "%s", cur.etag);
			snprintf(seen_epoch, sizeof(seen_epoch), "%s", stored_epoch(&cur));
			opts->cond = STORE_COND_IF_MATCH;
			opts->etag = etag;
			opts->if_meta.name = S3LOCAL_EPOCH_META;
			opts->if_meta.value = seen_epoch;
		} else {
			opts->cond = STORE_COND_IF_NONE_MATCH_ANY;
			opts->etag = NULL;
			opts->if_meta.name = NULL;
		}
		code = store_put(st, c->key, body, len, opts, &c->res);
		if (cas_settled(c, code, 200))
			goto out;
		/* another writer came in between: look again */
	}
	s3l_call_fail(c, 503, "SlowDown",
		      "the key \"%s\" kept changing under concurrent writers; retry", c->key);
out:
	store_result_clear(&cur);
}

void s3l_run_put(struct s3l_call *c)
{
	struct store_put_opts opts = { 0 };
	struct store_file_range r = { .fd = -1 };
	struct store *st = NULL;
	int owned = 0;

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st || s3l_prepare_body(c, &r) < 0)
		goto out;
	s3l_object_opts(c, &opts);
	if (r.fd >= 0) {
		unsigned char md5[16];
		char etag[40];

		/* the spooled file becomes the object (its MD5 is the ETag) */
		if (s3l_spool_md5(c->spool, md5) < 0) {
			s3l_call_fail(c, 500, "InternalError", "the body's MD5 is lost");
			goto out;
		}
		etag[0] = '"';
		hex_encode(md5, 16, etag + 1);
		etag[33] = '"';
		etag[34] = '\0';
		opts.files = &r;
		opts.nfiles = 1;
		opts.object_etag = etag;
		opts.adopt = 1;
		s3l_put_object(c, st, &opts, NULL, 0);
	} else {
		s3l_put_object(c, st, &opts, c->body ? c->body : "", c->body_len);
	}
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
}

void s3l_object_opts(const struct s3l_call *c, struct store_put_opts *opts)
{
	opts->content_type = c->content_type;
	opts->meta = c->meta;
	opts->nmeta = c->nmeta;
	opts->headers = (const char *const *)c->headers;
	if (c->checksum_value[0]) {
		opts->checksum_name = checksum_header(c->checksum_algo);
		opts->checksum_value = c->checksum_value;
	}
}

void s3l_run_delete(struct s3l_call *c)
{
	struct store_delete_opts dopts = { 0 };
	struct store_result cur = STORE_RESULT_INIT;
	struct store *st = NULL;
	char etag[STORE_ETAG_MAX], seen_epoch[S3L_META_BYTES + 1];
	int owned = 0, attempt;
	enum store_code code;

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st)
		goto out;
	if (!c->has_epoch) {
		code = store_delete(st, c->key, c->if_match, &c->res);
		if (code != STORE_OK)
			s3l_fail_from_store(c, &c->res);
		else
			c->status = 204;
		goto out;
	}
	for (attempt = 0; attempt < S3LOCAL_CAS_ATTEMPTS; attempt++) {
		code = store_head(st, c->key, &cur);
		if (code == STORE_NOT_FOUND) {
			if (c->if_match)
				s3l_call_fail(c, 404, "NoSuchKey", "the key \"%s\" does not exist (If-Match)", c->key);
			else
				c->status = 204;
			goto out;
		}
		if (code != STORE_OK) {
			s3l_fail_from_store(c, &cur);
			goto out;
		}
		if (refused_newer_object(c, &cur))
			goto out;
		if (c->if_match && !etag_list_match(c->if_match, cur.etag)) {
			s3l_call_fail(c, 412, "PreconditionFailed",
				      "the object is at ETag %s, not the one given in If-Match", cur.etag);
			goto out;
		}
		snprintf(etag, sizeof(etag), "%s", cur.etag);
		snprintf(seen_epoch, sizeof(seen_epoch), "%s", stored_epoch(&cur));
		dopts.if_match = etag;
		dopts.if_meta.name = S3LOCAL_EPOCH_META;
		dopts.if_meta.value = seen_epoch;
		code = store_delete_ex(st, c->key, &dopts, &c->res);
		if (cas_settled(c, code, 204))
			goto out;
	}
	s3l_call_fail(c, 503, "SlowDown",
		      "the key \"%s\" kept changing under concurrent writers; retry", c->key);
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
	store_result_clear(&cur);
}

/* The read conditions on the version in res: 0 to serve it, else c failed
 * (412) or c->status = 304. */
static int read_conditions(struct s3l_call *c, const struct store_result *res)
{
	if (c->if_match) {
		if (!etag_list_match(c->if_match, res->etag)) {
			s3l_call_fail(c, 412, "PreconditionFailed",
				      "the object is at ETag %s, not the one given in If-Match", res->etag);
			return -1;
		}
	} else if (c->if_unmodified_since && res->last_modified > c->if_unmodified_since) {
		s3l_call_fail(c, 412, "PreconditionFailed",
			      "the object was modified after If-Unmodified-Since");
		return -1;
	}
	if (c->if_none_match) {
		if (etag_list_match(c->if_none_match, res->etag)) {
			c->status = 304;
			return -1;
		}
	} else if (c->if_modified_since && res->last_modified <= c->if_modified_since) {
		c->status = 304;
		return -1;
	}
	return 0;
}

/* Parses c->range against size into range_start/range_len and partial.
 * A header this server does not understand (several ranges, other units,
 * bad syntax) is ignored, as HTTP allows. Returns 0, or -1 with c failed
 * (416). */
static int resolve_range(struct s3l_call *c, int64_t size)
{
	const char *r = c->range;
	char *endp;
	int64_t a = -1, b = -1;

	c->range_start = 0;
	c->range_len = size;
	c->partial = 0;
	if (!r || strncmp(r, "bytes=", 6) != 0 || strchr(r, ','))
		return 0;
	r += 6;
	if (*r == '-') {
		if (r[1] < '0' || r[1] > '9')
			return 0;
		errno = 0;
		b = strtoll(r + 1, &endp, 10);
		if (*endp || errno)
			return 0;
		if (b == 0 || size == 0)
			goto unsatisfiable;
		c->range_start = b >= size ? 0 : size - b;
		c->range_len = size - c->range_start;
		c->partial = 1;
		return 0;
	}
	if (*r < '0' || *r > '9')
		return 0;
	errno = 0;
	a = strtoll(r, &endp, 10);
	if (errno || *endp != '-')
		return 0;
	r = endp + 1;
	if (*r) {
		if (*r < '0' || *r > '9')
			return 0;
		b = strtoll(r, &endp, 10);
		if (*endp || errno || b < a)
			return 0;
	}
	if (a >= size)
		goto unsatisfiable;
	if (b < 0 || b >= size)
		b = size - 1;
	c->range_start = a;
	c->range_len = b - a + 1;
	c->partial = 1;
	return 0;
unsatisfiable:
	s3l_call_fail(c, 416, "InvalidRange", "the requested range is not satisfiable (object size %" PRId64 ")",
		      size);
	c->range_len = size; /* for Content-Range: bytes *\/size */
	return -1;
}

void s3l_run_get_or_head(struct s3l_call *c)
{
	struct store *st = NULL;
	int owned = 0;
	enum store_code code;

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st)
		goto out;
	code = store_head(st, c->key, &c->res);
	if (code != STORE_OK) {
		s3l_fail_from_store(c, &c->res);
		goto out;
	}
	if (read_conditions(c, &c->res) < 0)
		goto out;
	if (c->op == OP_GET) {
		/* the bytes go out from the file itself (sendfile), never
		 * through memory; the descriptor keeps this very version */
		code = store_get_file(st, c->key, &c->body_fd, &c->res);
		if (code != STORE_OK) {
			s3l_fail_from_store(c, &c->res);
			goto out;
		}
		if (read_conditions(c, &c->res) < 0)
			goto out; /* it changed in between */
	}
	if (resolve_range(c, c->res.content_length) < 0)
		goto out;
	c->status = c->partial ? 206 : 200;
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
}

/* ---- replies (loop thread) --------------------------------------------- */

void s3l_object_headers(struct s3l_call *c, struct front_hdrs *h)
{
	char date[64], name[S3L_META_BYTES + 16];
	size_t i;

	front_hdrs_add(h, "ETag", c->res.etag);
	if (c->res.last_modified) {
		s3l_http_date(c->res.last_modified, date, sizeof(date));
		front_hdrs_add(h, "Last-Modified", date);
	}
	if (c->status == 304)
		return;
	front_hdrs_add(h, "Accept-Ranges", "bytes");
	front_hdrs_add(h, "Content-Type", c->res.content_type[0] ? c->res.content_type
								 : "application/octet-stream");
	for (i = 0; i < c->res.nmeta; i++) {
		const char *mname = c->res.meta[i].name;

		/* the proxy's stamp is not the client's metadata: the epoch is
		 * shown as X-Fencing-Object-Epoch, the rest hidden */
		if (strcasecmp(mname, S3LOCAL_EPOCH_META) == 0) {
			front_hdrs_add(h, S3LOCAL_OBJECT_EPOCH_HEADER, c->res.meta[i].value);
			continue;
		}
		if (strncasecmp(mname, S3LOCAL_OWNED_META_PREFIX,
				strlen(S3LOCAL_OWNED_META_PREFIX)) == 0)
			continue;
		snprintf(name, sizeof(name), "x-amz-meta-%s", mname);
		front_hdrs_add(h, name, c->res.meta[i].value);
	}
	for (i = 0; i < STORE_HDR_COUNT; i++)
		if (c->res.headers[i])
			front_hdrs_add(h, store_hdr_names[i], c->res.headers[i]);
	/* as S3: the whole object's checksum, when asked for, never on a range */
	if (c->checksum_mode && !c->partial && c->res.checksum_name[0]) {
		front_hdrs_add(h, c->res.checksum_name, c->res.checksum_value);
		front_hdrs_add(h, "x-amz-checksum-type", "FULL_OBJECT");
	}
	for (i = 0; i < c->noverrides; i++)
		front_hdrs_set(h, c->overrides[i].name, c->overrides[i].value);
}
