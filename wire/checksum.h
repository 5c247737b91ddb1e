/* checksum.h — the checksums S3 puts on the wire: CRC32, CRC32C, CRC64NVME
 * (x-amz-checksum-*), SHA-1, SHA-256, and MD5 (Content-MD5), computed
 * incrementally, and their base64 form.
 *
 * The digest bytes are big-endian for the CRCs, as S3 sends them; the wire
 * form is the standard base64 of those bytes. Pure computation: no I/O, no
 * allocation but OpenSSL's digest context (checksum_free releases it). Safe
 * from any thread (the CRC tables are built once, under pthread_once). */
#ifndef FENCE_WIRE_CHECKSUM_H
#define FENCE_WIRE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

enum checksum_algo {
	CHECKSUM_NONE = 0,
	CHECKSUM_CRC32,
	CHECKSUM_CRC32C,
	CHECKSUM_CRC64NVME,
	CHECKSUM_SHA1,
	CHECKSUM_SHA256,
	CHECKSUM_MD5,       /* Content-MD5 only: no x-amz-checksum- header */
	CHECKSUM_ALGOS
};

#define CHECKSUM_DIGEST_MAX 32   /* SHA-256 */
#define CHECKSUM_BASE64_MAX 48   /* base64 of CHECKSUM_DIGEST_MAX, NUL included */

struct evp_md_ctx_st;

/* One running checksum. Zero it with checksum_init; free with checksum_free. */
struct checksum {
	enum checksum_algo algo;
	uint64_t crc;
	struct evp_md_ctx_st *md;
};

/* "CRC32", ...; NULL for CHECKSUM_NONE or an unknown value. */
const char *checksum_name(enum checksum_algo algo);
/* "x-amz-checksum-crc32", ...; NULL for MD5, NONE or unknown. */
const char *checksum_header(enum checksum_algo algo);
/* The digest's length in bytes; 0 for NONE or unknown. */
size_t checksum_len(enum checksum_algo algo);
/* By x-amz-checksum-algorithm's value ("crc32", any case), or by header
 * name ("x-amz-checksum-crc32", any case). CHECKSUM_NONE when unknown
 * (never MD5). */
enum checksum_algo checksum_from_name(const char *name);
enum checksum_algo checksum_from_header(const char *header);

/* Starts c. Returns 0, or -1 (unknown algo, out of memory). */
int checksum_init(struct checksum *c, enum checksum_algo algo);
/* Returns 0 or -1. */
int checksum_update(struct checksum *c, const void *data, size_t len);
/* Writes the digest into out (CHECKSUM_DIGEST_MAX bytes) and returns its
 * length, 0 on failure. Call once. */
size_t checksum_final(struct checksum *c, unsigned char *out);
/* Releases c's digest context. Accepts a zeroed or finished c. */
void checksum_free(struct checksum *c);

/* base64 of len digest bytes into out (CHECKSUM_BASE64_MAX). Returns out. */
char *checksum_base64(const unsigned char *digest, size_t len, char *out);
/* Decodes value, the base64 of exactly checksum_len(algo) bytes, into out.
 * Returns the length, or 0 when value is not that. */
size_t checksum_unbase64(enum checksum_algo algo, const char *value, unsigned char *out);
/* The base64 checksum of data into out (CHECKSUM_BASE64_MAX). 0 or -1. */
int checksum_of(enum checksum_algo algo, const void *data, size_t len, char *out);

#endif
