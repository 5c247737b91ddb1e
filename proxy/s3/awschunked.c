/* awschunked.c — incremental aws-chunked decoding with chunk-signature,
 * trailer-signature, length and checksum-trailer verification (see
 * awschunked.h for the format). Signatures are computed by wire/sigv4.c and
 * compared in constant time; the checksum trailers by wire/checksum.c. It
 * does not parse HTTP (the caller feeds the de-chunked HTTP body) nor
 * decide policy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "awschunked.h"
#include "wire/checksum.h"
#include "wire/pct.h"
#include "wire/sigv4.h"

#define SIG_HEADER "chunk-signature="
#define TRAILER_SIG "x-amz-trailer-signature"

/* ---- the decoder ---------------------------------------------------------
 * States (st): HEADER (reading a chunk-size line), DATA (remaining bytes of
 * a chunk), DATA_CR / DATA_LF (the CRLF after chunk data), TRAILER (lines
 * after the zero chunk, until an empty one), END (encoding complete, waiting
 * for finish), DONE (finish succeeded), ERROR (err_* set; sticky).
 * held/has_held: the last decoded byte, released only by finish. */
enum st { ST_HEADER, ST_DATA, ST_DATA_CR, ST_DATA_LF, ST_TRAILER, ST_END,
	  ST_DONE, ST_ERROR };

struct awschunked {
	enum awschunked_mode mode;
	int unchecked;           /* signed framing, signatures not verified */
	unsigned char key[32];
	char amz_date[17];
	char scope[160];
	char prev_sig[65];       /* the chain: seed, then each chunk's */
	char chunk_sig[65];      /* the signature the current chunk claims */
	int64_t decoded_length;
	char trailer_name[65];
	awschunked_data_fn on_data;
	void *arg;

	enum st st;
	char line[AWSCHUNKED_LINE_MAX + 1];
	size_t line_len;
	uint64_t remaining;
	int64_t decoded;
	EVP_MD_CTX *chunk_ctx;   /* signed modes */

	enum checksum_algo algo; /* of the declared trailer; NONE none */
	struct checksum sum;

	char *trailer;           /* trailer lines, "name:value\n" each, raw */
	size_t trailer_len;

	char held;
	int has_held;

	int err_status;
	const char *err_code;
	char err_msg[192];
};

static enum awschunked_status fail(struct awschunked *d, int status, const char *code,
				   const char *msg)
{
	d->st = ST_ERROR;
	d->err_status = status;
	d->err_code = code;
	snprintf(d->err_msg, sizeof(d->err_msg), "%s", msg);
	return AWSCHUNKED_ERROR;
}

static int is_signed(const struct awschunked *d)
{
	return d->mode != AWSCHUNKED_UNSIGNED_TRAILER;
}

static int copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (n >= cap)
		return -1;
	memcpy(dst, src ? src : "", n + 1);
	return 0;
}

struct awschunked *awschunked_new(const struct awschunked_params *params,
				  awschunked_data_fn on_data, void *arg)
{
	struct awschunked *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->mode = params->mode;
	d->unchecked = params->signatures_unchecked && is_signed(d);
	d->decoded_length = params->decoded_length;
	d->on_data = on_data;
	d->arg = arg;
	d->st = ST_HEADER;
	if (is_signed(d) && !d->unchecked) {
		if (!params->signing_key || copy_str(d->amz_date, sizeof(d->amz_date),
						     params->amz_date) ||
		    copy_str(d->scope, sizeof(d->scope), params->scope) ||
		    copy_str(d->prev_sig, sizeof(d->prev_sig), params->seed_signature) ||
		    strlen(d->prev_sig) != 64 || strlen(d->amz_date) != 16) {
			fail(d, 500, "InternalError", "aws-chunked: bad signing parameters");
			return d;
		}
		memcpy(d->key, params->signing_key, 32);
		d->chunk_ctx = EVP_MD_CTX_new();
		if (!d->chunk_ctx) {
			awschunked_free(d);
			return NULL;
		}
	}
	if (d->mode == AWSCHUNKED_SIGNED || !params->trailer_name ||
	    !*params->trailer_name)
		return d;
	if (copy_str(d->trailer_name, sizeof(d->trailer_name), params->trailer_name)) {
		fail(d, 400, "InvalidRequest", "x-amz-trailer is too long");
		return d;
	}
	d->algo = checksum_from_header(d->trailer_name);
	if (d->algo == CHECKSUM_NONE) {
		fail(d, 400, "InvalidRequest",
		     "x-amz-trailer names an unsupported trailer (supported: "
		     "x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1, -sha256)");
		return d;
	}
	if (checksum_init(&d->sum, d->algo) < 0) {
		awschunked_free(d);
		return NULL;
	}
	return d;
}

void awschunked_free(struct awschunked *d)
{
	if (!d)
		return;
	EVP_MD_CTX_free(d->chunk_ctx);
	checksum_free(&d->sum);
	free(d->trailer);
	OPENSSL_cleanse(d, sizeof(*d));
	free(d);
}

void awschunked_error(const struct awschunked *d, int *status, const char **code,
		      const char **message)
{
	int is_err = d->st == ST_ERROR;

	if (status)
		*status = is_err ? d->err_status : 0;
	if (code)
		*code = is_err ? d->err_code : NULL;
	if (message)
		*message = is_err ? d->err_msg : "";
}

int64_t awschunked_decoded(const struct awschunked *d)
{
	return d->decoded;
}

/* ---- data ------------------------------------------------------------------ */

static int emit(struct awschunked *d, const char *p, size_t n)
{
	if (!n || !d->on_data)
		return 0;
	return d->on_data(d->arg, p, n) ? -1 : 0;
}

/* Checksums, hashes and emits chunk data, holding back the last byte. */
static enum awschunked_status take_data(struct awschunked *d, const char *p, size_t n)
{
	if (is_signed(d) && !d->unchecked && !EVP_DigestUpdate(d->chunk_ctx, p, n))
		return fail(d, 500, "InternalError", "aws-chunked: hashing failed");
	if (d->algo != CHECKSUM_NONE && checksum_update(&d->sum, p, n) < 0)
		return fail(d, 500, "InternalError", "aws-chunked: hashing failed");
	if ((d->has_held && emit(d, &d->held, 1)) || emit(d, p, n - 1))
		return fail(d, 500, "InternalError", "the body could not be forwarded");
	d->held = p[n - 1];
	d->has_held = 1;
	d->decoded += (int64_t)n;
	return AWSCHUNKED_MORE;
}

/* The current chunk ended: check its signature and advance the chain. */
static enum awschunked_status end_chunk(struct awschunked *d)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	char hash[65], expect[65];
	size_t i;

	if (!is_signed(d) || d->unchecked)
		return AWSCHUNKED_MORE;
	if (!EVP_DigestFinal_ex(d->chunk_ctx, md, &mdlen) || mdlen != 32)
		return fail(d, 500, "InternalError", "aws-chunked: hashing failed");
	for (i = 0; i < 32; i++)
		snprintf(hash + 2 * i, 3, "%02x", md[i]);
	sigv4_chunk_signature(d->key, d->amz_date, d->scope, d->prev_sig, hash, expect);
	if (!sigv4_signature_equal(expect, d->chunk_sig))
		return fail(d, 403, "SignatureDoesNotMatch",
			    "The chunk signature we calculated does not match the one you provided.");
	memcpy(d->prev_sig, expect, sizeof(expect));
	return AWSCHUNKED_MORE;
}

/* A complete chunk header line (CRLF stripped). */
static enum awschunked_status chunk_header(struct awschunked *d)
{
	const char *p = d->line, *ext;
	uint64_t size = 0;
	size_t digits = 0;

	for (; hex_value(*p) >= 0; p++, digits++) {
		if (size >> 56)
			return fail(d, 400, "InvalidChunkSizeError", "the chunk size is too large");
		size = size << 4 | (uint64_t)hex_value(*p);
	}
	if (digits == 0 || (*p && *p != ';'))
		return fail(d, 400, "InvalidChunkSizeError",
			    "a chunk header must start with the chunk size in hex");
	ext = p;
	if (is_signed(d)) {
		size_t prefix = strlen(";" SIG_HEADER);

		if (strncmp(ext, ";" SIG_HEADER, prefix) != 0 ||
		    strlen(ext + prefix) != 64)
			return fail(d, 400, "InvalidChunkSizeError",
				    "a chunk header must be SIZE;chunk-signature=SIGNATURE");
		memcpy(d->chunk_sig, ext + prefix, 65);
		if (!d->unchecked && !EVP_DigestInit_ex(d->chunk_ctx, EVP_sha256(), NULL))
			return fail(d, 500, "InternalError", "aws-chunked: hashing failed");
	}
	/* the unsigned form has no extensions; others are ignored */
	if (d->decoded_length >= 0 &&
	    size > (uint64_t)(d->decoded_length - d->decoded))
		return fail(d, 400, "InvalidChunkSizeError",
			    "the chunks are longer than x-amz-decoded-content-length");
	if (size > 0) {
		d->remaining = size;
		d->st = ST_DATA;
		return AWSCHUNKED_MORE;
	}
	/* the zero chunk ends the data */
	if (end_chunk(d) == AWSCHUNKED_ERROR)
		return AWSCHUNKED_ERROR;
	if (d->decoded_length >= 0 && d->decoded != d->decoded_length)
		return fail(d, 400, "IncompleteBody",
			    "You did not provide the number of bytes specified by "
			    "x-amz-decoded-content-length");
	d->st = ST_TRAILER;
	return AWSCHUNKED_MORE;
}

/* ---- trailer ----------------------------------------------------------------- */

static void trim_bounds(const char **b, const char **e)
{
	while (*b < *e && (**b == ' ' || **b == '\t'))
		(*b)++;
	while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

/* The computed checksum, big-endian bytes base64-encoded, into out. */
static int computed_base64(struct awschunked *d, char out[CHECKSUM_BASE64_MAX])
{
	unsigned char bin[CHECKSUM_DIGEST_MAX];
	size_t n = checksum_final(&d->sum, bin);

	if (!n)
		return -1;
	checksum_base64(bin, n, out);
	return 0;
}

/* The whole trailer block has arrived (d->trailer: lines "name:value\n"). */
static enum awschunked_status end_trailer(struct awschunked *d)
{
	/* an empty block (no trailer lines) leaves d->trailer NULL */
	const char *p = d->trailer ? d->trailer : "", *end = p + d->trailer_len;
	char canonical[AWSCHUNKED_TRAILER_MAX + 1];
	char sig[65] = "", checksum[65] = "", computed[CHECKSUM_BASE64_MAX];
	size_t clen = 0;
	int have_sig = 0, have_sum = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *colon = memchr(p, ':', (size_t)(nl - p));
		const char *nb = p, *ne, *vb, *ve = nl;
		size_t nlen, vlen, i;

		if (!colon)
			return fail(d, 400, "MalformedTrailerError", "a trailer line lacks ':'");
		ne = colon;
		vb = colon + 1;
		trim_bounds(&nb, &ne);
		trim_bounds(&vb, &ve);
		nlen = (size_t)(ne - nb);
		vlen = (size_t)(ve - vb);
		if (nlen == strlen(TRAILER_SIG) && strncasecmp(nb, TRAILER_SIG, nlen) == 0) {
			if (d->mode != AWSCHUNKED_SIGNED_TRAILER || have_sig || vlen != 64)
				return fail(d, 400, "MalformedTrailerError",
					    "unexpected or malformed x-amz-trailer-signature");
			memcpy(sig, vb, 64);
			have_sig = 1;
		} else if (d->algo != CHECKSUM_NONE && nlen == strlen(d->trailer_name) &&
			   strncasecmp(nb, d->trailer_name, nlen) == 0) {
			if (have_sum || vlen >= sizeof(checksum) || have_sig)
				return fail(d, 400, "MalformedTrailerError",
					    "a repeated, misplaced or oversized checksum trailer");
			memcpy(checksum, vb, vlen);
			checksum[vlen] = '\0';
			have_sum = 1;
			for (i = 0; i < nlen; i++)
				canonical[clen++] = (char)(nb[i] >= 'A' && nb[i] <= 'Z' ?
							   nb[i] + 32 : nb[i]);
			canonical[clen++] = ':';
			memcpy(canonical + clen, vb, vlen);
			clen += vlen;
			canonical[clen++] = '\n';
		} else {
			return fail(d, 400, "MalformedTrailerError",
				    "a trailer not declared in x-amz-trailer");
		}
		p = nl + 1;
	}
	if (d->algo != CHECKSUM_NONE && !have_sum)
		return fail(d, 400, "MalformedTrailerError",
			    "the trailer declared in x-amz-trailer is missing");
	if (d->mode == AWSCHUNKED_SIGNED_TRAILER && !d->unchecked) {
		char hash[65], expect[65];

		if (!have_sig)
			return fail(d, 400, "MalformedTrailerError",
				    "the x-amz-trailer-signature trailer is missing");
		sigv4_sha256_hex(canonical, clen, hash);
		sigv4_trailer_signature(d->key, d->amz_date, d->scope, d->prev_sig,
					hash, expect);
		if (!sigv4_signature_equal(expect, sig))
			return fail(d, 403, "SignatureDoesNotMatch",
				    "The trailer signature we calculated does not match "
				    "the one you provided.");
	}
	if (have_sum) {
		if (computed_base64(d, computed))
			return fail(d, 500, "InternalError", "aws-chunked: hashing failed");
		if (strcmp(computed, checksum) != 0) {
			fail(d, 400, "BadDigest", "");
			snprintf(d->err_msg, sizeof(d->err_msg),
				 "The %s you specified did not match the calculated checksum.",
				 checksum_name(d->algo));
			return AWSCHUNKED_ERROR;
		}
	}
	d->st = ST_END;
	return AWSCHUNKED_MORE;
}

/* One complete trailer line (CRLF stripped); empty ends the block. */
static enum awschunked_status trailer_line(struct awschunked *d)
{
	if (d->line_len == 0)
		return end_trailer(d);
	if (d->mode == AWSCHUNKED_SIGNED)
		return fail(d, 400, "MalformedTrailerError",
			    "this upload declares no trailer (x-amz-content-sha256 "
			    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD)");
	if (d->trailer_len + d->line_len + 1 > AWSCHUNKED_TRAILER_MAX)
		return fail(d, 400, "MalformedTrailerError", "the trailer is too large");
	if (!d->trailer) {
		d->trailer = malloc(AWSCHUNKED_TRAILER_MAX);
		if (!d->trailer)
			return fail(d, 500, "InternalError", "out of memory");
	}
	memcpy(d->trailer + d->trailer_len, d->line, d->line_len);
	d->trailer_len += d->line_len;
	d->trailer[d->trailer_len++] = '\n';
	return AWSCHUNKED_MORE;
}

/* Appends bytes up to and including a '\n' to d->line. Returns how many were
 * used; *complete = 1 when a CRLF-ended line is in d->line (CRLF stripped). */
static size_t read_line(struct awschunked *d, const char *p, size_t n, int *complete)
{
	const char *nl = memchr(p, '\n', n);
	size_t take = nl ? (size_t)(nl - p) + 1 : n;

	*complete = 0;
	if (d->line_len + take > AWSCHUNKED_LINE_MAX) {
		fail(d, 400, d->st == ST_HEADER ? "InvalidChunkSizeError" :
		     "MalformedTrailerError", "a chunk header or trailer line is too long");
		return take;
	}
	memcpy(d->line + d->line_len, p, take);
	d->line_len += take;
	if (!nl)
		return take;
	if (d->line_len < 2 || d->line[d->line_len - 2] != '\r') {
		fail(d, 400, d->st == ST_HEADER ? "InvalidChunkSizeError" :
		     "MalformedTrailerError", "lines must end with CRLF");
		return take;
	}
	d->line_len -= 2;
	d->line[d->line_len] = '\0';
	if (memchr(d->line, '\r', d->line_len) || memchr(d->line, '\0', d->line_len)) {
		fail(d, 400, d->st == ST_HEADER ? "InvalidChunkSizeError" :
		     "MalformedTrailerError", "a stray CR or NUL in a line");
		return take;
	}
	*complete = 1;
	return take;
}

enum awschunked_status awschunked_feed(struct awschunked *d, const char *data,
				       size_t len)
{
	size_t i = 0;

	while (i < len) {
		enum awschunked_status rc = AWSCHUNKED_MORE;
		size_t n;
		int complete;

		switch (d->st) {
		case ST_HEADER:
		case ST_TRAILER:
			i += read_line(d, data + i, len - i, &complete);
			if (d->st == ST_ERROR || !complete)
				break;
			rc = d->st == ST_HEADER ? chunk_header(d) : trailer_line(d);
			d->line_len = 0;
			break;
		case ST_DATA:
			n = len - i < d->remaining ? len - i : (size_t)d->remaining;
			rc = take_data(d, data + i, n);
			i += n;
			d->remaining -= n;
			if (rc == AWSCHUNKED_MORE && d->remaining == 0)
				d->st = ST_DATA_CR;
			break;
		case ST_DATA_CR:
		case ST_DATA_LF:
			if (data[i] != (d->st == ST_DATA_CR ? '\r' : '\n'))
				return fail(d, 400, "InvalidChunkSizeError",
					    "chunk data is longer than its size says");
			i++;
			if (d->st == ST_DATA_CR) {
				d->st = ST_DATA_LF;
				break;
			}
			d->st = ST_HEADER;
			rc = end_chunk(d);
			break;
		case ST_END:
		case ST_DONE:
			return fail(d, 400, "IncompleteBody",
				    "data after the end of the aws-chunked body");
		case ST_ERROR:
			return AWSCHUNKED_ERROR;
		}
		if (rc == AWSCHUNKED_ERROR || d->st == ST_ERROR)
			return AWSCHUNKED_ERROR;
	}
	return d->st == ST_ERROR ? AWSCHUNKED_ERROR : AWSCHUNKED_MORE;
}

enum awschunked_status awschunked_finish(struct awschunked *d)
{
	if (d->st == ST_ERROR)
		return AWSCHUNKED_ERROR;
	if (d->st == ST_DONE)
		return AWSCHUNKED_DONE;
	/* tolerated: the final empty line missing after whole trailer lines
	 * that verify; if they do not, the body was most likely cut short */
	if (d->st == ST_TRAILER && d->line_len == 0 && d->trailer_len > 0 &&
	    end_trailer(d) == AWSCHUNKED_ERROR)
		return fail(d, 400, "IncompleteBody",
			    "The aws-chunked body ended inside its trailer.");
	if (d->st != ST_END)
		return fail(d, 400, "IncompleteBody",
			    "The aws-chunked body ended before its final chunk.");
	if (d->has_held && emit(d, &d->held, 1))
		return fail(d, 500, "InternalError", "the body could not be forwarded");
	d->has_held = 0;
	d->st = ST_DONE;
	return AWSCHUNKED_DONE;
}
