/* test_front_hdrs.c — the front end's header lists: order and case kept,
 * duplicates kept, lookups ignore case, set/del remove every copy, lists
 * grow past their first block and their first entries (also from a
 * caller's array), borrowed entries are not copied, a moved list stays
 * valid, clear frees everything (ASan checks the leaks); the hop-by-hop
 * fields leave a parsed head once (RFC 9110 7.6.1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "http/front.h"

static void test_order_case_duplicates(void **state)
{
	struct front_hdrs h = {0};

	assert_int_equal(front_hdrs_add(&h, "Host", "a"), 0);
	assert_int_equal(front_hdrs_add(&h, "x-Amz-Meta-One", "1"), 0);
	assert_int_equal(front_hdrs_addn(&h, "X-AMZ-META-ONEzz", 14, "2xx", 1), 0);
	assert_int_equal(front_hdrs_add(&h, "Empty", ""), 0);
	assert_int_equal(h.n, 4);
	assert_string_equal(h.v[1].name, "x-Amz-Meta-One");
	assert_string_equal(h.v[2].name, "X-AMZ-META-ONE");
	assert_string_equal(h.v[2].value, "2");
	assert_int_equal(h.v[2].nlen, 14);
	assert_int_equal(h.v[2].vlen, 1);
	assert_string_equal(front_hdrs_get(&h, "X-AMZ-meta-one"), "1");
	assert_int_equal(front_hdrs_count(&h, "x-amz-meta-one"), 2);
	assert_int_equal(front_hdrs_count(&h, "x-amz-meta-on"), 0);
	assert_null(front_hdrs_get(&h, "x-amz-meta-onf"));
	assert_null(front_hdrs_get(&h, "Hos"));
	assert_null(front_hdrs_get(&h, "Hosts"));
	assert_string_equal(front_hdrs_get(&h, "empty"), "");
	/* case folding is for letters only: '@' is not '`' */
	assert_int_equal(front_hdrs_add(&h, "a@b", "x"), 0);
	assert_null(front_hdrs_get(&h, "A`B"));
	assert_string_equal(front_hdrs_get(&h, "A@B"), "x");
	front_hdrs_clear(&h);
	assert_int_equal(h.n, 0);
	assert_null(h.v);
	front_hdrs_clear(&h);
	front_hdrs_clear(NULL);
	assert_null(front_hdrs_get(NULL, "Host"));
}

static void test_set_del(void **state)
{
	struct front_hdrs h = {0};

	assert_int_equal(front_hdrs_add(&h, "A", "1"), 0);
	assert_int_equal(front_hdrs_add(&h, "B", "2"), 0);
	assert_int_equal(front_hdrs_add(&h, "a", "3"), 0);
	assert_int_equal(front_hdrs_add(&h, "C", "4"), 0);
	assert_int_equal(front_hdrs_set(&h, "A", "5"), 0);
	assert_int_equal(h.n, 3);
	assert_string_equal(h.v[0].name, "B");
	assert_string_equal(h.v[1].name, "C");
	assert_string_equal(h.v[2].name, "A");
	assert_string_equal(h.v[2].value, "5");
	for (int i = 0; i < 100; i++)
		assert_int_equal(front_hdrs_set(&h, "B", i % 2 ? "odd" : "even"), 0);
	assert_int_equal(front_hdrs_count(&h, "b"), 1);
	assert_string_equal(front_hdrs_get(&h, "B"), "odd");
	assert_int_equal(front_hdrs_set(&h, "c", NULL), 0);
	assert_null(front_hdrs_get(&h, "C"));
	assert_int_equal(front_hdrs_del(&h, "nope"), 0);
	assert_int_equal(front_hdrs_del(&h, "a"), 1);
	assert_int_equal(h.n, 1);
	assert_string_equal(h.v[0].name, "B");
	assert_int_equal(front_hdrs_del(NULL, "a"), 0);
	front_hdrs_clear(&h);
}

/* Many and long headers: more entries than the first block holds, strings
 * bigger than a block, all readable afterwards in order. */
static void test_growth(void **state)
{
	struct front_hdrs h = {0};
	static char big[5000];
	char name[32], value[64];

	memset(big, 'v', sizeof(big) - 1);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "X-Header-%d", i);
		snprintf(value, sizeof(value), "value number %d", i);
		if (i % 37 == 5)
			assert_int_equal(front_hdrs_add(&h, name, big), 0);
		else
			assert_int_equal(front_hdrs_add(&h, name, value), 0);
	}
	assert_int_equal(h.n, 300);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "X-Header-%d", i);
		snprintf(value, sizeof(value), "value number %d", i);
		assert_string_equal(h.v[i].name, name);
		name[2] = 'h';
		assert_string_equal(front_hdrs_get(&h, name), i % 37 == 5 ? big : value);
		assert_int_equal(h.v[i].vlen, strlen(h.v[i].value));
	}
	front_hdrs_clear(&h);
}

/* A caller's array for the first entries, borrowed strings, copies mixed
 * in, growth past the array. */
static void test_init_and_refs(void **state)
{
	struct front_hdr buf[4];
	struct front_hdrs h;
	char name[32];
	const char *shared = "shared-value";

	front_hdrs_init(&h, buf, 4);
	assert_null(front_hdrs_get(&h, "A"));
	assert_int_equal(front_hdrs_add_ref(&h, "A", 1, shared, strlen(shared)), 0);
	assert_ptr_equal(h.v, buf);
	assert_ptr_equal(front_hdrs_get(&h, "a"), shared);
	assert_int_equal(front_hdrs_add(&h, "B", "copied"), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "N%d", i);
		assert_int_equal(front_hdrs_add(&h, name, name), 0);
	}
	assert_ptr_not_equal(h.v, buf);
	assert_int_equal(h.n, 22);
	assert_ptr_equal(front_hdrs_get(&h, "A"), shared);
	assert_string_equal(front_hdrs_get(&h, "b"), "copied");
	assert_string_equal(front_hdrs_get(&h, "n19"), "N19");
	assert_int_equal(front_hdrs_set(&h, "A", "own"), 0);
	assert_string_equal(front_hdrs_get(&h, "A"), "own");
	front_hdrs_clear(&h);
	/* an empty caller's array grows like any other */
	front_hdrs_init(&h, buf, 0);
	for (int i = 0; i < 40; i++)
		assert_int_equal(front_hdrs_add_ref(&h, "Z", 1, shared, strlen(shared)), 0);
	assert_int_equal(front_hdrs_count(&h, "z"), 40);
	front_hdrs_clear(&h);
	/* refs only: no allocation for strings, entries in the array */
	front_hdrs_init(&h, buf, 4);
	assert_int_equal(front_hdrs_add_ref(&h, "C", 1, "d", 1), 0);
	assert_null(h.blocks);
	front_hdrs_clear(&h);
}

/* The parser hands its list over by copying the struct. */
static void test_move(void **state)
{
	struct front_hdrs a = {0}, b;

	for (int i = 0; i < 20; i++)
		assert_int_equal(front_hdrs_add(&a, "Name", "Value"), 0);
	b = a;
	memset(&a, 0, sizeof(a));
	assert_int_equal(front_hdrs_count(&b, "name"), 20);
	assert_int_equal(front_hdrs_add(&b, "Last", "x"), 0);
	assert_string_equal(b.v[20].name, "Last");
	front_hdrs_clear(&a);
	front_hdrs_clear(&b);
}

static void test_list_has(void **state)
{
	assert_true(front_list_has("keep-alive, Upgrade", "upgrade"));
	assert_true(front_list_has(" close ", "close"));
	assert_false(front_list_has("closed", "close"));
	assert_false(front_list_has("", "close"));
	assert_false(front_list_has(NULL, "close"));
}

/* front_list_next: every token of a list, trimmed, empty elements skipped. */
static void test_list_next(void **state)
{
	static const struct {
		const char *list;
		const char *tokens; /* the tokens joined with '|' */
	} cases[] = {
		{ "", "" },
		{ " , ,\t", "" },
		{ "close", "close" },
		{ "keep-alive, Upgrade", "keep-alive|Upgrade" },
		{ " a ,,\tb\t, c d ,", "a|b|c d" },
		{ "x-1,x-2,x-3", "x-1|x-2|x-3" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char got[64] = "";
		const char *pos = cases[i].list, *t;
		size_t len, n = 0;

		while ((t = front_list_next(&pos, &len))) {
			assert_true(len > 0 && n + len + 1 < sizeof(got));
			if (n)
				got[n++] = '|';
			memcpy(got + n, t, len);
			n += len;
			got[n] = '\0';
		}
		assert_string_equal(got, cases[i].tokens);
		assert_null(front_list_next(&pos, &len)); /* stays at the end */
	}
}

/* RFC 9110 7.6.1, once at parse: every row is a head as received (name,
 * value pairs) and the names left afterwards, or a refusal. */
static void test_drop_hop_by_hop(void **state)
{
	static const struct {
		const char *in[14];  /* name, value, name, value, ... NULL */
		const char *left;    /* names kept, ","-joined; NULL: refused */
	} rows[] = {
		{ { "Host", "h", "Connection", "keep-alive", NULL }, "Host" },
		/* a client cannot make the proxy drop what fencing adds or judged */
		{ { "If-Match", "\"e\"", "Connection", "If-Match, x-amz-meta-fencing-epoch",
		    "x-amz-meta-fencing-epoch", "9", "X-Fencing-Token", "1", NULL }, "X-Fencing-Token" },
		/* every Connection line counts, any case, empty elements skipped */
		{ { "connection", " , if-none-match", "If-None-Match", "*", "CONNECTION", "x-a",
		    "X-A", "1", "X-B", "2", NULL }, "X-B" },
		/* the fixed set, whatever Connection says */
		{ { "Keep-Alive", "5", "TE", "trailers", "Trailer", "x", "Upgrade", "h2c",
		    "Proxy-Authorization", "p", "Proxy-Connection", "close", NULL }, "" },
		/* framing cannot be hop-by-hop */
		{ { "Connection", "Content-Length", "Content-Length", "3", NULL }, NULL },
		{ { "Connection", "close, transfer-encoding", NULL }, NULL },
		{ { "Connection", "HOST", "Host", "h", NULL }, NULL },
		/* a name that only starts like a listed one stays */
		{ { "Connection", "X-Fencing", "X-Fencing-Token", "1", "Expect", "100-continue",
		    NULL }, "X-Fencing-Token,Expect" },
	};

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct front_hdrs h = {0};
		const char *why = NULL;
		char left[256] = "";
		size_t n0;
		int rc;

		for (size_t i = 0; rows[r].in[i]; i += 2)
			assert_int_equal(front_hdrs_add(&h, rows[r].in[i], rows[r].in[i + 1]), 0);
		n0 = h.n;
		rc = front_hdrs_drop_hop_by_hop(&h, &why);
		if (!rows[r].left) {
			assert_int_equal(rc, -1);
			assert_non_null(why);
			assert_int_equal(h.n, n0); /* unchanged */
		} else {
			assert_int_equal(rc, 0);
			for (size_t i = 0; i < h.n; i++)
				snprintf(left + strlen(left), sizeof(left) - strlen(left), "%s%s",
					 i ? "," : "", h.v[i].name);
			assert_string_equal(left, rows[r].left);
		}
		front_hdrs_clear(&h);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_case_duplicates),
		cmocka_unit_test(test_set_del),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_init_and_refs),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_list_has),
		cmocka_unit_test(test_list_next),
		cmocka_unit_test(test_drop_hop_by_hop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
