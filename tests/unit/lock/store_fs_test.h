/* store_fs_test.h — the fixture test_store_fs.c and test_store_fs_robust.c
 * share: a fresh mkdtemp store directory (and a second one outside it) with an
 * injected fake clock, a string put, the MD5 ETag and sidecar path of a body or
 * key, and a paged listing checked against the keys expected. Test code only. */
#ifndef FENCE_TEST_STORE_FS_TEST_H
#define FENCE_TEST_STORE_FS_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "lock/store/store.h"
#include "lock/store/timesrc.h"

#define FS_TEST_KEY 1024

struct fake_clock {
	int64_t wall_ms;
	int64_t mono_ms;
};

static inline int64_t fake_wall(void *ctx) { return ((struct fake_clock *)ctx)->wall_ms; }
static inline int64_t fake_mono(void *ctx) { return ((struct fake_clock *)ctx)->mono_ms; }
static inline void fake_sleep(void *ctx, int64_t ms)
{
	((struct fake_clock *)ctx)->wall_ms += ms;
	((struct fake_clock *)ctx)->mono_ms += ms;
}

struct fixture {
	char dir[64];
	char outside[64];        /* a second directory, for symlink escapes */
	struct fake_clock clock;
	struct timesrc time;
	struct store_config cfg;
	char url[128];
	struct store *st;
	struct store_result res;
};

static inline int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void rm_tree(const char *path)
{
	if (path[0])
		nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

static inline struct store *open_store(struct fixture *f)
{
	char err[256] = "";
	struct store *st = store_open(&f->cfg, err, sizeof(err));

	if (!st)
		fail_msg("store_open: %s", err);
	return st;
}

static inline int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/fsstore-test-XXXXXX");
	snprintf(f->outside, sizeof(f->outside), "/tmp/fsstore-outside-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_non_null(mkdtemp(f->outside));
	f->clock.wall_ms = 1700000000500LL;
	f->clock.mono_ms = 1000;
	f->time = (struct timesrc){ fake_wall, fake_mono, fake_sleep, &f->clock };
	snprintf(f->url, sizeof(f->url), "file://%s", f->dir);
	f->cfg.url = f->url;
	f->cfg.time = &f->time;
	f->st = open_store(f);
	f->res = (struct store_result)STORE_RESULT_INIT;
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fixture *f = *state;

	store_result_clear(&f->res);
	store_close(f->st);
	rm_tree(f->dir);
	rm_tree(f->outside);
	free(f);
	return 0;
}

static inline enum store_code put_str(struct fixture *f, const char *key, const char *body,
			       enum store_cond cond, const char *etag)
{
	struct store_put_opts opts = { .cond = cond, .etag = etag };

	return store_put(f->st, key, body, strlen(body), &opts, &f->res);
}

/* Puts body under key with fencing-epoch metadata (none if epoch is NULL). */
static inline void put_epoch(struct fixture *f, const char *key, const char *body, const char *epoch)
{
	struct store_meta meta[] = { { "fencing-epoch", (char *)epoch } };
	struct store_put_opts opts = { .meta = meta, .nmeta = epoch ? 1 : 0 };

	assert_int_equal(store_put(f->st, key, body, strlen(body), &opts, &f->res), STORE_OK);
}

static inline void md5_etag(const char *body, char out[STORE_ETAG_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;
	char *p = out;

	assert_true(EVP_Digest(body, strlen(body), md, &n, EVP_md5(), NULL));
	*p++ = '"';
	for (i = 0; i < n; i++)
		p += sprintf(p, "%02x", md[i]);
	*p++ = '"';
	*p = '\0';
}

static inline void path_in(const struct fixture *f, const char *rel, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", f->dir, rel);
}

/* Writes text by hand to rel under the store directory (no sidecar), leaving
 * its path in out. */
static inline void write_in(const struct fixture *f, const char *rel, const char *text,
			    char *out, size_t len)
{
	FILE *fp;

	path_in(f, rel, out, len);
	fp = fopen(out, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* rel exists under the store directory. */
static inline void assert_in_dir(const struct fixture *f, const char *rel)
{
	char path[512];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", f->dir, rel);
	if (stat(path, &sb) != 0)
		fail_msg("\"%s\" is not in the store directory", rel);
}

static inline void sidecar_path(const struct fixture *f, const char *key, char *out, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;
	char hex[65];

	assert_true(EVP_Digest(key, strlen(key), md, &n, EVP_sha256(), NULL));
	for (i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	snprintf(out, len, "%s/.fencegate/sidecars/%.2s/%s", f->dir, hex, hex);
}

static inline int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists everything under prefix page by page (max_keys per page), following
 * the continuation token, and checks the result equals want[0..nwant). */
static inline void list_all_and_check(struct fixture *f, const char *prefix, const char *start_after,
			       int max_keys, char **want, size_t nwant)
{
	struct store_list_page page = { 0 };
	char *token = NULL;
	size_t got = 0, i, pages = 0;

	for (;;) {
		assert_int_equal(store_list(f->st, prefix, start_after, token, max_keys, &page, &f->res),
				 STORE_OK);
		pages++;
		assert_true(page.n <= (size_t)max_keys);
		for (i = 0; i < page.n; i++) {
			assert_true(got < nwant);
			assert_string_equal(page.entries[i].key, want[got]);
			got++;
		}
		free(token);
		token = NULL;
		if (!page.truncated) {
			assert_null(page.next_token);
			break;
		}
		assert_int_equal(page.n, (size_t)max_keys);
		assert_non_null(page.next_token);
		token = strdup(page.next_token);
		store_list_page_free(&page);
		assert_true(pages < 10000);
	}
	store_list_page_free(&page);
	assert_int_equal(got, nwant);
}

#endif
