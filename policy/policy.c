/* policy.c — parses and checks the JSON configuration into an immutable
 * struct policy, and answers the lookups the proxy needs per request (route
 * for a path, client for a key, what a client may do).
 *
 * One table (keys[] below: path, type, default, bounds, required) drives
 * the walk over the JSON, the defaults and the key list in README.md; the
 * checks that relate keys to each other (a route's lock exists, secrets are
 * readable, no clients only on loopback) run after it. It does not open the
 * TLS files, the stores or the upstream: the daemon does, and -t should too. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "wire/method.h"
#include "wire/pct.h"
#include "lock/lock.h"
#include "policy.h"

/* ---- the schema table ---------------------------------------------------- */

enum ktype {
	KT_OBJECT,    /* nested object, embedded struct at off */
	KT_OBJECTS,   /* array of objects: pointer at off, count at off_n */
	KT_STRING,    /* char * at off */
	KT_STRINGS,   /* array of strings: elements of size elem, the char * at
		       * offset 0 of each; pointer at off, count at off_n */
	KT_BOOL,      /* bool at off */
	KT_INT,       /* long long at off */
	KT_ENUM,      /* int at off: index into values */
	KT_NAME,      /* const char * at off: values[index] (static) */
	KT_METHODS,   /* unsigned METHOD_* mask at off */
	KT_ACTIONS,   /* unsigned POLICY_ACT_* mask at off */
};

#define KF_REQUIRED     1u
#define KF_DOC_DEFAULT  2u  /* def is documentation: computed after the walk */

typedef int (*check_fn)(const char *value, char *why, size_t whylen);

struct key {
	const char *path;
	enum ktype type;
	const char *def;          /* JSON text of the default, or NULL */
	long long min, max;       /* INT: value; STRING: length; arrays: count */
	unsigned flags;
	size_t off, off_n, elem;
	const char *const *values;
	check_fn check;
	const char *doc;
};

static const char *const mode_names[] = { "s3", "http", NULL };
static const char *const unrouted_names[] = { "reject", "allow", "bucket_lock", NULL };
static const char *const tls_version_names[] = { "1.2", "1.3", NULL };
static const char *const level_names[] = { "error", "warn", "info", "debug", NULL };
static const char *const format_names[] = { "json", NULL };

static int check_listen(const char *v, char *why, size_t whylen);
static int check_http_url(const char *v, char *why, size_t whylen);
static int check_store_url(const char *v, char *why, size_t whylen);
static int check_lock_name(const char *v, char *why, size_t whylen);
static int check_path_prefix(const char *v, char *why, size_t whylen);
static int check_key_prefix(const char *v, char *why, size_t whylen);
static int check_env_name(const char *v, char *why, size_t whylen);
static int check_access_key(const char *v, char *why, size_t whylen);
static int check_log_file(const char *v, char *why, size_t whylen);

#define P(f)  offsetof(struct policy, f)
#define T(f)  offsetof(struct policy_tls, f)
#define U(f)  offsetof(struct policy_upstream, f)
#define L(f)  offsetof(struct policy_lock, f)
#define R(f)  offsetof(struct policy_route, f)
#define C(f)  offsetof(struct policy_client, f)
#define A(f)  offsetof(struct policy_allow, f)
#define LIM(f) offsetof(struct policy_limits, f)
#define LOG(f) offsetof(struct policy_log, f)
#define MS_DAY (24LL * 3600 * 1000)
#define STR_MAX 4096

static const struct key keys[] = {
	{ "listen", KT_STRINGS, "[\"127.0.0.1:8080\"]", 1, 16, 0, P(listen), P(nlisten),
	  sizeof(struct policy_listen), NULL, check_listen,
	  "addresses to listen on: \"IPv4:PORT\", \"[IPv6]:PORT\" or \":PORT\" (all IPv4)" },
	{ "mode", KT_ENUM, "\"s3\"", 0, 0, 0, P(mode), 0, 0, mode_names, NULL,
	  "\"s3\": the S3 REST API with SigV4 clients; \"http\": any HTTP API with bearer tokens" },
	{ "tls", KT_OBJECT, NULL, 0, 0, 0, P(tls), 0, 0, NULL, NULL,
	  "serve HTTPS; absent: plain HTTP" },
	{ "tls.cert", KT_STRING, NULL, 1, STR_MAX, 0, T(cert), 0, 0, NULL, NULL,
	  "PEM certificate chain file (required with tls)" },
	{ "tls.key", KT_STRING, NULL, 1, STR_MAX, 0, T(key), 0, 0, NULL, NULL,
	  "PEM private key file (required with tls)" },
	{ "tls.ca", KT_STRING, NULL, 1, STR_MAX, 0, T(ca), 0, 0, NULL, NULL,
	  "PEM CA file: when set, clients must present a certificate it signed" },
	{ "tls.min_version", KT_ENUM, "\"1.2\"", 0, 0, 0, T(min_version), 0, 0,
	  tls_version_names, NULL, "lowest TLS version accepted: \"1.2\" or \"1.3\"" },
	{ "upstream", KT_OBJECT, NULL, 0, 0, 0, P(upstream), 0, 0, NULL, NULL,
	  "where requests are forwarded" },
	{ "upstream.endpoint", KT_STRING, NULL, 1, STR_MAX, 0, U(endpoint), 0, 0, NULL,
	  check_http_url, "http(s) URL of the S3 endpoint or HTTP API (required in http "
	  "mode); absent in s3 mode: the local directory data_dir is the store" },
	{ "upstream.region", KT_STRING, "\"us-east-1\"", 1, 64, 0, U(region), 0, 0, NULL,
	  NULL, "S3 signing region for the upstream" },
	{ "upstream.profile", KT_STRING, NULL, 1, 256, 0, U(profile), 0, 0, NULL, NULL,
	  "~/.aws/credentials profile for upstream credentials; absent: AWS_* environment, "
	  "then the default profile" },
	{ "upstream.ca_bundle", KT_STRING, NULL, 1, STR_MAX, 0, U(ca_bundle), 0, 0, NULL,
	  NULL, "PEM CA file to verify the upstream with; absent: system CAs" },
	{ "upstream.verify", KT_BOOL, "true", 0, 0, 0, U(verify), 0, 0, NULL, NULL,
	  "verify the upstream's TLS certificate" },
	{ "data_dir", KT_STRING, "\"./fencegate-data\"", 1, STR_MAX, KF_DOC_DEFAULT,
	  P(data_dir), 0, 0, NULL, NULL,
	  "s3 mode without upstream.endpoint: local directory store (bucket = sub-directory); "
	  "not allowed with upstream.endpoint" },
	{ "lock_store", KT_STRING, NULL, 1, STR_MAX, 0, P(lock_store), 0, 0, NULL,
	  check_store_url, "default store of locks: \"s3://BUCKET[/ROOT]\" or \"file:///DIR\"; "
	  "absent in s3 mode: the bucket of the first route naming the lock" },
	{ "locks", KT_OBJECTS, NULL, 0, 1024, 0, P(locks), P(nlocks),
	  sizeof(struct policy_lock), NULL, NULL, "the locks routes refer to" },
	{ "locks[].name", KT_STRING, NULL, 1, LOCK_NAME_MAX, KF_REQUIRED, L(name), 0, 0, NULL,
	  check_lock_name, "lock name: [A-Za-z0-9._-], 1 to 128, not \".\" or \"..\"; unique" },
	{ "locks[].store", KT_STRING, "lock_store", 1, STR_MAX, KF_DOC_DEFAULT, L(store), 0, 0,
	  NULL, check_store_url, "where its epoch files live: \"s3://BUCKET[/ROOT]\" or "
	  "\"file:///DIR\"" },
	{ "locks[].prefix", KT_STRING, "\"ROOT/locks/NAME/lock-\"", 1, 1024, KF_DOC_DEFAULT,
	  L(prefix), 0, 0, NULL, check_key_prefix,
	  "full key prefix of its epoch files (\"locks/lock-\" shares the TypeScript client's)" },
	{ "routes", KT_OBJECTS, NULL, 0, 4096, 0, P(routes), P(nroutes),
	  sizeof(struct policy_route), NULL, NULL,
	  "path prefix -> lock; the longest matching prefix wins" },
	{ "routes[].prefix", KT_STRING, NULL, 1, 1024, KF_REQUIRED, R(prefix), 0, 0, NULL,
	  check_path_prefix, "request path prefix (\"/bucket/dir/\"), starts with \"/\"; unique" },
	{ "routes[].lock", KT_STRING, NULL, 1, LOCK_NAME_MAX, KF_REQUIRED, R(lock_name), 0, 0,
	  NULL, NULL, "name of a lock in locks[]" },
	{ "routes[].methods", KT_METHODS, "[\"PUT\",\"POST\",\"DELETE\",\"PATCH\"]", 1, 6, 0,
	  R(methods), 0, 0, NULL, NULL,
	  "fenced methods, from GET HEAD PUT POST DELETE PATCH (an unknown method is always fenced)" },
	{ "routes[].strict", KT_BOOL, "false", 0, 0, 0, R(strict), 0, 0, NULL, NULL,
	  "list the lock before every write; refuse writes whose lease has lapsed" },
	{ "routes[].allow_lock_header", KT_BOOL, "false", 0, 0, 0, R(allow_lock_header), 0, 0,
	  NULL, NULL, "a request may name its lock with X-Fencing-Lock / x-amz-meta-fencing-lock" },
	{ "routes[].anonymous_read", KT_BOOL, "false", 0, 0, 0, R(anonymous_read), 0, 0, NULL,
	  NULL, "reads under the prefix need no authentication" },
	{ "unrouted_writes", KT_ENUM, "\"reject\"", 0, 0, 0, P(unrouted_writes), 0, 0,
	  unrouted_names, NULL, "a write no route matches: \"reject\" (403), \"allow\" "
	  "(unfenced), \"bucket_lock\" (fenced by the lock named after the bucket)" },
	{ "clients", KT_OBJECTS, NULL, 0, 4096, 0, P(clients), P(nclients),
	  sizeof(struct policy_client), NULL, NULL,
	  "who may connect; none: authentication off, allowed only on loopback" },
	{ "clients[].name", KT_STRING, "access_key", 1, 128, KF_DOC_DEFAULT, C(name), 0, 0, NULL,
	  NULL, "name for logs; unique; default: the access key, or \"clients[N]\" in http mode" },
	{ "clients[].access_key", KT_STRING, NULL, 1, 128, 0, C(access_key), 0, 0, NULL,
	  check_access_key, "s3 mode (required): the SigV4 access key id; unique" },
	{ "clients[].secret_env", KT_STRING, NULL, 1, 256, 0, C(secret_env), 0, 0, NULL,
	  check_env_name, "s3 mode: environment variable holding the secret key (read at load)" },
	{ "clients[].secret_file", KT_STRING, NULL, 1, STR_MAX, 0, C(secret_file), 0, 0, NULL,
	  NULL, "s3 mode: file holding the secret key (read at load; trailing newline dropped)" },
	{ "clients[].token_env", KT_STRING, NULL, 1, 256, 0, C(token_env), 0, 0, NULL,
	  check_env_name, "http mode: environment variable holding the bearer token" },
	{ "clients[].token_file", KT_STRING, NULL, 1, STR_MAX, 0, C(token_file), 0, 0, NULL,
	  NULL, "http mode: file holding the bearer token" },
	{ "clients[].allow", KT_OBJECTS, NULL, 0, 256, 0, C(allow), C(nallow),
	  sizeof(struct policy_allow), NULL, NULL,
	  "what the client may do where; none: nothing (except anonymous_read routes)" },
	{ "clients[].allow[].prefix", KT_STRING, NULL, 1, 1024, KF_REQUIRED, A(prefix), 0, 0,
	  NULL, check_path_prefix, "request path prefix, \"/\" for everything" },
	{ "clients[].allow[].actions", KT_ACTIONS, NULL, 1, 3, KF_REQUIRED, A(actions), 0, 0,
	  NULL, NULL, "subset of \"read\", \"write\", \"lock\"" },
	{ "limits", KT_OBJECT, NULL, 0, 0, 0, P(limits), 0, 0, NULL, NULL,
	  "sizes and timeouts" },
	{ "limits.header_bytes", KT_INT, "16384", 256, 1048576, 0, LIM(header_bytes), 0, 0,
	  NULL, NULL, "request line + headers; over: 431" },
	{ "limits.header_count", KT_INT, "100", 1, 10000, 0, LIM(header_count), 0, 0, NULL,
	  NULL, "request headers; over: 431" },
	{ "limits.url_bytes", KT_INT, "8192", 16, 1048576, 0, LIM(url_bytes), 0, 0, NULL, NULL,
	  "request target; over: 414" },
	{ "limits.idle_timeout_ms", KT_INT, "60000", 1, MS_DAY, 0, LIM(idle_timeout_ms), 0, 0,
	  NULL, NULL, "keep-alive connection idle time" },
	{ "limits.header_timeout_ms", KT_INT, "10000", 1, MS_DAY, 0, LIM(header_timeout_ms), 0,
	  0, NULL, NULL, "whole request head must arrive within; over: 408" },
	{ "limits.body_timeout_ms", KT_INT, "60000", 1, MS_DAY, 0, LIM(body_timeout_ms), 0, 0,
	  NULL, NULL, "request body inactivity; over: 408" },
	{ "limits.body_min_rate", KT_INT, "1024", 0, 1073741824, 0, LIM(body_min_rate), 0, 0,
	  NULL, NULL, "bytes/s a request body must average after body_timeout_ms of grace "
	  "(time paused for upstream back-pressure does not count); slower: 408; 0: no minimum" },
	{ "limits.send_timeout_ms", KT_INT, "60000", 1, MS_DAY, 0, LIM(send_timeout_ms), 0, 0,
	  NULL, NULL, "client not reading the response; over: close" },
	{ "limits.max_connections", KT_INT, "10000", 1, 1000000, 0, LIM(max_connections), 0, 0,
	  NULL, NULL, "open client connections; more wait in the listen backlog; capped by "
	  "RLIMIT_NOFILE (2 each + 32)" },
	{ "limits.replay_bytes", KT_INT, "65536", 0, 16777216, 0, LIM(replay_bytes), 0, 0, NULL,
	  NULL, "request bodies up to this size are kept so they can be re-sent" },
	{ "limits.upstream_connect_timeout_ms", KT_INT, "5000", 1, MS_DAY, 0,
	  LIM(upstream_connect_timeout_ms), 0, 0, NULL, NULL, "upstream connect; over: 504" },
	{ "limits.upstream_timeout_ms", KT_INT, "60000", 1, MS_DAY, 0, LIM(upstream_timeout_ms),
	  0, 0, NULL, NULL, "upstream response head / body inactivity; over: 504" },
	{ "limits.upstream_total_timeout_ms", KT_INT, "0", 0, MS_DAY, 0,
	  LIM(upstream_total_timeout_ms), 0, 0, NULL, NULL, "whole upstream transfer; 0: none" },
	{ "limits.drain_timeout_ms", KT_INT, "30000", 0, MS_DAY, 0, LIM(drain_timeout_ms), 0, 0,
	  NULL, NULL, "on SIGTERM, wait this long for requests in flight" },
	{ "limits.refresh_interval_ms", KT_INT, "1000", 50, 3600000, 0, LIM(refresh_interval_ms),
	  0, 0, NULL, NULL, "how often each lock's latest epoch is listed (non-strict routes)" },
	{ "limits.objcache_entries", KT_INT, "100000", 0, 100000000, 0, LIM(objcache_entries), 0,
	  0, NULL, NULL, "(ETag, epoch) entries cached per proxy; 0: no cache" },
	{ "log", KT_OBJECT, NULL, 0, 0, 0, P(log), 0, 0, NULL, NULL, "logging" },
	{ "log.level", KT_NAME, "\"info\"", 0, 0, 0, LOG(level), 0, 0, level_names, NULL,
	  "\"error\", \"warn\", \"info\" or \"debug\"" },
	{ "log.access_log", KT_STRING, NULL, 1, STR_MAX, 0, LOG(access_log), 0, 0, NULL,
	  check_log_file, "access log file, \"-\" for stderr; absent: no access log" },
	{ "log.error_log", KT_STRING, NULL, 1, STR_MAX, 0, LOG(error_log), 0, 0, NULL,
	  check_log_file, "error log file (stderr is pointed at it), \"-\" for stderr; "
	  "absent: stderr" },
	{ "log.format", KT_NAME, "\"json\"", 0, 0, 0, LOG(format), 0, 0, format_names, NULL,
	  "access log format: \"json\" (one object per line)" },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *ktype_name(enum ktype t)
{
	switch (t) {
	case KT_OBJECT: return "object";
	case KT_OBJECTS: return "array of objects";
	case KT_STRING: return "string";
	case KT_STRINGS: return "array of strings";
	case KT_BOOL: return "boolean";
	case KT_INT: return "integer";
	case KT_ENUM:
	case KT_NAME: return "string (enum)";
	case KT_METHODS: return "array of strings";
	case KT_ACTIONS: return "array of strings";
	}
	return "?";
}

int policy_key_info(size_t i, struct policy_key_info *out)
{
	if (i >= NKEYS)
		return 0;
	out->path = keys[i].path;
	out->type = ktype_name(keys[i].type);
	out->def = keys[i].def;
	out->min = keys[i].min;
	out->max = keys[i].max;
	out->required = keys[i].flags & KF_REQUIRED;
	out->doc = keys[i].doc;
	return 1;
}

/* ---- parser state -------------------------------------------------------- */

struct parser {
	char *err;
	size_t errlen;
	int failed;   /* first error wins */
};

static int fail(struct parser *ps, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parser *ps, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->failed)
		return -1;
	ps->failed = 1;
	if (!ps->err || ps->errlen == 0)
		return -1;
	n = snprintf(ps->err, ps->errlen, "%s: ", path && *path ? path : "config");
	if (n < 0 || (size_t)n >= ps->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* The table path's parent ("" for top level) equals tpath; *name gets the
 * last component. */
static int key_in(const struct key *k, const char *tpath, const char **name)
{
	const char *dot = strrchr(k->path, '.');
	size_t plen = dot ? (size_t)(dot - k->path) : 0;

	if (strlen(tpath) != plen || strncmp(k->path, tpath, plen) != 0)
		return 0;
	*name = dot ? dot + 1 : k->path;
	return 1;
}

static const struct key *key_find(const char *tpath, const char *name)
{
	const char *kn;

	for (size_t i = 0; i < NKEYS; i++)
		if (key_in(&keys[i], tpath, &kn) && strcmp(kn, name) == 0)
			return &keys[i];
	return NULL;
}

/* Edit distance, capped: for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[65], cur[65];

	if (la > 64 || lb > 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
	}
	return prev[lb];
}

static const char *suggest(const char *tpath, const char *name)
{
	const char *best = NULL, *kn;
	size_t best_d = 3;

	for (size_t i = 0; i < NKEYS; i++) {
		size_t d;

		if (!key_in(&keys[i], tpath, &kn))
			continue;
		d = edit_distance(name, kn);
		if (d < best_d) {
			best_d = d;
			best = kn;
		}
	}
	return best;
}

static void path_join(char *out, size_t outlen, const char *parent, const char *name)
{
	if (!parent || !*parent)
		snprintf(out, outlen, "%s", name);
	else
		snprintf(out, outlen, "%s.%s", parent, name);
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static int walk_object(struct parser *ps, const cJSON *obj, const char *tpath,
		       const char *path, void *base);

static int set_string(struct parser *ps, const struct key *k, const cJSON *it,
		      const char *path, char **slot)
{
	const char *s;
	size_t n;
	char why[256];

	if (!cJSON_IsString(it) || !it->valuestring)
		return fail(ps, path, "must be a string");
	s = it->valuestring;
	n = strlen(s);
	if ((long long)n < k->min)
		return fail(ps, path, "must not be empty");
	if ((long long)n > k->max)
		return fail(ps, path, "longer than %lld bytes", k->max);
	if (has_control(s))
		return fail(ps, path, "contains a control character");
	if (k->check && k->check(s, why, sizeof(why)) < 0)
		return fail(ps, path, "%s", why);
	free(*slot);
	*slot = strdup(s);
	if (!*slot)
		return fail(ps, path, "out of memory");
	return 0;
}

static int enum_index(const char *const *values, const char *s)
{
	for (int i = 0; values[i]; i++)
		if (strcmp(values[i], s) == 0)
			return i;
	return -1;
}

static void enum_list(const char *const *values, char *out, size_t outlen)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; values[i] && used < outlen; i++) {
		int n = snprintf(out + used, outlen - used, "%s\"%s\"", i ? ", " : "", values[i]);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

static const char *const method_names[] = { "GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", NULL };
static const char *const action_names[] = { "read", "write", "lock", NULL };

/* Array of names from a fixed list -> bit mask. */
static int set_names(struct parser *ps, const struct key *k, const cJSON *it,
		     const char *path, unsigned *slot)
{
	const char *const *names = k->type == KT_METHODS ? method_names : action_names;
	const cJSON *el;
	unsigned mask = 0;
	int i = 0, n;
	char epath[600], list[128];

	if (!cJSON_IsArray(it))
		return fail(ps, path, "must be an array of strings");
	n = cJSON_GetArraySize(it);
	if (n < k->min)
		return fail(ps, path, "must not be empty");
	cJSON_ArrayForEach(el, it) {
		int idx;

		snprintf(epath, sizeof(epath), "%s[%d]", path, i++);
		if (!cJSON_IsString(el))
			return fail(ps, epath, "must be a string");
		idx = enum_index(names, el->valuestring);
		if (idx < 0) {
			enum_list(names, list, sizeof(list));
			return fail(ps, epath, "unknown %s \"%s\" (one of %s)",
				    k->type == KT_METHODS ? "method" : "action",
				    el->valuestring, list);
		}
		if (k->type == KT_METHODS)
			mask |= method_from_name(el->valuestring);
		else
			mask |= 1u << idx;
	}
	if (k->type == KT_METHODS)
		mask |= METHOD_OTHER;
	*slot = mask;
	return 0;
}

/* Stores JSON value it at key k into base (the enclosing struct). */
static int set_value(struct parser *ps, const struct key *k, const cJSON *it,
		     const char *path, void *base)
{
	char *field = (char *)base + k->off;
	char epath[600], list[128];

	switch (k->type) {
	case KT_OBJECT:
		if (!cJSON_IsObject(it))
			return fail(ps, path, "must be an object");
		return walk_object(ps, it, k->path, path, field);
	case KT_STRING:
		return set_string(ps, k, it, path, (char **)field);
	case KT_BOOL:
		if (!cJSON_IsBool(it))
			return fail(ps, path, "must be true or false");
		*(bool *)field = cJSON_IsTrue(it);
		return 0;
	case KT_INT: {
		double v;

		if (!cJSON_IsNumber(it))
			return fail(ps, path, "must be an integer");
		v = it->valuedouble;
		if (!isfinite(v) || v != floor(v))
			return fail(ps, path, "must be an integer");
		if (v < (double)k->min || v > (double)k->max)
			return fail(ps, path, "%.17g is out of range (%lld to %lld)", v, k->min,
				    k->max);
		*(long long *)field = (long long)v;
		return 0;
	}
	case KT_ENUM:
	case KT_NAME: {
		int idx;

		enum_list(k->values, list, sizeof(list));
		if (!cJSON_IsString(it))
			return fail(ps, path, "must be one of %s", list);
		idx = enum_index(k->values, it->valuestring);
		if (idx < 0)
			return fail(ps, path, "\"%s\" is not one of %s", it->valuestring, list);
		if (k->type == KT_NAME)
			*(const char **)field = k->values[idx];
		else
			*(int *)field = idx;
		return 0;
	}
	case KT_METHODS:
	case KT_ACTIONS:
		return set_names(ps, k, it, path, (unsigned *)field);
	case KT_STRINGS:
	case KT_OBJECTS: {
		const cJSON *el;
		char *items;
		size_t n, i = 0;
		char etpath[128];

		if (!cJSON_IsArray(it))
			return fail(ps, path, "must be an array%s",
				    k->type == KT_OBJECTS ? " of objects" : " of strings");
		n = (size_t)cJSON_GetArraySize(it);
		if ((long long)n < k->min)
			return fail(ps, path, "needs at least %lld element%s", k->min,
				    k->min == 1 ? "" : "s");
		if ((long long)n > k->max)
			return fail(ps, path, "more than %lld elements", k->max);
		if (*(void **)field)
			return fail(ps, path, "given twice");
		items = n ? calloc(n, k->elem) : NULL;
		if (n && !items)
			return fail(ps, path, "out of memory");
		*(void **)field = items;
		*(size_t *)((char *)base + k->off_n) = n;
		snprintf(etpath, sizeof(etpath), "%s[]", k->path);
		cJSON_ArrayForEach(el, it) {
			char *elem = items + i * k->elem;

			snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
			i++;
			if (k->type == KT_STRINGS) {
				struct key sk = *k;

				sk.min = 1;
				sk.max = 256;
				if (set_string(ps, &sk, el, epath, (char **)elem) < 0)
					return -1;
			} else {
				if (!cJSON_IsObject(el))
					return fail(ps, epath, "must be an object");
				if (walk_object(ps, el, etpath, epath, elem) < 0)
					return -1;
			}
		}
		return 0;
	}
	}
	return fail(ps, path, "internal: unknown key type");
}

/* Applies the JSON default text of k. */
static int set_default(struct parser *ps, const struct key *k, const char *path, void *base)
{
	cJSON *def = cJSON_Parse(k->def);
	int rc;

	if (!def)
		return fail(ps, path, "internal: bad default");
	rc = set_value(ps, k, def, path, base);
	cJSON_Delete(def);
	return rc;
}

/* Walks obj (NULL: absent, only defaults) whose table path is tpath and
 * real path is path, filling base. */
static int walk_object(struct parser *ps, const cJSON *obj, const char *tpath,
		       const char *path, void *base)
{
	const cJSON *it, *prev;
	const char *kn;
	char cpath[600];

	if (obj) {
		cJSON_ArrayForEach(it, obj) {
			const struct key *k;

			if (!it->string)
				return fail(ps, path, "internal: member without a name");
			path_join(cpath, sizeof(cpath), path, it->string);
			for (prev = obj->child; prev != it; prev = prev->next)
				if (strcmp(prev->string, it->string) == 0)
					return fail(ps, cpath, "given twice");
			k = key_find(tpath, it->string);
			if (!k) {
				const char *s = suggest(tpath, it->string);

				if (s)
					return fail(ps, cpath, "unknown key (did you mean \"%s\"?)", s);
				return fail(ps, cpath, "unknown key");
			}
			if (set_value(ps, k, it, cpath, base) < 0)
				return -1;
		}
	}
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];

		if (!key_in(k, tpath, &kn))
			continue;
		if (obj && cJSON_GetObjectItemCaseSensitive(obj, kn))
			continue;
		path_join(cpath, sizeof(cpath), path, kn);
		if (k->flags & KF_REQUIRED)
			return fail(ps, cpath, "required");
		if (k->type == KT_OBJECT) {
			if (walk_object(ps, NULL, k->path, cpath, (char *)base + k->off) < 0)
				return -1;
		} else if (k->def && !(k->flags & KF_DOC_DEFAULT)) {
			if (set_default(ps, k, cpath, base) < 0)
				return -1;
		}
	}
	return 0;
}

/* ---- value checks ------------------------------------------------------ */

static int ipv4_loopback(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> 24) == 127;
}

/* "HOST:PORT" -> host (no brackets) and port; loopback and family. */
static int split_listen(const char *v, char *host, size_t hostlen, int *port,
			int *loopback, int *ipv6, char *why, size_t whylen)
{
	const char *colon, *hs, *he;
	char *end;
	long p;
	struct in_addr a4;
	struct in6_addr a6;

	if (v[0] == '[') {
		he = strchr(v, ']');
		if (!he || he[1] != ':') {
			snprintf(why, whylen, "\"%s\" is not ADDR:PORT ([IPv6]:PORT)", v);
			return -1;
		}
		hs = v + 1;
		colon = he + 1;
		*ipv6 = 1;
	} else {
		colon = strrchr(v, ':');
		if (!colon || strchr(v, ':') != colon) {
			snprintf(why, whylen, "\"%s\" is not ADDR:PORT (write IPv6 as [::1]:PORT)", v);
			return -1;
		}
		hs = v;
		he = colon;
		*ipv6 = 0;
	}
	if ((size_t)(he - hs) >= hostlen) {
		snprintf(why, whylen, "\"%s\": address too long", v);
		return -1;
	}
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = '\0';
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (!isdigit((unsigned char)colon[1]) || *end || errno || p < 1 || p > 65535) {
		snprintf(why, whylen, "\"%s\": port must be 1 to 65535", v);
		return -1;
	}
	*port = (int)p;
	if (*ipv6) {
		if (inet_pton(AF_INET6, host, &a6) != 1) {
			snprintf(why, whylen, "\"%s\": \"%s\" is not an IPv6 address", v, host);
			return -1;
		}
		*loopback = IN6_IS_ADDR_LOOPBACK(&a6) ||
			(IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	} else if (!*host) {
		*loopback = 0;   /* ":PORT": every IPv4 address */
	} else {
		if (inet_pton(AF_INET, host, &a4) != 1) {
			snprintf(why, whylen, "\"%s\": \"%s\" is not an IPv4 address "
				 "(host names are not resolved)", v, host);
			return -1;
		}
		*loopback = ipv4_loopback(&a4);
	}
	return 0;
}

static int check_listen(const char *v, char *why, size_t whylen)
{
	char host[INET6_ADDRSTRLEN + 1];
	int port, lo, v6;

	return split_listen(v, host, sizeof(host), &port, &lo, &v6, why, whylen);
}

static int check_http_url(const char *v, char *why, size_t whylen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *query = NULL, *frag = NULL;
	int rc = -1;

	if (!u) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (curl_url_set(u, CURLUPART_URL, v, CURLU_DISALLOW_USER) != CURLUE_OK) {
		snprintf(why, whylen, "\"%s\" is not a valid URL (http://HOST[:PORT][/PATH] "
			 "without user or password)", v);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		snprintf(why, whylen, "\"%s\": the scheme must be http or https", v);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		snprintf(why, whylen, "\"%s\": no host", v);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0) == CURLUE_OK) {
		snprintf(why, whylen, "\"%s\": no query or fragment allowed", v);
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(query);
	curl_free(frag);
	curl_url_cleanup(u);
	return rc;
}

/* S3 bucket naming: 3-63 of [a-z0-9.-], starting and ending alphanumeric. */
static int bucket_name_valid(const char *b, size_t n)
{
	if (n < 3 || n > 63 || !isalnum((unsigned char)b[0]) || !isalnum((unsigned char)b[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) ||
		      b[i] == '.' || b[i] == '-'))
			return 0;
	return 1;
}

static int check_store_url(const char *v, char *why, size_t whylen)
{
	if (strncmp(v, "s3://", 5) == 0) {
		const char *b = v + 5, *slash = strchr(b, '/');
		size_t n = slash ? (size_t)(slash - b) : strlen(b);

		if (!bucket_name_valid(b, n)) {
			snprintf(why, whylen, "\"%s\": \"%.*s\" is not a valid bucket name", v,
				 (int)n, b);
			return -1;
		}
		if (slash && (slash[1] == '/' || strstr(slash, "/../") || strstr(slash, "/./"))) {
			snprintf(why, whylen, "\"%s\": bad ROOT after the bucket", v);
			return -1;
		}
		return 0;
	}
	if (strncmp(v, "file:///", 8) == 0)
		return 0;
	snprintf(why, whylen, "\"%s\" is not s3://BUCKET[/ROOT] or file:///DIR", v);
	return -1;
}

static int check_lock_name(const char *v, char *why, size_t whylen)
{
	if (lock_name_valid(v))
		return 0;
	snprintf(why, whylen, "\"%s\" is not a valid lock name ([A-Za-z0-9._-], 1 to %d, "
		 "not \".\" or \"..\")", v, LOCK_NAME_MAX);
	return -1;
}

static int has_dot_segment(const char *p)
{
	const char *seg = p;

	for (;;) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);

		if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 1;
		if (!end)
			return 0;
		seg = end + 1;
	}
}

static int check_path_prefix(const char *v, char *why, size_t whylen)
{
	if (v[0] != '/') {
		snprintf(why, whylen, "\"%s\" must start with \"/\"", v);
		return -1;
	}
	if (has_dot_segment(v) || strstr(v, "//")) {
		snprintf(why, whylen, "\"%s\" has an empty, \".\" or \"..\" segment", v);
		return -1;
	}
	if (strchr(v, '%') || strchr(v, '?')) {
		snprintf(why, whylen, "\"%s\": write the path decoded, without '%%' escapes or '?'",
			 v);
		return -1;
	}
	return 0;
}

static int check_key_prefix(const char *v, char *why, size_t whylen)
{
	if (v[0] == '/' || has_dot_segment(v)) {
		snprintf(why, whylen, "\"%s\" must be a key prefix: no leading \"/\", no \".\" or "
			 "\"..\" segment", v);
		return -1;
	}
	return 0;
}

static int check_env_name(const char *v, char *why, size_t whylen)
{
	if (!(isalpha((unsigned char)v[0]) || v[0] == '_'))
		goto bad;
	for (const char *s = v; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			goto bad;
	return 0;
bad:
	snprintf(why, whylen, "\"%s\" is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
		 v);
	return -1;
}

static int check_access_key(const char *v, char *why, size_t whylen)
{
	for (const char *s = v; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '.' || *s == '_' || *s == '-')) {
			snprintf(why, whylen, "\"%s\": an access key is [A-Za-z0-9._-]", v);
			return -1;
		}
	return 0;
}

static int check_log_file(const char *v, char *why, size_t whylen)
{
	if (strcmp(v, "-") == 0 || v[0] == '/')
		return 0;
	snprintf(why, whylen, "\"%s\": an absolute path, or \"-\" for stderr", v);
	return -1;
}

/* ---- checks across keys ------------------------------------------------ */

/* Reads a secret from the environment or a file into *out. */
static int read_secret(struct parser *ps, const char *path, const char *env,
		       const char *file, char **out, size_t *outlen)
{
	char buf[POLICY_SECRET_MAX + 2];
	size_t n = 0;
	int fd = -1, rc = -1;

	if (env) {
		const char *v = getenv(env);

		if (!v)
			return fail(ps, path, "environment variable \"%s\" is not set", env);
		n = strlen(v);
		if (n == 0)
			return fail(ps, path, "environment variable \"%s\" is empty", env);
		if (n > POLICY_SECRET_MAX)
			return fail(ps, path, "environment variable \"%s\" is longer than %d bytes",
				    env, POLICY_SECRET_MAX);
		memcpy(buf, v, n);
	} else {
		struct stat st;
		ssize_t r;

		fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			fail(ps, path, "cannot read \"%s\": %s", file, strerror(errno));
			goto out;
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			fail(ps, path, "\"%s\" is not a regular file", file);
			goto out;
		}
		while (n < sizeof(buf)) {
			r = read(fd, buf + n, sizeof(buf) - n);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				fail(ps, path, "cannot read \"%s\": %s", file, strerror(errno));
				goto out;
			}
			if (r == 0)
				break;
			n += (size_t)r;
		}
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
		if (n == 0) {
			fail(ps, path, "\"%s\" is empty", file);
			goto out;
		}
		if (n > POLICY_SECRET_MAX) {
			fail(ps, path, "\"%s\" is longer than %d bytes", file, POLICY_SECRET_MAX);
			goto out;
		}
		if (memchr(buf, '\0', n) || memchr(buf, '\n', n)) {
			fail(ps, path, "\"%s\" holds more than one line", file);
			goto out;
		}
	}
	*out = malloc(n + 1);
	if (!*out) {
		fail(ps, path, "out of memory");
		goto out;
	}
	memcpy(*out, buf, n);
	(*out)[n] = '\0';
	*outlen = n;
	rc = 0;
out:
	explicit_bzero(buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	return rc;
}

static int check_clients(struct parser *ps, struct policy *p)
{
	char path[128], pbuf[160];
	struct policy_client *cs = p->clients;

	for (size_t i = 0; i < p->nclients; i++) {
		struct policy_client *c = &cs[i];
		const char *env, *file, *ename, *fname;

		snprintf(path, sizeof(path), "clients[%zu]", i);
		if (p->mode == POLICY_MODE_S3) {
			if (c->token_env || c->token_file)
				return fail(ps, path, "%s is for http mode; in s3 mode use "
					    "access_key with secret_env or secret_file",
					    c->token_env ? "token_env" : "token_file");
			if (!c->access_key) {
				snprintf(pbuf, sizeof(pbuf), "%s.access_key", path);
				return fail(ps, pbuf, "required in s3 mode");
			}
			env = c->secret_env;
			file = c->secret_file;
			ename = "secret_env";
			fname = "secret_file";
		} else {
			if (c->access_key || c->secret_env || c->secret_file)
				return fail(ps, path, "%s is for s3 mode; in http mode use "
					    "token_env or token_file",
					    c->access_key ? "access_key" :
					    c->secret_env ? "secret_env" : "secret_file");
			env = c->token_env;
			file = c->token_file;
			ename = "token_env";
			fname = "token_file";
		}
		if (env && file)
			return fail(ps, path, "give %s or %s, not both", ename, fname);
		if (!env && !file)
			return fail(ps, path, "needs %s or %s", ename, fname);
		snprintf(pbuf, sizeof(pbuf), "%s.%s", path, env ? ename : fname);
		if (read_secret(ps, pbuf, env, file, &c->secret, &c->secret_len) < 0)
			return -1;
		SHA256((const unsigned char *)c->secret, c->secret_len,
		       c->token_sha256);
		if (!c->name) {
			if (c->access_key)
				c->name = strdup(c->access_key);
			else
				c->name = strdup(path);
			if (!c->name)
				return fail(ps, path, "out of memory");
		}
		for (size_t j = 0; j < i; j++) {
			if (c->access_key && strcmp(cs[j].access_key, c->access_key) == 0) {
				snprintf(pbuf, sizeof(pbuf), "%s.access_key", path);
				return fail(ps, pbuf, "\"%s\" is also the access key of clients[%zu]",
					    c->access_key, j);
			}
			if (strcmp(cs[j].name, c->name) == 0) {
				snprintf(pbuf, sizeof(pbuf), "%s.name", path);
				return fail(ps, pbuf, "\"%s\" is also the name of clients[%zu]",
					    c->name, j);
			}
			if (!c->access_key &&
			    memcmp(cs[j].token_sha256, c->token_sha256, 32) == 0) {
				snprintf(pbuf, sizeof(pbuf), "%s.%s", path, env ? ename : fname);
				return fail(ps, pbuf, "same token as clients[%zu]", j);
			}
		}
	}
	return 0;
}

/* "s3://B/ROOT" -> "ROOT/" (or ""); file:// has no root. */
static void store_root_of(const char *store, char *out, size_t outlen)
{
	const char *slash;

	out[0] = '\0';
	if (strncmp(store, "s3://", 5) != 0 || !(slash = strchr(store + 5, '/')) || !slash[1])
		return;
	snprintf(out, outlen, "%s%s", slash + 1,
		 slash[strlen(slash) - 1] == '/' ? "" : "/");
}

/* The first path segment of a decoded path, if it is a valid bucket-like
 * lock name (not starting with '_', reserved for /_fence/). */
static int first_segment(const char *path, char *out, size_t outlen)
{
	const char *s, *e;
	size_t n;

	if (!path || path[0] != '/')
		return 0;
	s = path + 1;
	e = strchr(s, '/');
	n = e ? (size_t)(e - s) : strlen(s);
	if (n == 0 || n >= outlen || s[0] == '_')
		return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return lock_name_valid(out);
}

static int check_locks(struct parser *ps, struct policy *p)
{
	char path[64], pbuf[128], root[STR_MAX + 2];

	for (size_t i = 0; i < p->nlocks; i++) {
		struct policy_lock *lk = &p->locks[i];

		snprintf(path, sizeof(path), "locks[%zu]", i);
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->locks[j].name, lk->name) == 0) {
				snprintf(pbuf, sizeof(pbuf), "%s.name", path);
				return fail(ps, pbuf, "\"%s\" is also the name of locks[%zu]",
					    lk->name, j);
			}
		if (!lk->store && p->lock_store)
			lk->store = strdup(p->lock_store);
		if (!lk->store && p->mode == POLICY_MODE_S3) {
			char bucket[LOCK_NAME_MAX + 1];

			for (size_t r = 0; r < p->nroutes; r++)
				if (strcmp(p->routes[r].lock_name, lk->name) == 0 &&
				    first_segment(p->routes[r].prefix, bucket, sizeof(bucket)) &&
				    bucket_name_valid(bucket, strlen(bucket))) {
					if (asprintf(&lk->store, "s3://%s", bucket) < 0)
						lk->store = NULL;
					break;
				}
		}
		if (!lk->store) {
			snprintf(pbuf, sizeof(pbuf), "%s.store", path);
			return fail(ps, pbuf, "required: no lock_store, and no route names lock \"%s\" "
				    "under a bucket", lk->name);
		}
		if (!lk->prefix) {
			store_root_of(lk->store, root, sizeof(root));
			if (asprintf(&lk->prefix, "%slocks/%s/lock-", root, lk->name) < 0) {
				lk->prefix = NULL;
				return fail(ps, path, "out of memory");
			}
		}
	}
	return 0;
}

static int route_cmp(const void *a, const void *b)
{
	const struct policy_route *x = a, *y = b;
	size_t lx = strlen(x->prefix), ly = strlen(y->prefix);

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(x->prefix, y->prefix);
}

static int check_routes(struct parser *ps, struct policy *p)
{
	char pbuf[128];

	for (size_t i = 0; i < p->nroutes; i++) {
		struct policy_route *r = &p->routes[i];

		if (strncmp(r->prefix, "/_fence", 7) == 0 && (!r->prefix[7] || r->prefix[7] == '/')) {
			snprintf(pbuf, sizeof(pbuf), "routes[%zu].prefix", i);
			return fail(ps, pbuf, "\"/_fence/\" is reserved for the lock API");
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->routes[j].prefix, r->prefix) == 0) {
				snprintf(pbuf, sizeof(pbuf), "routes[%zu].prefix", i);
				return fail(ps, pbuf, "\"%s\" is also the prefix of routes[%zu]",
					    r->prefix, j);
			}
		r->lock = policy_lock_by_name(p, r->lock_name);
		if (!r->lock) {
			snprintf(pbuf, sizeof(pbuf), "routes[%zu].lock", i);
			return fail(ps, pbuf, "no lock named \"%s\"", r->lock_name);
		}
	}
	if (p->nroutes > 1)
		qsort(p->routes, p->nroutes, sizeof(p->routes[0]), route_cmp);
	return 0;
}

static int client_key_cmp(const void *a, const void *b)
{
	const struct policy_client *const *x = a, *const *y = b;

	return strcmp((*x)->access_key, (*y)->access_key);
}

static int check_policy(struct parser *ps, struct policy *p)
{
	char pbuf[64];

	/* listen: split once for the daemon */
	for (size_t i = 0; i < p->nlisten; i++) {
		struct policy_listen *l = &p->listen[i];
		char host[INET6_ADDRSTRLEN + 1], why[256];
		int lo = 0, v6 = 0;

		snprintf(pbuf, sizeof(pbuf), "listen[%zu]", i);
		if (split_listen(l->addr, host, sizeof(host), &l->port, &lo, &v6, why,
				 sizeof(why)) < 0)
			return fail(ps, pbuf, "%s", why);
		l->loopback = lo;
		l->ipv6 = v6;
		l->host = strdup(host);
		if (!l->host)
			return fail(ps, pbuf, "out of memory");
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->listen[j].host, l->host) == 0 && p->listen[j].port == l->port)
				return fail(ps, pbuf, "\"%s\" is given twice", l->addr);
	}
	/* tls */
	p->tls.min_version = p->tls.min_version == 1 ? 13 : 12;
	if (p->tls.cert || p->tls.key || p->tls.ca) {
		if (!p->tls.cert)
			return fail(ps, "tls.cert", "required with tls");
		if (!p->tls.key)
			return fail(ps, "tls.key", "required with tls");
		p->tls.enabled = true;
	}
	/* upstream and where data lives */
	if (p->mode == POLICY_MODE_HTTP) {
		if (!p->upstream.endpoint)
			return fail(ps, "upstream.endpoint", "required in http mode");
		if (p->data_dir)
			return fail(ps, "data_dir", "only for s3 mode without upstream.endpoint");
	} else if (p->upstream.endpoint && p->data_dir) {
		return fail(ps, "data_dir", "not allowed with upstream.endpoint (the upstream is "
			    "the store)");
	} else if (!p->upstream.endpoint && !p->data_dir) {
		p->data_dir = strdup("./fencegate-data");
		if (!p->data_dir)
			return fail(ps, "data_dir", "out of memory");
	}
	if (p->unrouted_writes == POLICY_UNROUTED_BUCKET_LOCK && p->mode == POLICY_MODE_HTTP &&
	    !p->lock_store)
		return fail(ps, "unrouted_writes", "\"bucket_lock\" in http mode needs lock_store");
	/* routes before locks: a lock's default store comes from its routes */
	if (check_routes(ps, p) < 0 || check_locks(ps, p) < 0 || check_clients(ps, p) < 0)
		return -1;
	for (size_t i = 0; i < p->nroutes; i++)   /* lock pointers are final now */
		p->routes[i].lock = policy_lock_by_name(p, p->routes[i].lock_name);
	if (p->nclients == 0)
		for (size_t i = 0; i < p->nlisten; i++)
			if (!p->listen[i].loopback)
				return fail(ps, "clients", "authentication is off (no clients) but "
					    "listen address \"%s\" is not loopback", p->listen[i].addr);
	if (p->mode == POLICY_MODE_S3 && p->nclients) {
		p->by_key = calloc(p->nclients, sizeof(*p->by_key));
		if (!p->by_key)
			return fail(ps, "clients", "out of memory");
		for (size_t i = 0; i < p->nclients; i++)
			p->by_key[i] = &p->clients[i];
		qsort(p->by_key, p->nclients, sizeof(*p->by_key), client_key_cmp);
	}
	return 0;
}

/* ---- building and freeing ---------------------------------------------- */

static void free_str(char *s, int wipe)
{
	if (s && wipe)
		explicit_bzero(s, strlen(s));
	free(s);
}

static void policy_destroy(struct policy *p)
{
	struct policy_client *cs = p->clients;

	for (size_t i = 0; p->listen && i < p->nlisten; i++) {
		free(p->listen[i].addr);
		free(p->listen[i].host);
	}
	free(p->listen);
	free(p->tls.cert);
	free(p->tls.key);
	free(p->tls.ca);
	free(p->upstream.endpoint);
	free(p->upstream.region);
	free(p->upstream.profile);
	free(p->upstream.ca_bundle);
	free(p->data_dir);
	free(p->lock_store);
	for (size_t i = 0; p->locks && i < p->nlocks; i++) {
		free(p->locks[i].name);
		free(p->locks[i].store);
		free(p->locks[i].prefix);
	}
	free(p->locks);
	for (size_t i = 0; p->routes && i < p->nroutes; i++) {
		free(p->routes[i].prefix);
		free(p->routes[i].lock_name);
	}
	free(p->routes);
	for (size_t i = 0; cs && i < p->nclients; i++) {
		struct policy_client *c = &cs[i];

		free(c->name);
		free(c->access_key);
		if (c->secret)
			explicit_bzero(c->secret, c->secret_len);
		free(c->secret);
		explicit_bzero(c->token_sha256, sizeof(c->token_sha256));
		for (size_t j = 0; c->allow && j < c->nallow; j++)
			free(c->allow[j].prefix);
		free(c->allow);
		free_str(c->secret_env, 0);
		free_str(c->secret_file, 0);
		free_str(c->token_env, 0);
		free_str(c->token_file, 0);
	}
	free(cs);
	free(p->by_key);
	free(p->log.access_log);
	free(p->log.error_log);
	free(p->source);
	free(p);
}

static void line_col(const char *text, const char *at, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (const char *s = text; s < at && *s; s++) {
		if (*s == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Parses NUL-terminated text of length len; source names it in p->source. */
static struct policy *parse_text(const char *text, size_t len, const char *source,
				 char *err, size_t errlen)
{
	struct parser ps = { err, errlen, 0 };
	struct policy *p = NULL;
	cJSON *root = NULL;
	const char *end = NULL;

	if (err && errlen)
		err[0] = '\0';
	if (strlen(text) != len) {
		fail(&ps, NULL, "contains a NUL byte");
		goto fail;
	}
	root = cJSON_ParseWithOpts(text, &end, 1);
	if (!root) {
		int line, col;

		line_col(text, end ? end : text, &line, &col);
		fail(&ps, NULL, "invalid JSON at line %d, column %d", line, col);
		goto fail;
	}
	if (!cJSON_IsObject(root)) {
		fail(&ps, NULL, "must be a JSON object");
		goto fail;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		fail(&ps, NULL, "out of memory");
		goto fail;
	}
	p->refs = 1;
	if (walk_object(&ps, root, "", "", p) < 0)
		goto fail;
	if (check_policy(&ps, p) < 0)
		goto fail;
	p->source = strdup(source);
	if (!p->source) {
		fail(&ps, NULL, "out of memory");
		goto fail;
	}
	cJSON_Delete(root);
	return p;
fail:
	cJSON_Delete(root);
	if (p)
		policy_destroy(p);
	return NULL;
}

struct policy *policy_parse(const char *json, size_t len, char *err, size_t errlen)
{
	char *text = NULL;
	struct policy *p;

	if (!json || len > (size_t)POLICY_FILE_MAX) {
		snprintf(err, errlen, "config: %s", json ? "larger than 1 MiB" : "no text");
		return NULL;
	}
	text = malloc(len + 1);
	if (!text) {
		snprintf(err, errlen, "config: out of memory");
		return NULL;
	}
	memcpy(text, json, len);
	text[len] = '\0';
	p = parse_text(text, len, "(text)", err, errlen);
	free(text);
	return p;
}

struct policy *policy_load(const char *path, char *err, size_t errlen)
{
	struct policy *p = NULL;
	char *text = NULL, inner[POLICY_ERR_MAX];
	struct stat st;
	size_t n = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	if (st.st_size > POLICY_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %ld bytes", path, POLICY_FILE_MAX);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, text + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	text[n] = '\0';
	p = parse_text(text, n, path, inner, sizeof(inner));
	if (!p)
		snprintf(err, errlen, "%s: %s", path, inner);
out:
	free(text);
	close(fd);
	return p;
}

struct policy *policy_default(const struct policy_flags *flags, char *err, size_t errlen)
{
	cJSON *root = cJSON_CreateObject(), *listen = NULL, *up = NULL;
	char *text = NULL, *abs = NULL, inner[POLICY_ERR_MAX];
	const char *data_dir = flags->data_dir ? flags->data_dir : "./fencegate-data";
	struct policy *p = NULL;
	int ok = root != NULL;

	if (ok && flags->listen && flags->nlisten) {
		ok = (listen = cJSON_AddArrayToObject(root, "listen")) != NULL;
		for (size_t i = 0; ok && i < flags->nlisten; i++)
			ok = cJSON_AddItemToArray(listen, cJSON_CreateString(flags->listen[i]));
	}
	if (ok)
		ok = cJSON_AddStringToObject(root, "mode", flags->mode == POLICY_MODE_HTTP ?
					     "http" : "s3") != NULL;
	if (ok && flags->upstream) {
		ok = (up = cJSON_AddObjectToObject(root, "upstream")) != NULL &&
			cJSON_AddStringToObject(up, "endpoint", flags->upstream) != NULL;
		if (ok && flags->mode == POLICY_MODE_S3) {
			const char *region = getenv("AWS_REGION");

			if (!region || !*region)
				region = getenv("AWS_DEFAULT_REGION");
			if (region && *region)
				ok = cJSON_AddStringToObject(up, "region", region) != NULL;
		}
	} else if (ok && flags->mode == POLICY_MODE_S3) {
		ok = cJSON_AddStringToObject(root, "data_dir", data_dir) != NULL;
	}
	if (ok && flags->mode == POLICY_MODE_HTTP) {
		const char *store = flags->lock_store;

		if (!store) {
			char cwd[PATH_MAX];

			if (data_dir[0] == '/')
				ok = asprintf(&abs, "file://%s", data_dir) >= 0;
			else if (getcwd(cwd, sizeof(cwd)))
				ok = asprintf(&abs, "file://%s/%s", cwd,
					      strncmp(data_dir, "./", 2) == 0 ? data_dir + 2 :
					      data_dir) >= 0;
			else
				ok = 0;
			if (!ok)
				abs = NULL;
			store = abs;
		}
		ok = ok && cJSON_AddStringToObject(root, "lock_store", store) != NULL;
	}
	if (ok)
		ok = cJSON_AddStringToObject(root, "unrouted_writes", "bucket_lock") != NULL;
	if (ok)
		ok = (text = cJSON_PrintUnformatted(root)) != NULL;
	if (!ok) {
		snprintf(err, errlen, "flags: out of memory");
		goto out;
	}
	p = parse_text(text, strlen(text), "(flags)", inner, sizeof(inner));
	if (!p)
		snprintf(err, errlen, "flags: %s", inner);
out:
	free(text);
	free(abs);
	cJSON_Delete(root);
	return p;
}

struct policy *policy_hold(struct policy *p)
{
	if (p)
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	return p;
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	policy_destroy(p);
}

/* ---- lookups ----------------------------------------------------------- */

int policy_prefix_matches(const char *prefix, const char *path)
{
	size_t n;

	if (!prefix || !path)
		return 0;
	n = strlen(prefix);
	if (strncmp(prefix, path, n) != 0)
		return 0;
	if (n > 0 && prefix[n - 1] == '/')
		return 1;
	return path[n] == '\0' || path[n] == '/';
}

const struct policy_route *policy_route_for(const struct policy *p, const char *path)
{
	/* routes are sorted longest prefix first: the first match wins */
	for (size_t i = 0; p && i < p->nroutes; i++)
		if (policy_prefix_matches(p->routes[i].prefix, path))
			return &p->routes[i];
	return NULL;
}

const struct policy_lock *policy_lock_by_name(const struct policy *p, const char *name)
{
	for (size_t i = 0; p && name && i < p->nlocks; i++)
		if (strcmp(p->locks[i].name, name) == 0)
			return &p->locks[i];
	return NULL;
}

const struct policy_client *policy_client_by_key(const struct policy *p, const char *access_key)
{
	size_t lo = 0, hi;

	if (!p || !access_key || !p->by_key)
		return NULL;
	hi = p->nclients;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(access_key, p->by_key[mid]->access_key);

		if (c == 0)
			return p->by_key[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct policy_client *policy_client_by_token(const struct policy *p,
						   const char *token, size_t len)
{
	unsigned char digest[32];
	const struct policy_client *found = NULL;
	const struct policy_client *cs;

	if (!p || !token || p->mode != POLICY_MODE_HTTP || len == 0)
		return NULL;
	cs = p->clients;
	SHA256((const unsigned char *)token, len, digest);
	for (size_t i = 0; i < p->nclients; i++)
		if (CRYPTO_memcmp(digest, cs[i].token_sha256, sizeof(digest)) == 0)
			found = &cs[i];
	explicit_bzero(digest, sizeof(digest));
	return found;
}

int policy_client_allows(const struct policy_client *c, const char *path, unsigned actions)
{
	unsigned granted = 0;

	if (!c)
		return 1;
	if (!path || actions == 0)
		return 0;
	for (size_t i = 0; i < c->nallow; i++)
		if (policy_prefix_matches(c->allow[i].prefix, path))
			granted |= c->allow[i].actions;
	return (granted & actions) == actions;
}

static int allow_covers(const struct policy_client *c, const char *prefix)
{
	for (size_t i = 0; i < c->nallow; i++)
		if ((c->allow[i].actions & POLICY_ACT_LOCK) &&
		    policy_prefix_matches(c->allow[i].prefix, prefix))
			return 1;
	return 0;
}

int policy_client_may_lock(const struct policy *p, const struct policy_client *c,
			   const char *name)
{
	char bucket[LOCK_NAME_MAX + 2];

	if (!c)
		return 1;
	if (!p || !name)
		return 0;
	for (size_t i = 0; i < p->nroutes; i++)
		if (strcmp(p->routes[i].lock_name, name) == 0 &&
		    allow_covers(c, p->routes[i].prefix))
			return 1;
	if (p->unrouted_writes == POLICY_UNROUTED_BUCKET_LOCK && lock_name_valid(name) &&
	    name[0] != '_') {
		snprintf(bucket, sizeof(bucket), "/%s", name);
		return allow_covers(c, bucket);
	}
	return 0;
}

int policy_bucket_lock(const struct policy *p, const char *path, char *name, size_t namelen)
{
	if (!p || p->unrouted_writes != POLICY_UNROUTED_BUCKET_LOCK)
		return 0;
	return first_segment(path, name, namelen);
}

int policy_path_decode(const char *path, char *out, size_t outlen)
{
	if (!path || path[0] != '/' || pct_decode(path, strlen(path), PCT_NO_NUL, out, outlen) < 0)
		return -1;
	return has_dot_segment(out) ? -1 : 0;
}
