/* sim_http.c — HTTP mode in the simulation: workers take the lock with the
 * real library and write through one proxy whose lock-level check is
 * exact, so what is under test is the real epoch barrier (barrier.h) with
 * the upstream timeout and the grace of fencing_http.c. The downstream
 * applies a request some time after it arrives: mostly at once, sometimes
 * after the proxy gave up (504) but within the grace after the closed
 * connection, which is the assumption the README states for HTTP mode.
 * The checker flags a downstream apply of epoch e after one of epoch > e. */
#include "sim.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence/barrier.h"
#include "lock/core/lock.h"

#define UPSTREAM_TIMEOUT_MS 1000
#define GRACE_MS 2000
#define BARRIER_TIMEOUT_MS 5000
#define MAX_APPLIES 20000
#define MAX_TIMERS 256

struct hreq {
	struct barrier_waiter w;
	bool decided;
	enum barrier_verdict verdict;
};

struct happly {
	uint64_t epoch;
	int64_t at;
};

struct hworker {
	int id;
	struct sim_clock clk;
	struct store *st;
	struct lock *lk;
};

static struct {
	const struct sim_config *cfg;
	struct sim_report *rep;
	struct barrier b;
	struct happly applies[MAX_APPLIES];
	size_t napplies;
	struct { int64_t at; uint64_t epoch; } timers[MAX_TIMERS]; /* barrier releases */
	size_t ntimers;
	int running;
} H;

static uint64_t current_epoch(void)
{
	uint64_t c = 0;

	for (uint64_t e = 1; sim_s3_epoch_created(e) >= 0; e++)
		c = e;
	return c;
}

/* Decides the waiters the barrier released or overtook. */
static void drain(void)
{
	struct barrier_waiter *w;

	while ((w = barrier_pop(&H.b))) {
		struct hreq *r = w->cookie;

		r->decided = true;
		r->verdict = w->verdict;
	}
}

static void release_later(uint64_t epoch, int64_t at)
{
	if (H.ntimers < MAX_TIMERS) {
		H.timers[H.ntimers].at = at;
		H.timers[H.ntimers].epoch = epoch;
		H.ntimers++;
	} else {
		barrier_done(&H.b, epoch); /* no room: at once (counted as a bug) */
		drain();
	}
}

static void timer_actor(void *arg)
{
	(void)arg;
	while (H.running > 0 || H.ntimers > 0) {
		int64_t next = sim_now() + 20;

		for (size_t i = 0; i < H.ntimers; i++)
			if (H.timers[i].at < next)
				next = H.timers[i].at;
		sim_sleep(next - sim_now()); /* timers are added >= 2 s ahead */
		for (size_t i = 0; i < H.ntimers;) {
			if (H.timers[i].at <= sim_now()) {
				barrier_done(&H.b, H.timers[i].epoch);
				drain();
				H.timers[i] = H.timers[--H.ntimers];
			} else {
				i++;
			}
		}
	}
}

static void downstream_apply(uint64_t epoch, int64_t at)
{
	if (H.napplies < MAX_APPLIES)
		H.applies[H.napplies++] = (struct happly){ epoch, at };
}

/* One write through the proxy; returns the client's status. */
static int proxy_write(uint64_t t)
{
	struct hreq r;
	int64_t send, apply_at, answer_at, waited = 0;
	enum barrier_verdict v;

	sim_sleep(sim_between(1, 25)); /* to the proxy */
	if (t < current_epoch())
		return 409;
	memset(&r, 0, sizeof(r));
	v = barrier_admit(&H.b, t, &r.w, &r);
	drain();
	while (v == BARRIER_WAIT && !r.decided) {
		if (waited >= BARRIER_TIMEOUT_MS) {
			barrier_cancel(&H.b, &r.w);
			return 503;
		}
		sim_sleep(2);
		waited += 2;
	}
	if (v == BARRIER_WAIT)
		v = r.verdict;
	if (v == BARRIER_STALE)
		return 409;
	/* forwarded (counted in flight) */
	send = sim_now();
	apply_at = send + sim_between(1, 25);
	if (sim_chance(100)) /* slow: after the proxy gave up, within the grace */
		apply_at = send + UPSTREAM_TIMEOUT_MS + sim_between(1, GRACE_MS - 1);
	else
		apply_at += sim_between(0, 50);
	answer_at = apply_at + sim_between(1, 25);
	downstream_apply(t, apply_at);
	if (answer_at - send <= UPSTREAM_TIMEOUT_MS) {
		sim_sleep(answer_at - send);
		barrier_done(&H.b, t);
		drain();
		return 200;
	}
	sim_sleep(UPSTREAM_TIMEOUT_MS); /* 504: the connection is closed now */
	if (H.cfg->old_barrier) {
		barrier_done(&H.b, t);
		drain();
	} else {
		release_later(t, sim_now() + GRACE_MS);
	}
	return 504;
}

static void hworker_body(void *arg)
{
	struct hworker *w = arg;
	struct lock_acquire_opts ao = { .ttl_ms = H.cfg->ttl_ms };
	struct lock_grant g;
	char holder[32], err[256];

	snprintf(holder, sizeof(holder), "h%d", w->id);
	ao.holder = holder;
	while (!sim_over()) {
		int writes = (int)sim_between(1, 6);

		if (lock_acquire(w->lk, &ao, &g, NULL, err, sizeof(err)) != LOCK_OK) {
			sim_sleep(sim_between(50, 800));
			continue;
		}
		H.rep->grants++;
		for (int i = 0; i < writes && !sim_over(); i++) {
			int st;

			if (sim_chance(100))
				sim_sleep(sim_between(0, 2 * H.cfg->ttl_ms));
			st = proxy_write(g.epoch);
			H.rep->requests++;
			if (st == 200)
				H.rep->acks++;
			else
				H.rep->refused++;
		}
		if (sim_chance(500))
			lock_release(w->lk, &g, err, sizeof(err));
		sim_sleep(sim_between(10, 500));
	}
	H.running--;
}

static int by_time(const void *a, const void *b)
{
	const struct happly *x = a, *y = b;

	return (x->at > y->at) - (x->at < y->at);
}

void sim_http_run(const struct sim_config *cfg, struct sim_report *rep)
{
	struct lock_options lo = { .prefix = sim_s3_lock_prefix() };
	struct hworker *ws = calloc((size_t)cfg->workers, sizeof(*ws));
	uint64_t max = 0;
	char err[256];

	if (!ws)
		abort();
	memset(&H, 0, sizeof(H));
	H.cfg = cfg;
	H.rep = rep;
	H.b = (struct barrier)BARRIER_INIT;
	sim_s3_reset(cfg);
	for (int i = 0; i < cfg->workers; i++) {
		ws[i].id = i;
		sim_clock_init(&ws[i].clk, sim_between(-5000, 5000), sim_between(0, 100000));
		ws[i].st = sim_s3_open(true, &ws[i].clk);
		lo.time = &ws[i].clk.ts;
		ws[i].lk = lock_open(ws[i].st, "sim", &lo, err, sizeof(err));
		if (!ws[i].lk)
			abort();
		H.running++;
		sim_spawn(hworker_body, &ws[i]);
	}
	sim_spawn(timer_actor, NULL);
	sim_run(cfg->duration_ms);
	qsort(H.applies, H.napplies, sizeof(H.applies[0]), by_time);
	for (size_t i = 0; i < H.napplies; i++) {
		if (H.applies[i].epoch >= max) {
			max = H.applies[i].epoch;
			continue;
		}
		rep->http_reorders++;
		sim_violation(rep, "HTTP mode: the downstream applied epoch %" PRIu64 " at %" PRId64
			      " ms after epoch %" PRIu64, H.applies[i].epoch, H.applies[i].at, max);
	}
	for (int i = 0; i < cfg->workers; i++) {
		lock_close(ws[i].lk);
		store_close(ws[i].st);
	}
	free(ws);
}
