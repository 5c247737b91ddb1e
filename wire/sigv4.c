/* sigv4.c — AWS Signature Version 4's cryptography, as separate, testable
 * steps: string to sign, signing key (with a small per-thread cache of
 * derived keys, and struct sigv4_signer for one set of credentials),
 * signature, the Authorization header, and the aws-chunked chunk and
 * trailer signatures, with OpenSSL doing SHA-256 and HMAC built on it (no
 * state shared between threads). The strings it signs are built in
 * sigv4_canon.c. It is pure
 * computation: no I/O, no clock, no HTTP framing, and it never decides on
 * its own whether a request is authentic (callers compare signatures with
 * sigv4_signature_equal).
 *
 * The low-level SHA256_Init/Update/Final are deprecated in OpenSSL 3 in
 * favour of EVP, but they are still there and do the same block function
 * without EVP's per-call dispatch, context allocation and provider lookup,
 * which cost several times the hash itself on the short strings SigV4
 * signs. They are used deliberately, so the warning is silenced here. */
#define OPENSSL_SUPPRESS_DEPRECATED

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "sigv4.h"
#include "sigv4_int.h"

#include "pct.h"

#define SIGV4_CHUNK_ALGORITHM   "AWS4-HMAC-SHA256-PAYLOAD"
#define SIGV4_TRAILER_ALGORITHM "AWS4-HMAC-SHA256-TRAILER"

/* ---- hashing -------------------------------------------------------------
 * SHA-256 is OpenSSL's, through the low-level interface: a SHA256_CTX is a
 * plain struct on the caller's stack, so there is no shared or per-thread
 * state at all, and copying one is a struct assignment. HMAC (RFC 2104) is
 * built on it: a key's inner and outer states (key ^ ipad, key ^ opad, each
 * absorbed as one block) are computed once into a struct hmac_key, and each
 * MAC then copies them instead of re-keying. The low-level calls cannot
 * fail on valid arguments, so these helpers return nothing. */

#define SHA256_BLOCK 64

/* SHA-256 of data into md. Not OpenSSL's one-shot SHA256(): in OpenSSL 3
 * that goes through EVP_Q_digest, fetching the algorithm on every call. */
static void sha256_once(const void *data, size_t len, unsigned char md[32])
{
	SHA256_CTX ctx;

	SHA256_Init(&ctx);
	SHA256_Update(&ctx, data, len);
	SHA256_Final(md, &ctx);
}

struct hmac_piece {
	const void *data;
	size_t len;
};

struct hmac_key {
	SHA256_CTX inner; /* after absorbing key ^ ipad */
	SHA256_CTX outer; /* after absorbing key ^ opad */
};

static void hmac_key_init(struct hmac_key *hk, const void *key, size_t keylen)
{
	unsigned char block[SHA256_BLOCK], pad[SHA256_BLOCK];
	size_t i;

	memset(block, 0, sizeof(block));
	if (keylen > SHA256_BLOCK)
		sha256_once(key, keylen, block);
	else if (keylen > 0)
		memcpy(block, key, keylen);
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = block[i] ^ 0x36;
	SHA256_Init(&hk->inner);
	SHA256_Update(&hk->inner, pad, sizeof(pad));
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = block[i] ^ 0x5c;
	SHA256_Init(&hk->outer);
	SHA256_Update(&hk->outer, pad, sizeof(pad));
	OPENSSL_cleanse(block, sizeof(block));
	OPENSSL_cleanse(pad, sizeof(pad));
}

/* Finishes an HMAC whose message went into inner (a copy of hk->inner).
 * SHA256_Final wipes a context's buffered input; what stays in it and in
 * md are hash values, not the key, so they are not cleansed again. */
static void hmac_final(const struct hmac_key *hk, SHA256_CTX *inner,
		       unsigned char out[32])
{
	SHA256_CTX outer = hk->outer;
	unsigned char md[32];

	SHA256_Final(md, inner);
	SHA256_Update(&outer, md, sizeof(md));
	SHA256_Final(out, &outer);
}

/* HMAC-SHA256 with a pre-keyed hk over the concatenation of pieces. */
static void hmac_keyed(const struct hmac_key *hk, const struct hmac_piece *pieces,
		       size_t npieces, unsigned char out[32])
{
	SHA256_CTX inner = hk->inner;
	size_t i;

	for (i = 0; i < npieces; i++)
		SHA256_Update(&inner, pieces[i].data, pieces[i].len);
	hmac_final(hk, &inner, out);
}

/* HMAC-SHA256(key, concatenation of pieces) into out. */
static void hmac_sha256(const void *key, size_t keylen,
			const struct hmac_piece *pieces, size_t npieces,
			unsigned char out[32])
{
	struct hmac_key hk;

	hmac_key_init(&hk, key, keylen);
	hmac_keyed(&hk, pieces, npieces, out);
	OPENSSL_cleanse(&hk, sizeof(hk));
}

static void hmac_sha256_str(const void *key, size_t keylen, const char *msg,
			    unsigned char out[32])
{
	struct hmac_piece piece = { msg, strlen(msg) };

	hmac_sha256(key, keylen, &piece, 1, out);
}

void sigv4_amz_date(time_t t, char out[17])
{
	/* every request of a busy second signs with the same date: formatted
	 * once per second and thread */
	static _Thread_local time_t last_t = (time_t)-1;
	static _Thread_local char last[17];
	struct tm tm;

	if (t == last_t && last[0]) {
		memcpy(out, last, 17);
		return;
	}
	if (!gmtime_r(&t, &tm) || strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16) {
		out[0] = '\0';
		return;
	}
	memcpy(last, out, 17);
	last_t = t;
}

void sigv4_sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[32];

	sha256_once(data, len, md);
	hex_encode(md, 32, hex);
}

/* ---- steps 2-4 ------------------------------------------------------------ */

/* Copies n bytes to p, returns the end. */
static char *put(char *p, const void *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

#define SCOPE_TAIL "/aws4_request"

char *sigv4_scope(const char *amz_date, const char *region, const char *service)
{
	size_t rlen, slen;
	char *scope, *p;

	if (!amz_date || strlen(amz_date) < 8 || !region || !service)
		return NULL;
	rlen = strlen(region);
	slen = strlen(service);
	scope = malloc(8 + 1 + rlen + 1 + slen + sizeof(SCOPE_TAIL));
	if (!scope)
		return NULL;
	p = put(scope, amz_date, 8);
	*p++ = '/';
	p = put(p, region, rlen);
	*p++ = '/';
	p = put(p, service, slen);
	memcpy(p, SCOPE_TAIL, sizeof(SCOPE_TAIL));
	return scope;
}

char *sigv4_string_to_sign(const char *amz_date, const char *scope,
			   const char *canonical)
{
	char hash[65];
	size_t dlen, slen;
	char *sts, *p;

	if (!amz_date || !scope || !canonical)
		return NULL;
	sigv4_sha256_hex(canonical, strlen(canonical), hash);
	dlen = strlen(amz_date);
	slen = strlen(scope);
	sts = malloc(sizeof(SIGV4_ALGORITHM) + dlen + 1 + slen + 1 + 64 + 1);
	if (!sts)
		return NULL;
	p = put(sts, SIGV4_ALGORITHM "\n", sizeof(SIGV4_ALGORITHM));
	p = put(p, amz_date, dlen);
	*p++ = '\n';
	p = put(p, scope, slen);
	*p++ = '\n';
	memcpy(p, hash, 65);
	return sts;
}

/* ---- signing-key cache ------------------------------------------------------
 * The signing key depends only on (secret, day, region, service), yet the
 * chain of four HMACs that derives it was run for every signed request. A
 * few derived keys are kept per thread (no lock: a thread only reads and
 * writes its own), each with its HMAC states (struct hmac_key) so a
 * request's signature starts from them instead of re-keying. An entry
 * names its secret by the secret's SHA-256, never by the secret itself; a
 * lookup must match all four inputs exactly, so a hit returns the very key
 * the chain would. Inputs too long for an entry are simply not cached. A
 * caller that signs for one set of credentials over and over (the proxy's
 * forwarder) uses a struct sigv4_signer instead, which skips even the
 * secret's hash. */

#define SIGNING_KEY_CACHE_SLOTS 4
#define SIGNING_KEY_REGION_MAX  64
#define SIGNING_KEY_SERVICE_MAX 32
#define SIGNING_SECRET_STACK    128 /* "AWS4"+secret longer than this: malloc */

struct signing_key_entry {
	int used;
	unsigned char secret_id[32];          /* SHA-256 of the secret */
	char date[9];
	char region[SIGNING_KEY_REGION_MAX];
	char service[SIGNING_KEY_SERVICE_MAX];
	unsigned char key[32];
	struct hmac_key hk;                   /* HMAC states keyed with key */
};

static _Thread_local struct signing_key_entry signing_key_cache[SIGNING_KEY_CACHE_SLOTS];
static _Thread_local size_t signing_key_cache_next; /* the slot the next miss replaces */

/* The calling thread's entry matching the inputs, or NULL. */
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

/* The HMAC chain itself. Returns 0, or -1 (ENOMEM) with key all zeros. */
static int signing_key_derive(const char *secret, const char *date,
			      const char *region, const char *service,
			      unsigned char key[32])
{
	static const char prefix[] = "AWS4";
	struct hmac_piece msg;
	unsigned char k_date[32], k_region[32], k_service[32];
	char stack_secret[SIGNING_SECRET_STACK];
	char *k_secret = stack_secret;
	size_t secret_len = strlen(secret);
	size_t klen = sizeof(prefix) - 1 + secret_len;

	memset(key, 0, 32);
	if (klen >= sizeof(stack_secret)) {
		k_secret = malloc(klen + 1);
		if (!k_secret)
			return -1;
	}
	memcpy(k_secret, prefix, sizeof(prefix) - 1);
	memcpy(k_secret + sizeof(prefix) - 1, secret, secret_len + 1);
	msg = (struct hmac_piece){ date, strlen(date) };
	hmac_sha256(k_secret, klen, &msg, 1, k_date);
	hmac_sha256_str(k_date, 32, region, k_region);
	hmac_sha256_str(k_region, 32, service, k_service);
	hmac_sha256_str(k_service, 32, "aws4_request", key);
	OPENSSL_cleanse(k_secret, klen);
	if (k_secret != stack_secret)
		free(k_secret);
	OPENSSL_cleanse(k_date, sizeof(k_date));
	OPENSSL_cleanse(k_region, sizeof(k_region));
	OPENSSL_cleanse(k_service, sizeof(k_service));
	return 0;
}

/* The signing key for the inputs into key_out and its HMAC states into
 * hk_out (either may be NULL), from the calling thread's cache when there.
 * Only the first 8 characters of date8 count (it may be a whole amz-date).
 * Returns 0, or -1 (missing input, ENOMEM) with key_out all zeros and
 * hk_out untouched. */
static int signing_key_get(const char *secret, const char *date8,
			   const char *region, const char *service,
			   unsigned char key_out[32], struct hmac_key *hk_out)
{
	struct signing_key_entry *e = NULL;
	struct hmac_key hk;
	unsigned char key[32], secret_id[32];
	char date[9];
	size_t i;
	int rc = -1;

	memset(key, 0, sizeof(key));
	memset(secret_id, 0, sizeof(secret_id));
	memset(&hk, 0, sizeof(hk));
	if (!secret || !date8 || !region || !service)
		goto out;
	for (i = 0; i < 8 && date8[i]; i++)
		date[i] = date8[i];
	date[i] = '\0';
	if (strlen(region) >= SIGNING_KEY_REGION_MAX ||
	    strlen(service) >= SIGNING_KEY_SERVICE_MAX) {
		if (signing_key_derive(secret, date, region, service, key))
			goto out;
		hmac_key_init(&hk, key, sizeof(key));
		rc = 0;
		goto out;
	}
	sha256_once(secret, strlen(secret), secret_id);
	e = signing_key_find(secret_id, date, region, service);
	if (!e) {
		if (signing_key_derive(secret, date, region, service, key))
			goto out;
		e = &signing_key_cache[signing_key_cache_next];
		signing_key_cache_next = (signing_key_cache_next + 1) % SIGNING_KEY_CACHE_SLOTS;
		OPENSSL_cleanse(e, sizeof(*e));
		e->used = 1;
		memcpy(e->secret_id, secret_id, 32);
		memcpy(e->date, date, sizeof(date));
		memcpy(e->region, region, strlen(region) + 1);
		memcpy(e->service, service, strlen(service) + 1);
		memcpy(e->key, key, 32);
		hmac_key_init(&e->hk, key, sizeof(key));
	}
	rc = 0;
out:
	if (key_out)
		memcpy(key_out, e ? e->key : key, sizeof(key));
	if (rc == 0 && hk_out)
		*hk_out = e ? e->hk : hk;
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(&hk, sizeof(hk));
	OPENSSL_cleanse(secret_id, sizeof(secret_id));
	return rc;
}

/* On a missing input or an allocation failure key is all zeros, which
 * yields signatures no server accepts. */
void sigv4_signing_key(const char *secret, const char *date8, const char *region,
		       const char *service, unsigned char key[32])
{
	signing_key_get(secret, date8, region, service, key, NULL);
}

/* With no string to sign hex is "" (which matches no signature). */
void sigv4_signature(const unsigned char key[32], const char *string_to_sign,
		     char hex[65])
{
	unsigned char mac[32];

	if (!string_to_sign) {
		hex[0] = '\0';
		return;
	}
	hmac_sha256_str(key, 32, string_to_sign, mac);
	hex_encode(mac, 32, hex);
}

/* Writes the Authorization value "AWS4-HMAC-SHA256 Credential=<ak>/<scope>,
 * SignedHeaders=<list>, Signature=<sig>" and its NUL to out when cap has
 * room for them; returns its length (without the NUL) either way. */
static size_t authorization_write(char *out, size_t cap, const char *access_key,
				  const char *amz_date, const char *region,
				  const char *service, const char *signed_list,
				  size_t signed_len, const char sig[65])
{
	static const char cred_at[] = SIGV4_ALGORITHM " Credential=";
	static const char signed_at[] = ", SignedHeaders=";
	static const char sig_at[] = ", Signature=";
	size_t alen = strlen(access_key), rlen = strlen(region);
	size_t slen = strlen(service);
	size_t need = sizeof(cred_at) - 1 + alen + 1 + 8 + 1 + rlen + 1 + slen +
		      sizeof(SCOPE_TAIL) - 1 + sizeof(signed_at) - 1 + signed_len +
		      sizeof(sig_at) - 1 + 64;
	char *p = out;

	if (need >= cap)
		return need;
	p = put(p, cred_at, sizeof(cred_at) - 1);
	p = put(p, access_key, alen);
	*p++ = '/';
	p = put(p, amz_date, 8);
	*p++ = '/';
	p = put(p, region, rlen);
	*p++ = '/';
	p = put(p, service, slen);
	p = put(p, SCOPE_TAIL, sizeof(SCOPE_TAIL) - 1);
	p = put(p, signed_at, sizeof(signed_at) - 1);
	p = put(p, signed_list, signed_len);
	p = put(p, sig_at, sizeof(sig_at) - 1);
	memcpy(p, sig, 65);
	return need;
}

/* The signature over req for amz_date (16 characters) with the HMAC states
 * of the day's signing key into sig (64 hex). The canonical request is
 * built into canon (canon_buf on the stack when it fits; the caller
 * releases canon) and the string to sign is never materialized: its pieces
 * go straight into the MAC. Returns 0, or -1 (malformed request, ENOMEM). */
static int sign_with(const struct sigv4_request *req, const struct hmac_key *hk,
		     const char *region, const char *service, const char *amz_date,
		     char canon_buf[SIGV4_CANON_STACK], struct sigv4_canon *canon,
		     char sig[65])
{
	SHA256_CTX inner;
	unsigned char md[32];
	char hash[65];
	char head[sizeof(SIGV4_ALGORITHM) + 16 + 1 + 8 + 1];
	char tail[sizeof(SCOPE_TAIL) + 64];
	char *p;

	if (sigv4_canon_build(req, canon_buf, SIGV4_CANON_STACK, canon))
		return -1;
	sha256_once(canon->s, canon->len, md);
	hex_encode(md, 32, hash);
	/* "AWS4-HMAC-SHA256\n<amz_date>\n<date8>/<region>/<service>/aws4_request
	 * \n<hash>": the fixed-size parts around region and service are put
	 * together first, so the MAC takes five updates instead of ten */
	p = put(head, SIGV4_ALGORITHM "\n", sizeof(SIGV4_ALGORITHM));
	p = put(p, amz_date, 16);
	*p++ = '\n';
	p = put(p, amz_date, 8);
	*p = '/';
	p = put(tail, SCOPE_TAIL "\n", sizeof(SCOPE_TAIL));
	memcpy(p, hash, 64);
	inner = hk->inner;
	SHA256_Update(&inner, head, sizeof(head));
	SHA256_Update(&inner, region, strlen(region));
	SHA256_Update(&inner, "/", 1);
	SHA256_Update(&inner, service, strlen(service));
	SHA256_Update(&inner, tail, sizeof(tail));
	hmac_final(hk, &inner, md);
	hex_encode(md, 32, sig);
	return 0;
}

/* Signature over req for the given date: fills sig (64 hex) and, when
 * wanted, the Authorization value (malloc'd). */
int sigv4_sign_request(const struct sigv4_request *req,
		       const struct sigv4_credentials *cred,
		       const char *region, const char *service,
		       const char *amz_date, char sig[65], char **authz)
{
	char canon_buf[SIGV4_CANON_STACK];
	struct sigv4_canon canon = { 0 };
	struct hmac_key hk;
	size_t len;
	int rc = -1;

	sig[0] = '\0';
	if (authz)
		*authz = NULL;
	memset(&hk, 0, sizeof(hk));
	if (!cred || !cred->access_key || !cred->secret_key || !amz_date ||
	    strlen(amz_date) != 16 || !region || !service)
		goto out;
	if (signing_key_get(cred->secret_key, amz_date, region, service, NULL, &hk))
		goto out;
	if (sign_with(req, &hk, region, service, amz_date, canon_buf, &canon, sig))
		goto out;
	if (authz) {
		len = authorization_write(NULL, 0, cred->access_key, amz_date, region, service,
					  canon.s + canon.signed_at, canon.signed_len, sig);
		*authz = malloc(len + 1);
		if (!*authz)
			goto out;
		authorization_write(*authz, len + 1, cred->access_key, amz_date, region,
				    service, canon.s + canon.signed_at, canon.signed_len, sig);
	}
	rc = 0;
out:
	if (rc)
		sig[0] = '\0';
	sigv4_canon_release(&canon);
	OPENSSL_cleanse(&hk, sizeof(hk));
	return rc;
}

/* ---- a signer for one set of credentials ---------------------------------- */

struct sigv4_signer {
	struct sigv4_credentials cred; /* borrowed */
	const char *region, *service;  /* borrowed */
	char date[9];                  /* the day hk is for; "" before the first */
	struct hmac_key hk;
};

struct sigv4_signer *sigv4_signer_new(const struct sigv4_credentials *cred,
				      const char *region, const char *service)
{
	struct sigv4_signer *s;

	if (!cred || !cred->access_key || !cred->secret_key || !region || !service)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cred = *cred;
	s->region = region;
	s->service = service;
	return s;
}

void sigv4_signer_free(struct sigv4_signer *s)
{
	if (!s)
		return;
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

size_t sigv4_signer_authorization(struct sigv4_signer *s, const struct sigv4_request *req,
				  const char *amz_date, char *out, size_t cap)
{
	char canon_buf[SIGV4_CANON_STACK];
	struct sigv4_canon canon = { 0 };
	unsigned char key[32];
	char sig[65];
	size_t len = 0;

	if (cap)
		out[0] = '\0';
	if (!s || !amz_date || strlen(amz_date) != 16)
		return 0;
	if (memcmp(s->date, amz_date, 8) != 0 || !s->date[0]) {
		/* a new day: derive its key once (not through the thread's
		 * cache: the signer is its own cache) */
		memcpy(s->date, amz_date, 8);
		s->date[8] = '\0';
		if (signing_key_derive(s->cred.secret_key, s->date, s->region, s->service, key)) {
			s->date[0] = '\0';
			return 0;
		}
		hmac_key_init(&s->hk, key, sizeof(key));
		OPENSSL_cleanse(key, sizeof(key));
	}
	if (sign_with(req, &s->hk, s->region, s->service, amz_date, canon_buf, &canon, sig) == 0)
		len = authorization_write(out, cap, s->cred.access_key, amz_date, s->region,
					  s->service, canon.s + canon.signed_at,
					  canon.signed_len, sig);
	sigv4_canon_release(&canon);
	return len;
}

char *sigv4_authorization(const struct sigv4_request *req,
			  const struct sigv4_credentials *cred,
			  const char *region, const char *service,
			  const char *amz_date)
{
	char sig[65];
	char *authz = NULL;

	if (sigv4_sign_request(req, cred, region, service, amz_date, sig, &authz))
		return NULL;
	return authz;
}

/* ---- aws-chunked signatures -------------------------------------------- */

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
	hmac_sha256(key, 32, pieces, n, mac);
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
