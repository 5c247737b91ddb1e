/* accesslog.h — one JSON line per request: who asked for what, under which
 * epoch, and what the proxy and upstream answered.
 *
 *   {"time":"2026-12-02T16:47:17.123Z","requestId":"…",
 *    "remoteAddr":"10.0.0.7:40312","accessKey":"AKIAWORKER1","method":"PUT",
 *    "path":"/b/k","query":null,"bucket":"b","key":"k","lock":"L",
 *    "presentedEpoch":7,"currentEpoch":7,"verdict":"forward",
 *    "upstreamStatus":200,"status":200,"bytesIn":5,"bytesOut":0,
 *    "durationMs":3.2,"userAgent":"aws-cli/1.45"}
 *
 * Every key is always present; an unknown value is null (no lock, no token,
 * no upstream request), except accessKey, which is "-" for a request that
 * was not authenticated. Integers are exact (uint64). Strings are
 * JSON-escaped by cJSON; invalid UTF-8 becomes U+FFFD. The values of the
 * query parameters that are credentials (X-Amz-Signature,
 * X-Amz-Security-Token, Signature: a presigned URL) are logged as
 * "REDACTED". Pure formatting: no I/O, no clock (the caller passes the
 * time), no global state. */
#ifndef FENCE_ACCESSLOG_H
#define FENCE_ACCESSLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct accesslog_entry {
	int64_t time_ms;             /* request start, Unix milliseconds (UTC) */
	const char *request_id;      /* NULL → null */
	const char *remote_addr;     /* the client's "ADDR:PORT"; NULL → null */
	const char *access_key;      /* who signed it (S3 mode) or the client's
				      * name (HTTP mode); NULL → "-" */
	const char *method;
	const char *path;            /* as sent (percent-encoded), no query */
	const char *query;           /* without '?'; NULL → null */
	const char *bucket;          /* NULL → null (e.g. /_fence/ requests) */
	const char *key;
	const char *lock;            /* NULL → null */
	uint64_t presented_epoch;    /* 0 → null (no valid token) */
	bool has_current_epoch;      /* false → currentEpoch null */
	uint64_t current_epoch;
	const char *verdict;         /* fence_strverdict() etc.; NULL → null */
	int upstream_status;         /* 0 → null (never reached upstream) */
	int status;                  /* status sent to the client */
	uint64_t bytes_in;           /* request body bytes received */
	uint64_t bytes_out;          /* response body bytes sent */
	double duration_ms;
	const char *user_agent;      /* NULL → null */
};

/* The line, ending in "\n", in a malloc'd NUL-terminated string the caller
 * frees with free(); *len (may be NULL) receives its length. NULL on ENOMEM. */
char *accesslog_format(const struct accesslog_entry *e, size_t *len);

/* RFC 3339 UTC time with milliseconds, "2026-12-02T16:47:17.123Z", into buf
 * (at least 25 bytes). Returns buf; "" if the time cannot be represented. */
char *accesslog_time(int64_t unix_ms, char *buf, size_t buflen);

#endif
