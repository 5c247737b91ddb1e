/* s3local.c — the embedded S3 server over a local data directory: parses
 * path-style S3 requests on the loop, runs the store calls on the jobs pool
 * (one store per bucket per worker) and answers in S3's XML. It buffers
 * object bodies in memory and does not authenticate; multipart, copy,
 * tagging, ACLs and versioning answer 501 (see s3local.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <openssl/evp.h>

#include "http/jobs.h"
#include "ops/log.h"
#include "http/proxy.h"
#include "wire/pct.h"
#include "wire/s3err.h"
#include "s3local.h"
#include "lock/store.h"

#define S3L_WORKERS_MAX   64        /* jobs_new allows 1..64 threads */
#define S3L_CACHE_SLOTS   16        /* open bucket stores per worker */
#define S3L_BUCKET_MAX    63
#define S3L_KEY_MAX       1024
#define S3L_META_BYTES    2048      /* S3's limit on user metadata */
#define S3L_CONFIG_MAX    (64 * 1024) /* CreateBucketConfiguration body */
#define S3L_LIST_PAGE     1000
#define S3L_LIST_PAGES    100000    /* store pages per listing request, a guard */
#define S3L_XMLNS         "http://s3.amazonaws.com/doc/2006-03-01/"
#define S3L_XML_DECL      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

struct cached_store {
	char bucket[S3L_BUCKET_MAX + 1];
	dev_t dev;                  /* identity of the directory it was opened on */
	ino_t ino;
	struct store *st;
	unsigned long used;         /* LRU tick */
};

/* Only ever touched by the worker thread of the same index. */
struct worker_cache {
	struct cached_store slot[S3L_CACHE_SLOTS];
	unsigned long tick;
};

struct s3local {
	struct event_base *base;
	struct jobs *jobs;
	char *data_dir;
	size_t max_object;
	/* Bucket lifetime: object and listing jobs hold it shared (a store
	 * open would re-create a deleted bucket's directory), CreateBucket
	 * and DeleteBucket exclusive. */
	pthread_rwlock_t buckets;
	unsigned long trash_seq;    /* under buckets, exclusive */
	struct worker_cache cache[S3L_WORKERS_MAX];
};

enum s3l_op {
	OP_LIST_BUCKETS,
	OP_CREATE_BUCKET,
	OP_HEAD_BUCKET,
	OP_DELETE_BUCKET,
	OP_LOCATION,
	OP_LIST_V1,
	OP_LIST_V2,
	OP_PUT,
	OP_GET,
	OP_HEAD,
	OP_DELETE,
};

/* One request. Made on the loop, filled with copies of everything the job
 * needs (the job never reads the req); freed once the request is answered
 * or abandoned (never through the req's ctx slot, which earlier handlers
 * such as fencing use). */
struct s3l_call {
	struct s3local *s;
	struct proxy_req *req;
	enum s3l_op op;
	char bucket[S3L_BUCKET_MAX + 1];
	char *key;                  /* decoded; NULL for bucket operations */

	/* request body */
	char *body;
	size_t body_len, body_cap, body_max;
	int keep_body;              /* 0: bytes are read and dropped */
	int aws_chunked;
	int64_t decoded_length;     /* x-amz-decoded-content-length, -1 none */

	/* request headers */
	char *content_type;
	struct store_meta meta[STORE_META_MAX];
	size_t nmeta;
	char *if_match, *if_none_match;
	int64_t if_modified_since, if_unmodified_since; /* 0: none */
	char *range;
	char *content_md5;
	int has_epoch;
	uint64_t epoch;
	uint64_t lock_epoch;        /* X-Fencing-Epoch-Current: the lock's, 0 none */

	/* listing parameters (decoded) */
	char *prefix, *delimiter, *start_after, *token, *marker;
	int max_keys;
	int url_encoding;

	/* GET/HEAD response overrides (response-content-type & co.) */
	struct store_meta overrides[6];
	size_t noverrides;

	/* outcome, filled by the job */
	int status;
	const char *err_code;       /* static; NULL on success */
	char err_msg[512];
	int has_object_epoch;
	uint64_t object_epoch;      /* for 409 FencingTokenStale */
	struct store_result res;    /* GET/HEAD/PUT answer */
	int64_t range_start, range_len; /* the part of res.body to send */
	int partial;                /* 206 */
	char *xml;                  /* listing answers; malloc'd */
	size_t xml_len;
};

/* ---- small helpers ----------------------------------------------------- */

static void call_free(void *arg)
{
	struct s3l_call *c = arg;
	size_t i;

	if (!c)
		return;
	free(c->key);
	free(c->body);
	free(c->content_type);
	for (i = 0; i < c->nmeta; i++) {
		free(c->meta[i].name);
		free(c->meta[i].value);
	}
	for (i = 0; i < c->noverrides; i++)
		free(c->overrides[i].value);
	free(c->if_match);
	free(c->if_none_match);
	free(c->range);
	free(c->content_md5);
	free(c->prefix);
	free(c->delimiter);
	free(c->start_after);
	free(c->token);
	free(c->marker);
	free(c->xml);
	store_result_clear(&c->res);
	free(c);
}

/* Records an error outcome; message is printf-style. */
__attribute__((format(printf, 4, 5)))
static void call_fail(struct s3l_call *c, int status, const char *code, const char *fmt, ...)
{
	va_list ap;

	c->status = status;
	c->err_code = code;
	va_start(ap, fmt);
	vsnprintf(c->err_msg, sizeof(c->err_msg), fmt, ap);
	va_end(ap);
}

/* Percent-decodes s[0..n) into a new NUL-terminated string; plus_space
 * turns '+' into ' ' (query strings). Returns NULL on a bad escape or an
 * encoded NUL (errno EINVAL) or ENOMEM. */
static char *s3_decode(const char *s, size_t n, int plus_space)
{
	return pct_decode_dup(s, n, (plus_space ? PCT_PLUS_SPACE : 0) | PCT_NO_NUL, NULL);
}

/* 1 if s is well-formed UTF-8 (no overlongs, no surrogates). */
static int utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		size_t len, k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			len = 2;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + len > n)
			return 0;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		i += len;
	}
	return 1;
}

/* Appends s XML-escaped; bytes XML cannot carry (invalid UTF-8, control
 * characters) become U+FFFD. */
static void xml_text(struct evbuffer *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned c = *p;
		size_t len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;

		if (c < 0x80) {
			switch (c) {
			case '&': evbuffer_add(b, "&amp;", 5); break;
			case '<': evbuffer_add(b, "&lt;", 4); break;
			case '>': evbuffer_add(b, "&gt;", 4); break;
			case '"': evbuffer_add(b, "&quot;", 6); break;
			case '\'': evbuffer_add(b, "&apos;", 6); break;
			default:
				if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
					evbuffer_add(b, "\xef\xbf\xbd", 3);
				else
					evbuffer_add(b, p, 1);
			}
			p++;
			continue;
		}
		if (strnlen((const char *)p, len) == len && utf8_valid(p, len)) {
			evbuffer_add(b, p, len);
			p += len;
		} else {
			evbuffer_add(b, "\xef\xbf\xbd", 3);
			p++;
		}
	}
}

/* Appends s percent-encoded as S3's encoding-type=url does (unreserved
 * characters and '/' kept). */
static void url_text(struct evbuffer *b, const char *s)
{
	char *enc = pct_encode_dup(s, strlen(s), PCT_KEEP_SLASH);

	if (enc)
		evbuffer_add(b, enc, strlen(enc));
	free(enc);
}

/* <name>value</name>, value escaped, url-encoded first when asked. */
static void xml_elem(struct evbuffer *b, const char *name, const char *value, int url)
{
	evbuffer_add_printf(b, "<%s>", name);
	if (url) {
		struct evbuffer *t = evbuffer_new();

		if (t) {
			url_text(t, value);
			evbuffer_add(t, "", 1);
			xml_text(b, (const char *)evbuffer_pullup(t, -1));
			evbuffer_free(t);
		}
	} else {
		xml_text(b, value);
	}
	evbuffer_add_printf(b, "</%s>", name);
}

static void http_date(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void iso8601(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

/* An HTTP-date header to Unix seconds; 0 when absent or unparsable (S3
 * ignores a date it cannot read). */
static int64_t parse_http_date(const char *v)
{
	time_t t;

	if (!v || !*v)
		return 0;
	t = curl_getdate(v, NULL);
	return t > 0 ? (int64_t)t : 0;
}

/* "1".."18446744073709551615" without sign or blanks; 0 on success. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t n = 0;

	if (!s || !*s)
		return -1;
	for (; *s; s++, n++) {
		if (*s < '0' || *s > '9' || n >= 19)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* Compares ETags as S3 does: quotes optional, "*" matches any. */
static int etag_match(const char *want, const char *have)
{
	size_t wl, hl;

	while (*want == ' ')
		want++;
	if (strcmp(want, "*") == 0)
		return 1;
	if (strncmp(want, "W/", 2) == 0)
		want += 2;
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

/* 1 if any entry of the comma-separated ETag list matches have. */
static int etag_list_match(const char *list, const char *have)
{
	char buf[STORE_ETAG_MAX * 2];
	const char *p = list;

	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			if (etag_match(buf, have))
				return 1;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

static int is_any(const char *v)
{
	return v && (strcmp(v, "*") == 0 || strcmp(v, "\"*\"") == 0);
}

/* S3 bucket naming rules: 3-63 of [a-z0-9.-], starting and ending with a
 * letter or digit, no "..", not an IP address, no reserved prefix/suffix. */
static int bucket_name_valid(const char *b, size_t n)
{
	size_t i, dots = 0;
	int digits_and_dots = 1;

	if (n < 3 || n > S3L_BUCKET_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char ch = b[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-'))
			return 0;
		if (ch == '.') {
			dots++;
			if (i + 1 < n && b[i + 1] == '.')
				return 0;
		} else if (!(ch >= '0' && ch <= '9')) {
			digits_and_dots = 0;
		}
	}
	if (b[0] == '.' || b[0] == '-' || b[n - 1] == '.' || b[n - 1] == '-')
		return 0;
	if (digits_and_dots && dots == 3)
		return 0; /* 192.168.5.4 */
	if (strncmp(b, "xn--", 4) == 0 || strncmp(b, "sthree-", 7) == 0)
		return 0;
	if ((n > 8 && strcmp(b + n - 8, "-s3alias") == 0) ||
	    (n > 7 && strcmp(b + n - 7, "--ol-s3") == 0))
		return 0;
	return 1;
}

/* ---- per-worker bucket stores ----------------------------------------- */

static void bucket_path(const struct s3local *s, const char *bucket, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", s->data_dir, bucket);
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

/* The store of bucket for this thread: cached per worker, re-opened when the
 * directory was replaced (deleted and created again). *owned = 1 when the
 * caller must close it (not on a worker thread). NULL with c failed
 * (NoSuchBucket or an error). Call with s->buckets held. */
static struct store *bucket_store(struct s3l_call *c, int *owned)
{
	struct s3local *s = c->s;
	struct worker_cache *wc;
	struct cached_store *slot = NULL, *victim = NULL;
	char path[4096 + 80], err[512];
	struct stat sb;
	int idx = jobs_worker_index(), i;

	*owned = 0;
	bucket_path(s, c->bucket, path, sizeof(path));
	if (stat(path, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		call_fail(c, 404, "NoSuchBucket", "the bucket \"%s\" does not exist", c->bucket);
		return NULL;
	}
	if (idx < 0 || idx >= S3L_WORKERS_MAX) {
		struct store *st = open_bucket_store(s, c->bucket, err, sizeof(err));

		if (!st) {
			call_fail(c, 500, "InternalError", "cannot open bucket \"%s\": %s", c->bucket, err);
			return NULL;
		}
		*owned = 1;
		return st;
	}
	wc = &s->cache[idx];
	wc->tick++;
	for (i = 0; i < S3L_CACHE_SLOTS; i++) {
		struct cached_store *cs = &wc->slot[i];

		if (cs->st && strcmp(cs->bucket, c->bucket) == 0) {
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
		slot->st = open_bucket_store(s, c->bucket, err, sizeof(err));
		if (!slot->st) {
			call_fail(c, 500, "InternalError", "cannot open bucket \"%s\": %s", c->bucket, err);
			return NULL;
		}
		snprintf(slot->bucket, sizeof(slot->bucket), "%s", c->bucket);
		slot->dev = sb.st_dev;
		slot->ino = sb.st_ino;
	}
	slot->used = wc->tick;
	return slot->st;
}

static void release_store(struct store *st, int owned)
{
	if (owned)
		store_close(st);
}

/* Maps a failed store answer onto the S3 error the client gets. */
static void fail_from_store(struct s3l_call *c, const struct store_result *res)
{
	switch (res->code) {
	case STORE_OK:
		break;
	case STORE_NOT_FOUND:
		call_fail(c, 404, "NoSuchKey", "the key \"%s\" does not exist", c->key ? c->key : "");
		break;
	case STORE_PRECONDITION_FAILED:
		call_fail(c, 412, "PreconditionFailed",
			  "at least one of the preconditions you specified did not hold: %s",
			  res->err_message);
		break;
	case STORE_CONFLICT:
		call_fail(c, 409, "ConditionalRequestConflict", "%s", res->err_message);
		break;
	case STORE_ERR_INVALID:
		call_fail(c, 400, strcmp(res->err_code, "KeyTooLongError") == 0
				  ? "KeyTooLongError" : "InvalidArgument",
			  "%s", res->err_message);
		break;
	case STORE_ERR_NOMEM:
		call_fail(c, 503, "SlowDown", "out of memory: %s", res->err_message);
		break;
	default:
		call_fail(c, 500, "InternalError", "the local store failed: %s",
			  res->err_message[0] ? res->err_message : store_strerror(res->code));
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

static void run_create_bucket(struct s3l_call *c)
{
	struct s3local *s = c->s;
	char path[4096 + 80], err[512];
	struct store *st;
	int fd;

	bucket_path(s, c->bucket, path, sizeof(path));
	pthread_rwlock_wrlock(&s->buckets);
	if (mkdir(path, 0755) < 0) {
		if (errno == EEXIST)
			call_fail(c, 409, "BucketAlreadyOwnedByYou",
				  "the bucket \"%s\" already exists and is yours", c->bucket);
		else
			call_fail(c, 500, "InternalError", "cannot create the directory of bucket \"%s\": %s",
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
		call_fail(c, 500, "InternalError", "bucket \"%s\": %s", c->bucket, err);
		goto out;
	}
	store_close(st);
	c->status = 200;
out:
	pthread_rwlock_unlock(&s->buckets);
}

static void run_head_bucket(struct s3l_call *c)
{
	char path[4096 + 80];
	struct stat sb;

	bucket_path(c->s, c->bucket, path, sizeof(path));
	if (stat(path, &sb) < 0 || !S_ISDIR(sb.st_mode))
		call_fail(c, 404, "NoSuchBucket", "the bucket \"%s\" does not exist", c->bucket);
	else
		c->status = 200;
}

static void run_delete_bucket(struct s3l_call *c)
{
	struct s3local *s = c->s;
	struct store_list_page page = { 0 };
	struct store_result res = STORE_RESULT_INIT;
	char path[4096 + 80], trash[4096 + 80], name[128], err[512];
	struct store *st = NULL;
	struct stat sb;
	int data_fd = -1;

	pthread_rwlock_wrlock(&s->buckets);
	bucket_path(s, c->bucket, path, sizeof(path));
	if (stat(path, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		call_fail(c, 404, "NoSuchBucket", "the bucket \"%s\" does not exist", c->bucket);
		goto out;
	}
	st = open_bucket_store(s, c->bucket, err, sizeof(err));
	if (!st) {
		call_fail(c, 500, "InternalError", "bucket \"%s\": %s", c->bucket, err);
		goto out;
	}
	if (store_list(st, "", NULL, NULL, 1, &page, &res) != STORE_OK) {
		fail_from_store(c, &res);
		goto out;
	}
	if (page.n > 0) {
		call_fail(c, 409, "BucketNotEmpty",
			  "the bucket \"%s\" is not empty (it holds \"%s\"); delete its objects first",
			  c->bucket, page.entries[0].key);
		goto out;
	}
	store_close(st);
	st = NULL;
	/* Out of the name space first (atomic), then removed at leisure; the
	 * trash name is not a valid bucket name, so it is never listed. */
	snprintf(name, sizeof(name), ".s3local-trash-%ld-%lu", (long)getpid(), ++s->trash_seq);
	snprintf(trash, sizeof(trash), "%s/%s", s->data_dir, name);
	if (rename(path, trash) < 0) {
		call_fail(c, 500, "InternalError", "cannot remove bucket \"%s\": %s",
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
	pthread_rwlock_unlock(&s->buckets);
	store_close(st);
	store_list_page_free(&page);
	store_result_clear(&res);
}

/* Creation time of a bucket directory: its birth time where the file system
 * keeps one, else the time its store's reserved directory was made. */
static int64_t bucket_created(int data_fd, const char *name, const struct stat *sb)
{
	struct statx stx;
	struct stat rsb;
	char reserved[S3L_BUCKET_MAX + 16];

	if (statx(data_fd, name, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &stx) == 0 &&
	    (stx.stx_mask & STATX_BTIME))
		return (int64_t)stx.stx_btime.tv_sec;
	snprintf(reserved, sizeof(reserved), "%s/.fencegate", name);
	if (fstatat(data_fd, reserved, &rsb, AT_SYMLINK_NOFOLLOW) == 0)
		return (int64_t)rsb.st_mtime;
	return (int64_t)sb->st_mtime;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_list_buckets(struct s3l_call *c)
{
	struct evbuffer *b = evbuffer_new();
	char **names = NULL, when[40];
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *dir = NULL;
	int data_fd = -1;

	if (!b)
		goto nomem;
	data_fd = open(c->s->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (data_fd < 0 || !(dir = fdopendir(dup(data_fd)))) {
		call_fail(c, 500, "InternalError", "cannot read the data directory: %s", strerror(errno));
		goto out;
	}
	while ((de = readdir(dir)) != NULL) {
		if (!bucket_name_valid(de->d_name, strlen(de->d_name)))
			continue;
		if (n == cap) {
			char **grown = realloc(names, (cap ? cap * 2 : 16) * sizeof(*names));

			if (!grown)
				goto nomem;
			names = grown;
			cap = cap ? cap * 2 : 16;
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			goto nomem;
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	evbuffer_add_printf(b, S3L_XML_DECL "<ListAllMyBucketsResult xmlns=\"" S3L_XMLNS "\">"
			    "<Owner><ID>fencegate</ID><DisplayName>fencegate</DisplayName></Owner>"
			    "<Buckets>");
	for (i = 0; i < n; i++) {
		struct stat sb;

		if (fstatat(data_fd, names[i], &sb, 0) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		iso8601(bucket_created(data_fd, names[i], &sb), when, sizeof(when));
		evbuffer_add_printf(b, "<Bucket>");
		xml_elem(b, "Name", names[i], 0);
		evbuffer_add_printf(b, "<CreationDate>%s</CreationDate></Bucket>", when);
	}
	evbuffer_add_printf(b, "</Buckets></ListAllMyBucketsResult>");
	goto take;
nomem:
	call_fail(c, 503, "SlowDown", "out of memory listing buckets");
	goto out;
take:
	c->xml_len = evbuffer_get_length(b);
	c->xml = malloc(c->xml_len + 1);
	if (!c->xml)
		goto nomem;
	evbuffer_remove(b, c->xml, c->xml_len);
	c->status = 200;
out:
	if (dir)
		closedir(dir);
	if (data_fd >= 0)
		close(data_fd);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (b)
		evbuffer_free(b);
}

static void run_location(struct s3l_call *c)
{
	static const char body[] = S3L_XML_DECL "<LocationConstraint xmlns=\"" S3L_XMLNS "\"/>";

	run_head_bucket(c);
	if (c->err_code)
		return;
	c->xml = strdup(body);
	if (!c->xml) {
		call_fail(c, 503, "SlowDown", "out of memory");
		return;
	}
	c->xml_len = sizeof(body) - 1;
	c->status = 200;
}

/* ---- listing ------------------------------------------------------------ */

static char *token_encode(const char *key)
{
	size_t n = strlen(key);
	char *out = malloc(4 * ((n + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)key, (int)n);
	return out;
}

/* NULL when tok is not a token this server made. */
static char *token_decode(const char *tok)
{
	size_t n = strlen(tok), pad = 0;
	unsigned char *out;
	int len;

	if (n == 0 || n % 4 != 0 || n > 4 * ((S3L_KEY_MAX + 2 + 2) / 3))
		return NULL;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return NULL;
	len = EVP_DecodeBlock(out, (const unsigned char *)tok, (int)n);
	if (tok[n - 1] == '=')
		pad++;
	if (tok[n - 2] == '=')
		pad++;
	if (len < 0 || (size_t)len < pad || memchr(out, 0, (size_t)len - pad)) {
		free(out);
		return NULL;
	}
	out[len - (int)pad] = '\0';
	return (char *)out;
}

/* One Contents or CommonPrefixes item, kept until the page is written. */
struct list_item {
	char *name;                 /* key or common prefix */
	int is_prefix;
	char etag[STORE_ETAG_MAX];
	int64_t size, last_modified;
};

static void run_list(struct s3l_call *c)
{
	struct store_list_page page = { 0 };
	struct store_result res = STORE_RESULT_INIT;
	struct list_item *items = NULL;
	struct evbuffer *b = NULL;
	const char *prefix = c->prefix ? c->prefix : "";
	const char *delim = c->delimiter && *c->delimiter ? c->delimiter : NULL;
	size_t plen = strlen(prefix), n = 0, i, pages = 0;
	char *after = NULL, *start = NULL, *last_cp = NULL, *next = NULL, when[40];
	const char *marker = c->op == OP_LIST_V2 ? c->start_after : c->marker;
	int truncated = 0, owned = 0, done = 0, url = c->url_encoding;
	struct store *st = NULL;

	pthread_rwlock_rdlock(&c->s->buckets);
	st = bucket_store(c, &owned);
	if (!st)
		goto out;
	items = calloc((size_t)c->max_keys + 1, sizeof(*items));
	b = evbuffer_new();
	if (!items || !b)
		goto nomem;
	/* where to start: after the marker / start-after, or the token's key */
	if (c->op == OP_LIST_V2 && c->token) {
		after = token_decode(c->token);
		if (!after) {
			call_fail(c, 400, "InvalidArgument", "the continuation token provided is incorrect");
			goto out;
		}
		if (marker && strcmp(marker, after) > 0) {
			free(after);
			after = NULL;
		}
	}
	if (!after && marker && *marker && !(after = strdup(marker)))
		goto nomem;
	if (after && !(start = strdup(after)))
		goto nomem;
	/* Items are emitted in key order, keys rolled up into common prefixes;
	 * nothing at or before the starting point is emitted again. */
	while (!done && c->max_keys > 0) {
		if (++pages > S3L_LIST_PAGES) {
			call_fail(c, 500, "InternalError", "listing did not advance");
			goto out;
		}
		store_list_page_free(&page);
		if (store_list(st, prefix, after, NULL, S3L_LIST_PAGE, &page, &res) != STORE_OK) {
			fail_from_store(c, &res);
			goto out;
		}
		for (i = 0; i < page.n && !done; i++) {
			const struct store_list_entry *e = &page.entries[i];
			const char *hit = delim ? strstr(e->key + plen, delim) : NULL;
			char *name;

			if (hit) {
				size_t cplen = (size_t)(hit - e->key) + strlen(delim);

				if (last_cp && strncmp(e->key, last_cp, cplen) == 0 && !last_cp[cplen])
					continue; /* under the prefix just emitted */
				name = strndup(e->key, cplen);
				if (!name)
					goto nomem;
				if (start && strcmp(name, start) <= 0) {
					free(last_cp);
					last_cp = name;
					continue; /* emitted on an earlier page */
				}
			} else {
				name = strdup(e->key);
				if (!name)
					goto nomem;
			}
			if (n == (size_t)c->max_keys) {
				free(name);
				truncated = 1;
				done = 1;
				break;
			}
			items[n].name = name;
			items[n].is_prefix = hit != NULL;
			if (hit) {
				free(last_cp);
				last_cp = strdup(name);
				if (!last_cp)
					goto nomem;
			} else {
				snprintf(items[n].etag, sizeof(items[n].etag), "%s", e->etag);
				items[n].size = e->size;
				items[n].last_modified = e->last_modified;
			}
			n++;
		}
		if (done || !page.truncated || page.n == 0)
			break;
		/* next page: after the last key seen, or past the whole common
		 * prefix just emitted (keys under it are skipped above anyway) */
		free(after);
		if (last_cp && strncmp(page.entries[page.n - 1].key, last_cp, strlen(last_cp)) == 0) {
			size_t l = strlen(last_cp);

			after = malloc(l + 5);
			if (after) {
				memcpy(after, last_cp, l);
				memcpy(after + l, "\xff\xff\xff\xff", 5);
			}
		} else {
			after = strdup(page.entries[page.n - 1].key);
		}
		if (!after)
			goto nomem;
	}

	evbuffer_add_printf(b, S3L_XML_DECL "<ListBucketResult xmlns=\"" S3L_XMLNS "\">");
	xml_elem(b, "Name", c->bucket, 0);
	xml_elem(b, "Prefix", prefix, url);
	if (c->op == OP_LIST_V2) {
		if (c->start_after)
			xml_elem(b, "StartAfter", c->start_after, url);
		if (c->token)
			xml_elem(b, "ContinuationToken", c->token, 0);
		evbuffer_add_printf(b, "<KeyCount>%zu</KeyCount>", n);
	} else {
		xml_elem(b, "Marker", c->marker ? c->marker : "", url);
	}
	evbuffer_add_printf(b, "<MaxKeys>%d</MaxKeys>", c->max_keys);
	if (delim)
		xml_elem(b, "Delimiter", delim, url);
	if (url)
		evbuffer_add_printf(b, "<EncodingType>url</EncodingType>");
	evbuffer_add_printf(b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
	if (truncated && n > 0) {
		if (c->op == OP_LIST_V2) {
			next = token_encode(items[n - 1].name);
			if (!next)
				goto nomem;
			xml_elem(b, "NextContinuationToken", next, 0);
		} else if (delim) {
			xml_elem(b, "NextMarker", items[n - 1].name, url);
		}
	}
	for (i = 0; i < n; i++) {
		if (items[i].is_prefix)
			continue;
		evbuffer_add_printf(b, "<Contents>");
		xml_elem(b, "Key", items[i].name, url);
		iso8601(items[i].last_modified, when, sizeof(when));
		evbuffer_add_printf(b, "<LastModified>%s</LastModified>", when);
		xml_elem(b, "ETag", items[i].etag, 0);
		evbuffer_add_printf(b, "<Size>%" PRId64 "</Size><StorageClass>STANDARD</StorageClass>"
				    "</Contents>", items[i].size);
	}
	for (i = 0; i < n; i++) {
		if (!items[i].is_prefix)
			continue;
		evbuffer_add_printf(b, "<CommonPrefixes>");
		xml_elem(b, "Prefix", items[i].name, url);
		evbuffer_add_printf(b, "</CommonPrefixes>");
	}
	evbuffer_add_printf(b, "</ListBucketResult>");
	c->xml_len = evbuffer_get_length(b);
	c->xml = malloc(c->xml_len + 1);
	if (!c->xml)
		goto nomem;
	evbuffer_remove(b, c->xml, c->xml_len);
	c->xml[c->xml_len] = '\0';
	c->status = 200;
	goto out;
nomem:
	call_fail(c, 503, "SlowDown", "out of memory listing \"%s\"", c->bucket);
out:
	pthread_rwlock_unlock(&c->s->buckets);
	if (st)
		release_store(st, owned);
	for (i = 0; items && i < n; i++)
		free(items[i].name);
	free(items);
	free(after);
	free(start);
	free(last_cp);
	free(next);
	store_list_page_free(&page);
	store_result_clear(&res);
	if (b)
		evbuffer_free(b);
}

/* ---- objects ------------------------------------------------------------ */

/* Decodes an aws-chunked body in place ("SIZE[;ext]\r\nDATA\r\n" ... "0..."
 * then trailers). Chunk signatures are not checked: this server does not
 * authenticate. Returns 0, or -1 with c failed. */
static int aws_chunked_decode(struct s3l_call *c)
{
	char *in = c->body, *end = c->body + c->body_len, *out = c->body;

	for (;;) {
		char *eol = memmem(in, (size_t)(end - in), "\r\n", 2);
		uint64_t size = 0;
		char *p;

		if (!eol)
			goto bad;
		for (p = in; p < eol && hex_value((unsigned char)*p) >= 0; p++) {
			if (size > (UINT64_MAX >> 4))
				goto bad;
			size = size * 16 + (uint64_t)hex_value((unsigned char)*p);
		}
		if (p == in || (p < eol && *p != ';'))
			goto bad;
		in = eol + 2;
		if (size == 0)
			break; /* trailers follow; not needed */
		if (size > (uint64_t)(end - in) || (uint64_t)(end - in) - size < 2 ||
		    memcmp(in + size, "\r\n", 2) != 0)
			goto bad;
		memmove(out, in, (size_t)size);
		out += size;
		in += size + 2;
	}
	c->body_len = (size_t)(out - c->body);
	if (c->decoded_length >= 0 && (uint64_t)c->decoded_length != c->body_len) {
		call_fail(c, 400, "IncompleteBody",
			  "the aws-chunked body holds %zu bytes, x-amz-decoded-content-length says %" PRId64,
			  c->body_len, c->decoded_length);
		return -1;
	}
	return 0;
bad:
	call_fail(c, 400, "InvalidChunkSizeError", "the aws-chunked request body is malformed");
	return -1;
}

/* Checks Content-MD5 (base64 of the MD5 of the body). Returns 0 or -1. */
static int check_content_md5(struct s3l_call *c)
{
	unsigned char want[32], have[EVP_MAX_MD_SIZE];
	unsigned int hlen = 0;
	size_t n = strlen(c->content_md5);

	if (n != 24 || EVP_DecodeBlock(want, (const unsigned char *)c->content_md5, (int)n) != 18) {
		call_fail(c, 400, "InvalidDigest", "the Content-MD5 you specified is not valid");
		return -1;
	}
	if (!EVP_Digest(c->body ? c->body : "", c->body_len, have, &hlen, EVP_md5(), NULL) ||
	    hlen != 16 || memcmp(want, have, 16) != 0) {
		call_fail(c, 400, "BadDigest",
			  "the Content-MD5 you specified did not match what was received");
		return -1;
	}
	return 0;
}

/* The epoch an object was last written under (fencing-epoch metadata). */
static uint64_t object_epoch(const struct store_result *res)
{
	const char *v = store_result_meta(res, S3LOCAL_EPOCH_META);
	uint64_t e = 0;

	if (!v || parse_u64(v, &e) < 0)
		return 0;
	return e;
}

/* The client's If-Match / If-None-Match against the version in cur
 * (exists: found). Returns 0 if they hold, -1 with c failed. */
static int client_write_conditions(struct s3l_call *c, int exists, const struct store_result *cur)
{
	if (c->if_match) {
		if (!exists) {
			call_fail(c, 404, "NoSuchKey", "the key \"%s\" does not exist (If-Match)", c->key);
			return -1;
		}
		if (!etag_list_match(c->if_match, cur->etag)) {
			call_fail(c, 412, "PreconditionFailed",
				  "the object is at ETag %s, not the one given in If-Match", cur->etag);
			return -1;
		}
	}
	if (c->if_none_match && exists) {
		call_fail(c, 412, "PreconditionFailed",
			  "the key \"%s\" already exists (If-None-Match: *)", c->key);
		return -1;
	}
	return 0;
}

static void run_put(struct s3l_call *c)
{
	struct store_put_opts opts = { 0 };
	struct store_result cur = STORE_RESULT_INIT;
	struct store *st = NULL;
	char etag[STORE_ETAG_MAX];
	int owned = 0, attempt;
	enum store_code code;

	if (c->aws_chunked && aws_chunked_decode(c) < 0)
		return;
	if (c->body_len > c->s->max_object) {
		call_fail(c, 413, "EntityTooLarge",
			  "the embedded store takes objects up to %zu bytes", c->s->max_object);
		return;
	}
	if (c->content_md5 && check_content_md5(c) < 0)
		return;
	opts.content_type = c->content_type;
	opts.meta = c->meta;
	opts.nmeta = c->nmeta;
	pthread_rwlock_rdlock(&c->s->buckets);
	st = bucket_store(c, &owned);
	if (!st)
		goto out;
	if (!c->has_epoch) {
		if (c->if_none_match) {
			opts.cond = STORE_COND_IF_NONE_MATCH_ANY;
		} else if (c->if_match) {
			opts.cond = STORE_COND_IF_MATCH;
			opts.etag = c->if_match;
		}
		code = store_put(st, c->key, c->body, c->body_len, &opts, &c->res);
		if (code != STORE_OK)
			fail_from_store(c, &c->res);
		else
			c->status = 200;
		goto out;
	}
	/* the object-level compare-and-swap of the fencing contract */
	for (attempt = 0; attempt < S3LOCAL_CAS_ATTEMPTS; attempt++) {
		int exists;

		code = store_head(st, c->key, &cur);
		if (code != STORE_OK && code != STORE_NOT_FOUND) {
			fail_from_store(c, &cur);
			goto out;
		}
		exists = code == STORE_OK;
		if (exists && object_epoch(&cur) > c->epoch) {
			c->has_object_epoch = 1;
			c->object_epoch = object_epoch(&cur);
			call_fail(c, 409, "FencingTokenStale",
				  "the object \"%s\" was written under epoch %" PRIu64
				  ", newer than the presented epoch %" PRIu64,
				  c->key, c->object_epoch, c->epoch);
			goto out;
		}
		if (client_write_conditions(c, exists, &cur) < 0)
			goto out;
		if (exists) {
			snprintf(etag, sizeof(etag), "%s", cur.etag);
			opts.cond = STORE_COND_IF_MATCH;
			opts.etag = etag;
		} else {
			opts.cond = STORE_COND_IF_NONE_MATCH_ANY;
			opts.etag = NULL;
		}
		code = store_put(st, c->key, c->body, c->body_len, &opts, &c->res);
		if (code == STORE_OK) {
			c->status = 200;
			goto out;
		}
		if (code != STORE_PRECONDITION_FAILED && code != STORE_NOT_FOUND) {
			fail_from_store(c, &c->res);
			goto out;
		}
		/* another writer came in between: look again */
	}
	call_fail(c, 503, "SlowDown",
		  "the key \"%s\" kept changing under concurrent writers; retry", c->key);
out:
	pthread_rwlock_unlock(&c->s->buckets);
	if (st)
		release_store(st, owned);
	store_result_clear(&cur);
}

static void run_delete(struct s3l_call *c)
{
	struct store_result cur = STORE_RESULT_INIT;
	struct store *st = NULL;
	char etag[STORE_ETAG_MAX];
	int owned = 0, attempt;
	enum store_code code;

	pthread_rwlock_rdlock(&c->s->buckets);
	st = bucket_store(c, &owned);
	if (!st)
		goto out;
	if (!c->has_epoch) {
		code = store_delete(st, c->key, c->if_match, &c->res);
		if (code != STORE_OK)
			fail_from_store(c, &c->res);
		else
			c->status = 204;
		goto out;
	}
	for (attempt = 0; attempt < S3LOCAL_CAS_ATTEMPTS; attempt++) {
		code = store_head(st, c->key, &cur);
		if (code == STORE_NOT_FOUND) {
			if (c->if_match)
				call_fail(c, 404, "NoSuchKey", "the key \"%s\" does not exist (If-Match)", c->key);
			else
				c->status = 204;
			goto out;
		}
		if (code != STORE_OK) {
			fail_from_store(c, &cur);
			goto out;
		}
		if (object_epoch(&cur) > c->epoch) {
			c->has_object_epoch = 1;
			c->object_epoch = object_epoch(&cur);
			call_fail(c, 409, "FencingTokenStale",
				  "the object \"%s\" was written under epoch %" PRIu64
				  ", newer than the presented epoch %" PRIu64,
				  c->key, c->object_epoch, c->epoch);
			goto out;
		}
		if (c->if_match && !etag_list_match(c->if_match, cur.etag)) {
			call_fail(c, 412, "PreconditionFailed",
				  "the object is at ETag %s, not the one given in If-Match", cur.etag);
			goto out;
		}
		snprintf(etag, sizeof(etag), "%s", cur.etag);
		code = store_delete(st, c->key, etag, &c->res);
		if (code == STORE_OK) {
			c->status = 204;
			goto out;
		}
		if (code != STORE_PRECONDITION_FAILED && code != STORE_NOT_FOUND) {
			fail_from_store(c, &c->res);
			goto out;
		}
	}
	call_fail(c, 503, "SlowDown",
		  "the key \"%s\" kept changing under concurrent writers; retry", c->key);
out:
	pthread_rwlock_unlock(&c->s->buckets);
	if (st)
		release_store(st, owned);
	store_result_clear(&cur);
}

/* The read conditions on the version in res: 0 to serve it, else c failed
 * (412) or c->status = 304. */
static int read_conditions(struct s3l_call *c, const struct store_result *res)
{
	if (c->if_match) {
		if (!etag_list_match(c->if_match, res->etag)) {
			call_fail(c, 412, "PreconditionFailed",
				  "the object is at ETag %s, not the one given in If-Match", res->etag);
			return -1;
		}
	} else if (c->if_unmodified_since && res->last_modified > c->if_unmodified_since) {
		call_fail(c, 412, "PreconditionFailed",
			  "the object was modified after If-Unmodified-Since");
		return -1;
	}
	if (c->if_none_match) {
		if (etag_list_match(c->if_none_match, res->etag)) {
			c->status = 304;
			return -1;
		}
	} else if (c->if_modified_since && res->last_modified <= c->if_modified_since) {
		c->status = 304;
		return -1;
	}
	return 0;
}

/* Parses c->range against size into range_start/range_len and partial.
 * A header this server does not understand (several ranges, other units,
 * bad syntax) is ignored, as HTTP allows. Returns 0, or -1 with c failed
 * (416). */
static int resolve_range(struct s3l_call *c, int64_t size)
{
	const char *r = c->range;
	char *endp;
	int64_t a = -1, b = -1;

	c->range_start = 0;
	c->range_len = size;
	c->partial = 0;
	if (!r || strncmp(r, "bytes=", 6) != 0 || strchr(r, ','))
		return 0;
	r += 6;
	if (*r == '-') {
		if (r[1] < '0' || r[1] > '9')
			return 0;
		errno = 0;
		b = strtoll(r + 1, &endp, 10);
		if (*endp || errno)
			return 0;
		if (b == 0 || size == 0)
			goto unsatisfiable;
		c->range_start = b >= size ? 0 : size - b;
		c->range_len = size - c->range_start;
		c->partial = 1;
		return 0;
	}
	if (*r < '0' || *r > '9')
		return 0;
	errno = 0;
	a = strtoll(r, &endp, 10);
	if (errno || *endp != '-')
		return 0;
	r = endp + 1;
	if (*r) {
		if (*r < '0' || *r > '9')
			return 0;
		b = strtoll(r, &endp, 10);
		if (*endp || errno || b < a)
			return 0;
	}
	if (a >= size)
		goto unsatisfiable;
	if (b < 0 || b >= size)
		b = size - 1;
	c->range_start = a;
	c->range_len = b - a + 1;
	c->partial = 1;
	return 0;
unsatisfiable:
	call_fail(c, 416, "InvalidRange", "the requested range is not satisfiable (object size %" PRId64 ")",
		  size);
	c->range_len = size; /* for Content-Range: bytes *\/size */
	return -1;
}

static void run_get_or_head(struct s3l_call *c)
{
	struct store *st = NULL;
	int owned = 0;
	enum store_code code;

	pthread_rwlock_rdlock(&c->s->buckets);
	st = bucket_store(c, &owned);
	if (!st)
		goto out;
	code = store_head(st, c->key, &c->res);
	if (code != STORE_OK) {
		fail_from_store(c, &c->res);
		goto out;
	}
	if (read_conditions(c, &c->res) < 0)
		goto out;
	if (c->op == OP_GET) {
		if (c->res.content_length > (int64_t)c->s->max_object) {
			call_fail(c, 501, "NotImplemented",
				  "the object is larger than the embedded store serves (%zu bytes)",
				  c->s->max_object);
			goto out;
		}
		code = store_get(st, c->key, &c->res);
		if (code != STORE_OK) {
			fail_from_store(c, &c->res);
			goto out;
		}
		if (read_conditions(c, &c->res) < 0)
			goto out; /* it changed in between */
	}
	if (resolve_range(c, c->res.content_length) < 0)
		goto out;
	c->status = c->partial ? 206 : 200;
out:
	pthread_rwlock_unlock(&c->s->buckets);
	if (st)
		release_store(st, owned);
}

static void job_run(void *arg)
{
	struct s3l_call *c = arg;

	switch (c->op) {
	case OP_LIST_BUCKETS: run_list_buckets(c); break;
	case OP_CREATE_BUCKET: run_create_bucket(c); break;
	case OP_HEAD_BUCKET: run_head_bucket(c); break;
	case OP_DELETE_BUCKET: run_delete_bucket(c); break;
	case OP_LOCATION: run_location(c); break;
	case OP_LIST_V1:
	case OP_LIST_V2: run_list(c); break;
	case OP_PUT: run_put(c); break;
	case OP_GET:
	case OP_HEAD: run_get_or_head(c); break;
	case OP_DELETE: run_delete(c); break;
	}
}

/* ---- replies (loop thread) --------------------------------------------- */

static void common_headers(struct s3l_call *c, struct front_hdrs *h)
{
	char date[64];

	http_date((int64_t)time(NULL), date, sizeof(date));
	front_hdrs_add(h, "Date", date);
	front_hdrs_add(h, "x-amz-request-id", proxy_req_id(c->req));
	front_hdrs_add(h, "Server", "fencegate");
}

static void object_headers(struct s3l_call *c, struct front_hdrs *h)
{
	char date[64], name[S3L_META_BYTES + 16];
	size_t i;

	front_hdrs_add(h, "ETag", c->res.etag);
	if (c->res.last_modified) {
		http_date(c->res.last_modified, date, sizeof(date));
		front_hdrs_add(h, "Last-Modified", date);
	}
	if (c->status == 304)
		return;
	front_hdrs_add(h, "Accept-Ranges", "bytes");
	front_hdrs_add(h, "Content-Type", c->res.content_type[0] ? c->res.content_type
								 : "application/octet-stream");
	for (i = 0; i < c->res.nmeta; i++) {
		const char *mname = c->res.meta[i].name;

		/* the proxy's stamp is not the client's metadata: the epoch is
		 * shown as X-Fencing-Object-Epoch, the rest hidden */
		if (strcasecmp(mname, S3LOCAL_EPOCH_META) == 0) {
			front_hdrs_add(h, S3LOCAL_OBJECT_EPOCH_HEADER, c->res.meta[i].value);
			continue;
		}
		if (strncasecmp(mname, S3LOCAL_OWNED_META_PREFIX,
				strlen(S3LOCAL_OWNED_META_PREFIX)) == 0)
			continue;
		snprintf(name, sizeof(name), "x-amz-meta-%s", mname);
		front_hdrs_add(h, name, c->res.meta[i].value);
	}
	for (i = 0; i < c->noverrides; i++)
		front_hdrs_set(h, c->overrides[i].name, c->overrides[i].value);
}

static void reply_error(struct s3l_call *c, struct front_hdrs *h)
{
	struct proxy_req *req = c->req;

	if (strcmp(c->err_code, "FencingTokenStale") == 0 && c->has_object_epoch) {
		/* the lock's current epoch, as every 409 says (DESIGN.md);
		 * the object's own when it is newer than the proxy knew */
		uint64_t current = c->lock_epoch > c->object_epoch ? c->lock_epoch
								  : c->object_epoch;
		struct s3err e = { .code = c->err_code, .message = c->err_msg,
				   .resource = proxy_req_path(req), .request_id = proxy_req_id(req),
				   .has_epoch = true, .current_epoch = current };
		char epoch[24], *body;
		size_t len = 0;

		snprintf(epoch, sizeof(epoch), "%" PRIu64, current);
		front_hdrs_add(h, "X-Fencing-Epoch", epoch);
		body = s3err_xml_dup(&e, &len);
		if (body) {
			log_info("request \"%s\" \"%s %s\" answered \"%d\" \"%s\": \"%s\"",
				 proxy_req_id(req), proxy_req_method(req), proxy_req_path(req),
				 c->status, c->err_code, c->err_msg);
			proxy_req_reply(req, c->status, h, S3ERR_XML_CONTENT_TYPE, body, len);
			free(body);
			return;
		}
	}
	if (c->status == 416) {
		char range[64];

		snprintf(range, sizeof(range), "bytes */%" PRId64, c->range_len);
		front_hdrs_add(h, "Content-Range", range);
	}
	proxy_req_reply_error(req, c->status, c->err_code, c->err_msg, h);
}

static void job_done(void *arg)
{
	struct s3l_call *c = arg;
	struct proxy_req *req = c->req;
	struct front_hdrs h = { 0 };
	char buf[128];

	common_headers(c, &h);
	if (c->err_code && c->status != 304) {
		reply_error(c, &h);
		goto out;
	}
	switch (c->op) {
	case OP_LIST_BUCKETS:
	case OP_LOCATION:
	case OP_LIST_V1:
	case OP_LIST_V2:
		proxy_req_reply(req, 200, &h, "application/xml", c->xml, c->xml_len);
		break;
	case OP_CREATE_BUCKET:
		snprintf(buf, sizeof(buf), "/%s", c->bucket);
		front_hdrs_add(&h, "Location", buf);
		proxy_req_reply(req, 200, &h, NULL, NULL, 0);
		break;
	case OP_HEAD_BUCKET:
		front_hdrs_add(&h, "x-amz-bucket-region", "us-east-1");
		proxy_req_reply(req, 200, &h, NULL, NULL, 0);
		break;
	case OP_DELETE_BUCKET:
		if (c->err_msg[0])
			log_warn("%s", c->err_msg);
		proxy_req_reply(req, 204, &h, NULL, NULL, 0);
		break;
	case OP_DELETE:
		proxy_req_reply(req, 204, &h, NULL, NULL, 0);
		break;
	case OP_PUT:
		front_hdrs_add(&h, "ETag", c->res.etag);
		proxy_req_reply(req, 200, &h, NULL, NULL, 0);
		break;
	case OP_HEAD:
	case OP_GET:
		object_headers(c, &h);
		if (c->status == 304) {
			proxy_req_reply(req, 304, &h, NULL, NULL, 0);
			break;
		}
		if (c->partial) {
			snprintf(buf, sizeof(buf), "bytes %" PRId64 "-%" PRId64 "/%" PRId64,
				 c->range_start, c->range_start + c->range_len - 1,
				 c->res.content_length);
			front_hdrs_add(&h, "Content-Range", buf);
		}
		if (c->op == OP_HEAD || !c->res.body) {
			/* Content-Length is the object's (or range's) size */
			if (proxy_req_reply_start(req, c->status, &h, c->range_len) == 0)
				proxy_req_reply_end(req);
			break;
		}
		/* One write: the front end queues it; a client that leaves
		 * mid-body simply drops it. */
		proxy_req_reply(req, c->status, &h, NULL, c->res.body + c->range_start,
				(size_t)c->range_len);
		break;
	}
out:
	front_hdrs_clear(&h);
	call_free(c);
}

/* ---- request parsing (loop thread) ------------------------------------- */

static void submit(struct s3l_call *c)
{
	if (jobs_submit(c->s->jobs, job_run, job_done, c) < 0) {
		proxy_req_reply_error(c->req, 503, "SlowDown",
				      "the server is shutting down or out of memory", NULL);
		call_free(c);
	}
}

static int on_body(struct proxy_req *req, const char *data, size_t len, void *arg)
{
	struct s3l_call *c = arg;

	if (!c->keep_body)
		return 0;
	if (len > c->body_max - c->body_len) {
		if (c->op == OP_PUT)
			proxy_req_reply_error(req, 413, "EntityTooLarge",
					      "the embedded store takes objects up to its "
					      "--max-object size; this body is larger", NULL);
		else
			proxy_req_reply_error(req, 400, "MalformedXML",
					      "the request body is too large", NULL);
		call_free(c); /* the reply ended the request: no end call follows */
		return -1;
	}
	if (c->body_len + len > c->body_cap) {
		size_t cap = c->body_cap ? c->body_cap : 64 * 1024;
		char *grown;

		while (cap < c->body_len + len)
			cap = cap > c->body_max / 2 ? c->body_max : cap * 2;
		grown = realloc(c->body, cap);
		if (!grown) {
			proxy_req_reply_error(req, 503, "SlowDown", "out of memory for the request body",
					      NULL);
			call_free(c);
			return -1;
		}
		c->body = grown;
		c->body_cap = cap;
	}
	memcpy(c->body + c->body_len, data, len);
	c->body_len += len;
	return 0;
}

static void on_end(struct proxy_req *req, int ok, void *arg)
{
	struct s3l_call *c = arg;

	(void)req;
	if (!ok) {
		call_free(c); /* the client left or sent a bad body: last call */
		return;
	}
	submit(c);
}

/* Answers 501 for something S3 has and this server does not. */
static enum proxy_action not_implemented(struct proxy_req *req, const char *what)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "the embedded local-directory store does not support %s; "
		 "run fencegate --upstream URL in front of a real S3 for it", what);
	proxy_req_reply_error(req, 501, "NotImplemented", msg, NULL);
	return PROXY_HANDLED;
}

static enum proxy_action bad_request(struct proxy_req *req, int status, const char *code,
				     const char *msg)
{
	proxy_req_reply_error(req, status, code, msg, NULL);
	return PROXY_HANDLED;
}

/* Subresources (query names) that select an operation this server lacks. */
static const char *unsupported_subresource(const char *name)
{
	static const struct { const char *name, *what; } table[] = {
		{ "uploads", "multipart uploads" },
		{ "uploadId", "multipart uploads" },
		{ "partNumber", "multipart uploads (partNumber)" },
		{ "tagging", "tagging" },
		{ "acl", "ACLs" },
		{ "versioning", "versioning" },
		{ "versionId", "versioning (versionId)" },
		{ "versions", "versioning (ListObjectVersions)" },
		{ "delete", "multi-object delete (DeleteObjects)" },
		{ "policy", "bucket policies" },
		{ "policyStatus", "bucket policies" },
		{ "cors", "CORS configuration" },
		{ "lifecycle", "lifecycle configuration" },
		{ "website", "website configuration" },
		{ "logging", "bucket logging" },
		{ "notification", "bucket notifications" },
		{ "replication", "replication" },
		{ "encryption", "bucket encryption configuration" },
		{ "object-lock", "object lock" },
		{ "retention", "object lock retention" },
		{ "legal-hold", "object lock legal hold" },
		{ "torrent", "torrents" },
		{ "restore", "RestoreObject" },
		{ "select", "S3 Select" },
		{ "accelerate", "transfer acceleration" },
		{ "requestPayment", "requester pays" },
		{ "ownershipControls", "ownership controls" },
		{ "publicAccessBlock", "public access blocks" },
		{ "analytics", "analytics configuration" },
		{ "inventory", "inventory configuration" },
		{ "metrics", "metrics configuration" },
		{ "intelligent-tiering", "intelligent tiering" },
		{ "attributes", "GetObjectAttributes" },
		{ "renameObject", "RenameObject" },
	};
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(name, table[i].name) == 0)
			return table[i].what;
	return NULL;
}

#define S3L_QUERY_MAX 32

struct query {
	char *name[S3L_QUERY_MAX];
	char *value[S3L_QUERY_MAX]; /* NULL for "?name" without '=' */
	size_t n;
};

static void query_free(struct query *q)
{
	size_t i;

	for (i = 0; i < q->n; i++) {
		free(q->name[i]);
		free(q->value[i]);
	}
	q->n = 0;
}

/* Returns 0, or -1 (bad escape, too many parameters, ENOMEM). */
static int query_parse(const char *s, struct query *q)
{
	memset(q, 0, sizeof(*q));
	while (s && *s) {
		const char *amp = strchr(s, '&');
		size_t n = amp ? (size_t)(amp - s) : strlen(s);
		const char *eq = memchr(s, '=', n);

		if (n) {
			if (q->n == S3L_QUERY_MAX)
				goto fail;
			q->name[q->n] = s3_decode(s, eq ? (size_t)(eq - s) : n, 1);
			q->value[q->n] = NULL;
			if (!q->name[q->n])
				goto fail;
			q->n++;
			if (eq) {
				q->value[q->n - 1] = s3_decode(eq + 1, n - (size_t)(eq + 1 - s), 1);
				if (!q->value[q->n - 1])
					goto fail;
			}
		}
		s = amp ? amp + 1 : NULL;
	}
	return 0;
fail:
	query_free(q);
	return -1;
}

/* The value of name: NULL when absent, "" when given without '='. */
static const char *query_get(const struct query *q, const char *name, int *present)
{
	size_t i;

	for (i = 0; i < q->n; i++)
		if (strcmp(q->name[i], name) == 0) {
			if (present)
				*present = 1;
			return q->value[i] ? q->value[i] : "";
		}
	if (present)
		*present = 0;
	return NULL;
}

/* Copies user metadata (x-amz-meta-*) from the request into c. Returns 0 or
 * -1 after replying. */
static int take_metadata(struct s3l_call *c)
{
	const struct front_hdrs *hs = proxy_req_headers(c->req);
	size_t i, total = 0, plen = strlen("x-amz-meta-");

	for (i = 0; i < hs->n; i++) {
		const char *name = hs->v[i].name;

		if (strncasecmp(name, "x-amz-meta-", plen) != 0)
			continue;
		if (!name[plen]) {
			bad_request(c->req, 400, "InvalidArgument", "a metadata header without a name");
			return -1;
		}
		total += strlen(name + plen) + strlen(hs->v[i].value);
		if (c->nmeta == STORE_META_MAX || total > S3L_META_BYTES) {
			bad_request(c->req, 400, "MetadataTooLarge",
				    "your metadata headers exceed what the embedded store keeps "
				    "(16 pairs, 2 KiB)");
			return -1;
		}
		c->meta[c->nmeta].name = strdup(name + plen);
		c->meta[c->nmeta].value = strdup(hs->v[i].value);
		c->nmeta++;
		if (!c->meta[c->nmeta - 1].name || !c->meta[c->nmeta - 1].value) {
			bad_request(c->req, 503, "SlowDown", "out of memory");
			return -1;
		}
	}
	return 0;
}

/* Object requests: headers into c. Returns 0 or -1 after replying. */
static int take_object_headers(struct s3l_call *c, const struct query *q)
{
	struct proxy_req *req = c->req;
	const char *v;

	v = proxy_req_header(req, "If-Match");
	if (v && !(c->if_match = strdup(v)))
		goto nomem;
	v = proxy_req_header(req, "If-None-Match");
	if (v && !(c->if_none_match = strdup(v)))
		goto nomem;
	if (c->op == OP_GET || c->op == OP_HEAD) {
		static const struct { const char *param, *header; } ov[] = {
			{ "response-content-type", "Content-Type" },
			{ "response-content-language", "Content-Language" },
			{ "response-expires", "Expires" },
			{ "response-cache-control", "Cache-Control" },
			{ "response-content-disposition", "Content-Disposition" },
			{ "response-content-encoding", "Content-Encoding" },
		};
		size_t i;

		c->if_modified_since = parse_http_date(proxy_req_header(req, "If-Modified-Since"));
		c->if_unmodified_since = parse_http_date(proxy_req_header(req, "If-Unmodified-Since"));
		v = proxy_req_header(req, "Range");
		if (v && !(c->range = strdup(v)))
			goto nomem;
		for (i = 0; i < sizeof(ov) / sizeof(ov[0]); i++) {
			const char *val = query_get(q, ov[i].param, NULL);
			const char *p;

			if (!val)
				continue;
			for (p = val; *p; p++)
				if ((unsigned char)*p < 0x20 || *p == 0x7f) {
					bad_request(req, 400, "InvalidArgument",
						    "a response- parameter holds a control byte");
					return -1;
				}
			c->overrides[c->noverrides].name = (char *)ov[i].header;
			c->overrides[c->noverrides].value = strdup(val);
			if (!c->overrides[c->noverrides++].value)
				goto nomem;
		}
		return 0;
	}
	v = proxy_req_header(req, S3LOCAL_EPOCH_CURRENT_HEADER);
	if (v && parse_u64(v, &c->lock_epoch) < 0) {
		bad_request(req, 400, "InvalidArgument",
			    S3LOCAL_EPOCH_CURRENT_HEADER " must be an epoch (1-19 digits)");
		return -1;
	}
	if (c->op == OP_DELETE) {
		v = proxy_req_header(req, S3LOCAL_EPOCH_CHECK_HEADER);
		if (v) {
			if (parse_u64(v, &c->epoch) < 0 || c->epoch == 0) {
				bad_request(req, 400, "InvalidArgument",
					    S3LOCAL_EPOCH_CHECK_HEADER " must be an epoch (1-19 digits, >= 1)");
				return -1;
			}
			c->has_epoch = 1;
		}
		return 0;
	}
	/* PUT */
	if (c->if_none_match && !is_any(c->if_none_match)) {
		not_implemented(req, "If-None-Match with an ETag on PUT (only \"*\")");
		return -1;
	}
	if (c->if_none_match && c->if_match) {
		bad_request(req, 400, "InvalidRequest", "If-Match and If-None-Match cannot be combined");
		return -1;
	}
	if (c->if_match && strlen(c->if_match) >= STORE_ETAG_MAX) {
		bad_request(req, 400, "InvalidArgument", "If-Match is too long");
		return -1;
	}
	v = proxy_req_header(req, S3LOCAL_EPOCH_META_HEADER);
	if (v) {
		if (parse_u64(v, &c->epoch) < 0 || c->epoch == 0) {
			bad_request(req, 400, "InvalidArgument",
				    S3LOCAL_EPOCH_META_HEADER " must be an epoch (1-19 digits, >= 1)");
			return -1;
		}
		c->has_epoch = 1;
	}
	v = proxy_req_header(req, "Content-Type");
	if (v && *v && !(c->content_type = strdup(v)))
		goto nomem;
	if (c->content_type && strlen(c->content_type) >= sizeof(c->res.content_type)) {
		bad_request(req, 400, "InvalidArgument", "Content-Type is too long");
		return -1;
	}
	v = proxy_req_header(req, "Content-MD5");
	if (v && !(c->content_md5 = strdup(v)))
		goto nomem;
	v = proxy_req_header(req, "Content-Encoding");
	c->aws_chunked = v && front_list_has(v, "aws-chunked");
	v = proxy_req_header(req, "x-amz-content-sha256");
	if (v && strncmp(v, "STREAMING-", 10) == 0)
		c->aws_chunked = 1;
	c->decoded_length = -1;
	v = proxy_req_header(req, "x-amz-decoded-content-length");
	if (v) {
		uint64_t dl;

		if (parse_u64(v, &dl) < 0) {
			bad_request(req, 400, "InvalidArgument", "bad x-amz-decoded-content-length");
			return -1;
		}
		c->decoded_length = (int64_t)dl;
	}
	if (proxy_req_header(req, "x-amz-copy-source")) {
		not_implemented(req, "CopyObject");
		return -1;
	}
	if (proxy_req_header(req, "x-amz-tagging")) {
		not_implemented(req, "tagging (x-amz-tagging)");
		return -1;
	}
	if (proxy_req_header(req, "x-amz-object-lock-mode") ||
	    proxy_req_header(req, "x-amz-object-lock-retain-until-date") ||
	    proxy_req_header(req, "x-amz-object-lock-legal-hold")) {
		not_implemented(req, "object lock");
		return -1;
	}
	return take_metadata(c);
nomem:
	bad_request(req, 503, "SlowDown", "out of memory");
	return -1;
}

/* Listing parameters into c. Returns 0 or -1 after replying. */
static int take_list_params(struct s3l_call *c, const struct query *q)
{
	const char *v;
	char *end;
	long mk;

	v = query_get(q, "prefix", NULL);
	if (v && !(c->prefix = strdup(v)))
		goto nomem;
	v = query_get(q, "delimiter", NULL);
	if (v && !(c->delimiter = strdup(v)))
		goto nomem;
	v = query_get(q, "start-after", NULL);
	if (c->op == OP_LIST_V2 && v && !(c->start_after = strdup(v)))
		goto nomem;
	v = query_get(q, "continuation-token", NULL);
	if (c->op == OP_LIST_V2 && v && !(c->token = strdup(v)))
		goto nomem;
	v = query_get(q, "marker", NULL);
	if (c->op == OP_LIST_V1 && v && !(c->marker = strdup(v)))
		goto nomem;
	c->max_keys = 1000;
	v = query_get(q, "max-keys", NULL);
	if (v) {
		errno = 0;
		mk = strtol(v, &end, 10);
		if (!*v || *end || errno || mk < 0) {
			bad_request(c->req, 400, "InvalidArgument",
				    "max-keys must be a number from 0 to 2147483647");
			return -1;
		}
		c->max_keys = mk > 1000 ? 1000 : (int)mk;
	}
	v = query_get(q, "encoding-type", NULL);
	if (v) {
		if (strcmp(v, "url") != 0) {
			bad_request(c->req, 400, "InvalidArgument", "encoding-type must be \"url\"");
			return -1;
		}
		c->url_encoding = 1;
	}
	if (c->prefix && strlen(c->prefix) > S3L_KEY_MAX) {
		bad_request(c->req, 400, "KeyTooLongError", "the prefix is longer than a key can be");
		return -1;
	}
	return 0;
nomem:
	bad_request(c->req, 503, "SlowDown", "out of memory");
	return -1;
}

static struct s3l_call *call_new(struct s3local *s, struct proxy_req *req, enum s3l_op op)
{
	struct s3l_call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->s = s;
	c->req = req;
	c->op = op;
	c->res.content_length = -1;
	c->decoded_length = -1;
	return c;
}

/* Decides the operation from method, bucket, key and subresources. Returns
 * the op, or -1 after replying. */
static int pick_op(struct proxy_req *req, const char *method, int has_bucket, int has_key,
		   const struct query *q)
{
	size_t i;
	int present = 0;

	for (i = 0; i < q->n; i++) {
		const char *what = unsupported_subresource(q->name[i]);

		if (what) {
			not_implemented(req, what);
			return -1;
		}
	}
	if (strcmp(method, "POST") == 0) {
		not_implemented(req, "POST requests (multipart uploads, DeleteObjects, form uploads)");
		return -1;
	}
	if (!has_bucket) {
		if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
			return OP_LIST_BUCKETS;
		bad_request(req, 405, "MethodNotAllowed", "the method is not allowed on the service");
		return -1;
	}
	if (!has_key) {
		if (strcmp(method, "PUT") == 0)
			return OP_CREATE_BUCKET;
		if (strcmp(method, "HEAD") == 0)
			return OP_HEAD_BUCKET;
		if (strcmp(method, "DELETE") == 0)
			return OP_DELETE_BUCKET;
		if (strcmp(method, "GET") == 0) {
			const char *lt;

			query_get(q, "location", &present);
			if (present)
				return OP_LOCATION;
			lt = query_get(q, "list-type", NULL);
			if (lt && strcmp(lt, "2") != 0) {
				bad_request(req, 400, "InvalidArgument", "list-type must be 2");
				return -1;
			}
			return lt ? OP_LIST_V2 : OP_LIST_V1;
		}
	} else {
		if (strcmp(method, "PUT") == 0)
			return OP_PUT;
		if (strcmp(method, "GET") == 0)
			return OP_GET;
		if (strcmp(method, "HEAD") == 0)
			return OP_HEAD;
		if (strcmp(method, "DELETE") == 0)
			return OP_DELETE;
	}
	bad_request(req, 405, "MethodNotAllowed", "the method is not allowed on this resource");
	return -1;
}

enum proxy_action s3local_handler(struct proxy_req *req, void *arg)
{
	struct s3local *s = arg;
	const char *path = proxy_req_path(req), *method = proxy_req_method(req);
	const char *slash, *bstart;
	struct query q = { 0 };
	struct s3l_call *c = NULL;
	char *bucket = NULL;
	size_t blen;
	int op;
	int64_t clen;

	if (!path || strncmp(path, "/_fence/", 8) == 0 || strcmp(path, "/_fence") == 0)
		return PROXY_PASS;
	if (path[0] != '/')
		return bad_request(req, 400, "InvalidURI", "the request path must start with '/'");
	if (query_parse(proxy_req_query(req), &q) < 0)
		return bad_request(req, 400, "InvalidURI", "the query string could not be parsed");
	bstart = path + 1;
	slash = strchr(bstart, '/');
	blen = slash ? (size_t)(slash - bstart) : strlen(bstart);
	if (blen) {
		bucket = s3_decode(bstart, blen, 0);
		if (!bucket) {
			bad_request(req, 400, "InvalidURI", "the bucket name has a bad %-escape");
			goto out;
		}
		if (!bucket_name_valid(bucket, strlen(bucket))) {
			bad_request(req, 400, "InvalidBucketName",
				    "bucket names have 3 to 63 characters of a-z 0-9 . -, start and "
				    "end with a letter or digit (path-style requests: /BUCKET/KEY)");
			goto out;
		}
	}
	op = pick_op(req, method, blen > 0, slash && slash[1], &q);
	if (op < 0)
		goto out;
	c = call_new(s, req, (enum s3l_op)op);
	if (!c) {
		bad_request(req, 503, "SlowDown", "out of memory");
		goto out;
	}
	if (bucket)
		snprintf(c->bucket, sizeof(c->bucket), "%s", bucket);
	if (slash && slash[1]) {
		size_t klen;

		c->key = s3_decode(slash + 1, strlen(slash + 1), 0);
		if (!c->key) {
			bad_request(req, 400, "InvalidURI", "the key has a bad %-escape (or an encoded NUL)");
			goto fail;
		}
		klen = strlen(c->key);
		if (klen > S3L_KEY_MAX) {
			bad_request(req, 400, "KeyTooLongError", "your key is too long (at most 1024 bytes)");
			goto fail;
		}
		if (op == OP_PUT && !utf8_valid((const unsigned char *)c->key, klen)) {
			bad_request(req, 400, "InvalidArgument", "object keys must be UTF-8");
			goto fail;
		}
	}
	if (op == OP_LIST_V1 || op == OP_LIST_V2) {
		if (take_list_params(c, &q) < 0)
			goto fail;
	} else if (c->key && take_object_headers(c, &q) < 0) {
		goto fail;
	}
	clen = proxy_req_content_length(req);
	if (op == OP_PUT) {
		int64_t want = c->decoded_length >= 0 ? c->decoded_length : clen;

		if (want > (int64_t)s->max_object) {
			char msg[160];

			snprintf(msg, sizeof(msg), "the embedded store takes objects up to %zu bytes "
				 "(this one has %" PRId64 ")", s->max_object, want);
			bad_request(req, 413, "EntityTooLarge", msg);
			goto fail;
		}
		c->keep_body = 1;
		/* aws-chunked framing adds a little per chunk */
		c->body_max = c->aws_chunked ? s->max_object + s->max_object / 16 + 65536
					     : s->max_object;
		if (clen > 0 && (uint64_t)clen <= c->body_max) {
			c->body = malloc((size_t)clen);
			if (!c->body) {
				bad_request(req, 503, "SlowDown", "out of memory for the request body");
				goto fail;
			}
			c->body_cap = (size_t)clen;
		}
	} else if (op == OP_CREATE_BUCKET) {
		c->keep_body = 1; /* CreateBucketConfiguration: read, then ignored */
		c->body_max = S3L_CONFIG_MAX;
	}
	/* Every request is consumed, with or without a body: the req then
	 * stays valid until the job's reply, even if the client leaves. c is
	 * freed by whoever ends it (on_body, on_end(ok=0), job_done); the
	 * req's ctx slot is left to the handlers before this one. */
	if (proxy_req_consume(req, on_body, on_end, c) < 0) {
		bad_request(req, 500, "InternalError", "the request body could not be read");
		call_free(c);
	}
	query_free(&q);
	free(bucket);
	return PROXY_HANDLED;
fail:
	call_free(c);
out:
	query_free(&q);
	free(bucket);
	return PROXY_HANDLED;
}

/* ---- life cycle --------------------------------------------------------- */

struct s3local *s3local_new(struct event_base *base, struct jobs *jobs,
			    const char *data_dir, size_t max_object_bytes,
			    char *err, size_t errlen)
{
	struct s3local *s = NULL;
	struct stat sb;

	if (!jobs || !data_dir || !*data_dir) {
		snprintf(err, errlen, "the embedded store needs a jobs pool and a data directory");
		return NULL;
	}
	if (strlen(data_dir) > 4000) {
		snprintf(err, errlen, "data directory path is too long");
		return NULL;
	}
	if (mkdir(data_dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create data directory \"%s\": %s", data_dir, strerror(errno));
		return NULL;
	}
	if (stat(data_dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "data directory \"%s\" is not a directory", data_dir);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->data_dir = strdup(data_dir))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* "dir/" and "dir" name the same place; keep paths tidy */
	while (strlen(s->data_dir) > 1 && s->data_dir[strlen(s->data_dir) - 1] == '/')
		s->data_dir[strlen(s->data_dir) - 1] = '\0';
	if (pthread_rwlock_init(&s->buckets, NULL) != 0) {
		free(s->data_dir);
		free(s);
		snprintf(err, errlen, "cannot create a lock");
		return NULL;
	}
	s->base = base;
	s->jobs = jobs;
	s->max_object = max_object_bytes ? max_object_bytes : S3LOCAL_DEFAULT_MAX_OBJECT;
	return s;
}

void s3local_free(struct s3local *s)
{
	size_t w, i;

	if (!s)
		return;
	for (w = 0; w < S3L_WORKERS_MAX; w++)
		for (i = 0; i < S3L_CACHE_SLOTS; i++)
			store_close(s->cache[w].slot[i].st);
	pthread_rwlock_destroy(&s->buckets);
	free(s->data_dir);
	free(s);
}
