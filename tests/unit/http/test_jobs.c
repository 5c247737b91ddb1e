/* test_jobs.c — the worker pool: every job runs off the loop thread, every
 * completion runs on it, exactly once, also when the pool is freed with
 * jobs still queued; with one pool shared by two loops, each job completes
 * on the loop that submitted it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "http/jobs.h"

struct probe {
	int ran_on_worker;
	int done_calls;
	pthread_t done_thread;
	int *remaining;
	struct event_base *base;
};

static void probe_run(void *arg)
{
	struct probe *p = arg;

	p->ran_on_worker = jobs_worker_index() >= 0;
}

static void probe_done(void *arg)
{
	struct probe *p = arg;

	p->done_calls++;
	p->done_thread = pthread_self();
	if (--*p->remaining == 0)
		event_base_loopbreak(p->base);
}

static void test_jobs_run_and_complete(void **state)
{
	enum { N = 200 };
	static struct probe probes[N];
	struct event_base *base;
	struct jobs *jobs;
	int remaining = N, i;

	(void)state;
	assert_int_equal(evthread_use_pthreads(), 0);
	base = event_base_new();
	jobs = jobs_new(base, 3);
	assert_non_null(jobs);
	assert_int_equal(jobs_worker_index(), -1);
	for (i = 0; i < N; i++) {
		probes[i].remaining = &remaining;
		probes[i].base = base;
		assert_int_equal(jobs_submit(jobs, probe_run, probe_done, &probes[i]), 0);
	}
	event_base_dispatch(base);
	assert_int_equal(remaining, 0);
	for (i = 0; i < N; i++) {
		assert_true(probes[i].ran_on_worker);
		assert_int_equal(probes[i].done_calls, 1);
		assert_true(pthread_equal(probes[i].done_thread, pthread_self()));
	}
	assert_int_equal(jobs_pending(jobs), 0);
	jobs_free(jobs);
	event_base_free(base);
}

static void test_jobs_free_delivers_queued(void **state)
{
	enum { N = 50 };
	static struct probe probes[N];
	struct event_base *base;
	struct jobs *jobs;
	int remaining = N + 1, i; /* never reaches 0: no loopbreak needed */

	(void)state;
	base = event_base_new();
	jobs = jobs_new(base, 1);
	for (i = 0; i < N; i++) {
		probes[i].remaining = &remaining;
		probes[i].base = base;
		assert_int_equal(jobs_submit(jobs, probe_run, probe_done, &probes[i]), 0);
	}
	jobs_free(jobs);
	for (i = 0; i < N; i++)
		assert_int_equal(probes[i].done_calls, 1);
	assert_null(jobs_new(base, 0));
	event_base_free(base);
}

/* Two event loops on their own threads share one pool: every job completes
 * on the loop (thread) that submitted it. */
struct loop_side {
	struct jobs_pool *pool;
	struct probe probes[100];
	int remaining;
	pthread_t thread;
	int ok;
};

static void *loop_main(void *arg)
{
	struct loop_side *ls = arg;
	struct event_base *base = event_base_new();
	struct jobs *jobs = base ? jobs_attach(ls->pool, base) : NULL;
	int i;

	if (!jobs)
		return NULL;
	ls->remaining = 100;
	for (i = 0; i < 100; i++) {
		ls->probes[i].remaining = &ls->remaining;
		ls->probes[i].base = base;
		if (jobs_submit(jobs, probe_run, probe_done, &ls->probes[i]) < 0)
			return NULL;
	}
	event_base_dispatch(base);
	jobs_free(jobs);
	event_base_free(base);
	ls->ok = ls->remaining == 0;
	for (i = 0; i < 100; i++)
		ls->ok = ls->ok && ls->probes[i].ran_on_worker && ls->probes[i].done_calls == 1 &&
			 pthread_equal(ls->probes[i].done_thread, pthread_self());
	return NULL;
}

static void test_jobs_shared_pool_completes_on_submitter(void **state)
{
	static struct loop_side sides[2];
	struct jobs_pool *pool = jobs_pool_new(2);
	int i;

	(void)state;
	assert_non_null(pool);
	for (i = 0; i < 2; i++) {
		sides[i].pool = pool;
		assert_int_equal(pthread_create(&sides[i].thread, NULL, loop_main, &sides[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(sides[i].thread, NULL);
		assert_true(sides[i].ok);
	}
	jobs_pool_free(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs_run_and_complete),
		cmocka_unit_test(test_jobs_free_delivers_queued),
		cmocka_unit_test(test_jobs_shared_pool_completes_on_submitter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
