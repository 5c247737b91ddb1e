/* proxy.c — the request lifecycle: from a parsed head to a finished
 * response, through the handler chain and the hooks; the references that
 * keep a request alive, local replies and error bodies, and the front
 * end's callbacks. The upstream transfer is proxy_forward.c, accessors
 * proxy_req.c, the proxy object proxy_daemon.c.
 *
 * It forwards generic HTTP: hop-by-hop headers dropped, Host rewritten, and
 * in S3 mode the client's signature replaced by a SigV4 signature of our
 * own (payload hash passed through, else UNSIGNED-PAYLOAD: the proxy
 * streams, it never hashes bodies). It does not decide anything about
 * fencing, authentication or locks: handlers registered through proxy.h do. */
#include "proxy_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "ops/log.h"
#include "wire/s3err.h"

int64_t proxy_now_us(void)
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

void preq_hold(struct proxy_req *req)
{
	req->refs++;
}

void preq_put(struct proxy_req *req)
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
	free(req->sent_query);
	front_hdrs_clear(&req->fwd_set);
	front_hdrs_clear(&req->fwd_named);
	__atomic_sub_fetch(&req->p->inflight, 1, __ATOMIC_RELAXED); /* proxy_inflight */
	free(req);
}

/* The request is over: stop the transfer, report, let the connection go on
 * and drop the lifecycle's reference. Idempotent. */
void preq_finish(struct proxy_req *req, enum proxy_outcome outcome)
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
		preq_put(req); /* the transfer's reference */
	}
	if (req->conn) {
		front_conn_request_done(req->conn);
		req->conn = NULL;
	}
	memset(&s, 0, sizeof(s));
	s.id = req->id;
	s.method = req->msg->method;
	s.path = req->msg->path;
	s.query = req->sent_query ? req->sent_query : req->msg->query;
	s.peer = req->peer;
	s.principal = req->principal;
	s.user_agent = front_hdrs_get(&req->msg->hdrs, "User-Agent");
	s.status = req->status;
	s.upstream_status = req->upstream_status;
	s.bytes_in = req->bytes_in;
	s.bytes_out = req->bytes_out;
	s.duration_us = proxy_now_us() - req->t_start_us;
	s.attempts = req->attempts;
	s.outcome = outcome;
	log_debug("request \"%s\" \"%s %s\" status %d in %" PRId64 " us", req->id,
		  s.method, s.path, s.status, s.duration_us);
	if (req->on_done)
		req->on_done(&s, req->on_done_arg);
	for (size_t i = 0; i < p->ndone_hooks; i++)
		p->done_hooks[i].fn(&s, p->done_hooks[i].arg);
	preq_put(req);
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

int preq_resp_no_body(const struct proxy_req *req, int status)
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
		preq_put(req);
	}
	if (req->conn &&
	    front_conn_send_head(req->conn, status, NULL, hdrs, content_length,
				 preq_resp_no_body(req, status), 0) < 0)
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
	preq_finish(req, PROXY_OUT_LOCAL);
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
	struct front_hdr hv[16];
	struct front_hdrs h;
	int rc = 0;

	/* the caller's strings, borrowed for this call */
	front_hdrs_init(&h, hv, sizeof(hv) / sizeof(hv[0]));
	for (size_t i = 0; hdrs && i < hdrs->n; i++) {
		const struct front_hdr *e = &hdrs->v[i];

		if (!content_type || !FRONT_HDR_IS(e, "Content-Type"))
			rc |= front_hdrs_add_ref(&h, e->name, e->nlen, e->value, e->vlen);
	}
	if (content_type)
		rc |= front_hdrs_add_ref(&h, "Content-Type", 12, content_type, strlen(content_type));
	if (rc == 0)
		rc = proxy_req_reply_start(req, status, &h, (int64_t)len);
	front_hdrs_clear(&h);
	if (rc < 0)
		return -1;
	if (len && !preq_resp_no_body(req, status))
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

	log_info("request \"%s\" \"%s %s\" answered %d \"%s\": \"%s\"", req->id,
		 req->msg->method, req->msg->path, status, code, message);
	return proxy_req_reply(req, status, extra_hdrs, ctype, body, strlen(body));
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
		preq_start_forward(req);
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
		preq_hold(req); /* kept until proxy_req_resume, even after a reply */
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
	preq_start_forward(req);
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
		preq_put(req);
		return;
	}
	if (req->client_gone) {
		preq_finish(req, PROXY_OUT_CLIENT_GONE);
	} else if (action == PROXY_PASS) {
		if (after_response)
			proxy_req_reply_error(req, 500, "InternalError",
					      "a response suspend cannot pass", NULL);
		else
			run_chain(req);
	} else if (action == PROXY_FORWARD) {
		preq_start_forward(req);
	} else if (apply_action(req, action, "resume")) {
		run_chain(req);
	}
	preq_put(req); /* the suspend's reference */
}

/* ---- front end callbacks ---------------------------------------------- */

/* Request ids are unique in the process, whichever event-loop worker's
 * proxy gives them (proxy_req_id). */
static uint64_t proxy_next_id(void)
{
	static uint64_t last;

	return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

/* "req-" and n in lowercase hex, at least 8 digits, into id (32 bytes). */
static void format_req_id(char *id, uint64_t n)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[16];
	size_t d = 0;

	do {
		tmp[d++] = hex[n & 15];
		n >>= 4;
	} while (n);
	while (d < 8)
		tmp[d++] = '0';
	memcpy(id, "req-", 4);
	id += 4;
	while (d)
		*id++ = tmp[--d];
	*id = '\0';
}

/* A field by which a downstream framework may run another method than the
 * one the proxy judged (Rails, Express, Google APIs): a GET that became a
 * DELETE would pass unfenced. */
static const char *method_override(const struct front_msg *msg)
{
	static const char *const names[] = {
		"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (front_hdrs_get(&msg->hdrs, names[i]))
			return names[i];
	return NULL;
}

static void *op_on_head(void *arg, struct front_conn *conn, struct front_msg *msg)
{
	struct proxy *p = arg;
	/* malloc + memset: glibc's calloc skips its per-thread cache */
	struct proxy_req *req = malloc(sizeof(*req));
	const char *peer = front_conn_peer(conn);
	size_t plen;

	if (!req) {
		front_msg_free(msg);
		return NULL;
	}
	memset(req, 0, sizeof(*req));
	req->p = p;
	req->conn = conn;
	req->msg = msg;
	req->refs = 1;
	req->keep_body = 1;
	req->t_start_us = proxy_now_us();
	plen = strnlen(peer, sizeof(req->peer) - 1); /* cut like snprintf */
	memcpy(req->peer, peer, plen);
	req->peer[plen] = '\0';
	req->body = evbuffer_new();
	__atomic_add_fetch(&p->inflight, 1, __ATOMIC_RELAXED);
	format_req_id(req->id, proxy_next_id());
	if (!req->body) {
		req->conn = NULL;
		preq_put(req);
		return NULL;
	}
	preq_hold(req);
	if (p->mode == PROXY_MODE_HTTP && method_override(msg)) {
		char why[96];

		snprintf(why, sizeof(why), "%s is refused: the method judged is the method sent",
			 method_override(msg));
		proxy_req_reply_error(req, 400, "MethodOverrideRefused", why, NULL);
	} else {
		run_chain(req);
	}
	preq_put(req);
	return req;
}

/* Body bytes were added to req->body (the caller holds req): the re-send
 * bound, the window ahead of the upstream, and the upstream told. Returns
 * 0, or 1 when reading should pause. */
static int body_added(struct proxy_req *req)
{
	struct proxy *p = req->p;
	int rc = 0;

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
	return rc;
}

/* Passes body bytes on to whoever takes them: the local consumer or the
 * upstream buffer. Returns 0, or 1 when reading should pause. */
static int body_sink(struct proxy_req *req, const char *data, size_t len)
{
	int rc = 0;

	if (req->finished)
		return 0;
	preq_hold(req);
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
	rc = body_added(req);
out:
	preq_put(req);
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
		preq_finish(req, PROXY_OUT_UPSTREAM_ERROR);
		return;
	}
	preq_drop_xfer(req);
	req->defer_forward = 0;
	if (!req->replied)
		proxy_req_reply_error(req, e->status, e->code, e->message, NULL);
	else
		preq_finish(req, PROXY_OUT_LOCAL);
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
	preq_hold(req);
	req->filter_pause = 0;
	if (req->filter.feed(req, data, len, req->filter.arg, &e) < 0)
		filter_failed(req, &e);
	rc = req->finished ? 0 : req->filter_pause;
	if (rc)
		req->body_stopped = 1;
	preq_put(req);
	return rc;
}

/* front_ops.on_body_buf: bytes bound for the upstream unchanged (no filter,
 * not consumed here) are moved into req->body, chains and all: a body held
 * for a re-send is then one copy in memory, not the input's and ours. Any
 * other bytes go through op_on_body from a contiguous view of src. */
static int op_on_body_buf(void *arg, struct evbuffer *src, size_t len)
{
	struct proxy_req *req = arg;
	const char *data;
	int rc;

	if (!req->finished && !req->has_filter && req->phase != PH_LOCAL &&
	    evbuffer_remove_buffer(src, req->body, len) == (int)len) {
		req->bytes_in += len;
		preq_hold(req);
		rc = body_added(req);
		preq_put(req);
		return rc;
	}
	data = (const char *)evbuffer_pullup(src, (ev_ssize_t)len);
	if (!data) {
		evbuffer_drain(src, len);
		if (!req->finished && !req->replied)
			proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
		return 0;
	}
	rc = op_on_body(req, data, len);
	evbuffer_drain(src, len);
	return rc;
}

static void op_on_body_end(void *arg)
{
	struct proxy_req *req = arg;

	preq_hold(req);
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
		preq_start_forward(req);
	} else if (req->phase == PH_LOCAL)
		req->consume_end(req, 1, req->consume_arg);
	else if (req->xfer)
		upstream_resume_send(req->xfer);
out:
	preq_put(req);
}

static void op_on_drain(void *arg)
{
	struct proxy_req *req = arg;

	preq_hold(req);
	if (req->phase == PH_RELAY && req->xfer) {
		upstream_resume_recv(req->xfer);
	} else if (req->drain_fn) {
		void (*fn)(struct proxy_req *, void *) = req->drain_fn;

		req->drain_fn = NULL;
		fn(req, req->drain_arg);
	}
	preq_put(req);
}

static void op_on_abort(void *arg, enum front_abort why)
{
	struct proxy_req *req = arg;

	req->conn = NULL;
	req->client_gone = 1;
	if (req->finished)
		return;
	preq_hold(req);
	log_debug("request \"%s\": client side ended early (%d)", req->id, (int)why);
	switch (req->phase) {
	case PH_SUSPENDED:
	case PH_RESP_SUSPENDED:
		break; /* proxy_req_resume finishes it */
	case PH_LOCAL:
		if (!req->body_ended) {
			req->consume_end(req, 0, req->consume_arg);
			preq_finish(req, PROXY_OUT_CLIENT_GONE);
		}
		/* else the handler still owes its reply; it finishes then */
		break;
	default:
		preq_finish(req, PROXY_OUT_CLIENT_GONE);
		break;
	}
	preq_put(req);
}

void proxy_front_ops(struct front_ops *ops, struct proxy *p)
{
	memset(ops, 0, sizeof(*ops));
	ops->on_head = op_on_head;
	ops->on_body = op_on_body;
	ops->on_body_buf = op_on_body_buf;
	ops->on_body_end = op_on_body_end;
	ops->on_drain = op_on_drain;
	ops->on_abort = op_on_abort;
	ops->error_body = front_error_body;
	ops->arg = p;
}
