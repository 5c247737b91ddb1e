/* policy.h — the fencegate configuration: listen addresses, TLS, mode,
 * upstream, locks, routes (path prefix -> lock), clients and their
 * permissions, limits, logging.
 *
 * A struct policy is built once, from a JSON file (policy_load), a JSON text
 * (policy_parse) or the command-line flags (policy_default, which builds the
 * same JSON and parses it: one code path), and is immutable afterwards. Every
 * key is described by one table (policy_key_info) that drives parsing,
 * defaults, bounds and the key list in policy/README.md.
 *
 * Ownership and reload: a policy is reference counted. policy_load/parse/
 * default return it with one reference, owned by the caller (the daemon's
 * "current policy" pointer). Anything that keeps pointers into a policy
 * beyond the current callback (a suspended request, a worker job) takes its
 * own reference with policy_hold() and drops it with policy_free(). On
 * SIGHUP the daemon loads the new policy first; only if that succeeds does
 * it swap the pointer and policy_free() the old one, which lives on until its
 * last holder lets go. The count is atomic; the contents are never written
 * after load, so readers on any thread need no lock.
 *
 * Library: never prints; errors name the key path ("routes[1].lock: no lock
 * named \"invoce\""). Secrets are read at load time and wiped on free. */
#ifndef FENCE_POLICY_H
#define FENCE_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#define POLICY_FILE_MAX     1048576L       /* config files larger are refused */
#define POLICY_SECRET_MAX   4096           /* secret / token bytes */
#define POLICY_ERR_MAX      512            /* a good errlen for every message */

enum policy_mode {
	POLICY_MODE_S3 = 0,    /* S3 REST API, SigV4 clients */
	POLICY_MODE_HTTP,      /* any HTTP API, bearer-token clients */
};

/* What happens to a write no route matches. */
enum policy_unrouted {
	POLICY_UNROUTED_REJECT = 0,  /* refused (403) — the default */
	POLICY_UNROUTED_ALLOW,       /* forwarded unfenced */
	POLICY_UNROUTED_BUCKET_LOCK, /* fenced by the lock named after the first
				      * path segment (the bucket): the no-config
				      * default, see policy_bucket_lock() */
};

/* Client actions, as bits. */
#define POLICY_ACT_READ   (1u << 0)   /* GET, HEAD, listing */
#define POLICY_ACT_WRITE  (1u << 1)   /* PUT, POST, DELETE, PATCH, multipart */
#define POLICY_ACT_LOCK   (1u << 2)   /* acquire/renew/release the lock(s)
				       * guarding the prefix */
#define POLICY_ACT_ADMIN  (1u << 3)   /* S3 bucket configuration writes
				       * (?lifecycle, ?policy, ?versioning,
				       * ?acl, ?cors, ...) on the bucket
				       * ("/B/" within the prefix); never
				       * implied by "write" */
#define POLICY_ACT_BREAK  (1u << 4)   /* end another holder's live lease of
				       * the lock(s) guarding the prefix
				       * through the S3 API (a break); never
				       * implied by "lock" */

struct policy_listen {
	char *addr;        /* as written: "127.0.0.1:8080", "[::1]:8080" */
	char *host;        /* "127.0.0.1", "::1" (no brackets) */
	int port;          /* 1..65535 */
	bool loopback;     /* 127.0.0.0/8 or ::1 */
	bool ipv6;
};

struct policy_tls {
	bool enabled;      /* cert and key given */
	char *cert;        /* PEM file (chain), NULL when disabled */
	char *key;         /* PEM file */
	char *ca;          /* NULL: client certificates not requested */
	int min_version;   /* 12 (TLS 1.2) or 13 */
};

struct policy_upstream {
	char *endpoint;    /* "https://host[:port][/base]"; NULL in S3 mode:
			    * the local directory data_dir is the store */
	char *region;      /* S3 signing region, "us-east-1" by default */
	char *profile;     /* ~/.aws/credentials profile, NULL: environment */
	char *ca_bundle;   /* NULL: system CAs */
	bool verify;       /* verify the upstream's TLS certificate */
	char *dialect;     /* "auto" (probe, learn) or a lock/store/dialect.h row name:
			    * how If-Match is spelled, and which conditions
			    * are distrusted whatever the probe sees */
};

struct policy_lock {
	char *name;        /* lock_name_valid() */
	char *store;       /* "s3://BUCKET[/ROOT]" or "file:///DIR" */
	char *prefix;      /* full key prefix of its epoch files:
			    * "<ROOT/>locks/NAME/lock-" by default */
};

struct policy_route {
	char *prefix;              /* "/acme-billing/invoices/" */
	char *lock_name;
	const struct policy_lock *lock;  /* into policy->locks, never NULL */
	unsigned methods;          /* METHOD_* bits (wire/method.h) that are fenced;
				    * always includes METHOD_OTHER: an unknown
				    * method is a write (fail closed) */
	bool strict;               /* list before every write; a lapsed lease
				    * refuses writes */
	bool allow_lock_header;    /* a request may name its lock with
				    * X-Fencing-Lock (any configured lock) */
	bool anonymous_read;       /* reads here need no authentication */
};

struct policy_allow {
	char *prefix;      /* "/" or "/bucket/…" */
	unsigned actions;  /* POLICY_ACT_* */
};

struct policy_client {
	char *name;        /* for logs; default: the access key (S3 mode) or
			    * "clients[N]" (HTTP mode) */
	char *access_key;  /* S3 mode; NULL in HTTP mode */
	char *secret;      /* S3: the SigV4 secret key; HTTP: the bearer token.
			    * Read at load time from secret_env / secret_file
			    * (token_env / token_file). Never log it. */
	size_t secret_len;
	unsigned char token_sha256[32];  /* HTTP mode: SHA-256 of secret */
	char *secret_env, *secret_file;  /* where it came from (S3 mode), */
	char *token_env, *token_file;    /* (HTTP mode); NULL if not */
	struct policy_allow *allow;
	size_t nallow;
};

struct policy_limits {
	long long header_bytes, header_count, url_bytes;
	long long idle_timeout_ms, header_timeout_ms, body_timeout_ms, send_timeout_ms;
	long long body_min_rate;
	long long max_connections, replay_bytes;
	long long upstream_connect_timeout_ms, upstream_timeout_ms,
		  upstream_total_timeout_ms;
	long long drain_timeout_ms, refresh_interval_ms, objcache_entries;
};

struct policy_log {
	const char *level; /* "error", "warn", "info" or "debug" (log_parse_level) */
	char *access_log;  /* path, "-" (stderr), or NULL (off) */
	char *error_log;   /* path, or "-" / NULL (stderr) */
	const char *format; /* "json" */
};

struct policy {
	enum policy_mode mode;
	struct policy_listen *listen;
	size_t nlisten;
	struct policy_tls tls;
	struct policy_upstream upstream;
	char *data_dir;    /* S3 mode without upstream.endpoint: the local store */
	char *lock_store;  /* default store of locks: "s3://B[/R]" | "file:///D";
			    * NULL: in S3 mode, each lock defaults to the bucket
			    * of the first route naming it */
	struct policy_lock *locks;
	size_t nlocks;
	struct policy_route *routes;  /* sorted: longest prefix first */
	size_t nroutes;
	enum policy_unrouted unrouted_writes;
	long long workers;        /* event-loop threads; 0: the available cores
				   * (1 in http mode) */
	long long store_threads;  /* threads for store and lock calls */
	struct policy_client *clients;
	size_t nclients;   /* 0: authentication is off (loopback only) */
	struct policy_limits limits;
	struct policy_log log;
	char *source;      /* the file it came from, or "(flags)" / "(text)" */
	/* private */
	struct policy_client **by_key;  /* clients sorted by access_key */
	int refs;
};

/* Loads and checks a config file (at most POLICY_FILE_MAX bytes). Returns a
 * policy with one reference, or NULL with a message in err naming the key
 * path or the file. */
struct policy *policy_load(const char *path, char *err, size_t errlen);

/* The same, from JSON text (need not be NUL-terminated). */
struct policy *policy_parse(const char *json, size_t len, char *err, size_t errlen);

/* The command-line flags when there is no config file. */
struct policy_flags {
	const char *const *listen;  /* NULL or nlisten == 0: "127.0.0.1:8080" */
	size_t nlisten;
	const char *upstream;       /* NULL: local directory data_dir (S3 mode) */
	const char *data_dir;       /* NULL: "./fencegate-data" */
	enum policy_mode mode;
	const char *lock_store;     /* HTTP mode; NULL: "file://<abs data_dir>" */
};

/* The policy equivalent of those flags: no clients (so loopback only),
 * unrouted writes fenced by the bucket's lock, default limits. Returns a
 * policy with one reference or NULL with a message in err. */
struct policy *policy_default(const struct policy_flags *flags, char *err, size_t errlen);

/* Takes one more reference; returns p. Accepts NULL. */
struct policy *policy_hold(struct policy *p);

/* Drops one reference; the last one frees everything (secrets wiped).
 * Accepts NULL. */
void policy_free(struct policy *p);

/* ---- lookups (all O(n) or better, no allocation) ------------------------
 * Paths are percent-DECODED request paths (see policy_path_decode): a route
 * for "/b/invoices/" must also catch "/b/%69nvoices/x".
 *
 * Prefix matching is on path segments: a prefix ending in '/' matches every
 * path that starts with it; a prefix without the final '/' matches the path
 * equal to it and every path that continues it with '/'. So "/b/invoices"
 * matches "/b/invoices" and "/b/invoices/x" but not "/b/invoices-old". */

/* 1 if prefix matches path under that rule, else 0. */
int policy_prefix_matches(const char *prefix, const char *path);

/* The route with the longest prefix matching path, or NULL (unrouted: see
 * policy->unrouted_writes). */
const struct policy_route *policy_route_for(const struct policy *p, const char *path);

/* The route policy_route_for would pick if ASCII case were ignored (a
 * downstream that folds case applies the write there), or NULL. Matching
 * stays case-sensitive; a caller refuses a write where the two differ. */
const struct policy_route *policy_route_for_nocase(const struct policy *p, const char *path);

/* The lock with that name, or NULL. */
const struct policy_lock *policy_lock_by_name(const struct policy *p, const char *name);

enum policy_pick {
	POLICY_PICK_LOCK = 0,       /* *lock is the write's lock */
	POLICY_PICK_NO_ROUTE,       /* no route covers the path: unrouted_writes decides */
	POLICY_PICK_NAME_FORBIDDEN, /* the request named another lock than the
				     * route's, and the route does not allow it */
	POLICY_PICK_NAME_UNKNOWN,   /* the route allows naming one, but no lock
				     * of that name is configured */
};

/* The lock that fences a write to path (decoded), by the route covering it
 * (*route, NULL when none) and the lock the request named (named: NULL
 * when it named none): the route's lock, or with allow_lock_header any
 * configured lock it names. Both modes' one rule. */
enum policy_pick policy_pick_lock(const struct policy *p, const char *path, const char *named,
				  const struct policy_route **route,
				  const struct policy_lock **lock);

/* S3 mode: the client with that access key, or NULL. O(log n). */
const struct policy_client *policy_client_by_key(const struct policy *p, const char *access_key);

/* HTTP mode: the client whose bearer token is token[0..len), or NULL.
 * Compares digests of every client in constant time per client. */
const struct policy_client *policy_client_by_token(const struct policy *p,
						   const char *token, size_t len);

/* 1 if the client may do every action in `actions` (POLICY_ACT_*) on path.
 * Permissions are the union of the client's allow entries whose prefix
 * matches path: any matching entry that lists an action grants it (there
 * are no deny rules, so the order and length of prefixes do not matter).
 * A NULL client (authentication off) is allowed everything. */
int policy_client_allows(const struct policy_client *c, const char *path, unsigned actions);

/* 1 if the client may acquire/renew/release lock `name`: an allow entry
 * with "lock" must cover the whole prefix of at least one route guarded by
 * that lock (an entry narrower than the route does not, since holding the
 * lock fences everyone out of the whole route). With unrouted_writes
 * "bucket_lock", lock NAME guards "/NAME/". NULL client: allowed. */
int policy_client_may_lock(const struct policy *p, const struct policy_client *c,
			   const char *name);

/* 1 if the client may break lock `name` (end another holder's live
 * lease): the same rule as policy_client_may_lock with "break" instead of
 * "lock". NULL client: allowed. */
int policy_client_may_break(const struct policy *p, const struct policy_client *c,
			    const char *name);

/* unrouted_writes "bucket_lock": the first segment of path (the bucket) into
 * name[namelen], if it is a valid lock name. Returns 1, or 0 when there is
 * no valid first segment (e.g. "/", "/_fence/…"). The lock's store is
 * "s3://NAME" (S3 mode: the bucket itself, on the upstream or the local
 * directory) or lock_store (HTTP mode); its prefix is
 * "<ROOT/>locks/NAME/lock-". */
int policy_bucket_lock(const struct policy *p, const char *path, char *name, size_t namelen);

/* Percent-decodes a request path into out[outlen] for the lookups above.
 * Returns 0, or -1 for what must be refused with 400: a bad escape, an
 * encoded NUL, a "." or ".." segment, no leading '/', or too long. */
int policy_path_decode(const char *path, char *out, size_t outlen);

/* ---- the schema -------------------------------------------------------- */

struct policy_key_info {
	const char *path;      /* "routes[].methods" */
	const char *type;      /* "string", "integer", "boolean", "object",
				* "array of objects", "array of strings", "enum" */
	const char *def;       /* default as documented, NULL: none */
	long long min, max;    /* integers: value bounds; strings: length;
				* arrays: element count */
	bool required;
	const char *doc;       /* one line */
};

/* Fills *out with the i-th key of the schema and returns 1; 0 past the
 * end. Pure (thread-safe). */
int policy_key_info(size_t i, struct policy_key_info *out);

#endif
