/* lockmarks.c — the process-wide lock name -> high-water mark table
 * (lockmarks.h): a fixed array of hash chains under one mutex for lookups
 * and inserts, and per mark an _Atomic uint64_t raised by compare-and-swap.
 * It knows nothing of stores, loads or requests. */
#include "lockmarks.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lock/core/lock.h"

#define LOCKMARKS_HASH_SIZE 1024

struct lockmark {
	_Atomic uint64_t epoch;
	_Atomic uint64_t released;  /* the highest epoch known released */
	_Atomic int store_tested;
	struct lockmark *next;      /* hash chain, under the table's mutex */
	char name[LOCK_NAME_MAX + 1];
};

struct lockmarks {
	pthread_mutex_t mu;
	size_t max_names;
	size_t count;               /* under mu */
	struct lockmark *table[LOCKMARKS_HASH_SIZE];
};

static unsigned name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % LOCKMARKS_HASH_SIZE;
}

struct lockmarks *lockmarks_new(size_t max_names)
{
	struct lockmarks *t;

	if (max_names < 1)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		free(t);
		return NULL;
	}
	t->max_names = max_names;
	return t;
}

void lockmarks_free(struct lockmarks *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < LOCKMARKS_HASH_SIZE; i++) {
		struct lockmark *m = t->table[i], *next;

		for (; m; m = next) {
			next = m->next;
			free(m);
		}
	}
	pthread_mutex_destroy(&t->mu);
	free(t);
}

struct lockmark *lockmarks_get(struct lockmarks *t, const char *name)
{
	struct lockmark *m = NULL;
	unsigned h;

	if (!t || !name || strlen(name) > LOCK_NAME_MAX)
		return NULL;
	h = name_hash(name);
	pthread_mutex_lock(&t->mu);
	for (m = t->table[h]; m; m = m->next)
		if (strcmp(m->name, name) == 0)
			goto out;
	if (t->count >= t->max_names)
		goto out; /* m is NULL */
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	atomic_init(&m->epoch, 0);
	atomic_init(&m->released, 0);
	atomic_init(&m->store_tested, 0);
	strcpy(m->name, name); /* length checked above */
	m->next = t->table[h];
	t->table[h] = m;
	t->count++;
out:
	pthread_mutex_unlock(&t->mu);
	return m;
}

/* *a = max(*a, v), atomically; returns the value after. */
static uint64_t atomic_max(_Atomic uint64_t *a, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(a, memory_order_acquire);

	while (cur < v &&
	       !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_acq_rel,
						      memory_order_acquire))
		; /* cur now holds what another thread stored: try again if still lower */
	return cur > v ? cur : v;
}

uint64_t lockmark_raise(struct lockmark *m, uint64_t epoch)
{
	return m ? atomic_max(&m->epoch, epoch) : epoch;
}

void lockmark_note_released(struct lockmark *m, uint64_t epoch)
{
	if (m)
		atomic_max(&m->released, epoch);
}

uint64_t lockmark_released(const struct lockmark *m)
{
	if (!m)
		return 0;
	return atomic_load_explicit(&((struct lockmark *)m)->released, memory_order_acquire);
}

uint64_t lockmark_read(const struct lockmark *m)
{
	if (!m)
		return 0;
	return atomic_load_explicit(&((struct lockmark *)m)->epoch, memory_order_acquire);
}

int lockmark_store_tested(const struct lockmark *m)
{
	return m && atomic_load_explicit(&((struct lockmark *)m)->store_tested,
					 memory_order_acquire);
}

void lockmark_set_store_tested(struct lockmark *m)
{
	if (m)
		atomic_store_explicit(&m->store_tested, 1, memory_order_release);
}

char **lockmarks_names(struct lockmarks *t, size_t *n)
{
	char **names = NULL;
	size_t k = 0;

	*n = 0;
	if (!t)
		return NULL;
	pthread_mutex_lock(&t->mu);
	if (t->count)
		names = calloc(t->count, sizeof(*names));
	for (size_t i = 0; names && i < LOCKMARKS_HASH_SIZE; i++)
		for (struct lockmark *m = t->table[i]; m && k < t->count; m = m->next)
			if ((names[k] = strdup(m->name)))
				k++;
	pthread_mutex_unlock(&t->mu);
	*n = k;
	return names;
}

void lockmarks_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

size_t lockmarks_count(struct lockmarks *t)
{
	size_t n;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->mu);
	n = t->count;
	pthread_mutex_unlock(&t->mu);
	return n;
}
