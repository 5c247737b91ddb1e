/* store_s3.c — the S3 backend of the object store: GET, HEAD, conditional
 * PUT and DELETE, ListObjectsV2, each signed with SigV4 and sent on one
 * reusable libcurl easy handle, synchronously, with bounded retries. Where
 * the bucket is (endpoint, addressing style, region, credentials) is
 * settled once by store_s3_open.c.
 *
 * It never retries a conditional write blindly: a create or If-Match write
 * whose outcome is unknown (timeout, 5xx, 409) is returned as such, and the
 * lock layer finds out by reading the object back. It does not stream:
 * bodies are small lock files, held in memory under a fixed cap. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "wire/awscreds.h"
#include "s3xml.h"
#include "wire/sigv4.h"
#include "store.h"
#include "store_s3_int.h"

#define GET_BODY_MAX     ((size_t)16 << 20)  /* object bytes a GET may return */
#define OTHER_BODY_MAX   ((size_t)1 << 20)   /* error bodies of HEAD/PUT/DELETE */
#define KEY_MAX          1024                /* S3's limit, in bytes */
#define BACKOFF_BASE_MS  100
#define BACKOFF_CAP_MS   5000

#define META_PREFIX      "x-amz-meta-"
/* host, date, sha256, token, content-type, if-match, if-none-match, meta,
 * a call's extra headers */
#define SIGNED_MAX       (7 + STORE_META_MAX + S3_CALL_EXTRA_MAX)

/* --- small helpers ------------------------------------------------------ */

/* splitmix64: good enough to spread retries, seeded per store. */
static uint64_t jitter_next(struct store_s3 *s)
{
	uint64_t z = (s->jitter_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Full jitter: uniform in [0, min(cap, base * 2^retry)]. */
static int64_t backoff_ms(struct store_s3 *s, int retry)
{
	int64_t ceiling = BACKOFF_BASE_MS;

	while (retry-- > 0 && ceiling < BACKOFF_CAP_MS)
		ceiling *= 2;
	if (ceiling > BACKOFF_CAP_MS)
		ceiling = BACKOFF_CAP_MS;
	return (int64_t)(jitter_next(s) % (uint64_t)(ceiling + 1));
}

/* A header value we may send: printable ASCII (no CR/LF injection). */
int store_s3_header_safe(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 || (unsigned char)*v > 0x7e)
			return 0;
	return 1;
}

/* A metadata name S3 accepts and that survives lowercasing: [A-Za-z0-9_-]. */
static int meta_name_ok(const char *n)
{
	if (!n || !*n)
		return 0;
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') ||
		      (*n >= '0' && *n <= '9') || *n == '-' || *n == '_'))
			return 0;
	return 1;
}

static void lowercase(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* Clears res for the next attempt but keeps the attempt count. */
static void result_reset(struct store_result *res)
{
	int attempts = res->attempts;

	store_result_clear(res);
	res->attempts = attempts;
}

enum store_code store_s3_refuse(struct store_result *res, const char *why)
{
	res->code = STORE_ERR_INVALID;
	snprintf(res->err_message, sizeof(res->err_message), "%s", why);
	return STORE_ERR_INVALID;
}

static int key_ok(const char *key)
{
	size_t n;

	if (!key)
		return 0;
	n = strlen(key);
	return n > 0 && n <= KEY_MAX;
}

/* --- curl callbacks ----------------------------------------------------- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct body_buf *b = ud;
	size_t n = size * nmemb;

	if (n > b->max - b->len) {
		b->overflow = 1;
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	}
	if (b->len + n + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap : 4096;
		char *d;

		while (ncap < b->len + n + 1)
			ncap *= 2;
		if (ncap > b->max + 1)
			ncap = b->max + 1;
		d = realloc(b->data, ncap);
		if (!d)
			return 0;
		b->data = d;
		b->cap = ncap;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

static size_t on_upload(char *buf, size_t size, size_t nitems, void *ud)
{
	struct s3_call *c = ud;
	size_t n = size * nitems, left = c->body_len - c->body_pos;

	if (n > left)
		n = left;
	memcpy(buf, c->body + c->body_pos, n);
	c->body_pos += n;
	return n;
}

static int on_upload_seek(void *ud, curl_off_t offset, int origin)
{
	struct s3_call *c = ud;

	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > c->body_len)
		return CURL_SEEKFUNC_CANTSEEK;
	c->body_pos = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

/* --- one request -------------------------------------------------------- */

/* The headers one request sends and signs; names of x-amz-meta-* are
 * allocated. */
struct signed_headers {
	struct sigv4_header h[SIGNED_MAX];
	char *owned[SIGNED_MAX];
	size_t n;
};

static void signed_headers_free(struct signed_headers *sh)
{
	size_t i;

	for (i = 0; i < sh->n; i++)
		free(sh->owned[i]);
	sh->n = 0;
}

static int add_header(struct signed_headers *sh, const char *name, const char *value, char *owned)
{
	if (sh->n == SIGNED_MAX) {
		free(owned);
		return -1;
	}
	sh->h[sh->n].name = name;
	sh->h[sh->n].value = value;
	sh->owned[sh->n] = owned;
	sh->n++;
	return 0;
}

static enum store_code map_status(long status)
{
	if (status >= 200 && status < 300)
		return STORE_OK;
	switch (status) {
	case 404: return STORE_NOT_FOUND;
	case 412: return STORE_PRECONDITION_FAILED;
	case 409: return STORE_CONFLICT;
	case 401:
	case 403: return STORE_ERR_DENIED;
	}
	if (status >= 500 && status < 600)
		return STORE_ERR_SERVER;
	return STORE_ERR_PROTOCOL;
}

static const char *response_header(CURL *curl, const char *name)
{
	struct curl_header *h = NULL;

	if (curl_easy_header(curl, name, 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h)
		return NULL;
	return h->value;
}

static int64_t http_date(const char *v)
{
	time_t t;

	if (!v)
		return 0;
	t = curl_getdate(v, NULL);
	return t > 0 ? (int64_t)t : 0;
}

/* Fills res from the headers of the final response. Returns -1 on ENOMEM. */
static int collect_headers(struct store_s3 *s, struct store_result *res)
{
	struct curl_header *h = NULL;
	const char *v;
	curl_off_t clen = -1;

	v = response_header(s->curl, "ETag");
	if (v && strlen(v) < sizeof(res->etag))
		strcpy(res->etag, v);
	else if (v)
		res->etag[0] = '\0'; /* too long to keep: refused below for 2xx */
	res->last_modified = http_date(response_header(s->curl, "Last-Modified"));
	v = response_header(s->curl, "Content-Type");
	if (v && strlen(v) < sizeof(res->content_type))
		strcpy(res->content_type, v); /* too long to keep: left "" (unknown) */
	res->server_date = http_date(response_header(s->curl, "Date"));
	for (int i = 0; i < STORE_HDR_COUNT; i++) {
		v = response_header(s->curl, store_hdr_names[i]);
		if (v && !(res->headers[i] = strdup(v)))
			return -1;
	}
	if (curl_easy_getinfo(s->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen) == CURLE_OK)
		res->content_length = clen;
	while ((h = curl_easy_nextheader(s->curl, CURLH_HEADER, -1, h)) != NULL) {
		size_t plen = sizeof(META_PREFIX) - 1;
		char *name, *value;

		if (strncasecmp(h->name, META_PREFIX, plen) != 0 || !h->name[plen])
			continue;
		if (res->nmeta == STORE_META_MAX) {
			res->meta_dropped++; /* more than we keep: the first STORE_META_MAX */
			continue;
		}
		name = strdup(h->name + plen);
		value = strdup(h->value);
		if (!name || !value) {
			free(name);
			free(value);
			return -1;
		}
		lowercase(name);
		res->meta[res->nmeta].name = name;
		res->meta[res->nmeta].value = value;
		res->nmeta++;
	}
	return 0;
}

/* Builds, signs and sends one request; fills res and leaves the body in
 * buf. Returns the code for this one attempt. */
static enum store_code send_once(struct store_s3 *s, struct s3_call *c,
				 struct body_buf *buf, struct store_result *res)
{
	struct signed_headers sh = { .n = 0 };
	struct sigv4_request rq;
	struct sigv4_credentials cred;
	struct curl_slist *list = NULL, *grown;
	char amz_date[17], payload_hash[65];
	char *path = NULL, *url = NULL, *auth = NULL, *line = NULL, *ekey = NULL;
	const char *content_type = NULL;
	enum store_code code = STORE_ERR_NOMEM;
	CURLcode rc;
	long status = 0;
	size_t i;
	long timeout_ms = s->timeout_ms;

	if (s->base.deadline_mono_ms) {
		/* the caller's deadline (store.h) cuts the request short */
		int64_t left = s->base.deadline_mono_ms - timesrc_mono_ms(s->time);

		if (left <= 0) {
			res->code = STORE_ERR_IO;
			snprintf(res->err_message, sizeof(res->err_message),
				 "the caller's deadline passed before the request was sent");
			return STORE_ERR_IO;
		}
		if (left < timeout_ms)
			timeout_ms = (long)left;
	}

	/* the path exactly as sent and signed */
	if (c->key) {
		ekey = sigv4_uri_encode(c->key, strlen(c->key), 0);
		if (!ekey)
			goto out;
	}
	if (asprintf(&path, "%s/%s", s->path_base, ekey ? ekey : "") < 0) {
		path = NULL;
		goto out;
	}
	if (!c->key && path[0] && strcmp(path, "/") != 0)
		path[strlen(path) - 1] = '\0'; /* path-style listing: "/bucket" */
	if (asprintf(&url, "%s%s%s%s", s->origin, path, c->query ? "?" : "",
		     c->query ? c->query : "") < 0) {
		url = NULL;
		goto out;
	}

	/* signed with the real clock, not cfg->time: S3 refuses a request whose
	 * date is off by more than 15 minutes, and a fake clock is for leases */
	sigv4_amz_date(time(NULL), amz_date);
	if (c->body_len)
		sigv4_sha256_hex(c->body, c->body_len, payload_hash);
	else
		snprintf(payload_hash, sizeof(payload_hash), "%s", SIGV4_EMPTY_SHA256);

	if (add_header(&sh, "host", s->host, NULL) ||
	    add_header(&sh, "x-amz-date", amz_date, NULL) ||
	    add_header(&sh, "x-amz-content-sha256", payload_hash, NULL))
		goto out;
	if (s->cred.session_token && add_header(&sh, "x-amz-security-token", s->cred.session_token, NULL))
		goto out;
	if (c->put) {
		content_type = c->put->content_type ? c->put->content_type : "application/octet-stream";
		if (add_header(&sh, "content-type", content_type, NULL))
			goto out;
		if (c->put->cond == STORE_COND_IF_NONE_MATCH_ANY &&
		    add_header(&sh, "if-none-match", "*", NULL))
			goto out;
		if (c->put->cond == STORE_COND_IF_MATCH &&
		    add_header(&sh, "if-match", c->put->etag, NULL))
			goto out;
		for (i = 0; i < c->put->nmeta; i++) {
			char *name = NULL;

			if (asprintf(&name, META_PREFIX "%s", c->put->meta[i].name) < 0)
				goto out;
			lowercase(name);
			if (add_header(&sh, name, c->put->meta[i].value, name))
				goto out;
		}
	}
	if (c->if_match && add_header(&sh, "if-match", c->if_match, NULL))
		goto out;
	for (i = 0; i < S3_CALL_EXTRA_MAX && c->extra[i][0]; i++)
		if (add_header(&sh, c->extra[i][0], c->extra[i][1], NULL))
			goto out;

	memset(&rq, 0, sizeof(rq));
	rq.method = c->method;
	rq.path = path;
	rq.query = c->query;
	rq.headers = sh.h;
	rq.nheaders = sh.n;
	rq.payload_hash = payload_hash;
	rq.s3 = 1;
	cred.access_key = s->cred.access_key;
	cred.secret_key = s->cred.secret_key;
	cred.session_token = s->cred.session_token;
	auth = sigv4_authorization(&rq, &cred, s->region, "s3", amz_date);
	if (!auth) {
		code = STORE_ERR_INVALID;
		snprintf(res->err_message, sizeof(res->err_message), "could not sign the request");
		goto out;
	}

	for (i = 0; i <= sh.n; i++) {
		int n = i < sh.n ? asprintf(&line, "%s: %s", sh.h[i].name, sh.h[i].value)
				 : asprintf(&line, "Authorization: %s", auth);

		if (n < 0) {
			line = NULL;
			goto out;
		}
		grown = curl_slist_append(list, line);
		free(line);
		line = NULL;
		if (!grown)
			goto out;
		list = grown;
	}
	/* no "Expect: 100-continue" round trip, no unsigned Accept */
	if (!(grown = curl_slist_append(list, "Expect:")))
		goto out;
	list = grown;
	if (!(grown = curl_slist_append(list, "Accept:")))
		goto out;
	list = grown;

	curl_easy_reset(s->curl); /* keeps the connection cache */
	s->curl_err[0] = '\0';
	curl_easy_setopt(s->curl, CURLOPT_URL, url);
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(s->curl, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(s->curl, CURLOPT_ERRORBUFFER, s->curl_err);
	curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, buf);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(s->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	if (s->ca_bundle)
		curl_easy_setopt(s->curl, CURLOPT_CAINFO, s->ca_bundle);
	if (strcmp(c->method, "HEAD") == 0) {
		curl_easy_setopt(s->curl, CURLOPT_NOBODY, 1L);
	} else if (strcmp(c->method, "PUT") == 0) {
		c->body_pos = 0;
		curl_easy_setopt(s->curl, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(s->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->body_len);
		curl_easy_setopt(s->curl, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(s->curl, CURLOPT_READDATA, c);
		curl_easy_setopt(s->curl, CURLOPT_SEEKFUNCTION, on_upload_seek);
		curl_easy_setopt(s->curl, CURLOPT_SEEKDATA, c);
	} else if (strcmp(c->method, "POST") == 0) {
		curl_easy_setopt(s->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, c->body ? c->body : "");
		curl_easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
	} else if (strcmp(c->method, "GET") != 0) {
		curl_easy_setopt(s->curl, CURLOPT_CUSTOMREQUEST, c->method);
	}

	res->attempts++;
	s->base.requests++;
	rc = curl_easy_perform(s->curl);
	curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	res->http_status = (int)status;
	if (rc != CURLE_OK) {
		if (buf->overflow) {
			code = STORE_ERR_PROTOCOL;
			snprintf(res->err_message, sizeof(res->err_message),
				 "%s %s: response body larger than %zu bytes", c->method,
				 c->key ? c->key : "(list)", buf->max);
		} else {
			code = rc == CURLE_OUT_OF_MEMORY ? STORE_ERR_NOMEM : STORE_ERR_IO;
			snprintf(res->err_message, sizeof(res->err_message), "%s %.60s: %.180s",
				 c->method, s->host,
				 s->curl_err[0] ? s->curl_err : curl_easy_strerror(rc));
		}
		goto out;
	}
	if (collect_headers(s, res) < 0) {
		code = STORE_ERR_NOMEM;
		goto out;
	}
	code = map_status(status);
	if (code == STORE_OK) {
		if (!res->etag[0] && response_header(s->curl, "ETag")) {
			code = STORE_ERR_PROTOCOL;
			snprintf(res->err_message, sizeof(res->err_message),
				 "ETag longer than %d bytes", STORE_ETAG_MAX - 1);
		}
		goto out;
	}
	if (buf->len > 0)
		s3xml_parse_error(buf->data, buf->len, res->err_code, sizeof(res->err_code),
				  res->err_message, sizeof(res->err_message));
	if (!res->err_message[0])
		snprintf(res->err_message, sizeof(res->err_message), "%s %s: http status %ld",
			 c->method, c->key ? c->key : "(list)", status);
out:
	res->code = code;
	curl_slist_free_all(list);
	signed_headers_free(&sh);
	free(auth);
	free(url);
	free(path);
	free(ekey);
	return code;
}

/* Whether an outcome may be resent. Conditional writes never are: after an
 * unknown outcome a resend could answer 412 to our own success. */
static int retryable(const struct s3_call *c, enum store_code code, const struct store_result *res)
{
	if (!c->idempotent)
		return 0;
	if (code == STORE_ERR_IO || code == STORE_ERR_SERVER)
		return 1;
	return code == STORE_CONFLICT && strcmp(res->err_code, "ConditionalRequestConflict") == 0;
}

/* Sends c with retries; on return res describes the last attempt and, for
 * STORE_OK, buf holds the body. */
enum store_code store_s3_perform(struct store_s3 *s, struct s3_call *c,
				 struct body_buf *buf, struct store_result *res)
{
	enum store_code code;
	int retry = 0;
	int64_t pause;

	buf->max = c->body_max;
	for (;;) {
		result_reset(res);
		buf->len = 0;
		buf->overflow = 0;
		code = send_once(s, c, buf, res);
		if (!retryable(c, code, res) || retry >= s->max_retries)
			return code;
		pause = backoff_ms(s, retry);
		if (s->base.deadline_mono_ms &&
		    timesrc_mono_ms(s->time) + pause >= s->base.deadline_mono_ms)
			return code; /* no retry would be answered in time */
		timesrc_sleep_ms(s->time, pause);
		retry++;
	}
}

/* --- the operations ----------------------------------------------------- */

/* GET (body set: the object's bytes into res) or HEAD of key. */
static enum store_code read_object(struct store *st, const char *key, int body,
				   struct store_result *res)
{
	struct store_s3 *s = (struct store_s3 *)st;
	struct s3_call c = { .method = body ? "GET" : "HEAD", .key = key,
			     .body_max = body ? GET_BODY_MAX : OTHER_BODY_MAX, .idempotent = 1 };
	struct body_buf buf = { 0 };
	enum store_code code;

	store_result_clear(res);
	if (!key_ok(key))
		return store_s3_refuse(res, "key must be 1 to 1024 bytes");
	code = store_s3_perform(s, &c, &buf, res);
	if (code == STORE_OK && body) {
		if (!buf.data && !(buf.data = calloc(1, 1))) {
			res->code = STORE_ERR_NOMEM;
			return STORE_ERR_NOMEM;
		}
		res->body = buf.data;
		res->body_len = buf.len;
		buf.data = NULL;
		if (res->content_length < 0)
			res->content_length = (int64_t)res->body_len;
	}
	free(buf.data);
	return code;
}

static enum store_code s3_get(struct store *st, const char *key, struct store_result *res)
{
	return read_object(st, key, 1, res);
}

static enum store_code s3_head(struct store *st, const char *key, struct store_result *res)
{
	return read_object(st, key, 0, res);
}

/* --- If-Match as this server takes it ------------------------------------ */

/* etag as the store's form spells it: bare where the server wants it so,
 * else as the caller gave it (S3 returns ETags quoted). */
static const char *spell_if_match(struct store_s3 *s, const char *etag, char *buf, size_t len)
{
	if (s->base.etag_form != DIALECT_ETAG_BARE)
		return etag;
	return dialect_spell_etag(DIALECT_ETAG_BARE, etag, buf, len);
}

/* Whether a 412 to a quoted If-Match was false: the form is not settled
 * yet and the object is at that very ETag (radosgw 16 compares the header
 * with the quotes still on). The write is then sent again with the ETag
 * bare, conditioned as before: a server that honours neither spelling
 * answers 412 again. One HEAD, only while the form is unknown. */
static int false_412(struct store_s3 *s, const char *key, const char *sent)
{
	struct store_result head = STORE_RESULT_INIT;
	int yes;

	if (s->base.etag_form != DIALECT_ETAG_AUTO || sent[0] != '"')
		return 0;
	yes = read_object(&s->base, key, 0, &head) == STORE_OK &&
	      store_etag_matches(sent, head.etag);
	store_result_clear(&head);
	return yes;
}

/* A conditioned write that succeeded settles the form it was spelled in. */
static void learn_form(struct store_s3 *s, const char *sent, enum store_code code)
{
	if (code == STORE_OK && s->base.etag_form == DIALECT_ETAG_AUTO)
		s->base.etag_form = sent[0] == '"' ? DIALECT_ETAG_QUOTED : DIALECT_ETAG_BARE;
}

static enum store_code s3_put(struct store *st, const char *key, const void *body, size_t len,
			      const struct store_put_opts *opts, struct store_result *res)
{
	struct store_s3 *s = (struct store_s3 *)st;
	static const struct store_put_opts plain = { .cond = STORE_COND_NONE };
	struct store_put_opts po;
	char spelled[STORE_ETAG_MAX];
	struct s3_call c = { .method = "PUT", .key = key, .body = body, .body_len = len,
			     .body_max = OTHER_BODY_MAX };
	struct body_buf buf = { 0 };
	enum store_code code;
	size_t i;

	store_result_clear(res);
	if (!opts)
		opts = &plain;
	if (!key_ok(key))
		return store_s3_refuse(res, "key must be 1 to 1024 bytes");
	if (!body && len)
		return store_s3_refuse(res, "no body");
	if (opts->cond == STORE_COND_IF_MATCH && (!opts->etag || !*opts->etag || !store_s3_header_safe(opts->etag)))
		return store_s3_refuse(res, "If-Match needs an etag of printable characters");
	if (opts->cond != STORE_COND_NONE && opts->cond != STORE_COND_IF_MATCH &&
	    opts->cond != STORE_COND_IF_NONE_MATCH_ANY)
		return store_s3_refuse(res, "unknown put condition");
	if (opts->content_type && (!*opts->content_type || !store_s3_header_safe(opts->content_type)))
		return store_s3_refuse(res, "bad content type");
	if (opts->if_meta.name)
		return store_s3_refuse(res, "S3 cannot condition a write on metadata (if_meta)");
	if (opts->files || opts->object_etag || opts->adopt)
		return store_s3_refuse(res, "S3 takes a body from memory only, with its own ETag");
	if (opts->nmeta > STORE_META_MAX || (opts->nmeta && !opts->meta))
		return store_s3_refuse(res, "too much metadata");
	for (i = 0; i < opts->nmeta; i++)
		if (!meta_name_ok(opts->meta[i].name) || !opts->meta[i].value ||
		    !store_s3_header_safe(opts->meta[i].value))
			return store_s3_refuse(res, "metadata names must be [A-Za-z0-9_-], values printable ASCII");
	po = *opts;
	if (po.cond == STORE_COND_IF_MATCH)
		po.etag = spell_if_match(s, po.etag, spelled, sizeof(spelled));
	c.put = &po;
	c.idempotent = opts->cond == STORE_COND_NONE;
	code = store_s3_perform(s, &c, &buf, res);
	if (po.cond == STORE_COND_IF_MATCH) {
		if (code == STORE_PRECONDITION_FAILED && false_412(s, key, po.etag)) {
			po.etag = dialect_spell_etag(DIALECT_ETAG_BARE, opts->etag, spelled,
						     sizeof(spelled));
			code = store_s3_perform(s, &c, &buf, res);
		}
		learn_form(s, po.etag, code);
	}
	free(buf.data);
	return code;
}

enum store_code store_s3_del_opts(struct store *st, const char *key,
				  const struct store_delete_opts *opts, struct store_result *res)
{
	struct store_s3 *s = (struct store_s3 *)st;
	const char *if_match = opts ? opts->if_match : NULL;
	struct s3_call c = { .method = "DELETE", .key = key, .if_match = if_match,
			     .body_max = OTHER_BODY_MAX, .idempotent = if_match == NULL };
	char spelled[STORE_ETAG_MAX], *query = NULL;
	struct body_buf buf = { 0 };
	enum store_code code;

	store_result_clear(res);
	if (!key_ok(key))
		return store_s3_refuse(res, "key must be 1 to 1024 bytes");
	if (if_match && (!*if_match || !store_s3_header_safe(if_match)))
		return store_s3_refuse(res, "If-Match needs an etag of printable characters");
	if (opts && opts->if_meta.name)
		return store_s3_refuse(res, "S3 cannot condition a delete on metadata (if_meta)");
	if (opts && opts->version_id) {
		if (!*opts->version_id)
			return store_s3_refuse(res, "an empty version id");
		if (store_s3_query_add(&query, "versionId", opts->version_id) < 0)
			return res->code = STORE_ERR_NOMEM;
		c.query = query;
	}
	if (if_match)
		c.if_match = spell_if_match(s, if_match, spelled, sizeof(spelled));
	code = store_s3_perform(s, &c, &buf, res);
	if (if_match) {
		if (code == STORE_PRECONDITION_FAILED && false_412(s, key, c.if_match)) {
			c.if_match = dialect_spell_etag(DIALECT_ETAG_BARE, if_match, spelled,
							sizeof(spelled));
			code = store_s3_perform(s, &c, &buf, res);
		}
		/* no learning from a delete: a server that ignores DELETE's
		 * If-Match would teach the wrong form */
	}
	free(query);
	free(buf.data);
	return code;
}

static enum store_code s3_del(struct store *st, const char *key, const char *if_match,
			      struct store_result *res)
{
	struct store_delete_opts opts = { .if_match = if_match };

	return store_s3_del_opts(st, key, &opts, res);
}

void store_s3_close(struct store *st)
{
	struct store_s3 *s = (struct store_s3 *)st;

	if (!s)
		return;
	if (s->curl) {
		curl_easy_cleanup(s->curl);
		curl_global_cleanup();
	}
	free(s->host);
	free(s->origin);
	free(s->path_base);
	free(s->region);
	free(s->bucket);
	free(s->ca_bundle);
	aws_credentials_clear(&s->cred);
	free(s);
}

const struct store_ops store_s3_ops = {
	.scheme = "s3",
	.get = s3_get,
	.head = s3_head,
	.put = s3_put,
	.del = s3_del,
	.list = store_s3_list,
	.close = store_s3_close,
};
