/* front_send.c — the front end's API for the proxy: the peer, asking for
 * the body, and the response written as a head, body pieces (or a file)
 * and an end, chunked or with a length; flags and buffered writes only,
 * the connection's work happens in front.c's settle. */
#include "front_int.h"

#include <unistd.h>

#include <event2/buffer.h>


/* ---- the API the proxy calls: flags and buffered writes only; the work
 * happens in conn_kick_cb on the next loop turn ---- */

const char *front_conn_peer(const struct front_conn *c)
{
	return c->peer;
}

void front_conn_read_body(struct front_conn *c)
{
	if (c->state != CONN_REQUEST)
		return;
	if (c->expect_continue && !c->continue_sent && !c->resp_started) {
		bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		c->continue_sent = 1;
	}
	if (!c->body_reading) {
		c->t_read = front_now_ms();
		fconn_body_clock_start(c);
	} else if (c->body_stop && c->t_pause) {
		c->t_body += front_now_ms() - c->t_pause; /* back-pressure is not the client's */
		c->t_read = front_now_ms();
		c->t_pause = 0;
	}
	c->body_reading = 1;
	c->body_stop = 0;
	fconn_kick(c);
}

int front_conn_body_done(const struct front_conn *c)
{
	return c->body_done;
}

/* Writes v in decimal at w; returns the end. */
static char *put_u64(char *w, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*w++ = tmp[--n];
	return w;
}

/* Writes a response head into out with one evbuffer_add (each add runs the
 * buffer's callbacks): built in a stack buffer, or a heap one when long.
 * Returns 0, or -1 when out of memory. */
static int send_head_lines(struct evbuffer *out, int status, const char *why,
			   const struct front_hdrs *hdrs, int64_t content_length,
			   int chunked, int close_it, int http10)
{
	char stack[4096];
	char *buf = stack, *w;
	size_t wlen = strlen(why);
	size_t need = 128 + wlen;
	int rc = 0;

	for (size_t i = 0; hdrs && i < hdrs->n; i++)
		need += (size_t)hdrs->v[i].nlen + hdrs->v[i].vlen + 4;
	if (need > sizeof(stack) && !(buf = malloc(need)))
		return -1;
	w = mempcpy(buf, "HTTP/1.1 ", 9);
	w = put_u64(w, status < 0 ? 0 : (uint64_t)status);
	*w++ = ' ';
	w = mempcpy(w, why, wlen);
	w = mempcpy(w, "\r\n", 2);
	for (size_t i = 0; hdrs && i < hdrs->n; i++) {
		const struct front_hdr *e = &hdrs->v[i];

		w = mempcpy(w, e->name, e->nlen);
		*w++ = ':';
		*w++ = ' ';
		w = mempcpy(w, e->value, e->vlen);
		*w++ = '\r';
		*w++ = '\n';
	}
	if (content_length >= 0) {
		w = mempcpy(w, "Content-Length: ", 16);
		w = put_u64(w, (uint64_t)content_length);
		w = mempcpy(w, "\r\n", 2);
	}
	/* 128 bytes above cover the status line number, Content-Length,
	 * one of these lines and the blank line (at most 86) */
	if (chunked)
		w = mempcpy(w, "Transfer-Encoding: chunked\r\n", 28);
	if (close_it)
		w = mempcpy(w, "Connection: close\r\n", 19);
	else if (http10)
		w = mempcpy(w, "Connection: keep-alive\r\n", 24);
	w = mempcpy(w, "\r\n", 2);
	if (evbuffer_add(out, buf, (size_t)(w - buf)) < 0)
		rc = -1;
	if (buf != stack)
		free(buf);
	return rc;
}

/* The chunk-size line for len bytes ("1a2b\r\n") at w; returns the end. */
static char *put_chunk_size(char *w, uint64_t len)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[16];
	size_t n = 0;

	do {
		tmp[n++] = hex[len & 15];
		len >>= 4;
	} while (len);
	while (n)
		*w++ = tmp[--n];
	*w++ = '\r';
	*w++ = '\n';
	return w;
}

/* A body nobody asked for is skipped (the connection kept, as nginx's
 * discard-body does) when at most this much of it is still to come beyond
 * what is buffered: any known length up to 64 KiB. */
#define UNASKED_SKIP_MAX ((size_t)64 * 1024)

/* 1 when the unread rest of the request body is not worth skipping to
 * keep the connection: the rest must be read before a next request. A
 * body nobody asked for (a rejection answered from the head) is skipped
 * (read and dropped after the answer) only if little of it is still to
 * come; otherwise the answer closes, with a lingering close, and costs no
 * body reads. Either way none of it reaches the proxy. Once the body was
 * being read, a known rest up to limits.discard_max is skipped. */
static int body_unread_closes(const struct front_conn *c)
{
	uint64_t rest;
	size_t have;

	if (c->chunked || c->content_length < 0)
		return 1;
	rest = (uint64_t)c->content_length - c->body_received;
	if (!c->body_reading) {
		have = evbuffer_get_length(bufferevent_get_input(c->bev));
		return rest > have + UNASKED_SKIP_MAX;
	}
	return rest > c->srv->lim.discard_max;
}

int front_conn_send_head(struct front_conn *c, int status, const char *reason,
			 const struct front_hdrs *hdrs, int64_t content_length,
			 int no_body, int force_close)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	int close_it = force_close || !c->keep_alive || c->srv->draining;

	if (c->resp_started || c->state != CONN_REQUEST)
		return -1;
	fconn_touch_write(c);
	/* "Expect: 100-continue" answered without "100 Continue": the client
	 * may or may not send its body now, and some (botocore) misread the
	 * next response on this connection; start afresh */
	if (c->expect_continue && !c->continue_sent)
		close_it = 1;
	if (!c->body_done && c->has_body && body_unread_closes(c))
		close_it = 1;
	c->resp_started = 1;
	c->resp_no_body = no_body;
	c->resp_length = content_length;
	c->resp_sent = 0;
	c->resp_chunked = 0;
	if (!no_body && content_length < 0) {
		if (c->http10)
			close_it = 1;
		else
			c->resp_chunked = 1;
	}
	c->resp_close = close_it;
	return send_head_lines(out, status, reason ? reason : front_status_reason(status), hdrs,
			       content_length, c->resp_chunked, close_it, c->http10);
}

int front_conn_send_body(struct front_conn *c, const void *data, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	if (!c->resp_started || c->resp_ended || c->dead)
		return -1;
	fconn_touch_write(c);
	if (c->resp_no_body || len == 0)
		return 0;
	if (c->resp_length >= 0 && c->resp_sent + (int64_t)len > c->resp_length)
		return -1;
	if (c->resp_chunked) {
		char line[20];

		evbuffer_add(out, line, (size_t)(put_chunk_size(line, len) - line));
	}
	evbuffer_add(out, data, len);
	if (c->resp_chunked)
		evbuffer_add(out, "\r\n", 2);
	c->resp_sent += (int64_t)len;
	/* EV_WRITE is off on plain TCP until a write leaves bytes behind: the
	 * kick writes these on this loop turn, not when the window fills */
	fconn_kick(c);
	return 0;
}

int front_conn_send_file(struct front_conn *c, int fd, int64_t offset, int64_t len)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct evbuffer_file_segment *seg;

	if (!c->resp_started || c->resp_ended || c->dead || c->resp_no_body ||
	    (c->resp_length >= 0 && c->resp_sent + len > c->resp_length) || len < 0) {
		close(fd);
		return -1;
	}
	if (len == 0) {
		close(fd);
		return 0;
	}
	seg = evbuffer_file_segment_new(fd, offset, len, EVBUF_FS_CLOSE_ON_FREE);
	if (!seg) {
		close(fd);
		return -1;
	}
	if (c->resp_chunked) {
		char line[20];

		evbuffer_add(out, line, (size_t)(put_chunk_size(line, (uint64_t)len) - line));
	}
	if (evbuffer_add_file_segment(out, seg, 0, len) < 0) {
		evbuffer_file_segment_free(seg);
		return -1;
	}
	evbuffer_file_segment_free(seg); /* the buffer holds its own reference */
	if (c->resp_chunked)
		evbuffer_add(out, "\r\n", 2);
	c->resp_sent += len;
	fconn_kick(c);
	return 0;
}

void front_conn_send_end(struct front_conn *c)
{
	if (!c->resp_started || c->resp_ended)
		return;
	c->resp_ended = 1;
	if (c->resp_chunked)
		bufferevent_write(c->bev, "0\r\n\r\n", 5);
	else if (!c->resp_no_body && c->resp_length >= 0 && c->resp_sent < c->resp_length)
		c->resp_close = 1; /* truncated: the client must see the close */
	else if (!c->resp_no_body && c->resp_length < 0)
		c->resp_close = 1; /* close-delimited */
	fconn_kick(c);
}

void front_conn_reply(struct front_conn *c, int status, const struct front_hdrs *hdrs,
		      const char *content_type, const void *body, size_t len,
		      int force_close)
{
	struct front_hdr hv[16];
	struct front_hdrs h;
	const struct front_hdrs *use = hdrs;

	front_hdrs_init(&h, hv, sizeof(hv) / sizeof(hv[0]));
	if (content_type) {
		/* the caller's strings, borrowed for this call */
		for (size_t i = 0; hdrs && i < hdrs->n; i++) {
			const struct front_hdr *e = &hdrs->v[i];

			if (!FRONT_HDR_IS(e, "Content-Type") &&
			    front_hdrs_add_ref(&h, e->name, e->nlen, e->value, e->vlen) < 0)
				force_close = 1;
		}
		if (front_hdrs_add_ref(&h, "Content-Type", 12, content_type,
				       strlen(content_type)) < 0)
			force_close = 1;
		use = &h;
	}
	if (front_conn_send_head(c, status, NULL, use, (int64_t)len, 0, force_close) == 0) {
		front_conn_send_body(c, body, len);
		front_conn_send_end(c);
	}
	front_hdrs_clear(&h);
}

void front_conn_abort(struct front_conn *c)
{
	c->req = NULL;
	c->req_released = 1;
	c->dead = 1;
	c->dead_why = FRONT_ABORT_CLIENT_GONE;
	fconn_kick(c);
}

size_t front_conn_output_len(const struct front_conn *c)
{
	return fconn_outlen(c);
}

void front_conn_want_drain(struct front_conn *c)
{
	c->want_drain = 1;
	fconn_kick(c);
}

int front_conn_response_started(const struct front_conn *c)
{
	return c->resp_started;
}

void front_conn_request_done(struct front_conn *c)
{
	c->req = NULL;
	c->req_released = 1;
	c->want_drain = 0;
	if (c->state != CONN_REQUEST)
		return;
	if (!c->resp_started || !c->resp_ended) {
		/* the response is incomplete: nothing else can follow it */
		c->dead = 1;
		c->dead_why = FRONT_ABORT_CLIENT_GONE;
	} else if (c->resp_close || c->srv->draining) {
		fconn_close_after_flush(c);
	} else if (c->body_done) {
		fconn_next_request(c);
	} else {
		c->state = CONN_DISCARD;
		c->body_reading = 1;
		c->body_stop = 0;
		c->t_read = front_now_ms();
		fconn_body_clock_start(c);
	}
	fconn_kick(c);
}

