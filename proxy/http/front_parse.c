/* front_parse.c — request parsing for the HTTP/1.1 front end, on
 * libhttp-parser, adding what it does not check itself: duplicate
 * Content-Length, Content-Length with Transfer-Encoding, any coding but a
 * lone "chunked", obs-fold, a bare CR in a head, a request line that is not
 * exactly three parts with one SP between them, header/URL limits, Host
 * rules, the CRLFs of chunked framing (it is not built strict); and it removes
 * the hop-by-hop fields (Connection and what it names) before a head is
 * handed over, so nothing after it sees them. It hands heads,
 * body bytes and the end to callbacks; it knows nothing of connections. */
#include "front.h"

#include <stdlib.h>
#include <string.h>

#include <http_parser.h>

#include "wire/pct.h"

/* A growable byte string with a hard cap. */
struct capbuf {
	char *p;
	size_t len, cap;
};

static int capbuf_append(struct capbuf *b, const char *at, size_t len, size_t max)
{
	if (b->len + len + 1 > max)
		return -1;
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *np;

		while (cap < b->len + len + 1)
			cap *= 2;
		if (cap > max)
			cap = max;
		np = realloc(b->p, cap);
		if (!np)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, at, len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

/* The obs-fold guard scans the raw bytes of a head: a line that starts with
 * SP or HTAB continues the previous one (or follows the request line),
 * which RFC 9112 lets a server reject and which smuggling relies on. */
enum fold_scan {
	SCAN_START,  /* before the request line (blank lines are skipped) */
	SCAN_REQ,    /* inside the request line: one SP between its three parts */
	SCAN_LINE,   /* inside a line */
	SCAN_LF,     /* just after a line's LF */
	SCAN_LFCR,   /* CR right after an LF: the head ends (LF) or is refused */
	SCAN_END,    /* head ended: body bytes follow, not scanned */
};

/* The chunked framing guard scans the bytes of a chunked body that are not
 * data (chunk-size lines, the CRLF after each chunk's data, trailers, the
 * last CRLF) as RFC 9112 7.1 frames them. libhttp-parser, not built
 * strict, takes any byte where it expects the CR or LF of a CRLF, so
 * "5\r\nhelloXY0\r\n\r\n" was the body "hello" to it; and its hex table
 * reads every byte from 0x80 up as the digit 0, so "\xff3" was a chunk of
 * 3 bytes (found by fuzz_front against a strict reader). A peer that
 * checks them reads something else. */
enum chunk_scan {
	CHUNK_HEAD_LF,     /* the head's final LF, still unread after on_head */
	CHUNK_SIZE_START,  /* a chunk-size line's first byte: a hex digit */
	CHUNK_SIZE,        /* hex digits, then ';' or SP/HTAB, or its CR */
	CHUNK_EXT,         /* extensions: anything but a bare CR or LF */
	CHUNK_SIZE_LF,     /* the size line's LF; then data, or trailers */
	CHUNK_DATA,        /* the chunk's data: no framing byte is due */
	CHUNK_DATA_CR,     /* the CRLF right after a chunk's data */
	CHUNK_DATA_LF,
	CHUNK_TRAILER,     /* a trailer line (or the last, empty one) */
	CHUNK_TRAILER_LF,
};

struct front_parser {
	http_parser hp;
	struct front_limits lim;
	struct front_parser_cbs cbs;

	/* the head being parsed; states: idle (nothing seen), in_head (first
	 * byte of a request seen), body (head handed over), trailers */
	int in_head;
	int in_body;
	int in_trailers;
	int chunked;           /* the body being read is (libhttp-parser's
				* F_CHUNKED does not last: a trailer named
				* Transfer-Encoding clears it) */
	int paused;
	int failed;
	int taking;            /* front_parser_feed_taken: body bytes are the
				* caller's, the end is reported, not called */
	int taken_end;
	const char *taken_at;  /* ... and where its body bytes are */
	size_t taken_len;
	int seen_field;
	int last_was_value;
	size_t head_bytes;
	size_t nheaders;
	struct capbuf url, field, value;
	struct front_hdrs hdrs;
	enum fold_scan scan;
	int scan_cr;           /* the last byte scanned was CR */
	enum chunk_scan chunk_scan;
	int chunk_nonzero;      /* the size line has a digit other than 0 */
	const char *frame_from; /* during a feed into a chunked body: its
				 * first byte not yet scanned ... */
	const char *frame_end;  /* ... and the end of what it was given */
	int end_pending;        /* a chunked body ended in this feed: on_end
				 * once its framing is checked */
	unsigned req_spaces;   /* SPs seen on the request line */
	int req_last_space;    /* the last byte of the request line was SP */

	int err_status;
	const char *err_reason;
};

static int parser_fail(struct front_parser *p, int status, const char *reason)
{
	if (!p->err_status) {
		p->err_status = status;
		p->err_reason = reason;
	}
	return -1;
}

static void parser_reset_message(struct front_parser *p)
{
	p->in_head = 0;
	p->in_body = 0;
	p->in_trailers = 0;
	p->chunked = 0;
	p->seen_field = 0;
	p->last_was_value = 0;
	p->head_bytes = 0;
	p->nheaders = 0;
	p->url.len = 0;
	p->field.len = 0;
	p->value.len = 0;
	front_hdrs_clear(&p->hdrs);
	p->scan = SCAN_START;
	p->scan_cr = 0;
}

static int cb_message_begin(http_parser *hp)
{
	struct front_parser *p = hp->data;

	p->in_head = 1;
	return 0;
}

static int cb_url(http_parser *hp, const char *at, size_t len)
{
	struct front_parser *p = hp->data;

	if (capbuf_append(&p->url, at, len, p->lim.url_bytes + 1) < 0)
		return parser_fail(p, 414, "request target too long");
	return 0;
}

static size_t trim_len(const char *s, size_t len)
{
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	return len;
}

/* RFC 9110 tchar: what a header field name may hold. */
static int is_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Field values: visible ASCII, SP, HTAB and obs-text; no CTL. */
static int valid_value(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)v[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return 0;
	}
	return 1;
}

/* Moves the completed field/value pair into the header list. */
static int parser_commit_header(struct front_parser *p)
{
	const char *v = p->value.p ? p->value.p : "";
	size_t vlen = p->value.len;

	if (!p->field.len)
		return 0;
	/* libhttp-parser built without HTTP_PARSER_STRICT lets spaces into
	 * names ("Content-Length : 5"): a smuggling vector, refuse it */
	for (size_t i = 0; i < p->field.len; i++)
		if (!is_tchar((unsigned char)p->field.p[i]))
			return parser_fail(p, 400, "invalid character in header name");
	if (!valid_value(v, vlen))
		return parser_fail(p, 400, "invalid character in header value");
	if (!p->in_trailers) {
		while (vlen && (*v == ' ' || *v == '\t')) {
			v++;
			vlen--;
		}
		vlen = trim_len(v, vlen);
		if (front_hdrs_addn(&p->hdrs, p->field.p, p->field.len, v, vlen) < 0)
			return parser_fail(p, 500, "out of memory");
	}
	p->field.len = 0;
	p->value.len = 0;
	p->last_was_value = 0;
	return 0;
}

static int cb_header_field(http_parser *hp, const char *at, size_t len)
{
	struct front_parser *p = hp->data;

	if (p->last_was_value && parser_commit_header(p) < 0)
		return -1;
	if (p->field.len == 0) {
		p->seen_field = 1;
		if (!p->in_trailers && ++p->nheaders > p->lim.header_count)
			return parser_fail(p, 431, "too many header fields");
	}
	if (capbuf_append(&p->field, at, len, p->lim.header_bytes + 1) < 0)
		return parser_fail(p, 431, "header field too large");
	return 0;
}

static int cb_header_value(http_parser *hp, const char *at, size_t len)
{
	struct front_parser *p = hp->data;

	p->last_was_value = 1;
	if (capbuf_append(&p->value, at, len, p->lim.header_bytes + 1) < 0)
		return parser_fail(p, 431, "header field too large");
	return 0;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Splits the request target into path and query. Origin-form
 * ("/a/b?q"), asterisk-form for OPTIONS and absolute-form
 * ("http://host/a?q", whose authority is ignored) are accepted. */
static int parser_split_target(struct front_parser *p, struct front_msg *msg, char *path_room)
{
	const char *t = msg->target;
	const char *path = NULL, *query = NULL;
	size_t plen = 0, qlen = 0;

	if (t[0] == '/') {
		const char *q = strchr(t, '?');
		const char *frag = strchr(t, '#');
		const char *end = frag ? frag : t + strlen(t);

		path = t;
		if (q && q < end) {
			plen = (size_t)(q - t);
			query = q + 1;
			qlen = (size_t)(end - query);
		} else {
			plen = (size_t)(end - t);
		}
	} else if (strcmp(t, "*") == 0 && strcmp(msg->method, "OPTIONS") == 0) {
		path = t;
		plen = 1;
	} else {
		struct http_parser_url u;

		http_parser_url_init(&u);
		if (http_parser_parse_url(t, strlen(t), 0, &u) != 0 ||
		    !(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST)))
			return parser_fail(p, 400, "bad request target");
		if (u.field_set & (1 << UF_PATH)) {
			path = t + u.field_data[UF_PATH].off;
			plen = u.field_data[UF_PATH].len;
		} else {
			path = "/";
			plen = 1;
		}
		if (u.field_set & (1 << UF_QUERY)) {
			query = t + u.field_data[UF_QUERY].off;
			qlen = u.field_data[UF_QUERY].len;
		}
	}
	msg->path = memcpy(path_room, path, plen);
	msg->path[plen] = '\0';
	if (query) {
		msg->query = strndup(query, qlen);
		if (!msg->query)
			return parser_fail(p, 500, "out of memory");
	}
	return 0;
}

/* The checks libhttp-parser leaves to us, then the hand-over. */
static int cb_headers_complete(http_parser *hp)
{
	struct front_parser *p = hp->data;
	struct front_msg *msg = NULL;
	const char *cl, *te, *expect, *method, *why;
	size_t mlen;
	int rc;

	if (p->in_trailers)
		return 0;
	if (p->last_was_value && parser_commit_header(p) < 0)
		return -1;
	p->scan = SCAN_END;
	if (hp->http_major != 1 || hp->http_minor > 1)
		return parser_fail(p, 505, "http version not supported");
	if (hp->method == HTTP_CONNECT)
		return parser_fail(p, 405, "connect is not supported");
	if (!p->url.len)
		return parser_fail(p, 400, "empty request target");
	for (size_t i = 0; i < p->url.len; i++) {
		unsigned char ch = (unsigned char)p->url.p[i];

		if (ch <= 0x20 || ch >= 0x7f)
			return parser_fail(p, 400, "invalid character in request target");
	}
	if (front_hdrs_count(&p->hdrs, "Host") > 1)
		return parser_fail(p, 400, "more than one host header");
	if (hp->http_minor == 1 && !front_hdrs_get(&p->hdrs, "Host"))
		return parser_fail(p, 400, "missing host header");
	if (front_hdrs_count(&p->hdrs, "Content-Length") > 1)
		return parser_fail(p, 400, "more than one content-length header");
	cl = front_hdrs_get(&p->hdrs, "Content-Length");
	te = front_hdrs_get(&p->hdrs, "Transfer-Encoding");
	if (cl && te)
		return parser_fail(p, 400, "both content-length and transfer-encoding");
	if (te) {
		if (front_hdrs_count(&p->hdrs, "Transfer-Encoding") > 1 ||
		    strcasecmp(te, "chunked") != 0 || hp->http_minor == 0 ||
		    !(hp->flags & F_CHUNKED))
			return parser_fail(p, 400, "unsupported transfer-encoding");
	}
	if (cl && (!all_digits(cl) || strlen(cl) > 18))
		return parser_fail(p, 400, "bad content-length");
	/* hop-by-hop fields go now, before anyone judges the request: the
	 * head handed over is what may be forwarded (keep-alive was read by
	 * libhttp-parser from Connection already) */
	if (front_hdrs_drop_hop_by_hop(&p->hdrs, &why) < 0)
		return parser_fail(p, 400, why);
	cl = front_hdrs_get(&p->hdrs, "Content-Length");
	te = front_hdrs_get(&p->hdrs, "Transfer-Encoding");
	expect = front_hdrs_get(&p->hdrs, "Expect");
	if (expect && strcasecmp(expect, "100-continue") != 0)
		return parser_fail(p, 417, "unsupported expectation");

	/* method, target and path (a part of the target, or "/") after the
	 * message in its allocation; malloc + memset, as calloc would skip
	 * glibc's per-thread cache */
	method = http_method_str((enum http_method)hp->method);
	mlen = strlen(method);
	msg = malloc(sizeof(*msg) + mlen + 1 + 2 * (p->url.len + 1) + 1);
	if (!msg)
		return parser_fail(p, 500, "out of memory");
	memset(msg, 0, sizeof(*msg));
	msg->method = memcpy((char *)(msg + 1), method, mlen + 1);
	msg->target = memcpy(msg->method + mlen + 1, p->url.p, p->url.len);
	msg->target[p->url.len] = '\0';
	if (parser_split_target(p, msg, msg->target + p->url.len + 1) < 0) {
		front_msg_free(msg);
		return -1;
	}
	msg->http_major = hp->http_major;
	msg->http_minor = hp->http_minor;
	msg->hdrs = p->hdrs;
	memset(&p->hdrs, 0, sizeof(p->hdrs));
	msg->chunked = te != NULL;
	msg->content_length = cl ? (int64_t)strtoll(cl, NULL, 10) : -1;
	msg->has_body = msg->chunked || msg->content_length > 0;
	msg->keep_alive = http_should_keep_alive(hp);
	msg->expect_continue = expect != NULL && hp->http_minor == 1;
	msg->head = hp->method == HTTP_HEAD;

	/* an Upgrade is not taken: the request goes on as plain HTTP/1.1 */
	hp->upgrade = 0;
	p->in_head = 0;
	p->in_body = 1;
	p->chunked = msg->chunked;
	p->chunk_scan = CHUNK_HEAD_LF;
	rc = p->cbs.on_head(p->cbs.arg, msg);
	if (rc < 0)
		return parser_fail(p, 500, "request setup failed");
	p->paused = 1;
	http_parser_pause(hp, 1);
	return 0;
}

/* Checks the framing bytes [from, to) of a chunked body (enum chunk_scan).
 * Returns -1 on anything a strict reader would not take. */
static int parser_scan_chunked(struct front_parser *p, const char *from, const char *to)
{
	for (; from < to; from++) {
		unsigned char ch = (unsigned char)*from;

		switch (p->chunk_scan) {
		case CHUNK_HEAD_LF:
		case CHUNK_DATA_LF:
			if (ch != '\n')
				return parser_fail(p, 400, "bad chunked framing: CR without LF");
			p->chunk_scan = CHUNK_SIZE_START;
			p->chunk_nonzero = 0;
			break;
		case CHUNK_SIZE_START:
			if (hex_value(ch) < 0)
				return parser_fail(p, 400, "invalid chunk size");
			p->chunk_scan = CHUNK_SIZE;
			p->chunk_nonzero = ch != '0';
			break;
		case CHUNK_SIZE:
			if (hex_value(ch) >= 0)
				p->chunk_nonzero |= ch != '0';
			else if (ch == ';' || ch == ' ' || ch == '\t')
				p->chunk_scan = CHUNK_EXT;
			else if (ch == '\r')
				p->chunk_scan = CHUNK_SIZE_LF;
			else
				return parser_fail(p, 400, "invalid chunk size");
			break;
		case CHUNK_EXT:
		case CHUNK_TRAILER:
			if (ch == '\n')
				return parser_fail(p, 400, "bad chunked framing: LF without CR");
			if (ch == '\r')
				p->chunk_scan = p->chunk_scan == CHUNK_EXT ? CHUNK_SIZE_LF :
									  CHUNK_TRAILER_LF;
			break;
		case CHUNK_SIZE_LF:
		case CHUNK_TRAILER_LF:
			if (ch != '\n')
				return parser_fail(p, 400, "bad chunked framing: CR without LF");
			p->chunk_scan = p->chunk_scan == CHUNK_SIZE_LF && p->chunk_nonzero ?
						CHUNK_DATA : CHUNK_TRAILER;
			break;
		case CHUNK_DATA:
			return parser_fail(p, 400, "bad chunked framing: a chunk shorter than its size");
		case CHUNK_DATA_CR:
			if (ch != '\r')
				return parser_fail(p, 400, "bad chunked framing: no CRLF after the data");
			p->chunk_scan = CHUNK_DATA_LF;
			break;
		}
	}
	return 0;
}

static int cb_body(http_parser *hp, const char *at, size_t len)
{
	struct front_parser *p = hp->data;
	int rc;

	if (p->frame_from) {
		/* a chunk's data: the framing before it is checked before the
		 * data is handed over, and so are as many bytes of the CRLF
		 * after its last data as were given (looked at only: the
		 * scan after the parser's run takes them, as far as it
		 * consumed them) */
		const char *after = at + len;

		if (parser_scan_chunked(p, p->frame_from, at) < 0)
			return -1;
		if (p->chunk_scan != CHUNK_DATA)
			return parser_fail(p, 400, "bad chunked framing: data where none is due");
		p->frame_from = after;
		if (hp->content_length == 0) {
			p->chunk_scan = CHUNK_DATA_CR;
			if ((after < p->frame_end && after[0] != '\r') ||
			    (after + 1 < p->frame_end && after[1] != '\n'))
				return parser_fail(p, 400, "bad chunked framing: no CRLF after the data");
		}
	}
	if (p->taking) {
		/* one span per feed (identity bodies); anything else would
		 * be a parser this file does not know */
		if (p->taken_len && at != p->taken_at + p->taken_len)
			return parser_fail(p, 500, "request body handling failed");
		if (!p->taken_len)
			p->taken_at = at;
		p->taken_len += len;
		return 0;
	}
	rc = p->cbs.on_body(p->cbs.arg, at, len);
	if (rc < 0)
		return parser_fail(p, 500, "request body handling failed");
	if (rc > 0) {
		p->paused = 1;
		http_parser_pause(hp, 1);
	}
	return 0;
}

static int cb_chunk_header(http_parser *hp)
{
	struct front_parser *p = hp->data;

	/* the terminating zero-size chunk: what follows are trailers */
	if (hp->content_length == 0)
		p->in_trailers = 1;
	return 0;
}

static int cb_message_complete(http_parser *hp)
{
	struct front_parser *p = hp->data;
	int rc = 0;

	if (p->frame_from) {
		/* a chunked body: its last framing bytes are still to be
		 * scanned (front_parser_feed, after the run), then on_end */
		p->end_pending = 1;
		p->paused = 1;
		http_parser_pause(hp, 1);
		return 0;
	}
	if (p->taking)
		p->taken_end = 1;
	else
		rc = p->cbs.on_end(p->cbs.arg);
	parser_reset_message(p);
	if (rc < 0)
		return parser_fail(p, 500, "request end handling failed");
	p->paused = 1;
	http_parser_pause(hp, 1);
	return 0;
}

static const http_parser_settings parser_settings = {
	.on_message_begin = cb_message_begin,
	.on_url = cb_url,
	.on_header_field = cb_header_field,
	.on_header_value = cb_header_value,
	.on_headers_complete = cb_headers_complete,
	.on_body = cb_body,
	.on_message_complete = cb_message_complete,
	.on_chunk_header = cb_chunk_header,
};

struct front_parser *front_parser_new(const struct front_limits *limits,
				      const struct front_parser_cbs *cbs)
{
	struct front_parser *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->lim = *limits;
	p->cbs = *cbs;
	http_parser_init(&p->hp, HTTP_REQUEST);
	p->hp.data = p;
	p->scan = SCAN_START;
	return p;
}

void front_parser_free(struct front_parser *p)
{
	if (!p)
		return;
	free(p->url.p);
	free(p->field.p);
	free(p->value.p);
	front_hdrs_clear(&p->hdrs);
	free(p);
}

/* Runs the obs-fold guard over data[0..len). Returns -1 on a folded line. */
static int parser_scan_fold(struct front_parser *p, const char *data, size_t len)
{
	for (size_t i = 0; i < len && p->scan != SCAN_END; i++) {
		char ch = data[i];

		/* libhttp-parser (not strict) takes the byte after a CR for
		 * the LF it expects, whatever it is, and swallows it:
		 * "X: \r\rContent-Length: 5" would be two header lines here
		 * and one (bare CR: RFC 9112 2.2) for a peer, "\r\n\rX" the
		 * end of the head */
		if (p->scan_cr && ch != '\n')
			return parser_fail(p, 400, "bare cr in the request head");
		p->scan_cr = ch == '\r';
		switch (p->scan) {
		case SCAN_START:
			if (ch == ' ' || ch == '\t')
				return parser_fail(p, 400, "whitespace before the request line");
			if (ch != '\r' && ch != '\n') {
				p->scan = SCAN_REQ;
				p->req_spaces = 0;
				p->req_last_space = 0;
			}
			break;
		case SCAN_REQ:
			/* RFC 9112 3: method SP request-target SP HTTP-version */
			if (ch == '\t' || (ch == ' ' && p->req_last_space))
				return parser_fail(p, 400, "malformed request line");
			if (ch == '\n') {
				if (p->req_spaces != 2)
					return parser_fail(p, 400, "malformed request line");
				p->scan = SCAN_LF;
			} else if (ch != '\r') {
				p->req_spaces += ch == ' ';
				p->req_last_space = ch == ' ';
			}
			break;
		case SCAN_LINE:
			if (ch == '\n')
				p->scan = SCAN_LF;
			break;
		case SCAN_LF:
			if (ch == ' ' || ch == '\t')
				return parser_fail(p, 400, "obsolete line folding");
			p->scan = ch == '\r' ? SCAN_LFCR : ch == '\n' ? SCAN_END : SCAN_LINE;
			break;
		case SCAN_LFCR:
			p->scan = SCAN_END; /* ch is the LF (a bare CR failed above) */
			break;
		case SCAN_END:
			break;
		}
	}
	return 0;
}

static void parser_map_error(struct front_parser *p)
{
	enum http_errno e = HTTP_PARSER_ERRNO(&p->hp);

	if (p->err_status)
		return;
	switch (e) {
	case HPE_HEADER_OVERFLOW:
		parser_fail(p, p->seen_field ? 431 : 414, "request head too large");
		break;
	case HPE_INVALID_METHOD:
		parser_fail(p, 400, "invalid method");
		break;
	case HPE_INVALID_VERSION:
		parser_fail(p, 400, "invalid http version");
		break;
	case HPE_INVALID_CHUNK_SIZE:
		parser_fail(p, 400, "invalid chunk size");
		break;
	case HPE_INVALID_CONTENT_LENGTH:
	case HPE_UNEXPECTED_CONTENT_LENGTH:
		parser_fail(p, 400, "invalid content-length");
		break;
	case HPE_INVALID_TRANSFER_ENCODING:
		parser_fail(p, 400, "invalid transfer-encoding");
		break;
	case HPE_INVALID_HEADER_TOKEN:
		parser_fail(p, 400, "invalid character in header");
		break;
	case HPE_INVALID_URL:
	case HPE_INVALID_PATH:
	case HPE_INVALID_QUERY_STRING:
	case HPE_INVALID_FRAGMENT:
	case HPE_INVALID_HOST:
	case HPE_INVALID_PORT:
		parser_fail(p, 400, "invalid request target");
		break;
	default:
		parser_fail(p, 400, http_errno_description(e));
		break;
	}
}

enum front_parse_status front_parser_feed(struct front_parser *p,
					  const char *data, size_t len,
					  size_t *consumed)
{
	size_t n = len, used;
	int counting = !p->in_body;
	int chunked = p->in_body && p->chunked;
	enum http_errno e;

	*consumed = 0;
	if (p->failed)
		return FRONT_PARSE_ERROR;
	if (p->paused)
		return FRONT_PARSE_PAUSED;
	if (len == 0)
		return FRONT_PARSE_OK;
	if (counting) {
		/* never hand the parser more head bytes than the limit allows */
		size_t room = p->lim.header_bytes + 1 - p->head_bytes;

		if (n > room)
			n = room;
		if (parser_scan_fold(p, data, n) < 0) {
			p->failed = 1;
			return FRONT_PARSE_ERROR;
		}
	}
	if (chunked) {
		p->frame_from = data;
		p->frame_end = data + n;
	}
	used = http_parser_execute(&p->hp, &parser_settings, data, n);
	e = HTTP_PARSER_ERRNO(&p->hp);
	if (chunked) {
		/* the framing after the last data handed over, to the end
		 * of the message at most (its end pauses the parser) */
		int bad = (e == HPE_OK || e == HPE_PAUSED) &&
			  parser_scan_chunked(p, p->frame_from, data + used) < 0;

		/* an end where a line has just ended, after no data due */
		if (!bad && p->end_pending && p->chunk_scan != CHUNK_TRAILER)
			bad = parser_fail(p, 400, "bad chunked framing: an early end");

		p->frame_from = NULL;
		if (!bad && p->end_pending) {
			bad = p->cbs.on_end(p->cbs.arg) < 0 &&
			      parser_fail(p, 500, "request end handling failed");
			parser_reset_message(p);
		}
		p->end_pending = 0;
		if (bad) {
			p->failed = 1;
			return FRONT_PARSE_ERROR;
		}
	}
	if (counting)
		p->head_bytes += used;
	if (e == HPE_PAUSED) {
		*consumed = used;
		return FRONT_PARSE_PAUSED;
	}
	if (e != HPE_OK || p->err_status) {
		parser_map_error(p);
		p->failed = 1;
		return FRONT_PARSE_ERROR;
	}
	*consumed = used;
	if (counting && !p->in_body && p->head_bytes > p->lim.header_bytes) {
		parser_fail(p, p->seen_field ? 431 : 414,
			    p->seen_field ? "request header fields too large" : "request line too long");
		p->failed = 1;
		return FRONT_PARSE_ERROR;
	}
	return FRONT_PARSE_OK;
}

uint64_t front_parser_body_left(const struct front_parser *p)
{
	/* without a Content-Length libhttp-parser keeps ULLONG_MAX in
	 * content_length (not the 0 its header says): from on_head to the end
	 * of a request without a body, that is no body left, not 2^64 - 1 */
	if (!p->in_body || p->in_trailers || p->failed || p->chunked ||
	    !(p->hp.flags & F_CONTENTLENGTH))
		return 0;
	return p->hp.content_length;
}

enum front_parse_status front_parser_feed_taken(struct front_parser *p,
						const char *data, size_t len,
						size_t *consumed, struct front_taken *body)
{
	enum front_parse_status st;

	*consumed = 0;
	memset(body, 0, sizeof(*body));
	if (len > front_parser_body_left(p))
		return FRONT_PARSE_ERROR; /* a caller's bug: nothing is consumed */
	p->taking = 1;
	p->taken_end = 0;
	p->taken_at = NULL;
	p->taken_len = 0;
	st = front_parser_feed(p, data, len, consumed);
	p->taking = 0;
	if (st == FRONT_PARSE_ERROR)
		return st;
	body->ended = p->taken_end;
	body->len = p->taken_len;
	body->off = p->taken_len ? (size_t)(p->taken_at - data) : 0;
	return st;
}

void front_parser_pause(struct front_parser *p)
{
	if (!p->paused && !p->failed) {
		p->paused = 1;
		http_parser_pause(&p->hp, 1);
	}
}

void front_parser_resume(struct front_parser *p)
{
	if (p->paused && !p->failed) {
		p->paused = 0;
		http_parser_pause(&p->hp, 0);
	}
}

int front_parser_error(const struct front_parser *p, const char **reason)
{
	if (reason)
		*reason = p->err_reason ? p->err_reason : "bad request";
	return p->err_status ? p->err_status : 400;
}

int front_parser_in_head(const struct front_parser *p)
{
	return p->in_head;
}

int front_parser_idle(const struct front_parser *p)
{
	return !p->in_head && !p->in_body;
}

int front_parser_paused(const struct front_parser *p)
{
	return p->paused;
}
