/* jobs.h — blocking work off the event loop.
 *
 * The lock library and the store backends are synchronous. The proxy runs
 * them on a small pool of worker threads and gets the answer back on its
 * event loop thread: a job's run() executes on a worker, its done() on the
 * loop. Jobs never touch loop-owned state in run(). */
#ifndef FENCE_JOBS_H
#define FENCE_JOBS_H

#include <event2/event.h>

struct jobs;

/* run(arg) on a worker thread, then done(arg) on the loop thread. The caller
 * owns arg and must keep it alive until done() is called; done() is always
 * called exactly once for a submitted job, also during jobs_free(). */
typedef void (*job_fn)(void *arg);

/* Starts nthreads workers (1..64) that post completions to base. Requires
 * evthread_use_pthreads() to have been called before base was created.
 * Returns NULL on failure. */
struct jobs *jobs_new(struct event_base *base, int nthreads);

/* Queues a job. Returns 0, or -1 (ENOMEM, or the pool is shutting down), in
 * which case neither function will be called. */
int jobs_submit(struct jobs *jobs, job_fn run, job_fn done, void *arg);

/* Jobs queued or running. */
unsigned jobs_pending(const struct jobs *jobs);

/* Per-thread slot for caching expensive per-thread objects (e.g. one
 * struct store per bucket): returns this worker thread's index in
 * 0..nthreads-1, or -1 when called from a thread that is not a worker. */
int jobs_worker_index(void);

/* Stops the workers after the queued jobs ran, runs their done() callbacks
 * that are still pending, and frees. Accepts NULL. */
void jobs_free(struct jobs *jobs);

#endif
