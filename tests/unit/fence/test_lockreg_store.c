/* test_lockreg_store.c — where the lock registry places locks that do not
 * live in "their" bucket (proxy/fence/lockreg.c): the HTTP-mode lock store
 * (s3://BUCKET/ROOT, file:///DIR), configured locks with their own store
 * and prefix, the prefix rule fencectl shares, and the barrier each entry
 * starts with. No I/O: the registry is built without jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence/lockreg.h"

static void test_store_prefix(void **state)
{
	char out[LOCKREG_PREFIX_MAX];

	(void)state;
	assert_int_equal(lockreg_store_prefix("s3://b", "n", out, sizeof(out)), 0);
	assert_string_equal(out, "locks/n/lock-");
	assert_int_equal(lockreg_store_prefix("s3://b/root", "n", out, sizeof(out)), 0);
	assert_string_equal(out, "root/locks/n/lock-");
	assert_int_equal(lockreg_store_prefix("s3://b/a/b//", "n", out, sizeof(out)), 0);
	assert_string_equal(out, "a/b/locks/n/lock-");
	assert_int_equal(lockreg_store_prefix("file:///var/lib/x", "Orders_1", out, sizeof(out)),
			 0);
	assert_string_equal(out, "locks/Orders_1/lock-");
	/* no bucket, unknown scheme, too small */
	assert_int_equal(lockreg_store_prefix("s3:///root", "n", out, sizeof(out)), -1);
	assert_int_equal(lockreg_store_prefix("http://x", "n", out, sizeof(out)), -1);
	assert_int_equal(lockreg_store_prefix("s3://b", "n", out, 8), -1);
}

static void test_lock_store_entries(void **state)
{
	struct lockreg_config cfg;
	struct lockreg *r;
	struct lockreg_entry *e, *again;
	const char *why = NULL;
	char err[128];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.lock_store = "s3://locks-bucket/fg";
	r = lockreg_new(&cfg, err, sizeof(err));
	assert_non_null(r);
	/* any valid lock name, even one that is no bucket name; bucket ignored */
	e = lockreg_get(r, "Orders_1", NULL, 1, &why);
	assert_non_null(e);
	assert_string_equal(e->store_url, "s3://locks-bucket/fg");
	assert_string_equal(e->prefix, "fg/locks/Orders_1/lock-");
	assert_true(barrier_idle(&e->barrier));
	assert_int_equal(e->barrier.accepted, 0);
	again = lockreg_get(r, "Orders_1", "whatever", 0, &why);
	assert_ptr_equal(again, e);
	assert_null(lockreg_get(r, "bad/name", NULL, 1, &why));
	assert_string_equal(why, "invalid");
	/* a configured lock keeps its own placement; the name is the key */
	e = lockreg_get_at(r, "ledger", "file:///srv/locks", "shared/lock-", 1, &why);
	assert_non_null(e);
	assert_string_equal(e->store_url, "file:///srv/locks");
	assert_string_equal(e->prefix, "shared/lock-");
	again = lockreg_get_at(r, "ledger", "s3://other", NULL, 1, &why);
	assert_ptr_equal(again, e);
	assert_string_equal(again->store_url, "file:///srv/locks");
	assert_null(lockreg_get_at(r, "x1", "ftp://nope", NULL, 1, &why));
	assert_null(lockreg_get_at(r, "x2", "s3://b", "", 1, &why));
	assert_int_equal(lockreg_count(r), 2);
	lockreg_free(r);
}

static void test_bad_lock_store(void **state)
{
	struct lockreg_config cfg;
	char err[256];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.lock_store = "/just/a/path";
	assert_null(lockreg_new(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "neither"));
}

static void test_bucket_mode_unchanged(void **state)
{
	struct lockreg_config cfg;
	struct lockreg *r;
	struct lockreg_entry *e;
	const char *why = NULL;
	char err[128];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	r = lockreg_new(&cfg, err, sizeof(err));
	assert_non_null(r);
	assert_null(lockreg_get(r, "Orders_1", "Orders_1", 1, &why)); /* not a bucket */
	e = lockreg_get(r, "data", "data", 1, &why);
	assert_non_null(e);
	assert_string_equal(e->store_url, "");
	assert_string_equal(e->prefix, "locks/data/lock-");
	/* without jobs a strict (fresh) wait cannot be served */
	assert_int_equal(lockreg_when_current(r, e, true, NULL, NULL), -1);
	lockreg_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_prefix),
		cmocka_unit_test(test_lock_store_entries),
		cmocka_unit_test(test_bad_lock_store),
		cmocka_unit_test(test_bucket_mode_unchanged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
