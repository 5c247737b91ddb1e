/* fencectl_run.c — `fencectl run NAME -- CMD`: acquires the lock, starts
 * CMD with FENCING_TOKEN and FENCE_LOCK in its environment, renews every
 * ttl/3 on a thread of its own and stops CMD (SIGTERM, then SIGKILL after a
 * grace period) when a renewal reports the lock lost or the holder's
 * deadline passes, by the main loop's clock, never waiting on a request in
 * flight; releases at the end, or exits 3 (EXIT_HELD) with "lease lost",
 * whatever CMD's status after our SIGTERM. The lease is a store's lock
 * (here) or one taken through a proxy's lock API (fencectl_proxy.c): the
 * same loop runs both (struct fencectl_lease). It forwards
 * SIGINT/SIGTERM/SIGHUP to CMD; it parses no arguments (fencectl.c does). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lock/core/lock.h"
#include "lock/core/lock_keeper.h"
#include "lock/store/timesrc.h"
#include "fencectl_int.h"

#define RUN_POLL_MS 50
#define RUN_GRACE_MAX_MS 5000

static volatile sig_atomic_t run_child_pid;
static volatile sig_atomic_t run_got_signal;

static void forward_signal(int sig)
{
	run_got_signal = sig;
	if (run_child_pid > 0)
		kill((pid_t)run_child_pid, sig);
}

static void nap_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL); /* a signal may cut it short: fine, we poll */
}

/* The keeper's retry report (on its thread): the store failed, not the lock. */
static void report_retry(const char *err, void *arg)
{
	fprintf(stderr, "fencectl: renewing lock \"%s\" failed, will retry: %s\n",
		(const char *)arg, err);
}

/* ---- the lease of a store's lock -------------------------------------- */

static int store_acquire(void *ctx, const struct cli *c, struct lock_grant *g)
{
	struct lock_acquire_opts ao = { .holder = c->holder, .ttl_ms = c->ttl_ms,
					.wait_ms = c->wait_ms };
	struct lock *lk = ctx;
	struct lock_info who;
	char err[512] = "";
	enum lock_code rc;

	memset(&who, 0, sizeof(who));
	rc = lock_acquire(lk, &ao, g, &who, err, sizeof(err));
	if (rc == LOCK_HELD || (rc == LOCK_ERR_TIMEOUT && who.epoch)) {
		fencectl_print_held(lock_name(lk), &who);
		return EXIT_HELD;
	}
	return rc == LOCK_OK ? 0 : fencectl_report(rc, err);
}

static enum lock_code store_renew(void *ctx, struct lock_grant *g, char *err, size_t errlen)
{
	return lock_renew(ctx, g, err, errlen);
}

static enum lock_code store_release(void *ctx, struct lock_grant *g, char *err, size_t errlen)
{
	return lock_release(ctx, g, err, errlen);
}

int fencectl_cmd_run(const struct cli *c, struct lock *lk)
{
	struct fencectl_lease l = { .name = lock_name(lk), .ctx = lk, .acquire = store_acquire,
				    .renew = store_renew, .release = store_release,
				    .time = timesrc_system() };

	return fencectl_run_lease(c, &l);
}

/* ---- the child under a lease ------------------------------------------ */

int fencectl_run_lease(const struct cli *c, const struct fencectl_lease *l)
{
	const struct timesrc *ts = l->time;
	struct lock_keeper_renewer renewer = { l->renew, l->ctx, l->time };
	struct sigaction sa;
	struct lock_grant g;
	enum lock_code rc;
	char err[512] = "", token[32];
	int64_t now, kill_at = 0, period, grace;
	int status = 0, lost = 0, killed = 0, code;
	struct lock_keeper_opts ko = { .on_retry = report_retry };
	struct lock_keeper *keeper;
	char why[512] = "";
	pid_t pid, r;

	if (!c->child_argv || !c->child_argv[0])
		fencectl_die_usage("%s", "run needs a command after \"--\": fencectl run NAME -- CMD [ARGS...]");
	memset(&g, 0, sizeof(g));
	code = l->acquire(l->ctx, c, &g);
	if (code != 0)
		return code;
	snprintf(token, sizeof(token), "%" PRIu64, g.epoch);
	if (setenv("FENCING_TOKEN", token, 1) != 0 || setenv("FENCE_LOCK", l->name, 1) != 0) {
		fprintf(stderr, "fencectl: cannot set the child's environment\n");
		l->release(l->ctx, &g, err, sizeof(err));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fencectl: fork: %s\n", strerror(errno));
		l->release(l->ctx, &g, err, sizeof(err));
		return 1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execvp(c->child_argv[0], c->child_argv);
		fprintf(stderr, "fencectl: cannot run \"%s\": %s\n", c->child_argv[0], strerror(errno));
		_exit(127);
	}
	run_child_pid = pid;

	period = g.ttl_ms / 3 > 1 ? g.ttl_ms / 3 : 1;
	grace = period < RUN_GRACE_MAX_MS ? period : RUN_GRACE_MAX_MS;
	ko.period_ms = period;
	ko.arg = (void *)l->name;
	keeper = lock_keeper_start_with(&renewer, &g, &ko, err, sizeof(err));
	if (!keeper) {
		fprintf(stderr, "fencectl: %s; stopping the child\n", err);
		kill(pid, SIGTERM);
		snprintf(why, sizeof(why), "no renewal thread");
		lost = 1;
		kill_at = timesrc_mono_ms(ts) + grace;
	}
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			fprintf(stderr, "fencectl: waitpid: %s\n", strerror(errno));
			status = 1 << 8;
			break;
		}
		now = timesrc_mono_ms(ts);
		if (lost && !killed && now >= kill_at) {
			fprintf(stderr, "fencectl: child %ld still running %lld ms after SIGTERM; "
				"sending SIGKILL\n", (long)pid, (long long)grace);
			kill(pid, SIGKILL);
			killed = 1;
		}
		/* judged here by this thread's clock, whatever a renewal in
		 * flight on the keeper's thread is doing */
		if (!lost && lock_keeper_lost(keeper, why, sizeof(why))) {
			fprintf(stderr, "fencectl: lock \"%s\": %s; stopping the child\n",
				l->name, why);
			lost = 1;
		}
		if (lost && !kill_at) {
			kill(pid, SIGTERM);
			kill_at = now + grace;
		}
		nap_ms(RUN_POLL_MS);
	}
	run_child_pid = 0;
	/* a renewal in flight ends by the deadline at the latest */
	if (keeper && !lost && lock_keeper_lost(keeper, why, sizeof(why)))
		lost = 1; /* lost as the child exited */
	if (lock_keeper_stop(keeper) && !lost) {
		snprintf(why, sizeof(why), "lost while the command was exiting");
		lost = 1;
	}

	if (!lost) {
		err[0] = '\0';
		rc = l->release(l->ctx, &g, err, sizeof(err));
		if (rc != LOCK_OK)
			fprintf(stderr, "fencectl: releasing lock \"%s\" epoch %" PRIu64 ": %s\n",
				l->name, g.epoch, err[0] ? err : lock_strerror(rc));
	} else {
		fprintf(stderr, "fencectl: lease lost: lock \"%s\" epoch %" PRIu64 " (%s)\n",
			l->name, g.epoch, why);
	}
	if (WIFEXITED(status))
		code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		code = 128 + WTERMSIG(status);
	else
		code = 1;
	if (lost) /* whatever the command's status: SIGTERM is ours */
		code = EXIT_HELD;
	return code;
}
