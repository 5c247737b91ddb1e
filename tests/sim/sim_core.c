/* sim_core.c — the simulation's scheduler, clock and randomness: actors
 * are ucontext coroutines that run one at a time, each until it sleeps (in
 * simulated time); the next to run is the one that wakes first, ties
 * broken by the seeded PRNG. OpenSSL's RAND is pointed at the same PRNG so
 * nonces and backoff jitter replay with the seed. Nothing here knows about
 * S3 or locks. */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <openssl/rand.h>

#define SIM_STACK (256 * 1024)
#define SIM_MAX_ACTORS 64
#define SIM_DRAIN_MS 120000       /* actors must end this soon after the time is up */
#define SIM_WALL_ORIGIN_MS 1767225600000LL /* 2026-01-01T00:00:00Z */

struct actor {
	ucontext_t ctx;
	char *stack;
	sim_actor_fn fn;
	void *arg;
	int64_t wake;
	uint64_t tie;
	bool done;
};

static struct {
	ucontext_t main;
	struct actor actors[SIM_MAX_ACTORS];
	int n;
	struct actor *cur;
	int64_t now;
	int64_t until;
	uint64_t rng;
} S;

/* splitmix64 */
uint64_t sim_rand(void)
{
	uint64_t z = (S.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int64_t sim_between(int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + (int64_t)(sim_rand() % (uint64_t)(hi - lo + 1));
}

bool sim_chance(unsigned per_mille)
{
	return sim_rand() % 1000 < per_mille;
}

static int rand_bytes(unsigned char *buf, int num)
{
	for (int i = 0; i < num; i++)
		buf[i] = (unsigned char)(sim_rand() >> 24);
	return 1;
}

static int rand_status(void)
{
	return 1;
}

static const RAND_METHOD sim_rand_method = {
	.bytes = rand_bytes,
	.pseudorand = rand_bytes,
	.status = rand_status,
};

void sim_reset(uint64_t seed)
{
	/* stacks are kept for the next schedule: allocating them is most of
	 * what a short schedule would cost */
	for (int i = 0; i < SIM_MAX_ACTORS; i++) {
		char *stack = S.actors[i].stack;

		memset(&S.actors[i], 0, sizeof(S.actors[i]));
		S.actors[i].stack = stack;
	}
	S.n = 0;
	S.cur = NULL;
	S.now = 0;
	S.until = 0;
	S.rng = seed * 0x2545f4914f6cdd1dULL + 1;
	RAND_set_rand_method(&sim_rand_method);
}

int64_t sim_now(void)
{
	return S.now;
}

bool sim_over(void)
{
	return S.now >= S.until;
}

static void trampoline(void)
{
	struct actor *a = S.cur;

	a->fn(a->arg);
	a->done = true;
	/* uc_link returns to the scheduler */
}

void sim_spawn(sim_actor_fn fn, void *arg)
{
	struct actor *a;

	if (S.n >= SIM_MAX_ACTORS) {
		fprintf(stderr, "sim: too many actors\n");
		abort();
	}
	a = &S.actors[S.n++];
	if (!a->stack)
		a->stack = malloc(SIM_STACK);
	if (!a->stack || getcontext(&a->ctx) < 0) {
		fprintf(stderr, "sim: no stack\n");
		abort();
	}
	a->ctx.uc_stack.ss_sp = a->stack;
	a->ctx.uc_stack.ss_size = SIM_STACK;
	a->ctx.uc_link = &S.main;
	makecontext(&a->ctx, trampoline, 0);
	a->fn = fn;
	a->arg = arg;
	a->wake = S.now;
	a->tie = sim_rand();
}

void sim_sleep(int64_t ms)
{
	struct actor *a = S.cur;

	if (!a) {
		fprintf(stderr, "sim: sleep outside an actor\n");
		abort();
	}
	a->wake = S.now + (ms > 0 ? ms : 0);
	a->tie = sim_rand();
	swapcontext(&a->ctx, &S.main);
}

void sim_run(int64_t until_ms)
{
	S.until = until_ms;
	for (;;) {
		struct actor *next = NULL;

		for (int i = 0; i < S.n; i++) {
			struct actor *a = &S.actors[i];

			if (a->done)
				continue;
			if (!next || a->wake < next->wake ||
			    (a->wake == next->wake && a->tie < next->tie))
				next = a;
		}
		if (!next)
			return;
		if (next->wake > until_ms + SIM_DRAIN_MS) {
			fprintf(stderr, "sim: an actor did not end after the time was up\n");
			abort();
		}
		if (next->wake > S.now)
			S.now = next->wake;
		S.cur = next;
		swapcontext(&S.main, &next->ctx);
		S.cur = NULL;
	}
}

/* ---- clocks ---------------------------------------------------------------- */

int64_t sim_epoch_wall_ms(void)
{
	return SIM_WALL_ORIGIN_MS;
}

static int64_t clock_wall(void *ctx)
{
	const struct sim_clock *c = ctx;

	return SIM_WALL_ORIGIN_MS + S.now + c->wall_skew_ms;
}

static int64_t clock_mono(void *ctx)
{
	const struct sim_clock *c = ctx;

	return S.now + c->mono_offset_ms;
}

static void clock_sleep(void *ctx, int64_t ms)
{
	(void)ctx;
	sim_sleep(ms);
}

void sim_clock_init(struct sim_clock *c, int64_t wall_skew_ms, int64_t mono_offset_ms)
{
	c->wall_skew_ms = wall_skew_ms;
	c->mono_offset_ms = mono_offset_ms;
	c->ts.wall_ms = clock_wall;
	c->ts.mono_ms = clock_mono;
	c->ts.sleep_ms = clock_sleep;
	c->ts.ctx = c;
}
