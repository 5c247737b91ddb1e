/* lock_keeper.h — a thread that keeps one lease alive.
 *
 * The keeper renews a granted lease every period on a thread of its own, so
 * the holder's deadline can be enforced by the holder's clock whatever a
 * request in flight does. While it runs it owns the struct lock (or the
 * renewer's context) and the struct lock_grant it was given; the caller
 * reads only what the keeper publishes (the deadline of the last confirmed
 * renewal, lost or not). The renewal is lock_renew on a struct lock, or
 * any function with its contract (a lease taken through a proxy's lock
 * API: fencectl --proxy run).
 *
 * A renewal that reports LOCK_LOST ends the keeper: on_lost runs once, on
 * the keeper thread. A renewal that fails otherwise (the store is down) is
 * retried after min(period, 1 s) and reported through on_retry; the deadline
 * is not extended, so a lease whose renewals keep failing runs out by the
 * holder's clock: lock_keeper_left_ms reaches 0 and the keeper declares the
 * lease lost at the deadline, with on_lost, without waiting for the store.
 * Every renewal is bounded by the current deadline (lock_renew), so
 * lock_keeper_stop is bounded too.
 *
 * The keeper thread starts with every signal blocked (signals belong to the
 * caller's threads). It never prints. */
#ifndef FENCE_LOCK_KEEPER_H
#define FENCE_LOCK_KEEPER_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"

struct lock_keeper;

struct lock_keeper_opts {
	int64_t period_ms;  /* between renewals; 0: ttl/3 */
	/* the lease is lost (why: a sentence); once, on the keeper thread */
	void (*on_lost)(const char *why, void *arg);
	/* a renewal failed and will be retried (err: what failed); may be NULL */
	void (*on_retry)(const char *err, void *arg);
	void *arg;
};

/* Starts keeping grant (from lock_acquire on lk). lk and grant are the
 * keeper's until lock_keeper_stop returns. Returns NULL with a message in err
 * (no thread could be started, or ENOMEM). */
struct lock_keeper *lock_keeper_start(struct lock *lk, struct lock_grant *grant,
				      const struct lock_keeper_opts *opts,
				      char *err, size_t errlen);

/* A renewal other than lock_renew, with its contract: renews grant, not
 * waiting past grant->deadline_mono_ms; LOCK_OK with the deadline moved on
 * (by time's monotonic clock), LOCK_LOST (err: why; the keeper ends), or
 * another code (err: what failed; retried). Called on the keeper thread. */
struct lock_keeper_renewer {
	enum lock_code (*renew)(void *ctx, struct lock_grant *grant, char *err, size_t errlen);
	void *ctx;                   /* the keeper's until lock_keeper_stop */
	const struct timesrc *time;  /* the clock of grant's deadline */
};

/* lock_keeper_start with renewer r (copied) instead of lock_renew on a lock. */
struct lock_keeper *lock_keeper_start_with(const struct lock_keeper_renewer *r,
					   struct lock_grant *grant,
					   const struct lock_keeper_opts *opts,
					   char *err, size_t errlen);

/* Milliseconds left until the holder's deadline of the last confirmed
 * renewal, by the lock's (the renewer's) monotonic clock; 0 once lost or past it. Safe from
 * any thread. */
int64_t lock_keeper_left_ms(struct lock_keeper *k);

/* 1 when the lease is lost (why, if not NULL, receives the reason), else 0.
 * Safe from any thread. */
int lock_keeper_lost(struct lock_keeper *k, char *why, size_t whylen);

/* Stops the thread (a renewal in flight ends by its deadline), frees the
 * keeper and hands lk and grant back. Returns 1 if the lease was lost,
 * else 0. Accepts NULL (returns 0). Never from the keeper's callbacks. */
int lock_keeper_stop(struct lock_keeper *k);

#endif
