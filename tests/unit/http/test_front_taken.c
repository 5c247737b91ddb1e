/* test_front_taken.c — front_parser_feed_taken and front_parser_body_left
 * (proxy/http/front.h): a Content-Length body whose bytes the caller
 * delivers itself. Scripted cases (feeds, takes, pauses, resumes) with the
 * exact status, consumed count and reported span {off, len, ended} of every
 * step, the span's bytes compared with the body, and a log of what reached
 * the callbacks (taken bytes never reach on_body, a taken end never calls
 * on_end); then a body taken in pieces of many sizes, with a pipelined
 * request after it. After on_head the head's final '\n' is still unread:
 * the first take after a head reports off 1 (a first version reported
 * that '\n' as body), and the '\n' counts against len <= body_left, so a
 * body offered whole with it is refused and takes two calls. Heads with a
 * bare CR, which libhttp-parser ended early (found by fuzz_front), are
 * refused; and so are chunked bodies whose framing has anything but CRLF
 * where libhttp-parser (not built strict) expects one, or a byte from 0x80
 * up in a chunk size (its hex table reads them as 0), fed in pieces of
 * every size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "http/front.h"

/* ---- what reached the callbacks ------------------------------------------ */

/* The log: "H METHOD TARGET;" per head, "<bytes>" for bytes through
 * on_body, "[bytes]" for spans the caller took (consecutive pieces of one
 * kind merge), "E;" for on_end, "e;" for a taken end. */
struct rec {
	char log[1024];
	char open;          /* '<' or '[' while a run of body bytes is open */
	unsigned body_calls;
};

static void rec_add(struct rec *r, const char *s, size_t len)
{
	size_t have = strlen(r->log);

	assert_true(have + len < sizeof(r->log));
	memcpy(r->log + have, s, len);
	r->log[have + len] = '\0';
}

static void rec_close(struct rec *r)
{
	if (r->open)
		rec_add(r, r->open == '<' ? ">" : "]", 1);
	r->open = 0;
}

static void rec_body(struct rec *r, char kind, const char *data, size_t len)
{
	if (r->open != kind) {
		rec_close(r);
		rec_add(r, &kind, 1);
		r->open = kind;
	}
	rec_add(r, data, len);
}

static int on_head(void *arg, struct front_msg *msg)
{
	struct rec *r = arg;

	rec_close(r);
	rec_add(r, "H ", 2);
	rec_add(r, msg->method, strlen(msg->method));
	rec_add(r, " ", 1);
	rec_add(r, msg->target, strlen(msg->target));
	rec_add(r, ";", 1);
	front_msg_free(msg);
	return 0;
}

static int on_body(void *arg, const char *data, size_t len)
{
	struct rec *r = arg;

	assert_true(len > 0);
	r->body_calls++;
	rec_body(r, '<', data, len);
	return 0;
}

static int on_end(void *arg)
{
	struct rec *r = arg;

	rec_close(r);
	rec_add(r, "E;", 2);
	return 0;
}

static struct front_parser *new_parser(struct rec *r)
{
	struct front_parser_cbs cbs = { on_head, on_body, on_end, r };
	struct front_limits lim;
	struct front_parser *p;

	memset(r, 0, sizeof(*r));
	front_limits_default(&lim);
	p = front_parser_new(&lim, &cbs);
	assert_non_null(p);
	return p;
}

/* ---- scripted cases ------------------------------------------------------ */

enum op { OP_DONE = 0, OP_FEED, OP_TAKE, OP_LEFT, OP_PAUSE, OP_RESUME, OP_STATUS };

#define ALL SIZE_MAX        /* offer every byte not consumed yet */
#define LEFTN (SIZE_MAX - 1) /* offer front_parser_body_left bytes */

struct step {
	enum op op;
	size_t n;                  /* FEED/TAKE: bytes offered; LEFT: body_left;
				    * STATUS: front_parser_error's status */
	enum front_parse_status st;
	size_t used;               /* *consumed */
	size_t off;                /* TAKE: the span reported ... */
	const char *body;          /* ... holds exactly these bytes (len = strlen) */
	int ended;
};

#define FEED(n_, st_, used_) { OP_FEED, (n_), FRONT_PARSE_##st_, (used_), 0, NULL, 0 }
#define TAKE(n_, st_, used_, off_, body_, ended_) \
	{ OP_TAKE, (n_), FRONT_PARSE_##st_, (used_), (off_), (body_), (ended_) }
#define LEFT(n_) { OP_LEFT, (n_), 0, 0, 0, NULL, 0 }
#define PAUSE { OP_PAUSE, 0, 0, 0, 0, NULL, 0 }
#define RESUME { OP_RESUME, 0, 0, 0, 0, NULL, 0 }
#define STATUS(n_) { OP_STATUS, (n_), 0, 0, 0, NULL, 0 }

/* Heads; a feed that holds a whole head consumes all of it but the final
 * '\n' (HEADLEN(h) - 1): libhttp-parser pauses on it. */
#define HEADLEN(h) (sizeof(h) - 1)
#define POST5 "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
#define POST3 "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"
#define POST0 "POST /z HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
#define POST1 "PUT /one HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n"
#define GETC "GET /c HTTP/1.1\r\nHost: x\r\n\r\n"
/* after a pause at an end, a pipelined GETC: its head, then its end */
#define THEN_GETC RESUME, FEED(ALL, PAUSED, HEADLEN(GETC) - 1), RESUME, FEED(ALL, PAUSED, 1)
#define CHUNKED "POST /k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
/* POST3 ended by CR and another byte, which libhttp-parser took for the LF */
#define POST3_CRZ "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\rZ"

static const struct {
	const char *name;
	const char *input;
	struct step steps[24];
	const char *log;
} cases[] = {
	{ "head and whole body in one buffer", POST5 "hello", {
		LEFT(0),
		TAKE(1, ERROR, 0, 0, "", 0),           /* not in a body yet */
		FEED(ALL, PAUSED, HEADLEN(POST5) - 1), /* on_head */
		LEFT(5),
		TAKE(3, PAUSED, 0, 0, "", 0),          /* paused after on_head */
		RESUME,
		LEFT(5),
		/* "\nhello" is 6 bytes, one more than body_left: refused whole */
		TAKE(ALL, ERROR, 0, 0, "", 0),
		TAKE(0, OK, 0, 0, "", 0),
		TAKE(5, OK, 5, 1, "hell", 0),
		LEFT(1),
		TAKE(1, PAUSED, 1, 0, "o", 1),
		LEFT(0),
		FEED(ALL, PAUSED, 0),                  /* paused as after on_end */
		RESUME,
		LEFT(0),
	  }, "H POST /b;[hello]e;" },
	{ "head alone, then the body byte by byte", POST5 "hello", {
		FEED(HEADLEN(POST5), PAUSED, HEADLEN(POST5) - 1),
		RESUME,
		TAKE(1, OK, 1, 0, "", 0),              /* the head's '\n' alone */
		LEFT(5),
		TAKE(1, OK, 1, 0, "h", 0),
		LEFT(4),
		TAKE(1, OK, 1, 0, "e", 0),
		TAKE(1, OK, 1, 0, "l", 0),
		TAKE(1, OK, 1, 0, "l", 0),
		LEFT(1),
		TAKE(1, PAUSED, 1, 0, "o", 1),
		LEFT(0),
	  }, "H POST /b;[hello]e;" },
	{ "head alone, then the body in odd pieces", POST5 "hello", {
		FEED(HEADLEN(POST5), PAUSED, HEADLEN(POST5) - 1),
		RESUME,
		TAKE(2, OK, 2, 1, "h", 0),
		LEFT(4),
		TAKE(3, OK, 3, 0, "ell", 0),
		TAKE(1, PAUSED, 1, 0, "o", 1),
	  }, "H POST /b;[hello]e;" },
	{ "a one-byte body", POST1 "x" GETC, {
		FEED(ALL, PAUSED, HEADLEN(POST1) - 1),
		RESUME,
		LEFT(1),
		TAKE(1, OK, 1, 0, "", 0),              /* '\n' fills the allowance */
		LEFT(1),
		TAKE(1, PAUSED, 1, 0, "x", 1),
		THEN_GETC,
	  }, "H PUT /one;[x]e;H GET /c;E;" },
	{ "body ends where a pipelined request starts", POST3 "abc" GETC, {
		FEED(ALL, PAUSED, HEADLEN(POST3) - 1),
		RESUME,
		TAKE(3, OK, 3, 1, "ab", 0),
		LEFT(1),
		/* the next request's bytes cannot be offered with the last one */
		TAKE(2, ERROR, 0, 0, "", 0),
		TAKE(1, PAUSED, 1, 0, "c", 1),
		LEFT(0),
		TAKE(1, ERROR, 0, 0, "", 0),           /* "G" is no body byte */
		FEED(ALL, PAUSED, 0),
		RESUME,
		FEED(ALL, PAUSED, HEADLEN(GETC) - 1),
		LEFT(0),
		RESUME,
		LEFT(0),
		TAKE(1, ERROR, 0, 0, "", 0),
		FEED(ALL, PAUSED, 1),
	  }, "H POST /p;[abc]e;H GET /c;E;" },
	{ "the same stream through on_body", POST3 "abc" GETC, {
		FEED(ALL, PAUSED, HEADLEN(POST3) - 1),
		RESUME,
		FEED(ALL, PAUSED, 4),                  /* "\nabc", on_end pauses */
		THEN_GETC,
	  }, "H POST /p;<abc>E;H GET /c;E;" },
	{ "Content-Length: 0", POST0 GETC, {
		FEED(ALL, PAUSED, HEADLEN(POST0) - 1),
		LEFT(0),
		RESUME,
		LEFT(0),
		TAKE(1, ERROR, 0, 0, "", 0),
		FEED(ALL, PAUSED, 1),                  /* '\n': on_end */
		THEN_GETC,
	  }, "H POST /z;E;H GET /c;E;" },
	{ "no Content-Length: no body to take", GETC GETC, {
		FEED(ALL, PAUSED, HEADLEN(GETC) - 1),
		LEFT(0),
		RESUME,
		LEFT(0),
		TAKE(1, ERROR, 0, 0, "", 0),
		FEED(ALL, PAUSED, 1),
		THEN_GETC,
	  }, "H GET /c;E;H GET /c;E;" },
	{ "more than body_left mid-body: refused, nothing consumed", POST5 "hello" GETC, {
		FEED(ALL, PAUSED, HEADLEN(POST5) - 1),
		RESUME,
		TAKE(3, OK, 3, 1, "he", 0),
		LEFT(3),
		TAKE(4, ERROR, 0, 0, "", 0),           /* "lloG" */
		TAKE(LEFTN, PAUSED, 3, 0, "llo", 1),
	  }, "H POST /b;[hello]e;" },
	{ "paused mid-body, resumed", POST5 "hello" GETC, {
		FEED(ALL, PAUSED, HEADLEN(POST5) - 1),
		RESUME,
		TAKE(2, OK, 2, 1, "h", 0),
		PAUSE,
		TAKE(4, PAUSED, 0, 0, "", 0),
		LEFT(4),
		FEED(1, PAUSED, 0),
		RESUME,
		TAKE(2, OK, 2, 0, "el", 0),
		PAUSE,
		PAUSE,                                 /* twice is once */
		RESUME,
		TAKE(2, PAUSED, 2, 0, "lo", 1),
		RESUME,
		FEED(ALL, PAUSED, HEADLEN(GETC) - 1),
	  }, "H POST /b;[hello]e;H GET /c;" },
	{ "taken, then the rest through on_body", POST5 "hello", {
		FEED(ALL, PAUSED, HEADLEN(POST5) - 1),
		RESUME,
		TAKE(3, OK, 3, 1, "he", 0),
		FEED(ALL, PAUSED, 3),
		LEFT(0),
	  }, "H POST /b;[he]<llo>E;" },
	{ "through on_body, then the rest taken", POST5 "hello", {
		FEED(ALL, PAUSED, HEADLEN(POST5) - 1),
		RESUME,
		FEED(3, OK, 3),
		LEFT(3),
		TAKE(LEFTN, PAUSED, 3, 0, "llo", 1),
	  }, "H POST /b;<he>[llo]e;" },
	{ "chunked: body_left is 0 throughout", CHUNKED "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" GETC, {
		FEED(ALL, PAUSED, HEADLEN(CHUNKED) - 1),
		LEFT(0),
		RESUME,
		LEFT(0),
		TAKE(1, ERROR, 0, 0, "", 0),
		FEED(6, OK, 6),                        /* "\n3\r\nab": inside a chunk */
		LEFT(0),
		TAKE(1, ERROR, 0, 0, "", 0),
		FEED(7, OK, 7),                        /* "c\r\n2\r\nd" */
		LEFT(0),
		FEED(ALL, PAUSED, 8),                  /* "e\r\n0\r\n\r\n" */
		LEFT(0),
		RESUME,
		FEED(ALL, PAUSED, HEADLEN(GETC) - 1),
	  }, "H POST /k;<abcde>E;H GET /c;" },
	/* found by fuzz_front (the taken span came after a 'Z' or a CR, not
	 * the head's '\n'): libhttp-parser took the byte after a CR for an LF */
	{ "a head ended by a bare CR: refused", POST3_CRZ "abc" GETC, {
		FEED(ALL, ERROR, 0),
		STATUS(400),
		LEFT(0),
	  }, "" },
	{ "a head ended by a bare CR, over two feeds", POST3_CRZ "abc" GETC, {
		FEED(HEADLEN(POST3_CRZ) - 1, OK, HEADLEN(POST3_CRZ) - 1),
		FEED(ALL, ERROR, 0),
		STATUS(400),
		TAKE(1, ERROR, 0, 0, "", 0),
	  }, "" },
	/* fencegate saw a Content-Length where a peer sees a bare CR in X */
	{ "a bare CR after an empty value: refused",
	  "POST /p HTTP/1.1\r\nHost: x\r\nX: \r\rContent-Length: 3\r\n\r\nabc", {
		FEED(ALL, ERROR, 0),
		STATUS(400),
	  }, "" },
	{ "bare CRs ending a head without an LF: refused",
	  "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nX: \r\r\r\rabc", {
		FEED(ALL, ERROR, 0),
		STATUS(400),
	  }, "" },
};

/* assert_int_equal naming the case and step */
#define STEP_EQ(a, b) do { \
	uintmax_t a_ = (a), b_ = (b); \
	if (a_ != b_) \
		fail_msg("%s, step %zu: %s is %ju, want %ju", cases[ci].name, si, #a, a_, b_); \
} while (0)

static void run_steps(size_t ci)
{
	const char *in = cases[ci].input;
	size_t inlen = strlen(in), pos = 0;
	struct rec r;
	struct front_parser *p = new_parser(&r);

	for (size_t si = 0; cases[ci].steps[si].op != OP_DONE; si++) {
		const struct step *s = &cases[ci].steps[si];
		size_t n = s->n == ALL ? inlen - pos :
			   s->n == LEFTN ? (size_t)front_parser_body_left(p) : s->n;
		size_t used = 12345;
		struct front_taken t = { 99, 99, 99 };
		enum front_parse_status st;

		switch (s->op) {
		case OP_FEED:
			STEP_EQ(n <= inlen - pos, 1);
			st = front_parser_feed(p, in + pos, n, &used);
			STEP_EQ(st, s->st);
			STEP_EQ(used, s->used);
			pos += used;
			break;
		case OP_TAKE:
			STEP_EQ(n <= inlen - pos, 1);
			st = front_parser_feed_taken(p, in + pos, n, &used, &t);
			STEP_EQ(st, s->st);
			STEP_EQ(used, s->used);
			if (st == FRONT_PARSE_ERROR)
				break; /* a caller's bug: nothing consumed, no span */
			STEP_EQ(t.off, s->off);
			STEP_EQ(t.len, strlen(s->body));
			STEP_EQ(t.ended, s->ended);
			STEP_EQ(t.off + t.len <= used, 1);
			/* before the span, only the end of the head */
			for (size_t i = 0; i < t.off; i++)
				STEP_EQ(in[pos + i], '\n');
			if (t.len) {
				STEP_EQ(memcmp(in + pos + t.off, s->body, t.len), 0);
				rec_body(&r, '[', in + pos + t.off, t.len);
			}
			if (t.ended) {
				rec_close(&r);
				rec_add(&r, "e;", 2);
			}
			pos += used;
			break;
		case OP_LEFT:
			STEP_EQ(front_parser_body_left(p), s->n);
			break;
		case OP_PAUSE:
			front_parser_pause(p);
			STEP_EQ(front_parser_paused(p), 1);
			break;
		case OP_RESUME:
			front_parser_resume(p);
			STEP_EQ(front_parser_paused(p), 0);
			break;
		case OP_STATUS:
			STEP_EQ(front_parser_error(p, NULL), s->n);
			break;
		case OP_DONE:
			break;
		}
	}
	rec_close(&r);
	if (strcmp(r.log, cases[ci].log) != 0)
		fail_msg("%s: log \"%s\", want \"%s\"", cases[ci].name, r.log, cases[ci].log);
	front_parser_free(p);
}

static void test_scripted(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(*cases); ci++)
		run_steps(ci);
}

/* ---- a body taken in pieces ---------------------------------------------- */

/* assert_int_equal naming the cycle and the first feed */
#define PIECE_EQ(a, b) do { \
	uintmax_t a_ = (a), b_ = (b); \
	if (a_ != b_) \
		fail_msg("cycle %zu, head alone %d, %zu body bytes taken: %s is %ju, want %ju", \
			 ci, alone, got, #a, a_, b_); \
} while (0)

/* A 37-byte body, then a pipelined GET, offered as a connection would:
 * the whole head first (alone, or with everything after it in the same
 * buffer), then the body in pieces following a cycle of sizes, each capped
 * at body_left. Every take consumes what it was offered and reports the
 * next body bytes, after the head's '\n' in the first one only; the GET
 * then parses. */
static void test_pieces(void **state)
{
	static const char body[] = "0123456789abcdefghijklmnopqrstuvwxyz!";
	static const struct {
		size_t n, v[4]; /* piece sizes, repeated */
	} cycles[] = {
		{ 1, { 1 } }, { 1, { 2 } }, { 1, { 3 } }, { 1, { 7 } }, { 1, { 36 } },
		{ 1, { 37 } }, { 1, { 38 } }, { 1, { 100 } },
		{ 4, { 1, 5, 2, 9 } }, { 2, { 4, 1 } }, { 2, { 13, 30 } },
	};
	const size_t blen = sizeof(body) - 1;
	char in[512];
	size_t headlen, inlen;

	(void)state;
	headlen = (size_t)snprintf(in, sizeof(in),
				   "PUT /k HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", blen);
	inlen = headlen + (size_t)snprintf(in + headlen, sizeof(in) - headlen, "%s%s", body, GETC);
	for (size_t ci = 0; ci < sizeof(cycles) / sizeof(*cycles); ci++)
		for (int alone = 0; alone < 2; alone++) {
			struct rec r;
			struct front_parser *p = new_parser(&r);
			struct front_taken t;
			size_t pos, got = 0, used, k = 0;

			PIECE_EQ(front_parser_feed(p, in, alone ? headlen : inlen, &used),
				 FRONT_PARSE_PAUSED);
			PIECE_EQ(used, headlen - 1);
			pos = used;
			front_parser_resume(p);
			while (got < blen) {
				uint64_t left = front_parser_body_left(p);
				size_t n = cycles[ci].v[k++ % cycles[ci].n];
				size_t nl = pos == headlen - 1; /* the head's '\n' comes first */

				PIECE_EQ(left, blen - got);
				if (n > left)
					n = (size_t)left;
				PIECE_EQ(front_parser_feed_taken(p, in + pos, n, &used, &t),
					 got + n - nl == blen ? FRONT_PARSE_PAUSED : FRONT_PARSE_OK);
				PIECE_EQ(used, n);
				PIECE_EQ(t.len, n - nl);
				PIECE_EQ(t.off, t.len ? nl : 0);
				if (t.len)
					PIECE_EQ(memcmp(in + pos + t.off, body + got, t.len), 0);
				got += t.len;
				PIECE_EQ(t.ended, got == blen);
				pos += used;
			}
			PIECE_EQ(pos, headlen + blen);
			PIECE_EQ(front_parser_body_left(p), 0);
			PIECE_EQ(r.body_calls, 0);
			front_parser_resume(p);
			PIECE_EQ(front_parser_feed(p, in + pos, inlen - pos, &used),
				 FRONT_PARSE_PAUSED);
			PIECE_EQ(used, HEADLEN(GETC) - 1);
			assert_string_equal(r.log, "H PUT /k;H GET /c;");
			front_parser_free(p);
		}
}

/* ---- chunked framing ----------------------------------------------------- */

/* A chunked body after CHUNKED, then GETC: accepted with exactly data
 * through on_body, or refused (400) having handed over no more than a
 * prefix of data. Each line ending that libhttp-parser does not check
 * itself, spoiled once. */
static const struct {
	const char *name;
	const char *body;
	int ok;
	const char *data;  /* ok: the body; refused: the most handed over */
} chunked[] = {
	{ "two chunks", "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n", 1, "hello, world" },
	{ "extensions and trailers", "5;a=b\r\nhello\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n", 1,
	  "hello" },
	{ "data holding CR and LF", "4\r\n\r\n\r\n\r\n0\r\n\r\n", 1, "\r\n\r\n" },
	{ "no body", "0\r\n\r\n", 1, "" },
	{ "sizes with leading zeros, upper case", "0A\r\n0123456789\r\n00\r\n\r\n", 1,
	  "0123456789" },
	/* libhttp-parser reads every byte from 0x80 up as the hex digit 0 */
	{ "a high byte before the size", "\xff" "3\r\nabc\r\n0\r\n\r\n", 0, "" },
	{ "a high byte in the size", "1\x80\r\n0123456789abcdef\r\n0\r\n\r\n", 0, "" },
	{ "a high byte before the next size", "1\r\na\r\n\x80" "1\r\nb\r\n0\r\n\r\n", 0, "a" },
	{ "a high byte before the last size", "1\r\na\r\n\x80" "0\r\n\r\n", 0, "a" },
	/* what libhttp-parser read as "hello": a peer may not */
	{ "data followed by two other bytes", "5\r\nhelloXY0\r\n\r\n", 0, "hello" },
	{ "data followed by CR and another byte", "5\r\nhello\rX0\r\n\r\n", 0, "hello" },
	{ "data followed by LF alone", "5\r\nhello\n0\r\n\r\n", 0, "hello" },
	{ "data followed by CR CR LF", "5\r\nhello\r\r\n0\r\n\r\n", 0, "hello" },
	{ "chunk size ended by CR and another byte", "5\rXhello\r\n0\r\n\r\n", 0, "" },
	{ "extension ended by CR and another byte", "5;a\rbhello\r\n0\r\n\r\n", 0, "" },
	{ "extension holding a bare LF", "5;a\nb\r\nhello\r\n0\r\n\r\n", 0, "" },
	{ "second chunk size ended by CR and another byte", "1\r\na\r\n1\rXb\r\n0\r\n\r\n", 0,
	  "a" },
	{ "last chunk ended by CR and another byte", "1\r\na\r\n0\rX\r\n", 0, "a" },
	{ "trailer ended by CR and another byte", "1\r\na\r\n0\r\nX: y\rZ\r\n\r\n", 0, "a" },
	{ "trailer ended by LF alone", "1\r\na\r\n0\r\nX: y\n\r\n", 0, "a" },
	{ "the last line's CR and another byte", "1\r\na\r\n0\r\n\rX", 0, "a" },
	/* found by fuzz_front: such a trailer clears libhttp-parser's chunked
	 * flag, which the guard first went by */
	{ "a trailer named Transfer-Encoding",
	  "1\r\na\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n", 1, "a" },
	{ "a trailer named Transfer-Encoding, then the last line's LF alone",
	  "1\r\na\r\n0\r\nTransfer-Encoding: chunked\r\n\n", 0, "a" },
};

/* Every case fed in pieces of every size (resumed at each pause), then
 * the verdict and what reached on_body. */
static void test_chunked_framing(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < sizeof(chunked) / sizeof(*chunked); ci++) {
		char in[256], want[300];
		size_t inlen = (size_t)snprintf(in, sizeof(in), CHUNKED "%s" GETC, chunked[ci].body);

		for (size_t piece = 1; piece <= inlen; piece++) {
			struct rec r;
			struct front_parser *p = new_parser(&r);
			enum front_parse_status st = FRONT_PARSE_OK;
			size_t pos = 0, used, dlen = strlen(chunked[ci].data);

			while (pos < inlen) {
				size_t n = inlen - pos < piece ? inlen - pos : piece;

				st = front_parser_feed(p, in + pos, n, &used);
				if (st == FRONT_PARSE_ERROR)
					break;
				if (st == FRONT_PARSE_PAUSED)
					front_parser_resume(p);
				pos += used;
			}
			rec_close(&r);
			if (chunked[ci].ok) {
				snprintf(want, sizeof(want), "H POST /k;%s%s%sE;H GET /c;E;",
					 dlen ? "<" : "", chunked[ci].data, dlen ? ">" : "");
				if (st == FRONT_PARSE_ERROR || strcmp(r.log, want) != 0)
					fail_msg("%s, pieces of %zu: log \"%s\", want \"%s\"",
						 chunked[ci].name, piece, r.log, want);
			} else {
				const char *reason, *rest = r.log + 10; /* after "H POST /k;" */
				size_t rl = strlen(r.log) >= 10 ? strlen(rest) : 0;

				if (st != FRONT_PARSE_ERROR || front_parser_error(p, &reason) != 400)
					fail_msg("%s, pieces of %zu: not refused", chunked[ci].name,
						 piece);
				/* nothing, or "<" a prefix of data ">" */
				if (strncmp(r.log, "H POST /k;", 10) != 0 ||
				    (rl && (rl < 3 || rest[0] != '<' || rest[rl - 1] != '>' ||
					    rl - 2 > dlen || memcmp(rest + 1, chunked[ci].data, rl - 2))))
					fail_msg("%s, pieces of %zu: handed over \"%s\", at most <%s>",
						 chunked[ci].name, piece, r.log, chunked[ci].data);
			}
			front_parser_free(p);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scripted),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_chunked_framing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
