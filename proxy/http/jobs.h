/* jobs.h — blocking work off the event loop.
 *
 * The lock library and the store backends are synchronous. The proxy runs
 * them on a small pool of threads (struct jobs_pool) and gets the answer
 * back on the event loop that submitted the job: each loop submits through
 * its own struct jobs (its completion queue on the pool), so with several
 * event-loop workers a job's done() always runs on the loop of the worker
 * that submitted it. A job's run() executes on a pool thread, its done() on
 * that loop. Jobs never touch loop-owned state in run(). */
#ifndef FENCE_JOBS_H
#define FENCE_JOBS_H

#include <event2/event.h>

struct jobs;
struct jobs_pool;

/* run(arg) on a pool thread, then done(arg) on the submitting loop. The
 * caller owns arg and must keep it alive until done() is called; done() is
 * always called exactly once for a submitted job, also during jobs_free(). */
typedef void (*job_fn)(void *arg);

/* Starts nthreads pool threads (1..64), shared by the loops attached with
 * jobs_attach. Returns NULL on failure. */
struct jobs_pool *jobs_pool_new(int nthreads);

/* Stops the threads after the queued jobs ran and frees. Every struct jobs
 * attached to the pool must have been freed first. Accepts NULL. */
void jobs_pool_free(struct jobs_pool *pool);

/* A completion queue on pool for the loop base: jobs submitted through it
 * run on the pool and complete on base. Requires evthread_use_pthreads()
 * before base was created. The pool must outlive it. NULL on ENOMEM. */
struct jobs *jobs_attach(struct jobs_pool *pool, struct event_base *base);

/* A pool of nthreads (1..64) owned by its one queue on base (one event
 * loop): jobs_free frees both. Returns NULL on failure. */
struct jobs *jobs_new(struct event_base *base, int nthreads);

/* Queues a job. Returns 0, or -1 (ENOMEM, or the queue is shutting down), in
 * which case neither function will be called. */
int jobs_submit(struct jobs *jobs, job_fn run, job_fn done, void *arg);

/* Jobs of this queue queued or running. */
unsigned jobs_pending(const struct jobs *jobs);

/* Per-thread slot for caching expensive per-thread objects (e.g. one
 * struct store per bucket): returns this pool thread's index in
 * 0..nthreads-1, or -1 when called from a thread that is not a pool thread.
 * A pool shared by several loops runs every loop's jobs: each user keeps
 * its own slots, and slot i is only ever touched by thread i. */
int jobs_worker_index(void);

/* Refuses new jobs, waits (running base) until every job of this queue has
 * run and its done() was called, and frees; with jobs_new, also frees the
 * pool. Call on the queue's loop thread, with the loop not running.
 * Accepts NULL. */
void jobs_free(struct jobs *jobs);

#endif
