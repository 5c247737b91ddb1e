/* store_fs.c — the object store on a local directory (file:///DIR, and the
 * proxy's embedded ./fencegate-data). Key "a/b/c" is the file DIR/a/b/c
 * (store_fs_path.c names every other key); everything the backend keeps for
 * itself (temp files, per-key lock files, metadata sidecars) lives under
 * DIR/.fencegate/, a name no encoded key has. It gives S3's
 * conditional-write semantics between processes on one host (flock +
 * link/rename), and a write is one unit: after a crash at any point a
 * reader sees the old object with its metadata or the new one with its own.
 * It does not make a network file system safe and it never removes
 * directories it created.
 *
 * This file holds the results, the key rule, the per-key locks,
 * get/head/put/delete and opening the store; key names on disk and the walk
 * are store_fs_path.c, an object's file and sidecar store_fs_meta.c,
 * listing store_fs_list.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cJSON.h>

#include "store.h"
#include "store_fs_int.h"

__attribute__((format(printf, 4, 5)))
enum store_code store_fs_fail(struct store_result *res, enum store_code code,
			      const char *s3_code, const char *fmt, ...)
{
	va_list ap;

	res->code = code;
	if (s3_code)
		snprintf(res->err_code, sizeof(res->err_code), "%s", s3_code);
	va_start(ap, fmt);
	vsnprintf(res->err_message, sizeof(res->err_message), fmt, ap);
	va_end(ap);
	switch (code) {
	case STORE_NOT_FOUND: res->http_status = 404; break;
	case STORE_PRECONDITION_FAILED: res->http_status = 412; break;
	default: res->http_status = 0; break;
	}
	return code;
}

enum store_code store_fs_fail_io(struct store_result *res, const char *what,
				 const char *key, int err)
{
	/* out of descriptors is a busy server (S3's SlowDown), not a fault */
	return store_fs_fail(res, STORE_ERR_IO,
			     err == EMFILE || err == ENFILE ? "SlowDown" : "InternalError",
			     "%s \"%s\": %s", what, key ? key : "", strerror(err));
}

enum store_code store_fs_succeed(struct store_result *res, int http_status)
{
	res->code = STORE_OK;
	res->http_status = http_status;
	return STORE_OK;
}

static int64_t now_seconds(const struct fs_store *fs)
{
	int64_t ms = timesrc_wall_ms(fs->time);

	return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
}

/* Every call starts here: clear the result, count the request, date it. */
struct fs_store *store_fs_begin(struct store *st, struct store_result *res)
{
	struct fs_store *fs = (struct fs_store *)st;

	store_result_clear(res);
	st->requests++;
	res->attempts = 1;
	res->server_date = now_seconds(fs);
	return fs;
}

/* STORE_OK if key may be stored: 1 to 1024 bytes (any bytes but NUL). */
static enum store_code check_key(const char *key, struct store_result *res)
{
	if (!key || !*key)
		return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument", "no key given");
	if (strlen(key) > FS_KEY_MAX)
		return store_fs_fail(res, STORE_ERR_INVALID, "KeyTooLongError",
				     "refusing key: keys are at most 1024 bytes");
	return STORE_OK;
}

void store_fs_crash_point(int n)
{
	const char *v = getenv("FENCE_STORE_FS_CRASH");

	if (v && atoi(v) == n)
		_exit(86);
}

void store_fs_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* 1 if the version whose sidecar is json (NULL: none) has metadata
 * name equal to value, absent counting as "". */
static int meta_cond_holds(const cJSON *json, const char *name, const char *value)
{
	const cJSON *user = json ? cJSON_GetObjectItemCaseSensitive(json, "meta") : NULL;
	const cJSON *item = cJSON_IsObject(user) ? cJSON_GetObjectItemCaseSensitive(user, name) : NULL;
	const char *have = cJSON_IsString(item) ? item->valuestring : "";

	return strcmp(have, value ? value : "") == 0;
}

static uint64_t key_hash(const char *key)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *key; key++) {
		h ^= (unsigned char)*key;
		h *= 1099511628211ULL;
	}
	return h;
}

/* Takes the lock that serializes writers (exclusive) and readers (shared) of
 * key. Returns the lock's fd (close it to unlock); FS_NO_LOCK for a shared
 * lock on a store that cannot hold lock files (read-only), where readers go
 * on without one; -1 with res filled on failure. The lock file is opened
 * per call, so forked processes never share a lock through an inherited fd. */
int store_fs_lock_key(struct fs_store *fs, const char *key, int exclusive,
		      struct store_result *res)
{
	char name[16];
	int fd;

	if (fs->locks_fd < 0) {
		if (!exclusive)
			return FS_NO_LOCK;
		store_fs_fail(res, STORE_ERR_IO, "InternalError",
			      "store directory has no usable \"" FS_RESERVED "/locks\" (read-only?)");
		return -1;
	}
	snprintf(name, sizeof(name), "%02x", (unsigned)(key_hash(key) % FS_LOCK_FILES));
	fd = openat(fs->locks_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && !exclusive && (errno == EACCES || errno == EROFS)) {
		fd = openat(fs->locks_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return FS_NO_LOCK;
	}
	if (fd < 0) {
		store_fs_fail_io(res, "open lock file for key", key, errno);
		return -1;
	}
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
		if (errno == EINTR)
			continue;
		store_fs_fail_io(res, "lock key", key, errno);
		close(fd);
		return -1;
	}
	return fd;
}

void store_fs_unlock_key(int *fd)
{
	if (*fd >= 0)
		close(*fd); /* releases the flock */
	*fd = -1;
}

static int cmp_slot(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/* Locks are taken in ascending lock-file order, each file once: two writers
 * never wait on each other in a cycle, and a process never waits on itself. */
int store_fs_write_locks(struct fs_store *fs, const char *key, const struct fs_path *p,
			 int *fds, struct store_result *res)
{
	unsigned slots[FS_LOCKS_MAX];
	char name[16], anc[FS_KEY_MAX + 1];
	size_t n = 0, i, k = 0;

	if (fs->locks_fd < 0) {
		store_fs_fail(res, STORE_ERR_IO, "InternalError",
			      "store directory has no usable \"" FS_RESERVED "/locks\" (read-only?)");
		return -1;
	}
	slots[n++] = (unsigned)(key_hash(key) % FS_LOCK_FILES);
	for (i = 0; i + 1 < p->n && n < FS_LOCKS_MAX; i++) {
		if (p->kind[i] != FS_NAME_DIR)
			continue;
		memcpy(anc, key, p->key_end[i]);
		anc[p->key_end[i]] = '\0';
		slots[n++] = (unsigned)(key_hash(anc) % FS_LOCK_FILES);
	}
	qsort(slots, n, sizeof(slots[0]), cmp_slot);
	for (i = 0; i < n; i++) {
		int fd;

		if (i && slots[i] == slots[i - 1])
			continue;
		snprintf(name, sizeof(name), "%02x", slots[i]);
		fd = openat(fs->locks_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0) {
			store_fs_fail_io(res, "open lock file for key", key, errno);
			goto fail;
		}
		while (flock(fd, LOCK_EX) < 0) {
			if (errno == EINTR)
				continue;
			store_fs_fail_io(res, "lock key", key, errno);
			close(fd);
			goto fail;
		}
		fds[k++] = fd;
	}
	return (int)k;
fail:
	store_fs_write_unlock(fds, (int)k);
	return -1;
}

void store_fs_write_unlock(int *fds, int n)
{
	while (n > 0)
		close(fds[--n]);
}

static enum store_code fs_get_or_head(struct store *st, const char *key, enum fs_read want_body,
				      int *fd, struct store_result *res)
{
	struct fs_store *fs = store_fs_begin(st, res);
	struct fs_object obj = { 0 };
	struct fs_path p = { 0 };
	struct fs_place pl = { .dir_fd = -1, .obj_dir_fd = -1 };
	int lock_fd = -1;
	enum store_code code;

	code = check_key(key, res);
	if (code)
		goto out;
	if (store_fs_path_build(key, &p) < 0) {
		code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory");
		goto out;
	}
	lock_fd = store_fs_lock_key(fs, key, 0, res);
	if (lock_fd == -1) {
		code = res->code;
		goto out;
	}
	code = store_fs_locate(fs, key, &p, WALK_READ, &pl, res);
	if (code)
		goto out;
	code = store_fs_object_read(fs, pl.obj_dir_fd, pl.obj_name, key, want_body, &obj, res);
	if (code)
		goto out;
	snprintf(res->etag, sizeof(res->etag), "%s", obj.etag);
	res->last_modified = obj.last_modified;
	res->content_length = obj.size;
	if (want_body == FS_READ_BODY) {
		res->body = obj.body;
		res->body_len = (size_t)obj.size;
		obj.body = NULL;
	} else if (want_body == FS_READ_FD) {
		*fd = obj.fd;
		obj.has_fd = 0;
	}
	/* no sidecar (a file dropped in by hand): content type "" = unknown */
	if (obj.json) {
		code = store_fs_result_take_meta(obj.json, key, res);
		if (code)
			goto out;
	}
	code = store_fs_succeed(res, 200);
out:
	store_fs_object_free(&obj);
	store_fs_place_close(&pl);
	store_fs_path_free(&p);
	store_fs_unlock_key(&lock_fd);
	return code;
}

static enum store_code fs_get(struct store *st, const char *key, struct store_result *res)
{
	return fs_get_or_head(st, key, FS_READ_BODY, NULL, res);
}

static enum store_code fs_head(struct store *st, const char *key, struct store_result *res)
{
	return fs_get_or_head(st, key, FS_READ_HEAD, NULL, res);
}

static enum store_code fs_get_file(struct store *st, const char *key, int *fd,
				   struct store_result *res)
{
	*fd = -1;
	return fs_get_or_head(st, key, FS_READ_FD, fd, res);
}

/* The version a write replaces: *exists, and in cur its ETag, metadata and
 * which sidecar describes it. */
static enum store_code current_version(struct fs_store *fs, const struct fs_place *pl,
				       const char *key, int *exists, struct fs_object *cur,
				       struct store_result *res)
{
	struct stat sb;

	*exists = 0;
	if (fstatat(pl->obj_dir_fd, pl->obj_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return STORE_OK;
		return store_fs_fail_io(res, "stat object", key, errno);
	}
	if (!S_ISREG(sb.st_mode))
		return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
				     "key \"%s\" is a symlink or special file in the store directory; "
				     "refusing to touch it", key);
	*exists = 1;
	return store_fs_object_read(fs, pl->obj_dir_fd, pl->obj_name, key, 0, cur, res);
}

/* The conditions on the current version cur: If-Match if_match (NULL
 * none), and metadata meta_name equal to meta_value (NULL none). STORE_OK
 * or STORE_PRECONDITION_FAILED. */
static enum store_code check_version(const char *key, const struct fs_object *cur,
				     const char *if_match, const char *meta_name,
				     const char *meta_value, struct store_result *res)
{
	if (if_match && !store_etag_matches(if_match, cur->etag))
		return store_fs_fail(res, STORE_PRECONDITION_FAILED, "PreconditionFailed",
				     "object \"%s\" is at ETag %s, not %s", key, cur->etag, if_match);
	if (meta_value && !meta_cond_holds(cur->json, meta_name, meta_value))
		return store_fs_fail(res, STORE_PRECONDITION_FAILED, "PreconditionFailed",
				     "object \"%s\": its metadata \"%s\" is not \"%s\"", key,
				     meta_name, meta_value);
	return STORE_OK;
}

/* Creates (If-None-Match "*": link, so an existing key is never replaced) or
 * replaces (rename) the object, under the key's exclusive lock so that
 * conditions and readers see one consistent version. The bytes and the
 * sidecar are written first; the sidecar describing the current object is
 * kept as the backup until the new object is renamed in (crash points 1-4). */
static enum store_code fs_put(struct store *st, const char *key, const void *body, size_t len,
			      const struct store_put_opts *opts, struct store_result *res)
{
	static const struct store_put_opts no_opts = { 0 };
	struct fs_store *fs;
	struct fs_object current = { 0 };
	struct fs_path p = { 0 };
	struct fs_place pl = { .dir_fd = -1, .obj_dir_fd = -1 };
	char obj_tmp[96] = "", etag[STORE_ETAG_MAX];
	char ident[FS_IDENT_MAX], if_match[STORE_ETAG_MAX] = "";
	char *meta_text = NULL, *if_meta_value = NULL;
	int locks[FS_LOCKS_MAX], nlocks = 0, exists = 0;
	int64_t now;
	size_t i;
	enum store_code code;

	if (!opts)
		opts = &no_opts;
	/* before store_fs_begin() clears res: the caller may pass res->etag */
	if (opts->etag)
		snprintf(if_match, sizeof(if_match), "%s", opts->etag);
	if (opts->if_meta.name)
		if_meta_value = strdup(opts->if_meta.value ? opts->if_meta.value : "");
	fs = store_fs_begin(st, res);
	now = res->server_date;
	code = check_key(key, res);
	if (code)
		goto out;
	if ((opts->if_meta.name && !if_meta_value) || store_fs_path_build(key, &p) < 0) {
		code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory");
		goto out;
	}
	if (opts->if_meta.name && opts->cond == STORE_COND_IF_NONE_MATCH_ANY) {
		code = store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
				     "a metadata condition needs an existing object, not If-None-Match");
		goto out;
	}
	if ((!body && len) || (opts->files && (body || len))) {
		code = store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
				     "a body from memory or from files, not %zu bytes of neither or both", len);
		goto out;
	}
	if (opts->object_etag && strlen(opts->object_etag) >= STORE_ETAG_MAX) {
		code = store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument", "ETag too long");
		goto out;
	}
	if (opts->cond == STORE_COND_IF_MATCH && !*if_match) {
		code = store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument", "If-Match without an ETag");
		goto out;
	}
	code = store_fs_check_user_meta(opts, res);
	if (code)
		goto out;
	if (!opts->files && store_fs_etag_of_buffer(body, len, etag) < 0) {
		code = store_fs_fail(res, STORE_ERR_IO, "InternalError", "computing MD5 failed");
		goto out;
	}
	for (i = 0; i < opts->nfiles && opts->files; i++)
		len += (size_t)opts->files[i].len;
	/* The bytes go to disk before the lock is taken: the lock covers only
	 * the check and the renames. */
	code = store_fs_temp_write(fs, body, len, opts->files, opts->nfiles,
				   opts->adopt && opts->object_etag, now, key, obj_tmp,
				   sizeof(obj_tmp), ident, etag, res);
	if (code)
		goto out;
	if (opts->object_etag)
		snprintf(etag, sizeof(etag), "%s", opts->object_etag);
	nlocks = store_fs_write_locks(fs, key, &p, locks, res);
	if (nlocks < 0) {
		nlocks = 0;
		code = res->code;
		goto out;
	}
	code = store_fs_locate(fs, key, &p, WALK_CREATE, &pl, res);
	if (code)
		goto out;
	code = current_version(fs, &pl, key, &exists, &current, res);
	if (code)
		goto out;
	if (opts->cond == STORE_COND_IF_NONE_MATCH_ANY && exists) {
		code = store_fs_fail(res, STORE_PRECONDITION_FAILED, "PreconditionFailed",
				     "object \"%s\" already exists (If-None-Match: *)", key);
		goto out;
	}
	if ((opts->cond == STORE_COND_IF_MATCH || if_meta_value) && !exists) {
		code = store_fs_fail(res, STORE_NOT_FOUND, "NoSuchKey",
				     "no object \"%s\" to replace (If-Match)", key);
		goto out;
	}
	code = check_version(key, &current, opts->cond == STORE_COND_IF_MATCH ? if_match : NULL,
			     opts->if_meta.name, if_meta_value, res);
	if (code)
		goto out;
	meta_text = store_fs_meta_render(key, etag, ident, len, now, opts);
	if (!meta_text) {
		code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory writing metadata of \"%s\"", key);
		goto out;
	}
	store_fs_crash_point(1);
	code = store_fs_sidecar_commit(fs, key, meta_text, exists ? current.side : FS_SIDE_NONE,
				       now, res);
	if (code)
		goto out;
	if (opts->cond == STORE_COND_IF_NONE_MATCH_ANY) {
		if (linkat(fs->tmp_fd, obj_tmp, pl.obj_dir_fd, pl.obj_name, 0) < 0) {
			code = errno == EEXIST
				? store_fs_fail(res, STORE_PRECONDITION_FAILED, "PreconditionFailed",
						"object \"%s\" already exists (If-None-Match: *)", key)
				: store_fs_fail_io(res, "create object", key, errno);
			goto out;
		}
	} else {
		if (renameat(fs->tmp_fd, obj_tmp, pl.obj_dir_fd, pl.obj_name) < 0) {
			code = errno == EISDIR || errno == ENOTEMPTY
				? store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
						"key \"%s\": a directory is in the way", key)
				: store_fs_fail_io(res, "replace object", key, errno);
			goto out;
		}
		obj_tmp[0] = '\0';
	}
	if (fsync(pl.obj_dir_fd) < 0) {
		code = store_fs_fail_io(res, "sync directory of", key, errno);
		goto out;
	}
	store_fs_crash_point(4);
	snprintf(res->etag, sizeof(res->etag), "%s", etag);
	res->last_modified = now;
	code = store_fs_succeed(res, 200);
out:
	store_fs_temp_remove(fs, obj_tmp);
	free(meta_text);
	free(if_meta_value);
	store_fs_object_free(&current);
	store_fs_place_close(&pl);
	store_fs_path_free(&p);
	store_fs_write_unlock(locks, nlocks);
	return code;
}

/* Deletes the object (and its sidecars); version "null" is the object, any
 * other version is refused. A missing key is STORE_OK (204) when
 * unconditional, STORE_NOT_FOUND with a condition, as S3 answers. */
static enum store_code fs_del_opts(struct store *st, const char *key,
				   const struct store_delete_opts *dopts, struct store_result *res)
{
	static const struct store_delete_opts no_opts = { 0 };
	struct fs_store *fs;
	char if_match_buf[STORE_ETAG_MAX];
	const char *if_match = NULL;
	char *if_meta_value = NULL;
	struct fs_object current = { 0 };
	struct fs_path p = { 0 };
	struct fs_place pl = { .dir_fd = -1, .obj_dir_fd = -1 };
	int lock_fd = -1, exists = 0;
	enum store_code code;

	if (!dopts)
		dopts = &no_opts;
	/* before store_fs_begin() clears res: the caller may pass res->etag */
	if (dopts->if_match) {
		snprintf(if_match_buf, sizeof(if_match_buf), "%s", dopts->if_match);
		if_match = if_match_buf;
	}
	if (dopts->if_meta.name)
		if_meta_value = strdup(dopts->if_meta.value ? dopts->if_meta.value : "");
	fs = store_fs_begin(st, res);
	code = check_key(key, res);
	if (code)
		goto out;
	if (dopts->version_id && strcmp(dopts->version_id, "null") != 0) {
		code = store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument", "this store keeps "
				     "one version of \"%s\", \"null\"", key);
		goto out;
	}
	if ((dopts->if_meta.name && !if_meta_value) || store_fs_path_build(key, &p) < 0) {
		code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory");
		goto out;
	}
	if (if_match && !*if_match) {
		code = store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument", "If-Match without an ETag");
		goto out;
	}
	lock_fd = store_fs_lock_key(fs, key, 1, res);
	if (lock_fd < 0) {
		code = res->code;
		goto out;
	}
	code = store_fs_locate(fs, key, &p, WALK_READ, &pl, res);
	if (code == STORE_NOT_FOUND)
		goto missing;
	if (code)
		goto out;
	code = current_version(fs, &pl, key, &exists, &current, res);
	if (code == STORE_NOT_FOUND || (code == STORE_OK && !exists))
		goto missing;
	if (code)
		goto out;
	code = check_version(key, &current, if_match, dopts->if_meta.name, if_meta_value, res);
	if (code)
		goto out;
	if (unlinkat(pl.obj_dir_fd, pl.obj_name, 0) < 0) {
		if (errno == ENOENT)
			goto missing;
		code = store_fs_fail_io(res, "delete object", key, errno);
		goto out;
	}
	if (fsync(pl.obj_dir_fd) < 0) {
		code = store_fs_fail_io(res, "sync directory of", key, errno);
		goto out;
	}
	/* a leftover sidecar is ignored: no file matches it */
	store_fs_sidecar_remove(fs, key);
	code = store_fs_succeed(res, 204);
	goto out;
missing:
	store_result_clear(res);
	res->attempts = 1;
	res->server_date = now_seconds(fs);
	if (if_match || if_meta_value)
		code = store_fs_fail(res, STORE_NOT_FOUND, "NoSuchKey", "no object \"%s\" to delete (If-Match)", key);
	else
		code = store_fs_succeed(res, 204);
out:
	free(if_meta_value);
	store_fs_object_free(&current);
	store_fs_place_close(&pl);
	store_fs_path_free(&p);
	store_fs_unlock_key(&lock_fd);
	return code;
}

static enum store_code fs_del(struct store *st, const char *key, const char *if_match,
			      struct store_result *res)
{
	struct store_delete_opts opts = { .if_match = if_match };

	return fs_del_opts(st, key, &opts, res);
}

static void fs_close(struct store *st)
{
	struct fs_store *fs = (struct fs_store *)st;

	if (!fs)
		return;
	store_fs_close_fd(&fs->root_fd);
	store_fs_close_fd(&fs->tmp_fd);
	store_fs_close_fd(&fs->side_fd);
	store_fs_close_fd(&fs->legacy_fd);
	store_fs_close_fd(&fs->locks_fd);
	free(fs);
}

static const struct store_ops fs_ops = {
	.scheme = "file",
	.get = fs_get,
	.head = fs_head,
	.put = fs_put,
	.del = fs_del,
	.list = store_fs_list,
	.close = fs_close,
};

static const struct store_ext_ops fs_ext_ops = {
	.get_file = fs_get_file,
	.del_opts = fs_del_opts,
};

/* Opens (creating if needed) the reserved sub-directory name of parent_fd,
 * refusing a symlink. Returns the fd or -1. */
static int open_reserved_dir(int parent_fd, const char *name)
{
	if (mkdirat(parent_fd, name, 0755) == 0)
		fsync(parent_fd);
	return openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

struct store *store_fs_open(const struct store_config *cfg, const char *dir,
			    char *err, size_t errlen)
{
	struct fs_store *fs = NULL;
	int reserved_fd = -1;

	if (!dir || !*dir) {
		snprintf(err, errlen, "no store directory given");
		return NULL;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fs->st.ops = &fs_ops;
	fs->st.ext = &fs_ext_ops;
	fs->root_fd = fs->tmp_fd = fs->side_fd = fs->legacy_fd = fs->locks_fd = -1;
	fs->time = cfg && cfg->time ? cfg->time : timesrc_system();
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create store directory \"%s\": %s", dir, strerror(errno));
		goto fail;
	}
	/* the store directory itself must not be a symlink (a bucket planted
	 * as one would point the store anywhere) */
	fs->root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fs->root_fd < 0) {
		snprintf(err, errlen, "cannot open store directory \"%s\": %s%s", dir, strerror(errno),
			 errno == ELOOP || errno == ENOTDIR ? " (it must be a real directory, not a symlink)" : "");
		goto fail;
	}
	/* A read-only store still serves reads: the reserved area is optional
	 * until the first write, which then names what is missing. */
	reserved_fd = open_reserved_dir(fs->root_fd, FS_RESERVED);
	if (reserved_fd < 0 && errno != EACCES && errno != EROFS && errno != ENOENT) {
		snprintf(err, errlen, "cannot open \"%s/" FS_RESERVED "\": %s%s", dir, strerror(errno),
			 errno == ENOTDIR || errno == ELOOP ? " (it must be a real directory)" : "");
		goto fail;
	}
	if (reserved_fd >= 0) {
		fs->tmp_fd = open_reserved_dir(reserved_fd, "tmp");
		fs->side_fd = open_reserved_dir(reserved_fd, "sidecars");
		fs->legacy_fd = openat(reserved_fd, "meta", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		fs->locks_fd = open_reserved_dir(reserved_fd, "locks");
		close(reserved_fd);
		/* what writers that died left behind */
		store_fs_recover_moves(fs);
		store_fs_sweep_temps(fs, now_seconds(fs), cfg->starting);
	}
	return &fs->st;
fail:
	fs_close(&fs->st);
	return NULL;
}
