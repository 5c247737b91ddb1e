/* upstream_conn.c — connections to the upstream: a keep-alive pool per
 * origin (bounded by max_connections idle), new connections on libevent
 * bufferevents (IP literals connected directly, host names resolved with
 * evdns so the loop never blocks), TLS with bufferevent_openssl and the
 * checks libcurl made (system CAs or ca_file plus the system CA directory,
 * host name or IP address verified, SNI for names, `insecure` to skip,
 * the last session resumed on a new connection).
 * It knows nothing of requests or responses: upstream.c drives it. */
#include "upstream_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

/* Takes c off the pool's idle list. */
static void idle_unlink(struct upstream *u, struct up_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		u->idle = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	u->n_idle--;
}

static void conn_free(struct up_conn *c)
{
	struct upstream *u;

	if (!c)
		return;
	u = c->u;
	if (!c->x && (c->prev || u->idle == c))
		idle_unlink(u, c);
	if (c->bev) {
		SSL *ssl = c->connected ? bufferevent_openssl_get_ssl(c->bev) : NULL;

		/* close_notify, as libcurl sent it: a session of a connection
		 * freed without it would count as cut short, not resumable */
		if (ssl) {
			SSL_shutdown(ssl);
			ERR_clear_error();
		}
		if (c->rd)
			event_free(c->rd); /* before the bufferevent closes the socket */
		if (c->idle_timer)
			event_free(c->idle_timer);
		bufferevent_free(c->bev);
	}
	free(c->origin);
	free(c);
}

/* A pooled connection that became readable: the peer closed it (or sent
 * bytes nobody asked for) or it idled too long. Either way it is gone. */
static void idle_read_cb(struct bufferevent *bev, void *arg)
{
	conn_free(arg);
}

static void idle_event_cb(struct bufferevent *bev, short what, void *arg)
{
	conn_free(arg);
}

/* The idle timer of a plain connection: set when it first goes to the
 * pool and left running while it serves (no timer work per request); when
 * it fires, a connection idle for UP_IDLE_CONN_MS is closed, one idle for
 * less waits the rest, a busy one lets it go until it is pooled again. */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void idle_timer_set(struct up_conn *c, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(c->idle_timer, &tv);
}

static void idle_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct up_conn *c = arg;
	int64_t idle;

	if (c->x)
		return;
	idle = mono_ms() - c->idle_since;
	if (idle >= 0 && idle < UP_IDLE_CONN_MS) {
		idle_timer_set(c, UP_IDLE_CONN_MS - idle);
		return;
	}
	conn_free(c);
}

/* Plain TCP: one read into the input buffer, as libevent's but without its
 * FIONREAD: through a stack buffer copied into a chain of its size (a
 * response head, a small body), or, after a read that filled it, straight
 * into up to UP_READ_BIG reserved in the buffer (a large body: no copy).
 * Returns the bytes read, 0 at EOF, -1 on an error (errno kept), -2 when
 * there was nothing to read. */
static ssize_t rd_once(struct up_conn *c, evutil_socket_t fd)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	char buf[UP_READ];
	size_t asked = sizeof(buf);
	ssize_t n;
	int nv = 0;

	/* the bufferevent keeps the input's end frozen between its reads */
	evbuffer_unfreeze(in, 0);
	if (c->rd_big) {
		nv = evbuffer_reserve_space(in, (ev_ssize_t)UP_READ_BIG, v, 2);
		if (nv <= 0) {
			evbuffer_freeze(in, 0);
			errno = ENOMEM;
			return -1;
		}
		asked = 0;
		for (int i = 0; i < nv; i++) {
			iov[i].iov_base = v[i].iov_base;
			iov[i].iov_len = v[i].iov_len;
			asked += v[i].iov_len;
		}
	}
	do
		n = nv ? readv(fd, iov, nv) : recv(fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n > 0 && nv) {
		size_t got = (size_t)n;

		for (int i = 0; i < nv; i++) {
			v[i].iov_len = got < iov[i].iov_len ? got : iov[i].iov_len;
			got -= v[i].iov_len;
		}
		evbuffer_commit_space(in, v, nv);
	} else if (n > 0 && evbuffer_add(in, buf, (size_t)n) < 0) {
		n = -1;
		errno = ENOMEM;
	}
	evbuffer_freeze(in, 0);
	c->rd_big = n > 0 && (size_t)n == asked;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -2;
	return n;
}

/* rd: the socket of a plain connection is readable. Pooled, it is gone
 * (as idle_read_cb); busy, the bytes go to the transfer's read callback,
 * EOF and errors to its event callback with reading off, as libevent's
 * read path does. */
static void rd_cb(evutil_socket_t fd, short what, void *arg)
{
	struct up_conn *c = arg;
	ssize_t n;

	if (!c->x) {
		conn_free(c);
		return;
	}
	n = rd_once(c, fd);
	if (n > 0) {
		up_xfer_read_cb(c->bev, c->x);
	} else if (n == 0 || n == -1) {
		int err = errno;

		up_conn_read(c, 0);
		errno = err;
		up_xfer_event_cb(c->bev, BEV_EVENT_READING |
				 (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR), c->x);
	}
}

int up_conn_connected(struct up_conn *c)
{
	evutil_socket_t fd = bufferevent_getfd(c->bev);

	c->connected = 1;
	if (c->tls || c->rd || fd < 0)
		return 0;
	c->rd = event_new(c->u->base, fd, EV_READ | EV_PERSIST, rd_cb, c);
	c->idle_timer = evtimer_new(c->u->base, idle_timer_cb, c);
	if (!c->rd || !c->idle_timer) {
		if (c->rd)
			event_free(c->rd);
		if (c->idle_timer)
			event_free(c->idle_timer);
		c->rd = c->idle_timer = NULL;
		return -1;
	}
	bufferevent_disable(c->bev, EV_READ);
	c->rd_on = 0;
	up_conn_read(c, 1);
	return 0;
}

void up_conn_read(struct up_conn *c, int on)
{
	if (!c->rd) {
		if (on)
			bufferevent_enable(c->bev, EV_READ);
		else
			bufferevent_disable(c->bev, EV_READ);
		return;
	}
	if (on == c->rd_on || (on ? event_add(c->rd, NULL) : event_del(c->rd)))
		return;
	c->rd_on = on;
}

static void pool_push(struct upstream *u, struct up_conn *c)
{
	struct timeval tv = { UP_IDLE_CONN_MS / 1000, (UP_IDLE_CONN_MS % 1000) * 1000 };

	bufferevent_setcb(c->bev, idle_read_cb, NULL, idle_event_cb, c);
	c->rd_big = 0; /* the next response starts small */
	if (c->rd) {
		c->idle_since = mono_ms();
		if (!evtimer_pending(c->idle_timer, NULL))
			idle_timer_set(c, UP_IDLE_CONN_MS);
	} else {
		bufferevent_set_timeouts(c->bev, &tv, NULL);
	}
	up_conn_read(c, 1);
	c->prev = NULL;
	c->next = u->idle;
	if (u->idle)
		u->idle->prev = c;
	u->idle = c;
	u->n_idle++;
}

static size_t pool_max(const struct upstream *u)
{
	return u->cfg.max_connections > 0 ? (size_t)u->cfg.max_connections : 0;
}

void up_conn_release(struct upstream_xfer *x, int keep)
{
	struct up_conn *c = x->conn;

	if (!c)
		return;
	x->conn = NULL;
	c->x = NULL;
	if (keep && c->connected && x->u->n_idle < pool_max(x->u) &&
	    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		c->served++;
		pool_push(x->u, c);
		return;
	}
	c->prev = c->next = NULL;
	conn_free(c);
}

void up_pool_clear(struct upstream *u)
{
	while (u->idle)
		conn_free(u->idle);
	SSL_SESSION_free(u->tls_session);
	free(u->tls_origin);
	u->tls_session = NULL;
	u->tls_origin = NULL;
}

int up_pool_adopt(struct upstream *u, const char *origin, evutil_socket_t fd)
{
	struct up_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	c->u = u;
	c->origin = strdup(origin);
	c->bev = bufferevent_socket_new(u->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (!c->origin || !c->bev || up_conn_connected(c) < 0) {
		conn_free(c);
		return -1;
	}
	pool_push(u, c);
	return 0;
}

/* A session (a TLS 1.3 ticket, or the TLS 1.2 session) the server gave:
 * kept, so the next new connection to the origin resumes it instead of a
 * full handshake, as libcurl's session cache did. Takes s (returns 1). */
static int tls_new_session_cb(SSL *ssl, SSL_SESSION *s)
{
	struct up_conn *c = SSL_get_app_data(ssl);
	char *origin = c ? strdup(c->origin) : NULL;

	if (!origin)
		return 0;
	SSL_SESSION_free(c->u->tls_session);
	free(c->u->tls_origin);
	c->u->tls_session = s;
	c->u->tls_origin = origin;
	return 1;
}

/* The client context, made once: verification as libcurl did it. */
static SSL_CTX *tls_ctx(struct upstream *u, char *err, size_t errlen)
{
	SSL_CTX *ctx;

	if (u->ssl_ctx)
		return u->ssl_ctx;
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		snprintf(err, errlen, "cannot create a TLS context");
		return NULL;
	}
	if (!u->cfg.insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (u->ca_file) {
			/* libcurl (Debian's) kept its CA directory next to CAINFO */
			if (SSL_CTX_load_verify_locations(ctx, u->ca_file, NULL) != 1) {
				snprintf(err, errlen, "cannot load the CA file \"%s\"", u->ca_file);
				ERR_clear_error();
				SSL_CTX_free(ctx);
				return NULL;
			}
			SSL_CTX_set_default_verify_dir(ctx);
		} else {
			SSL_CTX_set_default_verify_paths(ctx);
		}
		ERR_clear_error();
	}
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
				       SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, tls_new_session_cb);
	u->ssl_ctx = ctx;
	return ctx;
}

/* One SSL for host: SNI for names, the name or address checked against the
 * certificate unless insecure. */
static SSL *tls_new(struct upstream *u, const char *origin, const char *host, int is_ip,
		    char *err, size_t errlen)
{
	SSL_CTX *ctx = tls_ctx(u, err, errlen);
	SSL *ssl = ctx ? SSL_new(ctx) : NULL;

	if (!ssl) {
		if (ctx)
			snprintf(err, errlen, "cannot create a TLS session");
		return NULL;
	}
	if (!is_ip && SSL_set_tlsext_host_name(ssl, host) != 1)
		goto fail;
	if (u->tls_session && strcmp(u->tls_origin, origin) == 0)
		SSL_set_session(ssl, u->tls_session); /* a failure means a full handshake */
	if (!u->cfg.insecure) {
		X509_VERIFY_PARAM *param = SSL_get0_param(ssl);

		if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1
			  : X509_VERIFY_PARAM_set1_host(param, host, 0) != 1)
			goto fail;
	}
	return ssl;
fail:
	snprintf(err, errlen, "cannot set the TLS peer name \"%s\"", host);
	SSL_free(ssl);
	ERR_clear_error();
	return NULL;
}

void up_conn_tls_error(struct up_conn *c, char *buf, size_t len)
{
	SSL *ssl = bufferevent_openssl_get_ssl(c->bev);
	long vr = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	unsigned long e = bufferevent_get_openssl_error(c->bev);
	char why[120];

	if (vr != X509_V_OK) {
		snprintf(buf, len, "TLS certificate problem: %s", X509_verify_cert_error_string(vr));
	} else if (e) {
		ERR_error_string_n(e, why, sizeof(why));
		snprintf(buf, len, "TLS handshake failed: %s", why);
	} else {
		buf[0] = '\0';
	}
	while (bufferevent_get_openssl_error(c->bev))
		;
}

/* A new connection for x: a socket connecting to an IP literal, or a name
 * lookup first. Returns 0 (the outcome comes as a bufferevent event) or -1
 * with x->detail set. */
static int conn_open(struct upstream_xfer *x, enum upstream_result *res)
{
	struct upstream *u = x->u;
	struct up_conn *c = calloc(1, sizeof(*c));
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	evutil_socket_t fd = -1;
	SSL *ssl = NULL;
	const int opts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;

	*res = UPSTREAM_ERROR;
	if (!c)
		goto nomem;
	c->u = u;
	c->tls = x->t.tls;
	c->origin = strdup(x->t.origin);
	if (!c->origin)
		goto nomem;
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, x->t.host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons(x->t.port);
		sslen = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, x->t.host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(x->t.port);
		sslen = sizeof(struct sockaddr_in6);
	}
	if (sslen) {
		int one = 1;

		fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(x->detail, sizeof(x->detail), "socket: %s", strerror(errno));
			goto fail;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (x->t.tls) {
		ssl = tls_new(u, x->t.origin, x->t.host, sslen != 0, x->detail, sizeof(x->detail));
		if (!ssl)
			goto fail;
		SSL_set_app_data(ssl, c);
		c->bev = bufferevent_openssl_socket_new(u->base, fd, ssl,
							BUFFEREVENT_SSL_CONNECTING, opts);
		ssl = NULL; /* the bufferevent's, also when it failed */
		if (c->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
	} else {
		c->bev = bufferevent_socket_new(u->base, fd, opts);
	}
	if (!c->bev)
		goto nomem;
	fd = -1; /* the bufferevent closes it */
	ssl = NULL;
	c->x = x;
	x->conn = c;
	bufferevent_setcb(c->bev, up_xfer_read_cb, up_xfer_write_cb, up_xfer_event_cb, x);
	bufferevent_setwatermark(c->bev, EV_WRITE, UP_SEND_WINDOW / 2, 0);
	bufferevent_set_max_single_write(c->bev, UP_SEND_WINDOW);
	/* plain sockets are written from upstream.c first (xfer_flush) */
	bufferevent_enable(c->bev, x->t.tls ? EV_READ | EV_WRITE : EV_READ);
	if (sslen) {
		if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&ss, (int)sslen) < 0) {
			snprintf(x->detail, sizeof(x->detail), "cannot connect to %.64s port %u: %s",
				 x->t.host, x->t.port, strerror(errno));
			*res = UPSTREAM_CONNECT_FAILED;
			goto fail;
		}
		return 0;
	}
	x->dns_connect = 1;
	if (!u->dns) {
		u->dns = evdns_base_new(u->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
					EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		x->dns_connect = 1;
	if (!u->dns) {
			snprintf(x->detail, sizeof(x->detail), "cannot start the resolver");
			goto fail;
		}
	}
	if (bufferevent_socket_connect_hostname(c->bev, u->dns, AF_UNSPEC, x->t.host,
						x->t.port) < 0) {
		snprintf(x->detail, sizeof(x->detail), "cannot resolve \"%.64s\"", x->t.host);
		*res = UPSTREAM_CONNECT_FAILED;
		goto fail;
	}
	return 0;
nomem:
	snprintf(x->detail, sizeof(x->detail), "out of memory");
fail:
	if (fd >= 0)
		close(fd);
	SSL_free(ssl);
	if (c && x->conn == c) {
		x->conn = NULL;
		c->x = NULL;
	}
	conn_free(c);
	return -1;
}

int up_conn_attach(struct upstream_xfer *x, int fresh, enum upstream_result *res)
{
	struct upstream *u = x->u;

	x->reused = 0;
	for (struct up_conn *c = fresh ? NULL : u->idle; c; c = c->next) {
		if (strcmp(c->origin, x->t.origin) != 0)
			continue;
		idle_unlink(u, c);
		c->x = x;
		x->conn = c;
		x->reused = c->served > 0;
		if (!c->rd) /* plain: the idle timer stays (idle_timer_cb) */
			bufferevent_set_timeouts(c->bev, NULL, NULL);
		bufferevent_setcb(c->bev, up_xfer_read_cb, up_xfer_write_cb, up_xfer_event_cb, x);
		bufferevent_setwatermark(c->bev, EV_WRITE, UP_SEND_WINDOW / 2, 0);
		bufferevent_set_max_single_write(c->bev, UP_SEND_WINDOW);
		/* plain sockets are written from upstream.c first (xfer_flush) */
		if (x->t.tls)
			bufferevent_enable(c->bev, EV_WRITE);
		else
			bufferevent_disable(c->bev, EV_WRITE);
		up_conn_read(c, 1);
		return 0;
	}
	return conn_open(x, res);
}
