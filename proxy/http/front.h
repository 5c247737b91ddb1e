/* front.h — the HTTP/1.1 front end: client connections, request parsing,
 * response framing.
 *
 * Three layers, usable apart:
 *   - struct front_hdrs: an ordered header list (names keep their case,
 *     lookups ignore it);
 *   - struct front_parser: request parsing on top of libhttp-parser plus the
 *     checks it does not do (smuggling, limits, obs-fold). No sockets, no
 *     clock: the fuzz target drives it with bytes;
 *   - struct front_server / struct front_conn: listeners, keep-alive,
 *     pipelining, timeouts, back-pressure and response framing on libevent
 *     bufferevents.
 * The front end knows nothing about upstreams or fencing: it hands each
 * request head to a struct front_ops (implemented by proxy.c) and writes the
 * response it is given. */
#ifndef FENCE_FRONT_H
#define FENCE_FRONT_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

struct evbuffer;

/* ---- header lists ------------------------------------------------------ */

struct front_hdr {
	char *name;     /* as received (case kept), NUL-terminated */
	char *value;    /* leading/trailing blanks trimmed, NUL-terminated */
	uint32_t nlen;  /* strlen(name) */
	uint32_t vlen;  /* strlen(value) */
};

struct front_hdrs_block;

/* A list owns its strings in a few blocks that never move (freed all at
 * once by front_hdrs_clear) and its entries in v: at first inside the
 * first block (or a caller's array, front_hdrs_init), on a malloc'd array
 * of their own once more are needed. A list of {0} is empty and valid;
 * moving the struct (msg->hdrs = parsed) keeps it valid unless v is the
 * caller's array. Nobody writes through name or value. */
struct front_hdrs {
	struct front_hdr *v;
	size_t n, cap;
	struct front_hdrs_block *blocks; /* string storage, newest first */
	int v_shared;                    /* v is not an allocation of its own */
};

/* Starts h empty with the caller's array of cap entries for its first
 * headers (no allocation until more are added or a string is copied).
 * buf must outlive h, and h must not be moved; front_hdrs_clear as usual. */
void front_hdrs_init(struct front_hdrs *h, struct front_hdr *buf, size_t cap);

/* First value of name (case-insensitive), or NULL. Values stay valid until
 * front_hdrs_clear (a deleted header's strings too). */
const char *front_hdrs_get(const struct front_hdrs *h, const char *name);

/* 1 if e's name is name (case-insensitive; len = strlen(name)). */
static inline int front_hdr_is(const struct front_hdr *e, const char *name, size_t len)
{
	if (e->nlen != len)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char a = (unsigned char)e->name[i], b = (unsigned char)name[i];

		if (a != b && ((a | 0x20) != (b | 0x20) || (unsigned char)((a | 0x20) - 'a') > 25))
			return 0;
	}
	return 1;
}

/* front_hdr_is with a string literal. */
#define FRONT_HDR_IS(e, lit) front_hdr_is((e), "" lit, sizeof(lit) - 1)

/* Number of headers called name. */
size_t front_hdrs_count(const struct front_hdrs *h, const char *name);

/* Appends a header (copies both strings). Returns 0, or -1 on ENOMEM. */
int front_hdrs_add(struct front_hdrs *h, const char *name, const char *value);

/* Like front_hdrs_add with explicit lengths. */
int front_hdrs_addn(struct front_hdrs *h, const char *name, size_t nlen,
		    const char *value, size_t vlen);

/* Appends a header without copying: name and value (NUL-terminated, of
 * lengths nlen and vlen) must stay valid and unchanged as long as h is
 * used. For a list that is built, read and cleared while another list (or
 * a constant) holds the strings. Returns 0, or -1 on ENOMEM. */
int front_hdrs_add_ref(struct front_hdrs *h, const char *name, size_t nlen,
		       const char *value, size_t vlen);

/* Removes every header called name; then, if value is not NULL, appends
 * name: value. Returns 0, or -1 on ENOMEM. */
int front_hdrs_set(struct front_hdrs *h, const char *name, const char *value);

/* Removes every header called name (their strings stay allocated until
 * front_hdrs_clear). Returns how many were removed. */
size_t front_hdrs_del(struct front_hdrs *h, const char *name);

/* Frees every header and zeroes h. Accepts NULL. */
void front_hdrs_clear(struct front_hdrs *h);

/* Removes the hop-by-hop fields (RFC 9110 7.6.1): Connection, every field
 * a Connection line names, and Keep-Alive, TE, Trailer, Upgrade and
 * Proxy-* whatever it says. Done once, when a message is parsed, so that
 * what handlers judge is what can be forwarded and nothing downstream
 * consults Connection again. Returns 0, or -1 with a static reason in *why
 * (h unchanged) when a Connection line names Host, Content-Length or
 * Transfer-Encoding (the framing cannot be hop-by-hop: refuse the message)
 * or there are more than 16 Connection lines. */
int front_hdrs_drop_hop_by_hop(struct front_hdrs *h, const char **why);

/* 1 if e is hop-by-hop whatever Connection says (the fixed set above). */
int front_hdr_hop_by_hop(const struct front_hdr *e);

/* 1 if the comma-separated list value contains token (case-insensitive). */
int front_list_has(const char *value, const char *token);

/* The next token of the comma-separated list at *pos (spaces and tabs
 * around it trimmed, empty elements skipped): returns its start with its
 * length in *len and moves *pos past it, or NULL at the end. */
const char *front_list_next(const char **pos, size_t *len);

/* ---- request parsing ----------------------------------------------------- */

struct front_limits {
	size_t header_bytes;      /* request line + headers; over -> 431 (default 16 KiB) */
	size_t header_count;      /* over -> 431 (default 100) */
	size_t url_bytes;         /* request target; over -> 414 (default 8 KiB) */
	long idle_timeout_ms;     /* keep-alive wait for a next request (60 s) */
	long header_timeout_ms;   /* first byte to end of head; over -> 408 (10 s) */
	long body_timeout_ms;     /* no request body byte for this long -> 408 (60 s) */
	size_t body_min_rate;     /* bytes/s a body must average once body_timeout_ms
				   * of grace is used up: by body start + grace +
				   * received / rate, or 408 (1024; 0: no minimum).
				   * Time paused for back-pressure does not count. */
	long send_timeout_ms;     /* client reads nothing for this long -> close (60 s) */
	size_t input_buffer;      /* bytes read ahead from a client (64 KiB) */
	size_t output_buffer;     /* response bytes queued before back-pressure (64 KiB) */
	size_t discard_max;       /* unread request body a keep-alive connection may skip (1 MiB) */
	size_t max_connections;   /* open connections; at the limit the listeners pause
				   * (clients wait in the backlog); 0: no limit (default) */
	int reuse_port;           /* SO_REUSEPORT on the listeners: each event-loop
				   * worker binds its own socket to the same
				   * address and the kernel spreads connections */
};

/* Fills l with the defaults above. */
void front_limits_default(struct front_limits *l);

/* One parsed request head. Owned by the front end until handed over in
 * front_ops.on_head; then owned by the callee until front_msg_free.
 * method, target and path live in msg's own allocation (never freed or
 * replaced apart); query is an allocation of its own (it may be replaced:
 * free the old one). */
struct front_msg {
	char *method;           /* "GET" */
	char *target;           /* request target as sent: "/bucket/key?x=1" */
	char *path;             /* percent-encoded path, no query: "/bucket/key" */
	char *query;            /* without '?', NULL when none */
	unsigned http_major, http_minor;
	struct front_hdrs hdrs; /* every header as received (trailers dropped) */
	int64_t content_length; /* -1 when none or chunked */
	int chunked;            /* Transfer-Encoding: chunked */
	int has_body;           /* chunked, or content_length > 0 */
	int keep_alive;         /* the client allows another request after this one */
	int expect_continue;    /* Expect: 100-continue */
	int head;               /* method is HEAD: the response has no body */
};

/* Frees msg and everything in it. Accepts NULL. */
void front_msg_free(struct front_msg *msg);

enum front_parse_status {
	FRONT_PARSE_OK = 0,   /* consumed what it could; call again with more */
	FRONT_PARSE_PAUSED,   /* a callback paused; resume with front_parser_resume */
	FRONT_PARSE_ERROR,    /* the connection must answer err_status and close */
};

struct front_parser_cbs {
	/* The head is complete and checked. Ownership of msg passes to the
	 * callee. The parser pauses after this call: body bytes are not
	 * parsed until front_parser_resume. Return 0, or -1 to fail with 500. */
	int (*on_head)(void *arg, struct front_msg *msg);
	/* Body bytes (de-chunked). Return 0 to go on, 1 to pause the parser
	 * after these bytes, -1 to fail with 500. */
	int (*on_body)(void *arg, const char *data, size_t len);
	/* The body (and trailers) ended. The parser pauses after this call so
	 * a pipelined request is parsed only when asked (front_parser_resume). */
	int (*on_end)(void *arg);
	void *arg;
};

struct front_parser;

/* A parser for one connection's requests. Returns NULL on ENOMEM. The
 * limits are copied. */
struct front_parser *front_parser_new(const struct front_limits *limits,
				      const struct front_parser_cbs *cbs);

/* Frees the parser (and a head being parsed). Accepts NULL. */
void front_parser_free(struct front_parser *p);

/* Feeds bytes; *consumed receives how many were used (the rest must be fed
 * again later). Returns FRONT_PARSE_OK when all were consumed,
 * FRONT_PARSE_PAUSED when a callback paused the parser (*consumed may be
 * less than len), FRONT_PARSE_ERROR on bad input: front_parser_error gives
 * the status to answer (400, 405, 408, 413, 414, 417, 431, 500, 501, 505)
 * and a reason. A paused or failed parser consumes nothing. */
enum front_parse_status front_parser_feed(struct front_parser *p,
					  const char *data, size_t len,
					  size_t *consumed);

/* The bytes of the current body the parser still expects, when it is a
 * Content-Length body past its head (not chunked, no error); else 0. */
uint64_t front_parser_body_left(const struct front_parser *p);

/* What front_parser_feed_taken found in the bytes it consumed: the body's
 * bytes are data[off..off+len) (before them, the end of the head; after
 * them, nothing of this request); ended: the body ended there. */
struct front_taken {
	size_t off, len;
	int ended;
};

/* front_parser_feed for a Content-Length body whose bytes the caller
 * delivers itself (it moves them out of its input instead of having
 * on_body copy them): len at most front_parser_body_left (else
 * FRONT_PARSE_ERROR, nothing consumed). The parser passes over them without
 * calling on_body and says where they are in *body; when the body ends
 * there it does not call on_end either but sets body->ended (and pauses
 * as after on_end), so that the caller delivers the bytes first and then
 * ends the body. */
enum front_parse_status front_parser_feed_taken(struct front_parser *p,
						const char *data, size_t len,
						size_t *consumed, struct front_taken *body);

/* Pauses the parser as an on_body returning 1 does. */
void front_parser_pause(struct front_parser *p);

/* Unpauses after on_head, a paused on_body, or on_end (then the parser
 * expects the next request). */
void front_parser_resume(struct front_parser *p);

/* The status and lowercase reason of the last FRONT_PARSE_ERROR. */
int front_parser_error(const struct front_parser *p, const char **reason);

/* 1 while inside a request head (after its first byte), 0 between requests
 * and in a body. */
int front_parser_in_head(const struct front_parser *p);

/* 1 between requests (no byte of a next request seen). */
int front_parser_idle(const struct front_parser *p);
/* 1 while the parser is paused after a head or the end of a message (until
 * front_parser_resume). */
int front_parser_paused(const struct front_parser *p);

/* ---- connections --------------------------------------------------------- */

struct front_server;
struct front_conn;

/* Why a request ended before its response was done. */
enum front_abort {
	FRONT_ABORT_CLIENT_GONE,  /* EOF, reset or write error */
	FRONT_ABORT_TIMEOUT,      /* body or send timeout */
	FRONT_ABORT_BAD_BODY,     /* malformed chunked body */
	FRONT_ABORT_SHUTDOWN,     /* the server is stopping and the drain time ran out */
};

/* What the front end calls; implemented by the request lifecycle (proxy.c).
 * All calls come from the event loop, never nested in a front_conn_* call. */
struct front_ops {
	/* A request head arrived; msg is owned by the callee from here on.
	 * Returns the request's handle, passed to the calls below. NULL means
	 * "could not set up": the front end answers 500 and closes. The callee
	 * may answer at once (front_conn_reply + front_conn_request_done)
	 * before returning. The body is not read until front_conn_read_body(). */
	void *(*on_head)(void *arg, struct front_conn *conn, struct front_msg *msg);
	/* Body bytes of req. Return 0, or 1 to stop reading until
	 * front_conn_read_body(). */
	int (*on_body)(void *req, const char *data, size_t len);
	/* Optional: body bytes of req that are the first len bytes of src (a
	 * Content-Length body, read into the connection's input): the callee
	 * removes them from src, moving its chains rather than copying where
	 * it can. Same return as on_body. NULL: on_body gets every byte. */
	int (*on_body_buf)(void *req, struct evbuffer *src, size_t len);
	/* The body of req ended (also called, with nothing before, for
	 * requests without a body once reading is enabled). */
	void (*on_body_end)(void *req);
	/* The client side output drained below the low mark, after
	 * front_conn_want_drain(). */
	void (*on_drain)(void *req);
	/* The request cannot complete: the connection is going away. The
	 * callee must not call front_conn_* for this conn again. Called at
	 * most once per request, never after front_conn_request_done(). */
	void (*on_abort)(void *req, enum front_abort why);
	/* Formats an error body for a response the front end makes itself
	 * (400, 408, 431, ...): writes it to buf (NUL-terminated) and returns
	 * its Content-Type. code is a short name ("RequestTimeout"). */
	const char *(*error_body)(void *arg, int status, const char *code,
				  const char *message, char *buf, size_t buflen);
	void *arg;
};

/* Creates a server on base. limits are copied (NULL: defaults). Returns NULL
 * with a message in err. */
struct front_server *front_server_new(struct event_base *base,
				      const struct front_limits *limits,
				      const struct front_ops *ops,
				      char *err, size_t errlen);

/* Starts listening on "ADDR:PORT" ("127.0.0.1:8080", "[::1]:8080",
 * ":8080" = all IPv4 addresses). Returns 0, or -1 with a message in err. */
int front_server_listen(struct front_server *s, const char *addr,
			char *err, size_t errlen);

/* TLS for every listener from now on: connections accepted later use ctx
 * (a reference is taken; the previous context is released, connections
 * already open keep theirs). NULL: plain TCP. Call before listening, and
 * again on a reload to pick up renewed certificates. */
struct ssl_ctx_st;
void front_server_set_tls(struct front_server *s, struct ssl_ctx_st *ctx);

/* A reload's limits: header_count, url_bytes, the four timeouts and
 * body_min_rate are taken from l, and header_bytes when
 * front_header_bytes_live allows it. Timeouts apply from each connection's
 * next wait, the head limits from the next connection. The buffers,
 * max_connections and reuse_port stay as they were made (the listeners and
 * connections own them). On s's loop only. */
void front_server_set_limits(struct front_server *s, const struct front_limits *l);

/* 1 if a front end made with header_bytes at_start can take next at a
 * reload: libhttp-parser's own head size, a process-wide backstop, is set
 * once at the start. Pure. */
int front_header_bytes_live(size_t at_start, size_t next);

/* Graceful stop: closes the listeners, closes idle connections, lets
 * requests in flight finish (their responses carry Connection: close).
 * done(arg) is called from the loop once no connection is left, or after
 * timeout_ms, when the remaining ones are aborted. */
void front_server_drain(struct front_server *s, long timeout_ms,
			void (*done)(void *arg), void *arg);

/* Open client connections, and those accepted since the start. */
size_t front_server_conns(const struct front_server *s);
unsigned long long front_server_accepted(const struct front_server *s);

/* Closes everything (aborting requests in flight) and frees. Accepts NULL. */
void front_server_free(struct front_server *s);

/* The client's address as "1.2.3.4:5678". */
const char *front_conn_peer(const struct front_conn *c);

/* Starts (or resumes) reading the current request's body. Sends
 * "100 Continue" first if the client asked for it and no response has
 * started. For a request without a body, on_body_end follows. */
void front_conn_read_body(struct front_conn *c);

/* 1 when the whole request body has been read. */
int front_conn_body_done(const struct front_conn *c);

/* Response head. hdrs are written as given, except that the front end
 * writes the framing itself: Content-Length when content_length >= 0,
 * otherwise Transfer-Encoding: chunked (or close-delimited for HTTP/1.0
 * clients); and Connection: close when the connection will close. Callers
 * must not put Content-Length, Transfer-Encoding or Connection in hdrs.
 * no_body: a response to HEAD, 1xx/204/304: the head (with
 * Content-Length when >= 0) is all. force_close: close after this
 * response. Returns 0, or -1 if a response was already started. */
int front_conn_send_head(struct front_conn *c, int status, const char *reason,
			 const struct front_hdrs *hdrs, int64_t content_length,
			 int no_body, int force_close);

/* Response body bytes (chunk-framed when needed). Never blocks; check
 * front_conn_output_len for back-pressure. Returns 0, or -1 when the
 * connection is gone or more than Content-Length would be sent. */
int front_conn_send_body(struct front_conn *c, const void *data, size_t len);

/* Response body from a file range (sendfile where possible); the front end
 * takes ownership of fd and closes it. Returns 0 or -1 (fd closed). */
int front_conn_send_file(struct front_conn *c, int fd, int64_t offset, int64_t len);

/* Ends the response. If fewer bytes than Content-Length were sent, the
 * connection is closed (the client sees a truncated response). */
void front_conn_send_end(struct front_conn *c);

/* A complete response in one call: head, body (may be NULL) and end. */
void front_conn_reply(struct front_conn *c, int status, const struct front_hdrs *hdrs,
		      const char *content_type, const void *body, size_t len,
		      int force_close);

/* Closes the connection without finishing the response (an upstream broke
 * after the head was relayed). The request is over: no on_abort follows. */
void front_conn_abort(struct front_conn *c);

/* Bytes queued to the client and not yet sent. */
size_t front_conn_output_len(const struct front_conn *c);

/* Asks for one on_drain call once the queued output falls below the low
 * mark (immediately on the next loop turn if it already is). */
void front_conn_want_drain(struct front_conn *c);

/* 1 once a response head has been sent for the current request. */
int front_conn_response_started(const struct front_conn *c);

/* The proxy is finished with the current request (response ended or
 * aborted): the front end forgets req, skips any unread body (or closes)
 * and moves on to the next request. No front_ops call for req follows. */
void front_conn_request_done(struct front_conn *c);

#endif
