/* proxy.h — the request lifecycle and its hook points.
 *
 * One struct proxy per daemon ties the front end (front.h) to the upstream
 * (upstream.h). Each client request becomes a struct proxy_req that owns its
 * head, its buffered body, its upstream transfer and its outcome. Handlers
 * (fencing, the lock API, an embedded S3 server) plug in at two points:
 *
 *   request head complete ──> handler chain (proxy_handler.on_request)
 *        │ PROXY_PASS      next handler; after the last one: forward
 *        │ PROXY_FORWARD   forward now (the verdict built its fields)
 *        │ PROXY_HANDLED   replied (proxy_req_reply*), or consumes the
 *        │                 body (proxy_req_consume) and replies later
 *        │ PROXY_SUSPEND   decide later: proxy_req_resume(req, action)
 *        v
 *   upstream response head ──> proxy_req_on_response() hook
 *        │ PROXY_RESP_RELAY     relay it (headers may be edited first)
 *        │ PROXY_RESP_REPLACED  the hook replied locally instead
 *        │ PROXY_RESP_RESEND    send the request again (fwd fields reset first)
 *        │ PROXY_RESP_SUSPEND   drop it; decide later with proxy_req_resume
 *        v
 *   request over ──> done hooks (proxy_on_done, proxy_req_on_done)
 *
 * Threading: everything here runs on the event loop thread; an asynchronous
 * handler (e.g. a job on jobs.h) calls proxy_req_resume from the loop
 * (jobs' done callback), never from a worker.
 *
 * Lifetime rules (the only ones a handler needs):
 *   - A req is valid during every callback that receives it.
 *   - After PROXY_SUSPEND / PROXY_RESP_SUSPEND it stays valid, even if the
 *     client disconnects, until the handler calls proxy_req_resume exactly
 *     once (proxy_req_client_gone() says whether anyone still listens).
 *   - After proxy_req_consume, the body callback's end call with ok=1
 *     obliges the handler to reply exactly once; the req stays valid until
 *     it does. An end call with ok=0 (client gone, bad body) is the last
 *     call: the req is freed when it returns; cancel pending work there.
 *   - After a reply completes, or on any other path, the req is freed by
 *     the proxy; handlers keep no pointer to it beyond the rules above. */
#ifndef FENCE_PROXY_H
#define FENCE_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "front.h"
#include "ops/accesslog.h"
#include "upstream.h"

struct proxy;
struct proxy_req;

enum proxy_mode {
	PROXY_MODE_S3 = 0,  /* S3 API: re-sign for upstream, XML error bodies */
	PROXY_MODE_HTTP,    /* any HTTP API: forward auth as is, JSON errors */
};

struct proxy_config {
	enum proxy_mode mode;
	const char *upstream_url;   /* "http://127.0.0.1:9000[/base]"; NULL:
				     * nothing to forward to (501) */
	const char *region;         /* S3 mode signing region */
	const char *access_key;     /* S3 mode upstream credentials */
	const char *secret_key;
	const char *session_token;  /* NULL when none */
	size_t replay_max;          /* request bodies up to this size are kept
				     * so the request can be re-sent (64 KiB) */
	size_t body_window;         /* request body buffered ahead of the
				     * upstream before the client is paused (64 KiB) */
	struct front_limits limits;
	struct upstream_config upstream;
	int no_health_handler;      /* 1: do not register the built-in
				     * /_fence/health handler (another one
				     * answers it) */
};

/* Defaults for everything; mode S3, no upstream, region "us-east-1". */
void proxy_config_default(struct proxy_config *cfg);

/* ---- the daemon ------------------------------------------------------- */

/* Creates the proxy on base (strings in cfg are copied). Listeners are
 * added with proxy_listen. Returns NULL with a message in err. */
struct proxy *proxy_new(struct event_base *base, const struct proxy_config *cfg,
			char *err, size_t errlen);

/* Listens on "ADDR:PORT". Returns 0 or -1 with a message in err. */
int proxy_listen(struct proxy *p, const char *addr, char *err, size_t errlen);

/* TLS on every listener for connections accepted from now on (see
 * front_server_set_tls); NULL: plain TCP. */
void proxy_set_tls(struct proxy *p, struct ssl_ctx_st *ctx);

/* A reload's limits and upstream timeouts (front_server_set_limits,
 * upstream_set_timeouts); the rest of cfg is not read. On p's loop only. */
void proxy_set_limits(struct proxy *p, const struct proxy_config *cfg);

/* Graceful stop: no new connections, requests in flight finish (bounded by
 * timeout_ms), then done(arg) runs on the loop. */
void proxy_drain(struct proxy *p, long timeout_ms, void (*done)(void *arg), void *arg);

/* Aborts whatever is left and frees. Accepts NULL. */
void proxy_free(struct proxy *p);

enum proxy_mode proxy_mode(const struct proxy *p);

/* Requests in flight (head received, not yet done). */
size_t proxy_inflight(const struct proxy *p);
/* Client connections open now, and accepted since the start. */
void proxy_connections(const struct proxy *p, size_t *open, unsigned long long *accepted);

/* ---- request handlers ------------------------------------------------- */

enum proxy_action {
	PROXY_PASS = 0,   /* not mine: ask the next handler */
	PROXY_FORWARD,    /* forward to upstream now */
	PROXY_HANDLED,    /* replied, or proxy_req_consume'd (reply later) */
	PROXY_SUSPEND,    /* decision pending: proxy_req_resume() later */
};

struct proxy_handler {
	const char *name;  /* for logs: "health", "fence" */
	/* Called once per request, in registration order, when the head is
	 * complete and before any body byte is read (so no "100 Continue" has
	 * been sent yet). Reads the request and builds the forwarded one
	 * (proxy_req_fwd_set). */
	enum proxy_action (*on_request)(struct proxy_req *req, void *arg);
	void *arg;
	/* Header name prefixes this handler owns (NULL-terminated array that
	 * outlives the proxy; NULL: none): on a request that can change state
	 * (any method but GET, HEAD, OPTIONS: reads pass untouched) a client's
	 * field under one is never forwarded, only what a handler sets with
	 * proxy_req_fwd_set. */
	const char *const *owns;
};

/* Appends a handler to the chain (the struct is copied). Returns 0 or -1. */
int proxy_add_handler(struct proxy *p, const struct proxy_handler *h);

/* Ends a PROXY_SUSPEND (or PROXY_RESP_SUSPEND): action is PROXY_FORWARD
 * (after a response suspend: re-send, see proxy_req_can_resend),
 * PROXY_HANDLED (a reply was made or proxy_req_consume called) or
 * PROXY_PASS (continue the chain after this handler; not after a response
 * suspend). Call exactly once, from the loop. If the client has gone, the
 * req is freed and nothing else happens. */
void proxy_req_resume(struct proxy_req *req, enum proxy_action action);

/* 1 when the client disconnected; replies are then dropped. */
int proxy_req_client_gone(const struct proxy_req *req);

/* ---- the request as received: read-only --------------------------------
 *
 * Two objects, never one edited in place. The client's request is what
 * front.c parsed (hop-by-hop fields already removed, front.h), normalised
 * once by the protocol layer before anyone judges it (proxy_req_normalize_*),
 * then read-only. The forwarded request is built from it by the handlers'
 * verdict (proxy_req_fwd_set) and serialised exactly (proxy_req_fwd_headers):
 * nothing between the verdict and the socket drops, adds or changes a field. */

/* "req-00000001": unique in this process, for logs and RequestId. */
const char *proxy_req_id(const struct proxy_req *req);
const char *proxy_req_method(const struct proxy_req *req);
/* Percent-encoded path as sent ("/bucket/key"); query without '?' or NULL
 * (after proxy_req_normalize_query, the normalised one). */
const char *proxy_req_path(const struct proxy_req *req);
const char *proxy_req_query(const struct proxy_req *req);
/* The client's "ADDR:PORT" ("[V6]:PORT"), even after it went away. */
const char *proxy_req_peer(const struct proxy_req *req);

/* Who the request is from, once authenticated: the access key that signed
 * it (S3 mode) or the client's name (HTTP mode), copied; for the access
 * log. Returns 0 or -1 (ENOMEM, nothing recorded). */
int proxy_req_set_principal(struct proxy_req *req, const char *principal);
/* The principal set above, or NULL (anonymous, or no authentication). */
const char *proxy_req_principal(const struct proxy_req *req);
/* First value of a header of the client's request (case-insensitive
 * name), or NULL. */
const char *proxy_req_header(const struct proxy_req *req, const char *name);
/* Every header of the client's request, in arrival order. */
const struct front_hdrs *proxy_req_headers(const struct proxy_req *req);
/* Content-Length, or -1 when the body is chunked or absent. */
int64_t proxy_req_content_length(const struct proxy_req *req);
/* 1 if the request has a body (chunked or Content-Length > 0). */
int proxy_req_has_body(const struct proxy_req *req);

/* The protocol layer's one normalisation of the request as received, for
 * what the protocol carries elsewhere than HTTP does (SigV2 presigned
 * URLs carry x-amz-* headers as query parameters): adds a header / replaces
 * the query (without '?'; NULL or "" none; the access log keeps the
 * client's). Only before a model is attached (proxy_req_set_model), i.e.
 * before any handler judged the request. Return 0, or -1 (ENOMEM, or too
 * late: nothing changed). */
int proxy_req_normalize_header(struct proxy_req *req, const char *name, const char *value);
int proxy_req_normalize_query(struct proxy_req *req, const char *query);

/* ---- the forwarded request: built by the verdict -------------------------
 *
 * What goes upstream (or to the embedded store) is: the client's fields,
 * less those the proxy owns (Host, Content-Length, Transfer-Encoding,
 * Expect; in S3 mode Authorization, X-Amz-Date, X-Amz-Security-Token and
 * X-Amz-Content-Sha256, which the re-signing sets; on a write, every name
 * under a handler's owned prefix) and less every name set or removed below; then
 * each field set below, in the order set; then the proxy's own. */

/* Sets (value != NULL: replaces every field of that name) or removes
 * (value NULL) a field of the forwarded request; the client's request is
 * unchanged. Refuses (-1, nothing changed) the framing and hop-by-hop
 * names and, in S3 mode, the signature's (Authorization, X-Amz-Date,
 * X-Amz-Security-Token); X-Amz-Content-Sha256 is the payload hash the
 * re-signing uses. Returns 0 or -1 (ENOMEM, or a refused name). */
int proxy_req_fwd_set(struct proxy_req *req, const char *name, const char *value);
/* The value the forwarded request carries for name (case-insensitive),
 * before the proxy's own fields: what a handler set, else the client's
 * unless owned or removed; NULL when none. */
const char *proxy_req_fwd_header(const struct proxy_req *req, const char *name);
/* Appends to out (borrowed strings, valid while req lives and nothing is
 * set) the forwarded request's fields in the order they are sent, without
 * the proxy's own (Host, framing, Expect, the signature). Returns 0 or -1
 * (ENOMEM). */
int proxy_req_fwd_headers(const struct proxy_req *req, struct front_hdrs *out);

/* Per-request state for a handler: freed with free_fn (may be NULL) when
 * the req is freed or the ctx replaced. */
void proxy_req_set_ctx(struct proxy_req *req, void *ctx, void (*free_fn)(void *));
void *proxy_req_ctx(const struct proxy_req *req);

/* A protocol layer's parse of the request as received (the S3 request
 * model, s3/s3req.h), shared by every handler of the chain: attached once,
 * freed with free_fn (may be NULL) when the req is freed or the model
 * replaced. This layer never looks inside it. */
void proxy_req_set_model(struct proxy_req *req, void *model, void (*free_fn)(void *));
void *proxy_req_model(const struct proxy_req *req);

/* ---- replying locally ------------------------------------------------- */

/* A whole response. hdrs (may be NULL) must not hold Content-Length,
 * Transfer-Encoding or Connection; content_type may be NULL. The request
 * body, if not read, is skipped (or the connection closed if it is too
 * big). Returns 0, or -1 if a response was already started. */
int proxy_req_reply(struct proxy_req *req, int status, const struct front_hdrs *hdrs,
		    const char *content_type, const void *body, size_t len);

/* An error response in the mode's format: S3 XML
 * (<Error><Code>code</Code><Message>...</Message>...) or JSON
 * ({"error":code,"message":...}). extra_hdrs may be NULL. */
int proxy_req_reply_error(struct proxy_req *req, int status, const char *code,
			  const char *message, const struct front_hdrs *extra_hdrs);

/* Streaming reply: start, any number of writes/files, end. content_length
 * -1 streams chunked. Back-pressure: when proxy_req_reply_pending() is
 * high, wait for the drain callback before writing more. */
int proxy_req_reply_start(struct proxy_req *req, int status, const struct front_hdrs *hdrs,
			  int64_t content_length);
int proxy_req_reply_write(struct proxy_req *req, const void *data, size_t len);
/* Sends len bytes of fd from offset (sendfile); takes ownership of fd. */
int proxy_req_reply_file(struct proxy_req *req, int fd, int64_t offset, int64_t len);
/* Ends the response; the req is freed afterwards (do not touch it). */
void proxy_req_reply_end(struct proxy_req *req);
size_t proxy_req_reply_pending(const struct proxy_req *req);
/* One call to fn once queued output drained below half the window. */
void proxy_req_on_drain(struct proxy_req *req, void (*fn)(struct proxy_req *req, void *arg),
			void *arg);

/* ---- consuming the body locally (lock API, embedded S3 server) -------- */

/* Body bytes: return 0 to go on, 1 to pause reading until
 * proxy_req_consume_resume, -1 to fail (the proxy answers 500 unless the
 * handler already replied). end(ok=1): the body is complete, reply now or
 * later. end(ok=0): client gone or bad body; last call. */
typedef int (*proxy_body_fn)(struct proxy_req *req, const char *data, size_t len, void *arg);
typedef void (*proxy_body_end_fn)(struct proxy_req *req, int ok, void *arg);

/* Reads the body into the handler's callbacks (sends "100 Continue" if the
 * client asked). Call from on_request (then return PROXY_HANDLED) or
 * before proxy_req_resume(req, PROXY_HANDLED). Returns 0 or -1. */
int proxy_req_consume(struct proxy_req *req, proxy_body_fn on_body,
		      proxy_body_end_fn on_end, void *arg);
void proxy_req_consume_resume(struct proxy_req *req);

/* ---- transforming the request body (authentication) -------------------
 *
 * A body filter sits between the client's body and whatever takes it (the
 * upstream transfer, or proxy_req_consume's callbacks): feed() receives the
 * client's bytes and passes on what should go further with
 * proxy_req_filter_emit(); end() runs when the client's body is complete
 * and emits the rest. Either returns -1 with *err filled to refuse the
 * body: the proxy then cancels the upstream transfer (a filter that holds
 * back its last byte until end() thus guarantees that nothing incomplete
 * lands upstream when the forwarded length is known) or ends the local
 * consumer with ok=0, and answers err. When the emitted length is 0 the
 * upstream request starts only after end() succeeded. */
struct proxy_body_error {
	int status;
	const char *code;          /* static */
	char message[192];
};

struct proxy_body_filter {
	int (*feed)(struct proxy_req *req, const char *data, size_t len, void *arg,
		    struct proxy_body_error *err);
	int (*end)(struct proxy_req *req, void *arg, struct proxy_body_error *err);
	void (*free_fn)(void *arg);  /* when the req is freed; may be NULL */
	void *arg;
};

/* Installs f (copied) from on_request, before the body is read. length is
 * the emitted body's length, forwarded as Content-Length and returned by
 * proxy_req_content_length (-1: unknown, forwarded like the client's
 * framing). Returns 0, or -1 if too late or a filter is already set. */
int proxy_req_set_body_filter(struct proxy_req *req, const struct proxy_body_filter *f,
			      int64_t length);

/* From feed/end only: passes data on. Returns 0, or -1 once the request is
 * over (stop emitting). */
int proxy_req_filter_emit(struct proxy_req *req, const char *data, size_t len);

/* ---- the upstream response -------------------------------------------- */

enum proxy_resp_action {
	PROXY_RESP_RELAY = 0,   /* relay (with any header edits) */
	PROXY_RESP_REPLACED,    /* the hook called proxy_req_reply* */
	PROXY_RESP_RESEND,      /* forward again; only if proxy_req_can_resend */
	PROXY_RESP_SUSPEND,     /* drop this response; proxy_req_resume later */
};

/* Called with the upstream's final response head, before anything is sent
 * to the client. The upstream body of a response that is not relayed is
 * dropped (the transfer is cancelled). One hook per request; set it from
 * on_request or before resuming. */
typedef enum proxy_resp_action (*proxy_response_fn)(struct proxy_req *req, void *arg);
void proxy_req_on_response(struct proxy_req *req, proxy_response_fn fn, void *arg);

/* The upstream response status / headers (valid in the response hook and
 * while relaying). Edits change what is relayed. */
int proxy_req_resp_status(const struct proxy_req *req);
const char *proxy_req_resp_header(const struct proxy_req *req, const char *name);
int proxy_req_resp_set_header(struct proxy_req *req, const char *name, const char *value);

/* A read-only tap on the upstream response body: fn sees every chunk as
 * it is relayed to the client (after the response hook chose RELAY). For
 * small answers a handler must read (e.g. CreateMultipartUpload's
 * UploadId); it must not keep data beyond the call. */
#define PROXY_HAVE_RESP_BODY_TAP 1
typedef void (*proxy_resp_body_fn)(struct proxy_req *req, const char *data, size_t len,
				   void *arg);
void proxy_req_on_resp_body(struct proxy_req *req, proxy_resp_body_fn fn, void *arg);

/* 1 if the request can be sent again, now or after its first attempt: it
 * has no body, or its whole body is held for it: read to the end and still
 * held (up to replay_max bytes, Content-Length or chunked), or not all read
 * yet but of a known length within replay_max (a re-send then waits for
 * the rest). Bodies larger than replay_max are streamed and cannot be
 * re-sent; before its end, a body of unknown length counts as not
 * re-sendable. */
int proxy_req_can_resend(const struct proxy_req *req);

/* Upstream attempts so far (1 after the first forward). */
int proxy_req_attempts(const struct proxy_req *req);

/* A HEAD of the request's own target: the path it is forwarded to (the
 * upstream's base and the client's path), without its query, sent on the
 * loop's upstream client and, in S3 mode, signed as a forward is. For a
 * handler that must read the object a write would change before deciding
 * (fencing's object compare-and-swap). fn runs once, on the loop, on a
 * later turn (never from inside this call nor from inside an upstream
 * callback): status is the upstream's answer, or 0 when none came, with
 * detail saying why ("" otherwise; a timeout when the whole exchange took
 * longer than timeout_ms, > 0, or the upstream's own timeouts passed first);
 * hdrs is the answer's head (NULL when status is 0), valid during the call
 * only. The request is held until fn has returned. Returns 0, or -1 with
 * a message in err (out of memory, the transfer could not start; no
 * upstream: see proxy_req_can_head): no call follows. */
typedef void (*proxy_head_fn)(struct proxy_req *req, int status, const struct front_hdrs *hdrs,
			      const char *detail, void *arg);
int proxy_req_head_target(struct proxy_req *req, long timeout_ms, proxy_head_fn fn, void *arg,
			  char *err, size_t errlen);
/* 1 if proxy_req_head_target can be asked: the proxy forwards to an
 * upstream (not the embedded store). */
int proxy_req_can_head(const struct proxy_req *req);

/* ---- completion ------------------------------------------------------- */

enum proxy_outcome {
	PROXY_OUT_UPSTREAM = 0,   /* upstream response relayed completely */
	PROXY_OUT_LOCAL,          /* answered locally (a handler or an error) */
	PROXY_OUT_UPSTREAM_ERROR, /* upstream failed: 502/504, or cut mid-body */
	PROXY_OUT_CLIENT_GONE,    /* client left or timed out first */
};

struct proxy_summary {
	const char *id;
	const char *method;
	const char *path;
	const char *query;       /* without '?'; NULL when none */
	const char *peer;        /* the client's "ADDR:PORT" */
	const char *principal;   /* proxy_req_set_principal's; NULL: anonymous */
	const char *user_agent;  /* User-Agent; NULL when none */
	int status;              /* sent to the client; 0 if none */
	int upstream_status;     /* last upstream status; 0 if none */
	uint64_t bytes_in;       /* request body bytes read */
	uint64_t bytes_out;      /* response body bytes queued */
	int64_t duration_us;
	int attempts;
	enum proxy_outcome outcome;
};

typedef void (*proxy_done_fn)(const struct proxy_summary *s, void *arg);

/* The access-log fields the summary knows (request id, client address and
 * identity, method, path, query, user agent, statuses, bytes, duration)
 * into e, the others zeroed: the caller adds the time and what it decided
 * (bucket, key, lock, epochs, verdict). e's strings point into s. */
void proxy_summary_log_entry(const struct proxy_summary *s, struct accesslog_entry *e);

/* Every request, once, when it is over (access log, metrics). Returns 0/-1. */
int proxy_on_done(struct proxy *p, proxy_done_fn fn, void *arg);

/* This request, once, when it is over (before the global hooks). */
void proxy_req_on_done(struct proxy_req *req, proxy_done_fn fn, void *arg);

/* The built-in handler: GET/HEAD /_fence/health -> 200 {"status":"ok"}. */
enum proxy_action proxy_health_handler(struct proxy_req *req, void *arg);

#endif
