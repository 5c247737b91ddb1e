/* upstream.c — libcurl multi driven by the daemon's libevent loop.
 *
 * Sockets libcurl wants watched get one persistent event each; libcurl's
 * timer is one evtimer; completed transfers are reaped after every
 * curl_multi_socket_action. Each transfer also has our own progress timer
 * (first byte, idle), which is stopped while the transfer waits on the
 * client, so a slow client is judged by the front end's timeouts, not ours.
 * Retries, signing and the meaning of statuses belong to the caller. */
#include "upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "ops/log.h"

/* Easy handles kept for reuse after a transfer (curl_easy_reset keeps the
 * allocation, skips curl_easy_init/cleanup per request); bounded. */
#define UPSTREAM_EASY_POOL 64

struct upstream {
	struct event_base *base;
	struct upstream_config cfg;
	CURLM *multi;
	struct event *timer;
	int running;
	size_t active;
	struct upstream_xfer *xfers; /* every transfer not yet freed */
	CURL *idle[UPSTREAM_EASY_POOL]; /* reset easy handles for reuse */
	size_t n_idle;
};

/* States: sending (head not seen), receiving (after on_head), done (reaped
 * or cancelled). pause_mask holds CURLPAUSE_SEND / CURLPAUSE_RECV while the
 * transfer waits on its consumer. */
struct upstream_xfer {
	struct upstream *u;
	struct upstream_xfer *prev, *next;
	CURL *easy;
	struct curl_slist *slist;
	struct upstream_ops ops;
	void *arg;
	struct event *progress;  /* first byte / idle timer */
	int pause_mask;
	int head_seen;
	int body_sent;           /* read_body returned 0 */
	int aborted;             /* a callback asked to stop */
	int timed_out;           /* our progress timer fired */
	int cancelled;           /* upstream_cancel: no more callbacks */
	int in_callback;
	int head_only;
	int status;
	struct front_hdrs hdrs;
	char errbuf[CURL_ERROR_SIZE];
};

const char *upstream_strerror(enum upstream_result res)
{
	switch (res) {
	case UPSTREAM_OK: return "ok";
	case UPSTREAM_ABORTED: return "aborted";
	case UPSTREAM_CONNECT_FAILED: return "connect failed";
	case UPSTREAM_TIMEOUT: return "timed out";
	case UPSTREAM_SEND_FAILED: return "send failed";
	case UPSTREAM_BAD_RESPONSE: return "bad response";
	case UPSTREAM_ERROR: return "error";
	}
	return "unknown";
}

void upstream_config_default(struct upstream_config *c)
{
	memset(c, 0, sizeof(*c));
	c->connect_timeout_ms = 5000;
	c->first_byte_timeout_ms = 60000;
	c->idle_timeout_ms = 60000;
	c->total_timeout_ms = 0;
	c->expect_timeout_ms = 1000;
	c->max_connections = 64;
}

static void xfer_free(struct upstream_xfer *x)
{
	if (!x)
		return;
	if (x->prev)
		x->prev->next = x->next;
	else if (x->u->xfers == x)
		x->u->xfers = x->next;
	if (x->next)
		x->next->prev = x->prev;
	if (x->easy) {
		struct upstream *u = x->u;

		/* only a handle the multi really let go of is reused */
		if (curl_multi_remove_handle(u->multi, x->easy) == CURLM_OK &&
		    u->n_idle < UPSTREAM_EASY_POOL) {
			curl_easy_reset(x->easy);
			u->idle[u->n_idle++] = x->easy;
		} else {
			curl_easy_cleanup(x->easy);
		}
		u->active--;
	}
	curl_slist_free_all(x->slist);
	if (x->progress)
		event_free(x->progress);
	front_hdrs_clear(&x->hdrs);
	free(x);
}

/* (Re)arms the progress timer for the transfer's current phase, or stops it
 * while the transfer waits on its consumer. */
static void xfer_arm(struct upstream_xfer *x)
{
	long ms = 0;
	struct timeval tv;

	if (!x->head_seen) {
		if (!(x->pause_mask & CURLPAUSE_SEND))
			ms = x->u->cfg.first_byte_timeout_ms;
	} else if (!(x->pause_mask & CURLPAUSE_RECV)) {
		ms = x->u->cfg.idle_timeout_ms;
	}
	if (ms <= 0) {
		evtimer_del(x->progress);
		return;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(x->progress, &tv);
}

static enum upstream_result map_result(const struct upstream_xfer *x, CURLcode rc)
{
	if (x->timed_out)
		return UPSTREAM_TIMEOUT;
	if (x->aborted)
		return UPSTREAM_ABORTED;
	switch (rc) {
	case CURLE_OK:
		return UPSTREAM_OK;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return UPSTREAM_CONNECT_FAILED;
	case CURLE_OPERATION_TIMEDOUT:
		return UPSTREAM_TIMEOUT;
	case CURLE_SEND_ERROR:
		return x->head_seen ? UPSTREAM_BAD_RESPONSE : UPSTREAM_SEND_FAILED;
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_PARTIAL_FILE:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return UPSTREAM_BAD_RESPONSE;
	default:
		return UPSTREAM_ERROR;
	}
}

/* Ends x: one on_done (unless cancelled), then free. */
static void xfer_finish(struct upstream_xfer *x, enum upstream_result res, const char *detail)
{
	if (!x->cancelled && x->ops.on_done) {
		x->cancelled = 1;
		x->ops.on_done(x->arg, res, detail ? detail : "");
	}
	xfer_free(x);
}

static void reap(struct upstream *u)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(u->multi, &left))) {
		struct upstream_xfer *x = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (!x)
			continue;
		{
			CURLcode rc = msg->data.result;
			enum upstream_result res = map_result(x, rc);
			const char *detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc);

			if (res != UPSTREAM_OK && res != UPSTREAM_ABORTED)
				log_debug("upstream transfer failed: \"%s\"", detail);
			xfer_finish(x, res, detail);
		}
	}
}

static void socket_action(struct upstream *u, curl_socket_t fd, int flags)
{
	curl_multi_socket_action(u->multi, fd, flags, &u->running);
	reap(u);
}

static void sock_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;
	int flags = (what & EV_READ ? CURL_CSELECT_IN : 0) |
		    (what & EV_WRITE ? CURL_CSELECT_OUT : 0);

	socket_action(u, fd, flags);
}

static void timer_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;

	socket_action(u, CURL_SOCKET_TIMEOUT, 0);
}

static int multi_timer_cb(CURLM *multi, long timeout_ms, void *arg)
{
	struct upstream *u = arg;
	struct timeval tv;

	if (timeout_ms < 0) {
		evtimer_del(u->timer);
		return 0;
	}
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	evtimer_add(u->timer, &tv);
	return 0;
}

static int multi_socket_cb(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
	struct upstream *u = arg;
	struct event *ev = sockp;
	short kind;

	if (what == CURL_POLL_REMOVE) {
		if (ev) {
			event_free(ev);
			curl_multi_assign(u->multi, s, NULL);
		}
		return 0;
	}
	kind = (short)(EV_PERSIST | (what & CURL_POLL_IN ? EV_READ : 0) |
		       (what & CURL_POLL_OUT ? EV_WRITE : 0));
	if (ev) {
		event_del(ev);
		event_assign(ev, u->base, s, kind, sock_event_cb, u);
	} else {
		ev = event_new(u->base, s, kind, sock_event_cb, u);
		if (!ev)
			return -1;
		curl_multi_assign(u->multi, s, ev);
	}
	event_add(ev, NULL);
	return 0;
}

static void progress_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_xfer *x = arg;

	x->timed_out = 1;
	log_info("upstream %s timed out", x->head_seen ? "response body" : "response head");
	xfer_finish(x, UPSTREAM_TIMEOUT, x->head_seen ? "no response data in time" :
		    "no response head in time");
}

static size_t read_cb(char *buf, size_t size, size_t nitems, void *arg)
{
	struct upstream_xfer *x = arg;
	size_t n;

	if (x->cancelled || x->aborted)
		return CURL_READFUNC_ABORT;
	x->in_callback++;
	n = x->ops.read_body(x->arg, buf, size * nitems);
	x->in_callback--;
	if (x->cancelled)
		return CURL_READFUNC_ABORT;
	if (n == UPSTREAM_BODY_FAIL) {
		x->aborted = 1;
		return CURL_READFUNC_ABORT;
	}
	if (n == UPSTREAM_BODY_WAIT) {
		x->pause_mask |= CURLPAUSE_SEND;
		xfer_arm(x);
		return CURL_READFUNC_PAUSE;
	}
	if (n == 0)
		x->body_sent = 1;
	xfer_arm(x);
	return n;
}

/* Parses one response header line into the transfer. */
static size_t header_cb(char *line, size_t size, size_t nitems, void *arg)
{
	struct upstream_xfer *x = arg;
	size_t len = size * nitems, total = len;
	const char *colon;
	int rc;

	if (x->cancelled || x->aborted)
		return 0;
	if (x->head_seen)
		return total; /* trailers: not relayed */
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		const char *sp = memchr(line, ' ', len);

		front_hdrs_clear(&x->hdrs);
		x->status = sp ? atoi(sp + 1) : 0;
		return total;
	}
	if (len == 0) {
		if (x->status >= 100 && x->status < 200)
			return total; /* interim response: the final one follows */
		x->head_seen = 1;
		xfer_arm(x);
		x->in_callback++;
		rc = x->ops.on_head(x->arg, x->status, &x->hdrs);
		x->in_callback--;
		if (rc < 0 || x->cancelled) {
			x->aborted = 1;
			return 0;
		}
		return total;
	}
	if ((line[0] == ' ' || line[0] == '\t') && x->hdrs.n) {
		/* obs-fold from upstream: join with a space */
		struct front_hdr *h = &x->hdrs.v[x->hdrs.n - 1];
		size_t old = strlen(h->value), i = 0;
		char *nv;

		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		nv = realloc(h->value, old + 1 + (len - i) + 1);
		if (!nv)
			return 0;
		nv[old] = ' ';
		memcpy(nv + old + 1, line + i, len - i);
		nv[old + 1 + len - i] = '\0';
		h->value = nv;
		return total;
	}
	colon = memchr(line, ':', len);
	if (!colon || colon == line)
		return total; /* not a header: skip it rather than fail */
	{
		const char *v = colon + 1, *end = line + len;
		size_t nlen = (size_t)(colon - line);

		while (nlen && (line[nlen - 1] == ' ' || line[nlen - 1] == '\t'))
			nlen--;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (front_hdrs_addn(&x->hdrs, line, nlen, v, (size_t)(end - v)) < 0)
			return 0;
	}
	return total;
}

static size_t write_cb(char *data, size_t size, size_t nitems, void *arg)
{
	struct upstream_xfer *x = arg;
	size_t len = size * nitems;
	int rc;

	if (x->cancelled || x->aborted)
		return 0;
	if (!x->head_seen) {
		/* a body without a final head cannot happen with HTTP/1.x */
		x->aborted = 1;
		return 0;
	}
	x->in_callback++;
	rc = x->ops.on_body(x->arg, data, len);
	x->in_callback--;
	if (rc < 0 || x->cancelled) {
		x->aborted = 1;
		return 0;
	}
	if (rc > 0) {
		x->pause_mask |= CURLPAUSE_RECV;
		xfer_arm(x);
		return CURL_WRITEFUNC_PAUSE;
	}
	xfer_arm(x);
	return len;
}

struct upstream *upstream_new(struct event_base *base, const struct upstream_config *cfg,
			      char *err, size_t errlen)
{
	struct upstream *u = calloc(1, sizeof(*u));

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	u->base = base;
	if (cfg)
		u->cfg = *cfg;
	else
		upstream_config_default(&u->cfg);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl initialisation failed");
		free(u);
		return NULL;
	}
	u->multi = curl_multi_init();
	u->timer = evtimer_new(base, timer_event_cb, u);
	if (!u->multi || !u->timer) {
		snprintf(err, errlen, "out of memory");
		upstream_free(u);
		return NULL;
	}
	curl_multi_setopt(u->multi, CURLMOPT_SOCKETFUNCTION, multi_socket_cb);
	curl_multi_setopt(u->multi, CURLMOPT_SOCKETDATA, u);
	curl_multi_setopt(u->multi, CURLMOPT_TIMERFUNCTION, multi_timer_cb);
	curl_multi_setopt(u->multi, CURLMOPT_TIMERDATA, u);
	curl_multi_setopt(u->multi, CURLMOPT_MAXCONNECTS, u->cfg.max_connections);
	return u;
}

void upstream_free(struct upstream *u)
{
	if (!u)
		return;
	while (u->xfers) {
		u->xfers->cancelled = 1;
		xfer_free(u->xfers);
	}
	while (u->n_idle > 0)
		curl_easy_cleanup(u->idle[--u->n_idle]);
	if (u->multi)
		curl_multi_cleanup(u->multi);
	if (u->timer)
		event_free(u->timer);
	free(u);
	curl_global_cleanup();
}

size_t upstream_active(const struct upstream *u)
{
	return u->active;
}

/* Adds one request header to the slist in libcurl's syntax: "Name;" sends
 * an empty value ("Name:" would remove a header). */
static int slist_add(struct curl_slist **list, const char *name, const char *value)
{
	size_t nlen = strlen(name), vlen = strlen(value);
	size_t need = nlen + vlen + 3;
	char stack[512];
	char *line = need <= sizeof(stack) ? stack : malloc(need);
	struct curl_slist *n;

	if (!line)
		return -1;
	memcpy(line, name, nlen);
	if (vlen) {
		line[nlen] = ':';
		line[nlen + 1] = ' ';
		memcpy(line + nlen + 2, value, vlen);
		line[nlen + 2 + vlen] = '\0';
	} else {
		line[nlen] = ';';
		line[nlen + 1] = '\0';
	}
	n = curl_slist_append(*list, line);
	if (line != stack)
		free(line);
	if (!n)
		return -1;
	*list = n;
	return 0;
}

struct upstream_xfer *upstream_start(struct upstream *u, const struct upstream_request *req,
				     const struct upstream_ops *ops, void *arg,
				     char *err, size_t errlen)
{
	struct upstream_xfer *x = calloc(1, sizeof(*x));
	const struct front_hdrs *h = req->hdrs;
	int fail = 0;

	if (!x)
		goto nomem;
	x->u = u;
	x->next = u->xfers;
	if (u->xfers)
		u->xfers->prev = x;
	u->xfers = x;
	x->ops = *ops;
	x->arg = arg;
	x->head_only = req->head;
	x->progress = evtimer_new(u->base, progress_timeout_cb, x);
	x->easy = u->n_idle > 0 ? u->idle[--u->n_idle] : curl_easy_init();
	if (!x->progress || !x->easy)
		goto nomem;
	u->active++;
	for (size_t i = 0; h && i < h->n; i++)
		fail |= slist_add(&x->slist, h->v[i].name, h->v[i].value);
	/* remove what libcurl would add on its own */
	if (!front_hdrs_get(h, "Accept"))
		fail |= !(x->slist = curl_slist_append(x->slist, "Accept:"));
	if (req->expect_continue && req->body_length != -1)
		fail |= slist_add(&x->slist, "Expect", "100-continue");
	else
		fail |= !(x->slist = curl_slist_append(x->slist, "Expect:"));
	if (fail)
		goto nomem;

	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	curl_easy_setopt(x->easy, CURLOPT_URL, req->url);
	curl_easy_setopt(x->easy, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(x->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->slist);
	curl_easy_setopt(x->easy, CURLOPT_HTTP_CONTENT_DECODING, 0L);
	curl_easy_setopt(x->easy, CURLOPT_HTTP_TRANSFER_DECODING, 1L);
	curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(x->easy, CURLOPT_CONNECTTIMEOUT_MS, u->cfg.connect_timeout_ms);
	curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, u->cfg.total_timeout_ms);
	curl_easy_setopt(x->easy, CURLOPT_EXPECT_100_TIMEOUT_MS, u->cfg.expect_timeout_ms);
	curl_easy_setopt(x->easy, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(x->easy, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	if (u->cfg.ca_file)
		curl_easy_setopt(x->easy, CURLOPT_CAINFO, u->cfg.ca_file);
	if (u->cfg.insecure) {
		curl_easy_setopt(x->easy, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(x->easy, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (req->head) {
		curl_easy_setopt(x->easy, CURLOPT_NOBODY, 1L);
	} else if (req->body_length != -1) {
		curl_easy_setopt(x->easy, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(x->easy, CURLOPT_READFUNCTION, read_cb);
		curl_easy_setopt(x->easy, CURLOPT_READDATA, x);
		curl_easy_setopt(x->easy, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)(req->body_length >= 0 ? req->body_length : -1));
		curl_easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, req->method);
	} else if (strcmp(req->method, "GET") != 0) {
		curl_easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, req->method);
	}
	if (req->head && strcmp(req->method, "HEAD") != 0)
		curl_easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, req->method);
	if (curl_multi_add_handle(u->multi, x->easy) != CURLM_OK) {
		snprintf(err, errlen, "cannot add the transfer");
		curl_easy_cleanup(x->easy);
		x->easy = NULL;
		u->active--;
		xfer_free(x);
		return NULL;
	}
	xfer_arm(x);
	return x;
nomem:
	snprintf(err, errlen, "out of memory");
	xfer_free(x);
	return NULL;
}

void upstream_resume_send(struct upstream_xfer *x)
{
	if (!x || x->cancelled || !(x->pause_mask & CURLPAUSE_SEND))
		return;
	x->pause_mask &= ~CURLPAUSE_SEND;
	xfer_arm(x);
	curl_easy_pause(x->easy, x->pause_mask);
}

void upstream_resume_recv(struct upstream_xfer *x)
{
	if (!x || x->cancelled || !(x->pause_mask & CURLPAUSE_RECV))
		return;
	x->pause_mask &= ~CURLPAUSE_RECV;
	xfer_arm(x);
	curl_easy_pause(x->easy, x->pause_mask);
}

void upstream_cancel(struct upstream_xfer *x)
{
	if (!x)
		return;
	x->cancelled = 1;
	if (x->in_callback)
		return; /* the callback returns an abort; reap() frees it */
	xfer_free(x);
}
