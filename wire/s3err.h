/* s3err.h — error bodies: S3-style XML (S3 mode) and JSON (HTTP mode and the
 * lock API), so SDKs and scripts surface the error code.
 *
 *   <?xml version="1.0" encoding="UTF-8"?>
 *   <Error><Code>C</Code><Message>M</Message><Resource>R</Resource>
 *   <RequestId>I</RequestId><CurrentEpoch>E</CurrentEpoch></Error>
 *   (on one line after the declaration; CurrentEpoch only when has_epoch)
 *
 *   {"error":"C","message":"M","currentEpoch":E,"requestId":"I"}
 *   (currentEpoch only when has_epoch, requestId only when set)
 *
 * Pure formatting: no I/O, no global state. Text is XML-escaped (& < > " ')
 * or JSON-escaped (cJSON); bytes that are not valid UTF-8, and control
 * characters XML 1.0 cannot carry, become U+FFFD, so a hostile key in
 * Resource cannot break the document. */
#ifndef FENCE_S3ERR_H
#define FENCE_S3ERR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct s3err {
	const char *code;        /* "FencingTokenStale"; NULL → "InternalError" */
	const char *message;     /* human text; NULL → "" */
	const char *resource;    /* "/bucket/key"; NULL → element omitted */
	const char *request_id;  /* NULL → element omitted */
	bool has_epoch;          /* add CurrentEpoch / currentEpoch */
	uint64_t current_epoch;
};

/* Writes the XML body into buf (always NUL-terminated when buflen > 0,
 * truncated if too small). Returns the full length the body needs, not
 * counting the NUL, like snprintf: the body is complete iff result < buflen.
 * buf may be NULL when buflen is 0 (to measure). */
size_t s3err_xml(const struct s3err *e, char *buf, size_t buflen);

/* text as XML character data (escaped, and made valid as above) into buf,
 * snprintf-style like s3err_xml: returns the length needed, not counting
 * the NUL. For other S3 XML documents (DeleteResult) built by callers. */
size_t s3err_xml_text(const char *text, char *buf, size_t buflen);

/* The XML body in a malloc'd NUL-terminated string; the caller frees it with
 * free(). *len (may be NULL) receives its length. NULL on ENOMEM. */
char *s3err_xml_dup(const struct s3err *e, size_t *len);

/* The JSON body, one line without a trailing newline, in a malloc'd string;
 * the caller frees it with free(). *len (may be NULL) receives its length.
 * NULL on ENOMEM. */
char *s3err_json_dup(const struct s3err *e, size_t *len);

/* Content-Type values for the two bodies. */
#define S3ERR_XML_CONTENT_TYPE  "application/xml"
#define S3ERR_JSON_CONTENT_TYPE "application/json"

#endif
