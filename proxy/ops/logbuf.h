/* logbuf.h — a write buffer for whole log lines on one descriptor (the
 * access log's `buffer=64k flush=100ms`, as nginx has it).
 *
 * Lines are appended whole and leave in write(2)s that hold whole lines
 * only: when the buffer is full, when a timer fires, on logbuf_flush (the
 * reopen on SIGUSR1 calls it before the descriptor changes) and at
 * logbuf_free. Safe to call from several threads (one mutex); the timer
 * runs on the event loop it was started on. It does not open, reopen or
 * close the descriptor. */
#ifndef FENCE_LOGBUF_H
#define FENCE_LOGBUF_H

#include <stddef.h>

#include <event2/event.h>

struct logbuf;

/* A buffer of cap bytes for fd (not owned). NULL on ENOMEM. */
struct logbuf *logbuf_new(int fd, size_t cap);

/* From now on a line waits at most flush_ms: the first line added to an
 * empty buffer arms a timer on base that writes the buffer out. Returns
 * 0, or -1 on ENOMEM (then lines leave only when the buffer is full or
 * flushed). */
int logbuf_start_timer(struct logbuf *b, struct event_base *base, long flush_ms);

/* Appends one line of len bytes (its newline included). The buffer is
 * written out first when the line does not fit; a line longer than the
 * buffer is written on its own. Returns 0, or -1 if a write failed (the
 * lines of that write are dropped). */
int logbuf_add(struct logbuf *b, const char *line, size_t len);

/* Writes out what is buffered. Returns 0, or -1 if the write failed (the
 * buffered lines are dropped). */
int logbuf_flush(struct logbuf *b);

/* Flushes, stops the timer and frees (call before the timer's base is
 * freed). Accepts NULL. */
void logbuf_free(struct logbuf *b);

#endif
