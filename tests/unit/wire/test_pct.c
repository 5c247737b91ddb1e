/* test_pct.c — the one codec (wire/pct.c) and query splitting
 * (wire/query.c): strict decoding (every malformed escape refused, never
 * passed through), '+' and %00 by flag, AWS URI encoding, hex, buffer
 * bounds, decimal numbers without printf (decimal.h), and query parameters
 * with duplicates, empty values and bad escapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/decimal.h"
#include "wire/pct.h"
#include "wire/query.h"

static void test_decode_table(void **state)
{
	static const struct {
		const char *in;
		unsigned flags;
		const char *out;     /* NULL: refused */
		size_t out_len;
	} cases[] = {
		{ "", 0, "", 0 },
		{ "abc", 0, "abc", 3 },
		{ "a%20b", 0, "a b", 3 },
		{ "%41%42%43", 0, "ABC", 3 },
		{ "%6a%6A", 0, "jj", 2 },           /* either case */
		{ "%2F", 0, "/", 1 },
		{ "%2f", 0, "/", 1 },
		{ "%65", 0, "e", 1 },               /* "d%65lete" is "delete" */
		{ "a+b", 0, "a+b", 3 },
		{ "a+b", PCT_PLUS_SPACE, "a b", 3 },
		{ "%2B", PCT_PLUS_SPACE, "+", 1 },
		{ "%C3%A9", 0, "\xc3\xa9", 2 },
		{ "%00", 0, "\0", 1 },
		{ "%00", PCT_NO_NUL, NULL, 0 },
		{ "a%00b", PCT_NO_NUL, NULL, 0 },
		{ "%", 0, NULL, 0 },
		{ "%4", 0, NULL, 0 },
		{ "a%", 0, NULL, 0 },
		{ "%G1", 0, NULL, 0 },
		{ "%1G", 0, NULL, 0 },
		{ "%%41", 0, NULL, 0 },
		{ "% 41", 0, NULL, 0 },
		{ "%+1", PCT_PLUS_SPACE, NULL, 0 },
		{ "100%", 0, NULL, 0 },
		{ "%252F", 0, "%2F", 3 },           /* decoded once, not twice */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64];
		size_t n = 0;
		ssize_t r = pct_decode(cases[i].in, strlen(cases[i].in), cases[i].flags, out,
				       sizeof(out));
		char *dup = pct_decode_dup(cases[i].in, strlen(cases[i].in), cases[i].flags, &n);

		if (!cases[i].out) {
			if (r != -1 || dup)
				fail_msg("case %zu \"%s\" should be refused", i, cases[i].in);
			continue;
		}
		if (r != (ssize_t)cases[i].out_len || !dup || n != cases[i].out_len)
			fail_msg("case %zu \"%s\": got %zd", i, cases[i].in, r);
		assert_memory_equal(out, cases[i].out, cases[i].out_len);
		assert_memory_equal(dup, cases[i].out, cases[i].out_len);
		assert_int_equal(out[r], '\0');
		free(dup);
	}
}

static void test_decode_bounds(void **state)
{
	char out[4];

	(void)state;
	assert_int_equal(pct_decode("abc", 3, 0, out, 4), 3);
	assert_int_equal(pct_decode("abcd", 4, 0, out, 4), -1);   /* no room for NUL */
	assert_int_equal(pct_decode("%41%41%41", 9, 0, out, 4), 3);
	assert_int_equal(pct_decode("", 0, 0, out, 0), -1);
	assert_int_equal(pct_decode("", 0, 0, out, 1), 0);
	/* the length bounds the input: bytes after it are not looked at */
	assert_int_equal(pct_decode("%4", 2, 0, out, 4), -1);
	assert_int_equal(pct_decode("%41", 2, 0, out, 4), -1);
}

static void test_encode_table(void **state)
{
	static const struct {
		const char *in;
		unsigned flags;
		const char *out;
	} cases[] = {
		{ "", 0, "" },
		{ "AZaz09-._~", 0, "AZaz09-._~" },
		{ "a b", 0, "a%20b" },
		{ "a/b", 0, "a%2Fb" },
		{ "a/b", PCT_KEEP_SLASH, "a/b" },
		{ "+=&?#%", 0, "%2B%3D%26%3F%23%25" },
		{ "\xc3\xa9", 0, "%C3%A9" },
		{ "$file", 0, "%24file" },
		{ "*", 0, "%2A" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64];
		size_t len = strlen(cases[i].in);
		char *dup = pct_encode_dup(cases[i].in, len, cases[i].flags);

		assert_int_equal(pct_encoded_len(cases[i].in, len, cases[i].flags),
				 strlen(cases[i].out));
		assert_int_equal(pct_encode(cases[i].in, len, cases[i].flags, out, sizeof(out)),
				 strlen(cases[i].out));
		assert_string_equal(out, cases[i].out);
		assert_non_null(dup);
		assert_string_equal(dup, cases[i].out);
		free(dup);
	}
	{
		char out[4];

		assert_int_equal(pct_encode(" ", 1, 0, out, 3), -1);  /* "%20" needs 4 */
		assert_int_equal(pct_encode(" ", 1, 0, out, 4), 3);
		assert_int_equal(pct_encode("abcd", 4, 0, out, 4), -1);
	}
}

static void test_round_trip_every_byte(void **state)
{
	char in[256], enc[3 * 256 + 1], dec[257];

	(void)state;
	for (int i = 0; i < 256; i++)
		in[i] = (char)i;
	assert_int_equal(pct_encode(in, 256, 0, enc, sizeof(enc)), (ssize_t)pct_encoded_len(in, 256, 0));
	assert_int_equal(pct_decode(enc, strlen(enc), 0, dec, sizeof(dec)), 256);
	assert_memory_equal(in, dec, 256);
}

static void test_hex(void **state)
{
	static const unsigned char bin[] = { 0x00, 0x0f, 0xa5, 0xff };
	char hex[9];

	(void)state;
	hex_encode(bin, sizeof(bin), hex);
	assert_string_equal(hex, "000fa5ff");
	hex_encode(bin, 0, hex);
	assert_string_equal(hex, "");
	assert_int_equal(hex_value('0'), 0);
	assert_int_equal(hex_value('9'), 9);
	assert_int_equal(hex_value('a'), 10);
	assert_int_equal(hex_value('F'), 15);
	assert_int_equal(hex_value('g'), -1);
	assert_int_equal(hex_value('/'), -1);
	assert_int_equal(hex_value(0x100 + '1'), -1);
	assert_int_equal(hex_value(-1), -1);
}

static void test_query_parse(void **state)
{
	struct query q;
	const struct query_param *p;

	(void)state;
	assert_int_equal(query_parse(NULL, &q), QUERY_OK);
	assert_int_equal(q.n, 0);
	query_free(&q);
	assert_int_equal(query_parse("", &q), QUERY_OK);
	assert_int_equal(q.n, 0);
	query_free(&q);

	assert_int_equal(query_parse("uploads&partNumber=3&uploadId=a%2Bb+c&x=", &q), QUERY_OK);
	assert_int_equal(q.n, 4);
	assert_string_equal(q.v[0].name, "uploads");
	assert_false(q.v[0].has_value);
	assert_string_equal(q.v[0].value, "");
	p = query_get(&q, "uploadId");
	assert_non_null(p);
	assert_string_equal(p->value, "a+b c");
	p = query_get(&q, "x");
	assert_non_null(p);
	assert_true(p->has_value);
	assert_int_equal(p->value_len, 0);
	assert_null(query_get(&q, "UPLOADS"));       /* names are case-sensitive */
	assert_null(query_duplicate(&q));
	query_free(&q);

	/* encoded names are decoded: "d%65lete" is "delete" */
	assert_int_equal(query_parse("d%65lete", &q), QUERY_OK);
	assert_non_null(query_get(&q, "delete"));
	query_free(&q);

	/* empty segments skipped; duplicates kept and reported */
	assert_int_equal(query_parse("&&a=1&&a=2&", &q), QUERY_OK);
	assert_int_equal(q.n, 2);
	assert_string_equal(query_duplicate(&q), "a");
	assert_string_equal(query_get(&q, "a")->value, "1");
	query_free(&q);

	/* a second '=' belongs to the value; %00 allowed in values only */
	assert_int_equal(query_parse("a=b=c&v=%00", &q), QUERY_OK);
	assert_string_equal(query_get(&q, "a")->value, "b=c");
	assert_int_equal(query_get(&q, "v")->value_len, 1);
	query_free(&q);
	assert_int_equal(query_parse("n%00=1", &q), QUERY_BAD_ESCAPE);
	query_free(&q);

	assert_int_equal(query_parse("a=%zz", &q), QUERY_BAD_ESCAPE);
	query_free(&q);
	assert_int_equal(query_parse("ok=1&%", &q), QUERY_BAD_ESCAPE);
	query_free(&q);
	assert_string_equal(query_strerror(QUERY_BAD_ESCAPE), "malformed percent-encoding in the query");
}

static void test_query_limit(void **state)
{
	char raw[QUERY_PARAMS_MAX * 4 + 8];
	size_t o = 0;
	struct query q;

	(void)state;
	for (int i = 0; i < QUERY_PARAMS_MAX; i++)
		o += (size_t)snprintf(raw + o, sizeof(raw) - o, "%s%c", i ? "&" : "", 'a' + i % 26);
	assert_int_equal(query_parse(raw, &q), QUERY_OK);
	assert_int_equal(q.n, QUERY_PARAMS_MAX);
	query_free(&q);
	snprintf(raw + o, sizeof(raw) - o, "&z");
	assert_int_equal(query_parse(raw, &q), QUERY_TOO_MANY);
	query_free(&q);
	query_free(NULL);
}

/* decimal_u64 (wire/decimal.h) against printf's answer, ends included. */
static void test_decimal_u64(void **state)
{
	static const uint64_t cases[] = { 0, 1, 9, 10, 99, 100, 4096, 1234567890,
					  UINT64_C(9999999999999999999),
					  UINT64_C(10000000000000000000), UINT64_MAX };
	char got[DECIMAL_U64_MAX], want[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = decimal_u64(got, cases[i]);

		snprintf(want, sizeof(want), "%llu", (unsigned long long)cases[i]);
		assert_string_equal(got, want);
		assert_int_equal(n, strlen(want));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decimal_u64),
		cmocka_unit_test(test_decode_table),
		cmocka_unit_test(test_decode_bounds),
		cmocka_unit_test(test_encode_table),
		cmocka_unit_test(test_round_trip_every_byte),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_query_parse),
		cmocka_unit_test(test_query_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
