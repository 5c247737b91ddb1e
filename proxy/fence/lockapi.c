/* lockapi.c — /_fence/ endpoints: the lock HTTP API (JSON in and out,
 * cJSON) and the router that also sends health and metrics to
 * lockapi_health.c.
 *
 * Lock calls run on the lock's serialized job queue; an acquire that must
 * wait (waitMs) retries from loop timers instead of blocking a worker, so
 * the lock's other work (loads, lookups) is never stuck behind it. It does
 * not fence data writes. */
#include "lockapi_int.h"
#include "lockapi_args.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ops/accesslog.h"
#include "ops/log.h"
#include "wire/s3err.h"



enum api_op { API_ACQUIRE, API_RENEW, API_RELEASE, API_STATUS };

struct api_req {
	struct lockapi *api;
	struct proxy_req *req;
	enum api_op op;
	struct lockreg_entry *lock;
	char *body;
	size_t body_len;
	bool too_big;
	/* who asks (authz), and whether it may end a lease another client took */
	char principal[LOCK_HOLDER_MAX];
	bool may_break;
	bool not_holder;             /* job result: refused for want of "break" */
	/* parsed arguments */
	char holder[LOCK_HOLDER_MAX];
	int64_t ttl_ms;
	int64_t wait_ms;
	uint64_t epoch;
	int64_t deadline_ms;         /* monotonic end of waiting */
	int tries;
	bool suspended;              /* GET status: resume; POST: consumed, reply only */
	struct event *timer;
	/* job results */
	enum lock_code code;
	int64_t took_ms;             /* the store calls' time, on the worker */
	bool no_bucket;              /* a store failure: the bucket does not exist */
	struct lock_grant grant;
	struct lock_info info;
	char err[320];
};

static void api_req_free(void *arg)
{
	struct api_req *ar = arg;

	if (!ar)
		return;
	if (ar->timer)
		event_free(ar->timer);
	free(ar->body);
	free(ar);
}

/* ---- replies ------------------------------------------------------------ */

void lockapi_reply_json(struct proxy_req *req, int status, cJSON *obj)
{
	struct front_hdrs h = {0};
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;

	front_hdrs_add(&h, "Cache-Control", "no-store");
	if (!text) {
		proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
	} else {
		char *line = NULL;
		int len = asprintf(&line, "%s\n", text);

		if (len > 0)
			proxy_req_reply(req, status, &h, "application/json", line, (size_t)len);
		else
			proxy_req_reply(req, status, &h, "application/json", text, strlen(text));
		if (len > 0)
			free(line);
	}
	front_hdrs_clear(&h);
	free(text);
	cJSON_Delete(obj);
}

enum proxy_action lockapi_reply_err(struct proxy_req *req, int status, const char *code,
				   const char *message)
{
	struct s3err e = { .code = code, .message = message,
			   .request_id = proxy_req_id(req) };
	struct front_hdrs h = {0};
	size_t len = 0;
	char *body = s3err_json_dup(&e, &len);

	if (!body) {
		proxy_req_reply_error(req, status, code, message, NULL);
		return PROXY_HANDLED;
	}
	front_hdrs_add(&h, "Cache-Control", "no-store");
	proxy_req_reply(req, status, &h, S3ERR_JSON_CONTENT_TYPE, body, len);
	front_hdrs_clear(&h);
	free(body);
	return PROXY_HANDLED;
}

static void add_time(cJSON *o, const char *name, int64_t unix_ms)
{
	char buf[40];

	if (unix_ms > 0 && accesslog_time(unix_ms, buf, sizeof(buf))[0])
		cJSON_AddStringToObject(o, name, buf);
	else
		cJSON_AddNullToObject(o, name);
}

void lockapi_set_epoch_metric(struct lockapi *api, struct lockreg_entry *e)
{
	if (api->metrics)
		metrics_set(api->metrics->lock_epoch, (const char *[]){ e->name },
			    (double)e->high_water);
}

/* ---- lock jobs ---------------------------------------------------------- */

static void api_run(struct lockreg_entry *e, struct lockreg_io *io, void *arg)
{
	struct api_req *ar = arg;
	int64_t t0 = lockreg_mono_ms();

	ar->took_ms = 0;
	if (!io->lk) {
		ar->code = LOCK_ERR_STORE;
		snprintf(ar->err, sizeof(ar->err), "%s", io->err ? io->err : "no store");
		ar->no_bucket = io->no_bucket;
		return;
	}
	switch (ar->op) {
	case API_ACQUIRE: {
		struct lock_acquire_opts ao = { .holder = ar->holder[0] ? ar->holder : NULL,
						.client = ar->principal[0] ? ar->principal : NULL,
						.ttl_ms = ar->ttl_ms, .wait_ms = 0 };

		ar->code = lock_acquire(io->lk, &ao, &ar->grant, &ar->info, ar->err,
					sizeof(ar->err));
		break;
	}
	case API_RENEW:
	case API_RELEASE:
		if (ar->principal[0] && !ar->may_break) {
			/* a lease is ended or kept by the client that took it;
			 * anyone else needs "break" (the S3 API's rule too) */
			ar->code = lock_status(io->lk, &ar->info, ar->err, sizeof(ar->err));
			if (ar->code != LOCK_OK)
				break;
			if (ar->info.epoch == ar->epoch &&
			    strcmp(ar->info.client, ar->principal) != 0) {
				ar->not_holder = true;
				break;
			}
		}
		memset(&ar->grant, 0, sizeof(ar->grant));
		ar->grant.epoch = ar->epoch;
		ar->grant.ttl_ms = ar->ttl_ms;
		ar->code = ar->op == API_RENEW
			   ? lock_renew(io->lk, &ar->grant, ar->err, sizeof(ar->err))
			   : lock_release(io->lk, &ar->grant, ar->err, sizeof(ar->err));
		if (ar->code == LOCK_OK || ar->code == LOCK_LOST)
			lock_status(io->lk, &ar->info, ar->err + 0, 0);
		break;
	case API_STATUS:
		ar->code = lock_status(io->lk, &ar->info, ar->err, sizeof(ar->err));
		break;
	}
	if (ar->code == LOCK_ERR_STORE)
		ar->no_bucket = lockreg_bucket_missing(io->st);
	ar->took_ms = lockreg_mono_ms() - t0;
}

static const char *const api_op_names[] = { "acquire", "renew", "release", "status" };

static void api_done(struct lockreg_entry *e, void *arg);

/* Ends the request after a reply was made (or the client left). A
 * consumed request may be freed by its reply, so callers read suspended
 * before replying. */
static void finish(struct proxy_req *req, bool suspended, enum proxy_action act)
{
	if (suspended)
		proxy_req_resume(req, act);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct api_req *ar = arg;

	bool suspended = ar->suspended;
	struct proxy_req *req = ar->req;

	if (proxy_req_client_gone(req) ||
	    lockreg_submit(ar->api->locks, ar->lock, api_run, api_done, ar) < 0)
		finish(req, suspended, lockapi_reply_err(req, 503, "ServiceUnavailable",
						 "cannot queue the lock operation"));
}

static cJSON *grant_json(struct lockreg_entry *e, const struct lock_grant *g)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "lock", e->name);
	cJSON_AddNumberToObject(o, "epoch", (double)g->epoch);
	cJSON_AddStringToObject(o, "holder", g->holder);
	cJSON_AddNumberToObject(o, "ttlMs", (double)g->ttl_ms);
	add_time(o, "expiresAt", g->expires_at_ms);
	cJSON_AddNumberToObject(o, "expiresAtMs", (double)g->expires_at_ms);
	return o;
}

static void api_done(struct lockreg_entry *e, void *arg)
{
	struct api_req *ar = arg;
	struct lockapi *api = ar->api;
	struct proxy_req *req = ar->req;
	bool suspended = ar->suspended;
	cJSON *o;
	char msg[800];

	if (api->metrics) {
		metrics_observe(api->metrics->store_seconds, &api_op_names[ar->op],
				(double)ar->took_ms / 1000.0);
		if (ar->code >= LOCK_ERR_STORE)
			metrics_add(api->metrics->store_errors, &api_op_names[ar->op], 1);
	}

	if (proxy_req_client_gone(req)) {
		/* an acquire that succeeded still raised nothing here: the lock
		 * file exists and the next load or lookup learns it */
		if (ar->code == LOCK_OK && ar->op == API_ACQUIRE)
			lockreg_note(e, ar->grant.epoch, LOCK_STATE_HELD, ar->grant.expires_at_ms,
				     ar->grant.holder, ar->grant.ttl_ms);
		finish(req, suspended, lockapi_reply_err(req, 499, "ClientGone", "the client left"));
		return;
	}
	if (ar->code == LOCK_OK || ar->code == LOCK_HELD || ar->code == LOCK_LOST) {
		if (ar->info.epoch)
			lockreg_note_info(e, &ar->info);
		e->loaded = e->loaded || ar->op == API_STATUS;
	}
	switch (ar->op) {
	case API_ACQUIRE:
		if (ar->code == LOCK_OK) {
			lockreg_note(e, ar->grant.epoch, LOCK_STATE_HELD, ar->grant.expires_at_ms,
				     ar->grant.holder, ar->grant.ttl_ms);
			lockapi_set_epoch_metric(api, e);
			log_info("lock \"%s\" acquired: epoch \"%" PRIu64 "\" holder \"%s\"",
				 e->name, ar->grant.epoch, ar->grant.holder);
			lockapi_reply_json(req, 200, grant_json(e, &ar->grant));
			break;
		}
		if (ar->code == LOCK_HELD) {
			int64_t left = ar->deadline_ms - lockreg_mono_ms();
			int64_t retry = ar->info.remaining_ms > 0 ? ar->info.remaining_ms : 1000;

			if (left > 0) {
				int64_t backoff = 100LL << (ar->tries < 5 ? ar->tries : 5);
				int64_t wait = backoff < retry ? backoff : retry;
				struct timeval tv;

				if (wait > left)
					wait = left;
				ar->tries++;
				tv.tv_sec = wait / 1000;
				tv.tv_usec = (wait % 1000) * 1000;
				if (!ar->timer)
					ar->timer = evtimer_new(api->base, retry_cb, ar);
				if (ar->timer && evtimer_add(ar->timer, &tv) == 0)
					return; /* still suspended */
			}
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "error", "LockHeld");
			snprintf(msg, sizeof(msg), "lock \"%s\" is held by \"%s\" (epoch %" PRIu64 ")",
				 e->name, ar->info.payload.leader_id, ar->info.epoch);
			cJSON_AddStringToObject(o, "message", msg);
			cJSON_AddStringToObject(o, "lock", e->name);
			cJSON_AddStringToObject(o, "holder", ar->info.payload.leader_id);
			cJSON_AddNumberToObject(o, "epoch", (double)ar->info.epoch);
			cJSON_AddNumberToObject(o, "retryAfterMs", (double)retry);
			lockapi_reply_json(req, 409, o);
			break;
		}
		goto failed;
	case API_RENEW:
	case API_RELEASE:
		if (ar->not_holder) {
			snprintf(msg, sizeof(msg), "epoch %" PRIu64 " of lock \"%s\" was taken by "
				 "another client; renewing or releasing it needs the \"break\" "
				 "permission", ar->epoch, e->name);
			finish(req, suspended, lockapi_reply_err(req, 403, "AccessDenied", msg));
			return;
		}
		if (ar->code == LOCK_OK) {
			if (ar->op == API_RELEASE) {
				lockreg_note(e, ar->epoch, LOCK_STATE_RELEASED, 0, ar->grant.holder, 0);
			} else {
				lockreg_note(e, ar->epoch, LOCK_STATE_HELD, ar->grant.expires_at_ms,
					     ar->grant.holder, ar->grant.ttl_ms);
			}
			lockapi_set_epoch_metric(api, e);
			o = grant_json(e, &ar->grant);
			if (ar->op == API_RELEASE)
				cJSON_AddTrueToObject(o, "released");
			lockapi_reply_json(req, 200, o);
			break;
		}
		if (ar->code == LOCK_LOST) {
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "error", "LockLost");
			cJSON_AddStringToObject(o, "message", ar->err);
			cJSON_AddStringToObject(o, "lock", e->name);
			cJSON_AddNumberToObject(o, "epoch", (double)ar->epoch);
			cJSON_AddNumberToObject(o, "currentEpoch", (double)e->high_water);
			lockapi_reply_json(req, 409, o);
			break;
		}
		goto failed;
	case API_STATUS:
		if (ar->code != LOCK_OK)
			goto failed;
		lockapi_set_epoch_metric(api, e);
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "lock", e->name);
		cJSON_AddNumberToObject(o, "epoch", (double)ar->info.epoch);
		cJSON_AddStringToObject(o, "state", lock_state_name(ar->info.state));
		if (ar->info.epoch && ar->info.state != LOCK_STATE_UNREADABLE) {
			cJSON_AddStringToObject(o, "holder", ar->info.payload.leader_id);
			cJSON_AddNumberToObject(o, "ttlMs", (double)ar->info.payload.validity_ms);
		} else {
			cJSON_AddNullToObject(o, "holder");
			cJSON_AddNullToObject(o, "ttlMs");
		}
		cJSON_AddNumberToObject(o, "remainingMs", (double)ar->info.remaining_ms);
		add_time(o, "expiresAt", ar->info.epoch ? ar->info.last_modified * 1000 +
						     ar->info.payload.validity_ms : 0);
		cJSON_AddNumberToObject(o, "highWater", (double)e->high_water);
		lockapi_reply_json(req, 200, o);
		break;
	}
	finish(req, suspended, PROXY_HANDLED);
	return;
failed:
	if (ar->no_bucket && e->bucket[0]) {
		/* a bucket-named lock (no config): the bucket the client named */
		finish(req, suspended, lockapi_reply_err(req, 404, "NoSuchBucket",
						 "The specified bucket does not exist"));
		return;
	}
	snprintf(msg, sizeof(msg), "%s: %s", lock_strerror(ar->code), ar->err);
	log_warn("lock \"%s\": %s", e->name, msg);
	finish(req, suspended, lockapi_reply_err(req, ar->code == LOCK_ERR_INVALID ? 400 : 503,
			     ar->code == LOCK_ERR_INVALID ? "InvalidArgument" : "ServiceUnavailable",
			     msg));
}

/* ---- request bodies ---------------------------------------------------- */

static int body_cb(struct proxy_req *req, const char *data, size_t len, void *arg)
{
	struct api_req *ar = arg;
	char *nb;

	if (ar->too_big || ar->body_len + len > LOCKAPI_BODY_MAX) {
		ar->too_big = true;
		return 0;
	}
	nb = realloc(ar->body, ar->body_len + len + 1);
	if (!nb)
		return -1;
	ar->body = nb;
	memcpy(nb + ar->body_len, data, len);
	ar->body_len += len;
	nb[ar->body_len] = '\0';
	return 0;
}

/* Parses the body into ar's arguments. Returns 0, or -1 with the message
 * for a 400 in err. */
static int parse_args(struct api_req *ar, char *err, size_t errlen)
{
	struct lockapi_args args;

	if (ar->too_big) {
		snprintf(err, errlen, "the body is larger than 16 KiB");
		return -1;
	}
	if (lockapi_args_parse(ar->body, ar->body_len, ar->op != API_ACQUIRE,
			       ar->api->max_wait_ms, &args, err, errlen) < 0)
		return -1;
	memcpy(ar->holder, args.holder, sizeof(ar->holder));
	ar->ttl_ms = args.ttl_ms;
	ar->wait_ms = args.wait_ms;
	ar->epoch = args.epoch;
	return 0;
}

static void body_end(struct proxy_req *req, int ok, void *arg)
{
	struct api_req *ar = arg;
	char bad[200];

	if (!ok)
		return;
	if (parse_args(ar, bad, sizeof(bad)) < 0) {
		lockapi_reply_err(req, 400, "InvalidArgument", bad);
		return;
	}
	ar->deadline_ms = lockreg_mono_ms() + ar->wait_ms;
	/* from here on the reply comes from api_done via resume; the
	 * consume obligation is met by that reply */
	if (lockreg_submit(ar->api->locks, ar->lock, api_run, api_done, ar) < 0)
		lockapi_reply_err(req, 503, "ServiceUnavailable", "cannot queue the lock operation");
}

/* ---- endpoints ----------------------------------------------------------- */

static enum proxy_action list_locks(struct lockapi *api, struct proxy_req *req)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "locks");

	lockreg_adopt_shared(api->locks); /* the locks other workers know */
	for (struct lockreg_entry *e = lockreg_first(api->locks); e; e = e->next) {
		cJSON *l = cJSON_CreateObject();

		cJSON_AddStringToObject(l, "lock", e->name);
		cJSON_AddStringToObject(l, "bucket", e->bucket);
		cJSON_AddStringToObject(l, "prefix", e->prefix);
		if (e->loaded) {
			cJSON_AddNumberToObject(l, "epoch", (double)e->high_water);
			cJSON_AddStringToObject(l, "state", lock_state_name(e->state));
			cJSON_AddStringToObject(l, "holder", e->holder);
		} else if (e->mark && e->high_water) { /* known from another worker */
			cJSON_AddNumberToObject(l, "epoch", (double)e->high_water);
			cJSON_AddStringToObject(l, "state", "unknown");
			cJSON_AddNullToObject(l, "holder");
		} else {
			cJSON_AddNullToObject(l, "epoch");
			cJSON_AddStringToObject(l, "state", "unknown");
			cJSON_AddNullToObject(l, "holder");
		}
		cJSON_AddItemToArray(arr, l);
	}
	lockapi_reply_json(req, 200, o);
	return PROXY_HANDLED;
}

static void api_log_done(const struct proxy_summary *s, void *arg)
{
	struct lockapi *api = arg;

	if (api->fencing)
		fencing_log_request(api->fencing, s, NULL, "lock_api");
}

enum proxy_action lockapi_on_request(struct proxy_req *req, void *arg)
{
	struct lockapi *api = arg;
	const char *path = proxy_req_path(req);
	const char *method = proxy_req_method(req);
	int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	int is_post = strcmp(method, "POST") == 0;
	char name[LOCK_NAME_MAX + 1];
	const char *rest, *slash, *why = NULL;
	struct api_req *ar;
	size_t nlen;

	if (strncmp(path, "/_fence/", 8) != 0)
		return PROXY_PASS;
	proxy_req_on_done(req, api_log_done, api);
	/* readiness (serve writes?) and liveness (is this process's loop
	 * alive?): an S3 outage makes a replica unready, never dead */
	if (strcmp(path, "/_fence/health") == 0 || strcmp(path, "/_fence/ready") == 0)
		return is_get ? lockapi_health_page(api, req)
			      : lockapi_reply_err(req, 405, "MethodNotAllowed", "health answers GET");
	if (strcmp(path, "/_fence/live") == 0)
		return is_get ? lockapi_live_page(api, req)
			      : lockapi_reply_err(req, 405, "MethodNotAllowed", "live answers GET");
	if (strcmp(path, "/_fence/metrics") == 0)
		return is_get ? lockapi_metrics_page(api, req)
			      : lockapi_reply_err(req, 405, "MethodNotAllowed", "metrics answer GET");
	if (strcmp(path, "/_fence/status") == 0)
		return is_get ? lockapi_status_page(api, req)
			      : lockapi_reply_err(req, 405, "MethodNotAllowed", "status answers GET");
	if (strcmp(path, "/_fence/locks") == 0 || strcmp(path, "/_fence/locks/") == 0)
		return is_get ? list_locks(api, req)
			      : lockapi_reply_err(req, 405, "MethodNotAllowed", "the list answers GET");
	if (strncmp(path, "/_fence/locks/", 14) != 0)
		return lockapi_reply_err(req, 404, "NoSuchFenceEndpoint", "no such endpoint under /_fence/");
	rest = path + 14;
	slash = strchr(rest, '/');
	nlen = slash ? (size_t)(slash - rest) : strlen(rest);
	if (nlen == 0 || nlen > LOCK_NAME_MAX)
		return lockapi_reply_err(req, 400, "InvalidLockName", "lock names are 1 to 128 bytes");
	memcpy(name, rest, nlen);
	name[nlen] = '\0';
	ar = calloc(1, sizeof(*ar));
	if (!ar)
		return lockapi_reply_err(req, 500, "InternalError", "out of memory");
	ar->api = api;
	ar->req = req;
	proxy_req_set_ctx(req, ar, api_req_free);
	if (!slash || !slash[1]) {
		if (!is_get)
			return lockapi_reply_err(req, 405, "MethodNotAllowed", "a lock's status answers GET");
		ar->op = API_STATUS;
	} else if (strcmp(slash, "/acquire") == 0) {
		ar->op = API_ACQUIRE;
	} else if (strcmp(slash, "/renew") == 0) {
		ar->op = API_RENEW;
	} else if (strcmp(slash, "/release") == 0) {
		ar->op = API_RELEASE;
	} else {
		return lockapi_reply_err(req, 404, "NoSuchFenceEndpoint",
				 "lock endpoints: acquire, renew, release");
	}
	if (ar->op != API_STATUS && !is_post)
		return lockapi_reply_err(req, 405, "MethodNotAllowed", "lock operations answer POST");
	if (api->fencing && !fencing_lock_known(api->fencing, name))
		return lockapi_reply_err(req, 404, "NoSuchLock",
				 "no lock of that name in the configuration");
	ar->lock = lockreg_get(api->locks, name, name, 1, &why);
	if (!ar->lock)
		return lockapi_reply_err(req, why && strcmp(why, "full") == 0 ? 503 : 400,
				 why && strcmp(why, "full") == 0 ? "SlowDown" : "InvalidLockName",
				 why && strcmp(why, "full") == 0
				 ? "too many locks in use"
				 : "without a config, lock NAME guards bucket NAME: it must be a "
				   "valid lock and S3 bucket name");
	lockreg_touch(ar->lock);
	if (api->authz && proxy_req_principal(req)) {
		snprintf(ar->principal, sizeof(ar->principal), "%s", proxy_req_principal(req));
		ar->may_break = authz_may_break(api->authz, ar->principal, name);
	}
	if (ar->op == API_STATUS) {
		ar->suspended = true;
		if (lockreg_submit(api->locks, ar->lock, api_run, api_done, ar) < 0)
			return lockapi_reply_err(req, 503, "ServiceUnavailable",
					 "cannot queue the lock operation");
		return PROXY_SUSPEND;
	}
	/* POST: read the JSON body, then run (replying from api_done) */
	if (proxy_req_consume(req, body_cb, body_end, ar) < 0)
		return lockapi_reply_err(req, 500, "InternalError", "cannot read the body");
	return PROXY_HANDLED;
}

struct lockapi *lockapi_new(const struct lockapi_config *cfg, char *err, size_t errlen)
{
	struct lockapi *api = calloc(1, sizeof(*api));

	if (!api)
		goto nomem;
	api->base = cfg->base;
	api->proxy = cfg->proxy;
	api->jobs = cfg->jobs;
	api->locks = cfg->locks;
	api->fencing = cfg->fencing;
	api->metrics = cfg->metrics;
	api->max_wait_ms = cfg->max_wait_ms > 0 ? cfg->max_wait_ms : 60000;
	api->authz = cfg->authz;
	api->st_cfg = cfg->self_test;
	api->fleet = cfg->fleet;
	api->board = cfg->board;
	if ((cfg->self_test.url && !(api->st_url = strdup(cfg->self_test.url))) ||
	    (cfg->self_test.endpoint && !(api->st_endpoint = strdup(cfg->self_test.endpoint))) ||
	    (cfg->self_test.region && !(api->st_region = strdup(cfg->self_test.region))))
		goto nomem;
	api->st_cfg.url = api->st_url;
	api->st_cfg.endpoint = api->st_endpoint;
	api->st_cfg.region = api->st_region;
	return api;
nomem:
	snprintf(err, errlen, "out of memory");
	lockapi_free(api);
	return NULL;
}

void lockapi_free(struct lockapi *api)
{
	if (!api)
		return;
	if (api->probe_timer)
		event_free(api->probe_timer);
	if (api->self_test_retry)
		event_free(api->self_test_retry);
	store_close(api->probe_st); /* jobs were drained: no probe runs */
	free(api->st_url);
	free(api->st_endpoint);
	free(api->st_region);
	free(api);
}
