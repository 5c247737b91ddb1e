/* sigv2.h — AWS Signature Version 2 as S3 defines it ("Signing and
 * authenticating REST requests"): the StringToSign, and its signature,
 * Base64(HMAC-SHA1(secret, StringToSign)).
 *
 *   StringToSign = VERB "\n" Content-MD5 "\n" Content-Type "\n"
 *                  (Date | Expires | "") "\n"
 *                  CanonicalizedAmzHeaders CanonicalizedResource
 *
 * CanonicalizedAmzHeaders: every x-amz-* header, names lowercased, sorted,
 * repeated names joined with ',' (values trimmed, no space added), each
 * "name:value\n". The date position holds the Date header, or "" when an
 * x-amz-date header is present (it is signed among the x-amz-* headers
 * instead), or the Expires value of a presigned query.
 * CanonicalizedResource: "/" bucket when the bucket was taken from the Host
 * (virtual-hosted style), then the path exactly as sent (not decoded, not
 * normalized; a path-style "/bucket" alone is "/bucket/", as S3 and every
 * client sign a bucket), then the S3 sub-resources of the query (SIGV2_SUBRESOURCES)
 * sorted by name, "?name" or "?name=decoded value", joined with '&'. Every
 * other query parameter is not signed.
 *
 * Pure: no I/O, no clock. It does not decide which requests must be signed
 * this way, check a date or expiry, or look up secrets (proxy/s3/auth_v2.c
 * does). */
#ifndef FENCE_SIGV2_H
#define FENCE_SIGV2_H

#include <stddef.h>

#define SIGV2_SIGNATURE_LEN 28   /* base64 of a 20-byte HMAC-SHA1, '=' padded */

struct sigv2_header {
	const char *name;   /* any case */
	const char *value;  /* raw; surrounding blanks are trimmed */
};

struct sigv2_request {
	const char *method;
	const char *bucket;   /* virtual-hosted style: the bucket from Host;
			       * NULL for path-style (the path names it) */
	const char *path;     /* as sent (percent-encoded), without the query */
	const char *query;    /* as sent, without '?'; NULL or "" for none */
	const struct sigv2_header *headers; /* every request header */
	size_t nheaders;
	const char *expires;  /* presigned query: the Expires value, which
			       * replaces the date; NULL for header auth */
};

/* The StringToSign of req into *sts (malloc'd, the caller frees it).
 * Returns 0, or -1 on ENOMEM or a sub-resource value with a bad
 * %-escape (*sts is then NULL). */
int sigv2_string_to_sign(const struct sigv2_request *req, char **sts);

/* Base64(HMAC-SHA1(secret, sts)) into out (SIGV2_SIGNATURE_LEN + NUL). */
void sigv2_signature(const char *secret, const char *sts,
		     char out[SIGV2_SIGNATURE_LEN + 1]);

/* Constant-time comparison of two signatures; 1 if equal (both exactly
 * SIGV2_SIGNATURE_LEN characters). */
int sigv2_signature_equal(const char *a, const char *b);

/* 1 if name is one of the query parameters S3 signs in the resource
 * (acl, uploadId, versionId, response-content-type, ...). */
int sigv2_is_subresource(const char *name);

#endif
