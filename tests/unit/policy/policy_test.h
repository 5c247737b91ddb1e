/* policy_test.h — what test_policy.c and test_policy_routes.c share: the
 * group setup (the secrets the configs name, in the environment and in
 * files) and parsing a JSON config, failing the test on an error. Test code
 * only. */
#ifndef FENCE_TEST_POLICY_TEST_H
#define FENCE_TEST_POLICY_TEST_H

#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fence/fence.h"
#include "lock/core/lock.h"
#include "policy/policy.h"

static char secret_file[64] = "";   /* holds "file-secret\n" */
static char empty_file[64] = "";    /* holds nothing */

static inline int setup(void **state)
{
	int fd;

	(void)state;
	setenv("WORKER1_SECRET", "w1-secret", 1);
	setenv("WORKER2_SECRET", "w2-secret", 1);
	setenv("READER1_SECRET", "r1-secret", 1);
	setenv("LEDGER_TOKEN", "ledger-token", 1);
	setenv("DASHBOARD_TOKEN", "dashboard-token", 1);
	setenv("FG_EMPTY", "", 1);
	unsetenv("FG_TEST_UNSET");
	strcpy(secret_file, "/tmp/test_policy_secret.XXXXXX");
	fd = mkstemp(secret_file);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "file-secret\n", 12), 12);
	close(fd);
	strcpy(empty_file, "/tmp/test_policy_empty.XXXXXX");
	fd = mkstemp(empty_file);
	assert_true(fd >= 0);
	close(fd);
	return 0;
}

static inline int teardown(void **state)
{
	(void)state;
	unlink(secret_file);
	unlink(empty_file);
	return 0;
}

static inline struct policy *parse(const char *json, char *err, size_t errlen)
{
	return policy_parse(json, strlen(json), err, errlen);
}

static inline struct policy *parse_ok(const char *json)
{
	char err[POLICY_ERR_MAX] = "";
	struct policy *p = parse(json, err, sizeof(err));

	if (!p)
		fail_msg("parse failed: %s\n%s", err, json);
	return p;
}

#endif
