/* s3xml.h — the XML answers of S3 that the store needs, parsed with expat.
 *
 * Three documents: a ListObjectsV2 page (<ListBucketResult>), an error
 * body (<Error><Code>…</Code><Message>…</Message></Error>), and the
 * <UploadId> of a CreateMultipartUpload answer (for the self-test). A list page can
 * be fed in pieces as it arrives (s3xml_list_*) or parsed from one buffer
 * (s3xml_parse_list). Nothing here does I/O or reads a clock.
 *
 * Input is untrusted: malformed, truncated or oversized XML is an error
 * return, never a crash. DOCTYPE declarations (and so every entity trick)
 * are refused: S3 never sends one. Namespaces are honoured by local name,
 * so xmlns="http://s3.amazonaws.com/doc/2006-03-01/" or a prefix do not
 * matter. Element order is not assumed; unknown elements are ignored. */
#ifndef FENCE_S3XML_H
#define FENCE_S3XML_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

enum s3xml_code {
	S3XML_OK = 0,
	S3XML_ERR_SYNTAX,  /* not well-formed XML, truncated, or has a DOCTYPE */
	S3XML_ERR_SHAPE,   /* well-formed but not the expected document: wrong
			    * root, a <Contents> without <Key>, a bad number,
			    * boolean or date */
	S3XML_ERR_LIMIT,   /* a value, the nesting or the entry count exceeds
			    * the limits below */
	S3XML_ERR_NOMEM,
};

/* Limits on what one document may hold. */
#define S3XML_TEXT_MAX     8192   /* bytes in one element's text (S3 keys: 1024) */
#define S3XML_DEPTH_MAX    32     /* element nesting */
#define S3XML_ENTRIES_MAX  10000  /* <Contents> per page (S3 sends at most 1000) */

/* A short lowercase description of code. Never NULL. */
const char *s3xml_strerror(enum s3xml_code code);

/* "2009-10-12T17:50:30.000Z" (fraction optional, "Z" or "+hh:mm"/"-hh:mm")
 * to Unix seconds (fraction dropped). Returns 0 and sets *out, or -1 if s is
 * not such a timestamp. */
int s3xml_parse_iso8601(const char *s, int64_t *out);

/* --- ListObjectsV2 ------------------------------------------------------ */

/* An incremental parser for one <ListBucketResult>. Opaque; one document per
 * parser. */
struct s3xml_list;

/* A new parser, or NULL (ENOMEM). Free with s3xml_list_free(). */
struct s3xml_list *s3xml_list_new(void);

/* Feeds the next len bytes of the document; is_final = 1 with the last
 * piece (len may be 0). Returns S3XML_OK or the first error; after an error
 * every later call returns that same error. When err is not NULL it receives
 * a one-line explanation (with line and column for syntax errors). */
enum s3xml_code s3xml_list_feed(struct s3xml_list *p, const char *data, size_t len,
				int is_final, char *err, size_t errlen);

/* After a final s3xml_list_feed() returned S3XML_OK: moves the parsed page
 * into *page (which is overwritten, not freed: pass a zeroed or freed page).
 * The caller owns it and frees it with store_list_page_free(). Entries are in
 * document order; etag keeps its quotes; truncated is 1 only for
 * <IsTruncated>true</IsTruncated>; next_token is NULL when the document has
 * no <NextContinuationToken> (a truncated page without one is still
 * returned: whether that is acceptable is the caller's decision). Returns
 * S3XML_OK, or the parser's error (and leaves *page zeroed) when the
 * document was not complete and valid. A second take gives an empty page. */
enum s3xml_code s3xml_list_take(struct s3xml_list *p, struct store_list_page *page);

/* The <KeyCount> of the document, or -1 when absent. */
long s3xml_list_key_count(const struct s3xml_list *p);

/* Frees the parser and whatever it holds that was not taken. Accepts NULL. */
void s3xml_list_free(struct s3xml_list *p);

/* One-shot: new + feed(xml, len, final) + take + free. *page is overwritten
 * (zeroed on failure); the caller owns it on success. */
enum s3xml_code s3xml_parse_list(const char *xml, size_t len,
				 struct store_list_page *page,
				 char *err, size_t errlen);

/* --- Error bodies ------------------------------------------------------- */

/* Parses an S3 error body. On S3XML_OK, code and message hold <Code> and
 * <Message> (each "" when absent), cut to fit the buffers (codelen, msglen
 * >= 1) with control characters replaced by '?', so they are safe to log.
 * The root element must be <Error>; on any failure both buffers are set to
 * "". Nothing is allocated that outlives the call. */
enum s3xml_code s3xml_parse_error(const char *xml, size_t len,
				  char *code, size_t codelen,
				  char *message, size_t msglen);

/* The <UploadId> of an <InitiateMultipartUploadResult> (a
 * CreateMultipartUpload answer) into id (idlen bytes). S3XML_OK, or
 * S3XML_ERR_SHAPE when there is none (or it does not fit). */
enum s3xml_code s3xml_parse_upload_id(const char *xml, size_t len, char *id, size_t idlen);

#endif
