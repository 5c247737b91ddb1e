/* fuzz_awschunked.c — libFuzzer target for the aws-chunked decoder
 * (proxy/s3/awschunked.c).
 *
 * Input: byte 0 = bits 0-1 mode (0 signed, 1 signed+trailer, else unsigned
 * trailer), bits 2-4 trailer (0 none, 1-5 crc32/crc32c/crc64nvme/sha1/
 * sha256, 6-7 unsupported), bit 5 = x-amz-decoded-content-length unchecked,
 * bit 6 = also decode with signatures_unchecked (no key);
 * bytes 1-2 = decoded length (little-endian); byte 3 = feed stride; the rest
 * is the encoded body. Signed modes use the S3 docs' key, date, scope and
 * seed. Checks: the result does not depend on how the body is split; the
 * last decoded byte is emitted only on DONE; DONE emits exactly the
 * declared length; errors carry a 4xx/5xx status and a code; the unchecked
 * decoder accepts every body the checking one accepts, with the same bytes
 * (it only ever skips signature checks). Aborts on any violation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3/awschunked.h"
#include "wire/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DOC_DATE  "20130524T000000Z"
#define DOC_SCOPE "20130524/us-east-1/s3/aws4_request"
#define DOC_SEED  "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"

static const char *const trailers[8] = {
	NULL, "x-amz-checksum-crc32", "x-amz-checksum-crc32c",
	"x-amz-checksum-crc64nvme", "x-amz-checksum-sha1", "x-amz-checksum-sha256",
	"x-amz-checksum-md5", "content-md5",
};

struct outcome {
	enum awschunked_status rc;
	int status;
	const char *code;
	uint8_t *out;
	size_t len, cap;
	int64_t decoded;
};

static int collect(void *arg, const char *p, size_t n)
{
	struct outcome *o = arg;

	if (n == 0)
		abort();
	if (o->len + n > o->cap) {
		o->cap = (o->len + n) * 2;
		o->out = realloc(o->out, o->cap);
		if (!o->out)
			abort();
	}
	memcpy(o->out + o->len, p, n);
	o->len += n;
	return 0;
}

static void run(const struct awschunked_params *p, const uint8_t *body, size_t len,
		size_t stride, struct outcome *o)
{
	struct awschunked *d = awschunked_new(p, collect, o);
	size_t at = 0;

	if (!d)
		abort();
	o->rc = AWSCHUNKED_MORE;
	while (at < len && o->rc == AWSCHUNKED_MORE) {
		size_t n = len - at < stride ? len - at : stride;

		o->rc = awschunked_feed(d, (const char *)body + at, n);
		if (o->rc == AWSCHUNKED_DONE)
			abort(); /* feed never decides the end */
		at += n;
	}
	if (o->rc == AWSCHUNKED_MORE)
		o->rc = awschunked_finish(d);
	awschunked_error(d, &o->status, &o->code, NULL);
	o->decoded = awschunked_decoded(d);
	awschunked_free(d);
}

static void check(const struct awschunked_params *p, const struct outcome *o)
{
	if (o->rc == AWSCHUNKED_DONE) {
		if ((int64_t)o->len != o->decoded)
			abort();
		if (p->decoded_length >= 0 && o->decoded != p->decoded_length)
			abort();
		return;
	}
	if (o->rc != AWSCHUNKED_ERROR || !o->code || o->status < 400 || o->status > 599)
		abort();
	/* everything but the held-back final byte */
	if ((int64_t)o->len != (o->decoded > 0 ? o->decoded - 1 : 0))
		abort();
	if (p->decoded_length >= 0 && o->decoded > p->decoded_length)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char key[32];
	static int have_key;
	struct awschunked_params p;
	struct outcome a = { 0 }, b = { 0 };
	size_t stride;

	if (size < 4)
		return 0;
	if (!have_key) {
		sigv4_signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524",
				  "us-east-1", "s3", key);
		have_key = 1;
	}
	memset(&p, 0, sizeof(p));
	p.mode = (data[0] & 3) == 0 ? AWSCHUNKED_SIGNED :
		 (data[0] & 3) == 1 ? AWSCHUNKED_SIGNED_TRAILER : AWSCHUNKED_UNSIGNED_TRAILER;
	p.trailer_name = trailers[(data[0] >> 2) & 7];
	p.decoded_length = data[0] & 0x20 ? -1 : (int64_t)(data[1] | data[2] << 8);
	p.signing_key = key;
	p.amz_date = DOC_DATE;
	p.scope = DOC_SCOPE;
	p.seed_signature = DOC_SEED;
	stride = data[3] ? data[3] : 1;
	run(&p, data + 4, size - 4, stride, &a);
	run(&p, data + 4, size - 4, size, &b);
	check(&p, &a);
	check(&p, &b);
	if (a.rc != b.rc || a.len != b.len || a.status != b.status ||
	    (a.len && memcmp(a.out, b.out, a.len) != 0) ||
	    (a.code && strcmp(a.code, b.code) != 0))
		abort();
	if (data[0] & 0x40) {
		struct awschunked_params u = p;
		struct outcome c = { 0 };

		u.signatures_unchecked = 1;
		u.signing_key = NULL;
		u.seed_signature = NULL;
		run(&u, data + 4, size - 4, stride, &c);
		check(&u, &c);
		if (a.rc == AWSCHUNKED_DONE &&
		    (c.rc != AWSCHUNKED_DONE || c.len != a.len ||
		     (a.len && memcmp(a.out, c.out, a.len) != 0)))
			abort();
		free(c.out);
	}
	free(a.out);
	free(b.out);
	return 0;
}
