/* store_s3_int.h — what the S3 backend's two files share: store_s3.c (the
 * requests: signing, sending, retries, the five operations),
 * store_s3_open.c (where the bucket is and how to reach it) and
 * store_s3_probe.c (the self-test's copy and multipart probes). Not a public
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
	char *bucket;               /* the bucket's name (copy sources name it) */
	char *ca_bundle;            /* AWS_CA_BUNDLE, or NULL */
	struct aws_credentials cred;
	long timeout_ms;
	int max_retries;
	const struct timesrc *time;
	uint64_t jitter_state;
	char curl_err[CURL_ERROR_SIZE];
};

/* A response body under a cap: reaching the cap aborts the transfer. */
struct body_buf {
	char *data;
	size_t len, cap, max;
	int overflow;
};

#define S3_CALL_EXTRA_MAX 3

/* One store call: what to send, and whether it may be sent twice. */
struct s3_call {
	const char *method;          /* "GET", "HEAD", "PUT", "DELETE", "POST" */
	const char *key;             /* NULL for a listing */
	const char *query;           /* canonical (sorted, encoded), or NULL */
	const char *body;            /* PUT and POST */
	size_t body_len;
	size_t body_pos;
	const struct store_put_opts *put;
	const char *if_match;        /* DELETE only */
	const char *extra[S3_CALL_EXTRA_MAX][2]; /* more signed headers: lowercase
				      * name, value; up to the first NULL name */
	size_t body_max;
	int idempotent;              /* may be resent after an unknown outcome */
};

/* Sends c with retries (only idempotent calls are resent); on return res
 * describes the last attempt and, for STORE_OK, buf holds the body (the
 * caller frees buf->data). Returns res->code. */
enum store_code store_s3_perform(struct store_s3 *s, struct s3_call *c,
				 struct body_buf *buf, struct store_result *res);

/* Records why a call was refused before sending (res->code
 * STORE_ERR_INVALID, the message why); returns STORE_ERR_INVALID. */
enum store_code store_s3_refuse(struct store_result *res, const char *why);

/* Appends "&name=value" to *q, value SigV4-encoded (no '&' when *q is
 * NULL); *q is malloc'd, the caller frees it. 0, or -1 on ENOMEM (*q kept). */
int store_s3_query_add(char **q, const char *name, const char *value);

/* ListObjectsV2, one page (store_s3_list.c): store_ops.list. */
enum store_code store_s3_list(struct store *st, const char *prefix, const char *start_after,
			      const char *continuation, int max_keys,
			      struct store_list_page *page, struct store_result *res);

/* DELETE under store_delete_opts (If-Match, a version; an if_meta
 * condition is refused): store_ext_ops.del_opts (store_s3.c). */
enum store_code store_s3_del_opts(struct store *st, const char *key,
				  const struct store_delete_opts *opts,
				  struct store_result *res);

/* The self-test's copy and multipart probes (store_s3_probe.c), and
 * store_s3_del_opts. */
extern const struct store_ext_ops store_s3_ext_ops;

/* The operations table of an S3 store (store_s3.c). */
extern const struct store_ops store_s3_ops;

/* Frees an S3 store, also a half-opened one; accepts NULL. */
void store_s3_close(struct store *st);

/* 1 if v is a header value we may send: printable ASCII (no CR/LF
 * injection). */
int store_s3_header_safe(const char *v);

#endif
