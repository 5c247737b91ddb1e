/* s3local_spool.c — request bodies of the embedded S3 server on their way to
 * disk: a PutObject or UploadPart body without aws-chunked framing goes,
 * 1 MiB at a time, to an unlinked temp file in BUCKET/.fencegate/ by jobs
 * on the pool, the loop pausing the client's body while a chunk is
 * written (proxy_req_consume's back-pressure), its MD5 computed on the way.
 * The operation's job then writes the object (or part) from that file, so
 * no body is ever whole in memory. An aws-chunked body with unsigned
 * chunks (STREAMING-UNSIGNED-PAYLOAD-TRAILER, what SDKs send over https)
 * or with signed chunks (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER], what
 * SDKs send over http) is decoded and its checksum trailer verified on the
 * way (proxy/s3's awschunked; signatures are not: nobody authenticated
 * the request, and with authentication on proxy/s3 decodes and verifies
 * the body before this server sees it). Other framings (SigV4a) are still
 * buffered (s3local_object.c). It does not decide what is written
 * (s3local_object.c, s3local_mpu.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "http/jobs.h"
#include "http/proxy.h"
#include "s3/awschunked.h"
#include "wire/pct.h"
#include "s3local_int.h"

#define SPOOL_CHUNK (1024 * 1024)

struct s3l_spool {
	int fd;                     /* the unlinked temp file, -1 until the first write */
	int64_t len;                /* bytes in it (the job's) */
	int64_t taken;              /* bytes the loop took (the loop's) */
	EVP_MD_CTX *md5;
	char *buf;                  /* bytes the loop took, not yet written */
	size_t buf_len, buf_cap;
	char *writing;              /* the chunk a job writes */
	size_t writing_len;
	int job_running, ended, abandoned;
	int err;                    /* errno of a failed write, 0 none */
	int finished;               /* digest holds the body's MD5 */
	unsigned char digest[16];
	struct checksum sum;        /* the call's checksum_algo, when it has one */
	int sum_started;
	char sum_b64[CHECKSUM_BASE64_MAX]; /* once finished, "" none */
	struct awschunked *chunked; /* decodes the client's body first; NULL: plain */
	struct s3l_call *call;      /* for the decoder's callback */
	int pause;                  /* a decoded piece asked to pause */
};

static int spool_decoded(void *arg, const char *data, size_t len);

struct s3l_spool *s3l_spool_new_chunked(struct s3l_call *c, int mode, int64_t decoded_length,
					 const char *trailer_name)
{
	struct awschunked_params p = { .mode = (enum awschunked_mode)mode,
				       .decoded_length = decoded_length,
				       .trailer_name = trailer_name,
				       .signatures_unchecked = 1 };
	struct s3l_spool *sp = s3l_spool_new();

	if (!sp)
		return NULL;
	sp->call = c;
	sp->chunked = awschunked_new(&p, spool_decoded, sp);
	if (!sp->chunked) {
		s3l_spool_free(sp);
		return NULL;
	}
	return sp;
}

struct s3l_spool *s3l_spool_new(void)
{
	struct s3l_spool *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return NULL;
	sp->fd = -1;
	sp->md5 = EVP_MD_CTX_new();
	if (!sp->md5 || !EVP_DigestInit_ex(sp->md5, EVP_md5(), NULL)) {
		s3l_spool_free(sp);
		return NULL;
	}
	return sp;
}

void s3l_spool_free(struct s3l_spool *sp)
{
	if (!sp)
		return;
	if (sp->fd >= 0)
		close(sp->fd);
	EVP_MD_CTX_free(sp->md5);
	checksum_free(&sp->sum);
	awschunked_free(sp->chunked);
	free(sp->buf);
	free(sp->writing);
	free(sp);
}

int64_t s3l_spool_size(const struct s3l_spool *sp)
{
	return sp->taken;
}

/* An unlinked file in BUCKET/.fencegate (same file system as the bucket,
 * gone by itself if the process dies). */
static int spool_open(struct s3l_call *c)
{
	char dir[4096 + 128], name[4096 + 192];
	int fd;

	snprintf(dir, sizeof(dir), "%s/%s/.fencegate", c->s->data_dir, c->bucket);
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	snprintf(name, sizeof(name), "%s/spool-%ld-%p", dir, (long)getpid(), (void *)c);
	fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0)
		unlink(name);
	return fd;
}

/* Writes data to the spool file (worker thread). */
/* Feeds the call's checksum (started on the first bytes). 0 or -1. */
static int sum_update(struct s3l_call *c, const char *data, size_t len)
{
	struct s3l_spool *sp = c->spool;

	if (c->checksum_algo == CHECKSUM_NONE)
		return 0;
	if (!sp->sum_started) {
		if (checksum_init(&sp->sum, c->checksum_algo) < 0)
			return -1;
		sp->sum_started = 1;
	}
	return checksum_update(&sp->sum, data, len);
}

static void spool_write(struct s3l_call *c, const char *data, size_t len)
{
	struct s3l_spool *sp = c->spool;

	if (sp->err || !len)
		return;
	if (sp->fd < 0 && (sp->fd = spool_open(c)) < 0) {
		sp->err = errno;
		return;
	}
	while (len > 0) {
		ssize_t n = pwrite(sp->fd, data, len, (off_t)sp->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sp->err = n < 0 ? errno : EIO;
			return;
		}
		EVP_DigestUpdate(sp->md5, data, (size_t)n);
		if (sum_update(c, data, (size_t)n) < 0) {
			sp->err = ENOMEM;
			return;
		}
		sp->len += n;
		data += n;
		len -= (size_t)n;
	}
}

static void flush_run(void *arg)
{
	struct s3l_call *c = arg;

	spool_write(c, c->spool->writing, c->spool->writing_len);
}

static void flush_done(void *arg)
{
	struct s3l_call *c = arg;
	struct s3l_spool *sp = c->spool;

	free(sp->writing);
	sp->writing = NULL;
	sp->writing_len = 0;
	sp->job_running = 0;
	if (sp->abandoned) {
		s3l_call_free(c); /* the client left while the chunk was written */
		return;
	}
	if (sp->ended) {
		s3l_submit(c);
		return;
	}
	proxy_req_consume_resume(c->req);
}

static int take(struct s3l_call *c, const char *data, size_t len);

/* The decoder's callback: decoded bytes go where plain ones go. */
static int spool_decoded(void *arg, const char *data, size_t len)
{
	struct s3l_spool *sp = arg;
	int r = take(sp->call, data, len);

	if (r < 0)
		return -1;
	if (r > 0)
		sp->pause = 1;
	return 0;
}

/* Fails c with the decoder's error (the body is refused). */
static void chunked_error(struct s3l_call *c)
{
	const char *code = NULL, *message = NULL;
	int status = 400;

	awschunked_error(c->spool->chunked, &status, &code, &message);
	proxy_req_reply_error(c->req, status, code ? code : "InvalidRequest",
			      message ? message : "the aws-chunked body is malformed", NULL);
}

int s3l_spool_feed(struct s3l_call *c, const char *data, size_t len)
{
	struct s3l_spool *sp = c->spool;

	if (!sp->chunked)
		return take(c, data, len);
	sp->pause = 0;
	if (awschunked_feed(sp->chunked, data, len) == AWSCHUNKED_ERROR) {
		chunked_error(c);
		return -2;
	}
	return sp->pause;
}

int s3l_spool_body_done(struct s3l_call *c)
{
	struct s3l_spool *sp = c->spool;

	if (!sp->chunked)
		return 0;
	if (awschunked_finish(sp->chunked) != AWSCHUNKED_DONE) {
		chunked_error(c);
		return -1;
	}
	return 0;
}

/* Plain (or decoded) body bytes into the spool: 0, 1 (pause), -1. */
static int take(struct s3l_call *c, const char *data, size_t len)
{
	struct s3l_spool *sp = c->spool;

	if (sp->buf_len + len > sp->buf_cap) {
		size_t cap = sp->buf_len + len > SPOOL_CHUNK ? sp->buf_len + len : SPOOL_CHUNK;
		char *grown = realloc(sp->buf, cap);

		if (!grown)
			return -1;
		sp->buf = grown;
		sp->buf_cap = cap;
	}
	memcpy(sp->buf + sp->buf_len, data, len);
	sp->buf_len += len;
	sp->taken += (int64_t)len;
	if (sp->job_running)
		return 1;
	if (sp->buf_len < SPOOL_CHUNK)
		return 0;
	/* a full chunk: a job writes it while reading pauses */
	sp->writing = sp->buf;
	sp->writing_len = sp->buf_len;
	sp->buf = NULL;
	sp->buf_len = sp->buf_cap = 0;
	if (jobs_submit(c->s->jobs, flush_run, flush_done, c) < 0)
		return -1;
	sp->job_running = 1;
	return 1;
}

int s3l_spool_end(struct s3l_call *c, int ok)
{
	struct s3l_spool *sp = c->spool;

	if (!sp->job_running)
		return 0;
	if (ok)
		sp->ended = 1;
	else
		sp->abandoned = 1;
	return 1;
}

int s3l_spool_finish(struct s3l_call *c, unsigned char md5[16], struct store_file_range *r)
{
	struct s3l_spool *sp = c->spool;
	unsigned int n = 0;

	if (sp->fd < 0 && !sp->err) {
		/* it all fit in one chunk: the body stays in memory, no file */
		EVP_DigestUpdate(sp->md5, sp->buf ? sp->buf : "", sp->buf_len);
		if (sum_update(c, sp->buf ? sp->buf : "", sp->buf_len) < 0)
			sp->err = ENOMEM;
		free(c->body);
		c->body = sp->buf;
		c->body_len = sp->buf_len;
		sp->buf = NULL;
		sp->buf_len = sp->buf_cap = 0;
	}
	spool_write(c, sp->buf, sp->buf_len);
	sp->buf_len = 0;
	if (!sp->err && sp->fd >= 0 && fsync(sp->fd) < 0)
		sp->err = errno;
	if (sp->err || !EVP_DigestFinal_ex(sp->md5, sp->digest, &n)) {
		s3l_call_fail(c, 500, "InternalError", "cannot write the request body to disk: %s",
			      strerror(sp->err ? sp->err : EIO));
		return -1;
	}
	if (c->checksum_algo != CHECKSUM_NONE) {
		unsigned char bin[CHECKSUM_DIGEST_MAX];
		size_t blen;

		if ((!sp->sum_started && sum_update(c, "", 0) < 0) ||
		    !(blen = checksum_final(&sp->sum, bin))) {
			s3l_call_fail(c, 500, "InternalError", "computing the body's checksum failed");
			return -1;
		}
		checksum_base64(bin, blen, sp->sum_b64);
	}
	sp->finished = 1;
	memcpy(md5, sp->digest, 16);
	r->fd = sp->fd;
	r->offset = 0;
	r->len = sp->len;
	return 0;
}

/* Copies the spool file to a new file name of dir_fd (fsynced). */
static int copy_to(const struct s3l_spool *sp, int dir_fd, const char *name)
{
	char *buf = malloc(SPOOL_CHUNK);
	int64_t off = 0;
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0 || !buf)
		goto fail;
	while (off < sp->len) {
		ssize_t n = pread(sp->fd, buf, SPOOL_CHUNK, (off_t)off), w = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		while (w < n) {
			ssize_t k = write(fd, buf + w, (size_t)(n - w));

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				goto fail;
			w += k;
		}
		off += n;
	}
	free(buf);
	if (fsync(fd) < 0) {
		close(fd);
		unlinkat(dir_fd, name, 0);
		return -1;
	}
	return close(fd);
fail:
	free(buf);
	if (fd >= 0) {
		close(fd);
		unlinkat(dir_fd, name, 0);
	}
	return -1;
}

int s3l_spool_checksum(const struct s3l_spool *sp, char out[CHECKSUM_BASE64_MAX])
{
	if (!sp->finished || !sp->sum_b64[0])
		return -1;
	memcpy(out, sp->sum_b64, CHECKSUM_BASE64_MAX);
	return 0;
}

int s3l_spool_md5(const struct s3l_spool *sp, unsigned char md5[16])
{
	if (!sp->finished)
		return -1;
	memcpy(md5, sp->digest, 16);
	return 0;
}

int s3l_spool_link(struct s3l_call *c, int dir_fd, const char *name)
{
	char proc[64];

	if (c->spool->fd < 0) {
		int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

		return fd < 0 ? -1 : close(fd);
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", c->spool->fd);
	if (linkat(AT_FDCWD, proc, dir_fd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	return copy_to(c->spool, dir_fd, name); /* no /proc: a copy */
}
