/* test_metrics.c — the proxy's output formatters: the Prometheus registry
 * (proxy/ops/metrics.c: exposition format, HELP/TYPE lines, label escaping,
 * histograms, the series cap), and — until they get files of their own — the
 * S3 XML / JSON error bodies (wire/s3err.c) and the JSON access-log line
 * (proxy/ops/accesslog.c), each checked by exact output and by a real parser
 * (expat, cJSON) so escaping cannot produce a broken document. */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <expat.h>

#include "ops/accesslog.h"
#include "ops/metrics.h"
#include "wire/s3err.h"

/* ---- metrics ----------------------------------------------------------- */

static void test_counter_gauge_render(void **state)
{
	static const char *const labels[] = { "method", "outcome" };
	struct metrics *m = metrics_new();
	struct metrics_family *req, *inflight;
	const char *v1[] = { "PUT", "forward" }, *v2[] = { "GET", "read_pass" };
	char *out;
	size_t len = 0;

	(void)state;
	req = metrics_register(m, METRICS_COUNTER, "t_requests_total", "Requests.", 2, labels,
			       NULL, 0);
	inflight = metrics_register(m, METRICS_GAUGE, "t_in_flight", "In flight.", 0, NULL,
				    NULL, 0);
	assert_non_null(req);
	assert_non_null(inflight);
	assert_int_equal(metrics_add(req, v1, 1), 0);
	assert_int_equal(metrics_add(req, v1, 2), 0);
	assert_int_equal(metrics_add(req, v2, 1), 0);
	assert_int_equal(metrics_add(inflight, NULL, 1), 0);
	assert_int_equal(metrics_add(inflight, NULL, 1), 0);
	assert_int_equal(metrics_add(inflight, NULL, -1), 0);
	out = metrics_render(m, &len);
	assert_non_null(out);
	assert_int_equal(len, strlen(out));
	assert_string_equal(out,
		"# HELP t_requests_total Requests.\n"
		"# TYPE t_requests_total counter\n"
		"t_requests_total{method=\"PUT\",outcome=\"forward\"} 3\n"
		"t_requests_total{method=\"GET\",outcome=\"read_pass\"} 1\n"
		"# HELP t_in_flight In flight.\n"
		"# TYPE t_in_flight gauge\n"
		"t_in_flight 1\n"
		"# HELP fencegate_metrics_dropped_total Metric updates dropped "
		"(series cap reached or out of memory).\n"
		"# TYPE fencegate_metrics_dropped_total counter\n"
		"fencegate_metrics_dropped_total 0\n");
	free(out);
	metrics_free(m);
}

static void test_escaping(void **state)
{
	static const char *const labels[] = { "lock" };
	struct metrics *m = metrics_new();
	struct metrics_family *f;
	const char *v[] = { "a\\b\"c\nd\xff" };
	char *out;

	(void)state;
	f = metrics_register(m, METRICS_GAUGE, "t_epoch", "Epoch \\ per\nlock \"x\".", 1,
			     labels, NULL, 0);
	assert_int_equal(metrics_set(f, v, 12345678901.0), 0);
	out = metrics_render(m, NULL);
	assert_non_null(strstr(out, "# HELP t_epoch Epoch \\\\ per\\nlock \"x\".\n"));
	assert_non_null(strstr(out,
		"t_epoch{lock=\"a\\\\b\\\"c\\nd\xEF\xBF\xBD\"} 12345678901\n"));
	free(out);
	metrics_free(m);
}

static void test_histogram(void **state)
{
	static const double bounds[] = { 0.005, 0.1, 1 };
	struct metrics *m = metrics_new();
	struct metrics_family *h;
	char *out;

	(void)state;
	h = metrics_register(m, METRICS_HISTOGRAM, "t_latency_seconds", "Latency.", 0, NULL,
			     bounds, 3);
	assert_non_null(h);
	assert_int_equal(metrics_observe(h, NULL, 0.001), 0);
	assert_int_equal(metrics_observe(h, NULL, 0.005), 0);  /* le is inclusive */
	assert_int_equal(metrics_observe(h, NULL, 0.5), 0);
	assert_int_equal(metrics_observe(h, NULL, 7), 0);
	out = metrics_render(m, NULL);
	assert_non_null(strstr(out,
		"# TYPE t_latency_seconds histogram\n"
		"t_latency_seconds_bucket{le=\"0.005\"} 2\n"
		"t_latency_seconds_bucket{le=\"0.1\"} 2\n"
		"t_latency_seconds_bucket{le=\"1\"} 3\n"
		"t_latency_seconds_bucket{le=\"+Inf\"} 4\n"
		"t_latency_seconds_sum 7.506\n"
		"t_latency_seconds_count 4\n"));
	free(out);
	metrics_free(m);
}

static void test_invalid_uses(void **state)
{
	static const double bad_bounds[] = { 1, 1 };
	static const char *const le[] = { "le" };
	static const char *const bad_label[] = { "a:b" };
	static const char *const one[] = { "x" };
	struct metrics *m = metrics_new();
	struct metrics_family *c, *g;
	const char *v[] = { "v" };

	(void)state;
	assert_null(metrics_register(m, METRICS_COUNTER, "1bad", "", 0, NULL, NULL, 0));
	assert_null(metrics_register(m, METRICS_COUNTER, "bad-name", "", 0, NULL, NULL, 0));
	assert_null(metrics_register(m, METRICS_COUNTER, "ok", "", 1, le, NULL, 0));
	assert_null(metrics_register(m, METRICS_COUNTER, "ok", "", 1, bad_label, NULL, 0));
	assert_null(metrics_register(m, METRICS_HISTOGRAM, "h", "", 0, NULL, NULL, 0));
	assert_null(metrics_register(m, METRICS_HISTOGRAM, "h", "", 0, NULL, bad_bounds, 2));
	c = metrics_register(m, METRICS_COUNTER, "ok", "", 1, one, NULL, 0);
	assert_non_null(c);
	assert_null(metrics_register(m, METRICS_GAUGE, "ok", "", 0, NULL, NULL, 0));
	assert_int_equal(metrics_add(c, v, -1), -1);       /* counters only go up */
	assert_int_equal(metrics_observe(c, v, 1), -1);    /* wrong type */
	assert_int_equal(metrics_add(c, NULL, 1), -1);     /* labels missing */
	assert_int_equal(metrics_set(c, v, 10), 0);        /* mirror a counter */
	assert_int_equal(metrics_set(c, v, 9), -1);        /* ...never downwards */
	g = metrics_register(m, METRICS_GAUGE, "g", "", 0, NULL, NULL, 0);
	assert_int_equal(metrics_set(g, NULL, NAN), -1);
	metrics_free(m);
}

static void test_series_cap(void **state)
{
	static const char *const labels[] = { "method" };
	struct metrics *m = metrics_new();
	struct metrics_family *f;
	char name[32], *out;
	const char *v[1] = { name };
	int i, refused = 0;

	(void)state;
	f = metrics_register(m, METRICS_COUNTER, "t_total", "", 1, labels, NULL, 0);
	for (i = 0; i < METRICS_SERIES_MAX + 10; i++) {
		snprintf(name, sizeof(name), "M%d", i);
		refused += metrics_add(f, v, 1) != 0;
	}
	assert_int_equal(refused, 10);
	out = metrics_render(m, NULL);
	assert_non_null(strstr(out, "\nfencegate_metrics_dropped_total 10\n"));
	free(out);
	metrics_free(m);
}

struct seen {
	char names[4][16];
	double values[4];
	int n;
};

static void collect_series(const char *const *values, double value, void *arg)
{
	struct seen *s = arg;

	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", values[0]);
	s->values[s->n++] = value;
}

/* metrics_each reads every series of a counter in creation order (the
 * status page's lock-store errors), refuses histograms and NULL. */
static void test_each(void **state)
{
	static const char *const labels[] = { "op" };
	static const double bounds[] = { 1.0 };
	struct metrics *m = metrics_new();
	struct metrics_family *errs, *hist;
	struct seen seen = {0};

	(void)state;
	errs = metrics_register(m, METRICS_COUNTER, "t_errors_total", "Errors.", 1, labels, NULL, 0);
	hist = metrics_register(m, METRICS_HISTOGRAM, "t_seconds", "Time.", 0, NULL, bounds, 1);
	assert_int_equal(metrics_each(errs, collect_series, &seen), 0);
	assert_int_equal(seen.n, 0);
	metrics_add(errs, (const char *[]){ "load" }, 2);
	metrics_add(errs, (const char *[]){ "acquire" }, 1);
	metrics_add(errs, (const char *[]){ "load" }, 1);
	assert_int_equal(metrics_each(errs, collect_series, &seen), 2);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.names[0], "load");
	assert_true(seen.values[0] == 3.0);
	assert_string_equal(seen.names[1], "acquire");
	assert_true(seen.values[1] == 1.0);
	assert_int_equal(metrics_each(hist, collect_series, &seen), -1);
	assert_int_equal(metrics_each(NULL, collect_series, &seen), -1);
	assert_int_equal(seen.n, 2);
	metrics_free(m);
}

/* ---- per-thread cells, summed on read ---------------------------------- */

#define ADDER_ROUNDS 2000

struct adder {
	struct metrics_family *c, *g, *h;
	pthread_barrier_t *start;
};

static void *adder_run(void *arg)
{
	struct adder *a = arg;
	const char *put[] = { "PUT", "forward" }, *get[] = { "GET", "read_pass" };

	pthread_barrier_wait(a->start);
	for (int i = 0; i < ADDER_ROUNDS; i++) {
		metrics_add(a->c, put, 1);
		metrics_add(a->c, (i & 1) ? get : put, 0.5);
		metrics_add(a->g, NULL, (i & 1) ? -1 : 1);
		metrics_observe(a->h, NULL, (i % 4) ? 0.25 : 2);
	}
	return NULL;
}

/* Threads, more than METRICS_SHARDS_MAX of them (the last ones share one
 * set of cells through atomic operations), update the same series at once
 * while the main thread renders: every add and observation is in the
 * total, nothing twice; a set afterwards makes the value read as set, and
 * later adds count on top of it. */
static void test_threads_sum(void **state)
{
	static const char *const labels[] = { "method", "outcome" };
	static const double bounds[] = { 0.5, 1 };
	enum { NTHREADS = METRICS_SHARDS_MAX + 6 };
	struct metrics *m = metrics_new();
	struct adder a;
	pthread_t th[NTHREADS];
	pthread_barrier_t start;
	char expect[512], *out;
	int i;

	(void)state;
	a.c = metrics_register(m, METRICS_COUNTER, "t_total", "T.", 2, labels, NULL, 0);
	a.g = metrics_register(m, METRICS_GAUGE, "t_gauge", "G.", 0, NULL, NULL, 0);
	a.h = metrics_register(m, METRICS_HISTOGRAM, "t_seconds", "H.", 0, NULL, bounds, 2);
	assert_non_null(a.c);
	assert_non_null(a.g);
	assert_non_null(a.h);
	a.start = &start;
	assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS + 1), 0);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, adder_run, &a), 0);
	pthread_barrier_wait(&start);
	for (i = 0; i < 20; i++) /* renders racing with the adds */
		free(metrics_render(m, NULL));
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	out = metrics_render(m, NULL);
	assert_non_null(out);
	snprintf(expect, sizeof(expect),
		 "t_total{method=\"PUT\",outcome=\"forward\"} %d\n"
		 "t_total{method=\"GET\",outcome=\"read_pass\"} %d\n",
		 NTHREADS * ADDER_ROUNDS * 5 / 4, NTHREADS * ADDER_ROUNDS / 4);
	assert_non_null(strstr(out, expect));
	assert_non_null(strstr(out, "\nt_gauge 0\n"));
	snprintf(expect, sizeof(expect),
		 "t_seconds_bucket{le=\"0.5\"} %d\n"
		 "t_seconds_bucket{le=\"1\"} %d\n"
		 "t_seconds_bucket{le=\"+Inf\"} %d\n"
		 "t_seconds_sum %d\n"
		 "t_seconds_count %d\n",
		 NTHREADS * ADDER_ROUNDS * 3 / 4, NTHREADS * ADDER_ROUNDS * 3 / 4,
		 NTHREADS * ADDER_ROUNDS,
		 NTHREADS * ADDER_ROUNDS / 4 * 2 + NTHREADS * ADDER_ROUNDS * 3 / 4 / 4,
		 NTHREADS * ADDER_ROUNDS);
	assert_non_null(strstr(out, expect));
	free(out);
	/* a set reads as set whatever the threads added; adds then count on it */
	assert_int_equal(metrics_add(a.g, NULL, 5), 0);
	assert_int_equal(metrics_set(a.g, NULL, 42), 0);
	assert_int_equal(metrics_add(a.g, NULL, 1), 0);
	out = metrics_render(m, NULL);
	assert_non_null(strstr(out, "\nt_gauge 43\n"));
	free(out);
	/* a counter mirrored by set never goes below its adds */
	assert_int_equal(metrics_set(a.c, (const char *[]){ "PUT", "forward" }, 1), -1);
	metrics_free(m);
}

static void test_fencegate_families(void **state)
{
	struct fencegate_metrics fm;
	const char *rq[] = { metrics_method_label("put"), "reject_stale" };
	const char *code[] = { "FencingTokenStale" };
	const char *lock[] = { "invoices" };
	char *out;

	(void)state;
	assert_int_equal(fencegate_metrics_init(&fm), 0);
	assert_string_equal(rq[0], "OTHER");
	assert_string_equal(metrics_method_label("DELETE"), "DELETE");
	assert_int_equal(metrics_add(fm.requests, rq, 1), 0);
	assert_int_equal(metrics_add(fm.rejections, code, 1), 0);
	assert_int_equal(metrics_set(fm.lock_epoch, lock, 42), 0);
	assert_int_equal(metrics_observe(fm.upstream_latency, NULL, 0.003), 0);
	assert_int_equal(metrics_set(fm.etag_cache_hits, NULL, 17), 0);
	out = metrics_render(fm.registry, NULL);
	assert_non_null(strstr(out,
		"fencegate_requests_total{method=\"OTHER\",outcome=\"reject_stale\"} 1\n"));
	assert_non_null(strstr(out,
		"fencegate_rejections_total{code=\"FencingTokenStale\"} 1\n"));
	assert_non_null(strstr(out, "fencegate_lock_current_epoch{lock=\"invoices\"} 42\n"));
	assert_non_null(strstr(out, "fencegate_in_flight_requests 0\n"));
	assert_non_null(strstr(out, "fencegate_upstream_latency_seconds_bucket{le=\"0.0025\"} 0\n"));
	assert_non_null(strstr(out, "fencegate_upstream_latency_seconds_bucket{le=\"0.005\"} 1\n"));
	assert_non_null(strstr(out, "fencegate_etag_cache_hits_total 17\n"));
	assert_non_null(strstr(out, "# TYPE fencegate_etag_cache_misses_total counter\n"));
	free(out);
	fencegate_metrics_free(&fm);
	fencegate_metrics_free(&fm);   /* zeroed: harmless */
}

/* ---- s3err ------------------------------------------------------------- */

/* Parses XML with expat; returns 1 if well-formed. */
static int xml_well_formed(const char *xml, size_t len)
{
	XML_Parser p = XML_ParserCreate("UTF-8");
	int ok = XML_Parse(p, xml, (int)len, 1) == XML_STATUS_OK;

	XML_ParserFree(p);
	return ok;
}

static void test_s3err_xml(void **state)
{
	struct s3err e = {
		.code = "FencingTokenStale",
		.message = "fencing token 3 is older than the current epoch 8",
		.resource = "/bucket/key",
		.request_id = "req-1",
		.has_epoch = true,
		.current_epoch = 8,
	};
	const char *want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>"
			   "<Code>FencingTokenStale</Code>"
			   "<Message>fencing token 3 is older than the current epoch 8</Message>"
			   "<Resource>/bucket/key</Resource><RequestId>req-1</RequestId>"
			   "<CurrentEpoch>8</CurrentEpoch></Error>";
	char buf[512], small[16];
	size_t n, len;
	char *dup;

	(void)state;
	n = s3err_xml(&e, buf, sizeof(buf));
	assert_string_equal(buf, want);
	assert_int_equal(n, strlen(want));
	/* Truncation: NUL-terminated, full length reported. */
	assert_int_equal(s3err_xml(&e, small, sizeof(small)), strlen(want));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(s3err_xml(&e, NULL, 0), strlen(want));
	dup = s3err_xml_dup(&e, &len);
	assert_string_equal(dup, want);
	assert_int_equal(len, strlen(want));
	free(dup);
	/* Optional parts left out. */
	e = (struct s3err){ .code = "SlowDown", .message = NULL };
	dup = s3err_xml_dup(&e, NULL);
	assert_string_equal(dup, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>"
			    "<Code>SlowDown</Code><Message></Message></Error>");
	free(dup);
}

/* A body longer than s3err_xml_dup's first buffer (1 KiB) is formatted
 * again at its full size, escapes included. */
static void test_s3err_xml_long(void **state)
{
	char msg[3001], *want, *dup;
	struct s3err e = { .code = "InvalidArgument", .message = msg };
	size_t n, len;

	(void)state;
	for (size_t i = 0; i < sizeof(msg) - 1; i++)
		msg[i] = i % 100 == 99 ? '&' : 'a';
	msg[sizeof(msg) - 1] = '\0';
	n = s3err_xml(&e, NULL, 0);
	assert_true(n > 3000 + 30 * 4);    /* every '&' became "&amp;" */
	want = malloc(n + 1);
	assert_non_null(want);
	assert_int_equal(s3err_xml(&e, want, n + 1), n);
	dup = s3err_xml_dup(&e, &len);
	assert_non_null(dup);
	assert_int_equal(len, n);
	assert_string_equal(dup, want);
	assert_true(xml_well_formed(dup, len));
	free(dup);
	free(want);
}

static void test_s3err_xml_hostile(void **state)
{
	struct s3err e = {
		.code = "Fencing<Token>&",
		.message = "a \"quoted\" 'msg' \x01\x1f\x7f ok\ttab",
		.resource = "/b/</Resource><Code>Evil</Code>\xc3\x28\xed\xa0\x80\xf0\x9f\x98\x80",
		.request_id = "]]>",
	};
	size_t len;
	char *dup = s3err_xml_dup(&e, &len);

	(void)state;
	assert_non_null(dup);
	assert_true(xml_well_formed(dup, len));
	assert_null(strstr(dup, "<Code>Evil"));
	assert_non_null(strstr(dup, "<Code>Fencing&lt;Token&gt;&amp;</Code>"));
	assert_non_null(strstr(dup, "&quot;quoted&quot; &apos;msg&apos;"));
	/* Control characters XML cannot carry are replaced; a tab is kept. */
	assert_non_null(strstr(dup, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd ok\ttab"));
	/* Invalid UTF-8 (bad continuation, surrogate) replaced; a valid emoji kept. */
	assert_non_null(strstr(dup, "\xef\xbf\xbd(\xef\xbf\xbd"));
	assert_non_null(strstr(dup, "\xf0\x9f\x98\x80</Resource>"));
	free(dup);
}

static void test_s3err_json(void **state)
{
	struct s3err e = {
		.code = "FencingTokenStale",
		.message = "line\nbreak \"q\" \xff",
		.has_epoch = true,
		.current_epoch = 18446744073709551615ULL,
	};
	cJSON *parsed;
	char *json;
	size_t len;

	(void)state;
	json = s3err_json_dup(&e, &len);
	assert_non_null(json);
	assert_int_equal(len, strlen(json));
	assert_non_null(strstr(json, "\"currentEpoch\":18446744073709551615"));
	parsed = cJSON_Parse(json);
	assert_non_null(parsed);
	assert_string_equal(cJSON_GetObjectItem(parsed, "error")->valuestring,
			    "FencingTokenStale");
	assert_string_equal(cJSON_GetObjectItem(parsed, "message")->valuestring,
			    "line\nbreak \"q\" \xef\xbf\xbd");
	assert_null(cJSON_GetObjectItem(parsed, "requestId"));
	cJSON_Delete(parsed);
	free(json);
	e = (struct s3err){ .code = "FencingTokenMissing", .message = "m", .request_id = "r" };
	json = s3err_json_dup(&e, NULL);
	assert_string_equal(json,
		"{\"error\":\"FencingTokenMissing\",\"message\":\"m\",\"requestId\":\"r\"}");
	free(json);
}

/* ---- accesslog ---------------------------------------------------------- */

static void test_accesslog_line(void **state)
{
	struct accesslog_entry e = {
		.time_ms = 1796230037123LL,    /* 2026-12-02T16:47:17.123Z */
		.request_id = "r1",
		.remote_addr = "10.0.0.7:40312",
		.access_key = "AKIDW1",
		.method = "PUT",
		.path = "/b/k",
		.query = "tagging",
		.bucket = "b",
		.key = "k/\"x\"\n\xff",
		.lock = "inv",
		.presented_epoch = 7,
		.has_current_epoch = true,
		.current_epoch = 9,
		.verdict = "reject_stale",
		.status = 409,
		.bytes_in = 5,
		.bytes_out = 300,
		.duration_ms = 1.25,
		.user_agent = "aws-cli/1.45 \"q\"",
	};
	cJSON *p;
	size_t len;
	char *line = accesslog_format(&e, &len);

	(void)state;
	assert_non_null(line);
	assert_int_equal(len, strlen(line));
	assert_int_equal(line[len - 1], '\n');
	assert_null(memchr(line, '\n', len - 1));   /* exactly one line */
	assert_string_equal(line,
		"{\"time\":\"2026-12-02T16:47:17.123Z\",\"requestId\":\"r1\","
		"\"remoteAddr\":\"10.0.0.7:40312\",\"accessKey\":\"AKIDW1\",\"method\":\"PUT\","
		"\"path\":\"/b/k\",\"query\":\"tagging\","
		"\"bucket\":\"b\",\"key\":\"k/\\\"x\\\"\\n\xef\xbf\xbd\",\"lock\":\"inv\","
		"\"presentedEpoch\":7,\"currentEpoch\":9,\"verdict\":\"reject_stale\","
		"\"upstreamStatus\":null,\"status\":409,\"bytesIn\":5,\"bytesOut\":300,"
		"\"durationMs\":1.250,\"userAgent\":\"aws-cli/1.45 \\\"q\\\"\"}\n");
	p = cJSON_Parse(line);
	assert_non_null(p);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(p, "upstreamStatus")));
	cJSON_Delete(p);
	free(line);

	e = (struct accesslog_entry){ .time_ms = -1, .method = "GET", .status = 200,
				      .upstream_status = 200, .duration_ms = -3 };
	line = accesslog_format(&e, NULL);
	assert_non_null(strstr(line, "\"time\":\"1969-12-31T23:59:59.999Z\""));
	assert_non_null(strstr(line, "\"lock\":null,\"presentedEpoch\":null,"
				     "\"currentEpoch\":null,\"verdict\":null,"
				     "\"upstreamStatus\":200"));
	assert_non_null(strstr(line, "\"durationMs\":0.000,\"userAgent\":null}"));
	/* not authenticated: "-"; no query, no address: null */
	assert_non_null(strstr(line, "\"remoteAddr\":null,\"accessKey\":\"-\",\"method\":\"GET\","
				     "\"path\":null,\"query\":null,"));
	free(line);
}

/* The credentials of a presigned URL never reach the log; other
 * parameters, their order and their encoding are kept as sent. */
static void test_accesslog_redacts_query(void **state)
{
	static const struct { const char *query, *logged; } cases[] = {
		{ "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20260101&"
		  "X-Amz-Signature=0123abcd&X-Amz-Security-Token=FwoGZX%2B&list-type=2",
		  "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20260101&"
		  "X-Amz-Signature=REDACTED&X-Amz-Security-Token=REDACTED&list-type=2" },
		{ "AWSAccessKeyId=AKID&Expires=1&Signature=abc%2Bdef%3D",
		  "AWSAccessKeyId=AKID&Expires=1&Signature=REDACTED" },
		{ "x-amz-%53ignature=abc&signature=x&&Signature", /* encoded, lowercase, no value */
		  "x-amz-%53ignature=REDACTED&signature=REDACTED&&Signature" },
		{ "Signatures=keep&prefix=Signature%3Dno", "Signatures=keep&prefix=Signature%3Dno" },
		{ "uploads", "uploads" },
		{ "", "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct accesslog_entry e = { .method = "GET", .query = cases[i].query };
		char *line = accesslog_format(&e, NULL);
		cJSON *p = cJSON_Parse(line);
		const cJSON *q = cJSON_GetObjectItem(p, "query");

		assert_non_null(line);
		assert_true(cJSON_IsString(q));
		assert_string_equal(q->valuestring, cases[i].logged);
		assert_null(strstr(line, "0123abcd"));
		cJSON_Delete(p);
		free(line);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_gauge_render),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_invalid_uses),
		cmocka_unit_test(test_series_cap),
		cmocka_unit_test(test_each),
		cmocka_unit_test(test_threads_sum),
		cmocka_unit_test(test_fencegate_families),
		cmocka_unit_test(test_s3err_xml),
		cmocka_unit_test(test_s3err_xml_long),
		cmocka_unit_test(test_s3err_xml_hostile),
		cmocka_unit_test(test_s3err_json),
		cmocka_unit_test(test_accesslog_line),
		cmocka_unit_test(test_accesslog_redacts_query),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
