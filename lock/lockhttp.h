/* lockhttp.h — a client for fencegate's lock HTTP API (/_fence/locks/...),
 * for workers that take locks through a proxy instead of from the store
 * (fencectl --proxy). One synchronous JSON request per call, on libcurl. */
#ifndef FENCE_LOCKHTTP_H
#define FENCE_LOCKHTTP_H

#include <stddef.h>

/* Sends METHOD base_url+path with body_json (NULL: no body) and waits up to
 * timeout_ms. Returns 0 when an HTTP answer arrived, whatever its status:
 * *status receives it and *reply its body, NUL-terminated (JSON from the
 * lock API; NULL when empty; the caller frees it with free()). Returns -1
 * with a message in err when no answer arrived (connect, timeout, bad URL,
 * an answer over 1 MiB). No JSON library is part of this interface. */
int lockhttp_request(const char *base_url, const char *method, const char *path,
		     const char *body_json, long timeout_ms, long *status,
		     char **reply, char *err, size_t errlen);

#endif
