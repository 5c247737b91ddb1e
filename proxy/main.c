/* main.c — the fencegate daemon: wiring, signals, event loop.
 *
 * Takes the command line (cli.c; DESIGN.md "Command line"), builds the proxy
 * and its handlers (lock API, fencing, and without --upstream the embedded
 * S3 store), listens, and runs until SIGTERM/SIGINT, then drains requests
 * in flight (bounded) and exits 0. SIGHUP reloads, SIGUSR1 reopens the log
 * files. Wiring and printing only: requests are proxy.c's and the
 * handlers'. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <event2/thread.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "s3/authz.h"
#include "wire/awscreds.h"
#include "fence/fencing.h"
#include "http/jobs.h"
#include "fence/lockapi.h"
#include "fence/lockreg.h"
#include "ops/log.h"
#include "ops/logfile.h"
#include "ops/metrics.h"
#include "policy/policy.h"
#include "http/proxy.h"
#include "local/s3local.h"
#include "http/tls.h"

struct runtime {
	struct event_base *base;
	struct proxy *proxy;
	struct jobs *jobs;
	struct fencegate_metrics metrics;
	struct lockreg *locks;
	struct fencing *fencing;
	struct lockapi *api;
	struct s3local *s3local;
	struct authz *authz;
	struct policy *policy;      /* the running configuration */
	const char *config_path;    /* NULL: flags, nothing to reload */
	int log_level_flag;         /* --log-level wins over the file */
	long long limits_at_start;  /* limits.header_bytes, to notice a change */
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
	if (!same_listen(cur, next))
		return "listen";
	if (cur->mode != next->mode)
		return "mode";
	if (!same_str(cur->upstream.endpoint, next->upstream.endpoint))
		return "upstream.endpoint";
	if (!same_str(cur->upstream.region, next->upstream.region) ||
	    !same_str(cur->upstream.profile, next->upstream.profile) ||
	    !same_str(cur->upstream.ca_bundle, next->upstream.ca_bundle) ||
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

/* SIGHUP: load and check the file first; only a good one replaces the
 * running policy (clients, permissions, TLS certificates, log level).
 * Requests in flight keep what they already decided. */
/* Every response, by status (fencegate_responses_total). */
static void count_response(const struct proxy_summary *s, void *arg)
{
	struct fencegate_metrics *m = arg;
	char num[12];

	snprintf(num, sizeof(num), "%d", s->status);
	metrics_add(m->responses, (const char *[]){ num }, 1);
}

/* Returns 0 reloaded, -1 refused (the running configuration stays), 1 no
 * file to reload. */
static int try_reload(struct runtime *rt)
{
	struct policy *next;
	SSL_CTX *tls = NULL;
	const char *blocker;
	char err[POLICY_ERR_MAX + 64];
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
		proxy_set_tls(rt->proxy, tls);
		SSL_CTX_free(tls); /* the front end holds its own reference */
	}
	if (!rt->log_level_flag && log_parse_level(next->log.level, &level) == 0)
		log_set_level(level);
	authz_set_policy(rt->authz, next);
	if (fencing_set_policy(rt->fencing, next, err, sizeof(err)) < 0)
		log_error("reload: fencing keeps the previous routes: %s", err);
	if (!same_str(next->log.access_log, rt->policy->log.access_log) ||
	    !same_str(next->log.error_log, rt->policy->log.error_log))
		log_warn("reload: changed log file paths apply after a restart");
	policy_free(rt->policy);
	rt->policy = next;
	log_info("reloaded \"%s\": \"%zu\" clients, \"%zu\" routes%s", rt->config_path,
		 next->nclients, next->nroutes, next->tls.enabled ? ", tls certificate re-read" : "");
	if (next->limits.header_bytes != (long long)rt->limits_at_start)
		log_warn("reload: changed limits apply after a restart");
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
		log_info("sigusr1: \"%d\" log files reopened", n);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct runtime *rt = arg;

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
		event_base_loopbreak(rt->base);
		return;
	}
	rt->stopping = 1;
	log_info("stop signal: draining \"%zu\" requests in flight (at most \"%ld\" ms)",
		 proxy_inflight(rt->proxy), rt->drain_ms);
	proxy_drain(rt->proxy, rt->drain_ms, drained, rt);
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

/* The access-log line of a request the authz handler refused. */
static void log_refusal(const struct proxy_summary *s, const char *verdict, void *arg)
{
	struct runtime *rt = arg;

	if (rt->fencing)
		fencing_log_request(rt->fencing, s, NULL, verdict);
}

/* Builds the jobs pool, the lock registry, the lock API, the fencing
 * handler and (without an upstream) the embedded store, and registers the
 * handlers in that order. Returns 0 or -1 with a message in err. */
static int build_handlers(struct runtime *rt, const struct options *o, char *err, size_t errlen)
{
	const struct policy *pol = rt->policy;
	const char *upstream = pol->upstream.endpoint;
	const char *data_dir = pol->data_dir;
	const char *region = pol->upstream.region;
	enum proxy_mode mode = pol->mode == POLICY_MODE_HTTP ? PROXY_MODE_HTTP : PROXY_MODE_S3;
	int workers = o->workers > 0 ? (int)o->workers : 4;
	struct lockreg_config lc;
	struct fencing_config fc;
	struct lockapi_config ac;
	struct proxy_handler h;
	char data_abs[4096], url[4200];

	rt->jobs = jobs_new(rt->base, workers);
	if (!rt->jobs) {
		snprintf(err, errlen, "cannot start %d worker threads", workers);
		return -1;
	}
	if (fencegate_metrics_init(&rt->metrics) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (!upstream) {
		rt->s3local = s3local_new(rt->base, rt->jobs, data_dir, 0, err, errlen);
		if (!rt->s3local)
			return -1;
		if (!realpath(data_dir, data_abs)) {
			snprintf(err, errlen, "cannot resolve \"%s\": %s", data_dir, strerror(errno));
			return -1;
		}
	}
	memset(&lc, 0, sizeof(lc));
	lc.base = rt->base;
	lc.jobs = rt->jobs;
	lc.s3_endpoint = upstream;
	lc.data_dir = upstream ? NULL : data_abs;
	lc.region = region;
	lc.refresh_ms = o->refresh_ms ? o->refresh_ms : (long)pol->limits.refresh_interval_ms;
	lc.self_test = upstream != NULL;
	lc.metrics = &rt->metrics;
	if (mode == PROXY_MODE_HTTP) {
		/* the upstream is not S3: locks live in the lock store(s) */
		lc.s3_endpoint = NULL;
		lc.data_dir = NULL;
		lc.region = NULL;
		lc.lock_store = pol->lock_store;
		lc.self_test = true;
		if (pol->lock_store && strncmp(pol->lock_store, "file://", 7) == 0 &&
		    mkdir(pol->lock_store + 7, 0755) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create the lock store \"%s\": %s",
				 pol->lock_store, strerror(errno));
			return -1;
		}
		if (!o->lock_store && !rt->config_path)
			log_warn("no --lock-store: locks live in \"%s\"; replicas must share one "
				 "lock store", pol->lock_store ? pol->lock_store : "(none)");
	}
	rt->locks = lockreg_new(&lc, err, errlen);
	if (!rt->locks)
		return -1;
	memset(&fc, 0, sizeof(fc));
	fc.locks = rt->locks;
	fc.jobs = rt->jobs;
	fc.nthreads = workers;
	fc.metrics = &rt->metrics;
	fc.s3_endpoint = mode == PROXY_MODE_HTTP ? NULL : upstream;
	fc.region = region;
	fc.data_dir = upstream ? NULL : data_abs;
	fc.access_log = &rt->logs;
	fc.http_mode = mode == PROXY_MODE_HTTP;
	fc.barrier_timeout_ms = o->barrier_timeout_ms;
	fc.barrier_grace_ms = o->barrier_grace_ms;
	fc.base = rt->base;
	if (pol->limits.objcache_entries > 0)
		fc.objcache_capacity = (size_t)pol->limits.objcache_entries;
	rt->fencing = fencing_new(&fc, err, errlen);
	if (!rt->fencing)
		return -1;
	if (rt->s3local) /* parts without a token: by their upload's epoch */
		s3local_set_upload_hook(rt->s3local, fencing_note_upload, rt->fencing);
	/* -c: routes -> locks; flags: lock = bucket (S3), X-Fencing-Lock (HTTP) */
	if (rt->config_path &&
	    fencing_set_policy(rt->fencing, rt->policy, err, errlen) < 0)
		return -1;
	memset(&ac, 0, sizeof(ac));
	ac.base = rt->base;
	ac.proxy = rt->proxy;
	ac.jobs = rt->jobs;
	ac.locks = rt->locks;
	ac.fencing = rt->fencing;
	ac.metrics = &rt->metrics;
	if (mode == PROXY_MODE_HTTP) {
		ac.self_test.url = pol->lock_store; /* NULL: no store-wide test */
		ac.self_test.path_style = -1;       /* auto, as lockreg's stores */
	} else if (upstream && o->check_bucket) {
		snprintf(url, sizeof(url), "s3://%s", o->check_bucket);
		ac.self_test.url = url;
		ac.self_test.endpoint = upstream;
		ac.self_test.region = region;
		ac.self_test.path_style = 1;
	} else if (!upstream) {
		snprintf(url, sizeof(url), "file://%s", data_abs);
		ac.self_test.url = url;
	}
	rt->authz = authz_new(&(struct authz_config){ mode, &rt->metrics, log_refusal, rt });
	if (!rt->authz)
		goto nomem;
	authz_set_policy(rt->authz, rt->policy);
	ac.authz = rt->authz;
	rt->api = lockapi_new(&ac, err, errlen);
	if (!rt->api)
		return -1;
	h = (struct proxy_handler){ "authz", authz_on_request, rt->authz };
	if (proxy_add_handler(rt->proxy, &h) < 0)
		goto nomem;
	h = (struct proxy_handler){ "lockapi", lockapi_on_request, rt->api };
	if (proxy_add_handler(rt->proxy, &h) < 0)
		goto nomem;
	h = (struct proxy_handler){ "fencing", fencing_on_request, rt->fencing };
	if (proxy_add_handler(rt->proxy, &h) < 0)
		goto nomem;
	if (rt->s3local) {
		h = (struct proxy_handler){ "s3local", s3local_handler, rt->s3local };
		if (proxy_add_handler(rt->proxy, &h) < 0)
			goto nomem;
	}
	if (proxy_on_done(rt->proxy, count_response, &rt->metrics) < 0)
		goto nomem;
	if (lockapi_start_self_test(rt->api) < 0)
		goto nomem;
	if (upstream && !o->check_bucket && mode == PROXY_MODE_S3)
		log_warn("no --check-bucket: the backend self-test runs per bucket before its "
			 "lock's first use; /_fence/health does not wait for it");
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* Frees in the order the handlers need: workers first (their done()
 * callbacks still answer live requests), then the proxy, then the rest. */
static void teardown(struct runtime *rt)
{
	jobs_free(rt->jobs);
	rt->jobs = NULL;
	proxy_free(rt->proxy);
	rt->proxy = NULL;
	s3local_free(rt->s3local);
	lockapi_free(rt->api);
	fencing_free(rt->fencing);
	lockreg_free(rt->locks);
	authz_free(rt->authz);
	fencegate_metrics_free(&rt->metrics);
	logfiles_close(&rt->logs);
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
	rt.limits_at_start = pol->limits.header_bytes;
	cli_proxy_config(&rt.cfg, pol, &o);
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
	rt.drain_ms = pol->limits.drain_timeout_ms > 0 ? (long)pol->limits.drain_timeout_ms
							: o.drain_ms;
	if (o.drain_set)
		rt.drain_ms = o.drain_ms;
	rt.proxy = proxy_new(rt.base, &rt.cfg, err, sizeof(err));
	aws_credentials_clear(&cred);
	if (!rt.proxy || build_handlers(&rt, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "fencegate: %s\n", err);
		goto fail;
	}
	if (tls) {
		proxy_set_tls(rt.proxy, tls);
		SSL_CTX_free(tls);
		tls = NULL;
	}
	for (size_t i = 0; i < pol->nlisten; i++) {
		if (proxy_listen(rt.proxy, pol->listen[i].addr, err, sizeof(err)) < 0) {
			fprintf(stderr, "fencegate: %s\n", err);
			goto fail;
		}
		log_info("listening on \"%s\"%s", pol->listen[i].addr,
			 pol->tls.enabled ? " (tls)" : "");
	}
	if (pol->upstream.endpoint)
		log_info("forwarding to \"%s\" in \"%s\" mode", pol->upstream.endpoint,
			 pol->mode == POLICY_MODE_S3 ? "s3" : "http");
	else
		log_info("serving the embedded store over \"%s\"", pol->data_dir);
	log_info("authentication %s (\"%zu\" clients)", pol->nclients ? "on" : "off",
		 pol->nclients);
	event_base_dispatch(rt.base);
	free_signals(sigs);
	teardown(&rt);
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
