/* awschunked.h — an incremental decoder and verifier for aws-chunked request
 * bodies (Content-Encoding: aws-chunked), as S3 clients send them:
 *
 *   signed:    hex-size;chunk-signature=SIG\r\n DATA \r\n ... 0;chunk-signature=SIG\r\n
 *   unsigned:  hex-size\r\n DATA \r\n ... 0\r\n
 *   then, with a trailer:  x-amz-checksum-crc32:BASE64\r\n
 *                          [x-amz-trailer-signature:SIG\r\n]   (signed form)
 *   and a final \r\n.
 *
 * Bytes may arrive split anywhere. Each chunk signature is checked in the
 * chain that starts at the request's seed signature (wire/sigv4.c computes
 * them), then the trailer signature, the decoded length against
 * x-amz-decoded-content-length, and the checksum trailer (crc32, crc32c,
 * crc64nvme, sha1, sha256). Decoded data goes to a callback; its final byte
 * is held back until everything has been verified, so an upstream request
 * framed with Content-Length = decoded length cannot complete with a body
 * that fails (the caller aborts it instead). State is bounded: a chunk
 * header line is at most 4 KiB, the trailer block at most 16 KiB. No I/O. */
#ifndef FENCE_AWSCHUNKED_H
#define FENCE_AWSCHUNKED_H

#include <stddef.h>
#include <stdint.h>

#define AWSCHUNKED_LINE_MAX     4096
#define AWSCHUNKED_TRAILER_MAX  16384

enum awschunked_mode {
	AWSCHUNKED_SIGNED,            /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
	AWSCHUNKED_SIGNED_TRAILER,    /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
	AWSCHUNKED_UNSIGNED_TRAILER,  /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

struct awschunked_params {
	enum awschunked_mode mode;
	/* signed modes: from struct auth_result (copied) */
	const unsigned char *signing_key;  /* 32 bytes */
	const char *amz_date;
	const char *scope;
	const char *seed_signature;
	int64_t decoded_length;     /* x-amz-decoded-content-length; -1: unchecked */
	/* x-amz-trailer ("x-amz-checksum-crc32"); NULL or "": no trailer
	 * expected (a trailer that comes anyway is refused) */
	const char *trailer_name;
	/* signed modes only: parse the chunk-signature framing but verify no
	 * chunk or trailer signature (no signing_key needed). For a server
	 * that authenticates nothing (the embedded store with authentication
	 * off), never where a signature decides anything. Checksum trailers
	 * are still verified. */
	int signatures_unchecked;
};

enum awschunked_status {
	AWSCHUNKED_MORE = 0,  /* consumed everything; feed more, or finish */
	AWSCHUNKED_DONE,      /* (finish only) the body is complete and verified */
	AWSCHUNKED_ERROR,     /* awschunked_error() says what to answer */
};

/* Receives decoded bytes; returns 0, or -1 to stop (the decoder then fails
 * with 500 InternalError). */
typedef int (*awschunked_data_fn)(void *arg, const char *data, size_t len);

struct awschunked;

/* A decoder. on_data may be NULL (verify only). Returns NULL on ENOMEM.
 * Bad parameters (an unknown trailer checksum, a missing key in a signed
 * mode) are not NULL: the first feed fails with the reason. */
struct awschunked *awschunked_new(const struct awschunked_params *params,
				  awschunked_data_fn on_data, void *arg);

/* Feeds len bytes of the encoded body; all of them are consumed. Returns
 * MORE, or ERROR (then and forever after: awschunked_error). Bytes after
 * the end of the encoding are an error. Never returns DONE: the end is
 * decided by awschunked_finish, so the last decoded byte is released only
 * once the client's whole HTTP body has been seen. */
enum awschunked_status awschunked_feed(struct awschunked *d, const char *data,
				       size_t len);

/* The client's HTTP body ended. Returns DONE, after emitting the held-back
 * final byte, when the encoding was complete and everything verified; a
 * missing final empty line after a complete trailer line is tolerated.
 * Otherwise ERROR (400 IncompleteBody when the encoding was cut short). */
enum awschunked_status awschunked_finish(struct awschunked *d);

/* The error of an ERROR status: HTTP status (400, or 500 when on_data
 * failed), S3 code and message (static strings or owned by d). Codes:
 * IncompleteBody, InvalidChunkSizeError, SignatureDoesNotMatch, BadDigest,
 * MalformedTrailerError, InvalidRequest, InternalError. */
void awschunked_error(const struct awschunked *d, int *status, const char **code,
		      const char **message);

/* Decoded bytes so far. */
int64_t awschunked_decoded(const struct awschunked *d);

/* Frees d, wiping key material. Accepts NULL. */
void awschunked_free(struct awschunked *d);

#endif
