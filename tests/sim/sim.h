/* sim.h — the deterministic simulation of fencegate (issue 7): what its
 * parts share.
 *
 * One seed is one schedule. Everything runs on one thread: actors (workers,
 * replica refreshers, HTTP clients) are coroutines (ucontext) on a
 * simulated clock in milliseconds, and they yield only inside simulated
 * I/O and sleeps, so the real lock library (lock/), the real fencing
 * verdict (fence.h), the real object CAS steps (objcas.h), the real ETag
 * cache, the registry's freshness rule (lockreg.h) and the real epoch
 * barrier (barrier.h) run unchanged against a simulated S3 (sim_s3.c) with
 * 1 s Date/Last-Modified, per-request delays (so reordering), lost
 * answers and 5xx. A seeded PRNG decides every delay, fault and choice,
 * and OpenSSL's RAND is hooked to it, so a seed replays exactly.
 *
 * The checker (sim_world.c, sim_http.c) flags: an acknowledged write of
 * epoch e applied after a write of an epoch > e on the same key (outside
 * the documented window, see README "Guarantees"); an acknowledged write
 * decided when an epoch > e had existed for longer than the refresh
 * interval; two holders whose leases overlap by their own clocks; an epoch
 * handed out twice; in HTTP mode, a downstream applying epoch e after an
 * epoch > e. */
#ifndef FENCE_SIM_H
#define FENCE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock/store/store.h"
#include "lock/store/timesrc.h"

/* ---- the knobs of one run (sim_main.c) ----------------------------------- */

struct sim_config {
	uint64_t seed;
	int workers;            /* >= 3 */
	int replicas;           /* >= 3 */
	int64_t duration_ms;    /* simulated time of one schedule */
	int64_t ttl_ms;
	int64_t refresh_ms;     /* the replicas' refresh interval */
	bool identical_bodies;  /* bodies from a tiny alphabet, and deletes:
				 * the ETag-ABA and delete windows happen */
	/* the old logic, to show the checker catches it (issue 7 items 1-4) */
	bool old_idle;          /* no freshness rule; refresh only when active */
	bool old_renew;         /* a renewal judged once, before it is sent */
	bool old_cas;           /* a lost race re-reads the object, not the lock,
				 * and a write that waited is not checked again */
	bool old_barrier;       /* HTTP mode: a timed-out write lifts the barrier */
	bool bad_unread;        /* a wrong unread create: when it finds the key,
				 * the HEAD's epoch is ignored (If-Match its ETag
				 * whatever wrote it) */
	bool unfenced;          /* control: replicas forward every write */
	bool verbose;
};

struct sim_report {
	unsigned long late_acks;      /* violations: acked, applied after newer */
	unsigned long windowed;       /* late acks inside the documented window */
	unsigned long stale_decided;  /* violations: decided on knowledge older than
				       * the refresh interval */
	unsigned long overlaps;       /* violations: two live holders */
	unsigned long twice;          /* violations: an epoch handed out twice */
	unsigned long http_reorders;  /* violations: downstream order */
	unsigned long acks, refused, grants, requests;
	unsigned long unread_creates; /* S3 mode: writes sent by the unread create */
	unsigned long unread_existed; /* ... that found the key (HEAD, then decided) */
	char first[512];              /* the first violation, described */
};

/* ---- scheduler and clocks (sim_core.c) ----------------------------------- */

typedef void (*sim_actor_fn)(void *arg);

void sim_reset(uint64_t seed);           /* a new schedule */
int64_t sim_now(void);                   /* simulated ms since the start */
uint64_t sim_rand(void);                 /* the schedule's PRNG */
int64_t sim_between(int64_t lo, int64_t hi); /* uniform in [lo, hi] */
bool sim_chance(unsigned per_mille);
void sim_spawn(sim_actor_fn fn, void *arg);
void sim_sleep(int64_t ms);              /* yields; 0 still lets others run */
void sim_run(int64_t until_ms);          /* runs every actor to the end or until */
bool sim_over(void);                     /* the schedule's time is up */

/* A clock for one process: wall = now + skew, mono = now + mono_offset.
 * Sleeping yields. */
struct sim_clock {
	struct timesrc ts;
	int64_t wall_skew_ms;
	int64_t mono_offset_ms;
};
void sim_clock_init(struct sim_clock *c, int64_t wall_skew_ms, int64_t mono_offset_ms);
int64_t sim_epoch_wall_ms(void);         /* Unix ms of simulated time 0 */

/* ---- the simulated S3 (sim_s3.c) ----------------------------------------- */

/* One applied write or delete of a data key (the lock files are not logged). */
struct sim_apply {
	char key[64];
	uint64_t epoch;          /* its fencing-epoch (0: unfenced or delete of none) */
	unsigned long wid;       /* the client's write id (sim-wid metadata), 0 none */
	int64_t at;
	bool is_delete;
};

void sim_s3_reset(const struct sim_config *cfg);
/* A store handle for one client (its own request counter, and its clock
 * for store.h's deadline_mono_ms); faults and delays apply to every call
 * when faults is set, delays only otherwise. */
struct store *sim_s3_open(bool faults, const struct sim_clock *clk);
/* A DELETE carries no metadata: the epoch and write id of the next
 * store_delete on any handle, for the log. */
void sim_s3_tag_delete(uint64_t epoch, unsigned long wid);
const struct sim_apply *sim_s3_log(size_t *n);
/* The creation time of epoch file `epoch` of the lock, -1 if none. */
int64_t sim_s3_epoch_created(uint64_t epoch);
const char *sim_s3_lock_prefix(void);   /* "locks/sim/lock-" */

/* ---- the worlds ---------------------------------------------------------- */

void sim_world_run(const struct sim_config *cfg, struct sim_report *rep); /* S3 mode */
void sim_http_run(const struct sim_config *cfg, struct sim_report *rep);  /* HTTP mode */

__attribute__((format(printf, 2, 3)))
void sim_violation(struct sim_report *rep, const char *fmt, ...);

#endif
