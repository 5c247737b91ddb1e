/* s3local_int.h — what the embedded S3 server's files share (s3local.c,
 * the handler, replies and life cycle; s3local_route.c, the operation of a
 * request; s3local_bucket.c, bucket stores and bucket jobs; s3local_list.c,
 * listings; s3local_object.c, object jobs and the compare-and-swap;
 * s3local_headers.c, object request headers; s3local_mpu*.c, multipart
 * uploads; s3local_copy.c, copies and ACL reads; s3local_spool.c, bodies
 * spooled to disk). Not a public interface: s3local.h is.
 *
 * One struct s3l_call per request, made on the loop and filled with copies
 * of what its job needs; a job (s3l_run_*) runs on a worker thread and only
 * fills the call's outcome, which job_done in s3local.c answers on the
 * loop. */
#ifndef FENCE_S3LOCAL_INT_H
#define FENCE_S3LOCAL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/jobs.h"
#include "http/proxy.h"
#include "s3local.h"
#include "lock/store/store.h"
#include "wire/bucketname.h"
#include "wire/checksum.h"

#define S3L_WORKERS_MAX   64        /* jobs_new allows 1..64 threads */
#define S3L_CACHE_SLOTS   16        /* open bucket stores per worker */
#define S3L_BUCKET_MAX    63
#define S3L_KEY_MAX       1024
#define S3L_META_BYTES    2048      /* S3's limit on user metadata */
#define S3L_CONFIG_MAX    (64 * 1024) /* CreateBucketConfiguration body */
#define S3L_COMPLETE_MAX  (2 * 1024 * 1024) /* CompleteMultipartUpload body */
#define S3L_STREAM_MAX    (5LL * 1024 * 1024 * 1024) /* a spooled PUT or part, as S3 */
#define S3L_COPY_MAX      (5LL * 1024 * 1024 * 1024) /* a CopyObject source, as S3 */
#define S3L_PARTS_MAX     10000
#define S3L_PART_MIN      (5 * 1024 * 1024) /* every part but the last, as S3 */
#define S3L_OWNER         "<Owner><ID>fencegate</ID><DisplayName>fencegate</DisplayName></Owner>"
#define S3L_LIST_PAGE     1000
#define S3L_LIST_PAGES    100000    /* store pages per listing request, a guard */
#define S3L_XMLNS         "http://s3.amazonaws.com/doc/2006-03-01/"
#define S3L_XML_DECL      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

struct cached_store {
	char bucket[S3L_BUCKET_MAX + 1];
	dev_t dev;                  /* identity of the directory it was opened on */
	ino_t ino;
	struct store *st;
	unsigned long used;         /* LRU tick */
};

/* Only ever touched by the worker thread of the same index. */
struct worker_cache {
	struct cached_store slot[S3L_CACHE_SLOTS];
	unsigned long tick;
};

/* What the s3local instances of every event-loop worker over one data
 * directory share (s3local_new_sibling): the last one freed frees it. */
struct s3l_shared {
	/* Bucket lifetime: object and listing jobs hold it shared (a store
	 * open would re-create a deleted bucket's directory), CreateBucket
	 * and DeleteBucket exclusive. */
	pthread_rwlock_t buckets;
	unsigned long trash_seq;    /* under buckets, exclusive */
	int refs;                   /* atomic */
};

struct s3local {
	struct event_base *base;
	struct jobs *jobs;
	char *data_dir;
	size_t max_object;
	struct s3l_shared *shared;
	pthread_rwlock_t *buckets;  /* &shared->buckets */
	s3local_upload_fn on_upload; /* loop thread only */
	void *on_upload_arg;
	struct worker_cache cache[S3L_WORKERS_MAX];
	int cache_slots;            /* slots used per worker, 1..S3L_CACHE_SLOTS:
				     * fewer under a small descriptor limit */
};

enum s3l_op {
	OP_LIST_BUCKETS,
	OP_CREATE_BUCKET,
	OP_HEAD_BUCKET,
	OP_DELETE_BUCKET,
	OP_LOCATION,
	OP_LIST_V1,
	OP_LIST_V2,
	OP_PUT,
	OP_GET,
	OP_HEAD,
	OP_DELETE,
	OP_COPY,
	OP_MPU_CREATE,
	OP_MPU_PART,
	OP_MPU_PART_COPY,
	OP_MPU_COMPLETE,
	OP_MPU_ABORT,
	OP_MPU_LIST_PARTS,
	OP_MPU_LIST_UPLOADS,
	OP_LIST_VERSIONS,
	OP_GET_ACL,
	OP_GET_BUCKET_ACL,
};

/* One request. Made on the loop, filled with copies of everything the job
 * needs (the job never reads the req); freed once the request is answered
 * or abandoned (never through the req's ctx slot, which earlier handlers
 * such as fencing use). */
struct s3l_call {
	struct s3local *s;
	struct proxy_req *req;
	enum s3l_op op;
	char bucket[S3L_BUCKET_MAX + 1];
	char *key;                  /* decoded; NULL for bucket operations */

	/* request body: in memory, or (spool) on its way to disk */
	struct s3l_spool *spool;
	char *body;
	size_t body_len, body_cap, body_max;
	int keep_body;              /* 0: bytes are read and dropped */
	int aws_chunked;
	int64_t decoded_length;     /* x-amz-decoded-content-length, -1 none */

	/* request headers */
	char *content_type;
	char *headers[STORE_HDR_COUNT]; /* Cache-Control & co. to store */
	struct store_meta meta[STORE_META_MAX];
	size_t nmeta;
	char *if_match, *if_none_match;
	int64_t if_modified_since, if_unmodified_since; /* 0: none */
	char *range;
	char *content_md5;
	/* PUT/UploadPart: the x-amz-checksum-* to verify (want: the header's
	 * value) or, named by x-amz-sdk-checksum-algorithm / x-amz-trailer, only
	 * to compute and keep (want NULL); NONE: none */
	enum checksum_algo checksum_algo;
	char *checksum_want;
	char checksum_value[CHECKSUM_BASE64_MAX]; /* computed (and matched), "" none */
	int checksum_mode;          /* GET/HEAD: x-amz-checksum-mode: ENABLED */
	int has_epoch;
	uint64_t epoch;
	uint64_t lock_epoch;        /* X-Fencing-Epoch-Current: the lock's, 0 none */

	/* multipart uploads and copies */
	char *upload_id;
	int part_number;            /* 1..10000; 0 none */
	char *copy_source;          /* x-amz-copy-source as sent */
	char *copy_range;           /* x-amz-copy-source-range */
	int replace_metadata;       /* x-amz-metadata-directive: REPLACE */
	char *copy_if_match, *copy_if_none_match;
	int fetch_owner;            /* ListObjectsV2 fetch-owner=true */
	char *key_marker, *upload_id_marker, *version_id_marker;

	/* listing parameters (decoded) */
	char *prefix, *delimiter, *start_after, *token, *marker;
	int max_keys;
	int url_encoding;

	/* GET/HEAD response overrides (response-content-type & co.) */
	struct store_meta overrides[6];
	size_t noverrides;

	/* outcome, filled by the job */
	int status;
	const char *err_code;       /* static; NULL on success */
	char err_msg[512];
	int has_object_epoch;
	uint64_t object_epoch;      /* for 409 FencingTokenStale */
	struct store_result res;    /* GET/HEAD/PUT answer */
	int body_fd;                /* GET: the object's bytes, -1 none */
	int64_t range_start, range_len; /* the part of res.body to send */
	int partial;                /* 206 */
	char *xml;                  /* listing answers; malloc'd */
	size_t xml_len;
};

#define S3L_QUERY_MAX 32

struct s3l_query {
	char *name[S3L_QUERY_MAX];
	char *value[S3L_QUERY_MAX]; /* NULL for "?name" without '=' */
	size_t n;
};

/* ---- s3local.c: helpers, replies, request parsing ---------------------- */

/* Records an error outcome on c; message is printf-style. */
__attribute__((format(printf, 4, 5)))
void s3l_call_fail(struct s3l_call *c, int status, const char *code, const char *fmt, ...);
/* 1 if s[0..n) is well-formed UTF-8 (no overlongs, no surrogates). */
int s3l_utf8_valid(const unsigned char *s, size_t n);
/* Unix seconds t as an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT"). */
void s3l_http_date(int64_t t, char *buf, size_t len);
/* Answer req with an S3 error (501 NotImplemented naming what, or status
 * and code); both return PROXY_HANDLED. */
enum proxy_action s3l_not_implemented(struct proxy_req *req, const char *what);
enum proxy_action s3l_bad_request(struct proxy_req *req, int status, const char *code,
				  const char *msg);
/* The value of name: NULL when absent, "" when given without '='; *present
 * (may be NULL) says whether it was given. */
const char *s3l_query_get(const struct s3l_query *q, const char *name, int *present);

/* Frees c (everything it owns). Accepts NULL. */
void s3l_call_free(struct s3l_call *c);
/* Hands c to the jobs pool (its op's job, then the reply); answers 503 and
 * frees c when the pool refuses. */
void s3l_submit(struct s3l_call *c);

/* ---- s3local_spool.c: request bodies spooled to disk ------------------- */

struct store_file_range;
struct s3l_spool *s3l_spool_new(void);
/* The same for an aws-chunked body of that mode (enum awschunked_mode),
 * decoded (and its checksum trailer checked) as it arrives. Chunk and
 * trailer signatures are parsed but not verified: nobody authenticated the
 * request (with authentication on, proxy/s3 decodes and verifies the body
 * before this server sees it). */
struct s3l_spool *s3l_spool_new_chunked(struct s3l_call *c, int mode, int64_t decoded_length,
					 const char *trailer_name);
/* The client's body ended (loop): 0, or -1 after replying the decoder's
 * error (an aws-chunked body cut short or failing its checksum). */
int s3l_spool_body_done(struct s3l_call *c);
void s3l_spool_free(struct s3l_spool *sp); /* accepts NULL */
/* Bytes taken so far. */
int64_t s3l_spool_size(const struct s3l_spool *sp);
/* The body callback's part (loop): 0 go on, 1 pause (a chunk is being
 * written; reading resumes when it is), -1 out of memory, -2 after
 * replying the decoder's error. */
int s3l_spool_feed(struct s3l_call *c, const char *data, size_t len);
/* The body's end (loop): 1 when a chunk is still being written (its job
 * then submits c, or frees it when !ok), 0 to go on as usual. */
int s3l_spool_end(struct s3l_call *c, int ok);
/* In the op's job: writes the rest, fsyncs; md5 gets the body's MD5 and r
 * the file's range (fd -1: a body of less than one chunk, then in
 * c->body). 0, or -1 with c failed. */
int s3l_spool_finish(struct s3l_call *c, unsigned char md5[16], struct store_file_range *r);
/* The finished body's checksum c->checksum_algo, base64, into out
 * (CHECKSUM_BASE64_MAX). 0, or -1 before s3l_spool_finish or without one. */
int s3l_spool_checksum(const struct s3l_spool *sp, char out[CHECKSUM_BASE64_MAX]);
/* The finished body's MD5. 0, or -1 before s3l_spool_finish. */
int s3l_spool_md5(const struct s3l_spool *sp, unsigned char md5[16]);
/* Gives the spooled body the name name in dir_fd (a hard link, else a
 * copy), fsynced. 0, or -1 with errno. */
int s3l_spool_link(struct s3l_call *c, int dir_fd, const char *name);

/* ---- s3local_route.c: the query and the operation ----------------------- */

/* Percent-decodes s[0..n) into a new string ('+' as ' ' with plus_space);
 * NULL on a bad escape, an encoded NUL or ENOMEM. */
char *s3l_decode(const char *s, size_t n, int plus_space);
/* Splits and decodes a query string into q. 0, or -1 (bad escape, too many
 * parameters, ENOMEM). */
int s3l_query_parse(const char *s, struct s3l_query *q);
void s3l_query_free(struct s3l_query *q);
/* The operation of method on bucket/key with q's subresources, or -1
 * after replying (501 for what this server lacks, 400/405). */
int s3l_pick_op(struct proxy_req *req, const char *method, int has_bucket, int has_key,
		const struct s3l_query *q);

/* ---- s3local_bucket.c: bucket stores and bucket jobs ------------------- */

/* The store of c->bucket for this thread, with c->s->buckets held; *owned
 * = 1 when the caller must pass it to s3l_release_store() to close it.
 * NULL with c failed (NoSuchBucket or an error). */
struct store *s3l_bucket_store(struct s3l_call *c, int *owned);
/* The same for another bucket (a copy's source). */
struct store *s3l_named_store(struct s3l_call *c, const char *bucket, int *owned);
void s3l_release_store(struct store *st, int owned);
/* Fails c with the S3 error for a failed store answer. */
void s3l_fail_from_store(struct s3l_call *c, const struct store_result *res);
/* At start, before the first request: opens every bucket's store once as
 * a starting process (store_config.starting), so that what a crash left
 * (temp files, half-made moves) is gone whatever its age. */
void s3l_recover_buckets(const struct s3local *s);
void s3l_run_create_bucket(struct s3l_call *c);
void s3l_run_head_bucket(struct s3l_call *c);
void s3l_run_delete_bucket(struct s3l_call *c);
void s3l_run_location(struct s3l_call *c);

/* ---- s3local_list.c: listings ------------------------------------------ */

struct evbuffer;
/* Appends <name>value</name>, value XML-escaped (percent-encoded first
 * with url, as encoding-type=url asks). */
void s3l_xml_elem(struct evbuffer *b, const char *name, const char *value, int url);
/* Unix seconds as S3's "2006-02-03T16:45:09.000Z". */
void s3l_iso8601(int64_t t, char *buf, size_t len);
/* The evbuffer's bytes as c's XML answer (status 200). Returns 0, or -1
 * with c failed (out of memory). */
int s3l_take_xml(struct s3l_call *c, struct evbuffer *b);

void s3l_run_list_buckets(struct s3l_call *c);
/* ListObjects V1 or V2, or ListObjectVersions (c->op). */
void s3l_run_list(struct s3l_call *c);
/* Listing parameters from q into c. Returns 0, or -1 after replying. */
int s3l_take_list_params(struct s3l_call *c, const struct s3l_query *q);

/* ---- s3local_mpu.c: multipart uploads ------------------------------------ */

#define S3L_UPLOAD_ID_LEN 32        /* hex */

/* One part as found on disk. */
struct s3l_part {
	int number;
	char md5[33];               /* hex */
	int64_t size;
	int64_t mtime;
};

/* An open upload: its directory, its lock (held or not), upload.json. */
struct s3l_upload {
	int dir_fd;
	int lock_fd;
	struct cJSON *json;
};

/* BUCKET/.fencegate/uploads, opened (made when create); -1 with c failed
 * (or, without create, simply absent). */
int s3l_uploads_dir(struct s3l_call *c, int create);
/* Opens c->upload_id of c->key, with lock taking its lock. 0, or -1 with c
 * failed (404 NoSuchUpload). Close with s3l_upload_close. */
int s3l_upload_open(struct s3l_call *c, struct s3l_upload *u, int lock);
void s3l_upload_close(struct s3l_upload *u);
/* The upload's parts, sorted by number (*out the caller's). 0 or -1. */
int s3l_read_parts(int dir_fd, struct s3l_part **out, size_t *nout);
/* Removes upload id (a directory of ufd) and its files. */
void s3l_remove_upload(int ufd, const char *id);
/* Takes the open upload's lock; -1 when it was completed or aborted
 * meanwhile (its upload.json is gone). */
int s3l_upload_lock(struct s3l_call *c, struct s3l_upload *u);
/* Writes name in dir_fd (new, fsync'd) from data, or from the file range
 * from (read as it is written, its MD5 into md5). 0, or -1 with errno and
 * nothing left behind. */
int s3l_write_file(int dir_fd, const char *name, const void *data, size_t len,
		   const struct store_file_range *from, unsigned char md5[16]);

void s3l_run_mpu_create(struct s3l_call *c);
/* UploadPart and UploadPartCopy (c->op). */
void s3l_run_mpu_part(struct s3l_call *c);
void s3l_run_mpu_abort(struct s3l_call *c);
void s3l_run_mpu_list_parts(struct s3l_call *c);
void s3l_run_mpu_list_uploads(struct s3l_call *c);
/* Multipart parameters (uploadId, partNumber, markers) from q into c.
 * Returns 0, or -1 after replying. */
int s3l_take_mpu_params(struct s3l_call *c, const struct s3l_query *q);

/* ---- s3local_mpu_complete.c ---------------------------------------------- */

void s3l_run_mpu_complete(struct s3l_call *c);

/* ---- s3local_copy.c: copies, versions, ACLs ------------------------------ */

/* Opens the object x-amz-copy-source names, with the bucket lock held:
 * its headers and metadata in res, in *fd (the caller's, to close) a
 * descriptor of that version's bytes. Checks the x-amz-copy-source-if-*
 * conditions and, for CopyObject, S3's 5 GiB limit. Returns 0, or -1 with
 * c failed and *fd -1. */
int s3l_read_copy_source(struct s3l_call *c, struct store_result *res, int *fd);
void s3l_run_copy(struct s3l_call *c);
/* GetObjectAcl, GetBucketAcl (c->op): the owner has FULL_CONTROL. */
void s3l_run_get_acl(struct s3l_call *c);

/* ---- s3local_object.c: objects ------------------------------------------ */

/* "0".."9999999999999999999" (1-19 digits, no sign or blanks) into *out;
 * 0, or -1. */
int s3l_parse_u64(const char *s, uint64_t *out);

void s3l_run_put(struct s3l_call *c);
/* The request body made ready to store: aws-chunked framing removed, size
 * and Content-MD5 checked; a spooled body written out, r its file range
 * (r->fd -1: the body is c->body). Returns 0, or -1 with c failed. */
int s3l_prepare_body(struct s3l_call *c, struct store_file_range *r);
/* The write's content type, headers and metadata from c into opts. */
void s3l_object_opts(const struct s3l_call *c, struct store_put_opts *opts);
/* Writes c->key in st with opts and the body (or opts' files): the
 * client's conditions, and with c->has_epoch the fencing compare-and-swap
 * (s3local.h), on exactly the version it read. c gets the outcome. */
void s3l_put_object(struct s3l_call *c, struct store *st, struct store_put_opts *opts,
		    const void *body, size_t len);
void s3l_run_delete(struct s3l_call *c);
/* GetObject or HeadObject (c->op). */
void s3l_run_get_or_head(struct s3l_call *c);
/* The object's headers of a GET/HEAD answer (or its 304) into h. */
void s3l_object_headers(struct s3l_call *c, struct front_hdrs *h);

/* ---- s3local_headers.c: object request headers ----------------------- */

/* Object request headers (and GET's response- parameters in q) into c.
 * Returns 0, or -1 after replying. */
int s3l_take_object_headers(struct s3l_call *c, const struct s3l_query *q);

#endif
