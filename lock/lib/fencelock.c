/* fencelock.c — the public API (fencelock.h) over the lock protocol
 * (lock.h), the stores (store.h) and the keeper (lock_keeper.h).
 *
 * A struct fence_lock owns one store, one struct lock and at most one
 * lease (the grant). It translates results and names; it decides nothing
 * the protocol does not already decide. The mutex guards the keeper pointer
 * and the lease fields that fence_epoch and fence_lease_left_ms read from
 * other threads; the grant, fl->lk and fl->st belong to the keeper while
 * it runs, which is why fence_status reads through a pair of its own. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fencelock.h"
#include "lock/core/lock.h"
#include "lock/core/lock_keeper.h"
#include "lock/store/store.h"
#include "lock/store/timesrc.h"

struct fence_lock {
	struct store *st;               /* the lease's: the keeper's while it runs */
	struct lock *lk;
	struct store *status_st;        /* fence_status's own, so that it never
					 * shares a struct lock with the keeper */
	struct lock *status_lk;
	char *holder;
	int64_t ttl_ms;
	int64_t wait_ms;
	pthread_mutex_t mu;
	/* under mu */
	struct lock_grant grant;
	uint64_t epoch;                 /* held epoch, 0 none */
	int lost;                       /* the lease ended without a release */
	struct lock_keeper *keeper;
	/* the user's on_lost, called from the keeper's thread */
	void (*on_lost)(struct fence_lock *fl, const char *why, void *arg);
	void *on_lost_arg;
};

static enum fence_result from_lock_code(enum lock_code rc)
{
	switch (rc) {
	case LOCK_OK: return FENCE_OK;
	case LOCK_HELD: return FENCE_HELD;
	case LOCK_LOST: return FENCE_LOST;
	case LOCK_ERR_TIMEOUT: return FENCE_TIMEOUT;
	case LOCK_ERR_STORE: return FENCE_ERR_STORE;
	case LOCK_ERR_INVALID: return FENCE_ERR_INVALID;
	case LOCK_ERR_UNSAFE: return FENCE_ERR_UNSAFE;
	case LOCK_ERR_NOMEM: return FENCE_ERR_NOMEM;
	}
	return FENCE_ERR_STORE;
}

const char *fence_strerror(enum fence_result res)
{
	switch (res) {
	case FENCE_OK: return "ok";
	case FENCE_HELD: return "held by someone else";
	case FENCE_LOST: return "the lease is lost";
	case FENCE_TIMEOUT: return "timed out waiting for the lock";
	case FENCE_ERR_STORE: return "store error";
	case FENCE_ERR_INVALID: return "invalid argument";
	case FENCE_ERR_UNSAFE: return "the store ignores conditional writes";
	case FENCE_ERR_NOMEM: return "out of memory";
	}
	return "unknown result";
}

struct fence_lock *fence_open(const char *store_url, const char *name,
			      const struct fence_options *opts, char *err, size_t errlen)
{
	struct store_config sc;
	struct fence_lock *fl;

	if (!store_url || !name) {
		snprintf(err, errlen, "fence_open needs a store URL and a lock name");
		return NULL;
	}
	fl = calloc(1, sizeof(*fl));
	if (!fl) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&fl->mu, NULL);
	if (opts && opts->holder && !(fl->holder = strdup(opts->holder))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	fl->ttl_ms = opts ? opts->ttl_ms : 0;
	fl->wait_ms = opts ? opts->wait_ms : 0;
	if (fl->ttl_ms < 0 || fl->wait_ms < 0) {
		snprintf(err, errlen, "ttl_ms and wait_ms must not be negative");
		goto fail;
	}
	memset(&sc, 0, sizeof(sc));
	sc.url = store_url;
	sc.endpoint = opts ? opts->endpoint : NULL;
	sc.region = opts ? opts->region : NULL;
	sc.path_style = -1;
	fl->st = store_open(&sc, err, errlen);
	if (!fl->st)
		goto fail;
	fl->lk = lock_open(fl->st, name, NULL, err, errlen);
	if (!fl->lk)
		goto fail;
	fl->status_st = store_open(&sc, err, errlen);
	if (!fl->status_st)
		goto fail;
	fl->status_lk = lock_open(fl->status_st, name, NULL, err, errlen);
	if (!fl->status_lk)
		goto fail;
	return fl;
fail:
	fence_close(fl);
	return NULL;
}

/* Takes the keeper out of fl (under mu) and stops it; records a loss. */
static void stop_keeper(struct fence_lock *fl)
{
	struct lock_keeper *k;

	pthread_mutex_lock(&fl->mu);
	k = fl->keeper;
	fl->keeper = NULL;
	pthread_mutex_unlock(&fl->mu);
	if (!k)
		return;
	if (lock_keeper_stop(k)) {
		pthread_mutex_lock(&fl->mu);
		fl->lost = 1;
		fl->epoch = 0;
		pthread_mutex_unlock(&fl->mu);
	}
}

void fence_close(struct fence_lock *fl)
{
	if (!fl)
		return;
	stop_keeper(fl);
	lock_close(fl->status_lk);
	store_close(fl->status_st);
	lock_close(fl->lk);
	store_close(fl->st);
	free(fl->holder);
	pthread_mutex_destroy(&fl->mu);
	free(fl);
}

enum fence_result fence_acquire(struct fence_lock *fl, uint64_t *epoch,
				char *err, size_t errlen)
{
	struct lock_acquire_opts ao = { .holder = fl->holder, .ttl_ms = fl->ttl_ms,
					.wait_ms = fl->wait_ms };
	struct lock_grant g;
	struct lock_info who;
	enum lock_code rc;

	if (fence_epoch(fl)) {
		snprintf(err, errlen, "lock \"%s\": this handle already holds epoch %" PRIu64,
			 lock_name(fl->lk), fl->epoch);
		return FENCE_ERR_INVALID;
	}
	stop_keeper(fl); /* the keeper of a lease that ran out */
	memset(&who, 0, sizeof(who));
	rc = lock_acquire(fl->lk, &ao, &g, &who, err, errlen);
	if ((rc == LOCK_HELD || rc == LOCK_ERR_TIMEOUT) && who.epoch)
		snprintf(err, errlen, "lock \"%s\" is held by \"%s\" at epoch %" PRIu64
			 " for at most another %" PRId64 " ms (store time)%s", lock_name(fl->lk),
			 who.payload.leader_id, who.epoch, who.remaining_ms,
			 rc == LOCK_ERR_TIMEOUT ? "; waiting ran out" : "");
	if (rc != LOCK_OK)
		return from_lock_code(rc);
	pthread_mutex_lock(&fl->mu);
	fl->grant = g;
	fl->epoch = g.epoch;
	fl->lost = 0;
	pthread_mutex_unlock(&fl->mu);
	if (epoch)
		*epoch = g.epoch;
	return FENCE_OK;
}

enum fence_result fence_renew(struct fence_lock *fl, char *err, size_t errlen)
{
	enum lock_code rc;

	pthread_mutex_lock(&fl->mu);
	if (fl->keeper || !fl->epoch) {
		pthread_mutex_unlock(&fl->mu);
		snprintf(err, errlen, "lock \"%s\": %s", lock_name(fl->lk),
			 fl->keeper ? "the keeper renews this lease" : "no lease is held");
		return FENCE_ERR_INVALID;
	}
	pthread_mutex_unlock(&fl->mu);
	rc = lock_renew(fl->lk, &fl->grant, err, errlen);
	if (rc == LOCK_LOST) {
		pthread_mutex_lock(&fl->mu);
		fl->lost = 1;
		fl->epoch = 0;
		pthread_mutex_unlock(&fl->mu);
	}
	return from_lock_code(rc);
}

static void keeper_lost(const char *why, void *arg)
{
	struct fence_lock *fl = arg;

	if (fl->on_lost)
		fl->on_lost(fl, why, fl->on_lost_arg);
}

enum fence_result fence_keep(struct fence_lock *fl,
			     void (*on_lost)(struct fence_lock *fl, const char *why, void *arg),
			     void *arg, char *err, size_t errlen)
{
	struct lock_keeper_opts ko = { .on_lost = keeper_lost, .arg = fl };
	struct lock_keeper *k;

	if (fl->keeper || !fence_epoch(fl)) {
		snprintf(err, errlen, "lock \"%s\": %s", lock_name(fl->lk),
			 fl->keeper ? "the keeper already runs" : "no lease is held");
		return FENCE_ERR_INVALID;
	}
	fl->on_lost = on_lost;
	fl->on_lost_arg = arg;
	k = lock_keeper_start(fl->lk, &fl->grant, &ko, err, errlen);
	if (!k)
		return FENCE_ERR_NOMEM;
	pthread_mutex_lock(&fl->mu);
	fl->keeper = k;
	pthread_mutex_unlock(&fl->mu);
	return FENCE_OK;
}

enum fence_result fence_release(struct fence_lock *fl, char *err, size_t errlen)
{
	enum lock_code rc;

	stop_keeper(fl);
	pthread_mutex_lock(&fl->mu);
	if (!fl->epoch) {
		int lost = fl->lost;

		pthread_mutex_unlock(&fl->mu);
		snprintf(err, errlen, "lock \"%s\": %s", lock_name(fl->lk),
			 lost ? "the lease was lost before the release" : "no lease is held");
		return lost ? FENCE_LOST : FENCE_ERR_INVALID;
	}
	fl->epoch = 0; /* no write may start on it from here */
	pthread_mutex_unlock(&fl->mu);
	rc = lock_release(fl->lk, &fl->grant, err, errlen);
	if (rc == LOCK_LOST) {
		pthread_mutex_lock(&fl->mu);
		fl->lost = 1;
		pthread_mutex_unlock(&fl->mu);
	}
	return from_lock_code(rc);
}

/* ms left by the holder's clock (mu held); 0 when nothing is held. */
static int64_t left_locked(struct fence_lock *fl)
{
	int64_t left;

	if (!fl->epoch || fl->lost)
		return 0;
	if (fl->keeper)
		return lock_keeper_left_ms(fl->keeper);
	left = fl->grant.deadline_mono_ms - timesrc_mono_ms(timesrc_system());
	return left > 0 ? left : 0;
}

uint64_t fence_epoch(struct fence_lock *fl)
{
	uint64_t e;

	pthread_mutex_lock(&fl->mu);
	e = left_locked(fl) > 0 ? fl->epoch : 0;
	pthread_mutex_unlock(&fl->mu);
	return e;
}

int64_t fence_lease_left_ms(struct fence_lock *fl)
{
	int64_t left;

	pthread_mutex_lock(&fl->mu);
	left = left_locked(fl);
	pthread_mutex_unlock(&fl->mu);
	return left;
}

enum fence_result fence_status(struct fence_lock *fl, struct fence_status *st,
			       char *err, size_t errlen)
{
	struct lock_info info;
	enum lock_code rc;

	memset(st, 0, sizeof(*st));
	rc = lock_status(fl->status_lk, &info, err, errlen);
	if (rc != LOCK_OK)
		return from_lock_code(rc);
	st->epoch = info.epoch;
	switch (info.state) {
	case LOCK_STATE_FREE: st->state = FENCE_STATE_FREE; break;
	case LOCK_STATE_HELD: st->state = FENCE_STATE_HELD; break;
	case LOCK_STATE_LAPSED: st->state = FENCE_STATE_LAPSED; break;
	case LOCK_STATE_RELEASED: st->state = FENCE_STATE_RELEASED; break;
	case LOCK_STATE_UNREADABLE: st->state = FENCE_STATE_UNREADABLE; break;
	}
	if (info.state != LOCK_STATE_FREE && info.state != LOCK_STATE_UNREADABLE)
		snprintf(st->holder, sizeof(st->holder), "%s", info.payload.leader_id);
	st->remaining_ms = info.remaining_ms;
	return FENCE_OK;
}
