/* procstat.c — the process's own resource use from /proc/self (stat,
 * statm, fd) and getrlimit, for the process_* metrics. No caching, no
 * allocation beyond the directory walk. */
#include "procstat.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Seconds since boot from /proc/uptime, or -1. */
static double uptime_seconds(void)
{
	FILE *f = fopen("/proc/uptime", "r");
	double up = -1;

	if (f) {
		if (fscanf(f, "%lf", &up) != 1)
			up = -1;
		fclose(f);
	}
	return up;
}

/* utime, stime and starttime (clock ticks) from /proc/self/stat: fields 14,
 * 15 and 22, counted after the ")" that ends the command name. */
static int read_stat(double *cpu, double *start)
{
	char buf[1024], *p;
	unsigned long long utime, stime, starttime;
	long ticks = sysconf(_SC_CLK_TCK);
	double up = uptime_seconds();
	size_t n;
	FILE *f = fopen("/proc/self/stat", "r");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || ticks <= 0 ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
		   "%*d %*d %llu", &utime, &stime, &starttime) != 3)
		return -1;
	*cpu = (double)(utime + stime) / (double)ticks;
	if (up >= 0)
		*start = (double)time(NULL) - up + (double)starttime / (double)ticks;
	return 0;
}

static int read_rss(double *rss)
{
	unsigned long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%lu %lu", &size, &resident) == 2;
	fclose(f);
	if (!ok)
		return -1;
	*rss = (double)resident * (double)sysconf(_SC_PAGESIZE);
	return 0;
}

static int count_fds(double *n)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	long count = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			count++;
	closedir(d);
	*n = (double)(count > 0 ? count - 1 : 0); /* less the walk's own */
	return 0;
}

int procstat_read(struct procstat *out)
{
	struct rlimit rl;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	rc |= read_stat(&out->cpu_seconds, &out->start_time);
	rc |= read_rss(&out->resident_bytes);
	rc |= count_fds(&out->open_fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		out->max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : (double)rl.rlim_cur;
	return rc ? -1 : 0;
}
