/* test_lockapi_args.c — the lock API's body parser (proxy/fence/lockapi_args.c)
 * over a table: duplicate keys at any depth, integers written as fractions,
 * exponents, negatives, leading zeros or beyond the field's range (including
 * above 2^53, where a double would round, and above 2^63-1 and 2^64), and
 * the forms it accepts with the exact value each yields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fence/lockapi_args.h"

#define WAIT_MAX 60000

struct ok_case {
	const char *body;
	bool need_epoch;
	uint64_t epoch;
	int64_t ttl_ms, wait_ms;
	const char *holder;
};

struct bad_case {
	const char *body;
	bool need_epoch;
	const char *message_has;        /* a part of the error message */
};

static void test_accepted(void **state)
{
	static const struct ok_case ok[] = {
		{ "", false, 0, LOCKAPI_TTL_DEFAULT, 0, "" },
		{ "{}", false, 0, LOCKAPI_TTL_DEFAULT, 0, "" },
		{ " {} \r\n\t", false, 0, LOCKAPI_TTL_DEFAULT, 0, "" },
		{ "{\"epoch\":1}", true, 1, LOCKAPI_TTL_DEFAULT, 0, "" },
		{ "{\"epoch\": 42 }", true, 42, LOCKAPI_TTL_DEFAULT, 0, "" },
		{ "{\"epoch\":9007199254740993}", true, 9007199254740993ULL,
		  LOCKAPI_TTL_DEFAULT, 0, "" },   /* 2^53+1: a double says ...992 */
		{ "{\"epoch\":9223372036854775807}", true, 9223372036854775807ULL,
		  LOCKAPI_TTL_DEFAULT, 0, "" },   /* INT64_MAX */
		{ "{\"ttlMs\":1,\"waitMs\":0,\"holder\":\"w-1\"}", false, 0, 1, 0, "w-1" },
		{ "{\"ttlMs\":86400000,\"waitMs\":60000}", false, 0, 86400000, 60000, "" },
		{ "{\"ttlMs\":null,\"waitMs\":null,\"holder\":null}", false, 0,
		  LOCKAPI_TTL_DEFAULT, 0, "" },
		/* acquire does not read "epoch" */
		{ "{\"epoch\":-1.5}", false, 0, LOCKAPI_TTL_DEFAULT, 0, "" },
		/* numbers elsewhere (strings, nested, other keys) do not shift the
		 * literal read for the field */
		{ "{\"x\":[1.5,{\"y\":-2e9}],\"h\":\"3 4 \\\"5\",\"epoch\":7,\"z\":8}", true, 7,
		  LOCKAPI_TTL_DEFAULT, 0, "" },
		{ "{\"Epoch\":1,\"epoch\":2}", true, 2, LOCKAPI_TTL_DEFAULT, 0, "" },  /* case differs */
		{ "{\"a\":true,\"b\":false,\"ttlMs\":5,\"epoch\":6}", true, 6, 5, 0, "" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct lockapi_args a;
		char err[200] = "";

		if (lockapi_args_parse(ok[i].body, strlen(ok[i].body), ok[i].need_epoch, WAIT_MAX,
				       &a, err, sizeof(err)) != 0)
			fail_msg("case %zu (%s) refused: %s", i, ok[i].body, err);
		assert_true(a.epoch == ok[i].epoch);
		assert_int_equal(a.ttl_ms, ok[i].ttl_ms);
		assert_int_equal(a.wait_ms, ok[i].wait_ms);
		assert_string_equal(a.holder, ok[i].holder);
	}
}

static void test_refused(void **state)
{
	static const struct bad_case bad[] = {
		/* duplicate keys, at any depth */
		{ "{\"epoch\":1,\"epoch\":2}", true, "\"epoch\" more than once" },
		{ "{\"epoch\":2,\"epoch\":2}", true, "\"epoch\" more than once" },
		{ "{\"ttlMs\":1,\"ttlMs\":2}", false, "\"ttlMs\" more than once" },
		{ "{\"holder\":\"a\",\"x\":0,\"holder\":\"b\"}", false, "\"holder\" more than once" },
		{ "{\"epoch\":1,\"x\":{\"k\":1,\"k\":2}}", true, "\"k\" more than once" },
		{ "{\"epoch\":1,\"x\":[{\"k\":1},{\"j\":1,\"j\":1}]}", true, "\"j\" more than once" },
		{ "{\"\":1,\"\":2}", false, "more than once" },
		/* not an integer literal */
		{ "{\"epoch\":1.0}", true, "\"epoch\" must be an integer" },
		{ "{\"epoch\":1.5}", true, "\"epoch\"" },
		{ "{\"epoch\":1e3}", true, "\"epoch\"" },
		{ "{\"epoch\":1E0}", true, "\"epoch\"" },
		{ "{\"epoch\":-1}", true, "\"epoch\"" },
		{ "{\"epoch\":-0}", true, "\"epoch\"" },
		{ "{\"epoch\":0}", true, "\"epoch\"" },
		{ "{\"epoch\":007}", true, "\"epoch\"" },
		{ "{\"epoch\":\"7\"}", true, "\"epoch\"" },
		{ "{\"epoch\":true}", true, "\"epoch\"" },
		{ "{\"epoch\":[7]}", true, "\"epoch\"" },
		{ "{\"epoch\":null}", true, "\"epoch\"" },
		{ "{}", true, "\"epoch\"" },
		{ "", true, "\"epoch\" is required" },
		/* out of range: above INT64_MAX, above UINT64_MAX, far beyond */
		{ "{\"epoch\":9223372036854775808}", true, "\"epoch\"" },
		{ "{\"epoch\":18446744073709551615}", true, "\"epoch\"" },
		{ "{\"epoch\":18446744073709551616}", true, "\"epoch\"" },
		{ "{\"epoch\":1000000000000000000000000000000}", true, "\"epoch\"" },
		{ "{\"epoch\":1e400}", true, "\"epoch\"" },  /* a double says inf */
		{ "{\"ttlMs\":0}", false, "\"ttlMs\" must be an integer from 1 to 86400000" },
		{ "{\"ttlMs\":86400001}", false, "\"ttlMs\"" },
		{ "{\"ttlMs\":30000.5}", false, "\"ttlMs\"" },
		{ "{\"ttlMs\":-30000}", false, "\"ttlMs\"" },
		{ "{\"ttlMs\":1e308}", false, "\"ttlMs\"" },
		{ "{\"waitMs\":60001}", false, "\"waitMs\"" },
		{ "{\"waitMs\":-1}", false, "\"waitMs\"" },
		{ "{\"waitMs\":99999999999999999999999}", false, "\"waitMs\"" },
		{ "{\"holder\":\"\"}", false, "\"holder\"" },
		{ "{\"holder\":5}", false, "\"holder\"" },
		/* not one JSON object */
		{ "[]", false, "not a JSON object" },
		{ "7", true, "not a JSON object" },
		{ "{\"epoch\":1", true, "not a JSON object" },
		{ "{\"epoch\":NaN}", true, "not a JSON object" },
		{ "{\"epoch\":Infinity}", true, "not a JSON object" },
		{ "{\"epoch\":1} {}", true, "data after" },
		{ "{\"epoch\":1}x", true, "data after" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lockapi_args a;
		char err[200] = "";

		if (lockapi_args_parse(bad[i].body, strlen(bad[i].body), bad[i].need_epoch,
				       WAIT_MAX, &a, err, sizeof(err)) != -1)
			fail_msg("case %zu (%s) accepted", i, bad[i].body);
		if (!strstr(err, bad[i].message_has))
			fail_msg("case %zu (%s): message \"%s\" lacks \"%s\"", i, bad[i].body, err,
				 bad[i].message_has);
	}
}

/* A body is read within its length, NUL or not; a NUL inside it is refused;
 * a body over the cap is refused. */
static void test_length(void **state)
{
	static const char body[] = "{\"epoch\":3}{\"epoch\":4}";
	static const char with_nul[] = "{\"epoch\":3}\0   ";
	static char big[LOCKAPI_BODY_MAX + 2];
	struct lockapi_args a;
	char err[200];

	(void)state;
	assert_int_equal(lockapi_args_parse(body, 11, true, WAIT_MAX, &a, err, sizeof(err)), 0);
	assert_true(a.epoch == 3);
	assert_int_equal(lockapi_args_parse(with_nul, sizeof(with_nul) - 1, true, WAIT_MAX, &a, err,
					    sizeof(err)), -1);
	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	assert_int_equal(lockapi_args_parse(big, sizeof(big) - 1, false, WAIT_MAX, &a, err,
					    sizeof(err)), -1);
	assert_non_null(strstr(err, "16 KiB"));
	/* waitMs bound by the caller's maximum, 0 included */
	assert_int_equal(lockapi_args_parse("{\"waitMs\":0}", 12, false, 0, &a, err, sizeof(err)),
			 0);
	assert_int_equal(lockapi_args_parse("{\"waitMs\":5}", 12, false, 0, &a, err, sizeof(err)),
			 -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
