/* s3req.h — the S3 request model: one request parsed once, and the S3
 * operation it is.
 *
 * s3req_parse() splits the path into bucket and key and the query into
 * parameters, each decoded once with wire/pct.h, and looks the request up
 * in an allow-list of S3 operations keyed by (method, bucket or object,
 * sub-resources, x-amz-copy-source). Every operation has a class that says
 * how the proxy treats it (enum s3_class). Fail closed: a request that
 * could change state and is not on the list, or cannot be parsed, is
 * S3_REFUSED with the status, S3 code and a message naming what was seen;
 * it is never forwarded. Reads (GET, HEAD, OPTIONS) are S3_READ whatever
 * their parameters: S3 has no state-changing GET.
 *
 * Parameters that do not change the operation are on the list too, by
 * name: presigned-URL authentication (X-Amz-Algorithm, -Credential, -Date,
 * -Expires, -SignedHeaders, -Signature, -Security-Token; SigV2's
 * AWSAccessKeyId, Signature, Expires), "x-id" (AWS SDK v3) and, as
 * UNSIGNED-PAYLOAD only, X-Amz-Content-Sha256 (SDK v3's presigner). Any other
 * parameter on a write, a repeated parameter, or a bad escape refuses it.
 * Names compare case-sensitively, as S3 compares them.
 *
 * s3req_parse() is pure: no I/O, no clock, no global state but the
 * constant table. s3req_of() parses a proxy request once and keeps the
 * model on it, so authz and fencing decide on the same parse. Neither
 * knows locks, routes or permissions: fencing and authz decide with the
 * class. */
#ifndef FENCE_S3REQ_H
#define FENCE_S3REQ_H

#include <stdbool.h>
#include <stddef.h>

#include "wire/query.h"

struct front_hdrs;
struct proxy_req;

#define S3REQ_BUCKET_MAX 63    /* S3's bucket name limit */
#define S3REQ_KEY_MAX    1024  /* S3's key limit, in bytes */
#define S3REQ_CLIENT_MAX 128   /* an access key (AUTH_ACCESS_KEY_MAX) */

/* How the proxy treats an operation. */
enum s3_class {
	S3_READ = 0,        /* changes nothing: forwarded untouched */
	S3_OBJECT_PUT,      /* PutObject: fenced, stamped, object CAS */
	S3_OBJECT_COPY,     /* CopyObject: fenced, stamped, CAS on the destination */
	S3_OBJECT_DELETE,   /* DeleteObject: fenced, object CAS */
	S3_MPU_CREATE,      /* CreateMultipartUpload: fenced, stamped */
	S3_MPU_PART,        /* UploadPart, UploadPartCopy: the upload's epoch */
	S3_MPU_COMPLETE,    /* CompleteMultipartUpload: the upload's epoch, CAS */
	S3_MPU_ABORT,       /* AbortMultipartUpload: the upload's epoch */
	S3_OBJECT_ATTR,     /* an object's tags, ACL, retention, legal hold,
			     * restore, or one version's delete: fenced at
			     * lock level (no object CAS) */
	S3_DELETE_OBJECTS,  /* DeleteObjects: keys in the body, fenced key by key */
	S3_BUCKET_WRITE,    /* CreateBucket, DeleteBucket (empty only): "write"
			     * permission, not fenced */
	S3_BUCKET_CONFIG,   /* a bucket's configuration (lifecycle, policy,
			     * versioning, ACL, CORS, ...): "admin" permission,
			     * not fenced */
	S3_REFUSED,         /* not on the list or malformed: never forwarded */
};

/* One entry of the allow-list. */
struct s3_op {
	const char *name;        /* S3 API name, "PutObject" */
	const char *method;      /* "PUT" */
	bool object;             /* names a key (else a bucket) */
	const char *subresource; /* the query parameter that selects it, NULL none */
	const char *with;        /* a second parameter it needs ("uploadId" for
				  * UploadPart's "partNumber"), NULL none */
	bool version_ok;         /* may carry ?versionId */
	bool copy_source;        /* selected by an x-amz-copy-source header */
	enum s3_class cls;
};

/* The second object a copy reads (CopyObject, UploadPartCopy): the
 * x-amz-copy-source header, "[/]BUCKET/KEY[?versionId=V]" with KEY and V
 * percent-encoded, as S3 reads it. */
struct s3_copy_source {
	char bucket[S3REQ_BUCKET_MAX + 1]; /* as sent: a bucket name has no escapes */
	char *key;                         /* decoded, NUL-free; malloc'd */
	char *version;                     /* decoded versionId, or NULL; malloc'd */
};

/* Parses v into *cs (zeroed first; s3_copy_source_clear it whatever the
 * result). Refused, so that every reader (authz, fencing, the embedded
 * store, the upstream) names the same object: no bucket or key, a bucket
 * that is not a plain S3 name, a key over S3REQ_KEY_MAX bytes or with a bad
 * escape or %00, a raw '#' or ';' (S3 servers and URL parsers disagree on
 * them; clients encode them), a query other than exactly versionId=V.
 * Returns 0, 1 with a static reason in *why when refused, -1 on ENOMEM. */
int s3_copy_source_parse(const char *v, struct s3_copy_source *cs, const char **why);
void s3_copy_source_clear(struct s3_copy_source *cs);

struct s3req {
	const char *method;                /* the request's, not copied */
	char bucket[S3REQ_BUCKET_MAX + 1]; /* decoded; "" for the service (/) */
	char *key;                         /* decoded, NUL-free; NULL: bucket level */
	struct query query;                /* every parameter, decoded */
	const struct s3_op *op;            /* NULL for a read not in the table,
					    * or when refused */
	enum s3_class cls;
	const char *upload_id;             /* ?uploadId's value, or NULL */
	const char *version_id;            /* ?versionId's value, or NULL */
	struct s3_copy_source copy;        /* a copy's source (op->copy_source);
					    * copy.key NULL otherwise */
	/* when cls == S3_REFUSED: */
	int status;                        /* 400 or 501 */
	const char *code;                  /* S3 error code (static) */
	char message[224];
	/* Who authz (authz.c) let through, for fencing, which knows no policy
	 * (the lock-file guard); authz fills them once it has authenticated
	 * and authorized the request, s3req_parse() leaves them empty: */
	char client[S3REQ_CLIENT_MAX + 1]; /* the access key that signed it;
					    * "" anonymous or authentication off */
	bool may_break;                    /* may end another holder's live lease
					    * of the request's lock ("break", or
					    * authentication off); false until
					    * authz says so */
};

/* Parses one request: method, the path as sent ("/bucket/key",
 * percent-encoded), the query as sent (without '?', may be NULL) and the
 * headers (for x-amz-copy-source; may be NULL). Fills *r, which the caller
 * clears with s3req_clear() whatever the result. Returns 0, or -1 only on
 * ENOMEM (r->cls is then S3_REFUSED with 500 InternalError). A malformed
 * or unknown request is a 0 return with r->cls == S3_REFUSED. */
int s3req_parse(struct s3req *r, const char *method, const char *path, const char *query,
		const struct front_hdrs *hdrs);

/* The model of req, parsed on the first call (from the head as received)
 * and owned by req (freed with it). NULL only on ENOMEM. */
const struct s3req *s3req_of(struct proxy_req *req);

/* Frees what s3req_parse() allocated and zeroes *r. Accepts NULL. */
void s3req_clear(struct s3req *r);

/* true for every class but S3_READ: the request may change state. */
bool s3_class_writes(enum s3_class c);

/* "read", "object_put", ... Never NULL. */
const char *s3_class_name(enum s3_class c);

/* The allow-list, for tests and documentation: *n entries. */
const struct s3_op *s3req_ops(size_t *n);

#endif
