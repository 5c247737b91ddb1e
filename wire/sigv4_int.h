/* sigv4_int.h — what the two halves of SigV4 share: sigv4_canon.c builds
 * the strings that are signed (the canonical request, the presigned
 * query), sigv4.c does the cryptography (hashes, string to sign, signing
 * key, signatures). Not a public interface: sigv4.h is. */
#ifndef FENCE_SIGV4_INT_H
#define FENCE_SIGV4_INT_H

#include "sigv4.h"

/* Stack room callers give sigv4_canon_build: a typical canonical request
 * (method, path, a few headers, payload hash) fits well within it. */
#define SIGV4_CANON_STACK 2048

/* A canonical request built by sigv4_canon_build: s holds len bytes plus a
 * NUL, either in the caller's buffer or malloc'd (heap, freed by
 * sigv4_canon_release); the signed-header list is s[signed_at ..
 * signed_at + signed_len). */
struct sigv4_canon {
	char *s;
	size_t len;
	size_t signed_at;
	size_t signed_len;
	char *heap;
};

/* The canonical request for req (as sigv4_canonical_request makes it) into
 * c, in buf[0..cap) when it fits, else in a malloc'd buffer. Returns 0, or
 * -1 (malformed request, ENOMEM) with nothing to release. */
int sigv4_canon_build(const struct sigv4_request *req, char *buf, size_t cap,
		      struct sigv4_canon *c);

/* Frees what c holds, if anything; c may be all zeros. */
void sigv4_canon_release(struct sigv4_canon *c);

/* The signature over req for amz_date (16 characters) into sig (64 hex);
 * *authz (when authz is not NULL) gets the Authorization header value,
 * malloc'd, the caller frees it. Returns 0, or -1 with sig "" and *authz
 * NULL. */
int sigv4_sign_request(const struct sigv4_request *req,
		       const struct sigv4_credentials *cred,
		       const char *region, const char *service,
		       const char *amz_date, char sig[65], char **authz);

#endif
