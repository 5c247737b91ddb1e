/* test_s3req.c — the S3 request model and its allow-list (proxy/s3/s3req.c).
 *
 * 1. Every write operation of the S3 API, by the request shape AWS
 *    documents for it, classifies as a fenced class, an admin or bucket
 *    class, or refused — never as a read (an unfenced pass-through).
 * 2. Encodings and malformed queries: decoded names select the same
 *    operation ("?d%65lete" is DeleteObjects); unknown, repeated, mixed-case
 *    or undecodable parameters refuse a write.
 * 3. Paths: bucket and key decoded once, %00 and bad escapes refused.
 * 4. The copy source (x-amz-copy-source): parsed once into the model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/front.h"
#include "s3/s3req.h"

struct shape {
	const char *api;         /* AWS API name, for the message */
	const char *method;
	const char *path;
	const char *query;       /* NULL: none */
	int copy_source;         /* send x-amz-copy-source */
	enum s3_class expect;
};

static enum s3_class classify(const char *method, const char *path, const char *query,
			      int copy_source, struct s3req *r)
{
	struct front_hdrs h = { 0 };

	if (copy_source)
		assert_int_equal(front_hdrs_add(&h, "x-amz-copy-source", "/src/obj"), 0);
	assert_int_equal(s3req_parse(r, method, path, query, &h), 0);
	front_hdrs_clear(&h);
	return r->cls;
}

static void run_shapes(const struct shape *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct s3req r;
		enum s3_class c = classify(s[i].method, s[i].path, s[i].query, s[i].copy_source, &r);

		if (c != s[i].expect)
			fail_msg("%s (%s %s%s%s): got %s (%s), want %s", s[i].api, s[i].method,
				 s[i].path, s[i].query ? "?" : "", s[i].query ? s[i].query : "",
				 s3_class_name(c), r.message, s3_class_name(s[i].expect));
		if (c == S3_REFUSED && (!r.code || !r.message[0] || r.status < 400))
			fail_msg("%s: refused without a status, code and message", s[i].api);
		s3req_clear(&r);
	}
}

/* Every state-changing operation of the S3 API (Amazon S3 API Reference,
 * "Actions"), with its documented request shape. */
static void test_every_s3_write_operation(void **state)
{
	static const struct shape ops[] = {
		{ "AbortMultipartUpload", "DELETE", "/b/k", "uploadId=U", 0, S3_MPU_ABORT },
		{ "CompleteMultipartUpload", "POST", "/b/k", "uploadId=U", 0, S3_MPU_COMPLETE },
		{ "CopyObject", "PUT", "/b/k", NULL, 1, S3_OBJECT_COPY },
		{ "CreateBucket", "PUT", "/b", NULL, 0, S3_BUCKET_WRITE },
		{ "CreateMultipartUpload", "POST", "/b/k", "uploads", 0, S3_MPU_CREATE },
		{ "DeleteBucket", "DELETE", "/b", NULL, 0, S3_BUCKET_WRITE },
		{ "DeleteBucketAnalyticsConfiguration", "DELETE", "/b", "analytics&id=a", 0,
		  S3_BUCKET_CONFIG },
		{ "DeleteBucketCors", "DELETE", "/b", "cors", 0, S3_BUCKET_CONFIG },
		{ "DeleteBucketEncryption", "DELETE", "/b", "encryption", 0, S3_BUCKET_CONFIG },
		{ "DeleteBucketIntelligentTieringConfiguration", "DELETE", "/b",
		  "intelligent-tiering&id=a", 0, S3_BUCKET_CONFIG },
		{ "DeleteBucketInventoryConfiguration", "DELETE", "/b", "inventory&id=a", 0,
		  S3_BUCKET_CONFIG },
		{ "DeleteBucketLifecycle", "DELETE", "/b", "lifecycle", 0, S3_BUCKET_CONFIG },
		{ "DeleteBucketMetadataTableConfiguration", "DELETE", "/b", "metadataTable", 0,
		  S3_BUCKET_CONFIG },
		{ "DeleteBucketMetadataConfiguration", "DELETE", "/b", "metadataConfiguration", 0,
		  S3_REFUSED },
		{ "DeleteBucketMetricsConfiguration", "DELETE", "/b", "metrics&id=a", 0,
		  S3_BUCKET_CONFIG },
		{ "DeleteBucketOwnershipControls", "DELETE", "/b", "ownershipControls", 0,
		  S3_BUCKET_CONFIG },
		{ "DeleteBucketPolicy", "DELETE", "/b", "policy", 0, S3_BUCKET_CONFIG },
		{ "DeleteBucketReplication", "DELETE", "/b", "replication", 0, S3_BUCKET_CONFIG },
		{ "DeleteBucketTagging", "DELETE", "/b", "tagging", 0, S3_BUCKET_CONFIG },
		{ "DeleteBucketWebsite", "DELETE", "/b", "website", 0, S3_BUCKET_CONFIG },
		{ "DeleteObject", "DELETE", "/b/k", NULL, 0, S3_OBJECT_DELETE },
		{ "DeleteObject (versionId)", "DELETE", "/b/k", "versionId=v1", 0, S3_OBJECT_ATTR },
		{ "DeleteObjects", "POST", "/b", "delete", 0, S3_DELETE_OBJECTS },
		{ "DeleteObjectTagging", "DELETE", "/b/k", "tagging", 0, S3_OBJECT_ATTR },
		{ "DeleteObjectTagging (versionId)", "DELETE", "/b/k", "tagging&versionId=v", 0,
		  S3_OBJECT_ATTR },
		{ "DeletePublicAccessBlock", "DELETE", "/b", "publicAccessBlock", 0,
		  S3_BUCKET_CONFIG },
		{ "PutBucketAbac", "PUT", "/b", "abac", 0, S3_REFUSED },
		{ "PutBucketAccelerateConfiguration", "PUT", "/b", "accelerate", 0,
		  S3_BUCKET_CONFIG },
		{ "PutBucketAcl", "PUT", "/b", "acl", 0, S3_BUCKET_CONFIG },
		{ "PutBucketAnalyticsConfiguration", "PUT", "/b", "analytics&id=a", 0,
		  S3_BUCKET_CONFIG },
		{ "PutBucketCors", "PUT", "/b", "cors", 0, S3_BUCKET_CONFIG },
		{ "PutBucketEncryption", "PUT", "/b", "encryption", 0, S3_BUCKET_CONFIG },
		{ "PutBucketIntelligentTieringConfiguration", "PUT", "/b",
		  "intelligent-tiering&id=a", 0, S3_BUCKET_CONFIG },
		{ "PutBucketInventoryConfiguration", "PUT", "/b", "inventory&id=a", 0,
		  S3_BUCKET_CONFIG },
		{ "PutBucketLifecycle(Configuration)", "PUT", "/b", "lifecycle", 0,
		  S3_BUCKET_CONFIG },
		{ "PutBucketLogging", "PUT", "/b", "logging", 0, S3_BUCKET_CONFIG },
		{ "PutBucketMetricsConfiguration", "PUT", "/b", "metrics&id=a", 0,
		  S3_BUCKET_CONFIG },
		{ "PutBucketNotification(Configuration)", "PUT", "/b", "notification", 0,
		  S3_BUCKET_CONFIG },
		{ "PutBucketOwnershipControls", "PUT", "/b", "ownershipControls", 0,
		  S3_BUCKET_CONFIG },
		{ "PutBucketPolicy", "PUT", "/b", "policy", 0, S3_BUCKET_CONFIG },
		{ "PutBucketReplication", "PUT", "/b", "replication", 0, S3_BUCKET_CONFIG },
		{ "PutBucketRequestPayment", "PUT", "/b", "requestPayment", 0, S3_BUCKET_CONFIG },
		{ "PutBucketTagging", "PUT", "/b", "tagging", 0, S3_BUCKET_CONFIG },
		{ "PutBucketVersioning", "PUT", "/b", "versioning", 0, S3_BUCKET_CONFIG },
		{ "PutBucketWebsite", "PUT", "/b", "website", 0, S3_BUCKET_CONFIG },
		{ "PutObject", "PUT", "/b/k", NULL, 0, S3_OBJECT_PUT },
		{ "PutObjectAcl", "PUT", "/b/k", "acl", 0, S3_OBJECT_ATTR },
		{ "PutObjectLegalHold", "PUT", "/b/k", "legal-hold", 0, S3_OBJECT_ATTR },
		{ "PutObjectLockConfiguration", "PUT", "/b", "object-lock", 0, S3_BUCKET_CONFIG },
		{ "PutObjectRetention", "PUT", "/b/k", "retention&versionId=v", 0, S3_OBJECT_ATTR },
		{ "PutObjectTagging", "PUT", "/b/k", "tagging", 0, S3_OBJECT_ATTR },
		{ "PutPublicAccessBlock", "PUT", "/b", "publicAccessBlock", 0, S3_BUCKET_CONFIG },
		{ "RenameObject", "PUT", "/b/k", "renameObject", 0, S3_REFUSED },
		{ "RestoreObject", "POST", "/b/k", "restore", 0, S3_OBJECT_ATTR },
		{ "SelectObjectContent", "POST", "/b/k", "select&select-type=2", 0, S3_READ },
		{ "UpdateBucketMetadataInventoryTableConfiguration", "PUT", "/b",
		  "metadataInventoryTable", 0, S3_REFUSED },
		{ "UpdateBucketMetadataJournalTableConfiguration", "PUT", "/b",
		  "metadataJournalTable", 0, S3_REFUSED },
		{ "CreateBucketMetadataConfiguration", "POST", "/b", "metadataConfiguration", 0,
		  S3_REFUSED },
		{ "CreateBucketMetadataTableConfiguration", "POST", "/b", "metadataTable", 0,
		  S3_BUCKET_CONFIG },
		{ "UpdateObjectEncryption", "PUT", "/b/k", "encryption", 0, S3_REFUSED },
		{ "UploadPart", "PUT", "/b/k", "partNumber=1&uploadId=U", 0, S3_MPU_PART },
		{ "UploadPartCopy", "PUT", "/b/k", "partNumber=1&uploadId=U", 1, S3_MPU_PART },
		{ "WriteGetObjectResponse", "POST", "/WriteGetObjectResponse", NULL, 0, S3_REFUSED },
		{ "PostObject (browser form upload)", "POST", "/b", NULL, 0, S3_REFUSED },
		{ "POST on an object without a sub-resource", "POST", "/b/k", NULL, 0, S3_REFUSED },
		{ "PUT on the service", "PUT", "/", NULL, 0, S3_REFUSED },
		{ "DELETE on the service", "DELETE", "/", NULL, 0, S3_REFUSED },
		{ "PATCH", "PATCH", "/b/k", NULL, 0, S3_REFUSED },
		{ "an unknown method", "MKCOL", "/b/k", NULL, 0, S3_REFUSED },
		{ "a lowercase method", "put", "/b/k", NULL, 0, S3_REFUSED },
	};

	(void)state;
	run_shapes(ops, sizeof(ops) / sizeof(ops[0]));
}

/* Reads pass whatever they carry; S3 has no state-changing GET. */
static void test_reads(void **state)
{
	static const struct shape reads[] = {
		{ "GetObject", "GET", "/b/k", "response-content-type=x&versionId=v", 0, S3_READ },
		{ "HeadObject", "HEAD", "/b/k", "partNumber=1", 0, S3_READ },
		{ "ListObjectsV2", "GET", "/b", "list-type=2&prefix=a&prefix=b", 0, S3_READ },
		{ "ListBuckets", "GET", "/", NULL, 0, S3_READ },
		{ "GetBucketPolicy", "GET", "/b", "policy", 0, S3_READ },
		{ "an unknown read", "GET", "/b/k", "whatever=%zz", 0, S3_READ },
		{ "CORS preflight", "OPTIONS", "/b/k", NULL, 0, S3_READ },
	};

	(void)state;
	run_shapes(reads, sizeof(reads) / sizeof(reads[0]));
}

static void test_encodings(void **state)
{
	char longval[300], longquery[400];

	(void)state;
	memset(longval, 'x', sizeof(longval) - 1);
	longval[sizeof(longval) - 1] = '\0';
	snprintf(longquery, sizeof(longquery), "delete=%s", longval);
	{
		const struct shape enc[] = {
			/* encoded names are the same operation */
			{ "d%65lete", "POST", "/b", "d%65lete", 0, S3_DELETE_OBJECTS },
			{ "%64elete", "POST", "/b", "%64elete", 0, S3_DELETE_OBJECTS },
			{ "delete with a long value", "POST", "/b", longquery, 0,
			  S3_DELETE_OBJECTS },
			{ "delete=", "POST", "/b", "delete=", 0, S3_DELETE_OBJECTS },
			{ "upload%73", "POST", "/b/k", "upload%73", 0, S3_MPU_CREATE },
			{ "upload%49d", "PUT", "/b/k", "partNumber=1&upload%49d=ID", 0,
			  S3_MPU_PART },
			{ "%74agging", "PUT", "/b/k", "%74agging", 0, S3_OBJECT_ATTR },
			{ "tagging=", "PUT", "/b/k", "tagging=", 0, S3_OBJECT_ATTR },
			/* presigned auth and the SDK hint change nothing */
			{ "presigned PutObject", "PUT", "/b/k",
			  "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a%2Fb&X-Amz-Date=x&"
			  "X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00", 0,
			  S3_OBJECT_PUT },
			{ "SigV2 presigned PutObject", "PUT", "/b/k",
			  "AWSAccessKeyId=A&Signature=s%3D&Expires=1", 0, S3_OBJECT_PUT },
			{ "x-id", "PUT", "/b/k", "x-id=PutObject", 0, S3_OBJECT_PUT },
			{ "empty segments", "PUT", "/b/k", "&&", 0, S3_OBJECT_PUT },
			/* unknown parameters refuse a write (today they made
			 * it an unfenced "other write") */
			{ "?x=1 on PUT", "PUT", "/b/k", "x=1", 0, S3_REFUSED },
			{ "?x=1 on DELETE", "DELETE", "/b/k", "x=1", 0, S3_REFUSED },
			{ "?x on POST bucket", "POST", "/b", "x", 0, S3_REFUSED },
			{ "mixed case Uploads", "POST", "/b/k", "Uploads", 0, S3_REFUSED },
			{ "mixed case UPLOADID", "PUT", "/b/k", "partNumber=1&UPLOADID=u", 0,
			  S3_REFUSED },
			{ "Delete", "POST", "/b", "Delete", 0, S3_REFUSED },
			{ "upload+s (plus is a space)", "POST", "/b/k", "upload+s", 0, S3_REFUSED },
			{ "another X-Amz- parameter", "PUT", "/b/k", "X-Amz-Copy-Source=a", 0,
			  S3_REFUSED },
			{ "versionId on PutObject", "PUT", "/b/k", "versionId=v", 0, S3_REFUSED },
			{ "partNumber without uploadId", "PUT", "/b/k", "partNumber=1", 0,
			  S3_REFUSED },
			{ "two sub-resources", "PUT", "/b/k", "tagging&acl", 0, S3_REFUSED },
			{ "uploads with a copy source", "POST", "/b/k", "uploads", 1, S3_REFUSED },
			{ "tagging with a copy source", "PUT", "/b/k", "tagging", 1, S3_REFUSED },
			/* malformed */
			{ "repeated uploadId", "POST", "/b/k", "uploadId=a&uploadId=b", 0,
			  S3_REFUSED },
			{ "repeated x-id", "PUT", "/b/k", "x-id=a&x-id=a", 0, S3_REFUSED },
			{ "bad escape", "PUT", "/b/k", "tagging%zz", 0, S3_REFUSED },
			{ "truncated escape", "PUT", "/b/k", "tagging%2", 0, S3_REFUSED },
			{ "%00 in a name", "PUT", "/b/k", "tagging%00", 0, S3_REFUSED },
		};

		run_shapes(enc, sizeof(enc) / sizeof(enc[0]));
	}
}

static void test_paths(void **state)
{
	struct s3req r;
	char big[1100];

	(void)state;
	assert_int_equal(classify("PUT", "/b/a%2Fb%20c", NULL, 0, &r), S3_OBJECT_PUT);
	assert_string_equal(r.bucket, "b");
	assert_string_equal(r.key, "a/b c");
	s3req_clear(&r);
	assert_int_equal(classify("PUT", "/b//x", NULL, 0, &r), S3_OBJECT_PUT);
	assert_string_equal(r.key, "/x");
	s3req_clear(&r);
	assert_int_equal(classify("PUT", "/b/", NULL, 0, &r), S3_BUCKET_WRITE);
	assert_null(r.key);
	s3req_clear(&r);
	assert_int_equal(classify("PUT", "/b/k%00", NULL, 0, &r), S3_REFUSED);
	assert_int_equal(r.status, 400);
	s3req_clear(&r);
	assert_int_equal(classify("GET", "/b/k%zz", NULL, 0, &r), S3_REFUSED);
	s3req_clear(&r);
	assert_int_equal(classify("PUT", "/b%2Fc/k", NULL, 0, &r), S3_REFUSED);
	s3req_clear(&r);
	memset(big, 'b', 70);
	big[0] = '/';
	strcpy(big + 70, "/k");
	assert_int_equal(classify("PUT", big, NULL, 0, &r), S3_REFUSED);
	assert_string_equal(r.code, "InvalidBucketName");
	s3req_clear(&r);
	big[0] = '/';
	big[1] = 'b';
	big[2] = '/';
	memset(big + 3, 'k', 1025);
	big[1028] = '\0';
	assert_int_equal(classify("PUT", big, NULL, 0, &r), S3_REFUSED);
	assert_string_equal(r.code, "KeyTooLongError");
	s3req_clear(&r);
	big[1027] = '\0'; /* 1024 bytes: the limit */
	assert_int_equal(classify("PUT", big, NULL, 0, &r), S3_OBJECT_PUT);
	s3req_clear(&r);
	assert_int_equal(classify("PUT", "b/k", NULL, 0, &r), S3_REFUSED);
	s3req_clear(&r);
	s3req_clear(NULL);
}

static void test_upload_and_version_ids(void **state)
{
	struct s3req r;
	struct front_hdrs h = { 0 };

	(void)state;
	assert_int_equal(classify("POST", "/b/k", "uploadId=a%2Bb", 0, &r), S3_MPU_COMPLETE);
	assert_string_equal(r.upload_id, "a+b");
	assert_string_equal(r.op->name, "CompleteMultipartUpload");
	s3req_clear(&r);
	assert_int_equal(classify("DELETE", "/b/k", "versionId=v%201", 0, &r), S3_OBJECT_ATTR);
	assert_string_equal(r.version_id, "v 1");
	s3req_clear(&r);
	/* two copy-source headers: refused */
	front_hdrs_add(&h, "x-amz-copy-source", "/a/b");
	front_hdrs_add(&h, "X-Amz-Copy-Source", "/c/d");
	assert_int_equal(s3req_parse(&r, "PUT", "/b/k", NULL, &h), 0);
	assert_int_equal(r.cls, S3_REFUSED);
	s3req_clear(&r);
	front_hdrs_clear(&h);
}

/* The table itself: every row is a write class but SelectObjectContent,
 * and no two rows can match the same request. */
/* 4. The copy source: one parse, the one authz authorises and fencing and
 *    the embedded store copy from. */
static void test_copy_source(void **state)
{
	static const struct {
		const char *v;
		const char *bucket, *key, *version; /* bucket NULL: refused */
	} rows[] = {
		{ "/authbkt/secret/payroll.csv", "authbkt", "secret/payroll.csv", NULL },
		{ "authbkt/a%20b%2Fc", "authbkt", "a b/c", NULL },
		{ "/privbkt/keys.txt?versionId=3%2Bx", "privbkt", "keys.txt", "3+x" },
		{ "/b.k-1/..%2F../x", "b.k-1", "../../x", NULL },
		{ "/%61uthbkt/x", NULL, NULL, NULL },        /* escapes in a bucket name */
		{ "/AuthBkt/x", NULL, NULL, NULL },
		{ "/authbkt", NULL, NULL, NULL },
		{ "/authbkt/", NULL, NULL, NULL },
		{ "authbkt/k%00", NULL, NULL, NULL },
		{ "authbkt/k%zz", NULL, NULL, NULL },
		{ "authbkt/k;x", NULL, NULL, NULL },
		{ "authbkt/k#x", NULL, NULL, NULL },
		{ "authbkt/k?x=1", NULL, NULL, NULL },
		{ "authbkt/k?versionId=", NULL, NULL, NULL },
		{ "authbkt/k?versionId=1&x", NULL, NULL, NULL },
		{ "au/k", NULL, NULL, NULL },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct s3_copy_source cs;
		const char *why = NULL;
		int rc = s3_copy_source_parse(rows[i].v, &cs, &why);

		if (!rows[i].bucket) {
			if (rc != 1 || !why)
				fail_msg("%s: not refused (%d)", rows[i].v, rc);
		} else {
			if (rc != 0)
				fail_msg("%s: refused: %s", rows[i].v, why);
			assert_string_equal(cs.bucket, rows[i].bucket);
			assert_string_equal(cs.key, rows[i].key);
			if (rows[i].version)
				assert_string_equal(cs.version, rows[i].version);
			else
				assert_null(cs.version);
		}
		s3_copy_source_clear(&cs);
	}
}

/* SDK v3's presigned PUT carries X-Amz-Content-Sha256=UNSIGNED-PAYLOAD;
 * a hash the proxy would not check is refused. */
static void test_presigned_payload_param(void **state)
{
	struct s3req r;

	assert_int_equal(classify("PUT", "/b/k", "X-Amz-Content-Sha256=UNSIGNED-PAYLOAD&x-id=PutObject",
				  0, &r), S3_OBJECT_PUT);
	s3req_clear(&r);
	assert_int_equal(classify("PUT", "/b/k", "X-Amz-Content-Sha256=e3b0c44298fc1c149afbf4c8996fb924"
				  "27ae41e4649b934ca495991b7852b855", 0, &r), S3_REFUSED);
	assert_int_equal(r.status, 400);
	s3req_clear(&r);
}

/* A copy's model names its source; a malformed source refuses the copy. */
static void test_copy_in_model(void **state)
{
	struct front_hdrs h = { 0 };
	struct s3req r;

	assert_int_equal(front_hdrs_add(&h, "x-amz-copy-source", "/privbkt/keys.txt"), 0);
	assert_int_equal(s3req_parse(&r, "PUT", "/authbkt/narrow/k", NULL, &h), 0);
	assert_int_equal(r.cls, S3_OBJECT_COPY);
	assert_string_equal(r.copy.bucket, "privbkt");
	assert_string_equal(r.copy.key, "keys.txt");
	s3req_clear(&r);
	assert_int_equal(s3req_parse(&r, "PUT", "/authbkt/narrow/k", "partNumber=1&uploadId=u", &h),
			 0);
	assert_int_equal(r.cls, S3_MPU_PART);
	assert_string_equal(r.copy.key, "keys.txt");
	s3req_clear(&r);
	front_hdrs_clear(&h);
	assert_int_equal(front_hdrs_add(&h, "x-amz-copy-source", "/privbkt/k;x"), 0);
	assert_int_equal(s3req_parse(&r, "PUT", "/authbkt/narrow/k", NULL, &h), 0);
	assert_int_equal(r.cls, S3_REFUSED);
	assert_int_equal(r.status, 400);
	assert_null(r.copy.key);
	s3req_clear(&r);
	front_hdrs_clear(&h);
	/* a plain PUT has no source */
	assert_int_equal(s3req_parse(&r, "PUT", "/authbkt/narrow/k", NULL, NULL), 0);
	assert_null(r.copy.key);
	s3req_clear(&r);
}

static void test_table_is_unambiguous(void **state)
{
	size_t n;
	const struct s3_op *ops = s3req_ops(&n);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].cls == S3_READ && strcmp(ops[i].name, "SelectObjectContent") != 0)
			fail_msg("%s is a read in the write table", ops[i].name);
		for (size_t j = i + 1; j < n; j++) {
			const struct s3_op *a = &ops[i], *b = &ops[j];
			int same_sub = (!a->subresource && !b->subresource) ||
				       (a->subresource && b->subresource &&
					strcmp(a->subresource, b->subresource) == 0);
			int same_with = (!a->with && !b->with) ||
					(a->with && b->with && strcmp(a->with, b->with) == 0);

			if (strcmp(a->method, b->method) == 0 && a->object == b->object &&
			    a->copy_source == b->copy_source && same_sub && same_with)
				fail_msg("%s and %s match the same requests", a->name, b->name);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_s3_write_operation),
		cmocka_unit_test(test_reads),
		cmocka_unit_test(test_encodings),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_upload_and_version_ids),
		cmocka_unit_test(test_table_is_unambiguous),
		cmocka_unit_test(test_copy_source),
		cmocka_unit_test(test_copy_in_model),
		cmocka_unit_test(test_presigned_payload_param),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
