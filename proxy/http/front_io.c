/* front_io.c — the front end's socket shortcuts on plain TCP connections,
 * under the bufferevent and within its rules: reads on the connection's
 * own read event straight into the input buffer (libevent 2.1's asks
 * FIONREAD before every readv and reads at most 4 KiB), a request body
 * (and input that is only dropped: a discarded body, a lingering close)
 * in pieces of up to 64 KiB, and queued output written at once before the
 * loop waits again (EV_WRITE is armed only for what the socket did not
 * take).
 *
 * The input buffer's cap (limits.input_buffer) and back-pressure (no read
 * while the proxy paused the body) hold as before; timeouts stay front.c's.
 * TLS connections keep libevent's own path: the bytes on their socket are
 * not the request's. */
#include "front_int.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>

#define BULK_READ     ((size_t)64 * 1024 - 256) /* with libevent's chain
					* header, one 64 KiB allocation (64 KiB
					* would be rounded up to 128 KiB) */
#define HEAD_READ     ((size_t)4096) /* through a stack buffer (as much as
					* libevent's reads); more goes by BULK_READ */
#define BULK_ROUNDS   4      /* reads per read event at most (fairness) */

/* 1 while what arrives is consumed at once: a body the proxy asked for
 * (and has not paused), a body being skipped, input dropped before a
 * close. Not in a head: a head is small and libevent's reads do. */
static int wants_bulk(const struct front_conn *c)
{
	if (c->srv->tls || c->dead)
		return 0;
	if (c->state == CONN_REQUEST || c->state == CONN_DISCARD)
		return c->body_reading && !c->body_done && !c->body_stop;
	return c->state == CONN_CLOSING || c->state == CONN_LINGER;
}

/* One read into the input buffer: as much as the buffer's cap leaves room
 * for, at most max. Returns the bytes read; 0 when there was no room
 * or nothing to read; -1 at EOF or on an error, with *what set for the
 * event callback (BEV_EVENT_READING | EOF or ERROR). */
static ssize_t read_once(struct front_conn *c, size_t max, size_t *asked, short *what)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	size_t have = evbuffer_get_length(in), room = 0, left;
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	evutil_socket_t fd = bufferevent_getfd(c->bev);
	ssize_t n;
	int nv;

	*asked = 0;
	if (have < c->srv->lim.input_buffer)
		room = c->srv->lim.input_buffer - have;
	if (room > max)
		room = max;
	if (room == 0 || fd < 0)
		return 0;
	if (room <= HEAD_READ) {
		/* a head (or the start of a body): small, usually; read on the
		 * stack and copied into a chain of its size: cheaper than a
		 * chain from malloc for every read */
		char buf[HEAD_READ];

		do
			n = recv(fd, buf, room, 0);
		while (n < 0 && errno == EINTR);
		if (n > 0) {
			evbuffer_unfreeze(in, 0);
			if (evbuffer_add(in, buf, (size_t)n) < 0)
				n = -1;
			evbuffer_freeze(in, 0);
		}
		goto out;
	}
	/* the bufferevent keeps the input's end frozen between its reads */
	evbuffer_unfreeze(in, 0);
	nv = evbuffer_reserve_space(in, (ev_ssize_t)room, v, 2);
	if (nv <= 0) {
		evbuffer_freeze(in, 0);
		return 0;
	}
	left = room;
	for (int i = 0; i < nv; i++) {
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = v[i].iov_len < left ? v[i].iov_len : left;
		left -= iov[i].iov_len;
	}
	do
		n = readv(fd, iov, nv);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		size_t got = (size_t)n;

		for (int i = 0; i < nv; i++) {
			v[i].iov_len = got < iov[i].iov_len ? got : iov[i].iov_len;
			got -= v[i].iov_len;
		}
		evbuffer_commit_space(in, v, nv);
	}
	evbuffer_freeze(in, 0);
out:
	*asked = room;
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	*what = BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR);
	return -1;
}

int fconn_read_init(struct front_conn *c, evutil_socket_t fd, event_callback_fn cb)
{
	c->rd = event_new(c->srv->base, fd, EV_READ | EV_PERSIST, cb, c);
	return c->rd ? 0 : -1;
}

void fconn_read_sync(struct front_conn *c)
{
	int want;

	if (!c->rd)
		return;
	want = c->rd_want && !c->dead &&
	       evbuffer_get_length(bufferevent_get_input(c->bev)) < c->srv->lim.input_buffer;
	if (want == c->rd_added)
		return;
	if (want ? event_add(c->rd, NULL) : event_del(c->rd))
		return;
	c->rd_added = want;
}

void fconn_read_enable(struct front_conn *c, int on)
{
	if (!c->rd) {
		if (on)
			bufferevent_enable(c->bev, EV_READ);
		else
			bufferevent_disable(c->bev, EV_READ);
		return;
	}
	c->rd_want = on;
	fconn_read_sync(c);
}

ssize_t fconn_read_event(struct front_conn *c, int *more, short *what)
{
	size_t asked;
	ssize_t n;

	*what = 0;
	*more = 0;
	if (!c->rd_want || c->dead)
		return 0;
	n = read_once(c, wants_bulk(c) ? BULK_READ : HEAD_READ, &asked, what);
	if (n < 0)
		fconn_read_enable(c, 0);
	else if (n == 0)
		fconn_read_sync(c); /* no room: off until the input drains */
	else
		*more = (size_t)n == asked;
	return n;
}

int fconn_read_bulk(struct front_conn *c, void (*process)(struct front_conn *c), short *what)
{
	*what = 0;
	for (int round = 0; round < BULK_ROUNDS && wants_bulk(c); round++) {
		size_t asked;
		ssize_t n = read_once(c, BULK_READ, &asked, what);

		if (n < 0) {
			/* as libevent does at EOF or an error: no more reading */
			fconn_read_enable(c, 0);
			return -1;
		}
		if (n == 0)
			break;
		process(c);
		if ((size_t)n < asked)
			break; /* the socket is drained: wait for the next event */
	}
	return 0;
}

void fconn_flush(struct front_conn *c)
{
	struct evbuffer *out;

	if (c->srv->tls)
		return;
	out = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(out) == 0) {
		if (c->write_armed) {
			/* libevent already took its event off: no system call */
			bufferevent_disable(c->bev, EV_WRITE);
			c->write_armed = 0;
		}
		return;
	}
	if (c->write_armed)
		return; /* libevent writes the rest when the socket can take it */
	/* the bufferevent keeps the output's start frozen between its writes;
	 * a failed write leaves the bytes queued and libevent's write path
	 * (armed below) reports the error */
	evbuffer_unfreeze(out, 1);
	evbuffer_write(out, bufferevent_getfd(c->bev));
	evbuffer_freeze(out, 1);
	if (evbuffer_get_length(out) > 0) {
		bufferevent_enable(c->bev, EV_WRITE);
		c->write_armed = 1;
	}
}
