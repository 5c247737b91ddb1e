/* sim_main.c — `sim`: runs seeded schedules of the simulation (sim.h) and
 * reports what the checker found.
 *
 *   sim [--seeds N] [--first-seed S] [--mode s3|http|both] [--identical]
 *       [--old-idle] [--old-renew] [--old-cas] [--old-barrier] [--bad-unread] [--unfenced]
 *       [--expect-violations] [--duration MS] [-v]
 *
 * Exit 0 when no schedule had a violation (with --expect-violations: when
 * at least one had, which is how the old logic and the unfenced control
 * are shown to be caught); the first violating seed is printed with the
 * command that replays it. */
#include "sim.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long violations(const struct sim_report *r)
{
	return r->late_acks + r->stale_decided + r->overlaps + r->twice + r->http_reorders;
}

static void add(struct sim_report *sum, const struct sim_report *r)
{
	sum->late_acks += r->late_acks;
	sum->windowed += r->windowed;
	sum->stale_decided += r->stale_decided;
	sum->overlaps += r->overlaps;
	sum->twice += r->twice;
	sum->http_reorders += r->http_reorders;
	sum->acks += r->acks;
	sum->refused += r->refused;
	sum->grants += r->grants;
	sum->requests += r->requests;
	sum->unread_creates += r->unread_creates;
	sum->unread_existed += r->unread_existed;
}

static void usage(void)
{
	fprintf(stderr, "usage: sim [--seeds N] [--first-seed S] [--mode s3|http|both] "
		"[--identical] [--old-idle] [--old-renew] [--old-cas] [--old-barrier] [--bad-unread] "
		"[--unfenced] [--expect-violations] [--duration MS] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sim_config cfg = { .workers = 3, .replicas = 3, .duration_ms = 12000,
				  .ttl_ms = 3000, .refresh_ms = 1000 };
	struct sim_report sum, rep;
	unsigned long seeds = 100, bad = 0, s3_runs = 0, http_runs = 0;
	uint64_t first = 1, first_bad = 0;
	const char *mode = "both";
	bool expect = false;
	char first_msg[512] = "";

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--seeds") == 0 && v)
			seeds = strtoul(v, NULL, 10), i++;
		else if (strcmp(a, "--first-seed") == 0 && v)
			first = strtoull(v, NULL, 10), i++;
		else if (strcmp(a, "--mode") == 0 && v)
			mode = v, i++;
		else if (strcmp(a, "--duration") == 0 && v)
			cfg.duration_ms = strtoll(v, NULL, 10), i++;
		else if (strcmp(a, "--identical") == 0)
			cfg.identical_bodies = true;
		else if (strcmp(a, "--old-idle") == 0)
			cfg.old_idle = true;
		else if (strcmp(a, "--old-renew") == 0)
			cfg.old_renew = true;
		else if (strcmp(a, "--old-cas") == 0)
			cfg.old_cas = true;
		else if (strcmp(a, "--old-barrier") == 0)
			cfg.old_barrier = true;
		else if (strcmp(a, "--bad-unread") == 0)
			cfg.bad_unread = true;
		else if (strcmp(a, "--unfenced") == 0)
			cfg.unfenced = true;
		else if (strcmp(a, "--expect-violations") == 0)
			expect = true;
		else if (strcmp(a, "-v") == 0)
			cfg.verbose = true;
		else
			usage();
	}
	if (strcmp(mode, "s3") && strcmp(mode, "http") && strcmp(mode, "both"))
		usage();
	memset(&sum, 0, sizeof(sum));
	for (unsigned long n = 0; n < seeds; n++) {
		uint64_t seed = first + n;
		bool s3 = strcmp(mode, "s3") == 0 || (strcmp(mode, "both") == 0 && seed % 2);

		memset(&rep, 0, sizeof(rep));
		cfg.seed = seed;
		sim_reset(seed);
		if (s3) {
			sim_world_run(&cfg, &rep);
			s3_runs++;
		} else {
			sim_http_run(&cfg, &rep);
			http_runs++;
		}
		add(&sum, &rep);
		if (violations(&rep)) {
			if (!bad++) {
				first_bad = seed;
				snprintf(first_msg, sizeof(first_msg), "%s", rep.first);
			}
			if (cfg.verbose)
				printf("seed %" PRIu64 ": %s\n", seed, rep.first);
		}
	}
	printf("sim: %lu schedules (%lu S3 mode, %lu HTTP mode), %lu grants, %lu acknowledged "
	       "writes, %lu refused, %lu store requests\n", seeds, s3_runs, http_runs, sum.grants,
	       sum.acks, sum.refused, sum.requests);
	printf("sim: object CAS: %lu unread creates (If-None-Match \"*\" on a cache miss), %lu "
	       "of them found the key and were read and decided\n", sum.unread_creates,
	       sum.unread_existed);
	printf("sim: violations in %lu schedules: %lu late acknowledged writes, %lu decided on "
	       "knowledge older than the refresh interval, %lu overlapping holders, %lu epochs "
	       "handed out twice, %lu HTTP reorders; %lu inside the documented window\n", bad,
	       sum.late_acks, sum.stale_decided, sum.overlaps, sum.twice, sum.http_reorders,
	       sum.windowed);
	if (bad)
		printf("sim: first at seed %" PRIu64 ": %s\nsim: replay: %s --first-seed %" PRIu64
		       " --seeds 1 --mode %s%s%s%s%s%s%s%s -v\n", first_bad, first_msg, argv[0],
		       first_bad, mode, cfg.identical_bodies ? " --identical" : "",
		       cfg.old_idle ? " --old-idle" : "", cfg.old_renew ? " --old-renew" : "",
		       cfg.old_cas ? " --old-cas" : "", cfg.old_barrier ? " --old-barrier" : "",
		       cfg.bad_unread ? " --bad-unread" : "", cfg.unfenced ? " --unfenced" : "");
	if (expect)
		return bad ? 0 : 1;
	return bad ? 1 : 0;
}
