/* front.c — HTTP/1.1 front end: accepts client connections, parses requests
 * with libhttp-parser, frames responses.
 *
 * The parser layer (front_parser_*) adds what libhttp-parser does not check
 * itself: duplicate Content-Length, Content-Length with Transfer-Encoding,
 * any coding but a lone "chunked", obs-fold, header/URL limits, Host rules.
 * The connection layer handles one request at a time per connection
 * (pipelined requests wait in the input buffer), keep-alive, 100-continue,
 * timeouts, bounded buffers and lingering close. It never looks at what a
 * request means: that is proxy.c's job through struct front_ops. */
#include "front.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/util.h>

#include <http_parser.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "listen.h"
#include "ops/log.h"

/* ======================================================================== */
/* header lists                                                             */
/* ======================================================================== */

const char *front_hdrs_get(const struct front_hdrs *h, const char *name)
{
	for (size_t i = 0; h && i < h->n; i++)
		if (strcasecmp(h->v[i].name, name) == 0)
			return h->v[i].value;
	return NULL;
}

size_t front_hdrs_count(const struct front_hdrs *h, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; h && i < h->n; i++)
		if (strcasecmp(h->v[i].name, name) == 0)
			n++;
	return n;
}

int front_hdrs_addn(struct front_hdrs *h, const char *name, size_t nlen,
		    const char *value, size_t vlen)
{
	char *n = NULL, *v = NULL;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct front_hdr *nv = realloc(h->v, cap * sizeof(*nv));

		if (!nv)
			return -1;
		h->v = nv;
		h->cap = cap;
	}
	n = strndup(name, nlen);
	v = strndup(value, vlen);
	if (!n || !v) {
		free(n);
		free(v);
		return -1;
	}
	h->v[h->n].name = n;
	h->v[h->n].value = v;
	h->n++;
	return 0;
}

int front_hdrs_add(struct front_hdrs *h, const char *name, const char *value)
{
	return front_hdrs_addn(h, name, strlen(name), value, strlen(value));
}

size_t front_hdrs_del(struct front_hdrs *h, const char *name)
{
	size_t out = 0, removed = 0;

	for (size_t i = 0; h && i < h->n; i++) {
		if (strcasecmp(h->v[i].name, name) == 0) {
			free(h->v[i].name);
			free(h->v[i].value);
			removed++;
			continue;
		}
		h->v[out++] = h->v[i];
	}
	if (h)
		h->n = out;
	return removed;
}

int front_hdrs_set(struct front_hdrs *h, const char *name, const char *value)
{
	front_hdrs_del(h, name);
	return value ? front_hdrs_add(h, name, value) : 0;
}

void front_hdrs_clear(struct front_hdrs *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].name);
		free(h->v[i].value);
	}
	free(h->v);
	memset(h, 0, sizeof(*h));
}

int front_list_has(const char *value, const char *token)
{
	size_t tlen = strlen(token);
	const char *p = value;

	while (p && *p) {
		const char *end;
		size_t len;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		end = p;
		while (*end && *end != ',')
			end++;
		len = (size_t)(end - p);
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == tlen && strncasecmp(p, token, tlen) == 0)
			return 1;
		p = end;
	}
	return 0;
}

/* ======================================================================== */
/* request parsing                                                          */
/* ======================================================================== */

void front_limits_default(struct front_limits *l)
{
	l->header_bytes = 16 * 1024;
	l->header_count = 100;
	l->url_bytes = 8 * 1024;
	l->idle_timeout_ms = 60000;
	l->header_timeout_ms = 10000;
	l->body_timeout_ms = 60000;
	l->body_min_rate = 1024;
	l->send_timeout_ms = 60000;
	l->input_buffer = 64 * 1024;
	l->output_buffer = 64 * 1024;
	l->discard_max = 1024 * 1024;
	l->max_connections = 0;
}

void front_msg_free(struct front_msg *msg)
{
	if (!msg)
		return;
	free(msg->method);
	free(msg->target);
	free(msg->path);
	free(msg->query);
	front_hdrs_clear(&msg->hdrs);
	free(msg);
}

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
	SCAN_LINE,   /* inside a line */
	SCAN_LF,     /* just after a line's LF */
	SCAN_LFCR,   /* CR right after an LF: the head may be ending */
	SCAN_END,    /* head ended: body bytes follow, not scanned */
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
	int paused;
	int failed;
	int seen_field;
	int last_was_value;
	size_t head_bytes;
	size_t nheaders;
	struct capbuf url, field, value;
	struct front_hdrs hdrs;
	enum fold_scan scan;

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
	p->seen_field = 0;
	p->last_was_value = 0;
	p->head_bytes = 0;
	p->nheaders = 0;
	p->url.len = 0;
	p->field.len = 0;
	p->value.len = 0;
	front_hdrs_clear(&p->hdrs);
	p->scan = SCAN_START;
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
static int parser_split_target(struct front_parser *p, struct front_msg *msg)
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
	msg->path = strndup(path, plen);
	if (!msg->path)
		return parser_fail(p, 500, "out of memory");
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
	const char *cl, *te, *expect;
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
	expect = front_hdrs_get(&p->hdrs, "Expect");
	if (expect && strcasecmp(expect, "100-continue") != 0)
		return parser_fail(p, 417, "unsupported expectation");

	msg = calloc(1, sizeof(*msg));
	if (!msg)
		return parser_fail(p, 500, "out of memory");
	msg->method = strdup(http_method_str((enum http_method)hp->method));
	msg->target = strndup(p->url.p, p->url.len);
	if (!msg->method || !msg->target) {
		front_msg_free(msg);
		return parser_fail(p, 500, "out of memory");
	}
	if (parser_split_target(p, msg) < 0) {
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
	rc = p->cbs.on_head(p->cbs.arg, msg);
	if (rc < 0)
		return parser_fail(p, 500, "request setup failed");
	p->paused = 1;
	http_parser_pause(hp, 1);
	return 0;
}

static int cb_body(http_parser *hp, const char *at, size_t len)
{
	struct front_parser *p = hp->data;
	int rc = p->cbs.on_body(p->cbs.arg, at, len);

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
	int rc = p->cbs.on_end(p->cbs.arg);

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

		switch (p->scan) {
		case SCAN_START:
			if (ch != '\r' && ch != '\n')
				p->scan = SCAN_LINE;
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
			p->scan = ch == '\n' ? SCAN_END : SCAN_LINE;
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
	used = http_parser_execute(&p->hp, &parser_settings, data, n);
	e = HTTP_PARSER_ERRNO(&p->hp);
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

static int front_parser_paused(const struct front_parser *p)
{
	return p->paused;
}

/* ======================================================================== */
/* connections                                                              */
/* ======================================================================== */

#define LINGER_MS       2000
#define LINGER_MAX      (1024 * 1024)

enum conn_state {
	CONN_IDLE,     /* waiting for (the rest of) a request head */
	CONN_REQUEST,  /* a request is with the proxy */
	CONN_DISCARD,  /* response done; skipping the rest of the request body */
	CONN_CLOSING,  /* flushing the output, then lingering close */
	CONN_LINGER,   /* write side shut; reading and dropping until EOF */
};

struct front_server {
	struct event_base *base;
	struct front_limits lim;
	struct front_ops ops;
	struct listen_set *listen;
	struct front_conn *conns;
	size_t nconns;
	int draining;
	struct event *drain_timer;
	void (*drain_done)(void *arg);
	void *drain_arg;
	SSL_CTX *tls;         /* NULL: plain TCP; else every listener speaks TLS */
	int accept_paused;    /* at max_connections: listeners paused */
};

/* At max_connections the listeners stop accepting (new clients wait in the
 * kernel's backlog); below it they accept again. */
static void update_accepting(struct front_server *s)
{
	int full = s->lim.max_connections && s->nconns >= s->lim.max_connections;

	if (full == s->accept_paused || s->draining)
		return;
	s->accept_paused = full;
	listen_set_full(s->listen, full);
	if (full)
		log_warn("\"%zu\" connections open (limits.max_connections): not accepting "
			 "until one closes", s->nconns);
}

struct front_conn {
	struct front_server *srv;
	struct front_conn *prev, *next;
	struct bufferevent *bev;
	struct front_parser *parser;
	struct event *timer;
	struct event *kick;
	char peer[64];
	enum conn_state state;

	/* the current request; req is the proxy's handle while it has one */
	void *req;
	int req_released;     /* front_conn_request_done() was called */
	int http10;
	int keep_alive;
	int expect_continue;
	int continue_sent;
	int body_reading;     /* the proxy asked for the body */
	int body_stop;        /* the proxy's on_body asked to stop */
	int body_done;
	int64_t content_length;
	int chunked;
	int has_body;
	uint64_t body_received;
	uint64_t body_base;   /* body_received when the rate clock started */

	/* the current response */
	int resp_started;
	int resp_ended;
	int resp_chunked;
	int resp_no_body;
	int resp_close;
	int64_t resp_length;
	int64_t resp_sent;
	int want_drain;

	int eof;              /* the client shut its write side */
	int dead;             /* free at the next settle */
	enum front_abort dead_why;
	size_t lingered;

	/* monotonic milliseconds of the last progress of each kind */
	int64_t t_idle, t_head, t_read, t_write, t_linger;
	/* the body's rate clock: started when the body is asked for, moved on
	 * by the time reading was paused for back-pressure (t_pause: since when) */
	int64_t t_body, t_pause;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *status_reason(int status)
{
	switch (status) {
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 421: return "Misdirected Request";
	case 422: return "Unprocessable Content";
	case 428: return "Precondition Required";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	default: break;
	}
	{
		const char *s = http_status_str((enum http_status)status);

		return s && strcmp(s, "<unknown>") != 0 ? s : "Unknown";
	}
}

static const char *status_code_name(int status)
{
	switch (status) {
	case 400: return "BadRequest";
	case 405: return "MethodNotAllowed";
	case 408: return "RequestTimeout";
	case 413: return "EntityTooLarge";
	case 414: return "RequestURITooLong";
	case 417: return "ExpectationFailed";
	case 431: return "RequestHeaderFieldsTooLarge";
	case 500: return "InternalError";
	case 501: return "NotImplemented";
	case 503: return "ServiceUnavailable";
	case 505: return "HTTPVersionNotSupported";
	default: return "Error";
	}
}

static void conn_kick(struct front_conn *c)
{
	if (!event_pending(c->kick, EV_TIMEOUT, NULL))
		event_active(c->kick, 0, 0);
}

static size_t conn_outlen(const struct front_conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev));
}

/* Frees c, telling the proxy first if it still holds a request. */
static void conn_free(struct front_conn *c, enum front_abort why)
{
	struct front_server *s = c->srv;
	void *req = c->req;

	c->req = NULL;
	if (req && s->ops.on_abort)
		s->ops.on_abort(req, why);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	update_accepting(s);
	log_debug("connection from \"%s\" closed", c->peer);
	if (c->bev)
		bufferevent_free(c->bev);
	if (c->timer)
		event_free(c->timer);
	if (c->kick)
		event_free(c->kick);
	front_parser_free(c->parser);
	free(c);
	if (s->draining && s->nconns == 0 && s->drain_done) {
		void (*done)(void *) = s->drain_done;

		s->drain_done = NULL;
		done(s->drain_arg);
	}
}

/* Marks c for closing once its output is flushed (lingering close). */
static void conn_close_after_flush(struct front_conn *c)
{
	if (c->state < CONN_CLOSING)
		c->state = CONN_CLOSING;
	/* keep reading (and dropping) so unread input cannot turn the close
	 * into a reset that destroys the response in flight */
	bufferevent_enable(c->bev, EV_READ);
	conn_kick(c);
}

/* The send timeout runs from the moment output starts to wait. */
static void conn_touch_write(struct front_conn *c)
{
	if (conn_outlen(c) == 0)
		c->t_write = now_ms();
}

/* A response the front end makes itself; the connection closes after it.
 * If a response is already under way, the connection just closes. */
static void conn_error_reply(struct front_conn *c, int status, const char *reason)
{
	struct front_server *s = c->srv;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	char body[1024];
	const char *ctype = "text/plain; charset=utf-8";

	if ((c->state == CONN_REQUEST && c->resp_started) || c->state == CONN_DISCARD ||
	    c->state >= CONN_CLOSING) {
		c->dead = 1;
		return;
	}
	if (s->ops.error_body)
		ctype = s->ops.error_body(s->ops.arg, status, status_code_name(status),
					  reason, body, sizeof(body));
	else
		snprintf(body, sizeof(body), "%d %s: %s\n", status, status_reason(status), reason);
	conn_touch_write(c);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
			    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			    status, status_reason(status), ctype, strlen(body), body);
	c->resp_started = 1;
	c->resp_ended = 1;
	conn_close_after_flush(c);
}

/* ---- parser callbacks (the connection is the parser's arg) ---- */

static int conn_on_head(void *arg, struct front_msg *msg)
{
	struct front_conn *c = arg;
	struct front_server *s = c->srv;
	void *req;

	c->state = CONN_REQUEST;
	c->req = NULL;
	c->req_released = 0;
	c->http10 = msg->http_minor == 0;
	c->keep_alive = msg->keep_alive;
	c->expect_continue = msg->expect_continue;
	c->continue_sent = 0;
	c->body_reading = 0;
	c->body_stop = 0;
	c->body_done = 0;
	c->content_length = msg->content_length;
	c->chunked = msg->chunked;
	c->has_body = msg->has_body;
	c->body_received = 0;
	c->resp_started = 0;
	c->resp_ended = 0;
	c->resp_close = 0;
	c->resp_sent = 0;
	c->want_drain = 0;
	log_debug("request \"%s %s\" from \"%s\"", msg->method, msg->target, c->peer);
	req = s->ops.on_head(s->ops.arg, c, msg);
	if (c->req_released)
		return 0;
	if (!req) {
		conn_error_reply(c, 500, "out of memory");
		return 0;
	}
	c->req = req;
	return 0;
}

static int conn_on_body(void *arg, const char *data, size_t len)
{
	struct front_conn *c = arg;
	int rc;

	c->body_received += len;
	c->t_read = now_ms();
	if (c->state != CONN_REQUEST || !c->req)
		return 0; /* discarding */
	rc = c->srv->ops.on_body(c->req, data, len);
	if (rc > 0 && c->state == CONN_REQUEST && c->req) {
		c->body_stop = 1;
		c->t_pause = now_ms();
		return 1;
	}
	return 0;
}

static int conn_on_end(void *arg)
{
	struct front_conn *c = arg;

	c->body_done = 1;
	if (c->state == CONN_REQUEST && c->req && c->srv->ops.on_body_end)
		c->srv->ops.on_body_end(c->req);
	return 0;
}

/* The request is finished in both directions: get ready for the next. */
static void conn_next_request(struct front_conn *c)
{
	c->state = CONN_IDLE;
	c->req = NULL;
	c->t_idle = now_ms();
	c->t_head = 0;
	c->resp_started = 0;
	c->resp_ended = 0;
	c->body_reading = 0;
	c->body_stop = 0;
	if (c->srv->draining)
		conn_close_after_flush(c);
}

static void conn_parse_error(struct front_conn *c)
{
	const char *reason;
	int status = front_parser_error(c->parser, &reason);

	log_info("bad request from \"%s\": \"%s\" (%d)", c->peer, reason, status);
	if (c->state == CONN_REQUEST && c->req) {
		void *req = c->req;

		c->req = NULL;
		if (c->srv->ops.on_abort)
			c->srv->ops.on_abort(req, FRONT_ABORT_BAD_BODY);
	}
	conn_error_reply(c, status, reason);
}

/* Feeds buffered input to the parser as far as the state allows. */
static void conn_process(struct front_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);

	while (!c->dead) {
		struct evbuffer_iovec vec;
		enum front_parse_status st;
		size_t used = 0;

		if (c->state >= CONN_CLOSING) {
			size_t n = evbuffer_get_length(in);

			c->lingered += n;
			evbuffer_drain(in, n);
			break;
		}
		if (c->state == CONN_DISCARD && c->body_done)
			conn_next_request(c);
		if (c->state >= CONN_CLOSING)
			continue;
		if (c->state == CONN_REQUEST && (!c->body_reading || c->body_done))
			break;
		if (front_parser_paused(c->parser)) {
			if (c->state == CONN_REQUEST && c->body_stop)
				break;
			front_parser_resume(c->parser);
		}
		if (evbuffer_get_length(in) == 0)
			break;
		if (evbuffer_peek(in, -1, NULL, &vec, 1) < 1)
			break;
		if (c->state == CONN_IDLE && front_parser_idle(c->parser) && !c->t_head)
			c->t_head = now_ms();
		st = front_parser_feed(c->parser, vec.iov_base, vec.iov_len, &used);
		if (used)
			evbuffer_drain(in, used);
		if (st == FRONT_PARSE_ERROR) {
			conn_parse_error(c);
			break;
		}
		if (c->state == CONN_IDLE && front_parser_idle(c->parser))
			c->t_head = 0; /* only blank lines so far */
		if (st == FRONT_PARSE_OK && used == 0)
			break;
	}
}

/* The milliseconds `bytes` earn at `rate` bytes/s (capped at a year). */
static int64_t rate_allowance_ms(uint64_t bytes, size_t rate)
{
	uint64_t ms = bytes / rate * 1000 + bytes % rate * 1000 / rate;

	return ms > 365ULL * 24 * 3600 * 1000 ? 365LL * 24 * 3600 * 1000 : (int64_t)ms;
}

/* Starts the body's rate clock now. */
static void body_clock_start(struct front_conn *c)
{
	c->t_body = now_ms();
	c->t_pause = 0;
	c->body_base = c->body_received;
}

/* The earliest deadline that applies in c's state; 0 for none. */
static int64_t conn_deadline(const struct front_conn *c, int *what)
{
	const struct front_limits *l = &c->srv->lim;
	int64_t d = 0;

#define CONSIDER(t, w) do { int64_t t_ = (t); \
	if (!d || t_ < d) { d = t_; *what = (w); } } while (0)
	if (c->state == CONN_LINGER) {
		CONSIDER(c->t_linger + LINGER_MS, 'L');
		return d;
	}
	if (conn_outlen(c) > 0)
		CONSIDER(c->t_write + l->send_timeout_ms, 'S');
	if (c->state == CONN_IDLE) {
		if (c->t_head)
			CONSIDER(c->t_head + l->header_timeout_ms, 'H');
		else if (conn_outlen(c) == 0)
			CONSIDER(c->t_idle + l->idle_timeout_ms, 'I');
	}
	if ((c->state == CONN_REQUEST || c->state == CONN_DISCARD) &&
	    c->body_reading && !c->body_done && !c->body_stop) {
		CONSIDER(c->t_read + l->body_timeout_ms, 'B');
		if (l->body_min_rate)
			CONSIDER(c->t_body + l->body_timeout_ms +
				 rate_allowance_ms(c->body_received - c->body_base, l->body_min_rate),
				 'R');
	}
#undef CONSIDER
	return d;
}

/* After every event: act on state changes, arm the timer, maybe free c.
 * Returns -1 if c was freed. */
static int conn_settle(struct front_conn *c)
{
	struct front_server *s = c->srv;
	int64_t deadline;
	int what = 0;

	if (c->dead) {
		conn_free(c, c->dead_why);
		return -1;
	}
	if (c->state == CONN_CLOSING && conn_outlen(c) == 0) {
		int fd = bufferevent_getfd(c->bev);

		if (c->eof || fd < 0 || shutdown(fd, SHUT_WR) < 0) {
			conn_free(c, FRONT_ABORT_CLIENT_GONE);
			return -1;
		}
		c->state = CONN_LINGER;
		c->t_linger = now_ms();
		bufferevent_enable(c->bev, EV_READ);
	}
	if (c->state == CONN_LINGER && (c->eof || c->lingered > LINGER_MAX)) {
		conn_free(c, FRONT_ABORT_CLIENT_GONE);
		return -1;
	}
	if (c->state == CONN_IDLE && c->eof && !front_parser_in_head(c->parser) &&
	    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0) {
		if (conn_outlen(c) == 0) {
			conn_free(c, FRONT_ABORT_CLIENT_GONE);
			return -1;
		}
		conn_close_after_flush(c);
	}
	if (c->want_drain && c->req && c->state == CONN_REQUEST &&
	    conn_outlen(c) <= s->lim.output_buffer / 2) {
		c->want_drain = 0;
		s->ops.on_drain(c->req);
		if (c->dead) {
			conn_free(c, c->dead_why);
			return -1;
		}
	}
	deadline = conn_deadline(c, &what);
	if (deadline) {
		int64_t wait = deadline - now_ms();
		struct timeval tv;

		if (wait < 0)
			wait = 0;
		tv.tv_sec = wait / 1000;
		tv.tv_usec = (wait % 1000) * 1000;
		evtimer_add(c->timer, &tv);
	} else {
		evtimer_del(c->timer);
	}
	return 0;
}

static void conn_timeout_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front_conn *c = arg;
	int what = 0;
	int64_t deadline = conn_deadline(c, &what);

	if (!deadline || deadline > now_ms()) {
		conn_settle(c);
		return;
	}
	switch (what) {
	case 'H':
		log_info("request head from \"%s\" not complete in time", c->peer);
		conn_error_reply(c, 408, "request head not received in time");
		break;
	case 'B':
	case 'R':
		if (what == 'B')
			log_info("request body from \"%s\" stalled", c->peer);
		else
			log_info("request body from \"%s\" too slow: \"%" PRIu64 "\" bytes in \"%"
				 PRId64 "\" ms (limits.body_min_rate \"%zu\" bytes/s)", c->peer,
				 c->body_received - c->body_base, now_ms() - c->t_body,
				 c->srv->lim.body_min_rate);
		if (c->req) {
			void *req = c->req;

			c->req = NULL;
			if (c->srv->ops.on_abort)
				c->srv->ops.on_abort(req, FRONT_ABORT_TIMEOUT);
		}
		conn_error_reply(c, 408, "request body not received in time");
		break;
	case 'S':
		log_info("client \"%s\" stopped reading the response", c->peer);
		c->dead = 1;
		c->dead_why = FRONT_ABORT_TIMEOUT;
		break;
	default: /* idle keep-alive, linger */
		c->dead = 1;
		c->dead_why = FRONT_ABORT_TIMEOUT;
		break;
	}
	conn_settle(c);
}

static void conn_kick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front_conn *c = arg;

	conn_process(c);
	conn_settle(c);
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct front_conn *c = arg;

	conn_process(c);
	conn_settle(c);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct front_conn *c = arg;

	c->t_write = now_ms();
	conn_settle(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct front_conn *c = arg;

	if (what & BEV_EVENT_ERROR) {
		unsigned long tls_err = bufferevent_get_openssl_error(bev);

		if (tls_err) {
			char why[256];

			ERR_error_string_n(tls_err, why, sizeof(why));
			log_info("connection from \"%s\": tls: \"%s\"", c->peer, why);
			while (bufferevent_get_openssl_error(bev))
				;
		} else {
			log_debug("connection from \"%s\": %s", c->peer,
				  evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		}
		conn_free(c, FRONT_ABORT_CLIENT_GONE);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		c->eof = 1;
		conn_process(c);
		if (c->state == CONN_LINGER || c->state == CONN_CLOSING) {
			conn_free(c, FRONT_ABORT_CLIENT_GONE);
			return;
		}
		if (c->state == CONN_IDLE && front_parser_in_head(c->parser)) {
			conn_free(c, FRONT_ABORT_CLIENT_GONE);
			return;
		}
		if ((c->state == CONN_REQUEST || c->state == CONN_DISCARD) && !c->body_done) {
			conn_free(c, FRONT_ABORT_CLIENT_GONE);
			return;
		}
		/* a complete request was sent and the client half-closed: answer
		 * it, then close */
		c->keep_alive = 0;
	}
	conn_settle(c);
}

static void output_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct front_conn *c = arg;

	if (info->n_deleted)
		c->t_write = now_ms();
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int salen, void *arg)
{
	struct front_server *s = arg;
	struct front_conn *c = calloc(1, sizeof(*c));
	struct front_parser_cbs cbs;
	char host[INET6_ADDRSTRLEN] = "?";
	int one = 1;

	if (!c)
		goto fail;
	c->srv = s;
	cbs.on_head = conn_on_head;
	cbs.on_body = conn_on_body;
	cbs.on_end = conn_on_end;
	cbs.arg = c;
	c->parser = front_parser_new(&s->lim, &cbs);
	if (s->tls) {
		SSL *ssl = SSL_new(s->tls);

		/* the bufferevent owns ssl (and closes fd) from here on */
		c->bev = ssl ? bufferevent_openssl_socket_new(s->base, fd, ssl,
							      BUFFEREVENT_SSL_ACCEPTING,
							      BEV_OPT_CLOSE_ON_FREE |
							      BEV_OPT_DEFER_CALLBACKS) : NULL;
		if (!c->bev && ssl)
			SSL_free(ssl);
		if (c->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
	} else {
		c->bev = bufferevent_socket_new(s->base, fd,
						BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	}
	c->timer = evtimer_new(s->base, conn_timeout_cb, c);
	c->kick = event_new(s->base, -1, 0, conn_kick_cb, c);
	if (!c->parser || !c->bev || !c->timer || !c->kick) {
		if (c->bev)
			fd = -1; /* closed with the bufferevent */
		if (c->bev)
			bufferevent_free(c->bev);
		if (c->timer)
			event_free(c->timer);
		if (c->kick)
			event_free(c->kick);
		front_parser_free(c->parser);
		free(c);
		goto fail;
	}
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(c->peer, sizeof(c->peer), "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(c->peer, sizeof(c->peer), "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(c->peer, sizeof(c->peer), "unix");
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	c->state = CONN_IDLE;
	c->t_idle = now_ms();
	c->t_write = c->t_idle;
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, s->lim.input_buffer);
	bufferevent_setwatermark(c->bev, EV_WRITE, s->lim.output_buffer / 2, 0);
	evbuffer_add_cb(bufferevent_get_output(c->bev), output_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	log_debug("connection from \"%s\"", c->peer);
	update_accepting(s);
	conn_settle(c);
	return;
fail:
	log_error("cannot accept a connection: out of memory");
	if (fd >= 0)
		evutil_closesocket(fd);
}

struct front_server *front_server_new(struct event_base *base,
				      const struct front_limits *limits,
				      const struct front_ops *ops,
				      char *err, size_t errlen)
{
	struct front_server *s = calloc(1, sizeof(*s));
	char why[512];

	if (!s || !(s->listen = listen_set_new(base, accept_cb, s))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base = base;
	if (limits)
		s->lim = *limits;
	else
		front_limits_default(&s->lim);
	s->lim.max_connections = listen_connection_budget(s->lim.max_connections, why,
							  sizeof(why));
	if (why[0])
		log_warn("limits.max_connections: \"%zu\": %s", s->lim.max_connections, why);
	s->ops = *ops;
	/* our own limits are lower; keep libhttp-parser's as a backstop */
	if (s->lim.header_bytes + 1024 > 80 * 1024)
		http_parser_set_max_header_size((uint32_t)(s->lim.header_bytes + 1024));
	return s;
}

int front_server_listen(struct front_server *s, const char *addr, char *err, size_t errlen)
{
	return listen_set_add(s->listen, addr, err, errlen);
}

static void drain_timeout_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct front_server *s = arg;

	log_warn("drain time over: closing \"%zu\" connections", s->nconns);
	while (s->conns)
		conn_free(s->conns, FRONT_ABORT_SHUTDOWN);
	if (s->drain_done) {
		void (*done)(void *) = s->drain_done;

		s->drain_done = NULL;
		done(s->drain_arg);
	}
}

void front_server_drain(struct front_server *s, long timeout_ms,
			void (*done)(void *arg), void *arg)
{
	struct front_conn *c, *next;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };

	listen_set_close(s->listen);
	s->draining = 1;
	s->drain_done = done;
	s->drain_arg = arg;
	for (c = s->conns; c; c = next) {
		next = c->next;
		if (c->state == CONN_IDLE && !front_parser_in_head(c->parser) &&
		    conn_outlen(c) == 0)
			conn_free(c, FRONT_ABORT_SHUTDOWN);
	}
	if (s->nconns == 0) {
		if (s->drain_done) {
			s->drain_done = NULL;
			done(arg);
		}
		return;
	}
	s->drain_timer = evtimer_new(s->base, drain_timeout_cb, s);
	if (s->drain_timer)
		evtimer_add(s->drain_timer, &tv);
}

size_t front_server_conns(const struct front_server *s)
{
	return s->nconns;
}

void front_server_free(struct front_server *s)
{
	if (!s)
		return;
	s->drain_done = NULL;
	while (s->conns)
		conn_free(s->conns, FRONT_ABORT_SHUTDOWN);
	listen_set_free(s->listen);
	if (s->drain_timer)
		event_free(s->drain_timer);
	SSL_CTX_free(s->tls);
	free(s);
}

void front_server_set_tls(struct front_server *s, SSL_CTX *ctx)
{
	if (ctx)
		SSL_CTX_up_ref(ctx);
	SSL_CTX_free(s->tls);
	s->tls = ctx;
}

/* ---- the API the proxy calls: flags and buffered writes only; the work
 * happens in conn_kick_cb on the next loop turn ---- */

const char *front_conn_peer(const struct front_conn *c)
{
	return c->peer;
}

void front_conn_read_body(struct front_conn *c)
{
	if (c->state != CONN_REQUEST)
		return;
	if (c->expect_continue && !c->continue_sent && !c->resp_started) {
		bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		c->continue_sent = 1;
	}
	if (!c->body_reading) {
		c->t_read = now_ms();
		body_clock_start(c);
	} else if (c->body_stop && c->t_pause) {
		c->t_body += now_ms() - c->t_pause; /* back-pressure is not the client's */
		c->t_read = now_ms();
		c->t_pause = 0;
	}
	c->body_reading = 1;
	c->body_stop = 0;
	conn_kick(c);
}

int front_conn_body_done(const struct front_conn *c)
{
	return c->body_done;
}

/* Writes a response head into out with one evbuffer_add (each add runs the
 * buffer's callbacks): built in a stack buffer, or a heap one when long.
 * Returns 0, or -1 when out of memory. */
static int send_head_lines(struct evbuffer *out, int status, const char *why,
			   const struct front_hdrs *hdrs, int64_t content_length,
			   int chunked, int close_it, int http10)
{
	char stack[4096];
	char *buf = stack, *w;
	size_t need = 128 + strlen(why);
	int rc = 0;

	for (size_t i = 0; hdrs && i < hdrs->n; i++)
		need += strlen(hdrs->v[i].name) + strlen(hdrs->v[i].value) + 4;
	if (need > sizeof(stack) && !(buf = malloc(need)))
		return -1;
	w = buf + sprintf(buf, "HTTP/1.1 %d ", status);
	w = mempcpy(w, why, strlen(why));
	w = mempcpy(w, "\r\n", 2);
	for (size_t i = 0; hdrs && i < hdrs->n; i++) {
		w = mempcpy(w, hdrs->v[i].name, strlen(hdrs->v[i].name));
		w = mempcpy(w, ": ", 2);
		w = mempcpy(w, hdrs->v[i].value, strlen(hdrs->v[i].value));
		w = mempcpy(w, "\r\n", 2);
	}
	if (content_length >= 0)
		w += sprintf(w, "Content-Length: %" PRId64 "\r\n", content_length);
	/* 128 bytes above cover the status line number, Content-Length,
	 * one of these lines and the blank line (at most 86) */
	if (chunked)
		w = mempcpy(w, "Transfer-Encoding: chunked\r\n", 28);
	if (close_it)
		w = mempcpy(w, "Connection: close\r\n", 19);
	else if (http10)
		w = mempcpy(w, "Connection: keep-alive\r\n", 24);
	w = mempcpy(w, "\r\n", 2);
	if (evbuffer_add(out, buf, (size_t)(w - buf)) < 0)
		rc = -1;
	if (buf != stack)
		free(buf);
	return rc;
}

int front_conn_send_head(struct front_conn *c, int status, const char *reason,
			 const struct front_hdrs *hdrs, int64_t content_length,
			 int no_body, int force_close)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	int close_it = force_close || !c->keep_alive || c->srv->draining;

	if (c->resp_started || c->state != CONN_REQUEST)
		return -1;
	conn_touch_write(c);
	/* "Expect: 100-continue" answered without "100 Continue": the client
	 * may or may not send its body now, and some (botocore) misread the
	 * next response on this connection; start afresh */
	if (c->expect_continue && !c->continue_sent)
		close_it = 1;
	if (!c->body_done && c->has_body) {
		/* the rest of the body must be read before the next request:
		 * only small known remainders are worth skipping */
		if (c->chunked || c->content_length < 0 ||
			 (uint64_t)c->content_length - c->body_received > c->srv->lim.discard_max)
			close_it = 1;
	}
	c->resp_started = 1;
	c->resp_no_body = no_body;
	c->resp_length = content_length;
	c->resp_sent = 0;
	c->resp_chunked = 0;
	if (!no_body && content_length < 0) {
		if (c->http10)
			close_it = 1;
		else
			c->resp_chunked = 1;
	}
	c->resp_close = close_it;
	return send_head_lines(out, status, reason ? reason : status_reason(status), hdrs,
			       content_length, c->resp_chunked, close_it, c->http10);
}

int front_conn_send_body(struct front_conn *c, const void *data, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	if (!c->resp_started || c->resp_ended || c->dead)
		return -1;
	conn_touch_write(c);
	if (c->resp_no_body || len == 0)
		return 0;
	if (c->resp_length >= 0 && c->resp_sent + (int64_t)len > c->resp_length)
		return -1;
	if (c->resp_chunked)
		evbuffer_add_printf(out, "%zx\r\n", len);
	evbuffer_add(out, data, len);
	if (c->resp_chunked)
		evbuffer_add(out, "\r\n", 2);
	c->resp_sent += (int64_t)len;
	return 0;
}

int front_conn_send_file(struct front_conn *c, int fd, int64_t offset, int64_t len)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	struct evbuffer_file_segment *seg;

	if (!c->resp_started || c->resp_ended || c->dead || c->resp_no_body ||
	    (c->resp_length >= 0 && c->resp_sent + len > c->resp_length) || len < 0) {
		close(fd);
		return -1;
	}
	if (len == 0) {
		close(fd);
		return 0;
	}
	seg = evbuffer_file_segment_new(fd, offset, len, EVBUF_FS_CLOSE_ON_FREE);
	if (!seg) {
		close(fd);
		return -1;
	}
	if (c->resp_chunked)
		evbuffer_add_printf(out, "%" PRIx64 "\r\n", (uint64_t)len);
	if (evbuffer_add_file_segment(out, seg, 0, len) < 0) {
		evbuffer_file_segment_free(seg);
		return -1;
	}
	evbuffer_file_segment_free(seg); /* the buffer holds its own reference */
	if (c->resp_chunked)
		evbuffer_add(out, "\r\n", 2);
	c->resp_sent += len;
	return 0;
}

void front_conn_send_end(struct front_conn *c)
{
	if (!c->resp_started || c->resp_ended)
		return;
	c->resp_ended = 1;
	if (c->resp_chunked)
		bufferevent_write(c->bev, "0\r\n\r\n", 5);
	else if (!c->resp_no_body && c->resp_length >= 0 && c->resp_sent < c->resp_length)
		c->resp_close = 1; /* truncated: the client must see the close */
	else if (!c->resp_no_body && c->resp_length < 0)
		c->resp_close = 1; /* close-delimited */
	conn_kick(c);
}

void front_conn_reply(struct front_conn *c, int status, const struct front_hdrs *hdrs,
		      const char *content_type, const void *body, size_t len,
		      int force_close)
{
	struct front_hdrs h = {0};
	const struct front_hdrs *use = hdrs;

	if (content_type) {
		for (size_t i = 0; hdrs && i < hdrs->n; i++)
			if (front_hdrs_add(&h, hdrs->v[i].name, hdrs->v[i].value) < 0)
				force_close = 1;
		if (front_hdrs_set(&h, "Content-Type", content_type) < 0)
			force_close = 1;
		use = &h;
	}
	if (front_conn_send_head(c, status, NULL, use, (int64_t)len, 0, force_close) == 0) {
		front_conn_send_body(c, body, len);
		front_conn_send_end(c);
	}
	front_hdrs_clear(&h);
}

void front_conn_abort(struct front_conn *c)
{
	c->req = NULL;
	c->req_released = 1;
	c->dead = 1;
	c->dead_why = FRONT_ABORT_CLIENT_GONE;
	conn_kick(c);
}

size_t front_conn_output_len(const struct front_conn *c)
{
	return conn_outlen(c);
}

void front_conn_want_drain(struct front_conn *c)
{
	c->want_drain = 1;
	conn_kick(c);
}

int front_conn_response_started(const struct front_conn *c)
{
	return c->resp_started;
}

void front_conn_request_done(struct front_conn *c)
{
	c->req = NULL;
	c->req_released = 1;
	c->want_drain = 0;
	if (c->state != CONN_REQUEST)
		return;
	if (!c->resp_started || !c->resp_ended) {
		/* the response is incomplete: nothing else can follow it */
		c->dead = 1;
		c->dead_why = FRONT_ABORT_CLIENT_GONE;
	} else if (c->resp_close || c->srv->draining) {
		conn_close_after_flush(c);
	} else if (c->body_done) {
		conn_next_request(c);
	} else {
		c->state = CONN_DISCARD;
		c->body_reading = 1;
		c->body_stop = 0;
		c->t_read = now_ms();
		body_clock_start(c);
	}
	conn_kick(c);
}
