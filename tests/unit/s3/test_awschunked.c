/* test_awschunked.c — proxy/s3/awschunked.c: the two aws-chunked worked examples
 * of the S3 docs (tests/testdata/sigv4/s3-doc-examples.json, override
 * with FENCE_SIGV4_TESTDATA; missing data fails), fed whole, byte by byte
 * and in random splits; a small body at every split position and every
 * truncation; signatures left unchecked; tampering and length mismatches.
 * Chunk header syntax, oversize lines and the unsigned trailer form with its
 * checksums are in test_awschunked_framing.c. The safety property is checked
 * throughout: the final decoded byte is never emitted unless the whole body
 * verified. */
#include "awschunked_test.h"

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
	};

	return cmocka_run_group_tests(tests, load_doc, free_doc);
}
