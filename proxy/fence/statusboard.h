/* statusboard.h — what the operator's status page (/_fence/status) shows
 * that no other module keeps: the last refused writes (a bounded ring),
 * per lock the writes forwarded and refused by reason since start and the
 * latest state any worker learned of it, and forwarded vs refused writes
 * over the last minutes (in all and per lock).
 *
 * One board per process, shared by every event-loop worker (main.c makes
 * it): every call takes the board's mutex for a few copies, never does
 * I/O, never allocates on the write path, and takes the clock as an
 * argument. Memory is bounded at creation: STATUSBOARD_RING refusals,
 * STATUSBOARD_LOCKS locks by name (writes of further locks count in the
 * totals and in `untracked`), STATUSBOARD_REASONS reasons per lock (more
 * count as "other"), strings kept as valid UTF-8 (invalid bytes become
 * U+FFFD) and cut to their field. It keeps no secrets: the
 * callers pass a client's name or access key, never a credential. It
 * decides nothing and renders nothing (status_render.h does). */
#ifndef FENCE_STATUSBOARD_H
#define FENCE_STATUSBOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock/core/lock.h"

#define STATUSBOARD_RING 100        /* refused writes remembered */
#define STATUSBOARD_LOCKS 1024      /* locks tracked by name */
#define STATUSBOARD_REASONS 8       /* refusal reasons per lock */
#define STATUSBOARD_SLOTS 60        /* the series: 60 slots ... */
#define STATUSBOARD_SLOT_MS 10000   /* ... of 10 s: the last 10 minutes */
#define STATUSBOARD_CLIENT_MAX 128
#define STATUSBOARD_METHOD_MAX 16
#define STATUSBOARD_RESOURCE_MAX 512 /* "/bucket/key" or the HTTP path */
#define STATUSBOARD_REASON_MAX 48
#define STATUSBOARD_STATE_MAX 16

struct statusboard;

/* A write the fencing handler decided (strings borrowed for the call;
 * NULL counts as ""). */
struct statusboard_write {
	const char *lock;            /* NULL: no lock (e.g. an unknown lock name) */
	const char *client;          /* name or access key; NULL: anonymous */
	const char *method;
	const char *bucket;          /* NULL: HTTP mode or bucket-less */
	const char *key;             /* the object key, or the HTTP path */
	bool has_presented;
	uint64_t presented;          /* the token the write carried */
	bool has_current;
	uint64_t current;            /* the lock's epoch the verdict used */
	const char *reason;          /* the refusal's error code; NULL: forwarded */
};

/* One refused write, as kept in the ring. */
struct statusboard_refusal {
	int64_t at_ms;               /* Unix ms */
	char lock[LOCK_NAME_MAX + 1];
	char client[STATUSBOARD_CLIENT_MAX];
	char method[STATUSBOARD_METHOD_MAX];
	char resource[STATUSBOARD_RESOURCE_MAX];
	bool resource_cut;           /* longer than the field */
	bool has_presented;
	uint64_t presented;
	bool has_current;
	uint64_t current;
	char reason[STATUSBOARD_REASON_MAX];
};

struct statusboard_reason {
	char reason[STATUSBOARD_REASON_MAX];
	uint64_t count;
};

/* One lock's row. State fields describe epoch as of noted_at_ms. */
struct statusboard_lock {
	char name[LOCK_NAME_MAX + 1];
	bool noted;                  /* a state was learned (else only counts) */
	uint64_t epoch;              /* the highest epoch learned (C) */
	char state[STATUSBOARD_STATE_MAX]; /* lock_state_name() */
	char holder[LOCK_HOLDER_MAX];
	int64_t lease_end_ms;        /* Unix ms by the storage clock's lease
				      * (remaining at the load + when it was
				      * read); 0 unknown */
	int64_t noted_at_ms;         /* Unix ms the state was learned */
	int64_t loaded_at_ms;        /* Unix ms of the last good load, 0 never */
	int64_t load_failed_at_ms;   /* Unix ms of a failed load since the last
				      * good one, 0 none */
	uint64_t forwarded;
	uint64_t refused;
	size_t nreasons;             /* the last may be "other" */
	struct statusboard_reason reasons[STATUSBOARD_REASONS];
	/* in a snapshot: this lock's writes per slot, as the snapshot's series */
	uint32_t series_forwarded[STATUSBOARD_SLOTS];
	uint32_t series_refused[STATUSBOARD_SLOTS];
};

/* A copy of the board at one instant, owned by the caller. */
struct statusboard_snapshot {
	int64_t taken_ms;
	size_t nring;                            /* newest first */
	struct statusboard_refusal ring[STATUSBOARD_RING];
	uint64_t forwarded;                      /* every write since start */
	uint64_t refused;
	uint64_t untracked;                      /* writes of locks past STATUSBOARD_LOCKS */
	size_t nlocks;                           /* in first-seen order */
	struct statusboard_lock *locks;
	/* series[i]: slot i, oldest first; the last is the slot holding taken_ms */
	uint32_t series_forwarded[STATUSBOARD_SLOTS];
	uint32_t series_refused[STATUSBOARD_SLOTS];
	int64_t series_start_ms;                 /* Unix ms of slot 0's start */
};

/* A board. Returns NULL on ENOMEM. */
struct statusboard *statusboard_new(void);
/* Accepts NULL. */
void statusboard_free(struct statusboard *b);

/* Counts a decided write at now_ms (Unix ms): per lock, in the totals and
 * the series; a refusal (w->reason set) also goes into the ring, replacing
 * the oldest once STATUSBOARD_RING are kept. Accepts b NULL (no-op). */
void statusboard_note_write(struct statusboard *b, const struct statusboard_write *w,
			    int64_t now_ms);

/* What a worker learned of lock name at now_ms: epoch in state (a
 * lock_state_name), held by holder until lease_end_ms (Unix ms, 0
 * unknown). Kept when epoch is not below what the board holds (epochs only
 * go up; an equal epoch updates the state). loaded: it came from a load of
 * the lock's files (loaded_at_ms = now_ms). Accepts b NULL. */
void statusboard_note_lock(struct statusboard *b, const char *name, uint64_t epoch,
			   const char *state, const char *holder, int64_t lease_end_ms,
			   bool loaded, int64_t now_ms);

/* A load of lock name failed at now_ms (the row is created if needed; a
 * good load clears it). Accepts b NULL. */
void statusboard_note_load_failed(struct statusboard *b, const char *name, int64_t now_ms);

/* A copy of the board as of now_ms (series slots older than the window read
 * as 0). Returns NULL on ENOMEM. Free with statusboard_snapshot_free. */
struct statusboard_snapshot *statusboard_snapshot(struct statusboard *b, int64_t now_ms);
void statusboard_snapshot_free(struct statusboard_snapshot *s); /* accepts NULL */

#endif
