/* s3local_object.c — the embedded S3 server's objects: the request headers
 * of GetObject, HeadObject, PutObject and DeleteObject, their jobs (the
 * client's conditions, ranges, Content-MD5, aws-chunked framing, and the
 * fencing contract's object-level compare-and-swap of s3local.h), and the
 * object headers of the reply. Plain bodies arrive spooled to a file
 * (s3local_spool.c), aws-chunked ones in memory, whose signatures it does
 * not check (nothing here authenticates); multipart
 * uploads and copies are s3local_mpu.c and s3local_copy.c, which write
 * through s3l_put_object here. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "http/proxy.h"
#include "wire/pct.h"
#include "s3local.h"
#include "s3local_int.h"
#include "lock/store.h"

/* ---- small helpers ----------------------------------------------------- */

/* An HTTP-date header to Unix seconds; 0 when absent or unparsable (S3
 * ignores a date it cannot read). */
static int64_t parse_http_date(const char *v)
{
	time_t t;

	if (!v || !*v)
		return 0;
	t = curl_getdate(v, NULL);
	return t > 0 ? (int64_t)t : 0;
}

/* "1".."18446744073709551615" without sign or blanks; 0 on success. */
static int parse_u64(const char *s, uint64_t *out)
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

int s3l_etag_match(const char *want, const char *have)
{
	size_t wl, hl;

	while (*want == ' ')
		want++;
	if (strcmp(want, "*") == 0)
		return 1;
	if (strncmp(want, "W/", 2) == 0)
		want += 2;
	wl = strlen(want);
	hl = strlen(have);
	if (wl >= 2 && want[0] == '"' && want[wl - 1] == '"') {
		want++;
		wl -= 2;
	}
	if (hl >= 2 && have[0] == '"' && have[hl - 1] == '"') {
		have++;
		hl -= 2;
	}
	return wl == hl && strncasecmp(want, have, wl) == 0;
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
			if (s3l_etag_match(buf, have))
				return 1;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

static int is_any(const char *v)
{
	return v && (strcmp(v, "*") == 0 || strcmp(v, "\"*\"") == 0);
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

	if (!v || parse_u64(v, &e) < 0)
		return 0;
	return e;
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

int s3l_prepare_body(struct s3l_call *c, struct store_file_range *r)
{
	unsigned char md5[16];

	if (c->spool) {
		if (s3l_spool_finish(c, md5, r) < 0)
			return -1;
		return c->content_md5 ? check_content_md5(c, md5) : 0;
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
	return 0;
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
		if (exists && object_epoch(&cur) > c->epoch) {
			c->has_object_epoch = 1;
			c->object_epoch = object_epoch(&cur);
			s3l_call_fail(c, 409, "FencingTokenStale",
				      "the object \"%s\" was written under epoch %" PRIu64
				      ", newer than the presented epoch %" PRIu64,
				      c->key, c->object_epoch, c->epoch);
			goto out;
		}
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
		if (code == STORE_OK) {
			c->status = 200;
			goto out;
		}
		if (code != STORE_PRECONDITION_FAILED && code != STORE_NOT_FOUND) {
			s3l_fail_from_store(c, &c->res);
			goto out;
		}
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

	pthread_rwlock_rdlock(&c->s->buckets);
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
	pthread_rwlock_unlock(&c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
}

void s3l_object_opts(const struct s3l_call *c, struct store_put_opts *opts)
{
	opts->content_type = c->content_type;
	opts->meta = c->meta;
	opts->nmeta = c->nmeta;
	opts->headers = (const char *const *)c->headers;
}

void s3l_run_delete(struct s3l_call *c)
{
	struct store_delete_opts dopts = { 0 };
	struct store_result cur = STORE_RESULT_INIT;
	struct store *st = NULL;
	char etag[STORE_ETAG_MAX], seen_epoch[S3L_META_BYTES + 1];
	int owned = 0, attempt;
	enum store_code code;

	pthread_rwlock_rdlock(&c->s->buckets);
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
		if (object_epoch(&cur) > c->epoch) {
			c->has_object_epoch = 1;
			c->object_epoch = object_epoch(&cur);
			s3l_call_fail(c, 409, "FencingTokenStale",
				      "the object \"%s\" was written under epoch %" PRIu64
				      ", newer than the presented epoch %" PRIu64,
				      c->key, c->object_epoch, c->epoch);
			goto out;
		}
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
		if (code == STORE_OK) {
			c->status = 204;
			goto out;
		}
		if (code != STORE_PRECONDITION_FAILED && code != STORE_NOT_FOUND) {
			s3l_fail_from_store(c, &c->res);
			goto out;
		}
	}
	s3l_call_fail(c, 503, "SlowDown",
		      "the key \"%s\" kept changing under concurrent writers; retry", c->key);
out:
	pthread_rwlock_unlock(&c->s->buckets);
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

	pthread_rwlock_rdlock(&c->s->buckets);
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
	pthread_rwlock_unlock(&c->s->buckets);
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
	for (i = 0; i < c->noverrides; i++)
		front_hdrs_set(h, c->overrides[i].name, c->overrides[i].value);
}

/* ---- request parsing (loop thread) ------------------------------------- */

/* Copies user metadata (x-amz-meta-*) from the request into c. Returns 0 or
 * -1 after replying. */
static int take_metadata(struct s3l_call *c)
{
	const struct front_hdrs *hs = proxy_req_headers(c->req);
	size_t i, total = 0, plen = strlen("x-amz-meta-");

	for (i = 0; i < hs->n; i++) {
		const char *name = hs->v[i].name;

		if (strncasecmp(name, "x-amz-meta-", plen) != 0)
			continue;
		if (!name[plen]) {
			s3l_bad_request(c->req, 400, "InvalidArgument", "a metadata header without a name");
			return -1;
		}
		total += strlen(name + plen) + strlen(hs->v[i].value);
		if (c->nmeta == STORE_META_MAX || total > S3L_META_BYTES) {
			s3l_bad_request(c->req, 400, "MetadataTooLarge",
					"your metadata headers exceed what the embedded store keeps "
					"(16 pairs, 2 KiB)");
			return -1;
		}
		c->meta[c->nmeta].name = strdup(name + plen);
		c->meta[c->nmeta].value = strdup(hs->v[i].value);
		c->nmeta++;
		if (!c->meta[c->nmeta - 1].name || !c->meta[c->nmeta - 1].value) {
			s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
			return -1;
		}
	}
	return 0;
}

/* The representation headers an object keeps (store_hdr_names) into c;
 * Content-Encoding without its aws-chunked framing. Returns 0 or -1 after
 * replying. */
static int take_stored_headers(struct s3l_call *c)
{
	size_t i, total = 0;

	for (i = 0; i < STORE_HDR_COUNT; i++) {
		const char *v = proxy_req_header(c->req, store_hdr_names[i]);
		char *val;

		if (!v || !*v)
			continue;
		total += strlen(v);
		if (total > S3L_META_BYTES) {
			s3l_bad_request(c->req, 400, "MetadataTooLarge",
					"your representation headers exceed what the embedded store keeps (2 KiB)");
			return -1;
		}
		val = strdup(v);
		if (!val) {
			s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
			return -1;
		}
		if (i == STORE_HDR_CONTENT_ENCODING) {
			/* "aws-chunked" is framing, not the object's encoding */
			char *out = val, *tok, *save = NULL, *copy = strdup(v);

			if (!copy) {
				free(val);
				s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
				return -1;
			}
			*out = '\0';
			for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				while (*tok == ' ' || *tok == '\t')
					tok++;
				if (!*tok || strncasecmp(tok, "aws-chunked", 11) == 0)
					continue;
				if (*val)
					strcat(out, ",");
				strcat(out, tok);
			}
			free(copy);
			if (!*val) {
				free(val);
				continue;
			}
		}
		c->headers[i] = val;
	}
	return 0;
}

/* Object requests: headers into c. Returns 0 or -1 after replying. */
int s3l_take_object_headers(struct s3l_call *c, const struct s3l_query *q)
{
	struct proxy_req *req = c->req;
	const char *v;

	v = proxy_req_header(req, "If-Match");
	if (v && !(c->if_match = strdup(v)))
		goto nomem;
	v = proxy_req_header(req, "If-None-Match");
	if (v && !(c->if_none_match = strdup(v)))
		goto nomem;
	if (c->op == OP_GET || c->op == OP_HEAD) {
		static const struct { const char *param, *header; } ov[] = {
			{ "response-content-type", "Content-Type" },
			{ "response-content-language", "Content-Language" },
			{ "response-expires", "Expires" },
			{ "response-cache-control", "Cache-Control" },
			{ "response-content-disposition", "Content-Disposition" },
			{ "response-content-encoding", "Content-Encoding" },
		};
		size_t i;

		c->if_modified_since = parse_http_date(proxy_req_header(req, "If-Modified-Since"));
		c->if_unmodified_since = parse_http_date(proxy_req_header(req, "If-Unmodified-Since"));
		v = proxy_req_header(req, "Range");
		if (v && !(c->range = strdup(v)))
			goto nomem;
		for (i = 0; i < sizeof(ov) / sizeof(ov[0]); i++) {
			const char *val = s3l_query_get(q, ov[i].param, NULL);
			const char *p;

			if (!val)
				continue;
			for (p = val; *p; p++)
				if ((unsigned char)*p < 0x20 || *p == 0x7f) {
					s3l_bad_request(req, 400, "InvalidArgument",
							"a response- parameter holds a control byte");
					return -1;
				}
			c->overrides[c->noverrides].name = (char *)ov[i].header;
			c->overrides[c->noverrides].value = strdup(val);
			if (!c->overrides[c->noverrides++].value)
				goto nomem;
		}
		return 0;
	}
	if (c->op == OP_GET_ACL || c->op == OP_MPU_LIST_PARTS)
		return 0;
	v = proxy_req_header(req, S3LOCAL_EPOCH_CURRENT_HEADER);
	if (v && parse_u64(v, &c->lock_epoch) < 0) {
		s3l_bad_request(req, 400, "InvalidArgument",
				S3LOCAL_EPOCH_CURRENT_HEADER " must be an epoch (1-19 digits)");
		return -1;
	}
	if (c->op == OP_MPU_ABORT)
		return 0;
	if (c->op == OP_DELETE) {
		v = proxy_req_header(req, S3LOCAL_EPOCH_CHECK_HEADER);
		if (v) {
			if (parse_u64(v, &c->epoch) < 0 || c->epoch == 0) {
				s3l_bad_request(req, 400, "InvalidArgument",
						S3LOCAL_EPOCH_CHECK_HEADER " must be an epoch (1-19 digits, >= 1)");
				return -1;
			}
			c->has_epoch = 1;
		}
		return 0;
	}
	/* PUT */
	if (c->if_none_match && !is_any(c->if_none_match)) {
		s3l_not_implemented(req, "If-None-Match with an ETag on PUT (only \"*\")");
		return -1;
	}
	if (c->if_none_match && c->if_match) {
		s3l_bad_request(req, 400, "InvalidRequest", "If-Match and If-None-Match cannot be combined");
		return -1;
	}
	if (c->if_match && strlen(c->if_match) >= STORE_ETAG_MAX) {
		s3l_bad_request(req, 400, "InvalidArgument", "If-Match is too long");
		return -1;
	}
	v = proxy_req_header(req, S3LOCAL_EPOCH_META_HEADER);
	if (v) {
		if (parse_u64(v, &c->epoch) < 0 || c->epoch == 0) {
			s3l_bad_request(req, 400, "InvalidArgument",
					S3LOCAL_EPOCH_META_HEADER " must be an epoch (1-19 digits, >= 1)");
			return -1;
		}
		c->has_epoch = 1;
	}
	v = proxy_req_header(req, "Content-Type");
	if (v && *v && !(c->content_type = strdup(v)))
		goto nomem;
	if (c->content_type && strlen(c->content_type) >= sizeof(c->res.content_type)) {
		s3l_bad_request(req, 400, "InvalidArgument", "Content-Type is too long");
		return -1;
	}
	v = proxy_req_header(req, "Content-MD5");
	if (v && !(c->content_md5 = strdup(v)))
		goto nomem;
	v = proxy_req_header(req, "Content-Encoding");
	c->aws_chunked = v && front_list_has(v, "aws-chunked");
	if (take_stored_headers(c) < 0)
		return -1;
	v = proxy_req_header(req, "x-amz-content-sha256");
	if (v && strncmp(v, "STREAMING-", 10) == 0)
		c->aws_chunked = 1;
	c->decoded_length = -1;
	v = proxy_req_header(req, "x-amz-decoded-content-length");
	if (v) {
		uint64_t dl;

		if (parse_u64(v, &dl) < 0) {
			s3l_bad_request(req, 400, "InvalidArgument", "bad x-amz-decoded-content-length");
			return -1;
		}
		c->decoded_length = (int64_t)dl;
	}
	if (c->op == OP_COPY || c->op == OP_MPU_PART_COPY) {
		static const struct { const char *name; size_t off; } copy_hdrs[] = {
			{ "x-amz-copy-source", offsetof(struct s3l_call, copy_source) },
			{ "x-amz-copy-source-range", offsetof(struct s3l_call, copy_range) },
			{ "x-amz-copy-source-if-match", offsetof(struct s3l_call, copy_if_match) },
			{ "x-amz-copy-source-if-none-match", offsetof(struct s3l_call, copy_if_none_match) },
		};
		size_t i;

		for (i = 0; i < sizeof(copy_hdrs) / sizeof(copy_hdrs[0]); i++) {
			char **dst = (char **)((char *)c + copy_hdrs[i].off);

			v = proxy_req_header(req, copy_hdrs[i].name);
			if (v && !(*dst = strdup(v)))
				goto nomem;
		}
		v = proxy_req_header(req, "x-amz-metadata-directive");
		if (v && strcasecmp(v, "REPLACE") != 0 && strcasecmp(v, "COPY") != 0) {
			s3l_bad_request(req, 400, "InvalidArgument",
					"x-amz-metadata-directive must be COPY or REPLACE");
			return -1;
		}
		c->replace_metadata = v && strcasecmp(v, "REPLACE") == 0;
	}
	if (proxy_req_header(req, "x-amz-tagging")) {
		s3l_not_implemented(req, "tagging (x-amz-tagging)");
		return -1;
	}
	if (proxy_req_header(req, "x-amz-object-lock-mode") ||
	    proxy_req_header(req, "x-amz-object-lock-retain-until-date") ||
	    proxy_req_header(req, "x-amz-object-lock-legal-hold")) {
		s3l_not_implemented(req, "object lock");
		return -1;
	}
	return take_metadata(c);
nomem:
	s3l_bad_request(req, 503, "SlowDown", "out of memory");
	return -1;
}
