/* s3local_mpu.c — the embedded S3 server's multipart uploads:
 * CreateMultipartUpload, AbortMultipartUpload, ListParts and
 * ListMultipartUploads, and the upload directory UploadPart, UploadPartCopy
 * and CompleteMultipartUpload work in. An upload is the
 * directory BUCKET/.fencegate/uploads/ID holding upload.json (key, when,
 * content type, headers, metadata with the fencing stamp of its create)
 * and one fsynced file per part named "pNNNNN.MD5HEX"; a per-upload flock
 * serializes part commits, completion and abort. Completion writes the
 * object from the part files through store_put (no copy in memory), with
 * S3's "md5-of-md5s-N" ETag and the same compare-and-swap as a fenced PUT,
 * refused when the upload's epoch is no longer the lock's (s3local.h).
 * Parts are s3local_mpu_part.c, completion s3local_mpu_complete.c. It does not parse requests
 * (s3local.c) nor decide fencing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <event2/buffer.h>
#include <expat.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "wire/pct.h"
#include "s3local.h"
#include "s3local_int.h"
#include "lock/store/store.h"

#define UPLOAD_FILE   "upload.json"
#define COPY_CHUNK    (1024 * 1024) /* s3l_write_file reads a file range this much at a time */

static int upload_id_valid(const char *id)
{
	size_t i;

	if (!id || strlen(id) != S3L_UPLOAD_ID_LEN)
		return 0;
	for (i = 0; i < S3L_UPLOAD_ID_LEN; i++)
		if (hex_value((unsigned char)id[i]) < 0)
			return 0;
	return 1;
}

/* BUCKET/.fencegate/uploads, opened (made when create). -1 with c failed. */
int s3l_uploads_dir(struct s3l_call *c, int create)
{
	char path[4096 + 128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s/.fencegate/uploads", c->s->data_dir, c->bucket);
	if (create && mkdir(path, 0755) == 0) {
		char parent[4096 + 128];
		int pfd;

		snprintf(parent, sizeof(parent), "%s/%s/.fencegate", c->s->data_dir, c->bucket);
		pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd >= 0) {
			fsync(pfd);
			close(pfd);
		}
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno != ENOENT || create))
		s3l_call_fail(c, 500, "InternalError", "cannot open the uploads of \"%s\": %s",
			      c->bucket, strerror(errno));
	return fd;
}

void s3l_upload_close(struct s3l_upload *u)
{
	if (u->dir_fd >= 0)
		close(u->dir_fd);
	if (u->lock_fd >= 0)
		close(u->lock_fd); /* releases the flock */
	cJSON_Delete(u->json);
	u->dir_fd = u->lock_fd = -1;
	u->json = NULL;
}

/* Reads a small file of dir_fd; NULL when missing or too big. */
static char *read_small(int dir_fd, const char *name, size_t max)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char *buf = NULL;
	ssize_t n;

	if (fd < 0)
		return NULL;
	buf = malloc(max + 1);
	if (buf && (n = read(fd, buf, max)) >= 0 && (size_t)n < max) {
		buf[n] = '\0';
	} else {
		free(buf);
		buf = NULL;
	}
	close(fd);
	return buf;
}

int s3l_upload_lock(struct s3l_call *c, struct s3l_upload *u)
{
	struct stat sb;

	(void)c;
	if (flock(u->lock_fd, LOCK_EX) < 0 ||
	    fstatat(u->dir_fd, UPLOAD_FILE, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	return 0;
}

/* Opens c->upload_id of c->key, with lock also taking its lock. Returns 0,
 * or -1 with c failed (404 NoSuchUpload for an unknown id or another
 * key's). */
int s3l_upload_open(struct s3l_call *c, struct s3l_upload *u, int lock)
{
	const cJSON *key;
	char *text;
	int ufd;

	u->dir_fd = u->lock_fd = -1;
	u->json = NULL;
	if (!upload_id_valid(c->upload_id))
		goto none;
	ufd = s3l_uploads_dir(c, 0);
	if (ufd < 0)
		goto none;
	u->dir_fd = openat(ufd, c->upload_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(ufd);
	if (u->dir_fd < 0)
		goto none;
	u->lock_fd = openat(u->dir_fd, UPLOAD_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (u->lock_fd < 0 || (lock && s3l_upload_lock(c, u) < 0))
		goto none;
	text = read_small(u->dir_fd, UPLOAD_FILE, 64 * 1024);
	u->json = text ? cJSON_Parse(text) : NULL;
	free(text);
	key = cJSON_GetObjectItemCaseSensitive(u->json, "key");
	if (!cJSON_IsString(key) || strcmp(key->valuestring, c->key) != 0)
		goto none;
	return 0;
none:
	s3l_upload_close(u);
	s3l_call_fail(c, 404, "NoSuchUpload",
		      "the specified upload does not exist: it may have been aborted or completed");
	return -1;
}

/* Writes len bytes to a new fsynced file name in dir_fd (O_EXCL). */
int s3l_write_file(int dir_fd, const char *name, const void *data, size_t len,
		      const struct store_file_range *from, unsigned char md5[16])
{
	EVP_MD_CTX *md = NULL;
	char *buf = NULL;
	int64_t off = 0;
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	if (from && (!(buf = malloc(COPY_CHUNK)) || !(md = EVP_MD_CTX_new()) ||
		     !EVP_DigestInit_ex(md, EVP_md5(), NULL))) {
		errno = ENOMEM;
		goto fail;
	}
	for (;;) {
		const char *p = data;
		ssize_t n;

		if (from) {
			size_t want = from->len - off < COPY_CHUNK ? (size_t)(from->len - off) : COPY_CHUNK;

			if (want == 0)
				break;
			n = pread(from->fd, buf, want, from->offset + off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				if (n == 0)
					errno = EIO; /* the source is shorter than it said */
				goto fail;
			}
			off += n;
			p = buf;
			len = (size_t)n;
			if (!EVP_DigestUpdate(md, buf, len))
				goto fail;
		} else if (len == 0) {
			break;
		}
		while (len > 0) {
			n = write(fd, p, len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				goto fail;
			p += n;
			len -= (size_t)n;
		}
		if (!from)
			break;
	}
	if (from && !EVP_DigestFinal_ex(md, md5, NULL))
		goto fail;
	if (fsync(fd) < 0)
		goto fail;
	EVP_MD_CTX_free(md);
	free(buf);
	return close(fd);
fail:
	EVP_MD_CTX_free(md);
	free(buf);
	close(fd);
	unlinkat(dir_fd, name, 0);
	return -1;
}

/* Removes an upload directory's files, then the directory. */
void s3l_remove_upload(int ufd, const char *id)
{
	int fd = openat(ufd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	DIR *dir;

	if (fd >= 0 && (dir = fdopendir(fd)) != NULL) {
		while ((de = readdir(dir)) != NULL)
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
				unlinkat(dirfd(dir), de->d_name, 0);
		closedir(dir);
	} else if (fd >= 0) {
		close(fd);
	}
	unlinkat(ufd, id, AT_REMOVEDIR);
	fsync(ufd);
}

/* ---- CreateMultipartUpload --------------------------------------------- */

static cJSON *upload_json(const struct s3l_call *c)
{
	cJSON *j = cJSON_CreateObject(), *meta, *hdrs;
	size_t i;

	if (!j || !cJSON_AddStringToObject(j, "key", c->key) ||
	    !cJSON_AddNumberToObject(j, "initiated", (double)time(NULL)) ||
	    (c->content_type && !cJSON_AddStringToObject(j, "contentType", c->content_type)) ||
	    !(meta = cJSON_AddObjectToObject(j, "meta")) ||
	    !(hdrs = cJSON_AddObjectToObject(j, "headers")))
		goto fail;
	for (i = 0; i < c->nmeta; i++) {
		char *lower = strdup(c->meta[i].name), *p;

		if (!lower)
			goto fail;
		for (p = lower; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		cJSON_DeleteItemFromObjectCaseSensitive(meta, lower);
		if (!cJSON_AddStringToObject(meta, lower, c->meta[i].value)) {
			free(lower);
			goto fail;
		}
		free(lower);
	}
	for (i = 0; i < STORE_HDR_COUNT; i++)
		if (c->headers[i] && !cJSON_AddStringToObject(hdrs, store_hdr_names[i], c->headers[i]))
			goto fail;
	return j;
fail:
	cJSON_Delete(j);
	return NULL;
}

/* With a fencing epoch: an object already written under a newer one makes
 * the upload pointless (the completion would be refused). 0 or -1. */
static int refuse_newer_object(struct s3l_call *c, struct store *st, uint64_t epoch)
{
	struct store_result cur = STORE_RESULT_INIT;
	const char *v;
	uint64_t e = 0;
	int r = 0;

	if (store_head(st, c->key, &cur) == STORE_OK &&
	    (v = store_result_meta(&cur, S3LOCAL_EPOCH_META)) != NULL) {
		e = strtoull(v, NULL, 10);
		if (e > epoch) {
			c->has_object_epoch = 1;
			c->object_epoch = e;
			s3l_call_fail(c, 409, "FencingTokenStale",
				      "the object \"%s\" was written under epoch %" PRIu64
				      ", newer than the upload's epoch %" PRIu64, c->key, e, epoch);
			r = -1;
		}
	}
	store_result_clear(&cur);
	return r;
}

void s3l_run_mpu_create(struct s3l_call *c)
{
	unsigned char rnd[S3L_UPLOAD_ID_LEN / 2];
	char id[S3L_UPLOAD_ID_LEN + 1], *text = NULL;
	struct evbuffer *b = NULL;
	struct store *st = NULL;
	cJSON *j = NULL;
	int owned = 0, ufd = -1, dfd = -1;

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st)
		goto out;
	if (c->has_epoch && refuse_newer_object(c, st, c->epoch) < 0)
		goto out;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		s3l_call_fail(c, 500, "InternalError", "no randomness for an upload id");
		goto out;
	}
	hex_encode(rnd, sizeof(rnd), id);
	id[S3L_UPLOAD_ID_LEN] = '\0';
	j = upload_json(c);
	text = j ? cJSON_PrintUnformatted(j) : NULL;
	b = evbuffer_new();
	if (!text || !b) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		goto out;
	}
	ufd = s3l_uploads_dir(c, 1);
	if (ufd < 0)
		goto out;
	if (mkdirat(ufd, id, 0755) < 0 ||
	    (dfd = openat(ufd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    s3l_write_file(dfd, UPLOAD_FILE, text, strlen(text), NULL, NULL) < 0 || fsync(dfd) < 0 || fsync(ufd) < 0) {
		s3l_call_fail(c, 500, "InternalError", "cannot record the upload: %s", strerror(errno));
		goto out;
	}
	evbuffer_add_printf(b, S3L_XML_DECL "<InitiateMultipartUploadResult xmlns=\"" S3L_XMLNS "\">");
	s3l_xml_elem(b, "Bucket", c->bucket, 0);
	s3l_xml_elem(b, "Key", c->key, 0);
	s3l_xml_elem(b, "UploadId", id, 0);
	evbuffer_add_printf(b, "</InitiateMultipartUploadResult>");
	if (s3l_take_xml(c, b) == 0 && !(c->upload_id = strdup(id)))
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
	if (dfd >= 0)
		close(dfd);
	if (ufd >= 0)
		close(ufd);
	if (b)
		evbuffer_free(b);
	free(text);
	cJSON_Delete(j);
}

/* ---- AbortMultipartUpload, ListParts, ListMultipartUploads -------------- */

void s3l_run_mpu_abort(struct s3l_call *c)
{
	struct s3l_upload u = { .dir_fd = -1, .lock_fd = -1 };
	struct store *st = NULL;
	int owned = 0, ufd;

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st || s3l_upload_open(c, &u, 1) < 0)
		goto out;
	ufd = s3l_uploads_dir(c, 0);
	if (ufd >= 0) {
		s3l_remove_upload(ufd, c->upload_id);
		close(ufd);
	}
	c->status = 204;
out:
	s3l_upload_close(&u);
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
}

void s3l_run_mpu_list_parts(struct s3l_call *c)
{
	struct s3l_upload u = { .dir_fd = -1, .lock_fd = -1 };
	struct evbuffer *b = evbuffer_new();
	struct s3l_part *parts = NULL;
	struct store *st = NULL;
	size_t n = 0, i, shown = 0;
	int owned = 0, marker = c->part_number, max = c->max_keys, last = 0;
	char when[40], etag[40];

	pthread_rwlock_rdlock(c->s->buckets);
	if (!b) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		goto out;
	}
	st = s3l_bucket_store(c, &owned);
	if (!st || s3l_upload_open(c, &u, 1) < 0)
		goto out;
	if (s3l_read_parts(u.dir_fd, &parts, &n) < 0) {
		s3l_call_fail(c, 500, "InternalError", "cannot read the upload's parts");
		goto out;
	}
	evbuffer_add_printf(b, S3L_XML_DECL "<ListPartsResult xmlns=\"" S3L_XMLNS "\">");
	s3l_xml_elem(b, "Bucket", c->bucket, 0);
	s3l_xml_elem(b, "Key", c->key, 0);
	s3l_xml_elem(b, "UploadId", c->upload_id, 0);
	evbuffer_add_printf(b, "<Initiator><ID>fencegate</ID><DisplayName>fencegate</DisplayName>"
			    "</Initiator>" S3L_OWNER "<StorageClass>STANDARD</StorageClass>"
			    "<PartNumberMarker>%d</PartNumberMarker><MaxParts>%d</MaxParts>", marker, max);
	for (i = 0; i < n; i++) {
		if (parts[i].number <= marker)
			continue;
		if ((int)shown == max)
			break;
		s3l_iso8601(parts[i].mtime, when, sizeof(when));
		snprintf(etag, sizeof(etag), "\"%s\"", parts[i].md5);
		evbuffer_add_printf(b, "<Part><PartNumber>%d</PartNumber><LastModified>%s</LastModified>",
				    parts[i].number, when);
		s3l_xml_elem(b, "ETag", etag, 0);
		evbuffer_add_printf(b, "<Size>%" PRId64 "</Size></Part>", parts[i].size);
		last = parts[i].number;
		shown++;
	}
	evbuffer_add_printf(b, "<NextPartNumberMarker>%d</NextPartNumberMarker>"
			    "<IsTruncated>%s</IsTruncated></ListPartsResult>", last,
			    i < n ? "true" : "false");
	s3l_take_xml(c, b);
out:
	s3l_upload_close(&u);
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
	free(parts);
	if (b)
		evbuffer_free(b);
}

/* One upload in a listing. */
struct upload_entry {
	char *key;
	char id[S3L_UPLOAD_ID_LEN + 1];
	int64_t initiated;
};

static int upload_entry_cmp(const void *a, const void *b)
{
	const struct upload_entry *x = a, *y = b;
	int r = strcmp(x->key, y->key);

	return r ? r : strcmp(x->id, y->id);
}

void s3l_run_mpu_list_uploads(struct s3l_call *c)
{
	struct upload_entry *v = NULL;
	struct evbuffer *b = evbuffer_new();
	struct store *st = NULL;
	size_t n = 0, cap = 0, i, shown = 0;
	const char *prefix = c->prefix ? c->prefix : "";
	const char *km = c->key_marker ? c->key_marker : "", *um = c->upload_id_marker;
	struct dirent *de;
	DIR *dir = NULL;
	int owned = 0, ufd = -1;
	char when[40];

	pthread_rwlock_rdlock(c->s->buckets);
	if (!b) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		goto out;
	}
	st = s3l_bucket_store(c, &owned);
	if (!st)
		goto out;
	ufd = s3l_uploads_dir(c, 0);
	if (ufd >= 0 && (dir = fdopendir(dup(ufd))) != NULL) {
		while ((de = readdir(dir)) != NULL) {
			int dfd;
			char *text;
			cJSON *j;
			const cJSON *k, *t;

			if (!upload_id_valid(de->d_name))
				continue;
			dfd = openat(ufd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			text = dfd >= 0 ? read_small(dfd, UPLOAD_FILE, 64 * 1024) : NULL;
			if (dfd >= 0)
				close(dfd);
			j = text ? cJSON_Parse(text) : NULL;
			free(text);
			k = cJSON_GetObjectItemCaseSensitive(j, "key");
			t = cJSON_GetObjectItemCaseSensitive(j, "initiated");
			if (cJSON_IsString(k) && strncmp(k->valuestring, prefix, strlen(prefix)) == 0) {
				if (n == cap) {
					struct upload_entry *g = realloc(v, (cap ? cap * 2 : 16) * sizeof(*g));

					if (!g) {
						cJSON_Delete(j);
						break;
					}
					v = g;
					cap = cap ? cap * 2 : 16;
				}
				v[n].key = strdup(k->valuestring);
				memcpy(v[n].id, de->d_name, S3L_UPLOAD_ID_LEN + 1);
				v[n].initiated = cJSON_IsNumber(t) ? (int64_t)t->valuedouble : 0;
				if (v[n].key)
					n++;
			}
			cJSON_Delete(j);
		}
		closedir(dir);
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), upload_entry_cmp);
	evbuffer_add_printf(b, S3L_XML_DECL "<ListMultipartUploadsResult xmlns=\"" S3L_XMLNS "\">");
	s3l_xml_elem(b, "Bucket", c->bucket, 0);
	s3l_xml_elem(b, "KeyMarker", km, 0);
	s3l_xml_elem(b, "UploadIdMarker", um ? um : "", 0);
	s3l_xml_elem(b, "Prefix", prefix, 0);
	evbuffer_add_printf(b, "<MaxUploads>%d</MaxUploads>", c->max_keys);
	for (i = 0; i < n; i++) {
		int kc = strcmp(v[i].key, km);

		if (*km && (kc < 0 || (kc == 0 && (!um || strcmp(v[i].id, um) <= 0))))
			continue;
		if ((int)shown == c->max_keys)
			break;
		s3l_iso8601(v[i].initiated, when, sizeof(when));
		evbuffer_add_printf(b, "<Upload>");
		s3l_xml_elem(b, "Key", v[i].key, 0);
		s3l_xml_elem(b, "UploadId", v[i].id, 0);
		evbuffer_add_printf(b, "<Initiator><ID>fencegate</ID><DisplayName>fencegate</DisplayName>"
				    "</Initiator>" S3L_OWNER "<StorageClass>STANDARD</StorageClass>"
				    "<Initiated>%s</Initiated></Upload>", when);
		shown++;
	}
	if (i < n && shown) {
		s3l_xml_elem(b, "NextKeyMarker", v[i - 1].key, 0);
		s3l_xml_elem(b, "NextUploadIdMarker", v[i - 1].id, 0);
	}
	evbuffer_add_printf(b, "<IsTruncated>%s</IsTruncated></ListMultipartUploadsResult>",
			    i < n ? "true" : "false");
	s3l_take_xml(c, b);
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
	if (ufd >= 0)
		close(ufd);
	for (i = 0; i < n; i++)
		free(v[i].key);
	free(v);
	if (b)
		evbuffer_free(b);
}

/* ---- request parsing (loop thread) ------------------------------------- */

int s3l_take_mpu_params(struct s3l_call *c, const struct s3l_query *q)
{
	const char *v;
	char *end;
	long n;

	v = s3l_query_get(q, "uploadId", NULL);
	if (v && !(c->upload_id = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, c->op == OP_MPU_LIST_PARTS ? "part-number-marker" : "partNumber", NULL);
	if (v) {
		n = strtol(v, &end, 10);
		if (!*v || *end || n < (c->op == OP_MPU_LIST_PARTS ? 0 : 1) || n > S3L_PARTS_MAX) {
			s3l_bad_request(c->req, 400, "InvalidArgument",
					"the part number must be an integer from 1 to 10000");
			return -1;
		}
		c->part_number = (int)n;
	}
	c->max_keys = 1000;
	v = s3l_query_get(q, c->op == OP_MPU_LIST_PARTS ? "max-parts" : "max-uploads", NULL);
	if (v) {
		n = strtol(v, &end, 10);
		if (!*v || *end || n < 0) {
			s3l_bad_request(c->req, 400, "InvalidArgument", "max-parts/max-uploads must be a number");
			return -1;
		}
		c->max_keys = n > 1000 ? 1000 : (int)n;
	}
	v = s3l_query_get(q, "key-marker", NULL);
	if (v && !(c->key_marker = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, "upload-id-marker", NULL);
	if (v && !(c->upload_id_marker = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, "prefix", NULL);
	if (c->op == OP_MPU_LIST_UPLOADS && v && !(c->prefix = strdup(v)))
		goto nomem;
	return 0;
nomem:
	s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
	return -1;
}
