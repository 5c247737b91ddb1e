/* lockmarks.h — the high-water marks shared by the event-loop workers of
 * one process: lock name -> the highest epoch any worker has learned.
 *
 * Each worker keeps its own lock registry (lockreg.h: loads, freshness,
 * lease state, as an independent replica would); what they share is only
 * the mark (and the highest epoch known released), so that a newer epoch
 * learned by one worker (an acquire through its lock API, a load, a write
 * with a newer token) or a release it served rejects stale writes on every
 * worker at once. Epochs only go up, so a mark is one _Atomic
 * uint64_t updated by an atomic max: no lock on the hot path. A mutex
 * guards only the name table (a mark is created once per lock name and
 * never moves or goes away until lockmarks_free). Thread-safe throughout. */
#ifndef FENCE_LOCKMARKS_H
#define FENCE_LOCKMARKS_H

#include <stddef.h>
#include <stdint.h>

struct lockmarks;
struct lockmark;

/* A table of at most max_names marks (>= 1). NULL on ENOMEM. */
struct lockmarks *lockmarks_new(size_t max_names);

/* Frees the table and its marks: no thread may use a mark afterwards.
 * Accepts NULL. */
void lockmarks_free(struct lockmarks *t);

/* The mark of lock name (created at 0 on first use). The pointer stays
 * valid until lockmarks_free. NULL if t is NULL, the name is too long
 * (LOCK_NAME_MAX), the table is full, or ENOMEM: the caller then goes on
 * without sharing (its own mark still holds for itself). */
struct lockmark *lockmarks_get(struct lockmarks *t, const char *name);

/* mark = max(mark, epoch), atomically. Returns the mark after the update
 * (>= epoch). Accepts NULL (returns epoch). */
uint64_t lockmark_raise(struct lockmark *m, uint64_t epoch);

/* The mark now; 0 for NULL. */
uint64_t lockmark_read(const struct lockmark *m);

/* The highest epoch some worker knows released (it served the release, or
 * loaded the released lock file): released = max(released, epoch), and
 * the value now; 0 for NULL. A worker refuses writes under an epoch any
 * worker knows released, as one process would. */
void lockmark_note_released(struct lockmark *m, uint64_t epoch); /* accepts NULL */
uint64_t lockmark_released(const struct lockmark *m);

/* Whether the lock's store passed the backend self-test in some worker
 * (lock_check_store: one probe per lock and process, not per worker); 0
 * for NULL. */
int lockmark_store_tested(const struct lockmark *m);
void lockmark_set_store_tested(struct lockmark *m); /* accepts NULL */

/* Names in the table. */
size_t lockmarks_count(struct lockmarks *t);

/* Every name in the table, as a malloc'd array of *n malloc'd strings (the
 * caller frees each and the array with lockmarks_names_free); NULL with *n
 * 0 when empty, t is NULL or on ENOMEM. */
char **lockmarks_names(struct lockmarks *t, size_t *n);
void lockmarks_names_free(char **names, size_t n);

#endif
