/* authtest.h — the request under test that test_auth.c (SigV4) and
 * test_auth_v2.c (SigV2) share: a head (method, path, query, headers) run
 * through auth_verify_head with the including file's lookup() secrets,
 * and the two expectations, verified or refused with a given S3 error.
 * Test code only: include it after defining
 *   static const char *lookup(void *arg, const char *access_key); */
#ifndef FENCE_TEST_AUTHTEST_H
#define FENCE_TEST_AUTHTEST_H

#include <string.h>
#include <time.h>

#include "http/front.h"
#include "s3/auth.h"

struct treq {
	const char *method;
	const char *path;
	const char *query;
	const char *region;
	struct front_hdrs h;
};

static inline void add(struct treq *r, const char *name, const char *value)
{
	assert_int_equal(front_hdrs_add(&r->h, name, value), 0);
}

static inline void verify_at(struct treq *r, time_t now, struct auth_result *out)
{
	struct auth_request req = { r->method, r->path, r->query, &r->h, r->region };

	auth_verify_head(&req, lookup, NULL, now, out);
}

static inline void expect_reject(struct treq *r, time_t now, int status, const char *code)
{
	struct auth_result out;

	verify_at(r, now, &out);
	if (out.verdict != AUTH_REJECTED)
		fail_msg("accepted; wanted %d %s", status, code);
	if (out.err.status != status || strcmp(out.err.code, code) != 0)
		fail_msg("got %d %s (%s); wanted %d %s", out.err.status, out.err.code,
			 out.err.message, status, code);
	auth_result_clear(&out);
}

static inline void expect_ok(struct treq *r, time_t now, struct auth_result *out)
{
	verify_at(r, now, out);
	if (out->verdict != AUTH_VERIFIED)
		fail_msg("rejected: %d %s (%s)", out->err.status,
			 out->err.code ? out->err.code : "-", out->err.message);
}

static inline void treq_free(struct treq *r)
{
	front_hdrs_clear(&r->h);
}

#endif
