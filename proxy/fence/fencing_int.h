/* fencing_int.h — what the fencing handler's files share (fencing.c, the
 * common request path; fencing_s3.c, S3 mode and the object CAS;
 * fencing_guard.c, lock-file writes through the S3 API; fencing_http.c,
 * HTTP mode and the epoch barrier). Not a public interface: fencing.h is.
 *
 * One struct freq per request, owned by the request (its ctx, freed with
 * it); every callback that resumes a request goes through
 * fencing_continue() or proxy_req_resume() exactly once. */
#ifndef FENCE_FENCING_INT_H
#define FENCE_FENCING_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "barrier.h"
#include "fence.h"
#include "fencing.h"
#include "multipart.h"
#include "objcache.h"
#include "policy/policy.h"
#include "s3/s3req.h"
#include "token.h"

/* Per worker thread: stores (one per bucket) for object HEADs. */
#define TSTORES_PER_THREAD 16
/* How long one object call of fencing's (a HEAD for the CAS, a copy
 * source's HEAD, one key of DeleteObjects) may take, retries included,
 * before it fails as unknown and the write is answered 503: a storage
 * server that accepts connections and never answers holds no write longer */
#define FENCING_STORE_CALL_MS 5000

struct tstore {
	char bucket[LOCKREG_BUCKET_MAX + 1];
	struct store *st;
	unsigned long used;
};

struct fencing {
	struct lockreg *locks;
	struct jobs *jobs;
	int nthreads;
	struct fencegate_metrics *metrics;
	struct metrics_family *upstream_requests; /* fencegate_upstream_requests_total{kind} */
	char *s3_endpoint;
	char *data_dir;                /* embedded: the store's directory */
	char *region;
	struct objcache *objects;
	struct multipart_table *uploads;
	bool own_uploads;               /* else shared, freed by its owner */
	int max_cas_retries;
	struct logfiles *access_log;
	struct tstore *tstores;        /* nthreads rows of TSTORES_PER_THREAD */
	unsigned long upstream_count;
	/* HTTP mode */
	bool http_mode;
	struct event_base *base;
	long barrier_timeout_ms;
	long barrier_grace_ms;
	struct policy *policy;         /* NULL: no config (lock from X-Fencing-Lock) */
	struct statusboard *board;     /* NULL: none */
};

/* One request's fencing state (the req's ctx). */
struct freq {
	struct fencing *f;
	struct proxy_req *req;
	enum s3_class kind;          /* the S3 operation's class (HTTP mode:
				      * S3_OBJECT_ATTR, lock level only) */
	bool lock_file;              /* a write to a key under the lock's prefix */
	char header_lock[TOKEN_LOCK_NAME_MAX + 2];  /* X-Fencing-Lock as sent, "" none */
	char meta_lock[TOKEN_LOCK_NAME_MAX + 2];    /* x-amz-meta-fencing-lock, "" none */
	char bucket[LOCKREG_BUCKET_MAX + 1];
	char *key;                   /* percent-decoded, NULL for bucket-level */
	struct lockreg_entry *lock;
	struct token token;
	uint64_t epoch;              /* T, once known */
	bool looked_up;              /* T > C: a fresh load ran for it */
	bool copy_metadata;          /* CopyObject with the COPY directive */
	int cache_hit;               /* objcache lookup of step_decide: 1 hit */
	struct objcache_entry cached;
	bool client_inm;             /* client sent If-None-Match: * */
	char client_if_match[STORE_ETAG_MAX];
	char *upload_id;             /* ?uploadId=, malloc'd; NULL none */
	int cas_resends;
	bool our_condition;          /* the forwarded condition is ours */
	bool cond_if_match;          /* ours is If-Match (else If-None-Match *) */
	bool cond_unread;            /* ours is the unread create (objcas.h) */
	/* object HEAD result */
	int head_found;              /* 1, 0, -1 failure */
	char head_etag[STORE_ETAG_MAX];
	uint64_t head_epoch;
	char *head_err;              /* why the HEAD failed, malloc'd; NULL */
	/* lock-file guard */
	bool copy_or_multipart;      /* copy source, ?uploads, ?uploadId on a lock key */
	char *body;
	size_t body_len;
	bool body_too_big;
	bool delete_fenced;          /* DeleteObjects: compare with epoch */
	/* multipart answer capture */
	char *resp_body;
	size_t resp_len;
	/* HTTP mode (key holds the request path, for the log) and routes */
	unsigned fenced_methods;       /* the route's; 0: FENCE_METHODS_DEFAULT */
	bool strict;                   /* the route is strict */
	struct barrier_waiter waiter;  /* queued in lock->barrier while waiting */
	bool barrier_waiting;          /* waiter is queued or on the ready list */
	bool barrier_counted;          /* forwarded: counts in flight until done */
	struct event *barrier_timer;
	/* log */
	const char *verdict;
	const char *refusal;           /* the error code a refused write got
				        * (static string); NULL: not refused */
	bool has_current;
	uint64_t current;
	int64_t t_start_ms;
	int64_t t_forward_us;
};

static inline bool fencing_kind_has_object_cas(enum s3_class k)
{
	return k == S3_OBJECT_PUT || k == S3_OBJECT_COPY || k == S3_MPU_COMPLETE || k == S3_OBJECT_DELETE;
}

/* ---- fencing.c: the common path ---------------------------------------- */

int64_t fencing_mono_us(void);
void fencing_count_upstream(struct fencing *f, const char *kind);
/* Answers an error (S3 XML, or JSON in HTTP mode; CurrentEpoch and
 * X-Fencing-Epoch when has_epoch). Returns PROXY_HANDLED; fr may be gone. */
enum proxy_action fencing_reply_error(struct freq *fr, int status, const char *code,
				      const char *message, bool has_epoch, uint64_t epoch);
/* Continues a suspended request with the action a step returned. */
void fencing_continue(struct freq *fr, enum proxy_action act);
/* lockreg_when_current's callback: the lock is loaded, decide. */
void fencing_loaded_cb(struct lockreg_entry *e, int ok, void *arg);
/* Runs fence_decide with what is known; looks up, rejects or goes on to
 * the mode's next step (the object CAS, or the barrier). */
enum proxy_action fencing_step_decide(struct freq *fr);
/* Waits until what the registry knows of fr->lock is current enough to
 * decide on (fresh for strict routes), then fencing_step_decide: now, or
 * from fencing_loaded_cb after PROXY_SUSPEND. */
enum proxy_action fencing_step_when_current(struct freq *fr);
/* The answer to a failed lockreg wait (r < 0): 503 SlowDown when the lock's
 * queue is full (LOCKREG_FULL), else 500. */
enum proxy_action fencing_reply_wait_failed(struct freq *fr, int r);
/* 503 code for a lock that could not be loaded: what ("cannot read lock
 * \"x\"") goes to the client, detail (the store's error, which may name
 * the server's files) only to the log with the request id. */
enum proxy_action fencing_reply_load_failed(struct freq *fr, const char *code, const char *what,
					    const char *detail);
/* The answer when the lock registry cannot take the lock (lockreg_get's
 * why: "full", or another reason): 503. */
void fencing_reply_untracked(struct freq *fr, const char *why);
/* 400 InvalidFencingLock for a lock name the request may not give (pick:
 * POLICY_PICK_NAME_UNKNOWN, or a name where none may be given). */
void fencing_refuse_lock_name(struct freq *fr, enum policy_pick pick);
/* Appends a body piece to fr->body (NUL-terminated), up to max bytes in
 * all; past that it keeps nothing more and sets fr->body_too_big. For
 * proxy_req_consume body callbacks: 0, or -1 on ENOMEM. */
int fencing_body_append(struct freq *fr, const char *data, size_t len, size_t max);
/* The token from every X-Fencing-Token / x-amz-meta-fencing-token line. */
struct token fencing_read_token(struct proxy_req *req);

/* ---- fencing_s3.c: S3 mode ---------------------------------------------- */

/* The S3 request path after the common set-up: classify, find the lock,
 * guard lock files, decide. */
enum proxy_action fencing_s3_on_request(struct fencing *f, struct freq *fr);
/* Worker side: this thread's store for bucket, on the upstream S3 or the
 * embedded store's directory (opened on first use; the least used one is
 * closed when the row is full). NULL with err filled. */
struct store *fencing_thread_store(struct fencing *f, const char *bucket, char *err,
				   size_t errlen);
/* Gives st's next call FENCING_STORE_CALL_MS from now (store.h's
 * deadline_mono_ms); fencing_thread_store does it for the first. */
void fencing_store_deadline(struct store *st);
/* The epoch an object was written under, from its stored fencing-epoch
 * metadata (a HEAD's or GET's result); 0 when absent or not a token. */
uint64_t fencing_object_epoch(const struct store_result *res);
/* Sets the upstream condition for an allowed write (HEAD when needed). */
enum proxy_action fencing_step_cas(struct freq *fr);
/* After a relayed CreateMultipartUpload: remember upload id -> epoch. */
void fencing_record_upload(struct freq *fr);

/* ---- fencing_delete.c: DeleteObjects ----------------------------------- */

/* DeleteObjects (POST /{bucket}?delete): reads the body and deletes its
 * keys one by one, each with the object CAS of a fenced DELETE under
 * fr->epoch (fenced), or unconditionally (unfenced); never forwarded.
 * Returns PROXY_HANDLED (replied, or replies later). */
enum proxy_action fencing_delete_start(struct freq *fr, bool fenced);

/* ---- fencing_guard.c: lock files through the S3 API --------------------- */

/* Reads the (bounded) body and lets the lock-file guard decide and perform
 * the write. Returns PROXY_HANDLED (replied, or replies later). */
enum proxy_action fencing_guard_start(struct freq *fr);

/* ---- fencing_copy.c: CopyObject's COPY directive (S3 mode) -------------- */

/* Reads the copy source's metadata, rewrites the copy as REPLACE with it
 * (and the stamp already set), then carries on with fencing_step_cas. */
enum proxy_action fencing_copy_prepare(struct freq *fr);

/* ---- fencing_http.c: HTTP mode ------------------------------------------ */

enum proxy_action fencing_http_on_request(struct fencing *f, struct freq *fr);
/* The write was decided FORWARD: pass the lock's epoch barrier. */
enum proxy_action fencing_http_admit(struct freq *fr);
/* The request is over: a forwarded write no longer holds the barrier, at
 * once when its answer came, after the grace when its outcome is unknown. */
void fencing_http_done(struct freq *fr, const struct proxy_summary *s);

#endif
