/* lockreg.h — the proxy's registry of locks and their high-water marks.
 *
 * One entry per lock the proxy fences: its name, the store it lives in, its
 * key prefix and the highest epoch the proxy knows (C, the high-water
 * mark), with what it knows about that epoch's lock file. With no config,
 * lock NAME guards bucket NAME and lives under "locks/NAME/lock-" in bucket
 * NAME; entries are created on first use, up to a bound. All store I/O runs
 * on the jobs pool, one job at a time per lock (each entry owns one struct
 * store and one struct lock, which are not thread-safe). Epochs only go up:
 * every update is a max. It does not decide anything about requests
 * (fence.h does) and never evicts an entry.
 *
 * States of an entry's knowledge (loop thread only):
 *   not loaded   C unknown: writes wait (lockreg_when_loaded) for the
 *                first load (lock_status) before any decision; a write
 *                also waits when what is loaded is older than the
 *                refresh interval (the freshness rule below)
 *   loaded       C = the highest epoch seen; state/lease_end_ms describe
 *                epoch state_epoch (== C once a load or a lookup of C ran):
 *                FREE (C == 0), HELD, LAPSED, RELEASED or UNREADABLE
 *   load failed  the last load failed (load_err); the next write retries */
#ifndef FENCE_LOCKREG_H
#define FENCE_LOCKREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "barrier.h"
#include "lockmarks.h"
#include "statusboard.h"
#include "http/jobs.h"
#include "lock/core/lock.h"
#include "lock/store/store.h"
#include "ops/metrics.h"

#define LOCKREG_BUCKET_MAX 63
#define LOCKREG_PREFIX_MAX 1024
#define LOCKREG_STORE_MAX 1024
#define LOCKREG_DEFAULT_MAX_LOCKS 10000
#define LOCKREG_QUEUE_MAX 4096   /* requests waiting on one lock, and queued
				  * operations on it, each */
#define LOCKREG_OP_MS 5000       /* one operation on a lock's store (a load,
				  * the self-test, a guarded write), retries
				  * included: past it the store call fails as
				  * unknown, so a silent store holds no write
				  * (a renewal keeps its own, earlier deadline) */
#define LOCKREG_OPEN_STORES 64  /* locks whose store stays open between
				  * operations, per registry (an S3 store holds
				  * about 3 descriptors and 30 KiB): past it
				  * the least recently used idle one is closed
				  * and reopened at its next operation */
#define LOCKREG_FULL (-2)        /* lockreg_submit / _when_*: the lock's queue
				  * is at LOCKREG_QUEUE_MAX (answer 503 SlowDown) */

struct lockreg;
struct lockreg_waiter;
struct lockreg_op;

struct lockreg_config {
	struct event_base *base;  /* NULL with jobs NULL: no I/O (unit tests) */
	struct jobs *jobs;
	const char *s3_endpoint;  /* S3 mode: lock stores are s3://BUCKET on this
				   * endpoint (credentials from the environment);
				   * NULL: file stores DATA_DIR/BUCKET */
	const char *data_dir;     /* embedded mode: the local directory */
	const char *lock_store;   /* HTTP mode: "s3://BUCKET[/ROOT]" or "file:///DIR";
				   * lockreg_get puts lock NAME there under
				   * "<ROOT/>locks/NAME/lock-" and ignores bucket
				   * (S3 endpoint: AWS_ENDPOINT_URL, else AWS) */
	const char *region;       /* S3 signing region; NULL: environment */
	const char *dialect;      /* the S3 dialect (lock/store/dialect.h), a row's
				   * static name; NULL: FENCE_S3_DIALECT, auto */
	size_t max_locks;         /* 0: LOCKREG_DEFAULT_MAX_LOCKS */
	long refresh_ms;          /* the freshness rule's bound (below); 0: 1000;
				   * < 0: no rule, loaded once (unsafe) */
	long active_ms;           /* background refresh stops this long after a
				   * lock's last use (lockreg_refresh_wanted);
				   * 0: twice refresh_ms */
	bool self_test;           /* lock_check_store on each lock's store before
				   * its first load (backends ignoring
				   * If-None-Match are refused) */
	struct fencegate_metrics *metrics; /* loads' time and failures; may be NULL */
	struct lockmarks *marks;  /* the marks shared with the other event-loop
				   * workers' registries (lockmarks.h); NULL:
				   * this registry's own only */
	struct statusboard *board; /* what it learns of a lock's state is
				   * published there for the status page; NULL:
				   * not published */
};

struct lockreg_entry {
	/* immutable after creation: safe to read from a job's run() */
	char name[LOCK_NAME_MAX + 1];
	char bucket[LOCKREG_BUCKET_MAX + 1];
	char prefix[LOCKREG_PREFIX_MAX];
	char store_url[LOCKREG_STORE_MAX]; /* "" : derived from bucket (S3 mode,
				      * embedded); else the lock's own store */
	bool strict;                 /* list before every write */

	/* loop thread only */
	uint64_t high_water;         /* C */
	uint64_t state_epoch;        /* the epoch state describes */
	enum lock_state state;
	uint64_t released_epoch;     /* highest epoch known released, 0 none */
	int64_t lease_end_ms;        /* Unix ms of state_epoch's lease end, 0 unknown */
	char holder[LOCK_HOLDER_MAX];
	int64_t ttl_ms;
	bool loaded;
	bool load_failed;
	char load_err[256];
	bool load_no_bucket;         /* that failure: the store's S3 bucket does
				      * not exist (404 NoSuchBucket) */
	int64_t last_refresh_ms;     /* monotonic start of the last good load */
	int64_t load_started_ms;     /* monotonic start of the running load */
	int64_t last_used_ms;        /* monotonic, of the last use (lockreg_touch) */
	int64_t use_gap_ms;          /* between the last two uses; INT64_MAX
				      * before the second */
	bool used;
	struct barrier barrier;      /* HTTP mode: the epoch barrier (barrier.h) */
	bool barrier_scheduled;      /* fencing.c: a drain of barrier.ready is
				      * queued on the loop */

	/* private */
	struct lockreg *reg;
	struct lockreg_entry *next;
	struct lockreg_entry *hnext; /* hash chain */
	struct lockreg_waiter *waiters;
	struct lockreg_waiter *waiters_next; /* fresh loads asked for while a
				      * load was running: the next load */
	struct lockreg_op *ops_head, *ops_tail;
	unsigned n_ops;              /* queued in ops_head (not the running one) */
	unsigned n_waiters;          /* in waiters and waiters_next */
	bool busy;
	bool loading;
	bool tested;                 /* self-test passed (worker-side flag) */
	uint64_t mark_synced;        /* worker-side: the store's epoch mark was
				      * checked to be at least this */
	struct store *st;            /* used by one job at a time; closed
				      * while idle past LOCKREG_OPEN_STORES */
	struct lock *lk;
	bool st_listed;              /* loop thread: in the registry's list of
				      * open stores (lru_prev/lru_next) */
	struct lockreg_entry *lru_prev, *lru_next;
	struct lockmark *mark;       /* shared C (lockmarks.h), or NULL */
};

/* ---- pure helpers ---------------------------------------------------- */

/* 1 if name is a valid S3 bucket name (3-63 of [a-z0-9.-], starting and
 * ending with a letter or digit, no "..", not an IPv4 address), else 0. */
int lockreg_bucket_valid(const char *name);

/* "locks/NAME/lock-" into out. Returns 0, or -1 if it does not fit. */
int lockreg_default_prefix(const char *name, char *out, size_t outlen);

/* "<ROOT/>locks/NAME/lock-" for lock NAME in the store store_url
 * ("s3://BUCKET/ROOT" → "ROOT/locks/NAME/lock-"; file:// → no root), the
 * prefix fencectl --store uses. Returns 0, or -1 if it does not fit or
 * store_url is neither s3:// nor file://. */
int lockreg_store_prefix(const char *store_url, const char *name, char *out, size_t outlen);

/* Records what is known about epoch: C = max(C, epoch); when epoch >= the
 * epoch the state describes, state/lease/holder describe it now. A state of
 * LOCK_STATE_RELEASED also marks epoch released. Returns 1 if C was raised. */
int lockreg_note(struct lockreg_entry *e, uint64_t epoch, enum lock_state state,
		 int64_t lease_end_ms, const char *holder, int64_t ttl_ms);

/* Raises C to epoch (a max) without knowing its state (e.g. an acquired
 * epoch: state HELD), here and in the shared mark. Returns 1 if this
 * entry's C was raised. */
int lockreg_raise(struct lockreg_entry *e, uint64_t epoch);

/* C, read from any thread (a job's run(): DeleteObjects checks it before
 * each key), including what other workers published; the loop thread may
 * read e->high_water directly (as of its last lookup). */
uint64_t lockreg_high_water(const struct lockreg_entry *e);

/* 1 if epoch is known to be released (its file is "expired"), here or by
 * another worker (the shared mark). */
int lockreg_epoch_released(const struct lockreg_entry *e, uint64_t epoch);

/* 1 if epoch's lease is known to have lapsed at now_ms (Unix ms). */
int lockreg_epoch_lapsed(const struct lockreg_entry *e, uint64_t epoch, int64_t now_ms);

/* ---- the registry ---------------------------------------------------- */

/* A registry (strings copied). Starts the refresh timer when base and jobs
 * are set. Returns NULL with a message in err. */
struct lockreg *lockreg_new(const struct lockreg_config *cfg, char *err, size_t errlen);

/* Frees every entry and its store. Jobs must have been drained first
 * (jobs_free) so no run() still uses a store. Accepts NULL. */
void lockreg_free(struct lockreg *r);

/* The entry of lock name (bucket names where it lives), creating it when
 * create is set. NULL if absent (create == 0), if name or bucket is invalid
 * (*why = "invalid"), or if the registry is full (*why = "full"). With a
 * lock_store configured (HTTP mode) bucket is ignored (may be NULL) and a
 * new entry lives in the lock store. An existing entry of that name is
 * returned whatever bucket says (configured locks are registered first). */
struct lockreg_entry *lockreg_get(struct lockreg *r, const char *name, const char *bucket,
				  int create, const char **why);

/* The entry of a lock with its own store and key prefix (a configured
 * lock, or one in the HTTP-mode lock store), created when create is set.
 * prefix NULL: lockreg_store_prefix(store_url, name). An existing entry of
 * that name is returned as it is (a name is one lock; a changed store or
 * prefix needs a restart). NULL as lockreg_get. */
struct lockreg_entry *lockreg_get_at(struct lockreg *r, const char *name, const char *store_url,
				     const char *prefix, int create, const char **why);

/* 1 if the lock's files live in bucket (so keys under its prefix there are
 * lock files): a bucket-named lock, or a store "s3://BUCKET[/ROOT]". */
int lockreg_in_bucket(const struct lockreg_entry *e, const char *bucket);
/* 1 if store_url is "s3://BUCKET" or "s3://BUCKET/ROOT" for this bucket. */
int lockreg_url_in_bucket(const char *store_url, const char *bucket);

/* Registers here, unloaded, every bucket-named lock (S3 mode: lock NAME of
 * bucket NAME) that another event-loop worker's registry shares a mark for,
 * so that listing the locks gives the same names on every worker (their C
 * is the shared mark). No-op without shared marks or with a lock store. */
void lockreg_adopt_shared(struct lockreg *r);

/* Entries whose store is open between operations (LOCKREG_OPEN_STORES at
 * most, after each operation). Loop thread. */
size_t lockreg_open_stores(const struct lockreg *r);

/* Entries in creation order: first, then e->next. */
struct lockreg_entry *lockreg_first(struct lockreg *r);
size_t lockreg_count(const struct lockreg *r);

/* Work on a lock's store, serialized per lock. run() executes on a worker
 * thread with the entry's store and lock (st/lk NULL and err set when the
 * store could not be opened); it may read only the entry's immutable
 * fields. done() runs on the loop. Returns 0, or -1 / LOCKREG_FULL
 * (neither runs). */
struct lockreg_io {
	struct store *st;
	struct lock *lk;
	const char *err;             /* why st/lk are NULL */
	bool no_bucket;              /* ... because the embedded store has no
				      * such bucket (directory) */
};
typedef void (*lockreg_run_fn)(struct lockreg_entry *e, struct lockreg_io *io, void *arg);

/* From run(), after a store failure: 1 when st is S3 and its bucket does not
 * exist (a one-key listing answers 404 NoSuchBucket), else 0 (NULL and
 * directory stores too). Costs one request. */
bool lockreg_bucket_missing(struct store *st);
typedef void (*lockreg_done_fn)(struct lockreg_entry *e, void *arg);
int lockreg_submit(struct lockreg *r, struct lockreg_entry *e, lockreg_run_fn run,
		   lockreg_done_fn done, void *arg);

/* The freshness rule. A write is decided on knowledge of its lock that is
 * no older than refresh_ms, timed from the start of the listing that
 * produced it (a negative refresh_ms turns the rule off). When it is older,
 * the write waits for a load; writes that wait at the same time share one.
 * A write presenting T > C waits for a load that starts after it arrived
 * (lockreg_when_current with fresh set), which lists every epoch after C:
 * T is then known to exist and the true latest epoch is learned with it.
 * So a flood of unknown tokens costs one listing at a time per lock.
 *
 * 1 if e's knowledge obeys the rule at now_ms (monotonic), else 0. */
int lockreg_fresh_enough(const struct lockreg_entry *e, int64_t now_ms);

/* Calls cb(e, ok, arg) once e is loaded and fresh enough (the rule above).
 * Returns 1 when it already is (cb is not called), 0 when cb will be called
 * from the loop later (after a load: ok 1, or 0 with e->load_err), -1 on
 * ENOMEM, LOCKREG_FULL when LOCKREG_QUEUE_MAX requests already wait. For a strict lock a fresh load happens before every call (never
 * 1). Without jobs (unit tests) what is loaded is used as it is. */
typedef void (*lockreg_loaded_fn)(struct lockreg_entry *e, int ok, void *arg);
int lockreg_when_loaded(struct lockreg *r, struct lockreg_entry *e, lockreg_loaded_fn cb,
			void *arg);

/* The same, with fresh set: a load that starts after this call (a strict
 * route lists before every write), so never 1 when fresh. */
int lockreg_when_current(struct lockreg *r, struct lockreg_entry *e, bool fresh,
			 lockreg_loaded_fn cb, void *arg);

/* Marks the entry used now (a write or lock API call on it; the background
 * refresh below learns its pace from these). */
void lockreg_touch(struct lockreg_entry *e);
/* The same at now_ms (monotonic; pure). */
void lockreg_touch_at(struct lockreg_entry *e, int64_t now_ms);

/* The background refresh's choice (pure): 1 when e should be re-listed at
 * now_ms so that its next write need not wait, else 0. Every refresh_ms / 2
 * the registry re-lists the loaded locks this says yes to, those whose
 * knowledge is at least half the interval old. A lock earns it by its
 * pace: its last two uses at most refresh_ms apart and its last use at
 * most active_ms ago. A lock used more sparsely is listed when a write
 * needs it (writes that wait together share the listing): so at most
 * about three listings per write whatever the spread over locks, where
 * re-listing every recently used lock twice a second cost up to 60 per
 * write. It only decides when to list early: the freshness rule holds for
 * every write either way. */
int lockreg_refresh_wanted(const struct lockreg_entry *e, int64_t now_ms, long refresh_ms,
			   long active_ms);

/* Fills e's knowledge from a lock_status answer (loop thread). */
void lockreg_note_info(struct lockreg_entry *e, const struct lock_info *info);

/* Monotonic and wall clocks in ms (shared helpers). */
int64_t lockreg_mono_ms(void);
int64_t lockreg_wall_ms(void);

#endif
