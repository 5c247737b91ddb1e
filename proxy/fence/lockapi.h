/* lockapi.h — the proxy's own endpoints under /_fence/ (DESIGN.md "Lock
 * HTTP API"): acquire, renew, release and status of locks as JSON for
 * workers in any language, the list of locks, health and Prometheus
 * metrics.
 *
 * Lock operations run the lock library on the lock's serialized job queue
 * (lockreg.h); an acquire raises the lock's high-water mark at once, a
 * release marks its epoch released. Health answers 200 only once the
 * backend self-test (lock_check_store: the store honours If-None-Match)
 * passed. It does not fence data writes (fencing.h does). */
#ifndef FENCE_LOCKAPI_H
#define FENCE_LOCKAPI_H

#include <event2/event.h>

#include "fencing.h"
#include "http/jobs.h"
#include "lockreg.h"
#include "ops/metrics.h"
#include "http/proxy.h"
#include "lock/store/store.h"
#include "s3/authz.h"
#include "statusboard.h"

struct lockapi;

struct lockapi_config {
	struct event_base *base;
	struct proxy *proxy;            /* for in-flight counts */
	struct jobs *jobs;
	struct lockreg *locks;
	struct fencing *fencing;        /* may be NULL: no access log / cache metrics */
	struct fencegate_metrics *metrics;
	/* the backend self-test's store; url NULL: no self-test (healthy at once) */
	struct store_config self_test;
	long max_wait_ms;               /* acquire waitMs cap; 0: 60000 */
	struct lockapi_fleet *fleet;    /* several event-loop workers: health is
					 * 200 only once every worker's self-test
					 * passed; NULL: this one's alone */
	const struct authz *authz;      /* client authentication on: renewing or
					 * releasing a lease another client took
					 * needs "break" (authz_may_break); NULL:
					 * no such check */
	struct statusboard *board;      /* the process's status board, shown at
					 * /_fence/status; NULL: no status page */
};

/* The self-test outcomes of the event-loop workers' lock APIs, shared by
 * them (counters updated atomically); the caller zeroes it, sets needed to
 * the number of workers and keeps it alive while they run. */
struct lockapi_fleet {
	int needed;
	int passed;   /* atomic */
	int failed;   /* atomic */
};

/* Returns NULL with a message in err. Strings in cfg are copied. */
struct lockapi *lockapi_new(const struct lockapi_config *cfg, char *err, size_t errlen);

/* Runs the backend self-test on a job (logs the outcome; health turns 200
 * when it passed). Returns 0, or -1 if it could not be queued. */
int lockapi_start_self_test(struct lockapi *api);

/* 1 once the self-test passed (or none is configured). */
int lockapi_healthy(const struct lockapi *api);

/* proxy_handler.on_request: answers /_fence/health, /_fence/metrics,
 * /_fence/status and /_fence/locks...; PASSes everything else. */
enum proxy_action lockapi_on_request(struct proxy_req *req, void *arg);

/* Call after jobs_free(). Accepts NULL. Pending acquire retry timers are
 * dropped with their requests. */
void lockapi_free(struct lockapi *api);

#endif
