/* test_objcache.c — the ETag/epoch cache (proxy/fence/objcache.c): hits and
 * misses, updates, invalidation, LRU eviction order, the capacity bound under
 * churn, and keys that must not collide. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence/objcache.h"

static void test_get_put_update(void **state)
{
	struct objcache *c = objcache_new(4, NULL);
	struct objcache_entry e;
	struct objcache_stats st;

	(void)state;
	assert_non_null(c);
	assert_int_equal(objcache_get(c, "b", "k", &e), 0);
	assert_int_equal(objcache_put(c, "b", "k", "\"etag1\"", 7), 0);
	assert_int_equal(objcache_get(c, "b", "k", &e), 1);
	assert_string_equal(e.etag, "\"etag1\"");
	assert_true(e.epoch == 7);
	assert_int_equal(objcache_put(c, "b", "k", "\"etag2\"", 8), 0);
	assert_int_equal(objcache_get(c, "b", "k", &e), 1);
	assert_string_equal(e.etag, "\"etag2\"");
	assert_true(e.epoch == 8);
	assert_int_equal(objcache_get(c, "b", "k", NULL), 1);
	objcache_stats(c, &st);
	assert_int_equal(st.count, 1);
	assert_int_equal(st.hits, 3);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.capacity, 4);
	objcache_free(c);
}

static void test_keys_are_distinct(void **state)
{
	struct objcache *c = objcache_new(16, NULL);
	struct objcache_entry e;

	(void)state;
	assert_int_equal(objcache_put(c, "a", "b/c", "1", 1), 0);
	assert_int_equal(objcache_put(c, "ab", "c", "2", 2), 0);
	assert_int_equal(objcache_put(c, "a", "bc", "3", 3), 0);
	assert_int_equal(objcache_put(c, "a", "", "4", 4), 0);
	assert_int_equal(objcache_get(c, "a", "b/c", &e), 1);
	assert_string_equal(e.etag, "1");
	assert_int_equal(objcache_get(c, "ab", "c", &e), 1);
	assert_string_equal(e.etag, "2");
	assert_int_equal(objcache_get(c, "a", "bc", &e), 1);
	assert_string_equal(e.etag, "3");
	assert_int_equal(objcache_get(c, "a", "", &e), 1);
	assert_string_equal(e.etag, "4");
	assert_int_equal(objcache_get(c, "A", "bc", &e), 0);
	objcache_free(c);
}

static void test_invalidate(void **state)
{
	struct objcache *c = objcache_new(2, NULL);
	struct objcache_stats st;

	(void)state;
	assert_int_equal(objcache_put(c, "b", "x", "e", 1), 0);
	assert_int_equal(objcache_put(c, "b", "y", "e", 1), 0);
	assert_int_equal(objcache_invalidate(c, "b", "x"), 1);
	assert_int_equal(objcache_invalidate(c, "b", "x"), 0);
	assert_int_equal(objcache_get(c, "b", "x", NULL), 0);
	/* The freed slot is reused without evicting y. */
	assert_int_equal(objcache_put(c, "b", "z", "e", 1), 0);
	assert_int_equal(objcache_get(c, "b", "y", NULL), 1);
	objcache_stats(c, &st);
	assert_int_equal(st.count, 2);
	assert_int_equal(st.evictions, 0);
	objcache_free(c);
}

/* Nodes are handed out in order, freed ones first: a cache below its
 * capacity never evicts, whatever was invalidated before. */
static void test_fresh_and_freed_nodes(void **state)
{
	struct objcache *c = objcache_new(4, NULL);
	struct objcache_stats st;

	(void)state;
	assert_int_equal(objcache_put(c, "b", "1", "e", 1), 0);
	assert_int_equal(objcache_put(c, "b", "2", "e", 1), 0);
	assert_int_equal(objcache_invalidate(c, "b", "1"), 1);
	assert_int_equal(objcache_put(c, "b", "3", "e", 1), 0);
	assert_int_equal(objcache_put(c, "b", "4", "e", 1), 0);
	assert_int_equal(objcache_put(c, "b", "5", "e", 1), 0);
	objcache_stats(c, &st);
	assert_int_equal(st.count, 4);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(objcache_put(c, "b", "6", "e", 1), 0);
	assert_int_equal(objcache_get(c, "b", "2", NULL), 0);
	assert_int_equal(objcache_get(c, "b", "5", NULL), 1);
	objcache_stats(c, &st);
	assert_int_equal(st.count, 4);
	assert_int_equal(st.evictions, 1);
	objcache_free(c);
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* An empty cache of a million entries (~180 MiB of nodes) costs no
 * resident memory until entries are cached: an idle proxy stays small. */
static void test_capacity_is_not_resident(void **state)
{
	long before = rss_kb(), after;
	struct objcache *c = objcache_new(1000000, NULL);

	(void)state;
	assert_non_null(c);
	assert_int_equal(objcache_put(c, "b", "k", "e", 1), 0);
	after = rss_kb();
	assert_true(before > 0 && after > 0);
	assert_true(after - before < 16 * 1024);
	objcache_free(c);
}

static void test_lru_eviction(void **state)
{
	struct objcache *c = objcache_new(3, NULL);
	struct objcache_stats st;

	(void)state;
	objcache_put(c, "b", "1", "e1", 1);
	objcache_put(c, "b", "2", "e2", 2);
	objcache_put(c, "b", "3", "e3", 3);
	/* Touch 1: 2 is now least recently used. */
	assert_int_equal(objcache_get(c, "b", "1", NULL), 1);
	assert_int_equal(objcache_put(c, "b", "4", "e4", 4), 0);
	assert_int_equal(objcache_get(c, "b", "2", NULL), 0);
	assert_int_equal(objcache_get(c, "b", "1", NULL), 1);
	assert_int_equal(objcache_get(c, "b", "3", NULL), 1);
	assert_int_equal(objcache_get(c, "b", "4", NULL), 1);
	/* An update counts as use: 1 is oldest now, then refreshed by put. */
	assert_int_equal(objcache_put(c, "b", "1", "e1b", 5), 0);
	assert_int_equal(objcache_put(c, "b", "5", "e5", 5), 0);
	assert_int_equal(objcache_get(c, "b", "3", NULL), 0);
	assert_int_equal(objcache_get(c, "b", "1", NULL), 1);
	objcache_stats(c, &st);
	assert_int_equal(st.count, 3);
	assert_int_equal(st.evictions, 2);
	objcache_free(c);
}

static void test_capacity_bound_under_churn(void **state)
{
	enum { CAP = 1000, N = 20000 };
	struct objcache *c = objcache_new(CAP, (const unsigned char *)"0123456789abcdef");
	struct objcache_entry e;
	struct objcache_stats st;
	char key[32], etag[32];
	int i, present = 0;

	(void)state;
	assert_non_null(c);
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "obj-%d", i);
		snprintf(etag, sizeof(etag), "\"%x\"", i);
		assert_int_equal(objcache_put(c, "bucket", key, etag, (uint64_t)i), 0);
		if (i % 7 == 0) {
			snprintf(key, sizeof(key), "obj-%d", i / 2);
			objcache_invalidate(c, "bucket", key);
		}
		objcache_stats(c, &st);
		assert_true(st.count <= CAP);
	}
	/* The newest CAP-ish keys survive with their values; the old ones do not. */
	for (i = N - CAP; i < N; i++) {
		snprintf(key, sizeof(key), "obj-%d", i);
		if (objcache_get(c, "bucket", key, &e)) {
			present++;
			assert_true(e.epoch == (uint64_t)i);
		}
	}
	assert_true(present > CAP * 9 / 10);
	assert_int_equal(objcache_get(c, "bucket", "obj-0", NULL), 0);
	assert_int_equal(objcache_get(c, "bucket", "obj-5000", NULL), 0);
	objcache_free(c);
}

/* The table grows with the entries: OBJCACHE_FIRST_BUCKETS to start,
 * doubling once the entries outnumber the buckets, never past the power
 * of two at or above the capacity; every entry stays reachable across
 * each growth, with its value and its place in the LRU order. */
static void test_table_grows_with_entries(void **state)
{
	static const struct {
		size_t capacity, entries, buckets; /* after entries puts */
	} rows[] = {
		{ 10, 5, 16 },             /* capacity below the first size: 16 from the start */
		{ 10, 100, 16 },           /* full, churning: stays */
		{ 1000, 0, OBJCACHE_FIRST_BUCKETS },
		{ 1000, 63, OBJCACHE_FIRST_BUCKETS },
		{ 1000, 64, 2 * OBJCACHE_FIRST_BUCKETS },
		{ 1000, 300, 512 },
		{ 1000, 1000, 1024 },
		{ 1000, 5000, 1024 },      /* past the capacity: bounded */
		{ 100000, 256, 512 },      /* the bench's 256 hot keys: 4 KiB of table */
	};

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct objcache *c = objcache_new(rows[r].capacity,
						  (const unsigned char *)"0123456789abcdef");
		struct objcache_stats st;
		struct objcache_entry e;
		char key[32], etag[32];
		size_t i, kept;

		assert_non_null(c);
		for (i = 0; i < rows[r].entries; i++) {
			snprintf(key, sizeof(key), "obj-%zu", i);
			snprintf(etag, sizeof(etag), "\"%zx\"", i);
			assert_int_equal(objcache_put(c, "bucket", key, etag, (uint64_t)i), 0);
		}
		objcache_stats(c, &st);
		print_message("  capacity %zu, %zu puts: %zu entries, %zu buckets\n",
			      rows[r].capacity, rows[r].entries, st.count, st.buckets);
		assert_int_equal(st.buckets, rows[r].buckets);
		kept = rows[r].entries < rows[r].capacity ? rows[r].entries : rows[r].capacity;
		assert_int_equal(st.count, kept);
		/* the newest kept entries, each with its own value */
		for (i = rows[r].entries - kept; i < rows[r].entries; i++) {
			snprintf(key, sizeof(key), "obj-%zu", i);
			assert_int_equal(objcache_get(c, "bucket", key, &e), 1);
			assert_true(e.epoch == (uint64_t)i);
		}
		if (kept && kept == rows[r].capacity && rows[r].entries > kept) {
			/* one more put evicts exactly the least recently used:
			 * the oldest kept key, read first above; the next stays */
			assert_int_equal(objcache_put(c, "bucket", "extra", "\"x\"", 1), 0);
			snprintf(key, sizeof(key), "obj-%zu", rows[r].entries - kept);
			assert_int_equal(objcache_get(c, "bucket", key, NULL), 0);
			snprintf(key, sizeof(key), "obj-%zu", rows[r].entries - kept + 1);
			assert_int_equal(objcache_get(c, "bucket", key, NULL), 1);
		}
		objcache_free(c);
	}
}

static void test_limits(void **state)
{
	struct objcache *c = objcache_new(2, NULL);
	char long_key[OBJCACHE_KEY_MAX + 8];
	char long_etag[OBJCACHE_ETAG_MAX + 1];

	(void)state;
	assert_null(objcache_new(0, NULL));
	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	assert_int_equal(objcache_put(c, "b", long_key, "e", 1), -1);
	assert_int_equal(objcache_get(c, "b", long_key, NULL), 0);
	/* Longest key that fits: bucket "b" + "/" + key. */
	long_key[OBJCACHE_KEY_MAX - 2] = '\0';
	assert_int_equal(objcache_put(c, "b", long_key, "e", 1), 0);
	assert_int_equal(objcache_get(c, "b", long_key, NULL), 1);
	/* An ETag that does not fit drops the stale entry rather than keep it. */
	memset(long_etag, 'e', sizeof(long_etag) - 1);
	long_etag[sizeof(long_etag) - 1] = '\0';
	assert_int_equal(objcache_put(c, "b", long_key, long_etag, 2), -1);
	assert_int_equal(objcache_get(c, "b", long_key, NULL), 0);
	long_etag[OBJCACHE_ETAG_MAX - 1] = '\0';
	assert_int_equal(objcache_put(c, "b", "k", long_etag, 2), 0);
	objcache_free(c);
	objcache_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_put_update),
		cmocka_unit_test(test_keys_are_distinct),
		cmocka_unit_test(test_invalidate),
		cmocka_unit_test(test_fresh_and_freed_nodes),
		cmocka_unit_test(test_capacity_is_not_resident),
		cmocka_unit_test(test_lru_eviction),
		cmocka_unit_test(test_capacity_bound_under_churn),
		cmocka_unit_test(test_table_grows_with_entries),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
