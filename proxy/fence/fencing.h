/* fencing.h — the fencing handler on the request path (DESIGN.md "Fencing
 * on the proxy", "S3 mode").
 *
 * For every S3 request it classifies the operation, and for a write under
 * /{bucket}/{key} (lock {bucket} with no config) takes the fencing
 * decision (fence.h) against the lock's high-water mark (lockreg.h):
 * rejections are answered here and never reach upstream. An allowed write is
 * stamped with x-amz-meta-fencing-epoch / -lock and, in S3 mode with an
 * upstream, made conditional on the object's current version (the
 * object-level compare-and-swap, with an ETag cache). Writes to lock files
 * are checked (lockkey.h) and performed by the proxy itself on the lock's
 * store. Multipart uploads are tracked by upload id. In embedded mode the
 * handler only decides and stamps; s3local does the object CAS (s3local.h,
 * FENCING CONTRACT).
 *
 * In HTTP mode (http_mode) it fences any HTTP API instead: the same
 * decision and JSON error bodies, the token forwarded downstream in
 * X-Fencing-Token, and the per-lock epoch barrier (barrier.h).
 *
 * It does not parse configuration, authenticate clients, or serve /_fence/
 * (lockapi.h does). */
#ifndef FENCE_FENCING_H
#define FENCE_FENCING_H

#include <stdbool.h>
#include <stdio.h>

#include "http/jobs.h"
#include "lockreg.h"
#include "ops/metrics.h"
#include "http/proxy.h"

struct multipart_table;

struct fencing;

struct logfiles;

struct fencing_config {
	struct lockreg *locks;
	struct jobs *jobs;
	int nthreads;                   /* the pool's worker count (per-thread HEAD stores) */
	struct fencegate_metrics *metrics; /* may be NULL */
	const char *s3_endpoint;        /* upstream S3 URL: object CAS with HEADs on
					 * it; NULL: embedded mode (s3local's CAS) */
	const char *data_dir;           /* embedded mode: the store's directory
					 * (DeleteObjects deletes there) */
	const char *region;
	size_t objcache_capacity;       /* 0: 100000 */
	size_t multipart_capacity;      /* uploads remembered; 0: 10000 */
	struct multipart_table *uploads; /* shared with the other event-loop
					 * workers (outlives it); NULL: its own */
	int max_cas_retries;            /* re-sends after a lost race; 0: 3 */
	struct logfiles *access_log;    /* one JSON line per request (buffered by
					 * logfiles); NULL or none open: none */
	/* HTTP mode (any HTTP API downstream): no buckets, no object CAS, JSON
	 * errors, the lock from the policy's route or X-Fencing-Lock (the
	 * registry's lock_store without a config), the epoch barrier */
	bool http_mode;
	struct event_base *base;        /* HTTP mode: barrier timers */
	long barrier_timeout_ms;        /* a newer epoch's write waits at most
					 * this long for older in-flight writes,
					 * then 503 FencingBarrierTimeout; 0: 5000 */
	long barrier_grace_ms;          /* a forwarded write whose outcome is
					 * unknown (upstream timeout or reset,
					 * client gone) stays in flight this
					 * long after its upstream connection
					 * closed; 0: 2000, < 0: none */
	struct statusboard *board;      /* every decided write is counted there
					 * (the status page); NULL: none */
};

/* Returns NULL with a message in err. Strings are copied; locks, jobs and
 * metrics must outlive it. */
struct fencing *fencing_new(const struct fencing_config *cfg, char *err, size_t errlen);

/* Routes -> locks from a policy (-c; NULL: none: S3 mode fences bucket B
 * by lock B, HTTP mode takes the lock from X-Fencing-Lock). With a policy
 * a write's lock comes from its longest-prefix route (X-Fencing-Lock only
 * where the route allows it), with the route's methods and strict flag;
 * unrouted writes follow unrouted_writes; in S3 mode keys under a
 * configured lock's prefix in its bucket are lock files. Takes its own reference (policy_hold) and drops the
 * previous policy's, so it may be called again on a reload. Registers every
 * configured lock in the registry and starts loading its epoch. A lock
 * whose store or prefix changed keeps the old placement until a restart
 * (warned). Returns 0, or -1 with a message in err. */
struct policy;
int fencing_set_policy(struct fencing *f, struct policy *pol, char *err, size_t errlen);

/* 1 if lock NAME exists for the lock API: any name without a config (lock
 * NAME guards bucket NAME, or lives in the HTTP-mode lock store) or when
 * unrouted writes use the bucket's lock; with a config otherwise, only the
 * locks it names. 0 for an unknown one. */
int fencing_lock_known(const struct fencing *f, const char *name);

/* The embedded store's multipart uploads (arg: the struct fencing): what
 * CreateMultipartUpload made (created 1, with the create's epoch and lock;
 * lock NULL: unfenced, nothing to remember) or Complete/Abort ended
 * (created 0), so that parts sent without a token are fenced by their
 * upload's epoch as in S3 mode. The signature of s3local.h's upload hook. */
void fencing_note_upload(void *arg, const char *bucket, const char *upload_id, int created,
			 uint64_t epoch, const char *lock);

/* Call after jobs_free() (no HEAD job may still run). Accepts NULL. */
void fencing_free(struct fencing *f);

/* proxy_handler.on_request; arg is the struct fencing. PASSes /_fence/. */
enum proxy_action fencing_on_request(struct proxy_req *req, void *arg);

/* proxy_handler.owns for the fencing handler: the header names fencing
 * alone may put on a forwarded request ("x-fencing-", the token, the lock,
 * the embedded store's epoch fields; "x-amz-meta-fencing-", the stamp). A
 * client's are read here and never forwarded. */
extern const char *const fencing_owned_prefixes[];

/* Upstream requests (forwards, re-sends and HEADs) issued so far. */
unsigned long fencing_upstream_requests(const struct fencing *f);

/* Mirrors the ETag cache counters into the metrics (before a render). */
void fencing_update_metrics(struct fencing *f);

/* The ETag cache's hits and misses so far, from any thread (summing the
 * event-loop workers' caches at a scrape). */
void fencing_cache_counts(const struct fencing *f, uint64_t *hits, uint64_t *misses);

/* Writes one access-log line for a request answered outside the fencing
 * path (the lock API). lock may be NULL. */
void fencing_log_request(struct fencing *f, const struct proxy_summary *s, const char *lock,
			 const char *verdict);

#endif
