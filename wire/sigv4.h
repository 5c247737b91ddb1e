/* sigv4.h — AWS Signature Version 4, as separate testable steps.
 *
 *   canonical request  ->  string to sign  ->  signature  ->  Authorization
 *
 * The same canonicalization serves the S3 client (store_s3.c), the proxy's
 * re-signing for upstream, and (later) verifying clients' signatures. Pure
 * functions: no I/O, no clock (the caller passes the date). All returned
 * strings are malloc'd and owned by the caller. Derived signing keys are
 * cached per thread (and per struct sigv4_signer). */
#ifndef FENCE_SIGV4_H
#define FENCE_SIGV4_H

#include <stddef.h>
#include <time.h>

#define SIGV4_ALGORITHM   "AWS4-HMAC-SHA256"
#define SIGV4_UNSIGNED    "UNSIGNED-PAYLOAD"
#define SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct sigv4_header {
	const char *name;   /* any case; canonicalized to lowercase */
	const char *value;  /* raw; leading/trailing spaces trimmed, inner runs collapsed */
};

struct sigv4_request {
	const char *method;
	const char *path;   /* as sent on the wire (percent-encoded), no query */
	const char *query;  /* as sent on the wire, without '?'; NULL or "" for none */
	const struct sigv4_header *headers; /* the headers to sign, host included */
	size_t nheaders;
	const char *payload_hash; /* lowercase hex SHA-256 of the body, or
				   * SIGV4_UNSIGNED, or a STREAMING-* value */
	int s3;             /* 1: S3 rules (path not normalized, encoded once);
			     * 0: other services (normalized, encoded twice) */
};

struct sigv4_credentials {
	const char *access_key;
	const char *secret_key;
	const char *session_token; /* NULL when none */
};

/* "20150830T123600Z" for t (UTC) into out. */
void sigv4_amz_date(time_t t, char out[17]);

/* Lowercase hex SHA-256 of data into hex (65 bytes with NUL). */
void sigv4_sha256_hex(const void *data, size_t len, char hex[65]);

/* Percent-encodes s[0..len) with AWS rules (unreserved A-Za-z0-9-._~ kept,
 * '/' kept unless encode_slash). Returns a malloc'd string or NULL (ENOMEM). */
char *sigv4_uri_encode(const char *s, size_t len, int encode_slash);

/* Step 1. The canonical request; *signed_headers receives the
 * "host;x-amz-date" list. Returns 0, or -1 on ENOMEM or a malformed request
 * (bad percent-encoding). On failure nothing is allocated. */
int sigv4_canonical_request(const struct sigv4_request *req,
			    char **canonical, char **signed_headers);

/* "20150830/us-east-1/service/aws4_request". Returns malloc'd or NULL. */
char *sigv4_scope(const char *amz_date, const char *region, const char *service);

/* Step 2. "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex sha256(canonical)>".
 * Returns malloc'd or NULL. */
char *sigv4_string_to_sign(const char *amz_date, const char *scope,
			   const char *canonical);

/* Step 3a. HMAC chain "AWS4"+secret -> date8 -> region -> service -> "aws4_request". */
void sigv4_signing_key(const char *secret, const char *date8, const char *region,
		       const char *service, unsigned char key[32]);

/* Step 3b. Lowercase hex HMAC-SHA256(key, string_to_sign). */
void sigv4_signature(const unsigned char key[32], const char *string_to_sign,
		     char hex[65]);

/* Steps 1-4 for header auth. req->headers must already hold the headers that
 * will be sent and signed: host, x-amz-date (= amz_date), and
 * x-amz-content-sha256 / x-amz-security-token where used. Returns the
 * Authorization header value, malloc'd, or NULL on failure. */
char *sigv4_authorization(const struct sigv4_request *req,
			  const struct sigv4_credentials *cred,
			  const char *region, const char *service,
			  const char *amz_date);

/* A signer for one set of credentials, region and service, for a caller
 * that signs many requests with them (the proxy's forwarder, one per
 * worker): it derives the day's signing key once, when the date's day
 * changes, and keeps its HMAC states, so a request costs the canonical
 * request's hash and one HMAC, with no lock, no hash of the secret and no
 * allocation unless the canonical request outgrows the stack. Not
 * thread-safe: one per thread. cred's strings, region and service are
 * borrowed and must outlive the signer. sigv4_signer_new returns NULL on a
 * missing input or ENOMEM; sigv4_signer_free accepts NULL and wipes the
 * derived key. */
struct sigv4_signer;
struct sigv4_signer *sigv4_signer_new(const struct sigv4_credentials *cred,
				      const char *region, const char *service);
void sigv4_signer_free(struct sigv4_signer *s);

/* The Authorization header value for req signed at amz_date (16
 * characters), the same string sigv4_authorization returns, written with
 * its NUL into out[0..cap). Returns its length without the NUL: when that
 * is >= cap nothing was written (call again with more room); 0 on failure
 * (malformed request, bad date, ENOMEM), with out "" when cap > 0. */
size_t sigv4_signer_authorization(struct sigv4_signer *s, const struct sigv4_request *req,
				  const char *amz_date, char *out, size_t cap);

/* Presigned URL: returns the full query string (the request's own query plus
 * X-Amz-Algorithm, -Credential, -Date, -Expires, -SignedHeaders,
 * -Security-Token where a token is set, and -Signature), properly sorted and
 * encoded, malloc'd, or NULL. req->query holds the request's own parameters
 * only; req->payload_hash is normally SIGV4_UNSIGNED. */
char *sigv4_presign_query(const struct sigv4_request *req,
			  const struct sigv4_credentials *cred,
			  const char *region, const char *service,
			  const char *amz_date, long expires_s);

/* aws-chunked: the signature of one chunk, chained from prev_signature (the
 * seed signature for the first chunk). chunk_hash is the hex SHA-256 of the
 * chunk data. */
void sigv4_chunk_signature(const unsigned char key[32], const char *amz_date,
			   const char *scope, const char *prev_signature,
			   const char *chunk_hash, char hex[65]);

/* aws-chunked with signed trailer: the signature of the trailer block. */
void sigv4_trailer_signature(const unsigned char key[32], const char *amz_date,
			     const char *scope, const char *prev_signature,
			     const char *trailer_hash, char hex[65]);

/* Constant-time comparison of two hex signatures; 1 if equal. */
int sigv4_signature_equal(const char *a, const char *b);

#endif
