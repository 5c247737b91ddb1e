/* timesrc.h — the clocks the lock code reads, injected so tests never sleep.
 *
 * Lease arithmetic takes "now" from a struct timesrc, never from the system
 * directly: production code passes timesrc_system(), tests pass a fake whose
 * hands they move. */
#ifndef FENCE_TIMESRC_H
#define FENCE_TIMESRC_H

#include <stdint.h>

struct timesrc {
	/* Unix time in milliseconds (the local store's "server" clock). */
	int64_t (*wall_ms)(void *ctx);
	/* Monotonic milliseconds, arbitrary origin (holder deadlines). */
	int64_t (*mono_ms)(void *ctx);
	/* Sleep (or, in tests, advance the fake clock) by ms milliseconds. */
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *ctx;
};

/* The real clocks: CLOCK_REALTIME, CLOCK_MONOTONIC and nanosleep().
 * Returns a pointer to a static object; never NULL. */
const struct timesrc *timesrc_system(void);

static inline int64_t timesrc_wall_ms(const struct timesrc *t) { return t->wall_ms(t->ctx); }
static inline int64_t timesrc_mono_ms(const struct timesrc *t) { return t->mono_ms(t->ctx); }
static inline void timesrc_sleep_ms(const struct timesrc *t, int64_t ms) { t->sleep_ms(t->ctx, ms); }

#endif
