/* barrier.h — the epoch barrier of one lock in HTTP mode (DESIGN.md
 * "Fencing on the proxy", "HTTP mode").
 *
 * Two promises for the writes the proxy forwards under one lock:
 *   1. none is forwarded whose epoch is below one already accepted
 *      (the accepted high-water mark A only goes up);
 *   2. the first write of a newer epoch is forwarded only after every
 *      forwarded write of an older epoch has finished, so no old write
 *      lands after a new one.
 *
 * A pure state machine: no I/O, no clock, no allocation, no global state.
 * The caller reports events (a write admitted, a forwarded write finished, a
 * waiter given up) and embeds one struct barrier_waiter per waiting request
 * (intrusive list). Timeouts are the caller's: it calls barrier_cancel.
 *
 * States (of one barrier):
 *   idle      nothing in flight, nobody waiting
 *   flowing   n_inflight writes of epoch inflight_epoch are forwarded;
 *             admitted writes of that epoch go at once
 *   draining  writes of epoch A > inflight_epoch wait until the older
 *             in-flight writes finish; writes below A are refused
 * Invariant: every in-flight write has the same epoch (inflight_epoch <=
 * A), because a write goes only when nothing older is in flight and its
 * epoch is >= A. */
#ifndef FENCE_BARRIER_H
#define FENCE_BARRIER_H

#include <stddef.h>
#include <stdint.h>

enum barrier_verdict {
	BARRIER_GO = 0,      /* forward it now (counted in flight: call
			      * barrier_done when it is over) */
	BARRIER_WAIT,        /* older writes still in flight: wait for
			      * barrier_pop, or give up with barrier_cancel */
	BARRIER_STALE,       /* epoch below the accepted one: refuse, 409 */
};

/* "go", "wait", "stale". Never NULL. */
const char *barrier_strverdict(enum barrier_verdict v);

/* One waiting write; owned by the caller (e.g. inside its request state),
 * which must keep it alive until barrier_pop returned it or barrier_cancel
 * removed it. */
struct barrier_waiter {
	uint64_t epoch;
	void *cookie;                /* the caller's request */
	enum barrier_verdict verdict;  /* WAIT while queued; GO or STALE once
					* decided (then on the ready list) */
	struct barrier_waiter *next;
};

struct barrier {
	uint64_t accepted;           /* A: the highest epoch admitted (GO or
				      * WAIT); never goes down */
	uint64_t inflight_epoch;     /* the epoch of the in-flight writes */
	size_t n_inflight;           /* forwarded writes not yet finished */
	struct barrier_waiter *waiting, *waiting_tail; /* verdict WAIT, FIFO */
	struct barrier_waiter *ready, *ready_tail;     /* decided, FIFO */
	size_t n_waiting;
};

#define BARRIER_INIT { 0, 0, 0, NULL, NULL, NULL, NULL, 0 }

/* A write of epoch (>= 1) asks to be forwarded:
 *   epoch < A                           → STALE (nothing changes)
 *   nothing in flight older than epoch  → GO (counted in flight)
 *   else                                → WAIT: w is queued (w->epoch and
 *                                         w->cookie set by this call)
 * A is raised to epoch on GO and WAIT. Raising A decides every queued
 * waiter of a lower epoch as STALE (moved to the ready list: see
 * barrier_pop). w may be NULL only if the caller cannot wait; WAIT is then
 * still returned and nothing is queued (A is raised all the same). */
enum barrier_verdict barrier_admit(struct barrier *b, uint64_t epoch,
				   struct barrier_waiter *w, void *cookie);

/* A write that got GO (from barrier_admit or barrier_pop) is over: answered,
 * failed or abandoned. epoch is the one it went with. When the last older
 * write finishes, the waiters go: they move to the ready list as GO and
 * count in flight. */
void barrier_done(struct barrier *b, uint64_t epoch);

/* The next decided waiter (GO: forward it and later barrier_done; STALE:
 * refuse it), or NULL. FIFO. */
struct barrier_waiter *barrier_pop(struct barrier *b);

/* Gives w up (its timeout fired, its client left). Returns 1 if it was
 * still waiting (removed), 2 if it was decided but not yet popped (removed
 * from the ready list; a GO no longer counts in flight, so the caller must
 * not call barrier_done for it), 0 if it is in neither list (popped or never
 * queued). Removing a GO may release the next waiters. */
int barrier_cancel(struct barrier *b, struct barrier_waiter *w);

/* 1 when nothing is in flight and nobody waits or is ready. */
int barrier_idle(const struct barrier *b);

#endif
