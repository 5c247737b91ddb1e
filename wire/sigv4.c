/* sigv4.c — AWS Signature Version 4's cryptography, as separate, testable
 * steps: string to sign, signing key (with a small cache of derived keys),
 * signature, the Authorization header, and the aws-chunked chunk and
 * trailer signatures, with OpenSSL doing SHA-256 and HMAC (contexts kept
 * per thread). The strings it signs are built in sigv4_canon.c. It is pure
 * computation: no I/O, no clock, no HTTP framing, and it never decides on
 * its own whether a request is authentic (callers compare signatures with
 * sigv4_signature_equal). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "sigv4.h"
#include "sigv4_int.h"

#include "pct.h"

#define SIGV4_CHUNK_ALGORITHM   "AWS4-HMAC-SHA256-PAYLOAD"
#define SIGV4_TRAILER_ALGORITHM "AWS4-HMAC-SHA256-TRAILER"

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
int sigv4_sign_request(const struct sigv4_request *req,
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

	if (sigv4_sign_request(req, cred, region, service, amz_date, sig,
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
