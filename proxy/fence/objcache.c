/* objcache.c — a fixed-capacity LRU map from "bucket/key" to (ETag, epoch):
 * a chained hash table (SipHash-2-4, secret seed) over a node array
 * threaded on a doubly linked recency list. The array is reserved at its
 * full capacity but handed out in order and never touched ahead of use, so
 * an idle proxy's resident memory does not pay for entries it has not
 * cached (100000 nodes are ~18 MiB). The table grows with the entries
 * (doubling at one entry per bucket, up to a bucket per entry of the
 * capacity): a few hundred hot keys live in a few cache lines, not
 * scattered over a table sized for the capacity, which every lookup paid
 * for in cache and TLB misses. It does no I/O and takes no locks;
 * the proxy's single event loop owns it. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "objcache.h"

struct node {
	char *key;                 /* "bucket/key", malloc'd; NULL if free */
	size_t keylen;
	uint64_t hash;
	struct node *chain;        /* next in the hash bucket */
	struct node *newer, *older; /* recency list; free list uses older */
	struct objcache_entry entry;
};

struct objcache {
	struct node *nodes;        /* capacity nodes */
	struct node **table;       /* nbuckets chains */
	size_t nbuckets;           /* power of two, grows up to max_buckets */
	size_t max_buckets;        /* power of two >= capacity */
	size_t capacity;
	size_t used;               /* nodes[0..used) have been handed out */
	size_t count;
	struct node *newest, *oldest;
	struct node *free_list;    /* handed out once, then freed */
	uint64_t k0, k1;
	uint64_t hits, misses, evictions;
};

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do { \
	v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
	v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
	v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
	v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
} while (0)

/* SipHash-2-4 (Aumasson & Bernstein) of in[0..len) under key (k0, k1). */
static uint64_t siphash24(uint64_t k0, uint64_t k1, const unsigned char *in, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
	uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
	uint64_t v3 = 0x7465646279746573ULL ^ k1;
	uint64_t b = (uint64_t)len << 56, m;
	size_t i, tail = len & 7;

	for (i = 0; i + 8 <= len; i += 8) {
		m = le64(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (; tail > 0; tail--)
		b |= (uint64_t)in[i + tail - 1] << (8 * (tail - 1));
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

struct objcache *objcache_new(size_t capacity, const unsigned char seed[16])
{
	static const unsigned char test_seed[16] = "fencegate-objkey";
	struct objcache *c = NULL;
	size_t nb = 1;

	if (capacity == 0 || capacity > SIZE_MAX / 2 / sizeof(struct node))
		return NULL;
	while (nb < capacity)
		nb <<= 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto fail;
	c->max_buckets = nb;
	if (nb > OBJCACHE_FIRST_BUCKETS)
		nb = OBJCACHE_FIRST_BUCKETS;
	c->nodes = calloc(capacity, sizeof(*c->nodes));
	c->table = calloc(nb, sizeof(*c->table));
	if (!c->nodes || !c->table)
		goto fail;
	c->nbuckets = nb;
	c->capacity = capacity;
	if (!seed)
		seed = test_seed;
	c->k0 = le64(seed);
	c->k1 = le64(seed + 8);
	return c;
fail:
	objcache_free(c);
	return NULL;
}

void objcache_free(struct objcache *c)
{
	size_t i;

	if (!c)
		return;
	if (c->nodes)
		for (i = 0; i < c->used; i++)
			free(c->nodes[i].key);
	free(c->nodes);
	free(c->table);
	free(c);
}

/* Writes "bucket/key" into buf[OBJCACHE_KEY_MAX + 1]; its length, or 0 if
 * it does not fit. */
static size_t compose(const char *bucket, const char *key, char *buf)
{
	size_t bl = strlen(bucket), kl = strlen(key);

	if (bl + 1 + kl > OBJCACHE_KEY_MAX)
		return 0;
	memcpy(buf, bucket, bl);
	buf[bl] = '/';
	memcpy(buf + bl + 1, key, kl);
	buf[bl + 1 + kl] = '\0';
	return bl + 1 + kl;
}

static struct node **find_slot(struct objcache *c, const char *k, size_t kl, uint64_t h)
{
	struct node **slot = &c->table[h & (c->nbuckets - 1)];

	for (; *slot; slot = &(*slot)->chain)
		if ((*slot)->hash == h && (*slot)->keylen == kl && memcmp((*slot)->key, k, kl) == 0)
			return slot;
	return slot;
}

/* Doubles the table when the entries outnumber its buckets (and it may
 * still grow): every chain re-threaded by its node's hash. Without memory
 * for the new table the old one stays: chains get longer, nothing is lost. */
static void maybe_grow(struct objcache *c)
{
	size_t nb = c->nbuckets * 2;
	struct node **t;

	if (c->count < c->nbuckets || c->nbuckets >= c->max_buckets)
		return;
	t = calloc(nb, sizeof(*t));
	if (!t)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct node *n = c->table[i], *next;

		for (; n; n = next) {
			struct node **slot = &t[n->hash & (nb - 1)];

			next = n->chain;
			n->chain = *slot;
			*slot = n;
		}
	}
	free(c->table);
	c->table = t;
	c->nbuckets = nb;
}

static void lru_unlink(struct objcache *c, struct node *n)
{
	if (n->newer)
		n->newer->older = n->older;
	else
		c->newest = n->older;
	if (n->older)
		n->older->newer = n->newer;
	else
		c->oldest = n->newer;
	n->newer = n->older = NULL;
}

static void lru_push_newest(struct objcache *c, struct node *n)
{
	n->newer = NULL;
	n->older = c->newest;
	if (c->newest)
		c->newest->newer = n;
	c->newest = n;
	if (!c->oldest)
		c->oldest = n;
}

/* Unchains n (at *slot), unlinks it and returns it to the free list. */
static void remove_node(struct objcache *c, struct node **slot)
{
	struct node *n = *slot;

	*slot = n->chain;
	lru_unlink(c, n);
	free(n->key);
	memset(n, 0, sizeof(*n));
	n->older = c->free_list;
	c->free_list = n;
	c->count--;
}

int objcache_get(struct objcache *c, const char *bucket, const char *key,
		 struct objcache_entry *out)
{
	char k[OBJCACHE_KEY_MAX + 1];
	size_t kl = compose(bucket, key, k);
	struct node **slot;
	uint64_t h;

	if (kl == 0) {
		__atomic_add_fetch(&c->misses, 1, __ATOMIC_RELAXED); /* objcache_counts */
		return 0;
	}
	h = siphash24(c->k0, c->k1, (const unsigned char *)k, kl);
	slot = find_slot(c, k, kl, h);
	if (!*slot) {
		__atomic_add_fetch(&c->misses, 1, __ATOMIC_RELAXED); /* objcache_counts */
		return 0;
	}
	__atomic_add_fetch(&c->hits, 1, __ATOMIC_RELAXED);
	lru_unlink(c, *slot);
	lru_push_newest(c, *slot);
	if (out)
		*out = (*slot)->entry;
	return 1;
}

int objcache_invalidate(struct objcache *c, const char *bucket, const char *key)
{
	char k[OBJCACHE_KEY_MAX + 1];
	size_t kl = compose(bucket, key, k);
	struct node **slot;

	if (kl == 0)
		return 0;
	slot = find_slot(c, k, kl, siphash24(c->k0, c->k1, (const unsigned char *)k, kl));
	if (!*slot)
		return 0;
	remove_node(c, slot);
	return 1;
}

int objcache_put(struct objcache *c, const char *bucket, const char *key,
		 const char *etag, uint64_t epoch)
{
	char k[OBJCACHE_KEY_MAX + 1];
	size_t kl = compose(bucket, key, k), el = strlen(etag);
	struct node **slot, *n;
	uint64_t h;

	if (kl == 0)
		return -1;
	h = siphash24(c->k0, c->k1, (const unsigned char *)k, kl);
	slot = find_slot(c, k, kl, h);
	if (el >= OBJCACHE_ETAG_MAX) {
		if (*slot)
			remove_node(c, slot);
		return -1;
	}
	if (*slot) {
		n = *slot;
		lru_unlink(c, n);
	} else {
		char *copy = malloc(kl + 1);

		if (!copy)
			return -1;
		memcpy(copy, k, kl + 1);
		if (!c->free_list && c->used == c->capacity) {
			struct node *victim = c->oldest;
			struct node **vslot = find_slot(c, victim->key, victim->keylen, victim->hash);

			if (!*vslot) { /* cannot happen: the oldest node is chained */
				free(copy);
				return -1;
			}
			remove_node(c, vslot);
			c->evictions++;
			/* The victim may have shared our chain: find our slot again. */
			slot = find_slot(c, k, kl, h);
		}
		if (c->free_list) {
			n = c->free_list;
			c->free_list = n->older;
		} else {
			n = &c->nodes[c->used++];
		}
		n->key = copy;
		n->keylen = kl;
		n->hash = h;
		n->chain = NULL;
		*slot = n;
		c->count++;
		maybe_grow(c); /* after: slot may be the old table's */
	}
	memcpy(n->entry.etag, etag, el + 1);
	n->entry.epoch = epoch;
	lru_push_newest(c, n);
	return 0;
}

void objcache_counts(const struct objcache *c, uint64_t *hits, uint64_t *misses)
{
	*hits = __atomic_load_n(&c->hits, __ATOMIC_RELAXED);
	*misses = __atomic_load_n(&c->misses, __ATOMIC_RELAXED);
}

void objcache_stats(const struct objcache *c, struct objcache_stats *out)
{
	objcache_counts(c, &out->hits, &out->misses);
	out->evictions = c->evictions;
	out->count = c->count;
	out->capacity = c->capacity;
	out->buckets = c->nbuckets;
}
