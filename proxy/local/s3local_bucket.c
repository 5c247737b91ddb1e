/* s3local_bucket.c — the embedded S3 server's buckets: bucket names, the
 * per-worker cache of open bucket stores (one local-directory store per
 * bucket directory), the mapping of store answers onto S3 errors, and the
 * CreateBucket, HeadBucket, DeleteBucket and GetBucketLocation jobs (on
 * the jobs pool). It does not parse requests or reply (s3local.c) and does
 * not list (s3local_list.c). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "http/jobs.h"
#include "ops/log.h"
#include "s3local_int.h"
#include "lock/store/store.h"

/* ---- per-worker bucket stores ----------------------------------------- */

static void bucket_path(const struct s3local *s, const char *bucket, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", s->data_dir, bucket);
}

/* A bucket's store did not open (errno from the attempt): out of
 * descriptors is 503 SlowDown, anything else 500. */
static void open_failed(struct s3l_call *c, const char *bucket, const char *err)
{
	int busy = errno == EMFILE || errno == ENFILE;

	s3l_call_fail(c, busy ? 503 : 500, busy ? "SlowDown" : "InternalError",
		      "cannot open bucket \"%s\": %s", bucket, err);
}

/* 1 if bucket's entry in the data directory is a directory of its own (a
 * symlink, even to a directory, is not a bucket: every operation answers
 * 404 NoSuchBucket and ListBuckets omits it, so that none follows it);
 * its stat in *sb. */
static int bucket_dir(const struct s3local *s, const char *bucket, struct stat *sb)
{
	char path[4096 + 80];

	bucket_path(s, bucket, path, sizeof(path));
	return lstat(path, sb) == 0 && S_ISDIR(sb->st_mode);
}

static struct store *open_bucket_store(const struct s3local *s, const char *bucket,
				       char *err, size_t errlen)
{
	struct store_config cfg = { 0 };
	char url[4096 + 80];

	snprintf(url, sizeof(url), "file://%s/%s", s->data_dir, bucket);
	cfg.url = url;
	return store_open(&cfg, err, errlen);
}

void s3l_recover_buckets(const struct s3local *s)
{
	char url[4096 + 80], err[512];
	struct dirent *de;
	struct stat sb;
	DIR *dir = opendir(s->data_dir);

	if (!dir)
		return; /* s3local_new checked it; the first request will say */
	while ((de = readdir(dir)) != NULL) {
		struct store_config cfg = { 0 };
		struct store *st;

		if (!s3_bucket_name_valid(de->d_name, strlen(de->d_name)) ||
		    !bucket_dir(s, de->d_name, &sb))
			continue;
		snprintf(url, sizeof(url), "file://%s/%s", s->data_dir, de->d_name);
		cfg.url = url;
		cfg.starting = 1;
		st = store_open(&cfg, err, sizeof(err));
		if (!st)
			log_warn("bucket \"%s\": cannot open it to clean up after a crash: %s",
				 de->d_name, err);
		store_close(st);
	}
	closedir(dir);
}

/* The store of bucket for this thread: cached per worker, re-opened when the
 * directory was replaced (deleted and created again). *owned = 1 when the
 * caller must close it (not on a worker thread). NULL with c failed
 * (NoSuchBucket or an error). Call with s->buckets held. */
struct store *s3l_bucket_store(struct s3l_call *c, int *owned)
{
	return s3l_named_store(c, c->bucket, owned);
}

struct store *s3l_named_store(struct s3l_call *c, const char *bucket, int *owned)
{
	struct s3local *s = c->s;
	struct worker_cache *wc;
	struct cached_store *slot = NULL, *victim = NULL;
	char err[512];
	struct stat sb;
	int idx = jobs_worker_index(), i;

	*owned = 0;
	if (!bucket_dir(s, bucket, &sb)) {
		s3l_call_fail(c, 404, "NoSuchBucket", "the bucket \"%s\" does not exist", bucket);
		return NULL;
	}
	if (idx < 0 || idx >= S3L_WORKERS_MAX) {
		struct store *st = open_bucket_store(s, bucket, err, sizeof(err));

		if (!st) {
			open_failed(c, bucket, err);
			return NULL;
		}
		*owned = 1;
		return st;
	}
	wc = &s->cache[idx];
	wc->tick++;
	for (i = 0; i < s->cache_slots; i++) {
		struct cached_store *cs = &wc->slot[i];

		if (cs->st && strcmp(cs->bucket, bucket) == 0) {
			slot = cs;
			break;
		}
		if (!victim || !cs->st || (victim->st && cs->used < victim->used))
			victim = cs;
	}
	if (slot && (slot->dev != sb.st_dev || slot->ino != sb.st_ino)) {
		store_close(slot->st);
		slot->st = NULL;
	}
	if (!slot) {
		slot = victim;
		store_close(slot->st);
		slot->st = NULL;
	}
	if (!slot->st) {
		slot->st = open_bucket_store(s, bucket, err, sizeof(err));
		if (!slot->st && (errno == EMFILE || errno == ENFILE)) {
			/* out of descriptors: this worker's other open stores
			 * are idle (only it uses them); give them back, once */
			for (i = 0; i < S3L_CACHE_SLOTS; i++) {
				store_close(wc->slot[i].st);
				wc->slot[i].st = NULL;
			}
			slot->st = open_bucket_store(s, bucket, err, sizeof(err));
		}
		if (!slot->st) {
			open_failed(c, bucket, err);
			return NULL;
		}
		snprintf(slot->bucket, sizeof(slot->bucket), "%s", bucket);
		slot->dev = sb.st_dev;
		slot->ino = sb.st_ino;
	}
	slot->used = wc->tick;
	return slot->st;
}

void s3l_release_store(struct store *st, int owned)
{
	if (owned)
		store_close(st);
}

/* Maps a failed store answer onto the S3 error the client gets. */
void s3l_fail_from_store(struct s3l_call *c, const struct store_result *res)
{
	switch (res->code) {
	case STORE_OK:
		break;
	case STORE_NOT_FOUND:
		s3l_call_fail(c, 404, "NoSuchKey", "the key \"%s\" does not exist", c->key ? c->key : "");
		break;
	case STORE_PRECONDITION_FAILED:
		s3l_call_fail(c, 412, "PreconditionFailed",
			      "at least one of the preconditions you specified did not hold: %s",
			      res->err_message);
		break;
	case STORE_CONFLICT:
		s3l_call_fail(c, 409, "ConditionalRequestConflict", "%s", res->err_message);
		break;
	case STORE_ERR_INVALID:
		s3l_call_fail(c, 400, strcmp(res->err_code, "KeyTooLongError") == 0
				  ? "KeyTooLongError" : "InvalidArgument",
			  "%s", res->err_message);
		break;
	case STORE_ERR_NOMEM:
		s3l_call_fail(c, 503, "SlowDown", "out of memory: %s", res->err_message);
		break;
	default:
		/* out of descriptors (store_fs: SlowDown) is a busy server, not a fault */
		if (strcmp(res->err_code, "SlowDown") == 0)
			s3l_call_fail(c, 503, "SlowDown", "the local store is busy: %s",
				      res->err_message);
		else
			s3l_call_fail(c, 500, "InternalError", "the local store failed: %s",
				      res->err_message[0] ? res->err_message
							  : store_strerror(res->code));
		break;
	}
}

/* ---- bucket jobs -------------------------------------------------------- */

/* Removes the tree under dir_fd (consumed) and then name in parent_fd. */
static int remove_tree(int parent_fd, const char *name, int depth)
{
	int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	DIR *dir;
	int rc = 0;

	if (fd < 0)
		return unlinkat(parent_fd, name, 0);
	if (depth > 2 * S3L_KEY_MAX || !(dir = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
			if (remove_tree(dirfd(dir), de->d_name, depth + 1) < 0)
				rc = -1;
		} else if (unlinkat(dirfd(dir), de->d_name, 0) < 0) {
			rc = -1;
		}
	}
	closedir(dir);
	if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0)
		rc = -1;
	return rc;
}

void s3l_run_create_bucket(struct s3l_call *c)
{
	struct s3local *s = c->s;
	char path[4096 + 80], err[512];
	struct store *st;
	int fd;

	bucket_path(s, c->bucket, path, sizeof(path));
	pthread_rwlock_wrlock(s->buckets);
	if (mkdir(path, 0755) < 0) {
		if (errno == EEXIST)
			s3l_call_fail(c, 409, "BucketAlreadyOwnedByYou",
				      "the bucket \"%s\" already exists and is yours", c->bucket);
		else
			s3l_call_fail(c, 500, "InternalError", "cannot create the directory of bucket \"%s\": %s",
				      c->bucket, strerror(errno));
		goto out;
	}
	fd = open(s->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	/* opening the store makes its reserved directories now */
	st = open_bucket_store(s, c->bucket, err, sizeof(err));
	if (!st) {
		s3l_call_fail(c, 500, "InternalError", "bucket \"%s\": %s", c->bucket, err);
		goto out;
	}
	store_close(st);
	c->status = 200;
out:
	pthread_rwlock_unlock(s->buckets);
}

void s3l_run_head_bucket(struct s3l_call *c)
{
	struct stat sb;

	if (!bucket_dir(c->s, c->bucket, &sb))
		s3l_call_fail(c, 404, "NoSuchBucket", "the bucket \"%s\" does not exist", c->bucket);
	else
		c->status = 200;
}

void s3l_run_delete_bucket(struct s3l_call *c)
{
	struct s3local *s = c->s;
	struct store_list_page page = { 0 };
	struct store_result res = STORE_RESULT_INIT;
	char path[4096 + 80], trash[4096 + 80], name[128], err[512];
	struct store *st = NULL;
	struct stat sb;
	int data_fd = -1;

	pthread_rwlock_wrlock(s->buckets);
	bucket_path(s, c->bucket, path, sizeof(path));
	if (!bucket_dir(s, c->bucket, &sb)) {
		s3l_call_fail(c, 404, "NoSuchBucket", "the bucket \"%s\" does not exist", c->bucket);
		goto out;
	}
	st = open_bucket_store(s, c->bucket, err, sizeof(err));
	if (!st) {
		s3l_call_fail(c, 500, "InternalError", "bucket \"%s\": %s", c->bucket, err);
		goto out;
	}
	if (store_list(st, "", NULL, NULL, 1, &page, &res) != STORE_OK) {
		s3l_fail_from_store(c, &res);
		goto out;
	}
	if (page.n > 0) {
		s3l_call_fail(c, 409, "BucketNotEmpty",
			      "the bucket \"%s\" is not empty (it holds \"%s\"); delete its objects first",
			      c->bucket, page.entries[0].key);
		goto out;
	}
	store_close(st);
	st = NULL;
	/* Out of the name space first (atomic), then removed at leisure; the
	 * trash name is not a valid bucket name, so it is never listed. */
	snprintf(name, sizeof(name), ".s3local-trash-%ld-%lu", (long)getpid(), ++s->shared->trash_seq);
	snprintf(trash, sizeof(trash), "%s/%s", s->data_dir, name);
	if (rename(path, trash) < 0) {
		s3l_call_fail(c, 500, "InternalError", "cannot remove bucket \"%s\": %s",
			      c->bucket, strerror(errno));
		goto out;
	}
	data_fd = open(s->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (data_fd >= 0) {
		fsync(data_fd);
		if (remove_tree(data_fd, name, 0) < 0)
			snprintf(c->err_msg, sizeof(c->err_msg),
				 "bucket \"%s\" deleted but \"%.200s\" could not be removed completely",
				 c->bucket, name);
		close(data_fd);
	}
	c->status = 204;
out:
	pthread_rwlock_unlock(s->buckets);
	store_close(st);
	store_list_page_free(&page);
	store_result_clear(&res);
}

void s3l_run_location(struct s3l_call *c)
{
	static const char body[] = S3L_XML_DECL "<LocationConstraint xmlns=\"" S3L_XMLNS "\"/>";

	s3l_run_head_bucket(c);
	if (c->err_code)
		return;
	c->xml = strdup(body);
	if (!c->xml) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		return;
	}
	c->xml_len = sizeof(body) - 1;
	c->status = 200;
}
