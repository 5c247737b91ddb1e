/* test_awschunked_framing.c — proxy/s3/awschunked.c: chunk header syntax
 * (bad sizes, extensions, signatures) and oversize lines; the unsigned
 * trailer form (STREAMING-UNSIGNED-PAYLOAD-TRAILER) with checksums computed
 * independently (python zlib/hashlib), and its errors: length and checksum
 * mismatches, malformed trailers. */
#include "awschunked_test.h"

/* ---- chunk header syntax --------------------------------------------------------- */

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_chunk_headers),
		cmocka_unit_test(test_oversize_lines),
		cmocka_unit_test(test_unsigned_trailer_checksums),
		cmocka_unit_test(test_unsigned_trailer_errors),
	};

	return cmocka_run_group_tests(tests, load_doc, free_doc);
}
