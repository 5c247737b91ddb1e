/* lease.c — lease arithmetic on the server's one-second clock, pure: no I/O,
 * no clock of its own, no allocation. It judges a lease the way a contender
 * must (rounded in the holder's favour); the holder's own deadline is kept on
 * the monotonic clock by lock.c. */
#include <stdint.h>

#include "lock.h"

/* Saturating arithmetic: payloads and servers may carry absurd numbers. */
static int64_t sub_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t mul1000_sat(int64_t a)
{
	int64_t r;

	if (__builtin_mul_overflow(a, (int64_t)1000, &r))
		return a < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

/* Both stamps are truncated to the second, so the real time elapsed since the
 * write lies in (date - lm - 1, date - lm + 1) seconds. A contender takes the
 * smallest: elapsed = (date - lm) * 1000 - 1000, so the lease counts as live
 * for up to one extra second and never lapses early by the server's clock. */
int64_t lock_lease_remaining_ms(int64_t last_modified_s, int64_t validity_ms,
				int64_t server_date_s)
{
	int64_t elapsed_ms = sub_sat(mul1000_sat(sub_sat(server_date_s, last_modified_s)), 1000);

	return sub_sat(validity_ms, elapsed_ms);
}
