/* logbuf.c — buffers whole log lines and writes them out together: when
 * full, flush_ms after the first line waiting (a one-shot timer, so an
 * idle daemon does not wake up), when flushed and when freed (logbuf.h). One write(2)
 * per buffer instead of one per line. It never splits a line between two
 * writes, so a reopen between writes puts every line whole in one file.
 * It knows nothing of what the lines say or which file the fd is. */
#include "logbuf.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct logbuf {
	pthread_mutex_t mu;
	int fd;
	char *buf;
	size_t len, cap;
	struct event *timer;    /* NULL until logbuf_start_timer */
	struct timeval every;
	int armed;              /* the timer is pending: lines are waiting */
};

struct logbuf *logbuf_new(int fd, size_t cap)
{
	struct logbuf *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->buf = malloc(cap ? cap : 1);
	if (!b->buf) {
		free(b);
		return NULL;
	}
	pthread_mutex_init(&b->mu, NULL);
	b->fd = fd;
	b->cap = cap;
	return b;
}

/* Writes all of data to fd (short writes and EINTR resumed). 0 or -1. */
static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* With b->mu held. */
static int flush_locked(struct logbuf *b)
{
	int rc = 0;

	if (b->len)
		rc = write_all(b->fd, b->buf, b->len);
	b->len = 0;
	return rc;
}

int logbuf_add(struct logbuf *b, const char *line, size_t len)
{
	int rc = 0;

	pthread_mutex_lock(&b->mu);
	if (b->len + len > b->cap)
		rc = flush_locked(b);
	if (len > b->cap) {
		if (write_all(b->fd, line, len) < 0)
			rc = -1;
	} else {
		memcpy(b->buf + b->len, line, len);
		b->len += len;
		/* the first line waiting starts the clock (an idle daemon
		 * does not wake up for nothing) */
		if (b->timer && !b->armed && evtimer_add(b->timer, &b->every) == 0)
			b->armed = 1;
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int logbuf_flush(struct logbuf *b)
{
	int rc;

	pthread_mutex_lock(&b->mu);
	rc = flush_locked(b);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct logbuf *b = arg;

	pthread_mutex_lock(&b->mu);
	b->armed = 0;
	flush_locked(b);
	pthread_mutex_unlock(&b->mu);
}

int logbuf_start_timer(struct logbuf *b, struct event_base *base, long flush_ms)
{
	if (b->timer)
		return 0;
	b->every.tv_sec = flush_ms / 1000;
	b->every.tv_usec = (flush_ms % 1000) * 1000;
	b->timer = evtimer_new(base, timer_cb, b);
	return b->timer ? 0 : -1;
}

void logbuf_free(struct logbuf *b)
{
	if (!b)
		return;
	logbuf_flush(b);
	if (b->timer)
		event_free(b->timer);
	pthread_mutex_destroy(&b->mu);
	free(b->buf);
	free(b);
}
