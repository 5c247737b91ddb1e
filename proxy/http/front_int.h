/* front_int.h — what the front end's connection files share (front.c:
 * connections, timeouts, accepting; front_server.c: the server;
 * front_send.c: the writes the proxy asks for; front_io.c: reads and
 * immediate writes on plain TCP): the connection and server structs and
 * the helpers they call. Internal to proxy/http/front*.c. */
#ifndef FENCE_FRONT_INT_H
#define FENCE_FRONT_INT_H

#include <stdint.h>
#include <sys/types.h>

#include <event2/bufferevent.h>
#include <openssl/ssl.h>

#include "front.h"

#define LINGER_MS       2000
#define LINGER_MAX      (1024 * 1024)

enum conn_state {
	CONN_IDLE,     /* waiting for (the rest of) a request head */
	CONN_REQUEST,  /* a request is with the proxy */
	CONN_DISCARD,  /* response done; skipping the rest of the request body */
	CONN_CLOSING,  /* flushing the output, then lingering close */
	CONN_LINGER,   /* write side shut; reading and dropping until EOF */
};

struct front_server {
	struct event_base *base;
	struct front_limits lim;
	size_t header_bytes_at_start; /* front_header_bytes_live */
	struct front_ops ops;
	struct listen_set *listen;
	struct front_conn *conns;
	size_t nconns;
	int draining;
	struct event *drain_timer;
	void (*drain_done)(void *arg);
	void *drain_arg;
	SSL_CTX *tls;         /* NULL: plain TCP; else every listener speaks TLS */
	int accept_paused;    /* at max_connections: listeners paused */
	unsigned long long accepted; /* connections accepted so far */
};

struct front_conn {
	struct front_server *srv;
	struct front_conn *prev, *next;
	struct bufferevent *bev;
	struct front_parser *parser;
	struct event *timer;
	struct event *kick;
	struct event *rd;     /* plain TCP: the socket's read event (front_io.c);
			       * NULL on TLS, where the bufferevent reads */
	int rd_want;          /* reading is on (EOF, an error turn it off) */
	int kicked;           /* kick is active */
	int busy;             /* in a callback that processes and settles
			       * before it returns: a kick is done there */
	int rekick;           /* a kick was asked for while busy */
	int rd_added;         /* rd is added: rd_want and the input has room */
	char peer[64];
	enum conn_state state;

	/* the current request; req is the proxy's handle while it has one */
	void *req;
	int req_released;     /* front_conn_request_done() was called */
	int http10;
	int keep_alive;
	int expect_continue;
	int continue_sent;
	int body_reading;     /* the proxy asked for the body */
	int body_stop;        /* the proxy's on_body asked to stop */
	int body_done;
	int64_t content_length;
	int chunked;
	int has_body;
	uint64_t body_received;
	uint64_t body_base;   /* body_received when the rate clock started */

	/* the current response */
	int resp_started;
	int resp_ended;
	int resp_chunked;
	int resp_no_body;
	int resp_close;
	int64_t resp_length;
	int64_t resp_sent;
	int want_drain;

	int write_armed;      /* plain TCP: EV_WRITE enabled for output the
			       * socket did not take at once (TLS: always on) */
	int eof;              /* the client shut its write side */
	int dead;             /* free at the next settle */
	enum front_abort dead_why;
	size_t lingered;

	/* monotonic milliseconds of the last progress of each kind */
	int64_t t_idle, t_head, t_read, t_write, t_linger;
	/* the body's rate clock: started when the body is asked for, moved on
	 * by the time reading was paused for back-pressure (t_pause: since when) */
	int64_t t_body, t_pause;
	/* the deadline the timer is set for (0: not set); a later one waits
	 * for it to fire: conn_timeout_cb looks again and sets it anew */
	int64_t t_armed;
};

/* Frees c, telling the proxy first if it still holds a request. */
void fconn_free(struct front_conn *c, enum front_abort why);
/* The listeners' callback: a new connection (front.c). */
struct evconnlistener;
struct sockaddr;
void fconn_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
		     struct sockaddr *sa, int salen, void *arg);

/* Monotonic milliseconds (the coarse clock: a few ms of resolution). */
int64_t front_now_ms(void);
/* The reason phrase of an HTTP status. */
const char *front_status_reason(int status);
/* Schedules conn_process and conn_settle on the loop (never recursively):
 * a callback of c's own that processes and settles anyway does them once
 * more before it returns instead. */
void fconn_kick(struct front_conn *c);
/* Bytes queued for the client. */
size_t fconn_outlen(const struct front_conn *c);
/* Closes once the output is flushed (lingering close). */
void fconn_close_after_flush(struct front_conn *c);
/* Write progress: the send timeout starts again. */
void fconn_touch_write(struct front_conn *c);
/* The response is over: on to the next request (or close). */
void fconn_next_request(struct front_conn *c);
/* Starts the body's minimum-rate clock. */
void fconn_body_clock_start(struct front_conn *c);

/* Plain TCP reads without libevent's (which asks FIONREAD before every
 * readv): rd, made by fconn_read_init, is added while reading is on and
 * the input buffer is under its cap (limits.input_buffer). */
int fconn_read_init(struct front_conn *c, evutil_socket_t fd, event_callback_fn cb);
/* Turns reading on or off (TLS: the bufferevent's EV_READ). */
void fconn_read_enable(struct front_conn *c, int on);
/* Adds or deletes rd after the input buffer changed. No-op on TLS. */
void fconn_read_sync(struct front_conn *c);
/* rd's callback's read: one readv of up to 16 KiB (64 KiB when c reads a
 * body). Returns the bytes read (*more: 1 when they filled the room, so
 * the socket may hold more), 0 when there was nothing (or no room), or -1
 * at EOF or on a read error with *what set for the event callback
 * (reading is then off). */
ssize_t fconn_read_event(struct front_conn *c, int *more, short *what);

/* Plain TCP, after a read: while c consumes its input at once (a body it
 * reads or skips, input dropped before a close), reads on in pieces of up
 * to 64 KiB within the input buffer's cap, calling process after each.
 * Returns 0, or -1 at EOF or on a read error with *what set for the event
 * callback (reading is then off). No-op on TLS. */
int fconn_read_bulk(struct front_conn *c, void (*process)(struct front_conn *c), short *what);

/* Plain TCP: writes queued output now unless libevent is already waiting
 * to write; arms EV_WRITE for what the socket did not take, disarms it
 * once the output is empty. No-op on TLS. */
void fconn_flush(struct front_conn *c);

#endif
