/* sigv4.c — AWS Signature Version 4 as separate, testable steps: canonical
 * request, string to sign, signing key, signature, Authorization header,
 * presigned query, and the aws-chunked chunk and trailer signatures, with
 * OpenSSL doing SHA-256 and HMAC. It is pure computation: no I/O, no clock,
 * no HTTP framing, and it never decides on its own whether a request is
 * authentic (callers compare signatures with sigv4_signature_equal). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "sigv4.h"

#include "pct.h"

#define SIGV4_CHUNK_ALGORITHM   "AWS4-HMAC-SHA256-PAYLOAD"
#define SIGV4_TRAILER_ALGORITHM "AWS4-HMAC-SHA256-TRAILER"
#define SIGV4_PRESIGN_MAX_EXPIRES 604800L /* seven days, the AWS limit */

/* ---- growable string ------------------------------------------------------
 * States: ok (s holds len bytes plus a NUL, or is NULL while empty) or
 * failed (an allocation failed; every later append is a no-op and
 * strbuf_take returns NULL). */
struct strbuf {
	char *s;
	size_t len;
	size_t cap;
	int failed;
};

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
		grown = realloc(b->s, cap);
		if (!grown) {
			b->failed = 1;
			return NULL;
		}
		b->s = grown;
		b->cap = cap;
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

	if (b->failed || b->cap > n || n > SIZE_MAX / 2)
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

	if (!b->failed && !s)
		s = calloc(1, 1);
	else if (b->failed) {
		free(s);
		s = NULL;
	}
	memset(b, 0, sizeof(*b));
	return s;
}

/* ---- hashing -------------------------------------------------------------
 * OpenSSL 3 makes an HMAC or digest expensive when every call fetches the
 * algorithm by name and builds a fresh context: that was most of the cost of
 * signing a request. So the algorithms are fetched once per process, and
 * each thread keeps one HMAC-SHA256 context and one digest context that it
 * re-keys / re-initializes per call (freed when the thread exits). Where
 * that per-thread state cannot be had, each call falls back to a private
 * context, as before. */

struct hmac_piece {
	const void *data;
	size_t len;
};

struct thread_crypto {
	EVP_MAC_CTX *hmac;  /* HMAC with the SHA256 digest set; re-keyed per use */
	EVP_MD_CTX *md;     /* re-initialized per use */
};

static EVP_MAC *hmac_algorithm;
static EVP_MD *sha256_algorithm;
static EVP_MAC_CTX *hmac_template;  /* digest set, no key: dup'd per thread */
static pthread_key_t thread_crypto_key;
static int thread_crypto_key_ok;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;

static void thread_crypto_free(void *arg)
{
	struct thread_crypto *tc = arg;

	if (!tc)
		return;
	EVP_MAC_CTX_free(tc->hmac);
	EVP_MD_CTX_free(tc->md);
	free(tc);
}

/* Sets the SHA256 digest on a fresh HMAC context. Returns 0 or -1. */
static int hmac_ctx_set_digest(EVP_MAC_CTX *ctx)
{
	OSSL_PARAM params[2];

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						     (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	return EVP_MAC_CTX_set_params(ctx, params) ? 0 : -1;
}

static void crypto_init(void)
{
	hmac_algorithm = EVP_MAC_fetch(NULL, "HMAC", NULL);
	sha256_algorithm = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (hmac_algorithm) {
		hmac_template = EVP_MAC_CTX_new(hmac_algorithm);
		if (hmac_template && hmac_ctx_set_digest(hmac_template)) {
			EVP_MAC_CTX_free(hmac_template);
			hmac_template = NULL;
		}
	}
	thread_crypto_key_ok = pthread_key_create(&thread_crypto_key,
						  thread_crypto_free) == 0;
}

/* This thread's contexts, created on first use; NULL when unavailable
 * (callers then use one-off contexts). */
static struct thread_crypto *thread_crypto(void)
{
	struct thread_crypto *tc;

	pthread_once(&crypto_once, crypto_init);
	if (!thread_crypto_key_ok || !hmac_template || !sha256_algorithm)
		return NULL;
	tc = pthread_getspecific(thread_crypto_key);
	if (tc)
		return tc;
	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return NULL;
	tc->hmac = EVP_MAC_CTX_dup(hmac_template);
	tc->md = EVP_MD_CTX_new();
	if (!tc->hmac || !tc->md ||
	    pthread_setspecific(thread_crypto_key, tc) != 0) {
		thread_crypto_free(tc);
		return NULL;
	}
	return tc;
}

/* HMAC-SHA256(key, concatenation of pieces) into out. Returns 0 or -1. */
static int hmac_sha256(const void *key, size_t keylen,
		       const struct hmac_piece *pieces, size_t npieces,
		       unsigned char out[32])
{
	struct thread_crypto *tc = thread_crypto();
	EVP_MAC_CTX *own = NULL, *ctx;
	size_t outlen = 0;
	size_t i;
	int rc = -1;

	if (tc) {
		ctx = tc->hmac;
	} else {
		if (!hmac_algorithm)
			goto out;
		ctx = own = EVP_MAC_CTX_new(hmac_algorithm);
		if (!own || hmac_ctx_set_digest(own))
			goto out;
	}
	if (!EVP_MAC_init(ctx, key, keylen, NULL))
		goto out;
	for (i = 0; i < npieces; i++)
		if (!EVP_MAC_update(ctx, pieces[i].data, pieces[i].len))
			goto out;
	if (!EVP_MAC_final(ctx, out, &outlen, 32) || outlen != 32)
		goto out;
	rc = 0;
out:
	EVP_MAC_CTX_free(own);
	return rc;
}

static int hmac_sha256_str(const void *key, size_t keylen, const char *msg,
			   unsigned char out[32])
{
	struct hmac_piece piece = { msg, strlen(msg) };

	return hmac_sha256(key, keylen, &piece, 1, out);
}

/* SHA-256 of the concatenation of pieces into md. Returns 0 or -1. */
static int sha256(const struct hmac_piece *pieces, size_t npieces,
		  unsigned char md[32])
{
	struct thread_crypto *tc = thread_crypto();
	EVP_MD_CTX *own = NULL, *ctx;
	unsigned int mdlen = 0;
	size_t i;
	int rc = -1;

	if (tc) {
		ctx = tc->md;
	} else {
		ctx = own = EVP_MD_CTX_new();
		if (!own)
			goto out;
	}
	if (!EVP_DigestInit_ex(ctx, sha256_algorithm ? sha256_algorithm :
			       EVP_sha256(), NULL))
		goto out;
	for (i = 0; i < npieces; i++)
		if (!EVP_DigestUpdate(ctx, pieces[i].data, pieces[i].len))
			goto out;
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != 32)
		goto out;
	rc = 0;
out:
	EVP_MD_CTX_free(own);
	return rc;
}

void sigv4_amz_date(time_t t, char out[17])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		out[0] = '\0';
}

/* On an OpenSSL failure hex is "" (which matches no signature). */
void sigv4_sha256_hex(const void *data, size_t len, char hex[65])
{
	struct hmac_piece piece = { data, len };
	unsigned char md[32];

	if (sha256(&piece, 1, md)) {
		hex[0] = '\0';
		return;
	}
	hex_encode(md, 32, hex);
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
	int rc;

	if (!path || !*path) {
		strbuf_addc(b, '/');
		return b->failed ? -2 : 0;
	}
	len = strlen(path);
	/* both modes reject malformed escapes in the wire path */
	for (i = 0; i < len; i++) {
		if (path[i] != '%')
			continue;
		if (i + 2 >= len || hex_value((unsigned char)path[i + 1]) < 0 ||
		    hex_value((unsigned char)path[i + 2]) < 0)
			return -1;
	}
	if (s3) {
		/* segment by segment on the wire's '/', so "%2F" stays "%2F" */
		const char *seg = path, *slash;

		if (path[0] != '/')
			strbuf_addc(b, '/');
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
	char *name;    /* lowercased */
	char *value;   /* trimmed, whitespace runs collapsed to one space */
	size_t order;  /* position in the request, for duplicates */
};

static int canon_header_cmp(const void *a, const void *b)
{
	const struct canon_header *ha = a, *hb = b;
	int c = strcmp(ha->name, hb->name);

	if (c)
		return c;
	return ha->order < hb->order ? -1 : ha->order > hb->order;
}

static int is_header_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Writes value with leading/trailing whitespace removed and every inner run
 * (folded lines included) collapsed to one space, NUL-terminated, into out
 * (room for strlen(value) + 1). Returns out. */
static char *header_value_trim_into(const char *value, char *out)
{
	size_t n = 0;
	int pending_space = 0;

	for (; *value; value++) {
		if (is_header_space(*value)) {
			pending_space = n > 0;
			continue;
		}
		if (pending_space)
			out[n++] = ' ';
		pending_space = 0;
		out[n++] = *value;
	}
	out[n] = '\0';
	return out;
}

/* Writes the lowercased name, NUL-terminated, into out (room for
 * strlen(name) + 1). Returns out, or NULL if name is empty or holds bytes
 * not allowed in a field name (controls, space, ':'). */
static char *header_name_lower_into(const char *name, char *out)
{
	size_t i, len = strlen(name);

	if (len == 0)
		return NULL;
	for (i = 0; i <= len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (i < len && (c <= ' ' || c == ':' || c == 0x7f))
			return NULL;
		out[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
	}
	return out;
}

/* Canonical header block (each "name:value\n") into canon and the signed
 * header list ("a;b") into signed_list. Returns 0, -1 malformed, -2 ENOMEM. */
static int canonical_headers_into(struct strbuf *canon, struct strbuf *signed_list,
				  const struct sigv4_header *headers, size_t nheaders)
{
	struct canon_header *hs = NULL;
	char *p;
	size_t i, room = 0;
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
	/* one block for the array and every lowercased name and trimmed value */
	if (nheaders > (SIZE_MAX - room) / sizeof(*hs))
		return -2;
	hs = malloc(nheaders * sizeof(*hs) + room);
	if (!hs)
		return -2;
	p = (char *)(hs + nheaders);
	for (i = 0; i < nheaders; i++) {
		hs[i].order = i;
		hs[i].name = header_name_lower_into(headers[i].name, p);
		if (!hs[i].name) {
			rc = -1;
			goto out;
		}
		p += strlen(p) + 1;
		hs[i].value = header_value_trim_into(headers[i].value, p);
		p += strlen(p) + 1;
	}
	qsort(hs, nheaders, sizeof(*hs), canon_header_cmp);
	for (i = 0; i < nheaders; i++) {
		int same_as_prev = i > 0 && strcmp(hs[i].name, hs[i - 1].name) == 0;

		if (same_as_prev && !canon->failed) {
			/* the previous line's '\n' becomes the ',' separator */
			canon->len--;
			strbuf_addc(canon, ',');
		} else {
			if (i > 0)
				strbuf_addc(signed_list, ';');
			strbuf_adds(signed_list, hs[i].name);
			strbuf_adds(canon, hs[i].name);
			strbuf_addc(canon, ':');
		}
		strbuf_adds(canon, hs[i].value);
		strbuf_addc(canon, '\n');
	}
	rc = canon->failed || signed_list->failed ? -2 : 0;
out:
	free(hs);
	return rc;
}

int sigv4_canonical_request(const struct sigv4_request *req,
			    char **canonical, char **signed_headers)
{
	struct strbuf creq = { 0 }, signed_list = { 0 };
	char *creq_s = NULL, *signed_s = NULL;
	int rc = -1;

	if (!req || !canonical || !signed_headers || !req->method ||
	    !*req->method || !req->payload_hash)
		goto out;
	strbuf_reserve(&creq, 512);
	strbuf_adds(&creq, req->method);
	strbuf_addc(&creq, '\n');
	if (canonical_uri_into(&creq, req->path, req->s3))
		goto out;
	strbuf_addc(&creq, '\n');
	if (canonical_query_into(&creq, req->query))
		goto out;
	strbuf_addc(&creq, '\n');
	/* the header block goes straight into the canonical request */
	if (canonical_headers_into(&creq, &signed_list, req->headers,
				   req->nheaders))
		goto out;
	strbuf_addc(&creq, '\n');
	strbuf_add(&creq, signed_list.s ? signed_list.s : "", signed_list.len);
	strbuf_addc(&creq, '\n');
	strbuf_adds(&creq, req->payload_hash);
	signed_s = strbuf_take(&signed_list);
	creq_s = strbuf_take(&creq);
	if (!creq_s || !signed_s)
		goto out;
	*canonical = creq_s;
	*signed_headers = signed_s;
	creq_s = NULL;
	signed_s = NULL;
	rc = 0;
out:
	free(strbuf_take(&creq));
	free(strbuf_take(&signed_list));
	free(creq_s);
	free(signed_s);
	return rc;
}

/* ---- steps 2-4 ------------------------------------------------------------ */

char *sigv4_scope(const char *amz_date, const char *region, const char *service)
{
	char *scope = NULL;

	if (!amz_date || strlen(amz_date) < 8 || !region || !service)
		return NULL;
	if (asprintf(&scope, "%.8s/%s/%s/aws4_request", amz_date, region,
		     service) < 0)
		return NULL;
	return scope;
}

char *sigv4_string_to_sign(const char *amz_date, const char *scope,
			   const char *canonical)
{
	char hash[65];
	char *sts = NULL;

	if (!amz_date || !scope || !canonical)
		return NULL;
	sigv4_sha256_hex(canonical, strlen(canonical), hash);
	if (!hash[0])
		return NULL;
	if (asprintf(&sts, SIGV4_ALGORITHM "\n%s\n%s\n%s", amz_date, scope,
		     hash) < 0)
		return NULL;
	return sts;
}

/* ---- signing-key cache ------------------------------------------------------
 * The signing key depends only on (secret, day, region, service), yet the
 * chain of four HMACs that derives it was run for every signed request. A
 * few derived keys are kept, shared by all threads under a mutex. An entry
 * names its secret by the secret's SHA-256, never by the secret itself; a
 * lookup must match all four inputs exactly, so a hit returns the very key
 * the chain would. Inputs too long for an entry are simply not cached. */

#define SIGNING_KEY_CACHE_SLOTS 8
#define SIGNING_KEY_REGION_MAX  64
#define SIGNING_KEY_SERVICE_MAX 32

struct signing_key_entry {
	int used;
	unsigned char secret_id[32];          /* SHA-256 of the secret */
	char date[9];
	char region[SIGNING_KEY_REGION_MAX];
	char service[SIGNING_KEY_SERVICE_MAX];
	unsigned char key[32];
};

static struct signing_key_entry signing_key_cache[SIGNING_KEY_CACHE_SLOTS];
static size_t signing_key_cache_next;  /* the slot the next miss replaces */
static pthread_mutex_t signing_key_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* The entry matching the inputs, or NULL; the caller holds the lock. */
static struct signing_key_entry *signing_key_find(const unsigned char secret_id[32],
						  const char *date, const char *region,
						  const char *service)
{
	size_t i;

	for (i = 0; i < SIGNING_KEY_CACHE_SLOTS; i++) {
		struct signing_key_entry *e = &signing_key_cache[i];

		if (e->used && memcmp(e->secret_id, secret_id, 32) == 0 &&
		    strcmp(e->date, date) == 0 && strcmp(e->region, region) == 0 &&
		    strcmp(e->service, service) == 0)
			return e;
	}
	return NULL;
}

/* The HMAC chain itself. Returns 0, or -1 with key all zeros. */
static int signing_key_derive(const char *secret, const char *date,
			      const char *region, const char *service,
			      unsigned char key[32])
{
	static const char prefix[] = "AWS4";
	struct hmac_piece msg;
	unsigned char k_date[32], k_region[32], k_service[32];
	char *k_secret = NULL;
	size_t secret_len = strlen(secret);
	int rc = -1;

	memset(key, 0, 32);
	k_secret = malloc(sizeof(prefix) + secret_len);
	if (!k_secret)
		return -1;
	memcpy(k_secret, prefix, sizeof(prefix) - 1);
	memcpy(k_secret + sizeof(prefix) - 1, secret, secret_len + 1);
	msg = (struct hmac_piece){ date, strlen(date) };
	if (hmac_sha256(k_secret, sizeof(prefix) - 1 + secret_len, &msg, 1, k_date) ||
	    hmac_sha256_str(k_date, 32, region, k_region) ||
	    hmac_sha256_str(k_region, 32, service, k_service) ||
	    hmac_sha256_str(k_service, 32, "aws4_request", key))
		memset(key, 0, 32);
	else
		rc = 0;
	OPENSSL_cleanse(k_secret, sizeof(prefix) - 1 + secret_len);
	free(k_secret);
	OPENSSL_cleanse(k_date, sizeof(k_date));
	OPENSSL_cleanse(k_region, sizeof(k_region));
	OPENSSL_cleanse(k_service, sizeof(k_service));
	return rc;
}

/* On an OpenSSL or allocation failure key is all zeros, which yields
 * signatures no server accepts. */
void sigv4_signing_key(const char *secret, const char *date8, const char *region,
		       const char *service, unsigned char key[32])
{
	struct signing_key_entry *e;
	struct hmac_piece piece;
	unsigned char secret_id[32];
	char date[9];
	size_t i;

	memset(key, 0, 32);
	if (!secret || !date8 || !region || !service)
		return;
	/* date8 may be a whole amz-date: only its first 8 characters count */
	for (i = 0; i < 8 && date8[i]; i++)
		date[i] = date8[i];
	date[i] = '\0';
	piece = (struct hmac_piece){ secret, strlen(secret) };
	if (strlen(region) >= SIGNING_KEY_REGION_MAX ||
	    strlen(service) >= SIGNING_KEY_SERVICE_MAX || sha256(&piece, 1, secret_id)) {
		signing_key_derive(secret, date, region, service, key);
		return;
	}
	pthread_mutex_lock(&signing_key_cache_lock);
	e = signing_key_find(secret_id, date, region, service);
	if (e)
		memcpy(key, e->key, 32);
	pthread_mutex_unlock(&signing_key_cache_lock);
	if (e)
		goto out;
	/* derived outside the lock: two threads may both derive, same result */
	if (signing_key_derive(secret, date, region, service, key))
		goto out;
	pthread_mutex_lock(&signing_key_cache_lock);
	if (!signing_key_find(secret_id, date, region, service)) {
		e = &signing_key_cache[signing_key_cache_next];
		signing_key_cache_next = (signing_key_cache_next + 1) %
					 SIGNING_KEY_CACHE_SLOTS;
		OPENSSL_cleanse(e, sizeof(*e));
		e->used = 1;
		memcpy(e->secret_id, secret_id, 32);
		memcpy(e->date, date, sizeof(date));
		snprintf(e->region, sizeof(e->region), "%s", region);
		snprintf(e->service, sizeof(e->service), "%s", service);
		memcpy(e->key, key, 32);
	}
	pthread_mutex_unlock(&signing_key_cache_lock);
out:
	OPENSSL_cleanse(secret_id, sizeof(secret_id));
}

/* On an OpenSSL failure hex is "" (which matches no signature). */
void sigv4_signature(const unsigned char key[32], const char *string_to_sign,
		     char hex[65])
{
	unsigned char mac[32];

	if (!string_to_sign || hmac_sha256_str(key, 32, string_to_sign, mac)) {
		hex[0] = '\0';
		return;
	}
	hex_encode(mac, 32, hex);
}

/* Signature over req for the given date: fills sig (64 hex) and, when
 * wanted, hands back the signed-header list. Returns 0 or -1. */
static int sign_request(const struct sigv4_request *req,
			const struct sigv4_credentials *cred,
			const char *region, const char *service,
			const char *amz_date, char sig[65], char **signed_headers,
			char **scope_out)
{
	char *canonical = NULL, *signed_list = NULL, *scope = NULL, *sts = NULL;
	unsigned char key[32];
	int rc = -1;

	if (!cred || !cred->access_key || !cred->secret_key || !amz_date ||
	    strlen(amz_date) != 16)
		goto out;
	if (sigv4_canonical_request(req, &canonical, &signed_list))
		goto out;
	scope = sigv4_scope(amz_date, region, service);
	if (!scope)
		goto out;
	sts = sigv4_string_to_sign(amz_date, scope, canonical);
	if (!sts)
		goto out;
	sigv4_signing_key(cred->secret_key, amz_date, region, service, key);
	sigv4_signature(key, sts, sig);
	OPENSSL_cleanse(key, sizeof(key));
	if (strlen(sig) != 64)
		goto out;
	if (signed_headers) {
		*signed_headers = signed_list;
		signed_list = NULL;
	}
	if (scope_out) {
		*scope_out = scope;
		scope = NULL;
	}
	rc = 0;
out:
	free(canonical);
	free(signed_list);
	free(scope);
	free(sts);
	return rc;
}

char *sigv4_authorization(const struct sigv4_request *req,
			  const struct sigv4_credentials *cred,
			  const char *region, const char *service,
			  const char *amz_date)
{
	char sig[65];
	char *signed_list = NULL, *scope = NULL, *authz = NULL;

	if (sign_request(req, cred, region, service, amz_date, sig,
			 &signed_list, &scope))
		goto out;
	if (asprintf(&authz, SIGV4_ALGORITHM " Credential=%s/%s, SignedHeaders=%s, "
		     "Signature=%s", cred->access_key, scope, signed_list, sig) < 0)
		authz = NULL;
out:
	free(signed_list);
	free(scope);
	return authz;
}

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
	if (sign_request(&signing, cred, region, service, amz_date, sig, NULL,
			 NULL))
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

/* HMAC over "<algorithm>\n<date>\n<scope>\n<prev>\n[<empty hash>\n]<hash>". */
static void chained_signature(const unsigned char key[32], const char *algorithm,
			      const char *amz_date, const char *scope,
			      const char *prev_signature, int with_empty_hash,
			      const char *hash, char hex[65])
{
	struct hmac_piece pieces[10];
	unsigned char mac[32];
	size_t n = 0;

	hex[0] = '\0';
	if (!amz_date || !scope || !prev_signature || !hash)
		return;
	pieces[n++] = (struct hmac_piece){ algorithm, strlen(algorithm) };
	pieces[n++] = (struct hmac_piece){ "\n", 1 };
	pieces[n++] = (struct hmac_piece){ amz_date, strlen(amz_date) };
	pieces[n++] = (struct hmac_piece){ "\n", 1 };
	pieces[n++] = (struct hmac_piece){ scope, strlen(scope) };
	pieces[n++] = (struct hmac_piece){ "\n", 1 };
	pieces[n++] = (struct hmac_piece){ prev_signature, strlen(prev_signature) };
	pieces[n++] = (struct hmac_piece){ "\n", 1 };
	if (with_empty_hash)
		pieces[n++] = (struct hmac_piece){ SIGV4_EMPTY_SHA256 "\n",
						   sizeof(SIGV4_EMPTY_SHA256) };
	pieces[n++] = (struct hmac_piece){ hash, strlen(hash) };
	if (hmac_sha256(key, 32, pieces, n, mac))
		return;
	hex_encode(mac, 32, hex);
}

/* On failure hex is "" (which matches no signature). */
void sigv4_chunk_signature(const unsigned char key[32], const char *amz_date,
			   const char *scope, const char *prev_signature,
			   const char *chunk_hash, char hex[65])
{
	chained_signature(key, SIGV4_CHUNK_ALGORITHM, amz_date, scope,
			  prev_signature, 1, chunk_hash, hex);
}

/* On failure hex is "" (which matches no signature). */
void sigv4_trailer_signature(const unsigned char key[32], const char *amz_date,
			     const char *scope, const char *prev_signature,
			     const char *trailer_hash, char hex[65])
{
	chained_signature(key, SIGV4_TRAILER_ALGORITHM, amz_date, scope,
			  prev_signature, 0, trailer_hash, hex);
}

/* Lengths are public (always 64 for a well-formed signature); the bytes are
 * compared in constant time. An empty string equals nothing. */
int sigv4_signature_equal(const char *a, const char *b)
{
	size_t la, lb;

	if (!a || !b)
		return 0;
	la = strlen(a);
	lb = strlen(b);
	if (la == 0 || la != lb)
		return 0;
	return CRYPTO_memcmp(a, b, la) == 0;
}
