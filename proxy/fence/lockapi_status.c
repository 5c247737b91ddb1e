/* lockapi_status.c — GET /_fence/status, the operator's page: gathers a
 * status_view from snapshots (the process's status board, this worker's
 * self-test and upstream probe state, the metrics registry's process
 * totals and lock-store error counts, /proc/self) and answers it as HTML
 * or, with Accept: application/json or ?format=json, as JSON.
 *
 * It never blocks the loop: nothing here touches the store (lock states are
 * what the workers last learned, with their age). Who may ask is authz.c's
 * decision ("admin" on "/" with authentication on). It shows no secret and
 * no server path: a local-directory store is named by its kind only. */
#include "lockapi_int.h"

#include <stdlib.h>
#include <string.h>

#include "ops/procstat.h"
#include "status_render.h"

#ifndef FENCE_VERSION
#define FENCE_VERSION "unknown"
#endif

/* 1 if the query has the parameter format=json. */
static int query_wants_json(const char *q)
{
	while (q && *q) {
		size_t n = strcspn(q, "&");

		if (n == 11 && strncmp(q, "format=json", 11) == 0)
			return 1;
		q += n;
		if (*q == '&')
			q++;
	}
	return 0;
}

/* JSON for ?format=json, or when Accept names application/json and not
 * text/html (a browser's Accept names both, or HTML alone). */
static int wants_json(struct proxy_req *req)
{
	const char *accept = proxy_req_header(req, "Accept");

	if (query_wants_json(proxy_req_query(req)))
		return 1;
	return accept && strstr(accept, "application/json") && !strstr(accept, "text/html");
}

static void add_store_error(const char *const *values, double value, void *arg)
{
	struct status_view *v = arg;

	if (value <= 0 || v->nstore_errors == STATUS_STORE_OPS_MAX)
		return;
	snprintf(v->store_errors[v->nstore_errors].op, sizeof(v->store_errors[0].op), "%s",
		 values[0]);
	v->store_errors[v->nstore_errors++].count = value;
}

static void read_gauge(const char *const *values, double value, void *arg)
{
	(void)values;
	*(double *)arg = value;
}

/* The process part: the metrics' process totals (every worker's
 * connections, set by the collect hook as for /_fence/metrics) and
 * /proc/self. */
static void gather_process(struct lockapi *api, struct status_view *v)
{
	struct fencegate_metrics *m = api->metrics;
	struct procstat ps = {0};

	v->version = FENCE_VERSION;
	v->workers = api->fleet ? api->fleet->needed : 1;
	if (procstat_read(&ps) == 0 || ps.start_time > 0)
		v->started_ms = (int64_t)(ps.start_time * 1000.0);
	v->resident_bytes = ps.resident_bytes;
	v->cpu_seconds = ps.cpu_seconds;
	v->open_fds = ps.open_fds;
	v->max_fds = ps.max_fds;
	if (m && m->collect) {
		m->collect(m, m->collect_arg);
		metrics_each(m->in_flight, read_gauge, &v->in_flight);
		metrics_each(m->conns_open, read_gauge, &v->connections_open);
		metrics_each(m->conns_accepted, read_gauge, &v->connections_accepted);
	} else if (api->proxy) {
		size_t open;
		unsigned long long accepted;

		proxy_connections(api->proxy, &open, &accepted);
		v->in_flight = (double)proxy_inflight(api->proxy);
		v->connections_open = (double)open;
		v->connections_accepted = (double)accepted;
	}
	if (m)
		metrics_each(m->store_errors, add_store_error, v);
}

/* The storage part: this worker's self-test and probe, the fleet's count. */
static void gather_storage(struct lockapi *api, struct status_view *v)
{
	bool local = api->st_url && strncmp(api->st_url, "file://", 7) == 0;

	v->mode = !api->st_url ? "no store-wide self-test (locks are checked one by one)"
		  : local ? "local directory" : api->st_endpoint ? "S3 (upstream)" : "S3";
	if (!api->st_url)
		v->self_test = STATUS_TEST_NONE;
	else if (api->healthy)
		v->self_test = STATUS_TEST_PASSED;
	else /* a failure tried again later still reads failed until it passes */
		v->self_test = api->self_test_done ? STATUS_TEST_FAILED : STATUS_TEST_RUNNING;
	/* a local store's message names its directory: not shown (the log has it) */
	v->self_test_message = v->self_test != STATUS_TEST_FAILED ? ""
			       : local ? "see the log" : api->self_test_err;
	v->workers_passed = api->fleet
		? __atomic_load_n(&api->fleet->passed, __ATOMIC_ACQUIRE) : api->healthy ? 1 : 0;
	v->probe = !api->probe_timer ? STATUS_PROBE_OFF
		   : api->upstream_down ? STATUS_PROBE_DOWN : STATUS_PROBE_UP;
	v->probe_message = api->upstream_down ? api->upstream_err : "";
	v->probe_interval_ms = UPSTREAM_PROBE_MS;
}

enum proxy_action lockapi_status_page(struct lockapi *api, struct proxy_req *req)
{
	struct front_hdrs h = {0};
	struct status_view v;
	struct statusboard_snapshot *snap = NULL;
	cJSON *json = NULL;
	char *body = NULL;
	size_t len = 0;
	int as_json = wants_json(req);

	if (!api->board)
		return lockapi_reply_err(req, 404, "NoSuchFenceEndpoint", "the status page is off");
	memset(&v, 0, sizeof(v));
	v.now_ms = lockreg_wall_ms();
	snap = statusboard_snapshot(api->board, v.now_ms);
	if (!snap)
		goto nomem;
	v.board = snap;
	gather_process(api, &v);
	gather_storage(api, &v);
	if (as_json) {
		json = status_json(&v);
		body = json ? cJSON_PrintUnformatted(json) : NULL;
		len = body ? strlen(body) : 0;
	} else {
		body = status_html(&v, &len);
	}
	if (!body)
		goto nomem;
	front_hdrs_add(&h, "Cache-Control", "no-store");
	front_hdrs_add(&h, "X-Content-Type-Options", "nosniff");
	front_hdrs_add(&h, "Referrer-Policy", "no-referrer");
	/* no script may run, nothing is fetched, no one may frame it */
	front_hdrs_add(&h, "Content-Security-Policy",
		       "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
	front_hdrs_add(&h, "Vary", "Accept");
	proxy_req_reply(req, 200, &h, as_json ? "application/json" : "text/html; charset=utf-8",
			body, len);
	front_hdrs_clear(&h);
	free(body);
	cJSON_Delete(json);
	statusboard_snapshot_free(snap);
	return PROXY_HANDLED;
nomem:
	cJSON_Delete(json);
	statusboard_snapshot_free(snap);
	return lockapi_reply_err(req, 500, "InternalError", "out of memory");
}
