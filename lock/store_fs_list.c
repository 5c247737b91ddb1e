/* store_fs_list.c — listing the local-directory store: a depth-first walk
 * of the key tree in key order (directories sort as "name/"), from the
 * deepest directory the prefix names, after start_after or the
 * continuation key, one page of at most FS_LIST_MAX keys. Each listed
 * object is read under its shared lock, so its ETag is the one a GET would
 * give; the listing as a whole is not a snapshot. It skips the reserved
 * area, symlinks and special files, and never writes. */
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

/* A directory entry during a listing; directories carry a trailing '/' so
 * that sorting names sorts keys ("a-b" < "a/" < "a0"). */
struct list_name {
	char *name;
	int is_dir;
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
	struct store_result *res;
};

static int list_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct list_name *)a)->name, ((const struct list_name *)b)->name);
}

/* Reads and sorts dir_fd's entries (not consumed); path is its key prefix,
 * for messages. The root ("") skips the reserved area. */
static enum store_code list_read_dir(int dir_fd, const char *path, struct list_name **out,
				     size_t *nout, struct store_result *res)
{
	struct list_name *names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *dir = NULL;
	int fd;
	enum store_code code = STORE_OK;

	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		code = store_fs_fail_io(res, "list directory", path, errno);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	for (;;) {
		int is_dir;
		size_t len;

		errno = 0;
		de = readdir(dir);
		if (!de) {
			if (errno)
				code = store_fs_fail_io(res, "list directory", path, errno);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (!*path && strcmp(de->d_name, FS_RESERVED) == 0)
			continue;
		if (de->d_type == DT_DIR) {
			is_dir = 1;
		} else if (de->d_type == DT_REG) {
			is_dir = 0;
		} else if (de->d_type == DT_UNKNOWN) {
			struct stat sb;

			if (fstatat(dir_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (S_ISDIR(sb.st_mode))
				is_dir = 1;
			else if (S_ISREG(sb.st_mode))
				is_dir = 0;
			else
				continue;
		} else {
			continue; /* symlinks, fifos, sockets are never objects */
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct list_name *grown = realloc(names, ncap * sizeof(*names));

			if (!grown) {
				code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory listing");
				break;
			}
			names = grown;
			cap = ncap;
		}
		len = strlen(de->d_name);
		names[n].name = malloc(len + 2);
		if (!names[n].name) {
			code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory listing");
			break;
		}
		memcpy(names[n].name, de->d_name, len);
		names[n].name[len] = is_dir ? '/' : '\0';
		names[n].name[len + 1] = '\0';
		names[n].is_dir = is_dir;
		n++;
	}
	if (code == STORE_OK && n > 1)
		qsort(names, n, sizeof(*names), list_name_cmp);
out:
	if (dir)
		closedir(dir);
	if (code != STORE_OK) {
		for (i = 0; i < n; i++)
			free(names[i].name);
		free(names);
		names = NULL;
		n = 0;
	}
	*out = names;
	*nout = n;
	return code;
}

/* Adds key (a regular file leaf in data_fd) to the page. */
static enum store_code list_add(struct list_walk *w, int data_fd, int meta_fd,
				const char *leaf, const char *key)
{
	struct store_list_entry *e;
	struct fs_object obj = { 0 };
	struct store_result scratch = STORE_RESULT_INIT;
	enum store_code code;
	int lock_fd;

	if (w->page->n == w->max) {
		w->page->truncated = 1;
		w->done = 1;
		return STORE_OK;
	}
	lock_fd = store_fs_lock_key(w->fs, key, 0, w->res);
	if (lock_fd == -1)
		return w->res->code;
	code = store_fs_object_read(data_fd, meta_fd, leaf, key, 0, &obj, &scratch);
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
	store_result_clear(&scratch);
	return code;
}

/* Lists the directory data_fd whose keys store_fs_begin with path (path_len bytes,
 * "" or ending in '/'), in key order, depth first. meta_fd mirrors it in the
 * sidecar tree (-1 if absent). */
static enum store_code list_walk_dir(struct list_walk *w, int data_fd, int meta_fd,
				     char *path, size_t path_len)
{
	struct list_name *names = NULL;
	size_t n = 0, i;
	enum store_code code;

	code = list_read_dir(data_fd, path, &names, &n, w->res);
	if (code)
		return code;
	for (i = 0; i < n && !w->done; i++) {
		size_t nlen = strlen(names[i].name), klen = path_len + nlen, cmp_len;
		int child_fd, child_meta = -1;

		if (klen > FS_KEY_MAX + 1)
			continue;
		memcpy(path + path_len, names[i].name, nlen + 1);
		/* prefix: a file must start with it; a directory must either
		 * start with it or be a beginning of it */
		cmp_len = klen < w->prefix_len ? klen : w->prefix_len;
		if (strncmp(path, w->prefix, cmp_len) != 0)
			continue;
		if (!names[i].is_dir && klen < w->prefix_len)
			continue;
		if (w->after) {
			if (!names[i].is_dir && strcmp(path, w->after) <= 0)
				continue;
			if (names[i].is_dir && strcmp(path, w->after) < 0 &&
			    strncmp(w->after, path, klen) != 0)
				continue;
		}
		if (!names[i].is_dir) {
			if (!store_key_valid(path, klen))
				continue;
			code = list_add(w, data_fd, meta_fd, names[i].name, path);
			if (code)
				break;
			continue;
		}
		names[i].name[nlen - 1] = '\0';
		child_fd = openat(data_fd, names[i].name,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child_fd < 0)
			continue; /* removed meanwhile, or replaced by a symlink */
		if (meta_fd >= 0)
			child_meta = openat(meta_fd, names[i].name,
					    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		code = list_walk_dir(w, child_fd, child_meta, path, klen);
		close(child_fd);
		if (child_meta >= 0)
			close(child_meta);
		if (code)
			break;
	}
	path[path_len] = '\0';
	for (i = 0; i < n; i++)
		free(names[i].name);
	free(names);
	return code;
}

enum store_code store_fs_list(struct store *st, const char *prefix, const char *start_after,
			      const char *continuation, int max_keys,
			      struct store_list_page *page, struct store_result *res)
{
	struct fs_store *fs = store_fs_begin(st, res);
	struct store_result scratch = STORE_RESULT_INIT;
	struct list_walk w = { 0 };
	char path[FS_KEY_MAX + 2 + 256], dir_key[FS_KEY_MAX + 2];
	const char *slash, *leaf = NULL;
	int data_fd = -1, meta_fd = -1;
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
	if (w.prefix_len > FS_KEY_MAX || store_fs_is_reserved(prefix))
		goto empty;
	/* Start in the deepest directory the prefix names in full. */
	slash = strrchr(prefix, '/');
	dir_len = slash ? (size_t)(slash - prefix) + 1 : 0;
	if (dir_len) {
		memcpy(dir_key, prefix, dir_len);
		memcpy(dir_key + dir_len, "x", 2); /* store_fs_open_key_dir stops before the leaf */
		if (!store_key_valid(dir_key, dir_len + 1))
			goto empty;
		code = store_fs_open_key_dir(fs->root_fd, dir_key, WALK_READ, &data_fd, &leaf, &scratch);
		if (code == STORE_NOT_FOUND)
			goto empty;
		if (code) {
			code = store_fs_fail(res, code, NULL, "%s", scratch.err_message);
			goto out;
		}
		if (store_fs_open_key_dir(fs->meta_fd, dir_key, WALK_READ, &meta_fd, &leaf, &scratch))
			meta_fd = -1;
	} else {
		data_fd = fcntl(fs->root_fd, F_DUPFD_CLOEXEC, 0);
		if (data_fd < 0) {
			code = store_fs_fail_io(res, "list", prefix, errno);
			goto out;
		}
		if (fs->meta_fd >= 0)
			meta_fd = fcntl(fs->meta_fd, F_DUPFD_CLOEXEC, 0);
	}
	memcpy(path, prefix, dir_len);
	path[dir_len] = '\0';
	code = list_walk_dir(&w, data_fd, meta_fd, path, dir_len);
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
	store_fs_close_fd(&data_fd);
	store_fs_close_fd(&meta_fd);
	return code;
}
