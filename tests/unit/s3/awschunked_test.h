/* awschunked_test.h — what test_awschunked.c and test_awschunked_framing.c
 * share: the S3 docs' aws-chunked examples (loaded by the group setup, from
 * tests/testdata/sigv4/s3-doc-examples.json or FENCE_SIGV4_TESTDATA; missing
 * data fails) and their signing key, a growing buffer and a sink, running the
 * decoder whole or in splits, and a small body signed with wire/sigv4.c.
 * Test code only. */
#ifndef FENCE_TEST_AWSCHUNKED_TEST_H
#define FENCE_TEST_AWSCHUNKED_TEST_H

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
#include "tests/unit/testdata.h"
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

static inline void buf_add(struct buf *b, const void *data, size_t n)
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

static inline void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* Decoded output, with a switch to make the callback fail. */
struct sink {
	struct buf out;
	int fail;
};

static inline int sink_data(void *arg, const char *data, size_t len)
{
	struct sink *s = arg;

	assert_true(len > 0);
	if (s->fail)
		return -1;
	buf_add(&s->out, data, len);
	return 0;
}

static unsigned char doc_key[32];

static inline const cJSON *doc_case(const char *name)
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

static inline const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	if (!cJSON_IsString(v))
		fail_msg("missing string %s", key);
	return v->valuestring;
}

/* The wire body of a chunked doc case, rebuilt from its chunk list. */
static inline void doc_body(const cJSON *c, struct buf *body)
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

static inline struct awschunked_params doc_params(const cJSON *c)
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
static inline enum awschunked_status run_split(const struct awschunked_params *p,
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

static inline enum awschunked_status run_whole(const struct awschunked_params *p,
					const char *body, size_t len, struct sink *sink,
					int *status, const char **code)
{
	return run_split(p, body, len, NULL, 0, sink, status, code);
}

static inline void assert_all_a(const struct buf *b, size_t n)
{
	size_t i;

	assert_int_equal(b->len, n);
	for (i = 0; i < n; i++)
		if (b->p[i] != 'a')
			fail_msg("decoded byte %zu is %d", i, b->p[i]);
}

/* Runs body whole and checks it is refused with want_status and want_code. */
static inline void expect_error(const struct awschunked_params *p, const char *body,
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

/* ---- a small signed body, built with wire/sigv4.c ------------------------------ */

#define SMALL_SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"

/* "hello" + "wor" + "ld!" in signed chunks; with_trailer adds a crc32
 * trailer and its signature. */
static inline void small_signed_body(struct buf *b, int with_trailer)
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

static inline struct awschunked_params small_params(int with_trailer)
{
	struct awschunked_params p = {
		.mode = with_trailer ? AWSCHUNKED_SIGNED_TRAILER : AWSCHUNKED_SIGNED,
		.signing_key = doc_key, .amz_date = DOC_DATE, .scope = DOC_SCOPE,
		.seed_signature = SMALL_SEED, .decoded_length = 11,
		.trailer_name = with_trailer ? "x-amz-checksum-crc32" : NULL,
	};
	return p;
}

/* ---- setup -------------------------------------------------------------------------- */

static inline int load_doc(void **state)
{
	(void)state;
	doc = testdata_json("FENCE_SIGV4_TESTDATA", TESTDATA_DEFAULT, "s3-doc-examples.json",
			    "test_awschunked");
	if (!doc)
		return -1;
	sigv4_signing_key(DOC_SECRET, "20130524", "us-east-1", "s3", doc_key);
	return 0;
}

static inline int free_doc(void **state)
{
	(void)state;
	cJSON_Delete(doc);
	return 0;
}

#endif
