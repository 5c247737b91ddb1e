/* store_fs_int.h — what the local-directory store's files share (store_fs.c,
 * results, key rules, per-key locks and the object operations;
 * store_fs_path.c, key names on disk and the walk to them; store_fs_meta.c,
 * an object's file and sidecar on disk; store_fs_list.c, listing). Not a
 * public interface: store.h is.
 *
 * Every store_fs_* function that takes a struct store_result fills it on
 * failure (store_fs_fail) and returns the same code. */
#ifndef FENCE_STORE_FS_INT_H
#define FENCE_STORE_FS_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "store.h"

#define FS_RESERVED      ".fencegate"
#define FS_LOCK_FILES    256           /* per-key locks are chosen by key hash */
#define FS_META_FILE_MAX (256 * 1024)  /* a sidecar bigger than this is corrupt */
#define FS_KEY_MAX       1024
#define FS_LIST_MAX      1000
#define FS_IDENT_MAX     64            /* "inode:mtime_s:mtime_ns" */
#define FS_NAME_LIMIT    240           /* bytes of one encoded name (NAME_MAX 255) */
#define FS_LOCKS_MAX     (FS_KEY_MAX + 2) /* a write's key and its ancestors */
#define FS_TEMP_GRACE_S  60            /* a dead writer's temp file older than this goes */

/* Names no encoded key segment can be (store_fs_path.c). */
#define FS_NAME_EMPTY       "%"        /* an empty segment ("a//b", "dir/") */
#define FS_NAME_OBJECT      "%@"       /* the object of a key that is also a directory */
#define FS_NAME_MOVING      "%t"       /* in a directory being made from an object */
#define FS_NAME_CONT_SUFFIX "%+"       /* a chunk of a segment too long for one name */

#define FS_NO_LOCK (-2)

struct fs_store {
	struct store st;           /* must be first */
	int root_fd;               /* DIR */
	int tmp_fd;                /* DIR/.fencegate/tmp, -1 if unavailable */
	int side_fd;               /* DIR/.fencegate/sidecars, -1 if unavailable */
	int legacy_fd;             /* DIR/.fencegate/meta (sidecars of old versions), -1 none */
	int locks_fd;              /* DIR/.fencegate/locks */
	const struct timesrc *time;
	unsigned long tmp_seq;     /* makes temp file names unique per store */
};

/* Which sidecar describes an object. */
enum fs_side {
	FS_SIDE_NONE = 0,          /* none: ETag from the bytes, no metadata */
	FS_SIDE_PRIMARY,           /* sidecars/HH/HASH */
	FS_SIDE_BACKUP,            /* sidecars/HH/HASH~ (a write died between its renames) */
	FS_SIDE_LEGACY,            /* meta/KEY of an older fencegate */
};

/* One object as read from disk, its sidecar checked against it. */
struct fs_object {
	char etag[STORE_ETAG_MAX];
	int64_t size;
	int64_t last_modified;
	char *body;                /* only when asked for; owned */
	cJSON *json;               /* the sidecar when it matches the object; owned */
	enum fs_side side;
	int has_fd;                /* FS_READ_FD: fd is the object's, owned */
	int fd;
};

/* What store_fs_object_read reads. */
enum fs_read {
	FS_READ_HEAD = 0,          /* size, ETag, metadata */
	FS_READ_BODY = 1,          /* and the bytes */
	FS_READ_FD = 2,            /* and an open descriptor of the file */
};

/* How to walk to a key's directory. */
enum walk_mode {
	WALK_READ,         /* missing or non-directory component: not found */
	WALK_CREATE,       /* make missing directories, moving objects in the way into theirs */
};

/* The kinds of name a key's path is made of. */
enum fs_name_kind {
	FS_NAME_DIR,       /* a whole segment followed by '/' */
	FS_NAME_CONT,      /* a chunk of a long segment, more follows */
	FS_NAME_LEAF,      /* the key's last (chunk of its last) segment */
};

/* A key's path: n names, the last one the leaf. key_end[i] is where the
 * key's segment of name i ends (for a DIR name, key[0..key_end) is the key
 * whose object may be in the way). */
struct fs_path {
	char *buf;
	char **name;
	int *kind;
	size_t *key_end;
	size_t n;
};

/* Where a key's object is: the file obj_name in obj_dir_fd, which is either
 * the leaf in dir_fd or FS_NAME_OBJECT inside directory leaf (in_dir). */
struct fs_place {
	int dir_fd;
	const char *leaf;
	int obj_dir_fd;
	const char *obj_name;
	int in_dir;
};

/* ---- store_fs.c: results, key rules, locks, directories ----------------- */

/* Fills res with code, the S3 error code (may be NULL) and a printf-style
 * message; returns code. */
__attribute__((format(printf, 4, 5)))
enum store_code store_fs_fail(struct store_result *res, enum store_code code,
			      const char *s3_code, const char *fmt, ...);
/* STORE_ERR_IO "what \"key\": strerror(err)". */
enum store_code store_fs_fail_io(struct store_result *res, const char *what,
				 const char *key, int err);
enum store_code store_fs_succeed(struct store_result *res, int http_status);
/* Every call starts here: clears res, counts the request, dates it. */
struct fs_store *store_fs_begin(struct store *st, struct store_result *res);
/* Closes *fd if open and sets it to -1. */
void store_fs_close_fd(int *fd);
/* The lock on key (exclusive for writers, shared for readers): its fd,
 * FS_NO_LOCK (shared, read-only store), or -1 with res filled. */
int store_fs_lock_key(struct fs_store *fs, const char *key, int exclusive,
		      struct store_result *res);
void store_fs_unlock_key(int *fd);
/* A write's locks: key's and those of the keys whose objects may be in the
 * way of its directories (p's DIR names), exclusive, in one global order.
 * fds gets them (FS_LOCKS_MAX); returns how many, or -1 with res filled. */
int store_fs_write_locks(struct fs_store *fs, const char *key, const struct fs_path *p,
			 int *fds, struct store_result *res);
void store_fs_write_unlock(int *fds, int n);
/* Every write's crash points call this; a test sets FENCE_STORE_FS_CRASH=N
 * to make the process die (_exit) at point N. */
void store_fs_crash_point(int n);

/* ---- store_fs_path.c: key names, walks, objects moved into directories ---- */

/* key's path (freed with store_fs_path_free). Returns 0 or -1 (ENOMEM). */
int store_fs_path_build(const char *key, struct fs_path *p);
void store_fs_path_free(struct fs_path *p);
/* Decodes one directory-entry name and appends it to out at byte at (out
 * holds FS_KEY_MAX + 2). Returns the new length with *kind FS_NAME_LEAF
 * (a plain name: file, or directory when followed by '/') or FS_NAME_CONT,
 * or -1 for a name that is not an encoded segment (the store's own). */
int store_fs_name_decode(const char *name, char *out, size_t at, int *kind);
/* Opens the directory that holds p's leaf (*dir_fd, the caller's), never
 * following a symlink; WALK_CREATE makes directories and moves objects in
 * the way (the caller holds the locks of store_fs_write_locks). */
enum store_code store_fs_walk(struct fs_store *fs, const char *key, const struct fs_path *p,
			      enum walk_mode mode, int *dir_fd, struct store_result *res);
/* Where key's object is or would be (close with store_fs_place_close). */
enum store_code store_fs_locate(struct fs_store *fs, const char *key, const struct fs_path *p,
				enum walk_mode mode, struct fs_place *pl, struct store_result *res);
void store_fs_place_close(struct fs_place *pl);
/* Moves the object file name of parent_fd (key[0..key_end)'s) into a new
 * directory of the same name as FS_NAME_OBJECT; a crash midway is undone
 * by store_fs_recover_moves. */
enum store_code store_fs_convert(struct fs_store *fs, int parent_fd, const char *name,
				 const char *key, size_t key_end, struct store_result *res);
/* At open: finishes the moves of writers that died (their temp
 * directories in .fencegate/tmp). */
void store_fs_recover_moves(struct fs_store *fs);

/* ---- store_fs_meta.c: an object's file and sidecar ----------------------- */

/* The quoted MD5 hex ETag of data[0..len). Returns 0 or -1. */
int store_fs_etag_of_buffer(const void *data, size_t len, char etag[STORE_ETAG_MAX]);
/* Reads object name of dir_fd (key's) into *obj, which the caller frees
 * with store_fs_object_free(); want_body is an enum fs_read. */
enum store_code store_fs_object_read(struct fs_store *fs, int dir_fd, const char *name,
				     const char *key, int want_body,
				     struct fs_object *obj, struct store_result *res);
void store_fs_object_free(struct fs_object *obj);
/* Writes data (or the files' ranges, their MD5 into etag; with adopt, the
 * one file itself when it can be linked, etag then untouched) to a new,
 * fsynced temp file dated mtime_s; name gets its name (remove it with
 * store_fs_temp_remove), ident its identity. */
enum store_code store_fs_temp_write(struct fs_store *fs, const void *data, size_t len,
				    const struct store_file_range *files, size_t nfiles,
				    int adopt, int64_t mtime_s, const char *key, char *name,
				    size_t namelen, char ident[FS_IDENT_MAX],
				    char etag[STORE_ETAG_MAX], struct store_result *res);
void store_fs_temp_remove(struct fs_store *fs, char *name);
/* Removes temp files and directories of writers that died (at open). */
void store_fs_sweep_temps(struct fs_store *fs, int64_t now_s, int starting);
/* STORE_OK if opts' user metadata and content type may be stored. */
enum store_code store_fs_check_user_meta(const struct store_put_opts *opts,
					 struct store_result *res);
/* The sidecar text (malloc'd, the caller frees it); NULL out of memory. */
char *store_fs_meta_render(const char *key, const char *etag, const char *ident, size_t size,
			   int64_t last_modified, const struct store_put_opts *opts);
/* Makes text key's sidecar. The current one (cur: which sidecar describes
 * the object now) is kept as the backup until the object itself moves, so
 * a crash shows the old object with its own metadata. */
enum store_code store_fs_sidecar_commit(struct fs_store *fs, const char *key, const char *text,
					enum fs_side cur, int64_t now, struct store_result *res);
/* Removes key's sidecars (after its object is gone). */
void store_fs_sidecar_remove(struct fs_store *fs, const char *key);
/* Copies a sidecar's user metadata, content type and headers into res. */
enum store_code store_fs_result_take_meta(const cJSON *json, const char *key,
					  struct store_result *res);

/* ---- store_fs_list.c: listing -------------------------------------------- */

/* The store_ops list call. */
enum store_code store_fs_list(struct store *st, const char *prefix, const char *start_after,
			      const char *continuation, int max_keys,
			      struct store_list_page *page, struct store_result *res);

#endif
