/* fuzz_front.c — libFuzzer target for the request parser (front_parser).
 *
 * Feeds arbitrary bytes through front_parser_feed in chunks whose sizes
 * come from the input, pausing in body callbacks now and then and resuming
 * like the connection layer does. Checks the parser's promises: it never
 * consumes more than it was given, an error carries a status the front end
 * can answer, a head hands over a well-formed message.
 *
 * Then the same bytes through a second parser that takes every
 * Content-Length body as the connection layer does (conn_take_body):
 * front_parser_feed_taken whenever front_parser_body_left is not 0, in
 * pieces of another size capped at body_left, delivering the reported span
 * itself, ending the body when it says ended, pausing with
 * front_parser_pause now and then; front_parser_feed otherwise. Both must
 * see the same heads (method, target), the same body bytes per request,
 * the same ends, the same error and consume the same total; each take's
 * span must follow the contract (inside what was consumed, after nothing
 * but the head's end, body_left counting down by its length).
 *
 * And every chunked body a parser ended must be one a strict reader takes
 * (strict_chunked: CRLF wherever RFC 9112 7.1 puts one, nothing after
 * the last line), with the same data: libhttp-parser is not built strict,
 * and what it took for a CRLF a peer may not. No sockets. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/front.h"

/* What a parser handed over, in order: "H" method NUL target NUL per head,
 * "B" + 4-byte length + bytes per request body (pieces joined), "E" per
 * end. Two parsers that saw the same requests have equal logs. */
struct log {
	char *p;
	size_t len, cap;
	char *body;             /* the current request's body so far */
	size_t blen, bcap;
};

static void grow(char **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	*cap = need * 2 + 64;
	*p = realloc(*p, *cap);
	if (!*p)
		abort();
}

static void log_add(struct log *l, const void *s, size_t len)
{
	grow(&l->p, &l->cap, l->len + len);
	memcpy(l->p + l->len, s, len);
	l->len += len;
}

static void log_body(struct log *l, const char *data, size_t len)
{
	grow(&l->body, &l->bcap, l->blen + len);
	memcpy(l->body + l->blen, data, len);
	l->blen += len;
}

/* Writes the body gathered so far (if any) as one record. */
static void log_flush(struct log *l)
{
	uint32_t n = (uint32_t)l->blen;

	if (!l->blen)
		return;
	log_add(l, "B", 1);
	log_add(l, &n, sizeof(n));
	log_add(l, l->body, l->blen);
	l->blen = 0;
}

static void log_head(struct log *l, const struct front_msg *msg)
{
	log_flush(l);
	log_add(l, "H", 1);
	log_add(l, msg->method, strlen(msg->method) + 1);
	log_add(l, msg->target, strlen(msg->target) + 1);
}

static void log_end(struct log *l)
{
	log_flush(l);
	log_add(l, "E", 1);
}

struct fuzz_state {
	unsigned heads, ends;
	uint64_t body_bytes;
	unsigned body_calls;   /* in the current request */
	struct log log;
	int chunked;           /* the current request's body is */
	int head_seen, end_seen; /* in the step that just ran */
	char *ended;           /* the body of the request that just ended */
	size_t elen, ecap;
};

/* The strict reading of a chunked body: raw is the head's final '\n',
 * the chunks, the trailer lines and the last CRLF, nothing more; the data
 * goes to out. Extensions and trailer lines are any bytes but CR and LF.
 * Returns 0, or -1 for anything else. */
static int strict_chunked(const char *raw, size_t len, char **out, size_t *olen, size_t *ocap)
{
	size_t i = 1, start;
	uint64_t size;

	*olen = 0;
	if (len < 1 || raw[0] != '\n')
		return -1;
	do {
		if (i >= len || !isxdigit((unsigned char)raw[i]))
			return -1;
		for (size = 0; i < len && isxdigit((unsigned char)raw[i]); i++) {
			if (size > UINT64_MAX / 16 - 16)
				return -1;
			size = size * 16 + (uint64_t)(isdigit((unsigned char)raw[i]) ? raw[i] - '0' :
						      (tolower((unsigned char)raw[i]) - 'a' + 10));
		}
		while (i < len && raw[i] != '\r' && raw[i] != '\n')
			i++;
		if (i + 1 >= len || raw[i] != '\r' || raw[i + 1] != '\n')
			return -1;
		i += 2;
		if (size > len - i)
			return -1;
		if (!size)
			break;
		grow(out, ocap, *olen + size);
		memcpy(*out + *olen, raw + i, size);
		*olen += size;
		i += size;
		if (i + 1 >= len || raw[i] != '\r' || raw[i + 1] != '\n')
			return -1;
		i += 2;
	} while (size);
	do {  /* trailer lines, then the empty one */
		start = i;
		while (i < len && raw[i] != '\r' && raw[i] != '\n')
			i++;
		if (i + 1 >= len || raw[i] != '\r' || raw[i + 1] != '\n')
			return -1;
		i += 2;
	} while (i - 2 != start);
	return i == len ? 0 : -1;
}

static int on_head(void *arg, struct front_msg *msg)
{
	struct fuzz_state *st = arg;

	if (!msg->method || !msg->target || !msg->path || msg->path[0] == '\0')
		abort();
	if (msg->chunked && msg->content_length != -1)
		abort();
	if (front_hdrs_count(&msg->hdrs, "Content-Length") > 1)
		abort();
	st->heads++;
	st->body_calls = 0;
	st->chunked = msg->chunked;
	st->head_seen = 1;
	log_head(&st->log, msg);
	front_msg_free(msg);
	return 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	struct fuzz_state *st = arg;

	if (len == 0 || !data)
		abort();
	st->body_bytes += len;
	log_body(&st->log, data, len);
	/* pause every third call of a request: both parsers pause at the same
	 * bytes of a body they both get through on_body (chunked) */
	return (++st->body_calls % 3) == 0;
}

static int on_end(void *arg)
{
	struct fuzz_state *st = arg;

	st->ends++;
	grow(&st->ended, &st->ecap, st->log.blen);
	if (st->log.blen)
		memcpy(st->ended, st->log.body, st->log.blen);
	st->elen = st->log.blen;
	st->end_seen = 1;
	log_end(&st->log);
	return 0;
}

/* How a run ended. */
struct outcome {
	size_t consumed;
	int status;           /* front_parser_error's after FRONT_PARSE_ERROR, else 0 */
	int complete;         /* stopped by the input, not by the round limit */
};

/* One step of the taking parser on a Content-Length body, checked against
 * the contract: returns the status, *used the bytes consumed. */
static enum front_parse_status take_step(struct front_parser *p, struct fuzz_state *st,
					 const char *data, size_t n, size_t *used, unsigned *takes)
{
	uint64_t left = front_parser_body_left(p);
	struct front_taken t;
	enum front_parse_status rc;

	if (n > left)
		n = (size_t)left;
	rc = front_parser_feed_taken(p, data, n, used, &t);
	if (*used > n)
		abort();
	if (rc == FRONT_PARSE_ERROR)
		return rc;
	if (t.off + t.len > *used || (t.ended && *used != t.off + t.len))
		abort();
	if (rc == FRONT_PARSE_OK && *used != n)
		abort();
	for (size_t i = 0; i < t.off; i++)  /* before the body: the head's end */
		if (data[i] != '\n')
			abort();
	if (front_parser_body_left(p) != (t.ended ? 0 : left - t.len))
		abort();
	if (t.len) {
		st->body_bytes += t.len;
		log_body(&st->log, data + t.off, t.len);
	}
	if (t.ended) {
		st->ends++;
		log_end(&st->log);
	} else if (t.len && ++*takes % 4 == 0 && rc == FRONT_PARSE_OK) {
		/* the request stops reading for a while (on_body_buf said 1) */
		front_parser_pause(p);
		rc = FRONT_PARSE_PAUSED;
	}
	return rc;
}

/* Feeds data[0..size) in chunks of `chunk` bytes (Content-Length bodies in
 * pieces of `take` bytes through front_parser_feed_taken when take is not
 * 0), resuming after every pause. */
static struct outcome run(struct front_parser *p, struct fuzz_state *st,
			  const char *data, size_t size, size_t chunk, size_t take)
{
	struct outcome o = { 0, 0, 1 };
	unsigned rounds = 0, takes = 0;
	size_t raw_start = 0;     /* the current request's head's final '\n' */
	char *strict = NULL;
	size_t slen, scap = 0;

	while (o.consumed < size) {
		size_t n = size - o.consumed < chunk ? size - o.consumed : chunk;
		size_t used = 0;
		enum front_parse_status rc;

		if (rounds++ >= 100000) {
			o.complete = 0;
			break;
		}
		if (take && front_parser_body_left(p) > 0) {
			n = size - o.consumed < take ? size - o.consumed : take;
			rc = take_step(p, st, data + o.consumed, n, &used, &takes);
		} else {
			rc = front_parser_feed(p, data + o.consumed, n, &used);
		}
		if (used > n)
			abort();
		o.consumed += used;
		if (st->head_seen)
			raw_start = o.consumed; /* the head's pause leaves its '\n' */
		if (st->end_seen && st->chunked &&
		    (strict_chunked(data + raw_start, o.consumed - raw_start, &strict, &slen,
				    &scap) < 0 ||
		     slen != st->elen || (slen && memcmp(strict, st->ended, slen) != 0))) {
			fprintf(stderr, "a chunked body a strict reader does not take as it was "
				"(%zu bytes of framing and data, %zu handed over)\n",
				o.consumed - raw_start, st->elen);
			abort();
		}
		st->head_seen = st->end_seen = 0;
		if (rc == FRONT_PARSE_ERROR) {
			const char *reason = NULL;

			o.status = front_parser_error(p, &reason);
			if (o.status < 400 || o.status > 599 || !reason)
				abort();
			break;
		}
		if (rc == FRONT_PARSE_PAUSED)
			front_parser_resume(p);
		else if (used == 0)
			break;
	}
	log_flush(&st->log);
	free(strict);
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_state a = {0}, b = {0};
	struct front_parser_cbs cbs_a = { on_head, on_body, on_end, &a };
	struct front_parser_cbs cbs_b = { on_head, on_body, on_end, &b };
	struct front_limits lim;
	struct front_parser *pa = NULL, *pb = NULL;
	struct outcome oa, ob;
	size_t chunk;

	if (size < 1)
		return 0;
	front_limits_default(&lim);
	lim.header_bytes = 2048;
	lim.header_count = 20;
	lim.url_bytes = 512;
	chunk = (size_t)(data[0] % 64) + 1;
	data++;
	size--;
	pa = front_parser_new(&lim, &cbs_a);
	pb = front_parser_new(&lim, &cbs_b);
	if (!pa || !pb)
		goto out;
	oa = run(pa, &a, (const char *)data, size, chunk, 0);
	/* the pieces of a taken body: another size than the chunks */
	ob = run(pb, &b, (const char *)data, size, chunk, (chunk * 7) % 61 + 1);
	if (a.ends > a.heads || b.ends > b.heads)
		abort();
	if (oa.complete && ob.complete &&
	    (oa.consumed != ob.consumed || oa.status != ob.status || a.heads != b.heads ||
	     a.ends != b.ends || a.body_bytes != b.body_bytes || a.log.len != b.log.len ||
	     (a.log.len && memcmp(a.log.p, b.log.p, a.log.len) != 0))) {
		fprintf(stderr, "fed and taken differ: consumed %zu/%zu, status %d/%d, heads %u/%u, "
			"ends %u/%u, body bytes %llu/%llu, log %zu/%zu bytes\n",
			oa.consumed, ob.consumed, oa.status, ob.status, a.heads, b.heads,
			a.ends, b.ends, (unsigned long long)a.body_bytes,
			(unsigned long long)b.body_bytes, a.log.len, b.log.len);
		abort();
	}
out:
	front_parser_free(pa);
	front_parser_free(pb);
	free(a.log.p);
	free(a.log.body);
	free(a.ended);
	free(b.log.p);
	free(b.log.body);
	free(b.ended);
	return 0;
}
