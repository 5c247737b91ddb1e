/* proxy.c — the request lifecycle: from a parsed head to a finished
 * response, through the handler chain, the upstream transfer and the hooks.
 *
 * It forwards generic HTTP: hop-by-hop headers dropped, Host rewritten, and
 * in S3 mode the client's signature replaced by a SigV4 signature of our
 * own (payload hash passed through, else UNSIGNED-PAYLOAD: the proxy
 * streams, it never hashes bodies). It does not decide anything about
 * fencing, authentication or locks: handlers registered through proxy.h do. */
#include "proxy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>

#include "ops/log.h"
#include "wire/s3err.h"
#include "wire/sigv4.h"

struct proxy_hook {
	proxy_done_fn fn;
	void *arg;
};

struct proxy {
	struct event_base *base;
	enum proxy_mode mode;
	size_t replay_max;
	size_t body_window;
	size_t output_window;
	struct front_server *front;
	struct upstream *up;
	char *up_origin;     /* "http://127.0.0.1:9000" */
	char *up_host;       /* Host header value: "127.0.0.1:9000" */
	char *up_base;       /* path prefix without trailing '/', often "" */
	char *region;
	char *access_key, *secret_key, *session_token;
	struct proxy_handler *handlers;
	size_t nhandlers;
	struct proxy_hook *done_hooks;
	size_t ndone_hooks;
	uint64_t next_id;
	size_t inflight;
};

/* Where a request is. CHAIN: a handler is being asked. SUSPENDED /
 * RESP_SUSPENDED: a handler will call proxy_req_resume. FORWARD: an upstream
 * transfer runs, nothing relayed yet. RELAY: the upstream head went to the
 * client, the body streams. LOCAL: a handler consumes the body. REPLY: a
 * local streaming reply is under way. DONE: finished, waiting for the last
 * reference to go. */
enum req_phase {
	PH_CHAIN,
	PH_SUSPENDED,
	PH_FORWARD,
	PH_RESP_SUSPENDED,
	PH_RELAY,
	PH_LOCAL,
	PH_REPLY,
	PH_DONE,
};

struct proxy_req {
	struct proxy *p;
	struct front_conn *conn;     /* NULL once the client is gone or released */
	struct front_msg *msg;
	char id[32];
	char peer[64];               /* the client's address, kept past the conn */
	char *principal;             /* proxy_req_set_principal; NULL: none */
	enum req_phase phase;
	int refs;
	int suspend_held;            /* a reference held from SUSPEND to resume */
	int finished;
	int client_gone;
	size_t next_handler;
	int64_t t_start_us;

	/* request body: bytes [0, sent_off) went upstream; while keep_body,
	 * every byte from the first one is still in body (replayable) */
	struct evbuffer *body;
	size_t sent_off;
	int keep_body;
	int body_ended;
	int body_stopped;
	int body_reading;
	uint64_t bytes_in;

	/* upstream */
	struct upstream_xfer *xfer;
	int attempts;
	int upstream_status;
	struct front_hdrs *resp_hdrs; /* the transfer's, valid until it ends */

	/* hooks */
	proxy_response_fn on_response;
	void *on_response_arg;
	proxy_resp_body_fn on_resp_body;
	void *on_resp_body_arg;
	proxy_done_fn on_done;
	void *on_done_arg;
	proxy_body_fn consume_body;
	proxy_body_end_fn consume_end;
	void *consume_arg;
	void (*drain_fn)(struct proxy_req *req, void *arg);
	void *drain_arg;
	void *ctx;
	void (*ctx_free)(void *ctx);
	void *model;                 /* a protocol layer's parse of the request */
	void (*model_free)(void *model);

	/* body filter (proxy_req_set_body_filter): client bytes go through it;
	 * what it emits is the body everyone downstream sees */
	struct proxy_body_filter filter;
	int has_filter;
	int filter_pause;            /* the sink asked to stop during a feed */
	int64_t filtered_length;     /* the emitted body's length, -1 unknown */
	int defer_forward;           /* forward once the (empty) body verified */

	/* outcome */
	int replied;
	int status;
	uint64_t bytes_out;
	enum proxy_outcome outcome;
	int upstream_failed;         /* the local 502/504 answers an upstream failure */
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void proxy_config_default(struct proxy_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = PROXY_MODE_S3;
	cfg->region = "us-east-1";
	cfg->replay_max = 64 * 1024;
	cfg->body_window = 64 * 1024;
	front_limits_default(&cfg->limits);
	upstream_config_default(&cfg->upstream);
}

/* ---- request references ---------------------------------------------- */

static void req_hold(struct proxy_req *req)
{
	req->refs++;
}

static void req_put(struct proxy_req *req)
{
	if (--req->refs > 0)
		return;
	if (req->ctx_free)
		req->ctx_free(req->ctx);
	if (req->model_free)
		req->model_free(req->model);
	if (req->has_filter && req->filter.free_fn)
		req->filter.free_fn(req->filter.arg);
	front_msg_free(req->msg);
	if (req->body)
		evbuffer_free(req->body);
	free(req->principal);
	req->p->inflight--;
	free(req);
}

/* The request is over: stop the transfer, report, let the connection go on
 * and drop the lifecycle's reference. Idempotent. */
static void req_finish(struct proxy_req *req, enum proxy_outcome outcome)
{
	struct proxy *p = req->p;
	struct proxy_summary s;

	if (req->finished)
		return;
	req->finished = 1;
	req->phase = PH_DONE;
	if (outcome == PROXY_OUT_LOCAL && req->upstream_failed)
		outcome = PROXY_OUT_UPSTREAM_ERROR;
	req->outcome = outcome;
	if (req->xfer) {
		upstream_cancel(req->xfer);
		req->xfer = NULL;
		req->resp_hdrs = NULL;
		req_put(req); /* the transfer's reference */
	}
	if (req->conn) {
		front_conn_request_done(req->conn);
		req->conn = NULL;
	}
	memset(&s, 0, sizeof(s));
	s.id = req->id;
	s.method = req->msg->method;
	s.path = req->msg->path;
	s.query = req->msg->query;
	s.peer = req->peer;
	s.principal = req->principal;
	s.user_agent = front_hdrs_get(&req->msg->hdrs, "User-Agent");
	s.status = req->status;
	s.upstream_status = req->upstream_status;
	s.bytes_in = req->bytes_in;
	s.bytes_out = req->bytes_out;
	s.duration_us = now_us() - req->t_start_us;
	s.attempts = req->attempts;
	s.outcome = outcome;
	log_debug("request \"%s\" \"%s %s\" status \"%d\" in \"%" PRId64 "\" us", req->id,
		  s.method, s.path, s.status, s.duration_us);
	if (req->on_done)
		req->on_done(&s, req->on_done_arg);
	for (size_t i = 0; i < p->ndone_hooks; i++)
		p->done_hooks[i].fn(&s, p->done_hooks[i].arg);
	req_put(req);
}

/* ---- error bodies ---------------------------------------------------- */

/* Formats an error body for mode into buf; returns its Content-Type. */
static const char *format_error(enum proxy_mode mode, const char *code, const char *message,
				const char *resource, const char *request_id,
				char *buf, size_t buflen)
{
	struct s3err e = { .code = code, .message = message, .resource = resource,
			   .request_id = request_id };

	if (mode == PROXY_MODE_S3) {
		s3err_xml(&e, buf, buflen);
		return S3ERR_XML_CONTENT_TYPE;
	} else {
		size_t len = 0;
		char *json = s3err_json_dup(&e, &len);

		snprintf(buf, buflen, "%s\n", json ? json : "{\"error\":\"InternalError\"}");
		free(json);
		return S3ERR_JSON_CONTENT_TYPE;
	}
}

static const char *front_error_body(void *arg, int status, const char *code,
				    const char *message, char *buf, size_t buflen)
{
	struct proxy *p = arg;

	return format_error(p->mode, code, message, NULL, NULL, buf, buflen);
}

/* ---- replies ---------------------------------------------------------- */

static int resp_no_body(const struct proxy_req *req, int status)
{
	return req->msg->head || status == 204 || status == 304 || status < 200;
}

int proxy_req_reply_start(struct proxy_req *req, int status, const struct front_hdrs *hdrs,
			  int64_t content_length)
{
	if (req->replied || req->finished || req->phase == PH_RELAY || req->phase == PH_REPLY)
		return -1;
	req->replied = 1;
	req->status = status;
	req->phase = PH_REPLY;
	if (req->xfer) {
		upstream_cancel(req->xfer);
		req->xfer = NULL;
		req->resp_hdrs = NULL;
		req_put(req);
	}
	if (req->conn &&
	    front_conn_send_head(req->conn, status, NULL, hdrs, content_length,
				 resp_no_body(req, status), 0) < 0)
		return -1;
	return 0;
}

int proxy_req_reply_write(struct proxy_req *req, const void *data, size_t len)
{
	if (req->phase != PH_REPLY)
		return -1;
	if (!req->conn)
		return 0; /* the client left: drop quietly, the handler ends soon */
	if (front_conn_send_body(req->conn, data, len) < 0)
		return -1;
	req->bytes_out += len;
	return 0;
}

int proxy_req_reply_file(struct proxy_req *req, int fd, int64_t offset, int64_t len)
{
	if (req->phase != PH_REPLY || !req->conn) {
		close(fd);
		return req->phase == PH_REPLY ? 0 : -1;
	}
	if (front_conn_send_file(req->conn, fd, offset, len) < 0)
		return -1;
	req->bytes_out += (uint64_t)len;
	return 0;
}

void proxy_req_reply_end(struct proxy_req *req)
{
	if (req->phase != PH_REPLY)
		return;
	if (req->conn)
		front_conn_send_end(req->conn);
	req_finish(req, PROXY_OUT_LOCAL);
}

size_t proxy_req_reply_pending(const struct proxy_req *req)
{
	return req->conn ? front_conn_output_len(req->conn) : 0;
}

void proxy_req_on_drain(struct proxy_req *req, void (*fn)(struct proxy_req *req, void *arg),
			void *arg)
{
	req->drain_fn = fn;
	req->drain_arg = arg;
	if (req->conn)
		front_conn_want_drain(req->conn);
}

int proxy_req_reply(struct proxy_req *req, int status, const struct front_hdrs *hdrs,
		    const char *content_type, const void *body, size_t len)
{
	struct front_hdrs h = {0};
	int rc = 0;

	for (size_t i = 0; hdrs && i < hdrs->n; i++)
		rc |= front_hdrs_add(&h, hdrs->v[i].name, hdrs->v[i].value);
	if (content_type)
		rc |= front_hdrs_set(&h, "Content-Type", content_type);
	if (rc == 0)
		rc = proxy_req_reply_start(req, status, &h, (int64_t)len);
	front_hdrs_clear(&h);
	if (rc < 0)
		return -1;
	if (len && !resp_no_body(req, status))
		proxy_req_reply_write(req, body, len);
	proxy_req_reply_end(req);
	return 0;
}

int proxy_req_reply_error(struct proxy_req *req, int status, const char *code,
			  const char *message, const struct front_hdrs *extra_hdrs)
{
	char body[2048];
	const char *ctype = format_error(req->p->mode, code, message, req->msg->path, req->id,
					 body, sizeof(body));

	log_info("request \"%s\" \"%s %s\" answered \"%d\" \"%s\": \"%s\"", req->id,
		 req->msg->method, req->msg->path, status, code, message);
	return proxy_req_reply(req, status, extra_hdrs, ctype, body, strlen(body));
}

/* ---- forwarding ------------------------------------------------------- */

/* The message's Connection header values, looked up once per message
 * (names listed there are hop-by-hop too); all Connection headers count. */
struct conn_tokens {
	const char *v[8];
	size_t n;
	int overflow;	/* more Connection headers than v holds */
};

static void conn_tokens_find(const struct front_hdrs *all, struct conn_tokens *ct)
{
	ct->n = 0;
	ct->overflow = 0;
	for (size_t i = 0; i < all->n; i++) {
		if (strcasecmp(all->v[i].name, "Connection") != 0)
			continue;
		if (ct->n < sizeof(ct->v) / sizeof(ct->v[0]))
			ct->v[ct->n++] = all->v[i].value;
		else
			ct->overflow = 1;
	}
}

static int is_hop_by_hop(const struct front_hdrs *all, const struct conn_tokens *ct,
			 const char *name)
{
	static const char *const hop[] = {
		"Connection", "Keep-Alive", "TE", "Trailer", "Transfer-Encoding",
		"Upgrade", NULL,
	};

	if (strncasecmp(name, "Proxy-", 6) == 0)
		return 1;
	for (size_t i = 0; hop[i]; i++)
		if (strcasecmp(name, hop[i]) == 0)
			return 1;
	if (ct->overflow) {
		for (size_t i = 0; i < all->n; i++)
			if (strcasecmp(all->v[i].name, "Connection") == 0 &&
			    front_list_has(all->v[i].value, name))
				return 1;
		return 0;
	}
	for (size_t i = 0; i < ct->n; i++)
		if (front_list_has(ct->v[i], name))
			return 1;
	return 0;
}

/* Header names the proxy sets itself on the way upstream. */
static int is_proxy_owned(const struct proxy *p, const char *name)
{
	if (strcasecmp(name, "Host") == 0 || strcasecmp(name, "Content-Length") == 0 ||
	    strcasecmp(name, "Expect") == 0)
		return 1;
	if (p->mode == PROXY_MODE_S3 &&
	    (strcasecmp(name, "Authorization") == 0 || strcasecmp(name, "X-Amz-Date") == 0 ||
	     strcasecmp(name, "X-Amz-Security-Token") == 0 ||
	     strcasecmp(name, "X-Amz-Content-Sha256") == 0))
		return 1;
	return 0;
}

/* The client's query without presigned-URL authentication parameters.
 * Returns malloc'd (possibly "") or NULL on ENOMEM. */
static char *strip_presign_query(const char *query)
{
	static const char *const auth[] = {
		"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
		"X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token",
		"AWSAccessKeyId", "Signature", "Expires", /* SigV2 */ NULL,
	};
	size_t qlen = query ? strlen(query) : 0;
	char *out = malloc(qlen + 1);
	size_t o = 0;
	const char *s = query;

	if (!out)
		return NULL;
	while (s && *s) {
		const char *amp = strchr(s, '&');
		size_t len = amp ? (size_t)(amp - s) : strlen(s);
		size_t nlen = 0;
		int drop = 0;

		while (nlen < len && s[nlen] != '=')
			nlen++;
		for (size_t i = 0; auth[i]; i++)
			if (nlen == strlen(auth[i]) && strncasecmp(s, auth[i], nlen) == 0)
				drop = 1;
		if (!drop && len) {
			if (o)
				out[o++] = '&';
			memcpy(out + o, s, len);
			o += len;
		}
		s = amp ? amp + 1 : s + len;
	}
	out[o] = '\0';
	return out;
}

/* Signs the forwarded request (S3 mode): adds x-amz-date,
 * x-amz-content-sha256, x-amz-security-token and Authorization to fwd. */
static int sign_forward(struct proxy_req *req, struct front_hdrs *fwd,
			const char *path, const char *query)
{
	struct proxy *p = req->p;
	struct sigv4_header *sh = NULL;
	struct sigv4_credentials cred = { p->access_key, p->secret_key, p->session_token };
	struct sigv4_request sr;
	const char *payload = front_hdrs_get(&req->msg->hdrs, "X-Amz-Content-Sha256");
	char amz_date[17];
	char *auth = NULL;
	size_t n = 0;
	int rc = -1;

	if (!payload || !*payload)
		payload = SIGV4_UNSIGNED;
	sigv4_amz_date(time(NULL), amz_date);
	if (front_hdrs_add(fwd, "x-amz-date", amz_date) < 0 ||
	    front_hdrs_add(fwd, "x-amz-content-sha256", payload) < 0 ||
	    (p->session_token && front_hdrs_add(fwd, "x-amz-security-token", p->session_token) < 0))
		goto out;
	sh = calloc(fwd->n, sizeof(*sh));
	if (!sh)
		goto out;
	/* sign host, every x-amz-* (S3 refuses unsigned ones), content-md5
	 * and content-type: headers libcurl sends exactly as given */
	for (size_t i = 0; i < fwd->n; i++) {
		const char *name = fwd->v[i].name;

		if (strcasecmp(name, "Host") == 0 || strncasecmp(name, "x-amz-", 6) == 0 ||
		    strcasecmp(name, "Content-MD5") == 0 || strcasecmp(name, "Content-Type") == 0) {
			sh[n].name = name;
			sh[n].value = fwd->v[i].value;
			n++;
		}
	}
	memset(&sr, 0, sizeof(sr));
	sr.method = req->msg->method;
	sr.path = path;
	sr.query = query;
	sr.headers = sh;
	sr.nheaders = n;
	sr.payload_hash = payload;
	sr.s3 = 1;
	auth = sigv4_authorization(&sr, &cred, p->region, "s3", amz_date);
	if (!auth || front_hdrs_add(fwd, "Authorization", auth) < 0)
		goto out;
	rc = 0;
out:
	free(auth);
	free(sh);
	return rc;
}

static size_t up_read_body(void *arg, char *buf, size_t len);
static int up_on_head(void *arg, int status, struct front_hdrs *hdrs);
static int up_on_body(void *arg, const char *data, size_t len);
static void up_on_done(void *arg, enum upstream_result res, const char *detail);

static const struct upstream_ops up_ops = {
	.read_body = up_read_body,
	.on_head = up_on_head,
	.on_body = up_on_body,
	.on_done = up_on_done,
};

static void start_body_reading(struct proxy_req *req)
{
	if (req->body_reading || !req->conn)
		return;
	req->body_reading = 1;
	front_conn_read_body(req->conn);
}

/* Builds and starts one upstream attempt. On failure the request is
 * answered (500/502/501) and finished. */
static void start_forward(struct proxy_req *req)
{
	struct proxy *p = req->p;
	const struct front_msg *m = req->msg;
	struct front_hdrs fwd = {0};
	struct conn_tokens ct;
	struct upstream_request ur;
	char *query = NULL, *path = NULL, *url = NULL;
	char err[256];
	size_t ulen;

	if (!p->up) {
		proxy_req_reply_error(req, 501, "NotImplemented",
				      "no upstream is configured (the embedded store is not wired yet)",
				      NULL);
		return;
	}
	if (req->has_filter && req->filtered_length == 0 && !req->body_ended) {
		/* an empty upstream body would complete before the client's
		 * body was verified: wait for it */
		req->defer_forward = 1;
		req->phase = PH_FORWARD;
		start_body_reading(req);
		return;
	}
	if (req->attempts > 0 && !proxy_req_can_resend(req)) {
		proxy_req_reply_error(req, 502, "BadGateway",
				      "the request body was streamed and cannot be re-sent", NULL);
		return;
	}
	conn_tokens_find(&m->hdrs, &ct);
	for (size_t i = 0; i < m->hdrs.n; i++) {
		const char *name = m->hdrs.v[i].name;

		if (is_hop_by_hop(&m->hdrs, &ct, name) || is_proxy_owned(p, name))
			continue;
		if (front_hdrs_add(&fwd, name, m->hdrs.v[i].value) < 0)
			goto nomem;
	}
	if (front_hdrs_add(&fwd, "Host", p->up_host) < 0)
		goto nomem;
	query = p->mode == PROXY_MODE_S3 ? strip_presign_query(m->query)
					 : strdup(m->query ? m->query : "");
	if (!query)
		goto nomem;
	if (asprintf(&path, "%s%s", p->up_base, strcmp(m->path, "*") ? m->path : "/") < 0) {
		path = NULL;
		goto nomem;
	}
	if (p->mode == PROXY_MODE_S3 && sign_forward(req, &fwd, path, query) < 0) {
		proxy_req_reply_error(req, 500, "InternalError",
				      "cannot sign the request for upstream", NULL);
		goto out;
	}
	ulen = strlen(p->up_origin) + strlen(path) + strlen(query) + 2;
	url = malloc(ulen);
	if (!url)
		goto nomem;
	snprintf(url, ulen, "%s%s%s%s", p->up_origin, path, *query ? "?" : "", query);

	memset(&ur, 0, sizeof(ur));
	ur.method = m->method;
	ur.url = url;
	ur.hdrs = &fwd;
	if (req->has_filter && req->filtered_length >= 0)
		ur.body_length = req->filtered_length;
	else
		ur.body_length = m->chunked ? -2 : m->content_length >= 0 ? m->content_length : -1;
	ur.expect_continue = m->expect_continue;
	ur.head = m->head;
	req->sent_off = 0;
	req->resp_hdrs = NULL;
	req->xfer = upstream_start(p->up, &ur, &up_ops, req, err, sizeof(err));
	if (!req->xfer) {
		proxy_req_reply_error(req, 502, "BadGateway", err, NULL);
		goto out;
	}
	req_hold(req); /* the transfer's reference */
	req->attempts++;
	req->phase = PH_FORWARD;
	log_debug("request \"%s\" forwarded to \"%s\" (attempt %d)", req->id, url, req->attempts);
	start_body_reading(req);
	goto out;
nomem:
	proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
out:
	front_hdrs_clear(&fwd);
	free(query);
	free(path);
	free(url);
}

static void resend_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_req *req = arg;

	if (!req->finished) {
		if (req->client_gone)
			req_finish(req, PROXY_OUT_CLIENT_GONE);
		else
			start_forward(req);
	}
	req_put(req);
}

/* Re-sends on the next loop turn (never from inside a libcurl callback). */
static void schedule_resend(struct proxy_req *req)
{
	struct timeval zero = {0, 0};

	req->phase = PH_FORWARD;
	req_hold(req);
	if (event_base_once(req->p->base, -1, EV_TIMEOUT, resend_cb, req, &zero) < 0) {
		req_put(req);
		proxy_req_reply_error(req, 500, "InternalError", "cannot schedule a re-send", NULL);
	}
}

/* Drops the current transfer from inside its own callback. */
static void drop_xfer(struct proxy_req *req)
{
	if (!req->xfer)
		return;
	upstream_cancel(req->xfer);
	req->xfer = NULL;
	req->resp_hdrs = NULL;
	req_put(req);
}

static size_t up_read_body(void *arg, char *buf, size_t len)
{
	struct proxy_req *req = arg;
	size_t total = evbuffer_get_length(req->body);
	size_t pending = total - req->sent_off;
	size_t n;

	if (pending == 0) {
		if (req->body_ended)
			return 0;
		if (req->body_stopped && req->conn) {
			req->body_stopped = 0;
			front_conn_read_body(req->conn);
		}
		return UPSTREAM_BODY_WAIT;
	}
	n = len < pending ? len : pending;
	if (req->keep_body) {
		struct evbuffer_ptr pos;

		if (evbuffer_ptr_set(req->body, &pos, req->sent_off, EVBUFFER_PTR_SET) < 0 ||
		    evbuffer_copyout_from(req->body, &pos, buf, n) < 0)
			return UPSTREAM_BODY_FAIL;
		req->sent_off += n;
	} else if (evbuffer_remove(req->body, buf, n) < 0) {
		return UPSTREAM_BODY_FAIL;
	}
	if (req->body_stopped && pending - n < req->p->body_window / 2 && req->conn) {
		req->body_stopped = 0;
		front_conn_read_body(req->conn);
	}
	return n;
}

/* Sends the upstream head to the client. */
static int relay_head(struct proxy_req *req, int status, const struct front_hdrs *up)
{
	struct front_hdrs out = {0};
	struct conn_tokens ct;
	const char *cl = front_hdrs_get(up, "Content-Length");
	const char *te = front_hdrs_get(up, "Transfer-Encoding");
	int64_t length = -1;
	int rc;

	conn_tokens_find(up, &ct);
	for (size_t i = 0; i < up->n; i++) {
		const char *name = up->v[i].name;

		if (is_hop_by_hop(up, &ct, name) || strcasecmp(name, "Content-Length") == 0)
			continue;
		if (front_hdrs_add(&out, name, up->v[i].value) < 0) {
			front_hdrs_clear(&out);
			return -1;
		}
	}
	if (!te && cl && *cl && strspn(cl, "0123456789") == strlen(cl) && strlen(cl) <= 18)
		length = strtoll(cl, NULL, 10);
	req->status = status;
	rc = front_conn_send_head(req->conn, status, NULL, &out, length,
				  resp_no_body(req, status), 0);
	front_hdrs_clear(&out);
	return rc;
}

static int up_on_head(void *arg, int status, struct front_hdrs *hdrs)
{
	struct proxy_req *req = arg;
	enum proxy_resp_action act = PROXY_RESP_RELAY;
	int rc = -1;

	req_hold(req);
	req->upstream_status = status;
	req->resp_hdrs = hdrs;
	if (req->client_gone || req->finished)
		goto out;
	if (req->on_response)
		act = req->on_response(req, req->on_response_arg);
	if (req->finished)
		goto out; /* the hook replied */
	switch (act) {
	case PROXY_RESP_RELAY:
		if (!req->conn || relay_head(req, status, hdrs) < 0) {
			drop_xfer(req);
			req_finish(req, PROXY_OUT_CLIENT_GONE);
			goto out;
		}
		req->phase = PH_RELAY;
		rc = 0;
		break;
	case PROXY_RESP_REPLACED:
		if (!req->replied)
			proxy_req_reply_error(req, 500, "InternalError",
					      "a response hook replaced the response without a reply",
					      NULL);
		drop_xfer(req);
		break;
	case PROXY_RESP_RESEND:
		drop_xfer(req);
		if (!proxy_req_can_resend(req))
			proxy_req_reply_error(req, 502, "BadGateway",
					      "the request body was streamed and cannot be re-sent",
					      NULL);
		else
			schedule_resend(req);
		break;
	case PROXY_RESP_SUSPEND:
		drop_xfer(req);
		req->phase = PH_RESP_SUSPENDED;
		req_hold(req); /* kept until proxy_req_resume, even after a reply */
		req->suspend_held = 1;
		break;
	}
out:
	req_put(req);
	return rc;
}

static int up_on_body(void *arg, const char *data, size_t len)
{
	struct proxy_req *req = arg;

	if (req->finished || !req->conn || req->phase != PH_RELAY)
		return -1;
	if (front_conn_output_len(req->conn) >= req->p->output_window) {
		front_conn_want_drain(req->conn);
		return 1;
	}
	if (front_conn_send_body(req->conn, data, len) < 0)
		return -1;
	req->bytes_out += len;
	if (req->on_resp_body)
		req->on_resp_body(req, data, len, req->on_resp_body_arg);
	return 0;
}

static void up_on_done(void *arg, enum upstream_result res, const char *detail)
{
	struct proxy_req *req = arg;

	req->xfer = NULL;
	req->resp_hdrs = NULL;
	if (req->finished) {
		req_put(req);
		return;
	}
	if (req->phase == PH_RELAY) {
		if (res == UPSTREAM_OK) {
			front_conn_send_end(req->conn);
			req_finish(req, PROXY_OUT_UPSTREAM);
		} else {
			log_warn("request \"%s\": upstream broke mid-response: \"%s\" (%s)",
				 req->id, upstream_strerror(res), detail);
			if (req->conn) {
				front_conn_abort(req->conn);
				req->conn = NULL;
			}
			req_finish(req, PROXY_OUT_UPSTREAM_ERROR);
		}
	} else if (req->phase == PH_FORWARD) {
		char msg[512];
		int timeout = res == UPSTREAM_TIMEOUT;

		snprintf(msg, sizeof(msg), "upstream %s: %s", upstream_strerror(res), detail);
		req->upstream_failed = 1; /* the summary says so, not "local" */
		proxy_req_reply_error(req, timeout ? 504 : 502,
				      timeout ? "GatewayTimeout" : "BadGateway", msg, NULL);
	}
	req_put(req); /* the transfer's reference */
}

/* ---- the handler chain ------------------------------------------------ */

static int is_reserved_path(const char *path)
{
	return strncmp(path, "/_fence/", 8) == 0 || strcmp(path, "/_fence") == 0;
}

/* Acts on a handler's answer. Returns 1 to ask the next handler. */
static int apply_action(struct proxy_req *req, enum proxy_action act, const char *who)
{
	if (req->finished || req->phase == PH_REPLY)
		return 0; /* replied, whatever it says */
	switch (act) {
	case PROXY_PASS:
		return 1;
	case PROXY_FORWARD:
		start_forward(req);
		return 0;
	case PROXY_HANDLED:
		if (req->phase != PH_LOCAL) {
			log_error("handler \"%s\" said handled without replying", who);
			proxy_req_reply_error(req, 500, "InternalError",
					      "the request was not answered", NULL);
		}
		return 0;
	case PROXY_SUSPEND:
		req->phase = PH_SUSPENDED;
		req_hold(req); /* kept until proxy_req_resume, even after a reply */
		req->suspend_held = 1;
		return 0;
	}
	return 0;
}

static void run_chain(struct proxy_req *req)
{
	struct proxy *p = req->p;

	while (req->next_handler < p->nhandlers) {
		const struct proxy_handler *h = &p->handlers[req->next_handler++];
		enum proxy_action act;

		req->phase = PH_CHAIN;
		act = h->on_request(req, h->arg);
		if (!apply_action(req, act, h->name ? h->name : "?"))
			return;
	}
	if (is_reserved_path(req->msg->path)) {
		proxy_req_reply_error(req, 404, "NoSuchFenceEndpoint",
				      "no such endpoint under /_fence/", NULL);
		return;
	}
	start_forward(req);
}

void proxy_req_resume(struct proxy_req *req, enum proxy_action action)
{
	int after_response = req->phase == PH_RESP_SUSPENDED;

	if (!req->suspend_held) {
		log_error("request \"%s\" resumed while not suspended", req->id);
		return;
	}
	req->suspend_held = 0;
	if (req->finished) {
		/* the handler replied while suspended: only the reference goes */
		req_put(req);
		return;
	}
	if (req->client_gone) {
		req_finish(req, PROXY_OUT_CLIENT_GONE);
	} else if (action == PROXY_PASS) {
		if (after_response)
			proxy_req_reply_error(req, 500, "InternalError",
					      "a response suspend cannot pass", NULL);
		else
			run_chain(req);
	} else if (action == PROXY_FORWARD) {
		start_forward(req);
	} else if (apply_action(req, action, "resume")) {
		run_chain(req);
	}
	req_put(req); /* the suspend's reference */
}

/* ---- front end callbacks ---------------------------------------------- */

static void *op_on_head(void *arg, struct front_conn *conn, struct front_msg *msg)
{
	struct proxy *p = arg;
	struct proxy_req *req = calloc(1, sizeof(*req));

	if (!req) {
		front_msg_free(msg);
		return NULL;
	}
	req->p = p;
	req->conn = conn;
	req->msg = msg;
	req->refs = 1;
	req->keep_body = 1;
	req->t_start_us = now_us();
	snprintf(req->peer, sizeof(req->peer), "%s", front_conn_peer(conn));
	req->body = evbuffer_new();
	p->inflight++;
	snprintf(req->id, sizeof(req->id), "req-%08" PRIx64, ++p->next_id);
	if (!req->body) {
		req->conn = NULL;
		req_put(req);
		return NULL;
	}
	req_hold(req);
	run_chain(req);
	req_put(req);
	return req;
}

/* Passes body bytes on to whoever takes them: the local consumer or the
 * upstream buffer. Returns 0, or 1 when reading should pause. */
static int body_sink(struct proxy_req *req, const char *data, size_t len)
{
	struct proxy *p = req->p;
	int rc = 0;

	if (req->finished)
		return 0;
	req_hold(req);
	if (req->phase == PH_LOCAL) {
		rc = req->consume_body(req, data, len, req->consume_arg);
		if (rc < 0) {
			if (!req->replied)
				proxy_req_reply_error(req, 500, "InternalError",
						      "the request body could not be handled", NULL);
			rc = 0;
		} else if (rc > 0) {
			req->body_stopped = 1;
		}
		goto out;
	}
	if (evbuffer_add(req->body, data, len) < 0) {
		proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
		goto out;
	}
	if (req->keep_body && evbuffer_get_length(req->body) > p->replay_max) {
		/* too big to keep for a re-send: from now on it only streams */
		evbuffer_drain(req->body, req->sent_off);
		req->sent_off = 0;
		req->keep_body = 0;
	}
	if (evbuffer_get_length(req->body) - req->sent_off >= p->body_window) {
		req->body_stopped = 1;
		rc = 1;
	}
	if (req->xfer)
		upstream_resume_send(req->xfer);
out:
	req_put(req);
	return rc;
}

int proxy_req_filter_emit(struct proxy_req *req, const char *data, size_t len)
{
	if (len && body_sink(req, data, len) > 0)
		req->filter_pause = 1;
	return req->finished ? -1 : 0;
}

/* The filter refused the body: stop the upstream transfer (its body never
 * completes: the filter held back the last byte) or the local consumer,
 * and answer the filter's error. */
static void filter_failed(struct proxy_req *req, const struct proxy_body_error *e)
{
	if (req->finished)
		return;
	log_info("request \"%s\": request body refused: \"%s\"", req->id, e->code);
	if (req->phase == PH_LOCAL && !req->replied) {
		req->phase = PH_CHAIN;
		req->consume_end(req, 0, req->consume_arg);
		if (req->finished)
			return;
	}
	if (req->phase == PH_RELAY) {
		/* upstream already answered (early); it cannot have stored a
		 * body it did not get in full: cut the exchange */
		if (req->conn) {
			front_conn_abort(req->conn);
			req->conn = NULL;
		}
		req_finish(req, PROXY_OUT_UPSTREAM_ERROR);
		return;
	}
	drop_xfer(req);
	req->defer_forward = 0;
	if (!req->replied)
		proxy_req_reply_error(req, e->status, e->code, e->message, NULL);
	else
		req_finish(req, PROXY_OUT_LOCAL);
}

static int op_on_body(void *arg, const char *data, size_t len)
{
	struct proxy_req *req = arg;
	struct proxy_body_error e = {0};
	int rc;

	req->bytes_in += len;
	if (req->finished)
		return 0;
	if (!req->has_filter)
		return body_sink(req, data, len);
	req_hold(req);
	req->filter_pause = 0;
	if (req->filter.feed(req, data, len, req->filter.arg, &e) < 0)
		filter_failed(req, &e);
	rc = req->finished ? 0 : req->filter_pause;
	if (rc)
		req->body_stopped = 1;
	req_put(req);
	return rc;
}

static void op_on_body_end(void *arg)
{
	struct proxy_req *req = arg;

	req_hold(req);
	if (req->has_filter && !req->finished) {
		struct proxy_body_error e = {0};

		if (req->filter.end(req, req->filter.arg, &e) < 0)
			filter_failed(req, &e);
	}
	req->body_ended = 1;
	if (req->finished)
		goto out;
	if (req->defer_forward) {
		req->defer_forward = 0;
		start_forward(req);
	} else if (req->phase == PH_LOCAL)
		req->consume_end(req, 1, req->consume_arg);
	else if (req->xfer)
		upstream_resume_send(req->xfer);
out:
	req_put(req);
}

static void op_on_drain(void *arg)
{
	struct proxy_req *req = arg;

	req_hold(req);
	if (req->phase == PH_RELAY && req->xfer) {
		upstream_resume_recv(req->xfer);
	} else if (req->drain_fn) {
		void (*fn)(struct proxy_req *, void *) = req->drain_fn;

		req->drain_fn = NULL;
		fn(req, req->drain_arg);
	}
	req_put(req);
}

static void op_on_abort(void *arg, enum front_abort why)
{
	struct proxy_req *req = arg;

	req->conn = NULL;
	req->client_gone = 1;
	if (req->finished)
		return;
	req_hold(req);
	log_debug("request \"%s\": client side ended early (%d)", req->id, (int)why);
	switch (req->phase) {
	case PH_SUSPENDED:
	case PH_RESP_SUSPENDED:
		break; /* proxy_req_resume finishes it */
	case PH_LOCAL:
		if (!req->body_ended) {
			req->consume_end(req, 0, req->consume_arg);
			req_finish(req, PROXY_OUT_CLIENT_GONE);
		}
		/* else the handler still owes its reply; it finishes then */
		break;
	default:
		req_finish(req, PROXY_OUT_CLIENT_GONE);
		break;
	}
	req_put(req);
}

/* ---- accessors and small setters ------------------------------------- */

int proxy_req_client_gone(const struct proxy_req *req) { return req->client_gone; }
const char *proxy_req_id(const struct proxy_req *req) { return req->id; }
const char *proxy_req_method(const struct proxy_req *req) { return req->msg->method; }
const char *proxy_req_path(const struct proxy_req *req) { return req->msg->path; }
const char *proxy_req_query(const struct proxy_req *req) { return req->msg->query; }

const char *proxy_req_peer(const struct proxy_req *req)
{
	return req->peer;
}

const char *proxy_req_principal(const struct proxy_req *req)
{
	return req->principal;
}

int proxy_req_set_principal(struct proxy_req *req, const char *principal)
{
	char *copy = strdup(principal);

	if (!copy)
		return -1;
	free(req->principal);
	req->principal = copy;
	return 0;
}

void proxy_summary_log_entry(const struct proxy_summary *s, struct accesslog_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->request_id = s->id;
	e->remote_addr = s->peer;
	e->access_key = s->principal;
	e->method = s->method;
	e->path = s->path;
	e->query = s->query;
	e->user_agent = s->user_agent;
	e->upstream_status = s->upstream_status;
	e->status = s->status;
	e->bytes_in = s->bytes_in;
	e->bytes_out = s->bytes_out;
	e->duration_ms = (double)s->duration_us / 1000.0;
}

const char *proxy_req_header(const struct proxy_req *req, const char *name)
{
	return front_hdrs_get(&req->msg->hdrs, name);
}

const struct front_hdrs *proxy_req_headers(const struct proxy_req *req)
{
	return &req->msg->hdrs;
}

int64_t proxy_req_content_length(const struct proxy_req *req)
{
	if (req->has_filter)
		return req->filtered_length;
	return req->msg->chunked ? -1 : req->msg->content_length;
}

int proxy_req_set_body_filter(struct proxy_req *req, const struct proxy_body_filter *f,
			      int64_t length)
{
	if (req->has_filter || req->body_reading || req->phase != PH_CHAIN)
		return -1;
	req->filter = *f;
	req->has_filter = 1;
	req->filtered_length = length;
	return 0;
}

int proxy_req_has_body(const struct proxy_req *req)
{
	return req->msg->has_body;
}

int proxy_req_set_header(struct proxy_req *req, const char *name, const char *value)
{
	return front_hdrs_set(&req->msg->hdrs, name, value);
}

int proxy_req_add_header(struct proxy_req *req, const char *name, const char *value)
{
	return front_hdrs_add(&req->msg->hdrs, name, value);
}

void proxy_req_set_ctx(struct proxy_req *req, void *ctx, void (*free_fn)(void *))
{
	if (req->ctx_free && req->ctx != ctx)
		req->ctx_free(req->ctx);
	req->ctx = ctx;
	req->ctx_free = free_fn;
}

void *proxy_req_ctx(const struct proxy_req *req)
{
	return req->ctx;
}

void proxy_req_set_model(struct proxy_req *req, void *model, void (*free_fn)(void *))
{
	if (req->model_free && req->model != model)
		req->model_free(req->model);
	req->model = model;
	req->model_free = free_fn;
}

void *proxy_req_model(const struct proxy_req *req)
{
	return req->model;
}

int proxy_req_consume(struct proxy_req *req, proxy_body_fn on_body,
		      proxy_body_end_fn on_end, void *arg)
{
	if (req->finished || req->phase == PH_RELAY || req->phase == PH_FORWARD || req->replied)
		return -1;
	req->consume_body = on_body;
	req->consume_end = on_end;
	req->consume_arg = arg;
	req->phase = PH_LOCAL;
	start_body_reading(req);
	return 0;
}

void proxy_req_consume_resume(struct proxy_req *req)
{
	if (req->phase == PH_LOCAL && req->body_stopped && req->conn) {
		req->body_stopped = 0;
		front_conn_read_body(req->conn);
	}
}

void proxy_req_on_response(struct proxy_req *req, proxy_response_fn fn, void *arg)
{
	req->on_response = fn;
	req->on_response_arg = arg;
}

void proxy_req_on_resp_body(struct proxy_req *req, proxy_resp_body_fn fn, void *arg)
{
	req->on_resp_body = fn;
	req->on_resp_body_arg = arg;
}

int proxy_req_resp_status(const struct proxy_req *req)
{
	return req->upstream_status;
}

const char *proxy_req_resp_header(const struct proxy_req *req, const char *name)
{
	return req->resp_hdrs ? front_hdrs_get(req->resp_hdrs, name) : NULL;
}

int proxy_req_resp_set_header(struct proxy_req *req, const char *name, const char *value)
{
	return req->resp_hdrs ? front_hdrs_set(req->resp_hdrs, name, value) : -1;
}

int proxy_req_can_resend(const struct proxy_req *req)
{
	if (!req->msg->has_body)
		return 1;
	return req->keep_body && (req->body_ended || req->attempts == 0);
}

int proxy_req_attempts(const struct proxy_req *req)
{
	return req->attempts;
}

void proxy_req_on_done(struct proxy_req *req, proxy_done_fn fn, void *arg)
{
	req->on_done = fn;
	req->on_done_arg = arg;
}

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
	struct proxy_handler health = { "health", proxy_health_handler, NULL };
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
	memset(&ops, 0, sizeof(ops));
	ops.on_head = op_on_head;
	ops.on_body = op_on_body;
	ops.on_body_end = op_on_body_end;
	ops.on_drain = op_on_drain;
	ops.on_abort = op_on_abort;
	ops.error_body = front_error_body;
	ops.arg = p;
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
	return p->inflight;
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
