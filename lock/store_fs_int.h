/* store_fs_int.h — what the local-directory store's files share (store_fs.c,
 * results, key rules, per-key locks, the walk to a key's directory and the
 * object operations; store_fs_meta.c, an object's file and sidecar on disk;
 * store_fs_list.c, listing). Not a public interface: store.h is.
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

#define FS_NO_LOCK (-2)

struct fs_store {
	struct store st;           /* must be first */
	int root_fd;               /* DIR */
	int tmp_fd;                /* DIR/.fencegate/tmp, -1 if unavailable */
	int meta_fd;               /* DIR/.fencegate/meta */
	int locks_fd;              /* DIR/.fencegate/locks */
	const struct timesrc *time;
	unsigned long tmp_seq;     /* makes temp file names unique per store */
};

/* One object as read from disk, its sidecar checked against it. */
struct fs_object {
	char etag[STORE_ETAG_MAX];
	int64_t size;
	int64_t last_modified;
	char *body;                /* only when asked for; owned */
	cJSON *json;               /* the sidecar when it matches the object; owned */
};

/* How to walk to a key's directory. */
enum walk_mode {
	WALK_READ,         /* missing or non-directory component: not found */
	WALK_CREATE,       /* make missing directories; a file in the way is a collision */
	WALK_CREATE_META,  /* make missing directories; a file in the way is a stale sidecar */
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
/* 1 if key lies in the store's reserved name space (FS_RESERVED). */
int store_fs_is_reserved(const char *key);
/* Closes *fd if open and sets it to -1. */
void store_fs_close_fd(int *fd);
/* The lock on key (exclusive for writers, shared for readers): its fd,
 * FS_NO_LOCK (shared, read-only store), or -1 with res filled. */
int store_fs_lock_key(struct fs_store *fs, const char *key, int exclusive,
		      struct store_result *res);
void store_fs_unlock_key(int *fd);
/* Opens the directory that holds key's last segment under base_fd without
 * following a symlink: *dir_fd (the caller's) and *leaf (into key). */
enum store_code store_fs_open_key_dir(int base_fd, const char *key, enum walk_mode mode,
				      int *dir_fd, const char **leaf,
				      struct store_result *res);

/* ---- store_fs_meta.c: an object's file and sidecar ----------------------- */

/* The quoted MD5 hex ETag of data[0..len). Returns 0 or -1. */
int store_fs_etag_of_buffer(const void *data, size_t len, char etag[STORE_ETAG_MAX]);
/* Reads object leaf of data_fd (sidecar in meta_fd, may be -1) into *obj,
 * which the caller frees with store_fs_object_free(); the body only when
 * want_body. */
enum store_code store_fs_object_read(int data_fd, int meta_fd, const char *leaf,
				     const char *key, int want_body,
				     struct fs_object *obj, struct store_result *res);
void store_fs_object_free(struct fs_object *obj);
/* Writes data to a new, fsynced temp file dated mtime_s; name gets its name
 * (remove it with store_fs_temp_remove), ident its identity. */
enum store_code store_fs_temp_write(struct fs_store *fs, const void *data, size_t len,
				    int64_t mtime_s, const char *key, char *name,
				    size_t namelen, char ident[FS_IDENT_MAX],
				    struct store_result *res);
void store_fs_temp_remove(struct fs_store *fs, char *name);
/* STORE_OK if opts' user metadata and content type may be stored. */
enum store_code store_fs_check_user_meta(const struct store_put_opts *opts,
					 struct store_result *res);
/* The sidecar text (malloc'd, the caller frees it); NULL out of memory. */
char *store_fs_meta_render(const char *etag, const char *ident, size_t size,
			   int64_t last_modified, const struct store_put_opts *opts);
/* Copies a sidecar's user metadata into res. */
enum store_code store_fs_result_take_meta(const cJSON *json, const char *key,
					  struct store_result *res);

/* ---- store_fs_list.c: listing -------------------------------------------- */

/* The store_ops list call. */
enum store_code store_fs_list(struct store *st, const char *prefix, const char *start_after,
			      const char *continuation, int max_keys,
			      struct store_list_page *page, struct store_result *res);

#endif
