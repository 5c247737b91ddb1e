/* test_dialect.c — the backend dialect table (names, facts that must hold
 * together), which capability each operation needs, ETag spelling, and the
 * S3 store speaking a dialect against the scripted server of
 * store_s3_test.h: If-Match sent bare where the dialect says so, learned
 * from a false 412 (radosgw 16) with one HEAD, and a genuine 412 left as
 * it is. */
#include "store_s3_test.h"

#include "lock/store/dialect.h"

static void test_table(void **state)
{
	const struct dialect *d, *e;
	size_t i, j;

	(void)state;
	for (i = 0; (d = dialect_at(i)); i++) {
		assert_non_null(d->title);
		assert_non_null(d->note);
		assert_true(d->missing_if_match == 404 || d->missing_if_match == 412);
		/* nothing both known to hold and known missing */
		assert_int_equal(d->known & d->lacks, 0);
		assert_true(dialect_find(d->name) == d);
		for (j = i + 1; (e = dialect_at(j)); j++)
			assert_string_not_equal(d->name, e->name);
	}
	assert_true(i >= 12);
	assert_true(dialect_find("CEPH-RGW") == dialect_find("ceph-rgw"));
	assert_null(dialect_find("auto"));
	assert_null(dialect_find(NULL));
	d = dialect_find("ceph-rgw");
	assert_int_equal(d->etag, DIALECT_ETAG_BARE);
	assert_true(d->lacks & CAP_DELETE_IF_MATCH);
	assert_int_equal(dialect_trusted_caps(d, CAP_ALL) & CAP_DELETE_IF_MATCH, 0);
	assert_int_equal(dialect_trusted_caps(NULL, CAP_ALL), CAP_ALL);
	assert_int_equal(dialect_find("seaweedfs")->lacks & CAP_RACE, CAP_RACE);
	assert_int_equal(dialect_find("embedded")->known, CAP_ALL);
}

static void test_caps_per_operation(void **state)
{
	unsigned rgw = CAP_PUT_IF_NONE_MATCH | CAP_PUT_IF_MATCH_BARE | CAP_DATE | CAP_RACE;

	(void)state;
	assert_null(backend_caps_refusal(CAP_ALL, BACKEND_OP_DELETE));
	assert_null(backend_caps_refusal(rgw, BACKEND_OP_LOCK));
	assert_null(backend_caps_refusal(rgw, BACKEND_OP_PUT));
	assert_string_equal(backend_caps_refusal(rgw, BACKEND_OP_DELETE),
			    "backend ignores If-Match on DELETE");
	assert_int_equal(backend_caps_missing(rgw, BACKEND_OP_COPY), CAP_COPY_IF_NONE_MATCH);
	assert_int_equal(backend_caps_missing(rgw, BACKEND_OP_MPU_COMPLETE),
			 CAP_MPU_IF_NONE_MATCH);
	/* every operation needs the PUT conditions; the lock needs Date and the race */
	for (int op = 0; op < BACKEND_OP_COUNT; op++) {
		assert_int_equal(backend_caps_missing(CAP_ALL & ~CAP_PUT_IF_NONE_MATCH,
						      (enum backend_op)op), CAP_PUT_IF_NONE_MATCH);
		assert_int_equal(backend_caps_missing(CAP_ALL & ~CAP_PUT_IF_MATCH,
						      (enum backend_op)op), CAP_PUT_IF_MATCH_QUOTED);
	}
	assert_int_equal(backend_caps_missing(CAP_ALL & ~CAP_RACE, BACKEND_OP_LOCK), CAP_RACE);
	assert_int_equal(backend_caps_missing(CAP_ALL & ~CAP_RACE, BACKEND_OP_PUT), 0);
	assert_int_equal(backend_caps_missing(CAP_ALL & ~CAP_DATE, BACKEND_OP_LOCK), CAP_DATE);
	for (unsigned cap = 1; cap & CAP_ALL; cap <<= 1) {
		assert_non_null(backend_cap_name(cap));
		assert_non_null(backend_cap_lacking(cap));
	}
	assert_null(backend_cap_name(CAP_PUT_IF_MATCH));
	assert_null(backend_cap_lacking(0));
	/* nothing published: everything allowed (the self-test gate holds writes) */
	assert_null(backend_refuses(BACKEND_OP_DELETE));
	backend_caps_publish(rgw);
	assert_string_equal(backend_refuses(BACKEND_OP_DELETE), "backend ignores If-Match on DELETE");
	assert_null(backend_refuses(BACKEND_OP_PUT));
	assert_non_null(backend_refuses(BACKEND_OP_MPU_COMPLETE));
	/* copies are measured but not enforced yet (dialect.h BACKEND_ENFORCED) */
	assert_null(backend_refuses(BACKEND_OP_COPY));
	assert_null(backend_refuses(BACKEND_OP_COUNT));
	backend_caps_publish(CAP_ALL);
}

static void test_spelling(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(dialect_spell_etag(DIALECT_ETAG_BARE, "\"abc\"", buf, sizeof(buf)), "abc");
	assert_string_equal(dialect_spell_etag(DIALECT_ETAG_BARE, "W/\"abc\"", buf, sizeof(buf)), "abc");
	assert_string_equal(dialect_spell_etag(DIALECT_ETAG_QUOTED, "abc", buf, sizeof(buf)), "\"abc\"");
	assert_string_equal(dialect_spell_etag(DIALECT_ETAG_QUOTED, "\"abc\"", buf, sizeof(buf)),
			    "\"abc\"");
	assert_string_equal(dialect_spell_etag(DIALECT_ETAG_BARE, "*", buf, sizeof(buf)), "*");
	/* too long for buf: unchanged */
	assert_string_equal(dialect_spell_etag(DIALECT_ETAG_QUOTED, "abcdef", buf, 4), "abcdef");
}

static struct store *open_dialect(int port, const char *dialect)
{
	char endpoint[64], err[256] = "";
	struct store_config cfg = {
		.url = "s3://bkt", .endpoint = endpoint, .region = "eu-west-1", .path_style = -1,
		.timeout_ms = 2000, .max_retries = -1, .time = &fake_time, .dialect = dialect,
	};
	struct store *st;

	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", port);
	st = store_open(&cfg, err, sizeof(err));
	if (!st)
		fail_msg("store_open: %s", err);
	return st;
}

/* radosgw 16: a quoted If-Match that matches answers 412. The store HEADs,
 * sees the object at that ETag, sends the write again bare, and keeps
 * sending bare from then on. */
static void test_learns_bare(void **state)
{
	static const struct canned script[] = {
		{ .status = 412, .body = PF_BODY },
		{ .status = 200, .headers = "ETag: \"e1\"\r\n" },
		{ .status = 200, .headers = "ETag: \"e2\"\r\n" },
		{ .status = 200, .headers = "ETag: \"e3\"\r\n" },
	};
	struct script_server *sv = server_start(script, 4);
	struct store *st = open_dialect(sv->port, NULL);
	struct store_result res = STORE_RESULT_INIT;
	struct store_put_opts po = { .cond = STORE_COND_IF_MATCH, .etag = "\"e1\"" };
	char v[256];

	(void)state;
	assert_int_equal(st->etag_form, DIALECT_ETAG_AUTO);
	assert_int_equal(store_put(st, "k", "x", 1, &po, &res), STORE_OK);
	assert_string_equal(res.etag, "\"e2\"");
	assert_int_equal(st->etag_form, DIALECT_ETAG_BARE);
	po.etag = "\"e2\"";
	assert_int_equal(store_put(st, "k", "y", 1, &po, &res), STORE_OK);
	assert_int_equal(server_stop(sv), 4);
	assert_string_equal(seen_header(&sv->seen[0], "If-Match", v, sizeof(v)), "\"e1\"");
	assert_true(strncmp(sv->seen[1].head, "HEAD /bkt/k ", 12) == 0);
	assert_string_equal(seen_header(&sv->seen[2], "If-Match", v, sizeof(v)), "e1");
	assert_string_equal(seen_header(&sv->seen[3], "If-Match", v, sizeof(v)), "e2");
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

/* A genuine 412 (the object is at another ETag) stays a 412, and nothing is
 * learned; with a dialect that says quoted, no HEAD is spent at all. */
static void test_genuine_412(void **state)
{
	static const struct canned script[] = {
		{ .status = 412, .body = PF_BODY },
		{ .status = 200, .headers = "ETag: \"other\"\r\n" },
		{ .status = 412, .body = PF_BODY },
		{ .status = 200, .headers = "ETag: \"e9\"\r\n" },
	};
	struct script_server *sv = server_start(script, 4);
	struct store *st = open_dialect(sv->port, NULL);
	struct store *aws = open_dialect(sv->port, "aws");
	struct store_result res = STORE_RESULT_INIT;
	struct store_put_opts po = { .cond = STORE_COND_IF_MATCH, .etag = "\"e1\"" };
	char v[256];

	(void)state;
	assert_int_equal(store_put(st, "k", "x", 1, &po, &res), STORE_PRECONDITION_FAILED);
	assert_int_equal(st->etag_form, DIALECT_ETAG_AUTO);
	assert_int_equal(aws->etag_form, DIALECT_ETAG_QUOTED);
	assert_int_equal(store_put(aws, "k", "x", 1, &po, &res), STORE_PRECONDITION_FAILED);
	assert_int_equal(store_put(aws, "k", "x", 1, &po, &res), STORE_OK);
	assert_int_equal(server_stop(sv), 4);
	assert_true(strncmp(sv->seen[1].head, "HEAD /bkt/k ", 12) == 0);
	assert_string_equal(seen_header(&sv->seen[2], "If-Match", v, sizeof(v)), "\"e1\"");
	assert_string_equal(seen_header(&sv->seen[3], "If-Match", v, sizeof(v)), "\"e1\"");
	store_result_clear(&res);
	store_close(st);
	store_close(aws);
	free(sv);
}

/* A dialect that says bare sends bare from the first write; an unknown
 * dialect name fails store_open. */
static void test_configured(void **state)
{
	static const struct canned script[] = { { .status = 204 } };
	struct script_server *sv = server_start(script, 1);
	struct store *st = open_dialect(sv->port, "ceph-rgw");
	struct store_result res = STORE_RESULT_INIT;
	struct store_config cfg = { .url = "s3://bkt", .endpoint = "http://127.0.0.1:9",
				    .dialect = "no-such-backend" };
	char v[256], err[256] = "";

	(void)state;
	assert_int_equal(store_delete(st, "k", "\"e1\"", &res), STORE_OK);
	assert_int_equal(server_stop(sv), 1);
	assert_string_equal(seen_header(&sv->seen[0], "If-Match", v, sizeof(v)), "e1");
	assert_null(store_open(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "unknown S3 dialect"));
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_caps_per_operation),
		cmocka_unit_test(test_spelling),
		cmocka_unit_test(test_learns_bare),
		cmocka_unit_test(test_genuine_412),
		cmocka_unit_test(test_configured),
	};

	return cmocka_run_group_tests_name("dialect", tests, scripted_setup, NULL);
}
