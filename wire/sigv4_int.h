/* sigv4_int.h — what the two halves of SigV4 share: sigv4_canon.c builds
 * the strings that are signed (the canonical request, the presigned
 * query), sigv4.c does the cryptography (hashes, string to sign, signing
 * key, signatures). Not a public interface: sigv4.h is. */
#ifndef FENCE_SIGV4_INT_H
#define FENCE_SIGV4_INT_H

#include "sigv4.h"

/* The signature over req for amz_date (16 characters) into sig (64 hex);
 * *signed_headers and *scope_out (each may be NULL) get the signed-header
 * list and the credential scope, malloc'd, the caller frees them. Returns 0
 * or -1. */
int sigv4_sign_request(const struct sigv4_request *req,
		       const struct sigv4_credentials *cred,
		       const char *region, const char *service,
		       const char *amz_date, char sig[65], char **signed_headers,
		       char **scope_out);

#endif
