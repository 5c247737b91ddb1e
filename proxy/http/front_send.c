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

/* Writes a response head into out with one evbuffer_add (each add runs the
 * buffer's callbacks): built in a stack buffer, or a heap one when long.
 * Returns 0, or -1 when out of memory. */
static int send_head_lines(struct evbuffer *out, int status, const char *why,
			   const struct front_hdrs *hdrs, int64_t content_length,
			   int chunked, int close_it, int http10)
{
	char stack[4096];
	char *buf = stack, *w;
	size_t need = 128 + strlen(why);
	int rc = 0;

	for (size_t i = 0; hdrs && i < hdrs->n; i++)
		need += strlen(hdrs->v[i].name) + strlen(hdrs->v[i].value) + 4;
	if (need > sizeof(stack) && !(buf = malloc(need)))
		return -1;
	w = buf + sprintf(buf, "HTTP/1.1 %d ", status);
	w = mempcpy(w, why, strlen(why));
	w = mempcpy(w, "\r\n", 2);
	for (size_t i = 0; hdrs && i < hdrs->n; i++) {
		w = mempcpy(w, hdrs->v[i].name, strlen(hdrs->v[i].name));
		w = mempcpy(w, ": ", 2);
		w = mempcpy(w, hdrs->v[i].value, strlen(hdrs->v[i].value));
		w = mempcpy(w, "\r\n", 2);
	}
	if (content_length >= 0)
		w += sprintf(w, "Content-Length: %" PRId64 "\r\n", content_length);
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
	if (c->resp_chunked)
		evbuffer_add_printf(out, "%zx\r\n", len);
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
	if (c->resp_chunked)
		evbuffer_add_printf(out, "%" PRIx64 "\r\n", (uint64_t)len);
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
	struct front_hdrs h = {0};
	const struct front_hdrs *use = hdrs;

	if (content_type) {
		for (size_t i = 0; hdrs && i < hdrs->n; i++)
			if (front_hdrs_add(&h, hdrs->v[i].name, hdrs->v[i].value) < 0)
				force_close = 1;
		if (front_hdrs_set(&h, "Content-Type", content_type) < 0)
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

