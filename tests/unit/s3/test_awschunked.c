/* test_awschunked.c — proxy/s3/awschunked.c: the two aws-chunked worked examples
 * of the S3 docs (tests/testdata/sigv4/s3-doc-examples.json, override
 * with FENCE_SIGV4_TESTDATA; missing data fails), fed whole, byte by byte
 * and in random splits; a small body at every split position; the unsigned
 * trailer form with checksums computed independently (python zlib/hashlib);
 * and every error: tampering, truncation, bad sizes, oversize lines, length
 * and checksum mismatches. The safety property is checked throughout: the
 * final decoded byte is never emitted unless the whole body verified. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "s3/awschunked.h"
#include "wire/sigv4.h"

#define TESTDATA_DEFAULT "tests/testdata/sigv4"
#define DOC_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DOC_DATE   "20130524T000000Z"
#define DOC_SCOPE  "20130524/us-east-1/s3/aws4_request"

static cJSON *doc;

/* ---- helpers ----------------------------------------------------------------- */

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* Decoded output, with a switch to make the callback fail. */
struct sink {
	struct buf out;
	int fail;
};

static int sink_data(void *arg, const char *data, size_t len)
{
	struct sink *s = arg;

	assert_true(len > 0);
	if (s->fail)
		return -1;
	buf_add(&s->out, data, len);
	return 0;
}

static unsigned char doc_key[32];

static const cJSON *doc_case(const char *name)
{
	const cJSON *c;

	assert_non_null(doc);
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
		const cJSON *n = cJSON_GetObjectItem(c, "name");

		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return c;
	}
	fail_msg("case %s not in s3-doc-examples.json", name);
	return NULL;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	if (!cJSON_IsString(v))
		fail_msg("missing string %s", key);
	return v->valuestring;
}

/* The wire body of a chunked doc case, rebuilt from its chunk list. */
static void doc_body(const cJSON *c, struct buf *body)
{
	const cJSON *ch;
	const cJSON *trailer = cJSON_GetObjectItem(c, "trailer");

	cJSON_ArrayForEach(ch, cJSON_GetObjectItem(c, "chunks")) {
		int size = cJSON_GetObjectItem(ch, "size")->valueint;
		char *data = malloc((size_t)size + 1);

		assert_non_null(data);
		memset(data, jstr(ch, "byte")[0], (size_t)size);
		buf_adds(body, jstr(ch, "chunk_header_line"));
		buf_adds(body, "\r\n");
		if (size > 0) {
			buf_add(body, data, (size_t)size);
			buf_adds(body, "\r\n");
		}
		free(data);
	}
	if (trailer) {
		const char *canon = jstr(trailer, "canonical_trailer");

		/* the canonical trailer is "name:value\n": on the wire CRLF */
		buf_add(body, canon, strlen(canon) - 1);
		buf_adds(body, "\r\nx-amz-trailer-signature:");
		buf_adds(body, jstr(trailer, "signature"));
		buf_adds(body, "\r\n");
	}
	buf_adds(body, "\r\n");
}

static struct awschunked_params doc_params(const cJSON *c)
{
	struct awschunked_params p = {
		.mode = cJSON_GetObjectItem(c, "trailer") ? AWSCHUNKED_SIGNED_TRAILER
							  : AWSCHUNKED_SIGNED,
		.signing_key = doc_key,
		.amz_date = DOC_DATE,
		.scope = DOC_SCOPE,
		.seed_signature = jstr(c, "seed_signature"),
		.decoded_length = 66560,
		.trailer_name = cJSON_GetObjectItem(c, "trailer") ?
				"x-amz-checksum-crc32c" : NULL,
	};
	return p;
}

/* Feeds body cut at the given positions (ascending, within len), then
 * finishes. Returns the final status; *sink receives the output. */
static enum awschunked_status run_split(const struct awschunked_params *p,
					const char *body, size_t len,
					const size_t *cuts, size_t ncuts,
					struct sink *sink, int *status, const char **code)
{
	struct awschunked *d = awschunked_new(p, sink_data, sink);
	enum awschunked_status rc = AWSCHUNKED_MORE;
	size_t i, at = 0;

	assert_non_null(d);
	sink->out.len = 0;
	for (i = 0; i <= ncuts && rc == AWSCHUNKED_MORE; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		rc = awschunked_feed(d, body + at, end - at);
		assert_true(rc == AWSCHUNKED_MORE || rc == AWSCHUNKED_ERROR);
		at = end;
	}
	if (rc == AWSCHUNKED_MORE)
		rc = awschunked_finish(d);
	awschunked_error(d, status, code, NULL);
	if (rc == AWSCHUNKED_DONE)
		assert_int_equal(awschunked_decoded(d), (int64_t)sink->out.len);
	awschunked_free(d);
	return rc;
}

static enum awschunked_status run_whole(const struct awschunked_params *p,
					const char *body, size_t len, struct sink *sink,
					int *status, const char **code)
{
	return run_split(p, body, len, NULL, 0, sink, status, code);
}

static void assert_all_a(const struct buf *b, size_t n)
{
	size_t i;

	assert_int_equal(b->len, n);
	for (i = 0; i < n; i++)
		if (b->p[i] != 'a')
			fail_msg("decoded byte %zu is %d", i, b->p[i]);
}

/* ---- the S3 documentation examples -------------------------------------------- */

static void doc_example(const char *name, size_t expect_len)
{
	const cJSON *c = doc_case(name);
	struct awschunked_params p = doc_params(c);
	struct buf body = { 0 };
	struct sink sink = { 0 };
	int status = 0;
	const char *code = NULL;

	doc_body(c, &body);
	if (expect_len)
		assert_int_equal(body.len, expect_len); /* the page's Content-Length */
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code),
			 AWSCHUNKED_DONE);
	assert_all_a(&sink.out, 66560);
	free(sink.out.p);
	free(body.p);
}

static void test_doc_streaming_signed(void **state)
{
	(void)state;
	doc_example("put-object-aws-chunked", 66824);
}

static void test_doc_streaming_signed_trailer(void **state)
{
	(void)state;
	/* verifies the chunk chain, the trailer signature and the crc32c */
	doc_example("put-object-aws-chunked-signed-trailer", 0);
}

static void test_doc_byte_by_byte_and_random_splits(void **state)
{
	const char *names[] = { "put-object-aws-chunked",
				"put-object-aws-chunked-signed-trailer" };
	size_t k, round, i;

	(void)state;
	srand(12345);
	for (k = 0; k < 2; k++) {
		const cJSON *c = doc_case(names[k]);
		struct awschunked_params p = doc_params(c);
		struct buf body = { 0 };
		size_t *cuts;

		doc_body(c, &body);
		cuts = calloc(body.len, sizeof(*cuts));
		assert_non_null(cuts);
		/* byte by byte */
		for (i = 0; i < body.len; i++)
			cuts[i] = i + 1;
		{
			struct sink sink = { 0 };
			int status;
			const char *code;

			assert_int_equal(run_split(&p, body.p, body.len, cuts, body.len - 1,
						   &sink, &status, &code), AWSCHUNKED_DONE);
			assert_all_a(&sink.out, 66560);
			free(sink.out.p);
		}
		/* 40 random splittings into up to 30 pieces */
		for (round = 0; round < 40; round++) {
			struct sink sink = { 0 };
			size_t ncuts = (size_t)rand() % 30, at = 0;
			int status;
			const char *code;

			for (i = 0; i < ncuts; i++) {
				at += (size_t)rand() % (body.len / 8);
				if (at > body.len)
					at = body.len;
				cuts[i] = at;
			}
			assert_int_equal(run_split(&p, body.p, body.len, cuts, ncuts,
						   &sink, &status, &code), AWSCHUNKED_DONE);
			assert_all_a(&sink.out, 66560);
			free(sink.out.p);
		}
		free(cuts);
		free(body.p);
	}
}

static void test_doc_tampered(void **state)
{
	const cJSON *c = doc_case("put-object-aws-chunked");
	struct awschunked_params p = doc_params(c);
	struct buf body = { 0 };
	struct sink sink = { 0 };
	size_t where[] = { 100, 66000, 66700 }; /* chunk 1, chunk 2, last sig */
	size_t i;
	int status;
	const char *code;

	(void)state;
	doc_body(c, &body);
	for (i = 0; i < 3; i++) {
		char *copy = malloc(body.len);

		assert_non_null(copy);
		memcpy(copy, body.p, body.len);
		if (i < 2)
			copy[where[i]] = 'b';
		else
			copy[body.len - 10] ^= 1; /* a hex digit of the zero chunk's signature */
		sink.out.len = 0;
		assert_int_equal(run_whole(&p, copy, body.len, &sink, &status, &code),
				 AWSCHUNKED_ERROR);
		assert_int_equal(status, 403);
		assert_string_equal(code, "SignatureDoesNotMatch");
		assert_true(sink.out.len < 66560);
		free(copy);
	}
	/* a wrong seed signature breaks the first chunk */
	p.seed_signature = "0000000000000000000000000000000000000000000000000000000000000000";
	sink.out.len = 0;
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code),
			 AWSCHUNKED_ERROR);
	assert_string_equal(code, "SignatureDoesNotMatch");
	assert_int_equal(sink.out.len, 65535); /* never the last byte of chunk 1 */
	free(sink.out.p);
	free(body.p);
}

static void test_doc_tampered_trailer(void **state)
{
	const cJSON *c = doc_case("put-object-aws-chunked-signed-trailer");
	struct awschunked_params p = doc_params(c);
	struct buf body = { 0 };
	struct sink sink = { 0 };
	char *at;
	int status;
	const char *code;

	(void)state;
	doc_body(c, &body);
	/* the checksum value is covered by the trailer signature */
	at = strstr(body.p, "sOO8/Q==");
	assert_non_null(at);
	at[0] = 't';
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code),
			 AWSCHUNKED_ERROR);
	assert_int_equal(status, 403);
	assert_string_equal(code, "SignatureDoesNotMatch");
	assert_int_equal(sink.out.len, 66559);
	free(sink.out.p);
	free(body.p);
}

static void test_doc_length_mismatch(void **state)
{
	const cJSON *c = doc_case("put-object-aws-chunked");
	struct awschunked_params p = doc_params(c);
	struct buf body = { 0 };
	struct sink sink = { 0 };
	int status;
	const char *code;

	(void)state;
	doc_body(c, &body);
	p.decoded_length = 66559;
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code),
			 AWSCHUNKED_ERROR);
	assert_string_equal(code, "InvalidChunkSizeError");
	p.decoded_length = 66561;
	sink.out.len = 0;
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code),
			 AWSCHUNKED_ERROR);
	assert_int_equal(status, 400);
	assert_string_equal(code, "IncompleteBody");
	assert_int_equal(sink.out.len, 66559);
	free(sink.out.p);
	free(body.p);
}

/* ---- a small signed body, built with wire/sigv4.c ------------------------------ */

#define SMALL_SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"

/* "hello" + "wor" + "ld!" in signed chunks; with_trailer adds a crc32
 * trailer and its signature. */
static void small_signed_body(struct buf *b, int with_trailer)
{
	const char *pieces[] = { "hello", "wor", "ld!", "" };
	char prev[65], sig[65], hash[65];
	size_t i;

	memcpy(prev, SMALL_SEED, 65);
	for (i = 0; i < 4; i++) {
		char line[128];
		size_t n = strlen(pieces[i]);

		sigv4_sha256_hex(pieces[i], n, hash);
		sigv4_chunk_signature(doc_key, DOC_DATE, DOC_SCOPE, prev, hash, sig);
		snprintf(line, sizeof(line), "%zx;chunk-signature=%s\r\n", n, sig);
		buf_adds(b, line);
		if (n) {
			buf_adds(b, pieces[i]);
			buf_adds(b, "\r\n");
		}
		memcpy(prev, sig, 65);
	}
	if (with_trailer) {
		/* python3: base64(zlib.crc32(b"helloworld!").to_bytes(4,"big")) */
		const char *canon = "x-amz-checksum-crc32:" "NvXLpg==" "\n";

		sigv4_sha256_hex(canon, strlen(canon), hash);
		sigv4_trailer_signature(doc_key, DOC_DATE, DOC_SCOPE, prev, hash, sig);
		buf_adds(b, "x-amz-checksum-crc32:NvXLpg==\r\nx-amz-trailer-signature:");
		buf_adds(b, sig);
		buf_adds(b, "\r\n");
	}
	buf_adds(b, "\r\n");
}

static struct awschunked_params small_params(int with_trailer)
{
	struct awschunked_params p = {
		.mode = with_trailer ? AWSCHUNKED_SIGNED_TRAILER : AWSCHUNKED_SIGNED,
		.signing_key = doc_key, .amz_date = DOC_DATE, .scope = DOC_SCOPE,
		.seed_signature = SMALL_SEED, .decoded_length = 11,
		.trailer_name = with_trailer ? "x-amz-checksum-crc32" : NULL,
	};
	return p;
}

static void test_small_every_split(void **state)
{
	int t;

	(void)state;
	for (t = 0; t < 2; t++) {
		struct awschunked_params p = small_params(t);
		struct buf body = { 0 };
		size_t a, b;

		small_signed_body(&body, t);
		/* every cut a, and a second cut b up to 8 bytes later (so every
		 * CRLF, size and signature is also split into three pieces) */
		for (a = 0; a <= body.len; a++) {
			for (b = a; b <= body.len && b <= a + 8; b++) {
				struct sink sink = { 0 };
				size_t cuts[2] = { a, b };
				int status;
				const char *code;

				if (run_split(&p, body.p, body.len, cuts, 2, &sink, &status,
					      &code) != AWSCHUNKED_DONE)
					fail_msg("trailer=%d split %zu/%zu: %s", t, a, b, code);
				assert_int_equal(sink.out.len, 11);
				assert_memory_equal(sink.out.p, "helloworld!", 11);
				free(sink.out.p);
			}
		}
		free(body.p);
	}
}

static void test_small_every_truncation(void **state)
{
	int t;

	(void)state;
	for (t = 0; t < 2; t++) {
		struct awschunked_params p = small_params(t);
		struct buf body = { 0 };
		size_t n;

		small_signed_body(&body, t);
		for (n = 0; n < body.len; n++) {
			struct sink sink = { 0 };
			enum awschunked_status rc;
			int status;
			const char *code;

			rc = run_whole(&p, body.p, n, &sink, &status, &code);
			/* tolerated: only the final CRLF missing after a trailer */
			if (t && n == body.len - 2) {
				assert_int_equal(rc, AWSCHUNKED_DONE);
				assert_int_equal(sink.out.len, 11);
			} else {
				if (rc != AWSCHUNKED_ERROR)
					fail_msg("trailer=%d truncated at %zu accepted", t, n);
				assert_int_equal(status, 400);
				assert_true(sink.out.len < 11); /* never the whole body */
				if (strcmp(code, "IncompleteBody") != 0)
					fail_msg("truncated at %zu: %s", n, code);
			}
			free(sink.out.p);
		}
		free(body.p);
	}
}

static void test_small_data_after_end(void **state)
{
	struct awschunked_params p = small_params(0);
	struct buf body = { 0 };
	struct sink sink = { 0 };
	int status;
	const char *code;

	(void)state;
	small_signed_body(&body, 0);
	buf_adds(&body, "x");
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code),
			 AWSCHUNKED_ERROR);
	assert_int_equal(sink.out.len, 10);
	free(sink.out.p);
	free(body.p);
}

static void test_small_emit_failure(void **state)
{
	struct awschunked_params p = small_params(0);
	struct buf body = { 0 };
	struct sink sink = { .fail = 1 };
	int status;
	const char *code;

	(void)state;
	small_signed_body(&body, 0);
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code),
			 AWSCHUNKED_ERROR);
	assert_int_equal(status, 500);
	assert_string_equal(code, "InternalError");
	free(body.p);
}

static void test_trailer_in_plain_signed_mode(void **state)
{
	struct awschunked_params p = small_params(0);
	struct buf body = { 0 };
	struct sink sink = { 0 };
	int status;
	const char *code;

	(void)state;
	small_signed_body(&body, 0);
	body.len -= 2; /* drop the final CRLF, add a trailer */
	buf_adds(&body, "x-amz-checksum-crc32:NvXLpg==\r\n\r\n");
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code),
			 AWSCHUNKED_ERROR);
	assert_string_equal(code, "MalformedTrailerError");
	free(sink.out.p);
	free(body.p);
}

/* ---- chunk header syntax --------------------------------------------------------- */

static void expect_error(const struct awschunked_params *p, const char *body,
			 size_t len, int want_status, const char *want_code)
{
	struct sink sink = { 0 };
	int status;
	const char *code;

	if (run_whole(p, body, len, &sink, &status, &code) != AWSCHUNKED_ERROR)
		fail_msg("accepted: %.80s", body);
	assert_int_equal(status, want_status);
	if (strcmp(code, want_code) != 0)
		fail_msg("%.80s: got %s, want %s", body, code, want_code);
	free(sink.out.p);
}

static void test_bad_chunk_headers(void **state)
{
	struct awschunked_params sp = small_params(0);
	struct awschunked_params up = {
		.mode = AWSCHUNKED_UNSIGNED_TRAILER, .decoded_length = -1,
	};
	const char *sig = ";chunk-signature=" SMALL_SEED;
	const char *bad_signed[] = {
		"zz", "-1", " 5", "5 ", "0x5", "", "5;chunk-signature=abc",
		"5;chunk-signature=" SMALL_SEED "0", "5;chunk-signatur=" SMALL_SEED,
		"5", "1000000000000000",
	};
	const char *bad_unsigned[] = { "zz", "", " 5", "+5", "5x",
				       "10000000000000000" };
	char line[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_signed) / sizeof(*bad_signed); i++) {
		snprintf(line, sizeof(line), "%s\r\nhello\r\n", bad_signed[i]);
		expect_error(&sp, line, strlen(line), 400, "InvalidChunkSizeError");
	}
	for (i = 0; i < sizeof(bad_unsigned) / sizeof(*bad_unsigned); i++) {
		snprintf(line, sizeof(line), "%s\r\nhello\r\n", bad_unsigned[i]);
		expect_error(&up, line, strlen(line), 400, "InvalidChunkSizeError");
	}
	/* LF without CR; a CR inside the line */
	snprintf(line, sizeof(line), "5%s\nhello\r\n", sig);
	expect_error(&sp, line, strlen(line), 400, "InvalidChunkSizeError");
	expect_error(&up, "5\r\r\nhello\r\n", 11, 400, "InvalidChunkSizeError");
	/* data longer than the size says */
	expect_error(&up, "3\r\nhello\r\n", 10, 400, "InvalidChunkSizeError");
	/* a NUL in the header line */
	expect_error(&up, "5\0\r\nhello\r\n", 11, 400, "InvalidChunkSizeError");
	/* a size over x-amz-decoded-content-length is refused before its data */
	up.decoded_length = 4;
	expect_error(&up, "5\r\n", 3, 400, "InvalidChunkSizeError");
}

static void test_oversize_lines(void **state)
{
	struct awschunked_params up = {
		.mode = AWSCHUNKED_UNSIGNED_TRAILER, .decoded_length = -1,
		.trailer_name = "x-amz-checksum-crc32",
	};
	struct buf body = { 0 };
	size_t i;

	(void)state;
	/* a header line without end: refused once past 4 KiB */
	for (i = 0; i < AWSCHUNKED_LINE_MAX + 10; i++)
		buf_adds(&body, "0");
	expect_error(&up, body.p, body.len, 400, "InvalidChunkSizeError");
	/* a 4 KiB line of zeros with CRLF is fine as a size (0) */
	body.len = 0;
	for (i = 0; i < AWSCHUNKED_LINE_MAX - 2; i++)
		buf_adds(&body, "0");
	buf_adds(&body, "\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n");
	{
		struct sink sink = { 0 };
		int status;
		const char *code;

		assert_int_equal(run_whole(&up, body.p, body.len, &sink, &status, &code),
				 AWSCHUNKED_DONE);
	}
	/* trailer lines totalling over 16 KiB */
	body.len = 0;
	buf_adds(&body, "0\r\n");
	for (i = 0; i < 20; i++) {
		char pad[1100];

		memset(pad, 'v', sizeof(pad) - 1);
		pad[sizeof(pad) - 1] = '\0';
		buf_adds(&body, "x-amz-checksum-crc32:");
		buf_adds(&body, pad);
		buf_adds(&body, "\r\n");
	}
	buf_adds(&body, "\r\n");
	expect_error(&up, body.p, body.len, 400, "MalformedTrailerError");
	free(body.p);
}

/* ---- STREAMING-UNSIGNED-PAYLOAD-TRAILER and checksums ------------------------------ */

/* Expected values from python3: base64 of the big-endian digest of
 * b"hello world" (zlib.crc32, hashlib.sha1/sha256; crc32c and crc64nvme
 * by a bitwise reference implementation, checked on "123456789" against
 * the catalogue values 0xE3069283 and 0xAE8B14860A799888). */
static const struct {
	const char *trailer;
	const char *value;
} hello_sums[] = {
	{ "x-amz-checksum-crc32", "DUoRhQ==" },
	{ "x-amz-checksum-crc32c", "yZRlqg==" },
	{ "x-amz-checksum-crc64nvme", "jSnVw/bqjr4=" },
	{ "x-amz-checksum-sha1", "Kq5sNclPz7QV2+lfQIuc6R7oRu0=" },
	{ "x-amz-checksum-sha256", "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=" },
};

/* signatures_unchecked (the embedded store without authentication): the
 * framing of signed chunks is parsed, no signature is checked and no key
 * is needed; the framing and a checksum trailer still are. */
static void test_unchecked_signatures(void **state)
{
	const cJSON *c = doc_case("put-object-aws-chunked");
	const cJSON *ct = doc_case("put-object-aws-chunked-signed-trailer");
	struct awschunked_params p = doc_params(c), pt = doc_params(ct);
	struct buf body = { 0 }, tbody = { 0 };
	struct sink sink = { 0 };
	int status;
	const char *code;
	char *at;

	(void)state;
	doc_body(c, &body);
	body.p[100] = 'b';                 /* chunk 1's data: its signature no longer fits */
	body.p[body.len - 10] ^= 1;        /* the zero chunk's signature itself */
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code), AWSCHUNKED_ERROR);
	p.signatures_unchecked = 1;
	p.signing_key = NULL;
	p.seed_signature = NULL;
	assert_int_equal(run_whole(&p, body.p, body.len, &sink, &status, &code), AWSCHUNKED_DONE);
	assert_int_equal(sink.out.len, 66560);
	/* a chunk header without its signature is still malformed framing */
	expect_error(&p, "4\r\nabcd\r\n0\r\n\r\n", 16, 400, "InvalidChunkSizeError");

	doc_body(ct, &tbody);
	pt.signatures_unchecked = 1;
	pt.signing_key = NULL;
	at = strstr(tbody.p, "x-amz-trailer-signature:");
	assert_non_null(at);
	at[strlen("x-amz-trailer-signature:") + 3] ^= 1;
	assert_int_equal(run_whole(&pt, tbody.p, tbody.len, &sink, &status, &code), AWSCHUNKED_DONE);
	/* the checksum trailer is still checked */
	at = strstr(tbody.p, "sOO8/Q==");
	assert_non_null(at);
	at[0] = 't';
	assert_int_equal(run_whole(&pt, tbody.p, tbody.len, &sink, &status, &code), AWSCHUNKED_ERROR);
	assert_int_equal(status, 400);
	assert_string_equal(code, "BadDigest");
	free(sink.out.p);
	free(body.p);
	free(tbody.p);
}

static void test_unsigned_trailer_checksums(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(hello_sums) / sizeof(*hello_sums); i++) {
		struct awschunked_params up = {
			.mode = AWSCHUNKED_UNSIGNED_TRAILER, .decoded_length = 11,
			.trailer_name = hello_sums[i].trailer,
		};
		struct buf body = { 0 };
		struct sink sink = { 0 };
		int status;
		const char *code;
		char *at;

		/* as botocore sends it: sizes without signatures */
		buf_adds(&body, "6\r\nhello \r\n5\r\nworld\r\n0\r\n");
		buf_adds(&body, hello_sums[i].trailer);
		buf_adds(&body, ":");
		buf_adds(&body, hello_sums[i].value);
		buf_adds(&body, "\r\n\r\n");
		if (run_whole(&up, body.p, body.len, &sink, &status, &code) !=
		    AWSCHUNKED_DONE)
			fail_msg("%s: %s", hello_sums[i].trailer, code);
		assert_int_equal(sink.out.len, 11);
		assert_memory_equal(sink.out.p, "hello world", 11);
		/* a wrong checksum: BadDigest, and the last byte never leaves */
		at = strstr(body.p, hello_sums[i].value);
		at[1] = at[1] == 'A' ? 'B' : 'A';
		sink.out.len = 0;
		assert_int_equal(run_whole(&up, body.p, body.len, &sink, &status, &code),
				 AWSCHUNKED_ERROR);
		assert_int_equal(status, 400);
		assert_string_equal(code, "BadDigest");
		assert_int_equal(sink.out.len, 10);
		free(sink.out.p);
		free(body.p);
	}
}

static void test_unsigned_trailer_errors(void **state)
{
	struct awschunked_params up = {
		.mode = AWSCHUNKED_UNSIGNED_TRAILER, .decoded_length = 5,
		.trailer_name = "x-amz-checksum-crc32",
	};
	/* python3: base64(zlib.crc32(b"hello").to_bytes(4, "big")) */
	const char *ok = "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n";
	const char *blanks = "5\r\nhello\r\n0\r\nX-Amz-Checksum-CRC32 : NhCmhg== \r\n\r\n";
	struct sink sink = { 0 };
	int status;
	const char *code;

	(void)state;
	assert_int_equal(run_whole(&up, ok, strlen(ok), &sink, &status, &code),
			 AWSCHUNKED_DONE);
	/* tolerated: the final empty line missing after a whole trailer line */
	assert_int_equal(run_whole(&up, ok, strlen(ok) - 2, &sink, &status, &code),
			 AWSCHUNKED_DONE);
	/* names are case-insensitive, blanks around them ignored */
	assert_int_equal(run_whole(&up, blanks, strlen(blanks), &sink, &status, &code),
			 AWSCHUNKED_DONE);
	free(sink.out.p);
	sink = (struct sink){ 0 };
#define BODY(t) "5\r\nhello\r\n0\r\n" t "\r\n"
	expect_error(&up, BODY(""), strlen(BODY("")), 400, "MalformedTrailerError");
	expect_error(&up, BODY("x-amz-checksum-sha1:qvTGHdzF6KLavt4PO0gs2a6pQ00=\r\n"),
		     strlen(BODY("x-amz-checksum-sha1:qvTGHdzF6KLavt4PO0gs2a6pQ00=\r\n")),
		     400, "MalformedTrailerError");
	expect_error(&up, BODY("x-amz-checksum-crc32:NhCmhg==\r\nx-amz-checksum-crc32:NhCmhg==\r\n"),
		     strlen(BODY("x-amz-checksum-crc32:NhCmhg==\r\nx-amz-checksum-crc32:NhCmhg==\r\n")),
		     400, "MalformedTrailerError");
	expect_error(&up, BODY("x-amz-checksum-crc32:NhCmhg==\r\nx-amz-trailer-signature:" SMALL_SEED "\r\n"),
		     strlen(BODY("x-amz-checksum-crc32:NhCmhg==\r\nx-amz-trailer-signature:" SMALL_SEED "\r\n")),
		     400, "MalformedTrailerError");
	expect_error(&up, BODY("x-amz-checksum-crc32 NhCmhg==\r\n"),
		     strlen(BODY("x-amz-checksum-crc32 NhCmhg==\r\n")), 400,
		     "MalformedTrailerError");
	expect_error(&up, BODY("x-amz-checksum-crc32:NhCmhg==\n"),
		     strlen(BODY("x-amz-checksum-crc32:NhCmhg==\n")), 400,
		     "MalformedTrailerError");
	/* an unsupported algorithm is refused up front */
	up.trailer_name = "x-amz-checksum-md5";
	expect_error(&up, ok, strlen(ok), 400, "InvalidRequest");
	/* no trailer declared, one sent */
	up.trailer_name = NULL;
	expect_error(&up, ok, strlen(ok), 400, "MalformedTrailerError");
	/* none declared, none sent: fine */
	assert_int_equal(run_whole(&up, BODY(""), strlen(BODY("")), &sink, &status, &code),
			 AWSCHUNKED_DONE);
#undef BODY
	free(sink.out.p);
}

/* ---- setup -------------------------------------------------------------------------- */

static int load_doc(void **state)
{
	const char *env = getenv("FENCE_SIGV4_TESTDATA");
	char path[PATH_MAX];
	FILE *f;
	char *text;
	long len;

	(void)state;
	snprintf(path, sizeof(path), "%s/s3-doc-examples.json",
		 env && *env ? env : TESTDATA_DEFAULT);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "test_awschunked: cannot open %s (run from the repo "
			"root or set FENCE_SIGV4_TESTDATA)\n", path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = malloc((size_t)len + 1);
	if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(text);
		return -1;
	}
	fclose(f);
	text[len] = '\0';
	doc = cJSON_Parse(text);
	free(text);
	if (!doc)
		return -1;
	sigv4_signing_key(DOC_SECRET, "20130524", "us-east-1", "s3", doc_key);
	return 0;
}

static int free_doc(void **state)
{
	(void)state;
	cJSON_Delete(doc);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc_streaming_signed),
		cmocka_unit_test(test_doc_streaming_signed_trailer),
		cmocka_unit_test(test_doc_byte_by_byte_and_random_splits),
		cmocka_unit_test(test_doc_tampered),
		cmocka_unit_test(test_doc_tampered_trailer),
		cmocka_unit_test(test_unchecked_signatures),
		cmocka_unit_test(test_doc_length_mismatch),
		cmocka_unit_test(test_small_every_split),
		cmocka_unit_test(test_small_every_truncation),
		cmocka_unit_test(test_small_data_after_end),
		cmocka_unit_test(test_small_emit_failure),
		cmocka_unit_test(test_trailer_in_plain_signed_mode),
		cmocka_unit_test(test_bad_chunk_headers),
		cmocka_unit_test(test_oversize_lines),
		cmocka_unit_test(test_unsigned_trailer_checksums),
		cmocka_unit_test(test_unsigned_trailer_errors),
	};

	return cmocka_run_group_tests(tests, load_doc, free_doc);
}
