/* s3local.c — the embedded S3 server over a local data directory: the
 * handler on the loop (routing a path-style request to its operation,
 * reading its query and body), the hand-off to the jobs pool and the
 * replies, and the server's life cycle. The operations themselves live
 * beside it: s3local_bucket.c (bucket stores, create/head/delete),
 * s3local_list.c (listings and their XML), s3local_object.c (get, put,
 * head, delete and the compare-and-swap), s3local_mpu.c (multipart
 * uploads), s3local_copy.c (copies, ACL reads). It does not touch the disk
 * on the loop and does not authenticate; tagging, ACL changes and
 * versioning answer 501 (see s3local.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "http/jobs.h"
#include "ops/log.h"
#include "http/proxy.h"
#include "wire/pct.h"
#include "wire/s3err.h"
#include "s3local.h"
#include "s3/awschunked.h"
#include "s3local_int.h"

/* ---- small helpers ----------------------------------------------------- */

void s3l_call_free(struct s3l_call *c)
{
	size_t i;

	if (!c)
		return;
	s3l_spool_free(c->spool);
	free(c->key);
	free(c->body);
	free(c->content_type);
	for (i = 0; i < STORE_HDR_COUNT; i++)
		free(c->headers[i]);
	for (i = 0; i < c->nmeta; i++) {
		free(c->meta[i].name);
		free(c->meta[i].value);
	}
	for (i = 0; i < c->noverrides; i++)
		free(c->overrides[i].value);
	free(c->if_match);
	free(c->if_none_match);
	free(c->range);
	free(c->content_md5);
	free(c->checksum_want);
	free(c->prefix);
	free(c->delimiter);
	free(c->start_after);
	free(c->token);
	free(c->marker);
	free(c->upload_id);
	free(c->copy_source);
	free(c->copy_range);
	free(c->copy_if_match);
	free(c->copy_if_none_match);
	free(c->key_marker);
	free(c->upload_id_marker);
	free(c->version_id_marker);
	free(c->xml);
	if (c->body_fd >= 0)
		close(c->body_fd);
	store_result_clear(&c->res);
	free(c);
}

/* Records an error outcome; message is printf-style. */
__attribute__((format(printf, 4, 5)))
void s3l_call_fail(struct s3l_call *c, int status, const char *code, const char *fmt, ...)
{
	va_list ap;

	c->status = status;
	c->err_code = code;
	va_start(ap, fmt);
	vsnprintf(c->err_msg, sizeof(c->err_msg), fmt, ap);
	va_end(ap);
}

/* 1 if s is well-formed UTF-8 (no overlongs, no surrogates). */
int s3l_utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		size_t len, k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + len > n)
			return 0;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		i += len;
	}
	return 1;
}

/* Unix seconds t in UTC as an HTTP-date, or (iso) as S3's ISO 8601. */
static void utc_format(int64_t t, int iso, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;
	size_t n = 0;

	if (gmtime_r(&tt, &tm))
		n = iso ? strftime(buf, len, "%Y-%m-%dT%H:%M:%S.000Z", &tm)
			: strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (n == 0 && len)
		buf[0] = '\0';
}

void s3l_http_date(int64_t t, char *buf, size_t len)
{
	utc_format(t, 0, buf, len);
}

void s3l_iso8601(int64_t t, char *buf, size_t len)
{
	utc_format(t, 1, buf, len);
}

/* ---- jobs and replies (loop thread) ------------------------------------ */

static void job_run(void *arg)
{
	struct s3l_call *c = arg;

	switch (c->op) {
	case OP_LIST_BUCKETS: s3l_run_list_buckets(c); break;
	case OP_CREATE_BUCKET: s3l_run_create_bucket(c); break;
	case OP_HEAD_BUCKET: s3l_run_head_bucket(c); break;
	case OP_DELETE_BUCKET: s3l_run_delete_bucket(c); break;
	case OP_LOCATION: s3l_run_location(c); break;
	case OP_LIST_V1:
	case OP_LIST_V2:
	case OP_LIST_VERSIONS: s3l_run_list(c); break;
	case OP_PUT: s3l_run_put(c); break;
	case OP_GET:
	case OP_HEAD: s3l_run_get_or_head(c); break;
	case OP_DELETE: s3l_run_delete(c); break;
	case OP_COPY: s3l_run_copy(c); break;
	case OP_MPU_CREATE: s3l_run_mpu_create(c); break;
	case OP_MPU_PART:
	case OP_MPU_PART_COPY: s3l_run_mpu_part(c); break;
	case OP_MPU_COMPLETE: s3l_run_mpu_complete(c); break;
	case OP_MPU_ABORT: s3l_run_mpu_abort(c); break;
	case OP_MPU_LIST_PARTS: s3l_run_mpu_list_parts(c); break;
	case OP_MPU_LIST_UPLOADS: s3l_run_mpu_list_uploads(c); break;
	case OP_GET_ACL:
	case OP_GET_BUCKET_ACL: s3l_run_get_acl(c); break;
	}
}

static void common_headers(struct s3l_call *c, struct front_hdrs *h)
{
	char date[64];

	s3l_http_date((int64_t)time(NULL), date, sizeof(date));
	front_hdrs_add(h, "Date", date);
	front_hdrs_add(h, "x-amz-request-id", proxy_req_id(c->req));
	front_hdrs_add(h, "Server", "fencegate");
}

static void reply_error(struct s3l_call *c, struct front_hdrs *h)
{
	struct proxy_req *req = c->req;

	if (strcmp(c->err_code, "FencingTokenStale") == 0 && c->has_object_epoch) {
		/* the lock's current epoch, as every 409 says (DESIGN.md);
		 * the object's own when it is newer than the proxy knew */
		uint64_t current = c->lock_epoch > c->object_epoch ? c->lock_epoch
								  : c->object_epoch;
		struct s3err e = { .code = c->err_code, .message = c->err_msg,
				   .resource = proxy_req_path(req), .request_id = proxy_req_id(req),
				   .has_epoch = true, .current_epoch = current };
		char epoch[24], *body;
		size_t len = 0;

		snprintf(epoch, sizeof(epoch), "%" PRIu64, current);
		front_hdrs_add(h, "X-Fencing-Epoch", epoch);
		body = s3err_xml_dup(&e, &len);
		if (body) {
			log_info("request \"%s\" \"%s %s\" answered %d \"%s\": \"%s\"",
				 proxy_req_id(req), proxy_req_method(req), proxy_req_path(req),
				 c->status, c->err_code, c->err_msg);
			proxy_req_reply(req, c->status, h, S3ERR_XML_CONTENT_TYPE, body, len);
			free(body);
			return;
		}
	}
	if (c->status == 416) {
		char range[64];

		snprintf(range, sizeof(range), "bytes */%" PRId64, c->range_len);
		front_hdrs_add(h, "Content-Range", range);
	}
	if (c->status >= 500) {
		/* a failure's detail names files of the server (the data
		 * directory, errno): the log has it, the client the request id */
		char msg[160];

		log_warn("request \"%s\" \"%s %s\": the embedded store failed: %s", proxy_req_id(req),
			 proxy_req_method(req), proxy_req_path(req), c->err_msg);
		snprintf(msg, sizeof(msg), "the embedded store could not complete the request; the "
			 "server's log has the details (request %s)", proxy_req_id(req));
		if (c->status == 503)
			front_hdrs_add(h, "Retry-After", "1");
		proxy_req_reply_error(req, c->status, c->err_code, msg, h);
		return;
	}
	proxy_req_reply_error(req, c->status, c->err_code, c->err_msg, h);
}

/* Tells the upload hook what a successful multipart call made or ended. */
static void upload_event(struct s3l_call *c)
{
	const char *lock = NULL;
	size_t i;

	if (!c->s->on_upload || !c->upload_id)
		return;
	if (c->op == OP_MPU_CREATE) {
		for (i = 0; i < c->nmeta; i++)
			if (strcasecmp(c->meta[i].name, "fencing-lock") == 0)
				lock = c->meta[i].value;
		c->s->on_upload(c->s->on_upload_arg, c->bucket, c->upload_id, 1,
				c->has_epoch ? c->epoch : 0, c->has_epoch ? lock : NULL);
	} else if (c->op == OP_MPU_COMPLETE || c->op == OP_MPU_ABORT) {
		c->s->on_upload(c->s->on_upload_arg, c->bucket, c->upload_id, 0, 0, NULL);
	}
}

static void job_done(void *arg)
{
	struct s3l_call *c = arg;
	struct proxy_req *req = c->req;
	struct front_hdrs h = { 0 };
	char buf[128];

	common_headers(c, &h);
	if (c->err_code && c->status != 304) {
		reply_error(c, &h);
		goto out;
	}
	upload_event(c);
	switch (c->op) {
	case OP_LIST_BUCKETS:
	case OP_LOCATION:
	case OP_LIST_V1:
	case OP_LIST_V2:
	case OP_LIST_VERSIONS:
	case OP_COPY:
	case OP_MPU_CREATE:
	case OP_MPU_PART_COPY:
	case OP_MPU_COMPLETE:
	case OP_MPU_LIST_PARTS:
	case OP_MPU_LIST_UPLOADS:
	case OP_GET_ACL:
	case OP_GET_BUCKET_ACL:
		proxy_req_reply(req, 200, &h, "application/xml", c->xml, c->xml_len);
		break;
	case OP_MPU_ABORT:
		proxy_req_reply(req, 204, &h, NULL, NULL, 0);
		break;
	case OP_MPU_PART:
	case OP_PUT:
		front_hdrs_add(&h, "ETag", c->res.etag);
		if (c->checksum_value[0]) /* verified (or computed) and kept */
			front_hdrs_add(&h, checksum_header(c->checksum_algo), c->checksum_value);
		proxy_req_reply(req, 200, &h, NULL, NULL, 0);
		break;
	case OP_CREATE_BUCKET:
		snprintf(buf, sizeof(buf), "/%s", c->bucket);
		front_hdrs_add(&h, "Location", buf);
		proxy_req_reply(req, 200, &h, NULL, NULL, 0);
		break;
	case OP_HEAD_BUCKET:
		front_hdrs_add(&h, "x-amz-bucket-region", "us-east-1");
		proxy_req_reply(req, 200, &h, NULL, NULL, 0);
		break;
	case OP_DELETE_BUCKET:
		if (c->err_msg[0])
			log_warn("%s", c->err_msg);
		proxy_req_reply(req, 204, &h, NULL, NULL, 0);
		break;
	case OP_DELETE:
		proxy_req_reply(req, 204, &h, NULL, NULL, 0);
		break;
	case OP_HEAD:
	case OP_GET:
		s3l_object_headers(c, &h);
		if (c->status == 304) {
			proxy_req_reply(req, 304, &h, NULL, NULL, 0);
			break;
		}
		if (c->partial) {
			snprintf(buf, sizeof(buf), "bytes %" PRId64 "-%" PRId64 "/%" PRId64,
				 c->range_start, c->range_start + c->range_len - 1,
				 c->res.content_length);
			front_hdrs_add(&h, "Content-Range", buf);
		}
		/* Content-Length is the object's (or range's) size; a GET's
		 * bytes follow from the file (the front end owns the fd) */
		if (proxy_req_reply_start(req, c->status, &h, c->range_len) == 0) {
			if (c->op == OP_GET && c->body_fd >= 0) {
				proxy_req_reply_file(req, c->body_fd, c->range_start, c->range_len);
				c->body_fd = -1;
			}
			proxy_req_reply_end(req);
		}
		break;
	}
out:
	front_hdrs_clear(&h);
	s3l_call_free(c);
}

/* ---- request parsing (loop thread) ------------------------------------- */

void s3l_submit(struct s3l_call *c)
{
	if (jobs_submit(c->s->jobs, job_run, job_done, c) < 0) {
		proxy_req_reply_error(c->req, 503, "SlowDown",
				      "the server is shutting down or out of memory", NULL);
		s3l_call_free(c);
	}
}

static int on_body(struct proxy_req *req, const char *data, size_t len, void *arg)
{
	struct s3l_call *c = arg;

	if (!c->keep_body)
		return 0;
	if (c->spool) {
		int r;

		if ((int64_t)len > S3L_STREAM_MAX - s3l_spool_size(c->spool)) {
			proxy_req_reply_error(req, 413, "EntityTooLarge",
					      "your proposed upload exceeds the maximum allowed size (5 GiB)",
					      NULL);
			if (!s3l_spool_end(c, 0))
				s3l_call_free(c);
			return -1;
		}
		r = s3l_spool_feed(c, data, len);
		if (r < 0) {
			if (r == -1)
				proxy_req_reply_error(req, 503, "SlowDown",
						      "out of memory for the request body", NULL);
			if (!s3l_spool_end(c, 0))
				s3l_call_free(c);
			return -1;
		}
		return r;
	}
	if (len > c->body_max - c->body_len) {
		if (c->op == OP_PUT || c->op == OP_MPU_PART)
			proxy_req_reply_error(req, 413, "EntityTooLarge",
					      "the embedded store holds a body in this "
					      "aws-chunked form in memory, up to 64 MiB; this "
					      "one is larger (send it unchunked or with a "
					      "STREAMING-* payload hash)", NULL);
		else
			proxy_req_reply_error(req, 400, "MalformedXML",
					      "the request body is too large", NULL);
		s3l_call_free(c); /* the reply ended the request: no end call follows */
		return -1;
	}
	if (c->body_len + len > c->body_cap) {
		size_t cap = c->body_cap ? c->body_cap : 64 * 1024;
		char *grown;

		while (cap < c->body_len + len)
			cap = cap > c->body_max / 2 ? c->body_max : cap * 2;
		grown = realloc(c->body, cap);
		if (!grown) {
			proxy_req_reply_error(req, 503, "SlowDown", "out of memory for the request body",
					      NULL);
			s3l_call_free(c);
			return -1;
		}
		c->body = grown;
		c->body_cap = cap;
	}
	memcpy(c->body + c->body_len, data, len);
	c->body_len += len;
	return 0;
}

static void on_end(struct proxy_req *req, int ok, void *arg)
{
	struct s3l_call *c = arg;

	(void)req;
	if (c->spool && ok && s3l_spool_body_done(c) < 0)
		ok = 0; /* refused (replied): the body is dropped */
	if (c->spool && s3l_spool_end(c, ok))
		return; /* the chunk being written decides */
	if (!ok) {
		s3l_call_free(c); /* the client left or sent a bad body: last call */
		return;
	}
	s3l_submit(c);
}

/* Answers 501 for something S3 has and this server does not. */
enum proxy_action s3l_not_implemented(struct proxy_req *req, const char *what)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "the embedded local-directory store does not support %s; "
		 "run fencegate --upstream URL in front of a real S3 for it", what);
	proxy_req_reply_error(req, 501, "NotImplemented", msg, NULL);
	return PROXY_HANDLED;
}

enum proxy_action s3l_bad_request(struct proxy_req *req, int status, const char *code,
				  const char *msg)
{
	proxy_req_reply_error(req, status, code, msg, NULL);
	return PROXY_HANDLED;
}

static struct s3l_call *call_new(struct s3local *s, struct proxy_req *req, enum s3l_op op)
{
	struct s3l_call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->s = s;
	c->req = req;
	c->op = op;
	c->res.content_length = -1;
	c->decoded_length = -1;
	c->body_fd = -1;
	return c;
}

enum proxy_action s3local_handler(struct proxy_req *req, void *arg)
{
	struct s3local *s = arg;
	const char *path = proxy_req_path(req), *method = proxy_req_method(req);
	const char *slash, *bstart;
	struct s3l_query q = { 0 };
	struct s3l_call *c = NULL;
	char *bucket = NULL;
	const char *sha;
	size_t blen;
	int op, chunk_mode;
	int64_t clen;

	if (!path || strncmp(path, "/_fence/", 8) == 0 || strcmp(path, "/_fence") == 0)
		return PROXY_PASS;
	if (path[0] != '/')
		return s3l_bad_request(req, 400, "InvalidURI", "the request path must start with '/'");
	if (s3l_query_parse(proxy_req_query(req), &q) < 0)
		return s3l_bad_request(req, 400, "InvalidURI", "the query string could not be parsed");
	bstart = path + 1;
	slash = strchr(bstart, '/');
	blen = slash ? (size_t)(slash - bstart) : strlen(bstart);
	if (blen) {
		bucket = s3l_decode(bstart, blen, 0);
		if (!bucket) {
			s3l_bad_request(req, 400, "InvalidURI", "the bucket name has a bad %-escape");
			goto out;
		}
		if (!s3_bucket_name_valid(bucket, strlen(bucket))) {
			s3l_bad_request(req, 400, "InvalidBucketName",
					"bucket names have 3 to 63 characters of a-z 0-9 . -, start and "
					"end with a letter or digit (path-style requests: /BUCKET/KEY)");
			goto out;
		}
	}
	op = s3l_pick_op(req, method, blen > 0, slash && slash[1], &q);
	if (op < 0)
		goto out;
	if (proxy_req_fwd_header(req, "x-amz-copy-source") && (op == OP_PUT || op == OP_MPU_PART))
		op = op == OP_PUT ? OP_COPY : OP_MPU_PART_COPY;
	c = call_new(s, req, (enum s3l_op)op);
	if (!c) {
		s3l_bad_request(req, 503, "SlowDown", "out of memory");
		goto out;
	}
	if (bucket)
		snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
	if (slash && slash[1]) {
		size_t klen;

		c->key = s3l_decode(slash + 1, strlen(slash + 1), 0);
		if (!c->key) {
			s3l_bad_request(req, 400, "InvalidURI", "the key has a bad %-escape (or an encoded NUL)");
			goto fail;
		}
		klen = strlen(c->key);
		if (klen > S3L_KEY_MAX) {
			s3l_bad_request(req, 400, "KeyTooLongError", "your key is too long (at most 1024 bytes)");
			goto fail;
		}
		if ((op == OP_PUT || op == OP_COPY || op == OP_MPU_CREATE) &&
		    !s3l_utf8_valid((const unsigned char *)c->key, klen)) {
			s3l_bad_request(req, 400, "InvalidArgument", "object keys must be UTF-8");
			goto fail;
		}
	}
	if (op == OP_LIST_V1 || op == OP_LIST_V2 || op == OP_LIST_VERSIONS) {
		if (s3l_take_list_params(c, &q) < 0)
			goto fail;
	} else if (op == OP_MPU_LIST_UPLOADS) {
		if (s3l_take_mpu_params(c, &q) < 0)
			goto fail;
	} else if (c->key && s3l_take_object_headers(c, &q) < 0) {
		goto fail;
	}
	if (op >= OP_MPU_PART && op <= OP_MPU_LIST_PARTS && s3l_take_mpu_params(c, &q) < 0)
		goto fail;
	clen = proxy_req_content_length(req);
	sha = proxy_req_fwd_header(req, "x-amz-content-sha256");
	chunk_mode = !sha ? -1
		: strcmp(sha, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") == 0 ? AWSCHUNKED_UNSIGNED_TRAILER
		: strcmp(sha, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") == 0 ? AWSCHUNKED_SIGNED
		: strcmp(sha, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") == 0
			? AWSCHUNKED_SIGNED_TRAILER : -1;
	if ((op == OP_PUT || op == OP_MPU_PART) && (!c->aws_chunked || chunk_mode >= 0)) {
		/* spooled to disk as it arrives: never whole in memory */
		if (clen > S3L_STREAM_MAX + (c->aws_chunked ? S3L_STREAM_MAX / 16 : 0) ||
		    c->decoded_length > S3L_STREAM_MAX) {
			s3l_bad_request(req, 413, "EntityTooLarge",
					"your proposed upload exceeds the maximum allowed size (5 GiB)");
			goto fail;
		}
		c->keep_body = 1;
		c->spool = c->aws_chunked
			? s3l_spool_new_chunked(c, (enum awschunked_mode)chunk_mode, c->decoded_length,
						proxy_req_fwd_header(req, "x-amz-trailer"))
			: s3l_spool_new();
		if (!c->spool) {
			s3l_bad_request(req, 503, "SlowDown", "out of memory for the request body");
			goto fail;
		}
	} else if (op == OP_PUT || op == OP_MPU_PART) {
		int64_t want = c->decoded_length >= 0 ? c->decoded_length : clen;

		if (want > (int64_t)s->max_object) {
			char msg[160];

			snprintf(msg, sizeof(msg), "the embedded store takes objects up to %zu bytes "
				 "(this one has %" PRId64 ")", s->max_object, want);
			s3l_bad_request(req, 413, "EntityTooLarge", msg);
			goto fail;
		}
		c->keep_body = 1;
		/* aws-chunked framing adds a little per chunk */
		c->body_max = c->aws_chunked ? s->max_object + s->max_object / 16 + 65536
					     : s->max_object;
		if (clen > 0 && (uint64_t)clen <= c->body_max) {
			c->body = malloc((size_t)clen);
			if (!c->body) {
				s3l_bad_request(req, 503, "SlowDown", "out of memory for the request body");
				goto fail;
			}
			c->body_cap = (size_t)clen;
		}
	} else if (op == OP_CREATE_BUCKET) {
		c->keep_body = 1; /* CreateBucketConfiguration: read, then ignored */
		c->body_max = S3L_CONFIG_MAX;
	} else if (op == OP_MPU_COMPLETE) {
		c->keep_body = 1;
		c->body_max = S3L_COMPLETE_MAX;
	}
	/* Every request is consumed, with or without a body: the req then
	 * stays valid until the job's reply, even if the client leaves. c is
	 * freed by whoever ends it (on_body, on_end(ok=0), job_done); the
	 * req's ctx slot is left to the handlers before this one. */
	if (proxy_req_consume(req, on_body, on_end, c) < 0) {
		s3l_bad_request(req, 500, "InternalError", "the request body could not be read");
		s3l_call_free(c);
	}
	s3l_query_free(&q);
	free(bucket);
	return PROXY_HANDLED;
fail:
	s3l_call_free(c);
out:
	s3l_query_free(&q);
	free(bucket);
	return PROXY_HANDLED;
}

/* ---- life cycle --------------------------------------------------------- */

/* Open bucket stores kept per worker thread: each holds a few descriptors
 * for as long as it stays cached, so under a small RLIMIT_NOFILE fewer are
 * kept (one per 256 descriptors of the limit, 1 to S3L_CACHE_SLOTS); a
 * worker that runs out anyway gives its cached ones back and retries. */
static int cache_slots_for_limit(void)
{
	struct rlimit rl;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return S3L_CACHE_SLOTS;
	n = rl.rlim_cur / 256;
	return n < 1 ? 1 : n > S3L_CACHE_SLOTS ? S3L_CACHE_SLOTS : (int)n;
}

struct s3local *s3local_new(struct event_base *base, struct jobs *jobs,
			    const char *data_dir, size_t max_object_bytes,
			    char *err, size_t errlen)
{
	struct s3local *s = NULL;
	struct stat sb;

	if (!jobs || !data_dir || !*data_dir) {
		snprintf(err, errlen, "the embedded store needs a jobs pool and a data directory");
		return NULL;
	}
	if (strlen(data_dir) > 4000) {
		snprintf(err, errlen, "data directory path is too long");
		return NULL;
	}
	if (mkdir(data_dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create data directory \"%s\": %s", data_dir, strerror(errno));
		return NULL;
	}
	if (stat(data_dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "data directory \"%s\" is not a directory", data_dir);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->data_dir = strdup(data_dir))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* "dir/" and "dir" name the same place; keep paths tidy */
	while (strlen(s->data_dir) > 1 && s->data_dir[strlen(s->data_dir) - 1] == '/')
		s->data_dir[strlen(s->data_dir) - 1] = '\0';
	s->shared = calloc(1, sizeof(*s->shared));
	if (!s->shared || pthread_rwlock_init(&s->shared->buckets, NULL) != 0) {
		free(s->shared);
		free(s->data_dir);
		free(s);
		snprintf(err, errlen, "cannot create a lock");
		return NULL;
	}
	s->shared->refs = 1;
	s->cache_slots = cache_slots_for_limit();
	s3l_recover_buckets(s);
	s->buckets = &s->shared->buckets;
	s->base = base;
	s->jobs = jobs;
	s->max_object = max_object_bytes ? max_object_bytes : S3LOCAL_DEFAULT_MAX_OBJECT;
	return s;
}

struct s3local *s3local_new_sibling(const struct s3local *sibling, struct event_base *base,
				    struct jobs *jobs, char *err, size_t errlen)
{
	struct s3local *s = calloc(1, sizeof(*s));

	if (!s || !(s->data_dir = strdup(sibling->data_dir))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->shared = sibling->shared;
	__atomic_add_fetch(&s->shared->refs, 1, __ATOMIC_RELAXED);
	s->buckets = &s->shared->buckets;
	s->base = base;
	s->jobs = jobs;
	s->max_object = sibling->max_object;
	s->cache_slots = sibling->cache_slots;
	return s;
}

void s3local_set_upload_hook(struct s3local *s, s3local_upload_fn fn, void *arg)
{
	s->on_upload = fn;
	s->on_upload_arg = arg;
}

void s3local_free(struct s3local *s)
{
	size_t w, i;

	if (!s)
		return;
	for (w = 0; w < S3L_WORKERS_MAX; w++)
		for (i = 0; i < S3L_CACHE_SLOTS; i++)
			store_close(s->cache[w].slot[i].st);
	if (__atomic_sub_fetch(&s->shared->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		pthread_rwlock_destroy(&s->shared->buckets);
		free(s->shared);
	}
	free(s->data_dir);
	free(s);
}
