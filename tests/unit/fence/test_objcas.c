/* test_objcas.c — the object compare-and-swap's steps (proxy/fence/objcas.c)
 * as a table: for each situation (client conditions, cache, HEAD, a lost
 * race, the unread create of a cache miss) the step and whose condition
 * it is. The safety rows: an object
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

/* The first step. put: a plain PutObject (else a copy or a multipart
 * completion, del: a DELETE); held: its body is held whole for a re-send.
 * unread: the unread create of a cache miss (objcas.h): only for a plain
 * PUT without a client condition whose body is held. */
static void test_first_step(void **state)
{
	static const struct {
		const char *name;
		bool put, del, held, inm;
		const char *client_if_match;
		const struct objcache_entry *cached;
		enum objcas_action want;
		const char *etag;
		bool ours, unread;
	} rows[] = {
		{ "client create-only", true, false, true, true, "", &CACHED, OBJCAS_IF_ABSENT, NULL, false, false },
		{ "client create-only, miss", true, false, true, true, "", NULL, OBJCAS_IF_ABSENT, NULL, false, false },
		{ "cache hit", true, false, true, false, "", &CACHED, OBJCAS_IF_MATCH, "\"c\"", true, false },
		{ "cache hit, body not held", true, false, false, false, "", &CACHED, OBJCAS_IF_MATCH, "\"c\"", true, false },
		{ "miss, held: unread create", true, false, true, false, "", NULL, OBJCAS_IF_ABSENT, NULL, true, true },
		{ "miss, body beyond the window", true, false, false, false, "", NULL, OBJCAS_HEAD, NULL, false, false },
		{ "miss, copy or completion", false, false, true, false, "", NULL, OBJCAS_HEAD, NULL, false, false },
		{ "miss, delete", false, true, true, false, "", NULL, OBJCAS_HEAD, NULL, false, false },
		{ "miss, delete flagged put", true, true, true, false, "", NULL, OBJCAS_HEAD, NULL, false, false },
		{ "delete, cache hit", false, true, true, false, "", &CACHED, OBJCAS_IF_MATCH, "\"c\"", true, false },
		{ "client If-Match = cached", true, false, true, false, "\"c\"", &CACHED, OBJCAS_IF_MATCH, "\"c\"", false, false },
		{ "client If-Match != cached", true, false, true, false, "\"x\"", &CACHED, OBJCAS_HEAD, NULL, false, false },
		{ "client If-Match, miss", true, false, true, false, "\"x\"", NULL, OBJCAS_HEAD, NULL, false, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct objcas_in in = { .epoch = 3, .client_inm = rows[i].inm,
					.client_if_match = rows[i].client_if_match,
					.cached = rows[i].cached, .plain_put = rows[i].put,
					.is_delete = rows[i].del, .can_resend = rows[i].held,
					.max_resends = 3 };
		struct objcas_step st;

		objcas_first(&in, &st);
		if (st.action != rows[i].want || st.ours != rows[i].ours ||
		    st.unread != rows[i].unread ||
		    (rows[i].etag && (!st.etag || strcmp(st.etag, rows[i].etag) != 0)))
			fail_msg("%s: got %s ours=%d unread=%d", rows[i].name,
				 objcas_straction(st.action), st.ours, st.unread);
	}
}

/* The unread create found the key (OBJCAS_EXISTS): the HEAD that follows
 * decides as after a race (after_race), so a newer epoch is refused, an
 * older or equal one re-sent with If-Match (counted), a vanished key
 * created again with If-None-Match (ours, no longer unread), and spent
 * re-sends or a body no longer held give up. */
static void test_unread_create_then_head(void **state)
{
	static const struct {
		const char *name;
		int found;
		uint64_t head_epoch;
		int resends;
		bool held;
		enum objcas_action want;
		bool ours;
	} rows[] = {
		{ "exists, newer epoch: 409, never overwritten", 1, 4, 0, true, OBJCAS_STALE, false },
		{ "exists, same epoch: If-Match", 1, 3, 0, true, OBJCAS_IF_MATCH, true },
		{ "exists, older epoch: If-Match", 1, 1, 0, true, OBJCAS_IF_MATCH, true },
		{ "exists, unstamped: If-Match", 1, 0, 0, true, OBJCAS_IF_MATCH, true },
		{ "deleted meanwhile: create again", 0, 0, 0, true, OBJCAS_IF_ABSENT, true },
		{ "head failed", -1, 0, 0, true, OBJCAS_HEAD_FAILED, false },
		{ "re-sends spent", 1, 3, 3, true, OBJCAS_GIVE_UP, false },
		{ "body no longer held", 1, 3, 0, false, OBJCAS_GIVE_UP, false },
		{ "newer epoch beats a body not held", 1, 9, 0, false, OBJCAS_STALE, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct objcas_in in = { .epoch = 3, .plain_put = true, .can_resend = true,
					.max_resends = 3 };
		struct objcas_step st;

		objcas_first(&in, &st);
		assert_int_equal(st.action, OBJCAS_IF_ABSENT);
		assert_true(st.unread);
		assert_int_equal(objcas_on_answer(412, st.ours, false, st.unread, false),
				 OBJCAS_EXISTS);
		in.after_race = true;
		in.head_found = rows[i].found;
		in.head_etag = "\"h\"";
		in.head_epoch = rows[i].head_epoch;
		in.resends = rows[i].resends;
		in.can_resend = rows[i].held;
		objcas_after_head(&in, &st);
		if (st.action != rows[i].want || st.ours != rows[i].ours || st.unread ||
		    (st.action == OBJCAS_IF_MATCH && strcmp(st.etag, "\"h\"") != 0))
			fail_msg("%s: got %s ours=%d unread=%d", rows[i].name,
				 objcas_straction(st.action), st.ours, st.unread);
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
	assert_int_equal(objcas_on_answer(412, true, true, false, false), OBJCAS_RACE);
	assert_int_equal(objcas_on_answer(409, true, false, false, false), OBJCAS_RACE);
	assert_int_equal(objcas_on_answer(404, true, true, false, false), OBJCAS_RACE);
	assert_int_equal(objcas_on_answer(412, true, false, false, false), OBJCAS_RACE);
	/* our If-Match DELETE: the object is gone, deleted is deleted */
	assert_int_equal(objcas_on_answer(404, true, true, false, true), OBJCAS_DELETED);
	/* the client's own condition: its answer */
	assert_int_equal(objcas_on_answer(412, false, true, false, false), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(404, false, true, false, true), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(412, false, false, false, false), OBJCAS_RELAY);
	/* other failures are no race */
	assert_int_equal(objcas_on_answer(403, true, true, false, false), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(500, true, true, false, false), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(404, true, false, false, false), OBJCAS_RELAY);
	/* the unread create: 412 or 409 ConditionalRequestConflict says the
	 * key exists (read it, no race); anything else as before */
	assert_int_equal(objcas_on_answer(412, true, false, true, false), OBJCAS_EXISTS);
	assert_int_equal(objcas_on_answer(409, true, false, true, false), OBJCAS_EXISTS);
	assert_int_equal(objcas_on_answer(403, true, false, true, false), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(404, true, false, true, false), OBJCAS_RELAY);
	assert_int_equal(objcas_on_answer(503, true, false, true, false), OBJCAS_RELAY);
	assert_string_equal(objcas_straction(OBJCAS_GONE), "gone");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_step),
		cmocka_unit_test(test_after_head),
		cmocka_unit_test(test_unread_create_then_head),
		cmocka_unit_test(test_on_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
