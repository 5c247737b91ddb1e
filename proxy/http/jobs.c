/* jobs.c — a fixed pool of threads for the proxy's blocking calls (lock
 * library, store backends), shared by every event loop, and one completion
 * queue per loop. Completions go back to the submitting loop through one
 * event per job, activated from the pool thread (libevent's pthread support
 * makes event_active() safe across threads). No priorities, no
 * cancellation: a job, once queued, runs. */
#include <pthread.h>
#include <stdlib.h>

#include <event2/event.h>

#include "jobs.h"

struct job {
	job_fn run;
	job_fn done;
	void *arg;
	struct event *ev;
	struct jobs *jobs;
	struct job *next;
};

struct jobs_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, *tail;   /* under mu */
	int stopping;              /* under mu */
	int nthreads;
	pthread_t *threads;
};

/* One loop's queue. States: open (submits accepted), closing (jobs_free:
 * refused, waiting for the outstanding ones). */
struct jobs {
	struct jobs_pool *pool;
	struct jobs_pool *owned;   /* jobs_new: freed with the queue */
	struct event_base *base;
	unsigned pending;          /* under pool->mu */
	int closing;               /* under pool->mu */
	/* loop thread only: jobs whose done() has not run yet, and an idle
	 * timer that keeps the loop from exiting while some are out */
	unsigned outstanding;
	struct event *keepalive;
};

struct worker_start {
	struct jobs_pool *pool;
	int index;
};

static _Thread_local int worker_index = -1;

int jobs_worker_index(void)
{
	return worker_index;
}

static void job_finished(evutil_socket_t fd, short what, void *arg)
{
	struct job *job = arg;

	(void)fd;
	(void)what;
	if (--job->jobs->outstanding == 0)
		event_del(job->jobs->keepalive);
	job->done(job->arg);
	event_free(job->ev);
	free(job);
}

static void *worker_main(void *p)
{
	struct worker_start *ws = p;
	struct jobs_pool *pool = ws->pool;
	struct job *job;

	worker_index = ws->index;
	free(ws);
	for (;;) {
		pthread_mutex_lock(&pool->mu);
		while (!pool->head && !pool->stopping)
			pthread_cond_wait(&pool->cv, &pool->mu);
		job = pool->head;
		if (!job) {
			pthread_mutex_unlock(&pool->mu);
			return NULL;
		}
		pool->head = job->next;
		if (!pool->head)
			pool->tail = NULL;
		pthread_mutex_unlock(&pool->mu);

		job->run(job->arg);

		pthread_mutex_lock(&pool->mu);
		job->jobs->pending--;
		pthread_mutex_unlock(&pool->mu);
		event_active(job->ev, EV_READ, 1);
	}
}

static void keepalive_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

struct jobs_pool *jobs_pool_new(int nthreads)
{
	struct jobs_pool *pool;
	int i;

	if (nthreads < 1 || nthreads > 64)
		return NULL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->cv, NULL);
	pool->threads = calloc((size_t)nthreads, sizeof(pthread_t));
	if (!pool->threads)
		goto fail;
	for (i = 0; i < nthreads; i++) {
		struct worker_start *ws = malloc(sizeof(*ws));

		if (!ws)
			goto fail;
		ws->pool = pool;
		ws->index = i;
		if (pthread_create(&pool->threads[i], NULL, worker_main, ws) != 0) {
			free(ws);
			goto fail;
		}
		pool->nthreads++;
	}
	return pool;
fail:
	jobs_pool_free(pool);
	return NULL;
}

void jobs_pool_free(struct jobs_pool *pool)
{
	int i;

	if (!pool)
		return;
	pthread_mutex_lock(&pool->mu);
	pool->stopping = 1;
	pthread_cond_broadcast(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
	for (i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_mutex_destroy(&pool->mu);
	pthread_cond_destroy(&pool->cv);
	free(pool->threads);
	free(pool);
}

struct jobs *jobs_attach(struct jobs_pool *pool, struct event_base *base)
{
	struct jobs *jobs;

	if (!pool || !base)
		return NULL;
	jobs = calloc(1, sizeof(*jobs));
	if (!jobs)
		return NULL;
	jobs->pool = pool;
	jobs->base = base;
	jobs->keepalive = event_new(base, -1, EV_PERSIST, keepalive_tick, NULL);
	if (!jobs->keepalive) {
		free(jobs);
		return NULL;
	}
	return jobs;
}

struct jobs *jobs_new(struct event_base *base, int nthreads)
{
	struct jobs_pool *pool = jobs_pool_new(nthreads);
	struct jobs *jobs = jobs_attach(pool, base);

	if (!jobs) {
		jobs_pool_free(pool);
		return NULL;
	}
	jobs->owned = pool;
	return jobs;
}

int jobs_submit(struct jobs *jobs, job_fn run, job_fn done, void *arg)
{
	struct jobs_pool *pool = jobs->pool;
	struct job *job = calloc(1, sizeof(*job));

	if (!job)
		return -1;
	job->run = run;
	job->done = done;
	job->arg = arg;
	job->jobs = jobs;
	job->ev = event_new(jobs->base, -1, 0, job_finished, job);
	if (!job->ev) {
		free(job);
		return -1;
	}
	pthread_mutex_lock(&pool->mu);
	if (jobs->closing || pool->stopping) {
		pthread_mutex_unlock(&pool->mu);
		event_free(job->ev);
		free(job);
		return -1;
	}
	if (pool->tail)
		pool->tail->next = job;
	else
		pool->head = job;
	pool->tail = job;
	jobs->pending++;
	pthread_cond_signal(&pool->cv);
	pthread_mutex_unlock(&pool->mu);
	if (jobs->outstanding++ == 0) {
		struct timeval hour = { 3600, 0 };

		event_add(jobs->keepalive, &hour);
	}
	return 0;
}

unsigned jobs_pending(const struct jobs *jobs)
{
	pthread_mutex_t *mu = &jobs->pool->mu;
	unsigned n;

	pthread_mutex_lock(mu);
	n = jobs->pending;
	pthread_mutex_unlock(mu);
	return n;
}

void jobs_free(struct jobs *jobs)
{
	if (!jobs)
		return;
	pthread_mutex_lock(&jobs->pool->mu);
	jobs->closing = 1;
	pthread_mutex_unlock(&jobs->pool->mu);
	/* the pool runs what is queued; deliver the completions here */
	while (jobs->outstanding)
		event_base_loop(jobs->base, EVLOOP_ONCE);
	event_free(jobs->keepalive);
	jobs_pool_free(jobs->owned);
	free(jobs);
}
