/* fencectl_int.h — what fencectl's files share: fencectl.c (argument
 * parsing, printing, the commands, main), fencectl_run.c (`run`, which
 * holds a lock while a child process works) and fencectl_proxy.c (--proxy:
 * the lock HTTP API of a fencegate). Part of the fencectl program, not of
 * libfencelock. */
#ifndef FENCE_FENCECTL_INT_H
#define FENCE_FENCECTL_INT_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "lock/core/lock.h"

#define EXIT_HELD 3

struct cli {
	const char *store_url, *prefix, *endpoint, *region, *profile, *proxy, *cacert;
	int json;
	const char *holder;
	int64_t ttl_ms, wait_ms;
	long keep;
	int has_ttl, has_wait, has_holder, has_keep;
	const char *command;
	const char *pos[4];             /* positionals after the command */
	int npos;
	char **child_argv;              /* run: after "--" */
};

/* A usage error: names what to fix, exits 1. */
__attribute__((format(printf, 1, 2), noreturn))
void fencectl_die_usage(const char *fmt, ...);
/* Exit code for a library answer; prints the error for failures. */
int fencectl_report(enum lock_code rc, const char *err);
/* Prints who holds lock name (stderr). */
void fencectl_print_held(const char *name, const struct lock_info *who);
/* EPOCH argument as a number; exits 1 with a usage error if it is not one. */
uint64_t fencectl_parse_epoch(const char *s);
/* Prints obj as one line of JSON on stdout and frees it (exits 1 on ENOMEM). */
void fencectl_print_json(cJSON *obj);
/* fencectl --proxy COMMAND: see fencectl_proxy.c. Returns the exit code. */
int fencectl_cmd_proxy(const struct cli *c);
/* Where `run`'s lease comes from: the store (a struct lock,
 * fencectl_run.c) or a proxy's lock API (fencectl_proxy.c). */
struct fencectl_lease {
	const char *name;            /* the lock's name, for messages */
	void *ctx;                   /* the functions' first argument */
	/* Acquires as c says (holder, --ttl, --wait) into g (epoch, ttl_ms,
	 * deadline_mono_ms by time). Returns 0, or the exit code with what
	 * failed printed (EXIT_HELD: another holds it). */
	int (*acquire)(void *ctx, const struct cli *c, struct lock_grant *g);
	/* lock_keeper_renewer.renew's contract (lock_keeper.h) */
	enum lock_code (*renew)(void *ctx, struct lock_grant *g, char *err, size_t errlen);
	/* Gives g up: LOCK_OK, or a code with err */
	enum lock_code (*release)(void *ctx, struct lock_grant *g, char *err, size_t errlen);
	const struct timesrc *time;  /* the clock of g's deadline */
};

/* fencectl run over lease l: see fencectl_run.c. Returns the exit code. */
int fencectl_run_lease(const struct cli *c, const struct fencectl_lease *l);
/* fencectl run on a store's lock lk. Returns the exit code. */
int fencectl_cmd_run(const struct cli *c, struct lock *lk);

#endif
