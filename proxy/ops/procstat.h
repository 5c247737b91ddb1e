/* procstat.h — what the process uses, for /_fence/metrics: CPU time,
 * resident memory, open and allowed file descriptors, start time. Read
 * from /proc/self on Linux at each scrape; nothing is kept. */
#ifndef FENCE_PROCSTAT_H
#define FENCE_PROCSTAT_H

struct procstat {
	double cpu_seconds;      /* user + system */
	double resident_bytes;
	double open_fds;
	double max_fds;          /* RLIMIT_NOFILE's soft limit */
	double start_time;       /* Unix seconds */
};

/* Fills *out. Returns 0, or -1 when /proc/self could not be read (the
 * fields that could be are filled, the others are 0). */
int procstat_read(struct procstat *out);

#endif
