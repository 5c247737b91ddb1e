/* test_store_s3_requests.c — the S3 store backend against the scripted server
 * of store_s3_test.h: how statuses map to store codes, the body cap, list
 * queries and pages, virtual-hosted addressing, what is refused before
 * anything is sent, and store_open errors. (Retries and the moto group are
 * in test_store_s3.c.) A version's delete is DELETE ?versionId=. */
#include "store_s3_test.h"

static void test_status_mapping(void **state)
{
	static const struct canned script[] = {
		{ .status = 404, .body = "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>" },
		{ .status = 412, .body = PF_BODY },
		{ .status = 403, .body = "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>" },
		{ .status = 401 },
		{ .status = 400, .body = "<Error><Code>InvalidArgument</Code></Error>" },
		{ .status = 301, .body = "<Error><Code>PermanentRedirect</Code></Error>" },
		{ .status = 409, .body = "<Error><Code>OperationAborted</Code></Error>" },
		{ .status = 404, .body = "<html>not xml</html>" },
	};
	static const struct {
		enum store_code code;
		const char *err_code;
	} want[] = {
		{ STORE_NOT_FOUND, "NoSuchKey" },
		{ STORE_PRECONDITION_FAILED, "PreconditionFailed" },
		{ STORE_ERR_DENIED, "AccessDenied" },
		{ STORE_ERR_DENIED, "" },
		{ STORE_ERR_PROTOCOL, "InvalidArgument" },
		{ STORE_ERR_PROTOCOL, "PermanentRedirect" },
		{ STORE_CONFLICT, "OperationAborted" },
		{ STORE_NOT_FOUND, "" },
	};
	struct script_server *sv = server_start(script, 8);
	/* retries allowed: none of these answers may be retried */
	struct store *st = open_at(sv->port, "127.0.0.1", -1, 4, 2000);
	struct store_result res = STORE_RESULT_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < 8; i++) {
		assert_int_equal(store_get(st, "k", &res), want[i].code);
		assert_int_equal(res.code, want[i].code);
		assert_int_equal(res.http_status, script[i].status);
		assert_int_equal(res.attempts, 1);
		assert_string_equal(res.err_code, want[i].err_code);
		assert_true(res.err_message[0] != '\0');
		assert_null(res.body);
	}
	assert_int_equal(server_stop(sv), 8);
	assert_int_equal(clock_state.sleeps, 0);
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

/* A body beyond the GET cap is refused, not buffered, and not retried. */
static void test_body_cap(void **state)
{
	static const struct canned script[] = { { .status = 200, .big_body = (17u << 20) } };
	struct script_server *sv = server_start(script, 1);
	struct store *st = open_at(sv->port, "127.0.0.1", -1, 4, 10000);
	struct store_result res = STORE_RESULT_INIT;

	(void)state;
	assert_int_equal(store_get(st, "big", &res), STORE_ERR_PROTOCOL);
	assert_int_equal(res.attempts, 1);
	assert_null(res.body);
	assert_non_null(strstr(res.err_message, "larger than"));
	server_stop(sv);
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

static void test_list_query_and_pages(void **state)
{
	static const struct canned script[] = {
		{ .status = 200, .body =
		  "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		  "<KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>"
		  "<Contents><Key>locks/a/lock-0000000002.json</Key><ETag>&quot;e2&quot;</ETag><Size>9</Size>"
		  "<LastModified>2024-08-20T10:11:12.000Z</LastModified></Contents>"
		  "<Contents><Key>locks/a/lock-0000000003.json</Key><Size>9</Size></Contents>"
		  "<NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>" },
		{ .status = 200, .body =
		  "<ListBucketResult><IsTruncated>true</IsTruncated>"
		  "<Contents><Key>x</Key></Contents></ListBucketResult>" },
		{ .status = 200, .body = "<ListBucketResult><Contents><Key>x</Key>" },
		{ .status = 404, .body = "<Error><Code>NoSuchBucket</Code></Error>" },
	};
	struct script_server *sv = server_start(script, 4);
	struct store *st = open_at(sv->port, "127.0.0.1", -1, 4, 2000);
	struct store_result res = STORE_RESULT_INIT;
	struct store_list_page page;

	(void)state;
	assert_int_equal(store_list(st, "locks/a/lock-", "locks/a/lock-0000000001.json", NULL, 2,
				    &page, &res), STORE_OK);
	assert_int_equal(page.n, 2);
	assert_true(page.truncated);
	assert_string_equal(page.next_token, "tok/+=");
	assert_string_equal(page.entries[0].key, "locks/a/lock-0000000002.json");
	assert_string_equal(page.entries[0].etag, "\"e2\"");
	assert_int_equal(page.entries[0].size, 9);
	assert_int_equal(page.entries[0].last_modified, 1724148672);

	/* the next page, from the token (page is overwritten, so free first) */
	{
		char *token = strdup(page.next_token);

		store_list_page_free(&page);
		assert_int_equal(store_list(st, "locks/a/lock-", NULL, token, 1000, &page, &res),
				 STORE_ERR_PROTOCOL); /* truncated without a token */
		free(token);
	}
	assert_int_equal(page.n, 0);
	assert_int_equal(store_list(st, NULL, NULL, NULL, 5, &page, &res), STORE_ERR_PROTOCOL);
	assert_non_null(strstr(res.err_message, "listing"));
	assert_int_equal(store_list(st, NULL, NULL, NULL, 5, &page, &res), STORE_NOT_FOUND);
	assert_string_equal(res.err_code, "NoSuchBucket");
	assert_int_equal(server_stop(sv), 4);

	assert_string_equal(strtok(sv->seen[0].head, "\r"),
			    "GET /bkt?list-type=2&max-keys=2&prefix=locks%2Fa%2Flock-"
			    "&start-after=locks%2Fa%2Flock-0000000001.json HTTP/1.1");
	assert_string_equal(strtok(sv->seen[1].head, "\r"),
			    "GET /bkt?continuation-token=tok%2F%2B%3D&list-type=2&max-keys=1000"
			    "&prefix=locks%2Fa%2Flock- HTTP/1.1");
	assert_string_equal(strtok(sv->seen[2].head, "\r"), "GET /bkt?list-type=2&max-keys=5 HTTP/1.1");
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

/* store_delete_ex with a version id: DELETE /bkt/key?versionId=ENCODED,
 * unconditional unless If-Match is given; an upstream refusal is the
 * answer (no retry of a 400). */
static void test_delete_version(void **state)
{
	static const struct canned script[] = {
		{ .status = 204 },
		{ .status = 400, .body = "<Error><Code>InvalidArgument</Code>"
		  "<Message>Invalid version id specified</Message></Error>" },
	};
	struct script_server *sv = server_start(script, 2);
	struct store *st = open_at(sv->port, "127.0.0.1", -1, 4, 2000);
	struct store_result res = STORE_RESULT_INIT;
	struct store_delete_opts del = { .version_id = "3/L4kqtJl+cr=" };

	(void)state;
	assert_int_equal(store_delete_ex(st, "dir/k", &del, &res), STORE_OK);
	del.version_id = "bad";
	assert_int_equal(store_delete_ex(st, "dir/k", &del, &res), STORE_ERR_PROTOCOL);
	assert_string_equal(res.err_code, "InvalidArgument");
	assert_int_equal(res.attempts, 1);
	del.version_id = "";
	assert_int_equal(store_delete_ex(st, "dir/k", &del, &res), STORE_ERR_INVALID);
	assert_int_equal(res.attempts, 0);
	assert_int_equal(server_stop(sv), 2);
	assert_false(has_header(&sv->seen[0], "If-Match"));
	assert_string_equal(strtok(sv->seen[0].head, "\r"),
			    "DELETE /bkt/dir/k?versionId=3%2FL4kqtJl%2Bcr%3D HTTP/1.1");
	store_result_clear(&res);
	store_close(st);
	free(sv);
}

/* Virtual-hosted addressing puts the bucket in Host; *.localhost resolves
 * to loopback without DNS. */
static void test_virtual_hosted(void **state)
{
	static const struct canned script[] = { { .status = 200, .headers = "ETag: \"v\"\r\n" } };
	struct script_server *sv = server_start(script, 1);
	struct store *st = open_at(sv->port, "localhost", 0, -1, 2000);
	struct store_result res = STORE_RESULT_INIT;
	char v[256], want[64];

	(void)state;
	assert_int_equal(store_head(st, "a/b", &res), STORE_OK);
	assert_int_equal(server_stop(sv), 1);
	assert_true(strncmp(sv->seen[0].head, "HEAD /a/b HTTP/1.1\r\n", 20) == 0);
	snprintf(want, sizeof(want), "bkt.localhost:%d", sv->port);
	assert_string_equal(seen_header(&sv->seen[0], "Host", v, sizeof(v)), want);
	store_close(st);
	free(sv);
}

/* Bad arguments are refused before anything is sent. */
static void test_refused_before_sending(void **state)
{
	struct store *st = open_at(9, "127.0.0.1", -1, 4, 2000); /* nothing listens */
	struct store_result res = STORE_RESULT_INIT;
	struct store_list_page page;
	struct store_meta crlf[] = { { "holder", "w1\r\nX-Evil: 1" } };
	struct store_meta badname[] = { { "hol der", "w1" } };
	struct store_put_opts o1 = { .meta = crlf, .nmeta = 1 };
	struct store_put_opts o2 = { .meta = badname, .nmeta = 1 };
	struct store_put_opts o3 = { .cond = STORE_COND_IF_MATCH, .etag = NULL };
	char longkey[1100];

	(void)state;
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	assert_int_equal(store_get(st, "", &res), STORE_ERR_INVALID);
	assert_int_equal(store_head(st, longkey, &res), STORE_ERR_INVALID);
	assert_int_equal(store_put(st, "k", "x", 1, &o1, &res), STORE_ERR_INVALID);
	assert_int_equal(store_put(st, "k", "x", 1, &o2, &res), STORE_ERR_INVALID);
	assert_int_equal(store_put(st, "k", "x", 1, &o3, &res), STORE_ERR_INVALID);
	assert_int_equal(store_put(st, "k", NULL, 3, NULL, &res), STORE_ERR_INVALID);
	assert_int_equal(store_delete(st, "k", "\"e\"\n", &res), STORE_ERR_INVALID);
	assert_int_equal(store_list(st, "p", NULL, NULL, 0, &page, &res), STORE_ERR_INVALID);
	assert_int_equal(store_list(st, "p", NULL, NULL, 1001, &page, &res), STORE_ERR_INVALID);
	assert_int_equal(res.attempts, 0);
	assert_int_equal(st->requests, 0);
	assert_true(res.err_message[0] != '\0');

	/* connection refused: an I/O failure, retried, then reported */
	assert_int_equal(store_get(st, "k", &res), STORE_ERR_IO);
	assert_int_equal(res.attempts, 5);
	assert_int_equal(res.http_status, 0);
	assert_int_equal(clock_state.sleeps, 4);
	store_result_clear(&res);
	store_close(st);
}

static void test_open_errors(void **state)
{
	struct store_config cfg = { .url = "s3://bkt", .endpoint = "ftp://127.0.0.1:1", .path_style = -1 };
	char err[256] = "";

	(void)state;
	assert_null(store_open(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "http"));
	cfg.endpoint = "not a url at all";
	err[0] = '\0';
	assert_null(store_open(&cfg, err, sizeof(err)));
	assert_true(err[0] != '\0');
}
int main(void)
{
	const struct CMUnitTest scripted[] = {
		cmocka_unit_test(test_status_mapping),
		cmocka_unit_test(test_body_cap),
		cmocka_unit_test(test_list_query_and_pages),
		cmocka_unit_test(test_delete_version),
		cmocka_unit_test(test_virtual_hosted),
		cmocka_unit_test(test_refused_before_sending),
		cmocka_unit_test(test_open_errors),
	};

	return cmocka_run_group_tests_name("store_s3 requests", scripted, scripted_setup, NULL);
}
