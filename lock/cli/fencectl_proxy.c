/* fencectl_proxy.c — `fencectl --proxy URL COMMAND`: acquire, renew,
 * release, status and list through a fencegate's lock HTTP API
 * (lockhttp.h) instead of the store, with the same output and exit codes.
 * Calls are signed with SigV4 when the usual AWS chain (wire/awscreds.h)
 * has credentials, as a proxy with clients requires; an https proxy is
 * verified with --cacert, $AWS_CA_BUNDLE or $SSL_CERT_FILE. It turns the
 * API's answers (JSON from the lock API, S3's XML error from the proxy's
 * authentication) into messages; it parses no arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lockhttp.h"
#include "lock/store/s3xml.h"
#include "wire/awscreds.h"
#include "fencectl_int.h"

/* The "message" of an API error answer, or a fallback. */
static const char *api_message(const cJSON *reply, long status)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(reply, "message");
	static char buf[64];

	if (cJSON_IsString(m))
		return m->valuestring;
	snprintf(buf, sizeof(buf), "unexpected HTTP status %ld", status);
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

/* Credentials from the usual AWS chain into cred, *signed_calls = 1; none
 * anywhere: unsigned calls (a proxy without clients), *signed_calls = 0.
 * Returns -1 (message printed) when some are configured but unusable, e.g.
 * a key id without its secret, or a --profile that does not exist. */
static int load_credentials(const struct cli *c, struct aws_credentials *cred,
			    int *signed_calls)
{
	char err[512];

	*signed_calls = 0;
	if (aws_credentials_load(c->profile, cred, err, sizeof(err)) == 0) {
		*signed_calls = 1;
		return 0;
	}
	if (c->profile || getenv("AWS_ACCESS_KEY_ID") || getenv("AWS_SECRET_ACCESS_KEY") ||
	    getenv("AWS_PROFILE")) {
		fprintf(stderr, "fencectl: cannot sign the lock API calls: %s\n", err);
		return -1;
	}
	return 0;
}

/* An answer that is not JSON: the proxy's authentication refused the call
 * with S3's XML error (403 AccessDenied, SignatureDoesNotMatch, ...).
 * Prints it with what to do and returns 1; 0 when text is not such an
 * error. */
static int auth_error(const char *text, long status, int signed_calls)
{
	char code[128], message[512];

	if (s3xml_parse_error(text, strlen(text), code, sizeof(code), message,
			      sizeof(message)) != S3XML_OK || !code[0])
		return 0;
	fprintf(stderr, "fencectl: the proxy refused the call: %ld %s: %s%s\n", status, code,
		message, signed_calls ? "" : " (the call was not signed: set AWS_ACCESS_KEY_ID "
		"and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, to a client of the proxy)");
	return 1;
}

int fencectl_cmd_proxy(const struct cli *c)
{
	const char *cmd = c->command, *name = c->npos ? c->pos[0] : NULL;
	char path[256], err[512] = "";
	char *body = NULL;
	const char *method = "POST";
	cJSON *req = NULL, *reply = NULL;
	char *text = NULL;
	const cJSON *holder;
	long status = 0, timeout_ms = 30000;
	int code = 1, signed_calls = 0;
	struct aws_credentials cred = { 0 };
	struct lockhttp_opts opts = { 0 };

	if (strcmp(cmd, "acquire") == 0) {
		req = cJSON_CreateObject();
		if (c->has_ttl)
			cJSON_AddNumberToObject(req, "ttlMs", (double)c->ttl_ms);
		if (c->has_wait)
			cJSON_AddNumberToObject(req, "waitMs", (double)c->wait_ms);
		if (c->holder) {
			cJSON_AddStringToObject(req, "holder", c->holder);
		} else {
			/* the holder is this process, as with --store, not the
			 * proxy's (its default) */
			char host[200], me[256];

			if (gethostname(host, sizeof(host)) != 0)
				snprintf(host, sizeof(host), "unknown");
			host[sizeof(host) - 1] = '\0';
			snprintf(me, sizeof(me), "%s-%ld", host, (long)getpid());
			cJSON_AddStringToObject(req, "holder", me);
		}
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
			"has acquire, renew, release, status and list); use --store\n", cmd);
		return 1;
	}
	if (req && !(body = cJSON_PrintUnformatted(req))) {
		fprintf(stderr, "fencectl: out of memory\n");
		goto out;
	}
	if (load_credentials(c, &cred, &signed_calls) < 0)
		goto out;
	opts.ca_file = c->cacert;
	opts.cred = signed_calls ? &cred : NULL;
	opts.region = region(c);
	if (lockhttp_request(c->proxy, &opts, method, path, body, timeout_ms, &status, &text,
			     err, sizeof(err)) < 0) {
		fprintf(stderr, "fencectl: %s\n", err);
		goto out;
	}
	reply = text ? cJSON_Parse(text) : NULL;
	if (!reply && text && auth_error(text, status, signed_calls))
		goto out;
	if (status == 409 && (api_error_code(reply, "LockHeld") ||
			      api_error_code(reply, "LockLost"))) {
		holder = cJSON_GetObjectItemCaseSensitive(reply, "holder");
		if (api_error_code(reply, "LockHeld"))
			fprintf(stderr, "fencectl: lock \"%s\" is held by \"%s\" (epoch %.0f); "
				"free in at most %.1fs\n", name,
				cJSON_IsString(holder) ? holder->valuestring : "?",
				api_number(reply, "epoch"), api_number(reply, "retryAfterMs") / 1000.0);
		else
			fprintf(stderr, "fencectl: lock lost: %s\n", api_message(reply, status));
		code = EXIT_HELD;
		goto out;
	}
	if (status != 200 || !reply) {
		fprintf(stderr, "fencectl: %s %s: %s\n", method, path, api_message(reply, status));
		goto out;
	}
	if (strcmp(cmd, "acquire") == 0 && !c->json)
		printf("%.0f\n", api_number(reply, "epoch"));
	else if (c->json || strcmp(cmd, "status") == 0 || strcmp(cmd, "list") == 0) {
		fencectl_print_json(reply); /* frees it */
		reply = NULL;
	}
	code = 0;
out:
	aws_credentials_clear(&cred);
	cJSON_Delete(req);
	cJSON_Delete(reply);
	free(text);
	free(body);
	return code;
}
