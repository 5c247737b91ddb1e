/* store_fs_meta.c — one object of the local-directory store on disk: the
 * file's bytes and ETag (MD5), its sidecar (ETag, identity, size,
 * Last-Modified, content type, headers, user metadata) at
 * DIR/.fencegate/sidecars/HH/SHA256(key), and whether the sidecar still
 * describes that very file; the sidecar's commit, which keeps the one that
 * describes the current file as HASH~ until the new file is in place; the
 * fsynced temp files a write starts from, and sweeping those of writers
 * that died. It takes no key locks and does not walk key paths: the callers
 * in store_fs.c and store_fs_list.c hold the key's lock and open its
 * directories. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "store.h"
#include "store_fs_int.h"

#include "wire/pct.h"

/* What the sidecar says about one object. valid = it was read and parsed.
 * ident names the very file the sidecar describes: its inode and its mtime,
 * whose nanoseconds the writer sets to a random tag, so that neither a file
 * replaced by hand nor a reused inode passes for it. */
struct fs_meta {
	int valid;
	char etag[STORE_ETAG_MAX];
	char ident[FS_IDENT_MAX];
	int64_t size;
	int64_t last_modified;
	cJSON *json;               /* owns the parsed sidecar, for user metadata */
};

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void etag_from_digest(const unsigned char *md, unsigned int mdlen,
			     char etag[STORE_ETAG_MAX])
{
	etag[0] = '"';
	hex_encode(md, mdlen, etag + 1);
	etag[1 + 2 * mdlen] = '"';
	etag[2 + 2 * mdlen] = '\0';
}

int store_fs_etag_of_buffer(const void *data, size_t len, char etag[STORE_ETAG_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data ? data : "", len, md, &mdlen, EVP_md5(), NULL))
		return -1;
	etag_from_digest(md, mdlen, etag);
	return 0;
}

/* The MD5 of the file ranges into etag, copying them to out_fd unless it
 * is -1. Returns 0 or -1 with errno (EIO: a range ended early). */
static int md5_ranges(int out_fd, const struct store_file_range *files, size_t nfiles,
		      char etag[STORE_ETAG_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char *buf = malloc(1 << 20);
	size_t i;
	int rc = -1;

	if (!ctx || !buf || !EVP_DigestInit_ex(ctx, EVP_md5(), NULL)) {
		errno = ENOMEM;
		goto out;
	}
	for (i = 0; i < nfiles; i++) {
		int64_t done = 0;

		while (done < files[i].len) {
			size_t want = (size_t)(files[i].len - done) < (1u << 20)
				? (size_t)(files[i].len - done) : (1u << 20);
			ssize_t n = pread(files[i].fd, buf, want, (off_t)(files[i].offset + done));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				if (n == 0)
					errno = EIO;
				goto out;
			}
			if ((out_fd >= 0 && write_all(out_fd, buf, (size_t)n) < 0) ||
			    !EVP_DigestUpdate(ctx, buf, (size_t)n))
				goto out;
			done += n;
		}
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen)) {
		errno = EIO;
		goto out;
	}
	etag_from_digest(md, mdlen, etag);
	rc = 0;
out:
	free(buf);
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* MD5 of what fd (a regular file of size bytes) holds. 0, or -1 with errno. */
static int etag_of_fd(int fd, int64_t size, char etag[STORE_ETAG_MAX])
{
	struct store_file_range whole = { fd, 0, size };

	return md5_ranges(-1, &whole, 1, etag);
}

/* Reads a whole small file at dir_fd/name into a NUL-terminated buffer.
 * Returns NULL with errno set (EFBIG when over max). */
static char *read_small_file(int dir_fd, const char *name, size_t max, size_t *len)
{
	struct stat sb;
	char *buf = NULL;
	size_t got = 0;
	int fd;

	fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) < 0)
		goto fail;
	if (!S_ISREG(sb.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if ((uint64_t)sb.st_size > max) {
		errno = EFBIG;
		goto fail;
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf)
		goto fail;
	while (got < (size_t)sb.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)sb.st_size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*len = got;
	close(fd);
	return buf;
fail:
	{
		int e = errno;

		free(buf);
		close(fd);
		errno = e;
	}
	return NULL;
}

/* Reads a sidecar; m->valid stays 0 when it is missing or unreadable, or
 * (key not NULL) names another key. */
static void meta_read(int meta_dir_fd, const char *leaf, const char *key, struct fs_meta *m)
{
	cJSON *json = NULL, *item;
	char *text = NULL;
	size_t len = 0;

	memset(m, 0, sizeof(*m));
	if (meta_dir_fd < 0)
		return;
	text = read_small_file(meta_dir_fd, leaf, FS_META_FILE_MAX, &len);
	if (!text)
		return;
	json = cJSON_ParseWithLength(text, len);
	free(text);
	if (!json)
		return;
	item = cJSON_GetObjectItemCaseSensitive(json, "key");
	if (key && (!cJSON_IsString(item) || strcmp(item->valuestring, key) != 0))
		goto bad;
	item = cJSON_GetObjectItemCaseSensitive(json, "etag");
	if (!cJSON_IsString(item) || strlen(item->valuestring) >= STORE_ETAG_MAX)
		goto bad;
	snprintf(m->etag, sizeof(m->etag), "%s", item->valuestring);
	item = cJSON_GetObjectItemCaseSensitive(json, "ident");
	if (!cJSON_IsString(item) || strlen(item->valuestring) >= FS_IDENT_MAX)
		goto bad;
	snprintf(m->ident, sizeof(m->ident), "%s", item->valuestring);
	item = cJSON_GetObjectItemCaseSensitive(json, "size");
	if (!cJSON_IsNumber(item))
		goto bad;
	m->size = (int64_t)item->valuedouble;
	item = cJSON_GetObjectItemCaseSensitive(json, "lastModified");
	if (!cJSON_IsNumber(item))
		goto bad;
	m->last_modified = (int64_t)item->valuedouble;
	m->json = json;
	m->valid = 1;
	return;
bad:
	cJSON_Delete(json);
}

static void file_ident(const struct stat *sb, char ident[FS_IDENT_MAX])
{
	snprintf(ident, FS_IDENT_MAX, "%ju:%jd:%ld", (uintmax_t)sb->st_ino,
		 (intmax_t)sb->st_mtim.tv_sec, (long)sb->st_mtim.tv_nsec);
}

void store_fs_object_free(struct fs_object *obj)
{
	if (obj->has_fd)
		close(obj->fd);
	free(obj->body);
	cJSON_Delete(obj->json);
	memset(obj, 0, sizeof(*obj));
}

/* sidecars/HH/HASH of key: the directory name (3 bytes) and the file name
 * (65 bytes, 66 with the backup's '~'). */
static void sidecar_names(const char *key, char dir[3], char file[67])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_Digest(key, strlen(key), md, &n, EVP_sha256(), NULL);
	hex_encode(md, 32, file);
	file[64] = '\0';
	memcpy(dir, file, 2);
	dir[2] = '\0';
}

/* The sidecar directory HH of key, opened (made when create); -1 if none. */
static int sidecar_dir(struct fs_store *fs, const char *key, int create, char file[67])
{
	char dir[3];

	if (fs->side_fd < 0)
		return -1;
	sidecar_names(key, dir, file);
	if (create && mkdirat(fs->side_fd, dir, 0755) == 0)
		fsync(fs->side_fd);
	return openat(fs->side_fd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The sidecar of an older fencegate, whose tree mirrored the keys. */
static void legacy_read(struct fs_store *fs, const char *key, struct fs_meta *m)
{
	char seg[FS_KEY_MAX + 1];
	const char *p = key, *slash;
	int fd, next;

	memset(m, 0, sizeof(*m));
	if (fs->legacy_fd < 0)
		return;
	fd = fcntl(fs->legacy_fd, F_DUPFD_CLOEXEC, 0);
	while (fd >= 0 && (slash = strchr(p, '/')) != NULL) {
		memcpy(seg, p, (size_t)(slash - p));
		seg[slash - p] = '\0';
		next = *seg ? openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		close(fd);
		fd = next;
		p = slash + 1;
	}
	if (fd < 0)
		return;
	if (*p)
		meta_read(fd, p, NULL, m);
	close(fd);
}

/* Which of key's sidecars names the file with identity ident and size:
 * the primary, the backup, or an older fencegate's. m gets it. */
static enum fs_side sidecar_find(struct fs_store *fs, const char *key, const char *ident,
				 int64_t size, struct fs_meta *m)
{
	char file[67];
	int dfd = sidecar_dir(fs, key, 0, file);
	enum fs_side side = FS_SIDE_NONE;

	memset(m, 0, sizeof(*m));
	if (dfd >= 0) {
		meta_read(dfd, file, key, m);
		if (m->valid && strcmp(m->ident, ident) == 0 && m->size == size) {
			side = FS_SIDE_PRIMARY;
		} else {
			cJSON_Delete(m->json);
			strcat(file, "~");
			meta_read(dfd, file, key, m);
			if (m->valid && strcmp(m->ident, ident) == 0 && m->size == size)
				side = FS_SIDE_BACKUP;
		}
		close(dfd);
	}
	if (side == FS_SIDE_NONE) {
		cJSON_Delete(m->json);
		legacy_read(fs, key, m);
		if (m->valid && strcmp(m->ident, ident) == 0 && m->size == size)
			side = FS_SIDE_LEGACY;
	}
	if (side == FS_SIDE_NONE) {
		cJSON_Delete(m->json);
		memset(m, 0, sizeof(*m));
	}
	return side;
}

/* Reads the object name in dir_fd (key's): size, ETag, Last-Modified and,
 * if want_body, the bytes. A sidecar is trusted only if it names this very
 * file (inode, mtime and size); otherwise (a file dropped in by hand) the
 * ETag is the MD5 of the content and Last-Modified the file's mtime.
 * Returns STORE_OK, STORE_NOT_FOUND (absent, or a directory),
 * STORE_ERR_INVALID (a symlink or special file) or a failure. */
enum store_code store_fs_object_read(struct fs_store *fs, int dir_fd, const char *name,
				     const char *key, int want_body,
				     struct fs_object *obj, struct store_result *res)
{
	struct fs_meta m = { 0 };
	char ident[FS_IDENT_MAX];
	struct stat sb;
	enum store_code code;
	int fd = -1;

	memset(obj, 0, sizeof(*obj));
	fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG)
			return store_fs_fail(res, STORE_NOT_FOUND, "NoSuchKey", "no object \"%s\"", key);
		if (errno == ELOOP)
			return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
					     "key \"%s\" is a symlink in the store directory; refusing to follow it", key);
		return store_fs_fail_io(res, "open object", key, errno);
	}
	if (fstat(fd, &sb) < 0) {
		code = store_fs_fail_io(res, "stat object", key, errno);
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		code = store_fs_fail(res, STORE_NOT_FOUND, "NoSuchKey", "no object \"%s\"", key);
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		code = store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
				     "key \"%s\" is not a regular file in the store directory", key);
		goto out;
	}
	obj->size = sb.st_size;
	if (want_body == FS_READ_BODY) {
		size_t got = 0;

		obj->body = malloc((size_t)sb.st_size + 1);
		if (!obj->body) {
			code = store_fs_fail(res, STORE_ERR_NOMEM, NULL, "out of memory reading \"%s\"", key);
			goto out;
		}
		while (got < (size_t)sb.st_size) {
			ssize_t n = pread(fd, obj->body + got, (size_t)sb.st_size - got, (off_t)got);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				code = store_fs_fail_io(res, "read object", key, errno);
				goto out;
			}
			if (n == 0)
				break;
			got += (size_t)n;
		}
		obj->body[got] = '\0';
		obj->size = (int64_t)got;
	}
	file_ident(&sb, ident);
	obj->side = sidecar_find(fs, key, ident, obj->size, &m);
	if (obj->side != FS_SIDE_NONE) {
		snprintf(obj->etag, sizeof(obj->etag), "%s", m.etag);
		obj->last_modified = m.last_modified;
		obj->json = m.json;
		m.json = NULL;
	} else {
		int rc = want_body == FS_READ_BODY
			? store_fs_etag_of_buffer(obj->body, (size_t)obj->size, obj->etag)
			: etag_of_fd(fd, obj->size, obj->etag);

		if (rc < 0) {
			code = store_fs_fail_io(res, "checksum object", key, errno);
			goto out;
		}
		obj->last_modified = (int64_t)sb.st_mtime;
	}
	if (want_body == FS_READ_FD) {
		obj->fd = fd;
		obj->has_fd = 1;
		fd = -1;
	}
	code = STORE_OK;
out:
	cJSON_Delete(m.json);
	store_fs_close_fd(&fd);
	if (code != STORE_OK)
		store_fs_object_free(obj);
	return code;
}

enum store_code store_fs_sidecar_commit(struct fs_store *fs, const char *key, const char *text,
					enum fs_side cur, int64_t now, struct store_result *res)
{
	char file[67], backup[68], tmp[96] = "", ident[FS_IDENT_MAX];
	int dfd;
	enum store_code code;

	dfd = sidecar_dir(fs, key, 1, file);
	if (dfd < 0)
		return store_fs_fail_io(res, "open the sidecar directory of", key, errno);
	snprintf(backup, sizeof(backup), "%s~", file);
	code = store_fs_temp_write(fs, text, strlen(text), NULL, 0, 0, now, key, tmp, sizeof(tmp),
				   ident, NULL, res);
	if (code)
		goto out;
	/* the sidecar of the object as it is now becomes the backup (unless
	 * it is the backup already: a write died after its first rename) */
	if (cur == FS_SIDE_PRIMARY && renameat(dfd, file, dfd, backup) < 0 && errno != ENOENT) {
		code = store_fs_fail_io(res, "keep the metadata of", key, errno);
		goto out;
	}
	store_fs_crash_point(2);
	if (renameat(fs->tmp_fd, tmp, dfd, file) < 0) {
		code = store_fs_fail_io(res, "store metadata of", key, errno);
		goto out;
	}
	tmp[0] = '\0';
	if (fsync(dfd) < 0) {
		code = store_fs_fail_io(res, "sync metadata of", key, errno);
		goto out;
	}
	store_fs_crash_point(3);
	code = STORE_OK;
out:
	store_fs_temp_remove(fs, tmp);
	close(dfd);
	return code;
}

void store_fs_sidecar_remove(struct fs_store *fs, const char *key)
{
	char file[67];
	int dfd = sidecar_dir(fs, key, 0, file);

	if (dfd < 0)
		return;
	unlinkat(dfd, file, 0);
	strcat(file, "~");
	unlinkat(dfd, file, 0);
	fsync(dfd);
	close(dfd);
}

/* Writes data (or, with files, their ranges; etag then gets their MD5) to a
 * new file in the reserved temp directory, sets its mtime to mtime_s (plus
 * random nanoseconds, see struct fs_meta), and fsyncs it. name receives its
 * name, ident its identity (file_ident). */
/* Replaces the empty temp file name (open as *fd) by a hard link to the
 * file of r (a whole file), *fd then open on it. 0, or -1 leaving both as
 * they were (the caller copies instead). */
static int adopt_file(struct fs_store *fs, const struct store_file_range *r, const char *name,
		      int *fd)
{
	char proc[64], side[96];
	struct stat sb;
	int nfd;

	if (r->offset != 0 || fstat(r->fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size != r->len)
		return -1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->fd);
	snprintf(side, sizeof(side), "%s.a", name);
	if (linkat(AT_FDCWD, proc, fs->tmp_fd, side, AT_SYMLINK_FOLLOW) < 0)
		return -1;
	nfd = openat(fs->tmp_fd, side, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (nfd < 0 || renameat(fs->tmp_fd, side, fs->tmp_fd, name) < 0) {
		if (nfd >= 0)
			close(nfd);
		unlinkat(fs->tmp_fd, side, 0);
		return -1;
	}
	close(*fd);
	*fd = nfd;
	return 0;
}

enum store_code store_fs_temp_write(struct fs_store *fs, const void *data, size_t len,
				    const struct store_file_range *files, size_t nfiles,
				    int adopt, int64_t mtime_s, const char *key, char *name,
				    size_t namelen, char ident[FS_IDENT_MAX],
				    char etag[STORE_ETAG_MAX], struct store_result *res)
{
	struct timespec times[2];
	struct stat sb;
	uint32_t tag = 0;
	int fd = -1, tries, e;

	if (fs->tmp_fd < 0)
		return store_fs_fail(res, STORE_ERR_IO, "InternalError",
				     "store directory has no usable \"" FS_RESERVED "/tmp\" (read-only?)");
	for (tries = 0; tries < 100; tries++) {
		snprintf(name, namelen, "t%ld-%lx-%lu", (long)getpid(),
			 (unsigned long)(uintptr_t)fs, fs->tmp_seq++);
		fd = openat(fs->tmp_fd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		return store_fs_fail_io(res, "create temp file for key", key, errno);
	if (adopt && files && nfiles == 1 && adopt_file(fs, &files[0], name, &fd) == 0)
		; /* the caller's file itself, linked as the temp file */
	else if (files ? md5_ranges(fd, files, nfiles, etag) < 0 : write_all(fd, data, len) < 0)
		goto io;
	if (RAND_bytes((unsigned char *)&tag, sizeof(tag)) != 1)
		tag = (uint32_t)(fs->tmp_seq * 2654435761u);
	times[0].tv_sec = times[1].tv_sec = (time_t)mtime_s;
	times[0].tv_nsec = times[1].tv_nsec = (long)(tag % 1000000000u);
	if (futimens(fd, times) < 0 || fsync(fd) < 0 || fstat(fd, &sb) < 0)
		goto io;
	if (close(fd) < 0) {
		fd = -1;
		goto io;
	}
	file_ident(&sb, ident); /* read back: the file system may round */
	return STORE_OK;
io:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(fs->tmp_fd, name, 0);
	name[0] = '\0';
	return store_fs_fail_io(res, "write temp file for key", key, e);
}

void store_fs_temp_remove(struct fs_store *fs, char *name)
{
	if (name[0])
		unlinkat(fs->tmp_fd, name, 0);
	name[0] = '\0';
}

/* Temp files are "t<pid>-..." (store_fs_temp_write); a file is a dead
 * writer's when its process is gone and it is older than the grace time
 * (a pid namespace we cannot see must not lose a write in flight). A
 * starting process (store_config.starting: the embedded store, which is
 * one daemon per data directory) takes every file of a gone process and of
 * its own PID at once, whatever its age: nothing of it writes yet. */
void store_fs_sweep_temps(struct fs_store *fs, int64_t now_s, int starting)
{
	struct dirent *de;
	struct stat sb;
	DIR *dir;
	int fd;

	if (fs->tmp_fd < 0)
		return;
	fd = openat(fs->tmp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir)) != NULL) {
		long pid;

		if (de->d_name[0] != 't')
			continue;
		pid = strtol(de->d_name + 1, NULL, 10);
		if (pid <= 0)
			continue;
		/* starting: a file of this PID is an earlier process's */
		if (pid == (long)getpid() ? !starting
					  : kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (fstatat(fs->tmp_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(sb.st_mode) ||
		    (!starting && (int64_t)sb.st_mtime > now_s - FS_TEMP_GRACE_S))
			continue;
		unlinkat(fs->tmp_fd, de->d_name, 0);
	}
	closedir(dir);
}

/* Checks user metadata: at most STORE_META_MAX pairs, names non-empty,
 * neither names nor values with control bytes. */
enum store_code store_fs_check_user_meta(const struct store_put_opts *opts,
					 struct store_result *res)
{
	size_t i;
	const char *p;

	if (opts->nmeta > STORE_META_MAX)
		return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
				     "too many metadata pairs (%zu, at most %d)", opts->nmeta, STORE_META_MAX);
	if (opts->nmeta && !opts->meta)
		return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument", "metadata pairs missing");
	for (i = 0; i < opts->nmeta; i++) {
		const struct store_meta *m = &opts->meta[i];

		if (!m->name || !*m->name || !m->value)
			return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
					     "metadata pair %zu has no name or value", i);
		for (p = m->name; *p; p++)
			if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == ':')
				return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
						     "metadata name \"%s\" has a forbidden byte", m->name);
		for (p = m->value; *p; p++)
			if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
				return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
						     "metadata \"%s\" has a control byte in its value", m->name);
	}
	for (i = 0; opts->headers && i < STORE_HDR_COUNT; i++)
		for (p = opts->headers[i] ? opts->headers[i] : ""; *p; p++)
			if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
				return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
						     "%s has a control byte", store_hdr_names[i]);
	if (opts->checksum_name || opts->checksum_value) {
		int ok = opts->checksum_name && opts->checksum_value &&
			 strncmp(opts->checksum_name, "x-amz-checksum-", 15) == 0 &&
			 strlen(opts->checksum_name) < STORE_CHECKSUM_NAME_MAX &&
			 strlen(opts->checksum_value) < STORE_CHECKSUM_VALUE_MAX &&
			 opts->checksum_value[0];

		for (p = ok ? opts->checksum_name + 15 : ""; ok && *p; p++)
			ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9');
		for (p = ok ? opts->checksum_value : ""; ok && *p; p++)
			ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			     (*p >= '0' && *p <= '9') || *p == '+' || *p == '/' || *p == '=';
		if (!ok)
			return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
					     "a checksum must be x-amz-checksum-ALGO and a base64 value");
	}
	if (opts->content_type)
		for (p = opts->content_type; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return store_fs_fail(res, STORE_ERR_INVALID, "InvalidArgument",
						     "content type has a control byte");
	return STORE_OK;
}

/* The sidecar text for an object; NULL when out of memory. */
char *store_fs_meta_render(const char *key, const char *etag, const char *ident, size_t size,
			   int64_t last_modified, const struct store_put_opts *opts)
{
	cJSON *json = cJSON_CreateObject(), *user = NULL, *hdrs;
	char *text = NULL, *lower = NULL;
	size_t i, j;

	if (!json)
		return NULL;
	if (!cJSON_AddNumberToObject(json, "v", 2) ||
	    !cJSON_AddStringToObject(json, "key", key) ||
	    !cJSON_AddStringToObject(json, "etag", etag) ||
	    !cJSON_AddStringToObject(json, "ident", ident) ||
	    !cJSON_AddNumberToObject(json, "size", (double)size) ||
	    !cJSON_AddNumberToObject(json, "lastModified", (double)last_modified) ||
	    !cJSON_AddStringToObject(json, "contentType",
				     opts->content_type ? opts->content_type
							: "application/octet-stream"))
		goto out;
	hdrs = cJSON_AddObjectToObject(json, "headers");
	if (!hdrs)
		goto out;
	for (i = 0; opts->headers && i < STORE_HDR_COUNT; i++)
		if (opts->headers[i] && !cJSON_AddStringToObject(hdrs, store_hdr_names[i], opts->headers[i]))
			goto out;
	if (opts->checksum_name && opts->checksum_value) {
		cJSON *sum = cJSON_AddObjectToObject(json, "checksum");

		if (!sum || !cJSON_AddStringToObject(sum, "name", opts->checksum_name) ||
		    !cJSON_AddStringToObject(sum, "value", opts->checksum_value))
			goto out;
	}
	user = cJSON_AddObjectToObject(json, "meta");
	if (!user)
		goto out;
	for (i = 0; i < opts->nmeta; i++) {
		lower = strdup(opts->meta[i].name);
		if (!lower)
			goto out;
		for (j = 0; lower[j]; j++)
			if (lower[j] >= 'A' && lower[j] <= 'Z')
				lower[j] = (char)(lower[j] - 'A' + 'a');
		cJSON_DeleteItemFromObjectCaseSensitive(user, lower);
		if (!cJSON_AddStringToObject(user, lower, opts->meta[i].value))
			goto out;
		free(lower);
		lower = NULL;
	}
	text = cJSON_PrintUnformatted(json);
out:
	free(lower);
	cJSON_Delete(json);
	return text;
}

/* Copies the sidecar's content type, headers and user metadata into res. */
enum store_code store_fs_result_take_meta(const cJSON *json, const char *key,
					  struct store_result *res)
{
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(json, "meta"), *item;
	const cJSON *hdrs = cJSON_GetObjectItemCaseSensitive(json, "headers");
	const cJSON *ctype = cJSON_GetObjectItemCaseSensitive(json, "contentType");
	const cJSON *sum = cJSON_GetObjectItemCaseSensitive(json, "checksum");
	size_t i;

	if (cJSON_IsString(ctype) && strlen(ctype->valuestring) < sizeof(res->content_type))
		snprintf(res->content_type, sizeof(res->content_type), "%s", ctype->valuestring);
	if (cJSON_IsObject(sum)) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(sum, "name");
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(sum, "value");

		if (cJSON_IsString(n) && cJSON_IsString(v) &&
		    strlen(n->valuestring) < sizeof(res->checksum_name) &&
		    strlen(v->valuestring) < sizeof(res->checksum_value)) {
			snprintf(res->checksum_name, sizeof(res->checksum_name), "%s", n->valuestring);
			snprintf(res->checksum_value, sizeof(res->checksum_value), "%s", v->valuestring);
		}
	}
	for (i = 0; cJSON_IsObject(hdrs) && i < STORE_HDR_COUNT; i++) {
		item = cJSON_GetObjectItemCaseSensitive(hdrs, store_hdr_names[i]);
		if (cJSON_IsString(item) && !(res->headers[i] = strdup(item->valuestring)))
			return store_fs_fail(res, STORE_ERR_NOMEM, NULL,
					     "out of memory reading metadata of \"%s\"", key);
	}
	if (!cJSON_IsObject(user))
		return STORE_OK;
	cJSON_ArrayForEach(item, user) {
		if (res->nmeta >= STORE_META_MAX)
			break;
		if (!item->string || !cJSON_IsString(item))
			continue;
		res->meta[res->nmeta].name = strdup(item->string);
		res->meta[res->nmeta].value = strdup(item->valuestring);
		res->nmeta++;
		if (!res->meta[res->nmeta - 1].name || !res->meta[res->nmeta - 1].value)
			return store_fs_fail(res, STORE_ERR_NOMEM, NULL,
					     "out of memory reading metadata of \"%s\"", key);
	}
	return STORE_OK;
}
