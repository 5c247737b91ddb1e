/* s3xml.c — parses S3's ListObjectsV2 pages and error bodies with expat.
 *
 * One small state machine serves both documents: it tracks the element
 * depth, collects the text of the few leaf elements it knows (bounded) and
 * checks each value when its element closes. It does not build a tree, does
 * not know CommonPrefixes or list v1 markers, and never accepts a DTD. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <expat.h>

#include "s3xml.h"

/* expat reports "namespace-uri<SEP>local-name"; a space cannot occur in
 * either, so the local name is whatever follows the last one. */
#define NS_SEP ' '

/* expat takes int lengths: larger inputs are fed in pieces of this size. */
#define FEED_PIECE (1 << 20)

enum doc_kind { DOC_LIST, DOC_ERROR, DOC_INITIATE };

/* The leaf element whose text is being collected. */
enum field {
	F_NONE = 0,
	F_KEY, F_ETAG, F_SIZE, F_LASTMOD,       /* in <Contents> */
	F_TRUNCATED, F_TOKEN, F_KEYCOUNT,       /* in <ListBucketResult> */
	F_CODE, F_MESSAGE,                      /* in <Error> */
	F_UPLOAD_ID,                            /* in <InitiateMultipartUploadResult> */
};

/* Bits for the fields one <Contents> has already seen (duplicates refused). */
#define SEEN(f) (1u << (f))

struct s3xml_list {
	XML_Parser xp;
	enum doc_kind kind;
	enum s3xml_code code;      /* sticky: the first error */
	char why[160];             /* explanation of a SHAPE/LIMIT error */
	int depth;                 /* of the innermost open element, root = 1 */
	int root_closed;
	int finished;              /* a final feed returned OK */
	int in_contents;
	unsigned seen;             /* SEEN() bits of the current <Contents> */
	enum field field;
	char text[S3XML_TEXT_MAX + 1];
	size_t text_len;

	/* list document */
	struct store_list_entry cur;
	struct store_list_page page;
	size_t cap;
	long key_count;
	int seen_truncated, seen_token, seen_key_count;

	/* error document */
	char err_code[STORE_ERRCODE_MAX];
	char err_message[STORE_ERRMSG_MAX];

	/* InitiateMultipartUploadResult */
	char upload_id[STORE_ERRMSG_MAX];
};

const char *s3xml_strerror(enum s3xml_code code)
{
	switch (code) {
	case S3XML_OK: return "ok";
	case S3XML_ERR_SYNTAX: return "malformed xml";
	case S3XML_ERR_SHAPE: return "unexpected xml document";
	case S3XML_ERR_LIMIT: return "xml document exceeds limits";
	case S3XML_ERR_NOMEM: return "out of memory";
	}
	return "unknown xml error";
}

int s3xml_parse_iso8601(const char *s, int64_t *out)
{
	struct tm tm;
	const char *p;
	time_t t;
	long offset = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -1;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'Z') {
		p++;
	} else if ((*p == '+' || *p == '-') &&
		   p[1] >= '0' && p[1] <= '2' && p[2] >= '0' && p[2] <= '9' &&
		   p[3] == ':' && p[4] >= '0' && p[4] <= '5' && p[5] >= '0' && p[5] <= '9') {
		offset = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L +
			 ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
		if (*p == '-')
			offset = -offset;
		p += 6;
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*out = (int64_t)t - offset;
	return 0;
}

/* Records the first error and stops expat. */
static void fail(struct s3xml_list *p, enum s3xml_code code, const char *why)
{
	if (p->code != S3XML_OK)
		return;
	p->code = code;
	snprintf(p->why, sizeof(p->why), "%s", why);
	XML_StopParser(p->xp, XML_FALSE);
}

static const char *local_name(const XML_Char *name)
{
	const char *sep = strrchr(name, NS_SEP);

	return sep ? sep + 1 : name;
}

/* The leaf field an element at the current depth names, or F_NONE. */
static enum field field_for(const struct s3xml_list *p, const char *name)
{
	if (p->kind == DOC_INITIATE)
		return p->depth == 2 && strcmp(name, "UploadId") == 0 ? F_UPLOAD_ID : F_NONE;
	if (p->kind == DOC_ERROR) {
		if (p->depth != 2)
			return F_NONE;
		if (strcmp(name, "Code") == 0)
			return F_CODE;
		if (strcmp(name, "Message") == 0)
			return F_MESSAGE;
		return F_NONE;
	}
	if (p->depth == 2) {
		if (strcmp(name, "IsTruncated") == 0)
			return F_TRUNCATED;
		if (strcmp(name, "NextContinuationToken") == 0)
			return F_TOKEN;
		if (strcmp(name, "KeyCount") == 0)
			return F_KEYCOUNT;
		return F_NONE;
	}
	if (p->depth == 3 && p->in_contents) {
		if (strcmp(name, "Key") == 0)
			return F_KEY;
		if (strcmp(name, "ETag") == 0)
			return F_ETAG;
		if (strcmp(name, "Size") == 0)
			return F_SIZE;
		if (strcmp(name, "LastModified") == 0)
			return F_LASTMOD;
	}
	return F_NONE;
}

static void XMLCALL on_start(void *ud, const XML_Char *qname, const XML_Char **attrs)
{
	struct s3xml_list *p = ud;
	const char *name = local_name(qname);

	(void)attrs;
	if (p->code)
		return;
	if (p->field != F_NONE) {
		fail(p, S3XML_ERR_SHAPE, "element inside a value element");
		return;
	}
	if (++p->depth > S3XML_DEPTH_MAX) {
		fail(p, S3XML_ERR_LIMIT, "elements nested too deeply");
		return;
	}
	if (p->depth == 1) {
		const char *want = p->kind == DOC_LIST ? "ListBucketResult"
				   : p->kind == DOC_INITIATE ? "InitiateMultipartUploadResult"
				   : "Error";

		if (strcmp(name, want) != 0) {
			char why[sizeof(p->why)];

			snprintf(why, sizeof(why), "root element is <%.40s>, expected <%s>",
				 name, want);
			fail(p, S3XML_ERR_SHAPE, why);
		}
		return;
	}
	if (p->kind == DOC_LIST && p->depth == 2 && strcmp(name, "Contents") == 0) {
		p->in_contents = 1;
		p->seen = 0;
		memset(&p->cur, 0, sizeof(p->cur));
		return;
	}
	p->field = field_for(p, name);
	p->text_len = 0;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct s3xml_list *p = ud;

	if (p->code || p->field == F_NONE || len <= 0)
		return;
	if ((size_t)len > S3XML_TEXT_MAX - p->text_len) {
		fail(p, S3XML_ERR_LIMIT, "element text too long");
		return;
	}
	memcpy(p->text + p->text_len, s, (size_t)len);
	p->text_len += (size_t)len;
}

/* The collected text without surrounding XML white space, NUL-terminated in
 * place. */
static char *trimmed_text(struct s3xml_list *p)
{
	char *s = p->text;
	size_t n = p->text_len;

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		n--;
	s[n] = '\0';
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	return s;
}

/* A non-negative decimal integer, nothing else. */
static int parse_count(const char *s, long long *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

static void copy_for_log(char *dst, size_t dstlen, const char *src)
{
	size_t i;

	snprintf(dst, dstlen, "%s", src);
	for (i = 0; dst[i]; i++)
		if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
			dst[i] = '?';
}

static void finish_field(struct s3xml_list *p)
{
	enum field f = p->field;
	char *v;
	long long n;

	p->field = F_NONE;
	p->text[p->text_len] = '\0';
	if (f >= F_KEY && f <= F_LASTMOD) {
		if (p->seen & SEEN(f)) {
			fail(p, S3XML_ERR_SHAPE, "<Contents> repeats an element");
			return;
		}
		p->seen |= SEEN(f);
	}
	switch (f) {
	case F_NONE:
		return;
	case F_KEY:
		if (p->text_len == 0) {
			fail(p, S3XML_ERR_SHAPE, "empty <Key>");
			return;
		}
		p->cur.key = strndup(p->text, p->text_len);
		if (!p->cur.key)
			fail(p, S3XML_ERR_NOMEM, "out of memory");
		return;
	case F_ETAG:
		v = trimmed_text(p);
		if (strlen(v) >= sizeof(p->cur.etag)) {
			fail(p, S3XML_ERR_LIMIT, "<ETag> too long");
			return;
		}
		strcpy(p->cur.etag, v);
		return;
	case F_SIZE:
		if (parse_count(trimmed_text(p), &n) < 0) {
			fail(p, S3XML_ERR_SHAPE, "<Size> is not a non-negative integer");
			return;
		}
		p->cur.size = n;
		return;
	case F_LASTMOD:
		if (s3xml_parse_iso8601(trimmed_text(p), &p->cur.last_modified) < 0)
			fail(p, S3XML_ERR_SHAPE, "<LastModified> is not an ISO 8601 time");
		return;
	case F_TRUNCATED:
		v = trimmed_text(p);
		if (p->seen_truncated++) {
			fail(p, S3XML_ERR_SHAPE, "<IsTruncated> repeated");
		} else if (strcmp(v, "true") == 0) {
			p->page.truncated = 1;
		} else if (strcmp(v, "false") == 0) {
			p->page.truncated = 0;
		} else {
			fail(p, S3XML_ERR_SHAPE, "<IsTruncated> is neither true nor false");
		}
		return;
	case F_TOKEN:
		if (p->seen_token++) {
			fail(p, S3XML_ERR_SHAPE, "<NextContinuationToken> repeated");
			return;
		}
		if (p->text_len == 0)
			return; /* an empty token is no token */
		p->page.next_token = strndup(p->text, p->text_len);
		if (!p->page.next_token)
			fail(p, S3XML_ERR_NOMEM, "out of memory");
		return;
	case F_KEYCOUNT:
		if (p->seen_key_count++ || parse_count(trimmed_text(p), &n) < 0 || n > LONG_MAX) {
			fail(p, S3XML_ERR_SHAPE, "bad or repeated <KeyCount>");
			return;
		}
		p->key_count = (long)n;
		return;
	case F_CODE:
		copy_for_log(p->err_code, sizeof(p->err_code), trimmed_text(p));
		return;
	case F_MESSAGE:
		copy_for_log(p->err_message, sizeof(p->err_message), trimmed_text(p));
		return;
	case F_UPLOAD_ID:
		v = trimmed_text(p);
		if (strlen(v) >= sizeof(p->upload_id))
			fail(p, S3XML_ERR_LIMIT, "<UploadId> too long");
		else
			snprintf(p->upload_id, sizeof(p->upload_id), "%s", v);
		return;
	}
}

/* Appends the finished <Contents> entry; the page takes ownership of cur.key. */
static void finish_contents(struct s3xml_list *p)
{
	p->in_contents = 0;
	if (!p->cur.key) {
		fail(p, S3XML_ERR_SHAPE, "<Contents> without <Key>");
		return;
	}
	if (p->page.n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		struct store_list_entry *e;

		if (p->page.n >= S3XML_ENTRIES_MAX) {
			fail(p, S3XML_ERR_LIMIT, "too many <Contents> in one page");
			return;
		}
		if (ncap > S3XML_ENTRIES_MAX)
			ncap = S3XML_ENTRIES_MAX;
		e = realloc(p->page.entries, ncap * sizeof(*e));
		if (!e) {
			fail(p, S3XML_ERR_NOMEM, "out of memory");
			return;
		}
		p->page.entries = e;
		p->cap = ncap;
	}
	p->page.entries[p->page.n++] = p->cur;
	memset(&p->cur, 0, sizeof(p->cur));
}

static void XMLCALL on_end(void *ud, const XML_Char *qname)
{
	struct s3xml_list *p = ud;

	(void)qname;
	if (p->code)
		return;
	if (p->field != F_NONE)
		finish_field(p);
	else if (p->kind == DOC_LIST && p->depth == 2 && p->in_contents)
		finish_contents(p);
	if (--p->depth == 0)
		p->root_closed = 1;
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			       const XML_Char *pubid, int has_internal_subset)
{
	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal_subset;
	fail(ud, S3XML_ERR_SYNTAX, "document type declarations are refused");
}

static struct s3xml_list *parser_new(enum doc_kind kind)
{
	struct s3xml_list *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->kind = kind;
	p->key_count = -1;
	p->xp = XML_ParserCreateNS(NULL, NS_SEP);
	if (!p->xp) {
		free(p);
		return NULL;
	}
	XML_SetUserData(p->xp, p);
	XML_SetElementHandler(p->xp, on_start, on_end);
	XML_SetCharacterDataHandler(p->xp, on_text);
	XML_SetStartDoctypeDeclHandler(p->xp, on_doctype);
	return p;
}

struct s3xml_list *s3xml_list_new(void)
{
	return parser_new(DOC_LIST);
}

static void explain(const struct s3xml_list *p, char *err, size_t errlen)
{
	if (!err || !errlen)
		return;
	if (p->code == S3XML_OK)
		err[0] = '\0';
	else
		snprintf(err, errlen, "%s: %s", s3xml_strerror(p->code), p->why);
}

enum s3xml_code s3xml_list_feed(struct s3xml_list *p, const char *data, size_t len,
				int is_final, char *err, size_t errlen)
{
	if (p->code || p->finished)
		goto out;
	do {
		int piece = len > FEED_PIECE ? FEED_PIECE : (int)len;
		int last = is_final && (size_t)piece == len;

		if (XML_Parse(p->xp, data, piece, last) != XML_STATUS_OK && !p->code) {
			enum XML_Error xe = XML_GetErrorCode(p->xp);

			p->code = xe == XML_ERROR_NO_MEMORY ? S3XML_ERR_NOMEM : S3XML_ERR_SYNTAX;
			snprintf(p->why, sizeof(p->why), "%s at line %lu column %lu",
				 XML_ErrorString(xe),
				 (unsigned long)XML_GetCurrentLineNumber(p->xp),
				 (unsigned long)XML_GetCurrentColumnNumber(p->xp));
		}
		data += piece;
		len -= (size_t)piece;
	} while (len && !p->code);
	if (!p->code && is_final) {
		if (!p->root_closed) /* expat reports this itself; belt and braces */
			fail(p, S3XML_ERR_SYNTAX, "document ended early");
		else
			p->finished = 1;
	}
out:
	explain(p, err, errlen);
	return p->code;
}

enum s3xml_code s3xml_list_take(struct s3xml_list *p, struct store_list_page *page)
{
	memset(page, 0, sizeof(*page));
	if (p->code)
		return p->code;
	if (!p->finished)
		return S3XML_ERR_SYNTAX;
	*page = p->page;
	memset(&p->page, 0, sizeof(p->page));
	p->cap = 0;
	return S3XML_OK;
}

long s3xml_list_key_count(const struct s3xml_list *p)
{
	return p->key_count;
}

void s3xml_list_free(struct s3xml_list *p)
{
	if (!p)
		return;
	if (p->xp)
		XML_ParserFree(p->xp);
	free(p->cur.key);
	store_list_page_free(&p->page);
	free(p);
}

enum s3xml_code s3xml_parse_list(const char *xml, size_t len,
				 struct store_list_page *page,
				 char *err, size_t errlen)
{
	struct s3xml_list *p = NULL;
	enum s3xml_code code;

	memset(page, 0, sizeof(*page));
	p = s3xml_list_new();
	if (!p) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return S3XML_ERR_NOMEM;
	}
	code = s3xml_list_feed(p, xml, len, 1, err, errlen);
	if (code == S3XML_OK)
		code = s3xml_list_take(p, page);
	s3xml_list_free(p);
	return code;
}

enum s3xml_code s3xml_parse_error(const char *xml, size_t len,
				  char *code, size_t codelen,
				  char *message, size_t msglen)
{
	struct s3xml_list *p = NULL;
	enum s3xml_code rc;

	code[0] = '\0';
	message[0] = '\0';
	p = parser_new(DOC_ERROR);
	if (!p)
		return S3XML_ERR_NOMEM;
	rc = s3xml_list_feed(p, xml, len, 1, NULL, 0);
	if (rc == S3XML_OK) {
		snprintf(code, codelen, "%s", p->err_code);
		snprintf(message, msglen, "%s", p->err_message);
	}
	s3xml_list_free(p);
	return rc;
}

enum s3xml_code s3xml_parse_upload_id(const char *xml, size_t len, char *id, size_t idlen)
{
	struct s3xml_list *p = parser_new(DOC_INITIATE);
	enum s3xml_code rc;

	id[0] = '\0';
	if (!p)
		return S3XML_ERR_NOMEM;
	rc = s3xml_list_feed(p, xml, len, 1, NULL, 0);
	if (rc == S3XML_OK && (!p->upload_id[0] || strlen(p->upload_id) >= idlen))
		rc = S3XML_ERR_SHAPE;
	if (rc == S3XML_OK)
		snprintf(id, idlen, "%s", p->upload_id);
	s3xml_list_free(p);
	return rc;
}
