/* test_upstream_pieces.c — a response head that reaches the upstream client
 * a few bytes at a time (names and values cut across reads, a long value, an
 * empty one, blanks to trim, a 1xx head before it) comes out whole: every
 * header, in order, with its case, its value trimmed; then the same head in
 * one piece. A thread with a blocking socket plays the server. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <event2/event.h>

#include "http/upstream.h"

#define LONGV "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz" \
	      "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"

static const char response[] =
	"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
	"HTTP/1.1 200 OK\r\nX-First:  one \r\nx-LONG-name-of-a-header: " LONGV "\r\n"
	"X-Empty:\r\nX-Dup: a\r\nx-dup: b\r\nContent-Length: 2\r\n\r\nok";

/* What on_head must see, in order. */
static const char *const want[][2] = {
	{ "X-First", "one" }, { "x-LONG-name-of-a-header", LONGV }, { "X-Empty", "" },
	{ "X-Dup", "a" }, { "x-dup", "b" }, { "Content-Length", "2" },
};

struct srv {
	int lfd;
	size_t piece;  /* bytes per write; 0: all at once */
};

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	char buf[4096];
	size_t have = 0, len = sizeof(response) - 1;

	if (fd < 0)
		return NULL;
	while (have < 4 || !memmem(buf, have, "\r\n\r\n", 4)) {
		ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);

		if (n <= 0)
			goto out;
		have += (size_t)n;
	}
	for (size_t off = 0; off < len;) {
		size_t n = s->piece && s->piece < len - off ? s->piece : len - off;

		if (send(fd, response + off, n, MSG_NOSIGNAL) != (ssize_t)n)
			break;
		off += n;
		if (s->piece)
			usleep(300); /* one read per piece, mostly */
	}
out:
	close(fd);
	return NULL;
}

struct cli {
	struct event_base *base;
	int heads, done, status;
	enum upstream_result res;
	int matched;
	char body[16];
	size_t body_len;
};

static size_t c_read_body(void *arg, char *buf, size_t len)
{
	return 0;
}

static int c_on_head(void *arg, int status, struct front_hdrs *hdrs)
{
	struct cli *c = arg;

	c->heads++;
	c->status = status;
	assert_int_equal(hdrs->n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < hdrs->n; i++) {
		assert_string_equal(hdrs->v[i].name, want[i][0]);
		assert_string_equal(hdrs->v[i].value, want[i][1]);
		assert_int_equal(hdrs->v[i].nlen, strlen(want[i][0]));
		assert_int_equal(hdrs->v[i].vlen, strlen(want[i][1]));
	}
	c->matched = 1;
	return 0;
}

static int c_on_body(void *arg, const char *data, size_t len)
{
	struct cli *c = arg;

	if (c->body_len + len < sizeof(c->body)) {
		memcpy(c->body + c->body_len, data, len);
		c->body_len += len;
	}
	return 0;
}

static void c_on_done(void *arg, enum upstream_result res, const char *detail)
{
	struct cli *c = arg;

	c->done++;
	c->res = res;
	event_base_loopbreak(c->base);
}

static const struct upstream_ops ops = { c_read_body, c_on_head, c_on_body, c_on_done, NULL };

static void run(size_t piece)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sa);
	struct srv s = { .piece = piece };
	struct upstream_config cfg;
	struct upstream_request r = { 0 };
	struct front_hdrs h = { 0 };
	struct cli c = { 0 };
	struct upstream *u;
	struct upstream_xfer *x;
	pthread_t th;
	char url[64], err[128];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s.lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s.lfd >= 0);
	assert_int_equal(bind(s.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s.lfd, 4), 0);
	assert_int_equal(getsockname(s.lfd, (struct sockaddr *)&sa, &slen), 0);
	assert_int_equal(pthread_create(&th, NULL, srv_main, &s), 0);

	c.base = event_base_new();
	upstream_config_default(&cfg);
	u = upstream_new(c.base, &cfg, err, sizeof(err));
	assert_non_null(u);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/p", ntohs(sa.sin_port));
	assert_int_equal(front_hdrs_add(&h, "Host", "test"), 0);
	r.method = "GET";
	r.url = url;
	r.hdrs = &h;
	r.body_length = -1;
	x = upstream_start(u, &r, &ops, &c, err, sizeof(err));
	front_hdrs_clear(&h);
	assert_non_null(x);
	event_base_dispatch(c.base);

	assert_int_equal(c.done, 1);
	assert_int_equal(c.res, UPSTREAM_OK);
	assert_int_equal(c.heads, 1);
	assert_true(c.matched);
	assert_int_equal(c.status, 200);
	assert_int_equal(c.body_len, 2);
	assert_memory_equal(c.body, "ok", 2);
	upstream_free(u);
	event_base_free(c.base);
	pthread_join(th, NULL);
	close(s.lfd);
}

static void test_pieces(void **state)
{
	for (size_t piece = 1; piece <= 7; piece += 3)
		run(piece);
}

static void test_one_piece(void **state)
{
	run(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_one_piece),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
