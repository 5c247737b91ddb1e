/* proxy_int.h — what the request lifecycle's files share: the proxy and
 * request structs and the steps one file calls in another (proxy.c: the
 * lifecycle, replies and the handler chain; proxy_forward.c: the upstream
 * transfer; proxy_req.c: accessors; proxy_daemon.c: the proxy object).
 * Internal to proxy/http/proxy*.c. */
#ifndef FENCE_PROXY_INT_H
#define FENCE_PROXY_INT_H

#include <stdint.h>

#include "proxy.h"
#include "front.h"
#include "upstream.h"

struct proxy_hook {
	proxy_done_fn fn;
	void *arg;
};

struct proxy {
	struct event_base *base;
	enum proxy_mode mode;
	size_t replay_max;
	size_t body_window;
	size_t output_window;
	struct front_server *front;
	struct upstream *up;
	char *up_origin;     /* "http://127.0.0.1:9000" */
	char *up_host;       /* Host header value: "127.0.0.1:9000" */
	char *up_base;       /* path prefix without trailing '/', often "" */
	char *region;
	char *access_key, *secret_key, *session_token;
	struct sigv4_signer *signer; /* S3 mode: made at the first forward */
	struct proxy_handler *handlers;
	size_t nhandlers;
	struct proxy_hook *done_hooks;
	size_t ndone_hooks;
	size_t inflight;
};

/* Where a request is. CHAIN: a handler is being asked. SUSPENDED /
 * RESP_SUSPENDED: a handler will call proxy_req_resume. FORWARD: an upstream
 * transfer runs, nothing relayed yet. RELAY: the upstream head went to the
 * client, the body streams. LOCAL: a handler consumes the body. REPLY: a
 * local streaming reply is under way. DONE: finished, waiting for the last
 * reference to go. */
enum req_phase {
	PH_CHAIN,
	PH_SUSPENDED,
	PH_FORWARD,
	PH_RESP_SUSPENDED,
	PH_RELAY,
	PH_LOCAL,
	PH_REPLY,
	PH_DONE,
};

struct proxy_req {
	struct proxy *p;
	struct front_conn *conn;     /* NULL once the client is gone or released */
	struct front_msg *msg;
	char id[32];
	char peer[64];               /* the client's address, kept past the conn */
	char *principal;             /* proxy_req_set_principal; NULL: none */
	char *sent_query;            /* the client's query once
				      * proxy_req_normalize_query replaced it (for
				      * the access log); NULL */
	/* the forwarded request's own fields (proxy_req_fwd_set): those set,
	 * in order, and the name of every field set or removed */
	struct front_hdrs fwd_set;
	struct front_hdrs fwd_named;
	enum req_phase phase;
	int refs;
	int suspend_held;            /* a reference held from SUSPEND to resume */
	int finished;
	int client_gone;
	size_t next_handler;
	int64_t t_start_us;

	/* request body: bytes [0, sent_off) went upstream; while keep_body,
	 * every byte from the first one is still in body (replayable) */
	struct evbuffer *body;
	size_t sent_off;
	int keep_body;
	int body_ended;
	int body_stopped;
	int body_reading;
	uint64_t bytes_in;

	/* upstream */
	struct upstream_xfer *xfer;
	int attempts;
	int upstream_status;
	struct front_hdrs *resp_hdrs; /* the transfer's, valid until it ends */

	/* hooks */
	proxy_response_fn on_response;
	void *on_response_arg;
	proxy_resp_body_fn on_resp_body;
	void *on_resp_body_arg;
	proxy_done_fn on_done;
	void *on_done_arg;
	proxy_body_fn consume_body;
	proxy_body_end_fn consume_end;
	void *consume_arg;
	void (*drain_fn)(struct proxy_req *req, void *arg);
	void *drain_arg;
	void *ctx;
	void (*ctx_free)(void *ctx);
	void *model;                 /* a protocol layer's parse of the request */
	void (*model_free)(void *model);

	/* body filter (proxy_req_set_body_filter): client bytes go through it;
	 * what it emits is the body everyone downstream sees */
	struct proxy_body_filter filter;
	int has_filter;
	int filter_pause;            /* the sink asked to stop during a feed */
	int64_t filtered_length;     /* the emitted body's length, -1 unknown */
	int defer_forward;           /* forward once the (empty) body verified */

	/* outcome */
	int replied;
	int status;
	uint64_t bytes_out;
	enum proxy_outcome outcome;
	int upstream_failed;         /* the local 502/504 answers an upstream failure */
};

/* 1 if the forwarder sets the field e itself (Host, framing, Expect; in S3
 * mode the signature's): never taken from the client or a handler. */
int preq_field_is_proxys(const struct proxy *p, const struct front_hdr *e);

/* The forwarded request's fields, appended to out (borrowed): each field
 * of client that is not hop-by-hop, not named in named and not theirs(e,
 * 1); then each field of set that is not theirs(e, 0). Pure: the one rule
 * proxy_req_fwd_headers applies (and the classification fuzz target checks).
 * Returns 0 or -1 (ENOMEM). */
int preq_fwd_merge(const struct front_hdrs *client, const struct front_hdrs *set,
		   const struct front_hdrs *named,
		   int (*theirs)(const struct front_hdr *e, int from_client, void *arg), void *arg,
		   struct front_hdrs *out);

/* Microseconds on the monotonic clock. */
int64_t proxy_now_us(void);
/* References: a request lives until its last one is put. */
void preq_hold(struct proxy_req *req);
void preq_put(struct proxy_req *req);
/* The request is over: stop the transfer, report, let the connection go
 * on and drop the lifecycle's reference. Idempotent. */
void preq_finish(struct proxy_req *req, enum proxy_outcome outcome);
/* 1 if a response with this status to this request has no body. */
int preq_resp_no_body(const struct proxy_req *req, int status);
/* Starts reading the client's body (once). */
void preq_start_body_reading(struct proxy_req *req);
/* Sends the request upstream (again, for a re-send). */
void preq_start_forward(struct proxy_req *req);
/* Room on the stack for a forwarded head's entries and its strings
 * (query, path, URL); longer ones go to the heap. */
#define FWD_ENTRIES 48
#define FWD_STRINGS 2048
/* Signs a request for the upstream (S3 mode): adds x-amz-date,
 * x-amz-content-sha256 (payload; NULL or "": UNSIGNED-PAYLOAD),
 * x-amz-security-token and Authorization to fwd, with the proxy's signer
 * (made at the first use; the day's signing key derived once). Signed:
 * Host, every x-amz-*, Content-MD5 and Content-Type. path is the
 * upstream's (base included), query without '?'. Returns 0 or -1. */
int preq_sign(struct proxy *p, const char *method, const char *payload,
	      struct front_hdrs *fwd, const char *path, const char *query);
/* Drops the upstream transfer, if any. */
void preq_drop_xfer(struct proxy_req *req);
/* The front end's callbacks into the lifecycle, for the proxy p. */
void proxy_front_ops(struct front_ops *ops, struct proxy *p);

#endif
