/* logfile.c — opens the access and error log files and reopens them on
 * SIGUSR1 (logfile.h). A reopen opens the path anew and dup3()s the new
 * descriptor over the old one, so the access log's FILE * and the error
 * log's fd 2 stay valid for every writer (the loop and worker threads) and
 * no line is lost or split between files. It never renames, truncates or
 * deletes a file: rotation is logrotate's job. */
#include "logfile.h"
#include "logbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opens path for appending, creating it 0640. An fd, or -1 with err. */
static int open_append(const char *path, const char *what, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);

	if (fd < 0)
		snprintf(err, errlen, "cannot open %s \"%s\": %s", what, path, strerror(errno));
	return fd;
}

/* Points target at a fresh descriptor of path (flags: O_CLOEXEC or 0 for
 * the new target). On failure target keeps its file. 0 or -1 with err. */
static int point_at(const char *path, int target, int flags, const char *what,
		    char *err, size_t errlen)
{
	int fd = open_append(path, what, err, errlen), rc = 0;

	if (fd < 0)
		return -1;
	if (fd != target && dup3(fd, target, flags) < 0) {
		snprintf(err, errlen, "cannot reopen %s \"%s\": %s", what, path, strerror(errno));
		rc = -1;
	}
	if (fd != target)
		close(fd);
	return rc;
}

int logfiles_open(struct logfiles *lf, const char *access, const char *error,
		  char *err, size_t errlen)
{
	int fd = -1;

	memset(lf, 0, sizeof(*lf));
	if (access && strcmp(access, "-") == 0) {
		lf->access = stderr;
	} else if (access && strcmp(access, "off") != 0) {
		if (!(lf->access_path = strdup(access)))
			goto nomem;
		if ((fd = open_append(access, "access log", err, errlen)) < 0)
			goto fail;
		if (!(lf->access = fdopen(fd, "a")))
			goto nomem;
		fd = -1; /* the stream owns it */
		if (!(lf->access_buf = logbuf_new(fileno(lf->access), LOGFILES_ACCESS_BUFFER)))
			goto nomem;
	}
	/* the error log last: a failure above is still printed where the
	 * operator started the daemon */
	if (error && strcmp(error, "-") != 0) {
		if (!(lf->error_path = strdup(error)))
			goto nomem;
		if (point_at(error, STDERR_FILENO, 0, "error log", err, errlen) < 0)
			goto fail;
	}
	return 0;
nomem:
	snprintf(err, errlen, "cannot open the log files: out of memory");
fail:
	if (fd >= 0)
		close(fd);
	logfiles_close(lf);
	return -1;
}

int logfiles_reopen(struct logfiles *lf, char *err, size_t errlen)
{
	int reopened = 0, failed = 0;
	char why[512];

	if (lf->error_path) {
		if (point_at(lf->error_path, STDERR_FILENO, 0, "error log", why, sizeof(why)) < 0)
			failed = 1, snprintf(err, errlen, "%s", why);
		else
			reopened++;
	}
	if (lf->access_path && lf->access) {
		/* what was written so far belongs to the old file */
		logfiles_flush(lf);
		fflush(lf->access);
		if (point_at(lf->access_path, fileno(lf->access), O_CLOEXEC, "access log",
			     why, sizeof(why)) < 0) {
			if (!failed)
				snprintf(err, errlen, "%s", why);
			failed = 1;
		} else {
			reopened++;
		}
	}
	return failed ? -1 : reopened;
}

int logfiles_start_flush(struct logfiles *lf, struct event_base *base)
{
	if (!lf->access_buf)
		return 0;
	return logbuf_start_timer(lf->access_buf, base, LOGFILES_ACCESS_FLUSH_MS);
}

void logfiles_access_write(struct logfiles *lf, const char *line, size_t len)
{
	if (lf->access_buf) {
		logbuf_add(lf->access_buf, line, len);
	} else if (lf->access) {
		fwrite(line, 1, len, lf->access);
		fflush(lf->access);
	}
}

void logfiles_flush(struct logfiles *lf)
{
	if (lf->access_buf)
		logbuf_flush(lf->access_buf);
}

void logfiles_close(struct logfiles *lf)
{
	logbuf_free(lf->access_buf); /* flushes: no line is lost at exit */
	lf->access_buf = NULL;
	if (lf->access && lf->access != stderr)
		fclose(lf->access);
	lf->access = NULL;
	free(lf->access_path);
	free(lf->error_path);
	lf->access_path = NULL;
	lf->error_path = NULL;
}
