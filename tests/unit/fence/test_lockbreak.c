/* test_lockbreak.c — who may end or take over a live lease through the S3
 * API (proxy/fence/lockbreak.c): every combination of write (create or
 * rewrite, live or expired payload) × latest state × "break" permission ×
 * the client being the epoch file's writer, as a table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence/lockbreak.h"

#define A LOCKBREAK_ALLOW
#define N LOCKBREAK_NEED_WRITER
#define R LOCKBREAK_REFUSE
#define HELD LOCK_STATE_HELD
#define UNREAD LOCK_STATE_UNREADABLE

/* writer: what the latest file's stamp says (NULL none) once known */
static const struct {
	const char *name;
	bool create, expired;
	enum lock_state latest;
	const char *client;
	bool may_break;
	const char *writer;
	enum lockbreak_verdict first, then;  /* before / after the stamp is read */
} cases[] = {
	/* create of latest+1 */
	{ "acquire a free lock", 1, 0, LOCK_STATE_FREE, "AK1", 0, NULL, A, A },
	{ "acquire a lapsed lock", 1, 0, LOCK_STATE_LAPSED, "AK1", 0, NULL, A, A },
	{ "acquire a released lock", 1, 0, LOCK_STATE_RELEASED, "AK1", 0, NULL, A, A },
	{ "break a live lock, lock only", 1, 1, HELD, "AK1", 0, NULL, R, R },
	{ "break an unreadable lock, lock only", 1, 1, UNREAD, "AK1", 0, NULL, R, R },
	{ "break a live lock it holds itself, lock only", 1, 1, HELD, "AK1", 0, "AK1", R, R },
	{ "break a live lock with break", 1, 1, HELD, "AK1", 1, NULL, A, A },
	{ "expired create over a lapsed lock", 1, 1, LOCK_STATE_LAPSED, "AK1", 0, NULL, A, A },
	{ "live create over a live lock (lockkey: LockHeld)", 1, 0, HELD, "AK1", 0, NULL, A, A },
	/* rewrite of the live latest */
	{ "renew by its writer", 0, 0, HELD, "AK1", 0, "AK1", N, A },
	{ "release by its writer", 0, 1, HELD, "AK1", 0, "AK1", N, A },
	{ "mark expired by another client", 0, 1, HELD, "AK2", 0, "AK1", N, R },
	{ "renew by another client (take over)", 0, 0, HELD, "AK2", 0, "AK1", N, R },
	{ "mark expired, no stamp", 0, 1, HELD, "AK1", 0, NULL, N, R },
	{ "mark expired, unreadable, its writer", 0, 1, UNREAD, "AK1", 0, "AK1", N, A },
	{ "mark expired, anonymous client", 0, 1, HELD, "", 0, "", N, R },
	{ "mark expired, NULL client", 0, 1, HELD, NULL, 0, "AK1", N, R },
	{ "mark expired by another client with break", 0, 1, HELD, "AK2", 1, "AK1", A, A },
	{ "renew by another client with break", 0, 0, HELD, "AK2", 1, "AK1", A, A },
	{ "stamp differs only in case", 0, 1, HELD, "ak1", 0, "AK1", N, R },
	/* rewrite of a latest that is no longer live */
	{ "mark a lapsed epoch expired", 0, 1, LOCK_STATE_LAPSED, "AK2", 0, "AK1", A, A },
	{ "mark a released epoch expired", 0, 1, LOCK_STATE_RELEASED, "AK2", 0, NULL, A, A },
	{ "revive a lapsed epoch (lockkey: LockLost)", 0, 0, LOCK_STATE_LAPSED, "AK2", 0, NULL, A, A },
};

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lockbreak_request r = {
			.create = cases[i].create, .expired = cases[i].expired,
			.latest_state = cases[i].latest, .client = cases[i].client,
			.may_break = cases[i].may_break,
		};
		struct lockbreak_decision d;

		lockbreak_decide(&r, &d);
		if (d.verdict != cases[i].first)
			fail_msg("%s: first %s", cases[i].name, lockbreak_strverdict(d.verdict));
		if (d.verdict != N)
			continue;
		r.latest_writer_known = true;
		r.latest_writer = cases[i].writer;
		lockbreak_decide(&r, &d);
		if (d.verdict != cases[i].then)
			fail_msg("%s: then %s", cases[i].name, lockbreak_strverdict(d.verdict));
		if (d.verdict == R && !strstr(d.message, "\"break\""))
			fail_msg("%s: message \"%s\"", cases[i].name, d.message);
		if (d.verdict == A)
			assert_string_equal(d.message, "");
	}
}

static void test_messages(void **state)
{
	struct lockbreak_request r = { .create = true, .expired = true, .latest_state = HELD,
				       .client = "AK1" };
	struct lockbreak_decision d;

	(void)state;
	lockbreak_decide(&r, &d);
	assert_int_equal(d.verdict, R);
	assert_non_null(strstr(d.message, "breaking a live lock"));
	r = (struct lockbreak_request){ .expired = true, .latest_state = HELD, .client = "AK2",
					.latest_writer_known = true, .latest_writer = "AK1" };
	lockbreak_decide(&r, &d);
	assert_non_null(strstr(d.message, "marking expired"));
	r.expired = false;
	lockbreak_decide(&r, &d);
	assert_non_null(strstr(d.message, "rewriting"));
	assert_string_equal(lockbreak_strverdict(LOCKBREAK_NEED_WRITER), "need_writer");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_messages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
