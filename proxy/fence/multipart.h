/* multipart.h — what the fencing handler remembers about multipart uploads
 * it saw created: upload id → (bucket, key, lock, epoch), so UploadPart and
 * CompleteMultipartUpload from clients that sent the token only as metadata
 * at create are checked against the epoch the upload was created under
 * (DESIGN.md "Multipart uploads").
 *
 * A bounded table (oldest entries are forgotten first: a replica that does
 * not know an upload then requires the token header) and the parser of the
 * CreateMultipartUpload answer (<InitiateMultipartUploadResult><UploadId>),
 * with expat. No I/O, no clock. The table is thread-safe (one mutex): the
 * event-loop workers of a process share one, so that a part sent to
 * another worker than its create is still checked by the create's epoch. */
#ifndef FENCE_MULTIPART_H
#define FENCE_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#define MULTIPART_ID_MAX   1024   /* upload id bytes, including the NUL */
#define MULTIPART_BODY_MAX 8192   /* a CreateMultipartUpload answer is small */

struct multipart_table;

struct multipart_upload {
	char bucket[64];
	char lock[129];
	uint64_t epoch;
};

/* A table of at most capacity uploads (>= 1). NULL on ENOMEM. */
struct multipart_table *multipart_new(size_t capacity);
void multipart_free(struct multipart_table *t); /* accepts NULL */

/* Records upload_id (replacing an older record of it); forgets the oldest
 * upload when full. Returns 0, or -1 (id too long, ENOMEM). */
int multipart_put(struct multipart_table *t, const char *upload_id,
		  const struct multipart_upload *u);

/* 1 and *out filled if upload_id is known, else 0. */
int multipart_get(const struct multipart_table *t, const char *upload_id,
		  struct multipart_upload *out);

/* Forgets upload_id (completed or aborted). */
void multipart_remove(struct multipart_table *t, const char *upload_id);

size_t multipart_count(const struct multipart_table *t);

/* Extracts <UploadId> from a CreateMultipartUpload answer of len bytes into
 * out (NUL-terminated). Returns 0, or -1 if the XML is malformed, has a
 * DOCTYPE, has no UploadId or it does not fit. */
int multipart_parse_upload_id(const char *xml, size_t len, char *out, size_t outlen);

/* The value of query parameter name ("uploadId") in a raw query string,
 * percent-decoded into out. Returns 1 found, 0 absent, -1 too long. A
 * parameter without '=' ("uploads") is found with an empty value. */
int multipart_query_param(const char *query, const char *name, char *out, size_t outlen);

#endif
