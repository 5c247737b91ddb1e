/* lockhttp.h — a client for fencegate's lock HTTP API (/_fence/locks/...),
 * for workers that take locks through a proxy instead of from the store
 * (fencectl --proxy). One synchronous JSON request per call, on libcurl,
 * signed with SigV4 when credentials are given, over TLS with the CA bundle
 * named. */
#ifndef FENCE_LOCKHTTP_H
#define FENCE_LOCKHTTP_H

#include <stddef.h>

#include "wire/awscreds.h"

struct lockhttp_opts {
	/* PEM CA bundle that verifies an https proxy; NULL: $AWS_CA_BUNDLE,
	 * else $SSL_CERT_FILE, else libcurl's default (the system's) */
	const char *ca_file;
	/* NULL: unsigned; else every request is signed with SigV4 (service
	 * "s3", x-amz-content-sha256 of the body), as a proxy with clients
	 * requires */
	const struct aws_credentials *cred;
	const char *region; /* the region signed for; NULL: "us-east-1" */
};

/* Sends METHOD base_url+path with body_json (NULL: no body) and waits up to
 * timeout_ms; opts may be NULL (unsigned, default CAs). Returns 0 when an
 * HTTP answer arrived, whatever its status: *status receives it and *reply
 * its body, NUL-terminated (JSON from the lock API, XML from the proxy's
 * authentication: see the README's "lock API errors"; NULL when empty; the
 * caller frees it with free()). Returns -1 with a message in err when no
 * answer arrived (connect, TLS, timeout, bad URL, an unreadable CA file, an
 * answer over 1 MiB). No JSON library is part of this interface. */
int lockhttp_request(const char *base_url, const struct lockhttp_opts *opts,
		     const char *method, const char *path, const char *body_json,
		     long timeout_ms, long *status, char **reply, char *err, size_t errlen);

#endif
