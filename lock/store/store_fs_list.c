/* store_fs_list.c — listing the local-directory store: a depth-first walk
 * of the key tree in ascending byte order of keys, from the deepest
 * directory the prefix names, after start_after or the continuation key,
 * one page of at most FS_LIST_MAX keys. In each directory the entries are
 * decoded (store_fs_path.c) and sorted as keys: a directory as "name/", the
 * object a directory holds (FS_NAME_OBJECT) as "name", and the keys under a
 * continuation chunk (a segment too long for one name) gathered whole,
 * because they may sort between their siblings. Each listed object is read
 * under its shared lock, so its ETag is the one a GET would give; the
 * listing as a whole is not a snapshot. It skips the reserved area,
 * symlinks, special files and names the store did not make, and never
 * writes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "store.h"
#include "store_fs_int.h"

#define FS_GATHER_MAX 100000 /* keys gathered under continuation chunks, a guard */

/* One entry of a directory, as the keys it stands for. */
struct list_item {
	char *key;                 /* a key, or a directory's prefix ending in '/' */
	char *name;                /* a directory's entry name; NULL for a key */
};

struct item_vec {
	struct list_item *v;
	size_t n, cap;
};

struct list_walk {
	struct fs_store *fs;
	const char *prefix;
	size_t prefix_len;
	const char *after;         /* return only keys > after; NULL: all */
	size_t max;
	struct store_list_page *page;
	size_t cap;
	int done;
	size_t gathered;
	struct store_result *res;
};

static void items_free(struct item_vec *iv)
{
	size_t i;

	for (i = 0; i < iv->n; i++) {
		free(iv->v[i].key);
		free(iv->v[i].name);
	}
	free(iv->v);
	memset(iv, 0, sizeof(*iv));
}

static int item_cmp(const void *a, const void *b)
{
	return strcmp(((const struct list_item *)a)->key, ((const struct list_item *)b)->key);
}

/* Adds key[0..len) (+ "/" when dir_name) to iv. Returns 0 or -1 (ENOMEM). */
static int items_add(struct item_vec *iv, const char *key, size_t len, const char *dir_name)
{
	struct list_item *it;

	if (iv->n == iv->cap) {
		size_t ncap = iv->cap ? iv->cap * 2 : 64;
		struct list_item *grown = realloc(iv->v, ncap * sizeof(*grown));

		if (!grown)
			return -1;
		iv->v = grown;
		iv->cap = ncap;
	}
	it = &iv->v[iv->n];
	it->key = malloc(len + 2);
	it->name = dir_name ? strdup(dir_name) : NULL;
	if (!it->key || (dir_name && !it->name)) {
		free(it->key);
		free(it->name);
		return -1;
	}
	memcpy(it->key, key, len);
	if (dir_name)
		it->key[len++] = '/';
	it->key[len] = '\0';
	iv->n++;
	return 0;
}

/* 1 if keys beginning with start can match the walk's prefix and come
 * after its starting point. */
static int range_wanted(const struct list_walk *w, const char *start)
{
	size_t len = strlen(start), cmp_len = len < w->prefix_len ? len : w->prefix_len;

	if (strncmp(start, w->prefix, cmp_len) != 0)
		return 0;
	if (w->after && strcmp(start, w->after) < 0 && strncmp(w->after, start, len) != 0)
		return 0;
	return 1;
}

enum entry_type { ENTRY_SKIP, ENTRY_FILE, ENTRY_DIR };

static enum entry_type entry_type(int dir_fd, const struct dirent *de)
{
	struct stat sb;

	if (de->d_type == DT_DIR)
		return ENTRY_DIR;
	if (de->d_type == DT_REG)
		return ENTRY_FILE;
	if (de->d_type != DT_UNKNOWN || fstatat(dir_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return ENTRY_SKIP; /* symlinks, fifos, sockets are never objects */
	return S_ISDIR(sb.st_mode) ? ENTRY_DIR : S_ISREG(sb.st_mode) ? ENTRY_FILE : ENTRY_SKIP;
}

/* 1 if directory name in dir_fd holds its key's own object. */
static int holds_object(int dir_fd, const char *name)
{
	struct stat sb;
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), r;

	if (fd < 0)
		return 0;
	r = fstatat(fd, FS_NAME_OBJECT, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode);
	close(fd);
	return r;
}

static enum store_code gather_dir(struct list_walk *w, int dir_fd, const char *path,
				  size_t path_len, int whole, struct item_vec *iv, int depth);

/* Every key under continuation directory name of dir_fd (keys beginning
 * with path), as keys of iv. */
static enum store_code gather_cont(struct list_walk *w, int dir_fd, const char *name,
				   const char *path, size_t path_len, struct item_vec *iv, int depth)
{
	int fd;
	enum store_code code;

	if (depth > FS_KEY_MAX + 2)
		return STORE_OK;
	fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return STORE_OK; /* removed meanwhile, or replaced by a symlink */
	code = gather_dir(w, fd, path, path_len, 1, iv, depth + 1);
	close(fd);
	return code;
}

/* The entries of dir_fd, whose keys begin with path[0..path_len), into iv:
 * objects as keys; directories as prefixes to walk later, or with whole
 * (under a continuation chunk) walked now into keys. */
static enum store_code gather_dir(struct list_walk *w, int dir_fd, const char *path,
				  size_t path_len, int whole, struct item_vec *iv, int depth)
{
	char key[FS_KEY_MAX + 2];
	struct dirent *de;
	DIR *dir = NULL;
	enum store_code code = STORE_OK;
	int fd;

	memcpy(key, path, path_len);
	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		code = store_fs_fail_io(w->res, "list directory", path, errno);
		if (fd >= 0)
			close(fd);
		return code;
	}
	while (code == STORE_OK) {
		enum entry_type type;
		int kind, len;

		errno = 0;
		de = readdir(dir);
		if (!de) {
			if (errno)
				code = store_fs_fail_io(w->res, "list directory", path, errno);
			break;
		}
		if (!path_len && depth == 0 && strcmp(de->d_name, FS_RESERVED) == 0)
			continue;
		len = store_fs_name_decode(de->d_name, key, path_len, &kind);
		type = entry_type(dir_fd, de);
		if (len < 0 || type == ENTRY_SKIP || (kind == FS_NAME_CONT && type != ENTRY_DIR))
			continue;
		if (w->gathered > FS_GATHER_MAX)
			return store_fs_fail(w->res, STORE_ERR_INVALID, "InvalidArgument",
					     "too many keys under long key segments to list in order");
		if (kind == FS_NAME_CONT) {
			if (range_wanted(w, key))
				code = gather_cont(w, dir_fd, de->d_name, key, (size_t)len, iv, depth);
			continue;
		}
		if (type == ENTRY_FILE || holds_object(dir_fd, de->d_name)) {
			if (items_add(iv, key, (size_t)len, NULL) < 0)
				goto nomem;
			if (whole)
				w->gathered++;
		}
		if (type != ENTRY_DIR || (size_t)len + 1 > FS_KEY_MAX)
			continue;
		if (!whole) {
			if (items_add(iv, key, (size_t)len, de->d_name) < 0)
				goto nomem;
			continue;
		}
		key[len] = '/';
		key[len + 1] = '\0';
		if (range_wanted(w, key))
			code = gather_cont(w, dir_fd, de->d_name, key, (size_t)len + 1, iv, depth);
	}
	closedir(dir);
	return code;
nomem:
	closedir(dir);
	return store_fs_fail(w->res, STORE_ERR_NOMEM, NULL, "out of memory listing");
}

/* Adds key to the page (or, when full, marks it truncated). */
static enum store_code list_add(struct list_walk *w, const char *key)
{
	struct store_list_entry *e;
	struct fs_object obj = { 0 };
	struct fs_path p = { 0 };
	struct fs_place pl = { .dir_fd = -1, .obj_dir_fd = -1 };
	struct store_result scratch = STORE_RESULT_INIT;
	enum store_code code;
	int lock_fd = -1;

	if (w->page->n == w->max) {
		w->page->truncated = 1;
		w->done = 1;
		return STORE_OK;
	}
	if (store_fs_path_build(key, &p) < 0)
		return store_fs_fail(w->res, STORE_ERR_NOMEM, NULL, "out of memory listing");
	lock_fd = store_fs_lock_key(w->fs, key, 0, w->res);
	if (lock_fd == -1) {
		code = w->res->code;
		goto out;
	}
	code = store_fs_locate(w->fs, key, &p, WALK_READ, &pl, &scratch);
	if (code == STORE_OK)
		code = store_fs_object_read(w->fs, pl.obj_dir_fd, pl.obj_name, key, 0, &obj, &scratch);
	store_fs_unlock_key(&lock_fd);
	if (code == STORE_NOT_FOUND || code == STORE_ERR_INVALID) {
		code = STORE_OK; /* deleted meanwhile, or not an object */
		goto out;
	}
	if (code) {
		store_fs_fail(w->res, code, NULL, "%s", scratch.err_message);
		goto out;
	}
	if (w->page->n == w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 32;
		struct store_list_entry *grown;

		if (ncap > w->max)
			ncap = w->max;
		grown = realloc(w->page->entries, ncap * sizeof(*grown));
		if (!grown) {
			code = store_fs_fail(w->res, STORE_ERR_NOMEM, NULL, "out of memory listing");
			goto out;
		}
		w->page->entries = grown;
		w->cap = ncap;
	}
	e = &w->page->entries[w->page->n];
	memset(e, 0, sizeof(*e));
	e->key = strdup(key);
	if (!e->key) {
		code = store_fs_fail(w->res, STORE_ERR_NOMEM, NULL, "out of memory listing");
		goto out;
	}
	snprintf(e->etag, sizeof(e->etag), "%s", obj.etag);
	e->size = obj.size;
	e->last_modified = obj.last_modified;
	w->page->n++;
	code = STORE_OK;
out:
	store_fs_object_free(&obj);
	store_fs_place_close(&pl);
	store_fs_path_free(&p);
	store_result_clear(&scratch);
	return code;
}

/* Lists directory dir_fd, whose keys begin with path (path_len bytes, ""
 * or ending in '/'), in key order, depth first. */
static enum store_code list_walk_dir(struct list_walk *w, int dir_fd, const char *path,
				     size_t path_len, int depth)
{
	struct item_vec iv = { 0 };
	enum store_code code;
	size_t i;

	code = gather_dir(w, dir_fd, path, path_len, 0, &iv, depth);
	if (code)
		goto out;
	if (iv.n > 1)
		qsort(iv.v, iv.n, sizeof(iv.v[0]), item_cmp);
	for (i = 0; i < iv.n && !w->done && code == STORE_OK; i++) {
		const struct list_item *it = &iv.v[i];
		int child;

		if (!it->name) {
			if (strncmp(it->key, w->prefix, w->prefix_len) != 0 ||
			    (w->after && strcmp(it->key, w->after) <= 0))
				continue;
			code = list_add(w, it->key);
			continue;
		}
		if (!range_wanted(w, it->key) || depth > FS_KEY_MAX)
			continue;
		child = openat(dir_fd, it->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0)
			continue; /* removed meanwhile, or replaced by a symlink */
		code = list_walk_dir(w, child, it->key, strlen(it->key), depth + 1);
		close(child);
	}
out:
	items_free(&iv);
	return code;
}

enum store_code store_fs_list(struct store *st, const char *prefix, const char *start_after,
			      const char *continuation, int max_keys,
			      struct store_list_page *page, struct store_result *res)
{
	struct fs_store *fs = store_fs_begin(st, res);
	struct store_result scratch = STORE_RESULT_INIT;
	struct list_walk w = { 0 };
	struct fs_path p = { 0 };
	char dir_key[FS_KEY_MAX + 2];
	const char *slash;
	int data_fd = -1;
	size_t dir_len;
	enum store_code code;

	memset(page, 0, sizeof(*page));
	if (!prefix)
		prefix = "";
	if (max_keys < 1) {
		code = store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
				     "max_keys must be at least 1 (got %d)", max_keys);
		goto out;
	}
	w.fs = fs;
	w.prefix = prefix;
	w.prefix_len = strlen(prefix);
	w.max = max_keys > FS_LIST_MAX ? FS_LIST_MAX : (size_t)max_keys;
	w.page = page;
	w.res = res;
	w.after = start_after && *start_after ? start_after : NULL;
	if (continuation && *continuation &&
	    (!w.after || strcmp(continuation, w.after) > 0))
		w.after = continuation;
	if (w.prefix_len > FS_KEY_MAX)
		goto empty;
	/* Start in the deepest directory the prefix names in full. */
	slash = strrchr(prefix, '/');
	dir_len = slash ? (size_t)(slash - prefix) + 1 : 0;
	memcpy(dir_key, prefix, dir_len);
	memcpy(dir_key + dir_len, "x", 2); /* the walk stops before the leaf */
	if (store_fs_path_build(dir_key, &p) < 0) {
		code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory listing");
		goto out;
	}
	code = store_fs_walk(fs, dir_key, &p, WALK_READ, &data_fd, &scratch);
	if (code == STORE_NOT_FOUND || code == STORE_ERR_INVALID)
		goto empty;
	if (code) {
		code = store_fs_fail(res, code, NULL, "%s", scratch.err_message);
		goto out;
	}
	dir_key[dir_len] = '\0';
	code = list_walk_dir(&w, data_fd, dir_key, dir_len, (int)p.n - 1);
	if (code)
		goto out;
	if (page->truncated) {
		page->next_token = strdup(page->entries[page->n - 1].key);
		if (!page->next_token) {
			code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory listing");
			goto out;
		}
	}
empty:
	code = store_fs_succeed(res, 200);
out:
	if (code != STORE_OK)
		store_list_page_free(page);
	store_result_clear(&scratch);
	store_fs_path_free(&p);
	store_fs_close_fd(&data_fd);
	return code;
}
