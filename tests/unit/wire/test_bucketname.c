/* test_bucketname.c — S3's bucket naming rules (wire/bucketname.c), as a
 * table: each name with what the plain check and the full check say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/bucketname.h"

static void test_names(void **state)
{
	static const struct {
		const char *name;
		bool plain, valid;
	} cases[] = {
		{ "abc", true, true },
		{ "my-bucket", true, true },
		{ "a.b.c", true, true },
		{ "0bucket9", true, true },
		{ "a23456789012345678901234567890123456789012345678901234567890123", true, true },
		{ "a234567890123456789012345678901234567890123456789012345678901234", false, false },
		{ "ab", false, false },
		{ "", false, false },
		{ "Abc", false, false },
		{ "a_b", false, false },
		{ "a/b", false, false },
		{ "a b", false, false },
		{ "_fence", false, false },
		{ "-abc", true, false },
		{ "abc-", true, false },
		{ ".abc", true, false },
		{ "abc.", true, false },
		{ "a..b", true, false },
		{ "192.168.1.1", true, false },
		{ "192.168.1", true, true },
		{ "1.2.3.4.5", true, true },
		{ "xn--abc", true, false },
		{ "sthree-abc", true, false },
		{ "abc-s3alias", true, false },
		{ "abc--ol-s3", true, false },
		{ "xn-abc", true, true },
		{ "s3alias", true, true },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *b = cases[i].name;

		if (s3_bucket_name_plain(b, strlen(b)) != cases[i].plain)
			fail_msg("plain(\"%s\") is not %d", b, cases[i].plain);
		if (s3_bucket_name_valid(b, strlen(b)) != cases[i].valid)
			fail_msg("valid(\"%s\") is not %d", b, cases[i].valid);
	}
	/* a name cut out of a longer string: only n bytes count */
	assert_true(s3_bucket_name_valid("abc/key", 3));
	assert_false(s3_bucket_name_valid("abc-/key", 4));
	assert_false(s3_bucket_name_plain(NULL, 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests_name("wire/bucketname", tests, NULL, NULL);
}
