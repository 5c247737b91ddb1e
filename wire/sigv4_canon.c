/* sigv4_canon.c — the strings AWS Signature Version 4 signs and carries:
 * the canonical request (step 1: method, URI normalized and encoded as S3
 * or other services want it, sorted and re-encoded query, trimmed and
 * sorted headers, signed-header list, payload hash) and the presigned
 * query (X-Amz-* parameters, then the signature from sigv4.c). It only
 * builds strings: no hashing of its own beyond the public sigv4_* calls,
 * no I/O, no clock, and no judgement on which headers a caller should
 * sign. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4.h"
#include "sigv4_int.h"

#include "pct.h"

#define SIGV4_PRESIGN_MAX_EXPIRES 604800L /* seven days, the AWS limit */

/* ---- growable string ------------------------------------------------------
 * States: ok (s holds len bytes plus a NUL, or is NULL while empty) or
 * failed (an allocation failed; every later append is a no-op and
 * strbuf_take returns NULL). A strbuf may start on a caller's buffer
 * (strbuf_init_on, borrowed): it moves to the heap only when that fills. */
struct strbuf {
	char *s;
	size_t len;
	size_t cap;
	int failed;
	int borrowed; /* s is the caller's buffer: never realloc'd or freed */
};

/* b starts empty on buf[0..cap), cap > 0. */
static void strbuf_init_on(struct strbuf *b, char *buf, size_t cap)
{
	memset(b, 0, sizeof(*b));
	b->s = buf;
	b->cap = cap;
	b->borrowed = 1;
	buf[0] = '\0';
}

/* Frees what b holds unless borrowed, and resets it. */
static void strbuf_release(struct strbuf *b)
{
	if (!b->borrowed)
		free(b->s);
	memset(b, 0, sizeof(*b));
}

/* Room for n more bytes plus the NUL (capacity doubles): where they go, or
 * NULL once b has failed. */
static char *strbuf_room(struct strbuf *b, size_t n)
{
	char *grown;
	size_t want;

	if (b->failed)
		return NULL;
	if (n > SIZE_MAX / 2 - b->len - 1) {
		b->failed = 1;
		return NULL;
	}
	want = b->len + n + 1;
	if (want > b->cap) {
		size_t cap = b->cap ? b->cap : 64;

		while (cap < want)
			cap *= 2;
		if (b->borrowed) {
			grown = malloc(cap);
			if (grown)
				memcpy(grown, b->s, b->len + 1);
		} else {
			grown = realloc(b->s, cap);
		}
		if (!grown) {
			b->failed = 1;
			return NULL;
		}
		b->s = grown;
		b->cap = cap;
		b->borrowed = 0;
	}
	return b->s + b->len;
}

static void strbuf_add(struct strbuf *b, const char *p, size_t n)
{
	char *at = strbuf_room(b, n);

	if (!at)
		return;
	memcpy(at, p, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/* Grows b to hold at least n bytes plus the NUL up front, so a string of
 * known typical size is built without repeated reallocs. Failure is left
 * to the next append (which retries the allocation). */
static void strbuf_reserve(struct strbuf *b, size_t n)
{
	char *grown;

	if (b->failed || b->borrowed || b->cap > n || n > SIZE_MAX / 2)
		return;
	grown = realloc(b->s, n + 1);
	if (!grown)
		return;
	if (!b->s)
		grown[0] = '\0';
	b->s = grown;
	b->cap = n + 1;
}

static void strbuf_adds(struct strbuf *b, const char *s)
{
	strbuf_add(b, s, strlen(s));
}

static void strbuf_addc(struct strbuf *b, char c)
{
	strbuf_add(b, &c, 1);
}

/* Returns the malloc'd string (never NULL when ok, "" when empty) and
 * resets b; NULL if any append failed. */
static char *strbuf_take(struct strbuf *b)
{
	char *s = b->s;

	if (b->borrowed)
		s = b->failed ? NULL : strdup(s);
	else if (!b->failed && !s)
		s = calloc(1, 1);
	else if (b->failed) {
		free(s);
		s = NULL;
	}
	memset(b, 0, sizeof(*b));
	return s;
}

/* ---- encoding ------------------------------------------------------------ */

/* Appends s[0..len) AWS-encoded (pct.h) to b. */
static void uri_encode_into(struct strbuf *b, const char *s, size_t len,
			    int encode_slash)
{
	unsigned flags = encode_slash ? 0 : PCT_KEEP_SLASH;
	size_t n = pct_encoded_len(s, len, flags);
	char *at = strbuf_room(b, n);

	if (!at)
		return;
	pct_encode(s, len, flags, at, n + 1);
	b->len += n;
}

char *sigv4_uri_encode(const char *s, size_t len, int encode_slash)
{
	struct strbuf b = { 0 };

	uri_encode_into(&b, s, len, encode_slash);
	return strbuf_take(&b);
}

/* Decodes then re-encodes s[0..len) with AWS rules, appending to b.
 * Returns 0, -1 on a malformed escape, -2 on ENOMEM. */
static int reencode_into(struct strbuf *b, const char *s, size_t len,
			 int plus_is_space, int encode_slash)
{
	char *dec = NULL;
	size_t declen = 0;

	/* nothing to decode (the usual case): encode straight from s */
	if (!memchr(s, '%', len) && !(plus_is_space && memchr(s, '+', len))) {
		uri_encode_into(b, s, len, encode_slash);
		return b->failed ? -2 : 0;
	}
	dec = pct_decode_dup(s, len, plus_is_space ? PCT_PLUS_SPACE : 0, &declen);
	if (!dec)
		return errno == ENOMEM ? -2 : -1;
	uri_encode_into(b, dec, declen, encode_slash);
	free(dec);
	return b->failed ? -2 : 0;
}

/* ---- step 1: canonical request ------------------------------------------- */

/* 1 when s[0..len) is one path segment equal to seg. */
static int segment_is(const char *s, size_t len, const char *seg)
{
	return len == strlen(seg) && memcmp(s, seg, len) == 0;
}

/* RFC 3986 dot-segment removal plus collapsing of empty segments, on the
 * wire form of path: "/a//b/./c/../" -> "/a/b/". Writes into out, which has
 * room for strlen(path) + 2 bytes. */
static void normalize_path(const char *path, char *out)
{
	size_t n = 0;
	const char *p = path;
	int trailing_slash = 0;

	out[n++] = '/';
	while (*p) {
		const char *seg;
		size_t seglen;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		seg = p;
		while (*p && *p != '/')
			p++;
		seglen = (size_t)(p - seg);
		trailing_slash = *p == '/';
		if (segment_is(seg, seglen, ".")) {
			trailing_slash = 1;
			continue;
		}
		if (segment_is(seg, seglen, "..")) {
			/* drop the last segment of out, keeping its leading '/' */
			if (n > 1) {
				n--; /* the '/' ending the last segment */
				while (n > 1 && out[n - 1] != '/')
					n--;
			}
			trailing_slash = 1;
			continue;
		}
		memcpy(out + n, seg, seglen);
		n += seglen;
		out[n++] = '/';
	}
	/* out ends with '/' here; drop it unless the input ended a directory */
	if (n > 1 && !trailing_slash)
		n--;
	out[n] = '\0';
}

/* Canonical URI into b. S3: the path as given, each '/'-separated segment
 * decoded and re-encoded once (an escaped "%2F" stays escaped). Others:
 * normalize, then encode the wire form again (so "%2F" becomes "%252F").
 * Either way the result starts with '/'. Returns 0, -1 malformed, -2 ENOMEM. */
static int canonical_uri_into(struct strbuf *b, const char *path, int s3)
{
	char *normalized = NULL;
	size_t i, len;
	int rc, escaped = 0;

	if (!path || !*path) {
		strbuf_addc(b, '/');
		return b->failed ? -2 : 0;
	}
	len = strlen(path);
	/* both modes reject malformed escapes in the wire path */
	for (i = 0; i < len; i++) {
		if (path[i] != '%')
			continue;
		escaped = 1;
		if (i + 2 >= len || hex_value((unsigned char)path[i + 1]) < 0 ||
		    hex_value((unsigned char)path[i + 2]) < 0)
			return -1;
	}
	if (s3) {
		/* segment by segment on the wire's '/', so "%2F" stays "%2F" */
		const char *seg = path, *slash;

		if (path[0] != '/')
			strbuf_addc(b, '/');
		if (!escaped) {
			/* nothing to decode: encoding each segment and joining
			 * them with '/' is encoding the path keeping '/' */
			uri_encode_into(b, path, len, 0);
			return b->failed ? -2 : 0;
		}
		for (;;) {
			slash = strchr(seg, '/');
			rc = reencode_into(b, seg, slash ? (size_t)(slash - seg) :
					   strlen(seg), 0, 1);
			if (rc || !slash)
				return rc;
			strbuf_addc(b, '/');
			seg = slash + 1;
		}
	}
	normalized = malloc(len + 2);
	if (!normalized)
		return -2;
	normalize_path(path, normalized);
	uri_encode_into(b, normalized, strlen(normalized), 0);
	free(normalized);
	return b->failed ? -2 : 0;
}

struct query_param {
	char *name;  /* AWS-encoded */
	char *value; /* AWS-encoded, "" when absent */
};

static int query_param_cmp(const void *a, const void *b)
{
	const struct query_param *pa = a, *pb = b;
	int c = strcmp(pa->name, pb->name);

	return c ? c : strcmp(pa->value, pb->value);
}

/* Canonical query string of a wire query into b: split on '&', each name
 * and value decoded ('+' is a space, as S3 reads it) and re-encoded, sorted
 * by name then value, "name=" for a missing value. Returns 0, -1 malformed,
 * -2 ENOMEM. */
static int canonical_query_into(struct strbuf *b, const char *query)
{
	struct query_param *params = NULL;
	size_t nparams = 0, cap = 1, i;
	const char *p;
	int rc = 0;

	if (!query || !*query)
		return 0;
	for (p = query; *p; p++)
		if (*p == '&')
			cap++;
	params = calloc(cap, sizeof(*params));
	if (!params)
		return -2;
	p = query;
	while (*p) {
		const char *end = strchr(p, '&');
		const char *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct strbuf name = { 0 }, value = { 0 };

		if (len > 0) {
			eq = memchr(p, '=', len);
			rc = reencode_into(&name, p, eq ? (size_t)(eq - p) : len, 1, 1);
			if (!rc && eq)
				rc = reencode_into(&value, eq + 1,
						   len - (size_t)(eq + 1 - p), 1, 1);
			params[nparams].name = strbuf_take(&name);
			params[nparams].value = strbuf_take(&value);
			nparams++;
			if (!rc && (!params[nparams - 1].name ||
				    !params[nparams - 1].value))
				rc = -2;
			if (rc)
				goto out;
		}
		if (!end)
			break;
		p = end + 1;
	}
	qsort(params, nparams, sizeof(*params), query_param_cmp);
	for (i = 0; i < nparams; i++) {
		if (i > 0)
			strbuf_addc(b, '&');
		strbuf_adds(b, params[i].name);
		strbuf_addc(b, '=');
		strbuf_adds(b, params[i].value);
	}
	rc = b->failed ? -2 : 0;
out:
	for (i = 0; i < nparams; i++) {
		free(params[i].name);
		free(params[i].value);
	}
	free(params);
	return rc;
}

struct canon_header {
	const char *name;  /* lowercased, NUL-terminated */
	const char *value; /* trimmed, whitespace runs collapsed to one space */
	size_t name_len;
	size_t value_len;
	size_t order;      /* position in the request, for duplicates */
};

static int canon_header_cmp(const void *a, const void *b)
{
	const struct canon_header *ha = a, *hb = b;
	int c = strcmp(ha->name, hb->name);

	if (c)
		return c;
	return ha->order < hb->order ? -1 : ha->order > hb->order;
}

/* Sorts hs by name, then request order. Insertion sort for the few headers
 * a request signs (no qsort call and callback per comparison), qsort past
 * that. */
static void canon_headers_sort(struct canon_header *hs, size_t n)
{
	size_t i, j;

	if (n > 16) {
		qsort(hs, n, sizeof(*hs), canon_header_cmp);
		return;
	}
	for (i = 1; i < n; i++) {
		struct canon_header h = hs[i];

		for (j = i; j > 0 && canon_header_cmp(&hs[j - 1], &h) > 0; j--)
			hs[j] = hs[j - 1];
		hs[j] = h;
	}
}

/* Header whitespace: what is trimmed and collapsed in values. */
static int is_header_space(unsigned char c)
{
	return c <= ' ' && (c == ' ' || c == '\t' || c == '\r' || c == '\n');
}

/* Writes value with leading/trailing whitespace removed and every inner run
 * (folded lines included) collapsed to one space, NUL-terminated, into out
 * (room for strlen(value) + 1). Returns the length written. */
static size_t header_value_trim_into(const char *value, char *out)
{
	const unsigned char *v = (const unsigned char *)value;
	size_t n = 0;
	int pending_space = 0;

	for (; *v; v++) {
		if (is_header_space(*v)) {
			pending_space = n > 0;
			continue;
		}
		if (pending_space)
			out[n++] = ' ';
		pending_space = 0;
		out[n++] = (char)*v;
	}
	out[n] = '\0';
	return n;
}

/* Writes name[0..len) lowercased, NUL-terminated, into out (room for len +
 * 1). Returns 0, or -1 if name is empty or holds bytes not allowed in a
 * field name (controls, space, ':'). */
static int header_name_lower_into(const char *name, size_t len, char *out)
{
	size_t i;

	if (len == 0)
		return -1;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if ((unsigned)(c - 'a') < 26u || c == '-')
			; /* the common case first */
		else if ((unsigned)(c - 'A') < 26u)
			c = (unsigned char)(c + ('a' - 'A'));
		else if (c <= ' ' || c == ':' || c == 0x7f)
			return -1;
		out[i] = (char)c;
	}
	out[len] = '\0';
	return 0;
}

#define CANON_STACK_HEADERS 24
#define CANON_STACK_TEXT    1536

/* Canonical header block (each "name:value\n") into canon and the signed
 * header list ("a;b") into signed_list. The lowercased names and trimmed
 * values are kept on the stack when they fit, else in one malloc'd block.
 * Returns 0, -1 malformed, -2 ENOMEM. */
static int canonical_headers_into(struct strbuf *canon, struct strbuf *signed_list,
				  const struct sigv4_header *headers, size_t nheaders)
{
	struct canon_header stack_hs[CANON_STACK_HEADERS];
	char stack_text[CANON_STACK_TEXT];
	struct canon_header *hs = NULL;
	char *p, *c_at, *s_at;
	size_t i, room = 0, canon_len = 0, signed_len = 0;
	int rc = 0;

	if (nheaders == 0)
		return 0;
	if (!headers)
		return -1;
	for (i = 0; i < nheaders; i++) {
		if (!headers[i].name || !headers[i].value)
			return -1;
		room += strlen(headers[i].name) + strlen(headers[i].value) + 2;
	}
	if (nheaders <= CANON_STACK_HEADERS && room <= sizeof(stack_text)) {
		hs = stack_hs;
		p = stack_text;
	} else {
		/* one block for the array and every name and value */
		if (nheaders > (SIZE_MAX - room) / sizeof(*hs))
			return -2;
		hs = malloc(nheaders * sizeof(*hs) + room);
		if (!hs)
			return -2;
		p = (char *)(hs + nheaders);
	}
	for (i = 0; i < nheaders; i++) {
		size_t len = strlen(headers[i].name);

		hs[i].order = i;
		if (header_name_lower_into(headers[i].name, len, p)) {
			rc = -1;
			goto out;
		}
		hs[i].name = p;
		hs[i].name_len = len;
		p += len + 1;
		hs[i].value = p;
		hs[i].value_len = header_value_trim_into(headers[i].value, p);
		p += hs[i].value_len + 1;
	}
	canon_headers_sort(hs, nheaders);
	/* exact sizes, so each buffer grows at most once */
	for (i = 0; i < nheaders; i++) {
		if (i > 0 && strcmp(hs[i].name, hs[i - 1].name) == 0) {
			canon_len += 1 + hs[i].value_len;           /* ",value" */
		} else {
			canon_len += hs[i].name_len + 2 + hs[i].value_len;
			signed_len += (i > 0) + hs[i].name_len;
		}
	}
	c_at = strbuf_room(canon, canon_len);
	s_at = strbuf_room(signed_list, signed_len);
	if (!c_at || !s_at) {
		rc = -2;
		goto out;
	}
	for (i = 0; i < nheaders; i++) {
		if (i > 0 && strcmp(hs[i].name, hs[i - 1].name) == 0) {
			/* the previous line's '\n' becomes the ',' separator */
			c_at[-1] = ',';
		} else {
			if (i > 0)
				*s_at++ = ';';
			memcpy(s_at, hs[i].name, hs[i].name_len);
			s_at += hs[i].name_len;
			memcpy(c_at, hs[i].name, hs[i].name_len);
			c_at += hs[i].name_len;
			*c_at++ = ':';
		}
		memcpy(c_at, hs[i].value, hs[i].value_len);
		c_at += hs[i].value_len;
		*c_at++ = '\n';
	}
	canon->len += canon_len;
	canon->s[canon->len] = '\0';
	signed_list->len += signed_len;
	signed_list->s[signed_list->len] = '\0';
out:
	if (hs != stack_hs)
		free(hs);
	return rc;
}
/* The canonical request for req appended to creq; *signed_at and
 * *signed_len locate the signed-header list inside it. Returns 0 or -1
 * (malformed request, ENOMEM). */
static int canonical_build(const struct sigv4_request *req, struct strbuf *creq,
			   size_t *signed_at, size_t *signed_len)
{
	char signed_buf[256];
	struct strbuf signed_list;
	int rc = -1;

	strbuf_init_on(&signed_list, signed_buf, sizeof(signed_buf));
	if (!req || !req->method || !*req->method || !req->payload_hash)
		goto out;
	strbuf_adds(creq, req->method);
	strbuf_addc(creq, '\n');
	if (canonical_uri_into(creq, req->path, req->s3))
		goto out;
	strbuf_addc(creq, '\n');
	if (canonical_query_into(creq, req->query))
		goto out;
	strbuf_addc(creq, '\n');
	/* the header block goes straight into the canonical request */
	if (canonical_headers_into(creq, &signed_list, req->headers,
				   req->nheaders))
		goto out;
	strbuf_addc(creq, '\n');
	*signed_at = creq->len;
	*signed_len = signed_list.len;
	strbuf_add(creq, signed_list.s, signed_list.len);
	strbuf_addc(creq, '\n');
	strbuf_adds(creq, req->payload_hash);
	if (creq->failed || signed_list.failed)
		goto out;
	rc = 0;
out:
	strbuf_release(&signed_list);
	return rc;
}

int sigv4_canon_build(const struct sigv4_request *req, char *buf, size_t cap,
		      struct sigv4_canon *c)
{
	struct strbuf creq;

	memset(c, 0, sizeof(*c));
	strbuf_init_on(&creq, buf, cap);
	if (canonical_build(req, &creq, &c->signed_at, &c->signed_len)) {
		strbuf_release(&creq);
		return -1;
	}
	c->s = creq.s;
	c->len = creq.len;
	c->heap = creq.borrowed ? NULL : creq.s;
	return 0;
}

void sigv4_canon_release(struct sigv4_canon *c)
{
	free(c->heap);
	memset(c, 0, sizeof(*c));
}

int sigv4_canonical_request(const struct sigv4_request *req,
			    char **canonical, char **signed_headers)
{
	struct strbuf creq = { 0 };
	char *signed_s = NULL;
	size_t signed_at = 0, signed_len = 0;

	if (!canonical || !signed_headers)
		return -1;
	strbuf_reserve(&creq, 512);
	if (canonical_build(req, &creq, &signed_at, &signed_len))
		goto fail;
	signed_s = malloc(signed_len + 1);
	if (!signed_s)
		goto fail;
	memcpy(signed_s, creq.s + signed_at, signed_len);
	signed_s[signed_len] = '\0';
	*canonical = strbuf_take(&creq);
	*signed_headers = signed_s;
	return 0;
fail:
	strbuf_release(&creq);
	return -1;
}

/* ---- presigned query --------------------------------------------------- */

/* Appends "&name=" + AWS-encoded value (or without '&' when b is empty). */
static void query_add_param(struct strbuf *b, const char *name, const char *value)
{
	if (b->len > 0)
		strbuf_addc(b, '&');
	strbuf_adds(b, name);
	strbuf_addc(b, '=');
	uri_encode_into(b, value, strlen(value), 1);
}

char *sigv4_presign_query(const struct sigv4_request *req,
			  const struct sigv4_credentials *cred,
			  const char *region, const char *service,
			  const char *amz_date, long expires_s)
{
	struct strbuf raw = { 0 }, headers = { 0 }, signed_list = { 0 };
	struct strbuf canon = { 0 };
	struct sigv4_request signing;
	char *scope = NULL, *credential = NULL, *signed_s = NULL, *raw_s = NULL;
	char *canon_s = NULL, *result = NULL;
	char expires[32], sig[65];

	if (!req || !cred || !cred->access_key || !cred->secret_key ||
	    !amz_date || strlen(amz_date) != 16 || expires_s < 1 ||
	    expires_s > SIGV4_PRESIGN_MAX_EXPIRES)
		goto out;
	scope = sigv4_scope(amz_date, region, service);
	if (!scope)
		goto out;
	if (asprintf(&credential, "%s/%s", cred->access_key, scope) < 0) {
		credential = NULL;
		goto out;
	}
	if (canonical_headers_into(&headers, &signed_list, req->headers,
				   req->nheaders))
		goto out;
	signed_s = strbuf_take(&signed_list);
	if (!signed_s)
		goto out;
	snprintf(expires, sizeof(expires), "%ld", expires_s);

	if (req->query && *req->query)
		strbuf_adds(&raw, req->query);
	query_add_param(&raw, "X-Amz-Algorithm", SIGV4_ALGORITHM);
	query_add_param(&raw, "X-Amz-Credential", credential);
	query_add_param(&raw, "X-Amz-Date", amz_date);
	query_add_param(&raw, "X-Amz-Expires", expires);
	if (cred->session_token)
		query_add_param(&raw, "X-Amz-Security-Token", cred->session_token);
	query_add_param(&raw, "X-Amz-SignedHeaders", signed_s);
	raw_s = strbuf_take(&raw);
	if (!raw_s)
		goto out;

	signing = *req;
	signing.query = raw_s;
	if (sigv4_sign_request(&signing, cred, region, service, amz_date, sig, NULL))
		goto out;
	/* the canonical query is already sorted and encoded: send it as is */
	if (canonical_query_into(&canon, raw_s))
		goto out;
	query_add_param(&canon, "X-Amz-Signature", sig);
	canon_s = strbuf_take(&canon);
	result = canon_s;
	canon_s = NULL;
out:
	free(strbuf_take(&raw));
	free(strbuf_take(&headers));
	free(strbuf_take(&signed_list));
	free(strbuf_take(&canon));
	free(scope);
	free(credential);
	free(signed_s);
	free(raw_s);
	free(canon_s);
	return result;
}
