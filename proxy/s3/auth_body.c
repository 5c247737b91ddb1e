/* auth_body.c — how a request body is protected and checked:
 * x-amz-content-sha256 classified (UNSIGNED-PAYLOAD, a SHA-256, or one of
 * the aws-chunked STREAMING-* modes with x-amz-decoded-content-length and
 * x-amz-trailer), the empty-body check on the head, and auth_body_*, the
 * filter that hashes a signed payload as it streams and emits its last byte
 * only once the hash matched. aws-chunked framing and chunk signatures are
 * awschunked.c's; nothing here does I/O or verifies a signature. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "auth.h"
#include "auth_int.h"
#include "http/front.h"
#include "wire/sigv4.h"

#define STREAMING_SIGNED          "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define STREAMING_SIGNED_TRAILER  "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define STREAMING_UNSIGNED_TRAILER "STREAMING-UNSIGNED-PAYLOAD-TRAILER"

/* ---- payload modes --------------------------------------------------------- */

/* Payload mode from an x-amz-content-sha256 value. Returns 0 or -1. */
int auth_classify_payload(const char *v, struct auth_result *out)
{
	size_t i;

	if (strcmp(v, SIGV4_UNSIGNED) == 0)
		out->payload = AUTH_PAYLOAD_UNSIGNED;
	else if (strcmp(v, STREAMING_SIGNED) == 0)
		out->payload = AUTH_PAYLOAD_STREAMING_SIGNED;
	else if (strcmp(v, STREAMING_SIGNED_TRAILER) == 0)
		out->payload = AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER;
	else if (strcmp(v, STREAMING_UNSIGNED_TRAILER) == 0)
		out->payload = AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
	else if (strlen(v) == 64 && auth_is_hex(v, 64)) {
		out->payload = AUTH_PAYLOAD_SIGNED;
		for (i = 0; i < 64; i++)
			out->payload_hash[i] = (char)tolower((unsigned char)v[i]);
		out->payload_hash[64] = '\0';
	} else
		return -1;
	return 0;
}

/* The streaming headers: x-amz-decoded-content-length and x-amz-trailer.
 * Returns 0, or -1 with out rejected. */
int auth_streaming_headers(const struct front_hdrs *h, struct auth_result *out)
{
	const char *dl = front_hdrs_get(h, "x-amz-decoded-content-length");
	const char *tr = front_hdrs_get(h, "x-amz-trailer");
	size_t i, n;

	if (out->payload == AUTH_PAYLOAD_UNSIGNED || out->payload == AUTH_PAYLOAD_SIGNED)
		return 0;
	if (!dl) {
		reject(out, 411, "MissingContentLength",
		       "aws-chunked uploads need x-amz-decoded-content-length");
		return -1;
	}
	n = strlen(dl);
	if (n == 0 || n > 18 || !auth_all_digits(dl, n) ||
	    front_hdrs_count(h, "x-amz-decoded-content-length") != 1) {
		reject(out, 400, "InvalidArgument",
		       "x-amz-decoded-content-length must be one decimal number");
		return -1;
	}
	out->decoded_length = strtoll(dl, NULL, 10);
	if (out->payload == AUTH_PAYLOAD_STREAMING_SIGNED || !tr || !*tr)
		return 0;
	n = strlen(tr);
	if (n > AUTH_TRAILER_NAME_MAX || front_hdrs_count(h, "x-amz-trailer") != 1) {
		reject(out, 400, "InvalidArgument", "x-amz-trailer is too long or repeated");
		return -1;
	}
	for (i = 0; i <= n; i++)
		out->trailer_name[i] = (char)tolower((unsigned char)tr[i]);
	return 0;
}

int auth_payload_of(const struct front_hdrs *h, struct auth_result *out)
{
	const char *v = front_hdrs_get(h, "x-amz-content-sha256");

	out->decoded_length = -1;
	out->payload = AUTH_PAYLOAD_UNSIGNED;
	if (!v)
		return 0;
	if (auth_classify_payload(v, out) < 0) {
		reject(out, 501, "NotImplemented",
		       "this x-amz-content-sha256 payload mode is not supported");
		return -1;
	}
	return auth_streaming_headers(h, out);
}

/* A signed hash that is not the empty body's, on a request that has no
 * body: reject before anything is forwarded. */
int auth_empty_body_mismatch(const struct front_hdrs *h, const struct auth_result *out)
{
	const char *cl = front_hdrs_get(h, "content-length");
	int no_body;

	if (out->payload != AUTH_PAYLOAD_SIGNED)
		return 0;
	no_body = cl ? strcmp(cl, "0") == 0 : !front_hdrs_get(h, "transfer-encoding");
	return no_body && strcmp(out->payload_hash, SIGV4_EMPTY_SHA256) != 0;
}

/* ---- signed payload hash ----------------------------------------------------
 * States: checking (ctx set), passthrough (ctx NULL: not a SIGNED payload),
 * failed (an emit failed or the hash mismatched; nothing more is emitted).
 * held/has_held: the last byte seen, emitted only by a successful final. */
struct auth_body {
	EVP_MD_CTX *ctx;
	char expect[65];
	auth_emit_fn emit;
	void *arg;
	char held;
	int has_held;
	int failed;
};

struct auth_body *auth_body_new(const struct auth_result *result,
				auth_emit_fn emit, void *arg)
{
	struct auth_body *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->emit = emit;
	b->arg = arg;
	if (result->verdict == AUTH_VERIFIED && result->payload == AUTH_PAYLOAD_SIGNED) {
		memcpy(b->expect, result->payload_hash, sizeof(b->expect));
		b->ctx = EVP_MD_CTX_new();
		if (!b->ctx || !EVP_DigestInit_ex(b->ctx, EVP_sha256(), NULL)) {
			auth_body_free(b);
			return NULL;
		}
	}
	return b;
}

static int body_emit(struct auth_body *b, const char *data, size_t len,
		     struct auth_error *err)
{
	if (!len || !b->emit)
		return 0;
	if (b->emit(b->arg, data, len)) {
		b->failed = 1;
		auth_set_error(err, 500, "InternalError", "the body could not be forwarded");
		return -1;
	}
	return 0;
}

int auth_body_update(struct auth_body *b, const void *data, size_t len,
		     struct auth_error *err)
{
	const char *p = data;

	if (b->failed) {
		auth_set_error(err, 500, "InternalError", "the body check already failed");
		return -1;
	}
	if (!len)
		return 0;
	if (b->ctx && !EVP_DigestUpdate(b->ctx, p, len)) {
		b->failed = 1;
		auth_set_error(err, 500, "InternalError", "hashing failed");
		return -1;
	}
	if (b->has_held && body_emit(b, &b->held, 1, err))
		return -1;
	if (body_emit(b, p, len - 1, err))
		return -1;
	b->held = p[len - 1];
	b->has_held = 1;
	return 0;
}

int auth_body_final(struct auth_body *b, struct auth_error *err)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	char hex[65];
	size_t i;

	if (b->failed) {
		auth_set_error(err, 500, "InternalError", "the body check already failed");
		return -1;
	}
	if (b->ctx) {
		if (!EVP_DigestFinal_ex(b->ctx, md, &mdlen) || mdlen != 32) {
			b->failed = 1;
			auth_set_error(err, 500, "InternalError", "hashing failed");
			return -1;
		}
		for (i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", md[i]);
		EVP_MD_CTX_free(b->ctx);
		b->ctx = NULL;
		if (strcmp(hex, b->expect) != 0) {
			b->failed = 1;
			auth_set_error(err, 400, "XAmzContentSHA256Mismatch",
				       "The provided 'x-amz-content-sha256' header does not "
				       "match what was computed.");
			return -1;
		}
	}
	if (b->has_held && body_emit(b, &b->held, 1, err))
		return -1;
	b->has_held = 0;
	return 0;
}

void auth_body_free(struct auth_body *b)
{
	if (!b)
		return;
	EVP_MD_CTX_free(b->ctx);
	free(b);
}
