/* authtest.h — what test_auth.c (SigV4) and test_auth_v2.c (SigV2) share:
 * the access keys of the S3 documentation and of a worker with the lookup()
 * over them, the clock (NOW), and the request under test: a head (method,
 * path, query, headers) run through auth_verify_head with those secrets,
 * and the two expectations, verified or refused with a given S3 error.
 * Test code only. */
#ifndef FENCE_TEST_AUTHTEST_H
#define FENCE_TEST_AUTHTEST_H

#include <string.h>
#include <time.h>

#include "http/front.h"
#include "s3/auth.h"

#define DOC_KEY       "AKIAIOSFODNN7EXAMPLE"
#define DOC_SECRET    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define WORKER_KEY    "AKIAWORKER1"
#define WORKER_SECRET "worker/secret+key"
#define NOW           ((time_t)1700000000) /* Tue, 14 Nov 2023 22:13:20 GMT */

static inline const char *lookup(void *arg, const char *access_key)
{
	(void)arg;
	if (strcmp(access_key, DOC_KEY) == 0)
		return DOC_SECRET;
	if (strcmp(access_key, WORKER_KEY) == 0)
		return WORKER_SECRET;
	return NULL;
}

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
