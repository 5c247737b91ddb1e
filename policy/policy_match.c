/* policy_match.c — the lookups the proxy makes per request on a loaded
 * policy: the route for a path (longest prefix first), a lock by name, a
 * client by access key (binary search) or bearer token (SHA-256, compared
 * in constant time), what a client may do, and the decoded request path
 * the lookups take. Reads of an immutable policy only: no allocation, no
 * I/O, safe from any thread while the caller holds a reference. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "wire/pct.h"
#include "lock/core/lock.h"
#include "policy.h"
#include "policy_int.h"

static int prefix_matches(const char *prefix, const char *path, bool nocase)
{
	size_t n;

	if (!prefix || !path)
		return 0;
	n = strlen(prefix);
	if ((nocase ? strncasecmp(prefix, path, n) : strncmp(prefix, path, n)) != 0)
		return 0;
	if (n > 0 && prefix[n - 1] == '/')
		return 1;
	return path[n] == '\0' || path[n] == '/';
}

int policy_prefix_matches(const char *prefix, const char *path)
{
	return prefix_matches(prefix, path, false);
}

enum policy_pick policy_pick_lock(const struct policy *p, const char *path, const char *named,
				  const struct policy_route **route,
				  const struct policy_lock **lock)
{
	*route = policy_route_for(p, path);
	*lock = NULL;
	if (!*route)
		return POLICY_PICK_NO_ROUTE;
	*lock = (*route)->lock;
	if (!named || strcmp(named, (*lock)->name) == 0)
		return POLICY_PICK_LOCK;
	if (!(*route)->allow_lock_header) {
		*lock = NULL;
		return POLICY_PICK_NAME_FORBIDDEN;
	}
	*lock = policy_lock_by_name(p, named);
	return *lock ? POLICY_PICK_LOCK : POLICY_PICK_NAME_UNKNOWN;
}

const struct policy_route *policy_route_for(const struct policy *p, const char *path)
{
	/* routes are sorted longest prefix first: the first match wins */
	for (size_t i = 0; p && i < p->nroutes; i++)
		if (policy_prefix_matches(p->routes[i].prefix, path))
			return &p->routes[i];
	return NULL;
}

const struct policy_route *policy_route_for_nocase(const struct policy *p, const char *path)
{
	for (size_t i = 0; p && i < p->nroutes; i++)
		if (prefix_matches(p->routes[i].prefix, path, true))
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

static int allow_covers(const struct policy_client *c, const char *prefix, unsigned action)
{
	for (size_t i = 0; i < c->nallow; i++)
		if ((c->allow[i].actions & action) &&
		    policy_prefix_matches(c->allow[i].prefix, prefix))
			return 1;
	return 0;
}

/* action (lock or break) on lock name: an entry with it covers the whole
 * prefix of a route the lock guards (or the bucket, for bucket locks). */
static int may_on_lock(const struct policy *p, const struct policy_client *c,
		       const char *name, unsigned action)
{
	char bucket[LOCK_NAME_MAX + 2];

	if (!c)
		return 1;
	if (!p || !name)
		return 0;
	for (size_t i = 0; i < p->nroutes; i++)
		if (strcmp(p->routes[i].lock_name, name) == 0 &&
		    allow_covers(c, p->routes[i].prefix, action))
			return 1;
	if (p->unrouted_writes == POLICY_UNROUTED_BUCKET_LOCK && lock_name_valid(name) &&
	    name[0] != '_') {
		snprintf(bucket, sizeof(bucket), "/%s", name);
		return allow_covers(c, bucket, action);
	}
	return 0;
}

int policy_client_may_lock(const struct policy *p, const struct policy_client *c,
			   const char *name)
{
	return may_on_lock(p, c, name, POLICY_ACT_LOCK);
}

int policy_client_may_break(const struct policy *p, const struct policy_client *c,
			    const char *name)
{
	return may_on_lock(p, c, name, POLICY_ACT_BREAK);
}

int policy_bucket_lock(const struct policy *p, const char *path, char *name, size_t namelen)
{
	if (!p || p->unrouted_writes != POLICY_UNROUTED_BUCKET_LOCK)
		return 0;
	return policy_first_segment(path, name, namelen);
}

int policy_path_decode(const char *path, char *out, size_t outlen)
{
	if (!path || path[0] != '/' || pct_decode(path, strlen(path), PCT_NO_NUL, out, outlen) < 0)
		return -1;
	return policy_has_dot_segment(out) ? -1 : 0;
}
