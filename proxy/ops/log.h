/* log.h — the daemon's leveled logger.
 *
 * One line per event on stderr: time, level, message. Messages are
 * lowercase with values quoted (nginx style): log_info("listening on \"%s\"",
 * addr); numbers are not quoted, so a line reads as a sentence:
 * log_info("%d event-loop workers", n). The macros test the level before evaluating their arguments, so a
 * disabled debug line costs one comparison. Not for libraries: only the
 * daemon's modules log. */
#ifndef FENCE_LOG_H
#define FENCE_LOG_H

enum log_level {
	LOG_LEVEL_DEBUG = 0,
	LOG_LEVEL_INFO,
	LOG_LEVEL_WARN,
	LOG_LEVEL_ERROR,
	LOG_LEVEL_OFF,
};

/* The current threshold; lines below it are dropped. Default: info. */
extern enum log_level log_threshold;

/* Sets the threshold. */
void log_set_level(enum log_level level);

/* Parses "debug", "info", "warn", "error" or "off" into *level. Returns 0, or
 * -1 (and leaves *level alone) for anything else. */
int log_parse_level(const char *name, enum log_level *level);

/* Writes one line at level (no level check: use the macros). */
void log_write(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_at(level, ...) do { \
	if ((level) >= __atomic_load_n(&log_threshold, __ATOMIC_RELAXED)) \
		log_write((level), __VA_ARGS__); \
} while (0)

#define log_debug(...) log_at(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...)  log_at(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)  log_at(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_at(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
