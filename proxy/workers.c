/* workers.c — the event-loop workers (workers.h): building each one's
 * handlers, its thread, and the commands the main thread sends it (reload,
 * drain, stop). Wiring only: requests are proxy.c's and the handlers'; the
 * signals and the checking of a reloaded file are main.c's. */
#include "workers.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>

#include "fence/fencing.h"
#include "fence/lockapi.h"
#include "fence/lockreg.h"
#include "http/listen.h"
#include "local/s3local.h"
#include "ops/log.h"
#include "s3/authz.h"

enum {
	CMD_RELOAD = 1,
	CMD_DRAIN = 2,
	CMD_STOP = 4,
};

/* One event loop and what runs on it. Built on the main thread, then run
 * (and commanded) on its own; everything but the command fields is that
 * thread's while it runs. */
struct worker {
	int index;
	struct workers *set;
	struct event_base *base;      /* worker 0: the main thread's (not owned) */
	pthread_t thread;
	int started;
	struct proxy *proxy;
	struct jobs *jobs;            /* its completion queue on the shared pool */
	struct lockreg *locks;
	struct fencing *fencing;
	struct lockapi *api;
	struct s3local *s3local;
	struct authz *authz;
	struct policy *policy;        /* its reference to the running policy */
	struct event *cmd_ev;
	/* commands, under mu (set by the main thread, taken by the worker) */
	pthread_mutex_t mu;
	unsigned cmds;
	struct policy *next_policy;
	struct proxy_config next_cfg; /* its limits and timeouts only */
	SSL_CTX *next_tls;
	int tls_change;
	long drain_ms;
};

struct workers {
	const struct workers_shared *sh;
	struct worker *w;
	size_t n;
	/* under mu: the reload being applied, and the drain */
	pthread_mutex_t mu;
	size_t reload_left;
	char reload_msg[512];
	size_t drained;
	void (*drain_done)(void *arg);
	void *drain_arg;
	struct event *drained_ev;     /* on worker 0's loop */
	struct lockapi_fleet fleet;   /* every worker's self-test outcome */
};

/* Every response, by status (fencegate_responses_total). */
static void count_response(const struct proxy_summary *s, void *arg)
{
	struct fencegate_metrics *m = arg;
	char num[12];

	if (s->status >= 100 && s->status <= 999) { /* every real status: no printf */
		num[0] = (char)('0' + s->status / 100);
		num[1] = (char)('0' + s->status / 10 % 10);
		num[2] = (char)('0' + s->status % 10);
		num[3] = '\0';
	} else {
		snprintf(num, sizeof(num), "%d", s->status);
	}
	metrics_add(m->responses, (const char *[]){ num }, 1);
}

/* The access-log line of a request the authz handler refused. */
static void log_refusal(const struct proxy_summary *s, const char *verdict, void *arg)
{
	struct worker *w = arg;

	if (w->fencing)
		fencing_log_request(w->fencing, s, NULL, verdict);
}

/* The lock registry's configuration for pol. data_abs: the embedded
 * store's directory, resolved. Returns 0 or -1 with a message in err. */
/* The configured S3 dialect as a row's static name (it outlives a
 * reload's policy), NULL for "auto". */
static const char *dialect_of(const struct policy *pol)
{
	const struct dialect *d = dialect_find(pol->upstream.dialect);

	return d ? d->name : NULL;
}

static int locks_config(struct worker *w, const struct policy *pol, const char *data_abs,
			struct lockreg_config *lc, char *err, size_t errlen)
{
	const struct workers_shared *sh = w->set->sh;
	const struct options *o = sh->o;
	const char *upstream = pol->upstream.endpoint;

	memset(lc, 0, sizeof(*lc));
	lc->base = w->base;
	lc->jobs = w->jobs;
	lc->s3_endpoint = upstream;
	lc->data_dir = upstream ? NULL : data_abs;
	lc->region = pol->upstream.region;
	lc->dialect = dialect_of(pol);
	lc->refresh_ms = o->refresh_ms ? o->refresh_ms : (long)pol->limits.refresh_interval_ms;
	lc->self_test = upstream != NULL;
	lc->metrics = sh->metrics;
	lc->marks = sh->marks;
	lc->board = sh->board;
	if (pol->mode != POLICY_MODE_HTTP)
		return 0;
	/* the upstream is not S3: locks live in the lock store(s) */
	lc->s3_endpoint = NULL;
	lc->data_dir = NULL;
	lc->region = NULL;
	lc->lock_store = pol->lock_store;
	lc->self_test = true;
	if (pol->lock_store && strncmp(pol->lock_store, "file://", 7) == 0 &&
	    mkdir(pol->lock_store + 7, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the lock store \"%s\": %s", pol->lock_store,
			 strerror(errno));
		return -1;
	}
	if (w->index == 0 && !o->lock_store && !sh->config_path)
		log_warn("no --lock-store: locks live in \"%s\"; replicas must share one "
			 "lock store", pol->lock_store ? pol->lock_store : "(none)");
	return 0;
}

/* The lock API's backend self-test store. */
static void self_test_config(const struct worker *w, const struct policy *pol,
			     const char *data_abs, struct lockapi_config *ac, char *url,
			     size_t urllen)
{
	const char *upstream = pol->upstream.endpoint;
	const char *check_bucket = w->set->sh->o->check_bucket;

	if (pol->mode == POLICY_MODE_HTTP) {
		ac->self_test.url = pol->lock_store; /* NULL: no store-wide test */
		ac->self_test.path_style = -1;       /* auto, as lockreg's stores */
	} else if (upstream && check_bucket) {
		snprintf(url, urllen, "s3://%s", check_bucket);
		ac->self_test.url = url;
		ac->self_test.endpoint = upstream;
		ac->self_test.region = pol->upstream.region;
		ac->self_test.dialect = dialect_of(pol);
		ac->self_test.path_style = 1;
	} else if (!upstream) {
		snprintf(url, urllen, "file://%s", data_abs);
		ac->self_test.url = url;
	}
}

/* Registers authz, lockapi, fencing (and s3local) in that order. */
static int add_handlers(struct worker *w)
{
	const struct proxy_handler hs[] = {
		{ "authz", authz_on_request, w->authz, NULL },
		{ "lockapi", lockapi_on_request, w->api, NULL },
		{ "fencing", fencing_on_request, w->fencing, fencing_owned_prefixes },
		{ "s3local", s3local_handler, w->s3local, NULL },
	};

	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		if (hs[i].arg && proxy_add_handler(w->proxy, &hs[i]) < 0)
			return -1;
	return proxy_on_done(w->proxy, count_response, w->set->sh->metrics);
}

/* Builds w's proxy, jobs queue, lock registry, lock API, fencing handler
 * and (without an upstream) embedded store over pol. Returns 0 or -1 with
 * a message in err. */
static int worker_build(struct worker *w, struct policy *pol, struct proxy_config cfg,
			char *err, size_t errlen)
{
	const struct workers_shared *sh = w->set->sh;
	const char *upstream = pol->upstream.endpoint;
	enum proxy_mode mode = pol->mode == POLICY_MODE_HTTP ? PROXY_MODE_HTTP : PROXY_MODE_S3;
	struct lockreg_config lc;
	struct fencing_config fc;
	struct lockapi_config ac;
	char data_abs[4096] = "", url[4200];

	w->policy = policy_hold(pol);
	w->proxy = proxy_new(w->base, &cfg, err, errlen);
	if (!w->proxy)
		return -1;
	if (sh->tls)
		proxy_set_tls(w->proxy, sh->tls);
	w->jobs = jobs_attach(sh->pool, w->base);
	if (!w->jobs)
		goto nomem;
	if (!upstream) {
		w->s3local = w->index == 0
			? s3local_new(w->base, w->jobs, pol->data_dir, 0, err, errlen)
			: s3local_new_sibling(w->set->w[0].s3local, w->base, w->jobs, err, errlen);
		if (!w->s3local)
			return -1;
		if (!realpath(pol->data_dir, data_abs)) {
			snprintf(err, errlen, "cannot resolve \"%s\": %s", pol->data_dir,
				 strerror(errno));
			return -1;
		}
	}
	if (locks_config(w, pol, data_abs, &lc, err, errlen) < 0)
		return -1;
	w->locks = lockreg_new(&lc, err, errlen);
	if (!w->locks)
		return -1;
	memset(&fc, 0, sizeof(fc));
	fc.locks = w->locks;
	fc.jobs = w->jobs;
	fc.nthreads = sh->store_threads;
	fc.metrics = sh->metrics;
	fc.s3_endpoint = mode == PROXY_MODE_HTTP ? NULL : upstream;
	fc.region = pol->upstream.region;
	fc.data_dir = upstream ? NULL : data_abs;
	fc.access_log = sh->access_log;
	fc.http_mode = mode == PROXY_MODE_HTTP;
	fc.barrier_timeout_ms = sh->o->barrier_timeout_ms;
	fc.barrier_grace_ms = sh->o->barrier_grace_ms;
	fc.base = w->base;
	fc.uploads = sh->uploads;
	fc.board = sh->board;
	if (pol->limits.objcache_entries > 0)
		fc.objcache_capacity = (size_t)pol->limits.objcache_entries;
	w->fencing = fencing_new(&fc, err, errlen);
	if (!w->fencing)
		return -1;
	if (w->s3local) /* parts without a token: by their upload's epoch */
		s3local_set_upload_hook(w->s3local, fencing_note_upload, w->fencing);
	/* -c: routes -> locks; flags: lock = bucket (S3), X-Fencing-Lock (HTTP) */
	if (sh->config_path && fencing_set_policy(w->fencing, pol, err, errlen) < 0)
		return -1;
	memset(&ac, 0, sizeof(ac));
	ac.base = w->base;
	ac.proxy = w->proxy;
	ac.jobs = w->jobs;
	ac.locks = w->locks;
	ac.fencing = w->fencing;
	ac.metrics = sh->metrics;
	ac.board = sh->board;
	self_test_config(w, pol, data_abs, &ac, url, sizeof(url));
	if (w->set->fleet.needed > 1)
		ac.fleet = &w->set->fleet;
	w->authz = authz_new(&(struct authz_config){ mode, sh->metrics, log_refusal, w,
						     mode == PROXY_MODE_S3 && pol->upstream.endpoint });
	if (!w->authz)
		goto nomem;
	authz_set_policy(w->authz, pol);
	ac.authz = w->authz;
	w->api = lockapi_new(&ac, err, errlen);
	if (!w->api)
		return -1;
	if (add_handlers(w) < 0 || lockapi_start_self_test(w->api) < 0)
		goto nomem;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* ---- commands ------------------------------------------------------------ */

/* Takes next and tls for what w accepts from now on (on w's thread). */
static void worker_apply(struct worker *w, struct policy *next, const struct proxy_config *cfg,
			 SSL_CTX *tls, int tls_change)
{
	struct workers *ws = w->set;
	char err[POLICY_ERR_MAX + 64];
	int last;

	if (tls_change)
		proxy_set_tls(w->proxy, tls);
	proxy_set_limits(w->proxy, cfg);
	authz_set_policy(w->authz, next);
	if (fencing_set_policy(w->fencing, next, err, sizeof(err)) < 0)
		log_error("reload: fencing keeps the previous routes: %s", err);
	policy_free(w->policy);
	w->policy = policy_hold(next);
	pthread_mutex_lock(&ws->mu);
	last = ws->reload_left > 0 && --ws->reload_left == 0;
	if (last)
		log_info("%s", ws->reload_msg);
	pthread_mutex_unlock(&ws->mu);
}

static void worker_drained(void *arg)
{
	struct worker *w = arg;
	struct workers *ws = w->set;

	if (w->index > 0)
		event_base_loopexit(w->base, NULL);
	pthread_mutex_lock(&ws->mu);
	ws->drained++;
	pthread_mutex_unlock(&ws->mu);
	event_active(ws->drained_ev, EV_READ, 1);
}

/* On worker 0's loop: once every worker drained, the caller's done(). */
static void all_drained_cb(evutil_socket_t fd, short what, void *arg)
{
	struct workers *ws = arg;
	size_t n;

	pthread_mutex_lock(&ws->mu);
	n = ws->drained;
	pthread_mutex_unlock(&ws->mu);
	if (n == ws->n && ws->drain_done) {
		void (*done)(void *arg) = ws->drain_done;

		ws->drain_done = NULL;
		done(ws->drain_arg);
	}
}

static void cmd_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct policy *next;
	struct proxy_config cfg;
	SSL_CTX *tls;
	unsigned cmds;
	int tls_change;
	long drain_ms;

	pthread_mutex_lock(&w->mu);
	cmds = w->cmds;
	next = w->next_policy;
	cfg = w->next_cfg;
	tls = w->next_tls;
	tls_change = w->tls_change;
	drain_ms = w->drain_ms;
	w->cmds = 0;
	w->next_policy = NULL;
	w->next_tls = NULL;
	w->tls_change = 0;
	pthread_mutex_unlock(&w->mu);
	if (cmds & CMD_STOP) {
		event_base_loopbreak(w->base);
	} else {
		if ((cmds & CMD_RELOAD) && next)
			worker_apply(w, next, &cfg, tls, tls_change);
		if (cmds & CMD_DRAIN)
			proxy_drain(w->proxy, drain_ms, worker_drained, w);
	}
	policy_free(next);
	SSL_CTX_free(tls);
}

/* Hands cmd to worker w (w > 0) and wakes its loop. */
static void post(struct worker *w, unsigned cmd, struct policy *next,
		 const struct proxy_config *cfg, SSL_CTX *tls, long drain_ms)
{
	pthread_mutex_lock(&w->mu);
	w->cmds |= cmd;
	if (cmd & CMD_RELOAD) {
		policy_free(w->next_policy);
		SSL_CTX_free(w->next_tls);
		w->next_policy = policy_hold(next);
		w->next_cfg = *cfg;
		w->next_tls = tls;
		if (tls)
			SSL_CTX_up_ref(tls);
		w->tls_change = tls != NULL;
	}
	if (cmd & CMD_DRAIN)
		w->drain_ms = drain_ms;
	pthread_mutex_unlock(&w->mu);
	event_active(w->cmd_ev, EV_READ, 1);
}

void workers_reload(struct workers *ws, struct policy *next, const struct proxy_config *cfg,
		    SSL_CTX *tls, const char *done_msg)
{
	pthread_mutex_lock(&ws->mu);
	ws->reload_left = ws->n;
	snprintf(ws->reload_msg, sizeof(ws->reload_msg), "%s", done_msg);
	pthread_mutex_unlock(&ws->mu);
	for (size_t i = 1; i < ws->n; i++)
		post(&ws->w[i], CMD_RELOAD, next, cfg, tls, 0);
	worker_apply(&ws->w[0], next, cfg, tls, tls != NULL);
}

void workers_drain(struct workers *ws, long timeout_ms, void (*done)(void *arg), void *arg)
{
	ws->drain_done = done;
	ws->drain_arg = arg;
	for (size_t i = 1; i < ws->n; i++)
		post(&ws->w[i], CMD_DRAIN, NULL, NULL, NULL, timeout_ms);
	proxy_drain(ws->w[0].proxy, timeout_ms, worker_drained, &ws->w[0]);
}

void workers_stop(struct workers *ws)
{
	for (size_t i = 1; i < ws->n; i++)
		post(&ws->w[i], CMD_STOP, NULL, NULL, NULL, 0);
}

/* ---- the set --------------------------------------------------------------- */

size_t workers_count(const struct workers *ws)
{
	return ws->n;
}

struct proxy *workers_main_proxy(const struct workers *ws)
{
	return ws->w[0].proxy;
}

size_t workers_inflight(const struct workers *ws)
{
	size_t n = 0;

	for (size_t i = 0; i < ws->n; i++)
		n += proxy_inflight(ws->w[i].proxy);
	return n;
}

void workers_collect(struct fencegate_metrics *fm, void *arg)
{
	struct workers *ws = arg;
	size_t open_total = 0;
	unsigned long long accepted_total = 0;
	uint64_t hits_total = 0, misses_total = 0;

	/* each read is atomic (proxy_inflight, proxy_connections and
	 * fencing_cache_counts may be called from any thread); the workers
	 * live until workers_free, after every loop stopped */
	for (size_t i = 0; i < ws->n; i++) {
		size_t open;
		unsigned long long accepted;
		uint64_t hits, misses;

		proxy_connections(ws->w[i].proxy, &open, &accepted);
		fencing_cache_counts(ws->w[i].fencing, &hits, &misses);
		open_total += open;
		accepted_total += accepted;
		hits_total += hits;
		misses_total += misses;
	}
	metrics_set(fm->in_flight, NULL, (double)workers_inflight(ws));
	metrics_set(fm->conns_open, NULL, (double)open_total);
	metrics_set(fm->conns_accepted, NULL, (double)accepted_total);
	metrics_set(fm->etag_cache_hits, NULL, (double)hits_total);
	metrics_set(fm->etag_cache_misses, NULL, (double)misses_total);
}

struct workers *workers_new(int n, struct event_base *base0, const struct workers_shared *sh,
			    struct policy *pol, char *err, size_t errlen)
{
	struct workers *ws = calloc(1, sizeof(*ws));
	struct proxy_config cfg = *sh->cfg;

	if (!ws || n < 1 || n > 64 || !(ws->w = calloc((size_t)n, sizeof(*ws->w)))) {
		free(ws);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ws->sh = sh;
	ws->fleet.needed = n;
	pthread_mutex_init(&ws->mu, NULL);
	ws->drained_ev = event_new(base0, -1, 0, all_drained_cb, ws);
	for (size_t j = 0; n > 1 && j < pol->nlisten; j++) {
		/* SO_REUSEPORT would let our sockets join another process's */
		if (listen_addr_free(pol->listen[j].addr, err, errlen) < 0) {
			workers_free(ws);
			return NULL;
		}
	}
	if (n > 1) {
		cfg.limits.reuse_port = 1;
		/* each loop its share of the connection limit (0: none) */
		cfg.limits.max_connections = (cfg.limits.max_connections + (size_t)n - 1) / (size_t)n;
	}
	for (int i = 0; i < n; i++) {
		struct worker *w = &ws->w[i];

		w->index = i;
		w->set = ws;
		pthread_mutex_init(&w->mu, NULL);
		ws->n++;
		w->base = i == 0 ? base0 : event_base_new();
		if (!ws->drained_ev || !w->base ||
		    !(w->cmd_ev = event_new(w->base, -1, 0, cmd_cb, w))) {
			snprintf(err, errlen, "cannot create an event loop");
			goto fail;
		}
		if (worker_build(w, pol, cfg, err, errlen) < 0)
			goto fail;
		for (size_t j = 0; j < pol->nlisten; j++)
			if (proxy_listen(w->proxy, pol->listen[j].addr, err, errlen) < 0)
				goto fail;
	}
	return ws;
fail:
	workers_free(ws);
	return NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	event_base_dispatch(w->base);
	return NULL;
}

int workers_start(struct workers *ws, char *err, size_t errlen)
{
	sigset_t all, old;
	int rc = 0;

	/* signals are the main thread's: the threads start with all blocked */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (size_t i = 1; i < ws->n && rc == 0; i++) {
		struct worker *w = &ws->w[i];

		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			snprintf(err, errlen, "cannot start event-loop worker %zu", i);
			rc = -1;
		} else {
			w->started = 1;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Frees w (its loop not running). */
static void worker_free(struct worker *w)
{
	jobs_free(w->jobs);
	w->jobs = NULL;
	proxy_free(w->proxy);
	s3local_free(w->s3local);
	lockapi_free(w->api);
	fencing_free(w->fencing);
	lockreg_free(w->locks);
	authz_free(w->authz);
	policy_free(w->policy);
	policy_free(w->next_policy);
	SSL_CTX_free(w->next_tls);
	if (w->cmd_ev)
		event_free(w->cmd_ev);
	if (w->index > 0 && w->base)
		event_base_free(w->base);
	pthread_mutex_destroy(&w->mu);
}

void workers_free(struct workers *ws)
{
	if (!ws)
		return;
	for (size_t i = 1; i < ws->n; i++) {
		if (ws->w[i].started) {
			post(&ws->w[i], CMD_STOP, NULL, NULL, NULL, 0);
			pthread_join(ws->w[i].thread, NULL);
		}
	}
	/* the main thread frees every worker: the loops are still (their
	 * jobs' completions are delivered by jobs_free on each loop) */
	for (size_t i = ws->n; i-- > 0;)
		worker_free(&ws->w[i]);
	if (ws->drained_ev)
		event_free(ws->drained_ev);
	pthread_mutex_destroy(&ws->mu);
	free(ws->w);
	free(ws);
}
