/* test_lock_faults.c — the lock protocol when the store misbehaves or holds
 * what others wrote: ambiguous creates, renewals and releases, create races
 * and retries, unreadable payloads, the payloads of the TypeScript and Java
 * clients, and lock_check_store. Uses the in-memory store of lock_test.h. */
#include "lock_test.h"

static void test_ambiguous_create_applied_is_ours(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	char key[1200];

	ms_fault(f->ms, F_APPLY_THEN_IO);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	lock_epoch_key(f->a, 1, key, sizeof(key));
	assert_string_equal(g.etag, f->ms->objs[ms_find(f->ms, key)].etag);
	/* resolved by reading, not by writing again (the other put: the mark) */
	assert_int_equal(f->ms->puts, 2);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
}

static void test_ambiguous_create_someone_elses(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;

	ms_fault(f->ms, F_OTHER_THEN_IO);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "other");
	assert_int_equal(who.epoch, 1);
}

static void test_create_race_412(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;

	ms_fault(f->ms, F_OTHER_FIRST);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "other");
}

static void test_create_not_applied_is_retried(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	ms_fault(f->ms, F_CONFLICT); /* 409 */
	ms_fault(f->ms, F_SERVER);   /* 500 */
	ms_fault(f->ms, F_IO);       /* timeout */
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	assert_int_equal(f->ms->puts, 5); /* four creates, the mark */
	assert_true(f->clk.sleeps >= 3); /* backed off between tries */
	/* the deadline counts from the first send: conservative */
	assert_int_equal(g.deadline_mono_ms, 5000000 + 30000 - 4000);
}

static void test_create_applied_then_412_on_retry(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	/* our create lands but times out and the read-back fails: the retry's
	 * 412 must be checked against our nonce, not taken as lost */
	assert_int_equal(lock_mark_read(f->a, NULL, f->err, sizeof(f->err)), LOCK_OK);
	ms_fault(f->ms, F_APPLY_THEN_IO);
	f->ms->fail_gets = 1;   /* the read-back's (the mark is known) */
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	assert_int_equal(f->ms->puts, 3); /* two creates, the mark */
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
}

static void test_create_gives_up(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	int i;

	for (i = 0; i < 8; i++)
		ms_fault(f->ms, F_SERVER);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_ERR_STORE);
	assert_non_null(strstr(f->err, "lock-0000000001.json"));
	assert_int_equal(f->ms->puts, 6); /* 1 + 5 retries */
}

static void test_ambiguous_renew_and_release(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	ms_fault(f->ms, F_APPLY_THEN_IO);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(g.renewals, 1);
	assert_int_equal(stored(f, 1).renewals, 1);
	ms_fault(f->ms, F_IO);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(g.renewals, 2);
	assert_int_equal(stored(f, 1).renewals, 2);
	ms_fault(f->ms, F_OTHER_THEN_IO);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_unreadable_payload_held_then_lapsed(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;

	put_raw(f, 1, "this is not json");
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_int_equal(who.state, LOCK_STATE_UNREADABLE);
	assert_int_equal(who.remaining_ms, 61000);
	fc_advance(&f->clk, 60000);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_int_equal(who.remaining_ms, 1000);
	fc_advance(&f->clk, 1000);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 2);
	/* missing fields are unreadable too */
	put_raw(f, 3, "{\"leaderId\":\"x\"}");
	assert_int_equal(acq(f, f->b, "bob", 30000, 0, &g, &who), LOCK_HELD);
	assert_int_equal(who.state, LOCK_STATE_UNREADABLE);
}

static void test_typescript_and_java_payloads(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;

	put_raw(f, 1, "{\"leaderId\":\"ts-node\",\"validityMs\":20000,\"expired\":false}");
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "ts-node");
	assert_int_equal(who.remaining_ms, 21000);
	put_raw(f, 1, "{\"leaderId\":\"ts-node\",\"validityMs\":20000,\"expired\":true}");
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 2);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);

	put_raw(f, 3, "{\"leaderId\":\"java\",\"validity_ms\":5000,\"expired\":false}");
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "java");
	assert_int_equal(who.remaining_ms, 6000);
	fc_advance(&f->clk, 6000);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 4);
}

static void test_check_store(void **state)
{
	struct fx *f = *state;

	assert_int_equal(lock_check_store(&f->ms->base, "root/", f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(f->ms->n, 0); /* probe deleted */
	assert_true(f->ms->puts >= 2);

	f->ms->ignore_if_none_match = 1;
	assert_int_equal(lock_check_store(&f->ms->base, NULL, f->err, sizeof(f->err)),
			 LOCK_ERR_UNSAFE);
	assert_non_null(strstr(f->err, "ignores If-None-Match on PUT"));
	assert_non_null(strstr(f->err, "conditional writes"));
	assert_int_equal(f->ms->n, 0);

	/* DELETE If-Match ignored: the lock protocol is safe (check passes),
	 * the probe names what the proxy must refuse */
	f->ms->ignore_if_none_match = 0;
	f->ms->ignore_del_if_match = 1;
	assert_int_equal(lock_check_store(&f->ms->base, NULL, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(f->ms->n, 0);
	{
		struct backend_report rep;

		assert_int_equal(lock_probe_store(&f->ms->base, NULL, NULL, &rep, f->err,
						  sizeof(f->err)), LOCK_OK);
		assert_int_equal(f->ms->n, 0);
		assert_true(rep.probed & CAP_DELETE_IF_MATCH);
		assert_false(rep.caps & CAP_DELETE_IF_MATCH);
		assert_true(rep.caps & CAP_PUT_IF_NONE_MATCH);
		assert_true(rep.caps & CAP_PUT_IF_MATCH_QUOTED);
		assert_false(rep.probed & CAP_RACE); /* no configuration: no race */
		assert_int_equal(lock_probe_missing(&rep, BACKEND_OP_DELETE), CAP_DELETE_IF_MATCH);
		assert_int_equal(lock_probe_missing(&rep, BACKEND_OP_PUT), 0);
		assert_int_equal(lock_probe_missing(&rep, BACKEND_OP_LOCK), 0);
		assert_string_equal(lock_report_seen(&rep, CAP_DELETE_IF_MATCH),
				    "a delete If-Match a wrong ETag deleted the object");
		assert_string_equal(lock_report_seen(&rep, CAP_RACE), "not probed");
	}
	f->ms->ignore_del_if_match = 0;
	f->ms->no_date = 1;
	assert_int_equal(lock_check_store(&f->ms->base, NULL, f->err, sizeof(f->err)),
			 LOCK_ERR_UNSAFE);
	assert_non_null(strstr(f->err, "no Date header"));
	assert_int_equal(f->ms->n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_ambiguous_create_applied_is_ours),
		T(test_ambiguous_create_someone_elses),
		T(test_create_race_412),
		T(test_create_not_applied_is_retried),
		T(test_create_applied_then_412_on_retry),
		T(test_create_gives_up),
		T(test_ambiguous_renew_and_release),
		T(test_unreadable_payload_held_then_lapsed),
		T(test_typescript_and_java_payloads),
		T(test_check_store),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
