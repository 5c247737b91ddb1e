/* test_lockreg_fresh.c — the lock registry's freshness rule (lockreg.h)
 * with real I/O: a registry on a jobs pool and an event loop over a local
 * directory store, and the lock library acting on the same directory as
 * another party would (a worker acquiring, an operator breaking).
 *
 * What it shows: knowledge older than the refresh interval is never used
 * for a write, however long the lock was idle (issue 7, item 1: an idle
 * lock was decided on its old high-water mark); writes that wait together
 * share one load; a wait for a newer epoch never joins a load that may
 * have listed before it; with more locks than LOCKREG_OPEN_STORES, idle
 * stores are closed (descriptors stay bounded) and a closed one's lock
 * still learns a new epoch when it is next loaded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <event2/thread.h>

#include "fence/lockreg.h"
#include "http/jobs.h"
#include "lock/core/lock.h"
#include "lock/store/store.h"

#define REFRESH_MS 200

struct world {
	char dir[64];
	char bucket_dir[96];
	struct event_base *base;
	struct jobs *jobs;
	struct lockreg *reg;
	struct lockreg_entry *e;
	struct store *st;       /* the other party's view of the same bucket */
	struct lock *lk;
};

struct wait {
	int called;
	int ok;
	uint64_t high_water;    /* C when the callback ran */
};

static void waited(struct lockreg_entry *e, int ok, void *arg)
{
	struct wait *w = arg;

	w->called++;
	w->ok = ok;
	w->high_water = e->high_water;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Runs the loop until every wait in ws has been answered (5 s at most). */
static void run_until(struct world *w, struct wait **ws, size_t n)
{
	int64_t end = lockreg_mono_ms() + 5000;

	for (;;) {
		size_t done = 0;

		for (size_t i = 0; i < n; i++)
			done += ws[i]->called > 0;
		if (done == n)
			return;
		assert_true(lockreg_mono_ms() < end);
		event_base_loop(w->base, EVLOOP_ONCE);
	}
}

static int setup(void **state)
{
	struct world *w = calloc(1, sizeof(*w));
	struct lockreg_config cfg;
	struct store_config sc;
	struct lock_options lo;
	char err[256], url[128];
	const char *why = NULL;

	assert_non_null(w);
	snprintf(w->dir, sizeof(w->dir), "/tmp/fg-lockreg-fresh-XXXXXX");
	assert_non_null(mkdtemp(w->dir));
	snprintf(w->bucket_dir, sizeof(w->bucket_dir), "%s/bkt", w->dir);
	assert_int_equal(mkdir(w->bucket_dir, 0700), 0);
	assert_int_equal(evthread_use_pthreads(), 0);
	w->base = event_base_new();
	assert_non_null(w->base);
	w->jobs = jobs_new(w->base, 2);
	assert_non_null(w->jobs);
	memset(&cfg, 0, sizeof(cfg));
	cfg.base = w->base;
	cfg.jobs = w->jobs;
	cfg.data_dir = w->dir;
	cfg.refresh_ms = REFRESH_MS;
	cfg.active_ms = 1; /* no background refresh: the rule alone must hold */
	w->reg = lockreg_new(&cfg, err, sizeof(err));
	assert_non_null(w->reg);
	w->e = lockreg_get(w->reg, "bkt", "bkt", 1, &why);
	assert_non_null(w->e);

	memset(&sc, 0, sizeof(sc));
	snprintf(url, sizeof(url), "file://%s", w->bucket_dir);
	sc.url = url;
	w->st = store_open(&sc, err, sizeof(err));
	assert_non_null(w->st);
	memset(&lo, 0, sizeof(lo));
	lo.prefix = "locks/bkt/lock-";
	w->lk = lock_open(w->st, "bkt", &lo, err, sizeof(err));
	assert_non_null(w->lk);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;
	char cmd[128];

	jobs_free(w->jobs);
	lockreg_free(w->reg);
	event_base_free(w->base);
	lock_close(w->lk);
	store_close(w->st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", w->dir);
	assert_int_equal(system(cmd), 0);
	free(w);
	return 0;
}

static void acquire(struct world *w, uint64_t want_epoch)
{
	struct lock_acquire_opts ao = { .holder = "worker", .ttl_ms = 60000 };
	struct lock_grant g;
	char err[256];

	assert_int_equal(lock_acquire(w->lk, &ao, &g, NULL, err, sizeof(err)), LOCK_OK);
	assert_int_equal(g.epoch, want_epoch);
}

/* Waits (not fresh) once and returns C after the wait. */
static uint64_t load(struct world *w)
{
	struct wait wt = {0};
	struct wait *ws[] = { &wt };

	if (lockreg_when_current(w->reg, w->e, false, waited, &wt) == 1)
		return w->e->high_water;
	run_until(w, ws, 1);
	assert_int_equal(wt.ok, 1);
	return wt.high_water;
}

static void test_idle_lock_is_reread(void **state)
{
	struct world *w = *state;
	struct wait wt = {0};
	uint64_t broken = 0;
	char err[256];

	acquire(w, 1);
	assert_int_equal(load(w), 1);
	/* within the interval: decided on what is known, no wait */
	assert_int_equal(lockreg_when_current(w->reg, w->e, false, waited, &wt), 1);
	assert_int_equal(wt.called, 0);

	/* an operator breaks the lock on the store, the proxy hears nothing */
	assert_int_equal(lock_break(w->lk, "operator", &broken, err, sizeof(err)), LOCK_OK);
	assert_int_equal(broken, 2);
	nap_ms(REFRESH_MS + 100);
	/* the next write must not be decided on C = 1 */
	assert_false(lockreg_fresh_enough(w->e, lockreg_mono_ms()));
	assert_int_equal(load(w), 2);
}

static void test_waits_share_one_load(void **state)
{
	struct world *w = *state;
	struct wait a = {0}, b = {0}, c = {0};
	struct wait *ws[] = { &a, &b, &c };
	unsigned long before;

	acquire(w, 1);
	assert_int_equal(load(w), 1);
	nap_ms(REFRESH_MS + 50);
	before = w->e->st->requests;
	assert_int_equal(lockreg_when_current(w->reg, w->e, false, waited, &a), 0);
	assert_int_equal(lockreg_when_current(w->reg, w->e, false, waited, &b), 0);
	assert_int_equal(lockreg_when_current(w->reg, w->e, false, waited, &c), 0);
	run_until(w, ws, 3);
	assert_int_equal(a.ok + b.ok + c.ok, 3);
	/* one load: a listing after the cached key and a GET of the latest */
	assert_int_equal(w->e->st->requests - before, 2);
}

static void test_newer_epoch_waits_for_a_later_load(void **state)
{
	struct world *w = *state;
	struct wait stale = {0}, newer = {0};
	struct wait *ws[] = { &stale, &newer };
	unsigned long before;
	uint64_t broken = 0;
	char err[256];

	acquire(w, 1);
	assert_int_equal(load(w), 1);
	nap_ms(REFRESH_MS + 50);
	before = w->e->st->requests;
	assert_int_equal(lockreg_when_current(w->reg, w->e, false, waited, &stale), 0);
	/* epoch 2 appears while that load may already have listed */
	assert_int_equal(lock_break(w->lk, "operator", &broken, err, sizeof(err)), LOCK_OK);
	assert_int_equal(lockreg_when_current(w->reg, w->e, true, waited, &newer), 0);
	run_until(w, ws, 2);
	/* the fresh wait saw a load that started after it: epoch 2 */
	assert_int_equal(newer.ok, 1);
	assert_int_equal(newer.high_water, 2);
	/* two loads (list, get), and one read of the epoch mark: the second
	 * listing showed a new epoch, whose maker had raised the mark */
	assert_int_equal(w->e->st->requests - before, 5);
}

/* Issue 7, item 6: the requests waiting on one lock are bounded; the one
 * over the bound is told so at once (the caller answers 503 SlowDown). */
static void test_waiting_is_bounded(void **state)
{
	struct world *w = *state;
	struct wait *ws = calloc(LOCKREG_QUEUE_MAX, sizeof(*ws));
	struct wait **all = calloc(LOCKREG_QUEUE_MAX, sizeof(*all));
	struct wait extra = {0};

	assert_non_null(ws);
	assert_non_null(all);
	acquire(w, 1);
	for (size_t i = 0; i < LOCKREG_QUEUE_MAX; i++) {
		all[i] = &ws[i];
		assert_int_equal(lockreg_when_current(w->reg, w->e, false, waited, &ws[i]), 0);
	}
	assert_int_equal(lockreg_when_current(w->reg, w->e, false, waited, &extra),
			 LOCKREG_FULL);
	run_until(w, all, LOCKREG_QUEUE_MAX);
	assert_int_equal(extra.called, 0);
	assert_int_equal(w->e->n_waiters, 0);
	/* answered: room again */
	assert_int_equal(lockreg_when_current(w->reg, w->e, false, waited, &extra), 1);
	free(all);
	free(ws);
}

/* Issue 26: 10,000 locks ran the process out of descriptors (each kept its
 * store open). More locks than LOCKREG_OPEN_STORES: the open ones stay
 * bounded, and the least recently used lock, its store closed, reopens it
 * at its next load and sees an epoch minted meanwhile. */
static void test_open_stores_bounded(void **state)
{
	struct world *w = *state;
	enum { N = LOCKREG_OPEN_STORES + 36 };
	struct wait ws[N], *all[N];
	char name[16], dir[128];
	const char *why = NULL;

	memset(ws, 0, sizeof(ws));
	assert_int_equal(load(w), 0); /* bkt: the least recently used */
	assert_non_null(w->e->st);
	for (int i = 0; i < N; i++) {
		struct lockreg_entry *e;

		snprintf(name, sizeof(name), "b%03d", i);
		snprintf(dir, sizeof(dir), "%s/%s", w->dir, name);
		assert_int_equal(mkdir(dir, 0700), 0);
		e = lockreg_get(w->reg, name, name, 1, &why);
		assert_non_null(e);
		all[i] = &ws[i];
		assert_int_equal(lockreg_when_current(w->reg, e, true, waited, &ws[i]), 0);
	}
	run_until(w, all, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(ws[i].ok, 1);
	assert_true(lockreg_open_stores(w->reg) <= LOCKREG_OPEN_STORES);
	assert_null(w->e->st); /* closed while idle */
	acquire(w, 1);
	nap_ms(REFRESH_MS + 50);
	assert_int_equal(load(w), 1);
	assert_non_null(w->e->st);
	assert_true(lockreg_open_stores(w->reg) <= LOCKREG_OPEN_STORES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_idle_lock_is_reread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waits_share_one_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_epoch_waits_for_a_later_load, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_waiting_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_stores_bounded, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
