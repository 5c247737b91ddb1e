/* store_s3_int.h — what the S3 backend's two files share: store_s3.c (the
 * requests: signing, sending, retries, the five operations) and
 * store_s3_open.c (where the bucket is and how to reach it). Not a public
 * interface: store.h is. */
#ifndef FENCE_STORE_S3_INT_H
#define FENCE_STORE_S3_INT_H

#include <stdint.h>

#include <curl/curl.h>

#include "wire/awscreds.h"
#include "store.h"

struct store_s3 {
	struct store base;          /* first: the lock code holds a struct store * */
	CURL *curl;                 /* one handle, so connections are reused */
	char *host;                 /* Host header: "b.s3.eu-west-1.amazonaws.com", "127.0.0.1:5000" */
	char *origin;               /* "scheme://host" */
	char *path_base;            /* encoded path before the key: "", "/bucket", "/prefix/bucket" */
	char *region;
	char *ca_bundle;            /* AWS_CA_BUNDLE, or NULL */
	struct aws_credentials cred;
	long timeout_ms;
	int max_retries;
	const struct timesrc *time;
	uint64_t jitter_state;
	char curl_err[CURL_ERROR_SIZE];
};

/* The operations table of an S3 store (store_s3.c). */
extern const struct store_ops store_s3_ops;

/* Frees an S3 store, also a half-opened one; accepts NULL. */
void store_s3_close(struct store *st);

/* 1 if v is a header value we may send: printable ASCII (no CR/LF
 * injection). */
int store_s3_header_safe(const char *v);

#endif
