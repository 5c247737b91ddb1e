/* fencectl_proxy.c — `fencectl --proxy URL COMMAND`: acquire, renew,
 * release, status, list and run through a fencegate's lock HTTP API
 * (lockhttp.h) instead of the store, with the same output and exit codes.
 * Calls are signed with SigV4 when the usual AWS chain (wire/awscreds.h)
 * has credentials, as a proxy with clients requires; an https proxy is
 * verified with --cacert, $AWS_CA_BUNDLE or $SSL_CERT_FILE. It turns the
 * API's answers (JSON from the lock API, S3's XML error from the proxy's
 * authentication) into messages; `run` is fencectl_run.c's loop over a
 * lease whose acquire, renew and release are these calls. It parses no
 * arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lockhttp.h"
#include "lock/store/s3xml.h"
#include "lock/store/timesrc.h"
#include "wire/awscreds.h"
#include "fencectl_int.h"

#define API_TIMEOUT_MS 30000

/* The lock API as this process calls it: who signs, and how TLS verifies.
 * Read-only once opened, so the keeper thread may call it too. */
struct api {
	const struct cli *c;
	struct aws_credentials cred;
	struct lockhttp_opts opts;
	int signed_calls;
};

/* The "message" of an API error answer, or a fallback. */
static const char *api_message(const cJSON *reply, long status, char *buf, size_t len)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(reply, "message");

	if (cJSON_IsString(m))
		return m->valuestring;
	snprintf(buf, len, "unexpected HTTP status %ld", status);
	return buf;
}

static double api_number(const cJSON *reply, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(reply, name);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static int api_error_code(const cJSON *reply, const char *code)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply, "error");

	return cJSON_IsString(e) && strcmp(e->valuestring, code) == 0;
}

/* The region calls are signed for: --region, $AWS_REGION,
 * $AWS_DEFAULT_REGION, else us-east-1 (the proxy's default). */
static const char *region(const struct cli *c)
{
	const char *r = c->region;

	if (!r || !*r)
		r = getenv("AWS_REGION");
	if (!r || !*r)
		r = getenv("AWS_DEFAULT_REGION");
	return r && *r ? r : "us-east-1";
}

/* Opens a: credentials from the usual AWS chain (signed calls), or none
 * anywhere (unsigned calls: a proxy without clients). Returns -1 (message
 * printed) when some are configured but unusable, e.g. a key id without
 * its secret, or a --profile that does not exist. */
static int api_open(struct api *a, const struct cli *c)
{
	char err[512];

	memset(a, 0, sizeof(*a));
	a->c = c;
	a->opts.ca_file = c->cacert;
	a->opts.region = region(c);
	if (aws_credentials_load(c->profile, &a->cred, err, sizeof(err)) == 0) {
		a->signed_calls = 1;
		a->opts.cred = &a->cred;
		return 0;
	}
	if (c->profile || getenv("AWS_ACCESS_KEY_ID") || getenv("AWS_SECRET_ACCESS_KEY") ||
	    getenv("AWS_PROFILE")) {
		fprintf(stderr, "fencectl: cannot sign the lock API calls: %s\n", err);
		aws_credentials_clear(&a->cred);
		return -1;
	}
	return 0;
}

static void api_close(struct api *a)
{
	aws_credentials_clear(&a->cred);
}

/* Sends METHOD path with body (NULL: none) and waits up to timeout_ms.
 * Returns 0 when the lock API answered: *status, and *reply its JSON (NULL
 * when empty or not JSON; the caller deletes it). Returns -1 with what
 * happened in err when no answer arrived, or when the proxy's
 * authentication refused the call (S3's XML error: what to do is said). */
static int api_call(const struct api *a, const char *method, const char *path, const cJSON *body,
		    long timeout_ms, long *status, cJSON **reply, char *err, size_t errlen)
{
	char *json = NULL, *text = NULL, code[128], message[512];
	int rc = -1;

	*reply = NULL;
	if (body && !(json = cJSON_PrintUnformatted(body))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (lockhttp_request(a->c->proxy, &a->opts, method, path, json, timeout_ms, status, &text,
			     err, errlen) < 0)
		goto out;
	*reply = text ? cJSON_Parse(text) : NULL;
	if (!*reply && text && s3xml_parse_error(text, strlen(text), code, sizeof(code), message,
						 sizeof(message)) == S3XML_OK && code[0]) {
		snprintf(err, errlen, "the proxy refused the call: %ld %s: %s%s", *status, code,
			 message, a->signed_calls ? "" : " (the call was not signed: set "
			 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, to a "
			 "client of the proxy)");
		goto out;
	}
	rc = 0;
out:
	free(text);
	free(json);
	return rc;
}

/* The body of an acquire as c says: ttl, wait, and the holder (this
 * process, as with --store, not the proxy's default). NULL on ENOMEM. */
static cJSON *acquire_body(const struct cli *c)
{
	cJSON *req = cJSON_CreateObject();
	char host[200], me[256];

	if (!req)
		return NULL;
	if (c->has_ttl)
		cJSON_AddNumberToObject(req, "ttlMs", (double)c->ttl_ms);
	if (c->has_wait)
		cJSON_AddNumberToObject(req, "waitMs", (double)c->wait_ms);
	if (!c->holder) {
		if (gethostname(host, sizeof(host)) != 0)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
		snprintf(me, sizeof(me), "%s-%ld", host, (long)getpid());
	}
	cJSON_AddStringToObject(req, "holder", c->holder ? c->holder : me);
	return req;
}

/* A 409 LockHeld or LockLost printed; 1 if reply was one, else 0. */
static int print_conflict(const char *name, long status, const cJSON *reply)
{
	const cJSON *holder = cJSON_GetObjectItemCaseSensitive(reply, "holder");
	char buf[64];

	if (status != 409)
		return 0;
	if (api_error_code(reply, "LockHeld"))
		fprintf(stderr, "fencectl: lock \"%s\" is held by \"%s\" (epoch %.0f); "
			"free in at most %.1fs\n", name,
			cJSON_IsString(holder) ? holder->valuestring : "?",
			api_number(reply, "epoch"), api_number(reply, "retryAfterMs") / 1000.0);
	else if (api_error_code(reply, "LockLost"))
		fprintf(stderr, "fencectl: lock lost: %s\n",
			api_message(reply, status, buf, sizeof(buf)));
	else
		return 0;
	return 1;
}

/* ---- run: the lease through the API ----------------------------------- */

struct proxy_lease {
	struct api api;
	const char *name;
	char acquire_path[200], renew_path[200], release_path[200];
};

/* The grant's ttl and deadline from an answer to a call sent at sent. */
static void grant_times(struct lock_grant *g, const cJSON *reply, int64_t sent)
{
	int64_t ttl = (int64_t)api_number(reply, "ttlMs");

	if (ttl > 0)
		g->ttl_ms = ttl;
	g->deadline_mono_ms = sent + g->ttl_ms - lock_margin_default(g->ttl_ms);
}

static int lease_acquire(void *ctx, const struct cli *c, struct lock_grant *g)
{
	struct proxy_lease *pl = ctx;
	cJSON *req = acquire_body(c), *reply = NULL;
	const cJSON *holder;
	char err[512], buf[64];
	int64_t sent = timesrc_mono_ms(timesrc_system());
	long status = 0;
	int code = 1;

	if (!req) {
		fprintf(stderr, "fencectl: out of memory\n");
		return 1;
	}
	if (api_call(&pl->api, "POST", pl->acquire_path, req, API_TIMEOUT_MS + (long)c->wait_ms,
		     &status, &reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "fencectl: %s\n", err);
		goto out;
	}
	if (print_conflict(pl->name, status, reply)) {
		code = EXIT_HELD;
		goto out;
	}
	if (status != 200 || !reply || api_number(reply, "epoch") < 1) {
		fprintf(stderr, "fencectl: POST %s: %s\n", pl->acquire_path,
			api_message(reply, status, buf, sizeof(buf)));
		goto out;
	}
	g->epoch = (uint64_t)api_number(reply, "epoch");
	g->ttl_ms = c->ttl_ms > 0 ? c->ttl_ms : 30000;
	holder = cJSON_GetObjectItemCaseSensitive(reply, "holder");
	if (cJSON_IsString(holder))
		snprintf(g->holder, sizeof(g->holder), "%s", holder->valuestring);
	grant_times(g, reply, sent);
	code = 0;
out:
	cJSON_Delete(req);
	cJSON_Delete(reply);
	return code;
}

/* renew and release: POST {"epoch"}; 200, 409 LockLost, or another failure */
static enum lock_code lease_call(struct proxy_lease *pl, const char *path, struct lock_grant *g,
				 char *err, size_t errlen)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	const struct timesrc *ts = timesrc_system();
	int64_t sent = timesrc_mono_ms(ts), left = g->deadline_mono_ms - sent;
	enum lock_code rc = LOCK_ERR_STORE;
	char buf[64];
	long status = 0;

	if (left <= 0) {
		snprintf(err, errlen, "the lease deadline passed before the call");
		rc = LOCK_LOST;
		goto out;
	}
	if (!req || !cJSON_AddNumberToObject(req, "epoch", (double)g->epoch)) {
		snprintf(err, errlen, "out of memory");
		rc = LOCK_ERR_NOMEM;
		goto out;
	}
	/* never waited for past the deadline: an answer after it means nothing */
	if (api_call(&pl->api, "POST", path, req, left, &status, &reply, err, errlen) < 0)
		goto out;
	if (timesrc_mono_ms(ts) >= g->deadline_mono_ms) {
		snprintf(err, errlen, "the answer came after the lease deadline");
		rc = LOCK_LOST;
	} else if (status == 200 && reply) {
		grant_times(g, reply, sent);
		g->renewals++;
		rc = LOCK_OK;
	} else if (status == 409 && api_error_code(reply, "LockLost")) {
		snprintf(err, errlen, "%s", api_message(reply, status, buf, sizeof(buf)));
		rc = LOCK_LOST;
	} else {
		snprintf(err, errlen, "POST %s: %s", path, api_message(reply, status, buf,
									sizeof(buf)));
	}
out:
	cJSON_Delete(req);
	cJSON_Delete(reply);
	return rc;
}

static enum lock_code lease_renew(void *ctx, struct lock_grant *g, char *err, size_t errlen)
{
	struct proxy_lease *pl = ctx;

	return lease_call(pl, pl->renew_path, g, err, errlen);
}

static enum lock_code lease_release(void *ctx, struct lock_grant *g, char *err, size_t errlen)
{
	struct proxy_lease *pl = ctx;

	return lease_call(pl, pl->release_path, g, err, errlen);
}

static int cmd_run(const struct cli *c, const char *name)
{
	struct proxy_lease pl;
	struct fencectl_lease l = { .name = name, .ctx = &pl, .acquire = lease_acquire,
				    .renew = lease_renew, .release = lease_release,
				    .time = timesrc_system() };
	int code;

	if (api_open(&pl.api, c) < 0)
		return 1;
	pl.name = name;
	snprintf(pl.acquire_path, sizeof(pl.acquire_path), "/_fence/locks/%s/acquire", name);
	snprintf(pl.renew_path, sizeof(pl.renew_path), "/_fence/locks/%s/renew", name);
	snprintf(pl.release_path, sizeof(pl.release_path), "/_fence/locks/%s/release", name);
	code = fencectl_run_lease(c, &l);
	api_close(&pl.api);
	return code;
}

/* ---- the one-call commands -------------------------------------------- */

int fencectl_cmd_proxy(const struct cli *c)
{
	const char *cmd = c->command, *name = c->npos ? c->pos[0] : NULL;
	char path[256], err[512] = "", buf[64];
	const char *method = "POST";
	cJSON *req = NULL, *reply = NULL;
	long status = 0, timeout_ms = API_TIMEOUT_MS;
	int code = 1;
	struct api a;

	if (strcmp(cmd, "run") == 0)
		return cmd_run(c, name);
	if (strcmp(cmd, "acquire") == 0) {
		req = acquire_body(c);
		timeout_ms += (long)c->wait_ms;
		snprintf(path, sizeof(path), "/_fence/locks/%s/acquire", name);
	} else if (strcmp(cmd, "renew") == 0 || strcmp(cmd, "release") == 0) {
		req = cJSON_CreateObject();
		cJSON_AddNumberToObject(req, "epoch", (double)fencectl_parse_epoch(c->pos[1]));
		snprintf(path, sizeof(path), "/_fence/locks/%s/%s", name, cmd);
	} else if (strcmp(cmd, "status") == 0) {
		method = "GET";
		snprintf(path, sizeof(path), "/_fence/locks/%s", name);
	} else if (strcmp(cmd, "list") == 0) {
		method = "GET";
		snprintf(path, sizeof(path), "/_fence/locks");
	} else {
		fprintf(stderr, "fencectl: %s is not available through --proxy (the lock HTTP API "
			"has acquire, renew, release, status and list; run uses them); use "
			"--store\n", cmd);
		return 1;
	}
	if (strcmp(method, "POST") == 0 && !req) {
		fprintf(stderr, "fencectl: out of memory\n");
		return 1;
	}
	if (api_open(&a, c) < 0)
		goto out;
	if (api_call(&a, method, path, req, timeout_ms, &status, &reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "fencectl: %s\n", err);
		goto close;
	}
	if (print_conflict(name, status, reply)) {
		code = EXIT_HELD;
		goto close;
	}
	if (status != 200 || !reply) {
		fprintf(stderr, "fencectl: %s %s: %s\n", method, path,
			api_message(reply, status, buf, sizeof(buf)));
		goto close;
	}
	if (strcmp(cmd, "acquire") == 0 && !c->json)
		printf("%.0f\n", api_number(reply, "epoch"));
	else if (c->json || strcmp(cmd, "status") == 0 || strcmp(cmd, "list") == 0) {
		fencectl_print_json(reply); /* frees it */
		reply = NULL;
	}
	code = 0;
close:
	api_close(&a);
out:
	cJSON_Delete(req);
	cJSON_Delete(reply);
	return code;
}
