/* main.c — the fencegate daemon: wiring, signals, event loops.
 *
 * Takes the command line (cli.c; DESIGN.md "Command line"), makes what the
 * event-loop workers share (metrics, lock high-water marks, the multipart
 * table, the status board, the pool of store threads), builds the workers
 * (workers.c: each its proxy and handlers — lock API, fencing, and without
 * --upstream the embedded S3 store — and its listeners), and runs until
 * SIGTERM/SIGINT, then drains requests in flight on every worker (bounded)
 * and exits 0.
 * SIGHUP reloads, SIGUSR1 reopens the log files; signals are handled here,
 * on the main thread (worker 0's loop), only. Wiring and printing only:
 * requests are proxy.c's and the handlers'. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <event2/thread.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "fence/lockmarks.h"
#include "fence/lockreg.h"
#include "fence/multipart.h"
#include "fence/statusboard.h"
#include "http/jobs.h"
#include "http/listen.h"
#include "http/proxy.h"
#include "http/tls.h"
#include "ops/log.h"
#include "ops/logfile.h"
#include "ops/metrics.h"
#include "policy/policy.h"
#include "wire/awscreds.h"
#include "workers.h"

struct runtime {
	struct event_base *base;    /* the main thread's loop: worker 0's */
	struct workers *workers;
	int nworkers;
	int store_threads;
	struct workers_shared shared;
	struct jobs_pool *pool;
	struct fencegate_metrics metrics;
	struct lockmarks *marks;    /* with several workers */
	struct multipart_table *uploads; /* with several workers */
	struct statusboard *board;  /* /_fence/status */
	struct policy *policy;      /* the running configuration */
	const char *config_path;    /* NULL: flags, nothing to reload */
	int log_level_flag;         /* --log-level wins over the file */
	const struct options *opts; /* the flags: they win over the file */
	struct policy_limits limits_at_start;
	struct policy_limits limits_in_force; /* reload_limits_log */
	struct proxy_config cfg;
	struct logfiles logs;       /* access log and error log files */
	long drain_ms;
	int stopping;
};

static void drained(void *arg)
{
	struct runtime *rt = arg;

	log_info("drained: exiting");
	event_base_loopexit(rt->base, NULL);
}

/* 1 if both policies listen on the same addresses, in any order. */
static int same_listen(const struct policy *a, const struct policy *b)
{
	if (a->nlisten != b->nlisten)
		return 0;
	for (size_t i = 0; i < a->nlisten; i++) {
		size_t j = 0;

		while (j < b->nlisten && strcmp(a->listen[i].addr, b->listen[j].addr) != 0)
			j++;
		if (j == b->nlisten)
			return 0;
	}
	return 1;
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* What a reload cannot change without a restart; NULL when nothing. */
static const char *reload_blocker(const struct policy *cur, const struct policy *next)
{
	if (cur->workers != next->workers)
		return "workers";
	if (cur->store_threads != next->store_threads)
		return "store_threads";
	if (!same_listen(cur, next))
		return "listen";
	if (cur->mode != next->mode)
		return "mode";
	if (!same_str(cur->upstream.endpoint, next->upstream.endpoint))
		return "upstream.endpoint";
	if (!same_str(cur->upstream.region, next->upstream.region) ||
	    !same_str(cur->upstream.profile, next->upstream.profile) ||
	    !same_str(cur->upstream.ca_bundle, next->upstream.ca_bundle) ||
	    !same_str(cur->upstream.dialect, next->upstream.dialect) ||
	    cur->upstream.verify != next->upstream.verify)
		return "upstream";
	if (!same_str(cur->data_dir, next->data_dir))
		return "data_dir";
	if (!same_str(cur->lock_store, next->lock_store))
		return "lock_store";
	if (cur->tls.enabled != next->tls.enabled)
		return "tls";
	return NULL;
}

/* The drain time: the flag, else the file's, else the flag's default. */
static long reload_drain_ms(const struct policy *pol, const struct options *o)
{
	if (o->drain_set || pol->limits.drain_timeout_ms <= 0)
		return o->drain_ms;
	return (long)pol->limits.drain_timeout_ms;
}

/* Every limit a reload may change. live: taken by the running workers
 * (workers_reload -> proxy_set_limits, or the drain time here); the others
 * belong to what was made at the start (the listeners' connection budget,
 * the buffers held for a re-send, the lock cache's timer, the ETag cache's
 * table) and wait for a restart. */
#define LIMIT(k, live) { "limits." #k, offsetof(struct policy_limits, k), live }
static const struct {
	const char *name;
	size_t off;
	int live;
} reload_limits[] = {
	LIMIT(header_bytes, 1), LIMIT(header_count, 1), LIMIT(url_bytes, 1),
	LIMIT(idle_timeout_ms, 1), LIMIT(header_timeout_ms, 1), LIMIT(body_timeout_ms, 1),
	LIMIT(send_timeout_ms, 1), LIMIT(body_min_rate, 1),
	LIMIT(upstream_connect_timeout_ms, 1), LIMIT(upstream_timeout_ms, 1),
	LIMIT(upstream_total_timeout_ms, 1), LIMIT(drain_timeout_ms, 1),
	LIMIT(max_connections, 0), LIMIT(replay_bytes, 0),
	LIMIT(refresh_interval_ms, 0), LIMIT(objcache_entries, 0),
};
#undef LIMIT

static long long *limit_at(struct policy_limits *l, size_t off)
{
	return (long long *)(void *)((char *)l + off);
}

/* Names each limit of next that differs from what is in force: taken, or
 * kept until a restart (never "reloaded" while a change is ignored), and
 * records the taken ones in rt->limits_in_force. */
static void reload_limits_log(struct runtime *rt, const struct policy *next)
{
	struct policy_limits want = next->limits;

	for (size_t i = 0; i < sizeof(reload_limits) / sizeof(reload_limits[0]); i++) {
		long long *cur = limit_at(&rt->limits_in_force, reload_limits[i].off);
		long long b = *limit_at(&want, reload_limits[i].off);
		int live = reload_limits[i].live;

		if (*cur == b)
			continue;
		if (live && reload_limits[i].off == offsetof(struct policy_limits, header_bytes))
			live = front_header_bytes_live((size_t)rt->limits_at_start.header_bytes,
						       (size_t)b);
		if (live) {
			log_info("reload: %s changed from %lld to %lld", reload_limits[i].name,
				 *cur, b);
			*cur = b;
		} else {
			log_warn("reload: %s changed from %lld to %lld; it applies after a "
				 "restart, %lld until then", reload_limits[i].name, *cur, b, *cur);
		}
	}
}

/* SIGHUP: load and check the file first; only a good one replaces the
 * running policy (clients, permissions, TLS certificates, log level) in
 * every worker. Requests in flight keep what they already decided.
 * Returns 0 reloaded, -1 refused (the running configuration stays), 1 no
 * file to reload. */
static int try_reload(struct runtime *rt)
{
	struct policy *next;
	struct proxy_config cfg;
	SSL_CTX *tls = NULL;
	const char *blocker;
	char err[POLICY_ERR_MAX + 64], msg[512];
	enum log_level level;

	if (!rt->config_path) {
		log_info("sighup: no configuration file to reload");
		return 1;
	}
	next = policy_load(rt->config_path, err, sizeof(err));
	if (!next) {
		log_error("reload refused, keeping the running configuration: %s", err);
		return -1;
	}
	blocker = reload_blocker(rt->policy, next);
	if (blocker) {
		log_error("reload refused, keeping the running configuration: \"%s\" changed; "
			  "that needs a restart", blocker);
		policy_free(next);
		return -1;
	}
	if (next->tls.enabled) {
		tls = tls_server_ctx_new(&next->tls, err, sizeof(err));
		if (!tls) {
			log_error("reload refused, keeping the running configuration: %s", err);
			policy_free(next);
			return -1;
		}
	}
	if (!rt->log_level_flag && log_parse_level(next->log.level, &level) == 0)
		log_set_level(level);
	snprintf(msg, sizeof(msg), "reloaded \"%s\": %zu clients, %zu routes%s%s",
		 rt->config_path, next->nclients, next->nroutes,
		 next->tls.enabled ? ", tls certificate re-read" : "",
		 rt->nworkers > 1 ? ", on every worker" : "");
	reload_limits_log(rt, next); /* before "reloaded" */
	cli_proxy_config(&cfg, next, rt->opts);
	/* logged by the last worker to take it */
	workers_reload(rt->workers, next, &cfg, tls, msg);
	rt->drain_ms = reload_drain_ms(next, rt->opts);
	SSL_CTX_free(tls); /* the front ends hold their own references */
	if (!same_str(next->log.access_log, rt->policy->log.access_log) ||
	    !same_str(next->log.error_log, rt->policy->log.error_log))
		log_warn("reload: changed log file paths apply after a restart");
	policy_free(rt->policy);
	rt->policy = next;
	return 0;
}

static void reload(struct runtime *rt)
{
	int r = try_reload(rt);

	if (r <= 0)
		metrics_add(rt->metrics.reloads, (const char *[]){ r == 0 ? "ok" : "refused" }, 1);
}

/* SIGUSR1: the log files again by name (logrotate has renamed them). */
static void reopen_logs(struct runtime *rt)
{
	char err[600];
	int n = logfiles_reopen(&rt->logs, err, sizeof(err));

	if (n < 0)
		log_error("sigusr1: %s; logging on to the old file", err);
	else
		log_info("sigusr1: %d log files reopened", n);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct runtime *rt = arg;

	if (sig != SIGUSR1 && !rt->workers) /* not built yet, or freed after a failed start */
		return;
	if (sig == SIGHUP) {
		reload(rt);
		return;
	}
	if (sig == SIGUSR1) {
		reopen_logs(rt);
		return;
	}
	if (rt->stopping) {
		log_warn("second stop signal: exiting now");
		workers_stop(rt->workers);
		event_base_loopbreak(rt->base);
		return;
	}
	rt->stopping = 1;
	log_info("stop signal: draining %zu requests in flight (at most %ld ms)",
		 workers_inflight(rt->workers), rt->drain_ms);
	workers_drain(rt->workers, rt->drain_ms, drained, rt);
}

/* What each signal does: signal_cb. */
static const int signums[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1 };
#define NSIGNALS (sizeof(signums) / sizeof(signums[0]))

/* Registers signal_cb for every signal of signums. 0, or -1 (the caller
 * frees what was registered with free_signals). */
static int add_signals(struct runtime *rt, struct event **sigs)
{
	for (size_t i = 0; i < NSIGNALS; i++) {
		sigs[i] = evsignal_new(rt->base, signums[i], signal_cb, rt);
		if (!sigs[i] || evsignal_add(sigs[i], NULL) < 0)
			return -1;
	}
	return 0;
}

static void free_signals(struct event **sigs)
{
	for (size_t i = 0; i < NSIGNALS; i++) {
		if (sigs[i])
			event_free(sigs[i]);
		sigs[i] = NULL;
	}
}

/* What the workers share, made once: the metrics registry, the store
 * threads, and with several workers the high-water marks and the multipart
 * table. Returns 0 or -1 with a message in err. */
static int build_shared(struct runtime *rt, const struct options *o, SSL_CTX *tls, char *err,
			size_t errlen)
{
	const struct policy *pol = rt->policy;
	sigset_t all, old;

	if (fencegate_metrics_init(&rt->metrics) < 0)
		goto nomem;
	sigfillset(&all); /* signals are the main thread's: the pool's start blocked */
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rt->pool = jobs_pool_new(rt->store_threads);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rt->pool) {
		snprintf(err, errlen, "cannot start %d store threads", rt->store_threads);
		return -1;
	}
	if (!(rt->board = statusboard_new()))
		goto nomem;
	if (rt->nworkers > 1) {
		rt->marks = lockmarks_new(LOCKREG_DEFAULT_MAX_LOCKS);
		rt->uploads = multipart_new(10000);
		if (!rt->marks || !rt->uploads)
			goto nomem;
	}
	rt->shared = (struct workers_shared){
		.o = o, .config_path = rt->config_path, .cfg = &rt->cfg,
		.metrics = &rt->metrics, .marks = rt->marks, .uploads = rt->uploads,
		.pool = rt->pool, .store_threads = rt->store_threads, .access_log = &rt->logs,
		.tls = tls, .board = rt->board,
	};
	if (rt->nworkers > 1 && pol->limits.max_connections > 0) {
		char why[512];

		/* the descriptor budget is the process's: the workers split it */
		rt->cfg.limits.max_connections = listen_connection_budget(
			rt->cfg.limits.max_connections, why, sizeof(why));
		if (why[0])
			log_warn("limits.max_connections: %zu: %s", rt->cfg.limits.max_connections,
				 why);
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* limits.max_connections at its default (10000: 2 descriptors each and 32
 * spare) is fitted to RLIMIT_NOFILE, after listen_connection_budget has
 * raised the soft limit to the hard one, and the cap is said at info
 * level: default settings start without a warning. A value the operator
 * chose is kept, and warned about by the front end if it does not fit. */
static void fit_default_connections(struct proxy_config *cfg)
{
	struct policy_key_info ki;
	struct rlimit rl;
	char why[512];
	size_t fit;

	for (size_t i = 0; policy_key_info(i, &ki); i++) {
		if (strcmp(ki.path, "limits.max_connections") != 0)
			continue;
		if (!ki.def || cfg->limits.max_connections != strtoull(ki.def, NULL, 10))
			return;
		fit = listen_connection_budget(cfg->limits.max_connections, why, sizeof(why));
		if (fit != cfg->limits.max_connections && getrlimit(RLIMIT_NOFILE, &rl) == 0)
			log_info("at most %zu connections: the default limits.max_connections "
				 "(%zu) fitted to RLIMIT_NOFILE %llu (2 descriptors each and %d "
				 "spare); raise it for more (ulimit -n, LimitNOFILE=)", fit,
				 cfg->limits.max_connections, (unsigned long long)rl.rlim_cur,
				 LISTEN_FD_RESERVE);
		cfg->limits.max_connections = fit;
		return;
	}
}

/* Frees what build_shared made, after the workers. */
static void teardown(struct runtime *rt)
{
	workers_free(rt->workers);
	rt->workers = NULL;
	jobs_pool_free(rt->pool);
	rt->pool = NULL;
	multipart_free(rt->uploads);
	lockmarks_free(rt->marks);
	statusboard_free(rt->board);
	rt->board = NULL;
	fencegate_metrics_free(&rt->metrics);
	logfiles_close(&rt->logs);
}

/* Freed heap memory stays with the process for the next requests instead
 * of going back to the kernel whenever 128 KiB sit free at the top of a
 * heap (glibc's default, per worker arena). Given back, it is faulted in
 * again by the next request: a 64 KiB PUT at c=64 took ~12 page faults and
 * a third of its CPU that way. Allocations up to 1 MiB come from the heap
 * (an explicit threshold keeps glibc from moving it). RSS then stays at
 * its peak, as with nginx's and HAProxy's buffer pools. GLIBC_TUNABLES, if
 * set, is the operator's choice and wins. */
static void keep_freed_memory(void)
{
	if (getenv("GLIBC_TUNABLES"))
		return;
	mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
}

int main(int argc, char **argv)
{
	struct options o;
	struct aws_credentials cred = {0};
	struct runtime rt;
	struct event *sigs[NSIGNALS] = {0};
	struct policy *pol = NULL;
	SSL_CTX *tls = NULL;
	const char *access_log, *error_log;
	char err[POLICY_ERR_MAX + 64];
	enum log_level level;
	int rc;

	memset(&rt, 0, sizeof(rt));
	keep_freed_memory();
	rc = cli_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	pol = cli_policy(&o);
	if (!pol)
		return 1;
	if (pol->tls.enabled) {
		tls = tls_server_ctx_new(&pol->tls, err, sizeof(err));
		if (!tls) {
			fprintf(stderr, "fencegate: %s: %s\n", pol->source, err);
			policy_free(pol);
			return 1;
		}
	}
	if (cli_threads(&o, pol, &rt.nworkers, &rt.store_threads) < 0) {
		SSL_CTX_free(tls);
		policy_free(pol);
		return 1;
	}
	if (o.test_config) {
		printf("fencegate: configuration file \"%s\" is valid\n", o.config);
		SSL_CTX_free(tls);
		policy_free(pol);
		return 0;
	}
	if (!o.log_level_set && log_parse_level(pol->log.level, &level) == 0)
		log_set_level(level);
	rt.policy = pol;
	rt.config_path = o.config;
	rt.log_level_flag = o.log_level_set;
	rt.opts = &o;
	rt.limits_at_start = pol->limits;
	rt.limits_in_force = pol->limits;
	log_info("fencegate %s starting", FENCE_VERSION);
	cli_proxy_config(&rt.cfg, pol, &o);
	fit_default_connections(&rt.cfg);
	if (rt.cfg.upstream_url && rt.cfg.mode == PROXY_MODE_S3) {
		if (aws_credentials_load(pol->upstream.profile, &cred, err, sizeof(err)) < 0) {
			fprintf(stderr, "fencegate: no upstream credentials: %s\n", err);
			goto fail_early;
		}
		rt.cfg.access_key = cred.access_key;
		rt.cfg.secret_key = cred.secret_key;
		rt.cfg.session_token = cred.session_token;
	}
	access_log = o.access_log ? o.access_log : o.config ? pol->log.access_log : "-";
	error_log = o.error_log ? o.error_log : pol->log.error_log;
	if (logfiles_open(&rt.logs, access_log, error_log, err, sizeof(err)) < 0) {
		fprintf(stderr, "fencegate: %s\n", err);
		goto fail_early;
	}

	signal(SIGPIPE, SIG_IGN);
	evthread_use_pthreads();
	rt.base = event_base_new();
	if (!rt.base) {
		fprintf(stderr, "fencegate: cannot create the event loop\n");
		goto fail_early;
	}
	if (logfiles_start_flush(&rt.logs, rt.base) < 0) {
		fprintf(stderr, "fencegate: cannot start the access log's flush timer\n");
		goto fail;
	}
	/* before the first listener: a signal must never find its default
	 * action (SIGUSR1's would kill the daemon) */
	if (add_signals(&rt, sigs) < 0) {
		fprintf(stderr, "fencegate: cannot install the signal handlers\n");
		goto fail;
	}
	rt.drain_ms = reload_drain_ms(pol, &o);
	if (build_shared(&rt, &o, tls, err, sizeof(err)) < 0 ||
	    !(rt.workers = workers_new(rt.nworkers, rt.base, &rt.shared, pol, err, sizeof(err)))) {
		aws_credentials_clear(&cred);
		fprintf(stderr, "fencegate: %s\n", err);
		goto fail;
	}
	aws_credentials_clear(&cred);
	if (rt.nworkers > 1) { /* /_fence/metrics: the process's totals */
		rt.metrics.collect_arg = rt.workers;
		rt.metrics.collect = workers_collect;
	}
	SSL_CTX_free(tls); /* the front ends hold their own references */
	tls = NULL;
	for (size_t i = 0; i < pol->nlisten; i++)
		log_info("listening on \"%s\"%s", pol->listen[i].addr,
			 pol->tls.enabled ? " (tls)" : "");
	if (rt.nworkers > 1)
		log_info("%d event-loop workers, %d store threads", rt.nworkers,
			 rt.store_threads);
	if (workers_start(rt.workers, err, sizeof(err)) < 0) {
		fprintf(stderr, "fencegate: %s\n", err);
		goto fail;
	}
	if (pol->upstream.endpoint)
		log_info("forwarding to \"%s\" in \"%s\" mode", pol->upstream.endpoint,
			 pol->mode == POLICY_MODE_S3 ? "s3" : "http");
	else
		log_info("serving the embedded store over \"%s\"", pol->data_dir);
	log_info("authentication %s (%zu clients)", pol->nclients ? "on" : "off",
		 pol->nclients);
	event_base_dispatch(rt.base);
	free_signals(sigs);
	teardown(&rt); /* joins the workers' threads first */
	event_base_free(rt.base);
	policy_free(rt.policy);
	log_info("stopped");
	return 0;
fail:
	free_signals(sigs);
	teardown(&rt);
	event_base_free(rt.base);
fail_early:
	aws_credentials_clear(&cred);
	SSL_CTX_free(tls);
	logfiles_close(&rt.logs);
	policy_free(rt.policy ? rt.policy : pol);
	return 1;
}
