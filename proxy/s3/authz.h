/* authz.h — who may do what: the first handler in the chain (after health).
 *
 * S3 mode: verifies the client's SigV4 or SigV2 signature (auth.h) with the secrets of
 * the policy's clients, then the client's permission for the request (read,
 * write or lock on a path prefix, policy.h). Signed payloads are checked as
 * the body streams, and aws-chunked bodies are decoded and verified
 * (awschunked.h): what follows in the chain — the upstream, the embedded
 * store — sees the plain decoded body with Content-Length = its length and
 * x-amz-content-sha256: UNSIGNED-PAYLOAD. HTTP mode: bearer tokens
 * (Authorization: Bearer …), the same permission model, JSON errors; the
 * token is not forwarded. With no clients in the policy authentication is
 * off (the policy allows that only on loopback). /_fence/health and
 * /_fence/metrics are always open; /_fence/status needs an authenticated
 * client with "admin" on "/". It decides nothing about fencing. */
#ifndef FENCE_AUTHZ_H
#define FENCE_AUTHZ_H

#include <stddef.h>

#include "ops/metrics.h"
#include "policy/policy.h"
#include "http/proxy.h"

struct authz;

/* Every refusal is counted (fencegate_rejections_total{code}) and, once the
 * request is over, reported to log_fn with verdict "auth:<Code>" (the
 * daemon writes the access-log line). */
struct authz_config {
	enum proxy_mode mode;
	struct fencegate_metrics *metrics;   /* may be NULL */
	void (*log_fn)(const struct proxy_summary *s, const char *verdict, void *arg);
	void *log_arg;                       /* log_fn may be NULL */
	/* 1: requests are re-signed for an upstream, so an aws-chunked body
	 * is decoded even with authentication off (its chunk signatures are
	 * the client's, never valid under the proxy's signature; they are
	 * then parsed, not checked). 0: the embedded store decodes its own. */
	int decode_chunked;
};

/* A handler (cfg copied). Returns NULL on ENOMEM. */
struct authz *authz_new(const struct authz_config *cfg);

/* Makes pol the policy for requests whose head arrives from now on (takes a
 * reference, drops the previous one). Requests already past the handler are
 * not affected: they keep no pointer into the policy. */
void authz_set_policy(struct authz *a, struct policy *pol);

/* Accepts NULL. */
void authz_free(struct authz *a);

/* proxy_handler.on_request; arg is the struct authz. */
enum proxy_action authz_on_request(struct proxy_req *req, void *arg);

/* 1 if the authenticated client principal (proxy_req_principal's: the
 * access key in S3 mode, the client's name in HTTP mode) has the "break"
 * permission on lock NAME under the current policy; 0 otherwise, also
 * for an unknown principal or without a policy. */
int authz_may_break(const struct authz *a, const char *principal, const char *lock);

/* Requests refused so far (for tests and metrics). */
unsigned long authz_refused(const struct authz *a);

#endif
