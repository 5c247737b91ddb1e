/* store.h — the object-store interface the lock protocol runs on.
 *
 * One table of functions (struct store_ops) with two implementations:
 * store_s3.c (S3 over libcurl, SigV4) and store_fs.c (a local directory).
 * The lock code never knows which one it talks to.
 *
 * Every call returns an enum store_code. "Not found", "precondition failed"
 * and "conflict" are answers from the store, not failures: the caller acts
 * on them. Codes from STORE_ERR_IO on are failures; for a write they mean the
 * outcome is unknown (it may or may not have happened).
 *
 * Calls are synchronous and a struct store is not thread-safe: use one per
 * thread (or process). */
#ifndef FENCE_STORE_H
#define FENCE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "dialect.h"
#include "timesrc.h"

enum store_code {
	STORE_OK = 0,              /* 2xx */
	STORE_NOT_FOUND,           /* 404: no such key (or bucket) */
	STORE_PRECONDITION_FAILED, /* 412: If-None-Match / If-Match failed */
	STORE_CONFLICT,            /* 409 ConditionalRequestConflict, retries spent */
	/* failures from here on */
	STORE_ERR_IO,              /* connect/reset/timeout: outcome unknown */
	STORE_ERR_SERVER,          /* 5xx after retries: outcome unknown */
	STORE_ERR_DENIED,          /* 401/403: credentials or permissions */
	STORE_ERR_INVALID,         /* refused before sending: bad key, bad argument */
	STORE_ERR_PROTOCOL,        /* an answer we could not understand, other 4xx */
	STORE_ERR_NOMEM,
};

/* A short lowercase description of code ("precondition failed"). Never NULL. */
const char *store_strerror(enum store_code code);

/* True for codes that are failures (outcome of a write unknown or refused). */
static inline int store_failed(enum store_code code) { return code >= STORE_ERR_IO; }

#define STORE_ETAG_MAX    128
#define STORE_META_MAX    16
#define STORE_ERRCODE_MAX 64
#define STORE_ERRMSG_MAX  256

/* The representation headers an object keeps beside Content-Type (the
 * local-directory store stores and returns them; store_s3 returns them
 * from S3's answer). */
enum store_hdr {
	STORE_HDR_CACHE_CONTROL,
	STORE_HDR_CONTENT_DISPOSITION,
	STORE_HDR_CONTENT_ENCODING,
	STORE_HDR_CONTENT_LANGUAGE,
	STORE_HDR_EXPIRES,
	STORE_HDR_COUNT
};

/* The HTTP name of each enum store_hdr ("Cache-Control", ...). */
extern const char *const store_hdr_names[STORE_HDR_COUNT];

#define STORE_CHECKSUM_NAME_MAX  32
#define STORE_CHECKSUM_VALUE_MAX 96

/* One user-metadata pair. The name is lowercase and without "x-amz-meta-". */
struct store_meta {
	char *name;
	char *value;
};

/* Everything a store call learned from the answer. Owned by the caller, who
 * zeroes it once (STORE_RESULT_INIT) and calls store_result_clear() when
 * done; every store call clears it before filling it, so one result may be
 * reused across calls. */
struct store_result {
	enum store_code code;
	int http_status;                   /* 0 when no HTTP answer arrived */
	char etag[STORE_ETAG_MAX];         /* with its quotes, as the server sent it */
	int64_t last_modified;             /* Unix seconds; 0 unknown */
	int64_t server_date;               /* Unix seconds, the server's Date; 0 unknown */
	int64_t content_length;            /* -1 unknown */
	char content_type[128];            /* get/head: Content-Type, "" unknown */
	char *body;                        /* get: object bytes, NUL-terminated; owned */
	size_t body_len;
	struct store_meta meta[STORE_META_MAX]; /* get/head: user metadata; owned */
	size_t nmeta;
	char *headers[STORE_HDR_COUNT];    /* get/head: stored headers, NULL none; owned */
	/* get/head, local-directory store only: the checksum kept with the
	 * object ("x-amz-checksum-crc32" and its base64 value), "" none */
	char checksum_name[STORE_CHECKSUM_NAME_MAX];
	char checksum_value[STORE_CHECKSUM_VALUE_MAX];
	char err_code[STORE_ERRCODE_MAX];  /* S3 <Code>, e.g. "PreconditionFailed" */
	char err_message[STORE_ERRMSG_MAX];/* S3 <Message> or a local explanation */
	int attempts;                      /* HTTP requests sent for this call */
	int meta_dropped;                  /* get/head: user metadata pairs past
					    * STORE_META_MAX, not kept */
};

#define STORE_RESULT_INIT { .content_length = -1 }

/* Frees body and metadata and resets every field. Accepts NULL. */
void store_result_clear(struct store_result *res);

/* The value of metadata NAME (lowercase, no prefix), or NULL. */
const char *store_result_meta(const struct store_result *res, const char *name);

enum store_cond {
	STORE_COND_NONE = 0,
	STORE_COND_IF_NONE_MATCH_ANY, /* If-None-Match: "*"  — create only */
	STORE_COND_IF_MATCH,          /* If-Match: etag      — replace that version */
};

/* A range of an open file (a multipart upload's part). */
struct store_file_range {
	int fd;
	int64_t offset;
	int64_t len;
};

/* A condition on one user-metadata value of the key's current version,
 * checked atomically with the write (the ETag alone cannot tell apart two
 * versions with the same bytes). With name set: the key must exist
 * (else STORE_NOT_FOUND) and its metadata name (lowercase, no prefix) must
 * equal value, absent metadata counting as "" (else
 * STORE_PRECONDITION_FAILED). Only the local-directory store checks it;
 * store_s3 refuses a write that asks (STORE_ERR_INVALID) rather than ignore
 * it. */
struct store_meta_cond {
	const char *name;                 /* NULL: no condition */
	const char *value;                /* NULL counts as "" */
};

struct store_put_opts {
	enum store_cond cond;
	const char *etag;                 /* for STORE_COND_IF_MATCH */
	const char *content_type;         /* NULL: application/octet-stream */
	const struct store_meta *meta;    /* user metadata to set, may be NULL */
	size_t nmeta;
	/* With STORE_COND_NONE or STORE_COND_IF_MATCH only (not with
	 * If-None-Match "*": STORE_ERR_INVALID). */
	struct store_meta_cond if_meta;
	/* Stored and returned as they are, local-directory store only (store_s3
	 * ignores them): Cache-Control, Expires, Content-Disposition,
	 * Content-Encoding, Content-Language. NULL: none. */
	const char *const *headers;       /* STORE_HDR_COUNT entries, or NULL */
	/* Local-directory store only (store_s3 ignores them): a checksum to
	 * keep with the object and return with it (the caller verified it):
	 * a header name "x-amz-checksum-ALGO" and its base64 value. NULL: none. */
	const char *checksum_name;
	const char *checksum_value;
	/* Local-directory store only (store_s3 refuses them, STORE_ERR_INVALID):
	 * the body is the concatenation of these file ranges, read through the
	 * caller's open descriptors (put's body must then be NULL and len 0),
	 * and the object's ETag is object_etag, when set, instead of the MD5 of
	 * its bytes (a multipart upload's "md5-of-md5s-N"). */
	const struct store_file_range *files;
	size_t nfiles;
	const char *object_etag;
	/* With one range that is a whole file the caller no longer writes,
	 * and object_etag: the store may make that very file the object (a
	 * hard link) instead of copying it. */
	int adopt;
};


/* A conditional delete: if_match (an ETag, NULL none) and if_meta, both on
 * the same version, atomically. version_id (NULL: the key's current
 * object) deletes that one version instead, as S3's DELETE ?versionId=
 * does: the local-directory store keeps one version, "null", which is the
 * key itself, and refuses any other (STORE_ERR_INVALID). */
struct store_delete_opts {
	const char *if_match;
	struct store_meta_cond if_meta;
	const char *version_id;
};

struct store_list_entry {
	char *key;
	char etag[STORE_ETAG_MAX];
	int64_t size;
	int64_t last_modified;            /* Unix seconds */
};

/* One page of a listing, keys in ascending byte order. */
struct store_list_page {
	struct store_list_entry *entries; /* owned */
	size_t n;
	int truncated;                    /* more pages follow */
	char *next_token;                 /* continuation token when truncated; owned */
};

/* Frees the entries and token and zeroes the page. Accepts NULL. */
void store_list_page_free(struct store_list_page *page);

struct store;

struct store_ops {
	const char *scheme; /* "s3" or "file" */
	enum store_code (*get)(struct store *st, const char *key,
			       struct store_result *res);
	enum store_code (*head)(struct store *st, const char *key,
				struct store_result *res);
	enum store_code (*put)(struct store *st, const char *key,
			       const void *body, size_t len,
			       const struct store_put_opts *opts,
			       struct store_result *res);
	/* if_match: NULL for an unconditional delete. */
	enum store_code (*del)(struct store *st, const char *key,
			       const char *if_match, struct store_result *res);
	/* Keys beginning with prefix, after start_after (may be NULL), or from
	 * the continuation token (may be NULL); at most max_keys (1..1000). */
	enum store_code (*list)(struct store *st, const char *prefix,
				const char *start_after, const char *continuation,
				int max_keys, struct store_list_page *page,
				struct store_result *res);
	void (*close)(struct store *st);
};

/* Operations only some backends have (the local-directory store); a
 * backend without them leaves struct store's ext NULL. */
struct store_ext_ops {
	/* Local-directory store only (NULL elsewhere): a head of key, and in
	 * *fd (the caller's) a read-only descriptor of that very version's
	 * bytes, which a later replace or delete does not change. */
	enum store_code (*get_file)(struct store *st, const char *key, int *fd,
				    struct store_result *res);
	/* del with store_delete_opts; NULL where the backend has only del
	 * (store_delete_ex then refuses an if_meta condition). */
	enum store_code (*del_opts)(struct store *st, const char *key,
				    const struct store_delete_opts *opts,
				    struct store_result *res);
	/* For the self-test (store_s3; NULL elsewhere): copy key onto itself
	 * with If-None-Match "*" on the destination, and complete a one-part
	 * multipart upload onto key with If-None-Match "*". key exists, so
	 * a backend that honours the condition answers
	 * STORE_PRECONDITION_FAILED; STORE_OK means it was ignored (key was
	 * rewritten with the probe's bytes). */
	enum store_code (*probe_copy)(struct store *st, const char *key,
				      struct store_result *res);
	enum store_code (*probe_complete)(struct store *st, const char *key,
					  struct store_result *res);
};

/* Every backend's object starts with this. */
struct store {
	const struct store_ops *ops;
	char *root;              /* key prefix from the URL ("" or "dir/"), owned */
	unsigned long requests;  /* requests sent to the backend, for tests and metrics */
	const struct store_ext_ops *ext; /* NULL: none (store_get_file, store_delete_ex) */
	int64_t deadline_mono_ms; /* 0: none. Else no request is sent, waited
				  * for or retried past this time of the store's
				  * time source (monotonic ms): the call fails
				  * STORE_ERR_IO (outcome unknown) instead. Set
				  * by the caller around calls that must answer
				  * in time (a holder's renewal); local
				  * directory calls do not block and ignore it. */
	enum dialect_etag etag_form; /* how If-Match is spelled (store_s3; others
				      * ignore it): from the config's dialect,
				      * or AUTO: quoted until a quoted If-Match
				      * that matched answered 412, then bare
				      * (learned once, kept for the store's life).
				      * A caller that knows better may set it. */
};

struct store_config {
	const char *url;        /* "s3://BUCKET[/ROOT]" or "file:///DIR" (also a plain path) */
	const char *endpoint;   /* S3 endpoint URL; NULL: AWS_ENDPOINT_URL, else AWS */
	const char *region;     /* NULL: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1 */
	const char *profile;    /* NULL: AWS_PROFILE, else "default" */
	int path_style;         /* 1 path-style, 0 virtual-hosted, -1 auto (path-style for IP/localhost/custom endpoints) */
	long timeout_ms;        /* per request; 0: 10000 */
	int max_retries;        /* for retryable failures; 0: 4, -1: none */
	const struct timesrc *time; /* NULL: timesrc_system() */
	/* file: only. 1: this process is starting and nothing of it writes
	 * yet: a temp file left by a writer that is gone, or by an earlier
	 * process with this PID (a container's PID 1), goes whatever its age
	 * (otherwise such files go once older than a minute). */
	int starting;
	const char *dialect;    /* a dialect_find() name ("aws", "ceph-rgw"); NULL:
				 * FENCE_S3_DIALECT, else "auto" (probe, learn).
				 * An unknown name fails store_open. */
};

/* Opens the store a URL names. Returns NULL on failure with a message in err
 * that names what to fix (e.g. "AWS_SECRET_ACCESS_KEY is not set"). The
 * caller owns the store and frees it with store_close(). */
struct store *store_open(const struct store_config *cfg, char *err, size_t errlen);

/* Closes and frees. Accepts NULL. */
void store_close(struct store *st);

/* The ROOT part of the URL, "" or ending in '/'. Never NULL. */
const char *store_root(const struct store *st);

static inline enum store_code store_get(struct store *st, const char *key, struct store_result *res)
{ return st->ops->get(st, key, res); }
static inline enum store_code store_head(struct store *st, const char *key, struct store_result *res)
{ return st->ops->head(st, key, res); }
static inline enum store_code store_put(struct store *st, const char *key, const void *body, size_t len,
					const struct store_put_opts *opts, struct store_result *res)
{ return st->ops->put(st, key, body, len, opts, res); }
static inline enum store_code store_delete(struct store *st, const char *key, const char *if_match,
					   struct store_result *res)
{ return st->ops->del(st, key, if_match, res); }
/* get_file of the backend: STORE_ERR_INVALID where there is none. *fd is
 * -1 unless STORE_OK. */
static inline enum store_code store_get_file(struct store *st, const char *key, int *fd,
					     struct store_result *res)
{
	*fd = -1;
	if (!st->ext || !st->ext->get_file) {
		store_result_clear(res);
		res->code = STORE_ERR_INVALID;
		return STORE_ERR_INVALID;
	}
	return st->ext->get_file(st, key, fd, res);
}

/* A delete under store_delete_opts (NULL: unconditional, the current
 * object). A backend that cannot check opts->if_meta, or delete one
 * version, answers STORE_ERR_INVALID. */
enum store_code store_delete_ex(struct store *st, const char *key,
				const struct store_delete_opts *opts, struct store_result *res);
static inline enum store_code store_list(struct store *st, const char *prefix, const char *start_after,
					 const char *continuation, int max_keys,
					 struct store_list_page *page, struct store_result *res)
{ return st->ops->list(st, prefix, start_after, continuation, max_keys, page, res); }

/* Backend constructors, called by store_open(). */
struct store *store_s3_open(const struct store_config *cfg, const char *bucket,
			    char *err, size_t errlen);
struct store *store_fs_open(const struct store_config *cfg, const char *dir,
			    char *err, size_t errlen);

/* Compares ETags as S3 does for If-Match / If-None-Match: quotes optional,
 * a weak "W/" prefix ignored, hex case ignored, "*" matches any; leading
 * blanks skipped. Returns 1 if want matches have. */
int store_etag_matches(const char *want, const char *have);

/* A conservative key rule: not empty, not absolute, no "." or ".."
 * segment, no "//", no NUL/control bytes, at most 1024 bytes. Returns 1 if
 * key passes. (The local-directory backend no longer needs it: it stores
 * every S3 key, see store_fs_path.c.) */
int store_key_valid(const char *key, size_t len);

#endif
