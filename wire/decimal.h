/* decimal.h — unsigned integers as decimal text without printf, for the
 * per-request paths (epochs in headers and error bodies). Pure, no
 * allocation. */
#ifndef FENCE_DECIMAL_H
#define FENCE_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

#define DECIMAL_U64_MAX 21 /* "18446744073709551615" and the NUL */

/* Writes v in decimal into out (NUL-terminated); returns its length. */
static inline size_t decimal_u64(char out[DECIMAL_U64_MAX], uint64_t v)
{
	char tmp[DECIMAL_U64_MAX];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return n;
}

#endif
