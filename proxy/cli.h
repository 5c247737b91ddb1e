/* cli.h — fencegate's command line: the flags, --help, and what they
 * turn into (the policy to run, the proxy's limits). Parsing and checking
 * only: nothing here opens a socket or a file beyond the -c FILE. */
#ifndef FENCE_CLI_H
#define FENCE_CLI_H

#include "http/proxy.h"
#include "policy/policy.h"

#define MAX_LISTEN 16

/* What the command line says; cli_parse fills it. */
struct options {
	const char *listen[MAX_LISTEN];
	size_t nlisten;
	const char *upstream;
	const char *data_dir;
	const char *lock_store;
	const char *config;
	int test_config;
	enum proxy_mode mode;
	long drain_ms;
	const char *check_bucket;
	const char *access_log;
	const char *error_log;
	long refresh_ms;
	long workers;               /* event loops; 0: one per core */
	int workers_set;
	long store_threads;         /* 0: not given */
	long barrier_timeout_ms;
	long barrier_grace_ms;      /* 0: default; -1: none (--barrier-grace 0) */
	int log_level_set;
	int mode_set;
	int drain_set;
	unsigned long limits_set;   /* OPT_* bits of limit flags given */
	struct proxy_config cfg;    /* the limit flags' values */
};

/* Fills o from argv (defaults first). Returns -1 to go on, or the status
 * to exit with (0 after --help / --version, 2 after a usage error, printed
 * on stderr). */
int cli_parse(int argc, char **argv, struct options *o);

/* The policy of -c FILE, or the one the flags describe: one reference, or
 * NULL after printing why on stderr. */
struct policy *cli_policy(const struct options *o);

/* How many event-loop workers (the flag, else the file's "workers"; 0: one
 * per core this process may run on, 1 in http mode) and store threads (the
 * flag, else "store_threads"). Returns 0, or -1 after printing why on
 * stderr (more than one worker in http mode). */
int cli_threads(const struct options *o, const struct policy *pol, int *workers,
		int *store_threads);

/* The proxy's configuration from the policy, then the limit flags (which
 * win over the file's "limits"). */
void cli_proxy_config(struct proxy_config *cfg, const struct policy *pol,
		      const struct options *o);

#endif
