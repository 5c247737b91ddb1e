/* test_fencelock.c — the public API (lock/lib/fencelock.h) and the keeper under
 * it (lock/core/lock_keeper.c) against a real local-directory store and the real
 * clock, with leases short enough (600 ms: deadline 300 ms after each
 * renewal, a renewal every 200 ms) that the whole file runs in a few
 * seconds. A second handle on the same directory plays the other worker; a
 * break through the protocol API (lock.h) plays the operator. The keeper
 * also runs a renewer of its caller's (a lease through a proxy's lock API,
 * as fencectl --proxy run has it), scripted here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lock/lib/fencelock.h"
#include "lock/core/lock.h"
#include "lock/core/lock_keeper.h"
#include "lock/store/store.h"
#include "lock/store/timesrc.h"

#define TTL_MS 600
#define KEEP_TTL_MS 2000

static char dir[64];
static char url[96];

static void nap(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/fencelock-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(url, sizeof(url), "file://%s", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct fence_lock *open_as(const char *name, const char *holder, int64_t ttl)
{
	struct fence_options o = { .holder = holder, .ttl_ms = ttl };
	char err[512];
	struct fence_lock *fl = fence_open(url, name, &o, err, sizeof(err));

	if (!fl)
		fail_msg("fence_open: %s", err);
	return fl;
}

static void open_refuses_bad_arguments(void **state)
{
	struct fence_options neg = { .ttl_ms = -1 };
	char err[512];

	assert_null(fence_open(url, "no/slash", NULL, err, sizeof(err)));
	assert_true(err[0] != '\0');
	assert_null(fence_open(NULL, "x", NULL, err, sizeof(err)));
	assert_null(fence_open(url, "x", &neg, err, sizeof(err)));
	assert_non_null(strstr(err, "negative"));
}

static void acquire_hold_release_next(void **state)
{
	struct fence_lock *a = open_as("job1", "worker-a", 30000);
	struct fence_lock *b = open_as("job1", "worker-b", 30000);
	struct fence_status st;
	uint64_t e = 0, e2 = 0;
	char err[512];

	assert_int_equal(fence_status(b, &st, err, sizeof(err)), FENCE_OK);
	assert_int_equal(st.state, FENCE_STATE_FREE);
	assert_int_equal(st.epoch, 0);
	assert_int_equal(fence_epoch(a), 0);
	assert_int_equal(fence_lease_left_ms(a), 0);

	assert_int_equal(fence_acquire(a, &e, err, sizeof(err)), FENCE_OK);
	assert_int_equal(e, 1);
	assert_int_equal(fence_epoch(a), 1);
	assert_true(fence_lease_left_ms(a) > 20000 && fence_lease_left_ms(a) <= 30000);
	/* a second acquire on the same handle is a mistake, not a new epoch */
	assert_int_equal(fence_acquire(a, &e2, err, sizeof(err)), FENCE_ERR_INVALID);

	assert_int_equal(fence_acquire(b, &e2, err, sizeof(err)), FENCE_HELD);
	assert_non_null(strstr(err, "worker-a"));
	assert_int_equal(fence_status(b, &st, err, sizeof(err)), FENCE_OK);
	assert_int_equal(st.state, FENCE_STATE_HELD);
	assert_int_equal(st.epoch, 1);
	assert_string_equal(st.holder, "worker-a");
	assert_true(st.remaining_ms > 0);

	assert_int_equal(fence_renew(a, err, sizeof(err)), FENCE_OK);
	assert_int_equal(fence_release(a, err, sizeof(err)), FENCE_OK);
	assert_int_equal(fence_epoch(a), 0);
	assert_int_equal(fence_release(a, err, sizeof(err)), FENCE_ERR_INVALID);
	assert_int_equal(fence_renew(a, err, sizeof(err)), FENCE_ERR_INVALID);

	assert_int_equal(fence_acquire(b, &e2, err, sizeof(err)), FENCE_OK);
	assert_int_equal(e2, 2);
	assert_int_equal(fence_release(b, err, sizeof(err)), FENCE_OK);
	fence_close(a);
	fence_close(b);
}

static void deadline_without_renewal_ends_the_lease(void **state)
{
	struct fence_lock *a = open_as("job2", "worker-a", TTL_MS);
	uint64_t e = 0;
	char err[512];

	assert_int_equal(fence_acquire(a, &e, err, sizeof(err)), FENCE_OK);
	assert_true(fence_lease_left_ms(a) > 0 && fence_lease_left_ms(a) <= 300);
	nap(400); /* past send + ttl - margin (600 - 300) */
	assert_int_equal(fence_epoch(a), 0);
	assert_int_equal(fence_lease_left_ms(a), 0);
	/* the holder's clock said stop: a late renewal is refused too */
	assert_int_equal(fence_renew(a, err, sizeof(err)), FENCE_LOST);
	fence_close(a);
}

struct lost_note {
	int calls;
	char why[512];
};

static void note_lost(struct fence_lock *fl, const char *why, void *arg)
{
	struct lost_note *n = arg;

	snprintf(n->why, sizeof(n->why), "%s", why);
	__atomic_add_fetch(&n->calls, 1, __ATOMIC_SEQ_CST); /* read by the test's thread */
}

static void keeper_keeps_the_lease_past_its_ttl(void **state)
{
	/* a longer lease than the other cases: renewals every ttl/3 must keep
	 * it under a loaded machine (ASan, make -j), not only on an idle one */
	struct fence_lock *a = open_as("job3", "worker-a", KEEP_TTL_MS);
	struct fence_lock *b = open_as("job3", "worker-b", KEEP_TTL_MS);
	struct lost_note n = { 0 };
	uint64_t e = 0, e2 = 0;
	char err[512];

	assert_int_equal(fence_keep(a, note_lost, &n, err, sizeof(err)), FENCE_ERR_INVALID);
	assert_int_equal(fence_acquire(a, &e, err, sizeof(err)), FENCE_OK);
	assert_int_equal(fence_keep(a, note_lost, &n, err, sizeof(err)), FENCE_OK);
	assert_int_equal(fence_keep(a, note_lost, &n, err, sizeof(err)), FENCE_ERR_INVALID);
	assert_int_equal(fence_renew(a, err, sizeof(err)), FENCE_ERR_INVALID);
	nap(2 * KEEP_TTL_MS);
	assert_int_equal(fence_epoch(a), e);
	assert_true(fence_lease_left_ms(a) > 0);
	assert_int_equal(fence_acquire(b, &e2, err, sizeof(err)), FENCE_HELD);
	assert_int_equal(n.calls, 0);
	assert_int_equal(fence_release(a, err, sizeof(err)), FENCE_OK);
	assert_int_equal(fence_acquire(b, &e2, err, sizeof(err)), FENCE_OK);
	assert_int_equal(e2, e + 1);
	fence_close(b); /* unreleased: runs out by itself */
	fence_close(a);
	assert_int_equal(n.calls, 0);
}

static void keeper_reports_a_break(void **state)
{
	struct fence_lock *a = open_as("job4", "worker-a", TTL_MS);
	struct store_config sc = { .url = url };
	struct lost_note n = { 0 };
	struct store *st;
	struct lock *op;
	uint64_t e = 0, broken = 0;
	char err[512];
	int waited;

	assert_int_equal(fence_acquire(a, &e, err, sizeof(err)), FENCE_OK);
	assert_int_equal(fence_keep(a, note_lost, &n, err, sizeof(err)), FENCE_OK);
	st = store_open(&sc, err, sizeof(err));
	assert_non_null(st);
	op = lock_open(st, "job4", NULL, err, sizeof(err));
	assert_non_null(op);
	assert_int_equal(lock_break(op, "operator", &broken, err, sizeof(err)), LOCK_OK);
	assert_int_equal(broken, e + 1);
	for (waited = 0; __atomic_load_n(&n.calls, __ATOMIC_SEQ_CST) == 0 && waited < 2000; waited += 20)
		nap(20);
	assert_int_equal(n.calls, 1);
	assert_true(n.why[0] != '\0');
	assert_int_equal(fence_epoch(a), 0);
	assert_int_equal(fence_lease_left_ms(a), 0);
	assert_int_equal(fence_release(a, err, sizeof(err)), FENCE_LOST);
	lock_close(op);
	store_close(st);
	fence_close(a);
	assert_int_equal(n.calls, 1);
}

/* A renewer of the caller's: OK, OK (each moving the deadline on), a
 * failure (retried), then LOCK_LOST, whose reason the keeper reports. */
struct scripted {
	int calls, retries, lost;
	char why[128];
};

static enum lock_code scripted_renew(void *ctx, struct lock_grant *g, char *err, size_t errlen)
{
	struct scripted *sc = ctx;
	static const enum lock_code script[] = { LOCK_OK, LOCK_OK, LOCK_ERR_STORE, LOCK_LOST };
	enum lock_code rc = script[sc->calls < 3 ? sc->calls : 3];

	sc->calls++;
	if (rc == LOCK_OK)
		g->deadline_mono_ms = timesrc_mono_ms(timesrc_system()) + 2000;
	snprintf(err, errlen, "%s", rc == LOCK_LOST ? "epoch 8 took over" : "proxy down");
	return rc;
}

static void scripted_retry(const char *err, void *arg)
{
	((struct scripted *)arg)->retries++;
}

static void scripted_lost(const char *why, void *arg)
{
	struct scripted *sc = arg;

	sc->lost++;
	snprintf(sc->why, sizeof(sc->why), "%s", why);
}

static void keeper_runs_a_callers_renewer(void **state)
{
	struct scripted sc = { 0 };
	struct lock_keeper_renewer r = { scripted_renew, &sc, timesrc_system() };
	struct lock_keeper_opts ko = { .period_ms = 100, .on_lost = scripted_lost,
				       .on_retry = scripted_retry, .arg = &sc };
	struct lock_grant g = { .epoch = 7, .ttl_ms = 600 };
	struct lock_keeper *k;
	char err[256], why[256];
	int i;

	g.deadline_mono_ms = timesrc_mono_ms(timesrc_system()) + 2000;
	r.renew = NULL;
	assert_null(lock_keeper_start_with(&r, &g, &ko, err, sizeof(err)));
	r.renew = scripted_renew;
	k = lock_keeper_start_with(&r, &g, &ko, err, sizeof(err));
	if (!k)
		fail_msg("lock_keeper_start_with: %s", err);
	for (i = 0; i < 250 && !lock_keeper_lost(k, NULL, 0); i++)
		nap(20);
	assert_true(lock_keeper_lost(k, why, sizeof(why)));
	assert_string_equal(why, "epoch 8 took over");
	assert_int_equal(lock_keeper_stop(k), 1);
	assert_int_equal(sc.calls, 4);
	assert_int_equal(sc.retries, 1);
	assert_int_equal(sc.lost, 1);
	assert_string_equal(sc.why, "epoch 8 took over");
}

static void strerror_names_every_result(void **state)
{
	static const enum fence_result all[] = {
		FENCE_OK, FENCE_HELD, FENCE_LOST, FENCE_TIMEOUT, FENCE_ERR_STORE,
		FENCE_ERR_INVALID, FENCE_ERR_UNSAFE, FENCE_ERR_NOMEM,
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		assert_string_not_equal(fence_strerror(all[i]), "unknown result");
	assert_string_equal(fence_strerror((enum fence_result)99), "unknown result");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(open_refuses_bad_arguments),
		cmocka_unit_test(acquire_hold_release_next),
		cmocka_unit_test(deadline_without_renewal_ends_the_lease),
		cmocka_unit_test(keeper_keeps_the_lease_past_its_ttl),
		cmocka_unit_test(keeper_reports_a_break),
		cmocka_unit_test(keeper_runs_a_callers_renewer),
		cmocka_unit_test(strerror_names_every_result),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
