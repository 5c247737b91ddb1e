/* timesrc.c — the system clocks behind struct timesrc. Nothing else. */
#include <errno.h>
#include <time.h>

#include "timesrc.h"

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t system_wall_ms(void *ctx)
{
	(void)ctx;
	return clock_ms(CLOCK_REALTIME);
}

static int64_t system_mono_ms(void *ctx)
{
	(void)ctx;
	return clock_ms(CLOCK_MONOTONIC);
}

static void system_sleep_ms(void *ctx, int64_t ms)
{
	struct timespec ts;

	(void)ctx;
	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

const struct timesrc *timesrc_system(void)
{
	static const struct timesrc sys = {
		system_wall_ms, system_mono_ms, system_sleep_ms, NULL,
	};
	return &sys;
}
