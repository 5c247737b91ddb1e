/* policy_check.c — the checks that relate a configuration's keys to each
 * other, run once the walk has filled the struct: listen addresses (split
 * once, no duplicates), TLS, upstream and data directory, routes (the
 * reserved /_fence prefix, duplicates, their lock exists; sorted longest
 * prefix first), locks (default store and prefix), clients (secrets read
 * from the environment or a file and hashed; names, keys and tokens
 * unique), and no clients only on loopback. It does not check a single
 * value's syntax (policy_schema.c); the secret files are the only files it
 * opens. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "lock/core/lock.h"
#include "policy.h"
#include "policy_int.h"

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
			return policy_fail(ps, path, "environment variable \"%s\" is not set", env);
		n = strlen(v);
		if (n == 0)
			return policy_fail(ps, path, "environment variable \"%s\" is empty", env);
		if (n > POLICY_SECRET_MAX)
			return policy_fail(ps, path, "environment variable \"%s\" is longer than %d bytes",
					   env, POLICY_SECRET_MAX);
		memcpy(buf, v, n);
	} else {
		struct stat st;
		ssize_t r;

		fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			policy_fail(ps, path, "cannot read \"%s\": %s", file, strerror(errno));
			goto out;
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			policy_fail(ps, path, "\"%s\" is not a regular file", file);
			goto out;
		}
		while (n < sizeof(buf)) {
			r = read(fd, buf + n, sizeof(buf) - n);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				policy_fail(ps, path, "cannot read \"%s\": %s", file, strerror(errno));
				goto out;
			}
			if (r == 0)
				break;
			n += (size_t)r;
		}
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
		if (n == 0) {
			policy_fail(ps, path, "\"%s\" is empty", file);
			goto out;
		}
		if (n > POLICY_SECRET_MAX) {
			policy_fail(ps, path, "\"%s\" is longer than %d bytes", file, POLICY_SECRET_MAX);
			goto out;
		}
		if (memchr(buf, '\0', n) || memchr(buf, '\n', n)) {
			policy_fail(ps, path, "\"%s\" holds more than one line", file);
			goto out;
		}
	}
	*out = malloc(n + 1);
	if (!*out) {
		policy_fail(ps, path, "out of memory");
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
				return policy_fail(ps, path, "%s is for http mode; in s3 mode use "
						   "access_key with secret_env or secret_file",
						   c->token_env ? "token_env" : "token_file");
			if (!c->access_key) {
				snprintf(pbuf, sizeof(pbuf), "%s.access_key", path);
				return policy_fail(ps, pbuf, "required in s3 mode");
			}
			env = c->secret_env;
			file = c->secret_file;
			ename = "secret_env";
			fname = "secret_file";
		} else {
			if (c->access_key || c->secret_env || c->secret_file)
				return policy_fail(ps, path, "%s is for s3 mode; in http mode use "
						   "token_env or token_file",
						   c->access_key ? "access_key" :
						   c->secret_env ? "secret_env" : "secret_file");
			env = c->token_env;
			file = c->token_file;
			ename = "token_env";
			fname = "token_file";
		}
		if (env && file)
			return policy_fail(ps, path, "give %s or %s, not both", ename, fname);
		if (!env && !file)
			return policy_fail(ps, path, "needs %s or %s", ename, fname);
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
				return policy_fail(ps, path, "out of memory");
		}
		for (size_t j = 0; j < i; j++) {
			if (c->access_key && strcmp(cs[j].access_key, c->access_key) == 0) {
				snprintf(pbuf, sizeof(pbuf), "%s.access_key", path);
				return policy_fail(ps, pbuf, "\"%s\" is also the access key of clients[%zu]",
						   c->access_key, j);
			}
			if (strcmp(cs[j].name, c->name) == 0) {
				snprintf(pbuf, sizeof(pbuf), "%s.name", path);
				return policy_fail(ps, pbuf, "\"%s\" is also the name of clients[%zu]",
						   c->name, j);
			}
			if (!c->access_key &&
			    memcmp(cs[j].token_sha256, c->token_sha256, 32) == 0) {
				snprintf(pbuf, sizeof(pbuf), "%s.%s", path, env ? ename : fname);
				return policy_fail(ps, pbuf, "same token as clients[%zu]", j);
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
int policy_first_segment(const char *path, char *out, size_t outlen)
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
				return policy_fail(ps, pbuf, "\"%s\" is also the name of locks[%zu]",
						   lk->name, j);
			}
		if (!lk->store && p->lock_store)
			lk->store = strdup(p->lock_store);
		if (!lk->store && p->mode == POLICY_MODE_S3) {
			char bucket[LOCK_NAME_MAX + 1];

			for (size_t r = 0; r < p->nroutes; r++)
				if (strcmp(p->routes[r].lock_name, lk->name) == 0 &&
				    policy_first_segment(p->routes[r].prefix, bucket, sizeof(bucket)) &&
				    policy_bucket_name_valid(bucket, strlen(bucket))) {
					if (asprintf(&lk->store, "s3://%s", bucket) < 0)
						lk->store = NULL;
					break;
				}
		}
		if (!lk->store) {
			snprintf(pbuf, sizeof(pbuf), "%s.store", path);
			return policy_fail(ps, pbuf, "required: no lock_store, and no route names lock \"%s\" "
					   "under a bucket", lk->name);
		}
		if (!lk->prefix) {
			store_root_of(lk->store, root, sizeof(root));
			if (asprintf(&lk->prefix, "%slocks/%s/lock-", root, lk->name) < 0) {
				lk->prefix = NULL;
				return policy_fail(ps, path, "out of memory");
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
			return policy_fail(ps, pbuf, "\"/_fence/\" is reserved for the lock API");
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->routes[j].prefix, r->prefix) == 0) {
				snprintf(pbuf, sizeof(pbuf), "routes[%zu].prefix", i);
				return policy_fail(ps, pbuf, "\"%s\" is also the prefix of routes[%zu]",
						   r->prefix, j);
			}
		r->lock = policy_lock_by_name(p, r->lock_name);
		if (!r->lock) {
			snprintf(pbuf, sizeof(pbuf), "routes[%zu].lock", i);
			return policy_fail(ps, pbuf, "no lock named \"%s\"", r->lock_name);
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

int policy_check(struct parser *ps, struct policy *p)
{
	char pbuf[64];

	/* listen: split once for the daemon */
	for (size_t i = 0; i < p->nlisten; i++) {
		struct policy_listen *l = &p->listen[i];
		char host[INET6_ADDRSTRLEN + 1], why[256];
		int lo = 0, v6 = 0;

		snprintf(pbuf, sizeof(pbuf), "listen[%zu]", i);
		if (policy_split_listen(l->addr, host, sizeof(host), &l->port, &lo, &v6, why,
					sizeof(why)) < 0)
			return policy_fail(ps, pbuf, "%s", why);
		l->loopback = lo;
		l->ipv6 = v6;
		l->host = strdup(host);
		if (!l->host)
			return policy_fail(ps, pbuf, "out of memory");
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->listen[j].host, l->host) == 0 && p->listen[j].port == l->port)
				return policy_fail(ps, pbuf, "\"%s\" is given twice", l->addr);
	}
	/* tls */
	p->tls.min_version = p->tls.min_version == 1 ? 13 : 12;
	if (p->tls.cert || p->tls.key || p->tls.ca) {
		if (!p->tls.cert)
			return policy_fail(ps, "tls.cert", "required with tls");
		if (!p->tls.key)
			return policy_fail(ps, "tls.key", "required with tls");
		p->tls.enabled = true;
	}
	/* upstream and where data lives */
	if (p->mode == POLICY_MODE_HTTP) {
		if (!p->upstream.endpoint)
			return policy_fail(ps, "upstream.endpoint", "required in http mode");
		if (p->data_dir)
			return policy_fail(ps, "data_dir", "only for s3 mode without upstream.endpoint");
	} else if (p->upstream.endpoint && p->data_dir) {
		return policy_fail(ps, "data_dir", "not allowed with upstream.endpoint (the upstream is "
				   "the store)");
	} else if (!p->upstream.endpoint && !p->data_dir) {
		p->data_dir = strdup("./fencegate-data");
		if (!p->data_dir)
			return policy_fail(ps, "data_dir", "out of memory");
	}
	if (p->mode == POLICY_MODE_HTTP && p->workers > 1)
		return policy_fail(ps, "workers", "http mode runs one event loop (its epoch barrier "
				   "orders a lock's in-flight writes in one place): 0 or 1");
	if (p->unrouted_writes == POLICY_UNROUTED_BUCKET_LOCK && p->mode == POLICY_MODE_HTTP &&
	    !p->lock_store)
		return policy_fail(ps, "unrouted_writes", "\"bucket_lock\" in http mode needs lock_store");
	/* routes before locks: a lock's default store comes from its routes */
	if (check_routes(ps, p) < 0 || check_locks(ps, p) < 0 || check_clients(ps, p) < 0)
		return -1;
	for (size_t i = 0; i < p->nroutes; i++)   /* lock pointers are final now */
		p->routes[i].lock = policy_lock_by_name(p, p->routes[i].lock_name);
	if (p->nclients == 0)
		for (size_t i = 0; i < p->nlisten; i++)
			if (!p->listen[i].loopback)
				return policy_fail(ps, "clients", "authentication is off (no clients) but "
						   "listen address \"%s\" is not loopback", p->listen[i].addr);
	if (p->mode == POLICY_MODE_S3 && p->nclients) {
		p->by_key = calloc(p->nclients, sizeof(*p->by_key));
		if (!p->by_key)
			return policy_fail(ps, "clients", "out of memory");
		for (size_t i = 0; i < p->nclients; i++)
			p->by_key[i] = &p->clients[i];
		qsort(p->by_key, p->nclients, sizeof(*p->by_key), client_key_cmp);
	}
	return 0;
}
