/* lockapi_int.h — what the lock HTTP API's files share (lockapi.c: the
 * lock endpoints and the router; lockapi_health.c: the backend self-test,
 * the upstream probe, /_fence/health and /_fence/metrics; lockapi_status.c:
 * /_fence/status). Internal to proxy/fence/lockapi*.c. */
#ifndef FENCE_LOCKAPI_INT_H
#define FENCE_LOCKAPI_INT_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "lockapi.h"

struct lockapi {
	struct event_base *base;
	struct proxy *proxy;
	struct jobs *jobs;
	struct lockreg *locks;
	struct fencing *fencing;
	struct fencegate_metrics *metrics;
	struct store_config st_cfg;
	char *st_url, *st_endpoint, *st_region;
	long max_wait_ms;
	const struct authz *authz;
	int healthy;
	struct lockapi_fleet *fleet;    /* NULL: one worker */
	int self_test_done;
	char self_test_err[512];
	struct backend_report self_test_rep; /* lockapi_health.c: the last probe */
	bool self_test_probed;               /* self_test_rep is filled */
	/* a self-test that failed for an I/O reason (not a verdict on the
	 * store) runs again after retry_ms (doubling up to SELF_TEST_RETRY_MAX_MS) */
	struct event *self_test_retry;
	long retry_ms;
	/* the upstream probe (S3 mode with --check-bucket): a one-key listing
	 * every UPSTREAM_PROBE_MS on the jobs pool, one at a time */
	struct event *probe_timer;
	struct store *probe_st;      /* used by the probe job only */
	bool probing;
	bool upstream_down;
	char upstream_err[320];
	struct statusboard *board;   /* NULL: no status page */
};

#define UPSTREAM_PROBE_MS 5000
#define SELF_TEST_RETRY_MS 1000
#define SELF_TEST_RETRY_MAX_MS 30000
#define UPSTREAM_PROBE_TIMEOUT_MS 2000

/* A JSON answer (obj is consumed). */
void lockapi_reply_json(struct proxy_req *req, int status, cJSON *obj);
/* A JSON error {"error": code, "message": ...}; returns PROXY_HANDLED. */
enum proxy_action lockapi_reply_err(struct proxy_req *req, int status, const char *code,
				    const char *message);
/* fencegate_lock_current_epoch for e. */
void lockapi_set_epoch_metric(struct lockapi *api, struct lockreg_entry *e);

/* GET /_fence/health and GET /_fence/metrics (lockapi_health.c). */
/* GET /_fence/live: 200 {"status":"alive","ready":bool} whenever the
 * event loop answers, whatever the storage does (a liveness probe must not
 * restart a replica during an S3 outage; readiness is /_fence/ready). */
enum proxy_action lockapi_live_page(struct lockapi *api, struct proxy_req *req);
enum proxy_action lockapi_health_page(struct lockapi *api, struct proxy_req *req);
enum proxy_action lockapi_metrics_page(struct lockapi *api, struct proxy_req *req);
/* GET /_fence/status, HTML or JSON (lockapi_status.c). */
enum proxy_action lockapi_status_page(struct lockapi *api, struct proxy_req *req);

#endif
