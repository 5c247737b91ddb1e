/* lock_int.h — what lock.c, lock_renew.c and lock_admin.c share: the
 * struct lock, reading and caching epoch files, and the
 * create-an-epoch-file step. Internal to libfencelock, not installed. */
#ifndef FENCE_LOCK_INT_H
#define FENCE_LOCK_INT_H

#include "lock.h"

#define LOCK_KEY_MAX    1100
#define LOCK_EPOCH_MAX  9999999999ULL   /* ten digits keep key order = epoch order */
#define LOCK_LIST_PAGE  1000
#define LOCK_LIST_PAGES_MAX 1000000     /* a bound on any listing loop */
#define RETRY_BACKOFF_FIRST_MS  50
#define RETRY_BACKOFF_CAP_MS    2000

/* One lock NAME as seen by one client. Cached knowledge, all of it about the
 * latest epoch this struct lock has seen:
 *   latest_epoch 0        nothing seen yet (or the lock is free)
 *   latest_epoch E, !known  E exists; its content must be read
 *   latest_epoch E, known   we read or wrote E's file: known_payload is its
 *                           content as of that read/write */
struct lock {
	struct store *st;
	const struct timesrc *time;
	char name[LOCK_NAME_MAX + 1];
	char *prefix;
	int64_t unreadable_hold_ms;
	int64_t safety_margin_ms;       /* 0: derived from each ttl */
	int max_create_retries;

	uint64_t latest_epoch;
	char latest_key[LOCK_KEY_MAX];
	int known;
	struct lock_payload known_payload;
	char known_etag[STORE_ETAG_MAX];
	int64_t known_last_modified;

	/* the epoch mark (lock_mark.c) and the highest epoch this struct lock
	 * ever saw (files, mark, its own creates): never lowered, even when
	 * the cache above is reset because the latest file vanished */
	char *mark_key;
	int mark_known;                 /* mark_epoch/exists/etag are as read or written */
	int mark_exists;
	uint64_t mark_epoch;
	char mark_etag[STORE_ETAG_MAX];
	uint64_t floor;
};

/* The result of one create (If-None-Match "*") of an epoch file, ambiguous
 * answers already resolved by reading the file back. */
struct lock_created {
	int won;                        /* 1: the file is ours; 0: someone else's */
	char etag[STORE_ETAG_MAX];      /* when won */
	int64_t last_modified;          /* when won, server seconds */
	int64_t send_mono_ms;           /* monotonic time the first create was sent */
};

/* Creates epoch file `epoch` with payload p (whose nonce must be set),
 * stamped with client (LOCK_CLIENT_META) unless it is NULL or "".
 * LOCK_OK with out->won telling who has the file; LOCK_ERR_* on a failure
 * (message in err). Updates the latest-epoch cache. */
enum lock_code lock_create_epoch(struct lock *lk, uint64_t epoch,
				 const struct lock_payload *p, const char *client,
				 struct lock_created *out, char *err, size_t errlen);

/* The holder's safety margin for a lease of ttl_ms: the lock's, else
 * min(1 s + ttl/10, ttl/2). */
int64_t lock_margin_for(const struct lock *lk, int64_t ttl_ms);

/* Records that `epoch` exists (and, with p, what its file says: its ETag
 * and Last-Modified) in lk's latest-epoch cache; an older epoch is
 * ignored. */
void lock_cache_latest(struct lock *lk, uint64_t epoch, const struct lock_payload *p,
		       const char *etag, int64_t last_modified);

/* Reads key back after a write whose answer was lost: 1 read (res filled,
 * its last_modified the server's write time; *parsed set when p could be
 * read from it), -1 absent, -2 failed (err set). The caller clears res. */
int lock_read_back(struct lock *lk, const char *key, struct store_result *res,
		   struct lock_payload *p, int *parsed, char *err, size_t errlen);

/* Reads epoch file `epoch` into info and the cache. *missing = 1 when it
 * does not exist; *parsed_out (may be NULL) = 1 when its payload could be
 * read. LOCK_OK, or LOCK_ERR_* with a message in err. */
enum lock_code lock_read_epoch(struct lock *lk, uint64_t epoch, struct lock_info *info,
			       int *missing, int *parsed_out, char *err, size_t errlen);

/* Fills out with 2*nbytes random hex digits (nbytes <= 32). Returns 0 or -1. */
int lock_random_hex(char *out, size_t outlen, size_t nbytes);

/* host and pid of this process, for payloads. */
void lock_self_identity(char *host, size_t hostlen, long long *pid);

/* Formats a store failure into err: "WHAT KEY: reason (HTTP n Code: msg)". */
/* Walks every page of a listing of lk's prefix. Zero it (LOCK_PAGER_INIT),
 * call lock_pager_next() while !done and read pg->page after each call, then
 * lock_pager_free(). The first page starts after start_after (NULL or "" for
 * the beginning); later pages follow the continuation token. */
struct lock_pager {
	struct store_list_page page;
	struct store_result res;
	char *cont;
	long pages;
	int done;
};

#define LOCK_PAGER_INIT { .res = STORE_RESULT_INIT }

/* Fetches the next page into pg->page (the previous one is freed) and sets
 * pg->done after the last. LOCK_OK, or LOCK_ERR_STORE / LOCK_ERR_NOMEM with
 * a message in err (store failure, a truncated page without a token, or
 * more than LOCK_LIST_PAGES_MAX pages). */
enum lock_code lock_pager_next(struct lock *lk, const char *start_after,
			       struct lock_pager *pg, char *err, size_t errlen);
void lock_pager_free(struct lock_pager *pg);

void lock_store_error(char *err, size_t errlen, const char *what, const char *key,
		      enum store_code code, const struct store_result *res);

/* A pause of about base_ms * 2^attempt (capped at cap_ms), with jitter. */
int64_t lock_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms);

#endif
