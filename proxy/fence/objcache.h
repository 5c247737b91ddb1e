/* objcache.h — a bounded cache of object key → (ETag, epoch) for the
 * object-level compare-and-swap of S3 mode (DESIGN.md "Object-level
 * compare-and-swap"): after its own successful write the proxy remembers the
 * object's ETag and epoch, so the next write goes out with If-Match: <etag>
 * without a HEAD first.
 *
 * Fixed capacity set at creation; get, put and invalidate are O(1); when
 * full, put evicts the least recently used entry. Entries are keyed by
 * bucket + "/" + key (bucket names cannot contain '/'). The hash is SipHash
 * with a caller-supplied secret seed, so clients cannot aim keys at one
 * chain. The cache is a hint, never the truth: upstream conditional writes
 * are. Not thread-safe (one event loop; each event-loop worker has its
 * own cache), except objcache_counts. */
#ifndef FENCE_OBJCACHE_H
#define FENCE_OBJCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "lock/store/store.h"

#define OBJCACHE_ETAG_MAX STORE_ETAG_MAX   /* including the NUL */
#define OBJCACHE_KEY_MAX  2048             /* bucket + "/" + key, bytes */

struct objcache;

struct objcache_entry {
	char etag[OBJCACHE_ETAG_MAX];
	uint64_t epoch;
};

struct objcache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t evictions;
	size_t count;
	size_t capacity;
	size_t buckets;     /* the table's buckets now: grows with count */
};

/* The table's first size; it doubles whenever the entries outnumber its
 * buckets, up to the power of two at or above the capacity. */
#define OBJCACHE_FIRST_BUCKETS 64

/* A cache of at most capacity entries (>= 1). seed is 16 bytes of secret
 * randomness (NULL: a fixed seed, for tests only). NULL on ENOMEM or
 * capacity 0. Memory: a table that grows with the entries (8 bytes per
 * bucket, at most a power of two at or above capacity), the nodes as they
 * are used, and one malloc'd key per entry. */
struct objcache *objcache_new(size_t capacity, const unsigned char seed[16]);

void objcache_free(struct objcache *c); /* accepts NULL */

/* Looks up bucket/key. Hit: copies the entry into *out (may be NULL), makes
 * it most recently used, returns 1. Miss: returns 0. Counts hits/misses. */
int objcache_get(struct objcache *c, const char *bucket, const char *key,
		 struct objcache_entry *out);

/* Inserts or replaces bucket/key → (etag, epoch), most recently used; evicts
 * the least recently used entry when full. Returns 0, or -1 (nothing
 * changed, any old entry for the key removed) when the composite key is
 * longer than OBJCACHE_KEY_MAX, the etag does not fit, or on ENOMEM. */
int objcache_put(struct objcache *c, const char *bucket, const char *key,
		 const char *etag, uint64_t epoch);

/* Forgets bucket/key (after a 412, a DELETE, an unknown outcome). Returns 1
 * if it was cached, else 0. */
int objcache_invalidate(struct objcache *c, const char *bucket, const char *key);

void objcache_stats(const struct objcache *c, struct objcache_stats *out);

/* Hits and misses so far, read from any thread (a scrape on another
 * event-loop worker); everything else is the owning loop's only. */
void objcache_counts(const struct objcache *c, uint64_t *hits, uint64_t *misses);

#endif
