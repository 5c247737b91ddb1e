/* test_objcas.c — the object compare-and-swap's steps (proxy/fence/objcas.c)
 * as a table: for each situation (client conditions, cache, HEAD, a lost
 * race) the step and whose condition it is. The safety rows: an object
 * written under a newer epoch is never overwritten; a DELETE of a missing
 * key is answered here, never sent unconditionally; a lost race is
 * retried only with our own condition, and boundedly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fence/objcas.h"

static const struct objcache_entry CACHED = { "\"c\"", 3 };

static void test_first_step(void **state)
{
	static const struct {
		const char *name;
		bool inm;
		const char *client_if_match;
		const struct objcache_entry *cached;
		enum objcas_action want;
		const char *etag;
		bool ours;
	} rows[] = {
		{ "client create-only", true, "", &CACHED, OBJCAS_IF_ABSENT, NULL, false },
		{ "cache hit", false, "", &CACHED, OBJCAS_IF_MATCH, "\"c\"", true },
		{ "cache miss", false, "", NULL, OBJCAS_HEAD, NULL, false },
		{ "client If-Match = cached", false, "\"c\"", &CACHED, OBJCAS_IF_MATCH, "\"c\"", false },
		{ "client If-Match != cached", false, "\"x\"", &CACHED, OBJCAS_HEAD, NULL, false },
		{ "client If-Match, miss", false, "\"x\"", NULL, OBJCAS_HEAD, NULL, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct objcas_in in = { .epoch = 3, .client_inm = rows[i].inm,
					.client_if_match = rows[i].client_if_match,
					.cached = rows[i].cached };
		struct objcas_step st;

		objcas_first(&in, &st);
		if (st.action != rows[i].want || st.ours != rows[i].ours ||
		    (rows[i].etag && (!st.etag || strcmp(st.etag, rows[i].etag) != 0)))
			fail_msg("%s: got %s ours=%d", rows[i].name, objcas_straction(st.action), st.ours);
	}
}

static void test_after_head(void **state)
{
	static const struct {
		const char *name;
		bool del;
		const char *client_if_match;
		int found;
		uint64_t head_epoch;
		bool race;
		int resends;
		bool can_resend;
		enum objcas_action want;
		bool ours;
	} rows[] = {
		{ "head failed", false, "", -1, 0, false, 0, true, OBJCAS_HEAD_FAILED, false },
		{ "newer epoch: never overwritten", false, "", 1, 4, false, 0, true, OBJCAS_STALE, false },
		{ "newer epoch, delete", true, "", 1, 4, true, 0, true, OBJCAS_STALE, false },
		{ "same epoch", false, "", 1, 3, false, 0, true, OBJCAS_IF_MATCH, true },
		{ "older epoch", false, "", 1, 2, false, 0, true, OBJCAS_IF_MATCH, true },
		{ "absent: create only", false, "", 0, 0, false, 0, true, OBJCAS_IF_ABSENT, true },
		{ "absent delete: answered here", true, "", 0, 0, false, 0, true, OBJCAS_GONE, false },
		{ "race, absent delete", true, "", 0, 0, true, 0, true, OBJCAS_GONE, false },
		{ "race, re-send", false, "", 1, 3, true, 2, true, OBJCAS_IF_MATCH, true },
		{ "race, retries spent", false, "", 1, 3, true, 3, true, OBJCAS_GIVE_UP, false },
		{ "race, body gone", false, "", 1, 3, true, 0, false, OBJCAS_GIVE_UP, false },
		{ "client If-Match, absent", false, "\"h\"", 0, 0, false, 0, true, OBJCAS_NO_SUCH_KEY, false },
		{ "client If-Match, other", false, "\"x\"", 1, 3, false, 0, true, OBJCAS_PRECONDITION, false },
		{ "client If-Match, same", false, "\"h\"", 1, 3, false, 0, true, OBJCAS_IF_MATCH, false },
		{ "client If-Match, newer", false, "\"h\"", 1, 9, false, 0, true, OBJCAS_STALE, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct objcas_in in = { .epoch = 3, .is_delete = rows[i].del,
					.client_if_match = rows[i].client_if_match,
					.head_found = rows[i].found, .head_etag = "\"h\"",
					.head_epoch = rows[i].head_epoch, .after_race = rows[i].race,
					.resends = rows[i].resends, .max_resends = 3,
					.can_resend = rows[i].can_resend };
		struct objcas_step st;

		objcas_after_head(&in, &st);
		if (st.action != rows[i].want || st.ours != rows[i].ours)
			fail_msg("%s: got %s ours=%d", rows[i].name, objcas_straction(st.action), st.ours);
	}
}

static void test_on_answer(void **state)
{
	(void)state;
	/* our condition lost: a race, whatever the status says */
	assert_int_equal(objcas_on_answer(412, true, true, false), OBJCAS_RACE);
	assert_int_equal(objcas_on_answer(409, true, false, false), OBJCAS_RACE);
	assert_int_equal(objcas_on_answer(404, true, true, false), OBJCAS_RACE);
	assert_int_equal(objcas_on_answer(412, true, false, false), OBJCAS_RACE);
	/* our If-Match DELETE: the object is gone, deleted is deleted */
	assert_int_equal(objcas_on_answer(404, true, true, true), OBJCAS_DELETED);
	/* the client's own condition: its answer */
	assert_int_equal(objcas_on_answer(412, false, true, false), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(404, false, true, true), OBJCAS_RELAY);
	/* other failures are no race */
	assert_int_equal(objcas_on_answer(403, true, true, false), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(500, true, true, false), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(404, true, false, false), OBJCAS_RELAY);
	assert_string_equal(objcas_straction(OBJCAS_GONE), "gone");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_step),
		cmocka_unit_test(test_after_head),
		cmocka_unit_test(test_on_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
