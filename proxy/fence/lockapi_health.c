/* lockapi_health.c — whether this proxy can serve writes, and what it has
 * done: the backend self-test at start (every condition fencegate uses,
 * capability by capability, and a race: lock_probe_store), published for
 * the fencing path (backend_caps_publish: an operation whose condition the
 * backend lacks is refused, the others served) and logged once per
 * process; then, on S3 stores, a one-key listing every few seconds; the
 * /_fence/health answer built on both (with a "capabilities" field), and
 * the /_fence/metrics page. It takes no locks and serves no lock operation
 * (lockapi.c does). */
#include "lockapi_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backendcaps.h"
#include "ops/log.h"

/* The probe's capabilities on /_fence/health: name -> true, false, or
 * null (not probed); the operations the proxy refuses, with why, and those
 * it forwards although their condition is ignored (dialect.h
 * BACKEND_ENFORCED). */
static void add_capabilities(struct lockapi *api, cJSON *o)
{
	const struct backend_report *rep = &api->self_test_rep;
	cJSON *caps, *refused, *unguarded;
	unsigned cap, missing;

	if (!api->self_test_probed)
		return;
	caps = cJSON_AddObjectToObject(o, "capabilities");
	for (cap = 1; cap & CAP_ALL; cap <<= 1) {
		if (!(rep->probed & cap))
			cJSON_AddNullToObject(caps, backend_cap_name(cap));
		else
			cJSON_AddBoolToObject(caps, backend_cap_name(cap), (rep->caps & cap) != 0);
	}
	cJSON_AddStringToObject(o, "if_match", rep->etag_form == DIALECT_ETAG_BARE ? "bare"
				: "quoted");
	refused = cJSON_AddObjectToObject(o, "refused_operations");
	unguarded = cJSON_AddObjectToObject(o, "unguarded_operations");
	for (int op = 0; op < BACKEND_OP_COUNT; op++) {
		missing = backend_caps_missing(backendcaps_of(rep, api->st_cfg.dialect),
					       (enum backend_op)op);
		if (missing)
			cJSON_AddStringToObject(backend_refuses((enum backend_op)op) ? refused
						: unguarded, backend_op_name((enum backend_op)op),
						backend_cap_lacking(missing));
	}
}

/* Records this worker's self-test outcome for the others. */
/* Counts this worker's result; returns 1 when it was the last pass the
 * fleet waited for (or there is no fleet), so one line says so. */
static int fleet_note(struct lockapi *api, int passed)
{
	if (!api->fleet)
		return passed;
	return __atomic_add_fetch(passed ? &api->fleet->passed : &api->fleet->failed, 1,
				  __ATOMIC_RELEASE) == (passed ? api->fleet->needed : 0);
}

/* 503 while another worker's self-test is running or failed; 0 when every
 * one passed (or there is only this one). */
static int fleet_unhealthy(struct lockapi *api, struct proxy_req *req)
{
	cJSON *o;

	if (!api->fleet ||
	    __atomic_load_n(&api->fleet->passed, __ATOMIC_ACQUIRE) >= api->fleet->needed)
		return 0;
	o = cJSON_CreateObject();
	if (__atomic_load_n(&api->fleet->failed, __ATOMIC_ACQUIRE) > 0) {
		cJSON_AddStringToObject(o, "status", "failed");
		cJSON_AddStringToObject(o, "message", "the backend self-test failed on another "
					"event loop (see the log)");
	} else {
		cJSON_AddStringToObject(o, "status", "starting");
		cJSON_AddStringToObject(o, "message", "the backend self-test is running on "
					"another event loop");
	}
	lockapi_reply_json(req, 503, o);
	return 1;
}

enum proxy_action lockapi_health_page(struct lockapi *api, struct proxy_req *req)
{
	cJSON *o;

	if (api->healthy && fleet_unhealthy(api, req))
		return PROXY_HANDLED;
	o = cJSON_CreateObject();
	if (api->healthy && api->upstream_down) {
		cJSON_AddStringToObject(o, "status", "upstream_unreachable");
		cJSON_AddStringToObject(o, "message", api->upstream_err);
		lockapi_reply_json(req, 503, o);
	} else if (api->healthy) {
		cJSON_AddStringToObject(o, "status", "ok");
		add_capabilities(api, o);
		lockapi_reply_json(req, 200, o);
	} else {
		cJSON_AddStringToObject(o, "status", api->self_test_done ? "failed" : "starting");
		cJSON_AddStringToObject(o, "message", api->self_test_done
				       ? api->self_test_err : "the backend self-test is running");
		add_capabilities(api, o);
		lockapi_reply_json(req, 503, o);
	}
	return PROXY_HANDLED;
}

enum proxy_action lockapi_live_page(struct lockapi *api, struct proxy_req *req)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "status", "alive");
	cJSON_AddBoolToObject(o, "ready", api->healthy && !api->upstream_down &&
			      (!api->fleet || __atomic_load_n(&api->fleet->passed, __ATOMIC_ACQUIRE) >=
					      api->fleet->needed));
	lockapi_reply_json(req, 200, o);
	return PROXY_HANDLED;
}

enum proxy_action lockapi_metrics_page(struct lockapi *api, struct proxy_req *req)
{
	struct front_hdrs h = {0};
	char *text;
	size_t len = 0;

	if (!api->metrics)
		return lockapi_reply_err(req, 404, "NoSuchFenceEndpoint", "metrics are off");
	if (api->fencing && !api->metrics->collect)
		fencing_update_metrics(api->fencing);
	if (api->metrics->collect) {
		api->metrics->collect(api->metrics, api->metrics->collect_arg);
	} else if (api->proxy) {
		size_t open;
		unsigned long long accepted;

		metrics_set(api->metrics->in_flight, NULL, (double)proxy_inflight(api->proxy));
		proxy_connections(api->proxy, &open, &accepted);
		metrics_set(api->metrics->conns_open, NULL, (double)open);
		metrics_set(api->metrics->conns_accepted, NULL, (double)accepted);
	}
	metrics_set(api->metrics->self_test, NULL, api->healthy ? 1 : 0);
	fencegate_metrics_update_process(api->metrics);
	for (struct lockreg_entry *e = lockreg_first(api->locks); e; e = e->next)
		if (e->loaded)
			lockapi_set_epoch_metric(api, e);
	text = metrics_render(api->metrics->registry, &len);
	if (!text)
		return lockapi_reply_err(req, 500, "InternalError", "out of memory");
	front_hdrs_add(&h, "Cache-Control", "no-store");
	proxy_req_reply(req, 200, &h, METRICS_CONTENT_TYPE, text, len);
	front_hdrs_clear(&h);
	free(text);
	return PROXY_HANDLED;
}

/* ---- self-test and lifecycle -------------------------------------------- */

struct self_test_job {
	struct lockapi *api;
	enum lock_code code;
	struct backend_report rep;
	bool probed;
	char err[400];
};

static void self_test_run(void *arg)
{
	struct self_test_job *j = arg;
	struct store *st;
	unsigned missing;
	char err[300];

	st = store_open(&j->api->st_cfg, err, sizeof(err));
	if (!st) {
		j->code = LOCK_ERR_STORE;
		snprintf(j->err, sizeof(j->err), "cannot open the store: %s", err);
		return;
	}
	j->code = lock_probe_store(st, &j->api->st_cfg, ".fencegate-selftest/probe-", &j->rep,
				   err, sizeof(err));
	j->probed = j->code == LOCK_OK;
	if (j->code == LOCK_OK) {
		/* what the dialect distrusts counts as missing too */
		missing = lock_probe_missing(&j->rep, BACKEND_OP_LOCK);
		if (!missing)
			missing = backend_caps_missing(backendcaps_of(&j->rep,
								      j->api->st_cfg.dialect),
						       BACKEND_OP_LOCK);
		if (missing) {
			j->code = LOCK_ERR_UNSAFE;
			snprintf(err, sizeof(err), "%s (%s): two writers could both hold a lock",
				 backend_cap_lacking(missing), lock_report_seen(&j->rep, missing));
		}
	}
	if (j->code != LOCK_OK)
		snprintf(j->err, sizeof(j->err), "%s: %s", lock_strerror(j->code), err);
	store_close(st);
}

/* ---- the upstream probe ---------------------------------------------------- */

struct probe_job {
	struct lockapi *api;
	bool ok;
	char err[300];
};

static void probe_run(void *arg)
{
	struct probe_job *j = arg;
	struct lockapi *api = j->api;
	struct store_list_page page = {0};
	struct store_result res = STORE_RESULT_INIT;
	enum store_code sc;

	if (!api->probe_st) {
		struct store_config sc_cfg = api->st_cfg;

		sc_cfg.timeout_ms = UPSTREAM_PROBE_TIMEOUT_MS;
		sc_cfg.max_retries = -1;
		api->probe_st = store_open(&sc_cfg, j->err, sizeof(j->err));
		if (!api->probe_st)
			return;
	}
	sc = store_list(api->probe_st, store_root(api->probe_st), NULL, NULL, 1, &page, &res);
	j->ok = sc == STORE_OK;
	if (!j->ok)
		snprintf(j->err, sizeof(j->err), "listing \"%.100s\": %s%s%.150s", api->st_url,
			 store_strerror(sc), res.err_message[0] ? ": " : "", res.err_message);
	store_list_page_free(&page);
	store_result_clear(&res);
}

static void probe_done(void *arg)
{
	struct probe_job *j = arg;
	struct lockapi *api = j->api;

	api->probing = false;
	if (!j->ok && !api->upstream_down)
		log_warn("upstream unreachable, health answers 503: %s", j->err);
	else if (j->ok && api->upstream_down)
		log_info("upstream reachable again on \"%s\"", api->st_url);
	api->upstream_down = !j->ok;
	snprintf(api->upstream_err, sizeof(api->upstream_err), "%s", j->ok ? "" : j->err);
	free(j);
}

static void probe_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lockapi *api = arg;
	struct probe_job *j;

	(void)fd;
	(void)what;
	if (api->probing || !(j = calloc(1, sizeof(*j))))
		return;
	j->api = api;
	api->probing = true;
	if (jobs_submit(api->jobs, probe_run, probe_done, j) < 0) {
		api->probing = false;
		free(j);
	}
}

/* After the self-test: S3 stores are probed from now on. */
static void start_probe(struct lockapi *api)
{
	struct timeval tv = { UPSTREAM_PROBE_MS / 1000, (UPSTREAM_PROBE_MS % 1000) * 1000 };

	if (!api->base || strncmp(api->st_url, "s3://", 5) != 0)
		return;
	api->probe_timer = event_new(api->base, -1, EV_PERSIST, probe_cb, api);
	if (!api->probe_timer || event_add(api->probe_timer, &tv) < 0)
		log_warn("cannot start the upstream probe: health will not report the upstream");
}

static int submit_self_test(struct lockapi *api);

static void self_test_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lockapi *api = arg;

	(void)fd;
	(void)what;
	if (submit_self_test(api) < 0)
		log_error("cannot run the backend self-test again: health stays 503");
}

/* The store could not be reached or answered with an error: that says
 * nothing about its conditional writes, so try again later (a store that
 * is not up yet when the proxy starts, a descriptor shortage). A verdict
 * (conditions ignored, no Date) is final. */
static void schedule_retry(struct lockapi *api)
{
	struct timeval tv;

	api->retry_ms = api->retry_ms ? api->retry_ms * 2 : SELF_TEST_RETRY_MS;
	if (api->retry_ms > SELF_TEST_RETRY_MAX_MS)
		api->retry_ms = SELF_TEST_RETRY_MAX_MS;
	tv.tv_sec = api->retry_ms / 1000;
	tv.tv_usec = (api->retry_ms % 1000) * 1000;
	if (!api->self_test_retry)
		api->self_test_retry = evtimer_new(api->base, self_test_retry_cb, api);
	if (!api->self_test_retry || evtimer_add(api->self_test_retry, &tv) < 0) {
		fleet_note(api, 0); /* no retry: as final as a verdict */
		log_error("%s; refusing to report healthy", api->self_test_err);
		return;
	}
	log_error("%s; refusing to report healthy, trying again in %.1f s", api->self_test_err,
		  (double)api->retry_ms / 1000.0);
}

static void self_test_done(void *arg)
{
	struct self_test_job *j = arg;
	struct lockapi *api = j->api;
	int last = 0;

	api->self_test_done = 1;
	if (j->probed) {
		api->self_test_rep = j->rep;
		api->self_test_probed = true;
		backendcaps_publish(&j->rep, api->st_cfg.dialect);
	}
	/* the other workers hear of a pass, or of a verdict; a failure that
	 * is tried again is neither yet */
	if (j->code == LOCK_OK || j->code != LOCK_ERR_STORE || !api->base)
		last = fleet_note(api, j->code == LOCK_OK);
	if (j->code == LOCK_OK) {
		api->healthy = 1;
		start_probe(api);
		if (last) /* once per process, by the last worker to pass */
			log_info("backend self-test passed on \"%s\": the lock protocol's "
				 "conditional writes are honoured", api->st_url);
	} else {
		snprintf(api->self_test_err, sizeof(api->self_test_err),
			 "backend self-test failed on \"%.100s\": %.280s", api->st_url, j->err);
		if (j->code == LOCK_ERR_STORE && api->base)
			schedule_retry(api);
		else
			log_error("%s; refusing to report healthy", api->self_test_err);
	}
	free(j);
}

static int submit_self_test(struct lockapi *api)
{
	struct self_test_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -1;
	j->api = api;
	if (jobs_submit(api->jobs, self_test_run, self_test_done, j) < 0) {
		free(j);
		return -1;
	}
	return 0;
}

int lockapi_start_self_test(struct lockapi *api)
{
	if (!api->st_url) {
		api->healthy = 1;
		api->self_test_done = 1;
		fleet_note(api, 1);
		return 0;
	}
	return submit_self_test(api);
}

int lockapi_healthy(const struct lockapi *api)
{
	return api->healthy;
}

