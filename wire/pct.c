/* pct.c — strict percent-decoding, AWS URI encoding and hex (pct.h).
 * Knows nothing of paths, queries or S3: callers split first, then decode
 * each piece. */
#include "pct.h"

#include <errno.h>
#include <stdlib.h>

static const char HEX_UPPER[] = "0123456789ABCDEF";
static const char HEX_LOWER[] = "0123456789abcdef";

int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void hex_encode(const unsigned char *bin, size_t len, char *hex)
{
	for (size_t i = 0; i < len; i++) {
		hex[2 * i] = HEX_LOWER[bin[i] >> 4];
		hex[2 * i + 1] = HEX_LOWER[bin[i] & 0xf];
	}
	hex[2 * len] = '\0';
}

ssize_t pct_decode(const char *s, size_t len, unsigned flags, char *out, size_t outcap)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int hi = i + 2 < len ? hex_value((unsigned char)s[i + 1]) : -1;
			int lo = i + 2 < len ? hex_value((unsigned char)s[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -1;
			c = hi << 4 | lo;
			if (c == 0 && (flags & PCT_NO_NUL))
				return -1;
			i += 2;
		} else if (c == '+' && (flags & PCT_PLUS_SPACE)) {
			c = ' ';
		}
		if (o + 1 >= outcap)
			return -1;
		out[o++] = (char)c;
	}
	if (outcap == 0)
		return -1;
	out[o] = '\0';
	return (ssize_t)o;
}

char *pct_decode_dup(const char *s, size_t len, unsigned flags, size_t *outlen)
{
	char *out = malloc(len + 1);
	ssize_t n;

	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	n = pct_decode(s, len, flags, out, len + 1);
	if (n < 0) {
		free(out);
		errno = EINVAL;
		return NULL;
	}
	if (outlen)
		*outlen = (size_t)n;
	return out;
}

static int stays(unsigned char c, unsigned flags)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~' ||
	       (c == '/' && (flags & PCT_KEEP_SLASH));
}

size_t pct_encoded_len(const char *s, size_t len, unsigned flags)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += stays((unsigned char)s[i], flags) ? 1 : 3;
	return n;
}

ssize_t pct_encode(const char *s, size_t len, unsigned flags, char *out, size_t outcap)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (stays(c, flags)) {
			if (o + 1 >= outcap)
				return -1;
			out[o++] = (char)c;
			continue;
		}
		if (o + 3 >= outcap)
			return -1;
		out[o++] = '%';
		out[o++] = HEX_UPPER[c >> 4];
		out[o++] = HEX_UPPER[c & 0xf];
	}
	if (outcap == 0)
		return -1;
	out[o] = '\0';
	return (ssize_t)o;
}

char *pct_encode_dup(const char *s, size_t len, unsigned flags)
{
	size_t n = pct_encoded_len(s, len, flags);
	char *out = malloc(n + 1);

	if (!out)
		return NULL;
	pct_encode(s, len, flags, out, n + 1);
	return out;
}
