/* utf8.h — UTF-8 validation shared by the modules that write text for
 * clients (S3 XML errors, JSON access log, Prometheus labels). */
#ifndef FENCE_UTF8_H
#define FENCE_UTF8_H

#include <stddef.h>

/* Length (1-4) of the valid UTF-8 sequence at p, with n >= 1 bytes left;
 * 0 if it is invalid: overlong, a surrogate, above U+10FFFF, or truncated. */
size_t utf8_seq_len(const unsigned char *p, size_t n);

#endif
