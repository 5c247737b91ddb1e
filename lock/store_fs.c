/* store_fs.c — the object store on a local directory (file:///DIR, and the
 * proxy's embedded ./fencegate-data). Key "a/b/c" is the file DIR/a/b/c;
 * everything the backend keeps for itself (temp files, per-key lock files,
 * metadata sidecars mirroring the key tree) lives under DIR/.fencegate/, a
 * name space no key may enter. It gives S3's conditional-write semantics
 * between processes on one host (flock + link/rename); it does not make a
 * network file system safe and it never removes directories it created. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <unistd.h>

#include <cJSON.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "store.h"

#include "wire/pct.h"

#define FS_RESERVED      ".fencegate"
#define FS_LOCK_FILES    256           /* per-key locks are chosen by key hash */
#define FS_META_FILE_MAX (256 * 1024)  /* a sidecar bigger than this is corrupt */
#define FS_KEY_MAX       1024
#define FS_LIST_MAX      1000
#define FS_IDENT_MAX     64            /* "inode:mtime_s:mtime_ns" */

struct fs_store {
	struct store st;           /* must be first */
	int root_fd;               /* DIR */
	int tmp_fd;                /* DIR/.fencegate/tmp, -1 if unavailable */
	int meta_fd;               /* DIR/.fencegate/meta */
	int locks_fd;              /* DIR/.fencegate/locks */
	const struct timesrc *time;
	unsigned long tmp_seq;     /* makes temp file names unique per store */
};

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

/* One object as read from disk, its sidecar checked against it. */
struct fs_object {
	char etag[STORE_ETAG_MAX];
	int64_t size;
	int64_t last_modified;
	char *body;                /* only when asked for; owned */
	cJSON *json;               /* the sidecar when it matches the object; owned */
};

static const char *const key_space_rule =
	"keys may not be empty, absolute, contain \".\" or \"..\" segments, \"//\", "
	"control bytes, or exceed 1024 bytes";

__attribute__((format(printf, 4, 5)))
static enum store_code fail(struct store_result *res, enum store_code code,
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

static enum store_code fail_io(struct store_result *res, const char *what,
			       const char *key, int err)
{
	return fail(res, STORE_ERR_IO, "InternalError", "%s \"%s\": %s", what,
		    key ? key : "", strerror(err));
}

static enum store_code succeed(struct store_result *res, int http_status)
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
static struct fs_store *begin(struct store *st, struct store_result *res)
{
	struct fs_store *fs = (struct fs_store *)st;

	store_result_clear(res);
	st->requests++;
	res->attempts = 1;
	res->server_date = now_seconds(fs);
	return fs;
}

static int is_reserved(const char *key)
{
	size_t n = strlen(FS_RESERVED);

	return strncmp(key, FS_RESERVED, n) == 0 && (key[n] == '\0' || key[n] == '/');
}

/* STORE_OK if key may name a file under DIR, else STORE_ERR_INVALID. */
static enum store_code check_key(const char *key, struct store_result *res)
{
	if (!key)
		return fail(res, STORE_ERR_INVALID, "InvalidArgument", "no key given");
	if (!store_key_valid(key, strlen(key)))
		return fail(res, STORE_ERR_INVALID, "InvalidArgument",
			    "refusing key: %s", key_space_rule);
	if (key[strlen(key) - 1] == '/')
		return fail(res, STORE_ERR_INVALID, "InvalidArgument",
			    "refusing key \"%s\": a key ending in '/' (a folder marker) cannot be a file", key);
	if (is_reserved(key))
		return fail(res, STORE_ERR_INVALID, "InvalidArgument",
			    "refusing key \"%s\": \"" FS_RESERVED "/\" is reserved for the store's own files",
			    key);
	return STORE_OK;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

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

static int etag_of_buffer(const void *data, size_t len, char etag[STORE_ETAG_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data ? data : "", len, md, &mdlen, EVP_md5(), NULL))
		return -1;
	etag_from_digest(md, mdlen, etag);
	return 0;
}

/* MD5 of what fd holds from offset 0. Returns 0, or -1 with errno set. */
static int etag_of_fd(int fd, char etag[STORE_ETAG_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE], buf[65536];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	off_t off = 0;
	int rc = -1;

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_md5(), NULL)) {
		errno = ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		if (n == 0)
			break;
		off += n;
		if (!EVP_DigestUpdate(ctx, buf, (size_t)n)) {
			errno = EIO;
			goto out;
		}
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen)) {
		errno = EIO;
		goto out;
	}
	etag_from_digest(md, mdlen, etag);
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* Compares ETags as S3 does for If-Match: quotes optional, "*" matches any. */
static int etag_matches(const char *want, const char *have)
{
	size_t wl, hl;

	if (strcmp(want, "*") == 0)
		return 1;
	wl = strlen(want);
	hl = strlen(have);
	if (wl >= 2 && want[0] == '"' && want[wl - 1] == '"') {
		want++;
		wl -= 2;
	}
	if (hl >= 2 && have[0] == '"' && have[hl - 1] == '"') {
		have++;
		hl -= 2;
	}
	return wl == hl && strncasecmp(want, have, wl) == 0;
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

#define FS_NO_LOCK (-2)

/* Takes the lock that serializes writers (exclusive) and readers (shared) of
 * key. Returns the lock's fd (close it to unlock); FS_NO_LOCK for a shared
 * lock on a store that cannot hold lock files (read-only), where readers go
 * on without one; -1 with res filled on failure. The lock file is opened
 * per call, so forked processes never share a lock through an inherited fd. */
static int lock_key(struct fs_store *fs, const char *key, int exclusive,
		    struct store_result *res)
{
	char name[16];
	int fd;

	if (fs->locks_fd < 0) {
		if (!exclusive)
			return FS_NO_LOCK;
		fail(res, STORE_ERR_IO, "InternalError",
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
		fail_io(res, "open lock file for key", key, errno);
		return -1;
	}
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
		if (errno == EINTR)
			continue;
		fail_io(res, "lock key", key, errno);
		close(fd);
		return -1;
	}
	return fd;
}

static void unlock_key(int *fd)
{
	if (*fd >= 0)
		close(*fd); /* releases the flock */
	*fd = -1;
}

/* How to walk to a key's directory. */
enum walk_mode {
	WALK_READ,         /* missing or non-directory component: not found */
	WALK_CREATE,       /* make missing directories; a file in the way is a collision */
	WALK_CREATE_META,  /* make missing directories; a file in the way is a stale sidecar */
};

/* Opens the directory that holds key's last segment, starting at base_fd and
 * never following a symlink. Sets *dir_fd (owned by the caller) and *leaf
 * (points into key). Returns STORE_OK, STORE_NOT_FOUND (WALK_READ only),
 * STORE_ERR_INVALID (a symlink or an object where a directory must be) or
 * STORE_ERR_IO. */
static enum store_code open_key_dir(int base_fd, const char *key, enum walk_mode mode,
				    int *dir_fd, const char **leaf,
				    struct store_result *res)
{
	char seg[FS_KEY_MAX + 1];
	const char *p = key, *slash;
	int fd = -1, next;

	*dir_fd = -1;
	fd = fcntl(base_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return fail_io(res, "open directory for key", key, errno);
	while ((slash = strchr(p, '/')) != NULL) {
		size_t n = (size_t)(slash - p);
		struct stat sb;
		int made = 0;

		memcpy(seg, p, n);
		seg[n] = '\0';
		if (mode != WALK_READ) {
			if (mkdirat(fd, seg, 0755) == 0) {
				made = 1;
			} else if (errno != EEXIST) {
				int e = errno;

				close(fd);
				if (e == ENAMETOOLONG)
					return fail(res, STORE_ERR_INVALID, "KeyTooLongError",
						    "key \"%s\": a segment is too long for the file system", key);
				return fail_io(res, "create directory for key", key, e);
			}
			if (made && fsync(fd) < 0) {
				int e = errno;

				close(fd);
				return fail_io(res, "sync directory for key", key, e);
			}
		}
		next = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && (errno == ENOTDIR || errno == ELOOP) &&
		    fstatat(fd, seg, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISLNK(sb.st_mode)) {
				close(fd);
				return fail(res, STORE_ERR_INVALID, "InvalidArgument",
					    "key \"%s\": refusing to follow a symlink in the store directory", key);
			}
			if (mode == WALK_CREATE_META && S_ISREG(sb.st_mode) &&
			    unlinkat(fd, seg, 0) == 0 && mkdirat(fd, seg, 0755) == 0)
				next = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			else
				errno = ENOTDIR;
		}
		if (next < 0) {
			int e = errno;

			close(fd);
			if (mode == WALK_READ && (e == ENOENT || e == ENOTDIR))
				return fail(res, STORE_NOT_FOUND, "NoSuchKey",
					    "no object \"%s\"", key);
			if (e == ENOTDIR)
				return fail(res, STORE_ERR_INVALID, "InvalidArgument",
					    "key \"%s\" collides with an object that is a prefix of it (\"%.*s\")",
					    key, (int)(slash - key), key);
			if (e == ENAMETOOLONG)
				return fail(res, STORE_ERR_INVALID, "KeyTooLongError",
					    "key \"%s\": a segment is too long for the file system", key);
			return fail_io(res, "open directory for key", key, e);
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*dir_fd = fd;
	*leaf = p;
	return STORE_OK;
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

/* Reads key's sidecar; m->valid stays 0 when it is missing or unreadable. */
static void meta_read(int meta_dir_fd, const char *leaf, struct fs_meta *m)
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

static void object_free(struct fs_object *obj)
{
	free(obj->body);
	cJSON_Delete(obj->json);
	memset(obj, 0, sizeof(*obj));
}

/* Reads the object leaf in data_fd (its sidecar in meta_fd, may be -1): size,
 * ETag, Last-Modified and, if want_body, the bytes. The sidecar is trusted
 * only if it names this very file (inode, mtime and size); otherwise (a crash
 * between the two renames, or a file dropped in by hand) the ETag is the MD5
 * of the content and Last-Modified the file's mtime. Returns STORE_OK,
 * STORE_NOT_FOUND (absent, or a directory), STORE_ERR_INVALID (a symlink or
 * special file) or a failure. */
static enum store_code object_read(int data_fd, int meta_fd, const char *leaf,
				   const char *key, int want_body,
				   struct fs_object *obj, struct store_result *res)
{
	struct fs_meta m = { 0 };
	char ident[FS_IDENT_MAX];
	struct stat sb;
	enum store_code code;
	int fd = -1;

	memset(obj, 0, sizeof(*obj));
	fd = openat(data_fd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return fail(res, STORE_NOT_FOUND, "NoSuchKey", "no object \"%s\"", key);
		if (errno == ELOOP)
			return fail(res, STORE_ERR_INVALID, "InvalidArgument",
				    "key \"%s\" is a symlink in the store directory; refusing to follow it", key);
		if (errno == ENAMETOOLONG)
			return fail(res, STORE_NOT_FOUND, "NoSuchKey", "no object \"%s\"", key);
		return fail_io(res, "open object", key, errno);
	}
	if (fstat(fd, &sb) < 0) {
		code = fail_io(res, "stat object", key, errno);
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		code = fail(res, STORE_NOT_FOUND, "NoSuchKey", "no object \"%s\"", key);
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		code = fail(res, STORE_ERR_INVALID, "InvalidArgument",
			    "key \"%s\" is not a regular file in the store directory", key);
		goto out;
	}
	obj->size = sb.st_size;
	if (want_body) {
		size_t got = 0;

		obj->body = malloc((size_t)sb.st_size + 1);
		if (!obj->body) {
			code = fail(res, STORE_ERR_NOMEM, NULL, "out of memory reading \"%s\"", key);
			goto out;
		}
		while (got < (size_t)sb.st_size) {
			ssize_t n = pread(fd, obj->body + got, (size_t)sb.st_size - got, (off_t)got);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				code = fail_io(res, "read object", key, errno);
				goto out;
			}
			if (n == 0)
				break;
			got += (size_t)n;
		}
		obj->body[got] = '\0';
		obj->size = (int64_t)got;
	}
	meta_read(meta_fd, leaf, &m);
	file_ident(&sb, ident);
	if (m.valid && strcmp(m.ident, ident) == 0 && m.size == obj->size) {
		snprintf(obj->etag, sizeof(obj->etag), "%s", m.etag);
		obj->last_modified = m.last_modified;
		obj->json = m.json;
		m.json = NULL;
	} else {
		int rc = want_body ? etag_of_buffer(obj->body, (size_t)obj->size, obj->etag)
				   : etag_of_fd(fd, obj->etag);

		if (rc < 0) {
			code = fail_io(res, "checksum object", key, errno);
			goto out;
		}
		obj->last_modified = (int64_t)sb.st_mtime;
	}
	code = STORE_OK;
out:
	cJSON_Delete(m.json);
	close_fd(&fd);
	if (code != STORE_OK)
		object_free(obj);
	return code;
}

/* Writes data to a new file in the reserved temp directory, sets its mtime
 * to mtime_s (plus random nanoseconds, see struct fs_meta), and fsyncs it.
 * name receives its name, ident its identity (file_ident). */
static enum store_code temp_write(struct fs_store *fs, const void *data, size_t len,
				  int64_t mtime_s, const char *key, char *name,
				  size_t namelen, char ident[FS_IDENT_MAX],
				  struct store_result *res)
{
	struct timespec times[2];
	struct stat sb;
	uint32_t tag = 0;
	int fd = -1, tries, e;

	if (fs->tmp_fd < 0)
		return fail(res, STORE_ERR_IO, "InternalError",
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
		return fail_io(res, "create temp file for key", key, errno);
	if (write_all(fd, data, len) < 0)
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
	return fail_io(res, "write temp file for key", key, e);
}

static void temp_remove(struct fs_store *fs, char *name)
{
	if (name[0])
		unlinkat(fs->tmp_fd, name, 0);
	name[0] = '\0';
}

/* Checks user metadata: at most STORE_META_MAX pairs, names non-empty,
 * neither names nor values with control bytes. */
static enum store_code check_user_meta(const struct store_put_opts *opts,
				       struct store_result *res)
{
	size_t i;
	const char *p;

	if (opts->nmeta > STORE_META_MAX)
		return fail(res, STORE_ERR_INVALID, "InvalidArgument",
			    "too many metadata pairs (%zu, at most %d)", opts->nmeta, STORE_META_MAX);
	if (opts->nmeta && !opts->meta)
		return fail(res, STORE_ERR_INVALID, "InvalidArgument", "metadata pairs missing");
	for (i = 0; i < opts->nmeta; i++) {
		const struct store_meta *m = &opts->meta[i];

		if (!m->name || !*m->name || !m->value)
			return fail(res, STORE_ERR_INVALID, "InvalidArgument",
				    "metadata pair %zu has no name or value", i);
		for (p = m->name; *p; p++)
			if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == ':')
				return fail(res, STORE_ERR_INVALID, "InvalidArgument",
					    "metadata name \"%s\" has a forbidden byte", m->name);
		for (p = m->value; *p; p++)
			if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
				return fail(res, STORE_ERR_INVALID, "InvalidArgument",
					    "metadata \"%s\" has a control byte in its value", m->name);
	}
	if (opts->content_type)
		for (p = opts->content_type; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return fail(res, STORE_ERR_INVALID, "InvalidArgument",
					    "content type has a control byte");
	return STORE_OK;
}

/* The sidecar text for an object; NULL when out of memory. */
static char *meta_render(const char *etag, const char *ident, size_t size,
			 int64_t last_modified, const struct store_put_opts *opts)
{
	cJSON *json = cJSON_CreateObject(), *user = NULL;
	char *text = NULL, *lower = NULL;
	size_t i, j;

	if (!json)
		return NULL;
	if (!cJSON_AddNumberToObject(json, "v", 1) ||
	    !cJSON_AddStringToObject(json, "etag", etag) ||
	    !cJSON_AddStringToObject(json, "ident", ident) ||
	    !cJSON_AddNumberToObject(json, "size", (double)size) ||
	    !cJSON_AddNumberToObject(json, "lastModified", (double)last_modified) ||
	    !cJSON_AddStringToObject(json, "contentType",
				     opts->content_type ? opts->content_type
							: "application/octet-stream"))
		goto out;
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

/* Copies the sidecar's user metadata into res. */
static enum store_code result_take_meta(const cJSON *json, const char *key,
					struct store_result *res)
{
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(json, "meta"), *item;

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
			return fail(res, STORE_ERR_NOMEM, NULL,
				    "out of memory reading metadata of \"%s\"", key);
	}
	return STORE_OK;
}

static enum store_code fs_get_or_head(struct store *st, const char *key, int want_body,
				      struct store_result *res)
{
	struct fs_store *fs = begin(st, res);
	struct fs_object obj = { 0 };
	const char *leaf = NULL, *mleaf = NULL;
	int data_fd = -1, meta_fd = -1, lock_fd = -1;
	enum store_code code;
	struct store_result scratch = STORE_RESULT_INIT;

	code = check_key(key, res);
	if (code)
		goto out;
	lock_fd = lock_key(fs, key, 0, res);
	if (lock_fd == -1) {
		code = res->code;
		goto out;
	}
	code = open_key_dir(fs->root_fd, key, WALK_READ, &data_fd, &leaf, res);
	if (code)
		goto out;
	if (fs->meta_fd >= 0 &&
	    open_key_dir(fs->meta_fd, key, WALK_READ, &meta_fd, &mleaf, &scratch) != STORE_OK)
		meta_fd = -1;
	code = object_read(data_fd, meta_fd, leaf, key, want_body, &obj, res);
	if (code)
		goto out;
	snprintf(res->etag, sizeof(res->etag), "%s", obj.etag);
	res->last_modified = obj.last_modified;
	res->content_length = obj.size;
	if (want_body) {
		res->body = obj.body;
		res->body_len = (size_t)obj.size;
		obj.body = NULL;
	}
	if (obj.json) {
		const cJSON *ctype = cJSON_GetObjectItemCaseSensitive(obj.json, "contentType");

		/* no sidecar (a file dropped in by hand): "" = unknown */
		if (cJSON_IsString(ctype) && strlen(ctype->valuestring) < sizeof(res->content_type))
			snprintf(res->content_type, sizeof(res->content_type), "%s", ctype->valuestring);
		code = result_take_meta(obj.json, key, res);
		if (code)
			goto out;
	}
	code = succeed(res, 200);
out:
	store_result_clear(&scratch);
	object_free(&obj);
	close_fd(&data_fd);
	close_fd(&meta_fd);
	unlock_key(&lock_fd);
	return code;
}

static enum store_code fs_get(struct store *st, const char *key, struct store_result *res)
{
	return fs_get_or_head(st, key, 1, res);
}

static enum store_code fs_head(struct store *st, const char *key, struct store_result *res)
{
	return fs_get_or_head(st, key, 0, res);
}

/* Creates (If-None-Match "*": link, so an existing key is never replaced) or
 * replaces (rename) the object, its sidecar first, all under the key's
 * exclusive lock so that conditions and readers see one consistent version. */
static enum store_code fs_put(struct store *st, const char *key, const void *body, size_t len,
			      const struct store_put_opts *opts, struct store_result *res)
{
	static const struct store_put_opts no_opts = { 0 };
	struct fs_store *fs;
	struct fs_object current = { 0 };
	char obj_tmp[96] = "", meta_tmp[96] = "", etag[STORE_ETAG_MAX];
	char ident[FS_IDENT_MAX], meta_ident[FS_IDENT_MAX], if_match[STORE_ETAG_MAX] = "";
	const char *leaf = NULL, *mleaf = NULL;
	char *meta_text = NULL;
	int data_fd = -1, meta_fd = -1, lock_fd = -1, exists = 0;
	int64_t now;
	struct stat sb;
	enum store_code code;

	if (!opts)
		opts = &no_opts;
	/* before begin() clears res: the caller may pass res->etag */
	if (opts->etag)
		snprintf(if_match, sizeof(if_match), "%s", opts->etag);
	fs = begin(st, res);
	now = res->server_date;
	code = check_key(key, res);
	if (code)
		goto out;
	if (!body && len) {
		code = fail(res, STORE_ERR_INVALID, "InvalidArgument", "no body given for %zu bytes", len);
		goto out;
	}
	if (opts->cond == STORE_COND_IF_MATCH && !*if_match) {
		code = fail(res, STORE_ERR_INVALID, "InvalidArgument", "If-Match without an ETag");
		goto out;
	}
	code = check_user_meta(opts, res);
	if (code)
		goto out;
	if (etag_of_buffer(body, len, etag) < 0) {
		code = fail(res, STORE_ERR_IO, "InternalError", "computing MD5 failed");
		goto out;
	}
	/* The bytes go to disk before the lock is taken: the lock covers only
	 * the check and the renames. */
	code = temp_write(fs, body, len, now, key, obj_tmp, sizeof(obj_tmp), ident, res);
	if (code)
		goto out;
	lock_fd = lock_key(fs, key, 1, res);
	if (lock_fd < 0) {
		code = res->code;
		goto out;
	}
	code = open_key_dir(fs->root_fd, key, WALK_CREATE, &data_fd, &leaf, res);
	if (code)
		goto out;
	code = open_key_dir(fs->meta_fd, key, WALK_CREATE_META, &meta_fd, &mleaf, res);
	if (code)
		goto out;
	if (fstatat(data_fd, leaf, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(sb.st_mode)) {
			code = fail(res, STORE_ERR_INVALID, "InvalidArgument",
				    "key \"%s\" collides with a key that has it as a prefix (\"%s/...\")",
				    key, key);
			goto out;
		}
		if (!S_ISREG(sb.st_mode)) {
			code = fail(res, STORE_ERR_INVALID, "InvalidArgument",
				    "key \"%s\" is a symlink or special file in the store directory; refusing to replace it",
				    key);
			goto out;
		}
		exists = 1;
	} else if (errno == ENAMETOOLONG) {
		code = fail(res, STORE_ERR_INVALID, "KeyTooLongError",
			    "key \"%s\": a segment is too long for the file system", key);
		goto out;
	} else if (errno != ENOENT) {
		code = fail_io(res, "stat object", key, errno);
		goto out;
	}
	if (opts->cond == STORE_COND_IF_NONE_MATCH_ANY && exists) {
		code = fail(res, STORE_PRECONDITION_FAILED, "PreconditionFailed",
			    "object \"%s\" already exists (If-None-Match: *)", key);
		goto out;
	}
	if (opts->cond == STORE_COND_IF_MATCH) {
		if (!exists) {
			code = fail(res, STORE_NOT_FOUND, "NoSuchKey",
				    "no object \"%s\" to replace (If-Match)", key);
			goto out;
		}
		code = object_read(data_fd, meta_fd, leaf, key, 0, &current, res);
		if (code)
			goto out;
		if (!etag_matches(if_match, current.etag)) {
			code = fail(res, STORE_PRECONDITION_FAILED, "PreconditionFailed",
				    "object \"%s\" is at ETag %s, not %s", key, current.etag, if_match);
			goto out;
		}
	}
	/* Sidecar first: until the object itself moves, readers holding the
	 * shared lock wait, and after a crash here the sidecar names an inode
	 * that is not the object's, so readers ignore it. */
	meta_text = meta_render(etag, ident, len, now, opts);
	if (!meta_text) {
		code = fail(res, STORE_ERR_NOMEM, NULL, "out of memory writing metadata of \"%s\"", key);
		goto out;
	}
	code = temp_write(fs, meta_text, strlen(meta_text), now, key, meta_tmp,
			  sizeof(meta_tmp), meta_ident, res);
	if (code)
		goto out;
	if (renameat(fs->tmp_fd, meta_tmp, meta_fd, mleaf) < 0) {
		code = errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST
			? fail(res, STORE_ERR_INVALID, "InvalidArgument",
			       "metadata of key \"%s\" is blocked by a directory in " FS_RESERVED "/meta", key)
			: fail_io(res, "store metadata of", key, errno);
		goto out;
	}
	meta_tmp[0] = '\0';
	if (fsync(meta_fd) < 0) {
		code = fail_io(res, "sync metadata directory of", key, errno);
		goto out;
	}
	if (opts->cond == STORE_COND_IF_NONE_MATCH_ANY) {
		if (linkat(fs->tmp_fd, obj_tmp, data_fd, leaf, 0) < 0) {
			code = errno == EEXIST
				? fail(res, STORE_PRECONDITION_FAILED, "PreconditionFailed",
				       "object \"%s\" already exists (If-None-Match: *)", key)
				: fail_io(res, "create object", key, errno);
			goto out;
		}
	} else {
		if (renameat(fs->tmp_fd, obj_tmp, data_fd, leaf) < 0) {
			code = fail_io(res, "replace object", key, errno);
			goto out;
		}
		obj_tmp[0] = '\0';
	}
	if (fsync(data_fd) < 0) {
		code = fail_io(res, "sync directory of", key, errno);
		goto out;
	}
	snprintf(res->etag, sizeof(res->etag), "%s", etag);
	res->last_modified = now;
	code = succeed(res, 200);
out:
	temp_remove(fs, obj_tmp);
	temp_remove(fs, meta_tmp);
	free(meta_text);
	object_free(&current);
	close_fd(&data_fd);
	close_fd(&meta_fd);
	unlock_key(&lock_fd);
	return code;
}

/* Deletes the object (and its sidecar). A missing key is STORE_OK (204) when
 * unconditional, STORE_NOT_FOUND with If-Match, as S3 answers. */
static enum store_code fs_del(struct store *st, const char *key, const char *if_match_arg,
			      struct store_result *res)
{
	struct fs_store *fs;
	char if_match_buf[STORE_ETAG_MAX];
	const char *if_match = NULL;
	struct fs_object current = { 0 };
	struct store_result scratch = STORE_RESULT_INIT;
	const char *leaf = NULL, *mleaf = NULL;
	int data_fd = -1, meta_fd = -1, lock_fd = -1;
	struct stat sb;
	enum store_code code;

	/* before begin() clears res: the caller may pass res->etag */
	if (if_match_arg) {
		snprintf(if_match_buf, sizeof(if_match_buf), "%s", if_match_arg);
		if_match = if_match_buf;
	}
	fs = begin(st, res);
	code = check_key(key, res);
	if (code)
		goto out;
	if (if_match && !*if_match) {
		code = fail(res, STORE_ERR_INVALID, "InvalidArgument", "If-Match without an ETag");
		goto out;
	}
	lock_fd = lock_key(fs, key, 1, res);
	if (lock_fd < 0) {
		code = res->code;
		goto out;
	}
	code = open_key_dir(fs->root_fd, key, WALK_READ, &data_fd, &leaf, res);
	if (code == STORE_NOT_FOUND)
		goto missing;
	if (code)
		goto out;
	if (open_key_dir(fs->meta_fd, key, WALK_READ, &meta_fd, &mleaf, &scratch) != STORE_OK)
		meta_fd = -1;
	if (if_match) {
		code = object_read(data_fd, meta_fd, leaf, key, 0, &current, res);
		if (code == STORE_NOT_FOUND)
			goto missing;
		if (code)
			goto out;
		if (!etag_matches(if_match, current.etag)) {
			code = fail(res, STORE_PRECONDITION_FAILED, "PreconditionFailed",
				    "object \"%s\" is at ETag %s, not %s", key, current.etag, if_match);
			goto out;
		}
	} else if (fstatat(data_fd, leaf, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT || errno == ENAMETOOLONG)
			goto missing;
		code = fail_io(res, "stat object", key, errno);
		goto out;
	} else if (S_ISDIR(sb.st_mode)) {
		goto missing;
	} else if (!S_ISREG(sb.st_mode)) {
		code = fail(res, STORE_ERR_INVALID, "InvalidArgument",
			    "key \"%s\" is a symlink or special file in the store directory; refusing to delete it",
			    key);
		goto out;
	}
	if (unlinkat(data_fd, leaf, 0) < 0) {
		if (errno == ENOENT)
			goto missing;
		code = fail_io(res, "delete object", key, errno);
		goto out;
	}
	if (fsync(data_fd) < 0) {
		code = fail_io(res, "sync directory of", key, errno);
		goto out;
	}
	if (meta_fd >= 0 && unlinkat(meta_fd, mleaf, 0) == 0)
		fsync(meta_fd); /* a leftover sidecar is ignored: no inode matches it */
	code = succeed(res, 204);
	goto out;
missing:
	store_result_clear(res);
	res->attempts = 1;
	res->server_date = now_seconds(fs);
	if (if_match)
		code = fail(res, STORE_NOT_FOUND, "NoSuchKey", "no object \"%s\" to delete (If-Match)", key);
	else
		code = succeed(res, 204);
out:
	store_result_clear(&scratch);
	object_free(&current);
	close_fd(&data_fd);
	close_fd(&meta_fd);
	unlock_key(&lock_fd);
	return code;
}

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
		code = fail_io(res, "list directory", path, errno);
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
				code = fail_io(res, "list directory", path, errno);
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
				code = fail(res, STORE_ERR_NOMEM, NULL, "out of memory listing");
				break;
			}
			names = grown;
			cap = ncap;
		}
		len = strlen(de->d_name);
		names[n].name = malloc(len + 2);
		if (!names[n].name) {
			code = fail(res, STORE_ERR_NOMEM, NULL, "out of memory listing");
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
	lock_fd = lock_key(w->fs, key, 0, w->res);
	if (lock_fd == -1)
		return w->res->code;
	code = object_read(data_fd, meta_fd, leaf, key, 0, &obj, &scratch);
	unlock_key(&lock_fd);
	if (code == STORE_NOT_FOUND || code == STORE_ERR_INVALID) {
		code = STORE_OK; /* deleted meanwhile, or not an object */
		goto out;
	}
	if (code) {
		fail(w->res, code, NULL, "%s", scratch.err_message);
		goto out;
	}
	if (w->page->n == w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 32;
		struct store_list_entry *grown;

		if (ncap > w->max)
			ncap = w->max;
		grown = realloc(w->page->entries, ncap * sizeof(*grown));
		if (!grown) {
			code = fail(w->res, STORE_ERR_NOMEM, NULL, "out of memory listing");
			goto out;
		}
		w->page->entries = grown;
		w->cap = ncap;
	}
	e = &w->page->entries[w->page->n];
	memset(e, 0, sizeof(*e));
	e->key = strdup(key);
	if (!e->key) {
		code = fail(w->res, STORE_ERR_NOMEM, NULL, "out of memory listing");
		goto out;
	}
	snprintf(e->etag, sizeof(e->etag), "%s", obj.etag);
	e->size = obj.size;
	e->last_modified = obj.last_modified;
	w->page->n++;
	code = STORE_OK;
out:
	object_free(&obj);
	store_result_clear(&scratch);
	return code;
}

/* Lists the directory data_fd whose keys begin with path (path_len bytes,
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

static enum store_code fs_list(struct store *st, const char *prefix, const char *start_after,
			       const char *continuation, int max_keys,
			       struct store_list_page *page, struct store_result *res)
{
	struct fs_store *fs = begin(st, res);
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
		code = fail(res, STORE_ERR_INVALID, "InvalidArgument",
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
	if (w.prefix_len > FS_KEY_MAX || is_reserved(prefix))
		goto empty;
	/* Start in the deepest directory the prefix names in full. */
	slash = strrchr(prefix, '/');
	dir_len = slash ? (size_t)(slash - prefix) + 1 : 0;
	if (dir_len) {
		memcpy(dir_key, prefix, dir_len);
		memcpy(dir_key + dir_len, "x", 2); /* open_key_dir stops before the leaf */
		if (!store_key_valid(dir_key, dir_len + 1))
			goto empty;
		code = open_key_dir(fs->root_fd, dir_key, WALK_READ, &data_fd, &leaf, &scratch);
		if (code == STORE_NOT_FOUND)
			goto empty;
		if (code) {
			code = fail(res, code, NULL, "%s", scratch.err_message);
			goto out;
		}
		if (open_key_dir(fs->meta_fd, dir_key, WALK_READ, &meta_fd, &leaf, &scratch))
			meta_fd = -1;
	} else {
		data_fd = fcntl(fs->root_fd, F_DUPFD_CLOEXEC, 0);
		if (data_fd < 0) {
			code = fail_io(res, "list", prefix, errno);
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
			code = fail(res, STORE_ERR_NOMEM, NULL, "out of memory listing");
			goto out;
		}
	}
empty:
	code = succeed(res, 200);
out:
	if (code != STORE_OK)
		store_list_page_free(page);
	store_result_clear(&scratch);
	close_fd(&data_fd);
	close_fd(&meta_fd);
	return code;
}

static void fs_close(struct store *st)
{
	struct fs_store *fs = (struct fs_store *)st;

	if (!fs)
		return;
	close_fd(&fs->root_fd);
	close_fd(&fs->tmp_fd);
	close_fd(&fs->meta_fd);
	close_fd(&fs->locks_fd);
	free(fs);
}

static const struct store_ops fs_ops = {
	.scheme = "file",
	.get = fs_get,
	.head = fs_head,
	.put = fs_put,
	.del = fs_del,
	.list = fs_list,
	.close = fs_close,
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
	fs->root_fd = fs->tmp_fd = fs->meta_fd = fs->locks_fd = -1;
	fs->time = cfg && cfg->time ? cfg->time : timesrc_system();
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create store directory \"%s\": %s", dir, strerror(errno));
		goto fail;
	}
	fs->root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->root_fd < 0) {
		snprintf(err, errlen, "cannot open store directory \"%s\": %s", dir, strerror(errno));
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
		fs->meta_fd = open_reserved_dir(reserved_fd, "meta");
		fs->locks_fd = open_reserved_dir(reserved_fd, "locks");
		close(reserved_fd);
	}
	return &fs->st;
fail:
	fs_close(&fs->st);
	return NULL;
}
