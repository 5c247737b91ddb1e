/* main.c — the fencegate daemon: command line, signals, event loop.
 *
 * Parses flags (DESIGN.md "Command line"), builds the proxy and its
 * handlers (lock API, fencing, and without --upstream the embedded S3 store),
 * listens, and runs until SIGTERM/SIGINT, then drains requests in flight
 * (bounded) and exits 0. Argument checking, wiring and printing only:
 * requests are proxy.c's and the handlers'. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/thread.h>

#include <cjson/cJSON.h>

#include "awscreds.h"
#include "fencing.h"
#include "jobs.h"
#include "lockapi.h"
#include "lockreg.h"
#include "log.h"
#include "metrics.h"
#include "proxy.h"
#include "s3local.h"

#define MAX_LISTEN 16

struct options {
	const char *listen[MAX_LISTEN];
	size_t nlisten;
	const char *upstream;
	const char *data_dir;
	const char *lock_store;
	const char *config;
	int test_config;
	enum proxy_mode mode;
	long drain_ms;
	const char *check_bucket;
	const char *access_log;
	long refresh_ms;
	long workers;
	struct proxy_config cfg;
};

static void usage(FILE *out)
{
	fprintf(out,
"usage: fencegate [options]\n"
"\n"
"A fencing-token enforcing S3 / HTTP proxy.\n"
"\n"
"  --listen ADDR:PORT     listen address (default 127.0.0.1:8080; repeatable)\n"
"  --upstream URL         forward to this S3 endpoint (S3 mode: credentials from\n"
"                         AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials,\n"
"                         region from AWS_REGION / AWS_DEFAULT_REGION, else us-east-1)\n"
"  --data DIR             local directory store when there is no upstream\n"
"                         (default ./fencegate-data)\n"
"  --mode s3|http         S3 API (default) or any HTTP API\n"
"  --lock-store URL       http mode: where locks live (s3://BUCKET[/ROOT] or file:///DIR)\n"
"  -c, --config FILE      run a JSON configuration file\n"
"  -t, --test             check the configuration (-c FILE) and exit\n"
"  --log-level LEVEL      debug, info (default), warn, error or off\n"
"  --access-log FILE      one JSON line per request to FILE (\"-\": stderr, the\n"
"                         default; \"off\": none)\n"
"  --check-bucket BUCKET  S3 mode: run the backend self-test (conditional writes\n"
"                         honoured?) in BUCKET at start; /_fence/health is 200\n"
"                         only once it passed (each lock's bucket is also\n"
"                         checked before its first use)\n"
"  --lock-refresh D       re-list recently used locks this often (1s)\n"
"  --workers N            threads for store and lock calls (4)\n"
"\n"
"limits and timeouts (DURATION: 250ms, 10s, 2m; a bare number is seconds):\n"
"  --header-timeout D     whole request head must arrive within D (10s) -> 408\n"
"  --idle-timeout D       keep-alive connection idle time (60s)\n"
"  --body-timeout D       request body inactivity (60s) -> 408\n"
"  --send-timeout D       client not reading the response (60s) -> close\n"
"  --connect-timeout D    upstream connect (5s) -> 504\n"
"  --upstream-timeout D   upstream response head / body inactivity (60s) -> 504\n"
"  --total-timeout D      whole upstream transfer (0 = none)\n"
"  --drain-timeout D      on SIGTERM, wait this long for requests in flight (30s)\n"
"  --max-header-bytes N   request line + headers (16384) -> 431\n"
"  --max-headers N        header count (100) -> 431\n"
"  --max-url-bytes N      request target (8192) -> 414\n"
"  --replay-bytes N       request bodies up to N bytes are kept for a re-send (65536)\n"
"\n"
"  --version              print the version and exit\n"
"  -h, --help             this help\n"
"\n"
"Signals: SIGTERM/SIGINT stop accepting, finish requests in flight, exit 0.\n");
}

/* "250ms", "10s", "2m", "3" (seconds) -> milliseconds; -1 if malformed. */
static long parse_duration_ms(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0 || v > 365LL * 24 * 3600 * 1000)
		return -1;
	if (strcmp(end, "ms") == 0)
		return (long)v;
	if (*end == '\0' || strcmp(end, "s") == 0)
		return (long)(v * 1000);
	if (strcmp(end, "m") == 0)
		return (long)(v * 60000);
	return -1;
}

static long parse_count(const char *s, long min, long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	return (long)v;
}

enum {
	OPT_LISTEN = 256, OPT_UPSTREAM, OPT_DATA, OPT_MODE, OPT_LOCK_STORE, OPT_LOG_LEVEL,
	OPT_VERSION, OPT_HEADER_TIMEOUT, OPT_IDLE_TIMEOUT, OPT_BODY_TIMEOUT,
	OPT_SEND_TIMEOUT, OPT_CONNECT_TIMEOUT, OPT_UPSTREAM_TIMEOUT, OPT_TOTAL_TIMEOUT,
	OPT_DRAIN_TIMEOUT, OPT_MAX_HEADER_BYTES, OPT_MAX_HEADERS, OPT_MAX_URL_BYTES,
	OPT_REPLAY_BYTES, OPT_CHECK_BUCKET, OPT_ACCESS_LOG, OPT_LOCK_REFRESH, OPT_WORKERS,
};

static const struct option long_options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "upstream", required_argument, NULL, OPT_UPSTREAM },
	{ "data", required_argument, NULL, OPT_DATA },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "lock-store", required_argument, NULL, OPT_LOCK_STORE },
	{ "config", required_argument, NULL, 'c' },
	{ "test", no_argument, NULL, 't' },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, 'h' },
	{ "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "body-timeout", required_argument, NULL, OPT_BODY_TIMEOUT },
	{ "send-timeout", required_argument, NULL, OPT_SEND_TIMEOUT },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "upstream-timeout", required_argument, NULL, OPT_UPSTREAM_TIMEOUT },
	{ "total-timeout", required_argument, NULL, OPT_TOTAL_TIMEOUT },
	{ "drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT },
	{ "max-header-bytes", required_argument, NULL, OPT_MAX_HEADER_BYTES },
	{ "max-headers", required_argument, NULL, OPT_MAX_HEADERS },
	{ "max-url-bytes", required_argument, NULL, OPT_MAX_URL_BYTES },
	{ "replay-bytes", required_argument, NULL, OPT_REPLAY_BYTES },
	{ "check-bucket", required_argument, NULL, OPT_CHECK_BUCKET },
	{ "access-log", required_argument, NULL, OPT_ACCESS_LOG },
	{ "lock-refresh", required_argument, NULL, OPT_LOCK_REFRESH },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ NULL, 0, NULL, 0 },
};

static int bad_value(const char *flag, const char *value)
{
	fprintf(stderr, "fencegate: bad value \"%s\" for --%s (see --help)\n", value, flag);
	return 2;
}

/* Fills o from argv. Returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, struct options *o)
{
	int ch, idx = 0;
	long v;
	enum log_level level;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":c:th", long_options, &idx)) != -1) {
		const char *name = NULL;

		for (size_t i = 0; long_options[i].name; i++)
			if (long_options[i].val == ch)
				name = long_options[i].name;
		switch (ch) {
		case OPT_LISTEN:
			if (o->nlisten == MAX_LISTEN) {
				fprintf(stderr, "fencegate: at most %d --listen addresses\n", MAX_LISTEN);
				return 2;
			}
			o->listen[o->nlisten++] = optarg;
			break;
		case OPT_UPSTREAM:
			o->upstream = optarg;
			break;
		case OPT_DATA:
			o->data_dir = optarg;
			break;
		case OPT_MODE:
			if (strcmp(optarg, "s3") == 0)
				o->mode = PROXY_MODE_S3;
			else if (strcmp(optarg, "http") == 0)
				o->mode = PROXY_MODE_HTTP;
			else
				return bad_value(name, optarg);
			break;
		case OPT_LOCK_STORE:
			o->lock_store = optarg;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 't':
			o->test_config = 1;
			break;
		case OPT_LOG_LEVEL:
			if (log_parse_level(optarg, &level) < 0)
				return bad_value(name, optarg);
			log_set_level(level);
			break;
		case OPT_VERSION:
			printf("fencegate %s\n", FENCE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case OPT_HEADER_TIMEOUT: case OPT_IDLE_TIMEOUT: case OPT_BODY_TIMEOUT:
		case OPT_SEND_TIMEOUT: case OPT_CONNECT_TIMEOUT: case OPT_UPSTREAM_TIMEOUT:
		case OPT_TOTAL_TIMEOUT: case OPT_DRAIN_TIMEOUT:
			v = parse_duration_ms(optarg);
			if (v < 0 || (v == 0 && ch != OPT_TOTAL_TIMEOUT))
				return bad_value(name, optarg);
			if (ch == OPT_HEADER_TIMEOUT)
				o->cfg.limits.header_timeout_ms = v;
			else if (ch == OPT_IDLE_TIMEOUT)
				o->cfg.limits.idle_timeout_ms = v;
			else if (ch == OPT_BODY_TIMEOUT)
				o->cfg.limits.body_timeout_ms = v;
			else if (ch == OPT_SEND_TIMEOUT)
				o->cfg.limits.send_timeout_ms = v;
			else if (ch == OPT_CONNECT_TIMEOUT)
				o->cfg.upstream.connect_timeout_ms = v;
			else if (ch == OPT_UPSTREAM_TIMEOUT)
				o->cfg.upstream.first_byte_timeout_ms = o->cfg.upstream.idle_timeout_ms = v;
			else if (ch == OPT_TOTAL_TIMEOUT)
				o->cfg.upstream.total_timeout_ms = v;
			else
				o->drain_ms = v;
			break;
		case OPT_MAX_HEADER_BYTES:
			if ((v = parse_count(optarg, 256, 1024L * 1024)) < 0)
				return bad_value(name, optarg);
			o->cfg.limits.header_bytes = (size_t)v;
			break;
		case OPT_MAX_HEADERS:
			if ((v = parse_count(optarg, 1, 10000)) < 0)
				return bad_value(name, optarg);
			o->cfg.limits.header_count = (size_t)v;
			break;
		case OPT_MAX_URL_BYTES:
			if ((v = parse_count(optarg, 16, 1024L * 1024)) < 0)
				return bad_value(name, optarg);
			o->cfg.limits.url_bytes = (size_t)v;
			break;
		case OPT_REPLAY_BYTES:
			if ((v = parse_count(optarg, 0, 16L * 1024 * 1024)) < 0)
				return bad_value(name, optarg);
			o->cfg.replay_max = (size_t)v;
			break;
		case OPT_CHECK_BUCKET:
			if (!lockreg_bucket_valid(optarg))
				return bad_value(name, optarg);
			o->check_bucket = optarg;
			break;
		case OPT_ACCESS_LOG:
			o->access_log = optarg;
			break;
		case OPT_LOCK_REFRESH:
			if ((v = parse_duration_ms(optarg)) <= 0)
				return bad_value(name, optarg);
			o->refresh_ms = v;
			break;
		case OPT_WORKERS:
			if ((v = parse_count(optarg, 1, 64)) < 0)
				return bad_value(name, optarg);
			o->workers = v;
			break;
		case ':':
			fprintf(stderr, "fencegate: option \"%s\" needs a value (see --help)\n",
				argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "fencegate: unknown option \"%s\" (see --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fencegate: unexpected argument \"%s\" (see --help)\n", argv[optind]);
		return 2;
	}
	if (o->test_config && !o->config) {
		fprintf(stderr, "fencegate: -t needs -c FILE\n");
		return 2;
	}
	if (o->mode == PROXY_MODE_HTTP && !o->upstream && !o->config) {
		fprintf(stderr, "fencegate: --mode http needs --upstream URL\n");
		return 2;
	}
	return -1;
}

/* -t -c FILE: for now a JSON syntax check; the schema belongs to policy/. */
static int check_config(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long len;
	cJSON *json = NULL;
	int rc = 1;

	if (!f) {
		fprintf(stderr, "fencegate: cannot open \"%s\": %s\n", path, strerror(errno));
		return 1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || len > 16L * 1024 * 1024 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "fencegate: cannot read \"%s\"\n", path);
		goto out;
	}
	text = malloc((size_t)len + 1);
	if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "fencegate: cannot read \"%s\"\n", path);
		goto out;
	}
	text[len] = '\0';
	json = cJSON_Parse(text);
	if (!json || !cJSON_IsObject(json)) {
		fprintf(stderr, "fencegate: \"%s\" is not a JSON object\n", path);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(json);
	free(text);
	fclose(f);
	return rc;
}

struct runtime {
	struct event_base *base;
	struct proxy *proxy;
	struct jobs *jobs;
	struct fencegate_metrics metrics;
	struct lockreg *locks;
	struct fencing *fencing;
	struct lockapi *api;
	struct s3local *s3local;
	FILE *access_log;
	long drain_ms;
	int stopping;
};

static void drained(void *arg)
{
	struct runtime *rt = arg;

	log_info("drained: exiting");
	event_base_loopexit(rt->base, NULL);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct runtime *rt = arg;

	if (sig == SIGHUP) {
		log_info("sighup: no configuration file to reload");
		return;
	}
	if (rt->stopping) {
		log_warn("second stop signal: exiting now");
		event_base_loopbreak(rt->base);
		return;
	}
	rt->stopping = 1;
	log_info("stop signal: draining \"%zu\" requests in flight (at most \"%ld\" ms)",
		 proxy_inflight(rt->proxy), rt->drain_ms);
	proxy_drain(rt->proxy, rt->drain_ms, drained, rt);
}

/* Builds the jobs pool, the lock registry, the lock API, the fencing
 * handler and (without an upstream) the embedded store, and registers the
 * handlers in that order. Returns 0 or -1 with a message in err. */
static int build_handlers(struct runtime *rt, const struct options *o, char *err, size_t errlen)
{
	int workers = o->workers > 0 ? (int)o->workers : 4;
	struct lockreg_config lc;
	struct fencing_config fc;
	struct lockapi_config ac;
	struct proxy_handler h;
	char data_abs[4096], url[4200];

	rt->jobs = jobs_new(rt->base, workers);
	if (!rt->jobs) {
		snprintf(err, errlen, "cannot start %d worker threads", workers);
		return -1;
	}
	if (fencegate_metrics_init(&rt->metrics) < 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (!o->upstream) {
		rt->s3local = s3local_new(rt->base, rt->jobs, o->data_dir, 0, err, errlen);
		if (!rt->s3local)
			return -1;
		if (!realpath(o->data_dir, data_abs)) {
			snprintf(err, errlen, "cannot resolve \"%s\": %s", o->data_dir, strerror(errno));
			return -1;
		}
	}
	memset(&lc, 0, sizeof(lc));
	lc.base = rt->base;
	lc.jobs = rt->jobs;
	lc.s3_endpoint = o->upstream;
	lc.data_dir = o->upstream ? NULL : data_abs;
	lc.region = o->cfg.region;
	lc.refresh_ms = o->refresh_ms;
	lc.self_test = o->upstream != NULL;
	rt->locks = lockreg_new(&lc, err, errlen);
	if (!rt->locks)
		return -1;
	memset(&fc, 0, sizeof(fc));
	fc.locks = rt->locks;
	fc.jobs = rt->jobs;
	fc.nthreads = workers;
	fc.metrics = &rt->metrics;
	fc.s3_endpoint = o->upstream;
	fc.region = o->cfg.region;
	fc.access_log = rt->access_log;
	rt->fencing = fencing_new(&fc, err, errlen);
	if (!rt->fencing)
		return -1;
	memset(&ac, 0, sizeof(ac));
	ac.base = rt->base;
	ac.proxy = rt->proxy;
	ac.jobs = rt->jobs;
	ac.locks = rt->locks;
	ac.fencing = rt->fencing;
	ac.metrics = &rt->metrics;
	if (o->upstream && o->check_bucket) {
		snprintf(url, sizeof(url), "s3://%s", o->check_bucket);
		ac.self_test.url = url;
		ac.self_test.endpoint = o->upstream;
		ac.self_test.region = o->cfg.region;
		ac.self_test.path_style = 1;
	} else if (!o->upstream) {
		snprintf(url, sizeof(url), "file://%s", data_abs);
		ac.self_test.url = url;
	}
	rt->api = lockapi_new(&ac, err, errlen);
	if (!rt->api)
		return -1;

	h = (struct proxy_handler){ "lockapi", lockapi_on_request, rt->api };
	if (proxy_add_handler(rt->proxy, &h) < 0)
		goto nomem;
	h = (struct proxy_handler){ "fencing", fencing_on_request, rt->fencing };
	if (o->mode == PROXY_MODE_S3 && proxy_add_handler(rt->proxy, &h) < 0)
		goto nomem;
	if (o->mode == PROXY_MODE_HTTP)
		log_warn("--mode http: fencing of HTTP APIs is not wired yet; requests are "
			 "forwarded unfenced");
	if (rt->s3local) {
		h = (struct proxy_handler){ "s3local", s3local_handler, rt->s3local };
		if (proxy_add_handler(rt->proxy, &h) < 0)
			goto nomem;
	}
	if (lockapi_start_self_test(rt->api) < 0)
		goto nomem;
	if (o->upstream && !o->check_bucket)
		log_warn("no --check-bucket: the backend self-test runs per bucket before its "
			 "lock's first use; /_fence/health does not wait for it");
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* Frees in the order the handlers need: workers first (their done()
 * callbacks still answer live requests), then the proxy, then the rest. */
static void teardown(struct runtime *rt)
{
	jobs_free(rt->jobs);
	rt->jobs = NULL;
	proxy_free(rt->proxy);
	rt->proxy = NULL;
	s3local_free(rt->s3local);
	lockapi_free(rt->api);
	fencing_free(rt->fencing);
	lockreg_free(rt->locks);
	fencegate_metrics_free(&rt->metrics);
	if (rt->access_log && rt->access_log != stderr)
		fclose(rt->access_log);
}

int main(int argc, char **argv)
{
	struct options o;
	struct aws_credentials cred = {0};
	struct runtime rt;
	struct event *sigs[3] = {0};
	const int signums[3] = { SIGTERM, SIGINT, SIGHUP };
	char err[512];
	int rc;

	memset(&rt, 0, sizeof(rt));
	memset(&o, 0, sizeof(o));
	proxy_config_default(&o.cfg);
	o.mode = PROXY_MODE_S3;
	o.drain_ms = 30000;
	o.data_dir = "./fencegate-data";
	rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.test_config) {
		rc = check_config(o.config);
		if (rc == 0)
			printf("fencegate: configuration file \"%s\" is valid JSON "
			       "(policy checks are not wired yet)\n", o.config);
		return rc;
	}
	if (o.config) {
		fprintf(stderr, "fencegate: configuration files are not wired yet; "
			"use --listen/--upstream/--mode flags\n");
		return 2;
	}
	if (o.nlisten == 0)
		o.listen[o.nlisten++] = "127.0.0.1:8080";
	o.cfg.mode = o.mode;
	o.cfg.upstream_url = o.upstream;
	o.cfg.no_health_handler = 1; /* the lock API answers /_fence/health */
	if (o.upstream && o.mode == PROXY_MODE_S3) {
		const char *region = getenv("AWS_REGION");

		if (!region || !*region)
			region = getenv("AWS_DEFAULT_REGION");
		if (region && *region)
			o.cfg.region = region;
		if (aws_credentials_load(NULL, &cred, err, sizeof(err)) < 0) {
			fprintf(stderr, "fencegate: no upstream credentials: %s\n", err);
			return 1;
		}
		o.cfg.access_key = cred.access_key;
		o.cfg.secret_key = cred.secret_key;
		o.cfg.session_token = cred.session_token;
	}
	if (!o.access_log || strcmp(o.access_log, "-") == 0) {
		rt.access_log = stderr;
	} else if (strcmp(o.access_log, "off") != 0) {
		rt.access_log = fopen(o.access_log, "a");
		if (!rt.access_log) {
			fprintf(stderr, "fencegate: cannot open access log \"%s\": %s\n",
				o.access_log, strerror(errno));
			aws_credentials_clear(&cred);
			return 1;
		}
	}

	signal(SIGPIPE, SIG_IGN);
	evthread_use_pthreads();
	rt.base = event_base_new();
	if (!rt.base) {
		fprintf(stderr, "fencegate: cannot create the event loop\n");
		aws_credentials_clear(&cred);
		return 1;
	}
	rt.drain_ms = o.drain_ms;
	rt.proxy = proxy_new(rt.base, &o.cfg, err, sizeof(err));
	aws_credentials_clear(&cred);
	if (!rt.proxy || build_handlers(&rt, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "fencegate: %s\n", err);
		teardown(&rt);
		event_base_free(rt.base);
		return 1;
	}
	for (size_t i = 0; i < o.nlisten; i++) {
		if (proxy_listen(rt.proxy, o.listen[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "fencegate: %s\n", err);
			teardown(&rt);
			event_base_free(rt.base);
			return 1;
		}
		log_info("listening on \"%s\"", o.listen[i]);
	}
	if (o.upstream)
		log_info("forwarding to \"%s\" in \"%s\" mode", o.upstream,
			 o.mode == PROXY_MODE_S3 ? "s3" : "http");
	else
		log_info("serving the embedded store over \"%s\"", o.data_dir);
	if (o.lock_store)
		log_warn("--lock-store \"%s\" is not wired yet", o.lock_store);
	for (size_t i = 0; i < 3; i++) {
		sigs[i] = evsignal_new(rt.base, signums[i], signal_cb, &rt);
		if (sigs[i])
			evsignal_add(sigs[i], NULL);
	}
	event_base_dispatch(rt.base);
	for (size_t i = 0; i < 3; i++)
		if (sigs[i])
			event_free(sigs[i]);
	teardown(&rt);
	event_base_free(rt.base);
	log_info("stopped");
	return 0;
}
