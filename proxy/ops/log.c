/* log.c — the leveled logger behind log.h.
 *
 * Formats one line ("2026-01-02T03:04:05.678Z info message") into a stack
 * buffer and writes it with a single write(2), so lines from the loop and
 * worker threads never interleave. It does not rotate, buffer or ship logs:
 * stderr goes wherever systemd or the container runtime sends it. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum log_level log_threshold = LOG_LEVEL_INFO;

static const char *const level_names[] = {
	[LOG_LEVEL_DEBUG] = "debug",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_WARN] = "warn",
	[LOG_LEVEL_ERROR] = "error",
	[LOG_LEVEL_OFF] = "off",
};

void log_set_level(enum log_level level)
{
	__atomic_store_n(&log_threshold, level, __ATOMIC_RELAXED); /* read by every loop */
}

int log_parse_level(const char *name, enum log_level *level)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (name && strcmp(name, level_names[i]) == 0) {
			*level = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_write(enum log_level level, const char *fmt, ...)
{
	char line[2048];
	struct timespec now;
	struct tm tm;
	size_t len;
	va_list ap;
	int n;

	if (level < LOG_LEVEL_DEBUG || level >= LOG_LEVEL_OFF)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	len = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line + len, sizeof(line) - len, ".%03ldZ %s ",
		     now.tv_nsec / 1000000, level_names[level]);
	if (n > 0)
		len += (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	if (n > 0)
		len += (size_t)n < sizeof(line) - len - 1 ? (size_t)n : sizeof(line) - len - 2;
	line[len++] = '\n';
	/* one write per line; a short write on stderr is not worth retrying */
	if (write(STDERR_FILENO, line, len) < 0)
		return;
}
