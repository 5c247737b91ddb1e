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

/* Writes per STATUSBOARD_SLOT_MS: slot i holds period period[i]
 * (now_ms / STATUSBOARD_SLOT_MS), reused when a later period comes. */
struct series {
	int64_t period[STATUSBOARD_SLOTS];
	uint32_t forwarded[STATUSBOARD_SLOTS];
	uint32_t refused[STATUSBOARD_SLOTS];
};

struct statusboard {
	pthread_mutex_t mu;
	/* the ring: next is where the next refusal goes, n how many are kept */
	struct statusboard_refusal ring[STATUSBOARD_RING];
	size_t ring_next, ring_n;
	uint64_t forwarded, refused, untracked;
	struct statusboard_lock locks[STATUSBOARD_LOCKS];
	size_t nlocks;
	uint16_t index[INDEX_SIZE];          /* lock position + 1, 0 empty */
	struct series all;                   /* every write */
	struct series lock_series[STATUSBOARD_LOCKS]; /* locks[i]'s */
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

/* Appends s (NULL: "") to dst[size], which holds *o bytes, as valid
 * UTF-8: a byte that starts no valid sequence becomes U+FFFD, and the copy
 * is cut before a character that does not fit. dst stays NUL-terminated.
 * Returns 1 if cut. */
static int append_field(char *dst, size_t size, size_t *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);

	while (n) {
		size_t l = 0;
		const unsigned char *from;
		size_t out;

		while (l < n && p[l] < 0x80) /* a run of ASCII in one copy */
			l++;
		if (l) {
			if (*o + l >= size)
				l = size - 1 - *o; /* what fits; the cut is between bytes */
			memcpy(dst + *o, p, l);
			*o += l;
			p += l;
			n -= l;
			if (n && *o + 1 >= size) {
				dst[*o] = '\0';
				return 1;
			}
			continue;
		}
		l = utf8_seq_len(p, n);
		from = l ? p : (const unsigned char *)"\xEF\xBF\xBD";
		out = l ? l : 3;

		if (*o + out >= size) {
			dst[*o] = '\0';
			return 1;
		}
		memcpy(dst + *o, from, out);
		*o += out;
		p += l ? l : 1;
		n -= l ? l : 1;
	}
	dst[*o] = '\0';
	return 0;
}

/* append_field into an empty dst. */
static int copy_field(char *dst, size_t size, const char *s)
{
	size_t o = 0;

	return append_field(dst, size, &o, s);
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

/* Counts a write at now_ms in its slot, cleared when it held an older
 * period. */
static void series_note(struct series *ser, int64_t now_ms, bool refused)
{
	int64_t period = now_ms / STATUSBOARD_SLOT_MS;
	size_t i = (size_t)(period % STATUSBOARD_SLOTS);

	if (ser->period[i] != period) {
		ser->period[i] = period;
		ser->forwarded[i] = 0;
		ser->refused[i] = 0;
	}
	if (refused)
		ser->refused[i]++;
	else
		ser->forwarded[i]++;
}

/* The window ending in now_ms's slot, oldest first; slots of periods
 * outside it read 0. */
static void series_read(const struct series *ser, int64_t now_ms, uint32_t *forwarded,
			uint32_t *refused)
{
	int64_t period = now_ms / STATUSBOARD_SLOT_MS;

	for (size_t k = 0; k < STATUSBOARD_SLOTS; k++) {
		int64_t p = period - STATUSBOARD_SLOTS + 1 + (int64_t)k;
		size_t i = (size_t)(p % STATUSBOARD_SLOTS);
		bool in = p >= 0 && ser->period[i] == p;

		forwarded[k] = in ? ser->forwarded[i] : 0;
		refused[k] = in ? ser->refused[i] : 0;
	}
}

static void push_refusal(struct statusboard *b, const struct statusboard_write *w, int64_t now_ms)
{
	struct statusboard_refusal *r = &b->ring[b->ring_next];
	size_t o = 0;

	memset(r, 0, sizeof(*r));
	r->at_ms = now_ms;
	copy_field(r->lock, sizeof(r->lock), w->lock);
	copy_field(r->client, sizeof(r->client), w->client);
	copy_field(r->method, sizeof(r->method), w->method);
	copy_field(r->reason, sizeof(r->reason), w->reason);
	if (w->bucket && w->bucket[0]) /* "/bucket/key", else the key (HTTP mode: the path) */
		r->resource_cut = append_field(r->resource, sizeof(r->resource), &o, "/") ||
				  append_field(r->resource, sizeof(r->resource), &o, w->bucket) ||
				  append_field(r->resource, sizeof(r->resource), &o, "/");
	if (!r->resource_cut)
		r->resource_cut = append_field(r->resource, sizeof(r->resource), &o, w->key);
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

	if (!b || !w)
		return;
	pthread_mutex_lock(&b->mu);
	if (w->lock && w->lock[0] && !(l = lock_row(b, w->lock)))
		b->untracked++;
	series_note(&b->all, now_ms, w->reason != NULL);
	if (l)
		series_note(&b->lock_series[l - b->locks], now_ms, w->reason != NULL);
	if (w->reason) {
		b->refused++;
		if (l) {
			l->refused++;
			count_reason(l, w->reason);
		}
		push_refusal(b, w, now_ms);
	} else {
		b->forwarded++;
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
	series_read(&b->all, now_ms, s->series_forwarded, s->series_refused);
	for (size_t k = 0; k < s->nlocks; k++)
		series_read(&b->lock_series[k], now_ms, s->locks[k].series_forwarded,
			    s->locks[k].series_refused);
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
