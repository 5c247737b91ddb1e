/* proxy_req.c — the accessors and small setters handlers use on a request:
 * the request as received (read-only once normalised), the forwarded
 * request the verdict builds beside it and the one function that lists
 * its fields, principal, context, model, hooks, the body and the answer's
 * head. No I/O of its own. */
#include "proxy_int.h"

#include <stdlib.h>
#include <string.h>

#include "wire/method.h"



/* ---- accessors and small setters ------------------------------------- */

int proxy_req_client_gone(const struct proxy_req *req) { return req->client_gone; }
const char *proxy_req_id(const struct proxy_req *req) { return req->id; }
const char *proxy_req_method(const struct proxy_req *req) { return req->msg->method; }
const char *proxy_req_path(const struct proxy_req *req) { return req->msg->path; }
const char *proxy_req_query(const struct proxy_req *req) { return req->msg->query; }

int proxy_req_normalize_query(struct proxy_req *req, const char *query)
{
	char *copy = NULL;

	if (req->model)
		return -1; /* judged already */
	if (query && *query && !(copy = strdup(query)))
		return -1;
	if (!req->sent_query && req->msg->query)
		req->sent_query = req->msg->query; /* the access log shows the client's */
	else
		free(req->msg->query);
	req->msg->query = copy;
	return 0;
}

int proxy_req_normalize_header(struct proxy_req *req, const char *name, const char *value)
{
	if (req->model)
		return -1;
	return front_hdrs_add(&req->msg->hdrs, name, value);
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

/* ---- the forwarded request ---------------------------------------------- */

int preq_field_is_proxys(const struct proxy *p, const struct front_hdr *e)
{
	int s3 = p->mode == PROXY_MODE_S3;

	switch (e->nlen) {
	case 4:
		return FRONT_HDR_IS(e, "Host");
	case 6:
		return FRONT_HDR_IS(e, "Expect");
	case 10:
		return s3 && FRONT_HDR_IS(e, "X-Amz-Date");
	case 13:
		return s3 && FRONT_HDR_IS(e, "Authorization");
	case 14:
		return FRONT_HDR_IS(e, "Content-Length");
	case 17:
		return FRONT_HDR_IS(e, "Transfer-Encoding");
	case 20:
		return s3 && (FRONT_HDR_IS(e, "X-Amz-Security-Token") ||
			      FRONT_HDR_IS(e, "X-Amz-Content-Sha256"));
	}
	return 0;
}

/* 1 if a handler owns the prefix e's name is under, on a request that
 * can change state (reads pass untouched). */
static int owned_by_handler(const struct proxy_req *req, const struct front_hdr *e)
{
	const struct proxy *p = req->p;

	if (method_is_read(req->msg->method))
		return 0;
	for (size_t h = 0; h < p->nhandlers; h++) {
		const char *const *o = p->handlers[h].owns;

		for (; o && *o; o++) {
			size_t len = strlen(*o);

			if (e->nlen >= len && strncasecmp(e->name, *o, len) == 0)
				return 1;
		}
	}
	return 0;
}

int preq_fwd_merge(const struct front_hdrs *client, const struct front_hdrs *set,
		   const struct front_hdrs *named,
		   int (*theirs)(const struct front_hdr *e, int from_client, void *arg), void *arg,
		   struct front_hdrs *out)
{
	for (size_t i = 0; i < client->n; i++) {
		const struct front_hdr *e = &client->v[i];

		if (front_hdr_hop_by_hop(e) || theirs(e, 1, arg) || front_hdrs_get(named, e->name))
			continue;
		if (front_hdrs_add_ref(out, e->name, e->nlen, e->value, e->vlen) < 0)
			return -1;
	}
	for (size_t i = 0; i < set->n; i++) {
		const struct front_hdr *e = &set->v[i];

		if (theirs(e, 0, arg))
			continue;
		if (front_hdrs_add_ref(out, e->name, e->nlen, e->value, e->vlen) < 0)
			return -1;
	}
	return 0;
}

/* preq_fwd_merge's theirs() for req: the proxy's own fields, and a client's
 * field under a handler's prefix. */
static int not_forwarded(const struct front_hdr *e, int from_client, void *arg)
{
	const struct proxy_req *req = arg;

	return preq_field_is_proxys(req->p, e) || (from_client && owned_by_handler(req, e));
}

int proxy_req_fwd_set(struct proxy_req *req, const char *name, const char *value)
{
	struct front_hdr e = { (char *)name, (char *)"", (uint32_t)strlen(name), 0 };

	/* the framing, hop-by-hop and signature fields are the forwarder's */
	if ((preq_field_is_proxys(req->p, &e) && !FRONT_HDR_IS(&e, "X-Amz-Content-Sha256")) ||
	    front_hdr_hop_by_hop(&e))
		return -1;
	front_hdrs_del(&req->fwd_set, name);
	if (!front_hdrs_get(&req->fwd_named, name) && front_hdrs_add(&req->fwd_named, name, "") < 0)
		return -1;
	return value ? front_hdrs_add(&req->fwd_set, name, value) : 0;
}

const char *proxy_req_fwd_header(const struct proxy_req *req, const char *name)
{
	const char *v = front_hdrs_get(&req->fwd_set, name);
	struct front_hdr e = { (char *)name, (char *)"", (uint32_t)strlen(name), 0 };

	if (v || front_hdrs_get(&req->fwd_named, name) || owned_by_handler(req, &e))
		return v;
	return front_hdrs_get(&req->msg->hdrs, name);
}

int proxy_req_fwd_headers(const struct proxy_req *req, struct front_hdrs *out)
{
	return preq_fwd_merge(&req->msg->hdrs, &req->fwd_set, &req->fwd_named, not_forwarded,
			      (void *)req, out);
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
	int64_t len;

	if (!req->msg->has_body)
		return 1;
	if (!req->keep_body)
		return 0;
	if (req->body_ended)
		return 1;
	/* not all read yet: held whole only if its length is known to fit
	 * (then keep_body never drops: a re-send streams what is held and
	 * waits for the rest) */
	len = proxy_req_content_length(req);
	return len >= 0 && (uint64_t)len <= req->p->replay_max;
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

