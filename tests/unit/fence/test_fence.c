/* test_fence.c — the fencing verdict (proxy/fence/fence.c) over every combination
 * of presented epoch × current epoch × method × fenced-method set × object
 * epoch × strict/lapsed, against DESIGN.md's decision table, plus literal
 * rows written out by hand so the table is not only checked against itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence/fence.h"

/* What the request presents. */
enum presented {
	P_ABSENT,
	P_MALFORMED,
	P_CONFLICT,          /* header and metadata differ */
	P_BELOW,             /* T < C */
	P_EQUAL,             /* T == C */
	P_EQUAL_RELEASED,    /* T == C, epoch released */
	P_ABOVE_FILE,        /* T > C, lock file T exists */
	P_ABOVE_FILE_RELEASED, /* T > C, lock file T exists and is expired */
	P_ABOVE_NO_FILE,     /* T > C, no lock file T */
	P_ABOVE_UNKNOWN,     /* T > C, not looked up yet */
	P_COUNT
};

static const char *const presented_names[P_COUNT] = {
	"absent", "malformed", "conflict", "T<C", "T==C", "T==C released",
	"T>C file", "T>C file released", "T>C no file", "T>C unknown",
};

enum objepoch { O_NONE, O_LOWER, O_EQUAL, O_HIGHER, O_COUNT };

struct method_case {
	const char *method;
	unsigned mask;          /* 0: default */
	bool fenced;            /* expected: is this method fenced under mask */
};

static const struct method_case methods[] = {
	{ "GET", 0, false },
	{ "HEAD", 0, false },
	{ "OPTIONS", 0, false },
	{ "PUT", 0, true },
	{ "POST", 0, true },
	{ "DELETE", 0, true },
	{ "PATCH", 0, true },
	{ "MKCOL", 0, true },              /* unknown method: fail closed */
	{ "put", 0, true },                /* methods are case-sensitive: OTHER */
	{ "PUT", FENCE_METHODS_DEFAULT, true },
	/* a route fencing only PUT, POST and DELETE */
	{ "PUT", METHOD_PUT | METHOD_POST | METHOD_DELETE, true },
	{ "DELETE", METHOD_PUT | METHOD_POST | METHOD_DELETE, true },
	{ "PATCH", METHOD_PUT | METHOD_POST | METHOD_DELETE, false },
	{ "MKCOL", METHOD_PUT | METHOD_POST | METHOD_DELETE, false },
	{ "GET", METHOD_PUT | METHOD_POST | METHOD_DELETE, false },
	/* a route that fences reads too (e.g. an RPC API with side effects) */
	{ "GET", METHOD_GET | METHOD_PUT, true },
	{ "POST", METHOD_GET | METHOD_PUT, false },
};

struct expect {
	enum fence_verdict verdict;
	int status;
	const char *code;
	uint64_t high_water;
	bool raised;
};

/* DESIGN.md's table, row by row, in the order the rows must be checked. */
static struct expect table(bool fenced, enum presented p, uint64_t c, uint64_t t,
			   uint64_t obj, bool strict, bool lapsed)
{
	struct expect e = { .high_water = c };

	if (!fenced) {
		e.verdict = FENCE_READ_PASS;
		return e;
	}
	switch (p) {
	case P_ABSENT:
		e = (struct expect){ FENCE_REJECT_MISSING, 428, "FencingTokenMissing", c, false };
		return e;
	case P_MALFORMED:
	case P_CONFLICT:
		e = (struct expect){ FENCE_REJECT_INVALID, 400, "FencingTokenInvalid", c, false };
		return e;
	case P_BELOW:
		e = (struct expect){ FENCE_REJECT_STALE, 409, "FencingTokenStale", c, false };
		return e;
	case P_ABOVE_UNKNOWN:
		e.verdict = FENCE_NEED_LOOKUP;
		return e;
	case P_ABOVE_NO_FILE:
		e = (struct expect){ FENCE_REJECT_UNKNOWN, 409, "FencingTokenUnknown", c, false };
		return e;
	case P_ABOVE_FILE:
	case P_ABOVE_FILE_RELEASED:
		e.high_water = t;   /* a real lock file raises C, whatever follows */
		e.raised = true;
		break;
	case P_EQUAL:
	case P_EQUAL_RELEASED:
	case P_COUNT:
		break;
	}
	if (p == P_EQUAL_RELEASED || p == P_ABOVE_FILE_RELEASED || obj > t ||
	    (strict && lapsed)) {
		e.verdict = FENCE_REJECT_STALE;
		e.status = 409;
		e.code = "FencingTokenStale";
		return e;
	}
	e.verdict = FENCE_FORWARD;
	return e;
}

/* The request input for one combination; false if it cannot happen (T < C
 * or T == C with C == 0, since T >= 1). */
static bool build(enum presented p, uint64_t c, const struct method_case *m,
		  enum objepoch o, bool strict, bool lapsed, struct fence_input *in,
		  uint64_t *t_out)
{
	uint64_t t = 0;

	memset(in, 0, sizeof(*in));
	in->method = m->method;
	in->fenced_methods = m->mask;
	in->current_epoch = c;
	in->strict = strict;
	in->lease_lapsed = lapsed;
	switch (p) {
	case P_ABSENT:
		in->token = token_from_request(NULL, NULL);
		break;
	case P_MALFORMED:
		in->token = token_from_request("-7", NULL);
		break;
	case P_CONFLICT:
		in->token = token_from_request("7", "8");
		break;
	case P_BELOW:
		if (c < 2)
			return false;
		t = c - 1;
		break;
	case P_EQUAL:
	case P_EQUAL_RELEASED:
		if (c == 0)
			return false;
		t = c;
		in->epoch_released = p == P_EQUAL_RELEASED;
		break;
	case P_ABOVE_FILE:
	case P_ABOVE_FILE_RELEASED:
		t = c + 3;
		in->lock_file_exists = FENCE_TRI_YES;
		in->epoch_released = p == P_ABOVE_FILE_RELEASED;
		break;
	case P_ABOVE_NO_FILE:
		t = c + 3;
		in->lock_file_exists = FENCE_TRI_NO;
		break;
	case P_ABOVE_UNKNOWN:
		t = c + 3;
		in->lock_file_exists = FENCE_TRI_UNKNOWN;
		break;
	case P_COUNT:
		return false;
	}
	if (t) {
		char buf[24];

		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)t);
		in->token = token_from_request(buf, buf); /* header and metadata agree */
	}
	/* The object's epoch relative to T (or to 5 when there is no T). */
	{
		uint64_t ref = t ? t : 5;

		in->object_epoch = o == O_NONE ? 0 : o == O_LOWER ? ref - 1 :
				   o == O_EQUAL ? ref : ref + 1;
	}
	*t_out = t;
	return true;
}

static void test_every_combination(void **state)
{
	static const uint64_t currents[] = { 0, 1, 9 };
	unsigned checked = 0, forwarded = 0, raised = 0;
	size_t ci, mi;
	int p, o, strict, lapsed;

	(void)state;
	for (p = 0; p < P_COUNT; p++)
	for (ci = 0; ci < sizeof(currents) / sizeof(currents[0]); ci++)
	for (mi = 0; mi < sizeof(methods) / sizeof(methods[0]); mi++)
	for (o = 0; o < O_COUNT; o++)
	for (strict = 0; strict < 2; strict++)
	for (lapsed = 0; lapsed < 2; lapsed++) {
		struct fence_input in;
		struct fence_decision d;
		struct expect e;
		uint64_t t = 0;

		if (!build((enum presented)p, currents[ci], &methods[mi], (enum objepoch)o,
			   strict, lapsed, &in, &t))
			continue;
		e = table(methods[mi].fenced, (enum presented)p, currents[ci], t,
			  in.object_epoch, strict, lapsed);
		fence_decide(&in, &d);
		if (d.verdict != e.verdict || d.status != e.status ||
		    (e.code ? !d.code || strcmp(d.code, e.code) : d.code != NULL) ||
		    d.high_water != e.high_water || d.raised != e.raised) {
			print_error("case: %s C=%llu method=%s mask=%#x obj=%llu strict=%d "
				    "lapsed=%d\n  want %s %d %s hw=%llu raised=%d\n"
				    "  got  %s %d %s hw=%llu raised=%d (%s)\n",
				    presented_names[p], (unsigned long long)currents[ci],
				    methods[mi].method, methods[mi].mask,
				    (unsigned long long)in.object_epoch, strict, lapsed,
				    fence_strverdict(e.verdict), e.status,
				    e.code ? e.code : "-", (unsigned long long)e.high_water,
				    e.raised, fence_strverdict(d.verdict), d.status,
				    d.code ? d.code : "-", (unsigned long long)d.high_water,
				    d.raised, d.message);
			fail();
		}
		/* Rejections carry a message; other verdicts do not. */
		if (d.status)
			assert_true(strlen(d.message) > 0);
		else
			assert_string_equal(d.message, "");
		/* Epochs only go up. */
		assert_true(d.high_water >= in.current_epoch);
		checked++;
		forwarded += d.verdict == FENCE_FORWARD;
		raised += d.raised;
	}
	/* The loops really ran through the interesting cases. */
	assert_true(checked > 5000);
	assert_true(forwarded > 100);
	assert_true(raised > 100);
}

/* Rows written out literally: method, token header, metadata, C, released,
 * lock file, object epoch, strict, lapsed → verdict, status, code, C after. */
struct row {
	const char *method;
	const char *header, *meta;
	uint64_t c;
	bool released;
	enum fence_tri file;
	uint64_t obj;
	bool strict, lapsed;
	enum fence_verdict verdict;
	int status;
	const char *code;
	uint64_t high_water;
};

static const struct row rows[] = {
	{ "GET", NULL, NULL, 7, 0, 0, 0, 0, 0, FENCE_READ_PASS, 0, NULL, 7 },
	{ "GET", "bogus", NULL, 7, 0, 0, 0, 0, 0, FENCE_READ_PASS, 0, NULL, 7 },
	{ "PUT", NULL, NULL, 7, 0, 0, 0, 0, 0, FENCE_REJECT_MISSING, 428, "FencingTokenMissing", 7 },
	{ "PUT", "", NULL, 7, 0, 0, 0, 0, 0, FENCE_REJECT_INVALID, 400, "FencingTokenInvalid", 7 },
	{ "PUT", "0", NULL, 7, 0, 0, 0, 0, 0, FENCE_REJECT_INVALID, 400, "FencingTokenInvalid", 7 },
	{ "PUT", "7", "8", 7, 0, 0, 0, 0, 0, FENCE_REJECT_INVALID, 400, "FencingTokenInvalid", 7 },
	{ "PUT", "7", "007", 7, 0, 0, 0, 0, 0, FENCE_FORWARD, 0, NULL, 7 },
	{ "PUT", NULL, "7", 7, 0, 0, 0, 0, 0, FENCE_FORWARD, 0, NULL, 7 },
	{ "DELETE", "6", NULL, 7, 0, 0, 0, 0, 0, FENCE_REJECT_STALE, 409, "FencingTokenStale", 7 },
	{ "POST", "7", NULL, 7, 1, 0, 0, 0, 0, FENCE_REJECT_STALE, 409, "FencingTokenStale", 7 },
	{ "PUT", "7", NULL, 7, 0, 0, 8, 0, 0, FENCE_REJECT_STALE, 409, "FencingTokenStale", 7 },
	{ "PUT", "7", NULL, 7, 0, 0, 7, 0, 0, FENCE_FORWARD, 0, NULL, 7 },
	{ "PUT", "7", NULL, 7, 0, 0, 0, 0, 1, FENCE_FORWARD, 0, NULL, 7 },
	{ "PUT", "7", NULL, 7, 0, 0, 0, 1, 1, FENCE_REJECT_STALE, 409, "FencingTokenStale", 7 },
	{ "PUT", "7", NULL, 7, 0, 0, 0, 1, 0, FENCE_FORWARD, 0, NULL, 7 },
	{ "PUT", "9", NULL, 7, 0, FENCE_TRI_UNKNOWN, 0, 0, 0, FENCE_NEED_LOOKUP, 0, NULL, 7 },
	{ "PUT", "9", NULL, 7, 0, FENCE_TRI_NO, 0, 0, 0, FENCE_REJECT_UNKNOWN, 409, "FencingTokenUnknown", 7 },
	{ "PUT", "9", NULL, 7, 0, FENCE_TRI_YES, 0, 0, 0, FENCE_FORWARD, 0, NULL, 9 },
	{ "PUT", "9", NULL, 7, 1, FENCE_TRI_YES, 0, 0, 0, FENCE_REJECT_STALE, 409, "FencingTokenStale", 9 },
	{ "PUT", "9", NULL, 7, 0, FENCE_TRI_YES, 10, 0, 0, FENCE_REJECT_STALE, 409, "FencingTokenStale", 9 },
	{ "PUT", "1", NULL, 0, 0, FENCE_TRI_YES, 0, 0, 0, FENCE_FORWARD, 0, NULL, 1 },
	{ "PUT", "9999999999999999999", NULL, 9999999999999999998ULL, 0, FENCE_TRI_YES, 0, 0, 0,
	  FENCE_FORWARD, 0, NULL, 9999999999999999999ULL },
};

static void test_literal_rows(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct fence_input in = {
			.method = r->method,
			.token = token_from_request(r->header, r->meta),
			.current_epoch = r->c,
			.epoch_released = r->released,
			.lock_file_exists = r->file,
			.object_epoch = r->obj,
			.strict = r->strict,
			.lease_lapsed = r->lapsed,
		};
		struct fence_decision d;

		fence_decide(&in, &d);
		if (d.verdict != r->verdict || d.status != r->status ||
		    d.high_water != r->high_water ||
		    (r->code ? !d.code || strcmp(d.code, r->code) : d.code != NULL)) {
			print_error("row %zu: got %s %d %s hw=%llu (%s)\n", i,
				    fence_strverdict(d.verdict), d.status, d.code ? d.code : "-",
				    (unsigned long long)d.high_water, d.message);
			fail();
		}
		assert_int_equal(d.raised, r->high_water > r->c);
	}
}

static void test_lookup_then_decide(void **state)
{
	struct fence_input in = {
		.method = "PUT",
		.token = token_from_request("12", NULL),
		.current_epoch = 9,
	};
	struct fence_decision d;

	(void)state;
	fence_decide(&in, &d);
	assert_int_equal(d.verdict, FENCE_NEED_LOOKUP);
	assert_int_equal(d.status, 0);
	assert_false(d.raised);
	in.lock_file_exists = FENCE_TRI_YES;
	fence_decide(&in, &d);
	assert_int_equal(d.verdict, FENCE_FORWARD);
	assert_true(d.raised);
	assert_int_equal(d.high_water, 12);
	/* The next write under 9 is now stale, and the 409 reports C = 12. */
	in.token = token_from_request("9", NULL);
	in.current_epoch = d.high_water;
	fence_decide(&in, &d);
	assert_int_equal(d.verdict, FENCE_REJECT_STALE);
	assert_int_equal(d.high_water, 12);
	assert_non_null(strstr(d.message, "12"));
}

static void test_messages_name_epochs(void **state)
{
	struct fence_input in = {
		.method = "PUT",
		.token = token_from_request("3", NULL),
		.current_epoch = 8,
	};
	struct fence_decision d;

	(void)state;
	fence_decide(&in, &d);
	assert_string_equal(d.message, "fencing token 3 is older than the current epoch 8");
	in.token = token_from_request("11", NULL);
	in.lock_file_exists = FENCE_TRI_NO;
	fence_decide(&in, &d);
	assert_string_equal(d.message, "no lock file for epoch 11 (current epoch 8)");
}

static void test_forged_token_zero_refused(void **state)
{
	/* A caller bypassing token_parse() with epoch 0 must not get through. */
	struct fence_input in = { .method = "PUT", .current_epoch = 0 };
	struct fence_decision d;

	(void)state;
	in.token.status = TOKEN_OK;
	in.token.epoch = 0;
	fence_decide(&in, &d);
	assert_int_equal(d.verdict, FENCE_REJECT_INVALID);
}

static void test_method_bits(void **state)
{
	(void)state;
	assert_int_equal(method_bit("GET"), METHOD_GET);
	assert_int_equal(method_bit("PATCH"), METHOD_PATCH);
	assert_int_equal(method_bit("get"), METHOD_OTHER);
	assert_int_equal(method_bit(NULL), METHOD_OTHER);
	/* reads are exactly GET, HEAD, OPTIONS; anything else may write */
	assert_true(method_is_read("GET") && method_is_read("HEAD") && method_is_read("OPTIONS"));
	assert_false(method_is_read("PUT") || method_is_read("POST") || method_is_read("DELETE"));
	assert_false(method_is_read("get") || method_is_read("MKCOL") || method_is_read(NULL));
	assert_int_equal(method_from_name("PROPFIND"), 0);
	assert_int_equal(method_from_name("DELETE"), METHOD_DELETE);
	assert_string_equal(fence_strverdict(FENCE_REJECT_UNKNOWN), "reject_unknown");
	assert_string_equal(fence_strverdict(FENCE_NEED_LOOKUP), "need_lookup");
	assert_string_equal(fence_strverdict((enum fence_verdict)99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_combination),
		cmocka_unit_test(test_literal_rows),
		cmocka_unit_test(test_lookup_then_decide),
		cmocka_unit_test(test_messages_name_epochs),
		cmocka_unit_test(test_forged_token_zero_refused),
		cmocka_unit_test(test_method_bits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
