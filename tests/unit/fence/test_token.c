/* test_token.c — fencing token and lock name parsing (proxy/fence/token.c): every
 * malformed form DESIGN.md rules out, the 19-digit limit, and header versus
 * metadata reconciliation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fence/token.h"

static enum token_status parse(const char *s, uint64_t *epoch)
{
	return token_parse(s, s ? strlen(s) : 0, epoch);
}

static void test_valid(void **state)
{
	static const struct {
		const char *text;
		uint64_t epoch;
	} ok[] = {
		{ "1", 1 },
		{ "7", 7 },
		{ "42", 42 },
		{ "007", 7 },                       /* leading zeros: accepted */
		{ "0000000007", 7 },                /* as in lock-0000000007.json */
		{ "0000000000000000001", 1 },       /* 19 digits */
		{ "9223372036854775807", 9223372036854775807ULL },  /* INT64_MAX */
		{ "9223372036854775808", 9223372036854775808ULL },  /* above INT64 */
		{ "9999999999999999999", 9999999999999999999ULL },  /* largest */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t epoch = 0;

		assert_int_equal(parse(ok[i].text, &epoch), TOKEN_OK);
		assert_true(epoch == ok[i].epoch);
	}
	/* epoch may be NULL */
	assert_int_equal(parse("5", NULL), TOKEN_OK);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"", "0", "00", "0000000000000000000", "-1", "+1", " 1", "1 ", "\t1", "1\r",
		"1\n", "1.0", "1e3", "0x10", "１" /* fullwidth digit */, "a", "7a", "a7",
		"1,2", "7, 7", "NaN", "-0",
		"10000000000000000000",   /* 20 digits */
		"18446744073709551615",   /* UINT64_MAX: 20 digits */
		"18446744073709551616",   /* overflow */
		"00000000000000000001",   /* 20 digits even with leading zeros */
		"99999999999999999999999999999999",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t epoch = 12345;

		if (parse(bad[i], &epoch) != TOKEN_MALFORMED)
			fail_msg("\"%s\" was not refused", bad[i]);
		assert_true(epoch == 12345);   /* untouched on failure */
	}
	/* A NUL inside the value (length-delimited input). */
	assert_int_equal(token_parse("1\0002", 3, NULL), TOKEN_MALFORMED);
	/* A length shorter than the string only reads that much. */
	{
		uint64_t epoch = 0;

		assert_int_equal(token_parse("12x", 2, &epoch), TOKEN_OK);
		assert_true(epoch == 12);
	}
}

static void test_absent(void **state)
{
	struct token t;

	(void)state;
	assert_int_equal(parse(NULL, NULL), TOKEN_ABSENT);
	t = token_from_request(NULL, NULL);
	assert_int_equal(t.status, TOKEN_ABSENT);
}

static void test_header_and_metadata(void **state)
{
	struct token t;

	(void)state;
	t = token_from_request("7", NULL);
	assert_int_equal(t.status, TOKEN_OK);
	assert_true(t.epoch == 7);
	t = token_from_request(NULL, "8");
	assert_int_equal(t.status, TOKEN_OK);
	assert_true(t.epoch == 8);
	t = token_from_request("7", "7");
	assert_int_equal(t.status, TOKEN_OK);
	assert_true(t.epoch == 7);
	t = token_from_request("7", "007");      /* equal by value */
	assert_int_equal(t.status, TOKEN_OK);
	assert_true(t.epoch == 7);
	t = token_from_request("7", "8");
	assert_int_equal(t.status, TOKEN_CONFLICT);
	t = token_from_request("7", "x");
	assert_int_equal(t.status, TOKEN_MALFORMED);
	t = token_from_request("x", "7");
	assert_int_equal(t.status, TOKEN_MALFORMED);
	t = token_from_request("", NULL);        /* sent, but empty */
	assert_int_equal(t.status, TOKEN_MALFORMED);
}

static void test_add_folds_repeats(void **state)
{
	struct token t = TOKEN_INIT;

	(void)state;
	assert_int_equal(token_add(&t, NULL, 0), TOKEN_ABSENT);
	assert_int_equal(token_add(&t, "5", 1), TOKEN_OK);
	assert_int_equal(token_add(&t, "5", 1), TOKEN_OK);   /* a repeated header */
	assert_int_equal(token_add(&t, "6", 1), TOKEN_CONFLICT);
	assert_int_equal(token_add(&t, "5", 1), TOKEN_CONFLICT);   /* sticks */
	assert_int_equal(token_add(&t, "bad", 3), TOKEN_MALFORMED);
	assert_int_equal(token_add(&t, "5", 1), TOKEN_MALFORMED);  /* sticks */
	assert_string_equal(token_strstatus(TOKEN_CONFLICT), "conflict");
	assert_string_equal(token_strstatus(TOKEN_MALFORMED), "malformed");
}

static void test_lock_names(void **state)
{
	char name[TOKEN_LOCK_NAME_MAX + 1];
	char long_ok[TOKEN_LOCK_NAME_MAX + 1], too_long[TOKEN_LOCK_NAME_MAX + 2];
	static const char *const bad[] = {
		"", ".", "..", "a/b", "a b", "a\\b", "ü", "a:b", "a\nb", "*", "%2e",
	};
	static const char *const good[] = {
		"a", "invoices", "A-Z_a.z-09", "...", ".hidden", "-",
	};
	size_t i;

	(void)state;
	memset(long_ok, 'x', TOKEN_LOCK_NAME_MAX);
	long_ok[TOKEN_LOCK_NAME_MAX] = '\0';
	memset(too_long, 'x', TOKEN_LOCK_NAME_MAX + 1);
	too_long[TOKEN_LOCK_NAME_MAX + 1] = '\0';
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (token_lock_name_valid(bad[i], strlen(bad[i])))
			fail_msg("\"%s\" accepted", bad[i]);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!token_lock_name_valid(good[i], strlen(good[i])))
			fail_msg("\"%s\" refused", good[i]);
	assert_true(token_lock_name_valid(long_ok, strlen(long_ok)));
	assert_false(token_lock_name_valid(too_long, strlen(too_long)));

	assert_int_equal(token_lock_from_request(NULL, NULL, name, sizeof(name)),
			 TOKEN_LOCK_ABSENT);
	assert_int_equal(token_lock_from_request("inv", NULL, name, sizeof(name)),
			 TOKEN_LOCK_OK);
	assert_string_equal(name, "inv");
	assert_int_equal(token_lock_from_request(NULL, "inv2", name, sizeof(name)),
			 TOKEN_LOCK_OK);
	assert_string_equal(name, "inv2");
	assert_int_equal(token_lock_from_request("inv", "inv", name, sizeof(name)),
			 TOKEN_LOCK_OK);
	assert_int_equal(token_lock_from_request("inv", "Inv", name, sizeof(name)),
			 TOKEN_LOCK_CONFLICT);
	assert_int_equal(token_lock_from_request("inv", "a/b", name, sizeof(name)),
			 TOKEN_LOCK_INVALID);
	assert_int_equal(token_lock_from_request("..", NULL, name, sizeof(name)),
			 TOKEN_LOCK_INVALID);
	assert_string_equal(name, "");
	assert_int_equal(token_lock_from_request(long_ok, NULL, name, sizeof(name)),
			 TOKEN_LOCK_OK);
	assert_int_equal(token_lock_from_request("abcd", NULL, name, 4), TOKEN_LOCK_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_header_and_metadata),
		cmocka_unit_test(test_add_folds_repeats),
		cmocka_unit_test(test_lock_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
