/* listen.c — the listening sockets (listen.h): binding, pausing at the
 * connection limit, backing off when accept() fails, and the descriptor
 * budget from RLIMIT_NOFILE. A failing accept() (EMFILE, ENFILE, ENOMEM)
 * leaves the listening socket readable, so libevent would call back at
 * once, forever: every failure pauses all listeners for LISTEN_BACKOFF_MS
 * (HAProxy and nginx do the same) and the log says so at most once per
 * LISTEN_LOG_EVERY_MS. It does not know what a connection is. */
#include "listen.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "ops/log.h"

/* States: each listener accepts iff !full && !backoff && !closed. */
struct listen_set {
	struct event_base *base;
	evconnlistener_cb cb;
	void *arg;
	struct evconnlistener *l[LISTEN_MAX];
	size_t n;
	int enabled;          /* what the listeners are set to now */
	int full;             /* at the connection limit */
	int backoff;          /* accept() failed; the timer ends it */
	int closed;           /* draining: never again */
	int reuse_port;       /* SO_REUSEPORT on sockets bound from now on */
	struct event *backoff_timer;
	unsigned long failures;
	unsigned long unlogged;   /* failures since the last log line */
	int64_t logged_ms;        /* monotonic time of that line; 0: none yet */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sets every listener to what the state says, if that changed. */
static void apply(struct listen_set *ls)
{
	int want = !ls->full && !ls->backoff && !ls->closed;

	if (want == ls->enabled)
		return;
	ls->enabled = want;
	for (size_t i = 0; i < ls->n; i++) {
		if (want)
			evconnlistener_enable(ls->l[i]);
		else
			evconnlistener_disable(ls->l[i]);
	}
}

static void backoff_over_cb(evutil_socket_t fd, short what, void *arg)
{
	struct listen_set *ls = arg;

	ls->backoff = 0;
	apply(ls);
}

/* Every listener's callbacks get the set; accepted sockets go on to cb. */
static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct listen_set *ls = arg;

	ls->cb(l, fd, sa, salen, ls->arg);
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct listen_set *ls = arg;
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv = { 0, LISTEN_BACKOFF_MS * 1000 };
	int64_t now = mono_ms();

	ls->failures++;
	ls->unlogged++;
	if (!ls->logged_ms || now - ls->logged_ms >= LISTEN_LOG_EVERY_MS) {
		log_error("accept failed: \"%s\" (%lu times since the last report); "
			  "not accepting for %d ms at a time", evutil_socket_error_to_string(err),
			  ls->unlogged, LISTEN_BACKOFF_MS);
		ls->unlogged = 0;
		ls->logged_ms = now;
	}
	if (ls->closed || ls->backoff)
		return;
	ls->backoff = 1;
	apply(ls);
	if (!ls->backoff_timer || evtimer_add(ls->backoff_timer, &tv) < 0) {
		/* no timer, no way back: accept again rather than never */
		ls->backoff = 0;
		apply(ls);
	}
}

struct listen_set *listen_set_new(struct event_base *base, evconnlistener_cb cb, void *arg)
{
	struct listen_set *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return NULL;
	ls->base = base;
	ls->cb = cb;
	ls->arg = arg;
	ls->enabled = 1;
	ls->backoff_timer = evtimer_new(base, backoff_over_cb, ls);
	if (!ls->backoff_timer) {
		free(ls);
		return NULL;
	}
	return ls;
}

/* Parses "ADDR:PORT", "[V6]:PORT" or ":PORT" into ss. */
static int parse_listen_addr(const char *spec, struct sockaddr_storage *ss,
			     int *sslen, char *err, size_t errlen)
{
	char buf[256];
	const char *colon = strrchr(spec, ':');
	size_t hostlen;
	char *end;
	long port;

	if (!colon || strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "listen address \"%s\" is not ADDR:PORT", spec);
		return -1;
	}
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end || port < 1 || port > 65535) {
		snprintf(err, errlen, "listen address \"%s\" has a bad port", spec);
		return -1;
	}
	hostlen = (size_t)(colon - spec);
	memcpy(buf, spec, hostlen);
	buf[hostlen] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (hostlen >= 2 && buf[0] == '[' && buf[hostlen - 1] == ']') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		buf[hostlen - 1] = '\0';
		if (inet_pton(AF_INET6, buf + 1, &in6->sin6_addr) != 1) {
			snprintf(err, errlen, "listen address \"%s\" has a bad IPv6 address", spec);
			return -1;
		}
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*sslen = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		if (hostlen == 0) {
			in->sin_addr.s_addr = htonl(INADDR_ANY);
		} else if (strcmp(buf, "localhost") == 0) {
			in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		} else if (inet_pton(AF_INET, buf, &in->sin_addr) != 1) {
			snprintf(err, errlen, "listen address \"%s\" needs an IP address", spec);
			return -1;
		}
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*sslen = sizeof(*in);
	}
	return 0;
}


int listen_set_add(struct listen_set *ls, const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct evconnlistener *l;
	int sslen = 0;

	if (ls->n == LISTEN_MAX || ls->closed) {
		snprintf(err, errlen, "too many listen addresses (at most %d)", LISTEN_MAX);
		return -1;
	}
	if (parse_listen_addr(addr, &ss, &sslen, err, errlen) < 0)
		return -1;
	l = evconnlistener_new_bind(ls->base, accept_cb, ls,
				    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC |
				    (ls->reuse_port ? LEV_OPT_REUSEABLE_PORT : 0),
				    511, (struct sockaddr *)&ss, sslen);
	if (!l) {
		snprintf(err, errlen, "cannot listen on \"%s\": %s", addr, strerror(errno));
		return -1;
	}
	evconnlistener_set_error_cb(l, accept_error_cb);
	ls->l[ls->n++] = l;
	if (!ls->enabled)
		evconnlistener_disable(l);
	return 0;
}

int listen_addr_free(const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	int sslen = 0, fd, one = 1, rc = 0;

	if (parse_listen_addr(addr, &ss, &sslen, err, errlen) < 0)
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot listen on \"%s\": %s", addr, strerror(errno));
		return -1;
	}
	/* as the listeners do (TIME_WAIT is no obstacle), without SO_REUSEPORT */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, (socklen_t)sslen) < 0) {
		snprintf(err, errlen, "cannot listen on \"%s\": %s", addr, strerror(errno));
		rc = -1;
	}
	close(fd);
	return rc;
}

void listen_set_reuse_port(struct listen_set *ls, int on)
{
	ls->reuse_port = on;
}

void listen_set_full(struct listen_set *ls, int full)
{
	ls->full = full;
	apply(ls);
}

void listen_set_close(struct listen_set *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		evconnlistener_free(ls->l[i]);
	ls->n = 0;
	ls->closed = 1;
	ls->enabled = 0;
	evtimer_del(ls->backoff_timer);
}

unsigned long listen_set_failures(const struct listen_set *ls)
{
	return ls->failures;
}

void listen_set_free(struct listen_set *ls)
{
	if (!ls)
		return;
	listen_set_close(ls);
	event_free(ls->backoff_timer);
	free(ls);
}

size_t listen_connection_budget(size_t wanted, char *msg, size_t msglen)
{
	struct rlimit rl;
	rlim_t need, cap;
	char asked[32] = "unlimited";

	msg[0] = '\0';
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return wanted;
	need = wanted ? (rlim_t)wanted * 2 + LISTEN_FD_RESERVE : RLIM_INFINITY;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
		struct rlimit up = { need < rl.rlim_max ? need : rl.rlim_max, rl.rlim_max };

		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl.rlim_cur = up.rlim_cur;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return wanted;
	cap = rl.rlim_cur > LISTEN_FD_RESERVE + 2 ? (rl.rlim_cur - LISTEN_FD_RESERVE) / 2 : 1;
	if (wanted)
		snprintf(asked, sizeof(asked), "%zu", wanted);
	snprintf(msg, msglen, "RLIMIT_NOFILE %llu (hard %llu) allows %llu connections, "
		 "not %s (2 descriptors each and %d spare): raise it (ulimit -n, "
		 "LimitNOFILE=) or lower limits.max_connections",
		 (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
		 (unsigned long long)cap, asked, LISTEN_FD_RESERVE);
	return (size_t)cap;
}
