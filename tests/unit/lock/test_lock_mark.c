/* test_lock_mark.c — the epoch mark (lock/core/lock_mark.c) with the in-memory
 * store of lock_test.h: epoch files deleted out of band → the next epoch is
 * above the mark, for a fresh client and for one whose cache names the
 * deleted files; the mark is never lowered; a crash between the epoch file
 * and the mark hands out no token; an unreadable mark fails closed; a
 * proxy's "reserved" answer counts as done; break mints above the mark;
 * and the key rule. */
#include "lock_test.h"

#define MARK "root/fencing-marks/jobs/high-water.json"

/* Deletes every epoch file of lock "jobs" (the mark stays). */
static void delete_lock_files(struct fx *f)
{
	size_t i = 0;

	while (i < f->ms->n) {
		if (strncmp(f->ms->objs[i].key, "root/locks/jobs/", 16) == 0) {
			free(f->ms->objs[i].key);
			free(f->ms->objs[i].body);
			memmove(f->ms->objs + i, f->ms->objs + i + 1,
				(f->ms->n - i - 1) * sizeof(*f->ms->objs));
			f->ms->n--;
		} else {
			i++;
		}
	}
}

/* The epoch the mark object holds; 0 when there is none. */
static uint64_t stored_mark(struct fx *f)
{
	ssize_t at = ms_find(f->ms, MARK);
	char buf[256];
	const char *p;

	if (at < 0)
		return 0;
	assert_true(f->ms->objs[at].len < sizeof(buf));
	memcpy(buf, f->ms->objs[at].body, f->ms->objs[at].len);
	buf[f->ms->objs[at].len] = '\0';
	p = strstr(buf, "\"epoch\":");
	assert_non_null(p);
	return strtoull(p + 8, NULL, 10);
}

static void take_and_release(struct fx *f, struct lock *lk, uint64_t want)
{
	struct lock_grant g;

	assert_int_equal(acq(f, lk, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, want);
	assert_int_equal(stored_mark(f), want);   /* raised with every acquire */
	assert_int_equal(lock_release(lk, &g, f->err, sizeof(f->err)), LOCK_OK);
}

static void test_files_deleted_next_is_above_the_mark(void **state)
{
	struct fx *f = *state;
	struct lock *fresh;
	struct lock_grant g;
	struct lock_info info;

	take_and_release(f, f->a, 1);
	take_and_release(f, f->a, 2);
	take_and_release(f, f->a, 3);
	delete_lock_files(f);
	assert_int_equal(ms_find(f->ms, "root/locks/jobs/lock-0000000003.json"), -1);
	/* a new client (a restarted proxy, a second replica) */
	fresh = fx_open(f, "jobs");
	assert_int_equal(lock_status(fresh, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.epoch, 0);          /* no file ... */
	assert_int_equal(info.state, LOCK_STATE_FREE);
	assert_int_equal(info.mark, 3);           /* ... but epoch 3 was minted */
	assert_int_equal(acq(f, fresh, "after", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 4);
	assert_int_equal(stored_mark(f), 4);
	assert_int_equal(lock_release(fresh, &g, f->err, sizeof(f->err)), LOCK_OK);
	/* the files go again; a client whose cache names epoch 3's file (it
	 * lists after that key) finds it gone, starts over, mints above 4 */
	delete_lock_files(f);
	assert_int_equal(acq(f, f->b, "cached", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 5);
	assert_int_equal(lock_status(f->a, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.epoch, 5);
	assert_int_equal(info.state, LOCK_STATE_HELD);
	lock_close(fresh);
}

static void test_files_and_mark_deleted_a_client_remembers(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	take_and_release(f, f->a, 1);
	take_and_release(f, f->a, 2);
	delete_lock_files(f);
	/* the mark gone too (the only object left): a struct lock that saw
	 * epoch 2 still mints 3 */
	assert_int_equal(f->ms->n, 1);
	assert_int_equal(ms_find(f->ms, MARK), 0);
	free(f->ms->objs[0].key);
	free(f->ms->objs[0].body);
	f->ms->n = 0;
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 3);
	assert_int_equal(stored_mark(f), 3);
}

static void test_mark_never_lowered(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	uint64_t m = 0;

	ms_write(f->ms, MARK, "{\"epoch\":10}", 12);
	assert_int_equal(lock_mark_raise(f->a, 5, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(stored_mark(f), 10);
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 11);
	assert_int_equal(stored_mark(f), 11);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	/* b read the mark at 11; a raises it to 12; b, with its stale ETag,
	 * asked to raise to 11 again: no write at all (it reads again first
	 * only when its write is refused) */
	assert_int_equal(lock_mark_read(f->b, &m, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(m, 11);
	assert_int_equal(lock_mark_raise(f->a, 12, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(lock_mark_raise(f->b, 11, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(stored_mark(f), 12);
	/* b asked for 13 with a stale ETag: 412, read again, then written */
	assert_int_equal(lock_mark_raise(f->b, 13, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(stored_mark(f), 13);
	/* and a, stale now, asked for 12: read again on 412? no: a's cache
	 * says 12 >= 12, nothing sent; the store keeps 13 */
	assert_int_equal(lock_mark_raise(f->a, 12, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(stored_mark(f), 13);
}

static void test_crash_between_file_and_mark(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;
	int i;

	take_and_release(f, f->a, 1);
	/* epoch 2's file is created, then every write of the mark fails (the
	 * process "dies" there): no grant, so nobody holds token 2 */
	ms_fault(f->ms, F_NONE);
	for (i = 0; i < 7; i++)
		ms_fault(f->ms, F_SERVER);
	f->ms->fail_gets = 0;
	assert_int_not_equal(acq(f, f->a, "crashed", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 0);
	assert_int_equal(stored(f, 2).leader_id[0], 'c');   /* the file landed */
	assert_int_equal(stored_mark(f), 1);                 /* the mark did not */
	/* its lease runs out like any other; the next acquire takes 3 and
	 * raises the mark over the file the crash left behind */
	f->ms->nfaults = 0;
	assert_int_equal(acq(f, f->b, "next", 30000, 0, &g, &who), LOCK_HELD);
	assert_int_equal(who.epoch, 2);
	fc_advance(&f->clk, 32000);
	assert_int_equal(acq(f, f->b, "next", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 3);
	assert_int_equal(stored_mark(f), 3);
}

static void test_unreadable_mark_fails_closed(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info info;

	ms_write(f->ms, MARK, "not json", 8);
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_ERR_STORE);
	assert_non_null(strstr(f->err, "high-water.json"));
	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_ERR_STORE);
	ms_write(f->ms, MARK, "{\"epoch\":1.5}", 13);
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_ERR_STORE);
	ms_write(f->ms, MARK, "{\"epoch\":7}", 11);
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 8);
}

static void test_reserved_by_a_proxy_is_done(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	/* through a proxy's S3 API: the epoch file is created, the mark's
	 * write answered 403 EpochMarkReserved (the proxy raises it) */
	ms_fault(f->ms, F_NONE);
	ms_fault(f->ms, F_RESERVED);
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	assert_int_equal(stored_mark(f), 0);
}

static void test_break_mints_above_the_mark(void **state)
{
	struct fx *f = *state;
	uint64_t broken = 0;

	take_and_release(f, f->a, 1);
	take_and_release(f, f->a, 2);
	delete_lock_files(f);
	assert_int_equal(lock_break(f->b, NULL, &broken, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(broken, 3);
	assert_true(stored(f, 3).expired);
	assert_int_equal(stored_mark(f), 3);
}

static void test_key_rule(void **state)
{
	static const struct {
		const char *prefix, *mark;
	} cases[] = {
		{ "locks/jobs/lock-", "fencing-marks/jobs/high-water.json" },
		{ "root/locks/jobs/lock-", "root/fencing-marks/jobs/high-water.json" },
		{ "a/locks/b/locks/c/lock-", "a/locks/b/fencing-marks/c/high-water.json" },
		{ "mylocks/j/lock-", "fencing-marks/mylocks/j/high-water.json" },
		{ "x/y/lease-", "fencing-marks/x/y/lease-high-water.json" },
		{ "locks/", "fencing-marks/high-water.json" },
		{ "locks/j/", "fencing-marks/j/high-water.json" },
		{ "lock-", "fencing-marks/high-water.json" },
	};
	char out[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(lock_mark_key_of(cases[i].prefix, out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].mark);
	}
	assert_int_equal(lock_mark_key_of("locks/jobs/lock-", out, 10), -1);
	assert_int_equal(lock_mark_key_of(NULL, out, sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files_deleted_next_is_above_the_mark, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_files_and_mark_deleted_a_client_remembers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mark_never_lowered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_between_file_and_mark, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_mark_fails_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserved_by_a_proxy_is_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_break_mints_above_the_mark, setup, teardown),
		cmocka_unit_test(test_key_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
