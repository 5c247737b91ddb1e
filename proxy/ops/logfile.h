/* logfile.h — the daemon's two log files: the access log (a stdio stream
 * the access-log writer appends JSON lines to) and the error log (what the
 * leveled logger, log.h, writes to stderr).
 *
 * Either may be a file, which SIGUSR1 reopens by path (nginx semantics:
 * logrotate renames the file, sends USR1, and the daemon carries on in a
 * new file of the same name without a restart or copytruncate). A reopen
 * replaces the descriptor under the same FILE * / fd 2, so writers keep
 * their pointers. An access log file is buffered (64 KiB, written out
 * 100 ms after its first waiting line, when full, before a reopen and at
 * close: logbuf.h); "-" (stderr) is written line by line, in order with
 * the error log. It does not rotate or compress anything. */
#ifndef FENCE_LOGFILE_H
#define FENCE_LOGFILE_H

#include <stddef.h>
#include <stdio.h>

#include <event2/event.h>

#define LOGFILES_ACCESS_BUFFER   ((size_t)64 * 1024)
#define LOGFILES_ACCESS_FLUSH_MS 100

struct logbuf;

/* States: a path of NULL means "not a file" (the access log is off or is
 * stderr; the error log is the inherited stderr); then reopen does nothing
 * for it. */
struct logfiles {
	char *access_path;  /* the access log's file, or NULL */
	FILE *access;       /* NULL: no access log; stderr: "-" */
	char *error_path;   /* the error log's file (fd 2), or NULL */
	struct logbuf *access_buf; /* the access log file's buffer, or NULL */
};

/* Opens both. access: a path, "-" (stderr) or NULL / "off" (none). error:
 * a path, or NULL / "-" (leave stderr alone); fd 2 is pointed at the file,
 * so whatever the process prints to stderr lands there. Files are opened
 * for appending and created 0640. Returns 0, or -1 with a message in err
 * (nothing is left open). */
int logfiles_open(struct logfiles *lf, const char *access, const char *error,
		  char *err, size_t errlen);

/* SIGUSR1: reopens each file by its path, error log first. A file that
 * cannot be opened keeps the descriptor it had (the daemon goes on
 * logging to the old file). Returns the number of files reopened, or -1
 * with a message in err naming the first failure. */
int logfiles_reopen(struct logfiles *lf, char *err, size_t errlen);

/* Starts the access log's flush timer on base (a no-op without a buffered
 * access log). Returns 0, or -1 on ENOMEM. */
int logfiles_start_flush(struct logfiles *lf, struct event_base *base);

/* Appends one access-log line (len bytes, newline included) whole: to
 * the buffer, or straight to stderr. A no-op without an access log.
 * Thread-safe. */
void logfiles_access_write(struct logfiles *lf, const char *line, size_t len);

/* Writes out the buffered access-log lines. */
void logfiles_flush(struct logfiles *lf);

/* Flushes and closes the access log (unless it is stderr) and frees the paths. The
 * error log stays on fd 2. Accepts a zeroed struct. */
void logfiles_close(struct logfiles *lf);

#endif
