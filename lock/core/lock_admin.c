/* lock_admin.c — the operator's side of the lock protocol: breaking a stuck
 * lock (a new epoch born expired, never a delete), collecting old epoch
 * files (never the latest), and listing the locks under "<root>locks/". Acquire, renew and release
 * live in lock.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

#define BREAK_HOLDER "fencectl-break"

enum lock_code lock_break(struct lock *lk, const char *holder, uint64_t *new_epoch,
			  char *err, size_t errlen)
{
	struct lock_payload p;
	struct lock_created made;
	enum lock_code rc;
	uint64_t latest = 0;
	int round;

	memset(&p, 0, sizeof(p));
	snprintf(p.leader_id, sizeof(p.leader_id), "%s", holder && *holder ? holder : BREAK_HOLDER);
	p.expired = true;
	lock_self_identity(p.host, sizeof(p.host), &p.pid);
	if (lock_random_hex(p.nonce, sizeof(p.nonce), 16) < 0) {
		snprintf(err, errlen, "no random bytes for a nonce");
		return LOCK_ERR_STORE;
	}
	for (round = 0; round <= lk->max_create_retries; round++) {
		/* the mark first, then the files; mint above both (lock_mark.c) */
		rc = lk->mark_known ? LOCK_OK : lock_mark_read(lk, NULL, err, errlen);
		if (rc == LOCK_OK)
			rc = lock_latest_epoch(lk, &latest, err, errlen);
		if (rc != LOCK_OK)
			return rc;
		if (lk->floor > latest)
			latest = lk->floor;
		rc = lock_create_epoch(lk, latest + 1, &p, NULL, &made, err, errlen);
		if (rc != LOCK_OK)
			return rc;
		if (made.won) {
			rc = lock_mark_raise(lk, latest + 1, err, errlen);
			if (rc == LOCK_OK && new_epoch)
				*new_epoch = latest + 1;
			return rc;
		}
		/* someone created latest+1 first: fence that one too */
	}
	snprintf(err, errlen, "lock \"%s\": other clients kept creating epochs; "
		 "break did not get one in %d tries", lk->name, round);
	return LOCK_ERR_STORE;
}

struct epoch_file {
	uint64_t epoch;
	char *key;
};

static int cmp_epoch_file(const void *a, const void *b)
{
	uint64_t x = ((const struct epoch_file *)a)->epoch;
	uint64_t y = ((const struct epoch_file *)b)->epoch;

	return x < y ? -1 : x > y;
}

enum lock_code lock_gc(struct lock *lk, unsigned keep, unsigned *deleted,
		       char *err, size_t errlen)
{
	struct lock_pager pg = LOCK_PAGER_INIT;
	struct store_result res = STORE_RESULT_INIT;
	struct epoch_file *files = NULL, *grown;
	size_t n = 0, cap = 0, i;
	enum lock_code rc = LOCK_OK;
	enum store_code sc;
	uint64_t e;
	unsigned count = 0;

	if (keep < 1) {
		snprintf(err, errlen, "gc: --keep must be at least 1 (the latest epoch is never deleted)");
		return LOCK_ERR_INVALID;
	}
	/* every epoch file, from the first: gc needs them all */
	while (!pg.done) {
		rc = lock_pager_next(lk, NULL, &pg, err, errlen);
		if (rc != LOCK_OK)
			goto out;
		for (i = 0; i < pg.page.n; i++) {
			e = pg.page.entries[i].key ? lock_key_epoch(lk, pg.page.entries[i].key) : 0;
			if (!e)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				grown = realloc(files, cap * sizeof(*files));
				if (!grown)
					goto nomem;
				files = grown;
			}
			files[n].epoch = e;
			files[n].key = strdup(pg.page.entries[i].key);
			if (!files[n].key)
				goto nomem;
			n++;
		}
	}
	if (n > 1)
		qsort(files, n, sizeof(*files), cmp_epoch_file);
	/* the newest `keep` stay; keep >= 1 so the latest always does */
	for (i = 0; i + keep < n; i++) {
		sc = store_delete(lk->st, files[i].key, NULL, &res);
		if (sc == STORE_NOT_FOUND)
			continue; /* collected by someone else meanwhile */
		if (sc != STORE_OK) {
			lock_store_error(err, errlen, "deleting", files[i].key, sc, &res);
			rc = LOCK_ERR_STORE;
			goto out;
		}
		count++;
	}
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
	rc = LOCK_ERR_NOMEM;
out:
	if (deleted)
		*deleted = count;
	for (i = 0; i < n; i++)
		free(files[i].key);
	free(files);
	lock_pager_free(&pg);
	store_result_clear(&res);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

enum lock_code lock_list_names(struct store *st, char ***names_out, size_t *n_out,
			       char *err, size_t errlen)
{
	struct store_list_page page = { 0 };
	struct store_result res = STORE_RESULT_INIT;
	char prefix[LOCK_KEY_MAX], start_after[LOCK_KEY_MAX], name[LOCK_NAME_MAX + 1];
	char **names = NULL, **grown;
	size_t n = 0, cap = 0, i, plen, nlen, j;
	enum lock_code rc = LOCK_OK;
	enum store_code sc;
	const char *key, *slash;
	long pages;

	*names_out = NULL;
	*n_out = 0;
	snprintf(prefix, sizeof(prefix), "%slocks/", store_root(st));
	plen = strlen(prefix);
	start_after[0] = '\0';
	/* Each page ends with some lock's keys; the next one starts after
	 * "<prefix>NAME0", which sorts after every "<prefix>NAME/..." key, so a
	 * lock with thousands of epochs costs one request, not one per page. */
	for (pages = 0; pages < LOCK_LIST_PAGES_MAX; pages++) {
		sc = store_list(st, prefix, start_after[0] ? start_after : NULL, NULL,
				LOCK_LIST_PAGE, &page, &res);
		if (sc != STORE_OK) {
			lock_store_error(err, errlen, "listing", prefix, sc, &res);
			rc = LOCK_ERR_STORE;
			goto out;
		}
		for (i = 0; i < page.n; i++) {
			key = page.entries[i].key;
			if (!key || strncmp(key, prefix, plen) != 0)
				continue;
			slash = strchr(key + plen, '/');
			nlen = slash ? (size_t)(slash - key - plen) : 0;
			if (!slash || nlen == 0 || nlen > LOCK_NAME_MAX)
				continue;
			memcpy(name, key + plen, nlen);
			name[nlen] = '\0';
			if (!lock_name_valid(name) || (n && strcmp(names[n - 1], name) == 0))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				grown = realloc(names, cap * sizeof(*names));
				if (!grown)
					goto nomem;
				names = grown;
			}
			names[n] = strdup(name);
			if (!names[n])
				goto nomem;
			n++;
		}
		if (!page.truncated || page.n == 0)
			break;
		key = page.entries[page.n - 1].key;
		if (!key || strcmp(key, start_after) <= 0) {
			snprintf(err, errlen, "listing \"%s\": the store returned keys out of order",
				 prefix);
			rc = LOCK_ERR_STORE;
			goto out;
		}
		slash = strncmp(key, prefix, plen) == 0 ? strchr(key + plen, '/') : NULL;
		if (slash && (size_t)(slash - key) + 2 <= sizeof(start_after))
			snprintf(start_after, sizeof(start_after), "%.*s0", (int)(slash - key), key);
		else
			snprintf(start_after, sizeof(start_after), "%s", key);
		store_list_page_free(&page);
	}
	/* listings are sorted, but be robust to a backend that is not */
	if (n > 1) {
		qsort(names, n, sizeof(*names), cmp_str);
		for (i = 1, j = 1; i < n; i++) {
			if (strcmp(names[i], names[j - 1]) == 0)
				free(names[i]);
			else
				names[j++] = names[i];
		}
		n = j;
	}
	*names_out = names;
	*n_out = n;
	names = NULL;
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
	rc = LOCK_ERR_NOMEM;
out:
	if (names) {
		for (i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	store_list_page_free(&page);
	store_result_clear(&res);
	return rc;
}
