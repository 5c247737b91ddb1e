/* proxy_head.c — a HEAD of a request's own target on the loop's upstream
 * client (proxy_req_head_target): the same URL the forward goes to, without
 * the query, signed by the same signer (the empty payload's hash, as SDKs
 * sign a request without a body); the answer's status and head are
 * kept, and the caller is told on the loop's next turn, when the HEAD's
 * connection is back in the pool for the forward that usually follows.
 * No fencing: what the answer means is the caller's. */
#include "proxy_int.h"

#include <stdlib.h>
#include <string.h>

#include "ops/log.h"
#include "wire/sigv4.h"

#define HEAD_FIELDS 16    /* an object HEAD's answer, in place; more: heap */
#define HEAD_DETAIL 200

struct head_xfer {
	struct proxy_req *req;        /* held until fn has returned */
	proxy_head_fn fn;
	void *arg;
	int status;                   /* 0: no answer (detail says why) */
	char detail[HEAD_DETAIL];
	struct front_hdrs hdrs;       /* copies: the transfer's go with it */
	struct front_hdr hdr_v[HEAD_FIELDS];
};

static void head_free(struct head_xfer *h)
{
	front_hdrs_clear(&h->hdrs);
	free(h);
}

static int head_on_head(void *arg, int status, struct front_hdrs *hdrs)
{
	struct head_xfer *h = arg;

	for (size_t i = 0; i < hdrs->n; i++) {
		const struct front_hdr *e = &hdrs->v[i];

		if (front_hdrs_addn(&h->hdrs, e->name, e->nlen, e->value, e->vlen) < 0) {
			snprintf(h->detail, sizeof(h->detail), "out of memory");
			return -1;
		}
	}
	h->status = status;
	return 0;
}

static int head_on_body(void *arg, const char *data, size_t len)
{
	(void)arg;
	(void)data;
	(void)len;
	return 0; /* a HEAD's answer has none; upstream.c skips any */
}

static void head_report(evutil_socket_t fd, short what, void *arg)
{
	struct head_xfer *h = arg;
	struct proxy_req *req = h->req;

	(void)fd;
	(void)what;
	h->fn(req, h->status, h->status ? &h->hdrs : NULL, h->detail, h->arg);
	head_free(h);
	preq_put(req);
}

static void head_on_done(void *arg, enum upstream_result res, const char *detail)
{
	struct head_xfer *h = arg;
	struct timeval zero = { 0, 0 };

	if (res != UPSTREAM_OK) {
		h->status = 0;
		if (!h->detail[0])
			snprintf(h->detail, sizeof(h->detail), "upstream %s%s%s",
				 upstream_strerror(res), detail && *detail ? ": " : "",
				 detail ? detail : "");
	}
	if (event_base_once(h->req->p->base, -1, EV_TIMEOUT, head_report, h, &zero) < 0) {
		/* cannot happen short of ENOMEM; the caller must still hear */
		log_warn("request \"%s\": cannot schedule the HEAD's answer; told at once",
			 h->req->id);
		head_report(-1, 0, h);
	}
}

static const struct upstream_ops head_ops = {
	.read_body = NULL,
	.move_body = NULL,
	.on_head = head_on_head,
	.on_body = head_on_body,
	.on_done = head_on_done,
};

int proxy_req_can_head(const struct proxy_req *req)
{
	return req->p->up != NULL;
}

int proxy_req_head_target(struct proxy_req *req, long timeout_ms, proxy_head_fn fn, void *arg,
			  char *err, size_t errlen)
{
	struct proxy *p = req->p;
	const char *mpath = strcmp(req->msg->path, "*") ? req->msg->path : "/";
	struct front_hdr fwd_v[8];
	struct front_hdrs fwd;
	struct upstream_request ur;
	struct head_xfer *h = NULL;
	char stack[FWD_STRINGS];
	char *path = stack, *url;
	size_t olen, blen, plen = strlen(mpath), need;
	int rc = -1;

	snprintf(err, errlen, "out of memory");
	front_hdrs_init(&fwd, fwd_v, sizeof(fwd_v) / sizeof(fwd_v[0]));
	if (!p->up) {
		snprintf(err, errlen, "no upstream to send a HEAD to");
		return -1;
	}
	olen = strlen(p->up_origin);
	blen = strlen(p->up_base);
	need = (blen + plen + 1) + (olen + blen + plen + 1);
	if (need > sizeof(stack) && !(path = malloc(need)))
		goto out;
	url = mempcpy(mempcpy(path, p->up_base, blen), mpath, plen);
	*url++ = '\0';
	memcpy(mempcpy(url, p->up_origin, olen), path, blen + plen + 1);
	if (front_hdrs_add_ref(&fwd, "Host", 4, p->up_host, strlen(p->up_host)) < 0 ||
	    (p->mode == PROXY_MODE_S3 && preq_sign(p, "HEAD", SIGV4_EMPTY_SHA256, &fwd, path, "") < 0))
		goto out;
	if (!(h = calloc(1, sizeof(*h))))
		goto out;
	h->req = req;
	h->fn = fn;
	h->arg = arg;
	front_hdrs_init(&h->hdrs, h->hdr_v, HEAD_FIELDS);
	memset(&ur, 0, sizeof(ur));
	ur.method = "HEAD";
	ur.url = url;
	ur.hdrs = &fwd;
	ur.body_length = -1;
	ur.head = 1;
	ur.total_timeout_ms = timeout_ms;
	if (!upstream_start(p->up, &ur, &head_ops, h, err, errlen))
		goto out;
	preq_hold(req); /* until head_report */
	h = NULL;
	rc = 0;
out:
	if (h)
		head_free(h);
	front_hdrs_clear(&fwd);
	if (path != stack)
		free(path);
	return rc;
}
