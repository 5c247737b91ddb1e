/* fencectl.c — the command line for fencing locks: argument parsing and
 * printing around libfencelock (lock.h) and the commands. The protocol
 * itself lives in the library, `run` (holding a lock for a child process)
 * in fencectl_run.c and --proxy (the same commands through a fencegate's
 * lock HTTP API) in fencectl_proxy.c; this file only turns answers into
 * output and exit codes (0 ok, 3 held/lost, 1 error). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lock/core/lock.h"
#include "lock/store/store.h"
#include "fencectl_int.h"

#ifndef FENCE_VERSION
#define FENCE_VERSION "unknown"
#endif

static const char usage[] =
"usage: fencectl [global options] COMMAND [ARGS]\n"
"\n"
"Fencing locks on S3 or a local directory. A lock NAME lives under\n"
"ROOT/locks/NAME/lock-; each acquire gets the next epoch (the fencing token).\n"
"\n"
"commands:\n"
"  acquire NAME [--ttl 30s] [--wait 0] [--holder ID]   print the epoch acquired\n"
"  renew NAME EPOCH                  extend the lease of EPOCH\n"
"  release NAME EPOCH                give EPOCH up\n"
"  status NAME [--json]              the latest epoch and its state\n"
"  list [--json]                     every lock under ROOT/locks/\n"
"  gc NAME --keep N                  delete all but the newest N epoch files\n"
"  break NAME [--holder ID]          fence out a stuck holder (new epoch, expired)\n"
"  check                             test that the store honours conditional writes\n"
"  run NAME [--ttl 30s] [--wait 0] [--holder ID] -- CMD [ARGS...]\n"
"                                    hold the lock while CMD runs (FENCING_TOKEN,\n"
"                                    FENCE_LOCK in its environment), renew every\n"
"                                    ttl/3, stop CMD if the lock is lost\n"
"\n"
"global options:\n"
"  --store URL      s3://BUCKET[/ROOT] or file:///DIR (default: $FENCE_STORE)\n"
"  --prefix P       the lock's exact key prefix (default ROOT/locks/NAME/lock-)\n"
"  --endpoint URL   S3-compatible endpoint (default: $AWS_ENDPOINT_URL, else AWS)\n"
"  --region R       AWS region (default: $AWS_REGION, else us-east-1)\n"
"  --profile P      AWS profile for credentials (default: $AWS_PROFILE, else default)\n"
"  --proxy URL      use a fencegate proxy's lock HTTP API (acquire, renew,\n"
"                   release, status, list, run) instead of the store; calls\n"
"                   are signed (SigV4) when AWS credentials are set\n"
"  --cacert FILE    CA bundle for an https proxy (default: $AWS_CA_BUNDLE,\n"
"                   else $SSL_CERT_FILE, else the system's)\n"
"  --json           machine-readable output\n"
"  --help, --version\n"
"\n"
"durations: 500ms, 30s, 2m, 1h; a plain number is seconds.\n"
"exit status: 0 ok, 3 held by another or lock lost, 1 error;\n"
"run exits with CMD's status (128+N if killed by signal N), or 3 if the\n"
"lock was lost while it ran.\n";

/* A usage error: names what to fix, exits 1. */
__attribute__((format(printf, 1, 2), noreturn))
void fencectl_die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fencectl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see fencectl --help)\n");
	exit(1);
}

/* "500ms", "30s", "2m", "1h", or a plain number of seconds. -1 if invalid. */
static int64_t parse_duration_ms(const char *s)
{
	char *end = NULL;
	double v, unit = 1000;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		unit = 1;
	else if (strcmp(end, "s") == 0 || *end == '\0')
		unit = 1000;
	else if (strcmp(end, "m") == 0)
		unit = 60000;
	else if (strcmp(end, "h") == 0)
		unit = 3600000;
	else
		return -1;
	v *= unit;
	if (v > 1e15)
		return -1;
	return (int64_t)llround(v);
}

/* Matches "--name VALUE" or "--name=VALUE"; advances *i past a separate value. */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc)
		fencectl_die_usage("option %s needs a value", name);
	return argv[++*i];
}

static void parse_args(int argc, char **argv, struct cli *c)
{
	const char *v;
	char *end;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			c->child_argv = argv + i + 1;
			break;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage, stdout);
			exit(0);
		}
		if (strcmp(a, "--version") == 0) {
			printf("fencectl %s\n", FENCE_VERSION);
			exit(0);
		}
		if (strcmp(a, "--json") == 0) {
			c->json = 1;
		} else if ((v = option_value(argc, argv, &i, "--store"))) {
			c->store_url = v;
		} else if ((v = option_value(argc, argv, &i, "--prefix"))) {
			c->prefix = v;
		} else if ((v = option_value(argc, argv, &i, "--endpoint"))) {
			c->endpoint = v;
		} else if ((v = option_value(argc, argv, &i, "--region"))) {
			c->region = v;
		} else if ((v = option_value(argc, argv, &i, "--profile"))) {
			c->profile = v;
		} else if ((v = option_value(argc, argv, &i, "--proxy"))) {
			c->proxy = v;
		} else if ((v = option_value(argc, argv, &i, "--cacert"))) {
			c->cacert = v;
		} else if ((v = option_value(argc, argv, &i, "--holder"))) {
			c->holder = v;
			c->has_holder = 1;
		} else if ((v = option_value(argc, argv, &i, "--ttl"))) {
			c->ttl_ms = parse_duration_ms(v);
			if (c->ttl_ms <= 0)
				fencectl_die_usage("--ttl \"%s\": give a positive duration like 500ms, 30s or 2m", v);
			c->has_ttl = 1;
		} else if ((v = option_value(argc, argv, &i, "--wait"))) {
			c->wait_ms = parse_duration_ms(v);
			if (c->wait_ms < 0)
				fencectl_die_usage("--wait \"%s\": give a duration like 500ms, 10s or 2m", v);
			c->has_wait = 1;
		} else if ((v = option_value(argc, argv, &i, "--keep"))) {
			errno = 0;
			c->keep = strtol(v, &end, 10);
			if (errno || end == v || *end || c->keep < 1 || c->keep > 1000000000L)
				fencectl_die_usage("--keep \"%s\": give a whole number of epochs, at least 1", v);
			c->has_keep = 1;
		} else if (a[0] == '-' && a[1] != '\0') {
			fencectl_die_usage("unknown option \"%s\"", a);
		} else if (!c->command) {
			c->command = a;
		} else if (c->npos < (int)(sizeof(c->pos) / sizeof(c->pos[0]))) {
			c->pos[c->npos++] = a;
		} else {
			fencectl_die_usage("unexpected argument \"%s\"", a);
		}
	}
}

/* Checks the positionals and options a command takes. */
static void expect(const struct cli *c, int npos, const char *args, int ttl_wait_holder,
		   int holder, int keep)
{
	char what[128];

	if (c->npos != npos) {
		snprintf(what, sizeof(what), "%s takes %s", c->command, args);
		fencectl_die_usage("%s", what);
	}
	if (!ttl_wait_holder && (c->has_ttl || c->has_wait))
		fencectl_die_usage("--ttl and --wait are for acquire and run, not %s", c->command);
	if (!ttl_wait_holder && !holder && c->has_holder)
		fencectl_die_usage("--holder is for acquire, run and break, not %s", c->command);
	if (!keep && c->has_keep)
		fencectl_die_usage("--keep is for gc, not %s", c->command);
	if (strcmp(c->command, "run") != 0 && c->child_argv)
		fencectl_die_usage("\"--\" is for run, not %s", c->command);
}

uint64_t fencectl_parse_epoch(const char *s)
{
	char *end = NULL;
	unsigned long long e;

	errno = 0;
	e = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || e == 0 || e > 9999999999ULL)
		fencectl_die_usage("EPOCH \"%s\" is not an epoch number (1..9999999999)", s);
	return (uint64_t)e;
}

/* The store configuration the global options give. */
static void store_cfg_of(const struct cli *c, struct store_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->url = c->store_url ? c->store_url : getenv("FENCE_STORE");
	cfg->endpoint = c->endpoint;
	cfg->region = c->region;
	cfg->profile = c->profile;
	cfg->path_style = -1;
}

static struct store *open_store(const struct cli *c)
{
	struct store_config cfg;
	struct store *st;
	char err[512];

	store_cfg_of(c, &cfg);
	st = store_open(&cfg, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "fencectl: %s\n", err);
		exit(1);
	}
	return st;
}

static struct lock *open_lock(const struct cli *c, struct store *st, const char *name)
{
	struct lock_options o = { .prefix = c->prefix };
	struct lock *lk;
	char err[512];

	lk = lock_open(st, name, &o, err, sizeof(err));
	if (!lk) {
		fprintf(stderr, "fencectl: %s\n", err);
		store_close(st);
		exit(1);
	}
	return lk;
}

/* Exit code for a library answer; prints the error for failures. */
int fencectl_report(enum lock_code rc, const char *err)
{
	switch (rc) {
	case LOCK_OK:
		return 0;
	case LOCK_HELD:
		fprintf(stderr, "fencectl: %s\n", err[0] ? err : lock_strerror(rc));
		return EXIT_HELD;
	case LOCK_LOST:
		fprintf(stderr, "fencectl: lock lost: %s\n", err[0] ? err : "no longer the holder");
		return EXIT_HELD;
	default:
		fprintf(stderr, "fencectl: %s%s%s\n", lock_strerror(rc), err[0] ? ": " : "", err);
		return 1;
	}
}

/* remaining_ms is a contender's view: the lease left by the store's
 * clock, whose timestamps have one-second resolution, rounded up so that a
 * live lease is never taken early. So a lease just taken for 30 s shows up
 * to 31 s: "free in at most". */
void fencectl_print_held(const char *name, const struct lock_info *who)
{
	if (who->state == LOCK_STATE_UNREADABLE)
		fprintf(stderr, "fencectl: lock \"%s\" is held by an unreadable lock file "
			"(epoch %" PRIu64 "); free in at most %.1fs\n", name, who->epoch,
			(double)who->remaining_ms / 1000.0);
	else
		fprintf(stderr, "fencectl: lock \"%s\" is held by \"%s\" (epoch %" PRIu64 "); "
			"free in at most %.1fs (store time, rounded up)\n", name,
			who->payload.leader_id, who->epoch, (double)who->remaining_ms / 1000.0);
}

/* acquire --wait on a terminal: one line, rewritten, while it waits. */
static void print_wait(const struct lock_info *who, int64_t waited_ms, void *arg)
{
	const char *name = arg;

	fprintf(stderr, "\rfencectl: waiting %.0fs for lock \"%s\": held by \"%s\" (epoch %"
		PRIu64 "), free in at most %.1fs   ", (double)waited_ms / 1000.0, name,
		who->state == LOCK_STATE_UNREADABLE ? "?" : who->payload.leader_id, who->epoch,
		(double)who->remaining_ms / 1000.0);
	fflush(stderr);
}

void fencectl_print_json(cJSON *obj)
{
	char *s = obj ? cJSON_PrintUnformatted(obj) : NULL;

	if (!s) {
		fprintf(stderr, "fencectl: out of memory\n");
		exit(1);
	}
	printf("%s\n", s);
	free(s);
	cJSON_Delete(obj);
}

static cJSON *info_json(const char *name, const struct lock_info *info)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "lock", name);
	cJSON_AddNumberToObject(o, "epoch", (double)info->epoch);
	cJSON_AddStringToObject(o, "state", lock_state_name(info->state));
	if (info->epoch && info->state != LOCK_STATE_UNREADABLE) {
		cJSON_AddStringToObject(o, "holder", info->payload.leader_id);
		cJSON_AddNumberToObject(o, "validityMs", (double)info->payload.validity_ms);
		cJSON_AddNumberToObject(o, "renewals", (double)info->payload.renewals);
	}
	cJSON_AddNumberToObject(o, "remainingMs", (double)info->remaining_ms);
	if (info->epoch) {
		cJSON_AddStringToObject(o, "key", info->key);
		cJSON_AddNumberToObject(o, "lastModified", (double)info->last_modified);
	}
	return o;
}

static void print_info_line(const char *name, const struct lock_info *info)
{
	switch (info->state) {
	case LOCK_STATE_FREE:
		printf("lock \"%s\": free (no epoch yet)\n", name);
		break;
	case LOCK_STATE_HELD:
		printf("lock \"%s\": held by \"%s\", epoch %" PRIu64 ", free in at most %.1fs "
		       "(store time, rounded up)\n", name, info->payload.leader_id, info->epoch,
		       (double)info->remaining_ms / 1000.0);
		break;
	case LOCK_STATE_UNREADABLE:
		printf("lock \"%s\": unreadable lock file at epoch %" PRIu64 ", counts as held "
		       "for %.1fs more\n", name, info->epoch, (double)info->remaining_ms / 1000.0);
		break;
	default:
		printf("lock \"%s\": %s, epoch %" PRIu64 " (last holder \"%s\")\n", name,
		       lock_state_name(info->state), info->epoch, info->payload.leader_id);
		break;
	}
}

/* --- commands --------------------------------------------------------------- */

static int cmd_acquire(const struct cli *c, struct lock *lk)
{
	struct lock_acquire_opts ao = { .holder = c->holder, .ttl_ms = c->ttl_ms,
					.wait_ms = c->wait_ms };
	struct lock_grant g;
	struct lock_info who;
	enum lock_code rc;
	char err[512] = "";
	cJSON *o;

	memset(&who, 0, sizeof(who));
	if (c->wait_ms > 0 && isatty(STDERR_FILENO)) {
		ao.on_wait = print_wait;
		ao.on_wait_arg = (void *)lock_name(lk);
	}
	rc = lock_acquire(lk, &ao, &g, &who, err, sizeof(err));
	if (ao.on_wait)
		fputc('\n', stderr); /* end the progress line */
	if (rc == LOCK_HELD || (rc == LOCK_ERR_TIMEOUT && who.epoch)) {
		fencectl_print_held(lock_name(lk), &who);
		return EXIT_HELD;
	}
	if (rc != LOCK_OK)
		return fencectl_report(rc, err);
	if (c->json) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "lock", lock_name(lk));
		cJSON_AddNumberToObject(o, "epoch", (double)g.epoch);
		cJSON_AddStringToObject(o, "holder", g.holder);
		cJSON_AddNumberToObject(o, "ttlMs", (double)g.ttl_ms);
		cJSON_AddNumberToObject(o, "expiresAt", (double)g.expires_at_ms);
		fencectl_print_json(o);
	} else {
		printf("%" PRIu64 "\n", g.epoch);
	}
	return 0;
}

static int cmd_renew_release(const struct cli *c, struct lock *lk, int releasing)
{
	struct lock_grant g;
	enum lock_code rc;
	char err[512] = "";

	memset(&g, 0, sizeof(g));
	g.epoch = fencectl_parse_epoch(c->pos[1]);
	rc = releasing ? lock_release(lk, &g, err, sizeof(err)) : lock_renew(lk, &g, err, sizeof(err));
	if (rc != LOCK_OK)
		return fencectl_report(rc, err);
	if (c->json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "lock", lock_name(lk));
		cJSON_AddNumberToObject(o, "epoch", (double)g.epoch);
		if (!releasing) {
			cJSON_AddNumberToObject(o, "renewals", (double)g.renewals);
			cJSON_AddNumberToObject(o, "expiresAt", (double)g.expires_at_ms);
		}
		fencectl_print_json(o);
	}
	return 0;
}

static int cmd_status(const struct cli *c, struct lock *lk)
{
	struct lock_info info;
	enum lock_code rc;
	char err[512] = "";

	rc = lock_status(lk, &info, err, sizeof(err));
	if (rc != LOCK_OK)
		return fencectl_report(rc, err);
	if (c->json)
		fencectl_print_json(info_json(lock_name(lk), &info));
	else
		print_info_line(lock_name(lk), &info);
	return 0;
}

static int cmd_list(const struct cli *c, struct store *st)
{
	char **names = NULL;
	size_t n = 0, i;
	enum lock_code rc;
	char err[512] = "";
	cJSON *arr = c->json ? cJSON_CreateArray() : NULL;
	int code = 0;

	rc = lock_list_names(st, &names, &n, err, sizeof(err));
	if (rc != LOCK_OK) {
		cJSON_Delete(arr);
		return fencectl_report(rc, err);
	}
	for (i = 0; i < n; i++) {
		struct lock_info info;
		struct lock *lk = lock_open(st, names[i], NULL, err, sizeof(err));

		if (lk && (rc = lock_status(lk, &info, err, sizeof(err))) == LOCK_OK) {
			if (arr)
				cJSON_AddItemToArray(arr, info_json(names[i], &info));
			else
				print_info_line(names[i], &info);
		} else {
			fprintf(stderr, "fencectl: lock \"%s\": %s\n", names[i], err);
			code = 1;
		}
		lock_close(lk);
		free(names[i]);
	}
	free(names);
	if (arr)
		fencectl_print_json(arr);
	return code;
}

static int cmd_gc(const struct cli *c, struct lock *lk)
{
	unsigned deleted = 0;
	enum lock_code rc;
	char err[512] = "";

	rc = lock_gc(lk, (unsigned)c->keep, &deleted, err, sizeof(err));
	if (rc != LOCK_OK) {
		if (deleted)
			fprintf(stderr, "fencectl: deleted %u epoch files before the failure\n", deleted);
		return fencectl_report(rc, err);
	}
	if (c->json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "lock", lock_name(lk));
		cJSON_AddNumberToObject(o, "deleted", deleted);
		fencectl_print_json(o);
	} else {
		printf("lock \"%s\": deleted %u epoch file%s, kept the newest %ld\n",
		       lock_name(lk), deleted, deleted == 1 ? "" : "s", c->keep);
	}
	return 0;
}

static int cmd_break(const struct cli *c, struct lock *lk)
{
	uint64_t epoch = 0;
	enum lock_code rc;
	char err[512] = "";

	rc = lock_break(lk, c->holder, &epoch, err, sizeof(err));
	if (rc != LOCK_OK)
		return fencectl_report(rc, err);
	if (c->json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "lock", lock_name(lk));
		cJSON_AddNumberToObject(o, "epoch", (double)epoch);
		fencectl_print_json(o);
	} else {
		printf("%" PRIu64 "\n", epoch);
		fprintf(stderr, "fencectl: lock \"%s\" broken: epoch %" PRIu64 " is released; "
			"earlier epochs are fenced out\n", lock_name(lk), epoch);
	}
	return 0;
}

/* The self-test, capability by capability, and what the proxy does with
 * each operation; exit 0 when the lock protocol is safe on the store. */
static int cmd_check(const struct cli *c, struct store *st)
{
	struct store_config cfg;
	struct backend_report rep;
	enum lock_code rc;
	unsigned cap, missing;
	char err[512] = "";
	cJSON *o = NULL, *caps = NULL, *ops = NULL;

	store_cfg_of(c, &cfg);
	rc = lock_probe_store(st, &cfg, store_root(st), &rep, err, sizeof(err));
	if (rc != LOCK_OK)
		return fencectl_report(rc, err);
	if (c->json) {
		o = cJSON_CreateObject();
		caps = cJSON_AddObjectToObject(o, "capabilities");
		ops = cJSON_AddObjectToObject(o, "operations");
	}
	for (cap = 1; cap & CAP_ALL; cap <<= 1) {
		const char *state = !(rep.probed & cap) ? "not probed"
				    : rep.caps & cap ? "ok" : "MISSING";

		if (c->json) {
			cJSON *one = cJSON_AddObjectToObject(caps, backend_cap_name(cap));

			cJSON_AddBoolToObject(one, "ok", (rep.caps & cap) != 0);
			cJSON_AddBoolToObject(one, "probed", (rep.probed & cap) != 0);
			cJSON_AddStringToObject(one, "seen", lock_report_seen(&rep, cap));
		} else {
			printf("%-34s %-10s %s\n", backend_cap_name(cap), state,
			       lock_report_seen(&rep, cap));
		}
	}
	for (int op = 0; op < BACKEND_OP_COUNT; op++) {
		/* a condition this store cannot be asked (no copy, no multipart
		 * on a directory store) is not probed, not refused */
		const char *verdict;

		missing = lock_probe_missing(&rep, (enum backend_op)op);
		verdict = !missing ? "ok" : !(rep.probed & missing) ? "not probed"
			  : backend_cap_lacking(missing);
		if (c->json)
			cJSON_AddStringToObject(ops, backend_op_name((enum backend_op)op), verdict);
		else
			printf("operation %-24s %s%s\n", backend_op_name((enum backend_op)op),
			       missing && (rep.probed & missing) ? "refused: " : "", verdict);
	}
	missing = lock_probe_missing(&rep, BACKEND_OP_LOCK);
	if (c->json) {
		cJSON_AddBoolToObject(o, "ok", !missing);
		cJSON_AddStringToObject(o, "if_match", rep.etag_form == DIALECT_ETAG_BARE
					? "bare" : "quoted");
		fencectl_print_json(o);
	}
	if (missing) {
		snprintf(err, sizeof(err), "%s (%s): two writers could both hold a lock",
			 backend_cap_lacking(missing), lock_report_seen(&rep, missing));
		return fencectl_report(LOCK_ERR_UNSAFE, err);
	}
	if (!c->json)
		printf("ok: locks are safe on this store%s\n",
		       rep.etag_form == DIALECT_ETAG_BARE ? " (If-Match sent without quotes)" : "");
	return 0;
}

/* --- main ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct cli c;
	struct store *st = NULL;
	struct lock *lk = NULL;
	const char *cmd;
	int code = 1;

	memset(&c, 0, sizeof(c));
	parse_args(argc, argv, &c);
	if (!c.command) {
		fputs(usage, stderr);
		return 1;
	}
	cmd = c.command;

	if (strcmp(cmd, "acquire") == 0)
		expect(&c, 1, "NAME", 1, 1, 0);
	else if (strcmp(cmd, "renew") == 0 || strcmp(cmd, "release") == 0)
		expect(&c, 2, "NAME EPOCH", 0, 0, 0);
	else if (strcmp(cmd, "status") == 0)
		expect(&c, 1, "NAME", 0, 0, 0);
	else if (strcmp(cmd, "list") == 0 || strcmp(cmd, "check") == 0)
		expect(&c, 0, "no arguments", 0, 0, 0);
	else if (strcmp(cmd, "gc") == 0) {
		expect(&c, 1, "NAME --keep N", 0, 0, 1);
		if (!c.has_keep)
			fencectl_die_usage("%s", "gc needs --keep N (how many of the newest epoch files to keep)");
	} else if (strcmp(cmd, "break") == 0)
		expect(&c, 1, "NAME", 0, 1, 0);
	else if (strcmp(cmd, "run") == 0)
		expect(&c, 1, "NAME -- CMD [ARGS...]", 1, 1, 0);
	else
		fencectl_die_usage("unknown command \"%s\"", cmd);

	if (c.npos >= 1 && !lock_name_valid(c.pos[0]))
		fencectl_die_usage("invalid lock name \"%s\": use 1-128 of A-Z a-z 0-9 . _ -", c.pos[0]);
	if (c.prefix && c.npos == 0)
		fencectl_die_usage("--prefix names one lock's files; %s does not take it", cmd);

	if (c.cacert && !c.proxy)
		fencectl_die_usage("%s", "--cacert is for an https --proxy (a store's endpoint uses "
				   "$AWS_CA_BUNDLE)");
	if (c.proxy) {
		if (c.store_url || c.prefix || c.endpoint)
			fencectl_die_usage("%s", "--proxy talks to a fencegate lock API; --store, --prefix and "
					   "--endpoint do not apply");
		return fencectl_cmd_proxy(&c);
	}
	st = open_store(&c);
	if (strcmp(cmd, "list") == 0) {
		code = cmd_list(&c, st);
		goto out;
	}
	if (strcmp(cmd, "check") == 0) {
		code = cmd_check(&c, st);
		goto out;
	}
	lk = open_lock(&c, st, c.pos[0]);
	if (strcmp(cmd, "acquire") == 0)
		code = cmd_acquire(&c, lk);
	else if (strcmp(cmd, "renew") == 0)
		code = cmd_renew_release(&c, lk, 0);
	else if (strcmp(cmd, "release") == 0)
		code = cmd_renew_release(&c, lk, 1);
	else if (strcmp(cmd, "status") == 0)
		code = cmd_status(&c, lk);
	else if (strcmp(cmd, "gc") == 0)
		code = cmd_gc(&c, lk);
	else if (strcmp(cmd, "break") == 0)
		code = cmd_break(&c, lk);
	else if (strcmp(cmd, "run") == 0)
		code = fencectl_cmd_run(&c, lk);
out:
	lock_close(lk);
	store_close(st);
	return code;
}
