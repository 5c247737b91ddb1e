/* policy_schema.c — the configuration's schema: one table (policy_keys[]:
 * key path, type, default, bounds, required, the check of a single value,
 * one line of documentation) that drives the walk over the JSON in
 * policy.c, the defaults and the key list in README.md (policy_key_info),
 * and those checks of one value (listen addresses, URLs, store URLs, lock
 * names, prefixes, environment names, access keys). It holds no state,
 * reads no file and does not relate keys to each other (policy_check.c). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "lock/core/lock.h"
#include "policy.h"
#include "policy_int.h"

/* ---- the schema table ---------------------------------------------------- */

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
static int check_dialect(const char *v, char *why, size_t whylen);

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

const struct key policy_keys[] = {
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
	{ "upstream.dialect", KT_STRING, "\"auto\"", 1, 32, 0, U(dialect), 0, 0, NULL,
	  check_dialect, "the S3 server's dialect: \"auto\" (the self-test measures "
	  "every condition, If-Match spelling learned) or a known backend (\"aws\", "
	  "\"ceph-rgw\", \"minio\", \"r2\", \"gcs-xml\", \"seaweedfs\", ...): its "
	  "spelling, and the conditions it is known to ignore refused whatever the "
	  "probe sees" },
	{ "data_dir", KT_STRING, "\"./fencegate-data\"", 1, STR_MAX, KF_DOC_DEFAULT,
	  P(data_dir), 0, 0, NULL, NULL,
	  "s3 mode without upstream.endpoint: local directory store (bucket = sub-directory); "
	  "not allowed with upstream.endpoint" },
	{ "lock_store", KT_STRING, NULL, 1, STR_MAX, 0, P(lock_store), 0, 0, NULL,
	  check_store_url, "default store of locks: \"s3://BUCKET[/ROOT]\" or \"file:///DIR\"; "
	  "absent in s3 mode: the bucket of the first route naming the lock" },
	{ "workers", KT_INT, "0", 0, 64, 0, P(workers), 0, 0, NULL, NULL,
	  "event loops, each on its own thread with its own listening sockets (SO_REUSEPORT); "
	  "0: the available cores (s3 mode), 1 (http mode: the epoch barrier needs one); "
	  "a change needs a restart" },
	{ "store_threads", KT_INT, "4", 1, 64, 0, P(store_threads), 0, 0, NULL, NULL,
	  "threads for blocking store and lock calls, shared by the event loops; a change "
	  "needs a restart" },
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
	{ "clients[].allow[].actions", KT_ACTIONS, NULL, 1, 5, KF_REQUIRED, A(actions), 0, 0,
	  NULL, NULL, "subset of \"read\", \"write\", \"lock\", \"admin\", \"break\"" },
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

const size_t policy_nkeys = sizeof(policy_keys) / sizeof(policy_keys[0]);

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
	if (i >= policy_nkeys)
		return 0;
	out->path = policy_keys[i].path;
	out->type = ktype_name(policy_keys[i].type);
	out->def = policy_keys[i].def;
	out->min = policy_keys[i].min;
	out->max = policy_keys[i].max;
	out->required = policy_keys[i].flags & KF_REQUIRED;
	out->doc = policy_keys[i].doc;
	return 1;
}

/* ---- value checks ------------------------------------------------------ */

static int ipv4_loopback(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> 24) == 127;
}

/* "HOST:PORT" -> host (no brackets) and port; loopback and family. */
int policy_split_listen(const char *v, char *host, size_t hostlen, int *port,
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

	return policy_split_listen(v, host, sizeof(host), &port, &lo, &v6, why, whylen);
}

static int check_dialect(const char *v, char *why, size_t whylen)
{
	if (strcmp(v, "auto") == 0 || dialect_find(v))
		return 0;
	snprintf(why, whylen, "\"%s\" is not a known dialect (auto, aws, ceph-rgw, minio, r2, "
		 "gcs-xml, tigris, seaweedfs, garage, b2, oci, rustfs, versitygw, embedded, moto)",
		 v);
	return -1;
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
int policy_bucket_name_valid(const char *b, size_t n)
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

		if (!policy_bucket_name_valid(b, n)) {
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

int policy_has_dot_segment(const char *p)
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
	if (policy_has_dot_segment(v) || strstr(v, "//")) {
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
	if (v[0] == '/' || policy_has_dot_segment(v)) {
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
