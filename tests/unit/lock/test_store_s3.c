/* test_store_s3.c — the S3 store backend, in two groups.
 *
 * "scripted": always runs. A tiny HTTP server thread on 127.0.0.1
 * (store_s3_test.h) answers each request from a script (as S3 documents it,
 * including the 409s and 5xx that moto never sends) and records what
 * arrived, so retries and the never-retry rule for conditional writes are
 * checked exactly. Time is a fake clock. Status mapping, caps, signing
 * inputs and query strings are in test_store_s3_requests.c.
 *
 * "moto": runs only when FENCE_TEST_S3_ENDPOINT and FENCE_TEST_S3_BUCKET
 * are set (the integration harness sets them), against a real moto_server;
 * otherwise it says it skipped. */
#include "store_s3_test.h"

static void test_get_retries_5xx_then_ok(void **state)
{
	static const struct canned script[] = {
		{ .status = 503, .body = SLOWDOWN },
		{ .status = 200, .body = "hello",
		  .headers = "ETag: \"5d41402abc4b2a76b9719d911017c592\"\r\n"
			     "Last-Modified: Tue, 20 Aug 2024 10:11:12 GMT\r\n"
			     "Date: Tue, 20 Aug 2024 10:11:15 GMT\r\n"
			     "Content-Type: application/json; charset=utf-8\r\n"
			     "x-amz-meta-Fencing-Epoch: 7\r\n"
			     "X-Amz-Meta-Holder: w1\r\n" },
	};
	struct script_server *sv = server_start(script, 2);
	struct store *st = open_at(sv->port, "127.0.0.1", -1, 3, 2000);
	struct store_result res = STORE_RESULT_INIT;
	char v[512];

	(void)state;
	assert_int_equal(store_get(st, "dir/a b+c.json", &res), STORE_OK);
	assert_int_equal(server_stop(sv), 2);
	assert_int_equal(res.attempts, 2);
	assert_int_equal(st->requests, 2);
	assert_int_equal(clock_state.sleeps, 1);
	assert_true(clock_state.slept[0] >= 0 && clock_state.slept[0] <= 100);
	assert_int_equal(res.http_status, 200);
	assert_int_equal(res.body_len, 5);
	assert_string_equal(res.body, "hello");
	assert_int_equal(res.content_length, 5);
	assert_string_equal(res.etag, "\"5d41402abc4b2a76b9719d911017c592\"");
	assert_int_equal(res.last_modified, 1724148672);
	assert_int_equal(res.server_date, 1724148675);
	assert_string_equal(res.content_type, "application/json; charset=utf-8");
	assert_int_equal(res.nmeta, 2);
	assert_string_equal(store_result_meta(&res, "fencing-epoch"), "7");
	assert_string_equal(store_result_meta(&res, "holder"), "w1");
	assert_string_equal(res.err_code, "");

	/* what went on the wire: path-style, key encoded, signed with the token */
	assert_true(strncmp(sv->seen[1].head, "GET /bkt/dir/a%20b%2Bc.json HTTP/1.1\r\n", 38) == 0);
	seen_header(&sv->seen[1], "Host", v, sizeof(v));
	assert_true(strncmp(v, "127.0.0.1:", 10) == 0);
	assert_string_equal(seen_header(&sv->seen[1], "x-amz-security-token", v, sizeof(v)), "scripted-token");
	assert_string_equal(seen_header(&sv->seen[1], "x-amz-content-sha256", v, sizeof(v)), SIGV4_EMPTY_SHA256);
	seen_header(&sv->seen[1], "Authorization", v, sizeof(v));
	assert_non_null(strstr(v, "AWS4-HMAC-SHA256 Credential=AKIDSCRIPTED/"));
	assert_non_null(strstr(v, "/eu-west-1/s3/aws4_request"));
	assert_non_null(strstr(v, "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"));
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

/* A create (If-None-Match: *) with an unknown outcome is handed back at
 * once: never a second request, never a back-off. */
static void test_create_never_retried(void **state)
{
	static const struct canned outcomes[] = {
		{ .status = 500, .body = "<Error><Code>InternalError</Code></Error>" },
		{ .status = 503, .body = SLOWDOWN },
		{ .status = 409, .body = CRC_BODY },
		{ .hang = 1 },
	};
	static const enum store_code want[] = {
		STORE_ERR_SERVER, STORE_ERR_SERVER, STORE_CONFLICT, STORE_ERR_IO,
	};
	static const char payload[] = "{\"leaderId\":\"w1\",\"nonce\":\"abc\"}";
	struct store_meta meta[] = { { "Fencing-Epoch", "3" } };
	struct store_put_opts create = { .cond = STORE_COND_IF_NONE_MATCH_ANY, .meta = meta, .nmeta = 1 };
	size_t i;

	(void)state;
	for (i = 0; i < 4; i++) {
		struct script_server *sv = server_start(&outcomes[i], 1);
		struct store *st = open_at(sv->port, "127.0.0.1", -1, 4, 300);
		struct store_result res = STORE_RESULT_INIT;
		char v[512], hash[65];
		struct timespec t0, t1;
		long elapsed_ms;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(store_put(st, "locks/a/lock-0000000003.json", payload,
					   strlen(payload), &create, &res), want[i]);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		elapsed_ms = (t1.tv_sec - t0.tv_sec) * 1000L + (t1.tv_nsec - t0.tv_nsec) / 1000000L;
		/* the hang ends by our 300 ms timeout, not the server's 3 s */
		assert_true(elapsed_ms < 1500);
		assert_int_equal(server_stop(sv), 1);
		assert_int_equal(res.attempts, 1);
		assert_int_equal(st->requests, 1);
		assert_int_equal(clock_state.sleeps, 0);
		if (i == 2)
			assert_string_equal(res.err_code, "ConditionalRequestConflict");
		if (i == 3)
			assert_true(res.err_message[0] != '\0');

		assert_true(strncmp(sv->seen[0].head, "PUT /bkt/locks/a/lock-0000000003.json HTTP/1.1\r\n", 48) == 0);
		assert_string_equal(seen_header(&sv->seen[0], "If-None-Match", v, sizeof(v)), "*");
		assert_string_equal(seen_header(&sv->seen[0], "Content-Type", v, sizeof(v)),
				    "application/octet-stream");
		assert_string_equal(seen_header(&sv->seen[0], "x-amz-meta-fencing-epoch", v, sizeof(v)), "3");
		assert_false(has_header(&sv->seen[0], "Expect"));
		sigv4_sha256_hex(payload, strlen(payload), hash);
		assert_string_equal(seen_header(&sv->seen[0], "x-amz-content-sha256", v, sizeof(v)), hash);
		seen_header(&sv->seen[0], "Authorization", v, sizeof(v));
		assert_non_null(strstr(v, "SignedHeaders=content-type;host;if-none-match;x-amz-content-sha256;"
					  "x-amz-date;x-amz-meta-fencing-epoch;x-amz-security-token,"));
		assert_int_equal(sv->seen[0].body_len, strlen(payload));
		assert_memory_equal(sv->seen[0].body, payload, strlen(payload));
		store_close(st);
		free(sv);
	}
}

/* If-Match writes and deletes: a resend after a success would 412, so an
 * unknown outcome is returned as it is. */
static void test_if_match_never_retried(void **state)
{
	static const struct canned script[] = {
		{ .status = 503, .body = SLOWDOWN },
		{ .status = 500 },
		{ .status = 409, .body = CRC_BODY },
	};
	struct script_server *sv = server_start(script, 3);
	struct store *st = open_at(sv->port, "127.0.0.1", -1, 4, 2000);
	struct store_result res = STORE_RESULT_INIT;
	struct store_put_opts renew = { .cond = STORE_COND_IF_MATCH, .etag = "\"e1\"",
					.content_type = "application/json" };
	char v[256];

	(void)state;
	assert_int_equal(store_put(st, "k", "x", 1, &renew, &res), STORE_ERR_SERVER);
	assert_int_equal(res.attempts, 1);
	assert_int_equal(store_delete(st, "k", "\"e1\"", &res), STORE_ERR_SERVER);
	assert_int_equal(res.attempts, 1);
	assert_int_equal(store_put(st, "k", "x", 1, &renew, &res), STORE_CONFLICT);
	assert_int_equal(res.attempts, 1);
	assert_int_equal(server_stop(sv), 3);
	assert_int_equal(st->requests, 3);
	assert_int_equal(clock_state.sleeps, 0);
	assert_string_equal(seen_header(&sv->seen[0], "If-Match", v, sizeof(v)), "\"e1\"");
	assert_string_equal(seen_header(&sv->seen[0], "Content-Type", v, sizeof(v)), "application/json");
	assert_true(strncmp(sv->seen[1].head, "DELETE /bkt/k HTTP/1.1\r\n", 24) == 0);
	assert_string_equal(seen_header(&sv->seen[1], "If-Match", v, sizeof(v)), "\"e1\"");
	seen_header(&sv->seen[1], "Authorization", v, sizeof(v));
	assert_non_null(strstr(v, "SignedHeaders=host;if-match;x-amz-content-sha256;"));
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

/* Unconditional writes are safe to resend: 409 ConditionalRequestConflict
 * and 5xx are retried with growing, jittered back-off. */
static void test_unconditional_retried(void **state)
{
	static const struct canned script[] = {
		{ .status = 409, .body = CRC_BODY },
		{ .status = 500 },
		{ .status = 200, .headers = "ETag: \"e2\"\r\n" },
		{ .status = 503, .body = SLOWDOWN },
		{ .status = 204 },
	};
	struct script_server *sv = server_start(script, 5);
	struct store *st = open_at(sv->port, "127.0.0.1", -1, 4, 2000);
	struct store_result res = STORE_RESULT_INIT;

	(void)state;
	assert_int_equal(store_put(st, "k", "body", 4, NULL, &res), STORE_OK);
	assert_int_equal(res.attempts, 3);
	assert_string_equal(res.etag, "\"e2\"");
	assert_int_equal(clock_state.sleeps, 2);
	assert_true(clock_state.slept[0] <= 100);
	assert_true(clock_state.slept[1] <= 200);
	assert_int_equal(store_delete(st, "k", NULL, &res), STORE_OK);
	assert_int_equal(res.attempts, 2);
	assert_int_equal(res.http_status, 204);
	assert_int_equal(server_stop(sv), 5);
	assert_int_equal(st->requests, 5);
	/* the body is sent again, whole, on every attempt */
	assert_int_equal(sv->seen[2].body_len, 4);
	assert_memory_equal(sv->seen[2].body, "body", 4);
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

static void test_retries_spent(void **state)
{
	static const struct canned script[] = {
		{ .status = 500 }, { .status = 500 }, { .status = 500 }, { .status = 500 },
		{ .status = 502 },
	};
	struct script_server *sv = server_start(script, 5);
	struct store *st = open_at(sv->port, "127.0.0.1", -1, 3, 2000);
	struct store *none = open_at(sv->port, "127.0.0.1", -1, -1, 2000);
	struct store_result res = STORE_RESULT_INIT;
	int i;

	(void)state;
	assert_int_equal(store_head(st, "k", &res), STORE_ERR_SERVER);
	assert_int_equal(res.attempts, 4);
	assert_int_equal(res.http_status, 500);
	assert_int_equal(clock_state.sleeps, 3);
	for (i = 0; i < 3; i++)
		assert_true(clock_state.slept[i] >= 0 && clock_state.slept[i] <= (100 << i));
	assert_int_equal(store_get(none, "k", &res), STORE_ERR_SERVER);
	assert_int_equal(res.attempts, 1);
	assert_int_equal(server_stop(sv), 5);
	assert_int_equal(st->requests, 4);
	assert_int_equal(none->requests, 1);
	store_result_clear(&res);
	store_close(st);
	store_close(none);
	free(sv);
}

/* --- against moto ------------------------------------------------------- */

static const char *moto_endpoint, *moto_bucket;

static int moto_setup(void **state)
{
	(void)state;
	moto_endpoint = getenv("FENCE_TEST_S3_ENDPOINT");
	moto_bucket = getenv("FENCE_TEST_S3_BUCKET");
	if (!moto_endpoint || !*moto_endpoint || !moto_bucket || !*moto_bucket) {
		printf("test_store_s3: moto tests skipped (FENCE_TEST_S3_ENDPOINT and "
		       "FENCE_TEST_S3_BUCKET are not set)\n");
		moto_endpoint = NULL;
		return 0;
	}
	if (!getenv("AWS_ACCESS_KEY_ID"))
		setenv("AWS_ACCESS_KEY_ID", "test", 1);
	if (!getenv("AWS_SECRET_ACCESS_KEY"))
		setenv("AWS_SECRET_ACCESS_KEY", "test", 1);
	unsetenv("AWS_SESSION_TOKEN");
	return 0;
}

static struct store *moto_open(void)
{
	char url[256], err[256] = "";
	struct store_config cfg = {
		.url = url, .endpoint = moto_endpoint, .region = "us-east-1",
		.path_style = -1, .timeout_ms = 5000, .max_retries = 2,
	};
	struct store *st;

	snprintf(url, sizeof(url), "s3://%s", moto_bucket);
	st = store_open(&cfg, err, sizeof(err));
	if (!st)
		fail_msg("store_open(%s at %s): %s", url, moto_endpoint, err);
	return st;
}

/* A prefix no other run uses. */
static void run_prefix(char *out, size_t len, const char *what)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(out, len, "test-store-s3/%ld-%ld-%ld/%s/", (long)getpid(), (long)ts.tv_sec,
		 ts.tv_nsec, what);
}

static void test_moto_conditional_writes(void **state)
{
	struct store *st;
	struct store_result res = STORE_RESULT_INIT;
	struct store_meta meta[] = { { "fencing-epoch", "1" }, { "Holder", "w7" } };
	struct store_put_opts create = { .cond = STORE_COND_IF_NONE_MATCH_ANY, .meta = meta, .nmeta = 2 };
	struct store_put_opts renew = { .cond = STORE_COND_IF_MATCH };
	char prefix[160], key[256], etag1[STORE_ETAG_MAX], etag2[STORE_ETAG_MAX];
	static const char v1[] = "{\"leaderId\":\"w7\",\"validityMs\":30000,\"expired\":false}";
	static const char v2[] = "{\"leaderId\":\"w7\",\"validityMs\":30000,\"expired\":true}";
	unsigned long before;

	(void)state;
	if (!moto_endpoint)
		skip();
	st = moto_open();
	run_prefix(prefix, sizeof(prefix), "cond");
	snprintf(key, sizeof(key), "%slock-0000000001 & co.json", prefix);

	/* create, then create again: the second must lose */
	before = st->requests;
	assert_int_equal(store_put(st, key, v1, strlen(v1), &create, &res), STORE_OK);
	assert_int_equal(res.http_status, 200);
	assert_int_equal(res.attempts, 1);
	assert_int_equal(st->requests, before + 1);
	assert_true(res.etag[0] == '"');
	snprintf(etag1, sizeof(etag1), "%s", res.etag);
	assert_int_equal(store_put(st, key, v1, strlen(v1), &create, &res), STORE_PRECONDITION_FAILED);
	assert_int_equal(res.http_status, 412);
	assert_string_equal(res.err_code, "PreconditionFailed");
	assert_int_equal(res.attempts, 1);

	/* read back: body, metadata, times */
	assert_int_equal(store_get(st, key, &res), STORE_OK);
	assert_int_equal(res.body_len, strlen(v1));
	assert_string_equal(res.body, v1);
	assert_string_equal(res.etag, etag1);
	assert_string_equal(store_result_meta(&res, "fencing-epoch"), "1");
	assert_string_equal(store_result_meta(&res, "holder"), "w7");
	assert_true(res.last_modified > 1700000000);
	assert_true(res.server_date >= res.last_modified);
	assert_int_equal(res.content_length, (int64_t)strlen(v1));

	/* If-Match: the right etag replaces, a stale one fails */
	renew.etag = etag1;
	assert_int_equal(store_put(st, key, v2, strlen(v2), &renew, &res), STORE_OK);
	snprintf(etag2, sizeof(etag2), "%s", res.etag);
	assert_string_not_equal(etag1, etag2);
	assert_int_equal(store_put(st, key, v2, strlen(v2), &renew, &res), STORE_PRECONDITION_FAILED);
	assert_int_equal(res.http_status, 412);

	/* HEAD sees the new version, without a body */
	assert_int_equal(store_head(st, key, &res), STORE_OK);
	assert_string_equal(res.etag, etag2);
	assert_int_equal(res.content_length, (int64_t)strlen(v2));
	assert_null(res.body);
	assert_string_equal(res.content_type, "application/octet-stream"); /* the default sent */
	assert_null(store_result_meta(&res, "fencing-epoch")); /* the rewrite set none */

	/* an unconditional overwrite */
	assert_int_equal(store_put(st, key, v1, strlen(v1), NULL, &res), STORE_OK);
	snprintf(etag2, sizeof(etag2), "%s", res.etag);

	/* DELETE: a stale If-Match fails, the current one deletes */
	assert_int_equal(store_delete(st, key, "\"00000000000000000000000000000000\"", &res),
			 STORE_PRECONDITION_FAILED);
	assert_int_equal(store_delete(st, key, etag2, &res), STORE_OK);
	assert_int_equal(store_get(st, key, &res), STORE_NOT_FOUND);
	assert_int_equal(res.http_status, 404);
	assert_string_equal(res.err_code, "NoSuchKey");
	assert_int_equal(store_head(st, key, &res), STORE_NOT_FOUND);
	/* If-Match on a missing key: moto answers 404 */
	renew.etag = etag2;
	assert_int_equal(store_put(st, key, v1, strlen(v1), &renew, &res), STORE_NOT_FOUND);
	assert_int_equal(st->requests, before + 12);
	store_result_clear(&res);
	store_close(st);
}

static void test_moto_list_pages(void **state)
{
	struct store *st;
	struct store_result res = STORE_RESULT_INIT;
	struct store_list_page page;
	char prefix[160], key[256], *token = NULL;
	char *seen[16];
	size_t nseen = 0, i;
	int pages = 0;
	unsigned long before;

	(void)state;
	if (!moto_endpoint)
		skip();
	st = moto_open();
	run_prefix(prefix, sizeof(prefix), "list");
	for (i = 7; i >= 1; i--) { /* written out of order on purpose */
		snprintf(key, sizeof(key), "%slock-%010zu.json", prefix, i);
		assert_int_equal(store_put(st, key, "{}", 2, NULL, &res), STORE_OK);
	}
	/* a neighbour that must not show up */
	snprintf(key, sizeof(key), "%.*sother", (int)strlen(prefix) - 1, prefix);
	assert_int_equal(store_put(st, key, "{}", 2, NULL, &res), STORE_OK);

	before = st->requests;
	do {
		assert_true(pages < 10);
		assert_int_equal(store_list(st, prefix, NULL, token, 3, &page, &res), STORE_OK);
		free(token);
		token = page.next_token ? strdup(page.next_token) : NULL;
		assert_true(page.n <= 3);
		assert_int_equal(page.truncated, token != NULL);
		for (i = 0; i < page.n; i++) {
			assert_true(nseen < 16);
			seen[nseen++] = strdup(page.entries[i].key);
			assert_int_equal(page.entries[i].size, 2);
			assert_true(page.entries[i].etag[0] == '"');
			assert_true(page.entries[i].last_modified > 1700000000);
		}
		store_list_page_free(&page);
		pages++;
	} while (token);
	assert_int_equal(pages, 3);
	assert_int_equal(st->requests, before + 3);
	assert_int_equal(nseen, 7);
	for (i = 0; i < nseen; i++) {
		snprintf(key, sizeof(key), "%slock-%010zu.json", prefix, i + 1);
		assert_string_equal(seen[i], key);
		free(seen[i]);
	}

	/* StartAfter: only what follows */
	snprintf(key, sizeof(key), "%slock-%010d.json", prefix, 5);
	assert_int_equal(store_list(st, prefix, key, NULL, 1000, &page, &res), STORE_OK);
	assert_int_equal(page.n, 2);
	assert_false(page.truncated);
	snprintf(key, sizeof(key), "%slock-%010d.json", prefix, 6);
	assert_string_equal(page.entries[0].key, key);
	store_list_page_free(&page);

	/* an empty prefix lists nothing */
	snprintf(key, sizeof(key), "%snothing-here/", prefix);
	assert_int_equal(store_list(st, key, NULL, NULL, 10, &page, &res), STORE_OK);
	assert_int_equal(page.n, 0);
	assert_false(page.truncated);
	store_list_page_free(&page);
	store_result_clear(&res);
	store_close(st);
}

int main(void)
{
	const struct CMUnitTest scripted[] = {
		cmocka_unit_test(test_get_retries_5xx_then_ok),
		cmocka_unit_test(test_create_never_retried),
		cmocka_unit_test(test_if_match_never_retried),
		cmocka_unit_test(test_unconditional_retried),
		cmocka_unit_test(test_retries_spent),
	};
	const struct CMUnitTest moto[] = {
		cmocka_unit_test(test_moto_conditional_writes),
		cmocka_unit_test(test_moto_list_pages),
	};
	int failed;

	failed = cmocka_run_group_tests_name("store_s3 scripted", scripted, scripted_setup, NULL);
	failed += cmocka_run_group_tests_name("store_s3 moto", moto, moto_setup, NULL);
	return failed ? 1 : 0;
}
