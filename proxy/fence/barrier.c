/* barrier.c — the per-lock epoch barrier of HTTP mode: the accepted
 * high-water mark, the count of in-flight writes (all of one epoch) and the
 * queue of newer-epoch writes waiting for the older ones to finish.
 *
 * Pure bookkeeping over caller-owned waiters: it never allocates, reads a
 * clock or talks to a socket; timeouts and resuming requests are the
 * caller's (fencing.c). */
#include "barrier.h"

const char *barrier_strverdict(enum barrier_verdict v)
{
	switch (v) {
	case BARRIER_GO:
		return "go";
	case BARRIER_WAIT:
		return "wait";
	case BARRIER_STALE:
		return "stale";
	}
	return "unknown";
}

/* Appends w to the queue (*head, *tail). */
static void queue_push(struct barrier_waiter **head, struct barrier_waiter **tail,
		       struct barrier_waiter *w)
{
	w->next = NULL;
	if (*tail)
		(*tail)->next = w;
	else
		*head = w;
	*tail = w;
}

static void ready_push(struct barrier *b, struct barrier_waiter *w)
{
	queue_push(&b->ready, &b->ready_tail, w);
}

/* Unlinks w from the list head/tail; 1 if it was there. */
static int list_remove(struct barrier_waiter **head, struct barrier_waiter **tail,
		       struct barrier_waiter *w)
{
	struct barrier_waiter *prev = NULL;

	for (struct barrier_waiter *it = *head; it; prev = it, it = it->next) {
		if (it != w)
			continue;
		if (prev)
			prev->next = it->next;
		else
			*head = it->next;
		if (*tail == it)
			*tail = prev;
		it->next = NULL;
		return 1;
	}
	return 0;
}

/* Queued waiters below A can never go: decide them STALE. */
static void stale_below_accepted(struct barrier *b)
{
	struct barrier_waiter *w = b->waiting, *next;

	b->waiting = b->waiting_tail = NULL;
	b->n_waiting = 0;
	for (; w; w = next) {
		next = w->next;
		w->next = NULL;
		if (w->epoch < b->accepted) {
			w->verdict = BARRIER_STALE;
			ready_push(b, w);
		} else {
			if (b->waiting_tail)
				b->waiting_tail->next = w;
			else
				b->waiting = w;
			b->waiting_tail = w;
			b->n_waiting++;
		}
	}
}

/* Nothing in flight: every waiter (all of epoch A) goes. */
static void release_waiters(struct barrier *b)
{
	struct barrier_waiter *w, *next;

	if (b->n_inflight > 0 || !b->waiting)
		return;
	w = b->waiting;
	b->waiting = b->waiting_tail = NULL;
	b->n_waiting = 0;
	for (; w; w = next) {
		next = w->next;
		w->verdict = BARRIER_GO;
		b->inflight_epoch = w->epoch;
		b->n_inflight++;
		ready_push(b, w);
	}
}

enum barrier_verdict barrier_admit(struct barrier *b, uint64_t epoch,
				   struct barrier_waiter *w, void *cookie)
{
	if (epoch < b->accepted)
		return BARRIER_STALE;
	if (epoch > b->accepted) {
		b->accepted = epoch;
		stale_below_accepted(b);
	}
	if (b->n_inflight == 0 || b->inflight_epoch == epoch) {
		if (b->n_inflight == 0 && b->waiting) {
			/* cannot happen: waiters exist only while older writes
			 * are in flight; go with them rather than overtake */
			release_waiters(b);
		}
		b->inflight_epoch = epoch;
		b->n_inflight++;
		return BARRIER_GO;
	}
	if (w) {
		w->epoch = epoch;
		w->cookie = cookie;
		w->verdict = BARRIER_WAIT;
		queue_push(&b->waiting, &b->waiting_tail, w);
		b->n_waiting++;
	}
	return BARRIER_WAIT;
}

void barrier_done(struct barrier *b, uint64_t epoch)
{
	if (b->n_inflight == 0 || epoch != b->inflight_epoch)
		return; /* not counted: a caller bug, but never underflow */
	b->n_inflight--;
	release_waiters(b);
}

struct barrier_waiter *barrier_pop(struct barrier *b)
{
	struct barrier_waiter *w = b->ready;

	if (!w)
		return NULL;
	b->ready = w->next;
	if (!b->ready)
		b->ready_tail = NULL;
	w->next = NULL;
	return w;
}

int barrier_cancel(struct barrier *b, struct barrier_waiter *w)
{
	if (list_remove(&b->waiting, &b->waiting_tail, w)) {
		b->n_waiting--;
		return 1;
	}
	if (list_remove(&b->ready, &b->ready_tail, w)) {
		if (w->verdict == BARRIER_GO)
			barrier_done(b, w->epoch);
		return 2;
	}
	return 0;
}

int barrier_idle(const struct barrier *b)
{
	return b->n_inflight == 0 && !b->waiting && !b->ready;
}
