/* upstream_parse.c — the upstream's response, parsed with libhttp-parser in
 * HTTP_RESPONSE mode: interim 1xx heads skipped (100 Continue ends an
 * Expect wait), the final head collected into a header list and handed to
 * on_head, body bytes with the transfer coding removed handed to on_body,
 * the framing (Content-Length, chunked, close-delimited, HEAD, 204/304)
 * left to the parser. Bytes on_body does not take are held until the
 * consumer resumes. No sockets, no timers: upstream.c feeds it. */
#include "upstream_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

static int str_append(struct up_str *s, const char *at, size_t len)
{
	if (s->len + len + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 128;
		char *np;

		while (cap < s->len + len + 1)
			cap *= 2;
		np = realloc(s->p, cap);
		if (!np)
			return -1;
		s->p = np;
		s->cap = cap;
	}
	memcpy(s->p + s->len, at, len);
	s->len += len;
	return 0;
}

static int parse_fail(struct upstream_xfer *x, enum upstream_result res, const char *why)
{
	if (!x->fail) {
		x->fail = res;
		snprintf(x->detail, sizeof(x->detail), "%s", why);
	}
	return -1;
}

/* A header's name and value are taken where they lie in the bytes being
 * parsed when each comes in one piece (the usual case), and copied into
 * field/value only when it comes in pieces or the bytes are about to go
 * (keep_refs, after each parser run). */
static int ref_keep(struct up_str *s, const char **ref, size_t *ref_len)
{
	int rc = 0;

	if (*ref) {
		s->len = 0;
		rc = str_append(s, *ref, *ref_len);
		*ref = NULL;
		*ref_len = 0;
	}
	return rc;
}

static int keep_refs(struct upstream_xfer *x)
{
	if (ref_keep(&x->field, &x->fref, &x->fref_len) < 0 ||
	    ref_keep(&x->value, &x->vref, &x->vref_len) < 0)
		return parse_fail(x, UPSTREAM_ERROR, "out of memory");
	return 0;
}

/* Appends a piece of the name or value: the first piece is referenced,
 * a second one makes it a copy. */
static int piece_add(struct up_str *s, const char **ref, size_t *ref_len,
		     const char *at, size_t len)
{
	if (!s->len && !*ref) {
		*ref = at;
		*ref_len = len;
		return 0;
	}
	if (ref_keep(s, ref, ref_len) < 0)
		return -1;
	return str_append(s, at, len);
}

static void refs_forget(struct upstream_xfer *x)
{
	x->fref = x->vref = NULL;
	x->fref_len = x->vref_len = 0;
	x->field.len = x->value.len = 0;
}

/* Adds the header collected in field/value to the list. */
static int flush_header(struct upstream_xfer *x)
{
	const char *f = x->fref ? x->fref : x->field.p;
	const char *v = x->vref ? x->vref : x->value.p;
	size_t flen = x->fref ? x->fref_len : x->field.len;
	size_t vlen = x->vref ? x->vref_len : x->value.len;

	x->in_value = 0;
	if (!flen)
		return 0;
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (front_hdrs_addn(&x->hdrs, f, flen, vlen ? v : "", vlen) < 0)
		return parse_fail(x, UPSTREAM_ERROR, "out of memory");
	refs_forget(x);
	return 0;
}

static int cb_message_begin(http_parser *hp)
{
	struct upstream_xfer *x = hp->data;

	front_hdrs_clear(&x->hdrs);
	refs_forget(x);
	x->in_value = 0;
	x->interim = 0;
	x->head_bytes = 0;
	return 0;
}

static int head_grow(struct upstream_xfer *x, size_t len)
{
	x->head_bytes += len;
	if (x->head_bytes > UP_HEAD_MAX)
		return parse_fail(x, UPSTREAM_BAD_RESPONSE, "response head too large");
	return 0;
}

static int cb_header_field(http_parser *hp, const char *at, size_t len)
{
	struct upstream_xfer *x = hp->data;

	if (x->head_seen)
		return 0; /* trailers: not relayed */
	if (head_grow(x, len) < 0 || (x->in_value && flush_header(x) < 0))
		return -1;
	if (piece_add(&x->field, &x->fref, &x->fref_len, at, len) < 0)
		return parse_fail(x, UPSTREAM_ERROR, "out of memory");
	return 0;
}

static int cb_header_value(http_parser *hp, const char *at, size_t len)
{
	struct upstream_xfer *x = hp->data;

	if (x->head_seen)
		return 0;
	if (head_grow(x, len) < 0)
		return -1;
	x->in_value = 1;
	if (piece_add(&x->value, &x->vref, &x->vref_len, at, len) < 0)
		return parse_fail(x, UPSTREAM_ERROR, "out of memory");
	return 0;
}

static int cb_headers_complete(http_parser *hp)
{
	struct upstream_xfer *x = hp->data;
	const char *why;
	int rc;

	if (x->in_value && flush_header(x) < 0)
		return -1;
	x->status = hp->status_code;
	if (x->status < 200) {
		x->interim = 1; /* 1xx: no body, the final head follows */
		return 0;
	}
	if (x->expect_wait) {
		/* a final answer instead of 100 Continue: the body is never
		 * sent, so the connection cannot carry another request */
		x->expect_wait = 0;
		x->body_done = 1;
		x->no_reuse = 1;
	}
	/* hop-by-hop fields go before anyone reads the head (front.h) */
	if (front_hdrs_drop_hop_by_hop(&x->hdrs, &why) < 0)
		return parse_fail(x, UPSTREAM_BAD_RESPONSE, why);
	x->head_seen = 1;
	up_xfer_arm(x);
	rc = x->ops.on_head(x->arg, x->status, &x->hdrs);
	if (x->dead)
		return -1;
	if (rc < 0 && !x->cancelled) /* cancelled and alive: drained */
		return parse_fail(x, UPSTREAM_ABORTED, "stopped by the response head callback");
	/* no body after HEAD, 204 or 304, whatever the head says (RFC 9112
	 * 6.3; the parser would read a chunked one) */
	return up_answer_bodyless(x);
}

/* Body bytes: taken, or held (and the parser paused) until resumed. */
static int cb_body(http_parser *hp, const char *at, size_t len)
{
	struct upstream_xfer *x = hp->data;
	int rc;

	if (!x->head_seen)
		return parse_fail(x, UPSTREAM_BAD_RESPONSE, "body without a final head");
	if (x->cancelled) {
		/* draining (upstream_cancel): dropped, up to a bound */
		x->drained += len;
		return x->drained > UP_DRAIN_MAX ?
			       parse_fail(x, UPSTREAM_ABORTED, "a cancelled answer too long to drain") : 0;
	}
	rc = x->ops.on_body(x->arg, at, len);
	if (x->dead)
		return -1;
	if (rc < 0)
		return parse_fail(x, UPSTREAM_ABORTED, "stopped by the response body callback");
	if (rc > 0) {
		if (!x->held)
			x->held = evbuffer_new();
		if (!x->held || evbuffer_add(x->held, at, len) < 0)
			return parse_fail(x, UPSTREAM_ERROR, "out of memory");
		x->recv_paused = 1;
		up_xfer_arm(x);
		http_parser_pause(hp, 1);
	}
	return 0;
}

static int cb_message_complete(http_parser *hp)
{
	struct upstream_xfer *x = hp->data;

	if (x->interim) {
		x->interim = 0;
		if (x->status == 100 && x->expect_wait)
			x->expect_wait = 0; /* upstream.c sends the body now */
		front_hdrs_clear(&x->hdrs);
		return 0;
	}
	x->complete = 1;
	if (!http_should_keep_alive(hp))
		x->no_reuse = 1;
	http_parser_pause(hp, 1); /* bytes after the response are not ours */
	return 0;
}

static const http_parser_settings parser_settings = {
	.on_message_begin = cb_message_begin,
	.on_header_field = cb_header_field,
	.on_header_value = cb_header_value,
	.on_headers_complete = cb_headers_complete,
	.on_body = cb_body,
	.on_message_complete = cb_message_complete,
};

void up_parse_reset(struct upstream_xfer *x)
{
	http_parser_init(&x->hp, HTTP_RESPONSE);
	x->hp.data = x;
	front_hdrs_clear(&x->hdrs);
	refs_forget(x);
	x->in_value = x->interim = x->complete = x->got_bytes = x->eof_seen = 0;
	x->head_bytes = 0;
	x->status = 0;
}

/* The parser's verdict on what it was fed. */
static enum up_feed feed_result(struct upstream_xfer *x)
{
	enum http_errno err = HTTP_PARSER_ERRNO(&x->hp);

	if (x->dead)
		return UP_FEED_DEAD;
	if (x->fail)
		return UP_FEED_FAILED;
	if (err == HPE_PAUSED)
		return x->complete ? UP_FEED_DONE : UP_FEED_PAUSED;
	if (err != HPE_OK) {
		parse_fail(x, UPSTREAM_BAD_RESPONSE, http_errno_description(err));
		return UP_FEED_FAILED;
	}
	if (x->hp.upgrade) {
		parse_fail(x, UPSTREAM_BAD_RESPONSE, "unrequested protocol upgrade");
		return UP_FEED_FAILED;
	}
	return UP_FEED_MORE;
}

enum up_feed up_parse_feed(struct upstream_xfer *x, struct evbuffer *in, int eof)
{
	enum up_feed r;

	if (x->recv_paused)
		return UP_FEED_PAUSED;
	if (x->complete)
		return UP_FEED_DONE;
	while (evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec v;
		size_t used;

		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
			break;
		x->got_bytes = 1;
		x->depth++;
		used = http_parser_execute(&x->hp, &parser_settings, v.iov_base, v.iov_len);
		x->depth--;
		if (x->dead)
			return UP_FEED_DEAD;
		if (keep_refs(x) < 0)
			return UP_FEED_FAILED; /* before the bytes they point into go */
		evbuffer_drain(in, used);
		r = feed_result(x);
		if (r != UP_FEED_MORE)
			return r;
		if (used < v.iov_len) {
			parse_fail(x, UPSTREAM_BAD_RESPONSE, "response not parsed to its end");
			return UP_FEED_FAILED;
		}
	}
	if (!eof)
		return UP_FEED_MORE;
	x->depth++;
	http_parser_execute(&x->hp, &parser_settings, NULL, 0);
	x->depth--;
	if (HTTP_PARSER_ERRNO(&x->hp) == HPE_INVALID_EOF_STATE)
		parse_fail(x, UPSTREAM_BAD_RESPONSE, "connection closed before the response ended");
	r = feed_result(x);
	if (r == UP_FEED_FAILED || r == UP_FEED_DEAD || r == UP_FEED_DONE)
		return r;
	parse_fail(x, UPSTREAM_BAD_RESPONSE, x->got_bytes ?
		   "connection closed before the response ended" :
		   "connection closed without a response");
	return UP_FEED_FAILED;
}

enum up_feed up_parse_flush_held(struct upstream_xfer *x)
{
	size_t len = x->held ? evbuffer_get_length(x->held) : 0;
	int rc;

	if (len) {
		x->depth++;
		rc = x->ops.on_body(x->arg, (const char *)evbuffer_pullup(x->held, -1), len);
		x->depth--;
		if (x->dead)
			return UP_FEED_DEAD;
		if (rc < 0) {
			parse_fail(x, UPSTREAM_ABORTED, "stopped by the response body callback");
			return UP_FEED_FAILED;
		}
		if (rc > 0)
			return UP_FEED_PAUSED;
		evbuffer_drain(x->held, len);
	}
	x->recv_paused = 0;
	if (HTTP_PARSER_ERRNO(&x->hp) == HPE_PAUSED && !x->complete)
		http_parser_pause(&x->hp, 0);
	return UP_FEED_MORE;
}

void up_parse_clear(struct upstream_xfer *x)
{
	front_hdrs_clear(&x->hdrs);
	free(x->field.p);
	free(x->value.p);
	x->field = (struct up_str){0};
	x->value = (struct up_str){0};
	x->fref = x->vref = NULL;
	x->fref_len = x->vref_len = 0;
	if (x->held)
		evbuffer_free(x->held);
	x->held = NULL;
}
