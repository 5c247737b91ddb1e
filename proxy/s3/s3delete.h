/* s3delete.h — DeleteObjects (POST /{bucket}?delete) on the wire: the
 * request body parsed with expat, and the DeleteResult document.
 *
 * The request is
 *   <Delete><Quiet>true</Quiet><Object><Key>K</Key><VersionId>V</VersionId>
 *   </Object>...</Delete>
 * (any namespace prefix; Quiet and VersionId optional). Parsing is strict
 * and bounded, fail closed: at most S3DELETE_KEYS_MAX objects (S3's limit),
 * each with exactly one non-empty Key of at most S3DELETE_KEY_MAX bytes;
 * an unknown element, text outside the leaves, a DOCTYPE (no entities, no
 * DTD tricks) or a second root is MalformedXML, as S3 answers.
 *
 * Pure: no I/O, no clock. Deciding and deleting are the caller's (the
 * fencing handler's fencing_delete.c); each key's outcome is recorded on
 * its struct s3delete_key and s3delete_result_xml() writes the answer:
 * Deleted for keys without an error (unless Quiet), Error otherwise, in
 * request order. */
#ifndef FENCE_S3DELETE_H
#define FENCE_S3DELETE_H

#include <stdbool.h>
#include <stddef.h>

#define S3DELETE_KEYS_MAX 1000
#define S3DELETE_KEY_MAX  1024
#define S3DELETE_BODY_MAX (2u * 1024 * 1024) /* 1000 longest keys fit */

struct s3delete_key {
	char *key;          /* decoded from XML, NUL-free */
	char *version_id;   /* NULL: none */
	const char *code;   /* NULL: deleted; else the S3 error code (static) */
	char message[192];
};

struct s3delete {
	struct s3delete_key *keys;
	size_t n;
	bool quiet;
};

/* Parses a DeleteObjects body into d (zeroed by the caller). Returns 0, or
 * -1 with the reason in err (the S3 code is MalformedXML, or InternalError
 * when *nomem is set) and d cleared. */
int s3delete_parse(const char *body, size_t len, struct s3delete *d, bool *nomem,
		   char *err, size_t errlen);

/* Records an error for one key (code static, message formatted). */
void s3delete_fail(struct s3delete_key *k, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The DeleteResult document, malloc'd and NUL-terminated; *len its length.
 * NULL on ENOMEM. */
char *s3delete_result_xml(const struct s3delete *d, size_t *len);

/* Frees the keys and zeroes d. Accepts a zeroed d. */
void s3delete_clear(struct s3delete *d);

#endif
