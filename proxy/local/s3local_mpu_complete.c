/* s3local_mpu_complete.c — CompleteMultipartUpload on the embedded S3
 * server: the request's part list (expat), S3's checks of it against the
 * parts on disk (ascending numbers, matching ETags, 5 MiB for every part but
 * the last), the "md5-of-md5s-N" ETag, and the object written from the part
 * files through s3l_put_object with the upload's metadata and epoch — the
 * fencing compare-and-swap, refused when the upload's epoch is no longer
 * the lock's (s3local.h). The upload's directory is s3local_mpu.c's. */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <event2/buffer.h>
#include <expat.h>
#include <openssl/evp.h>

#include "wire/pct.h"
#include "s3local.h"
#include "s3local_int.h"
#include "lock/store/store.h"

struct complete_parse {
	struct s3l_part *want;          /* PartNumber and ETag (md5 unquoted) per Part */
	size_t n, cap;
	int depth, in_part, field;  /* field: 1 PartNumber, 2 ETag */
	char text[128];
	size_t text_len;
	int bad;
};

static void XMLCALL cp_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct complete_parse *p = ud;

	(void)attrs;
	p->depth++;
	p->text_len = 0;
	if (p->depth == 2 && strcmp(name, "Part") == 0) {
		if (p->n == S3L_PARTS_MAX) {
			p->bad = 1;
			return;
		}
		if (p->n == p->cap) {
			struct s3l_part *g = realloc(p->want, (p->cap ? p->cap * 2 : 16) * sizeof(*g));

			if (!g) {
				p->bad = 1;
				return;
			}
			p->want = g;
			p->cap = p->cap ? p->cap * 2 : 16;
		}
		memset(&p->want[p->n], 0, sizeof(p->want[0]));
		p->in_part = 1;
	} else if (p->depth == 3 && p->in_part) {
		p->field = strcmp(name, "PartNumber") == 0 ? 1 : strcmp(name, "ETag") == 0 ? 2 : 0;
	}
}

static void XMLCALL cp_text(void *ud, const XML_Char *s, int len)
{
	struct complete_parse *p = ud;

	if (!p->field)
		return;
	if (p->text_len + (size_t)len >= sizeof(p->text)) {
		p->bad = 1;
		return;
	}
	memcpy(p->text + p->text_len, s, (size_t)len);
	p->text_len += (size_t)len;
}

static void XMLCALL cp_end(void *ud, const XML_Char *name)
{
	struct complete_parse *p = ud;

	(void)name;
	if (p->depth == 3 && p->in_part && p->field) {
		char *t = p->text, *e;

		p->text[p->text_len] = '\0';
		while (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r')
			t++;
		if (p->field == 1) {
			long v = strtol(t, &e, 10);

			p->want[p->n].number = (e == t || v < 1 || v > S3L_PARTS_MAX) ? -1 : (int)v;
		} else {
			size_t l;

			if (*t == '"')
				t++;
			l = strcspn(t, "\" \r\n\t");
			p->want[p->n].md5[0] = '\0';
			if (l == 32) {
				memcpy(p->want[p->n].md5, t, 32);
				p->want[p->n].md5[32] = '\0';
				for (l = 0; l < 32; l++)
					if (p->want[p->n].md5[l] >= 'A' && p->want[p->n].md5[l] <= 'F')
						p->want[p->n].md5[l] = (char)(p->want[p->n].md5[l] - 'A' + 'a');
			}
		}
		p->field = 0;
	} else if (p->depth == 2 && p->in_part) {
		p->in_part = 0;
		p->n++;
	}
	p->depth--;
}

/* The Part list of the request body. 0, or -1 with c failed. */
static int parse_complete(struct s3l_call *c, struct complete_parse *p)
{
	XML_Parser xp = XML_ParserCreate(NULL);
	int ok;

	memset(p, 0, sizeof(*p));
	if (!xp) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		return -1;
	}
	XML_SetUserData(xp, p);
	XML_SetElementHandler(xp, cp_start, cp_end);
	XML_SetCharacterDataHandler(xp, cp_text);
	ok = XML_Parse(xp, c->body ? c->body : "", (int)c->body_len, 1) == XML_STATUS_OK;
	XML_ParserFree(xp);
	if (!ok || p->bad || p->n == 0) {
		s3l_call_fail(c, 400, "MalformedXML",
			      "the XML you provided was not well-formed or did not list any part");
		return -1;
	}
	return 0;
}

/* The upload's stored metadata (and epoch) into opts / c. 0 or -1. */
static int upload_opts(struct s3l_call *c, const cJSON *j, struct store_put_opts *opts,
		       struct store_meta *meta, const char **hdrs)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "meta"), *it;
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "headers");
	const cJSON *ct = cJSON_GetObjectItemCaseSensitive(j, "contentType");
	size_t n = 0, i;

	cJSON_ArrayForEach(it, m) {
		if (!cJSON_IsString(it) || n == STORE_META_MAX)
			continue;
		meta[n].name = it->string;
		meta[n].value = it->valuestring;
		if (strcmp(it->string, S3LOCAL_EPOCH_META) == 0) {
			c->has_epoch = 1;
			c->epoch = strtoull(it->valuestring, NULL, 10);
		}
		n++;
	}
	for (i = 0; i < STORE_HDR_COUNT; i++) {
		it = cJSON_GetObjectItemCaseSensitive(h, store_hdr_names[i]);
		hdrs[i] = cJSON_IsString(it) ? it->valuestring : NULL;
	}
	opts->meta = meta;
	opts->nmeta = n;
	opts->headers = hdrs;
	opts->content_type = cJSON_IsString(ct) ? ct->valuestring : NULL;
	return 0;
}

/* The parts asked for, checked against those on disk and opened into r
 * (fds the caller closes); etag gets "md5-of-md5s-N". 0 or -1. */
static int gather_parts(struct s3l_call *c, struct s3l_upload *u, const struct complete_parse *p,
			struct store_file_range *r, char etag[STORE_ETAG_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE], bin[16];
	unsigned int mdlen = 0;
	struct s3l_part *have = NULL;
	size_t nhave = 0, i, k = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int rc = -1;

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_md5(), NULL) || s3l_read_parts(u->dir_fd, &have, &nhave) < 0) {
		s3l_call_fail(c, 500, "InternalError", "cannot read the upload's parts");
		goto out;
	}
	for (i = 0; i < p->n; i++)
		if (p->want[i].number < 1 || (i && p->want[i].number <= p->want[i - 1].number)) {
			s3l_call_fail(c, 400, "InvalidPartOrder",
				      "the list of parts was not in ascending order of part numbers");
			goto out;
		}
	for (i = 0; i < p->n; i++) {
		char name[48];

		while (k < nhave && have[k].number < p->want[i].number)
			k++;
		if (k == nhave || have[k].number != p->want[i].number ||
		    strcmp(have[k].md5, p->want[i].md5) != 0) {
			s3l_call_fail(c, 400, "InvalidPart",
				      "part %d was not uploaded, or its ETag is not the one given",
				      p->want[i].number);
			goto out;
		}
		if (i + 1 < p->n && have[k].size < S3L_PART_MIN) {
			s3l_call_fail(c, 400, "EntityTooSmall",
				      "part %d is smaller than the minimum allowed size (5 MiB)",
				      p->want[i].number);
			goto out;
		}
		snprintf(name, sizeof(name), "p%05d.%s", have[k].number, have[k].md5);
		r[i].fd = openat(u->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		r[i].offset = 0;
		r[i].len = have[k].size;
		if (r[i].fd < 0) {
			s3l_call_fail(c, 500, "InternalError", "cannot open part %d", have[k].number);
			goto out;
		}
		for (size_t b = 0; b < 16; b++)
			bin[b] = (unsigned char)(hex_value((unsigned char)have[k].md5[2 * b]) * 16 +
						 hex_value((unsigned char)have[k].md5[2 * b + 1]));
		EVP_DigestUpdate(ctx, bin, 16);
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen)) {
		s3l_call_fail(c, 500, "InternalError", "computing the ETag failed");
		goto out;
	}
	etag[0] = '"';
	hex_encode(md, 16, etag + 1);
	snprintf(etag + 33, STORE_ETAG_MAX - 33, "-%zu\"", p->n);
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	free(have);
	return rc;
}

void s3l_run_mpu_complete(struct s3l_call *c)
{
	struct complete_parse p = { 0 };
	struct s3l_upload u = { .dir_fd = -1, .lock_fd = -1 };
	struct store_put_opts opts = { 0 };
	struct store_meta meta[STORE_META_MAX];
	const char *hdrs[STORE_HDR_COUNT];
	struct store_file_range *r = NULL;
	struct evbuffer *b = NULL;
	struct store *st = NULL;
	char etag[STORE_ETAG_MAX], loc[4200];
	size_t i, nopen = 0;
	int owned = 0, ufd;

	struct store_file_range none = { .fd = -1 };

	if (s3l_prepare_body(c, &none) < 0 || parse_complete(c, &p) < 0)
		goto free_parse;
	pthread_rwlock_rdlock(c->s->buckets);
	st = s3l_bucket_store(c, &owned);
	if (!st || s3l_upload_open(c, &u, 1) < 0)
		goto out;
	c->has_epoch = 0; /* the epoch is the upload's, from its create */
	upload_opts(c, u.json, &opts, meta, hdrs);
	if (c->has_epoch && c->lock_epoch > c->epoch) {
		c->has_object_epoch = 1;
		c->object_epoch = c->epoch;
		s3l_call_fail(c, 409, "FencingTokenStale",
			      "the upload was created under epoch %" PRIu64 ", the lock is at epoch %"
			      PRIu64 ": a newer holder may have written since", c->epoch, c->lock_epoch);
		goto out;
	}
	r = calloc(p.n, sizeof(*r));
	if (!r) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		goto out;
	}
	for (i = 0; i < p.n; i++)
		r[i].fd = -1;
	nopen = p.n;
	if (gather_parts(c, &u, &p, r, etag) < 0)
		goto out;
	opts.files = r;
	opts.nfiles = p.n;
	opts.object_etag = etag;
	s3l_put_object(c, st, &opts, NULL, 0);
	if (c->err_code)
		goto out;
	ufd = s3l_uploads_dir(c, 0);
	if (ufd >= 0) {
		s3l_remove_upload(ufd, c->upload_id);
		close(ufd);
	}
	b = evbuffer_new();
	if (!b) {
		s3l_call_fail(c, 503, "SlowDown", "out of memory");
		goto out;
	}
	snprintf(loc, sizeof(loc), "/%s/%s", c->bucket, c->key);
	evbuffer_add_printf(b, S3L_XML_DECL "<CompleteMultipartUploadResult xmlns=\"" S3L_XMLNS "\">");
	s3l_xml_elem(b, "Location", loc, 0);
	s3l_xml_elem(b, "Bucket", c->bucket, 0);
	s3l_xml_elem(b, "Key", c->key, 0);
	s3l_xml_elem(b, "ETag", c->res.etag, 0);
	evbuffer_add_printf(b, "</CompleteMultipartUploadResult>");
	s3l_take_xml(c, b);
out:
	pthread_rwlock_unlock(c->s->buckets);
	if (st)
		s3l_release_store(st, owned);
	for (i = 0; r && i < nopen; i++)
		if (r[i].fd >= 0)
			close(r[i].fd);
	free(r);
	s3l_upload_close(&u);
	if (b)
		evbuffer_free(b);
free_parse:
	free(p.want);
}

