/* lockhttp.h — a client for fencegate's lock HTTP API (/_fence/locks/...),
 * for workers that take locks through a proxy instead of from the store
 * (fencectl --proxy). One synchronous JSON request per call, on libcurl. */
#ifndef FENCE_LOCKHTTP_H
#define FENCE_LOCKHTTP_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Sends METHOD base_url+path with body_json (NULL: no body) and waits up to
 * timeout_ms. Returns 0 when an HTTP answer arrived, whatever its status:
 * *status receives it and *reply the parsed JSON body (NULL if the body is
 * not JSON; the caller frees it with cJSON_Delete). Returns -1 with a
 * message in err when no answer arrived (connect, timeout, bad URL). */
int lockhttp_request(const char *base_url, const char *method, const char *path,
		     const char *body_json, long timeout_ms, long *status,
		     cJSON **reply, char *err, size_t errlen);

#endif
