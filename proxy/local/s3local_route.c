/* s3local_route.c — which operation a request to the embedded S3 server
 * is: the query string split and decoded once, the subresources this
 * server lacks (501), and the operation picked from method, bucket, key
 * and subresources. It reads only the request line; the handler
 * (s3local.c) takes headers and body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/proxy.h"
#include "wire/pct.h"
#include "s3local_int.h"

/* Percent-decodes s[0..n) into a new NUL-terminated string; plus_space
 * turns '+' into ' ' (query strings). Returns NULL on a bad escape or an
 * encoded NUL (errno EINVAL) or ENOMEM. */
char *s3l_decode(const char *s, size_t n, int plus_space)
{
	return pct_decode_dup(s, n, (plus_space ? PCT_PLUS_SPACE : 0) | PCT_NO_NUL, NULL);
}

/* Subresources (query names) that select an operation this server lacks. */
static const char *unsupported_subresource(const char *name)
{
	static const struct { const char *name, *what; } table[] = {
		{ "tagging", "tagging" },
		{ "versioning", "versioning" },
		{ "versionId", "versioning (versionId)" },
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

void s3l_query_free(struct s3l_query *q)
{
	size_t i;

	for (i = 0; i < q->n; i++) {
		free(q->name[i]);
		free(q->value[i]);
	}
	q->n = 0;
}

/* Returns 0, or -1 (bad escape, too many parameters, ENOMEM). */
int s3l_query_parse(const char *s, struct s3l_query *q)
{
	memset(q, 0, sizeof(*q));
	while (s && *s) {
		const char *amp = strchr(s, '&');
		size_t n = amp ? (size_t)(amp - s) : strlen(s);
		const char *eq = memchr(s, '=', n);

		if (n) {
			if (q->n == S3L_QUERY_MAX)
				goto fail;
			q->name[q->n] = s3l_decode(s, eq ? (size_t)(eq - s) : n, 1);
			q->value[q->n] = NULL;
			if (!q->name[q->n])
				goto fail;
			q->n++;
			if (eq) {
				q->value[q->n - 1] = s3l_decode(eq + 1, n - (size_t)(eq + 1 - s), 1);
				if (!q->value[q->n - 1])
					goto fail;
			}
		}
		s = amp ? amp + 1 : NULL;
	}
	return 0;
fail:
	s3l_query_free(q);
	return -1;
}

/* The value of name: NULL when absent, "" when given without '='. */
const char *s3l_query_get(const struct s3l_query *q, const char *name, int *present)
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

/* Decides the operation from method, bucket, key and subresources. Returns
 * the op, or -1 after replying. */
int s3l_pick_op(struct proxy_req *req, const char *method, int has_bucket, int has_key,
		   const struct s3l_query *q)
{
	size_t i;
	int present = 0, acl = 0, uploads = 0, upload_id = 0, part = 0;

	for (i = 0; i < q->n; i++) {
		const char *what = unsupported_subresource(q->name[i]);

		if (what) {
			s3l_not_implemented(req, what);
			return -1;
		}
	}
	s3l_query_get(q, "acl", &acl);
	s3l_query_get(q, "uploads", &uploads);
	s3l_query_get(q, "uploadId", &upload_id);
	s3l_query_get(q, "partNumber", &part);
	if (acl && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		s3l_not_implemented(req, "ACL changes (the one owner has FULL_CONTROL)");
		return -1;
	}
	if (strcmp(method, "POST") == 0) {
		if (has_key && uploads)
			return OP_MPU_CREATE;
		if (has_key && upload_id)
			return OP_MPU_COMPLETE;
		s3l_not_implemented(req, "POST requests other than multipart uploads (DeleteObjects "
				    "without fencing, form uploads)");
		return -1;
	}
	if (!has_bucket) {
		if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
			return OP_LIST_BUCKETS;
		s3l_bad_request(req, 405, "MethodNotAllowed", "the method is not allowed on the service");
		return -1;
	}
	if (!has_key) {
		if (strcmp(method, "GET") == 0) {
			const char *lt;

			if (acl)
				return OP_GET_BUCKET_ACL;
			if (uploads)
				return OP_MPU_LIST_UPLOADS;
			s3l_query_get(q, "versions", &present);
			if (present)
				return OP_LIST_VERSIONS;
			s3l_query_get(q, "location", &present);
			if (present)
				return OP_LOCATION;
			lt = s3l_query_get(q, "list-type", NULL);
			if (lt && strcmp(lt, "2") != 0) {
				s3l_bad_request(req, 400, "InvalidArgument", "list-type must be 2");
				return -1;
			}
			return lt ? OP_LIST_V2 : OP_LIST_V1;
		}
		s3l_query_get(q, "versions", &present);
		if (present || uploads) {
			s3l_not_implemented(req, "this bucket subresource");
			return -1;
		}
		if (strcmp(method, "PUT") == 0)
			return OP_CREATE_BUCKET;
		if (strcmp(method, "HEAD") == 0)
			return OP_HEAD_BUCKET;
		if (strcmp(method, "DELETE") == 0)
			return OP_DELETE_BUCKET;
	} else {
		if (part && !upload_id) {
			s3l_bad_request(req, 400, "InvalidArgument", "partNumber needs an uploadId");
			return -1;
		}
		if (strcmp(method, "PUT") == 0) {
			if (upload_id && !part) {
				s3l_bad_request(req, 400, "InvalidArgument", "uploadId needs a partNumber");
				return -1;
			}
			return part ? OP_MPU_PART : OP_PUT;
		}
		if (strcmp(method, "GET") == 0)
			return acl ? OP_GET_ACL : upload_id ? OP_MPU_LIST_PARTS : OP_GET;
		if (strcmp(method, "HEAD") == 0)
			return OP_HEAD;
		if (strcmp(method, "DELETE") == 0)
			return upload_id ? OP_MPU_ABORT : OP_DELETE;
	}
	s3l_bad_request(req, 405, "MethodNotAllowed", "the method is not allowed on this resource");
	return -1;
}

