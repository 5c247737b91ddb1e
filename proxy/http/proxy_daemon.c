/* proxy_daemon.c — the proxy object: configuration, the upstream's origin
 * and credentials, the front end and handlers it runs, draining and
 * freeing. Requests themselves are proxy.c's. */
#include "proxy_int.h"

#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "wire/sigv4.h"

/* ---- the daemon ------------------------------------------------------- */

enum proxy_action proxy_health_handler(struct proxy_req *req, void *arg)
{
	static const char body[] = "{\"status\":\"ok\"}\n";
	struct front_hdrs h = {0};

	if (strcmp(req->msg->path, "/_fence/health") != 0)
		return PROXY_PASS;
	if (strcmp(req->msg->method, "GET") != 0 && strcmp(req->msg->method, "HEAD") != 0) {
		if (front_hdrs_add(&h, "Allow", "GET, HEAD") == 0)
			proxy_req_reply_error(req, 405, "MethodNotAllowed",
					      "health answers GET and HEAD", &h);
		front_hdrs_clear(&h);
		return PROXY_HANDLED;
	}
	if (front_hdrs_add(&h, "Cache-Control", "no-store") < 0) {
		proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
		return PROXY_HANDLED;
	}
	proxy_req_reply(req, 200, &h, "application/json", body, sizeof(body) - 1);
	front_hdrs_clear(&h);
	return PROXY_HANDLED;
}

/* Splits the upstream URL into origin, Host value and base path. */
static int parse_upstream(struct proxy *p, const char *url, char *err, size_t errlen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	int rc = -1;
	size_t n;

	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		snprintf(err, errlen, "upstream \"%s\" is not a URL", url);
		goto out;
	}
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
		snprintf(err, errlen, "upstream \"%s\" must be http:// or https://", url);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
		port = NULL;
	if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		path = NULL;
	if (port) {
		if (asprintf(&p->up_host, "%s:%s", host, port) < 0)
			p->up_host = NULL;
	} else {
		p->up_host = strdup(host);
	}
	if (p->up_host && asprintf(&p->up_origin, "%s://%s", scheme, p->up_host) < 0)
		p->up_origin = NULL;
	p->up_base = strdup(path ? path : "");
	if (!p->up_host || !p->up_origin || !p->up_base) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	n = strlen(p->up_base);
	while (n && p->up_base[n - 1] == '/')
		p->up_base[--n] = '\0';
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return rc;
}

static char *dup_or_null(const char *s, int *fail)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*fail = 1;
	return d;
}

struct proxy *proxy_new(struct event_base *base, const struct proxy_config *cfg,
			char *err, size_t errlen)
{
	struct proxy *p = calloc(1, sizeof(*p));
	struct front_ops ops;
	struct proxy_handler health = { "health", proxy_health_handler, NULL, NULL };
	int fail = 0;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->base = base;
	p->mode = cfg->mode;
	p->replay_max = cfg->replay_max;
	p->body_window = cfg->body_window ? cfg->body_window : 64 * 1024;
	p->output_window = cfg->limits.output_buffer ? cfg->limits.output_buffer : 64 * 1024;
	p->region = dup_or_null(cfg->region ? cfg->region : "us-east-1", &fail);
	p->access_key = dup_or_null(cfg->access_key, &fail);
	p->secret_key = dup_or_null(cfg->secret_key, &fail);
	p->session_token = dup_or_null(cfg->session_token, &fail);
	if (fail) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (cfg->upstream_url) {
		if (p->mode == PROXY_MODE_S3 && (!p->access_key || !p->secret_key)) {
			snprintf(err, errlen, "S3 mode needs upstream credentials");
			goto fail;
		}
		if (parse_upstream(p, cfg->upstream_url, err, errlen) < 0)
			goto fail;
		p->up = upstream_new(base, &cfg->upstream, err, errlen);
		if (!p->up)
			goto fail;
	}
	proxy_front_ops(&ops, p);
	p->front = front_server_new(base, &cfg->limits, &ops, err, errlen);
	if (!p->front || (!cfg->no_health_handler && proxy_add_handler(p, &health) < 0))
		goto fail;
	return p;
fail:
	proxy_free(p);
	return NULL;
}

void proxy_set_tls(struct proxy *p, struct ssl_ctx_st *ctx)
{
	front_server_set_tls(p->front, ctx);
}

void proxy_set_limits(struct proxy *p, const struct proxy_config *cfg)
{
	front_server_set_limits(p->front, &cfg->limits);
	if (p->up)
		upstream_set_timeouts(p->up, &cfg->upstream);
}

int proxy_listen(struct proxy *p, const char *addr, char *err, size_t errlen)
{
	return front_server_listen(p->front, addr, err, errlen);
}

void proxy_drain(struct proxy *p, long timeout_ms, void (*done)(void *arg), void *arg)
{
	front_server_drain(p->front, timeout_ms, done, arg);
}

void proxy_free(struct proxy *p)
{
	if (!p)
		return;
	front_server_free(p->front); /* aborts requests: they cancel transfers */
	upstream_free(p->up);
	free(p->up_origin);
	free(p->up_host);
	free(p->up_base);
	free(p->region);
	free(p->access_key);
	sigv4_signer_free(p->signer);
	if (p->secret_key)
		memset(p->secret_key, 0, strlen(p->secret_key));
	free(p->secret_key);
	free(p->session_token);
	free(p->handlers);
	free(p->done_hooks);
	free(p);
}

enum proxy_mode proxy_mode(const struct proxy *p)
{
	return p->mode;
}

size_t proxy_inflight(const struct proxy *p)
{
	return __atomic_load_n(&p->inflight, __ATOMIC_RELAXED); /* any thread */
}

void proxy_connections(const struct proxy *p, size_t *open, unsigned long long *accepted)
{
	*open = front_server_conns(p->front);
	*accepted = front_server_accepted(p->front);
}

int proxy_add_handler(struct proxy *p, const struct proxy_handler *h)
{
	struct proxy_handler *nh = realloc(p->handlers, (p->nhandlers + 1) * sizeof(*nh));

	if (!nh)
		return -1;
	p->handlers = nh;
	p->handlers[p->nhandlers++] = *h;
	return 0;
}

int proxy_on_done(struct proxy *p, proxy_done_fn fn, void *arg)
{
	struct proxy_hook *nh = realloc(p->done_hooks, (p->ndone_hooks + 1) * sizeof(*nh));

	if (!nh)
		return -1;
	p->done_hooks = nh;
	p->done_hooks[p->ndone_hooks].fn = fn;
	p->done_hooks[p->ndone_hooks].arg = arg;
	p->ndone_hooks++;
	return 0;
}

