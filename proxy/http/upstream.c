/* upstream.c — HTTP/1.1 transfers to the upstream on the daemon's own
 * libevent loop: the request head built once and written with one
 * evbuffer_add, the body pulled from read_body (or moved by move_body) in
 * large pieces (chunked when its length is unknown, after 100 Continue
 * when asked), the response
 * parsed by upstream_parse.c, connections from upstream_conn.c's pool. It
 * owns the timeouts (connect, first byte, idle, total; the progress timer
 * stops while the transfer waits on its consumer), back-pressure both ways
 * and the one retry of a request that met a stale pooled connection.
 * Retries of answered requests, signing and the meaning of statuses belong
 * to the caller. */
#include "upstream_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/dns.h>

#include "ops/log.h"

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
	c->max_connections = 512; /* HAProxy keeps every idle one by default */
}

/* ---- the transfer's life ------------------------------------------------- */

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
	if (x->linked)
		x->u->active--;
	up_conn_release(x, 0);
	if (x->timer && !x->events_off) { /* timer and kick live in x's block */
		event_del(x->timer);
		event_del(x->kick);
	}
	if (x->total)
		event_free(x->total);
	up_parse_clear(x);
	if (x->piece)
		evbuffer_free(x->piece);
	free(x->head);
	free(x->t.origin); /* t.host is in the same block */
	free(x);
}

/* Every way into a transfer from the loop goes through enter/leave, so a
 * transfer finished or cancelled deep inside is freed on the way out. */
static void xfer_enter(struct upstream_xfer *x)
{
	x->depth++;
}

static void xfer_leave(struct upstream_xfer *x)
{
	if (--x->depth == 0 && x->dead)
		xfer_free(x);
}

/* Ends x: the connection pooled (keep) or closed, then one on_done unless
 * cancelled. The memory goes at xfer_leave. */
static void xfer_finish(struct upstream_xfer *x, enum upstream_result res, const char *detail,
			int keep)
{
	if (x->dead)
		return;
	x->dead = 1;
	evtimer_del(x->timer);
	if (x->total)
		evtimer_del(x->total);
	if (x->kicked)
		event_del(x->kick);
	x->events_off = 1;
	/* pooled before on_done, so a request it starts can reuse it */
	if (keep)
		up_conn_release(x, 1);
	if (res != UPSTREAM_OK && res != UPSTREAM_ABORTED)
		log_debug("upstream transfer failed: \"%s\"", detail);
	if (!x->cancelled) {
		x->depth++;
		x->ops.on_done(x->arg, res, detail ? detail : "");
		x->depth--;
	}
}

static void xfer_fail(struct upstream_xfer *x, enum upstream_result res, const char *detail)
{
	xfer_finish(x, res, detail, 0);
}

/* Monotonic milliseconds, from the clock the kernel keeps per tick: every
 * timeout here is seconds long (or tens of ms in tests). */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void timer_set(struct upstream_xfer *x, int64_t now)
{
	int64_t ms = x->t_due - now;
	struct timeval tv;

	if (ms < 0)
		ms = 0;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	if (evtimer_add(x->timer, &tv) == 0)
		x->t_armed = x->t_due;
}

/* The timer is only ever moved earlier: a later deadline (progress) is
 * noted in t_due and the timer, when it fires, sets itself anew for it;
 * no deadline (paused) lets it fire for nothing. */
void up_xfer_arm(struct upstream_xfer *x)
{
	const struct upstream_config *c = &x->u->cfg;
	long ms;
	int64_t now;

	if (x->dead)
		return;
	if (!x->conn || !x->conn->connected)
		ms = c->connect_timeout_ms;
	else if (x->head_seen) /* waiting on the consumer, or on the body after the end */
		ms = x->recv_paused || (x->complete && x->send_paused) ? 0 : c->idle_timeout_ms;
	else if (x->expect_wait)
		ms = c->expect_timeout_ms;
	else
		ms = x->send_paused ? 0 : c->first_byte_timeout_ms;
	if (ms <= 0) {
		x->t_due = 0;
		return;
	}
	now = mono_ms();
	x->t_due = now + ms;
	if (!x->t_armed || x->t_due < x->t_armed)
		timer_set(x, now);
}

static void xfer_kick(struct upstream_xfer *x)
{
	if (!x->kicked && !x->dead) {
		x->kicked = 1;
		event_active(x->kick, EV_TIMEOUT, 1);
	}
}

/* ---- sending ------------------------------------------------------------- */

/* What one read_body call said. */
enum pump_step { PUMP_GOT, PUMP_SHORT, PUMP_WAIT, PUMP_END, PUMP_FAIL };

/* Asks read_body for up to room bytes of one reserved extent, framed as a
 * chunk when the length is unknown. */
static enum pump_step pump_piece(struct upstream_xfer *x, struct evbuffer_iovec *v, size_t room,
				 size_t frame)
{
	size_t n;

	x->depth++;
	n = x->ops.read_body(x->arg, (char *)v->iov_base + (frame ? 10 : 0), room - frame);
	x->depth--;
	v->iov_len = 0;
	if (n == UPSTREAM_BODY_WAIT)
		return PUMP_WAIT;
	if (n == 0)
		return PUMP_END;
	if (n == UPSTREAM_BODY_FAIL || n > room - frame)
		return PUMP_FAIL;
	if (frame) {
		/* the chunk size in 8 hex digits (leading zeros are allowed) */
		static const char hex[] = "0123456789abcdef";
		char *p = v->iov_base;

		for (int i = 0; i < 8; i++)
			p[i] = hex[(n >> (4 * (7 - i))) & 0xf];
		p[8] = p[10 + n] = '\r';
		p[9] = p[11 + n] = '\n';
	}
	v->iov_len = n + frame;
	x->body_taken += (int64_t)n;
	return n + frame < room ? PUMP_SHORT : PUMP_GOT;
}

/* Asks move_body for up to want bytes into out; a chunk's size line goes
 * before them and its CRLF after (through x->piece) when the length is
 * unknown. */
static enum pump_step pump_move(struct upstream_xfer *x, struct evbuffer *out, size_t want,
				size_t frame)
{
	struct evbuffer *dst = out;
	size_t before, n;
	char line[10];

	if (frame && !x->piece && !(x->piece = evbuffer_new()))
		return PUMP_FAIL;
	if (frame)
		dst = x->piece;
	before = evbuffer_get_length(dst);
	x->depth++;
	n = x->ops.move_body(x->arg, dst, want);
	x->depth--;
	if (n == UPSTREAM_BODY_WAIT || n == 0)
		return n ? PUMP_WAIT : PUMP_END;
	if (n == UPSTREAM_BODY_FAIL || n > want || evbuffer_get_length(dst) - before != n)
		return PUMP_FAIL;
	if (frame) {
		static const char hex[] = "0123456789abcdef";

		for (int i = 0; i < 8; i++)
			line[i] = hex[(n >> (4 * (7 - i))) & 0xf];
		line[8] = '\r';
		line[9] = '\n';
		if (evbuffer_add(out, line, 10) < 0 || evbuffer_add_buffer(out, dst) < 0 ||
		    evbuffer_add(out, "\r\n", 2) < 0)
			return PUMP_FAIL;
	}
	x->body_taken += (int64_t)n;
	return n < want ? PUMP_SHORT : PUMP_GOT;
}

/* 1 while the request body may be pumped: connected, not all sent, not
 * waiting for 100 Continue or for read_body to have more. */
static int pump_can_run(const struct upstream_xfer *x)
{
	return !x->dead && x->conn && x->conn->connected && !x->body_done && !x->expect_wait &&
	       !x->send_paused;
}

/* Fills the connection's output from read_body up to UP_SEND_WINDOW, in
 * pieces of up to UP_BODY_PIECE read straight into the output buffer (the
 * free space of its last chunk first: small pieces allocate nothing), or
 * from move_body when the caller has one (no copy here). */
static void xfer_pump(struct upstream_xfer *x)
{
	struct evbuffer *out;
	const size_t frame = x->body_length == -2 ? 12 : 0; /* "%08zx\r\n" ... "\r\n" */
	enum pump_step step = PUMP_GOT;

	if (!pump_can_run(x))
		return;
	out = bufferevent_get_output(x->conn->bev);
	while (step == PUMP_GOT || step == PUMP_SHORT) {
		struct evbuffer_iovec v[2];
		size_t want = UP_BODY_PIECE;
		int nv, used = 0;

		if (evbuffer_get_length(out) >= UP_SEND_WINDOW)
			break;
		if (x->body_length >= 0) {
			int64_t left = x->body_length - x->body_taken;

			if (left == 0) {
				x->body_done = 1;
				break;
			}
			if ((int64_t)want > left)
				want = (size_t)left;
		}
		if (x->ops.move_body) {
			step = pump_move(x, out, want, frame);
			if (x->dead)
				return;
			continue;
		}
		nv = evbuffer_reserve_space(out, (ev_ssize_t)(want + frame), v, 2);
		if (nv < 1) {
			xfer_fail(x, UPSTREAM_ERROR, "out of memory");
			return;
		}
		step = PUMP_GOT;
		for (int i = 0; i < nv && step == PUMP_GOT && want > 0; i++) {
			size_t room = v[i].iov_len > want + frame ? want + frame : v[i].iov_len;

			used = i + 1;
			if (room <= frame + 64 && i + 1 < nv) {
				v[i].iov_len = 0; /* a sliver: the next extent */
				continue;
			}
			step = pump_piece(x, &v[i], room, frame);
			if (x->dead)
				return;
			want -= v[i].iov_len ? v[i].iov_len - frame : 0;
		}
		if (evbuffer_commit_space(out, v, used) < 0) {
			xfer_fail(x, UPSTREAM_ERROR, "cannot queue the request body");
			return;
		}
	}
	if (step == PUMP_WAIT) {
		x->send_paused = 1;
	} else if (step == PUMP_FAIL) {
		xfer_fail(x, UPSTREAM_ABORTED, "the request body could not be read");
		return;
	} else if (step == PUMP_END) {
		if (x->body_length >= 0 && x->body_taken < x->body_length) {
			xfer_fail(x, UPSTREAM_ERROR, "the request body ended early");
			return;
		}
		if (frame && evbuffer_add(out, "0\r\n\r\n", 5) < 0) {
			xfer_fail(x, UPSTREAM_ERROR, "out of memory");
			return;
		}
		x->body_done = 1;
	}
	up_xfer_arm(x);
}

/* Writes what the output holds straight to a plain connection's socket,
 * from here rather than after a round through the loop; only a remainder
 * waits for EV_WRITE. TLS connections write through their bufferevent. */
static void xfer_flush(struct upstream_xfer *x)
{
	struct bufferevent *bev;
	struct evbuffer *out;
	int n;

	if (x->dead || !x->conn || !x->conn->connected || x->t.tls)
		return;
	bev = x->conn->bev;
	out = bufferevent_get_output(bev);
	if (evbuffer_get_length(out) == 0)
		return;
	/* the bufferevent keeps its output's start frozen but while it writes */
	evbuffer_unfreeze(out, 1);
	n = evbuffer_write(out, bufferevent_getfd(bev));
	evbuffer_freeze(out, 1);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		/* the event callback's path: a retry or a send failure */
		up_xfer_event_cb(bev, BEV_EVENT_WRITING | BEV_EVENT_ERROR, x);
		return;
	}
	if (evbuffer_get_length(out))
		bufferevent_enable(bev, EV_WRITE);
}

/* The response ended and the request is out: on_done, the connection
 * pooled when it can carry another request. */
static void xfer_complete(struct upstream_xfer *x)
{
	struct bufferevent *bev = x->conn->bev;

	xfer_finish(x, UPSTREAM_OK, "",
		    !x->no_reuse && x->body_done && !x->eof_seen &&
		    evbuffer_get_length(bufferevent_get_input(bev)) == 0 &&
		    evbuffer_get_length(bufferevent_get_output(bev)) == 0);
}

/* 1 when the pump stopped at a full window and the socket then took all of
 * it: no EV_WRITE is armed, so nothing would call the pump again. */
static int xfer_window_drained(const struct upstream_xfer *x)
{
	return pump_can_run(x) && !x->t.tls &&
	       evbuffer_get_length(bufferevent_get_output(x->conn->bev)) == 0;
}

/* More request bytes, then out with them, window after window while the
 * socket takes each at once (a few per turn, then the loop's next turn: the
 * other connections get theirs); a response that ended before the body was
 * out ends once it is. */
static void xfer_send(struct upstream_xfer *x)
{
	int rounds = 0;

	do {
		xfer_pump(x);
		xfer_flush(x);
	} while (xfer_window_drained(x) && ++rounds < UP_SEND_ROUNDS);
	if (xfer_window_drained(x))
		xfer_kick(x);
	if (!x->dead && x->complete && x->body_done && x->conn &&
	    evbuffer_get_length(bufferevent_get_output(x->conn->bev)) == 0)
		xfer_complete(x);
}

/* Gives x a connection (fresh: never a pooled one) and queues its head. */
static void xfer_begin(struct upstream_xfer *x, int fresh)
{
	enum upstream_result res;

	if (up_conn_attach(x, fresh, &res) < 0) {
		xfer_fail(x, res, x->detail);
		return;
	}
	up_parse_reset(x);
	x->fail = UPSTREAM_OK;
	x->expect_wait = 0;
	x->body_done = x->body_length == -1;
	x->send_paused = 0;
	if (!x->body_done && x->want_expect)
		x->expect_wait = 1;
	if (bufferevent_write(x->conn->bev, x->head, x->head_len) < 0) {
		xfer_fail(x, UPSTREAM_ERROR, "out of memory");
		return;
	}
	up_xfer_arm(x);
	xfer_send(x);
}

/* A failure on a pooled connection before any response byte and before
 * read_body gave anything: the peer had closed it; once more on a new one. */
static int xfer_retry(struct upstream_xfer *x)
{
	if (!x->reused || x->retried || x->got_bytes || x->body_taken > 0 || x->dead)
		return 0;
	log_debug("upstream connection closed while idle: retrying on a new one");
	up_conn_release(x, 0);
	x->retried = 1;
	xfer_begin(x, 1);
	return 1;
}

/* ---- receiving ----------------------------------------------------------- */

static void xfer_read(struct upstream_xfer *x)
{
	struct evbuffer *in = bufferevent_get_input(x->conn->bev);
	int expecting = x->expect_wait;

	switch (up_parse_feed(x, in, x->eof_seen)) {
	case UP_FEED_MORE:
		if (expecting && !x->expect_wait)
			xfer_send(x); /* 100 Continue */
		up_xfer_arm(x);
		return;
	case UP_FEED_PAUSED:
		up_conn_read(x->conn, 0);
		up_xfer_arm(x);
		return;
	case UP_FEED_DONE:
		if (!x->body_done && x->status < 300 && !x->eof_seen) {
			/* a success before the whole body went out: the body
			 * still goes (as libcurl did), then the end */
			up_xfer_arm(x);
			return;
		}
		if (!x->body_done)
			x->no_reuse = 1; /* an error answer: the rest is not sent */
		xfer_complete(x);
		return;
	case UP_FEED_FAILED:
		xfer_fail(x, x->fail ? x->fail : UPSTREAM_BAD_RESPONSE, x->detail);
		return;
	case UP_FEED_DEAD:
		return;
	}
}

void up_xfer_read_cb(struct bufferevent *bev, void *arg)
{
	struct upstream_xfer *x = arg;

	xfer_enter(x);
	if (!x->dead && !x->recv_paused)
		xfer_read(x);
	xfer_leave(x);
}

void up_xfer_write_cb(struct bufferevent *bev, void *arg)
{
	struct upstream_xfer *x = arg;

	xfer_enter(x);
	if (!x->dead && (!x->body_done || x->complete))
		xfer_send(x);
	if (!x->dead && !x->t.tls && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		bufferevent_disable(bev, EV_WRITE); /* xfer_flush writes first again */
	xfer_leave(x);
}

static void xfer_conn_error(struct upstream_xfer *x, short what)
{
	struct up_conn *c = x->conn;
	char why[128];
	int err = EVUTIL_SOCKET_ERROR();
	int dns = bufferevent_socket_get_dns_error(c->bev);

	if (x->t.tls)
		up_conn_tls_error(c, why, sizeof(why));
	else
		why[0] = '\0';
	if (!c->connected) {
		/* a pooled connection is connected: no retry here */
		if (dns)
			snprintf(x->detail, sizeof(x->detail), "cannot resolve \"%.64s\": %s",
				 x->t.host, evutil_gai_strerror(dns));
		else if (why[0])
			snprintf(x->detail, sizeof(x->detail), "%s", why);
		else
			snprintf(x->detail, sizeof(x->detail), "cannot connect to %.64s port %u: %s",
				 x->t.host, x->t.port, evutil_socket_error_to_string(err));
		xfer_fail(x, why[0] && !dns ? UPSTREAM_ERROR : UPSTREAM_CONNECT_FAILED, x->detail);
		return;
	}
	if (xfer_retry(x))
		return;
	if (!why[0])
		snprintf(why, sizeof(why), "%s", err ? evutil_socket_error_to_string(err) :
			 "connection error");
	snprintf(x->detail, sizeof(x->detail), "%s %.64s: %s",
		 (what & BEV_EVENT_WRITING) ? "sending to" : "receiving from", x->t.host, why);
	xfer_fail(x, (what & BEV_EVENT_WRITING) && !x->head_seen ? UPSTREAM_SEND_FAILED
								 : UPSTREAM_BAD_RESPONSE,
		  x->detail);
}

void up_xfer_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct upstream_xfer *x = arg;

	xfer_enter(x);
	if (x->dead || !x->conn) {
		xfer_leave(x);
		return;
	}
	if (what & BEV_EVENT_CONNECTED) {
		if (up_conn_connected(x->conn) < 0) {
			xfer_fail(x, UPSTREAM_ERROR, "out of memory");
			xfer_leave(x);
			return;
		}
		if (x->dns_connect) {
			int one = 1;
			evutil_socket_t fd = bufferevent_getfd(bev);

			if (fd >= 0)
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		up_xfer_arm(x);
		xfer_send(x);
	} else if (what & BEV_EVENT_EOF) {
		if (!x->got_bytes && evbuffer_get_length(bufferevent_get_input(bev)) == 0 &&
		    xfer_retry(x)) {
			xfer_leave(x);
			return;
		}
		x->eof_seen = 1;
		if (x->complete) /* answered; the rest of the body is not wanted */
			xfer_complete(x);
		else if (!x->recv_paused)
			xfer_read(x);
	} else if (what & BEV_EVENT_ERROR) {
		if (x->complete) {
			x->no_reuse = 1;
			xfer_complete(x);
		} else {
			xfer_conn_error(x, what);
		}
	}
	xfer_leave(x);
}

/* ---- timers and deferred work ---------------------------------------------- */

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_xfer *x = arg;
	const char *detail;

	xfer_enter(x);
	x->t_armed = 0;
	if (x->dead || !x->t_due) {
		xfer_leave(x);
		return;
	}
	if (mono_ms() < x->t_due) { /* progress since it was set */
		timer_set(x, mono_ms());
		xfer_leave(x);
		return;
	}
	if (x->expect_wait && x->conn && x->conn->connected && !x->head_seen) {
		x->expect_wait = 0; /* no 100 Continue in time: send anyway */
		xfer_send(x);
		up_xfer_arm(x);
	} else {
		detail = !x->conn || !x->conn->connected ? "connect timed out" :
			 x->head_seen ? "no response data in time" : "no response head in time";
		log_info("upstream %s", detail);
		xfer_fail(x, UPSTREAM_TIMEOUT, detail);
	}
	xfer_leave(x);
}

static void total_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_xfer *x = arg;

	xfer_enter(x);
	log_info("upstream transfer took longer than the total timeout");
	xfer_fail(x, UPSTREAM_TIMEOUT, "the transfer took too long");
	xfer_leave(x);
}

static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream_xfer *x = arg;

	xfer_enter(x);
	x->kicked = 0;
	if (!x->dead && !x->conn) {
		xfer_begin(x, 0);
	} else if (!x->dead) {
		if (x->resume_recv) {
			x->resume_recv = 0;
			switch (up_parse_flush_held(x)) {
			case UP_FEED_MORE:
				up_conn_read(x->conn, 1);
				xfer_read(x);
				break;
			case UP_FEED_FAILED:
				xfer_fail(x, x->fail, x->detail);
				break;
			default:
				break;
			}
		}
		xfer_send(x);
		up_xfer_arm(x);
	}
	xfer_leave(x);
}

/* ---- the engine ---------------------------------------------------------- */

struct upstream *upstream_new(struct event_base *base, const struct upstream_config *cfg,
			      char *err, size_t errlen)
{
	struct upstream *u = calloc(1, sizeof(*u));

	if (!u)
		goto nomem;
	u->base = base;
	if (cfg)
		u->cfg = *cfg;
	else
		upstream_config_default(&u->cfg);
	if (u->cfg.ca_file) {
		u->ca_file = strdup(u->cfg.ca_file);
		if (!u->ca_file)
			goto nomem;
	}
	u->cfg.ca_file = u->ca_file;
	return u;
nomem:
	snprintf(err, errlen, "out of memory");
	upstream_free(u);
	return NULL;
}

void upstream_set_timeouts(struct upstream *u, const struct upstream_config *cfg)
{
	u->cfg.connect_timeout_ms = cfg->connect_timeout_ms;
	u->cfg.first_byte_timeout_ms = cfg->first_byte_timeout_ms;
	u->cfg.idle_timeout_ms = cfg->idle_timeout_ms;
	u->cfg.total_timeout_ms = cfg->total_timeout_ms;
}

void upstream_free(struct upstream *u)
{
	if (!u)
		return;
	while (u->xfers) {
		u->xfers->cancelled = 1;
		u->xfers->dead = 1;
		xfer_free(u->xfers);
	}
	up_pool_clear(u);
	up_head_forget(u);
	if (u->dns)
		evdns_base_free(u->dns, 0);
	if (u->ssl_ctx)
		SSL_CTX_free(u->ssl_ctx);
	free(u->ca_file);
	free(u);
}

size_t upstream_active(const struct upstream *u)
{
	return u->active;
}

struct upstream_xfer *upstream_start(struct upstream *u, const struct upstream_request *req,
				     const struct upstream_ops *ops, void *arg,
				     char *err, size_t errlen)
{
	/* x, then its timer and kick events in the same block */
	size_t off = (sizeof(struct upstream_xfer) + 15) & ~(size_t)15;
	size_t esz = (event_get_struct_event_size() + 15) & ~(size_t)15;
	struct upstream_xfer *x = calloc(1, off + 2 * esz);
	long total_ms;

	if (!x)
		goto nomem;
	x->u = u;
	x->ops = *ops;
	x->arg = arg;
	x->head_only = req->head != 0;
	x->body_length = req->body_length < -2 ? -1 : req->body_length;
	x->want_expect = req->expect_continue && x->body_length != -1 && x->body_length != 0 &&
			 u->cfg.expect_timeout_ms > 0;
	switch (up_head_make(x, req)) {
	case 0:
		break;
	case -1:
		snprintf(err, errlen, "bad upstream URL \"%s\"", req->url);
		xfer_free(x);
		return NULL;
	default:
		goto nomem;
	}
	if (evtimer_assign((struct event *)((char *)x + off), u->base, timer_cb, x) < 0 ||
	    event_assign((struct event *)((char *)x + off + esz), u->base, -1, 0, kick_cb, x) < 0)
		goto nomem;
	x->timer = (struct event *)((char *)x + off);
	x->kick = (struct event *)((char *)x + off + esz);
	total_ms = u->cfg.total_timeout_ms;
	if (req->total_timeout_ms > 0 && (total_ms <= 0 || req->total_timeout_ms < total_ms))
		total_ms = req->total_timeout_ms;
	if (total_ms > 0) {
		struct timeval tv = { total_ms / 1000, (total_ms % 1000) * 1000 };

		x->total = evtimer_new(u->base, total_cb, x);
		if (!x->total)
			goto nomem;
		evtimer_add(x->total, &tv);
	}
	x->next = u->xfers;
	if (u->xfers)
		u->xfers->prev = x;
	u->xfers = x;
	x->linked = 1;
	u->active++;
	/* the connection and the first bytes on the loop's next turn (the
	 * timer is armed there, for the phase it is in) */
	xfer_kick(x);
	return x;
nomem:
	snprintf(err, errlen, "out of memory");
	xfer_free(x);
	return NULL;
}

void upstream_resume_send(struct upstream_xfer *x)
{
	if (!x || x->dead || !x->send_paused)
		return;
	x->send_paused = 0;
	xfer_kick(x);
}

void upstream_resume_recv(struct upstream_xfer *x)
{
	if (!x || x->dead || !x->recv_paused)
		return;
	x->resume_recv = 1;
	xfer_kick(x);
}

/* 1 when the rest of x's answer can be read and dropped to keep its
 * connection: the whole request is out, the final head came, the answer
 * ends by its framing (not the connection's close) within UP_DRAIN_MAX
 * more body bytes, and nothing is held back from a consumer. A 412 to an
 * unread create is such an answer: the HEAD that follows reuses the
 * connection instead of opening one (over TLS, a handshake). */
static int xfer_can_drain(const struct upstream_xfer *x)
{
	if (x->dead || x->complete || !x->conn || !x->head_seen || !x->body_done ||
	    x->no_reuse || x->recv_paused || x->eof_seen ||
	    (x->held && evbuffer_get_length(x->held)))
		return 0;
	if (up_answer_bodyless(x) || (x->hp.flags & F_CHUNKED))
		return 1; /* chunked: bounded as it comes (upstream_parse.c) */
	return (x->hp.flags & F_CONTENTLENGTH) && x->hp.content_length <= UP_DRAIN_MAX;
}

void upstream_cancel(struct upstream_xfer *x)
{
	if (!x)
		return;
	x->cancelled = 1;
	if (xfer_can_drain(x))
		return; /* ends as any transfer does, with no callback */
	x->dead = 1;
	if (x->depth == 0)
		xfer_free(x);
}
