/* test_logbuf.c — the access log's write buffer (proxy/ops/logbuf.c):
 * nothing reaches the file until a flush, a full buffer or the timer;
 * lines are never split between writes (a line that does not fit sends the
 * buffer first; one longer than the buffer goes alone); free flushes; the
 * timer writes a waiting line out within its period. Over a pipe, so every
 * write(2) can be read back as one piece. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "ops/logbuf.h"

/* A pipe, non-blocking on the read side. */
static void make_pipe(int fds[2])
{
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
}

/* What the pipe holds now ("" when nothing). */
static size_t drain(int fd, char *buf, size_t cap)
{
	ssize_t n = read(fd, buf, cap - 1);

	if (n < 0)
		n = 0;
	buf[n] = '\0';
	return (size_t)n;
}

static void test_buffered_until_flush(void **state)
{
	int fds[2];
	char got[256];
	struct logbuf *b;

	(void)state;
	make_pipe(fds);
	b = logbuf_new(fds[1], 64);
	assert_non_null(b);
	assert_int_equal(logbuf_add(b, "one\n", 4), 0);
	assert_int_equal(logbuf_add(b, "two\n", 4), 0);
	assert_int_equal(drain(fds[0], got, sizeof(got)), 0);
	assert_int_equal(logbuf_flush(b), 0);
	drain(fds[0], got, sizeof(got));
	assert_string_equal(got, "one\ntwo\n");
	logbuf_free(b);
	close(fds[0]);
	close(fds[1]);
}

static void test_full_buffer_never_splits(void **state)
{
	int fds[2];
	char got[256];
	struct logbuf *b;

	(void)state;
	make_pipe(fds);
	b = logbuf_new(fds[1], 16);
	assert_non_null(b);
	assert_int_equal(logbuf_add(b, "0123456789\n", 11), 0);
	/* 11 + 11 > 16: the first line leaves alone, whole */
	assert_int_equal(logbuf_add(b, "abcdefghij\n", 11), 0);
	drain(fds[0], got, sizeof(got));
	assert_string_equal(got, "0123456789\n");
	/* longer than the buffer: what waits goes first, then the line alone */
	assert_int_equal(logbuf_add(b, "a line longer than sixteen\n", 27), 0);
	drain(fds[0], got, sizeof(got));
	assert_string_equal(got, "abcdefghij\na line longer than sixteen\n");
	/* a line of exactly the buffer's size is buffered */
	assert_int_equal(logbuf_add(b, "fifteen chars!\n\n", 16), 0);
	assert_int_equal(drain(fds[0], got, sizeof(got)), 0);
	logbuf_free(b); /* flushes */
	drain(fds[0], got, sizeof(got));
	assert_string_equal(got, "fifteen chars!\n\n");
	close(fds[0]);
	close(fds[1]);
}

static void test_timer_flushes(void **state)
{
	int fds[2];
	char got[256];
	struct event_base *base = event_base_new();
	struct logbuf *b;
	struct timeval limit = { 2, 0 };

	(void)state;
	make_pipe(fds);
	assert_non_null(base);
	b = logbuf_new(fds[1], 4096);
	assert_non_null(b);
	assert_int_equal(logbuf_start_timer(b, base, 20), 0);
	/* nothing waiting: the loop has nothing to do and returns at once */
	assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 1);
	assert_int_equal(logbuf_add(b, "late\n", 5), 0);
	assert_int_equal(drain(fds[0], got, sizeof(got)), 0);
	event_base_loopexit(base, &limit);
	assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	drain(fds[0], got, sizeof(got));
	assert_string_equal(got, "late\n");
	logbuf_free(b);
	event_base_free(base);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buffered_until_flush),
		cmocka_unit_test(test_full_buffer_never_splits),
		cmocka_unit_test(test_timer_flushes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
