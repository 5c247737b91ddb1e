/* lockapi_args.h — the body of a lock API call (acquire, renew, release)
 * parsed strictly: pure, no I/O. */
#ifndef FENCE_LOCKAPI_ARGS_H
#define FENCE_LOCKAPI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock/core/lock.h"

#define LOCKAPI_BODY_MAX 16384
#define LOCKAPI_TTL_DEFAULT 30000
#define LOCKAPI_TTL_MAX (24LL * 3600 * 1000)
/* the largest epoch the API accepts: INT64_MAX, so it fits every signed
 * and unsigned 64-bit field downstream of it */
#define LOCKAPI_EPOCH_MAX INT64_MAX

struct lockapi_args {
	char holder[LOCK_HOLDER_MAX];   /* "" absent */
	int64_t ttl_ms;                 /* LOCKAPI_TTL_DEFAULT absent */
	int64_t wait_ms;                /* 0 absent */
	uint64_t epoch;                 /* 0 absent (acquire) */
};

/* Parses body[0..len) (need not be NUL-terminated; len 0 is an empty body)
 * into *out. need_epoch: "epoch" is required (renew, release); without it,
 * "epoch" is not read. max_wait_ms bounds "waitMs".
 *
 * Strict: the body is one JSON object and nothing after it but whitespace; a
 * key that appears twice in any object, at any depth, is refused; an integer
 * field must be written as an integer literal (no fraction, no exponent, no
 * sign unless negative values are in range) whose exact digits are in the
 * field's range — the digits are read from the text, never through a
 * double. Unknown keys are ignored; null counts as absent.
 *
 * Returns 0 on success, -1 with a message naming the key (or the fault) in
 * err on a body the API must answer 400 to; *out is then unspecified. */
int lockapi_args_parse(const char *body, size_t len, bool need_epoch, int64_t max_wait_ms,
		       struct lockapi_args *out, char *err, size_t errlen);

#endif
