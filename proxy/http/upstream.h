/* upstream.h — HTTP transfers to the upstream server, on the daemon's event
 * loop.
 *
 * A native HTTP/1.1 client on libevent bufferevents (TLS with
 * bufferevent_openssl, responses parsed with libhttp-parser): connections
 * are pooled and reused (keep-alive), request and response bodies stream
 * through callbacks with back-pressure in both directions. A request that
 * fails on a pooled connection before any response byte arrived and before
 * read_body gave any byte is sent once more on a new connection (the peer
 * had closed the idle one); every other failure is reported.
 * This module knows HTTP transport only: no S3, no signing, no fencing. */
#ifndef FENCE_UPSTREAM_H
#define FENCE_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "front.h"

struct evbuffer;
struct upstream;
struct upstream_xfer;

enum upstream_result {
	UPSTREAM_OK = 0,
	UPSTREAM_ABORTED,        /* a callback returned -1 */
	UPSTREAM_CONNECT_FAILED, /* refused, unreachable, name not resolved: 502 */
	UPSTREAM_TIMEOUT,        /* connect, first byte, idle or total: 504 */
	UPSTREAM_SEND_FAILED,    /* the connection broke while sending: 502 */
	UPSTREAM_BAD_RESPONSE,   /* reset, truncated or malformed answer: 502 */
	UPSTREAM_ERROR,          /* anything else (TLS, out of memory): 502 */
};

/* A short lowercase description ("connect failed"). Never NULL. */
const char *upstream_strerror(enum upstream_result res);

struct upstream_config {
	long connect_timeout_ms;    /* TCP (+TLS) connect (5 s) */
	long first_byte_timeout_ms; /* no response head this long after the
				     * last request byte went out (60 s) */
	long idle_timeout_ms;       /* no response byte this long while the
				     * client keeps up (60 s) */
	long total_timeout_ms;      /* whole transfer; 0 = none (default) */
	long expect_timeout_ms;     /* wait for "100 Continue" (1 s) */
	long max_connections;       /* idle connections kept for reuse, per
				     * loop (512: at least the requests a
				     * worker has in flight, or each burst
				     * opens and closes connections) */
	const char *ca_file;        /* NULL: system CAs */
	int insecure;               /* 1: do not verify TLS certificates */
};

/* Fills c with the defaults above. */
void upstream_config_default(struct upstream_config *c);

/* Returned by read_body when no byte is ready yet. */
#define UPSTREAM_BODY_WAIT  ((size_t)-1)
/* Returned by read_body to abort the transfer. */
#define UPSTREAM_BODY_FAIL  ((size_t)-2)

struct upstream_ops {
	/* Copies up to len request body bytes into buf (len is up to 64 KiB;
	 * buf is the connection's output buffer). Returns how many
	 * (>0), 0 at the end of the body (with a known length it is not asked
	 * again once that many were given), UPSTREAM_BODY_WAIT when none is
	 * ready (call upstream_resume_send once some is), UPSTREAM_BODY_FAIL
	 * to abort. */
	size_t (*read_body)(void *arg, char *buf, size_t len);
	/* The final response head (1xx are skipped). hdrs belong to the
	 * transfer and may be edited. Return 0 to receive the body, -1 to
	 * stop (on_done follows with UPSTREAM_ABORTED). */
	int (*on_head)(void *arg, int status, struct front_hdrs *hdrs);
	/* Response body bytes (transfer coding removed, content coding kept).
	 * Return 0 when taken, 1 when not taken: the transfer pauses and the
	 * same bytes come again after upstream_resume_recv; -1 to stop. */
	int (*on_body)(void *arg, const char *data, size_t len);
	/* The end, exactly once per transfer unless it was cancelled; never
	 * from inside upstream_start, upstream_resume_* or upstream_cancel.
	 * A 2xx that arrives before the whole request body went out ends only
	 * once it has (an answer >= 300 stops the body and closes the
	 * connection). The transfer is freed right after this returns.
	 * detail is a short lowercase message (may be ""). */
	void (*on_done)(void *arg, enum upstream_result res, const char *detail);
	/* Optional; when set it is asked instead of read_body (which may
	 * then be NULL). Appends up to
	 * max request body bytes (max is up to 64 KiB) to out, by moving or
	 * referencing the caller's own buffers rather than copying them
	 * (evbuffer_remove_buffer, evbuffer_add_buffer_reference), and
	 * returns how many: out grew by exactly that many bytes, the next
	 * ones of the body, unframed. The other returns as read_body's, with
	 * out unchanged. The bytes must stay valid and unchanged until out
	 * lets them go (a reference keeps them so by itself). */
	size_t (*move_body)(void *arg, struct evbuffer *out, size_t max);
};

struct upstream_request {
	const char *method;
	const char *url;                /* absolute http(s) URL */
	const struct front_hdrs *hdrs;  /* sent as given, Host included; no
					 * Content-Length, Transfer-Encoding
					 * or Expect (set from the fields below) */
	int64_t body_length;            /* -1: no body; -2: unknown length
					 * (sent chunked); >= 0: exact */
	int expect_continue;            /* send Expect: 100-continue */
	int head;                       /* HEAD: the response has no body */
	long total_timeout_ms;          /* > 0: this transfer's whole-exchange
					 * bound, the engine's total_timeout_ms
					 * when that is shorter; 0: the engine's */
};

/* A transfer engine on base. The config is copied (NULL: defaults).
 * Returns NULL with a message in err. */
struct upstream *upstream_new(struct event_base *base, const struct upstream_config *cfg,
			      char *err, size_t errlen);

/* Cancels every transfer (no on_done) and frees. Accepts NULL. */
void upstream_free(struct upstream *u);

/* A reload's timeouts: connect, first byte, idle and total are taken from
 * cfg for every wait armed from now on (a transfer's total deadline is set
 * when it starts). On u's loop only. */
void upstream_set_timeouts(struct upstream *u, const struct upstream_config *cfg);

/* Transfers in flight. */
size_t upstream_active(const struct upstream *u);

/* Starts a transfer; the ops are called from the event loop (never from
 * inside this call), and arg is passed back. req and what it points to
 * (method, url, hdrs) are read only during this call: the request head is
 * written into the transfer's own buffer then (a retry re-sends that), so
 * hdrs may borrow strings that live no longer than the caller's frame. Returns the transfer, or NULL
 * with a message in err (no callback follows). */
struct upstream_xfer *upstream_start(struct upstream *u, const struct upstream_request *req,
				     const struct upstream_ops *ops, void *arg,
				     char *err, size_t errlen);

/* More request body is ready after read_body said UPSTREAM_BODY_WAIT.
 * read_body is asked again on the loop's next turn. */
void upstream_resume_send(struct upstream_xfer *x);

/* The consumer can take body bytes again after on_body returned 1. The
 * held bytes come again on the loop's next turn. */
void upstream_resume_recv(struct upstream_xfer *x);

/* Stops a transfer; no callback follows and x may not be used again. Safe
 * from anywhere, also from inside the transfer's own callbacks. When the
 * whole request went out and the answer's head came, the rest of a short
 * answer (at most 64 KiB of body, UP_DRAIN_MAX: an S3 error document) is read
 * and dropped, and the connection pooled once it ends (within the
 * transfer's own timeouts); otherwise the connection is closed. */
void upstream_cancel(struct upstream_xfer *x);

#endif
