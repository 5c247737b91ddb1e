/* upstream_srv_test.h — the scripted server test_upstream.c runs its rows
 * against: a thread on 127.0.0.1 with blocking sockets, one connection at a
 * time, each handed to a script (what the server reads and answers) with the
 * connection's index, and counts of accepts and requests. Test code only. */
#ifndef FENCE_TEST_UPSTREAM_SRV_TEST_H
#define FENCE_TEST_UPSTREAM_SRV_TEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

struct sconn {
	int fd;
	char buf[8192];
	size_t len;
};

struct srv;
typedef void (*script_fn)(struct srv *s, struct sconn *c, int index);

struct srv {
	int lfd;
	uint16_t port;
	pthread_t th;
	script_fn script;
	int stop;
	int accepts;
	int requests;
	size_t body_bytes;     /* request body bytes the server read */
	unsigned body_sum;     /* their sum, mod 2^32 */
	char last_head[2048];
};

static inline void s_write(struct sconn *c, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		data += n;
		len -= (size_t)n;
	}
}

static inline void s_puts(struct sconn *c, const char *s)
{
	s_write(c, s, strlen(s));
}

static inline int s_fill(struct sconn *c)
{
	ssize_t n;

	if (c->len == sizeof(c->buf))
		return -1;
	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
	if (n <= 0)
		return -1;
	c->len += (size_t)n;
	return 0;
}

static inline void s_drop(struct sconn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* Reads one request head into s->last_head. Returns 0, or -1 at EOF. */
static inline int s_head(struct srv *s, struct sconn *c)
{
	char *end;

	while (!(end = memmem(c->buf, c->len, "\r\n\r\n", 4)))
		if (s_fill(c) < 0)
			return -1;
	snprintf(s->last_head, sizeof(s->last_head), "%.*s", (int)(end + 4 - c->buf), c->buf);
	s_drop(c, (size_t)(end + 4 - c->buf));
	s->body_bytes = 0; /* what follows is this request's body */
	s->body_sum = 0;
	__atomic_add_fetch(&s->requests, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static inline void s_take(struct srv *s, struct sconn *c, size_t n)
{
	while (n) {
		size_t k;

		if (!c->len && s_fill(c) < 0)
			return;
		k = c->len < n ? c->len : n;
		for (size_t i = 0; i < k; i++)
			s->body_sum += (unsigned char)c->buf[i];
		s->body_bytes += k;
		s_drop(c, k);
		n -= k;
	}
}

/* Reads the body the last head announced (Content-Length or chunked). */
static inline void s_body(struct srv *s, struct sconn *c)
{
	const char *cl = strcasestr(s->last_head, "\r\nContent-Length:");

	if (cl) {
		s_take(s, c, strtoul(cl + 17, NULL, 10));
		return;
	}
	if (!strcasestr(s->last_head, "\r\nTransfer-Encoding: chunked"))
		return;
	for (;;) {
		char *eol;
		unsigned long size;

		while (!(eol = memmem(c->buf, c->len, "\r\n", 2)))
			if (s_fill(c) < 0)
				return;
		size = strtoul(c->buf, NULL, 16);
		s_drop(c, (size_t)(eol + 2 - c->buf));
		if (size == 0) {
			while (c->len < 2)
				if (s_fill(c) < 0)
					return;
			s_drop(c, 2);
			return;
		}
		s_take(s, c, size);
		while (c->len < 2)
			if (s_fill(c) < 0)
				return;
		s_drop(c, 2);
	}
}

static inline void *srv_main(void *arg)
{
	struct srv *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST)) {
		struct pollfd p = { s->lfd, POLLIN, 0 };
		struct sconn *c;
		struct timeval tv = { 5, 0 };
		int fd;

		if (poll(&p, 1, 20) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		c = calloc(1, sizeof(*c));
		c->fd = fd;
		s->script(s, c, __atomic_fetch_add(&s->accepts, 1, __ATOMIC_SEQ_CST));
		close(fd);
		free(c);
	}
	return NULL;
}

static inline struct srv *srv_start(script_fn script)
{
	struct srv *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->script = script;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s->lfd, 16), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
	s->port = ntohs(sa.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
	return s;
}

static inline void srv_stop(struct srv *s)
{
	__atomic_store_n(&s->stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(s->th, NULL);
	close(s->lfd);
	free(s);
}

#endif
