/* proxy_req.c — the accessors and small setters handlers use on a request
 * (its head, headers to set, principal, context, model, hooks, the body
 * and the answer's head). No I/O of its own. */
#include "proxy_int.h"

#include <stdlib.h>
#include <string.h>



/* ---- accessors and small setters ------------------------------------- */

int proxy_req_client_gone(const struct proxy_req *req) { return req->client_gone; }
const char *proxy_req_id(const struct proxy_req *req) { return req->id; }
const char *proxy_req_method(const struct proxy_req *req) { return req->msg->method; }
const char *proxy_req_path(const struct proxy_req *req) { return req->msg->path; }
const char *proxy_req_query(const struct proxy_req *req) { return req->msg->query; }

int proxy_req_set_query(struct proxy_req *req, const char *query)
{
	char *copy = NULL;

	if (query && *query && !(copy = strdup(query)))
		return -1;
	if (!req->sent_query && req->msg->query)
		req->sent_query = req->msg->query; /* the access log shows what was sent */
	else
		free(req->msg->query);
	req->msg->query = copy;
	return 0;
}

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
	preq_start_body_reading(req);
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

