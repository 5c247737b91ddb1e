/* auth.h — verifying clients' AWS signatures (S3 mode): Signature V4, and
 * Signature V2 (which boto3 presigns with by default for custom endpoints).
 *
 * Two steps, both pure (no I/O, the clock is passed in, secrets come from a
 * lookup callback):
 *   1. auth_verify_head() on the request head: header auth (Authorization:
 *      AWS4-HMAC-SHA256 ...) or a presigned URL (X-Amz-* query), rebuilt with
 *      wire/sigv4_canon.c's canonicalization and compared in constant time;
 *      or SigV2 (Authorization: AWS AKID:sig, or AWSAccessKeyId/Signature/
 *      Expires in the query) with wire/sigv2.c's StringToSign. SigV2 signs
 *      no X-Fencing-*, If-Match or If-None-Match header: a SigV2 write that
 *      carries one is refused (403 AccessDenied).
 *      It says how the body is protected (enum auth_payload) and hands over
 *      what the body checks need (signing key, scope, seed signature).
 *   2. The body: auth_body_* checks a signed payload hash as the body
 *      streams; aws-chunked bodies go through awschunked.h instead.
 * Both body filters emit the body's final byte only after it is verified,
 * so an upstream request framed with Content-Length can never complete with
 * a body that fails verification (abort it instead).
 *
 * Authorization policy (which key may do what, whether anonymous requests
 * are allowed) is not decided here. */
#ifndef FENCE_AUTH_H
#define FENCE_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct front_hdrs;

#define AUTH_MAX_SKEW_S        900L     /* x-amz-date vs now: 15 minutes */
#define AUTH_PRESIGN_MAX_S     604800L  /* X-Amz-Expires upper bound: 7 days */
#define AUTH_ACCESS_KEY_MAX    128
#define AUTH_TRAILER_NAME_MAX  64

/* An S3-style error: HTTP status, S3 code (a static string) and a message. */
struct auth_error {
	int status;          /* 400, 403, 411; 0 when there is no error */
	const char *code;    /* "SignatureDoesNotMatch"; NULL when status is 0 */
	char message[192];
};

enum auth_verdict {
	AUTH_VERIFIED,   /* a valid signature by access_key */
	AUTH_ANONYMOUS,  /* no Authorization header and no X-Amz-* signature
			  * query: the caller decides by policy */
	AUTH_REJECTED,   /* err says what to answer */
};

/* How the request body is protected, from x-amz-content-sha256. */
enum auth_payload {
	AUTH_PAYLOAD_UNSIGNED,                  /* UNSIGNED-PAYLOAD, presigned, anonymous */
	AUTH_PAYLOAD_SIGNED,                    /* payload_hash: check with auth_body_* */
	AUTH_PAYLOAD_STREAMING_SIGNED,          /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
	AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER,  /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
	AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER,/* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

/* The request head as received, before any handler changed it. */
struct auth_request {
	const char *method;
	const char *path;     /* as sent (percent-encoded), no query */
	const char *query;    /* as sent, without '?'; NULL or "" for none */
	const struct front_hdrs *hdrs;
	const char *region;   /* the region clients must sign for; NULL: any */
};

/* Returns the secret key of access_key, or NULL when the key is unknown.
 * The string must stay valid until auth_verify_head returns. */
typedef const char *(*auth_secret_fn)(void *arg, const char *access_key);

/* What auth_verify_head found. Holds key material: clear it with
 * auth_result_clear when done. */
struct auth_result {
	enum auth_verdict verdict;
	struct auth_error err;          /* when AUTH_REJECTED */
	char access_key[AUTH_ACCESS_KEY_MAX + 1]; /* when known (also on some rejections) */
	int presigned;                  /* 1: query-string auth */
	int sigv2;                      /* 1: Signature Version 2 (HMAC-SHA1, no
					 * scope; payload SIGNED only with an
					 * x-amz-content-sha256 header) */
	enum auth_payload payload;
	char payload_hash[65];          /* AUTH_PAYLOAD_SIGNED: lowercase hex */
	int64_t decoded_length;         /* streaming: x-amz-decoded-content-length; else -1 */
	char trailer_name[AUTH_TRAILER_NAME_MAX + 1]; /* x-amz-trailer, lowercase; "" none */
	/* for aws-chunked chunk and trailer signatures: */
	char amz_date[17];              /* "20130524T000000Z" as signed */
	char scope[160];                /* "20130524/us-east-1/s3/aws4_request" */
	unsigned char signing_key[32];
	char seed_signature[65];        /* the request's own signature */
};

/* Verifies the head of one request at time now. Never fails to fill out:
 * out->verdict is AUTH_VERIFIED, AUTH_ANONYMOUS or AUTH_REJECTED (with
 * out->err set; on ENOMEM that is 500 InternalError). Errors, S3-style:
 *   400 AuthorizationHeaderMalformed    unparsable Authorization, bad scope,
 *                                       scope date != x-amz-date's date,
 *                                       wrong region or service
 *   400 AuthorizationQueryParametersError  incomplete or bad X-Amz-* query,
 *                                       or SigV2 query (Expires more than
 *                                       7 days ahead)
 *   400 InvalidRequest / InvalidArgument   unsupported scheme, more than one
 *                                       of header, SigV4 query and SigV2
 *                                       query auth, missing or bad
 *                                       x-amz-content-sha256 (SigV2: an
 *                                       aws-chunked one), a malformed
 *                                       SigV2 Authorization
 *   400 XAmzContentSHA256Mismatch       a signed hash that cannot match an
 *                                       empty body (Content-Length: 0)
 *   411 MissingContentLength            streaming without
 *                                       x-amz-decoded-content-length
 *   403 AccessDenied                    no usable date, expired or not yet
 *                                       valid presigned URL, unsigned host
 *                                       or x-amz-* header, an unsigned
 *                                       fencing or conditional header on a
 *                                       write (always, with SigV2)
 *   403 RequestTimeTooSkewed            x-amz-date/Date more than 15 min off
 *   403 InvalidAccessKeyId              lookup returned NULL
 *   403 SignatureDoesNotMatch           wrong signature, or a signed header
 *                                       missing from the request */
void auth_verify_head(const struct auth_request *req, auth_secret_fn lookup,
		      void *arg, time_t now, struct auth_result *out);

/* Wipes the key material in r. Accepts NULL. */
void auth_result_clear(struct auth_result *r);

/* The payload mode a head declares (x-amz-content-sha256, and for
 * aws-chunked x-amz-decoded-content-length and x-amz-trailer) into out's
 * payload, decoded_length and trailer_name, without authenticating anyone
 * (authentication off). A head without x-amz-content-sha256 is UNSIGNED.
 * Returns 0, or -1 with out->err set (an unknown mode is 501). */
int auth_payload_of(const struct front_hdrs *h, struct auth_result *out);

/* "SignatureDoesNotMatch"-style name of a payload mode, for logs. */
const char *auth_payload_name(enum auth_payload p);

/* ---- signed payload hash (AUTH_PAYLOAD_SIGNED) --------------------------- */

/* Receives verified body bytes; returns 0, or -1 to stop (auth_body_update
 * then returns -1 with a 500 InternalError). */
typedef int (*auth_emit_fn)(void *arg, const char *data, size_t len);

struct auth_body;

/* A body checker for result (copied: result may be cleared afterwards).
 * In any mode but AUTH_PAYLOAD_SIGNED it passes everything through.
 * emit may be NULL (check only). Returns NULL on ENOMEM. */
struct auth_body *auth_body_new(const struct auth_result *result,
				auth_emit_fn emit, void *arg);

/* Hashes len bytes and emits them, except that the last byte seen so far is
 * held back until auth_body_final. Returns 0, or -1 with err set. */
int auth_body_update(struct auth_body *b, const void *data, size_t len,
		     struct auth_error *err);

/* The body ended: compares its hash. Returns 0 after emitting the held-back
 * byte, or -1 with err = 400 XAmzContentSHA256Mismatch (nothing more is
 * emitted: abort the upstream request). */
int auth_body_final(struct auth_body *b, struct auth_error *err);

/* Accepts NULL. */
void auth_body_free(struct auth_body *b);

#endif
