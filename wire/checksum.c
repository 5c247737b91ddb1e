/* checksum.c — incremental CRC32, CRC32C, CRC64NVME (one table-driven
 * reflected-CRC routine: crc32c and crc64nvme are in none of our
 * dependencies, and zlib's crc32 would add -lz for the one polynomial) and
 * SHA-1, SHA-256, MD5 through OpenSSL, plus their base64 wire form. */
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "checksum.h"

#define CRC32_POLY      0xEDB88320u           /* reflected 0x04C11DB7 */
#define CRC32C_POLY     0x82F63B78u           /* reflected 0x1EDC6F41 */
#define CRC64NVME_POLY  0x9A6C9329AC4BC9B5ull /* reflected 0xAD93D23594C93659 */

static uint32_t crc32_table[256], crc32c_table[256];
static uint64_t crc64nvme_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_tables(void)
{
	unsigned i, k;

	for (i = 0; i < 256; i++) {
		uint32_t a = i, b = i;
		uint64_t c = i;

		for (k = 0; k < 8; k++) {
			a = a & 1 ? (a >> 1) ^ CRC32_POLY : a >> 1;
			b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
			c = c & 1 ? (c >> 1) ^ CRC64NVME_POLY : c >> 1;
		}
		crc32_table[i] = a;
		crc32c_table[i] = b;
		crc64nvme_table[i] = c;
	}
}

static const struct {
	const char *name, *header;
	size_t len;
} algos[CHECKSUM_ALGOS] = {
	[CHECKSUM_CRC32] = { "CRC32", "x-amz-checksum-crc32", 4 },
	[CHECKSUM_CRC32C] = { "CRC32C", "x-amz-checksum-crc32c", 4 },
	[CHECKSUM_CRC64NVME] = { "CRC64NVME", "x-amz-checksum-crc64nvme", 8 },
	[CHECKSUM_SHA1] = { "SHA1", "x-amz-checksum-sha1", 20 },
	[CHECKSUM_SHA256] = { "SHA256", "x-amz-checksum-sha256", 32 },
	[CHECKSUM_MD5] = { "MD5", NULL, 16 },
};

static int known(enum checksum_algo algo)
{
	return algo > CHECKSUM_NONE && algo < CHECKSUM_ALGOS;
}

const char *checksum_name(enum checksum_algo algo)
{
	return known(algo) ? algos[algo].name : NULL;
}

const char *checksum_header(enum checksum_algo algo)
{
	return known(algo) ? algos[algo].header : NULL;
}

size_t checksum_len(enum checksum_algo algo)
{
	return known(algo) ? algos[algo].len : 0;
}

enum checksum_algo checksum_from_name(const char *name)
{
	int a;

	for (a = CHECKSUM_CRC32; a <= CHECKSUM_SHA256; a++)
		if (name && strcasecmp(name, algos[a].name) == 0)
			return (enum checksum_algo)a;
	return CHECKSUM_NONE;
}

enum checksum_algo checksum_from_header(const char *header)
{
	int a;

	for (a = CHECKSUM_CRC32; a <= CHECKSUM_SHA256; a++)
		if (header && strcasecmp(header, algos[a].header) == 0)
			return (enum checksum_algo)a;
	return CHECKSUM_NONE;
}

static const EVP_MD *md_of(enum checksum_algo algo)
{
	switch (algo) {
	case CHECKSUM_SHA1: return EVP_sha1();
	case CHECKSUM_SHA256: return EVP_sha256();
	case CHECKSUM_MD5: return EVP_md5();
	default: return NULL;
	}
}

int checksum_init(struct checksum *c, enum checksum_algo algo)
{
	const EVP_MD *md = md_of(algo);

	memset(c, 0, sizeof(*c));
	if (!known(algo))
		return -1;
	c->algo = algo;
	if (!md) {
		pthread_once(&crc_once, crc_tables);
		c->crc = algo == CHECKSUM_CRC64NVME ? ~0ull : 0xFFFFFFFFu;
		return 0;
	}
	c->md = EVP_MD_CTX_new();
	if (!c->md || !EVP_DigestInit_ex(c->md, md, NULL)) {
		checksum_free(c);
		c->algo = CHECKSUM_NONE;
		return -1;
	}
	return 0;
}

int checksum_update(struct checksum *c, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i;

	switch (c->algo) {
	case CHECKSUM_CRC32: {
		uint32_t r = (uint32_t)c->crc;

		for (i = 0; i < len; i++)
			r = crc32_table[(r ^ p[i]) & 0xff] ^ (r >> 8);
		c->crc = r;
		return 0;
	}
	case CHECKSUM_CRC32C: {
		uint32_t r = (uint32_t)c->crc;

		for (i = 0; i < len; i++)
			r = crc32c_table[(r ^ p[i]) & 0xff] ^ (r >> 8);
		c->crc = r;
		return 0;
	}
	case CHECKSUM_CRC64NVME: {
		uint64_t r = c->crc;

		for (i = 0; i < len; i++)
			r = crc64nvme_table[(r ^ p[i]) & 0xff] ^ (r >> 8);
		c->crc = r;
		return 0;
	}
	case CHECKSUM_SHA1:
	case CHECKSUM_SHA256:
	case CHECKSUM_MD5:
		return c->md && EVP_DigestUpdate(c->md, data, len) ? 0 : -1;
	default:
		break;
	}
	return -1;
}

size_t checksum_final(struct checksum *c, unsigned char *out)
{
	unsigned int n = 0, i;

	switch (c->algo) {
	case CHECKSUM_CRC32:
	case CHECKSUM_CRC32C:
		for (i = 0; i < 4; i++)
			out[i] = (unsigned char)((c->crc ^ 0xFFFFFFFFu) >> (24 - 8 * i));
		return 4;
	case CHECKSUM_CRC64NVME:
		for (i = 0; i < 8; i++)
			out[i] = (unsigned char)((c->crc ^ ~0ull) >> (56 - 8 * i));
		return 8;
	case CHECKSUM_SHA1:
	case CHECKSUM_SHA256:
	case CHECKSUM_MD5:
		if (!c->md || !EVP_DigestFinal_ex(c->md, out, &n))
			return 0;
		return n;
	default:
		break;
	}
	return 0;
}

void checksum_free(struct checksum *c)
{
	if (c->md)
		EVP_MD_CTX_free(c->md);
	c->md = NULL;
}

char *checksum_base64(const unsigned char *digest, size_t len, char *out)
{
	if (len > CHECKSUM_DIGEST_MAX)
		len = 0;
	EVP_EncodeBlock((unsigned char *)out, digest, (int)len);
	return out;
}

size_t checksum_unbase64(enum checksum_algo algo, const char *value, unsigned char *out)
{
	unsigned char buf[CHECKSUM_BASE64_MAX];
	size_t want = checksum_len(algo), n = value ? strlen(value) : 0, pad = 0;
	int got;

	if (!want || n == 0 || n % 4 != 0 || n != 4 * ((want + 2) / 3))
		return 0;
	got = EVP_DecodeBlock(buf, (const unsigned char *)value, (int)n);
	if (value[n - 1] == '=')
		pad++;
	if (value[n - 2] == '=')
		pad++;
	if (got < 0 || (size_t)got - pad != want)
		return 0;
	memcpy(out, buf, want);
	return want;
}

int checksum_of(enum checksum_algo algo, const void *data, size_t len, char *out)
{
	struct checksum c;
	unsigned char d[CHECKSUM_DIGEST_MAX];
	size_t n;

	if (checksum_init(&c, algo) < 0)
		return -1;
	if (checksum_update(&c, data, len) < 0) {
		checksum_free(&c);
		return -1;
	}
	n = checksum_final(&c, d);
	checksum_free(&c);
	if (!n)
		return -1;
	checksum_base64(d, n, out);
	return 0;
}
