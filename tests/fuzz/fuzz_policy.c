/* fuzz_policy.c — libFuzzer target for the configuration parser
 * (policy/): any bytes as a config file.
 *
 * Checks that a refusal always leaves a non-empty "path: reason" message,
 * and that an accepted policy keeps its promises: routes sorted longest
 * first, each pointing at a configured lock, each route found again by its
 * own prefix, clients found again by key, no clients only on loopback.
 * Aborts on any violation. Secrets come from FUZZ_SECRET (set here). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("FUZZ_SECRET", "fuzz-secret", 1);
	setenv("FUZZ_TOKEN", "fuzz-token", 1);
	setenv("FUZZ_TOKEN2", "fuzz-token-2", 1);
	return 0;
}

static void check_policy(const struct policy *p)
{
	size_t i, j;

	if (p->nlisten == 0)
		abort();
	for (i = 0; i < p->nroutes; i++) {
		const struct policy_route *r = &p->routes[i], *found;

		if (!r->lock || r->lock != policy_lock_by_name(p, r->lock_name))
			abort();
		if (r->lock < p->locks || r->lock >= p->locks + p->nlocks)
			abort();
		if (i > 0 && strlen(p->routes[i - 1].prefix) < strlen(r->prefix))
			abort();
		found = policy_route_for(p, r->prefix);
		if (!found || strcmp(found->prefix, r->prefix) != 0)
			abort();
	}
	for (i = 0; i < p->nlocks; i++)
		if (!p->locks[i].store || !p->locks[i].prefix)
			abort();
	for (i = 0; i < p->nclients; i++) {
		const struct policy_client *c = &p->clients[i];

		if (!c->name || !c->secret || c->secret_len == 0)
			abort();
		if (p->mode == POLICY_MODE_S3 && policy_client_by_key(p, c->access_key) != c)
			abort();
		for (j = 0; j < c->nallow; j++)
			if (!policy_client_allows(c, c->allow[j].prefix, c->allow[j].actions))
				abort();
	}
	if (p->nclients == 0)
		for (i = 0; i < p->nlisten; i++)
			if (!p->listen[i].loopback)
				abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[POLICY_ERR_MAX];
	struct policy *p;

	memset(err, 'x', sizeof(err));
	p = policy_parse((const char *)data, size, err, sizeof(err));
	if (!p) {
		if (!memchr(err, '\0', sizeof(err)) || !strstr(err, ": "))
			abort();
		return 0;
	}
	check_policy(p);
	policy_hold(p);
	policy_free(p);
	policy_free(p);
	return 0;
}
