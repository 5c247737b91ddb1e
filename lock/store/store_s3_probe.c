/* store_s3_probe.c — the two S3 requests the backend self-test needs beyond
 * the store interface: CopyObject of a key onto itself with If-None-Match
 * "*" on the destination, and a one-part multipart upload completed onto
 * an existing key with If-None-Match "*" (struct store_ext_ops
 * probe_copy, probe_complete). The key exists, so a backend that honours
 * the condition answers 412; one that ignores it rewrites the key with
 * the probe's bytes, which is all a probe key holds anyway.
 *
 * Nothing else uses them: the proxy forwards clients' copies and uploads
 * itself. An upload left behind by a failure is aborted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/sigv4.h"
#include "s3xml.h"
#include "store_s3_int.h"

#define PROBE_BODY_MAX ((size_t)64 << 10)
#define UPLOAD_ID_MAX  256

static const char PART[] = "fencegate self-test part\n";
static const struct store_put_opts IF_ABSENT = { .cond = STORE_COND_IF_NONE_MATCH_ANY,
						  .content_type = "text/plain" };

static enum store_code probe_copy(struct store *st, const char *key, struct store_result *res)
{
	struct store_s3 *s = (struct store_s3 *)st;
	struct s3_call c = { .method = "PUT", .key = key, .put = &IF_ABSENT,
			     .body_max = PROBE_BODY_MAX };
	struct body_buf buf = { 0 };
	char *ekey = NULL, *source = NULL;
	enum store_code code = STORE_ERR_NOMEM;

	store_result_clear(res);
	ekey = sigv4_uri_encode(key, strlen(key), 0);
	if (!ekey || asprintf(&source, "/%s/%s", s->bucket, ekey) < 0) {
		source = NULL;
		res->code = code;
		goto out;
	}
	c.extra[0][0] = "x-amz-copy-source";
	c.extra[0][1] = source;
	/* a copy onto itself must change something: S3 refuses it otherwise */
	c.extra[1][0] = "x-amz-metadata-directive";
	c.extra[1][1] = "REPLACE";
	code = store_s3_perform(s, &c, &buf, res);
out:
	free(buf.data);
	free(source);
	free(ekey);
	return code;
}

/* POST ?uploads: a new upload's id into id. */
static enum store_code create_upload(struct store_s3 *s, const char *key, char *id,
				     struct store_result *res)
{
	struct s3_call c = { .method = "POST", .key = key, .query = "uploads=",
			     .body_max = PROBE_BODY_MAX };
	struct body_buf buf = { 0 };
	enum store_code code;

	c.extra[0][0] = "content-type";
	c.extra[0][1] = "text/plain";
	code = store_s3_perform(s, &c, &buf, res);
	if (code == STORE_OK &&
	    s3xml_parse_upload_id(buf.data ? buf.data : "", buf.len, id, UPLOAD_ID_MAX) !=
	    S3XML_OK) {
		code = res->code = STORE_ERR_PROTOCOL;
		snprintf(res->err_message, sizeof(res->err_message),
			 "CreateMultipartUpload answered without an UploadId");
	}
	free(buf.data);
	return code;
}

static void abort_upload(struct store_s3 *s, const char *key, const char *query)
{
	struct s3_call c = { .method = "DELETE", .key = key, .query = query,
			     .body_max = PROBE_BODY_MAX, .idempotent = 1 };
	struct body_buf buf = { 0 };
	struct store_result res = STORE_RESULT_INIT;

	store_s3_perform(s, &c, &buf, &res);
	free(buf.data);
	store_result_clear(&res);
}

static enum store_code probe_complete(struct store *st, const char *key,
				      struct store_result *res)
{
	struct store_s3 *s = (struct store_s3 *)st;
	struct s3_call c = { .body_max = PROBE_BODY_MAX };
	struct body_buf buf = { 0 };
	char id[UPLOAD_ID_MAX], *eid = NULL, *query = NULL, *xml = NULL;
	char etag[STORE_ETAG_MAX];
	enum store_code code;
	int open = 0;

	store_result_clear(res);
	code = create_upload(s, key, id, res);
	if (code != STORE_OK)
		goto out;
	open = 1;
	eid = sigv4_uri_encode(id, strlen(id), 1);
	if (!eid || asprintf(&query, "partNumber=1&uploadId=%s", eid) < 0) {
		query = NULL;
		code = res->code = STORE_ERR_NOMEM;
		goto out;
	}
	c.method = "PUT";
	c.key = key;
	c.query = query;
	c.body = PART;
	c.body_len = sizeof(PART) - 1;
	code = store_s3_perform(s, &c, &buf, res);
	if (code != STORE_OK)
		goto out;
	snprintf(etag, sizeof(etag), "%s", res->etag);
	free(query);
	if (asprintf(&query, "uploadId=%s", eid) < 0 ||
	    asprintf(&xml, "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
		     "<ETag>%s</ETag></Part></CompleteMultipartUpload>", etag) < 0) {
		code = res->code = STORE_ERR_NOMEM;
		goto out;
	}
	memset(&c, 0, sizeof(c));
	c.method = "POST";
	c.key = key;
	c.query = query;
	c.body = xml;
	c.body_len = strlen(xml);
	c.body_max = PROBE_BODY_MAX;
	c.extra[0][0] = "if-none-match";
	c.extra[0][1] = "*";
	c.extra[1][0] = "content-type";
	c.extra[1][1] = "application/xml";
	free(buf.data);
	buf = (struct body_buf){ 0 };
	code = store_s3_perform(s, &c, &buf, res);
	/* S3 may answer 200 with an <Error> body: then nothing completed */
	if (code == STORE_OK && buf.data && strstr(buf.data, "<Error>")) {
		code = res->code = strstr(buf.data, "PreconditionFailed") ? STORE_PRECONDITION_FAILED
				   : STORE_ERR_SERVER;
	}
	open = code != STORE_OK;
out:
	if (open) {
		char *q = NULL;

		if (asprintf(&q, "uploadId=%s", eid ? eid : "") >= 0) {
			abort_upload(s, key, q);
			free(q);
		}
	}
	free(buf.data);
	free(xml);
	free(query);
	free(eid);
	return code;
}

const struct store_ext_ops store_s3_ext_ops = {
	.probe_copy = probe_copy,
	.probe_complete = probe_complete,
	.del_opts = store_s3_del_opts,
};
