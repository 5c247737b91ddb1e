/* auth_int.h — what the signature verifier's files share (auth.c, the
 * entry point, parsers and the SigV4 signature check; auth_header.c, the
 * SigV4 Authorization header; auth_presign.c, SigV4 presigned queries;
 * auth_v2.c, Signature Version 2 header and query; auth_body.c, the
 * payload modes and the signed-payload filter). Not a public interface:
 * auth.h is.
 *
 * A verification fills one struct auth_result: on the first problem it is
 * rejected (reject()) with the S3 error to answer, and stays so. */
#ifndef FENCE_AUTH_INT_H
#define FENCE_AUTH_INT_H

#include <stddef.h>
#include <time.h>

#include "auth.h"

struct front_hdrs;

#define AUTH_SIGNED_MAX 64   /* names in SignedHeaders */

/* S3's SignatureDoesNotMatch message, for every signature version. */
#define AUTH_MSG_MISMATCH "The request signature we calculated does not match the " \
	"signature you provided. Check your key and signing method."

/* Marks out rejected; returns nothing so callers can `reject(...); goto out;`. */
#define reject(out, status, code, ...) do { \
		(out)->verdict = AUTH_REJECTED; \
		auth_set_error(&(out)->err, status, code, __VA_ARGS__); \
	} while (0)

/* ---- the parsed signature parameters ---------------------------------------
 * Filled from the Authorization header or the X-Amz-* query; strings point
 * into `store` (a private copy). */
struct sigparams {
	char *store;
	const char *access_key;
	const char *date8;
	const char *region;
	const char *service;
	const char *signature;
	const char *signed_names[AUTH_SIGNED_MAX];
	size_t nsigned;
};

enum qparam {
	Q_ALGORITHM, Q_CREDENTIAL, Q_DATE, Q_EXPIRES, Q_SIGNED_HEADERS,
	Q_SIGNATURE, Q_COUNT
};

/* The presign parameters of a query. */
struct presign_query {
	char *value[Q_COUNT];   /* decoded, NULL when absent */
	char *without_signature; /* the raw query minus X-Amz-Signature */
	int any;                /* an X-Amz-Algorithm/-Credential/-Signature seen */
};

/* The Signature Version 2 parameters of a query (decoded, NULL when absent). */
enum v2qparam { V2Q_ACCESS_KEY, V2Q_SIGNATURE, V2Q_EXPIRES, V2Q_COUNT };

struct v2_query {
	char *value[V2Q_COUNT];
	int any;                /* AWSAccessKeyId or Signature seen */
};

/* ---- auth.c: errors, small parsers, the signature check ----------------- */

/* Sets e to status, code (static) and a printf-style message. */
void auth_set_error(struct auth_error *e, int status, const char *code,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* 1 if s[0..n) is all decimal digits / all hex digits. */
int auth_all_digits(const char *s, size_t n);
int auth_is_hex(const char *s, size_t n);
/* "20130524T000000Z", or an IMF-fixdate "Fri, 24 May 2013 00:00:00 GMT",
 * into *t. Return 0 or -1. */
int auth_parse_amz_date(const char *s, time_t *t);
int auth_parse_http_date(const char *s, time_t *t);
/* Credential "AK/DATE/REGION/SERVICE/aws4_request", SignedHeaders "a;b"
 * (both split in place into sp) and the Signature's form: NULL, or the
 * reason it is malformed. */
const char *auth_parse_credential(char *cred, struct sigparams *sp);
const char *auth_parse_signed_headers(char *list, struct sigparams *sp);
const char *auth_check_signature_format(const char *sig);
/* The credential scope against X-Amz-Date, "s3" and req->region. Returns 0,
 * or -1 with out rejected with code. */
int auth_check_scope(const struct auth_request *req, const struct sigparams *sp,
		     const char *code, struct auth_result *out);
/* Key lookup, header coverage and the signature over the request with query
 * and payload_hash: out verified (with signing key, scope, seed signature)
 * or rejected. */
void auth_verify_signature(const struct auth_request *req, const struct sigparams *sp,
			   const char *query, const char *payload_hash,
			   auth_secret_fn lookup, void *arg, struct auth_result *out);

/* The first header fencing decides on (X-Fencing-Token, X-Fencing-Lock,
 * If-Match, If-None-Match) that h carries and sp does not sign (sp NULL:
 * nothing is signed, as in SigV2), or NULL. */
const char *auth_unsigned_fencing_header(const struct front_hdrs *h, const struct sigparams *sp);

/* ---- auth_header.c: the Authorization header ---------------------------- */

void auth_verify_header_auth(const struct auth_request *req, const char *authz,
			     auth_secret_fn lookup, void *arg, time_t now,
			     struct auth_result *out);

/* ---- auth_presign.c: presigned queries ---------------------------------- */

/* The X-Amz-* parameters of query into q (free it with
 * auth_presign_query_free() whatever the result). Returns 0, -1 malformed
 * (*why set), -2 ENOMEM. */
int auth_presign_query_parse(const char *query, struct presign_query *q,
			     const char **why);
void auth_presign_query_free(struct presign_query *q);
void auth_verify_query_auth(const struct auth_request *req, struct presign_query *q,
			    auth_secret_fn lookup, void *arg, time_t now,
			    struct auth_result *out);

/* ---- auth_v2.c: Signature Version 2 ------------------------------------- */

/* AWSAccessKeyId, Signature and Expires of query into q (free it with
 * auth_v2_query_free() whatever the result). Returns 0, -1 malformed
 * (*why set), -2 ENOMEM. */
int auth_v2_query_parse(const char *query, struct v2_query *q, const char **why);
void auth_v2_query_free(struct v2_query *q);
/* "Authorization: AWS AKID:signature" (authz is the header's value). */
void auth_v2_verify_header(const struct auth_request *req, const char *authz,
			   auth_secret_fn lookup, void *arg, time_t now, struct auth_result *out);
/* A presigned SigV2 query (q from auth_v2_query_parse, q->any set). */
void auth_v2_verify_query(const struct auth_request *req, const struct v2_query *q,
			  auth_secret_fn lookup, void *arg, time_t now, struct auth_result *out);

/* ---- auth_body.c: payload modes ----------------------------------------- */

/* Payload mode from an x-amz-content-sha256 value into out. Returns 0 or
 * -1 (not a value S3 knows). */
int auth_classify_payload(const char *v, struct auth_result *out);
/* x-amz-decoded-content-length and x-amz-trailer of a streaming payload.
 * Returns 0, or -1 with out rejected. */
int auth_streaming_headers(const struct front_hdrs *h, struct auth_result *out);
/* 1 if a signed payload hash is not the empty body's on a request that has
 * no body. */
int auth_empty_body_mismatch(const struct front_hdrs *h, const struct auth_result *out);

#endif
