/* test_barrier.c — the epoch barrier state machine (proxy/fence/barrier.c):
 * writes of one epoch flow, a newer epoch waits for the older in-flight
 * writes, nothing below the accepted epoch ever goes (also waiters overtaken
 * by a still newer epoch), cancels and FIFO order. Events are fed by hand;
 * there is no clock and no I/O. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence/barrier.h"

static void test_same_epoch_flows(void **state)
{
	struct barrier b = BARRIER_INIT;

	(void)state;
	assert_true(barrier_idle(&b));
	assert_int_equal(barrier_admit(&b, 3, NULL, NULL), BARRIER_GO);
	assert_int_equal(barrier_admit(&b, 3, NULL, NULL), BARRIER_GO);
	assert_int_equal(b.n_inflight, 2);
	assert_int_equal(b.accepted, 3);
	barrier_done(&b, 3);
	barrier_done(&b, 3);
	assert_true(barrier_idle(&b));
	/* idle: a newer epoch goes at once, an older one is stale forever */
	assert_int_equal(barrier_admit(&b, 4, NULL, NULL), BARRIER_GO);
	barrier_done(&b, 4);
	assert_int_equal(barrier_admit(&b, 3, NULL, NULL), BARRIER_STALE);
	assert_int_equal(b.accepted, 4);
	assert_null(barrier_pop(&b));
	assert_true(barrier_idle(&b));
}

static void test_newer_waits_for_older(void **state)
{
	struct barrier b = BARRIER_INIT;
	struct barrier_waiter w1, w2;
	int c1 = 1, c2 = 2;

	(void)state;
	assert_int_equal(barrier_admit(&b, 5, NULL, NULL), BARRIER_GO);
	assert_int_equal(barrier_admit(&b, 5, NULL, NULL), BARRIER_GO);
	assert_int_equal(barrier_admit(&b, 6, &w1, &c1), BARRIER_WAIT);
	/* A is raised at admission: old-epoch writes are refused from now on */
	assert_int_equal(b.accepted, 6);
	assert_int_equal(barrier_admit(&b, 5, NULL, NULL), BARRIER_STALE);
	assert_int_equal(barrier_admit(&b, 6, &w2, &c2), BARRIER_WAIT);
	assert_null(barrier_pop(&b));
	barrier_done(&b, 5);
	assert_null(barrier_pop(&b)); /* one epoch-5 write still in flight */
	barrier_done(&b, 5);
	assert_ptr_equal(barrier_pop(&b), &w1); /* FIFO */
	assert_int_equal(w1.verdict, BARRIER_GO);
	assert_ptr_equal(w1.cookie, &c1);
	assert_ptr_equal(barrier_pop(&b), &w2);
	assert_int_equal(w2.verdict, BARRIER_GO);
	assert_null(barrier_pop(&b));
	assert_int_equal(b.n_inflight, 2);
	assert_int_equal(b.inflight_epoch, 6);
	/* more epoch-6 writes now flow without waiting */
	assert_int_equal(barrier_admit(&b, 6, NULL, NULL), BARRIER_GO);
	barrier_done(&b, 6);
	barrier_done(&b, 6);
	barrier_done(&b, 6);
	assert_true(barrier_idle(&b));
}

static void test_waiter_overtaken_is_stale(void **state)
{
	struct barrier b = BARRIER_INIT;
	struct barrier_waiter w6, w7;

	(void)state;
	assert_int_equal(barrier_admit(&b, 5, NULL, NULL), BARRIER_GO);
	assert_int_equal(barrier_admit(&b, 6, &w6, NULL), BARRIER_WAIT);
	assert_int_equal(barrier_admit(&b, 7, &w7, NULL), BARRIER_WAIT);
	/* epoch 6 can never go now: decided at once, before 5 finishes */
	assert_ptr_equal(barrier_pop(&b), &w6);
	assert_int_equal(w6.verdict, BARRIER_STALE);
	assert_null(barrier_pop(&b));
	barrier_done(&b, 5);
	assert_ptr_equal(barrier_pop(&b), &w7);
	assert_int_equal(w7.verdict, BARRIER_GO);
	barrier_done(&b, 7);
	assert_true(barrier_idle(&b));
}

static void test_cancel(void **state)
{
	struct barrier b = BARRIER_INIT;
	struct barrier_waiter w1, w2;

	(void)state;
	assert_int_equal(barrier_admit(&b, 1, NULL, NULL), BARRIER_GO);
	assert_int_equal(barrier_admit(&b, 2, &w1, NULL), BARRIER_WAIT);
	assert_int_equal(barrier_admit(&b, 2, &w2, NULL), BARRIER_WAIT);
	/* the first waiter's timeout fires: it is gone, A stays 2 */
	assert_int_equal(barrier_cancel(&b, &w1), 1);
	assert_int_equal(barrier_cancel(&b, &w1), 0);
	assert_int_equal(b.accepted, 2);
	assert_int_equal(barrier_admit(&b, 1, NULL, NULL), BARRIER_STALE);
	barrier_done(&b, 1);
	/* w2 was released (GO, counted) but its client left before the pop */
	assert_int_equal(b.n_inflight, 1);
	assert_int_equal(barrier_cancel(&b, &w2), 2);
	assert_int_equal(b.n_inflight, 0);
	assert_null(barrier_pop(&b));
	assert_true(barrier_idle(&b));
}

static void test_done_never_underflows(void **state)
{
	struct barrier b = BARRIER_INIT;

	(void)state;
	barrier_done(&b, 1);
	assert_int_equal(b.n_inflight, 0);
	assert_int_equal(barrier_admit(&b, 2, NULL, NULL), BARRIER_GO);
	barrier_done(&b, 1); /* wrong epoch: ignored */
	assert_int_equal(b.n_inflight, 1);
	barrier_done(&b, 2);
	assert_true(barrier_idle(&b));
}

/* A long random-ish run: the two promises hold after every event. */
static void test_invariants_over_a_run(void **state)
{
	struct barrier b = BARRIER_INIT;
	struct barrier_waiter ws[64];
	uint64_t going[256];
	size_t ngoing = 0, nw = 0;
	uint64_t max_forwarded = 0, x = 12345;
	int n_wait = 0, n_stale = 0, n_released = 0;

	(void)state;
	for (int step = 0; step < 2000; step++) {
		struct barrier_waiter *w;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		if ((x >> 33) % 3 != 0 && ngoing > 0) {
			size_t i = (size_t)((x >> 40) % ngoing);

			barrier_done(&b, going[i]);
			going[i] = going[--ngoing];
		} else if (ngoing < 200 && nw < 64) {
			uint64_t e = b.accepted + ((x >> 45) % 3) - (b.accepted > 1 ? 1 : 0);
			enum barrier_verdict v;

			if (e == 0)
				e = 1;
			v = barrier_admit(&b, e, &ws[nw], NULL);
			if (v == BARRIER_GO) {
				/* nothing older than e may still be in flight */
				for (size_t i = 0; i < ngoing; i++)
					assert_true(going[i] >= e);
				going[ngoing++] = e;
				if (e > max_forwarded)
					max_forwarded = e;
			} else if (v == BARRIER_WAIT) {
				nw++;
				n_wait++;
			} else {
				n_stale++;
			}
			assert_true(v != BARRIER_GO || e >= max_forwarded);
		}
		while ((w = barrier_pop(&b))) {
			if (w->verdict == BARRIER_GO) {
				for (size_t i = 0; i < ngoing; i++)
					assert_true(going[i] == w->epoch);
				assert_true(w->epoch >= max_forwarded);
				max_forwarded = w->epoch;
				going[ngoing++] = w->epoch;
				n_released++;
			} else {
				assert_int_equal(w->verdict, BARRIER_STALE);
				assert_true(w->epoch < b.accepted);
			}
			/* the slot may be reused once no list holds it */
			if (w == &ws[nw - 1] && w->verdict != BARRIER_WAIT)
				nw--;
		}
		if (!b.waiting && !b.ready)
			nw = 0;
		assert_int_equal(b.n_inflight, ngoing);
	}
	/* the run went through every path */
	assert_true(n_wait > 10 && n_stale > 10 && n_released > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_epoch_flows),
		cmocka_unit_test(test_newer_waits_for_older),
		cmocka_unit_test(test_waiter_overtaken_is_stale),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_done_never_underflows),
		cmocka_unit_test(test_invariants_over_a_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
