/* test_store_fs_robust.c — what the local-directory object store survives:
 * writers killed at every crash point of a put or a move, forked processes
 * racing on the same keys, symlinks out of the store, and files dropped in
 * without a sidecar. Each test gets a fresh mkdtemp directory under /tmp,
 * removed afterwards. */
#include "store_fs_test.h"

/* Runs a put of key in a child that dies at crash point `point` (or
 * finishes: then the child exits 0). Returns the child's exit status. */
static int put_dying_at(struct fixture *f, int point, const char *key, const char *body,
			const char *epoch)
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char num[16];
		struct store_meta meta[] = { { "fencing-epoch", (char *)epoch } };
		struct store_put_opts opts = { .meta = meta, .nmeta = 1 };

		snprintf(num, sizeof(num), "%d", point);
		setenv("FENCE_STORE_FS_CRASH", num, 1);
		store_put(f->st, key, body, strlen(body), &opts, &f->res);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* What a reader sees after a fresh open (which sweeps and recovers):
 * body and stored epoch of key, each checked against its ETag. */
static void expect_version(struct fixture *f, const char *key, const char *body, const char *epoch)
{
	char want[STORE_ETAG_MAX];

	store_close(f->st);
	f->clock.wall_ms += 120000; /* past the temp files' grace time */
	f->st = open_store(f);
	assert_int_equal(store_get(f->st, key, &f->res), STORE_OK);
	assert_string_equal(f->res.body, body);
	md5_etag(body, want);
	assert_string_equal(f->res.etag, want);
	assert_non_null(store_result_meta(&f->res, "fencing-epoch"));
	assert_string_equal(store_result_meta(&f->res, "fencing-epoch"), epoch);
}

static size_t count_entries(const char *dir)
{
	char cmd[256];
	size_t n = 0;
	FILE *fp;
	int ch;

	snprintf(cmd, sizeof(cmd), "ls -A '%s'", dir);
	fp = popen(cmd, "r");
	assert_non_null(fp);
	while ((ch = fgetc(fp)) != EOF)
		n += ch == '\n';
	pclose(fp);
	return n;
}

/* A writer killed at every point of a replace: the reader sees the old
 * object with its own epoch until the object itself moved, then the new
 * one with its own; never bytes of one with the metadata of the other.
 * Temp files the dead writer left are gone at the next open. */
static void test_crash_during_put(void **state)
{
	struct fixture *f = *state;
	static const struct { int point; int new_visible; } rows[] = {
		{ 1, 0 }, { 2, 0 }, { 3, 0 }, { 4, 1 },
	};
	char tmp[256];
	size_t i;

	path_in(f, ".fencegate/tmp", tmp, sizeof(tmp));
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char key[32];

		snprintf(key, sizeof(key), "crash/%d", rows[i].point);
		assert_int_equal(put_dying_at(f, 0, key, "old bytes", "1"), 0);
		assert_int_equal(put_dying_at(f, rows[i].point, key, "new bytes!", "2"), 86);
		if (rows[i].new_visible)
			expect_version(f, key, "new bytes!", "2");
		else
			expect_version(f, key, "old bytes", "1");
		assert_int_equal(count_entries(tmp), 0);
		/* and a write after the crash commits normally */
		assert_int_equal(put_dying_at(f, 0, key, "third", "3"), 0);
		expect_version(f, key, "third", "3");
	}
	/* twice in a row at the same point: the backup is never lost */
	assert_int_equal(put_dying_at(f, 0, "crash/twice", "old bytes", "1"), 0);
	assert_int_equal(put_dying_at(f, 3, "crash/twice", "new bytes!", "2"), 86);
	assert_int_equal(put_dying_at(f, 3, "crash/twice", "newer bytes", "3"), 86);
	expect_version(f, "crash/twice", "old bytes", "1");
}

/* A writer killed while it moves an object into the directory a new key
 * needs ("a/b" for "a/b/c"): the object is still there after the next open. */
static void test_crash_during_move(void **state)
{
	struct fixture *f = *state;
	static const int points[] = { 10, 11, 12 };
	char *want[] = { "m/a/b", "m/a/b/c" }, key[32], tmp[256];
	size_t i;

	path_in(f, ".fencegate/tmp", tmp, sizeof(tmp));
	for (i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		snprintf(key, sizeof(key), "m/a/b");
		assert_int_equal(put_dying_at(f, 0, key, "parent", "1"), 0);
		assert_int_equal(put_dying_at(f, points[i], "m/a/b/c", "child", "1"), 86);
		expect_version(f, "m/a/b", "parent", "1");
		assert_int_equal(count_entries(tmp), 0);
		assert_int_equal(put_dying_at(f, 0, "m/a/b/c", "child", "1"), 0);
		expect_version(f, "m/a/b/c", "child", "1");
		list_all_and_check(f, "m/", NULL, 10, want, 2);
		assert_int_equal(store_delete(f->st, "m/a/b/c", NULL, &f->res), STORE_OK);
		assert_int_equal(store_delete(f->st, "m/a/b", NULL, &f->res), STORE_OK);
		rm_tree(f->dir); /* start from a plain file "a/b" again */
		mkdir(f->dir, 0755);
		store_close(f->st);
		f->st = open_store(f);
	}
}

static void test_symlink_escape(void **state)
{
	struct fixture *f = *state;
	char link_path[256], target[256], content[16] = "";
	struct store_list_page page = { 0 };
	FILE *fp;

	/* a directory symlink planted in DIR */
	path_in(f, "evil", link_path, sizeof(link_path));
	assert_int_equal(symlink(f->outside, link_path), 0);
	assert_int_equal(put_str(f, "evil/x", "pwned", STORE_COND_NONE, NULL), STORE_ERR_INVALID);
	assert_non_null(strstr(f->res.err_message, "symlink"));
	assert_int_equal(put_str(f, "evil/x", "pwned", STORE_COND_IF_NONE_MATCH_ANY, NULL),
			 STORE_ERR_INVALID);
	assert_int_equal(put_str(f, "evil/sub/x", "pwned", STORE_COND_NONE, NULL), STORE_ERR_INVALID);
	snprintf(target, sizeof(target), "%s/x", f->outside);
	assert_int_equal(access(target, F_OK), -1);
	snprintf(target, sizeof(target), "%s/sub", f->outside);
	assert_int_equal(access(target, F_OK), -1);

	/* a file symlink planted as a key */
	snprintf(target, sizeof(target), "%s/secret", f->outside);
	fp = fopen(target, "w");
	assert_non_null(fp);
	fputs("secret", fp);
	fclose(fp);
	path_in(f, "file", link_path, sizeof(link_path));
	assert_int_equal(symlink(target, link_path), 0);
	assert_int_equal(store_get(f->st, "file", &f->res), STORE_ERR_INVALID);
	assert_null(f->res.body);
	assert_int_equal(put_str(f, "file", "pwned", STORE_COND_NONE, NULL), STORE_ERR_INVALID);
	assert_int_equal(put_str(f, "file", "pwned", STORE_COND_IF_NONE_MATCH_ANY, NULL),
			 STORE_ERR_INVALID);
	assert_int_equal(put_str(f, "file", "pwned", STORE_COND_IF_MATCH, "*"), STORE_ERR_INVALID);
	assert_int_equal(store_delete(f->st, "file", NULL, &f->res), STORE_ERR_INVALID);
	fp = fopen(target, "r");
	assert_non_null(fp);
	assert_non_null(fgets(content, sizeof(content), fp));
	fclose(fp);
	assert_string_equal(content, "secret");
	/* symlinks are never listed */
	assert_int_equal(store_list(f->st, "", NULL, NULL, 100, &page, &f->res), STORE_OK);
	assert_int_equal(page.n, 0);
	store_list_page_free(&page);
}

static void test_reserved_dir_symlink_refused(void **state)
{
	struct fixture *f = *state;
	char dir[128], link_path[256], err[256] = "";
	struct store_config cfg = { 0 };
	char url[300];
	struct store *st;

	snprintf(dir, sizeof(dir), "%s/sub", f->outside);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(link_path, sizeof(link_path), "%s/.fencegate", dir);
	assert_int_equal(symlink(f->dir, link_path), 0);
	snprintf(url, sizeof(url), "file://%s", dir);
	cfg.url = url;
	st = store_open(&cfg, err, sizeof(err));
	assert_null(st);
	assert_non_null(strstr(err, ".fencegate"));
}

/* A sidecar of an older fencegate (DIR/.fencegate/meta/KEY, naming the file
 * by inode and mtime) still gives the object its metadata and ETag. */
static void test_legacy_sidecar(void **state)
{
	struct fixture *f = *state;
	char path[512], text[512];
	struct stat sb;

	path_in(f, "old", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
	write_in(f, "old/obj.txt", "old bytes", path, sizeof(path));
	assert_int_equal(stat(path, &sb), 0);
	snprintf(text, sizeof(text),
		 "{\"v\":1,\"etag\":\"\\\"legacy-etag\\\"\",\"ident\":\"%ju:%jd:%ld\",\"size\":9,"
		 "\"lastModified\":1234,\"contentType\":\"text/old\",\"meta\":{\"fencing-epoch\":\"4\"}}",
		 (uintmax_t)sb.st_ino, (intmax_t)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
	path_in(f, ".fencegate/meta", path, sizeof(path));
	mkdir(path, 0755);
	path_in(f, ".fencegate/meta/old", path, sizeof(path));
	mkdir(path, 0755);
	write_in(f, ".fencegate/meta/old/obj.txt", text, path, sizeof(path));
	store_close(f->st);
	f->st = open_store(f);
	assert_int_equal(store_head(f->st, "old/obj.txt", &f->res), STORE_OK);
	assert_string_equal(f->res.etag, "\"legacy-etag\"");
	assert_string_equal(f->res.content_type, "text/old");
	assert_string_equal(store_result_meta(&f->res, "fencing-epoch"), "4");
	assert_int_equal(f->res.last_modified, 1234);
	/* a rewrite moves it to the new sidecars */
	put_epoch(f, "old/obj.txt", "new", "5");
	assert_int_equal(store_head(f->st, "old/obj.txt", &f->res), STORE_OK);
	assert_string_equal(store_result_meta(&f->res, "fencing-epoch"), "5");
}

static void test_file_without_sidecar(void **state)
{
	struct fixture *f = *state;
	struct store_list_page page = { 0 };
	struct timespec times[2] = { { 1234567, 0 }, { 1234567, 0 } };
	char path[256], want[STORE_ETAG_MAX];

	/* a file dropped in by hand (or a crash between the two renames) */
	path_in(f, "bucket", path, sizeof(path));
	assert_int_equal(mkdir(path, 0755), 0);
	write_in(f, "bucket/dropped.txt", "by hand", path, sizeof(path));
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
	md5_etag("by hand", want);
	assert_int_equal(store_head(f->st, "bucket/dropped.txt", &f->res), STORE_OK);
	assert_string_equal(f->res.etag, want);
	assert_int_equal(f->res.last_modified, 1234567);
	assert_int_equal(f->res.nmeta, 0);
	assert_string_equal(f->res.content_type, ""); /* no sidecar: unknown */
	assert_int_equal(store_list(f->st, "bucket/", NULL, NULL, 10, &page, &f->res), STORE_OK);
	assert_int_equal(page.n, 1);
	assert_string_equal(page.entries[0].etag, want);
	store_list_page_free(&page);
	/* If-Match works against the computed etag */
	assert_int_equal(put_str(f, "bucket/dropped.txt", "new", STORE_COND_IF_MATCH, want), STORE_OK);
	/* a sidecar left behind for a different file is ignored */
	assert_int_equal(put_str(f, "bucket/other", "one", STORE_COND_NONE, NULL), STORE_OK);
	path_in(f, "bucket/other", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	write_in(f, "bucket/other", "two", path, sizeof(path));
	md5_etag("two", want);
	assert_int_equal(store_get(f->st, "bucket/other", &f->res), STORE_OK);
	assert_string_equal(f->res.etag, want);
}

/* Forks n children that, released together, each run race_body(i). Returns
 * a bitmask of children that exited 0 (won); checks the others exited 1 (lost). */
typedef int (*race_fn)(struct fixture *f, int i, void *arg);

static unsigned race(struct fixture *f, int n, race_fn fn, void *arg)
{
	pid_t pids[16];
	int gate[2], i, status;
	unsigned winners = 0;

	assert_true(n <= 16);
	assert_int_equal(pipe(gate), 0);
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char c;
			int rc;

			close(gate[1]);
			if (read(gate[0], &c, 1) != 0)
				_exit(3);
			alarm(20);
			rc = fn(f, i, arg);
			_exit(rc);
		}
	}
	close(gate[0]);
	close(gate[1]); /* releases every child at once */
	for (i = 0; i < n; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) == 0)
			winners |= 1u << i;
		else
			assert_int_equal(WEXITSTATUS(status), 1);
	}
	return winners;
}

/* Each child opens its own store, as separate processes would. */
static int race_create(struct fixture *f, int i, void *arg)
{
	const char *key = arg;
	struct store_result res = STORE_RESULT_INIT;
	struct store_put_opts opts = { .cond = STORE_COND_IF_NONE_MATCH_ANY };
	char err[256], body[32];
	struct store *st = store_open(&f->cfg, err, sizeof(err));
	enum store_code code;

	if (!st)
		return 2;
	snprintf(body, sizeof(body), "creator-%d", i);
	code = store_put(st, key, body, strlen(body), &opts, &res);
	store_result_clear(&res);
	store_close(st);
	return code == STORE_OK ? 0 : code == STORE_PRECONDITION_FAILED ? 1 : 2;
}

struct replace_arg {
	const char *key;
	char etag[STORE_ETAG_MAX];
};

/* Uses the store inherited from the parent: lock files are per call, so
 * forked copies of one store still exclude each other. */
static int race_replace(struct fixture *f, int i, void *arg)
{
	struct replace_arg *ra = arg;
	struct store_result res = STORE_RESULT_INIT;
	struct store_put_opts opts = { .cond = STORE_COND_IF_MATCH, .etag = ra->etag };
	char body[32];
	enum store_code code;

	snprintf(body, sizeof(body), "replacer-%d", i);
	code = store_put(f->st, ra->key, body, strlen(body), &opts, &res);
	store_result_clear(&res);
	return code == STORE_OK ? 0 : code == STORE_PRECONDITION_FAILED ? 1 : 2;
}

static int race_delete(struct fixture *f, int i, void *arg)
{
	struct replace_arg *ra = arg;
	struct store_result res = STORE_RESULT_INIT;
	enum store_code code;

	(void)i;
	code = store_delete(f->st, ra->key, ra->etag, &res);
	store_result_clear(&res);
	return code == STORE_OK ? 0 : (code == STORE_PRECONDITION_FAILED ||
				       code == STORE_NOT_FOUND) ? 1 : 2;
}

static int one_bit(unsigned mask)
{
	return mask != 0 && (mask & (mask - 1)) == 0;
}

static void test_concurrent_creators(void **state)
{
	struct fixture *f = *state;
	char key[64], want[32];
	int round, winner;
	unsigned mask;

	for (round = 0; round < 8; round++) {
		snprintf(key, sizeof(key), "locks/race/lock-%010d.json", round + 1);
		mask = race(f, 8, race_create, key);
		assert_true(one_bit(mask));
		winner = __builtin_ctz(mask);
		assert_int_equal(store_get(f->st, key, &f->res), STORE_OK);
		snprintf(want, sizeof(want), "creator-%d", winner);
		assert_string_equal(f->res.body, want);
	}
}

static void test_concurrent_replacers(void **state)
{
	struct fixture *f = *state;
	struct replace_arg ra = { .key = "locks/x/lock-0000000001.json" };
	char want[32];
	int round;
	unsigned mask;

	assert_int_equal(put_str(f, ra.key, "start", STORE_COND_IF_NONE_MATCH_ANY, NULL), STORE_OK);
	for (round = 0; round < 8; round++) {
		assert_int_equal(store_head(f->st, ra.key, &f->res), STORE_OK);
		strcpy(ra.etag, f->res.etag);
		mask = race(f, 8, race_replace, &ra);
		assert_true(one_bit(mask));
		assert_int_equal(store_get(f->st, ra.key, &f->res), STORE_OK);
		snprintf(want, sizeof(want), "replacer-%d", __builtin_ctz(mask));
		assert_string_equal(f->res.body, want);
		assert_string_not_equal(f->res.etag, ra.etag);
		/* make the next round start from a fresh etag */
		assert_int_equal(put_str(f, ra.key, want, STORE_COND_IF_MATCH, f->res.etag), STORE_OK);
		snprintf(want, sizeof(want), "round-%d", round);
		assert_int_equal(put_str(f, ra.key, want, STORE_COND_NONE, NULL), STORE_OK);
	}
	/* conditional deletes race the same way */
	assert_int_equal(store_head(f->st, ra.key, &f->res), STORE_OK);
	strcpy(ra.etag, f->res.etag);
	mask = race(f, 8, race_delete, &ra);
	assert_true(one_bit(mask));
	assert_int_equal(store_head(f->st, ra.key, &f->res), STORE_NOT_FOUND);
}

/* Writers of a key and of keys under it, and readers, in separate
 * processes: objects move into directories under contention without a
 * deadlock (alarm), and every key ends with its last writer's bytes. */
static int race_nested(struct fixture *f, int i, void *arg)
{
	static const char *const keys[] = { "n/a", "n/a/b", "n/a/b/c", "n", "n/a/b/c/d", "n/a" };
	struct store_result res = STORE_RESULT_INIT;
	char err[256], body[32];
	struct store *st = store_open(&f->cfg, err, sizeof(err));
	int round, rc = 0;

	(void)arg;
	if (!st)
		return 2;
	for (round = 0; round < 15 && rc == 0; round++) {
		const char *key = keys[(i + round) % 6];

		snprintf(body, sizeof(body), "%s@%d", key, i);
		if (i % 3 == 2) {
			/* readers: a key is there with its own bytes, or absent */
			if (store_get(st, key, &res) == STORE_OK &&
			    strncmp(res.body, key, strlen(key)) != 0)
				rc = 2;
		} else if (store_put(st, key, body, strlen(body), NULL, &res) != STORE_OK) {
			rc = 2;
		}
	}
	store_result_clear(&res);
	store_close(st);
	return rc;
}

static void test_concurrent_nested_writers(void **state)
{
	struct fixture *f = *state;
	char *want[] = { "n", "n/a", "n/a/b", "n/a/b/c", "n/a/b/c/d" };
	unsigned mask = race(f, 9, race_nested, NULL);
	size_t i;

	assert_int_equal(mask, 0x1ff);
	list_all_and_check(f, "", NULL, 2, want, 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(store_get(f->st, want[i], &f->res), STORE_OK);
		assert_int_equal(strncmp(f->res.body, want[i], strlen(want[i])), 0);
		assert_int_equal(f->res.body[strlen(want[i])], '@');
	}
}

/* The store directory itself (a bucket of the embedded store) must not be a
 * symlink: it could point the store anywhere. */
static void test_store_dir_symlink_refused(void **state)
{
	struct fixture *f = *state;
	struct store_config cfg = { 0 };
	char link_path[128], url[160], err[256] = "";

	snprintf(link_path, sizeof(link_path), "%s-link", f->dir);
	assert_int_equal(symlink(f->outside, link_path), 0);
	snprintf(url, sizeof(url), "file://%s", link_path);
	cfg.url = url;
	assert_null(store_open(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "symlink"));
	unlink(link_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crash_during_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_during_move, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_sidecar, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_escape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserved_dir_symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_without_sidecar, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_creators, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_replacers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_nested_writers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_dir_symlink_refused, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
