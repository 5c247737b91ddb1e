/* fuzz_upstream.c — libFuzzer target for the upstream client's response
 * side: the input (after one byte of options) is what the upstream answers,
 * delivered over a socketpair put in the client's connection pool, then the
 * peer closes. Options: HEAD, a small request body with Expect, pausing in
 * on_body, cancelling in on_body. Checks the promises: never a crash, on_done
 * exactly once (none after a cancel), on_head at most once, never more body
 * bytes than the framing allows (none for HEAD, 1xx, 204, 304; at most
 * Content-Length; exactly that on success). */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "http/upstream_int.h"

#define ORIGIN "http://127.0.0.1:9"

struct fuzz_state {
	struct event_base *base;
	struct upstream_xfer *x;
	unsigned opts;
	int heads, dones, status, body_calls, cancelled;
	int64_t content_length; /* -1: not framed by Content-Length */
	uint64_t body_bytes;
	size_t sent;
};

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fuzz_state *st = arg;

	if (st->x)
		upstream_resume_recv(st->x);
}

static size_t read_body(void *arg, char *buf, size_t len)
{
	struct fuzz_state *st = arg;
	size_t n = 100 - st->sent;

	if (n > len)
		n = len;
	memset(buf, 'b', n);
	st->sent += n;
	return n;
}

static int on_head(void *arg, int status, struct front_hdrs *hdrs)
{
	struct fuzz_state *st = arg;
	const char *cl = front_hdrs_get(hdrs, "Content-Length");

	if (status < 200 || status > 999 || st->heads++)
		abort();
	st->status = status;
	st->content_length = -1;
	if (cl && front_hdrs_count(hdrs, "Content-Length") == 1 &&
	    !front_hdrs_get(hdrs, "Transfer-Encoding") && *cl &&
	    strspn(cl, "0123456789") == strlen(cl) && strlen(cl) < 18)
		st->content_length = strtoll(cl, NULL, 10);
	return 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	struct fuzz_state *st = arg;
	struct timeval tv = { 0, 0 };

	if (!st->heads || len == 0 || !data)
		abort();
	st->body_calls++;
	if ((st->opts & 4) && st->body_calls % 2 == 1) {
		event_base_once(st->base, -1, EV_TIMEOUT, resume_cb, st, &tv);
		return 1;
	}
	if ((st->opts & 8) && st->body_calls == 3) {
		upstream_cancel(st->x);
		st->x = NULL;
		st->cancelled = 1;
		event_base_loopbreak(st->base);
		return 0;
	}
	st->body_bytes += len;
	return 0;
}

static void on_done(void *arg, enum upstream_result res, const char *detail)
{
	struct fuzz_state *st = arg;

	if (st->dones++ || st->cancelled || !detail)
		abort();
	st->x = NULL;
	if (res == UPSTREAM_OK && st->content_length >= 0 &&
	    st->body_bytes != (uint64_t)st->content_length && !(st->opts & 1) &&
	    st->status != 204 && st->status != 304)
		abort();
	event_base_loopbreak(st->base);
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(arg);
}

static const struct upstream_ops ops = { read_body, on_head, on_body, on_done, NULL };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct event_base *base;
	struct fuzz_state st = { 0 };
	struct upstream_config cfg;
	struct upstream_request req = { 0 };
	struct upstream *u;
	struct timeval limit = { 3, 0 };
	struct event *stop;
	int sv[2];
	char err[128];

	if (size < 1 || size > 65536)
		return 0;
	if (!base) {
		signal(SIGPIPE, SIG_IGN); /* as fencegate's main() does */
		base = event_base_new();
	}
	st.base = base;
	st.opts = data[0];
	data++;
	size--;
	upstream_config_default(&cfg);
	cfg.first_byte_timeout_ms = cfg.idle_timeout_ms = 2000;
	cfg.expect_timeout_ms = 10;
	u = upstream_new(base, &cfg, err, sizeof(err));
	if (!u || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	{
		int buf = 256 * 1024;

		setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
		setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	}
	evutil_make_socket_nonblocking(sv[0]);
	if (up_pool_adopt(u, ORIGIN, sv[0]) < 0)
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	req.method = (st.opts & 1) ? "HEAD" : (st.opts & 2) ? "PUT" : "GET";
	req.url = ORIGIN "/fuzz";
	req.head = st.opts & 1;
	req.body_length = (st.opts & 2) ? ((st.opts & 16) ? -2 : 100) : -1;
	req.expect_continue = (st.opts & 32) != 0;
	st.x = upstream_start(u, &req, &ops, &st, err, sizeof(err));
	if (!st.x)
		abort();
	/* a bound of our own: a loopexit left pending would end a later run */
	stop = evtimer_new(base, stop_cb, base);
	if (!stop)
		abort();
	evtimer_add(stop, &limit);
	event_base_dispatch(base);
	event_free(stop);
	if (st.dones + st.cancelled != 1)
		abort();
	if (st.heads > 1 || st.body_bytes > size)
		abort();
	if (st.content_length >= 0 && st.body_bytes > (uint64_t)st.content_length)
		abort();
	if ((st.opts & 1 || st.status == 204 || st.status == 304) && st.body_bytes)
		abort();
	upstream_free(u);
	close(sv[1]);
	/* nothing of this transfer may be left on the loop */
	event_base_loop(base, EVLOOP_NONBLOCK);
	return 0;
}
