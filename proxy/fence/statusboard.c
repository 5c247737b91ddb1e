/* statusboard.c — the status page's process-wide memory: a ring of the last
 * refused writes, per-lock counters and latest state, and a 10-minute
 * series of forwarded vs refused writes, behind one mutex.
 *
 * Everything is allocated once in statusboard_new; noting a write or a
 * lock's state copies a few fields under the mutex (a lock is found through
 * an open-addressing index of its name). It does no I/O, reads no clock
 * and renders nothing (status_html.c, status_json.c). */
#include "statusboard.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/utf8.h"

#define INDEX_SIZE (STATUSBOARD_LOCKS * 2) /* a power of two, half full at most */

struct statusboard {
	pthread_mutex_t mu;
	/* the ring: next is where the next refusal goes, n how many are kept */
	struct statusboard_refusal ring[STATUSBOARD_RING];
	size_t ring_next, ring_n;
	uint64_t forwarded, refused, untracked;
	struct statusboard_lock locks[STATUSBOARD_LOCKS];
	size_t nlocks;
	uint16_t index[INDEX_SIZE];          /* lock position + 1, 0 empty */
	/* slot i holds period slot_period[i] (now_ms / STATUSBOARD_SLOT_MS) */
	int64_t slot_period[STATUSBOARD_SLOTS];
	uint32_t slot_forwarded[STATUSBOARD_SLOTS];
	uint32_t slot_refused[STATUSBOARD_SLOTS];
};

struct statusboard *statusboard_new(void)
{
	struct statusboard *b = calloc(1, sizeof(*b));

	if (b && pthread_mutex_init(&b->mu, NULL) != 0) {
		free(b);
		return NULL;
	}
	return b;
}

void statusboard_free(struct statusboard *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->mu);
	free(b);
}

/* Copies s into dst[size] as valid UTF-8: a byte that starts no valid
 * sequence becomes U+FFFD, and the copy is cut before a character that
 * does not fit. Returns 1 if cut. */
static int copy_field(char *dst, size_t size, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p), o = 0;

	while (n) {
		size_t l = utf8_seq_len(p, n);
		const unsigned char *from = l ? p : (const unsigned char *)"\xEF\xBF\xBD";
		size_t out = l ? l : 3;

		if (o + out >= size) {
			dst[o] = '\0';
			return 1;
		}
		memcpy(dst + o, from, out);
		o += out;
		p += l ? l : 1;
		n -= l ? l : 1;
	}
	dst[o] = '\0';
	return 0;
}

static unsigned name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h & (INDEX_SIZE - 1);
}

/* The row of lock name, created when there is room; NULL past the cap. */
static struct statusboard_lock *lock_row(struct statusboard *b, const char *name)
{
	unsigned i = name_hash(name);
	struct statusboard_lock *l;

	for (; b->index[i]; i = (i + 1) & (INDEX_SIZE - 1))
		if (strcmp(b->locks[b->index[i] - 1].name, name) == 0)
			return &b->locks[b->index[i] - 1];
	if (b->nlocks == STATUSBOARD_LOCKS || strlen(name) > LOCK_NAME_MAX)
		return NULL;
	l = &b->locks[b->nlocks++];
	copy_field(l->name, sizeof(l->name), name);
	b->index[i] = (uint16_t)b->nlocks;
	return l;
}

static void count_reason(struct statusboard_lock *l, const char *reason)
{
	size_t i;

	for (i = 0; i < l->nreasons; i++)
		if (strcmp(l->reasons[i].reason, reason) == 0)
			break;
	if (i == l->nreasons) {
		if (l->nreasons == STATUSBOARD_REASONS) {
			i = STATUSBOARD_REASONS - 1; /* the last slot becomes "other" */
			copy_field(l->reasons[i].reason, sizeof(l->reasons[i].reason), "other");
		} else {
			copy_field(l->reasons[i].reason, sizeof(l->reasons[i].reason), reason);
			l->nreasons++;
		}
	}
	l->reasons[i].count++;
}

/* The series slot of now_ms, cleared when it held an older period. */
static size_t slot_of(struct statusboard *b, int64_t now_ms)
{
	int64_t period = now_ms / STATUSBOARD_SLOT_MS;
	size_t i = (size_t)(period % STATUSBOARD_SLOTS);

	if (b->slot_period[i] != period) {
		b->slot_period[i] = period;
		b->slot_forwarded[i] = 0;
		b->slot_refused[i] = 0;
	}
	return i;
}

static void push_refusal(struct statusboard *b, const struct statusboard_write *w, int64_t now_ms)
{
	struct statusboard_refusal *r = &b->ring[b->ring_next];
	char resource[STATUSBOARD_RESOURCE_MAX + 2];

	memset(r, 0, sizeof(*r));
	r->at_ms = now_ms;
	copy_field(r->lock, sizeof(r->lock), w->lock);
	copy_field(r->client, sizeof(r->client), w->client);
	copy_field(r->method, sizeof(r->method), w->method);
	copy_field(r->reason, sizeof(r->reason), w->reason);
	if (w->bucket && w->bucket[0])
		snprintf(resource, sizeof(resource), "/%s/%s", w->bucket, w->key ? w->key : "");
	else
		snprintf(resource, sizeof(resource), "%s", w->key ? w->key : "");
	r->resource_cut = copy_field(r->resource, sizeof(r->resource), resource);
	r->has_presented = w->has_presented;
	r->presented = w->presented;
	r->has_current = w->has_current;
	r->current = w->current;
	b->ring_next = (b->ring_next + 1) % STATUSBOARD_RING;
	if (b->ring_n < STATUSBOARD_RING)
		b->ring_n++;
}

void statusboard_note_write(struct statusboard *b, const struct statusboard_write *w,
			    int64_t now_ms)
{
	struct statusboard_lock *l = NULL;
	size_t slot;

	if (!b || !w)
		return;
	pthread_mutex_lock(&b->mu);
	if (w->lock && w->lock[0] && !(l = lock_row(b, w->lock)))
		b->untracked++;
	slot = slot_of(b, now_ms);
	if (w->reason) {
		b->refused++;
		b->slot_refused[slot]++;
		if (l) {
			l->refused++;
			count_reason(l, w->reason);
		}
		push_refusal(b, w, now_ms);
	} else {
		b->forwarded++;
		b->slot_forwarded[slot]++;
		if (l)
			l->forwarded++;
	}
	pthread_mutex_unlock(&b->mu);
}

void statusboard_note_lock(struct statusboard *b, const char *name, uint64_t epoch,
			   const char *state, const char *holder, int64_t lease_end_ms,
			   bool loaded, int64_t now_ms)
{
	struct statusboard_lock *l;

	if (!b || !name)
		return;
	pthread_mutex_lock(&b->mu);
	l = lock_row(b, name);
	if (!l) {
		pthread_mutex_unlock(&b->mu);
		return;
	}
	if (loaded) {
		l->loaded_at_ms = now_ms;
		l->load_failed_at_ms = 0;
	}
	if (!l->noted || epoch >= l->epoch) {
		l->noted = true;
		l->epoch = epoch;
		copy_field(l->state, sizeof(l->state), state);
		copy_field(l->holder, sizeof(l->holder), holder);
		l->lease_end_ms = lease_end_ms;
		l->noted_at_ms = now_ms;
	}
	pthread_mutex_unlock(&b->mu);
}

void statusboard_note_load_failed(struct statusboard *b, const char *name, int64_t now_ms)
{
	struct statusboard_lock *l;

	if (!b || !name)
		return;
	pthread_mutex_lock(&b->mu);
	if ((l = lock_row(b, name)))
		l->load_failed_at_ms = now_ms;
	pthread_mutex_unlock(&b->mu);
}

struct statusboard_snapshot *statusboard_snapshot(struct statusboard *b, int64_t now_ms)
{
	struct statusboard_snapshot *s = calloc(1, sizeof(*s));
	int64_t period = now_ms / STATUSBOARD_SLOT_MS;

	if (!s)
		return NULL;
	s->taken_ms = now_ms;
	s->series_start_ms = (period - STATUSBOARD_SLOTS + 1) * STATUSBOARD_SLOT_MS;
	if (!b)
		return s;
	pthread_mutex_lock(&b->mu);
	if (b->nlocks && !(s->locks = malloc(b->nlocks * sizeof(*s->locks)))) {
		pthread_mutex_unlock(&b->mu);
		free(s);
		return NULL;
	}
	if (b->nlocks)
		memcpy(s->locks, b->locks, b->nlocks * sizeof(*s->locks));
	s->nlocks = b->nlocks;
	for (size_t k = 0; k < b->ring_n; k++) /* newest first */
		s->ring[k] = b->ring[(b->ring_next + STATUSBOARD_RING - 1 - k) % STATUSBOARD_RING];
	s->nring = b->ring_n;
	s->forwarded = b->forwarded;
	s->refused = b->refused;
	s->untracked = b->untracked;
	for (size_t k = 0; k < STATUSBOARD_SLOTS; k++) {
		int64_t p = period - STATUSBOARD_SLOTS + 1 + (int64_t)k;
		size_t i = (size_t)(p % STATUSBOARD_SLOTS);

		if (p >= 0 && b->slot_period[i] == p) {
			s->series_forwarded[k] = b->slot_forwarded[i];
			s->series_refused[k] = b->slot_refused[i];
		}
	}
	pthread_mutex_unlock(&b->mu);
	return s;
}

void statusboard_snapshot_free(struct statusboard_snapshot *s)
{
	if (!s)
		return;
	free(s->locks);
	free(s);
}
