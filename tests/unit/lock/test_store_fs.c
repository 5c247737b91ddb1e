/* test_store_fs.c — the local-directory object store: conditional writes,
 * metadata, ETags, the injected clock, listing order and paging, and every
 * S3 key round-tripping. Crashes, races and symlinks are in
 * test_store_fs_robust.c. Each test gets a fresh mkdtemp directory under
 * /tmp, removed afterwards. */
#include "store_fs_test.h"

static void test_create_twice(void **state)
{
	struct fixture *f = *state;
	char first[STORE_ETAG_MAX];

	assert_int_equal(put_str(f, "locks/a/lock-0000000001.json", "one",
				 STORE_COND_IF_NONE_MATCH_ANY, NULL), STORE_OK);
	assert_int_equal(f->res.http_status, 200);
	strcpy(first, f->res.etag);
	assert_int_equal(put_str(f, "locks/a/lock-0000000001.json", "two",
				 STORE_COND_IF_NONE_MATCH_ANY, NULL), STORE_PRECONDITION_FAILED);
	assert_int_equal(f->res.http_status, 412);
	assert_string_equal(f->res.err_code, "PreconditionFailed");
	assert_false(store_failed(f->res.code));
	assert_int_equal(store_get(f->st, "locks/a/lock-0000000001.json", &f->res), STORE_OK);
	assert_string_equal(f->res.body, "one");
	assert_string_equal(f->res.etag, first);
}

static void test_etag_is_md5(void **state)
{
	struct fixture *f = *state;
	char want[STORE_ETAG_MAX];

	assert_int_equal(put_str(f, "hello.txt", "hello", STORE_COND_NONE, NULL), STORE_OK);
	assert_string_equal(f->res.etag, "\"5d41402abc4b2a76b9719d911017c592\"");
	assert_int_equal(put_str(f, "empty", "", STORE_COND_NONE, NULL), STORE_OK);
	assert_string_equal(f->res.etag, "\"d41d8cd98f00b204e9800998ecf8427e\"");
	md5_etag("hello", want);
	assert_int_equal(store_head(f->st, "hello.txt", &f->res), STORE_OK);
	assert_string_equal(f->res.etag, want);
	assert_int_equal(f->res.content_length, 5);
	assert_null(f->res.body);
	assert_int_equal(store_get(f->st, "empty", &f->res), STORE_OK);
	assert_int_equal(f->res.body_len, 0);
	assert_non_null(f->res.body);
	assert_string_equal(f->res.body, "");
}

static void test_if_match(void **state)
{
	struct fixture *f = *state;
	char v1[STORE_ETAG_MAX], v2[STORE_ETAG_MAX], bare[STORE_ETAG_MAX];

	assert_int_equal(put_str(f, "k", "v1", STORE_COND_IF_NONE_MATCH_ANY, NULL), STORE_OK);
	strcpy(v1, f->res.etag);
	/* right etag */
	assert_int_equal(put_str(f, "k", "v2", STORE_COND_IF_MATCH, v1), STORE_OK);
	strcpy(v2, f->res.etag);
	assert_string_not_equal(v1, v2);
	/* the old etag is now wrong */
	assert_int_equal(put_str(f, "k", "v3", STORE_COND_IF_MATCH, v1), STORE_PRECONDITION_FAILED);
	assert_int_equal(f->res.http_status, 412);
	assert_int_equal(store_get(f->st, "k", &f->res), STORE_OK);
	assert_string_equal(f->res.body, "v2");
	/* quotes are optional */
	snprintf(bare, sizeof(bare), "%.*s", (int)strlen(v2) - 2, v2 + 1);
	assert_int_equal(put_str(f, "k", "v3", STORE_COND_IF_MATCH, bare), STORE_OK);
	/* missing key: 404 like S3, and nothing is created */
	assert_int_equal(put_str(f, "nope", "x", STORE_COND_IF_MATCH, v1), STORE_NOT_FOUND);
	assert_int_equal(f->res.http_status, 404);
	assert_int_equal(store_head(f->st, "nope", &f->res), STORE_NOT_FOUND);
	/* If-Match without an etag is refused */
	assert_int_equal(put_str(f, "k", "v4", STORE_COND_IF_MATCH, NULL), STORE_ERR_INVALID);
}

static void test_replace_unconditional(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(put_str(f, "r", "first", STORE_COND_NONE, NULL), STORE_OK);
	assert_int_equal(put_str(f, "r", "second, longer", STORE_COND_NONE, NULL), STORE_OK);
	assert_int_equal(store_get(f->st, "r", &f->res), STORE_OK);
	assert_string_equal(f->res.body, "second, longer");
	assert_int_equal(f->res.body_len, strlen("second, longer"));
	assert_int_equal(f->res.content_length, (int64_t)strlen("second, longer"));
}

static void test_delete(void **state)
{
	struct fixture *f = *state;
	char v1[STORE_ETAG_MAX];

	assert_int_equal(put_str(f, "d/x", "body", STORE_COND_NONE, NULL), STORE_OK);
	strcpy(v1, f->res.etag);
	assert_int_equal(store_delete(f->st, "d/x", "\"00000000000000000000000000000000\"", &f->res),
			 STORE_PRECONDITION_FAILED);
	assert_int_equal(f->res.http_status, 412);
	assert_int_equal(store_head(f->st, "d/x", &f->res), STORE_OK);
	assert_int_equal(store_delete(f->st, "d/x", v1, &f->res), STORE_OK);
	assert_int_equal(f->res.http_status, 204);
	assert_int_equal(store_get(f->st, "d/x", &f->res), STORE_NOT_FOUND);
	assert_int_equal(f->res.http_status, 404);
	assert_string_equal(f->res.err_code, "NoSuchKey");
	/* missing: conditional 404, unconditional 204 as S3 */
	assert_int_equal(store_delete(f->st, "d/x", v1, &f->res), STORE_NOT_FOUND);
	assert_int_equal(store_delete(f->st, "d/x", NULL, &f->res), STORE_OK);
	assert_int_equal(f->res.http_status, 204);
	assert_int_equal(store_delete(f->st, "never/was/here", NULL, &f->res), STORE_OK);
	/* unconditional delete of an existing key */
	assert_int_equal(put_str(f, "d/y", "body", STORE_COND_NONE, NULL), STORE_OK);
	assert_int_equal(store_delete(f->st, "d/y", NULL, &f->res), STORE_OK);
	assert_int_equal(store_head(f->st, "d/y", &f->res), STORE_NOT_FOUND);
	/* the ETag may come from the very result the call fills */
	assert_int_equal(put_str(f, "d/z", "body", STORE_COND_NONE, NULL), STORE_OK);
	assert_int_equal(put_str(f, "d/z", "next", STORE_COND_IF_MATCH, f->res.etag), STORE_OK);
	assert_int_equal(store_delete(f->st, "d/z", f->res.etag, &f->res), STORE_OK);
	assert_int_equal(store_head(f->st, "d/z", &f->res), STORE_NOT_FOUND);
	/* the sidecar went with it: a fresh create has no stale metadata */
	assert_int_equal(put_str(f, "d/y", "again", STORE_COND_IF_NONE_MATCH_ANY, NULL), STORE_OK);
	assert_int_equal(store_head(f->st, "d/y", &f->res), STORE_OK);
	assert_int_equal(f->res.nmeta, 0);
}

/* The ABA a fenced writer must not fall for: epoch 2 rewrites the same
 * bytes (same ETag) between an epoch-1 writer's read and its write. The
 * ETag condition alone still holds; the epoch condition does not. Rows:
 * the condition presented after the rewrite, and what the store answers. */
static void test_meta_condition_aba(void **state)
{
	static const struct {
		const char *name;
		int with_etag;          /* If-Match the ETag seen before the rewrite */
		const char *if_epoch;   /* NULL: no metadata condition */
		enum store_code want;
	} rows[] = {
		{ "etag alone passes (the ABA)", 1, NULL, STORE_OK },
		{ "etag and the old epoch fail", 1, "1", STORE_PRECONDITION_FAILED },
		{ "the old epoch alone fails", 0, "1", STORE_PRECONDITION_FAILED },
		{ "etag and the current epoch pass", 1, "2", STORE_OK },
		{ "absent counts as empty: fails", 1, "", STORE_PRECONDITION_FAILED },
	};
	struct fixture *f = *state;
	char seen[STORE_ETAG_MAX];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct store_put_opts opts = { .cond = rows[i].with_etag ? STORE_COND_IF_MATCH
									  : STORE_COND_NONE };
		struct store_delete_opts dopts = { 0 };

		put_epoch(f, "aba", "same bytes", "1");     /* the zombie reads (seen, 1) */
		snprintf(seen, sizeof(seen), "%s", f->res.etag);
		put_epoch(f, "aba", "same bytes", "2");     /* epoch 2 rewrites them */
		assert_string_equal(f->res.etag, seen);
		opts.etag = seen;
		opts.if_meta.name = rows[i].if_epoch ? "fencing-epoch" : NULL;
		opts.if_meta.value = rows[i].if_epoch;
		if (store_put(f->st, "aba", "zombie", 6, &opts, &f->res) != rows[i].want)
			fail_msg("put row \"%s\": %s", rows[i].name, f->res.err_message);
		/* the delete takes the same condition */
		put_epoch(f, "aba", "same bytes", "2");
		dopts.if_match = rows[i].with_etag ? seen : NULL;
		dopts.if_meta = opts.if_meta;
		if (store_delete_ex(f->st, "aba", &dopts, &f->res) != rows[i].want)
			fail_msg("delete row \"%s\": %s", rows[i].name, f->res.err_message);
	}
	/* absent metadata matches ""; a missing key is 404 with a condition */
	put_epoch(f, "plain", "x", NULL);
	{
		struct store_put_opts opts = { .if_meta = { "fencing-epoch", "" } };
		struct store_delete_opts dopts = { .if_meta = { "fencing-epoch", NULL } };

		assert_int_equal(store_put(f->st, "plain", "y", 1, &opts, &f->res), STORE_OK);
		assert_int_equal(store_put(f->st, "nope", "y", 1, &opts, &f->res), STORE_NOT_FOUND);
		opts.cond = STORE_COND_IF_NONE_MATCH_ANY;
		assert_int_equal(store_put(f->st, "new", "y", 1, &opts, &f->res), STORE_ERR_INVALID);
		assert_int_equal(store_delete_ex(f->st, "nope", &dopts, &f->res), STORE_NOT_FOUND);
		assert_int_equal(store_delete_ex(f->st, "plain", &dopts, &f->res), STORE_OK);
		assert_int_equal(store_head(f->st, "plain", &f->res), STORE_NOT_FOUND);
	}
	/* one version is kept, "null": the object itself; another is refused */
	put_epoch(f, "versioned", "v", NULL);
	{
		struct store_delete_opts dopts = { .version_id = "3HL4" };

		assert_int_equal(store_delete_ex(f->st, "versioned", &dopts, &f->res),
				 STORE_ERR_INVALID);
		assert_int_equal(store_head(f->st, "versioned", &f->res), STORE_OK);
		dopts.version_id = "null";
		assert_int_equal(store_delete_ex(f->st, "versioned", &dopts, &f->res), STORE_OK);
		assert_int_equal(store_head(f->st, "versioned", &f->res), STORE_NOT_FOUND);
	}
}

/* store_s3 cannot check a metadata condition: it refuses before sending
 * rather than write unconditionally. */
static void test_s3_refuses_meta_condition(void **state)
{
	struct store_config cfg = { .url = "s3://some-bucket", .endpoint = "http://127.0.0.1:9",
				    .max_retries = -1, .timeout_ms = 500 };
	struct store_put_opts opts = { .if_meta = { "fencing-epoch", "1" } };
	struct store_delete_opts dopts = { .if_match = "\"x\"", .if_meta = { "fencing-epoch", "1" } };
	struct store_result res = STORE_RESULT_INIT;
	char err[256] = "";
	struct store *st;

	(void)state;
	setenv("AWS_ACCESS_KEY_ID", "test", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "test", 1);
	st = store_open(&cfg, err, sizeof(err));
	if (!st)
		fail_msg("store_open: %s", err);
	assert_int_equal(store_put(st, "k", "x", 1, &opts, &res), STORE_ERR_INVALID);
	assert_int_equal(res.attempts, 0);
	assert_int_equal(store_delete_ex(st, "k", &dopts, &res), STORE_ERR_INVALID);
	assert_int_equal(res.attempts, 0);
	store_result_clear(&res);
	store_close(st);
}

/* A body from file ranges (a multipart completion) with its own ETag. */
static void test_put_from_files(void **state)
{
	struct fixture *f = *state;
	char path[256];
	FILE *fp;
	int fd;

	snprintf(path, sizeof(path), "%s.parts", f->dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("0123456789", fp);
	fclose(fp);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	{
		struct store_file_range r[] = { { fd, 0, 3 }, { fd, 7, 3 } };
		struct store_put_opts opts = { .files = r, .nfiles = 2, .object_etag = "\"abc-2\"" };
		struct store_put_opts bad = { .files = r, .nfiles = 2 };
		struct store_file_range past[] = { { fd, 8, 5 } };
		struct store_put_opts short_opts = { .files = past, .nfiles = 1 };

		assert_int_equal(store_put(f->st, "mpu", NULL, 0, &opts, &f->res), STORE_OK);
		assert_string_equal(f->res.etag, "\"abc-2\"");
		assert_int_equal(store_get(f->st, "mpu", &f->res), STORE_OK);
		assert_string_equal(f->res.body, "012789");
		assert_string_equal(f->res.etag, "\"abc-2\"");
		assert_int_equal(store_put(f->st, "mpu", "x", 1, &bad, &f->res), STORE_ERR_INVALID);
		assert_int_equal(store_put(f->st, "mpu", NULL, 0, &short_opts, &f->res), STORE_ERR_IO);
		assert_int_equal(store_get(f->st, "mpu", &f->res), STORE_OK);
		assert_string_equal(f->res.body, "012789");
	}
	{
		/* adopt: the caller's whole file becomes the object, no copy */
		struct store_file_range whole = { fd, 0, 10 };
		struct store_put_opts opts = { .files = &whole, .nfiles = 1, .adopt = 1,
					       .object_etag = "\"given\"" };
		struct stat a, b;
		char obj[300];

		assert_int_equal(store_put(f->st, "adopted", NULL, 0, &opts, &f->res), STORE_OK);
		path_in(f, "adopted", obj, sizeof(obj));
		assert_int_equal(stat(obj, &a), 0);
		assert_int_equal(fstat(fd, &b), 0);
		assert_true(a.st_ino == b.st_ino);
		assert_int_equal(store_get(f->st, "adopted", &f->res), STORE_OK);
		assert_string_equal(f->res.body, "0123456789");
		assert_string_equal(f->res.etag, "\"given\"");
	}
	close(fd);
	unlink(path);
}

static void test_metadata_round_trip(void **state)
{
	struct fixture *f = *state;
	struct store_meta meta[] = {
		{ "Fencing-Epoch", "7" },
		{ "fencing-lock", "invoices" },
		{ "note", "ünïcode \"quoted\" \\ value" },
	};
	struct store_put_opts opts = { .cond = STORE_COND_IF_NONE_MATCH_ANY,
				       .content_type = "application/json",
				       .meta = meta, .nmeta = 3 };
	struct store_meta bad[] = { { "ok", "line\r\nbreak" } };
	struct store_put_opts bad_opts = { .meta = bad, .nmeta = 1 };
	char path[256], sidecar[4096] = "";
	FILE *fp;
	size_t n;

	assert_int_equal(store_put(f->st, "bucket/obj.json", "{}", 2, &opts, &f->res), STORE_OK);
	assert_int_equal(store_get(f->st, "bucket/obj.json", &f->res), STORE_OK);
	assert_int_equal(f->res.nmeta, 3);
	assert_string_equal(store_result_meta(&f->res, "fencing-epoch"), "7");
	assert_string_equal(store_result_meta(&f->res, "fencing-lock"), "invoices");
	assert_string_equal(store_result_meta(&f->res, "note"), "ünïcode \"quoted\" \\ value");
	assert_null(store_result_meta(&f->res, "Fencing-Epoch"));
	assert_string_equal(f->res.content_type, "application/json");
	assert_int_equal(store_head(f->st, "bucket/obj.json", &f->res), STORE_OK);
	assert_string_equal(store_result_meta(&f->res, "fencing-epoch"), "7");
	assert_string_equal(f->res.content_type, "application/json");
	/* content type is kept in the sidecar, named by the key's SHA-256 */
	sidecar_path(f, "bucket/obj.json", path, sizeof(path));
	fp = fopen(path, "r");
	assert_non_null(fp);
	n = fread(sidecar, 1, sizeof(sidecar) - 1, fp);
	fclose(fp);
	sidecar[n] = '\0';
	assert_non_null(strstr(sidecar, "\"contentType\":\"application/json\""));
	/* a replace without metadata drops it, as S3 does */
	assert_int_equal(put_str(f, "bucket/obj.json", "[]", STORE_COND_NONE, NULL), STORE_OK);
	assert_int_equal(store_get(f->st, "bucket/obj.json", &f->res), STORE_OK);
	assert_int_equal(f->res.nmeta, 0);
	assert_string_equal(f->res.content_type, "application/octet-stream"); /* the default */
	/* header-breaking values are refused */
	assert_int_equal(store_put(f->st, "bucket/bad", "x", 1, &bad_opts, &f->res), STORE_ERR_INVALID);
	assert_int_equal(store_head(f->st, "bucket/bad", &f->res), STORE_NOT_FOUND);
}

static void test_checksum_round_trip(void **state)
{
	static const struct { const char *name, *value; int ok; } cases[] = {
		{ "x-amz-checksum-crc32", "BNyAcg==", 1 },
		{ "x-amz-checksum-sha256", "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=", 1 },
		{ "x-amz-checksum-CRC32", "BNyAcg==", 0 },    /* the name is lowercase */
		{ "content-md5", "BNyAcg==", 0 },              /* not a checksum header */
		{ "x-amz-checksum-crc32", "", 0 },
		{ "x-amz-checksum-crc32", "BNy\r\ncg==", 0 }, /* a header break */
		{ "x-amz-checksum-crc32", NULL, 0 },           /* a name without a value */
	};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct store_put_opts o = { .checksum_name = cases[i].name,
					    .checksum_value = cases[i].value };

		assert_int_equal(store_put(f->st, "bucket/sum", "abc", 3, &o, &f->res),
				 cases[i].ok ? STORE_OK : STORE_ERR_INVALID);
		if (!cases[i].ok)
			continue;
		assert_int_equal(store_head(f->st, "bucket/sum", &f->res), STORE_OK);
		assert_string_equal(f->res.checksum_name, cases[i].name);
		assert_string_equal(f->res.checksum_value, cases[i].value);
	}
	/* a replace without one drops it */
	assert_int_equal(put_str(f, "bucket/sum", "def", STORE_COND_NONE, NULL), STORE_OK);
	assert_int_equal(store_get(f->st, "bucket/sum", &f->res), STORE_OK);
	assert_string_equal(f->res.checksum_name, "");
	assert_string_equal(f->res.checksum_value, "");
}

static void test_fake_clock(void **state)
{
	struct fixture *f = *state;

	f->clock.wall_ms = 1000999; /* whole seconds, rounded down */
	assert_int_equal(put_str(f, "lease", "x", STORE_COND_IF_NONE_MATCH_ANY, NULL), STORE_OK);
	assert_int_equal(f->res.last_modified, 1000);
	assert_int_equal(f->res.server_date, 1000);
	timesrc_sleep_ms(&f->time, 30000);
	assert_int_equal(store_head(f->st, "lease", &f->res), STORE_OK);
	assert_int_equal(f->res.last_modified, 1000);
	assert_int_equal(f->res.server_date, 1030);
	/* every answer carries the date, failures included */
	f->clock.wall_ms = 5000000;
	assert_int_equal(store_get(f->st, "missing", &f->res), STORE_NOT_FOUND);
	assert_int_equal(f->res.server_date, 5000);
	assert_int_equal(store_get(f->st, "", &f->res), STORE_ERR_INVALID);
	assert_int_equal(f->res.server_date, 5000);
	assert_int_equal(put_str(f, "lease", "y", STORE_COND_NONE, NULL), STORE_OK);
	assert_int_equal(store_get(f->st, "lease", &f->res), STORE_OK);
	assert_int_equal(f->res.last_modified, 5000);
}

static void test_requests_counted(void **state)
{
	struct fixture *f = *state;
	struct store_list_page page = { 0 };
	unsigned long before = f->st->requests;

	put_str(f, "c", "x", STORE_COND_NONE, NULL);
	store_get(f->st, "c", &f->res);
	store_head(f->st, "c", &f->res);
	store_list(f->st, "", NULL, NULL, 10, &page, &f->res);
	store_list_page_free(&page);
	store_delete(f->st, "c", NULL, &f->res);
	assert_int_equal(f->st->requests - before, 5);
}



static void test_list_many_in_one_dir(void **state)
{
	struct fixture *f = *state;
	enum { N = 1500 };
	char **keys = calloc(N, sizeof(*keys));
	struct store_list_page page = { 0 };
	char key[128];
	size_t i;

	assert_non_null(keys);
	/* one key in 30 through the store (with its sidecar), the rest written
	 * straight into the directory, which is much faster than 1500 fsynced
	 * puts and must list the same way */
	for (i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "locks/job/lock-%010zu.json", i + 1);
		keys[i] = strdup(key);
		assert_non_null(keys[i]);
		if (i % 30 == 0) {
			assert_int_equal(put_str(f, key, "{}", i ? STORE_COND_NONE
							  : STORE_COND_IF_NONE_MATCH_ANY, NULL),
					 STORE_OK);
		} else {
			char path[256];
			struct timespec times[2] = { { 1700000000, 0 }, { 1700000000, 0 } };
			int fd;

			path_in(f, key, path, sizeof(path));
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
			assert_true(fd >= 0);
			assert_int_equal(write(fd, "{}", 2), 2);
			assert_int_equal(futimens(fd, times), 0);
			close(fd);
		}
	}
	assert_int_equal(put_str(f, "locks/job2/lock-0000000001.json", "{}", STORE_COND_NONE, NULL),
			 STORE_OK);
	assert_int_equal(put_str(f, "locks/jo", "{}", STORE_COND_NONE, NULL), STORE_OK);

	/* first page: 1000, truncated; then the rest */
	assert_int_equal(store_list(f->st, "locks/job/lock-", NULL, NULL, 1000, &page, &f->res),
			 STORE_OK);
	assert_int_equal(page.n, 1000);
	assert_true(page.truncated);
	assert_string_equal(page.next_token, keys[999]);
	for (i = 0; i < page.n; i++) {
		assert_string_equal(page.entries[i].etag, "\"99914b932bd37a50b983c5e7c90ae93b\"");
		assert_int_equal(page.entries[i].size, 2);
		assert_int_equal(page.entries[i].last_modified, 1700000000);
	}
	store_list_page_free(&page);
	/* max_keys above 1000 is clamped, below 1 refused */
	assert_int_equal(store_list(f->st, "locks/job/", NULL, NULL, 5000, &page, &f->res), STORE_OK);
	assert_int_equal(page.n, 1000);
	store_list_page_free(&page);
	assert_int_equal(store_list(f->st, "locks/job/", NULL, NULL, 0, &page, &f->res),
			 STORE_ERR_INVALID);
	list_all_and_check(f, "locks/job/lock-", NULL, 1000, keys, N);
	list_all_and_check(f, "locks/job/", NULL, 333, keys, N);
	/* start_after near the end: only the tail */
	list_all_and_check(f, "locks/job/lock-", keys[N - 3], 1000, keys + N - 2, 2);
	assert_int_equal(store_list(f->st, "locks/job/lock-", keys[N - 1], NULL, 1000, &page, &f->res),
			 STORE_OK);
	assert_int_equal(page.n, 0);
	assert_false(page.truncated);
	store_list_page_free(&page);
	/* a start_after between keys, and one before the prefix */
	list_all_and_check(f, "locks/job/lock-", "locks/job/lock-0000001499", 10, keys + N - 2, 2);
	list_all_and_check(f, "locks/job/lock-", "a", 1000, keys, N);
	/* the prefix "locks/job" also matches job2/ but not "locks/jo" */
	assert_int_equal(store_list(f->st, "locks/job", keys[N - 1], NULL, 10, &page, &f->res),
			 STORE_OK);
	assert_int_equal(page.n, 1);
	assert_string_equal(page.entries[0].key, "locks/job2/lock-0000000001.json");
	store_list_page_free(&page);
	/* no such prefix directory */
	assert_int_equal(store_list(f->st, "nothing/here/", NULL, NULL, 10, &page, &f->res), STORE_OK);
	assert_int_equal(page.n, 0);
	store_list_page_free(&page);
	for (i = 0; i < N; i++)
		free(keys[i]);
	free(keys);
}

static void test_list_nested_order(void **state)
{
	struct fixture *f = *state;
	const char *names[] = {
		"a/b", "a-b", "a0", "a/c/d", "a/c-", "b", "a/b0", "z/z/z/z", "A",
		"a/c/d0", "bucket/x y", "bucket/~", "bucket/\xc3\xa9", "a/c.e",
	};
	size_t n = sizeof(names) / sizeof(names[0]), i, j, k;
	char *sorted[32], *sub[32], path[512];

	for (i = 0; i < n; i++) {
		assert_int_equal(put_str(f, names[i], names[i], STORE_COND_NONE, NULL), STORE_OK);
		sorted[i] = (char *)names[i];
	}
	qsort(sorted, n, sizeof(sorted[0]), cmp_str);
	/* never directories, never the reserved area or temp files */
	path_in(f, "emptydir", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
	path_in(f, "a/emptier", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
	for (k = 1; k <= n + 1; k++)
		list_all_and_check(f, "", NULL, (int)k, sorted, n);
	/* every prefix and start_after that appears is consistent with strcmp */
	{
		const char *prefixes[] = { "", "a", "a/", "a/c", "a/c/", "b", "bucket/", "z/z/", "q" };

		for (j = 0; j < sizeof(prefixes) / sizeof(prefixes[0]); j++) {
			size_t m = 0;

			for (i = 0; i < n; i++)
				if (strncmp(sorted[i], prefixes[j], strlen(prefixes[j])) == 0)
					sub[m++] = sorted[i];
			list_all_and_check(f, prefixes[j], NULL, 2, sub, m);
			for (k = 0; k < m; k++)
				list_all_and_check(f, prefixes[j], sub[k], 3, sub + k + 1, m - k - 1);
		}
	}
	/* start_after that is not a key but a prefix of a directory */
	for (i = 0; i < n && strcmp(sorted[i], "a/c") <= 0; i++)
		;
	list_all_and_check(f, "", "a/c", 4, sorted + i, n - i);
}

/* Every S3 key is a key: dot segments, empty segments, a trailing '/',
 * control bytes, '%', the store's own directory name, 1024 bytes in one
 * segment; each round-trips and lists in byte order. Only "" and keys over
 * 1024 bytes are refused. */
static void test_any_key_round_trips(void **state)
{
	struct fixture *f = *state;
	static char seg300[301], seg1024[1025], c1[300], c2[300], c3[300];
	const char *keys[] = {
		"../x", "/abs", "a//b", "a/./b", "ctl\x01", "a/..", ".", "..",
		"trail/", ".fencegate", ".fencegate/meta/x", ".fencegate/tmp/t1", "del\x7f",
		"100%", "%25", "%", "%@", "%t", "x%+", "a/%+", "ünïcode/ключ", "/", "//",
		seg300, seg1024, c1, c2, c3,
	};
	enum { N = sizeof(keys) / sizeof(keys[0]) };
	char *sorted[N], longkey[1100];
	size_t i;

	memset(seg300, 's', 300);
	memset(seg1024, 'L', 1024);
	/* a segment cut for length just before a byte that must be escaped,
	 * beside one that fits: the cut keys sort around the plain one */
	memset(c1, 'c', 239);
	memcpy(c2, c1, 239);
	memcpy(c3, c1, 239);
	strcpy(c1 + 239, "%zzz");
	strcpy(c2 + 239, "y");
	strcpy(c3 + 239, "\x7fq");
	for (i = 0; i < N; i++) {
		if (put_str(f, keys[i], keys[i], STORE_COND_IF_NONE_MATCH_ANY, NULL) != STORE_OK)
			fail_msg("put \"%s\": %s", keys[i], f->res.err_message);
		sorted[i] = (char *)keys[i];
	}
	for (i = 0; i < N; i++) {
		assert_int_equal(store_get(f->st, keys[i], &f->res), STORE_OK);
		assert_string_equal(f->res.body, keys[i]);
	}
	qsort(sorted, N, sizeof(sorted[0]), cmp_str);
	list_all_and_check(f, "", NULL, 1000, sorted, N);
	list_all_and_check(f, "", NULL, 3, sorted, N);
	for (i = 0; i < N; i++)
		list_all_and_check(f, "", sorted[i], 2, sorted + i + 1, N - i - 1);
	/* on disk: escapes only where a file name needs them */
	assert_in_dir(f, "%2E./x");
	assert_in_dir(f, "trail/%");
	assert_in_dir(f, "100%25");
	assert_in_dir(f, "%2Efencegate/meta/x");
	/* deletes find them too */
	for (i = 0; i < N; i++)
		assert_int_equal(store_delete(f->st, keys[i], NULL, &f->res), STORE_OK);
	list_all_and_check(f, "", NULL, 10, NULL, 0);
	/* refused: empty, too long */
	assert_int_equal(put_str(f, "", "x", STORE_COND_NONE, NULL), STORE_ERR_INVALID);
	assert_int_equal(store_get(f->st, NULL, &f->res), STORE_ERR_INVALID);
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	assert_int_equal(put_str(f, longkey, "x", STORE_COND_NONE, NULL), STORE_ERR_INVALID);
	assert_string_equal(f->res.err_code, "KeyTooLongError");
	assert_int_equal(store_get(f->st, longkey, &f->res), STORE_ERR_INVALID);
}

/* A key and the keys under it coexist ("a", "a/b", "a/b/c"): the object of
 * a key that is also a directory lives in it as "%@". */
/* Keys drawn from bytes that stress the names on disk ('/', '%', '.', a
 * control byte, UTF-8, long runs that need continuation chunks): every
 * listing, whole or by prefix or after a key, pages in byte order. A fixed
 * seed, so a failure repeats. */
static void test_random_keys_list_in_order(void **state)
{
	struct fixture *f = *state;
	static const char *const pieces[] = { "a", "b", "/", "%", ".", "\x01", "\xc3\xa9", "z",
					      "%+", "%@", "0" };
	enum { N = 150 };
	char *keys[N], *sorted[N], *sub[N];
	unsigned seed = 12345;
	size_t n = 0, i, j;

	while (n < N) {
		char key[FS_TEST_KEY + 8] = "";
		size_t len = 0, want = 1 + (seed = seed * 1103515245u + 12345u) % 700;

		if (want > 300 && (seed >> 8) % 3)
			want = 1 + want % 40; /* mostly short, some long */
		if (n % 2) {
			/* half share a long run, so that their names are cut
			 * for length right where escaped bytes follow */
			memset(key, 'a', 236 + (seed >> 4) % 6);
			key[236 + (seed >> 4) % 6] = '\0';
			len = strlen(key);
			want = len + 1 + (seed >> 12) % 12;
		}
		while (len < want) {
			const char *p;

			seed = seed * 1103515245u + 12345u;
			p = (seed >> 16) % 4 && !(n % 2) ? "a"
				: pieces[(seed >> 8) % (sizeof(pieces) / sizeof(pieces[0]))];
			if (len + strlen(p) > FS_TEST_KEY)
				break;
			strcat(key, p);
			len += strlen(p);
		}
		for (i = 0; i < n && strcmp(keys[i], key) != 0; i++)
			;
		if (i < n)
			continue;
		keys[n] = strdup(key);
		assert_non_null(keys[n]);
		if (put_str(f, key, "v", STORE_COND_NONE, NULL) != STORE_OK)
			fail_msg("put of a random key: %s", f->res.err_message);
		sorted[n] = keys[n];
		n++;
	}
	qsort(sorted, n, sizeof(sorted[0]), cmp_str);
	list_all_and_check(f, "", NULL, 7, sorted, n);
	for (j = 0; j < n; j += 29) {
		char prefix[FS_TEST_KEY + 1];
		size_t m = 0, plen = strlen(sorted[j]) / 2;

		memcpy(prefix, sorted[j], plen);
		prefix[plen] = '\0';
		for (i = 0; i < n; i++)
			if (strncmp(sorted[i], prefix, plen) == 0)
				sub[m++] = sorted[i];
		list_all_and_check(f, prefix, NULL, 5, sub, m);
		list_all_and_check(f, "", sorted[j], 11, sorted + j + 1, n - j - 1);
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(store_delete(f->st, keys[i], NULL, &f->res), STORE_OK);
		free(keys[i]);
	}
	list_all_and_check(f, "", NULL, 10, NULL, 0);
}

static void test_key_and_its_children(void **state)
{
	struct fixture *f = *state;
	char *want[] = { "a", "a/b", "a/b/c" }, *after_delete[] = { "a", "a/b/c" };

	assert_int_equal(put_str(f, "a/b", "ab", STORE_COND_NONE, NULL), STORE_OK);
	assert_int_equal(put_str(f, "a", "a", STORE_COND_IF_NONE_MATCH_ANY, NULL), STORE_OK);
	assert_int_equal(put_str(f, "a", "a", STORE_COND_IF_NONE_MATCH_ANY, NULL),
			 STORE_PRECONDITION_FAILED);
	assert_int_equal(put_str(f, "a/b/c", "abc", STORE_COND_IF_NONE_MATCH_ANY, NULL), STORE_OK);
	assert_int_equal(store_get(f->st, "a", &f->res), STORE_OK);
	assert_string_equal(f->res.body, "a");
	assert_int_equal(store_get(f->st, "a/b", &f->res), STORE_OK);
	assert_string_equal(f->res.body, "ab");
	assert_int_equal(store_get(f->st, "a/b/c", &f->res), STORE_OK);
	assert_string_equal(f->res.body, "abc");
	list_all_and_check(f, "", NULL, 1, want, 3);
	list_all_and_check(f, "a", NULL, 2, want, 3);
	list_all_and_check(f, "a/", NULL, 5, want + 1, 2);
	list_all_and_check(f, "a/b", "a/b", 5, want + 2, 1);
	assert_in_dir(f, "a/%@");
	assert_in_dir(f, "a/b/%@");
	assert_in_dir(f, "a/b/c");
	/* replace and condition the moved object like any other */
	assert_int_equal(store_head(f->st, "a/b", &f->res), STORE_OK);
	assert_int_equal(put_str(f, "a/b", "ab2", STORE_COND_IF_MATCH, f->res.etag), STORE_OK);
	assert_int_equal(store_get(f->st, "a/b", &f->res), STORE_OK);
	assert_string_equal(f->res.body, "ab2");
	assert_int_equal(store_delete(f->st, "a/b", f->res.etag, &f->res), STORE_OK);
	assert_int_equal(store_get(f->st, "a/b", &f->res), STORE_NOT_FOUND);
	list_all_and_check(f, "", NULL, 1000, after_delete, 2);
	assert_int_equal(store_get(f->st, "a/b/c", &f->res), STORE_OK);
}


static void test_no_temp_files_left(void **state)
{
	struct fixture *f = *state;
	char path[256];
	int count = 0;
	FILE *ls;
	char cmd[300], line[256];

	put_str(f, "t/a", "x", STORE_COND_IF_NONE_MATCH_ANY, NULL);
	put_str(f, "t/a", "x", STORE_COND_IF_NONE_MATCH_ANY, NULL); /* 412 */
	put_str(f, "t/a", "y", STORE_COND_IF_MATCH, "\"bad\"");     /* 412 */
	put_str(f, "t/a", "z", STORE_COND_NONE, NULL);
	put_str(f, "t/a/b", "z", STORE_COND_NONE, NULL);            /* collision */
	path_in(f, ".fencegate/tmp", path, sizeof(path));
	snprintf(cmd, sizeof(cmd), "ls -A '%s'", path);
	ls = popen(cmd, "r");
	assert_non_null(ls);
	while (fgets(line, sizeof(line), ls))
		count++;
	pclose(ls);
	assert_int_equal(count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_etag_is_md5, setup, teardown),
		cmocka_unit_test_setup_teardown(test_if_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace_unconditional, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_meta_condition_aba, setup, teardown),
		cmocka_unit_test(test_s3_refuses_meta_condition),
		cmocka_unit_test_setup_teardown(test_put_from_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checksum_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fake_clock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requests_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_many_in_one_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_nested_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_key_round_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_and_its_children, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_keys_list_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_temp_files_left, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
