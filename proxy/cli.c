/* cli.c — fencegate's command line (cli.h): the flag table, --help,
 * durations and counts, the checks between flags, and the policy and
 * proxy limits they describe. It prints usage errors itself (it is part
 * of main) and never starts anything. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fence/lockreg.h"
#include "ops/log.h"

#define LIMIT_BIT(opt) (1UL << ((opt) - 256))

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
"  -c, --config FILE      run a JSON configuration file (policy/README.md); the\n"
"                         flags above then may not be given\n"
"  -t, --test             check the configuration (-c FILE, including its TLS\n"
"                         certificate and key) and exit 0 (valid) or 1\n"
"  --log-level LEVEL      debug, info (default), warn, error or off\n"
"  --access-log FILE      one JSON line per request to FILE (\"-\": stderr, the\n"
"                         default; \"off\": none)\n"
"  --error-log FILE       the log (and anything else on stderr) to FILE (\"-\":\n"
"                         stderr, the default)\n"
"  --check-bucket BUCKET  S3 mode: run the backend self-test (conditional writes\n"
"                         honoured?) in BUCKET at start; /_fence/health is 200\n"
"                         only once it passed (each lock's bucket is also\n"
"                         checked before its first use)\n"
"  --lock-refresh D       a write is decided on lock knowledge at most D old;\n"
"                         locks written at least once per D are re-listed\n"
"                         ahead of it (1s)\n"
"  --workers N            event loops, each on its own thread with its own\n"
"                         listening sockets (SO_REUSEPORT); 0: one per available\n"
"                         core (the default; http mode: 1, the only value)\n"
"  --store-threads N      threads for blocking store and lock calls, shared by\n"
"                         the event loops (4)\n"
"  --barrier-timeout D    http mode: a newer epoch's write waits at most D for the\n"
"                         lock's older in-flight writes, then 503 (5s)\n"
"  --barrier-grace D      http mode: a write with no answer (timeout, reset,\n"
"                         client gone) stays in flight D after its upstream\n"
"                         connection closed (2s; 0: none)\n"
"\n"
"limits and timeouts (DURATION: 250ms, 10s, 2m; a bare number is seconds):\n"
"  --header-timeout D     whole request head must arrive within D (10s) -> 408\n"
"  --idle-timeout D       keep-alive connection idle time (60s)\n"
"  --body-timeout D       request body inactivity (60s) -> 408\n"
"  --body-min-rate N      bytes/s a request body must average after the body\n"
"                         timeout's grace (1024; 0: none) -> 408\n"
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
"Limit flags given with -c override the file's \"limits\".\n"
"\n"
"Signals: SIGTERM/SIGINT stop accepting, finish requests in flight, exit 0 (a\n"
"second one exits at once). SIGHUP reloads the configuration file (checked\n"
"first; a bad one is logged and the running configuration stays). SIGUSR1\n"
"reopens the access and error log files (after logrotate renamed them).\n");
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
	OPT_STORE_THREADS,
	OPT_BARRIER_TIMEOUT, OPT_BARRIER_GRACE, OPT_ERROR_LOG, OPT_BODY_MIN_RATE,
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
	{ "body-min-rate", required_argument, NULL, OPT_BODY_MIN_RATE },
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
	{ "error-log", required_argument, NULL, OPT_ERROR_LOG },
	{ "lock-refresh", required_argument, NULL, OPT_LOCK_REFRESH },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "store-threads", required_argument, NULL, OPT_STORE_THREADS },
	{ "barrier-timeout", required_argument, NULL, OPT_BARRIER_TIMEOUT },
	{ "barrier-grace", required_argument, NULL, OPT_BARRIER_GRACE },
	{ NULL, 0, NULL, 0 },
};

static int bad_value(const char *flag, const char *value)
{
	fprintf(stderr, "fencegate: bad value \"%s\" for --%s (see --help)\n", value, flag);
	return 2;
}

int cli_parse(int argc, char **argv, struct options *o)
{
	int ch, idx = 0;
	long v;
	enum log_level level;

	memset(o, 0, sizeof(*o));
	proxy_config_default(&o->cfg);
	o->mode = PROXY_MODE_S3;
	o->drain_ms = 30000;
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
			o->mode_set = 1;
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
			o->log_level_set = 1;
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
			o->limits_set |= LIMIT_BIT(ch);
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
				o->drain_ms = v, o->drain_set = 1;
			break;
		case OPT_MAX_HEADER_BYTES:
			if ((v = parse_count(optarg, 256, 1024L * 1024)) < 0)
				return bad_value(name, optarg);
			o->limits_set |= LIMIT_BIT(ch);
			o->cfg.limits.header_bytes = (size_t)v;
			break;
		case OPT_BODY_MIN_RATE:
			if ((v = parse_count(optarg, 0, 1024L * 1024 * 1024)) < 0)
				return bad_value(name, optarg);
			o->limits_set |= LIMIT_BIT(ch);
			o->cfg.limits.body_min_rate = (size_t)v;
			break;
		case OPT_MAX_HEADERS:
			if ((v = parse_count(optarg, 1, 10000)) < 0)
				return bad_value(name, optarg);
			o->limits_set |= LIMIT_BIT(ch);
			o->cfg.limits.header_count = (size_t)v;
			break;
		case OPT_MAX_URL_BYTES:
			if ((v = parse_count(optarg, 16, 1024L * 1024)) < 0)
				return bad_value(name, optarg);
			o->limits_set |= LIMIT_BIT(ch);
			o->cfg.limits.url_bytes = (size_t)v;
			break;
		case OPT_REPLAY_BYTES:
			if ((v = parse_count(optarg, 0, 16L * 1024 * 1024)) < 0)
				return bad_value(name, optarg);
			o->limits_set |= LIMIT_BIT(ch);
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
		case OPT_ERROR_LOG:
			o->error_log = optarg;
			break;
		case OPT_LOCK_REFRESH:
			if ((v = parse_duration_ms(optarg)) <= 0)
				return bad_value(name, optarg);
			o->refresh_ms = v;
			break;
		case OPT_WORKERS:
			if ((v = parse_count(optarg, 0, 64)) < 0)
				return bad_value(name, optarg);
			o->workers = v;
			o->workers_set = 1;
			break;
		case OPT_STORE_THREADS:
			if ((v = parse_count(optarg, 1, 64)) < 0)
				return bad_value(name, optarg);
			o->store_threads = v;
			break;
		case OPT_BARRIER_TIMEOUT:
			if ((v = parse_duration_ms(optarg)) <= 0)
				return bad_value(name, optarg);
			o->barrier_timeout_ms = v;
			break;
		case OPT_BARRIER_GRACE:
			if ((v = parse_duration_ms(optarg)) < 0)
				return bad_value(name, optarg);
			o->barrier_grace_ms = v ? v : -1;
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
	if (o->config && (o->nlisten || o->upstream || o->data_dir || o->lock_store ||
			  o->mode_set)) {
		fprintf(stderr, "fencegate: --listen, --upstream, --data, --mode and --lock-store "
			"go in the configuration file with -c\n");
		return 2;
	}
	if (o->mode == PROXY_MODE_HTTP && !o->upstream && !o->config) {
		fprintf(stderr, "fencegate: --mode http needs --upstream URL\n");
		return 2;
	}
	return -1;
}

struct policy *cli_policy(const struct options *o)
{
	char err[POLICY_ERR_MAX + 64];
	struct policy *pol;

	if (o->config) {
		pol = policy_load(o->config, err, sizeof(err));
	} else {
		struct policy_flags f = {
			.listen = o->listen, .nlisten = o->nlisten, .upstream = o->upstream,
			.data_dir = o->data_dir,
			.mode = o->mode == PROXY_MODE_HTTP ? POLICY_MODE_HTTP : POLICY_MODE_S3,
			.lock_store = o->lock_store,
		};

		pol = policy_default(&f, err, sizeof(err));
	}
	if (!pol)
		fprintf(stderr, "fencegate: %s\n", err);
	return pol;
}

/* The cores this process may run on (its affinity mask), at least 1. */
static int available_cores(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

int cli_threads(const struct options *o, const struct policy *pol, int *workers,
		int *store_threads)
{
	long long w = o->workers_set ? o->workers : pol->workers;

	if (pol->mode == POLICY_MODE_HTTP && w > 1) {
		fprintf(stderr, "fencegate: http mode runs one event loop (its epoch barrier orders "
			"a lock's in-flight writes in one place): --workers 0 or 1\n");
		return -1;
	}
	if (w == 0)
		w = pol->mode == POLICY_MODE_HTTP ? 1 : available_cores();
	*workers = w > 64 ? 64 : (int)w;
	*store_threads = o->store_threads ? (int)o->store_threads
					  : pol->store_threads > 0 ? (int)pol->store_threads : 4;
	return 0;
}

void cli_proxy_config(struct proxy_config *cfg, const struct policy *pol,
		      const struct options *o)
{
	const struct policy_limits *l = &pol->limits;

	proxy_config_default(cfg);
	cfg->mode = pol->mode == POLICY_MODE_HTTP ? PROXY_MODE_HTTP : PROXY_MODE_S3;
	cfg->upstream_url = pol->upstream.endpoint;
	cfg->region = pol->upstream.region ? pol->upstream.region : "us-east-1";
	cfg->limits.header_bytes = (size_t)l->header_bytes;
	cfg->limits.header_count = (size_t)l->header_count;
	cfg->limits.url_bytes = (size_t)l->url_bytes;
	cfg->limits.idle_timeout_ms = (long)l->idle_timeout_ms;
	cfg->limits.header_timeout_ms = (long)l->header_timeout_ms;
	cfg->limits.body_timeout_ms = (long)l->body_timeout_ms;
	cfg->limits.body_min_rate = (size_t)l->body_min_rate;
	cfg->limits.send_timeout_ms = (long)l->send_timeout_ms;
	cfg->limits.max_connections = (size_t)l->max_connections;
	cfg->replay_max = (size_t)l->replay_bytes;
	cfg->upstream.connect_timeout_ms = (long)l->upstream_connect_timeout_ms;
	cfg->upstream.first_byte_timeout_ms = (long)l->upstream_timeout_ms;
	cfg->upstream.idle_timeout_ms = (long)l->upstream_timeout_ms;
	cfg->upstream.total_timeout_ms = (long)l->upstream_total_timeout_ms;
	cfg->upstream.ca_file = pol->upstream.ca_bundle;
	cfg->upstream.insecure = !pol->upstream.verify;
	cfg->no_health_handler = 1; /* the lock API answers /_fence/health */

#define FLAG(opt, field) if (o->limits_set & LIMIT_BIT(opt)) cfg->field = o->cfg.field
	FLAG(OPT_HEADER_TIMEOUT, limits.header_timeout_ms);
	FLAG(OPT_IDLE_TIMEOUT, limits.idle_timeout_ms);
	FLAG(OPT_BODY_TIMEOUT, limits.body_timeout_ms);
	FLAG(OPT_BODY_MIN_RATE, limits.body_min_rate);
	FLAG(OPT_SEND_TIMEOUT, limits.send_timeout_ms);
	FLAG(OPT_CONNECT_TIMEOUT, upstream.connect_timeout_ms);
	FLAG(OPT_UPSTREAM_TIMEOUT, upstream.first_byte_timeout_ms);
	FLAG(OPT_UPSTREAM_TIMEOUT, upstream.idle_timeout_ms);
	FLAG(OPT_TOTAL_TIMEOUT, upstream.total_timeout_ms);
	FLAG(OPT_MAX_HEADER_BYTES, limits.header_bytes);
	FLAG(OPT_MAX_HEADERS, limits.header_count);
	FLAG(OPT_MAX_URL_BYTES, limits.url_bytes);
	FLAG(OPT_REPLAY_BYTES, replay_max);
#undef FLAG
}
