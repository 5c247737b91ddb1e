/* test_lockreg.c — the pure parts of the lock registry (proxy/fence/lockreg.c)
 * and of the multipart table (proxy/fence/multipart.c): bucket-name rules, the
 * default prefix, high-water marks that only go up (also when a load lists
 * fewer files, and counting the epoch mark), released/lapsed
 * knowledge, the bounded entry count, the background refresh's choice
 * (which locks earn a listing ahead of their writes, and what that costs
 * per write at every pace), upload-id parsing and the FIFO bound of the
 * upload table. No I/O: the registry is built without jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence/lockreg.h"
#include "fence/multipart.h"

static struct lockreg *reg_new(size_t max_locks)
{
	struct lockreg_config cfg;
	char err[128];
	struct lockreg *r;

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_locks = max_locks;
	r = lockreg_new(&cfg, err, sizeof(err));
	assert_non_null(r);
	return r;
}

static void test_bucket_names(void **state)
{
	static const char *good[] = { "abc", "my-bucket", "a.b.c", "0bucket9",
		"a23456789012345678901234567890123456789012345678901234567890123" };
	static const char *bad[] = { "ab", "", "Abc", "a_b", "-abc", "abc-", ".abc", "abc.",
		"a..b", "192.168.1.1", "_fence", "a/b",
		"a234567890123456789012345678901234567890123456789012345678901234" };

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(lockreg_bucket_valid(good[i]), 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (lockreg_bucket_valid(bad[i]))
			fail_msg("\"%s\" accepted as a bucket name", bad[i]);
	}
	assert_int_equal(lockreg_bucket_valid(NULL), 0);
}

static void test_default_prefix(void **state)
{
	char buf[64], tiny[8];

	(void)state;
	assert_int_equal(lockreg_default_prefix("invoices", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "locks/invoices/lock-");
	assert_int_equal(lockreg_default_prefix("invoices", tiny, sizeof(tiny)), -1);
}

static void test_high_water_only_rises(void **state)
{
	struct lockreg *r = reg_new(0);
	struct lockreg_entry *e = lockreg_get(r, "demo", "demo", 1, NULL);

	(void)state;
	assert_non_null(e);
	assert_false(e->loaded);
	assert_true(e->high_water == 0);
	assert_string_equal(e->prefix, "locks/demo/lock-");
	assert_int_equal(lockreg_note(e, 5, LOCK_STATE_HELD, 1000, "w1", 30000), 1);
	assert_true(e->high_water == 5);
	assert_string_equal(e->holder, "w1");
	/* an older epoch never lowers C nor overwrites the newer state */
	assert_int_equal(lockreg_note(e, 3, LOCK_STATE_RELEASED, 0, "old", 0), 0);
	assert_true(e->high_water == 5);
	assert_int_equal(e->state, LOCK_STATE_HELD);
	assert_string_equal(e->holder, "w1");
	assert_int_equal(lockreg_raise(e, 4), 0);
	assert_int_equal(lockreg_raise(e, 9), 1);
	assert_true(e->high_water == 9);
	assert_int_equal(lockreg_raise(e, 9), 0);
	lockreg_free(r);
}

/* What a load read: the latest file (epoch, state) and the epoch mark. */
static void load_saw(struct lockreg_entry *e, uint64_t epoch, uint64_t mark,
		     enum lock_state state)
{
	struct lock_info info;

	memset(&info, 0, sizeof(info));
	info.epoch = epoch;
	info.mark = mark;
	info.state = state;
	lockreg_note_info(e, &info);
}

/* A load that lists fewer or older files (deleted out of band) never lowers
 * C, and the epoch mark it read counts in C even with no file at all. */
static void test_load_of_deleted_files(void **state)
{
	struct lockreg *r = reg_new(0);
	struct lockreg_entry *e = lockreg_get(r, "demo", "demo", 1, NULL);

	(void)state;
	assert_non_null(e);
	load_saw(e, 6, 6, LOCK_STATE_RELEASED);
	assert_true(e->high_water == 6);
	load_saw(e, 0, 0, LOCK_STATE_FREE);        /* every file gone, the mark too */
	assert_true(e->high_water == 6);
	load_saw(e, 2, 2, LOCK_STATE_HELD);        /* an older file (a restored backup) */
	assert_true(e->high_water == 6);
	/* no file, the mark says 11 (another replica's epochs, files since
	 * deleted): C is 11, so a token 6..10 is stale */
	load_saw(e, 0, 11, LOCK_STATE_FREE);
	assert_true(e->high_water == 11);
	assert_true(lockreg_high_water(e) == 11);
	lockreg_free(r);
}

static void test_released_and_lapsed(void **state)
{
	struct lockreg *r = reg_new(0);
	struct lockreg_entry *e = lockreg_get(r, "demo", "demo", 1, NULL);

	(void)state;
	lockreg_note(e, 2, LOCK_STATE_HELD, 5000, "w", 1000);
	assert_int_equal(lockreg_epoch_released(e, 2), 0);
	assert_int_equal(lockreg_epoch_lapsed(e, 2, 4999), 0);
	assert_int_equal(lockreg_epoch_lapsed(e, 2, 5000), 1);
	assert_int_equal(lockreg_epoch_lapsed(e, 1, 9999), 0); /* not what state describes */
	lockreg_note(e, 2, LOCK_STATE_RELEASED, 0, "w", 1000);
	assert_int_equal(lockreg_epoch_released(e, 2), 1);
	assert_int_equal(lockreg_epoch_released(e, 3), 0);
	assert_int_equal(lockreg_epoch_released(e, 0), 0);
	lockreg_note(e, 3, LOCK_STATE_LAPSED, 0, "x", 1000);
	assert_int_equal(lockreg_epoch_lapsed(e, 3, 0), 1);
	assert_int_equal(lockreg_epoch_released(e, 2), 1);
	lockreg_free(r);
}

static void test_entries_bounded_and_found(void **state)
{
	struct lockreg *r = reg_new(3);
	const char *why = NULL;
	struct lockreg_entry *a, *b;

	(void)state;
	a = lockreg_get(r, "aaa", "aaa", 1, &why);
	assert_non_null(a);
	assert_ptr_equal(lockreg_get(r, "aaa", "aaa", 0, NULL), a);
	assert_null(lockreg_get(r, "bbb", "bbb", 0, NULL));
	b = lockreg_get(r, "bbb", "bbb", 1, NULL);
	assert_non_null(b);
	assert_non_null(lockreg_get(r, "ccc", "ccc", 1, NULL));
	assert_null(lockreg_get(r, "ddd", "ddd", 1, &why));
	assert_string_equal(why, "full");
	assert_int_equal(lockreg_count(r), 3);
	assert_ptr_equal(lockreg_first(r), a);
	assert_ptr_equal(a->next, b);
	assert_null(lockreg_get(r, "..", "abc", 1, &why));
	assert_string_equal(why, "invalid");
	assert_null(lockreg_get(r, "ok", "Bad_Bucket", 1, &why));
	assert_string_equal(why, "invalid");
	/* no jobs: nothing can be loaded */
	assert_int_equal(lockreg_when_loaded(r, a, NULL, NULL), -1);
	a->loaded = true;
	assert_int_equal(lockreg_when_loaded(r, a, NULL, NULL), 1);
	lockreg_free(r);
}

static void test_refresh_wanted(void **state)
{
	/* refresh 1000 ms, active 2000 ms; times relative to now = 10000 */
	static const struct {
		bool loaded, used;
		int64_t gap, used_ago, refreshed_ago;
		int want;
	} rows[] = {
		{ true, true, 100, 0, 600, 1 },       /* busy, knowledge half old */
		{ true, true, 1000, 1999, 500, 1 },   /* paced at the interval, edges */
		{ true, true, 100, 0, 499, 0 },       /* knowledge still young */
		{ true, true, 1001, 0, 900, 0 },      /* sparse: listed on demand */
		{ true, true, INT64_MAX, 0, 900, 0 }, /* used once */
		{ true, true, 100, 2001, 900, 0 },    /* stopped being used */
		{ false, true, 100, 0, 900, 0 },      /* not loaded: a write loads it */
		{ true, false, 100, 0, 900, 0 },      /* never used (a preload) */
	};
	const int64_t now = 10000;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct lockreg_entry e;

		memset(&e, 0, sizeof(e));
		e.loaded = rows[i].loaded;
		e.used = rows[i].used;
		e.use_gap_ms = rows[i].gap;
		e.last_used_ms = now - rows[i].used_ago;
		e.last_refresh_ms = now - rows[i].refreshed_ago;
		if (lockreg_refresh_wanted(&e, now, 1000, 2000) != rows[i].want)
			fail_msg("row %zu: want %d", i, rows[i].want);
	}
}

/* The registry's schedule played on a clock: a refresh tick every 500 ms
 * (lockreg_new's timer), writes every period_ms, a listing made on demand
 * when a write finds knowledge older than the interval (the freshness
 * rule) and loads taken as instant. Listings per write stay under 3 at
 * every pace, and a lock written at least once per interval never makes a
 * write wait after its first. */
static void test_refresh_cost_per_write(void **state)
{
	static const int64_t periods[] = { 10, 300, 900, 1000, 1100, 2500, 5000, 30000 };

	(void)state;
	for (size_t i = 0; i < sizeof(periods) / sizeof(periods[0]); i++) {
		struct lockreg_entry e;
		int64_t next_write = 0, next_tick = 500, end = 600000;
		long listings = 0, writes = 0, waited = 0;

		memset(&e, 0, sizeof(e));
		e.use_gap_ms = INT64_MAX;
		while (next_write < end) {
			if (next_tick <= next_write) {
				if (lockreg_refresh_wanted(&e, next_tick, 1000, 2000)) {
					listings++;
					e.last_refresh_ms = next_tick;
				}
				next_tick += 500;
				continue;
			}
			lockreg_touch_at(&e, next_write);
			writes++;
			if (!e.loaded || next_write - e.last_refresh_ms > 1000) {
				listings++;
				waited += writes > 1;
				e.loaded = true;
				e.last_refresh_ms = next_write;
			}
			next_write += periods[i];
		}
		if (listings > 3 * writes)
			fail_msg("every %" PRId64 " ms: %ld listings for %ld writes", periods[i],
				 listings, writes);
		if (periods[i] <= 1000 && waited)
			fail_msg("every %" PRId64 " ms: %ld writes waited", periods[i], waited);
		if (periods[i] > 1000 && listings > writes)
			fail_msg("every %" PRId64 " ms: %ld listings for %ld writes (sparse locks "
				 "are listed on demand only)", periods[i], listings, writes);
	}
}

static void test_upload_id_parse(void **state)
{
	static const char ok[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Bucket>b</Bucket><Key>k</Key><UploadId>abc&amp;123</UploadId>"
		"</InitiateMultipartUploadResult>";
	static const char none[] = "<InitiateMultipartUploadResult><Key>k</Key>"
				   "</InitiateMultipartUploadResult>";
	static const char doctype[] = "<!DOCTYPE x [<!ENTITY a \"b\">]>"
				      "<R><UploadId>&a;</UploadId></R>";
	char id[64], tiny[4];

	(void)state;
	assert_int_equal(multipart_parse_upload_id(ok, strlen(ok), id, sizeof(id)), 0);
	assert_string_equal(id, "abc&123");
	assert_int_equal(multipart_parse_upload_id(ok, strlen(ok), tiny, sizeof(tiny)), -1);
	assert_int_equal(multipart_parse_upload_id(none, strlen(none), id, sizeof(id)), -1);
	assert_int_equal(multipart_parse_upload_id(doctype, strlen(doctype), id, sizeof(id)), -1);
	assert_int_equal(multipart_parse_upload_id(ok, 20, id, sizeof(id)), -1); /* truncated */
}

static void test_upload_table(void **state)
{
	struct multipart_table *t = multipart_new(2);
	struct multipart_upload u = { .bucket = "b", .lock = "b", .epoch = 7 }, out;

	(void)state;
	assert_non_null(t);
	assert_int_equal(multipart_put(t, "u1", &u), 0);
	u.epoch = 8;
	assert_int_equal(multipart_put(t, "u2", &u), 0);
	assert_int_equal(multipart_get(t, "u1", &out), 1);
	assert_true(out.epoch == 7);
	u.epoch = 9;
	assert_int_equal(multipart_put(t, "u3", &u), 0); /* forgets u1, the oldest */
	assert_int_equal(multipart_get(t, "u1", &out), 0);
	assert_int_equal(multipart_get(t, "u3", &out), 1);
	assert_true(out.epoch == 9);
	multipart_remove(t, "u2");
	assert_int_equal(multipart_get(t, "u2", NULL), 0);
	assert_int_equal(multipart_count(t), 1);
	multipart_free(t);
}

static void test_query_param(void **state)
{
	char v[32], tiny[3];

	(void)state;
	assert_int_equal(multipart_query_param("uploads", "uploads", v, sizeof(v)), 1);
	assert_string_equal(v, "");
	assert_int_equal(multipart_query_param("partNumber=2&uploadId=a%2Bb", "uploadId", v,
					       sizeof(v)), 1);
	assert_string_equal(v, "a+b");
	assert_int_equal(multipart_query_param("uploadIds=x", "uploadId", v, sizeof(v)), 0);
	assert_int_equal(multipart_query_param(NULL, "uploadId", v, sizeof(v)), 0);
	assert_int_equal(multipart_query_param("uploadId=abcdef", "uploadId", tiny,
					       sizeof(tiny)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_names),
		cmocka_unit_test(test_default_prefix),
		cmocka_unit_test(test_high_water_only_rises),
		cmocka_unit_test(test_load_of_deleted_files),
		cmocka_unit_test(test_released_and_lapsed),
		cmocka_unit_test(test_entries_bounded_and_found),
		cmocka_unit_test(test_refresh_wanted),
		cmocka_unit_test(test_refresh_cost_per_write),
		cmocka_unit_test(test_upload_id_parse),
		cmocka_unit_test(test_upload_table),
		cmocka_unit_test(test_query_param),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
