/* test_checksum.c — wire/checksum.c against published check values (the
 * CRC catalogue's "123456789" checks for CRC-32, CRC-32C and CRC-64/NVME;
 * FIPS 180's "abc" for SHA-1 and SHA-256; RFC 1321's "" for MD5), the same
 * digests fed in pieces, names and headers, and base64 decoding bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/checksum.h"

static const struct {
	enum checksum_algo algo;
	const char *in;
	const char *b64;
} vectors[] = {
	{ CHECKSUM_CRC32, "123456789", "y/Q5Jg==" },          /* 0xCBF43926 */
	{ CHECKSUM_CRC32, "", "AAAAAA==" },
	{ CHECKSUM_CRC32C, "123456789", "4waSgw==" },         /* 0xE3069283 */
	{ CHECKSUM_CRC64NVME, "123456789", "rosUhgp5mIg=" },  /* 0xAE8B14860A799888 */
	{ CHECKSUM_SHA1, "abc", "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=" },
	{ CHECKSUM_SHA256, "abc", "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=" },
	{ CHECKSUM_MD5, "", "1B2M2Y8AsgTpgAmY7PhCfg==" },
};

static void test_vectors_whole(void **state)
{
	char out[CHECKSUM_BASE64_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		assert_int_equal(checksum_of(vectors[i].algo, vectors[i].in,
					     strlen(vectors[i].in), out), 0);
		assert_string_equal(out, vectors[i].b64);
	}
}

static void test_vectors_in_pieces(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		struct checksum c;
		unsigned char d[CHECKSUM_DIGEST_MAX];
		char out[CHECKSUM_BASE64_MAX];
		const char *in = vectors[i].in;
		size_t n, len = strlen(in);

		assert_int_equal(checksum_init(&c, vectors[i].algo), 0);
		for (size_t k = 0; k < len; k++)
			assert_int_equal(checksum_update(&c, in + k, 1), 0);
		n = checksum_final(&c, d);
		checksum_free(&c);
		assert_int_equal(n, checksum_len(vectors[i].algo));
		assert_string_equal(checksum_base64(d, n, out), vectors[i].b64);
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(checksum_from_header("x-amz-checksum-crc32"), CHECKSUM_CRC32);
	assert_int_equal(checksum_from_header("X-Amz-Checksum-CRC64NVME"), CHECKSUM_CRC64NVME);
	assert_int_equal(checksum_from_header("x-amz-checksum-md5"), CHECKSUM_NONE);
	assert_int_equal(checksum_from_header(NULL), CHECKSUM_NONE);
	assert_int_equal(checksum_from_name("crc32c"), CHECKSUM_CRC32C);
	assert_int_equal(checksum_from_name("SHA256"), CHECKSUM_SHA256);
	assert_int_equal(checksum_from_name("MD5"), CHECKSUM_NONE);
	assert_int_equal(checksum_from_name("crc33"), CHECKSUM_NONE);
	assert_string_equal(checksum_name(CHECKSUM_SHA1), "SHA1");
	assert_null(checksum_header(CHECKSUM_MD5));
	assert_null(checksum_name(CHECKSUM_NONE));
	assert_int_equal(checksum_len(CHECKSUM_ALGOS), 0);
	assert_int_equal(checksum_init(&(struct checksum){ 0 }, CHECKSUM_NONE), -1);
}

static void test_unbase64(void **state)
{
	unsigned char d[CHECKSUM_DIGEST_MAX];

	(void)state;
	assert_int_equal(checksum_unbase64(CHECKSUM_CRC32, "y/Q5Jg==", d), 4);
	assert_memory_equal(d, "\xcb\xf4\x39\x26", 4);
	assert_int_equal(checksum_unbase64(CHECKSUM_MD5, "1B2M2Y8AsgTpgAmY7PhCfg==", d), 16);
	/* the wrong length for the algorithm, bad padding, bad characters */
	assert_int_equal(checksum_unbase64(CHECKSUM_CRC32, "rosUhgp5mIg=", d), 0);
	assert_int_equal(checksum_unbase64(CHECKSUM_CRC32, "y/Q5Jg=", d), 0);
	assert_int_equal(checksum_unbase64(CHECKSUM_CRC32, "y/Q5J!==", d), 0);
	assert_int_equal(checksum_unbase64(CHECKSUM_CRC32, "", d), 0);
	assert_int_equal(checksum_unbase64(CHECKSUM_CRC32, NULL, d), 0);
	assert_int_equal(checksum_unbase64(CHECKSUM_NONE, "AAAAAA==", d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_whole),
		cmocka_unit_test(test_vectors_in_pieces),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_unbase64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
