/* lock_keeper.c — the renewal thread of one lease (lock_keeper.h).
 *
 * One mutex guards what the thread publishes (deadline, lost, why, stop);
 * the struct lock and the grant are touched by the thread only. The thread
 * sleeps on a condition variable in slices of at most KEEPER_SLICE_MS of
 * real time and judges every step by the lock's own clock (lk->time, or
 * the renewer's), so a stop is prompt and a test clock still decides when
 * renewals are due.
 * Deciding whether the lease is lost belongs to lock_renew; deciding what a
 * lost lease means for the work belongs to the caller. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lock_int.h"
#include "lock_keeper.h"

#define KEEPER_SLICE_MS 50
#define KEEPER_RETRY_MAX_MS 1000

struct lock_keeper {
	struct lock_keeper_renewer r;
	struct lock_grant *g;
	struct lock_keeper_opts opts;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	int64_t deadline;   /* of the last confirmed grant, lk->time's monotonic ms */
	int lost;
	int stop;
	char why[512];
};

static int64_t now_ms(const struct lock_keeper *k)
{
	return timesrc_mono_ms(k->r.time);
}

/* Waits (mu held) for up to ms of real time or until stopped. */
static void nap_locked(struct lock_keeper *k, int64_t ms)
{
	struct timespec ts;

	if (ms > KEEPER_SLICE_MS)
		ms = KEEPER_SLICE_MS;
	if (ms < 1)
		ms = 1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (!k->stop && pthread_cond_timedwait(&k->cv, &k->mu, &ts) == EINTR)
		;
}

/* Marks the lease lost (mu held); 1 if this call did, 0 if it already was. */
static int mark_lost_locked(struct lock_keeper *k, const char *why)
{
	if (k->lost)
		return 0;
	k->lost = 1;
	snprintf(k->why, sizeof(k->why), "%s", why && why[0] ? why : "the lock was lost");
	return 1;
}

/* Lost, or past the deadline the thread has not acted on yet (mu held). */
static int lost_locked(struct lock_keeper *k, char *why, size_t whylen)
{
	int lost = k->lost || now_ms(k) >= k->deadline;

	if (lost && why && whylen)
		snprintf(why, whylen, "%s", k->lost ? k->why :
			 "no confirmed renewal before the lease deadline");
	return lost;
}

static void *keeper_main(void *arg)
{
	struct lock_keeper *k = arg;
	int64_t period = k->opts.period_ms;
	int64_t next = now_ms(k) + period, retry = period < KEEPER_RETRY_MAX_MS ?
		period : KEEPER_RETRY_MAX_MS;
	char err[512], why[512];
	enum lock_code rc;
	int newly_lost;

	pthread_mutex_lock(&k->mu);
	while (!k->stop && !k->lost) {
		int64_t now = now_ms(k);

		if (now >= k->deadline) {
			newly_lost = mark_lost_locked(k, "no confirmed renewal before the lease deadline");
			snprintf(why, sizeof(why), "%s", k->why);
			pthread_mutex_unlock(&k->mu);
			if (newly_lost && k->opts.on_lost)
				k->opts.on_lost(why, k->opts.arg);
			return NULL;
		}
		if (now < next) {
			nap_locked(k, (next < k->deadline ? next : k->deadline) - now);
			continue;
		}
		pthread_mutex_unlock(&k->mu);

		err[0] = '\0';
		rc = k->r.renew(k->r.ctx, k->g, err, sizeof(err));

		pthread_mutex_lock(&k->mu);
		if (rc == LOCK_OK) {
			k->deadline = k->g->deadline_mono_ms;
			next = now_ms(k) + period;
		} else if (rc == LOCK_LOST) {
			newly_lost = mark_lost_locked(k, err);
			snprintf(why, sizeof(why), "%s", k->why);
			pthread_mutex_unlock(&k->mu);
			if (newly_lost && k->opts.on_lost)
				k->opts.on_lost(why, k->opts.arg);
			return NULL;
		} else {
			next = now_ms(k) + retry;
			if (k->opts.on_retry) {
				pthread_mutex_unlock(&k->mu);
				k->opts.on_retry(err[0] ? err : lock_strerror(rc), k->opts.arg);
				pthread_mutex_lock(&k->mu);
			}
		}
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

static enum lock_code renew_lock(void *ctx, struct lock_grant *grant, char *err, size_t errlen)
{
	return lock_renew(ctx, grant, err, errlen);
}

struct lock_keeper *lock_keeper_start(struct lock *lk, struct lock_grant *grant,
				      const struct lock_keeper_opts *opts,
				      char *err, size_t errlen)
{
	struct lock_keeper_renewer r = { renew_lock, lk, lk ? lk->time : NULL };

	if (!lk) {
		snprintf(err, errlen, "the keeper needs a lock");
		return NULL;
	}
	return lock_keeper_start_with(&r, grant, opts, err, errlen);
}

struct lock_keeper *lock_keeper_start_with(const struct lock_keeper_renewer *r,
					   struct lock_grant *grant,
					   const struct lock_keeper_opts *opts,
					   char *err, size_t errlen)
{
	struct lock_keeper *k;
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	if (!r || !r->renew || !r->time || !grant || !grant->epoch) {
		snprintf(err, errlen, "the keeper needs a granted lease");
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->r = *r;
	k->g = grant;
	if (opts)
		k->opts = *opts;
	if (k->opts.period_ms <= 0)
		k->opts.period_ms = grant->ttl_ms / 3 > 1 ? grant->ttl_ms / 3 : 1;
	k->deadline = grant->deadline_mono_ms;
	pthread_mutex_init(&k->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cv, &ca);
	pthread_condattr_destroy(&ca);

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&k->thread, NULL, keeper_main, k);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "cannot start the renewal thread: %s", strerror(rc));
		pthread_cond_destroy(&k->cv);
		pthread_mutex_destroy(&k->mu);
		free(k);
		return NULL;
	}
	return k;
}

int64_t lock_keeper_left_ms(struct lock_keeper *k)
{
	int64_t left;

	pthread_mutex_lock(&k->mu);
	left = k->lost ? 0 : k->deadline - now_ms(k);
	pthread_mutex_unlock(&k->mu);
	return left > 0 ? left : 0;
}

int lock_keeper_lost(struct lock_keeper *k, char *why, size_t whylen)
{
	int lost;

	pthread_mutex_lock(&k->mu);
	lost = lost_locked(k, why, whylen);
	pthread_mutex_unlock(&k->mu);
	return lost;
}

int lock_keeper_stop(struct lock_keeper *k)
{
	int lost;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	pthread_cond_broadcast(&k->cv);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->thread, NULL);
	lost = lost_locked(k, NULL, 0);
	pthread_cond_destroy(&k->cv);
	pthread_mutex_destroy(&k->mu);
	free(k);
	return lost;
}
