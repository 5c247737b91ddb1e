/* test_lock.c — the lock protocol (lock.c, lock_admin.c, lease.c) against an
 * in-memory store with a fake clock and injectable faults, so leases lapse
 * without sleeping and ambiguous writes happen on demand. The real backends
 * are exercised by tests/integration/itest_lock.c; ambiguous writes, retries
 * and foreign payloads by test_lock_faults.c. */
#include "lock_test.h"

/* --- tests ------------------------------------------------------------------ */

static void test_names_and_keys(void **state)
{
	struct fx *f = *state;
	char key[1200], long_name[200];
	struct lock_options o = { .prefix = "custom/lock-", .time = &f->ts };
	struct lock *lk;

	assert_true(lock_name_valid("a"));
	assert_true(lock_name_valid("Jobs_1.x-y"));
	assert_false(lock_name_valid(""));
	assert_false(lock_name_valid("."));
	assert_false(lock_name_valid(".."));
	assert_false(lock_name_valid("a/b"));
	assert_false(lock_name_valid("a b"));
	assert_false(lock_name_valid(NULL));
	memset(long_name, 'x', 128);
	long_name[128] = '\0';
	assert_true(lock_name_valid(long_name));
	long_name[128] = 'x';
	long_name[129] = '\0';
	assert_false(lock_name_valid(long_name));
	assert_null(lock_open(&f->ms->base, "..", NULL, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "invalid lock name"));

	assert_string_equal(lock_prefix(f->a), "root/locks/jobs/lock-");
	assert_string_equal(lock_name(f->a), "jobs");
	lock_epoch_key(f->a, 42, key, sizeof(key));
	assert_string_equal(key, "root/locks/jobs/lock-0000000042.json");
	assert_int_equal(lock_key_epoch(f->a, key), 42);
	assert_int_equal(lock_key_epoch(f->a, "root/locks/jobs/lock-0000000042.json.bak"), 0);
	assert_int_equal(lock_key_epoch(f->a, "root/locks/jobs/lock-42.json"), 0);
	assert_int_equal(lock_key_epoch(f->a, "root/locks/jobs/lock-00000000x2.json"), 0);
	assert_int_equal(lock_key_epoch(f->a, "root/locks/other/lock-0000000042.json"), 0);

	lk = lock_open(&f->ms->base, "jobs", &o, f->err, sizeof(f->err));
	assert_non_null(lk);
	assert_string_equal(lock_prefix(lk), "custom/lock-");
	lock_close(lk);
}

static void test_lease_arithmetic(void **state)
{
	(void)state;
	/* same second: the full lease plus the contender's extra second */
	assert_int_equal(lock_lease_remaining_ms(100, 30000, 100), 31000);
	assert_int_equal(lock_lease_remaining_ms(100, 30000, 112), 19000);
	/* the one-second boundary: live at lm + validity, lapsed a second later */
	assert_int_equal(lock_lease_remaining_ms(100, 30000, 130), 1000);
	assert_int_equal(lock_lease_remaining_ms(100, 30000, 131), 0);
	assert_true(lock_lease_remaining_ms(100, 30000, 200) < 0);
	assert_int_equal(lock_lease_remaining_ms(100, 0, 100), 1000);
	assert_int_equal(lock_lease_remaining_ms(100, 0, 101), 0);
	/* absurd inputs saturate instead of overflowing */
	assert_true(lock_lease_remaining_ms(0, INT64_MAX, 0) == INT64_MAX);
	assert_true(lock_lease_remaining_ms(INT64_MIN, 1000, INT64_MAX) < 0);
	assert_true(lock_lease_remaining_ms(INT64_MAX, 1000, INT64_MIN) > 0);
}

static void test_acquire_free_then_held(void **state)
{
	struct fx *f = *state;
	struct lock_grant g, g2;
	struct lock_info who;
	struct lock_payload p;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	assert_string_equal(g.key, "root/locks/jobs/lock-0000000001.json");
	assert_string_equal(g.holder, "alice");
	assert_true(g.etag[0] == '"');
	assert_int_equal(strlen(g.nonce), 32);
	/* sent at mono 5000000; margin min(1000 + 3000, 15000) */
	assert_int_equal(g.deadline_mono_ms, 5000000 + 30000 - 4000);
	assert_int_equal(g.expires_at_ms, 1700000000000LL + 30000);
	p = stored(f, 1);
	assert_string_equal(p.leader_id, "alice");
	assert_int_equal(p.validity_ms, 30000);
	assert_false(p.expired);
	assert_string_equal(p.nonce, g.nonce);
	assert_int_equal(p.renewals, 0);
	assert_true(p.pid > 0);
	assert_non_null(strstr(f->ms->objs[0].body, "\"v\":1"));

	fc_advance(&f->clk, 12300);
	assert_int_equal(acq(f, f->b, "bob", 30000, 0, &g2, &who), LOCK_HELD);
	assert_int_equal(who.epoch, 1);
	assert_int_equal(who.state, LOCK_STATE_HELD);
	assert_string_equal(who.payload.leader_id, "alice");
	assert_int_equal(who.remaining_ms, 30000 - 11000); /* date is 12 s after lm */
	/* the holder itself is refused too: a lock is not re-entrant */
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g2, NULL), LOCK_HELD);
}

static void test_default_holder_and_bad_args(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_acquire_opts ao = { .ttl_ms = -5 };
	char big[400];

	assert_int_equal(lock_acquire(f->a, &ao, &g, NULL, f->err, sizeof(f->err)),
			 LOCK_ERR_INVALID);
	memset(big, 'h', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(acq(f, f->a, big, 1000, 0, &g, NULL), LOCK_ERR_INVALID);
	assert_int_equal(f->ms->base.requests, 0);
	assert_int_equal(lock_acquire(f->a, NULL, &g, NULL, f->err, sizeof(f->err)), LOCK_OK);
	assert_non_null(strchr(g.holder, '-')); /* "<host>-<pid>" */
	assert_int_equal(g.ttl_ms, 30000);
}

static void test_release_and_reacquire(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &ga, NULL), LOCK_OK);
	assert_int_equal(lock_release(f->a, &ga, f->err, sizeof(f->err)), LOCK_OK);
	assert_true(stored(f, 1).expired);
	assert_int_equal(acq(f, f->b, "bob", 30000, 0, &gb, NULL), LOCK_OK);
	assert_int_equal(gb.epoch, 2);
	/* alice's epoch is superseded */
	assert_int_equal(lock_renew(f->a, &ga, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "superseded by epoch 2"));
	assert_int_equal(lock_release(f->a, &ga, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_released_grant_cannot_resurrect(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "released"));
	assert_true(stored(f, 1).expired);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_lease_lapses_at_the_second_boundary(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info who;

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &ga, NULL), LOCK_OK);
	/* 10.999 s later the server's Date is lm + 10: live for one more second */
	fc_advance(&f->clk, 10999);
	assert_int_equal(acq(f, f->b, "bob", 10000, 0, &gb, &who), LOCK_HELD);
	assert_int_equal(who.remaining_ms, 1000);
	fc_advance(&f->clk, 1);
	assert_int_equal(acq(f, f->b, "bob", 10000, 0, &gb, &who), LOCK_OK);
	assert_int_equal(gb.epoch, 2);
	assert_int_equal(lock_renew(f->a, &ga, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_status_states(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info info;

	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.state, LOCK_STATE_FREE);
	assert_int_equal(info.epoch, 0);
	assert_int_equal(acq(f, f->a, "alice", 5000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.state, LOCK_STATE_HELD);
	assert_int_equal(info.remaining_ms, 6000);
	fc_advance(&f->clk, 6000);
	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.state, LOCK_STATE_LAPSED);
	assert_int_equal(info.remaining_ms, 0);
	assert_string_equal(lock_state_name(info.state), "lapsed");
}

static void test_renew_extends_the_lease(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info who;
	char old_etag[STORE_ETAG_MAX];

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &ga, NULL), LOCK_OK);
	snprintf(old_etag, sizeof(old_etag), "%s", ga.etag);
	fc_advance(&f->clk, 7000); /* before the deadline of 8 s (ttl - margin) */
	assert_int_equal(lock_renew(f->a, &ga, f->err, sizeof(f->err)), LOCK_OK);
	assert_string_not_equal(ga.etag, old_etag);
	assert_int_equal(ga.renewals, 1);
	assert_int_equal(ga.deadline_mono_ms, 5007000 + 10000 - 2000);
	assert_int_equal(stored(f, 1).renewals, 1);
	assert_string_equal(stored(f, 1).nonce, ga.nonce);
	/* 8 s into the renewed lease it is still alive */
	fc_advance(&f->clk, 8000);
	assert_int_equal(acq(f, f->b, "bob", 10000, 0, &gb, &who), LOCK_HELD);
	assert_int_equal(who.remaining_ms, 3000);
}

/* Issue 7, item 2: a renewal sent in time whose answer comes after the
 * holder's deadline is lost, whatever the store said. */
static void test_renew_answered_after_the_deadline(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	fc_advance(&f->clk, 10000);
	f->ms->put_faults[f->ms->nfaults++] = F_SLOW;
	f->ms->slow_ms = 21500; /* sent at 10 s, answered at 31.5 s */
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "after the holder's deadline"));
	assert_string_equal(g.etag, ""); /* nothing left to renew with */
}

/* Issue 7, item 2: a newer epoch does not change our file's ETag, so the
 * rewrite succeeds; the listing after it must find the newer epoch. */
static void test_renew_superseded_while_rewriting(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	int64_t deadline;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	deadline = g.deadline_mono_ms;
	fc_advance(&f->clk, 5000);
	f->ms->put_faults[f->ms->nfaults++] = F_NEWER_AFTER;
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "superseded by epoch 2"));
	assert_int_equal(g.deadline_mono_ms, deadline); /* never extended */
}

static void test_renew_after_own_lease_ran_out(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &g, NULL), LOCK_OK);
	fc_advance(&f->clk, 8000); /* nobody took epoch 2, but the deadline is here */
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "passed its deadline"));
	/* release is still allowed: it only gives the lock up */
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
}

static void test_renew_by_epoch_number(void **state)
{
	struct fx *f = *state;
	struct lock_grant g, other;

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &g, NULL), LOCK_OK);
	memset(&other, 0, sizeof(other));
	other.epoch = 1; /* what `fencectl renew jobs 1` knows */
	assert_int_equal(lock_renew(f->b, &other, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(other.renewals, 1);
	assert_string_equal(other.holder, "alice");
	assert_string_equal(other.nonce, g.nonce);
	assert_int_equal(stored(f, 1).renewals, 1);
	memset(&other, 0, sizeof(other));
	other.epoch = 1;
	assert_int_equal(lock_release(f->b, &other, f->err, sizeof(f->err)), LOCK_OK);
	memset(&other, 0, sizeof(other));
	other.epoch = 1;
	assert_int_equal(lock_renew(f->b, &other, f->err, sizeof(f->err)), LOCK_LOST);
	other.epoch = 7;
	assert_int_equal(lock_renew(f->b, &other, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "does not exist"));
}

static void test_renew_condition_failed(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &g, NULL), LOCK_OK);
	snprintf(g.etag, sizeof(g.etag), "\"not-the-etag\"");
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_break(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info info;
	uint64_t broken = 0;

	assert_int_equal(acq(f, f->a, "stuck", 30000, 0, &ga, NULL), LOCK_OK);
	assert_int_equal(lock_break(f->b, NULL, &broken, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(broken, 2);
	assert_int_equal(f->ms->n, 3); /* nothing deleted: two epoch files, the mark */
	assert_string_equal(stored(f, 2).leader_id, "fencectl-break");
	assert_true(stored(f, 2).expired);
	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.state, LOCK_STATE_RELEASED);
	assert_int_equal(lock_renew(f->a, &ga, f->err, sizeof(f->err)), LOCK_LOST);
	assert_int_equal(acq(f, f->b, "next", 30000, 0, &gb, NULL), LOCK_OK);
	assert_int_equal(gb.epoch, 3);
	assert_int_equal(lock_break(f->a, "operator", &broken, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(broken, 4);
	assert_string_equal(stored(f, 4).leader_id, "operator");
}

static void test_gc_keeps_latest(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	unsigned deleted = 99;
	uint64_t latest = 0;
	int i;

	for (i = 0; i < 5; i++) {
		assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
		assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	}
	assert_int_equal(lock_gc(f->b, 0, &deleted, f->err, sizeof(f->err)), LOCK_ERR_INVALID);
	assert_int_equal(lock_gc(f->b, 2, &deleted, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(deleted, 3);
	assert_int_equal(f->ms->n, 3); /* two epoch files and the mark */
	assert_int_equal(stored(f, 4).expired, true);
	assert_int_equal(lock_gc(f->b, 1, &deleted, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(deleted, 1);
	assert_int_equal(lock_gc(f->b, 1, &deleted, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(deleted, 0);
	assert_int_equal(f->ms->n, 2); /* the latest epoch file and the mark */
	assert_int_equal(lock_latest_epoch(f->b, &latest, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(latest, 5);
	assert_int_equal(acq(f, f->b, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 6);
}

static void test_pagination_over_many_epochs(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock *fresh;
	uint64_t e, latest = 0;
	unsigned long before;
	unsigned deleted = 0;

	f->ms->page_size = 100;
	for (e = 1; e <= 1005; e++)
		put_raw(f, e, "{\"leaderId\":\"h\",\"validityMs\":1000,\"expired\":true}");
	before = f->ms->lists;
	assert_int_equal(lock_latest_epoch(f->a, &latest, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(latest, 1005);
	assert_int_equal(f->ms->lists - before, 11); /* ceil(1005 / 100) pages */
	/* steady state: one list after the known key */
	before = f->ms->lists;
	assert_int_equal(lock_latest_epoch(f->a, &latest, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(f->ms->lists - before, 1);
	assert_string_equal(f->ms->last_start_after, "root/locks/jobs/lock-0000001005.json");

	assert_int_equal(acq(f, f->b, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1006);
	assert_int_equal(lock_release(f->b, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(lock_gc(f->b, 3, &deleted, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(deleted, 1003);
	fresh = fx_open(f, "jobs");
	assert_int_equal(acq(f, fresh, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1007);
	lock_close(fresh);
}

static void test_junk_keys_are_ignored(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	uint64_t latest = 0;

	put_raw(f, 3, "{\"leaderId\":\"h\",\"validityMs\":1000,\"expired\":true}");
	ms_write(f->ms, "root/locks/jobs/lock-0000000009.json.tmp", "x", 1);
	ms_write(f->ms, "root/locks/jobs/lock-zzz", "x", 1);
	ms_write(f->ms, "root/locks/jobs/lock-00000000099.json", "x", 1);
	ms_write(f->ms, "root/locks/jobsx/lock-0000000050.json", "x", 1);
	assert_int_equal(lock_latest_epoch(f->a, &latest, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(latest, 3);
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 4);
}

static void test_known_latest_costs_three_requests(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	unsigned long before;

	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	before = f->ms->base.requests;
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 2);
	/* list + create + the mark's raise (its value is known: not read) */
	assert_int_equal(f->ms->base.requests - before, 3);
	assert_int_equal(f->ms->lists, 3);
	assert_string_equal(f->ms->last_start_after, "root/locks/jobs/lock-0000000001.json");
	/* renew: list + put + list (a newer epoch?); release: list + put */
	before = f->ms->base.requests;
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(f->ms->base.requests - before, 5);
	/* another client that released epoch 2 behind our back: we must read */
	before = f->ms->base.requests;
	assert_int_equal(acq(f, f->b, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 3);
	/* b's first mark read, list, get, create, the mark's raise */
	assert_int_equal(f->ms->base.requests - before, 5);
}

static void test_wait_honours_lease_left(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	unsigned long before;
	int64_t start;
	int round;

	/* Polls back off up to seconds apart, yet the waiter wakes within a
	 * second of the lapse: it sleeps no longer than the lease has left.
	 * Jitter is random, so several rounds. */
	for (round = 0; round < 6; round++) {
		start = f->clk.wall_ms;
		assert_int_equal(start % 1000, 0);
		assert_int_equal(acq(f, f->a, "alice", 60000, 0, &ga, NULL), LOCK_OK);
		before = f->ms->base.requests;
		assert_int_equal(acq(f, f->b, "bob", 30000, 90000, &gb, NULL), LOCK_OK);
		assert_int_equal(gb.epoch, ga.epoch + 1);
		/* live until Date = lm + 60; taken within that second */
		assert_true(f->clk.wall_ms - start >= 61000);
		assert_true(f->clk.wall_ms - start < 62000);
		assert_true(f->ms->base.requests - before < 80);
		assert_int_equal(lock_release(f->b, &gb, f->err, sizeof(f->err)), LOCK_OK);
		f->clk.wall_ms += 1000 - f->clk.wall_ms % 1000;
	}
}

static void test_wait_times_out_at_deadline(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info who;
	int64_t start;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &ga, NULL), LOCK_OK);
	start = f->clk.mono_ms;
	assert_int_equal(acq(f, f->b, "bob", 30000, 5000, &gb, &who), LOCK_ERR_TIMEOUT);
	assert_int_equal(f->clk.mono_ms - start, 5000); /* not a millisecond past */
	assert_string_equal(who.payload.leader_id, "alice");
	assert_non_null(strstr(f->err, "alice"));
}

static void test_wait_sees_early_release(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info who;

	/* bob polls with backoff; alice's released file shows up between polls */
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &ga, NULL), LOCK_OK);
	assert_int_equal(acq(f, f->b, "bob", 30000, 400, &gb, &who), LOCK_ERR_TIMEOUT);
	assert_int_equal(lock_release(f->a, &ga, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(acq(f, f->b, "bob", 30000, 400, &gb, NULL), LOCK_OK);
	assert_int_equal(gb.epoch, 2);
}

static void test_list_names(void **state)
{
	struct fx *f = *state;
	char **names = NULL;
	size_t n = 0, i;
	char key[200];
	int e;

	f->ms->page_size = 3;
	for (e = 1; e <= 7; e++) {
		snprintf(key, sizeof(key), "root/locks/alpha/lock-%010d.json", e);
		ms_write(f->ms, key, "{}", 2);
	}
	ms_write(f->ms, "root/locks/a.b/lock-0000000001.json", "{}", 2);
	ms_write(f->ms, "root/locks/alpha0/lock-0000000001.json", "{}", 2);
	ms_write(f->ms, "root/locks/readme.txt", "x", 1);
	ms_write(f->ms, "root/locks/bad name/lock-0000000001.json", "x", 1);
	ms_write(f->ms, "root/locks/zed/x", "x", 1);
	ms_write(f->ms, "root/other/locks/no/lock-0000000001.json", "x", 1);
	assert_int_equal(lock_list_names(&f->ms->base, &names, &n, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(n, 4);
	assert_string_equal(names[0], "a.b");
	assert_string_equal(names[1], "alpha");
	assert_string_equal(names[2], "alpha0");
	assert_string_equal(names[3], "zed");
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_names_and_keys),
		T(test_lease_arithmetic),
		T(test_acquire_free_then_held),
		T(test_default_holder_and_bad_args),
		T(test_release_and_reacquire),
		T(test_released_grant_cannot_resurrect),
		T(test_lease_lapses_at_the_second_boundary),
		T(test_status_states),
		T(test_renew_extends_the_lease),
		T(test_renew_after_own_lease_ran_out),
		T(test_renew_answered_after_the_deadline),
		T(test_renew_superseded_while_rewriting),
		T(test_renew_by_epoch_number),
		T(test_renew_condition_failed),
		T(test_break),
		T(test_gc_keeps_latest),
		T(test_pagination_over_many_epochs),
		T(test_junk_keys_are_ignored),
		T(test_known_latest_costs_three_requests),
		T(test_wait_honours_lease_left),
		T(test_wait_times_out_at_deadline),
		T(test_wait_sees_early_release),
		T(test_list_names),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
