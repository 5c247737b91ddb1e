/* jobs.c — a fixed pool of worker threads for the proxy's blocking calls
 * (lock library, store backends). Completions go back to the event loop
 * through one event per job, activated from the worker (libevent's
 * pthread support makes event_active() safe across threads). No priorities,
 * no cancellation: a job, once queued, runs. */
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

struct jobs {
	struct event_base *base;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, *tail;
	unsigned pending;
	int stopping;
	int nthreads;
	pthread_t *threads;
	/* loop thread only: jobs whose done() has not run yet, and an idle
	 * timer that keeps the loop from exiting while some are out */
	unsigned outstanding;
	struct event *keepalive;
};

struct worker_start {
	struct jobs *jobs;
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
	struct jobs *jobs = ws->jobs;
	struct job *job;

	worker_index = ws->index;
	free(ws);
	for (;;) {
		pthread_mutex_lock(&jobs->mu);
		while (!jobs->head && !jobs->stopping)
			pthread_cond_wait(&jobs->cv, &jobs->mu);
		job = jobs->head;
		if (!job) {
			pthread_mutex_unlock(&jobs->mu);
			return NULL;
		}
		jobs->head = job->next;
		if (!jobs->head)
			jobs->tail = NULL;
		pthread_mutex_unlock(&jobs->mu);

		job->run(job->arg);

		pthread_mutex_lock(&jobs->mu);
		jobs->pending--;
		pthread_mutex_unlock(&jobs->mu);
		event_active(job->ev, EV_READ, 1);
	}
}

static void keepalive_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

struct jobs *jobs_new(struct event_base *base, int nthreads)
{
	struct jobs *jobs = NULL;
	int i;

	if (nthreads < 1 || nthreads > 64)
		return NULL;
	jobs = calloc(1, sizeof(*jobs));
	if (!jobs)
		return NULL;
	jobs->base = base;
	pthread_mutex_init(&jobs->mu, NULL);
	pthread_cond_init(&jobs->cv, NULL);
	jobs->threads = calloc((size_t)nthreads, sizeof(pthread_t));
	jobs->keepalive = event_new(base, -1, EV_PERSIST, keepalive_tick, NULL);
	if (!jobs->threads || !jobs->keepalive)
		goto fail;
	for (i = 0; i < nthreads; i++) {
		struct worker_start *ws = malloc(sizeof(*ws));

		if (!ws)
			goto fail;
		ws->jobs = jobs;
		ws->index = i;
		if (pthread_create(&jobs->threads[i], NULL, worker_main, ws) != 0) {
			free(ws);
			goto fail;
		}
		jobs->nthreads++;
	}
	return jobs;
fail:
	jobs_free(jobs);
	return NULL;
}

int jobs_submit(struct jobs *jobs, job_fn run, job_fn done, void *arg)
{
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
	pthread_mutex_lock(&jobs->mu);
	if (jobs->stopping) {
		pthread_mutex_unlock(&jobs->mu);
		event_free(job->ev);
		free(job);
		return -1;
	}
	if (jobs->tail)
		jobs->tail->next = job;
	else
		jobs->head = job;
	jobs->tail = job;
	jobs->pending++;
	pthread_cond_signal(&jobs->cv);
	pthread_mutex_unlock(&jobs->mu);
	if (jobs->outstanding++ == 0) {
		struct timeval hour = { 3600, 0 };

		event_add(jobs->keepalive, &hour);
	}
	return 0;
}

unsigned jobs_pending(const struct jobs *jobs)
{
	unsigned n;

	pthread_mutex_lock((pthread_mutex_t *)&jobs->mu);
	n = jobs->pending;
	pthread_mutex_unlock((pthread_mutex_t *)&jobs->mu);
	return n;
}

void jobs_free(struct jobs *jobs)
{
	int i;

	if (!jobs)
		return;
	pthread_mutex_lock(&jobs->mu);
	jobs->stopping = 1;
	pthread_cond_broadcast(&jobs->cv);
	pthread_mutex_unlock(&jobs->mu);
	for (i = 0; i < jobs->nthreads; i++)
		pthread_join(jobs->threads[i], NULL);
	/* workers drained the queue before exiting; deliver their completions */
	while (jobs->outstanding)
		event_base_loop(jobs->base, EVLOOP_ONCE);
	if (jobs->keepalive)
		event_free(jobs->keepalive);
	pthread_mutex_destroy(&jobs->mu);
	pthread_cond_destroy(&jobs->cv);
	free(jobs->threads);
	free(jobs);
}
