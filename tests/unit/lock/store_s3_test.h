/* store_s3_test.h — what test_store_s3.c and test_store_s3_requests.c share:
 * a fake clock that records the back-off sleeps, a tiny scripted HTTP server
 * thread on 127.0.0.1 that answers each request from a script and records
 * what arrived, a store opened against it, the group setup that gives the
 * store fixed credentials, and S3 error bodies. Test code only. */
#ifndef FENCE_TEST_STORE_S3_TEST_H
#define FENCE_TEST_STORE_S3_TEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "wire/sigv4.h"
#include "lock/store/store.h"

/* --- a fake clock that records the back-off sleeps ---------------------- */

struct fake_clock {
	int64_t now_ms;
	int sleeps;
	int64_t slept[32];
};

static inline int64_t fake_now(void *ctx)
{
	return ((struct fake_clock *)ctx)->now_ms;
}

static inline void fake_sleep(void *ctx, int64_t ms)
{
	struct fake_clock *fc = ctx;

	if (fc->sleeps < 32)
		fc->slept[fc->sleeps] = ms;
	fc->sleeps++;
	fc->now_ms += ms;
}

/* --- the scripted server ------------------------------------------------ */

struct canned {
	int status;
	const char *headers;   /* extra header lines, each ending in \r\n */
	const char *body;
	int hang;              /* read the request, never answer */
	size_t big_body;       /* answer this many bytes of 'x' instead of body */
};

struct seen_req {
	char head[8192];       /* request line and headers */
	char body[4096];
	size_t body_len;
};

#define SCRIPT_MAX 16

struct script_server {
	int fd;
	int port;
	pthread_t thread;
	struct canned script[SCRIPT_MAX];
	size_t nscript;
	struct seen_req seen[SCRIPT_MAX];
	size_t nseen;
};

/* Waits (bounded) for fd to become readable. */
static inline int wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static inline void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static inline void serve_one(struct script_server *sv, int c, const struct canned *cn)
{
	struct seen_req *rq = &sv->seen[sv->nseen++];
	size_t got = 0, want_body = 0;
	char *end = NULL, *cl;
	char resp[16384];
	int n;

	while (got < sizeof(rq->head) - 1 && wait_readable(c, 3000)) {
		ssize_t r = recv(c, rq->head + got, sizeof(rq->head) - 1 - got, 0);

		if (r <= 0)
			break;
		got += (size_t)r;
		rq->head[got] = '\0';
		if ((end = strstr(rq->head, "\r\n\r\n")) != NULL)
			break;
	}
	if (!end)
		return;
	end += 4;
	cl = strcasestr(rq->head, "\r\ncontent-length:");
	if (cl && cl < end)
		want_body = strtoul(cl + 17, NULL, 10);
	rq->body_len = got - (size_t)(end - rq->head);
	memcpy(rq->body, end, rq->body_len < sizeof(rq->body) ? rq->body_len : sizeof(rq->body));
	*end = '\0';
	while (rq->body_len < want_body && rq->body_len < sizeof(rq->body) && wait_readable(c, 3000)) {
		ssize_t r = recv(c, rq->body + rq->body_len, sizeof(rq->body) - rq->body_len, 0);

		if (r <= 0)
			break;
		rq->body_len += (size_t)r;
	}
	if (cn->hang) {
		char sink[256];

		/* until the client gives up (its timeout) or 3 s pass */
		while (wait_readable(c, 3000) && recv(c, sink, sizeof(sink), 0) > 0)
			;
		return;
	}
	n = snprintf(resp, sizeof(resp),
		     "HTTP/1.1 %d Scripted\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
		     cn->status, cn->big_body ? cn->big_body : strlen(cn->body ? cn->body : ""),
		     cn->headers ? cn->headers : "");
	send_all(c, resp, (size_t)n);
	if (cn->big_body) {
		size_t left = cn->big_body;

		memset(resp, 'x', sizeof(resp));
		while (left) {
			size_t k = left < sizeof(resp) ? left : sizeof(resp);
			ssize_t w = send(c, resp, k, MSG_NOSIGNAL);

			if (w <= 0)
				break;
			left -= (size_t)w;
		}
	} else if (cn->body && strncmp(rq->head, "HEAD ", 5) != 0) {
		send_all(c, cn->body, strlen(cn->body));
	}
}

static inline void *server_main(void *arg)
{
	struct script_server *sv = arg;
	size_t i;

	for (i = 0; i < sv->nscript; i++) {
		int c;

		if (!wait_readable(sv->fd, 5000))
			break;
		c = accept(sv->fd, NULL, NULL);
		if (c < 0)
			break;
		serve_one(sv, c, &sv->script[i]);
		close(c);
	}
	return NULL;
}

/* Starts a server that answers the given responses in order, one per
 * connection, on a port the kernel picks. */
static inline struct script_server *server_start(const struct canned *script, size_t n)
{
	struct script_server *sv = calloc(1, sizeof(*sv));
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);

	assert_non_null(sv);
	assert_true(n <= SCRIPT_MAX);
	memcpy(sv->script, script, n * sizeof(*script));
	sv->nscript = n;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sv->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(sv->fd >= 0);
	assert_int_equal(bind(sv->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(sv->fd, 16), 0);
	assert_int_equal(getsockname(sv->fd, (struct sockaddr *)&a, &alen), 0);
	sv->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&sv->thread, NULL, server_main, sv), 0);
	return sv;
}

/* Joins the server thread; returns how many requests it saw. */
static inline size_t server_stop(struct script_server *sv)
{
	pthread_join(sv->thread, NULL);
	close(sv->fd);
	return sv->nseen;
}

/* The value of header name in a recorded request, into out; "" if absent. */
static inline const char *seen_header(const struct seen_req *rq, const char *name, char *out, size_t outlen)
{
	char pat[128];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\r\n%s:", name);
	out[0] = '\0';
	p = strcasestr(rq->head, pat);
	if (!p)
		return out;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	e = strstr(p, "\r\n");
	snprintf(out, outlen, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
	return out;
}

static inline int has_header(const struct seen_req *rq, const char *name)
{
	char pat[128];

	snprintf(pat, sizeof(pat), "\r\n%s:", name);
	return strcasestr(rq->head, pat) != NULL;
}

static struct fake_clock clock_state;
static const struct timesrc fake_time = { fake_now, fake_now, fake_sleep, &clock_state };

static inline struct store *open_at(int port, const char *host, int path_style, int retries, long timeout_ms)
{
	char endpoint[64], err[256] = "";
	struct store_config cfg = {
		.url = "s3://bkt",
		.endpoint = endpoint,
		.region = "eu-west-1",
		.path_style = path_style,
		.timeout_ms = timeout_ms,
		.max_retries = retries,
		.time = &fake_time,
	};
	struct store *st;

	snprintf(endpoint, sizeof(endpoint), "http://%s:%d", host, port);
	st = store_open(&cfg, err, sizeof(err));
	if (!st)
		fail_msg("store_open: %s", err);
	memset(&clock_state, 0, sizeof(clock_state));
	return st;
}

static inline int scripted_setup(void **state)
{
	(void)state;
	setenv("AWS_ACCESS_KEY_ID", "AKIDSCRIPTED", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "scripted-secret", 1);
	setenv("AWS_SESSION_TOKEN", "scripted-token", 1);
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_PROFILE");
	unsetenv("FENCE_S3_DIALECT");
	return 0;
}

#define SLOWDOWN "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
#define CRC_BODY "<Error><Code>ConditionalRequestConflict</Code><Message>A conflicting conditional operation is currently in progress</Message></Error>"
#define PF_BODY  "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>"

#endif
