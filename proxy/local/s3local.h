/* s3local.h — the embedded S3 server: the S3 REST API (path-style
 * /{bucket}/{key}) over a local data directory, one sub-directory per
 * bucket, each bucket a local-directory store (store_fs, "file://DIR/BUCKET").
 * It is what `fencegate` without --upstream serves, as the last handler of
 * the chain (after health, the lock API and fencing).
 *
 * Operations:
 *   GET /                          ListBuckets
 *   PUT|HEAD|DELETE /b             CreateBucket, HeadBucket, DeleteBucket
 *                                  (only when empty: 409 BucketNotEmpty)
 *   GET /b?list-type=2             ListObjectsV2 (prefix, delimiter,
 *                                  start-after, continuation-token, max-keys,
 *                                  encoding-type=url); GET /b: ListObjects V1
 *                                  (marker); GET /b?location
 *   PUT /b/k                       PutObject: Content-Type, x-amz-meta-*,
 *                                  If-None-Match: * (create only), If-Match
 *                                  (replace only that version), Content-MD5,
 *                                  aws-chunked bodies (signatures not checked)
 *   GET|HEAD /b/k                  GetObject/HeadObject: Range (one range),
 *                                  If-Match / If-Unmodified-Since (412),
 *                                  If-None-Match / If-Modified-Since (304),
 *                                  response-content-type & co.
 *   DELETE /b/k                    DeleteObject (If-Match honoured), 204
 *   PUT /b/k + x-amz-copy-source   CopyObject (x-amz-metadata-directive COPY
 *                                  or REPLACE, x-amz-copy-source-if-(none-)match)
 *   POST /b/k?uploads, PUT /b/k?partNumber&uploadId (+ x-amz-copy-source and
 *   -range: UploadPartCopy), POST /b/k?uploadId, DELETE /b/k?uploadId,
 *   GET /b/k?uploadId, GET /b?uploads
 *                                  multipart uploads (s3local_mpu.c): parts
 *                                  on disk, S3's part rules and
 *                                  "md5-of-md5s-N" ETag
 *   GET /b?versions                ListObjectVersions (unversioned: VersionId
 *                                  "null"); GET /b?acl, GET /b/k?acl: the one
 *                                  owner with FULL_CONTROL
 * Everything else S3 has (tagging, ACL changes, versioning, multi-object
 * delete without the fencing handler, bucket configuration) answers 501
 * NotImplemented with an S3 XML error that says so: put fencegate
 * --upstream in front of a real S3 for those. Requests are not
 * authenticated here (the embedded default listens on loopback);
 * /_fence/... is never handled (PROXY_PASS).
 *
 * Limits: PUT and UploadPart bodies go to disk as they arrive
 * (s3local_spool.c: 1 MiB at a time, reading paused while a chunk is
 * written), up to S3's 5 GiB (413 EntityTooLarge beyond), aws-chunked
 * ones (unsigned or signed chunks; signatures unchecked, nobody
 * authenticated them) decoded on the way; CopyObject and UploadPartCopy
 * read their source from its file as they write (up to S3's 5 GiB); other
 * aws-chunked framings and CompleteMultipartUpload's XML are held in
 * memory, up to max_object_bytes (default 64 MiB). GET sends the object
 * from its file (sendfile), whatever its size. Kept with an object: Content-Type,
 * Cache-Control, Content-Disposition, Content-Encoding (without
 * aws-chunked), Content-Language, Expires and x-amz-meta-* (at most 16
 * pairs, 2 KiB). ETags are the MD5 of the content, as S3 gives for
 * single-part uploads.
 *
 * Threading: every disk access (store calls fsync) runs on the jobs pool;
 * each worker thread keeps its own struct store per bucket (a store is not
 * thread-safe). The event loop only parses, copies the request and replies.
 *
 * FENCING CONTRACT (with the fencing handler, which runs before this one):
 *   - For a fenced write it allows, the fencing handler sets the request
 *     headers `x-amz-meta-fencing-epoch: T` and `x-amz-meta-fencing-lock:
 *     NAME` on a PUT, and `X-Fencing-Epoch-Check: T` on a DELETE, then
 *     PASSes. (A PUT's x-amz-meta-fencing-* headers are also stored as the
 *     object's metadata, so the object remembers the epoch it was written
 *     under; GET and HEAD never show fencing-* metadata, and show the
 *     epoch as X-Fencing-Object-Epoch.)
 *   - When a PUT carries x-amz-meta-fencing-epoch: T (or a DELETE carries
 *     X-Fencing-Epoch-Check: T; T is 1-19 decimal digits, else 400
 *     InvalidArgument), s3local does the object-level compare-and-swap,
 *     atomically with respect to every other writer of the directory
 *     (other threads, other processes):
 *       1. HEAD the object. If its stored fencing-epoch metadata E > T:
 *          409 FencingTokenStale, header X-Fencing-Epoch: max(E, the
 *          X-Fencing-Epoch-Current the fencing handler sent), nothing
 *          written.
 *       2. The client's own conditions, against that version: If-Match X
 *          with no object -> 404 NoSuchKey, with another ETag -> 412;
 *          If-None-Match * with an object -> 412.
 *       3. Write (or delete) conditionally on exactly that version: If-Match
 *          its ETag, or If-None-Match "*" when there was none.
 *       4. A 412 (or a vanished object) from the store means another writer
 *          raced in between: go back to 1, at most 5 times in all, then 503
 *          SlowDown.
 *     Step 3 conditions on the ETag and on the stored fencing-epoch of
 *     that version (store_put_opts.if_meta): the same bytes rewritten under
 *     a newer epoch keep their ETag, never their epoch. An object whose
 *     fencing-epoch metadata is missing or not a number counts as epoch 0.
 *     Without these headers, writes are plain S3 writes with the client's
 *     conditions only.
 *   - CopyObject is a PUT (the fencing handler stamps it). Multipart: the
 *     fencing handler stamps CreateMultipartUpload, whose stamp the upload
 *     keeps; CompleteMultipartUpload carries X-Fencing-Epoch-Current: C.
 *     An upload created under epoch E < C is refused (409
 *     FencingTokenStale, X-Fencing-Epoch: C), and otherwise completes with
 *     the compare-and-swap above under epoch E, the object stamped with
 *     the create's metadata. Parts are checked by the fencing handler only
 *     (a part never shows until completion).
 *
 * Lifetime: requests are consumed (proxy_req_consume) and answered from the
 * jobs' done callbacks on the loop. At shutdown call jobs_free() before
 * proxy_free() (pending done callbacks still reply to live requests), then
 * s3local_free(). */
#ifndef FENCE_S3LOCAL_H
#define FENCE_S3LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "http/jobs.h"
#include "http/proxy.h"

#define S3LOCAL_DEFAULT_MAX_OBJECT (64u * 1024 * 1024)

/* The header a fenced DELETE carries (set by the fencing handler). */
#define S3LOCAL_EPOCH_CHECK_HEADER "X-Fencing-Epoch-Check"
/* The metadata header a fenced PUT carries, and the metadata name kept. */
#define S3LOCAL_EPOCH_META_HEADER  "x-amz-meta-fencing-epoch"
#define S3LOCAL_EPOCH_META         "fencing-epoch"
/* The lock's current epoch, set by the fencing handler beside the two
 * above: a 409's X-Fencing-Epoch is the larger of it and the object's. */
#define S3LOCAL_EPOCH_CURRENT_HEADER "X-Fencing-Epoch-Current"
/* GET/HEAD show the stored fencing-epoch as this header; metadata named
 * fencing-* is the proxy's and never shown as x-amz-meta-*. */
#define S3LOCAL_OBJECT_EPOCH_HEADER  "X-Fencing-Object-Epoch"
#define S3LOCAL_OWNED_META_PREFIX    "fencing-"
/* Attempts of the compare-and-swap before 503 SlowDown. */
#define S3LOCAL_CAS_ATTEMPTS       5

struct s3local;

/* Serves data_dir (created if missing, one level) with store jobs on jobs
 * (the caller keeps both alive until s3local_free). max_object_bytes 0 means
 * S3LOCAL_DEFAULT_MAX_OBJECT. Returns NULL with a message in err. */
struct s3local *s3local_new(struct event_base *base, struct jobs *jobs,
			    const char *data_dir, size_t max_object_bytes,
			    char *err, size_t errlen);

/* Another instance over sibling's data directory for another event loop
 * (an event-loop worker), with its own jobs queue and per-thread stores,
 * sharing sibling's bucket lock (CreateBucket and DeleteBucket exclude
 * every instance's object jobs, as in one). Either may be freed first.
 * Returns NULL with a message in err. */
struct s3local *s3local_new_sibling(const struct s3local *sibling, struct event_base *base,
				    struct jobs *jobs, char *err, size_t errlen);

/* The proxy_handler.on_request hook; arg is the struct s3local. Answers
 * every request except those under /_fence/ (PROXY_PASS). */
enum proxy_action s3local_handler(struct proxy_req *req, void *arg);

/* What CreateMultipartUpload made (created = 1; epoch and lock are the
 * create's fencing stamp, 0 and NULL unfenced) and CompleteMultipartUpload
 * or AbortMultipartUpload ended (created = 0), on the loop, before the
 * answer goes out, so no part of it can be decided earlier: what the
 * fencing handler learns from an upstream's answer in S3 mode (its
 * multipart table), for parts sent without a token. */
typedef void (*s3local_upload_fn)(void *arg, const char *bucket, const char *upload_id,
				  int created, uint64_t epoch, const char *lock);

/* Installs the upload hook (NULL: none). */
void s3local_set_upload_hook(struct s3local *s, s3local_upload_fn fn, void *arg);

/* Frees the per-worker stores. Call after jobs_free() of its pool (no job
 * may be running). Accepts NULL. */
void s3local_free(struct s3local *s);

#endif
