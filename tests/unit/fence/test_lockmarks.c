/* test_lockmarks.c — the shared high-water mark table (proxy/fence/lockmarks.c):
 * a name is one mark, the table is bounded, and an atomic max raced by
 * threads ends at the highest epoch any of them offered and never goes
 * down while they race; two registries (two workers) sharing a table see
 * each other's newer epochs and released ones. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence/lockmarks.h"
#include "fence/lockreg.h"

static void test_names_and_bounds(void **state)
{
	struct lockmarks *t = lockmarks_new(2);
	struct lockmark *a, *b;
	char longname[200];

	(void)state;
	assert_non_null(t);
	a = lockmarks_get(t, "alpha");
	b = lockmarks_get(t, "beta");
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_equal(lockmarks_get(t, "alpha"), a);
	assert_null(lockmarks_get(t, "gamma")); /* full */
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_null(lockmarks_get(t, longname));
	assert_int_equal(lockmarks_count(t), 2);
	assert_int_equal(lockmark_read(a), 0);
	assert_int_equal(lockmark_raise(a, 5), 5);
	assert_int_equal(lockmark_raise(a, 3), 5); /* never down */
	assert_int_equal(lockmark_read(a), 5);
	assert_int_equal(lockmark_read(b), 0);
	assert_int_equal(lockmark_raise(NULL, 9), 9);
	assert_int_equal(lockmark_read(NULL), 0);
	assert_null(lockmarks_get(NULL, "alpha"));
	lockmarks_free(t);
	lockmarks_free(NULL);
}

enum { THREADS = 8, ROUNDS = 20000 };

struct racer {
	struct lockmarks *t;
	unsigned seed;
	uint64_t offered_max;
	bool went_down;
};

/* Each thread offers pseudo-random epochs to two marks (found by name, so
 * lookups race too) and checks that what it reads never decreases. */
static void *race(void *arg)
{
	struct racer *r = arg;
	struct lockmark *m = lockmarks_get(r->t, "shared");
	uint64_t seen = 0;

	for (int i = 0; i < ROUNDS; i++) {
		uint64_t e, now;

		r->seed = r->seed * 1103515245u + 12345u;
		e = (r->seed >> 8) % 1000000 + 1;
		if (e > r->offered_max)
			r->offered_max = e;
		if (lockmark_raise(m, e) < e)
			r->went_down = true;
		lockmark_raise(lockmarks_get(r->t, i % 2 ? "odd" : "even"), e);
		now = lockmark_read(m);
		if (now < seen)
			r->went_down = true;
		seen = now;
	}
	return NULL;
}

static void test_concurrent_max(void **state)
{
	static struct racer racers[THREADS];
	pthread_t th[THREADS];
	struct lockmarks *t = lockmarks_new(16);
	uint64_t want = 0;

	(void)state;
	for (int i = 0; i < THREADS; i++) {
		racers[i] = (struct racer){ t, (unsigned)(i * 7919 + 1), 0, false };
		assert_int_equal(pthread_create(&th[i], NULL, race, &racers[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_false(racers[i].went_down);
		if (racers[i].offered_max > want)
			want = racers[i].offered_max;
	}
	assert_int_equal(lockmark_read(lockmarks_get(t, "shared")), want);
	assert_true(lockmark_read(lockmarks_get(t, "odd")) <= want);
	assert_true(lockmark_read(lockmarks_get(t, "even")) <= want);
	assert_int_equal(lockmarks_count(t), 3);
	lockmarks_free(t);
}

/* Two registries (two workers' replicas) over one table: an epoch one of
 * them learns is the other's C at its next lookup of the lock. */
static void test_registries_share_marks(void **state)
{
	struct lockmarks *t = lockmarks_new(16);
	struct lockreg_config cfg;
	struct lockreg *a, *b;
	struct lockreg_entry *ea, *eb;
	char err[256];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.data_dir = "/nonexistent";
	cfg.marks = t;
	a = lockreg_new(&cfg, err, sizeof(err));
	b = lockreg_new(&cfg, err, sizeof(err));
	assert_non_null(a);
	assert_non_null(b);
	ea = lockreg_get(a, "orders", "orders", 1, NULL);
	eb = lockreg_get(b, "orders", "orders", 1, NULL);
	assert_non_null(ea);
	assert_non_null(eb);
	assert_int_equal(lockreg_raise(ea, 7), 1);
	assert_int_equal(lockreg_high_water(eb), 7);   /* any thread, at once */
	assert_ptr_equal(lockreg_get(b, "orders", "orders", 0, NULL), eb);
	assert_int_equal(eb->high_water, 7);            /* pulled at lookup */
	lockreg_note(eb, 9, LOCK_STATE_HELD, 0, "w2", 1000);
	assert_ptr_equal(lockreg_get(a, "orders", "orders", 0, NULL), ea);
	assert_int_equal(ea->high_water, 9);
	assert_int_equal(lockreg_raise(ea, 8), 0);      /* never down */
	assert_int_equal(lockmark_read(lockmarks_get(t, "orders")), 9);
	/* a release one worker served is known to the other at once */
	assert_false(lockreg_epoch_released(ea, 9));
	lockreg_note(eb, 9, LOCK_STATE_RELEASED, 0, "w2", 0);
	assert_true(lockreg_epoch_released(ea, 9));
	assert_false(lockreg_epoch_released(ea, 7));
	lockmark_note_released(lockmarks_get(t, "orders"), 4); /* never down */
	assert_int_equal(lockmark_released(lockmarks_get(t, "orders")), 9);
	lockreg_free(a);
	lockreg_free(b);
	lockmarks_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_and_bounds),
		cmocka_unit_test(test_concurrent_max),
		cmocka_unit_test(test_registries_share_marks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
