/* s3req.c — the S3 request model and the allow-list of S3 operations
 * (s3req.h). The table is the whole classification: a write that matches
 * no row is refused. Nothing here knows locks, routes or permissions. */
#include "s3req.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/front.h"
#include "http/proxy.h"
#include "wire/bucketname.h"
#include "wire/method.h"
#include "wire/pct.h"

#define OBJ true
#define BKT false

/* Every write S3 has that the proxy lets through, and how. Rows are
 * matched on (method, object or bucket, copy source) with exactly their
 * selecting parameters present (subresource, with), plus versionId where
 * version_ok. */
static const struct s3_op OPS[] = {
	/* objects */
	{ "PutObject", "PUT", OBJ, NULL, NULL, false, false, S3_OBJECT_PUT },
	{ "CopyObject", "PUT", OBJ, NULL, NULL, false, true, S3_OBJECT_COPY },
	{ "UploadPart", "PUT", OBJ, "partNumber", "uploadId", false, false, S3_MPU_PART },
	{ "UploadPartCopy", "PUT", OBJ, "partNumber", "uploadId", false, true, S3_MPU_PART },
	{ "PutObjectTagging", "PUT", OBJ, "tagging", NULL, true, false, S3_OBJECT_ATTR },
	{ "PutObjectAcl", "PUT", OBJ, "acl", NULL, true, false, S3_OBJECT_ATTR },
	{ "PutObjectRetention", "PUT", OBJ, "retention", NULL, true, false, S3_OBJECT_ATTR },
	{ "PutObjectLegalHold", "PUT", OBJ, "legal-hold", NULL, true, false, S3_OBJECT_ATTR },
	{ "DeleteObject", "DELETE", OBJ, NULL, NULL, false, false, S3_OBJECT_DELETE },
	{ "DeleteObject (version)", "DELETE", OBJ, "versionId", NULL, false, false,
	  S3_OBJECT_ATTR },
	{ "DeleteObjectTagging", "DELETE", OBJ, "tagging", NULL, true, false, S3_OBJECT_ATTR },
	{ "AbortMultipartUpload", "DELETE", OBJ, "uploadId", NULL, false, false, S3_MPU_ABORT },
	{ "CreateMultipartUpload", "POST", OBJ, "uploads", NULL, false, false, S3_MPU_CREATE },
	{ "CompleteMultipartUpload", "POST", OBJ, "uploadId", NULL, false, false,
	  S3_MPU_COMPLETE },
	{ "RestoreObject", "POST", OBJ, "restore", NULL, true, false, S3_OBJECT_ATTR },
	{ "SelectObjectContent", "POST", OBJ, "select", "select-type", false, false, S3_READ },
	/* buckets */
	{ "CreateBucket", "PUT", BKT, NULL, NULL, false, false, S3_BUCKET_WRITE },
	{ "DeleteBucket", "DELETE", BKT, NULL, NULL, false, false, S3_BUCKET_WRITE },
	{ "DeleteObjects", "POST", BKT, "delete", NULL, false, false, S3_DELETE_OBJECTS },
	{ "PutBucketAccelerateConfiguration", "PUT", BKT, "accelerate", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketAcl", "PUT", BKT, "acl", NULL, false, false, S3_BUCKET_CONFIG },
	{ "PutBucketAnalyticsConfiguration", "PUT", BKT, "analytics", "id", false, false,
	  S3_BUCKET_CONFIG },
	{ "DeleteBucketAnalyticsConfiguration", "DELETE", BKT, "analytics", "id", false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketCors", "PUT", BKT, "cors", NULL, false, false, S3_BUCKET_CONFIG },
	{ "DeleteBucketCors", "DELETE", BKT, "cors", NULL, false, false, S3_BUCKET_CONFIG },
	{ "PutBucketEncryption", "PUT", BKT, "encryption", NULL, false, false, S3_BUCKET_CONFIG },
	{ "DeleteBucketEncryption", "DELETE", BKT, "encryption", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketIntelligentTieringConfiguration", "PUT", BKT, "intelligent-tiering", "id",
	  false, false, S3_BUCKET_CONFIG },
	{ "DeleteBucketIntelligentTieringConfiguration", "DELETE", BKT, "intelligent-tiering",
	  "id", false, false, S3_BUCKET_CONFIG },
	{ "PutBucketInventoryConfiguration", "PUT", BKT, "inventory", "id", false, false,
	  S3_BUCKET_CONFIG },
	{ "DeleteBucketInventoryConfiguration", "DELETE", BKT, "inventory", "id", false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketLifecycleConfiguration", "PUT", BKT, "lifecycle", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "DeleteBucketLifecycle", "DELETE", BKT, "lifecycle", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketLogging", "PUT", BKT, "logging", NULL, false, false, S3_BUCKET_CONFIG },
	{ "PutBucketMetricsConfiguration", "PUT", BKT, "metrics", "id", false, false,
	  S3_BUCKET_CONFIG },
	{ "DeleteBucketMetricsConfiguration", "DELETE", BKT, "metrics", "id", false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketNotificationConfiguration", "PUT", BKT, "notification", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketOwnershipControls", "PUT", BKT, "ownershipControls", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "DeleteBucketOwnershipControls", "DELETE", BKT, "ownershipControls", NULL, false,
	  false, S3_BUCKET_CONFIG },
	{ "PutBucketPolicy", "PUT", BKT, "policy", NULL, false, false, S3_BUCKET_CONFIG },
	{ "DeleteBucketPolicy", "DELETE", BKT, "policy", NULL, false, false, S3_BUCKET_CONFIG },
	{ "PutPublicAccessBlock", "PUT", BKT, "publicAccessBlock", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "DeletePublicAccessBlock", "DELETE", BKT, "publicAccessBlock", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketReplication", "PUT", BKT, "replication", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "DeleteBucketReplication", "DELETE", BKT, "replication", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketRequestPayment", "PUT", BKT, "requestPayment", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "PutBucketTagging", "PUT", BKT, "tagging", NULL, false, false, S3_BUCKET_CONFIG },
	{ "DeleteBucketTagging", "DELETE", BKT, "tagging", NULL, false, false, S3_BUCKET_CONFIG },
	{ "PutBucketVersioning", "PUT", BKT, "versioning", NULL, false, false, S3_BUCKET_CONFIG },
	{ "PutBucketWebsite", "PUT", BKT, "website", NULL, false, false, S3_BUCKET_CONFIG },
	{ "DeleteBucketWebsite", "DELETE", BKT, "website", NULL, false, false, S3_BUCKET_CONFIG },
	{ "PutObjectLockConfiguration", "PUT", BKT, "object-lock", NULL, false, false,
	  S3_BUCKET_CONFIG },
	{ "CreateBucketMetadataTableConfiguration", "POST", BKT, "metadataTable", NULL, false,
	  false, S3_BUCKET_CONFIG },
	{ "DeleteBucketMetadataTableConfiguration", "DELETE", BKT, "metadataTable", NULL, false,
	  false, S3_BUCKET_CONFIG },
};

/* Parameters that never change the operation: presigned-URL authentication
 * and the SDK's operation hint. */
static bool ignorable(const char *name)
{
	static const char *const amz[] = { "Algorithm", "Credential", "Date", "Expires",
					   "SignedHeaders", "Signature", "Security-Token",
					   "Content-Sha256" };
	static const char *const exact[] = { "AWSAccessKeyId", "Signature", "Expires", "x-id" };

	if (strncasecmp(name, "X-Amz-", 6) == 0)
		for (size_t i = 0; i < sizeof(amz) / sizeof(amz[0]); i++)
			if (strcasecmp(name + 6, amz[i]) == 0)
				return true;
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(name, exact[i]) == 0)
			return true;
	return false;
}

const struct s3_op *s3req_ops(size_t *n)
{
	*n = sizeof(OPS) / sizeof(OPS[0]);
	return OPS;
}

bool s3_class_writes(enum s3_class c)
{
	return c != S3_READ;
}

const char *s3_class_name(enum s3_class c)
{
	switch (c) {
	case S3_READ: return "read";
	case S3_OBJECT_PUT: return "object_put";
	case S3_OBJECT_COPY: return "object_copy";
	case S3_OBJECT_DELETE: return "object_delete";
	case S3_MPU_CREATE: return "mpu_create";
	case S3_MPU_PART: return "mpu_part";
	case S3_MPU_COMPLETE: return "mpu_complete";
	case S3_MPU_ABORT: return "mpu_abort";
	case S3_OBJECT_ATTR: return "object_attr";
	case S3_DELETE_OBJECTS: return "delete_objects";
	case S3_BUCKET_WRITE: return "bucket_write";
	case S3_BUCKET_CONFIG: return "bucket_config";
	case S3_REFUSED: return "refused";
	}
	return "unknown";
}

static int refuse(struct s3req *r, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int refuse(struct s3req *r, int status, const char *code, const char *fmt, ...)
{
	va_list ap;

	r->cls = S3_REFUSED;
	r->op = NULL;
	r->status = status;
	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	return 0;
}

/* 1 if the request's selecting parameters are exactly what op needs. */
static bool params_match(const struct s3req *r, const struct s3_op *op)
{
	size_t need = 0;

	for (size_t i = 0; i < r->query.n; i++) {
		const char *name = r->query.v[i].name;

		if (ignorable(name))
			continue;
		if ((op->subresource && strcmp(name, op->subresource) == 0) ||
		    (op->with && strcmp(name, op->with) == 0)) {
			need++;
			continue;
		}
		if (op->version_ok && strcmp(name, "versionId") == 0)
			continue;
		return false;
	}
	return need == (size_t)(op->subresource != NULL) + (size_t)(op->with != NULL);
}

/* The parameters of a refused write, for the message: "?a&b". */
static void describe_params(const struct s3req *r, char *out, size_t outlen)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; i < r->query.n && o + 1 < outlen; i++) {
		int n;

		if (ignorable(r->query.v[i].name))
			continue;
		n = snprintf(out + o, outlen - o, "%c%.40s", o ? '&' : '?', r->query.v[i].name);
		if (n < 0)
			break;
		o += (size_t)n;
	}
	if (o >= outlen)
		out[outlen - 1] = '\0';
}

static int count_header(const struct front_hdrs *h, const char *name)
{
	int n = 0;

	for (size_t i = 0; h && i < h->n; i++)
		if (strcasecmp(h->v[i].name, name) == 0)
			n++;
	return n;
}

static int split_path(struct s3req *r, const char *path)
{
	const char *b, *slash;
	size_t blen;
	ssize_t n;

	if (!path || path[0] != '/')
		return refuse(r, 400, "InvalidURI", "the request path must start with '/'");
	b = path + 1;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	n = pct_decode(b, blen, PCT_NO_NUL, r->bucket, sizeof(r->bucket));
	if (n < 0)
		return refuse(r, 400, "InvalidBucketName",
			      "the bucket name is not valid percent-encoding or is over %d "
			      "characters", S3REQ_BUCKET_MAX);
	if (memchr(r->bucket, '/', (size_t)n))
		return refuse(r, 400, "InvalidBucketName", "a bucket name cannot hold '/'");
	if (slash && slash[1]) {
		size_t klen = 0;

		r->key = pct_decode_dup(slash + 1, strlen(slash + 1), PCT_NO_NUL, &klen);
		if (!r->key) {
			if (errno == ENOMEM)
				return -1;
			return refuse(r, 400, "InvalidURI",
				      "the key is not valid percent-encoding (or holds %%00)");
		}
		if (klen > S3REQ_KEY_MAX && r->cls != S3_READ)
			return refuse(r, 400, "KeyTooLongError",
				      "a key is at most %d bytes", S3REQ_KEY_MAX);
	}
	return 0;
}

int s3_copy_source_parse(const char *v, struct s3_copy_source *cs, const char **why)
{
	const char *slash, *q, *key;
	size_t klen = 0, raw_klen;

	memset(cs, 0, sizeof(*cs));
	if (*v == '/')
		v++;
	if (strpbrk(v, "#;")) {
		*why = "x-amz-copy-source holds a raw '#' or ';' (percent-encode them)";
		return 1;
	}
	slash = strchr(v, '/');
	q = strchr(v, '?');
	if (!slash || (q && q < slash) || !s3_bucket_name_plain(v, (size_t)(slash - v))) {
		*why = "x-amz-copy-source does not start with a bucket name and '/'";
		return 1;
	}
	memcpy(cs->bucket, v, (size_t)(slash - v));
	cs->bucket[slash - v] = '\0';
	key = slash + 1;
	raw_klen = q ? (size_t)(q - key) : strlen(key);
	if (!raw_klen) {
		*why = "x-amz-copy-source names no key";
		return 1;
	}
	errno = 0;
	cs->key = pct_decode_dup(key, raw_klen, PCT_NO_NUL, &klen);
	if (!cs->key) {
		if (errno == ENOMEM)
			return -1;
		*why = "the key of x-amz-copy-source is not valid percent-encoding (or holds %00)";
		return 1;
	}
	if (klen > S3REQ_KEY_MAX) {
		*why = "the key of x-amz-copy-source is over 1024 bytes";
		return 1;
	}
	if (q) {
		if (strncmp(q, "?versionId=", 11) != 0 || !q[11] || strchr(q + 11, '&') ||
		    strchr(q + 11, '=')) {
			*why = "x-amz-copy-source takes no query but one versionId";
			return 1;
		}
		errno = 0;
		cs->version = pct_decode_dup(q + 11, strlen(q + 11), PCT_NO_NUL, NULL);
		if (!cs->version) {
			if (errno == ENOMEM)
				return -1;
			*why = "the versionId of x-amz-copy-source is not valid percent-encoding";
			return 1;
		}
	}
	return 0;
}

void s3_copy_source_clear(struct s3_copy_source *cs)
{
	if (!cs)
		return;
	free(cs->key);
	free(cs->version);
	memset(cs, 0, sizeof(*cs));
}

/* The copy source of a copy operation into r->copy. Returns 0 (refused
 * when malformed) or -1 on ENOMEM. */
static int parse_copy_source(struct s3req *r, const struct front_hdrs *hdrs)
{
	const char *why = NULL;
	const char *v = front_hdrs_get(hdrs, "x-amz-copy-source");
	int rc = v ? s3_copy_source_parse(v, &r->copy, &why) : 1;

	if (rc < 0)
		return -1;
	if (rc > 0)
		return refuse(r, 400, "InvalidArgument", "%s",
			      why ? why : "x-amz-copy-source is missing");
	return 0;
}

int s3req_parse(struct s3req *r, const char *method, const char *path, const char *query,
		const struct front_hdrs *hdrs)
{
	enum query_status qs;
	const struct query_param *p;
	const char *dup;
	int copies;
	bool object;
	char seen[160];

	memset(r, 0, sizeof(*r));
	r->method = method;
	r->cls = method_is_read(method) ? S3_READ : S3_REFUSED;
	if (split_path(r, path) < 0)
		goto nomem;
	if (r->status)
		return 0;
	qs = query_parse(query, &r->query);
	if (qs == QUERY_NOMEM)
		goto nomem;
	if (r->cls == S3_READ) {
		/* reads change nothing, whatever they ask; S3 judges them */
		if (qs == QUERY_OK) {
			p = query_get(&r->query, "uploadId");
			r->upload_id = p ? p->value : NULL;
			p = query_get(&r->query, "versionId");
			r->version_id = p ? p->value : NULL;
		}
		return 0;
	}
	if (qs != QUERY_OK)
		return refuse(r, 400, "InvalidArgument", "%s", query_strerror(qs));
	dup = query_duplicate(&r->query);
	if (dup)
		return refuse(r, 400, "InvalidArgument",
			      "the query parameter \"%.64s\" is repeated", dup);
	/* a presigned URL's payload hash (the AWS SDK for JavaScript v3 puts
	 * it there): the proxy re-signs and checks no hash it is told, so
	 * only UNSIGNED-PAYLOAD, the presigner's, is taken */
	for (size_t i = 0; i < r->query.n; i++)
		if (strcasecmp(r->query.v[i].name, "X-Amz-Content-Sha256") == 0 &&
		    strcmp(r->query.v[i].value, "UNSIGNED-PAYLOAD") != 0)
			return refuse(r, 400, "InvalidArgument",
				      "X-Amz-Content-Sha256 in a query must be UNSIGNED-PAYLOAD");
	if (strcmp(method, "PUT") != 0 && strcmp(method, "POST") != 0 &&
	    strcmp(method, "DELETE") != 0)
		return refuse(r, 501, "NotImplemented",
			      "S3 has no %.16s requests; refused (it could change state unfenced)",
			      method);
	if (!r->bucket[0])
		return refuse(r, 405, "MethodNotAllowed",
			      "writes need /{bucket} or /{bucket}/{key}");
	copies = count_header(hdrs, "x-amz-copy-source");
	if (copies > 1)
		return refuse(r, 400, "InvalidArgument", "x-amz-copy-source is repeated");
	object = r->key != NULL;
	for (size_t i = 0; i < sizeof(OPS) / sizeof(OPS[0]); i++) {
		const struct s3_op *op = &OPS[i];

		if (strcmp(op->method, method) != 0 || op->object != object ||
		    op->copy_source != (copies == 1) || !params_match(r, op))
			continue;
		r->op = op;
		r->cls = op->cls;
		p = query_get(&r->query, "uploadId");
		r->upload_id = p ? p->value : NULL;
		p = query_get(&r->query, "versionId");
		r->version_id = p ? p->value : NULL;
		if (op->copy_source && parse_copy_source(r, hdrs) < 0)
			goto nomem;
		return 0;
	}
	describe_params(r, seen, sizeof(seen));
	return refuse(r, 501, "NotImplemented",
		      "fencegate does not know the S3 operation %.8s on %s%s%.160s; refused (it "
		      "could change state unfenced)", method, object ? "an object" : "a bucket",
		      copies ? " with x-amz-copy-source" : "", seen);
nomem:
	r->cls = S3_REFUSED;
	r->status = 500;
	r->code = "InternalError";
	snprintf(r->message, sizeof(r->message), "out of memory");
	return -1;
}

void s3req_clear(struct s3req *r)
{
	if (!r)
		return;
	free(r->key);
	query_free(&r->query);
	s3_copy_source_clear(&r->copy);
	memset(r, 0, sizeof(*r));
}

/* The decoded name (or value) of one raw query piece, malloc'd; NULL on
 * ENOMEM or a bad escape. */
static char *piece_decode(const char *p, size_t len)
{
	errno = 0; /* ENOMEM, or a bad escape */
	return pct_decode_dup(p, len, PCT_NO_NUL, NULL);
}

/* A header name S3 would take from a presigned query: token characters
 * only; a value without control bytes. */
static bool amz_param_ok(const char *name, const char *value)
{
	const char *p;

	for (p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return false;
	for (p = value; *p; p++)
		if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	return true;
}

/* A query parameter of a presigned SigV2 URL that stands for a header:
 * x-amz-*, and the Content-Type and Content-MD5 that botocore's SigV2
 * query signer moves there too (generate_presigned_url("put_object",
 * Params={..., "ContentType": ...})). */
static bool v2_header_param(const char *name)
{
	return strncasecmp(name, "x-amz-", 6) == 0 || strcasecmp(name, "content-type") == 0 ||
	       strcasecmp(name, "content-md5") == 0;
}

/* A presigned Signature Version 2 URL carries the request's x-amz-*
 * headers (and Content-Type, Content-MD5) as query parameters (botocore
 * puts a presigned PUT's Metadata there, e.g. x-amz-meta-fencing-token),
 * and S3 reads them as headers. So does the proxy: before anything judges
 * the request they become headers (which the SigV2 signature covers as
 * such, and where fencing reads the token) and leave the query that is
 * forwarded. Only for SigV2 presigned URLs (AWSAccessKeyId and Signature,
 * no X-Amz-Algorithm): a SigV4 query signs its parameters as parameters.
 * Returns 0, 1 with *why when a parameter cannot be a header or
 * contradicts one, -1 on ENOMEM. */
static int hoist_v2_presigned_amz(struct proxy_req *req, const char **why)
{
	const char *q = proxy_req_query(req), *s;
	char *out = NULL, *name = NULL, *value = NULL;
	int has_key = 0, has_sig = 0, moved = 0, pass, rc = -1;
	size_t o = 0;

	if (!q || !*q)
		return 0;
	for (pass = 0; pass < 2; pass++) {
		for (s = q; *s;) {
			const char *amp = strchr(s, '&'), *eq;
			size_t len = amp ? (size_t)(amp - s) : strlen(s), nlen;

			eq = memchr(s, '=', len);
			nlen = eq ? (size_t)(eq - s) : len;
			name = piece_decode(s, nlen);
			if (!name)
				goto bad; /* s3req_parse names the bad escape */
			if (pass == 0) {
				has_key |= strcmp(name, "AWSAccessKeyId") == 0;
				has_sig |= strcmp(name, "Signature") == 0;
				if (strcasecmp(name, "X-Amz-Algorithm") == 0)
					goto none;
			} else if (v2_header_param(name)) {
				const char *have;

				value = eq ? piece_decode(eq + 1, len - nlen - 1) : strdup("");
				if (!value)
					goto bad;
				if (!amz_param_ok(name, value)) {
					*why = "a presigned header parameter is not a valid header";
					rc = 1;
					goto out;
				}
				have = proxy_req_header(req, name);
				if (have && strcmp(have, value) != 0) {
					*why = "a presigned header parameter contradicts a header or "
					       "another parameter of the same name";
					rc = 1;
					goto out;
				}
				if (!have && proxy_req_normalize_header(req, name, value) < 0)
					goto out;
				free(value);
				value = NULL;
				moved = 1;
			} else if (len) {
				if (o)
					out[o++] = '&';
				memcpy(out + o, s, len);
				o += len;
			}
			free(name);
			name = NULL;
			s = amp ? amp + 1 : s + len;
		}
		if (pass == 0) {
			if (!has_key || !has_sig)
				return 0;
			if (!(out = malloc(strlen(q) + 1)))
				return -1;
		}
	}
	out[o] = '\0';
	rc = moved && proxy_req_normalize_query(req, out) < 0 ? -1 : 0;
	goto out;
none:
	rc = 0;
	goto out;
bad:
	rc = errno == ENOMEM ? -1 : 0;
out:
	free(name);
	free(value);
	free(out);
	return rc;
}

static void model_free(void *arg)
{
	s3req_clear(arg);
	free(arg);
}

const struct s3req *s3req_of(struct proxy_req *req)
{
	struct s3req *r = proxy_req_model(req);
	const char *why = NULL;
	int hoisted;

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	hoisted = hoist_v2_presigned_amz(req, &why);
	if (hoisted < 0 ||
	    s3req_parse(r, proxy_req_method(req), proxy_req_path(req), proxy_req_query(req),
			proxy_req_headers(req)) < 0) {
		model_free(r);
		return NULL;
	}
	if (hoisted == 1)
		refuse(r, 400, "InvalidArgument", "%s", why);
	proxy_req_set_model(req, r, model_free);
	return r;
}
