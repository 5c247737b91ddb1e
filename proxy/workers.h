/* workers.h — the event-loop workers of the daemon.
 *
 * A worker is one event loop with its own listening sockets (SO_REUSEPORT
 * when there are several), its own proxy (front end and upstream), lock
 * registry, fencing handler (with its object cache), lock API and, without
 * an upstream, embedded store. Worker 0 runs on the main thread, which also
 * handles the signals (main.c); the others run on threads of their own,
 * with every signal blocked. What the workers share is made once by the
 * caller (struct workers_shared) and outlives them: the metrics registry,
 * the lock high-water marks, the multipart table, the status board and the
 * pool of store threads.
 *
 * Commands from the main thread (reload, drain, stop) reach a worker
 * through an event activated on its loop; the worker carries them out on
 * its own thread. With one worker everything happens on the main thread,
 * in the order it always did. */
#ifndef FENCE_WORKERS_H
#define FENCE_WORKERS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "cli.h"
#include "fence/lockmarks.h"
#include "fence/statusboard.h"
#include "http/jobs.h"
#include "http/proxy.h"
#include "ops/logfile.h"
#include "ops/metrics.h"
#include "policy/policy.h"

struct workers;

/* Made by the caller before workers_new and freed after workers_free. */
struct workers_shared {
	const struct options *o;          /* the command line */
	const char *config_path;          /* NULL: flags */
	const struct proxy_config *cfg;   /* the proxy's (copied per worker) */
	struct fencegate_metrics *metrics;
	struct lockmarks *marks;          /* NULL with one worker */
	struct multipart_table *uploads;  /* NULL with one worker */
	struct jobs_pool *pool;
	int store_threads;                /* the pool's threads */
	struct logfiles *access_log;      /* the access log (buffered, thread-safe) */
	SSL_CTX *tls;                     /* TLS on every listener; NULL: none */
	struct statusboard *board;        /* the status page's (/_fence/status) */
};

/* n workers (1..64) over pol (each holds its own reference); worker 0's
 * loop is base0 (the main thread's, which the caller dispatches). Builds
 * every worker's handlers and listens on pol's addresses (SO_REUSEPORT
 * when n > 1). Threads are not started yet. Returns NULL with a message
 * in err (what was built is freed). */
struct workers *workers_new(int n, struct event_base *base0, const struct workers_shared *sh,
			    struct policy *pol, char *err, size_t errlen);

/* Starts workers 1..n-1 on their threads (every signal blocked there).
 * Returns 0 or -1 with a message in err (those started are stopped by
 * workers_free). */
int workers_start(struct workers *ws, char *err, size_t errlen);

size_t workers_count(const struct workers *ws);

/* Worker 0's proxy (main's: TLS at start, in-flight count in logs). */
struct proxy *workers_main_proxy(const struct workers *ws);

/* Requests in flight in every worker. */
size_t workers_inflight(const struct workers *ws);

/* SIGHUP, after the caller checked next (and made its TLS context tls, or
 * NULL): every worker takes next and tls (its own references) for what it
 * accepts from now on, and the limits and upstream timeouts of cfg (copied;
 * proxy_set_limits); worker 0 at once, the others on their loops. When the
 * last one has, done_msg (copied) is logged at info. */
void workers_reload(struct workers *ws, struct policy *next, const struct proxy_config *cfg,
		    SSL_CTX *tls, const char *done_msg);

/* SIGTERM: every worker stops accepting and finishes what is in flight
 * (at most timeout_ms); once all of them are done, done(arg) runs on
 * worker 0's loop. */
void workers_drain(struct workers *ws, long timeout_ms, void (*done)(void *arg), void *arg);

/* A second stop signal: every loop stops now. */
void workers_stop(struct workers *ws);

/* Sets fm's per-worker gauges (in flight, connections, ETag cache hits and
 * misses) to the process totals: the metrics collect hook (arg: ws). */
void workers_collect(struct fencegate_metrics *fm, void *arg);

/* Joins the threads (their loops must be stopping), then frees every
 * worker in the order the handlers need: jobs first (their done()
 * callbacks still answer live requests), then the proxy, then the rest.
 * Call on the main thread with base0 not running. Accepts NULL. */
void workers_free(struct workers *ws);

#endif
