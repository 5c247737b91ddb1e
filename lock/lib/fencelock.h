/* fencelock.h — libfencelock's public API: a fencing lock on S3 (or a local
 * directory) for workers that must not run a task twice.
 *
 *   struct fence_lock *fl = fence_open("s3://bucket", "invoices", NULL, err, sizeof(err));
 *   if (fence_acquire(fl, &epoch, err, sizeof(err)) == FENCE_OK) {
 *           fence_keep(fl, on_lost, NULL, err, sizeof(err));   // renew in the background
 *           ... every write carries epoch as its fencing token
 *               (X-Fencing-Token: <epoch>, or x-amz-meta-fencing-token) ...
 *           fence_release(fl, err, sizeof(err));
 *   }
 *   fence_close(fl);
 *
 * A lock is a series of epoch files "<root>locks/<name>/lock-NNNNNNNNNN.json"
 * created with If-None-Match: "*"; the epoch is a strictly increasing fencing
 * token. A lease is judged two ways: by the store's clock (Last-Modified +
 * ttl against the answer's Date) for everyone else, and by the holder's own
 * monotonic clock (send time + ttl - a safety margin) for the holder, which
 * stops at its deadline whatever the store says. fence_lease_left_ms is that
 * deadline: check it before each write; a fencegate proxy in front of the
 * data refuses the writes of a holder that was too late anyway.
 *
 * Stores: "s3://BUCKET[/ROOT]" with credentials from the environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, or the
 * AWS_PROFILE of ~/.aws/credentials), endpoint from fence_options or
 * AWS_ENDPOINT_URL; "file:///DIR" for one machine.
 *
 * Threads: one struct fence_lock is used by one thread at a time, except
 * fence_epoch and fence_lease_left_ms, which any thread may call while the
 * keeper runs. The library never prints and never installs signal handlers;
 * errors are sentences in the caller's err buffer. Link: pkg-config
 * --cflags --libs libfencelock. */
#ifndef FENCEGATE_FENCELOCK_H
#define FENCEGATE_FENCELOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum fence_result {
	FENCE_OK = 0,
	FENCE_HELD,          /* someone else holds a live lease */
	FENCE_LOST,          /* our epoch is no longer the lock's, or the
			      * deadline passed: stop working, do not write */
	FENCE_TIMEOUT,       /* wait_ms ran out while the lock stayed held */
	FENCE_ERR_STORE,     /* the store failed (I/O, 5xx, denied): see err */
	FENCE_ERR_INVALID,   /* a bad argument, or a call out of order */
	FENCE_ERR_UNSAFE,    /* the store ignores the conditions locks need */
	FENCE_ERR_NOMEM,
};

/* A short lowercase description ("held by someone else"). Never NULL. */
const char *fence_strerror(enum fence_result res);

enum fence_state {
	FENCE_STATE_FREE = 0,    /* never taken */
	FENCE_STATE_HELD,        /* a live lease */
	FENCE_STATE_LAPSED,      /* the lease ran out by the store's clock */
	FENCE_STATE_RELEASED,    /* released or broken */
	FENCE_STATE_UNREADABLE,  /* the epoch file cannot be parsed: held until
				  * it is old enough */
};

#define FENCE_HOLDER_MAX 256

struct fence_options {
	const char *holder;     /* who we are (leaderId); NULL: "<hostname>-<pid>" */
	int64_t ttl_ms;         /* the lease; 0: 30000 */
	int64_t wait_ms;        /* fence_acquire: 0 tries once, > 0 waits up to
				 * this long for a held lock to come free */
	const char *endpoint;   /* S3 endpoint URL; NULL: AWS_ENDPOINT_URL, else AWS */
	const char *region;     /* NULL: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1 */
};

struct fence_status {
	uint64_t epoch;                   /* the latest epoch, 0 when free */
	enum fence_state state;
	char holder[FENCE_HOLDER_MAX];    /* its leaderId, "" when unknown */
	int64_t remaining_ms;             /* lease left by the store's clock
					   * (HELD, UNREADABLE), else 0 */
};

struct fence_lock;

/* Opens lock NAME on the store a URL names; opts may be NULL (the defaults
 * above; copied). Returns NULL with a message in err that names what to fix
 * (a bad name, a missing credential). No request is sent yet. */
struct fence_lock *fence_open(const char *store_url, const char *name,
			      const struct fence_options *opts, char *err, size_t errlen);

/* Stops the keeper (without releasing: an unreleased lease runs out by
 * itself) and frees. Accepts NULL. */
void fence_close(struct fence_lock *fl);

/* Takes the lock: FENCE_OK with *epoch, the fencing token. FENCE_HELD (or
 * FENCE_TIMEOUT after waiting) with err naming the holder and its time left.
 * FENCE_ERR_INVALID if this handle already holds a lease. */
enum fence_result fence_acquire(struct fence_lock *fl, uint64_t *epoch,
				char *err, size_t errlen);

/* Renews the held lease now (by hand; fence_keep does it for you):
 * FENCE_OK extends the deadline; FENCE_LOST ends the lease;
 * FENCE_ERR_STORE leaves the deadline where it was (retry before it).
 * FENCE_ERR_INVALID while the keeper runs or when nothing is held. */
enum fence_result fence_renew(struct fence_lock *fl, char *err, size_t errlen);

/* Starts the keeper: a thread (every signal blocked) that renews every
 * ttl/3 until fence_release or fence_close. When the lease is lost (a newer
 * epoch, a failed condition, or no confirmed renewal before the deadline),
 * on_lost (may be NULL) runs once, on the keeper's thread; fence_epoch is
 * 0 from then on. */
enum fence_result fence_keep(struct fence_lock *fl,
			     void (*on_lost)(struct fence_lock *fl, const char *why, void *arg),
			     void *arg, char *err, size_t errlen);

/* Stops the keeper and marks the lease released, so the next holder need
 * not wait for it to run out. FENCE_LOST if it was lost meanwhile. */
enum fence_result fence_release(struct fence_lock *fl, char *err, size_t errlen);

/* The epoch this handle holds, 0 when none (not acquired, released, lost,
 * or past the deadline). Any thread. */
uint64_t fence_epoch(struct fence_lock *fl);

/* Milliseconds until the holder's deadline, by this process's monotonic
 * clock; 0 when nothing is held. Any thread. */
int64_t fence_lease_left_ms(struct fence_lock *fl);

/* Reads the lock's state from the store (one list and one read). */
enum fence_result fence_status(struct fence_lock *fl, struct fence_status *st,
			       char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
