/* lock.h — the fencing lock protocol on an object store.
 *
 * A lock NAME is a series of epoch files under a key prefix (by default
 * "ROOT/locks/NAME/lock-"): epoch E is "<prefix>%010llu.json". The highest
 * epoch file is the lock's state:
 *
 *   LOCK_STATE_FREE        no epoch file at all (latest epoch 0)
 *   LOCK_STATE_HELD        latest not "expired" and its lease not lapsed:
 *                          its holder owns epoch E, the fencing token
 *   LOCK_STATE_LAPSED      latest not "expired" but Last-Modified+validity is
 *                          past by the server's clock: anyone may take E+1
 *   LOCK_STATE_RELEASED    latest marked "expired" (released or broken)
 *   LOCK_STATE_UNREADABLE  latest payload unparseable: counts as held until
 *                          Last-Modified + unreadable_hold_ms, then lapsed
 *
 * Epochs only go up, even when the epoch files are deleted out of band: each
 * lock keeps an epoch mark (lock_mark_key_of: outside the lock-file prefix)
 * that acquire and break raise after creating an epoch, and mint above.
 * Lease time is the server's: a lease starts at the
 * epoch file's Last-Modified and is judged against the Date of the same
 * answer, rounded against the contender. The holder keeps its own deadline on
 * the monotonic clock from the moment it sent the create or renew.
 *
 * Library: never prints, fills err buffers. Not thread-safe per struct lock. */
#ifndef FENCE_LOCK_H
#define FENCE_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock/store/store.h"
#include "lock/store/timesrc.h"

enum lock_code {
	LOCK_OK = 0,
	LOCK_HELD,          /* answer: someone else holds a live lease */
	LOCK_LOST,          /* answer: our epoch is no longer the latest, or our
			     * write's condition failed: stop working */
	LOCK_ERR_STORE,     /* the store failed (I/O, 5xx, denied); see err */
	LOCK_ERR_INVALID,   /* bad name, bad argument */
	LOCK_ERR_UNSAFE,    /* the backend ignores If-None-Match (check) */
	LOCK_ERR_TIMEOUT,   /* --wait ran out while the lock stayed held */
	LOCK_ERR_NOMEM,
};

const char *lock_strerror(enum lock_code code);

enum lock_state {
	LOCK_STATE_FREE = 0,
	LOCK_STATE_HELD,
	LOCK_STATE_LAPSED,
	LOCK_STATE_RELEASED,
	LOCK_STATE_UNREADABLE,
};

const char *lock_state_name(enum lock_state st); /* "free", "held", ... */

/* The user metadata (x-amz-meta-fencing-client) naming the authenticated
 * client that last wrote an epoch file, stamped by the proxy (its lock API
 * and its lock-file guard): a lease is renewed or released by the client
 * that holds it, anyone else needs the "break" permission. The payload's
 * leaderId and nonce cannot serve: anyone who may read the file may copy
 * them. */
#define LOCK_CLIENT_META "fencing-client"

#define LOCK_NAME_MAX   128
#define LOCK_HOLDER_MAX 256
#define LOCK_NONCE_MAX  64

/* A lock file's payload. Unknown fields are ignored. */
struct lock_payload {
	char leader_id[LOCK_HOLDER_MAX]; /* "leaderId" */
	int64_t validity_ms;             /* "validityMs" or "validity_ms" */
	bool expired;                    /* "expired" */
	char nonce[LOCK_NONCE_MAX];      /* "nonce", "" if absent */
	char host[LOCK_HOLDER_MAX];
	long long pid;
	long long renewals;
};

/* Parses a payload (our format, the TypeScript client's, the Java design's
 * validity_ms). Returns 0, or -1 if it is not a JSON object with leaderId
 * (string) and a non-negative validityMs/validity_ms. */
int lock_payload_parse(const char *json, size_t len, struct lock_payload *out);

/* Serializes a payload; returns malloc'd JSON or NULL. */
char *lock_payload_format(const struct lock_payload *p);

/* Name check: [A-Za-z0-9._-]{1,128}, not "." or "..". Returns 1 if valid. */
int lock_name_valid(const char *name);

/* Lease arithmetic, pure. Milliseconds of lease left, as a contender must
 * judge it: last_modified and server_date are the server's one-second
 * stamps; the lease counts as live for up to one extra second.
 * <= 0 means lapsed. */
int64_t lock_lease_remaining_ms(int64_t last_modified_s, int64_t validity_ms,
				int64_t server_date_s);

/* The state of one epoch file. */
struct lock_info {
	uint64_t epoch;                 /* 0: no epoch file (FREE) */
	enum lock_state state;
	struct lock_payload payload;    /* valid unless UNREADABLE/FREE */
	char key[1100];
	char etag[STORE_ETAG_MAX];
	int64_t last_modified;          /* Unix seconds (server) */
	int64_t server_date;            /* Unix seconds (server) */
	int64_t remaining_ms;           /* lease left (HELD/UNREADABLE), else 0 */
	char client[LOCK_HOLDER_MAX];   /* its writer stamp (LOCK_CLIENT_META), "" none */
	uint64_t mark;                  /* lock_status: the highest epoch ever minted as
					 * far as known — the epoch mark object and what
					 * this struct lock saw, never below epoch. Above
					 * epoch when files were deleted: no new epoch may
					 * be at or below it */
};

/* What the holder keeps after acquiring. */
struct lock_grant {
	uint64_t epoch;                 /* the fencing token */
	char key[1100];
	char etag[STORE_ETAG_MAX];      /* of our last write: renew/release If-Match */
	char nonce[LOCK_NONCE_MAX];
	char holder[LOCK_HOLDER_MAX];
	char client[LOCK_HOLDER_MAX];   /* the writer stamp (LOCK_CLIENT_META) of our
					 * writes, kept by renewals; "" none */
	int64_t ttl_ms;
	int64_t renewals;
	int64_t deadline_mono_ms;       /* send time + ttl - safety margin */
	int64_t expires_at_ms;          /* server Last-Modified*1000 + ttl (informative) */
};

struct lock_options {
	const char *prefix;             /* NULL: "<store root>locks/<name>/lock-" */
	const struct timesrc *time;     /* NULL: timesrc_system() */
	int64_t unreadable_hold_ms;     /* 0: 60000 */
	int64_t safety_margin_ms;       /* 0: lock_margin_default(ttl) */
	int max_create_retries;         /* 409/ambiguous create retries; 0: 5 */
};

/* The holder's safety margin for a lease of ttl_ms when none is set:
 * min(1000 + ttl/10, ttl/2). A holder's deadline is the time it sent the
 * write that granted the lease, plus ttl, less the margin. */
int64_t lock_margin_default(int64_t ttl_ms);

struct lock;

/* Opens lock NAME on st (not owned: it must outlive the lock). Returns NULL
 * with a message in err for an invalid name or on ENOMEM. */
struct lock *lock_open(struct store *st, const char *name,
		       const struct lock_options *opts, char *err, size_t errlen);
void lock_close(struct lock *lk); /* accepts NULL */

/* The store lk uses from now on (not owned, as in lock_open): a caller that
 * closes idle stores to bound its descriptors reopens one and hands it
 * over. Everything lk knows (the latest epoch, the mark, the floor) stays.
 * NULL until the next call: lk must not be used meanwhile. */
void lock_set_store(struct lock *lk, struct store *st);

const char *lock_name(const struct lock *lk);
const char *lock_prefix(const struct lock *lk);

/* The key of epoch e: "<prefix>%010llu.json". */
void lock_epoch_key(const struct lock *lk, uint64_t epoch, char *out, size_t outlen);

/* Parses a key under the prefix back to its epoch; 0 if it is not an epoch file. */
uint64_t lock_key_epoch(const struct lock *lk, const char *key);

/* The latest epoch number only: lists the prefix, following every page,
 * starting after the latest key this struct lock has seen (so the steady
 * state costs one request). 0 when there is no epoch file. */
enum lock_code lock_latest_epoch(struct lock *lk, uint64_t *epoch,
				 char *err, size_t errlen);

/* The latest epoch and its state (list + get), and info->mark (the mark
 * object is read the first time, and again when the latest file vanished). */
enum lock_code lock_status(struct lock *lk, struct lock_info *info,
			   char *err, size_t errlen);

/* ---- the epoch mark (lock_mark.c) ----------------------------------------- */

/* The S3 error code of a proxy's 403 to a client's write of an epoch mark
 * (it keeps the marks of the locks it guards itself); lock_mark_raise
 * takes it as done. */
#define LOCK_MARK_RESERVED_CODE "EpochMarkReserved"

/* The key of the epoch mark of the lock whose epoch files are under prefix:
 * its last "locks/" segment replaced by "fencing-marks/", a final "lock-"
 * dropped, "high-water.json" appended ("locks/NAME/lock-" →
 * "fencing-marks/NAME/high-water.json"); without a "locks/" segment,
 * "fencing-marks/<prefix>high-water.json". Pure. Returns 0, or -1 if it
 * does not fit in out. */
int lock_mark_key_of(const char *prefix, char *out, size_t outlen);

/* This lock's mark key. */
const char *lock_mark_key(const struct lock *lk);

/* Reads the mark (0 when there is none) into *mark (may be NULL) and the
 * lock's cache. LOCK_ERR_STORE also for a mark that is not {"epoch":N}
 * (fail closed: it may have been higher than every file). */
enum lock_code lock_mark_read(struct lock *lk, uint64_t *mark, char *err, size_t errlen);

/* Raises the mark to epoch unless it is already there or above: never
 * lowers it (conditional writes, re-read on a lost race). LOCK_OK also when
 * a proxy answered LOCK_MARK_RESERVED_CODE; LOCK_ERR_* with err. */
enum lock_code lock_mark_raise(struct lock *lk, uint64_t epoch, char *err, size_t errlen);

struct lock_acquire_opts {
	const char *holder;   /* leaderId; NULL: "<hostname>-<pid>" */
	const char *client;   /* the writer stamp for the epoch file (LOCK_CLIENT_META);
			       * NULL: none */
	int64_t ttl_ms;       /* lease; 0: 30000 */
	int64_t wait_ms;      /* 0: try once; >0: retry with backoff until then */
	/* while waiting, before each pause: who holds it and how long we have
	 * waited (for a progress line); may be NULL */
	void (*on_wait)(const struct lock_info *holder, int64_t waited_ms, void *arg);
	void *on_wait_arg;
};

/* Acquire: reads the mark, then the latest epoch file; if nobody holds
 * it, creates epoch max(latest, mark, any epoch this struct lock saw) + 1,
 * then raises the mark to it (lock_mark.c says why in this order). LOCK_OK
 * and *grant filled only after both writes; LOCK_HELD with *holder_info (may be
 * NULL) naming the holder and its time left; LOCK_ERR_TIMEOUT when waiting
 * ran out; LOCK_ERR_STORE on failure. */
enum lock_code lock_acquire(struct lock *lk, const struct lock_acquire_opts *ao,
			    struct lock_grant *grant, struct lock_info *holder_info,
			    char *err, size_t errlen);

/* Renew (heartbeat): rewrites the epoch file If-Match grant->etag, then
 * lists for a newer epoch; updates grant->etag, renewals and deadline. If
 * grant->etag is "" (another process renewing by epoch number) it reads the
 * file first and takes the deadline from the lease left by the store's
 * clock. Judged by the holder's deadline (grant->deadline_mono_ms): no
 * request is sent or waited for past it (store.h deadline_mono_ms), and an
 * answer after it is LOCK_LOST whatever the store said. LOCK_LOST also if a
 * newer epoch exists (before or after the rewrite), the file is expired, or
 * the condition failed. LOCK_ERR_STORE when the rewrite landed but the
 * check for a newer epoch failed: grant->etag is updated, the deadline is
 * not extended. */
enum lock_code lock_renew(struct lock *lk, struct lock_grant *grant,
			  char *err, size_t errlen);

/* Release: rewrites the epoch file with "expired": true, conditionally like
 * renew. LOCK_LOST as for renew. */
enum lock_code lock_release(struct lock *lk, struct lock_grant *grant,
			    char *err, size_t errlen);

/* Break a stuck lock: creates the next epoch (above the latest file and the
 * mark) already "expired" (never deletes), then raises the mark to it.
 * *new_epoch receives it. */
enum lock_code lock_break(struct lock *lk, const char *holder, uint64_t *new_epoch,
			  char *err, size_t errlen);

/* Deletes epoch files older than the newest keep (keep >= 1); never the
 * latest. *deleted receives the count. */
enum lock_code lock_gc(struct lock *lk, unsigned keep, unsigned *deleted,
		       char *err, size_t errlen);

/* The backend self-test (lock_selftest.c), capability by capability. */
#define LOCK_SELFTEST_RACERS 8  /* writers in each round of the race */
#define LOCK_SELFTEST_ROUNDS 3

struct backend_report {
	unsigned probed;                /* enum backend_cap bits measured */
	unsigned caps;                  /* of those, the ones that held */
	enum dialect_etag etag_form;    /* the If-Match spelling that works
					 * (QUOTED preferred), AUTO if none */
	char seen[CAP_COUNT][96];       /* per capability index: what was seen */
};

/* Measures every condition fencegate uses on a probe key under
 * probe_prefix (NULL: the store's root): create with If-None-Match "*"
 * (the answer must carry Date: CAP_DATE), create again (412:
 * CAP_PUT_IF_NONE_MATCH), If-Match quoted then bare, a wrong ETag (412)
 * and the object's (2xx) (CAP_PUT_IF_MATCH_QUOTED, _BARE), a copy and a
 * multipart completion onto it with If-None-Match "*" where the store has
 * store_ext_ops probe_copy/probe_complete (else not probed), DELETE
 * If-Match a wrong ETag (412 and kept: CAP_DELETE_IF_MATCH), and with
 * race_cfg (NULL: no race) LOCK_SELFTEST_RACERS writers, each on a store
 * opened from race_cfg, racing one If-None-Match "*" create for
 * LOCK_SELFTEST_ROUNDS rounds (one winner each: CAP_RACE).
 * LOCK_OK when the probe ran, whatever it found (rep says); LOCK_ERR_STORE
 * when the store failed otherwise (err says). Sets st->etag_form to the
 * spelling that works. Removes what it wrote in every case. */
enum lock_code lock_probe_store(struct store *st, const struct store_config *race_cfg,
				const char *probe_prefix, struct backend_report *rep,
				char *err, size_t errlen);

/* The first capability op needs that rep lacks, 0 none. Not probed counts
 * as lacking, except the race for BACKEND_OP_LOCK (probed only with a
 * configuration). */
unsigned lock_probe_missing(const struct backend_report *rep, enum backend_op op);

/* What the probe saw of cap ("412 to a second create"), or "not probed".
 * Points into rep. */
const char *lock_report_seen(const struct backend_report *rep, unsigned cap);

/* The self-test's verdict for the lock protocol (no race: it needs a
 * configuration): lock_probe_store, then LOCK_ERR_UNSAFE with err naming
 * the condition the backend ignores if lock_probe_missing(LOCK) says one;
 * LOCK_ERR_STORE when it fails otherwise. Operations the lock does not
 * need (DELETE, copy, multipart) do not fail it: the proxy decides those
 * per operation. */
enum lock_code lock_check_store(struct store *st, const char *probe_prefix,
				char *err, size_t errlen);
/* The same, and what the probe saw in *rep (filled unless LOCK_ERR_STORE
 * or LOCK_ERR_INVALID). */
enum lock_code lock_check_store_report(struct store *st, const char *probe_prefix,
				       struct backend_report *rep, char *err, size_t errlen);

/* Every lock under "<root>locks/": names found by listing, malloc'd array of
 * malloc'd strings; caller frees each and the array. */
enum lock_code lock_list_names(struct store *st, char ***names, size_t *n,
			       char *err, size_t errlen);

#endif
