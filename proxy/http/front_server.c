/* front_server.c — the front end's server: made with its limits and the
 * proxy's ops, listeners (front.c accepts on them), draining on shutdown
 * (idle connections close at once, the others when their request is done
 * or the drain time is over), the connection count, TLS for every
 * listener, the limits a reload may change. */
#include "front_int.h"

#include <http_parser.h>

#include "listen.h"
#include "ops/log.h"

/* libhttp-parser's default head size; above it the parser is told once,
 * at the start (a process-wide variable every loop reads). */
#define PARSER_HEAD_DEFAULT (80 * 1024)

struct front_server *front_server_new(struct event_base *base,
				      const struct front_limits *limits,
				      const struct front_ops *ops,
				      char *err, size_t errlen)
{
	struct front_server *s = calloc(1, sizeof(*s));
	char why[512];

	if (!s || !(s->listen = listen_set_new(base, fconn_accept_cb, s))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base = base;
	if (limits)
		s->lim = *limits;
	else
		front_limits_default(&s->lim);
	s->lim.max_connections = listen_connection_budget(s->lim.max_connections, why,
							  sizeof(why));
	if (why[0])
		log_warn("limits.max_connections: %zu: %s", s->lim.max_connections, why);
	s->ops = *ops;
	listen_set_reuse_port(s->listen, s->lim.reuse_port);
	/* our own limits are lower; keep libhttp-parser's as a backstop */
	s->header_bytes_at_start = s->lim.header_bytes;
	if (s->lim.header_bytes + 1024 > PARSER_HEAD_DEFAULT)
		http_parser_set_max_header_size((uint32_t)(s->lim.header_bytes + 1024));
	return s;
}

int front_server_listen(struct front_server *s, const char *addr, char *err, size_t errlen)
{
	return listen_set_add(s->listen, addr, err, errlen);
}

static void drain_timeout_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front_server *s = arg;

	log_warn("drain time over: closing %zu connections", s->nconns);
	while (s->conns)
		fconn_free(s->conns, FRONT_ABORT_SHUTDOWN);
	if (s->drain_done) {
		void (*done)(void *) = s->drain_done;

		s->drain_done = NULL;
		done(s->drain_arg);
	}
}

void front_server_drain(struct front_server *s, long timeout_ms,
			void (*done)(void *arg), void *arg)
{
	struct front_conn *c, *next;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

	listen_set_close(s->listen);
	s->draining = 1;
	s->drain_done = done;
	s->drain_arg = arg;
	for (c = s->conns; c; c = next) {
		next = c->next;
		if (c->state == CONN_IDLE && !front_parser_in_head(c->parser) &&
		    fconn_outlen(c) == 0)
			fconn_free(c, FRONT_ABORT_SHUTDOWN);
	}
	if (s->nconns == 0) {
		if (s->drain_done) {
			s->drain_done = NULL;
			done(arg);
		}
		return;
	}
	s->drain_timer = evtimer_new(s->base, drain_timeout_cb, s);
	if (s->drain_timer)
		evtimer_add(s->drain_timer, &tv);
}

size_t front_server_conns(const struct front_server *s)
{
	return __atomic_load_n(&s->nconns, __ATOMIC_RELAXED); /* any thread */
}

unsigned long long front_server_accepted(const struct front_server *s)
{
	return __atomic_load_n(&s->accepted, __ATOMIC_RELAXED);
}

void front_server_free(struct front_server *s)
{
	if (!s)
		return;
	s->drain_done = NULL;
	while (s->conns)
		fconn_free(s->conns, FRONT_ABORT_SHUTDOWN);
	listen_set_free(s->listen);
	if (s->drain_timer)
		event_free(s->drain_timer);
	SSL_CTX_free(s->tls);
	free(s);
}

int front_header_bytes_live(size_t at_start, size_t next)
{
	return next <= at_start || next + 1024 <= PARSER_HEAD_DEFAULT;
}

void front_server_set_limits(struct front_server *s, const struct front_limits *l)
{
	if (front_header_bytes_live(s->header_bytes_at_start, l->header_bytes))
		s->lim.header_bytes = l->header_bytes;
	s->lim.header_count = l->header_count;
	s->lim.url_bytes = l->url_bytes;
	s->lim.idle_timeout_ms = l->idle_timeout_ms;
	s->lim.header_timeout_ms = l->header_timeout_ms;
	s->lim.body_timeout_ms = l->body_timeout_ms;
	s->lim.body_min_rate = l->body_min_rate;
	s->lim.send_timeout_ms = l->send_timeout_ms;
}

void front_server_set_tls(struct front_server *s, SSL_CTX *ctx)
{
	if (ctx)
		SSL_CTX_up_ref(ctx);
	SSL_CTX_free(s->tls);
	s->tls = ctx;
}

