/* pct.h — the one percent-encoding and hex codec of the program.
 *
 * Every module that decodes a request path or query, encodes a key for a
 * URL or a signature, or prints a digest in hex uses these functions, so
 * routing, permissions, SigV4 canonicalization, fencing and the embedded
 * store agree byte for byte on what a request names.
 *
 * Decoding is strict: '%' must be followed by two hex digits (either
 * case), anything else is an error, never passed through as a literal.
 * Encoding is AWS's URI encoding (SigV4 "UriEncode", S3 encoding-type=url):
 * the unreserved bytes A-Z a-z 0-9 - . _ ~ stay, every other byte becomes
 * %XX with uppercase hex. Pure: no state, no locale, no allocation except
 * in the *_dup functions. */
#ifndef FENCE_PCT_H
#define FENCE_PCT_H

#include <stddef.h>
#include <sys/types.h>

/* Decoding flags. */
#define PCT_PLUS_SPACE 0x1u  /* '+' decodes to ' ' (query strings) */
#define PCT_NO_NUL     0x2u  /* an encoded NUL (%00) is an error */

/* Encoding flags. */
#define PCT_KEEP_SLASH 0x4u  /* '/' stays as is (a path), else %2F */

/* The value of hex digit c (0-9, a-f, A-F), or -1. */
int hex_value(int c);

/* Writes the 2*len lowercase hex digits of bin and a NUL into hex, which
 * must hold 2*len + 1 bytes. */
void hex_encode(const unsigned char *bin, size_t len, char *hex);

/* Decodes s[0..len) into out, which holds outcap bytes, and NUL-terminates
 * it (a decoded NUL, allowed without PCT_NO_NUL, shows in the length).
 * Returns the decoded length, or -1 on a malformed escape, a forbidden NUL
 * or an out too small (outcap >= len + 1 always suffices). */
ssize_t pct_decode(const char *s, size_t len, unsigned flags, char *out, size_t outcap);

/* The same into a malloc'd string the caller frees; *outlen (may be NULL)
 * gets the decoded length. NULL on a malformed escape, a forbidden NUL or
 * ENOMEM (errno says which: EINVAL or ENOMEM). */
char *pct_decode_dup(const char *s, size_t len, unsigned flags, size_t *outlen);

/* The length of s[0..len) encoded with flags (PCT_KEEP_SLASH), without
 * the NUL. */
size_t pct_encoded_len(const char *s, size_t len, unsigned flags);

/* Encodes s[0..len) into out (outcap bytes) and NUL-terminates it.
 * Returns the encoded length, or -1 when out is too small
 * (pct_encoded_len() + 1 suffices). */
ssize_t pct_encode(const char *s, size_t len, unsigned flags, char *out, size_t outcap);

/* The same into a malloc'd string the caller frees; NULL on ENOMEM. */
char *pct_encode_dup(const char *s, size_t len, unsigned flags);

#endif
