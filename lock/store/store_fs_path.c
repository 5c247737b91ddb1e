/* store_fs_path.c — how the local-directory store names a key on disk, and
 * the walk to it. Any S3 key (1 to 1024 bytes, no NUL) has a file: the key
 * is split at '/', each segment becomes one directory-entry name, with only
 * what a file name cannot carry escaped as %XX ('%' itself, control bytes,
 * a leading '.', so "." and ".." and ".fencegate" are ordinary keys), an
 * empty segment named "%", and a segment longer than one name split into
 * continuation directories ("CHUNK%+"). So "a/b.txt" is the file a/b.txt,
 * as before. When a key is also the parent of others ("a/b" and "a/b/c"),
 * its object lives inside the directory as "a/b/%@"; a plain file in the
 * way of a new directory is moved there first (store_fs_convert, under
 * the lock of the key it holds). No encoded segment is ever "%", "%@",
 * "%t" or ends in "%+", so those names are the store's own.
 *
 * It does not lock, read objects or decide conditions (store_fs.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "store_fs_int.h"

#include "wire/pct.h"

static int needs_escape(unsigned char c, int first)
{
	return c == '%' || c < 0x20 || c == 0x7f || (first && c == '.');
}

/* Appends the name of raw[0..n) (a chunk starting a name) to out. */
static size_t encode_chunk(const char *raw, size_t n, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, o = 0;

	if (n == 0) {
		memcpy(out, FS_NAME_EMPTY, sizeof(FS_NAME_EMPTY) - 1);
		return sizeof(FS_NAME_EMPTY) - 1;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)raw[i];

		if (needs_escape(c, i == 0)) {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		} else {
			out[o++] = (char)c;
		}
	}
	return o;
}

/* The longest start of seg[0..n) whose name fits FS_NAME_LIMIT. Greedy, so
 * that no plain name in a directory starts with a continuation chunk plus
 * the byte that made it overflow (which keeps listings in key order). */
static size_t chunk_len(const char *seg, size_t n)
{
	size_t i, enc = 0;

	for (i = 0; i < n; i++) {
		size_t w = needs_escape((unsigned char)seg[i], i == 0) ? 3 : 1;

		if (enc + w > FS_NAME_LIMIT)
			break;
		enc += w;
	}
	return i;
}

void store_fs_path_free(struct fs_path *p)
{
	free(p->buf);
	free(p->name);
	free(p->kind);
	free(p->key_end);
	memset(p, 0, sizeof(*p));
}

int store_fs_path_build(const char *key, struct fs_path *p)
{
	size_t klen = strlen(key), cap_names = klen + 2, used = 0, i = 0;

	memset(p, 0, sizeof(*p));
	/* each raw byte takes at most 3 bytes; each name adds a suffix and NUL */
	p->buf = malloc(3 * klen + cap_names * (sizeof(FS_NAME_CONT_SUFFIX) + 2) + 1);
	p->name = calloc(cap_names, sizeof(*p->name));
	p->kind = calloc(cap_names, sizeof(*p->kind));
	p->key_end = calloc(cap_names, sizeof(*p->key_end));
	if (!p->buf || !p->name || !p->kind || !p->key_end) {
		store_fs_path_free(p);
		return -1;
	}
	for (;;) {
		const char *slash = strchr(key + i, '/');
		size_t seg_end = slash ? (size_t)(slash - key) : klen, pos = i;
		int last_seg = slash == NULL;

		do {
			size_t n = chunk_len(key + pos, seg_end - pos);
			int more = pos + n < seg_end;

			p->name[p->n] = p->buf + used;
			used += encode_chunk(key + pos, n, p->buf + used);
			if (more) {
				memcpy(p->buf + used, FS_NAME_CONT_SUFFIX, sizeof(FS_NAME_CONT_SUFFIX) - 1);
				used += sizeof(FS_NAME_CONT_SUFFIX) - 1;
				p->kind[p->n] = FS_NAME_CONT;
			} else {
				p->kind[p->n] = last_seg ? FS_NAME_LEAF : FS_NAME_DIR;
			}
			p->buf[used++] = '\0';
			p->key_end[p->n] = seg_end;
			p->n++;
			pos += n;
		} while (pos < seg_end);
		if (last_seg)
			break;
		i = seg_end + 1;
	}
	return 0;
}

/* Appends the decoded name to out (at most FS_KEY_MAX + 1 bytes in all).
 * Returns the new length, or -1 when name is not one this store makes. */
static long decode_name(const char *name, size_t n, char *out, size_t at)
{
	size_t i;

	if (n == sizeof(FS_NAME_EMPTY) - 1 && memcmp(name, FS_NAME_EMPTY, n) == 0)
		return (long)at;
	for (i = 0; i < n; i++) {
		int c = (unsigned char)name[i];

		if (c == '%') {
			if (i + 2 >= n || hex_value((unsigned char)name[i + 1]) < 0 ||
			    hex_value((unsigned char)name[i + 2]) < 0)
				return -1;
			c = hex_value((unsigned char)name[i + 1]) * 16 + hex_value((unsigned char)name[i + 2]);
			if (c == 0 || c == '/')
				return -1;
			i += 2;
		} else if (i == 0 && c == '.') {
			return -1;
		}
		if (at >= FS_KEY_MAX + 1)
			return -1;
		out[at++] = (char)c;
	}
	return (long)at;
}

int store_fs_name_decode(const char *name, char *out, size_t at, int *kind)
{
	size_t n = strlen(name), sl = sizeof(FS_NAME_CONT_SUFFIX) - 1;
	long r;

	if (strcmp(name, FS_NAME_OBJECT) == 0 || strcmp(name, FS_NAME_MOVING) == 0)
		return -1;
	*kind = FS_NAME_LEAF;
	if (n > sl && memcmp(name + n - sl, FS_NAME_CONT_SUFFIX, sl) == 0) {
		*kind = FS_NAME_CONT;
		n -= sl;
	}
	r = decode_name(name, n, out, at);
	if (r < 0)
		return -1;
	out[r] = '\0';
	return (int)r;
}

/* Opens (or with create makes) directory name in fd, never following a
 * symlink. Returns the fd, or -1 with errno (ENOTDIR: something else is in
 * the way). */
static int open_dir_at(int fd, const char *name, int create)
{
	int next;

	if (create && mkdirat(fd, name, 0755) == 0)
		fsync(fd);
	next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (next < 0 && errno == ELOOP)
		errno = ENOTDIR;
	return next;
}

enum store_code store_fs_walk(struct fs_store *fs, const char *key, const struct fs_path *p,
			      enum walk_mode mode, int *dir_fd, struct store_result *res)
{
	int fd, next;
	size_t i;
	enum store_code code;

	*dir_fd = -1;
	fd = fcntl(fs->root_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return store_fs_fail_io(res, "open directory for key", key, errno);
	for (i = 0; i + 1 < p->n; i++) {
		struct stat sb;

		next = open_dir_at(fd, p->name[i], mode == WALK_CREATE);
		if (next < 0 && errno == ENOTDIR && mode == WALK_CREATE && p->kind[i] == FS_NAME_DIR &&
		    fstatat(fd, p->name[i], &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode)) {
			/* an object of the key that ends here: into its new
			 * directory (the caller holds that key's lock) */
			code = store_fs_convert(fs, fd, p->name[i], key, p->key_end[i], res);
			if (code) {
				close(fd);
				return code;
			}
			next = open_dir_at(fd, p->name[i], 0);
		}
		if (next < 0) {
			int e = errno;

			if (fstatat(fd, p->name[i], &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode)) {
				close(fd);
				return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
						     "key \"%s\": refusing to follow a symlink in the store directory", key);
			}
			close(fd);
			if (mode == WALK_READ && (e == ENOENT || e == ENOTDIR))
				return store_fs_fail(res, STORE_NOT_FOUND, "NoSuchKey", "no object \"%s\"", key);
			if (e == ENOTDIR)
				return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
						     "key \"%s\": something that is not a directory is in the way", key);
			return store_fs_fail_io(res, "open directory for key", key, e);
		}
		close(fd);
		fd = next;
	}
	*dir_fd = fd;
	return STORE_OK;
}

enum store_code store_fs_locate(struct fs_store *fs, const char *key, const struct fs_path *p,
				enum walk_mode mode, struct fs_place *pl, struct store_result *res)
{
	const char *leaf = p->name[p->n - 1];
	struct stat sb;
	enum store_code code;

	pl->dir_fd = pl->obj_dir_fd = -1;
	pl->in_dir = 0;
	code = store_fs_walk(fs, key, p, mode, &pl->dir_fd, res);
	if (code)
		return code;
	pl->leaf = leaf;
	pl->obj_dir_fd = fcntl(pl->dir_fd, F_DUPFD_CLOEXEC, 0);
	if (pl->obj_dir_fd < 0)
		return store_fs_fail_io(res, "open directory for key", key, errno);
	pl->obj_name = leaf;
	if (fstatat(pl->dir_fd, leaf, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode)) {
		int fd = openat(pl->dir_fd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0)
			return store_fs_fail_io(res, "open directory for key", key, errno);
		close(pl->obj_dir_fd);
		pl->obj_dir_fd = fd;
		pl->obj_name = FS_NAME_OBJECT;
		pl->in_dir = 1;
	}
	return STORE_OK;
}

void store_fs_place_close(struct fs_place *pl)
{
	store_fs_close_fd(&pl->dir_fd);
	store_fs_close_fd(&pl->obj_dir_fd);
}

/* ---- objects moved into their own directory ----------------------------- */

static int write_marker(int dir_fd, const char *text)
{
	size_t len = strlen(text), off = 0;
	int fd = openat(dir_fd, FS_NAME_MOVING, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	if (fsync(fd) < 0) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* The move, step by step (crash points 10..12): a temp directory holding
 * the key's name (FS_NAME_MOVING), the object file into it, the directory
 * into the object's place, the marker gone. */
enum store_code store_fs_convert(struct fs_store *fs, int parent_fd, const char *name,
				 const char *key, size_t key_end, struct store_result *res)
{
	char tname[96], anc[FS_KEY_MAX + 1];
	int tfd = -1, tries;
	enum store_code code = STORE_OK;

	if (fs->tmp_fd < 0)
		return store_fs_fail(res, STORE_ERR_IO, "InternalError",
				     "store directory has no usable \"" FS_RESERVED "/tmp\" (read-only?)");
	memcpy(anc, key, key_end);
	anc[key_end] = '\0';
	for (tries = 0; tries < 100; tries++) {
		snprintf(tname, sizeof(tname), "m%ld-%lx-%lu", (long)getpid(),
			 (unsigned long)(uintptr_t)fs, fs->tmp_seq++);
		if (mkdirat(fs->tmp_fd, tname, 0755) == 0 || errno != EEXIST)
			break;
	}
	tfd = openat(fs->tmp_fd, tname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		return store_fs_fail_io(res, "make a directory for the object of", anc, errno);
	if (write_marker(tfd, anc) < 0 || fsync(tfd) < 0) {
		code = store_fs_fail_io(res, "make a directory for the object of", anc, errno);
		goto undo;
	}
	store_fs_crash_point(10);
	if (renameat(parent_fd, name, tfd, FS_NAME_OBJECT) < 0) {
		code = store_fs_fail_io(res, "move the object of", anc, errno);
		goto undo;
	}
	if (fsync(tfd) < 0 || fsync(parent_fd) < 0) {
		code = store_fs_fail_io(res, "sync the move of", anc, errno);
		goto back;
	}
	store_fs_crash_point(11);
	if (renameat(fs->tmp_fd, tname, parent_fd, name) < 0) {
		code = store_fs_fail_io(res, "move the object of", anc, errno);
		goto back;
	}
	fsync(parent_fd);
	fsync(fs->tmp_fd);
	store_fs_crash_point(12);
	unlinkat(tfd, FS_NAME_MOVING, 0);
	close(tfd);
	return STORE_OK;
back:
	renameat(tfd, FS_NAME_OBJECT, parent_fd, name);
undo:
	unlinkat(tfd, FS_NAME_MOVING, 0);
	close(tfd);
	unlinkat(fs->tmp_fd, tname, AT_REMOVEDIR);
	return code;
}

static int pid_dead(long pid)
{
	return pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* Puts the object a dead writer left in temp directory tname back in its
 * key's place, unless a newer object took it; then removes tname. */
static void recover_one(struct fs_store *fs, const char *tname)
{
	struct store_result scratch = STORE_RESULT_INIT;
	struct fs_path p = { 0 };
	char key[FS_KEY_MAX + 2];
	int tfd, dir_fd = -1, lock_fd = -1, fd;
	ssize_t n = -1;
	struct stat sb;

	tfd = openat(fs->tmp_fd, tname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		return;
	fd = openat(tfd, FS_NAME_MOVING, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, key, FS_KEY_MAX + 1);
		close(fd);
	}
	if (n <= 0 || n > FS_KEY_MAX || fstatat(tfd, FS_NAME_OBJECT, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		goto remove; /* died before the object moved */
	key[n] = '\0';
	if (strlen(key) != (size_t)n || store_fs_path_build(key, &p) < 0)
		goto remove;
	/* A move happens wholly under the lock of the key it moves: once we
	 * hold it, a directory still in tmp is a dead writer's (whatever pid
	 * namespace it ran in). Look again under the lock. */
	lock_fd = store_fs_lock_key(fs, key, 1, &scratch);
	if (lock_fd < 0)
		goto out;
	close(tfd);
	tfd = openat(fs->tmp_fd, tname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		goto out; /* its writer finished it */
	if (fstatat(tfd, FS_NAME_OBJECT, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		goto remove;
	if (store_fs_walk(fs, key, &p, WALK_READ, &dir_fd, &scratch) != STORE_OK)
		goto remove;
	unlinkat(tfd, FS_NAME_MOVING, 0);
	if (fstatat(dir_fd, p.name[p.n - 1], &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		if (renameat(fs->tmp_fd, tname, dir_fd, p.name[p.n - 1]) == 0) {
			fsync(dir_fd);
			goto out; /* the move, finished */
		}
	} else if (S_ISDIR(sb.st_mode)) {
		int sub = openat(dir_fd, p.name[p.n - 1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (sub >= 0) {
			if (renameat2(tfd, FS_NAME_OBJECT, sub, FS_NAME_OBJECT, RENAME_NOREPLACE) == 0)
				fsync(sub);
			close(sub);
		}
	} /* else a newer object is there: the old one goes */
remove:
	unlinkat(tfd, FS_NAME_MOVING, 0);
	unlinkat(tfd, FS_NAME_OBJECT, 0);
	unlinkat(fs->tmp_fd, tname, AT_REMOVEDIR);
out:
	store_fs_close_fd(&tfd);
	store_fs_close_fd(&dir_fd);
	store_fs_unlock_key(&lock_fd);
	store_fs_path_free(&p);
	store_result_clear(&scratch);
}

void store_fs_recover_moves(struct fs_store *fs)
{
	struct dirent *de;
	DIR *dir;
	int fd;

	if (fs->tmp_fd < 0 || fs->locks_fd < 0)
		return;
	fd = openat(fs->tmp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] == 'm' && pid_dead(strtol(de->d_name + 1, NULL, 10)))
			recover_one(fs, de->d_name);
	closedir(dir);
}
