/* test_httppath.c — HTTP mode's refusal of request paths a downstream could
 * read as another path (proxy/fence/httppath.c): every form over a table,
 * in either hex case, and the near misses that are plain names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fence/httppath.h"

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"", "ledger/x", "//", "//ledger", "/a//b", "/a/b//",
		"/a;b", "/a/b;c=d", "/;", "/a%3bb", "/a%3Bb",
		"/.", "/..", "/a/.", "/a/..", "/a/./b", "/a/../b",
		"/%2e", "/%2E", "/a/%2e%2e/b", "/a/.%2e/b", "/a/%2E./b", "/a/%2e%2E",
		"/a%2fb", "/a%2Fb", "/%2F", "/a\\b", "/\\", "/a%5cb", "/a%5Cb",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!httppath_ambiguity(bad[i]))
			fail_msg("\"%s\" accepted", bad[i]);
	assert_non_null(httppath_ambiguity(NULL));
}

static void test_accepted(void **state)
{
	static const char *const ok[] = {
		"/", "/a", "/a/", "/a/b", "/a/.b", "/a/b.", "/a/..b", "/a/...", "/a/%2e%2e%2e",
		"/a/%2ex", "/a/x%2e", "/a%20b", "/a%25", "/a%2", "/a%", "/a%2g", "/a%3", "/a%5",
		"/a:b", "/a=b", "/a,b", "/a%3ab", "/a%2Ab",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (httppath_ambiguity(ok[i]))
			fail_msg("\"%s\" refused: %s", ok[i], httppath_ambiguity(ok[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_accepted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
