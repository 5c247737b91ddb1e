/* test_upstream.c — the native upstream client against a scripted server on
 * 127.0.0.1 (a thread with blocking sockets, one connection at a time):
 * keep-alive reuse counted on the server, every response framing, 1xx and
 * Expect, a pooled connection the server closed, failures mapped to their
 * results, back-pressure both ways, cancelling from inside callbacks and
 * the short answer a cancel drains to keep its connection.
 * Each case is a row: what the server does, what the client sends, what
 * must come out. The scripted server is upstream_srv_test.h. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "http/upstream.h"
#include "upstream_srv_test.h"

/* ---- scripts ---------------------------------------------------------------- */

#define OK5 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

/* answers every request on the connection */
static void sc_keepalive(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, OK5);
	}
}

static void sc_chunked(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0)
		s_puts(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
}

static void sc_close_delimited(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) == 0)
		s_puts(c, "HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nuntil the end");
}

static void sc_head(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0)
		s_puts(c, strncmp(s->last_head, "HEAD ", 5) == 0 ?
		       "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" : OK5);
}

static void sc_204_304(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0)
		s_puts(c, strstr(s->last_head, "/304") ? "HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n"
		       : "HTTP/1.1 204 No Content\r\n\r\n");
}

static void sc_continue(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0) {
		if (!strcasestr(s->last_head, "\r\nExpect: 100-continue\r\n"))
			return;
		s_puts(c, "HTTP/1.1 100 Continue\r\n\r\n");
		s_body(s, c);
		s_puts(c, "HTTP/1.1 102 Processing\r\n\r\n" OK5);
	}
}

/* never says 100 Continue: the client sends the body after its wait */
static void sc_no_continue(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, OK5);
	}
}

/* the first connection answers once, then closes as the next request
 * arrives (a keep-alive race): the client must retry on a new one */
static void sc_stale(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) < 0)
		return;
	s_body(s, c);
	s_puts(c, OK5);
	if (i == 0) {
		s_head(s, c);
		return;
	}
	while (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, OK5);
	}
}

/* answers the first request before reading its body (a success: the
 * client still sends all of it and keeps the connection), the next after */
static void sc_early(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) < 0)
		return;
	s_puts(c, OK5);
	s_body(s, c);
	while (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, OK5);
	}
}

/* answers once and closes: the pooled connection is found dead while idle */
static void sc_close_after(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) == 0)
		s_puts(c, OK5);
}

/* on a reused connection half an answer, then close: reported, not retried */
static void sc_reused_truncated(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) < 0)
		return;
	s_puts(c, OK5);
	if (s_head(s, c) == 0)
		s_puts(c, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort");
}

static void sc_truncated(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) == 0)
		s_puts(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
}

static void sc_garbage(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) == 0)
		s_puts(c, "HTTP/1.1 2x0 What\r\n\r\n");
}

static void sc_silent(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) == 0)
		usleep(600 * 1000);
}

static void sc_stall_body(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) == 0) {
		s_puts(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
		usleep(600 * 1000);
	}
}

/* the body a byte at a time, each 60 ms apart: 600 ms in all */
static void sc_trickle(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) == 0) {
		s_puts(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
		for (int k = 0; k < 10; k++) {
			usleep(60 * 1000);
			s_puts(c, "x");
		}
	}
}

#define BIG (1024 * 1024 + 17)

/* reads a big body, answers a big body */
static void sc_big(struct srv *s, struct sconn *c, int i)
{
	static char chunk[65536];
	char head[128];
	size_t left = BIG;

	for (size_t k = 0; k < sizeof(chunk); k++)
		chunk[k] = (char)(k * 7);
	while (s_head(s, c) == 0) {
		s_body(s, c);
		snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", BIG);
		s_puts(c, head);
		for (left = BIG; left;) {
			size_t n = left < sizeof(chunk) ? left : sizeof(chunk);

			s_write(c, chunk, n);
			left -= n;
		}
	}
}

/* A 412 with a short error document, as S3 answers a create of an existing
 * key: whole, its body late, chunked, stalled, or chunked past the bound a
 * cancelled transfer drains (UP_DRAIN_MAX, 64 KiB). */
#define E412 "HTTP/1.1 412 Precondition Failed\r\n"
#define DOC20 "<Error>precond</Err>"

static void sc_412(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, E412 "Content-Length: 20\r\n\r\n" DOC20);
	}
}

static void sc_412_late(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, E412 "Content-Length: 20\r\n\r\n");
		usleep(50 * 1000);
		s_puts(c, DOC20);
	}
}

static void sc_412_chunked(struct srv *s, struct sconn *c, int i)
{
	while (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, E412 "Transfer-Encoding: chunked\r\n\r\n14\r\n" DOC20 "\r\n0\r\n\r\n");
	}
}

static void sc_412_stall(struct srv *s, struct sconn *c, int i)
{
	if (i > 0) {
		sc_412(s, c, i); /* the next connection is answered */
		return;
	}
	if (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, E412 "Content-Length: 20\r\n\r\n<Err");
		usleep(600 * 1000);
	}
}

static void sc_412_long(struct srv *s, struct sconn *c, int i)
{
	static char chunk[4096 + 16];

	if (i > 0) {
		sc_412(s, c, i);
		return;
	}
	if (s_head(s, c) == 0) {
		s_body(s, c);
		s_puts(c, E412 "Transfer-Encoding: chunked\r\n\r\n");
		memset(chunk, 'x', sizeof(chunk));
		memcpy(chunk, "1000\r\n", 6);
		memcpy(chunk + 6 + 4096, "\r\n", 2);
		for (int k = 0; k < 17; k++) /* 68 KiB */
			s_write(c, chunk, 6 + 4096 + 2);
		s_puts(c, "0\r\n\r\n");
		sc_412(s, c, i); /* a request after that on it: answered */
	}
}

static void sc_http10(struct srv *s, struct sconn *c, int i)
{
	if (s_head(s, c) == 0)
		s_puts(c, "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello");
	usleep(100 * 1000); /* the client closes, not us */
}

/* ---- the client ------------------------------------------------------------- */

struct cli {
	struct event_base *base;
	struct upstream_xfer *x;
	int done;
	enum upstream_result res;
	char detail[256];
	int heads;
	int status;
	char hdr_a[32];
	size_t body_len;
	char body[64];
	unsigned body_sum;
	/* the request body */
	int64_t send_len;
	int64_t sent;
	unsigned send_sum;
	int wait_every;    /* read_body says WAIT every n-th call */
	int pause_every;   /* on_body says 1 every n-th call */
	int calls_rd, calls_body;
	int cancel_in_head, cancel_in_body;
	int move;          /* the body through move_body */
};

static void resume_send_cb(evutil_socket_t fd, short what, void *arg)
{
	struct cli *c = arg;

	if (c->x && !c->done)
		upstream_resume_send(c->x);
}

static void resume_recv_cb(evutil_socket_t fd, short what, void *arg)
{
	struct cli *c = arg;

	if (c->x && !c->done)
		upstream_resume_recv(c->x);
}

static size_t c_read_body(void *arg, char *buf, size_t len)
{
	struct cli *c = arg;
	struct timeval tv = { 0, 1000 };
	size_t n;

	if (c->wait_every && ++c->calls_rd % c->wait_every == 0) {
		event_base_once(c->base, -1, EV_TIMEOUT, resume_send_cb, c, &tv);
		return UPSTREAM_BODY_WAIT;
	}
	if (c->sent == c->send_len)
		return 0;
	n = len < 10000 ? len : 10000 + (size_t)(c->sent % 50000); /* pieces of many sizes */
	if (n > len)
		n = len;
	if ((int64_t)n > c->send_len - c->sent)
		n = (size_t)(c->send_len - c->sent);
	for (size_t i = 0; i < n; i++) {
		buf[i] = (char)((c->sent + (int64_t)i) * 13);
		c->send_sum += (unsigned char)buf[i];
	}
	c->sent += (int64_t)n;
	return n;
}

static int c_on_head(void *arg, int status, struct front_hdrs *hdrs)
{
	struct cli *c = arg;
	const char *a = front_hdrs_get(hdrs, "X-A");

	c->heads++;
	c->status = status;
	snprintf(c->hdr_a, sizeof(c->hdr_a), "%s", a ? a : "");
	if (c->cancel_in_head) {
		upstream_cancel(c->x);
		c->x = NULL;
		event_base_loopbreak(c->base);
	}
	return 0;
}

static int c_on_body(void *arg, const char *data, size_t len)
{
	struct cli *c = arg;
	struct timeval tv = { 0, 500 };

	if (c->cancel_in_body) {
		upstream_cancel(c->x);
		c->x = NULL;
		event_base_loopbreak(c->base);
		return 0;
	}
	if (c->pause_every && ++c->calls_body % c->pause_every == 0) {
		event_base_once(c->base, -1, EV_TIMEOUT, resume_recv_cb, c, &tv);
		return 1;
	}
	if (c->body_len + len < sizeof(c->body))
		memcpy(c->body + c->body_len, data, len);
	for (size_t i = 0; i < len; i++)
		c->body_sum += (unsigned char)data[i];
	c->body_len += len;
	return 0;
}

static void c_on_done(void *arg, enum upstream_result res, const char *detail)
{
	struct cli *c = arg;

	c->done++;
	c->res = res;
	snprintf(c->detail, sizeof(c->detail), "%s", detail);
	c->x = NULL;
	event_base_loopbreak(c->base);
}

static const struct upstream_ops cli_ops = { c_read_body, c_on_head, c_on_body, c_on_done, NULL };

/* The same bytes through move_body: made in a buffer of their own, moved. */
static size_t c_move_body(void *arg, struct evbuffer *out, size_t max)
{
	static char buf[64 * 1024];
	struct evbuffer *piece = evbuffer_new();
	size_t n = c_read_body(arg, buf, max < sizeof(buf) ? max : sizeof(buf));

	assert_non_null(piece);
	if (n && n != UPSTREAM_BODY_WAIT &&
	    (evbuffer_add(piece, buf, n) < 0 || evbuffer_add_buffer(out, piece) < 0))
		n = UPSTREAM_BODY_FAIL;
	evbuffer_free(piece);
	return n;
}

static const struct upstream_ops move_ops = { c_read_body, c_on_head, c_on_body, c_on_done,
					      c_move_body };
static int rows_move; /* run_row: every request's body through move_body */

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(arg);
}

/* upstream_request.total_timeout_ms for cli_run; 0: the engine's */
static long rows_req_total_ms;

/* One request through u; returns when on_done ran or the loop broke. */
static void cli_run(struct upstream *u, struct cli *c, const char *method, const char *url,
		    int64_t body_length, int expect)
{
	struct upstream_request r = { 0 };
	struct front_hdrs h = { 0 };
	struct timeval limit = { 10, 0 };
	struct event *stop;
	char err[128];

	assert_int_equal(front_hdrs_add(&h, "Host", "test"), 0);
	r.method = method;
	r.url = url;
	r.hdrs = &h;
	r.body_length = body_length;
	r.expect_continue = expect;
	r.head = strcmp(method, "HEAD") == 0;
	r.total_timeout_ms = rows_req_total_ms;
	c->send_len = body_length >= 0 ? body_length : body_length == -2 ? c->send_len : 0;
	c->x = upstream_start(u, &r, c->move ? &move_ops : &cli_ops, c, err, sizeof(err));
	front_hdrs_clear(&h);
	assert_non_null(c->x);
	stop = evtimer_new(c->base, stop_cb, c->base); /* not loopexit: it would outlive this run */
	evtimer_add(stop, &limit);
	event_base_dispatch(c->base);
	event_free(stop);
}

/* ---- the table ---------------------------------------------------------------- */

struct row {
	const char *name;
	script_fn script;
	const char *method;
	const char *path;
	int64_t body_length;   /* -1 none, -2 chunked (send_len bytes), else exact */
	int64_t send_len;      /* for chunked */
	int expect;
	int repeat;            /* requests in a row */
	long first_byte_ms, idle_ms, expect_ms;
	int wait_every, pause_every, cancel_in_head, cancel_in_body;
	/* what must come out (of the last request) */
	enum upstream_result res;
	int status;
	const char *body;      /* NULL: not checked */
	size_t body_len;       /* checked when body is NULL and this is > 0 */
	int accepts, requests; /* on the server; 0: not checked */
};

/* upstream_config.total_timeout_ms for run_row; 0: none (the default) */
static long rows_total_ms;

static const struct row rows[] = {
	{ "keep-alive: 5 requests, 1 connection", sc_keepalive, "GET", "/k", -1, 0, 0, 5,
	  0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "hello", 0, 1, 5 },
	{ "chunked response, extension and trailer", sc_chunked, "GET", "/c", -1, 0, 0, 2,
	  0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "hello world", 0, 1, 2 },
	{ "close-delimited response; next one on a new connection", sc_close_delimited, "GET",
	  "/e", -1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "until the end", 0, 2, 2 },
	{ "HEAD with Content-Length: no body, connection kept", sc_head, "HEAD", "/h", -1, 0, 0,
	  3, 0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "", 0, 1, 3 },
	{ "204 and 304 have no body", sc_204_304, "GET", "/304", -1, 0, 0, 3,
	  0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 304, "", 0, 1, 3 },
	{ "100 Continue, then the body, a 102 skipped", sc_continue, "PUT", "/p", 1000, 0, 1, 2,
	  0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "hello", 0, 1, 2 },
	{ "no 100 Continue: body sent after expect_timeout", sc_no_continue, "PUT", "/p", 1000, 0,
	  1, 1, 0, 0, 50, 0, 0, 0, 0, UPSTREAM_OK, 200, "hello", 0, 1, 1 },
	{ "pooled connection closed while idle: a new one", sc_close_after, "GET", "/a", -1, 0,
	  0, 3, 0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "hello", 0, 3, 3 },
	{ "pooled connection closed as the request came: retried", sc_stale, "GET", "/s", -1, 0,
	  0, 3, 0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "hello", 0, 2, 4 },
	{ "truncated on a reused connection: bad response", sc_reused_truncated, "GET", "/t", -1,
	  0, 0, 2, 0, 0, 0, 0, 0, 0, 0, UPSTREAM_BAD_RESPONSE, 200, NULL, 5, 1, 2 },
	{ "truncated response: bad response", sc_truncated, "GET", "/t", -1, 0, 0, 1,
	  0, 0, 0, 0, 0, 0, 0, UPSTREAM_BAD_RESPONSE, 200, "only ten b", 0, 1, 1 },
	{ "malformed status line: bad response", sc_garbage, "GET", "/g", -1, 0, 0, 1,
	  0, 0, 0, 0, 0, 0, 0, UPSTREAM_BAD_RESPONSE, 0, "", 0, 1, 1 },
	{ "no response head in time: timeout", sc_silent, "GET", "/z", -1, 0, 0, 1,
	  150, 0, 0, 0, 0, 0, 0, UPSTREAM_TIMEOUT, 0, "", 0, 1, 1 },
	{ "response body stalls: idle timeout", sc_stall_body, "GET", "/z", -1, 0, 0, 1,
	  0, 150, 0, 0, 0, 0, 0, UPSTREAM_TIMEOUT, 200, "abc", 0, 1, 1 },
	{ "a body that trickles, each gap under the idle timeout: no timeout", sc_trickle, "GET",
	  "/y", -1, 0, 0, 1, 0, 150, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "xxxxxxxxxx", 0, 1, 1 },
	{ "HTTP/1.0 without keep-alive: not reused", sc_http10, "GET", "/o", -1, 0, 0, 2,
	  0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "hello", 0, 2, 2 },
	{ "1 MiB both ways, paused both ways", sc_big, "PUT", "/b", BIG, 0, 0, 2,
	  0, 0, 0, 3, 2, 0, 0, UPSTREAM_OK, 200, NULL, BIG, 1, 2 },
	{ "1 MiB body always ready: the send window refills after a complete write", sc_big,
	  "PUT", "/r", BIG, 0, 0, 3, 2000, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, NULL, BIG, 1, 3 },
	{ "request body of unknown length: chunked", sc_big, "POST", "/u", -2, BIG - 5, 0, 2,
	  0, 0, 0, 2, 0, 0, 0, UPSTREAM_OK, 200, NULL, BIG, 1, 2 },
	{ "2xx before the body went out: body still sent, connection kept", sc_early, "PUT",
	  "/y", BIG, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, UPSTREAM_OK, 200, "hello", 0, 1, 2 },
	{ "chunked request body with Expect", sc_continue, "PUT", "/p", -2, 3000, 1, 1,
	  0, 0, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "hello", 0, 1, 1 },
};

static void run_row(const struct row *w)
{
	struct upstream_config cfg;
	struct event_base *base = event_base_new();
	struct srv *s = srv_start(w->script);
	struct upstream *u;
	struct cli c = { 0 };
	char url[128], err[128];

	upstream_config_default(&cfg);
	if (w->first_byte_ms)
		cfg.first_byte_timeout_ms = w->first_byte_ms;
	if (w->idle_ms)
		cfg.idle_timeout_ms = w->idle_ms;
	if (w->expect_ms)
		cfg.expect_timeout_ms = w->expect_ms;
	cfg.total_timeout_ms = rows_total_ms;
	u = upstream_new(base, &cfg, err, sizeof(err));
	assert_non_null(u);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s?x=1", s->port, w->path);
	for (int i = 0; i < w->repeat; i++) {
		memset(&c, 0, sizeof(c));
		c.base = base;
		c.send_len = w->send_len;
		c.wait_every = w->wait_every;
		c.pause_every = w->pause_every;
		c.move = rows_move;
		cli_run(u, &c, w->method, url, w->body_length, w->expect);
		if (i < w->repeat - 1) /* only the last one may fail */
			assert_int_equal(c.res, UPSTREAM_OK);
		if (w->body_length != -1 && c.res == UPSTREAM_OK && i == w->repeat - 1) {
			/* the server read every byte the client gave (earlier
			 * requests: proven by the next on the same connection) */
			assert_int_equal(s->body_bytes, (size_t)c.sent);
			assert_int_equal(s->body_sum, c.send_sum);
			if (w->body_length >= 0)
				assert_int_equal(c.sent, w->body_length);
		}
	}
	print_message("  %s: res %s (%s), status %d, %zu body bytes, %d accepts, %d requests\n",
		      w->name, upstream_strerror(c.res), c.detail, c.status, c.body_len,
		      s->accepts, s->requests);
	assert_int_equal(c.done, 1);
	assert_int_equal(c.res, w->res);
	assert_int_equal(c.status, w->status);
	assert_true(c.heads <= 1);
	if (w->body) {
		assert_int_equal(c.body_len, strlen(w->body));
		assert_memory_equal(c.body, w->body, c.body_len);
	} else if (w->body_len) {
		assert_int_equal(c.body_len, w->body_len);
	}
	if (w->accepts)
		assert_int_equal(__atomic_load_n(&s->accepts, __ATOMIC_SEQ_CST), w->accepts);
	if (w->requests)
		assert_int_equal(__atomic_load_n(&s->requests, __ATOMIC_SEQ_CST), w->requests);
	assert_int_equal(upstream_active(u), 0);
	upstream_free(u);
	srv_stop(s);
	event_base_free(base);
}

static void test_rows(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_row(&rows[i]);
}

/* limits.upstream_total_timeout_ms: a body that trickles, each gap under
 * the idle timeout, is cut when the whole exchange passes its deadline. */
static void test_total_timeout(void **state)
{
	static const struct row trickle_past_total = {
		"a trickle under the idle timeout but past the whole exchange's: timeout",
		sc_trickle, "GET", "/y", -1, 0, 0, 1, 0, 150, 0, 0, 0, 0, 0, UPSTREAM_TIMEOUT,
		200, NULL, 0, 1, 1
	};
	static const struct row trickle_within = {
		"a request bound longer than the trickle: no timeout", sc_trickle, "GET", "/y",
		-1, 0, 0, 1, 0, 150, 0, 0, 0, 0, 0, UPSTREAM_OK, 200, "xxxxxxxxxx", 0, 1, 1
	};

	(void)state;
	rows_total_ms = 250; /* the trickle takes 600 ms */
	run_row(&trickle_past_total);
	rows_total_ms = 0;
	/* the same bound set on the request alone (a fencing HEAD's
	 * FENCING_STORE_CALL_MS), with no engine bound or a longer one */
	rows_req_total_ms = 250;
	run_row(&trickle_past_total);
	rows_total_ms = 10000;
	run_row(&trickle_past_total);
	/* a request's own bound longer than the engine's does not lengthen
	 * it; one longer than the exchange changes nothing */
	rows_total_ms = 250;
	rows_req_total_ms = 10000;
	run_row(&trickle_past_total);
	rows_total_ms = 0;
	run_row(&trickle_within);
	rows_req_total_ms = 0;
}

/* The rows with a request body again, the body through move_body (framed
 * as chunks when its length is unknown). */
static void test_rows_moved(void **state)
{
	(void)state;
	rows_move = 1;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].body_length != -1)
			run_row(&rows[i]);
	rows_move = 0;
}

/* ---- cases that are not rows ------------------------------------------------ */

static void test_connect_refused(void **state)
{
	struct event_base *base = event_base_new();
	struct upstream *u;
	struct cli c = { 0 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char url[64], err[128];

	(void)state;
	/* a port nobody listens on: bound, then closed */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	u = upstream_new(base, NULL, err, sizeof(err));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/x", ntohs(sa.sin_port));
	c.base = base;
	cli_run(u, &c, "GET", url, -1, 0);
	assert_int_equal(c.done, 1);
	assert_int_equal(c.res, UPSTREAM_CONNECT_FAILED);
	assert_non_null(strstr(c.detail, "refused"));
	/* a URL that is not one: NULL, no callback */
	{
		struct upstream_request r = { .method = "GET", .url = "ftp://x/", .body_length = -1 };

		assert_null(upstream_start(u, &r, &cli_ops, &c, err, sizeof(err)));
	}
	upstream_free(u);
	event_base_free(base);
}

/* Cancelling from inside on_head or on_body: no on_done, nothing leaks, the
 * connection is not reused (the next request opens another). */
static void test_cancel_inside(void **state)
{
	struct event_base *base = event_base_new();
	struct srv *s = srv_start(sc_big);
	struct upstream *u = upstream_new(base, NULL, NULL, 0);
	char url[64];

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/b", s->port);
	for (int k = 0; k < 2; k++) {
		struct cli c = { 0 };

		c.base = base;
		c.cancel_in_head = k == 0;
		c.cancel_in_body = k == 1;
		cli_run(u, &c, "GET", url, -1, 0);
		assert_int_equal(c.done, 0);
		assert_int_equal(c.heads, 1);
		assert_int_equal(upstream_active(u), 0);
	}
	{
		struct cli c = { 0 };

		c.base = base;
		cli_run(u, &c, "GET", url, -1, 0);
		assert_int_equal(c.res, UPSTREAM_OK);
		assert_int_equal(c.body_len, BIG);
	}
	assert_int_equal(__atomic_load_n(&s->accepts, __ATOMIC_SEQ_CST), 3);
	upstream_free(u);
	srv_stop(s);
	event_base_free(base);
}

/* Cancelling from inside on_head once the request is out: the rest of a
 * short answer is read and dropped and the connection pooled (the next
 * request goes on it), with no callback; an answer that stalls past the
 * idle timeout, or runs past the bound, closes it instead. */
static void test_cancel_drains(void **state)
{
	static const struct {
		const char *name;
		script_fn script;
		int accepts;
	} cases[] = {
		{ "412, its document in the same segment", sc_412, 1 },
		{ "412, its document 50 ms later", sc_412_late, 1 },
		{ "412, chunked", sc_412_chunked, 1 },
		{ "412, the document stalls: idle timeout, closed", sc_412_stall, 2 },
		{ "412, 68 KiB chunked: past the bound, closed", sc_412_long, 2 },
	};

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct upstream_config cfg;
		struct event_base *base = event_base_new();
		struct srv *s = srv_start(cases[k].script);
		struct upstream *u;
		struct cli c = { 0 }, next = { 0 };
		struct timeval settle = { 0, 300 * 1000 };
		char url[64], err[128];

		print_message("  %s\n", cases[k].name);
		upstream_config_default(&cfg);
		cfg.idle_timeout_ms = 150;
		u = upstream_new(base, &cfg, err, sizeof(err));
		assert_non_null(u);
		snprintf(url, sizeof(url), "http://127.0.0.1:%u/d", s->port);
		c.base = base;
		c.cancel_in_head = 1;
		cli_run(u, &c, "PUT", url, 1000, 0);
		assert_int_equal(c.heads, 1);
		assert_int_equal(c.status, 412);
		/* the drain (or its failure) ends on the loop, with no callback */
		event_base_loopexit(base, &settle);
		event_base_dispatch(base);
		assert_int_equal(c.done, 0);
		assert_int_equal(upstream_active(u), 0);
		next.base = base;
		cli_run(u, &next, "PUT", url, 1000, 0);
		assert_int_equal(next.res, UPSTREAM_OK);
		assert_int_equal(next.status, 412);
		assert_int_equal(next.body_len, 20);
		assert_memory_equal(next.body, DOC20, 20);
		assert_int_equal(__atomic_load_n(&s->accepts, __ATOMIC_SEQ_CST), cases[k].accepts);
		assert_int_equal(__atomic_load_n(&s->requests, __ATOMIC_SEQ_CST), 2);
		upstream_free(u);
		event_base_loop(base, EVLOOP_NONBLOCK); /* the closes libevent deferred */
		srv_stop(s);
		event_base_free(base);
	}
}

/* Freeing the engine with a transfer in flight: no callback, no leak. */
static void test_free_in_flight(void **state)
{
	struct event_base *base = event_base_new();
	struct srv *s = srv_start(sc_silent);
	struct upstream *u = upstream_new(base, NULL, NULL, 0);
	struct upstream_request r = { .method = "GET", .body_length = -1 };
	struct cli c = { 0 };
	struct timeval tv = { 0, 50000 };
	char url[64], err[64];

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/f", s->port);
	r.url = url;
	c.base = base;
	c.x = upstream_start(u, &r, &cli_ops, &c, err, sizeof(err));
	assert_non_null(c.x);
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	assert_int_equal(upstream_active(u), 1);
	upstream_free(u);
	assert_int_equal(c.done, 0);
	srv_stop(s);
	event_base_free(base);
}

/* Two origins in turn (the second spelt two ways: an upper-case scheme, a
 * query without a path): each request goes to its own server over its own
 * kept connection; the remembered authority never answers for another. */
static void test_two_origins(void **state)
{
	struct event_base *base = event_base_new();
	struct srv *s1 = srv_start(sc_keepalive), *s2 = srv_start(sc_keepalive);
	struct upstream *u = upstream_new(base, NULL, NULL, 0);
	char url1[64], url2[64], url3[64];

	(void)state;
	snprintf(url1, sizeof(url1), "http://127.0.0.1:%u/a", s1->port);
	snprintf(url2, sizeof(url2), "HTTP://127.0.0.1:%u/b", s2->port);
	snprintf(url3, sizeof(url3), "http://127.0.0.1:%u?q=1", s2->port);
	for (int i = 0; i < 6; i++) {
		struct cli c = { 0 };

		c.base = base;
		cli_run(u, &c, "GET", i % 3 == 0 ? url1 : i % 3 == 1 ? url2 : url3, -1, 0);
		assert_int_equal(c.done, 1);
		assert_int_equal(c.res, UPSTREAM_OK);
		assert_int_equal(c.status, 200);
	}
	assert_int_equal(__atomic_load_n(&s1->requests, __ATOMIC_SEQ_CST), 2);
	assert_int_equal(__atomic_load_n(&s2->requests, __ATOMIC_SEQ_CST), 4);
	assert_int_equal(__atomic_load_n(&s1->accepts, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(__atomic_load_n(&s2->accepts, __ATOMIC_SEQ_CST), 1);
	upstream_free(u);
	srv_stop(s1);
	srv_stop(s2);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_total_timeout),
		cmocka_unit_test(test_rows_moved),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_cancel_inside),
		cmocka_unit_test(test_cancel_drains),
		cmocka_unit_test(test_free_in_flight),
		cmocka_unit_test(test_two_origins),
	};

	signal(SIGPIPE, SIG_IGN); /* as fencegate's main() does */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
