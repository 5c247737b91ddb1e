/* front.c — the HTTP/1.1 front end's connections: accepting (bounded by
 * max_connections), one request at a time per connection (pipelined ones
 * wait in the input buffer), keep-alive, 100-continue, every timeout and
 * the body's minimum rate, bounded buffers, lingering close. The server
 * (listeners, draining, freeing) is front_server.c, parsing front_parse.c,
 * the writes the proxy asks for front_send.c, plain TCP reads and writes
 * front_io.c; it never looks at what a request means: that is proxy.c's
 * job through struct front_ops. */
#include "front_int.h"


#include <arpa/inet.h>
#include <netinet/tcp.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include <http_parser.h>

#include <openssl/err.h>

#include "listen.h"
#include "ops/log.h"

/* At max_connections the listeners stop accepting (new clients wait in the
 * kernel's backlog); below it they accept again. */
static void update_accepting(struct front_server *s)
{
	int full = s->lim.max_connections && s->nconns >= s->lim.max_connections;

	if (full == s->accept_paused || s->draining)
		return;
	s->accept_paused = full;
	listen_set_full(s->listen, full);
	if (full)
		log_warn("%zu connections open (limits.max_connections): not accepting "
			 "until one closes", s->nconns);
}

int64_t front_now_ms(void)
{
	struct timespec ts;

	/* every timeout is seconds long: the clock the kernel keeps per tick
	 * is plenty, and cheaper to read */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *front_status_reason(int status)
{
	switch (status) {
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 421: return "Misdirected Request";
	case 422: return "Unprocessable Content";
	case 428: return "Precondition Required";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	default: break;
	}
	{
		const char *s = http_status_str((enum http_status)status);

		return s && strcmp(s, "<unknown>") != 0 ? s : "Unknown";
	}
}

static const char *status_code_name(int status)
{
	switch (status) {
	case 400: return "BadRequest";
	case 405: return "MethodNotAllowed";
	case 408: return "RequestTimeout";
	case 413: return "EntityTooLarge";
	case 414: return "RequestURITooLong";
	case 417: return "ExpectationFailed";
	case 431: return "RequestHeaderFieldsTooLarge";
	case 500: return "InternalError";
	case 501: return "NotImplemented";
	case 503: return "ServiceUnavailable";
	case 505: return "HTTPVersionNotSupported";
	default: return "Error";
	}
}

void fconn_kick(struct front_conn *c)
{
	if (c->busy) {
		c->rekick = 1;
	} else if (!c->kicked) {
		c->kicked = 1;
		event_active(c->kick, EV_TIMEOUT, 1);
	}
}

size_t fconn_outlen(const struct front_conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev));
}

/* Frees what c owns (each part may be missing) and c itself. */
static void conn_free_parts(struct front_conn *c)
{
	if (c->rd)
		event_free(c->rd); /* before the bufferevent closes the socket */
	if (c->bev)
		bufferevent_free(c->bev);
	if (c->timer)
		event_free(c->timer);
	if (c->kick)
		event_free(c->kick);
	front_parser_free(c->parser);
	free(c);
}

void fconn_free(struct front_conn *c, enum front_abort why)
{
	struct front_server *s = c->srv;
	void *req = c->req;

	c->req = NULL;
	if (req && s->ops.on_abort)
		s->ops.on_abort(req, why);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	__atomic_sub_fetch(&s->nconns, 1, __ATOMIC_RELAXED); /* front_server_conns */
	update_accepting(s);
	log_debug("connection from \"%s\" closed", c->peer);
	conn_free_parts(c);
	if (s->draining && s->nconns == 0 && s->drain_done) {
		void (*done)(void *) = s->drain_done;

		s->drain_done = NULL;
		done(s->drain_arg);
	}
}

/* Marks c for closing once its output is flushed (lingering close). */
void fconn_close_after_flush(struct front_conn *c)
{
	if (c->state < CONN_CLOSING)
		c->state = CONN_CLOSING;
	/* keep reading (and dropping) so unread input cannot turn the close
	 * into a reset that destroys the response in flight */
	fconn_read_enable(c, 1);
	fconn_kick(c);
}

/* The send timeout runs from the moment output starts to wait. */
void fconn_touch_write(struct front_conn *c)
{
	if (fconn_outlen(c) == 0)
		c->t_write = front_now_ms();
}

/* A response the front end makes itself; the connection closes after it.
 * If a response is already under way, the connection just closes. */
static void conn_error_reply(struct front_conn *c, int status, const char *reason)
{
	struct front_server *s = c->srv;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	char body[1024];
	const char *ctype = "text/plain; charset=utf-8";

	if ((c->state == CONN_REQUEST && c->resp_started) || c->state == CONN_DISCARD ||
	    c->state >= CONN_CLOSING) {
		c->dead = 1;
		return;
	}
	if (s->ops.error_body)
		ctype = s->ops.error_body(s->ops.arg, status, status_code_name(status),
					  reason, body, sizeof(body));
	else
		snprintf(body, sizeof(body), "%d %s: %s\n", status, front_status_reason(status), reason);
	fconn_touch_write(c);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
			    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			    status, front_status_reason(status), ctype, strlen(body), body);
	c->resp_started = 1;
	c->resp_ended = 1;
	fconn_close_after_flush(c);
}

/* ---- parser callbacks (the connection is the parser's arg) ---- */

static int conn_on_head(void *arg, struct front_msg *msg)
{
	struct front_conn *c = arg;
	struct front_server *s = c->srv;
	void *req;

	c->state = CONN_REQUEST;
	c->req = NULL;
	c->req_released = 0;
	c->http10 = msg->http_minor == 0;
	c->keep_alive = msg->keep_alive;
	c->expect_continue = msg->expect_continue;
	c->continue_sent = 0;
	c->body_reading = 0;
	c->body_stop = 0;
	c->body_done = 0;
	c->content_length = msg->content_length;
	c->chunked = msg->chunked;
	c->has_body = msg->has_body;
	c->body_received = 0;
	c->resp_started = 0;
	c->resp_ended = 0;
	c->resp_close = 0;
	c->resp_sent = 0;
	c->want_drain = 0;
	log_debug("request \"%s %s\" from \"%s\"", msg->method, msg->target, c->peer);
	req = s->ops.on_head(s->ops.arg, c, msg);
	if (c->req_released)
		return 0;
	if (!req) {
		conn_error_reply(c, 500, "out of memory");
		return 0;
	}
	c->req = req;
	return 0;
}

static int conn_on_body(void *arg, const char *data, size_t len)
{
	struct front_conn *c = arg;
	int rc;

	c->body_received += len;
	c->t_read = front_now_ms();
	if (c->state != CONN_REQUEST || !c->req)
		return 0; /* discarding */
	rc = c->srv->ops.on_body(c->req, data, len);
	if (rc > 0 && c->state == CONN_REQUEST && c->req) {
		c->body_stop = 1;
		c->t_pause = front_now_ms();
		return 1;
	}
	return 0;
}

static int conn_on_end(void *arg)
{
	struct front_conn *c = arg;

	c->body_done = 1;
	if (c->state == CONN_REQUEST && c->req && c->srv->ops.on_body_end)
		c->srv->ops.on_body_end(c->req);
	return 0;
}

/* The request is finished in both directions: get ready for the next. */
void fconn_next_request(struct front_conn *c)
{
	c->state = CONN_IDLE;
	c->req = NULL;
	c->t_idle = front_now_ms();
	c->t_head = 0;
	c->resp_started = 0;
	c->resp_ended = 0;
	c->body_reading = 0;
	c->body_stop = 0;
	if (c->srv->draining)
		fconn_close_after_flush(c);
}

static void conn_parse_error(struct front_conn *c)
{
	const char *reason;
	int status = front_parser_error(c->parser, &reason);

	log_info("bad request from \"%s\": \"%s\" (%d)", c->peer, reason, status);
	if (c->state == CONN_REQUEST && c->req) {
		void *req = c->req;

		c->req = NULL;
		if (c->srv->ops.on_abort)
			c->srv->ops.on_abort(req, FRONT_ABORT_BAD_BODY);
	}
	conn_error_reply(c, status, reason);
}

/* 1 when the input's next bytes are a Content-Length body that c's
 * request takes by moving them (front_ops.on_body_buf) rather than
 * through the parser's copy; the parser's count and c's must agree. */
static int conn_takes_body(const struct front_conn *c)
{
	uint64_t left;

	if (c->state != CONN_REQUEST || !c->req || !c->srv->ops.on_body_buf || c->chunked ||
	    c->content_length <= 0 || (uint64_t)c->content_length < c->body_received)
		return 0;
	left = front_parser_body_left(c->parser);
	return left > 0 && left == (uint64_t)c->content_length - c->body_received;
}

/* conn_process's step for a body taken by moving: the parser counts the
 * bytes of vec (the input's first chain) that are body, the request then
 * moves them out of in, and only then is the body's end reported. */
static enum front_parse_status conn_take_body(struct front_conn *c, struct evbuffer *in,
					      const struct evbuffer_iovec *vec, size_t *used)
{
	uint64_t left = front_parser_body_left(c->parser);
	size_t n = (uint64_t)vec->iov_len < left ? vec->iov_len : (size_t)left;
	enum front_parse_status st;
	struct front_taken body;

	st = front_parser_feed_taken(c->parser, vec->iov_base, n, used, &body);
	if (st == FRONT_PARSE_ERROR || *used == 0)
		return st;
	if (body.off)
		evbuffer_drain(in, body.off); /* the head's last byte */
	if (body.len) {
		c->body_received += body.len;
		c->t_read = front_now_ms();
		if (c->srv->ops.on_body_buf(c->req, in, body.len) > 0 &&
		    c->state == CONN_REQUEST && c->req && !body.ended) {
			c->body_stop = 1;
			c->t_pause = front_now_ms();
			front_parser_pause(c->parser);
			st = FRONT_PARSE_PAUSED;
		}
	}
	if (*used > body.off + body.len)
		evbuffer_drain(in, *used - body.off - body.len);
	if (body.ended)
		conn_on_end(c);
	return st;
}

/* Feeds buffered input to the parser as far as the state allows. */
static void conn_process(struct front_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);

	while (!c->dead) {
		struct evbuffer_iovec vec;
		enum front_parse_status st;
		size_t used = 0;

		if (c->state >= CONN_CLOSING) {
			size_t n = evbuffer_get_length(in);

			c->lingered += n;
			evbuffer_drain(in, n);
			break;
		}
		if (c->state == CONN_DISCARD && c->body_done)
			fconn_next_request(c);
		if (c->state >= CONN_CLOSING)
			continue;
		if (c->state == CONN_REQUEST && (!c->body_reading || c->body_done))
			break;
		if (front_parser_paused(c->parser)) {
			if (c->state == CONN_REQUEST && c->body_stop)
				break;
			front_parser_resume(c->parser);
		}
		if (evbuffer_get_length(in) == 0)
			break;
		if (evbuffer_peek(in, -1, NULL, &vec, 1) < 1)
			break;
		if (c->state == CONN_IDLE && front_parser_idle(c->parser) && !c->t_head)
			c->t_head = front_now_ms();
		if (conn_takes_body(c)) {
			st = conn_take_body(c, in, &vec, &used); /* moved out of in */
		} else {
			st = front_parser_feed(c->parser, vec.iov_base, vec.iov_len, &used);
			if (used)
				evbuffer_drain(in, used);
		}
		if (st == FRONT_PARSE_ERROR) {
			conn_parse_error(c);
			break;
		}
		if (c->state == CONN_IDLE && front_parser_idle(c->parser))
			c->t_head = 0; /* only blank lines so far */
		if (st == FRONT_PARSE_OK && used == 0)
			break;
	}
}

/* The milliseconds `bytes` earn at `rate` bytes/s (capped at a year). */
static int64_t rate_allowance_ms(uint64_t bytes, size_t rate)
{
	uint64_t ms = bytes / rate * 1000 + bytes % rate * 1000 / rate;

	return ms > 365ULL * 24 * 3600 * 1000 ? 365LL * 24 * 3600 * 1000 : (int64_t)ms;
}

/* Starts the body's rate clock now. */
void fconn_body_clock_start(struct front_conn *c)
{
	c->t_body = front_now_ms();
	c->t_pause = 0;
	c->body_base = c->body_received;
}

/* The earliest deadline that applies in c's state; 0 for none. */
static int64_t conn_deadline(const struct front_conn *c, int *what)
{
	const struct front_limits *l = &c->srv->lim;
	int64_t d = 0;

#define CONSIDER(t, w) do { int64_t t_ = (t); \
	if (!d || t_ < d) { d = t_; *what = (w); } } while (0)
	if (c->state == CONN_LINGER) {
		CONSIDER(c->t_linger + LINGER_MS, 'L');
		return d;
	}
	if (fconn_outlen(c) > 0)
		CONSIDER(c->t_write + l->send_timeout_ms, 'S');
	if (c->state == CONN_IDLE) {
		if (c->t_head)
			CONSIDER(c->t_head + l->header_timeout_ms, 'H');
		else if (fconn_outlen(c) == 0)
			CONSIDER(c->t_idle + l->idle_timeout_ms, 'I');
	}
	if ((c->state == CONN_REQUEST || c->state == CONN_DISCARD) &&
	    c->body_reading && !c->body_done && !c->body_stop) {
		CONSIDER(c->t_read + l->body_timeout_ms, 'B');
		if (l->body_min_rate)
			CONSIDER(c->t_body + l->body_timeout_ms +
				 rate_allowance_ms(c->body_received - c->body_base, l->body_min_rate),
				 'R');
	}
#undef CONSIDER
	return d;
}

/* After every event: act on state changes, arm the timer, maybe free c.
 * Returns -1 if c was freed. */
static int conn_settle(struct front_conn *c)
{
	struct front_server *s = c->srv;
	int64_t deadline;
	int what = 0;

	if (c->dead) {
		fconn_free(c, c->dead_why);
		return -1;
	}
	fconn_flush(c);
	if (c->state == CONN_CLOSING && fconn_outlen(c) == 0) {
		int fd = bufferevent_getfd(c->bev);

		if (c->eof || fd < 0 || shutdown(fd, SHUT_WR) < 0) {
			fconn_free(c, FRONT_ABORT_CLIENT_GONE);
			return -1;
		}
		c->state = CONN_LINGER;
		c->t_linger = front_now_ms();
		fconn_read_enable(c, 1);
	}
	if (c->state == CONN_LINGER && (c->eof || c->lingered > LINGER_MAX)) {
		fconn_free(c, FRONT_ABORT_CLIENT_GONE);
		return -1;
	}
	if (c->state == CONN_IDLE && c->eof && !front_parser_in_head(c->parser) &&
	    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0) {
		if (fconn_outlen(c) == 0) {
			fconn_free(c, FRONT_ABORT_CLIENT_GONE);
			return -1;
		}
		fconn_close_after_flush(c);
	}
	if (c->want_drain && c->req && c->state == CONN_REQUEST &&
	    fconn_outlen(c) <= s->lim.output_buffer / 2) {
		c->want_drain = 0;
		s->ops.on_drain(c->req);
		if (c->dead) {
			fconn_free(c, c->dead_why);
			return -1;
		}
	}
	/* the timer is only ever moved earlier: no timer work per request
	 * while the deadline moves on (see t_armed) */
	deadline = conn_deadline(c, &what);
	if (deadline && (!c->t_armed || deadline < c->t_armed)) {
		int64_t wait = deadline - front_now_ms();
		struct timeval tv;

		if (wait < 0)
			wait = 0;
		tv.tv_sec = wait / 1000;
		tv.tv_usec = (wait % 1000) * 1000;
		if (evtimer_add(c->timer, &tv) == 0)
			c->t_armed = deadline;
	}
	fconn_read_sync(c);
	return 0;
}

static void conn_timeout_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front_conn *c = arg;
	int what = 0;
	int64_t deadline = conn_deadline(c, &what);

	c->t_armed = 0;
	if (!deadline || deadline > front_now_ms()) {
		conn_settle(c);
		return;
	}
	switch (what) {
	case 'H':
		log_info("request head from \"%s\" not complete in time", c->peer);
		conn_error_reply(c, 408, "request head not received in time");
		break;
	case 'B':
	case 'R':
		if (what == 'B')
			log_info("request body from \"%s\" stalled", c->peer);
		else
			log_info("request body from \"%s\" too slow: %" PRIu64 " bytes in %"
				 PRId64 " ms (limits.body_min_rate %zu bytes/s)", c->peer,
				 c->body_received - c->body_base, front_now_ms() - c->t_body,
				 c->srv->lim.body_min_rate);
		if (c->req) {
			void *req = c->req;

			c->req = NULL;
			if (c->srv->ops.on_abort)
				c->srv->ops.on_abort(req, FRONT_ABORT_TIMEOUT);
		}
		conn_error_reply(c, 408, "request body not received in time");
		break;
	case 'S':
		log_info("client \"%s\" stopped reading the response", c->peer);
		c->dead = 1;
		c->dead_why = FRONT_ABORT_TIMEOUT;
		break;
	default: /* idle keep-alive, linger */
		c->dead = 1;
		c->dead_why = FRONT_ABORT_TIMEOUT;
		break;
	}
	conn_settle(c);
}

/* The end of a callback that ran conn_process with c->busy set: settles,
 * and while kicks were asked for meanwhile, processes and settles again
 * (a few times; then through the loop, as a kick). */
static void conn_settle_busy(struct front_conn *c)
{
	for (int round = 0;; round++) {
		if (conn_settle(c) < 0)
			return;
		if (!c->rekick)
			break;
		c->rekick = 0;
		if (round == 3) {
			c->busy = 0;
			fconn_kick(c);
			return;
		}
		conn_process(c);
	}
	c->busy = 0;
}

/* Leaves busy without settling (the event callback settles or frees c):
 * a kick asked for meanwhile goes through the loop. */
static void conn_unbusy(struct front_conn *c)
{
	c->busy = 0;
	if (c->rekick) {
		c->rekick = 0;
		fconn_kick(c);
	}
}

static void conn_kick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front_conn *c = arg;

	c->kicked = 0;
	c->busy = 1;
	conn_process(c);
	conn_settle_busy(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg);

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct front_conn *c = arg;
	short what = 0;

	c->busy = 1;
	conn_process(c);
	if (fconn_read_bulk(c, conn_process, &what) < 0) {
		conn_unbusy(c);
		conn_event_cb(bev, what, c);
		return;
	}
	conn_settle_busy(c);
}

/* Plain TCP: the socket is readable (front_io.c reads). */
static void conn_sock_read_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front_conn *c = arg;
	short what = 0;
	int more;
	ssize_t n = fconn_read_event(c, &more, &what);

	if (n < 0) {
		conn_event_cb(c->bev, what, c);
		return;
	}
	if (n == 0)
		return;
	c->busy = 1;
	conn_process(c);
	if (more && fconn_read_bulk(c, conn_process, &what) < 0) {
		conn_unbusy(c);
		conn_event_cb(c->bev, what, c);
		return;
	}
	conn_settle_busy(c);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct front_conn *c = arg;

	c->t_write = front_now_ms();
	conn_settle(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct front_conn *c = arg;

	if (what & BEV_EVENT_ERROR) {
		unsigned long tls_err = bufferevent_get_openssl_error(bev);

		if (tls_err) {
			char why[256];

			ERR_error_string_n(tls_err, why, sizeof(why));
			log_info("connection from \"%s\": tls: \"%s\"", c->peer, why);
			while (bufferevent_get_openssl_error(bev))
				;
		} else {
			log_debug("connection from \"%s\": %s", c->peer,
				  evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		}
		fconn_free(c, FRONT_ABORT_CLIENT_GONE);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		c->eof = 1;
		conn_process(c);
		if (c->state == CONN_LINGER || c->state == CONN_CLOSING) {
			fconn_free(c, FRONT_ABORT_CLIENT_GONE);
			return;
		}
		if (c->state == CONN_IDLE && front_parser_in_head(c->parser)) {
			fconn_free(c, FRONT_ABORT_CLIENT_GONE);
			return;
		}
		if ((c->state == CONN_REQUEST || c->state == CONN_DISCARD) && !c->body_done) {
			fconn_free(c, FRONT_ABORT_CLIENT_GONE);
			return;
		}
		/* a complete request was sent and the client half-closed: answer
		 * it, then close */
		c->keep_alive = 0;
	}
	conn_settle(c);
}

static void output_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct front_conn *c = arg;

	if (info->n_deleted)
		c->t_write = front_now_ms();
	/* plain TCP writes in conn_settle, reached through the kick */
	if (info->n_added && !c->write_armed)
		fconn_kick(c);
}

void fconn_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
		     struct sockaddr *sa, int salen, void *arg)
{
	struct front_server *s = arg;
	struct front_conn *c = calloc(1, sizeof(*c));
	struct front_parser_cbs cbs;
	char host[INET6_ADDRSTRLEN] = "?";
	int one = 1;

	if (!c)
		goto fail;
	c->srv = s;
	cbs.on_head = conn_on_head;
	cbs.on_body = conn_on_body;
	cbs.on_end = conn_on_end;
	cbs.arg = c;
	c->parser = front_parser_new(&s->lim, &cbs);
	if (s->tls) {
		SSL *ssl = SSL_new(s->tls);

		/* the bufferevent owns ssl (and closes fd) from here on */
		c->bev = ssl ? bufferevent_openssl_socket_new(s->base, fd, ssl,
							      BUFFEREVENT_SSL_ACCEPTING,
							      BEV_OPT_CLOSE_ON_FREE |
							      BEV_OPT_DEFER_CALLBACKS) : NULL;
		if (!c->bev && ssl)
			SSL_free(ssl);
		if (c->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
	} else {
		c->bev = bufferevent_socket_new(s->base, fd,
						BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	}
	c->timer = evtimer_new(s->base, conn_timeout_cb, c);
	c->kick = event_new(s->base, -1, 0, conn_kick_cb, c);
	if (!s->tls && c->bev && fconn_read_init(c, fd, conn_sock_read_cb) < 0)
		c->rd = NULL;
	if (!c->parser || !c->bev || !c->timer || !c->kick || (!s->tls && !c->rd)) {
		if (c->bev)
			fd = -1; /* closed with the bufferevent */
		conn_free_parts(c);
		goto fail;
	}
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(c->peer, sizeof(c->peer), "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(c->peer, sizeof(c->peer), "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(c->peer, sizeof(c->peer), "unix");
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	__atomic_add_fetch(&s->nconns, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->accepted, 1, __ATOMIC_RELAXED);
	c->state = CONN_IDLE;
	c->t_idle = front_now_ms();
	c->t_write = c->t_idle;
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, s->lim.output_buffer / 2, 0);
	evbuffer_add_cb(bufferevent_get_output(c->bev), output_cb, c);
	/* plain TCP: EV_WRITE only for what a write at once leaves, reads on
	 * rd (front_io.c); the bufferevent's read event stays off */
	c->write_armed = s->tls != NULL;
	if (s->tls) {
		bufferevent_setwatermark(c->bev, EV_READ, 0, s->lim.input_buffer);
		bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	} else {
		bufferevent_disable(c->bev, EV_WRITE); /* a new bufferevent has it on */
		fconn_read_enable(c, 1);
	}
	log_debug("connection from \"%s\"", c->peer);
	update_accepting(s);
	conn_settle(c);
	return;
fail:
	log_error("cannot accept a connection: out of memory");
	if (fd >= 0)
		evutil_closesocket(fd);
}
