/* s3local_mpu_part.c — the parts of the embedded S3 server's multipart
 * uploads: UploadPart (a spooled body linked into the upload directory, or
 * a short one written out) and UploadPartCopy (a range of another object,
 * read from that version's file as the part is written, never whole in
 * memory), each committed as "pNNNNN.MD5HEX" under the upload's lock; and
 * reading the list of parts back. The upload directory itself is
 * s3local_mpu.c's; fencing a part is the caller's (s3local.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "wire/pct.h"
#include "s3local.h"
#include "s3local_int.h"
#include "lock/store/store.h"

/* ---- UploadPart, UploadPartCopy ---------------------------------------- */

/* The parts on disk, sorted by number (*out the caller's). -1 on failure. */
int s3l_read_parts(int dir_fd, struct s3l_part **out, size_t *nout)
{
	struct s3l_part *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dir;
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*out = NULL;
	*nout = 0;
	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(dir)) != NULL) {
		struct stat sb;
		int num = 0;
		char md5[33];

		if (sscanf(de->d_name, "p%5d.%32[0-9a-f]", &num, md5) != 2 || strlen(de->d_name) != 39 ||
		    fstatat(dir_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode))
			continue;
		if (n == cap) {
			struct s3l_part *g = realloc(v, (cap ? cap * 2 : 16) * sizeof(*v));

			if (!g) {
				free(v);
				closedir(dir);
				return -1;
			}
			v = g;
			cap = cap ? cap * 2 : 16;
		}
		v[n].number = num;
		memcpy(v[n].md5, md5, 33);
		v[n].size = sb.st_size;
		v[n].mtime = sb.st_mtime;
		n++;
	}
	closedir(dir);
	for (size_t i = 1; i < n; i++) /* insertion sort: parts arrive nearly sorted */
		for (size_t k = i; k > 0 && v[k - 1].number > v[k].number; k--) {
			struct s3l_part t = v[k];

			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	*out = v;
	*nout = n;
	return 0;
}

/* Stores data (md5 NULL), or the spooled body whose MD5 is md5, as part
 * c->part_number of the open upload, replacing an earlier one of the same
 * number. md5hex gets its MD5. 0 or -1. */
static int store_part(struct s3l_call *c, struct s3l_upload *u, const void *data, size_t len,
		      const struct store_file_range *from, const unsigned char *md5, char md5hex[33])
{
	unsigned char md[EVP_MAX_MD_SIZE], rnd[8];
	unsigned int mdlen = 0;
	char tmp[64], name[48], old_prefix[8];
	struct s3l_part *parts = NULL;
	size_t n = 0, i;

	if ((!md5 && !from && !EVP_Digest(data ? data : "", len, md, &mdlen, EVP_md5(), NULL)) ||
	    RAND_bytes(rnd, sizeof(rnd)) != 1) {
		s3l_call_fail(c, 500, "InternalError", "computing the part's MD5 failed");
		return -1;
	}
	snprintf(tmp, sizeof(tmp), ".tmp-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3],
		 rnd[4], rnd[5]);
	if ((md5 ? s3l_spool_link(c, u->dir_fd, tmp)
		 : s3l_write_file(u->dir_fd, tmp, data, len, from, md)) < 0) {
		s3l_call_fail(c, 500, "InternalError", "cannot write the part: %s", strerror(errno));
		return -1;
	}
	hex_encode(md5 ? md5 : md, 16, md5hex);
	md5hex[32] = '\0';
	/* the bytes are on disk; the lock covers only the swap of names */
	if (s3l_upload_lock(c, u) < 0) {
		unlinkat(u->dir_fd, tmp, 0);
		s3l_call_fail(c, 404, "NoSuchUpload",
			      "the upload was completed or aborted while this part was sent");
		return -1;
	}
	snprintf(name, sizeof(name), "p%05d.%s", c->part_number, md5hex);
	snprintf(old_prefix, sizeof(old_prefix), "p%05d.", c->part_number);
	if (s3l_read_parts(u->dir_fd, &parts, &n) == 0)
		for (i = 0; i < n; i++)
			if (parts[i].number == c->part_number && strcmp(parts[i].md5, md5hex) != 0) {
				char oldname[48];

				snprintf(oldname, sizeof(oldname), "%s%s", old_prefix, parts[i].md5);
				unlinkat(u->dir_fd, oldname, 0);
			}
	free(parts);
	if (renameat(u->dir_fd, tmp, u->dir_fd, name) < 0 || fsync(u->dir_fd) < 0) {
		unlinkat(u->dir_fd, tmp, 0);
		s3l_call_fail(c, 500, "InternalError", "cannot store the part: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* "bytes=A-B" within size into *start, *len. 0, or -1 with c failed. */
static int copy_range(struct s3l_call *c, int64_t size, int64_t *start, int64_t *len)
{
	long long a, b;
	char extra;

	*start = 0;
	*len = size;
	if (!c->copy_range)
		return 0;
	if (sscanf(c->copy_range, "bytes=%lld-%lld%c", &a, &b, &extra) != 2 || a < 0 || b < a ||
	    b >= size) {
		s3l_call_fail(c, 400, "InvalidRange",
			      "x-amz-copy-source-range must be bytes=first-last within the source "
			      "(%" PRId64 " bytes)", size);
		return -1;
	}
	*start = a;
	*len = b - a + 1;
	return 0;
}

void s3l_run_mpu_part(struct s3l_call *c)
{
	struct store_result src = STORE_RESULT_INIT;
	struct s3l_upload u = { .dir_fd = -1, .lock_fd = -1 };
	struct evbuffer *b = NULL;
	struct store *st = NULL;
	struct store_file_range r = { .fd = -1 }, from = { .fd = -1 };
	const void *data = c->body;
	size_t len = c->body_len;
	char md5hex[33], etag[40], when[40];
	unsigned char md5[16];
	int owned = 0, spooled = 0;

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st)
		goto out;
	if (c->op == OP_MPU_PART && s3l_prepare_body(c, &r) < 0)
		goto out;
	data = c->body; /* a short spooled body ends up there */
	len = c->body_len;
	if (r.fd >= 0) {
		/* the spooled body's MD5, which s3l_prepare_body checked */
		spooled = 1;
		if (s3l_spool_md5(c->spool, md5) < 0) {
			s3l_call_fail(c, 500, "InternalError", "the part's MD5 is lost");
			goto out;
		}
	}
	if (c->op == OP_MPU_PART_COPY) {
		/* the source's range, read from disk as the part is written */
		if (s3l_read_copy_source(c, &src, &from.fd) < 0 ||
		    copy_range(c, src.content_length, &from.offset, &from.len) < 0)
			goto out;
		if (from.len > S3L_STREAM_MAX) {
			s3l_call_fail(c, 400, "InvalidRequest",
				      "a part copied from a source is at most 5 GiB");
			goto out;
		}
	}
	if (s3l_upload_open(c, &u, 0) < 0 ||
	    store_part(c, &u, data, len, c->op == OP_MPU_PART_COPY ? &from : NULL,
		       spooled ? md5 : NULL, md5hex) < 0)
		goto out;
	snprintf(etag, sizeof(etag), "\"%s\"", md5hex);
	snprintf(c->res.etag, sizeof(c->res.etag), "%s", etag);
	c->status = 200;
	if (c->op == OP_MPU_PART_COPY) {
		b = evbuffer_new();
		if (!b) {
			s3l_call_fail(c, 503, "SlowDown", "out of memory");
			goto out;
		}
		s3l_iso8601((int64_t)time(NULL), when, sizeof(when));
		evbuffer_add_printf(b, S3L_XML_DECL "<CopyPartResult xmlns=\"" S3L_XMLNS "\">"
				    "<LastModified>%s</LastModified>", when);
		s3l_xml_elem(b, "ETag", etag, 0);
		evbuffer_add_printf(b, "</CopyPartResult>");
		s3l_take_xml(c, b);
	}
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
	s3l_upload_close(&u);
	if (from.fd >= 0)
		close(from.fd);
	store_result_clear(&src);
	if (b)
		evbuffer_free(b);
}

