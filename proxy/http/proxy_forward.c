/* proxy_forward.c — a request's upstream transfer: the head as forwarded
 * (exactly the fields the verdict built, proxy_req_fwd_headers, never
 * filtered again; Host rewritten, the client's presign parameters
 * stripped, in S3 mode re-signed with SigV4 of our own, payload hash
 * passed through or UNSIGNED-PAYLOAD), the body streamed from the
 * client (or replayed for a re-send), the answer's head and body relayed,
 * and the upstream's failures. No fencing, no authentication. */
#include "proxy_int.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "ops/log.h"
#include "wire/pct.h"
#include "wire/sigv4.h"

/* ---- forwarding ------------------------------------------------------- */

/* The client's query without presigned-URL authentication parameters,
 * written to out (room for strlen(query) + 1; possibly ""). Names are
 * compared decoded, as s3req.c classified them ("X-Amz-%53ignature" is
 * X-Amz-Signature); a name that does not decode stays. */
static void strip_presign_query(const char *query, char *out)
{
#define AUTH_PARAM(s) { s, sizeof(s) - 1 }
	static const struct {
		const char *name;
		size_t len;
	} auth[] = {
		AUTH_PARAM("X-Amz-Algorithm"), AUTH_PARAM("X-Amz-Credential"),
		AUTH_PARAM("X-Amz-Date"), AUTH_PARAM("X-Amz-Expires"),
		AUTH_PARAM("X-Amz-SignedHeaders"), AUTH_PARAM("X-Amz-Signature"),
		AUTH_PARAM("X-Amz-Security-Token"), AUTH_PARAM("X-Amz-Content-Sha256"),
		AUTH_PARAM("AWSAccessKeyId"), AUTH_PARAM("Signature"), AUTH_PARAM("Expires"), /* SigV2 */
	};
#undef AUTH_PARAM
	size_t o = 0;
	const char *s = query;

	while (s && *s) {
		const char *amp = strchr(s, '&');
		size_t len = amp ? (size_t)(amp - s) : strlen(s);
		size_t nlen = 0;
		char name[32];
		ssize_t dlen;
		int drop = 0;

		while (nlen < len && s[nlen] != '=')
			nlen++;
		dlen = nlen < sizeof(name) ? pct_decode(s, nlen, PCT_NO_NUL, name, sizeof(name)) : -1;
		for (size_t i = 0; dlen > 0 && i < sizeof(auth) / sizeof(auth[0]); i++)
			if ((size_t)dlen == auth[i].len && strncasecmp(name, auth[i].name, dlen) == 0)
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
}

#define FWD_AUTHZ 512   /* the Authorization value; longer: heap */

int preq_sign(struct proxy *p, const char *method, const char *payload,
	      struct front_hdrs *fwd, const char *path, const char *query)
{
	struct sigv4_header stack_sh[FWD_ENTRIES], *sh = stack_sh;
	struct sigv4_request sr;
	char amz_date[17];
	char stack_auth[FWD_AUTHZ], *auth = stack_auth;
	size_t n = 0, len;
	int rc = -1;

	if (!payload || !*payload)
		payload = SIGV4_UNSIGNED;
	if (!p->signer) {
		struct sigv4_credentials cred = { p->access_key, p->secret_key,
						  p->session_token };

		if (!(p->signer = sigv4_signer_new(&cred, p->region, "s3")))
			goto out;
	}
	sigv4_amz_date(time(NULL), amz_date);
	if (front_hdrs_add(fwd, "x-amz-date", amz_date) < 0 ||
	    front_hdrs_add(fwd, "x-amz-content-sha256", payload) < 0 ||
	    (p->session_token && front_hdrs_add(fwd, "x-amz-security-token", p->session_token) < 0))
		goto out;
	if (fwd->n > FWD_ENTRIES && !(sh = calloc(fwd->n, sizeof(*sh))))
		goto out;
	/* sign host, every x-amz-* (S3 refuses unsigned ones), content-md5
	 * and content-type: headers the upstream client sends exactly as given */
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
	sr.method = method;
	sr.path = path;
	sr.query = query;
	sr.headers = sh;
	sr.nheaders = n;
	sr.payload_hash = payload;
	sr.s3 = 1;
	len = sigv4_signer_authorization(p->signer, &sr, amz_date, auth, sizeof(stack_auth));
	if (len >= sizeof(stack_auth)) {
		if (!(auth = malloc(len + 1)) ||
		    sigv4_signer_authorization(p->signer, &sr, amz_date, auth, len + 1) != len)
			goto out;
	}
	if (len == 0 || front_hdrs_add(fwd, "Authorization", auth) < 0)
		goto out;
	rc = 0;
out:
	if (auth != stack_auth)
		free(auth);
	if (sh != stack_sh)
		free(sh);
	return rc;
}

static size_t up_move_body(void *arg, struct evbuffer *out, size_t max);
static int up_on_head(void *arg, int status, struct front_hdrs *hdrs);
static int up_on_body(void *arg, const char *data, size_t len);
static void up_on_done(void *arg, enum upstream_result res, const char *detail);

static const struct upstream_ops up_ops = {
	.move_body = up_move_body,
	.on_head = up_on_head,
	.on_body = up_on_body,
	.on_done = up_on_done,
};

void preq_start_body_reading(struct proxy_req *req)
{
	if (req->body_reading || !req->conn)
		return;
	req->body_reading = 1;
	front_conn_read_body(req->conn);
}

/* Builds and starts one upstream attempt. On failure the request is
 * answered (500/502/501) and finished. */
void preq_start_forward(struct proxy_req *req)
{
	struct proxy *p = req->p;
	const struct front_msg *m = req->msg;
	struct front_hdr fwd_v[FWD_ENTRIES];
	struct front_hdrs fwd;
	struct upstream_request ur;
	char stack[FWD_STRINGS];
	char *buf = NULL, *query, *path, *url, *w;
	const char *mpath = strcmp(m->path, "*") ? m->path : "/";
	size_t olen = strlen(p->up_origin), blen = strlen(p->up_base), plen = strlen(mpath);
	size_t qlen = m->query ? strlen(m->query) : 0, need;
	char err[256];

	front_hdrs_init(&fwd, fwd_v, FWD_ENTRIES);
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
		preq_start_body_reading(req);
		return;
	}
	if (req->attempts > 0 && !proxy_req_can_resend(req)) {
		proxy_req_reply_error(req, 502, "BadGateway",
				      "the request body was streamed and cannot be re-sent", NULL);
		return;
	}
	/* exactly the fields the verdict built (borrowed: req outlives fwd),
	 * then the proxy's own */
	if (proxy_req_fwd_headers(req, &fwd) < 0 ||
	    front_hdrs_add_ref(&fwd, "Host", 4, p->up_host, strlen(p->up_host)) < 0)
		goto nomem;
	/* query, path (base + the client's) and URL (origin + path + ?query),
	 * each NUL-terminated, in one buffer */
	need = (qlen + 1) + (blen + plen + 1) + (olen + blen + plen + 1 + qlen + 1);
	buf = need <= sizeof(stack) ? stack : malloc(need);
	if (!buf)
		goto nomem;
	query = buf;
	if (p->mode == PROXY_MODE_S3)
		strip_presign_query(m->query, query);
	else
		memcpy(query, m->query ? m->query : "", qlen + 1);
	qlen = strlen(query);
	path = query + qlen + 1;
	w = mempcpy(path, p->up_base, blen);
	w = mempcpy(w, mpath, plen);
	*w++ = '\0';
	url = w;
	w = mempcpy(url, p->up_origin, olen);
	w = mempcpy(w, path, blen + plen);
	if (qlen) {
		*w++ = '?';
		w = mempcpy(w, query, qlen);
	}
	*w = '\0';
	if (p->mode == PROXY_MODE_S3 &&
	    preq_sign(p, m->method, proxy_req_fwd_header(req, "X-Amz-Content-Sha256"), &fwd,
		      path, query) < 0) {
		proxy_req_reply_error(req, 500, "InternalError",
				      "cannot sign the request for upstream", NULL);
		goto out;
	}

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
	preq_hold(req); /* the transfer's reference */
	req->attempts++;
	req->phase = PH_FORWARD;
	log_debug("request \"%s\" forwarded to \"%s\" (attempt %d)", req->id, url, req->attempts);
	preq_start_body_reading(req);
	goto out;
nomem:
	proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
out:
	front_hdrs_clear(&fwd);
	if (buf != stack)
		free(buf);
}

static void resend_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_req *req = arg;

	if (!req->finished) {
		if (req->client_gone)
			preq_finish(req, PROXY_OUT_CLIENT_GONE);
		else
			preq_start_forward(req);
	}
	preq_put(req);
}

/* Re-sends on the next loop turn (never from inside an upstream callback). */
static void schedule_resend(struct proxy_req *req)
{
	struct timeval zero = {0, 0};

	req->phase = PH_FORWARD;
	preq_hold(req);
	if (event_base_once(req->p->base, -1, EV_TIMEOUT, resend_cb, req, &zero) < 0) {
		preq_put(req);
		proxy_req_reply_error(req, 500, "InternalError", "cannot schedule a re-send", NULL);
	}
}

/* Drops the current transfer from inside its own callback. */
void preq_drop_xfer(struct proxy_req *req)
{
	if (!req->xfer)
		return;
	upstream_cancel(req->xfer);
	req->xfer = NULL;
	req->resp_hdrs = NULL;
	preq_put(req);
}

/* No body byte is pending: the end, or wait (the client's body read on
 * again if it was paused). */
static size_t body_none(struct proxy_req *req)
{
	if (req->body_ended)
		return 0;
	if (req->body_stopped && req->conn) {
		req->body_stopped = 0;
		front_conn_read_body(req->conn);
	}
	return UPSTREAM_BODY_WAIT;
}

/* Bytes went upstream and left are still pending: the client's body is
 * read on again once they are under half the window. */
static void body_gone(struct proxy_req *req, size_t left)
{
	if (req->body_stopped && left < req->p->body_window / 2 && req->conn) {
		req->body_stopped = 0;
		front_conn_read_body(req->conn);
	}
}

/* A kept body's pieces smaller than this are copied: a reference costs a
 * chain of its own (1 KiB) per chain of the body. */
#define BODY_REF_MIN ((size_t)8 * 1024)

/* Appends bytes [sent_off, sent_off + n) of the kept body to out without
 * copying them: read-only references to the body's chains (libevent keeps
 * those and the body's buffer alive until out lets them go; nothing is
 * appended into them afterwards). Small pieces are copied. */
static int body_refer(struct proxy_req *req, struct evbuffer *out, size_t n)
{
	struct evbuffer *ref;
	struct evbuffer_ptr pos;
	struct evbuffer_iovec v;
	int rc = -1;

	if (n < BODY_REF_MIN) {
		/* extent by extent, into the free space after the head */
		if (evbuffer_ptr_set(req->body, &pos, req->sent_off, EVBUFFER_PTR_SET) < 0)
			return -1;
		while (n > 0) {
			size_t k;

			if (evbuffer_peek(req->body, n, &pos, &v, 1) < 1 || v.iov_len == 0)
				return -1;
			k = v.iov_len < n ? v.iov_len : n;
			if (evbuffer_add(out, v.iov_base, k) < 0)
				return -1;
			n -= k;
			if (n && evbuffer_ptr_set(req->body, &pos, k, EVBUFFER_PTR_ADD) < 0)
				return -1;
		}
		return 0;
	}
	/* ref is new and empty: evbuffer_add_buffer_reference frees an empty
	 * chain of its destination without forgetting it (libevent 2.1) */
	ref = evbuffer_new();
	if (!ref)
		return -1;
	if (evbuffer_add_buffer_reference(ref, req->body) == 0 &&
	    evbuffer_drain(ref, req->sent_off) == 0 &&
	    evbuffer_remove_buffer(ref, out, n) == (int)n)
		rc = 0;
	evbuffer_free(ref);
	return rc;
}

/* The next body bytes into the connection's output: the body's chains
 * moved (a body not kept for a re-send) or referenced (a kept one). */
static size_t up_move_body(void *arg, struct evbuffer *out, size_t max)
{
	struct proxy_req *req = arg;
	size_t pending = evbuffer_get_length(req->body) - req->sent_off;
	size_t n;

	if (pending == 0)
		return body_none(req);
	n = max < pending ? max : pending;
	if (req->keep_body) {
		if (body_refer(req, out, n) < 0)
			return UPSTREAM_BODY_FAIL;
		req->sent_off += n;
	} else if (evbuffer_remove_buffer(req->body, out, n) != (int)n) {
		return UPSTREAM_BODY_FAIL;
	}
	body_gone(req, pending - n);
	return n;
}

/* Sends the upstream head to the client: its headers borrowed, on the
 * stack unless there are many. */
static int relay_head(struct proxy_req *req, int status, const struct front_hdrs *up)
{
	struct front_hdr out_v[32];
	struct front_hdrs out;
	const char *cl = NULL;
	int te = 0;
	int64_t length = -1;
	int rc;

	front_hdrs_init(&out, out_v, sizeof(out_v) / sizeof(out_v[0]));
	/* upstream_parse.c removed the hop-by-hop fields */
	for (size_t i = 0; i < up->n; i++) {
		const struct front_hdr *e = &up->v[i];

		if (FRONT_HDR_IS(e, "Content-Length")) {
			if (!cl)
				cl = e->value;
			continue;
		}
		if (FRONT_HDR_IS(e, "Transfer-Encoding")) {
			te = 1;
			continue;
		}
		if (front_hdrs_add_ref(&out, e->name, e->nlen, e->value, e->vlen) < 0) {
			front_hdrs_clear(&out);
			return -1;
		}
	}
	if (!te && cl && *cl && strspn(cl, "0123456789") == strlen(cl) && strlen(cl) <= 18) {
		length = 0;
		for (const char *d = cl; *d; d++)
			length = length * 10 + (*d - '0');
	}
	req->status = status;
	rc = front_conn_send_head(req->conn, status, NULL, &out, length,
				  preq_resp_no_body(req, status), 0);
	front_hdrs_clear(&out);
	return rc;
}

static int up_on_head(void *arg, int status, struct front_hdrs *hdrs)
{
	struct proxy_req *req = arg;
	enum proxy_resp_action act = PROXY_RESP_RELAY;
	int rc = -1;

	preq_hold(req);
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
			preq_drop_xfer(req);
			preq_finish(req, PROXY_OUT_CLIENT_GONE);
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
		preq_drop_xfer(req);
		break;
	case PROXY_RESP_RESEND:
		preq_drop_xfer(req);
		if (!proxy_req_can_resend(req))
			proxy_req_reply_error(req, 502, "BadGateway",
					      "the request body was streamed and cannot be re-sent",
					      NULL);
		else
			schedule_resend(req);
		break;
	case PROXY_RESP_SUSPEND:
		preq_drop_xfer(req);
		req->phase = PH_RESP_SUSPENDED;
		preq_hold(req); /* kept until proxy_req_resume, even after a reply */
		req->suspend_held = 1;
		break;
	}
out:
	preq_put(req);
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
		preq_put(req);
		return;
	}
	if (req->phase == PH_RELAY) {
		if (res == UPSTREAM_OK) {
			front_conn_send_end(req->conn);
			preq_finish(req, PROXY_OUT_UPSTREAM);
		} else {
			log_warn("request \"%s\": upstream broke mid-response: \"%s\" (%s)",
				 req->id, upstream_strerror(res), detail);
			if (req->conn) {
				front_conn_abort(req->conn);
				req->conn = NULL;
			}
			preq_finish(req, PROXY_OUT_UPSTREAM_ERROR);
		}
	} else if (req->phase == PH_FORWARD) {
		char msg[512];
		int timeout = res == UPSTREAM_TIMEOUT;

		snprintf(msg, sizeof(msg), "upstream %s: %s", upstream_strerror(res), detail);
		req->upstream_failed = 1; /* the summary says so, not "local" */
		proxy_req_reply_error(req, timeout ? 504 : 502,
				      timeout ? "GatewayTimeout" : "BadGateway", msg, NULL);
	}
	preq_put(req); /* the transfer's reference */
}

