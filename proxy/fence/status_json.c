/* status_json.c — the status page's JSON form (GET /_fence/status with
 * Accept: application/json or ?format=json): the same view as the HTML
 * page, field by field as the README's "The status page" section documents.
 * Times are Unix milliseconds, unknown values null. It gathers nothing
 * (lockapi_status.c does); cJSON escapes the strings. */
#include "status_render.h"

#include <string.h>

static void add_time(cJSON *o, const char *name, int64_t t_ms)
{
	if (t_ms > 0)
		cJSON_AddNumberToObject(o, name, (double)t_ms);
	else
		cJSON_AddNullToObject(o, name);
}

static void add_str_or_null(cJSON *o, const char *name, const char *s)
{
	if (s && s[0])
		cJSON_AddStringToObject(o, name, s);
	else
		cJSON_AddNullToObject(o, name);
}

/* o.series = {"forwarded": [...], "refused": [...]}, oldest first; returns
 * it (NULL on ENOMEM). */
static cJSON *add_series(cJSON *o, const uint32_t *forwarded, const uint32_t *refused)
{
	cJSON *series = cJSON_AddObjectToObject(o, "series");
	cJSON *fw = cJSON_AddArrayToObject(series, "forwarded");
	cJSON *rf = cJSON_AddArrayToObject(series, "refused");

	for (size_t i = 0; fw && rf && i < STATUSBOARD_SLOTS; i++) {
		cJSON_AddItemToArray(fw, cJSON_CreateNumber(forwarded[i]));
		cJSON_AddItemToArray(rf, cJSON_CreateNumber(refused[i]));
	}
	return series;
}

static cJSON *process_json(const struct status_view *v)
{
	cJSON *p = cJSON_CreateObject();

	cJSON_AddStringToObject(p, "version", v->version ? v->version : "");
	add_time(p, "startedAt", v->started_ms);
	cJSON_AddNumberToObject(p, "uptimeMs",
				v->started_ms > 0 ? (double)(v->now_ms - v->started_ms) : 0);
	cJSON_AddNumberToObject(p, "workers", v->workers);
	cJSON_AddNumberToObject(p, "connectionsOpen", v->connections_open);
	cJSON_AddNumberToObject(p, "connectionsAccepted", v->connections_accepted);
	cJSON_AddNumberToObject(p, "inFlight", v->in_flight);
	cJSON_AddNumberToObject(p, "residentBytes", v->resident_bytes);
	cJSON_AddNumberToObject(p, "cpuSeconds", v->cpu_seconds);
	cJSON_AddNumberToObject(p, "openFds", v->open_fds);
	cJSON_AddNumberToObject(p, "maxFds", v->max_fds);
	return p;
}

static cJSON *storage_json(const struct status_view *v)
{
	static const char *const tests[] = { "none", "running", "passed", "failed" };
	static const char *const probes[] = { "not_probed", "up", "down" };
	cJSON *s = cJSON_CreateObject(), *errs;
	int64_t last_load = 0;

	for (size_t i = 0; i < v->board->nlocks; i++)
		if (v->board->locks[i].loaded_at_ms > last_load)
			last_load = v->board->locks[i].loaded_at_ms;
	cJSON_AddStringToObject(s, "mode", v->mode ? v->mode : "");
	cJSON_AddStringToObject(s, "selfTest", tests[v->self_test]);
	add_str_or_null(s, "selfTestMessage", v->self_test_message);
	cJSON_AddNumberToObject(s, "workersPassed", v->workers_passed);
	cJSON_AddStringToObject(s, "upstream", probes[v->probe]);
	add_str_or_null(s, "upstreamMessage", v->probe_message);
	if (v->probe != STATUS_PROBE_OFF)
		cJSON_AddNumberToObject(s, "probeIntervalMs", (double)v->probe_interval_ms);
	else
		cJSON_AddNullToObject(s, "probeIntervalMs");
	add_time(s, "lastLoadAt", last_load);
	errs = cJSON_AddObjectToObject(s, "storeErrors");
	for (size_t i = 0; errs && i < v->nstore_errors; i++)
		cJSON_AddNumberToObject(errs, v->store_errors[i].op, v->store_errors[i].count);
	return s;
}

static cJSON *lock_json(const struct status_view *v, const struct statusboard_lock *l)
{
	cJSON *o = cJSON_CreateObject(), *by;
	bool held = l->noted && strcmp(l->state, "held") == 0 && l->lease_end_ms > 0;

	cJSON_AddStringToObject(o, "lock", l->name);
	if (l->noted) {
		cJSON_AddNumberToObject(o, "epoch", (double)l->epoch);
		cJSON_AddStringToObject(o, "state", l->state);
	} else {
		cJSON_AddNullToObject(o, "epoch");
		cJSON_AddStringToObject(o, "state", "not_loaded");
	}
	add_str_or_null(o, "holder", l->noted ? l->holder : NULL);
	add_time(o, "leaseEndAt", held ? l->lease_end_ms : 0);
	if (held)
		cJSON_AddNumberToObject(o, "leaseLeftMs", (double)(l->lease_end_ms > v->now_ms
								   ? l->lease_end_ms - v->now_ms : 0));
	else
		cJSON_AddNullToObject(o, "leaseLeftMs");
	add_time(o, "stateAt", l->noted ? l->noted_at_ms : 0);
	add_time(o, "lastLoadedAt", l->loaded_at_ms);
	add_time(o, "loadFailedAt", l->load_failed_at_ms);
	cJSON_AddNumberToObject(o, "forwarded", (double)l->forwarded);
	cJSON_AddNumberToObject(o, "refused", (double)l->refused);
	by = cJSON_AddObjectToObject(o, "refusedByReason");
	for (size_t k = 0; by && k < l->nreasons; k++)
		cJSON_AddNumberToObject(by, l->reasons[k].reason, (double)l->reasons[k].count);
	for (size_t k = 0; k < STATUSBOARD_SLOTS; k++)
		if (l->series_forwarded[k] || l->series_refused[k]) {
			add_series(o, l->series_forwarded, l->series_refused);
			return o;
		}
	cJSON_AddNullToObject(o, "series"); /* no write in the window */
	return o;
}

static cJSON *refusal_json(const struct statusboard_refusal *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "time", (double)r->at_ms);
	add_str_or_null(o, "lock", r->lock);
	add_str_or_null(o, "client", r->client);
	cJSON_AddStringToObject(o, "method", r->method);
	cJSON_AddStringToObject(o, "resource", r->resource);
	cJSON_AddBoolToObject(o, "resourceCut", r->resource_cut);
	if (r->has_presented)
		cJSON_AddNumberToObject(o, "presentedEpoch", (double)r->presented);
	else
		cJSON_AddNullToObject(o, "presentedEpoch");
	if (r->has_current)
		cJSON_AddNumberToObject(o, "currentEpoch", (double)r->current);
	else
		cJSON_AddNullToObject(o, "currentEpoch");
	cJSON_AddStringToObject(o, "reason", r->reason);
	return o;
}

cJSON *status_json(const struct status_view *v)
{
	const struct statusboard_snapshot *b = v->board;
	cJSON *o = cJSON_CreateObject(), *arr, *w, *series;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "time", (double)v->now_ms);
	cJSON_AddNumberToObject(o, "refreshSeconds", STATUS_REFRESH_S);
	cJSON_AddItemToObject(o, "process", process_json(v));
	cJSON_AddItemToObject(o, "storage", storage_json(v));
	arr = cJSON_AddArrayToObject(o, "locks");
	for (size_t i = 0; arr && i < b->nlocks; i++)
		cJSON_AddItemToArray(arr, lock_json(v, &b->locks[i]));
	w = cJSON_AddObjectToObject(o, "writes");
	cJSON_AddNumberToObject(w, "forwarded", (double)b->forwarded);
	cJSON_AddNumberToObject(w, "refused", (double)b->refused);
	cJSON_AddNumberToObject(w, "untrackedLocks", (double)b->untracked);
	arr = cJSON_AddArrayToObject(o, "refusedWrites");
	for (size_t i = 0; arr && i < b->nring; i++)
		cJSON_AddItemToArray(arr, refusal_json(&b->ring[i]));
	series = add_series(o, b->series_forwarded, b->series_refused);
	cJSON_AddNumberToObject(series, "slotMs", STATUSBOARD_SLOT_MS);
	cJSON_AddNumberToObject(series, "start", (double)b->series_start_ms);
	return o;
}
