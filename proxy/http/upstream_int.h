/* upstream_int.h — what upstream.c (transfers), upstream_conn.c (the
 * connection pool, connect, TLS) and upstream_parse.c (response parsing)
 * share. Not a public interface: callers use upstream.h. */
#ifndef FENCE_UPSTREAM_INT_H
#define FENCE_UPSTREAM_INT_H

#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <http_parser.h>
#include <openssl/ssl.h>

#include "upstream.h"

/* Request body bytes asked of read_body at once, and how many request bytes
 * may wait in a connection's output before read_body is asked for more. */
#define UP_BODY_PIECE   ((size_t)64 * 1024)
#define UP_SEND_WINDOW  ((size_t)128 * 1024)
#define UP_SEND_ROUNDS  4   /* windows written per loop turn at most */
/* Response bytes read at once on a plain connection: through a stack
 * buffer, or, while reads fill it, straight into the input buffer. */
#define UP_READ         ((size_t)16 * 1024)
#define UP_READ_BIG     ((size_t)64 * 1024 - 256)
/* A response head larger than this is a bad response (libcurl's limit). */
#define UP_HEAD_MAX     ((size_t)100 * 1024)
/* A transfer cancelled after its answer's head still reads this many body
 * bytes at most, dropped, to keep its connection (upstream_cancel). */
#define UP_DRAIN_MAX    ((size_t)64 * 1024)
/* A pooled connection unused this long is closed (libcurl: 118 s). */
#define UP_IDLE_CONN_MS 118000L

struct evdns_base;
struct up_last_target;

/* A growable byte string with a hard cap. */
struct up_str {
	char *p;
	size_t len, cap;
};

struct upstream {
	struct event_base *base;
	struct upstream_config cfg;
	char *ca_file;               /* owned copy of cfg.ca_file */
	SSL_CTX *ssl_ctx;            /* made at the first https transfer */
	SSL_SESSION *tls_session;    /* to resume, as libcurl's session cache did */
	char *tls_origin;            /* the origin tls_session belongs to */
	struct evdns_base *dns;      /* made at the first host name */
	struct upstream_xfer *xfers; /* every transfer not yet freed */
	struct up_last_target *last_target; /* upstream_head.c's shortcut */
	struct up_conn *idle;        /* pooled connections, most recent first */
	size_t n_idle;
	size_t active;
};

/* One connection. States: connecting (x set, !connected), busy (x set),
 * idle (x NULL, in u->idle: any read event or error frees it). */
struct up_conn {
	struct upstream *u;
	struct up_conn *prev, *next; /* the idle list */
	struct bufferevent *bev;
	struct upstream_xfer *x;     /* the transfer using it, or NULL */
	char *origin;                /* "http://host:port": the pool key */
	unsigned long served;        /* responses completed on it */
	int connected;
	int tls;
	/* plain TCP once connected: reads on rd (upstream_conn.c) instead of
	 * libevent's, which asks FIONREAD before every readv; idle_timer
	 * closes it after UP_IDLE_CONN_MS in the pool (left running while
	 * busy: see idle_timer_cb) */
	struct event *rd;
	struct event *idle_timer;
	int64_t idle_since;          /* when it last went to the pool (ms) */
	int rd_on;
	int rd_big;                  /* the last read filled what it asked */
};

/* The parsed target of a transfer. */
struct up_target {
	char *origin;   /* "https://host:port" */
	char *host;     /* without brackets; in origin's block */
	uint16_t port;
	int tls;
};

/* One transfer. Phases: waiting for a connection (conn NULL or
 * !conn->connected), sending (head queued, body pumped from read_body while
 * !body_done), receiving (head_seen), dead (finished or cancelled: no more
 * callbacks; freed when depth drops to 0). Sending and receiving overlap. */
struct upstream_xfer {
	struct upstream *u;
	struct upstream_xfer *prev, *next;
	struct up_conn *conn;
	struct upstream_ops ops;
	void *arg;
	struct up_target t;
	char *head;                  /* the request head, kept for a retry */
	size_t head_len;
	int64_t body_length;         /* -1 none, -2 chunked, >= 0 exact */
	int64_t body_taken;          /* bytes read_body gave */
	size_t drained;              /* body bytes dropped after a cancel */
	struct event *timer;         /* connect / expect / first byte / idle */
	int64_t t_due;               /* its deadline (monotonic ms), 0: none */
	int64_t t_armed;             /* the deadline it is set for, 0: not set */
	struct event *total;         /* total_timeout_ms, or NULL */
	struct event *kick;          /* deferred work on the loop */
	/* timer and kick are in x's own allocation, after x (upstream_start) */
	struct evbuffer *held;       /* body bytes on_body did not take */
	struct evbuffer *piece;      /* move_body's piece, framed (chunked) */
	http_parser hp;
	struct front_hdrs hdrs;      /* the response head being parsed */
	struct up_str field, value;
	const char *fref, *vref;     /* field/value still in the bytes being parsed */
	size_t fref_len, vref_len;   /* (upstream_parse.c copies them before they go) */
	size_t head_bytes;
	int status;
	int depth;                   /* inside our own code: free later */
	unsigned head_only : 1;      /* HEAD: the response has no body */
	unsigned expect_wait : 1;    /* waiting for 100 Continue */
	unsigned body_done : 1;      /* the whole request is queued */
	unsigned send_paused : 1;    /* read_body said UPSTREAM_BODY_WAIT */
	unsigned recv_paused : 1;    /* on_body said 1 */
	unsigned head_seen : 1;      /* on_head was called */
	unsigned got_bytes : 1;      /* a response byte arrived */
	unsigned in_value : 1;       /* the parser is in a header value */
	unsigned interim : 1;        /* the head being parsed is a 1xx */
	unsigned complete : 1;       /* the final response ended */
	unsigned no_reuse : 1;       /* the connection must not be pooled */
	unsigned reused : 1;         /* the connection served a response before */
	unsigned retried : 1;        /* already moved to a new connection */
	unsigned dead : 1;           /* finished or cancelled */
	unsigned cancelled : 1;      /* no callback at all any more (when not
				      * dead: the answer's rest is drained) */
	unsigned kicked : 1;        /* kick is active */
	unsigned resume_recv : 1;   /* upstream_resume_recv asked */
	unsigned want_expect : 1;   /* send Expect: 100-continue */
	unsigned linked : 1;        /* in u->xfers */
	unsigned dns_connect : 1;   /* connecting by name: TCP_NODELAY once connected */
	unsigned eof_seen : 1;      /* the peer closed; parsed once resumed */
	unsigned events_off : 1;    /* timer and kick deleted (finished) */
	enum upstream_result fail;   /* set by the parser callbacks */
	char detail[256];
};

/* 1 when x's answer has no body whatever its head says: the answer to a
 * HEAD, a 204 or a 304 (RFC 9112 6.3). */
static inline int up_answer_bodyless(const struct upstream_xfer *x)
{
	return x->head_only || x->status == 204 || x->status == 304;
}

/* ---- upstream_conn.c ----------------------------------------------------- */

/* Gives x a connection to its origin: a pooled one (x->reused) or a new
 * one being connected (with x->retried set, never a pooled one). The
 * transfer's callbacks are installed on it. Returns 0, or -1 with
 * x->detail set (the result in *res). */
int up_conn_attach(struct upstream_xfer *x, int fresh, enum upstream_result *res);

/* Takes the connection away from x: pooled if keep is set and it may be
 * (or closed), else closed. */
void up_conn_release(struct upstream_xfer *x, int keep);

/* The connection of x connected: plain TCP reads on its own event from
 * here on. Returns 0, or -1 when out of memory. */
int up_conn_connected(struct up_conn *c);

/* Turns reading on c on or off. */
void up_conn_read(struct up_conn *c, int on);

/* Closes every pooled connection. */
void up_pool_clear(struct upstream *u);

/* A connected socket put in the pool under origin as if a transfer had just
 * connected it (served 0: a failure on it is never retried). For the fuzz
 * target and tests. Returns 0 or -1. */
int up_pool_adopt(struct upstream *u, const char *origin, evutil_socket_t fd);

/* The TLS failure of the connection, in words, into buf. */
void up_conn_tls_error(struct up_conn *c, char *buf, size_t len);

/* ---- upstream_parse.c ---------------------------------------------------- */

/* Readies x's parser for a response on a new or reused connection. */
void up_parse_reset(struct upstream_xfer *x);

enum up_feed {
	UP_FEED_MORE,   /* everything consumed, the response goes on */
	UP_FEED_PAUSED, /* the consumer did not take body bytes */
	UP_FEED_DONE,   /* the final response ended */
	UP_FEED_FAILED, /* x->fail and x->detail say why */
	UP_FEED_DEAD,   /* a callback cancelled or aborted the transfer */
};

/* Parses what in holds (eof: the peer closed after it) and drains what it
 * used; body bytes go to on_body, the head to on_head. */
enum up_feed up_parse_feed(struct upstream_xfer *x, struct evbuffer *in, int eof);

/* Hands the held body bytes to on_body again. Returns UP_FEED_MORE when
 * they were taken, UP_FEED_PAUSED, or UP_FEED_DEAD. */
enum up_feed up_parse_flush_held(struct upstream_xfer *x);

/* Frees what the parser holds. */
void up_parse_clear(struct upstream_xfer *x);

/* ---- upstream_head.c ----------------------------------------------------- */

/* Sets x->t from req->url and builds x->head (x->body_length and
 * x->want_expect set). Returns 0, -1 for a URL that is not one, -2 on
 * ENOMEM. */
int up_head_make(struct upstream_xfer *x, const struct upstream_request *req);

/* Frees what upstream_head.c remembers of u. */
void up_head_forget(struct upstream *u);

/* ---- upstream.c ---------------------------------------------------------- */

/* Connection callbacks for the transfer that owns the connection. */
void up_xfer_read_cb(struct bufferevent *bev, void *arg);
void up_xfer_write_cb(struct bufferevent *bev, void *arg);
void up_xfer_event_cb(struct bufferevent *bev, short what, void *arg);

/* (Re)starts the transfer's timer for its phase (progress). */
void up_xfer_arm(struct upstream_xfer *x);

#endif
