/* sigv2.c — S3's Signature Version 2 (see sigv2.h): builds the
 * StringToSign from a request (positional Content-MD5, Content-Type and
 * date; the x-amz-* headers; the resource with its sub-resources) and signs
 * it with HMAC-SHA1 through OpenSSL. It only builds and signs strings: it
 * does not parse Authorization headers or presigned queries, check times,
 * or know any secret (proxy/s3/auth_v2.c does). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "checksum.h"
#include "query.h"
#include "sigv2.h"

/* The query parameters S3 includes in the CanonicalizedResource: the S3
 * developer guide's list (acl ... website, delete, response-*) and the
 * ones botocore signs too, sorted (bsearch). */
static const char *const subresources[] = {
	"accelerate", "acl", "analytics", "cors", "defaultObjectAcl", "delete",
	"inventory", "lifecycle", "location", "logging", "metrics", "notification",
	"object-lock", "partNumber", "policy", "replication", "requestPayment",
	"response-cache-control", "response-content-disposition",
	"response-content-encoding", "response-content-language",
	"response-content-type", "response-expires", "restore", "select",
	"select-type", "storageClass", "tagging", "torrent", "uploadId", "uploads",
	"versionId", "versioning", "versions", "website",
};

static int cmp_name(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

int sigv2_is_subresource(const char *name)
{
	return bsearch(name, subresources, sizeof(subresources) / sizeof(subresources[0]),
		       sizeof(subresources[0]), cmp_name) != NULL;
}

/* ---- a bounded string builder -------------------------------------------- */

struct out {
	char *s;
	size_t len, cap;
	int failed;
};

static void put(struct out *o, const char *p, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		char *grown;

		while (cap < o->len + n + 1)
			cap *= 2;
		grown = realloc(o->s, cap);
		if (!grown) {
			o->failed = 1;
			return;
		}
		o->s = grown;
		o->cap = cap;
	}
	memcpy(o->s + o->len, p, n);
	o->len += n;
	o->s[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* s without surrounding blanks (space, tab): start and length. */
static const char *trimmed(const char *s, size_t *n)
{
	size_t len;

	while (*s == ' ' || *s == '\t')
		s++;
	len = strlen(s);
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	*n = len;
	return s;
}

/* The first header called name (case-insensitive), trimmed, or "" when
 * absent. */
static void put_positional(struct out *o, const struct sigv2_request *req, const char *name)
{
	size_t i, n;
	const char *v;

	for (i = 0; i < req->nheaders; i++) {
		if (strcasecmp(req->headers[i].name, name) == 0) {
			v = trimmed(req->headers[i].value ? req->headers[i].value : "", &n);
			put(o, v, n);
			break;
		}
	}
	put(o, "\n", 1);
}

static int has_header(const struct sigv2_request *req, const char *name)
{
	for (size_t i = 0; i < req->nheaders; i++)
		if (strcasecmp(req->headers[i].name, name) == 0)
			return 1;
	return 0;
}

/* One x-amz-* header, to sort: its index and lowercased name. */
struct amz {
	size_t idx;
	char *lname;
};

static int cmp_amz(const void *a, const void *b)
{
	const struct amz *x = a, *y = b;
	int c = strcmp(x->lname, y->lname);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* CanonicalizedAmzHeaders. Returns 0 or -1 (ENOMEM). */
static int put_amz_headers(struct out *o, const struct sigv2_request *req)
{
	struct amz *v = NULL;
	size_t i, n = 0;
	int rc = -1;

	v = calloc(req->nheaders ? req->nheaders : 1, sizeof(*v));
	if (!v)
		goto out;
	for (i = 0; i < req->nheaders; i++) {
		const char *name = req->headers[i].name;

		if (strncasecmp(name, "x-amz-", 6) != 0)
			continue;
		v[n].idx = i;
		v[n].lname = strdup(name);
		if (!v[n].lname)
			goto out;
		for (char *c = v[n].lname; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_amz);
	for (i = 0; i < n; i++) {
		const char *val = req->headers[v[i].idx].value;
		size_t len;

		if (i == 0 || strcmp(v[i].lname, v[i - 1].lname) != 0) {
			if (i)
				put(o, "\n", 1);
			puts_(o, v[i].lname);
			put(o, ":", 1);
		} else {
			put(o, ",", 1);
		}
		val = trimmed(val ? val : "", &len);
		put(o, val, len);
	}
	if (n)
		put(o, "\n", 1);
	rc = 0;
out:
	for (i = 0; v && i < n; i++)
		free(v[i].lname);
	free(v);
	return rc;
}

static int cmp_param(const void *a, const void *b)
{
	const struct query_param *const *x = a, *const *y = b;
	int c = strcmp((*x)->name, (*y)->name);

	if (c)
		return c;
	return *x < *y ? -1 : *x > *y;
}

/* The sub-resources of the query, sorted: "?a&b=v". Returns 0, or -1 on
 * ENOMEM or a bad escape. */
static int put_subresources(struct out *o, const char *raw)
{
	struct query q = { 0 };
	const struct query_param **sel = NULL;
	size_t i, n = 0;
	int rc = -1;

	if (query_parse(raw, &q) != QUERY_OK)
		goto out;
	sel = calloc(q.n ? q.n : 1, sizeof(*sel));
	if (!sel)
		goto out;
	for (i = 0; i < q.n; i++)
		if (sigv2_is_subresource(q.v[i].name))
			sel[n++] = &q.v[i];
	/* pointers into one array: ties keep the request's order */
	qsort(sel, n, sizeof(*sel), cmp_param);
	for (i = 0; i < n; i++) {
		put(o, i ? "&" : "?", 1);
		puts_(o, sel[i]->name);
		if (sel[i]->has_value) {
			put(o, "=", 1);
			put(o, sel[i]->value, sel[i]->value_len);
		}
	}
	rc = 0;
out:
	free(sel);
	query_free(&q);
	return rc;
}

int sigv2_string_to_sign(const struct sigv2_request *req, char **sts)
{
	struct out o = { 0 };

	*sts = NULL;
	puts_(&o, req->method);
	put(&o, "\n", 1);
	put_positional(&o, req, "content-md5");
	put_positional(&o, req, "content-type");
	if (req->expires) {
		puts_(&o, req->expires);
		put(&o, "\n", 1);
	} else if (has_header(req, "x-amz-date")) {
		put(&o, "\n", 1);   /* signed among the x-amz-* headers */
	} else {
		put_positional(&o, req, "date");
	}
	if (put_amz_headers(&o, req) < 0)
		goto fail;
	if (req->bucket && *req->bucket) {
		put(&o, "/", 1);
		puts_(&o, req->bucket);
	}
	puts_(&o, req->path);
	if (!(req->bucket && *req->bucket) && req->path[0] == '/' && req->path[1] &&
	    !strchr(req->path + 1, '/'))
		put(&o, "/", 1);   /* path-style "/bucket" is the resource "/bucket/" */
	if (put_subresources(&o, req->query) < 0)
		goto fail;
	if (o.failed)
		goto fail;
	*sts = o.s;
	return 0;
fail:
	free(o.s);
	return -1;
}

void sigv2_signature(const char *secret, const char *sts, char out[SIGV2_SIGNATURE_LEN + 1])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char b64[CHECKSUM_BASE64_MAX];

	out[0] = '\0';
	if (!HMAC(EVP_sha1(), secret, (int)strlen(secret), (const unsigned char *)sts,
		  strlen(sts), mac, &maclen) || maclen != 20)
		goto out;
	checksum_base64(mac, maclen, b64);
	memcpy(out, b64, SIGV2_SIGNATURE_LEN);
	out[SIGV2_SIGNATURE_LEN] = '\0';
out:
	OPENSSL_cleanse(mac, sizeof(mac));
	OPENSSL_cleanse(b64, sizeof(b64));
}

int sigv2_signature_equal(const char *a, const char *b)
{
	if (!a || !b || strlen(a) != SIGV2_SIGNATURE_LEN || strlen(b) != SIGV2_SIGNATURE_LEN)
		return 0;
	return CRYPTO_memcmp(a, b, SIGV2_SIGNATURE_LEN) == 0;
}
