/* status_render.h — the operator's status page (/_fence/status) rendered
 * from a snapshot: as one HTML document (status_html.c: server-rendered,
 * no script, no external asset, an inline SVG chart, refreshing itself) or
 * as JSON (status_json.c, the fields the README documents).
 *
 * Renderers are pure: they read the view and the clock value in it, never
 * the board, a registry or the store, and allocate only their output.
 * Every string that came from a request or a store (lock names, holders,
 * clients, keys, reasons, error messages) is escaped for its context. A
 * view carries no secret and no server path: the caller fills it from
 * what may be shown (lockapi_status.c). */
#ifndef FENCE_STATUS_RENDER_H
#define FENCE_STATUS_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "statusboard.h"

#define STATUS_REFRESH_S 5          /* the HTML page reloads itself */
#define STATUS_STORE_OPS_MAX 8

enum status_self_test {
	STATUS_TEST_NONE = 0,   /* no backend self-test configured */
	STATUS_TEST_RUNNING,
	STATUS_TEST_PASSED,
	STATUS_TEST_FAILED,
};

enum status_probe {
	STATUS_PROBE_OFF = 0,   /* no upstream probe (embedded store, HTTP mode) */
	STATUS_PROBE_UP,        /* the last one-key listing answered */
	STATUS_PROBE_DOWN,
};

struct status_store_errors {
	char op[16];            /* "load", "acquire", "renew", "release", "status" */
	double count;
};

/* Everything the page shows, at now_ms. Strings are borrowed. */
struct status_view {
	int64_t now_ms;                           /* Unix ms */
	const struct statusboard_snapshot *board;
	/* the process */
	const char *version;
	int64_t started_ms;                       /* Unix ms; 0 unknown */
	int workers;                              /* event loops */
	double connections_open;
	double connections_accepted;
	double in_flight;
	double resident_bytes;
	double cpu_seconds;
	double open_fds;
	double max_fds;
	/* storage */
	const char *mode;                         /* "s3 (upstream)", "embedded", "http" */
	enum status_self_test self_test;
	const char *self_test_message;            /* why it failed; "" none */
	int workers_passed;                       /* event loops whose self-test passed */
	enum status_probe probe;
	const char *probe_message;                /* why the upstream is down; "" none */
	int64_t probe_interval_ms;
	size_t nstore_errors;
	struct status_store_errors store_errors[STATUS_STORE_OPS_MAX];
};

/* The HTML page. Returns a malloc'd NUL-terminated document (the caller
 * frees it), its length in *len; NULL on ENOMEM. */
char *status_html(const struct status_view *v, size_t *len);

/* The JSON form (README "The status page"). Returns a new object the
 * caller deletes with cJSON_Delete, or NULL when it cannot be made (under
 * memory pressure a member may be missing from the object returned). */
cJSON *status_json(const struct status_view *v);

/* Writes s into out (outlen > 0, always terminated) with & < > " '
 * escaped as HTML entities and bytes that are not valid UTF-8 or are
 * control characters (other than tab) replaced by U+FFFD. Returns the
 * length written, or (size_t)-1 when it did not fit (out holds a cut but
 * terminated and well-formed prefix). For tests and the renderer. */
size_t status_html_escape(const char *s, char *out, size_t outlen);

#endif
