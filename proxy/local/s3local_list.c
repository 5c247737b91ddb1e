/* s3local_list.c — the embedded S3 server's listings: ListBuckets,
 * ListObjects (V1) and ListObjectsV2 with prefix, delimiter, markers,
 * continuation tokens and encoding-type=url, their parameters, and the XML
 * they are written in. Runs on the jobs pool (parameters on the loop); it
 * does not read objects or change buckets, and its continuation tokens are
 * opaque only, not signed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/evp.h>

#include "wire/pct.h"
#include "s3local_int.h"
#include "lock/store/store.h"

/* ---- XML ---------------------------------------------------------------- */

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
		if (strnlen((const char *)p, len) == len && s3l_utf8_valid(p, len)) {
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
void s3l_xml_elem(struct evbuffer *b, const char *name, const char *value, int url)
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

int s3l_take_xml(struct s3l_call *c, struct evbuffer *b)
{
	c->xml_len = evbuffer_get_length(b);
	c->xml = malloc(c->xml_len + 1);
	if (!c->xml) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		return -1;
	}
	evbuffer_remove(b, c->xml, c->xml_len);
	c->xml[c->xml_len] = '\0';
	c->status = 200;
	return 0;
}


/* ---- ListBuckets -------------------------------------------------------- */

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

void s3l_run_list_buckets(struct s3l_call *c)
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
		s3l_call_fail(c, 500, "InternalError", "cannot read the data directory: %s", strerror(errno));
		goto out;
	}
	while ((de = readdir(dir)) != NULL) {
		if (!s3_bucket_name_valid(de->d_name, strlen(de->d_name)))
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

		if (fstatat(data_fd, names[i], &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		s3l_iso8601(bucket_created(data_fd, names[i], &sb), when, sizeof(when));
		evbuffer_add_printf(b, "<Bucket>");
		s3l_xml_elem(b, "Name", names[i], 0);
		evbuffer_add_printf(b, "<CreationDate>%s</CreationDate></Bucket>", when);
	}
	evbuffer_add_printf(b, "</Buckets></ListAllMyBucketsResult>");
	goto take;
nomem:
	s3l_call_fail(c, 503, "SlowDown", "out of memory listing buckets");
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

/* ---- ListObjects, ListObjectsV2 ----------------------------------------- */

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

void s3l_run_list(struct s3l_call *c)
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
	int versions = c->op == OP_LIST_VERSIONS;
	int owner = c->op != OP_LIST_V2 || c->fetch_owner;
	int truncated = 0, owned = 0, done = 0, url = c->url_encoding;
	struct store *st = NULL;

	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
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
			s3l_call_fail(c, 400, "InvalidArgument", "the continuation token provided is incorrect");
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
			s3l_call_fail(c, 500, "InternalError", "listing did not advance");
			goto out;
		}
		store_list_page_free(&page);
		if (store_list(st, prefix, after, NULL, S3L_LIST_PAGE, &page, &res) != STORE_OK) {
			s3l_fail_from_store(c, &res);
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

	evbuffer_add_printf(b, S3L_XML_DECL "<%s xmlns=\"" S3L_XMLNS "\">",
			    versions ? "ListVersionsResult" : "ListBucketResult");
	s3l_xml_elem(b, "Name", c->bucket, 0);
	s3l_xml_elem(b, "Prefix", prefix, url);
	if (c->op == OP_LIST_V2) {
		if (c->start_after)
			s3l_xml_elem(b, "StartAfter", c->start_after, url);
		if (c->token)
			s3l_xml_elem(b, "ContinuationToken", c->token, 0);
		evbuffer_add_printf(b, "<KeyCount>%zu</KeyCount>", n);
	} else if (versions) {
		s3l_xml_elem(b, "KeyMarker", c->marker ? c->marker : "", url);
		s3l_xml_elem(b, "VersionIdMarker", c->version_id_marker ? c->version_id_marker : "", 0);
	} else {
		s3l_xml_elem(b, "Marker", c->marker ? c->marker : "", url);
	}
	evbuffer_add_printf(b, "<MaxKeys>%d</MaxKeys>", c->max_keys);
	if (delim)
		s3l_xml_elem(b, "Delimiter", delim, url);
	if (url)
		evbuffer_add_printf(b, "<EncodingType>url</EncodingType>");
	evbuffer_add_printf(b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
	if (truncated && n > 0) {
		if (c->op == OP_LIST_V2) {
			next = token_encode(items[n - 1].name);
			if (!next)
				goto nomem;
			s3l_xml_elem(b, "NextContinuationToken", next, 0);
		} else if (versions) {
			s3l_xml_elem(b, "NextKeyMarker", items[n - 1].name, url);
			s3l_xml_elem(b, "NextVersionIdMarker", "null", 0);
		} else if (delim) {
			s3l_xml_elem(b, "NextMarker", items[n - 1].name, url);
		}
	}
	for (i = 0; i < n; i++) {
		if (items[i].is_prefix)
			continue;
		evbuffer_add_printf(b, versions ? "<Version>" : "<Contents>");
		s3l_xml_elem(b, "Key", items[i].name, url);
		if (versions)
			evbuffer_add_printf(b, "<VersionId>null</VersionId><IsLatest>true</IsLatest>");
		s3l_iso8601(items[i].last_modified, when, sizeof(when));
		evbuffer_add_printf(b, "<LastModified>%s</LastModified>", when);
		s3l_xml_elem(b, "ETag", items[i].etag, 0);
		evbuffer_add_printf(b, "<Size>%" PRId64 "</Size>%s<StorageClass>STANDARD</StorageClass>"
				    "</%s>", items[i].size, owner ? S3L_OWNER : "",
				    versions ? "Version" : "Contents");
	}
	for (i = 0; i < n; i++) {
		if (!items[i].is_prefix)
			continue;
		evbuffer_add_printf(b, "<CommonPrefixes>");
		s3l_xml_elem(b, "Prefix", items[i].name, url);
		evbuffer_add_printf(b, "</CommonPrefixes>");
	}
	evbuffer_add_printf(b, versions ? "</ListVersionsResult>" : "</ListBucketResult>");
	s3l_take_xml(c, b);
	goto out;
nomem:
	s3l_call_fail(c, 503, "SlowDown", "out of memory listing \"%s\"", c->bucket);
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
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

/* ---- request parsing (loop thread) ------------------------------------- */

/* Listing parameters into c. Returns 0 or -1 after replying. */
int s3l_take_list_params(struct s3l_call *c, const struct s3l_query *q)
{
	const char *v;
	char *end;
	long mk;

	v = s3l_query_get(q, "prefix", NULL);
	if (v && !(c->prefix = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, "delimiter", NULL);
	if (v && !(c->delimiter = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, "start-after", NULL);
	if (c->op == OP_LIST_V2 && v && !(c->start_after = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, "continuation-token", NULL);
	if (c->op == OP_LIST_V2 && v && !(c->token = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, c->op == OP_LIST_VERSIONS ? "key-marker" : "marker", NULL);
	if (c->op != OP_LIST_V2 && v && !(c->marker = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, "version-id-marker", NULL);
	if (c->op == OP_LIST_VERSIONS && v && !(c->version_id_marker = strdup(v)))
		goto nomem;
	v = s3l_query_get(q, "fetch-owner", NULL);
	c->fetch_owner = v && strcmp(v, "true") == 0;
	c->max_keys = 1000;
	v = s3l_query_get(q, "max-keys", NULL);
	if (v) {
		errno = 0;
		mk = strtol(v, &end, 10);
		if (!*v || *end || errno || mk < 0) {
			s3l_bad_request(c->req, 400, "InvalidArgument",
					"max-keys must be a number from 0 to 2147483647");
			return -1;
		}
		c->max_keys = mk > 1000 ? 1000 : (int)mk;
	}
	v = s3l_query_get(q, "encoding-type", NULL);
	if (v) {
		if (strcmp(v, "url") != 0) {
			s3l_bad_request(c->req, 400, "InvalidArgument", "encoding-type must be \"url\"");
			return -1;
		}
		c->url_encoding = 1;
	}
	if (c->prefix && strlen(c->prefix) > S3L_KEY_MAX) {
		s3l_bad_request(c->req, 400, "KeyTooLongError", "the prefix is longer than a key can be");
		return -1;
	}
	return 0;
nomem:
	s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
	return -1;
}
