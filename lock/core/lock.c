/* lock.c — the fencing lock protocol on a struct store: finding the latest
 * epoch, judging its lease, acquiring (create epoch+1 If-None-Match "*"),
 * with every ambiguous write resolved by reading the file back. It knows
 * nothing of S3 or directories (store.h), nor of JSON (lock_payload.c);
 * renewing and releasing (rewriting our own epoch file) live in
 * lock_renew.c; break, gc, the backend self-test and lock listing in
 * lock_admin.c; the epoch mark that new epochs are minted above, in
 * lock_mark.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "lock_int.h"

#define DEFAULT_TTL_MS          30000
#define DEFAULT_UNREADABLE_MS   60000
#define DEFAULT_CREATE_RETRIES  5
#define TTL_MAX_MS              (7LL * 24 * 3600 * 1000)
#define WAIT_BACKOFF_FIRST_MS   100
#define WAIT_BACKOFF_CAP_MS     5000
#define NONCE_BYTES             16

const char *lock_strerror(enum lock_code code)
{
	switch (code) {
	case LOCK_OK: return "ok";
	case LOCK_HELD: return "lock held by another holder";
	case LOCK_LOST: return "lock lost";
	case LOCK_ERR_STORE: return "store failure";
	case LOCK_ERR_INVALID: return "invalid argument";
	case LOCK_ERR_UNSAFE: return "store unsafe for locking";
	case LOCK_ERR_TIMEOUT: return "timed out waiting for the lock";
	case LOCK_ERR_NOMEM: return "out of memory";
	}
	return "unknown lock error";
}

const char *lock_state_name(enum lock_state st)
{
	switch (st) {
	case LOCK_STATE_FREE: return "free";
	case LOCK_STATE_HELD: return "held";
	case LOCK_STATE_LAPSED: return "lapsed";
	case LOCK_STATE_RELEASED: return "released";
	case LOCK_STATE_UNREADABLE: return "unreadable";
	}
	return "unknown";
}

/* --- small shared helpers ------------------------------------------------ */

int lock_random_hex(char *out, size_t outlen, size_t nbytes)
{
	unsigned char buf[32];
	size_t i;
	FILE *f;

	if (nbytes > sizeof(buf) || outlen < 2 * nbytes + 1)
		return -1;
	if (RAND_bytes(buf, (int)nbytes) != 1) {
		f = fopen("/dev/urandom", "rb");
		if (!f)
			return -1;
		i = fread(buf, 1, nbytes, f);
		fclose(f);
		if (i != nbytes)
			return -1;
	}
	for (i = 0; i < nbytes; i++)
		snprintf(out + 2 * i, 3, "%02x", buf[i]);
	out[2 * nbytes] = '\0';
	return 0;
}

void lock_self_identity(char *host, size_t hostlen, long long *pid)
{
	if (gethostname(host, hostlen) != 0)
		snprintf(host, hostlen, "unknown");
	host[hostlen - 1] = '\0';
	*pid = (long long)getpid();
}

void lock_store_error(char *err, size_t errlen, const char *what, const char *key,
		      enum store_code code, const struct store_result *res)
{
	if (res && res->http_status)
		snprintf(err, errlen, "%s \"%s\": %s (HTTP %d%s%s%s%s)", what, key,
			 store_strerror(code), res->http_status,
			 res->err_code[0] ? " " : "", res->err_code,
			 res->err_message[0] ? ": " : "", res->err_message);
	else if (res && res->err_message[0])
		snprintf(err, errlen, "%s \"%s\": %s (%s)", what, key,
			 store_strerror(code), res->err_message);
	else
		snprintf(err, errlen, "%s \"%s\": %s", what, key, store_strerror(code));
}

int64_t lock_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms)
{
	int64_t full = base_ms;
	unsigned char r[2] = { 0, 0 };
	int i;

	for (i = 0; i < attempt && full < cap_ms; i++)
		full *= 2;
	if (full > cap_ms)
		full = cap_ms;
	/* "equal jitter": half fixed, half random, so racers spread out */
	if (RAND_bytes(r, sizeof(r)) != 1)
		r[0] = r[1] = 0x80;
	return full / 2 + (full / 2) * ((int64_t)r[0] << 8 | r[1]) / 65536;
}

int64_t lock_margin_default(int64_t ttl_ms)
{
	int64_t m = 1000 + ttl_ms / 10;

	return m < ttl_ms / 2 ? m : ttl_ms / 2;
}

int64_t lock_margin_for(const struct lock *lk, int64_t ttl_ms)
{
	if (lk->safety_margin_ms > 0)
		return lk->safety_margin_ms;
	return lock_margin_default(ttl_ms);
}

/* --- opening, keys --------------------------------------------------------- */

struct lock *lock_open(struct store *st, const char *name,
		       const struct lock_options *opts, char *err, size_t errlen)
{
	struct lock *lk = NULL;
	const char *root;
	size_t len;

	if (!st) {
		snprintf(err, errlen, "no store given");
		return NULL;
	}
	if (!lock_name_valid(name)) {
		snprintf(err, errlen, "invalid lock name \"%.*s\": use 1 to %d of A-Z a-z 0-9 . _ -, "
			 "not \".\" or \"..\"", LOCK_NAME_MAX + 8, name ? name : "", LOCK_NAME_MAX);
		return NULL;
	}
	lk = calloc(1, sizeof(*lk));
	if (!lk)
		goto nomem;
	lk->st = st;
	snprintf(lk->name, sizeof(lk->name), "%s", name);
	lk->time = opts && opts->time ? opts->time : timesrc_system();
	lk->unreadable_hold_ms = opts && opts->unreadable_hold_ms > 0 ?
				 opts->unreadable_hold_ms : DEFAULT_UNREADABLE_MS;
	lk->safety_margin_ms = opts && opts->safety_margin_ms > 0 ? opts->safety_margin_ms : 0;
	lk->max_create_retries = opts && opts->max_create_retries > 0 ?
				 opts->max_create_retries : DEFAULT_CREATE_RETRIES;
	if (opts && opts->prefix) {
		lk->prefix = strdup(opts->prefix);
	} else {
		root = store_root(st);
		len = strlen(root) + strlen("locks//lock-") + strlen(name) + 1;
		lk->prefix = malloc(len);
		if (lk->prefix)
			snprintf(lk->prefix, len, "%slocks/%s/lock-", root, name);
	}
	if (!lk->prefix)
		goto nomem;
	lk->mark_key = malloc(LOCK_KEY_MAX);
	if (!lk->mark_key)
		goto nomem;
	if (strlen(lk->prefix) + 16 >= LOCK_KEY_MAX ||
	    lock_mark_key_of(lk->prefix, lk->mark_key, LOCK_KEY_MAX) < 0) {
		snprintf(err, errlen, "lock prefix \"%.64s...\" is too long", lk->prefix);
		lock_close(lk);
		return NULL;
	}
	return lk;
nomem:
	snprintf(err, errlen, "out of memory");
	lock_close(lk);
	return NULL;
}

void lock_set_store(struct lock *lk, struct store *st)
{
	lk->st = st;
}

void lock_close(struct lock *lk)
{
	if (!lk)
		return;
	free(lk->prefix);
	free(lk->mark_key);
	free(lk);
}

const char *lock_name(const struct lock *lk)
{
	return lk->name;
}

const char *lock_prefix(const struct lock *lk)
{
	return lk->prefix;
}

void lock_epoch_key(const struct lock *lk, uint64_t epoch, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s%010llu.json", lk->prefix, (unsigned long long)epoch);
}

uint64_t lock_key_epoch(const struct lock *lk, const char *key)
{
	size_t plen = strlen(lk->prefix), i;
	uint64_t e = 0;

	if (strncmp(key, lk->prefix, plen) != 0)
		return 0;
	key += plen;
	for (i = 0; i < 10; i++) {
		if (key[i] < '0' || key[i] > '9')
			return 0;
		e = e * 10 + (uint64_t)(key[i] - '0');
	}
	if (strcmp(key + 10, ".json") != 0)
		return 0;
	return e;
}

/* --- what the store says --------------------------------------------------- */

/* Records that `epoch` exists (and, with p, what its file says). */
void lock_cache_latest(struct lock *lk, uint64_t epoch, const struct lock_payload *p,
		       const char *etag, int64_t last_modified)
{
	if (epoch > lk->floor)
		lk->floor = epoch;
	if (epoch < lk->latest_epoch)
		return;
	if (epoch > lk->latest_epoch) {
		lk->latest_epoch = epoch;
		lock_epoch_key(lk, epoch, lk->latest_key, sizeof(lk->latest_key));
	}
	lk->known = 0;
	if (p) {
		lk->known = 1;
		lk->known_payload = *p;
		snprintf(lk->known_etag, sizeof(lk->known_etag), "%s", etag ? etag : "");
		lk->known_last_modified = last_modified;
	}
}

enum lock_code lock_pager_next(struct lock *lk, const char *start_after,
			       struct lock_pager *pg, char *err, size_t errlen)
{
	enum store_code sc;

	if (pg->pages > 0) { /* move on from the page the caller has read */
		free(pg->cont);
		pg->cont = pg->page.next_token;
		pg->page.next_token = NULL;
		store_list_page_free(&pg->page);
	}
	if (pg->pages >= LOCK_LIST_PAGES_MAX) {
		snprintf(err, errlen, "listing \"%s\": more than %d pages", lk->prefix,
			 LOCK_LIST_PAGES_MAX);
		return LOCK_ERR_STORE;
	}
	sc = store_list(lk->st, lk->prefix,
			pg->cont || !start_after || !start_after[0] ? NULL : start_after,
			pg->cont, LOCK_LIST_PAGE, &pg->page, &pg->res);
	pg->pages++;
	if (sc != STORE_OK) {
		lock_store_error(err, errlen, "listing", lk->prefix, sc, &pg->res);
		return sc == STORE_ERR_NOMEM ? LOCK_ERR_NOMEM : LOCK_ERR_STORE;
	}
	if (!pg->page.truncated) {
		pg->done = 1;
	} else if (!pg->page.next_token || !pg->page.next_token[0]) {
		snprintf(err, errlen, "listing \"%s\": truncated page without a continuation token",
			 lk->prefix);
		return LOCK_ERR_STORE;
	}
	return LOCK_OK;
}

void lock_pager_free(struct lock_pager *pg)
{
	free(pg->cont);
	pg->cont = NULL;
	store_list_page_free(&pg->page);
	store_result_clear(&pg->res);
}

enum lock_code lock_latest_epoch(struct lock *lk, uint64_t *epoch, char *err, size_t errlen)
{
	struct lock_pager pg = LOCK_PAGER_INIT;
	char start_after[LOCK_KEY_MAX], best_key[LOCK_KEY_MAX];
	uint64_t best = lk->latest_epoch, e;
	enum lock_code rc = LOCK_OK;
	size_t i;

	/* Listing resumes after the newest epoch key this struct lock has seen:
	 * epochs only go up and the latest is never deleted, so nothing before
	 * it can be newer. */
	snprintf(start_after, sizeof(start_after), "%s", lk->latest_key);
	best_key[0] = '\0';
	while (!pg.done) {
		rc = lock_pager_next(lk, start_after, &pg, err, errlen);
		if (rc != LOCK_OK)
			goto out;
		for (i = 0; i < pg.page.n; i++) {
			e = pg.page.entries[i].key ? lock_key_epoch(lk, pg.page.entries[i].key) : 0;
			if (e > best) {
				best = e;
				snprintf(best_key, sizeof(best_key), "%s", pg.page.entries[i].key);
			}
		}
	}
	if (best > lk->latest_epoch)
		lock_cache_latest(lk, best, NULL, NULL, 0);
	*epoch = lk->latest_epoch;
out:
	lock_pager_free(&pg);
	return rc;
}

/* Judges one epoch file from a GET answer: state, lease left. */
static void judge(const struct lock *lk, struct lock_info *info, int parsed,
		  const struct store_result *res)
{
	int64_t date = res->server_date ? res->server_date :
		       timesrc_wall_ms(lk->time) / 1000;
	int64_t lm = res->last_modified ? res->last_modified : date;
	int64_t left;

	/* Lease time is the store's: without its Date (or Last-Modified) our
	 * own clock could call a live lease lapsed. Judge the file as written
	 * just now: a contender waits for a release or a break, never takes
	 * it early (lock_check_store refuses such a store). */
	if (!res->server_date || !res->last_modified)
		lm = date;

	info->server_date = date;
	info->last_modified = lm;
	snprintf(info->etag, sizeof(info->etag), "%s", res->etag);
	info->remaining_ms = 0;
	if (!parsed) {
		/* an unreadable file is never free: held for a while, then lapsed */
		left = lock_lease_remaining_ms(lm, lk->unreadable_hold_ms, date);
		info->state = left > 0 ? LOCK_STATE_UNREADABLE : LOCK_STATE_LAPSED;
		info->remaining_ms = left > 0 ? left : 0;
	} else if (info->payload.expired) {
		info->state = LOCK_STATE_RELEASED;
	} else {
		left = lock_lease_remaining_ms(lm, info->payload.validity_ms, date);
		info->state = left > 0 ? LOCK_STATE_HELD : LOCK_STATE_LAPSED;
		info->remaining_ms = left > 0 ? left : 0;
	}
}

/* Reads epoch file `epoch` into info. *missing = 1 when it does not exist;
 * *parsed (may be NULL) = 1 when its payload could be read. */
enum lock_code lock_read_epoch(struct lock *lk, uint64_t epoch, struct lock_info *info,
			       int *missing, int *parsed_out, char *err, size_t errlen)
{
	struct store_result res = STORE_RESULT_INIT;
	enum store_code sc;
	enum lock_code rc = LOCK_OK;
	int parsed;

	memset(info, 0, sizeof(*info));
	*missing = 0;
	info->epoch = epoch;
	lock_epoch_key(lk, epoch, info->key, sizeof(info->key));
	sc = store_get(lk->st, info->key, &res);
	if (sc == STORE_NOT_FOUND) {
		*missing = 1;
		goto out;
	}
	if (sc != STORE_OK) {
		lock_store_error(err, errlen, "reading", info->key, sc, &res);
		rc = sc == STORE_ERR_NOMEM ? LOCK_ERR_NOMEM : LOCK_ERR_STORE;
		goto out;
	}
	parsed = lock_payload_parse(res.body, res.body_len, &info->payload) == 0;
	judge(lk, info, parsed, &res);
	snprintf(info->client, sizeof(info->client), "%s",
		 store_result_meta(&res, LOCK_CLIENT_META) ? store_result_meta(&res, LOCK_CLIENT_META)
							   : "");
	if (parsed_out)
		*parsed_out = parsed;
	lock_cache_latest(lk, epoch, parsed ? &info->payload : NULL, res.etag, info->last_modified);
out:
	store_result_clear(&res);
	return rc;
}

/* The latest epoch and its state. With use_cache, a latest epoch this struct
 * lock knows to be released is not read again: "expired": true is final for
 * an epoch file, because only its holder rewrites it (If-Match its own ETag)
 * and a holder never rewrites after releasing (lock_release forgets the
 * ETag; lock_renew then reads the file and refuses). A lapsed or held epoch
 * is always read again: it may have been renewed since. */
static enum lock_code latest_state(struct lock *lk, struct lock_info *info, int use_cache,
				   char *err, size_t errlen)
{
	enum lock_code rc;
	uint64_t epoch = 0;
	int tries, missing = 0;

	for (tries = 0; tries < 3; tries++) {
		rc = lock_latest_epoch(lk, &epoch, err, errlen);
		if (rc != LOCK_OK)
			return rc;
		memset(info, 0, sizeof(*info));
		if (epoch == 0) {
			info->state = LOCK_STATE_FREE;
			info->server_date = timesrc_wall_ms(lk->time) / 1000;
			return LOCK_OK;
		}
		if (use_cache && lk->known && lk->known_payload.expired) {
			info->epoch = epoch;
			info->state = LOCK_STATE_RELEASED;
			info->payload = lk->known_payload;
			snprintf(info->key, sizeof(info->key), "%s", lk->latest_key);
			snprintf(info->etag, sizeof(info->etag), "%s", lk->known_etag);
			info->last_modified = lk->known_last_modified;
			info->server_date = timesrc_wall_ms(lk->time) / 1000;
			return LOCK_OK;
		}
		rc = lock_read_epoch(lk, epoch, info, &missing, NULL, err, errlen);
		if (rc != LOCK_OK || !missing)
			return rc;
		/* listed (or cached) but gone: a newer epoch was made and this
		 * one collected in between, or the files were deleted out of
		 * band. Forget the cache (the floor stays: epochs never go
		 * back), read the mark again, and list from the start. */
		lk->latest_epoch = 0;
		lk->latest_key[0] = '\0';
		lk->known = 0;
		lk->mark_known = 0;
	}
	snprintf(err, errlen, "epoch file \"%s\" is listed as the latest but cannot be read "
		 "(deleted by hand? the latest epoch file must never be deleted)", info->key);
	return LOCK_ERR_STORE;
}

/* info->mark: the highest epoch known minted, never below info->epoch. */
static void note_mark(struct lock *lk, struct lock_info *info)
{
	uint64_t m = lk->mark_epoch > lk->floor ? lk->mark_epoch : lk->floor;

	info->mark = m > info->epoch ? m : info->epoch;
}

enum lock_code lock_status(struct lock *lk, struct lock_info *info, char *err, size_t errlen)
{
	enum lock_code rc = LOCK_OK;

	if (!lk->mark_known)
		rc = lock_mark_read(lk, NULL, err, errlen);
	if (rc == LOCK_OK)
		rc = latest_state(lk, info, 0, err, errlen);
	if (rc == LOCK_OK && !lk->mark_known)
		rc = lock_mark_read(lk, NULL, err, errlen);
	if (rc == LOCK_OK)
		note_mark(lk, info);
	return rc;
}

/* --- creating an epoch file ------------------------------------------------ */

/* When the server wrote what res describes (Unix seconds): its Last-Modified,
 * else its Date, else our own clock. */
static int64_t written_at(const struct lock *lk, const struct store_result *res)
{
	if (res->last_modified)
		return res->last_modified;
	if (res->server_date)
		return res->server_date;
	return timesrc_wall_ms(lk->time) / 1000;
}

int lock_read_back(struct lock *lk, const char *key, struct store_result *res,
		   struct lock_payload *p, int *parsed, char *err, size_t errlen)
{
	enum store_code sc = store_get(lk->st, key, res);

	*parsed = 0;
	if (sc == STORE_NOT_FOUND)
		return -1;
	if (sc != STORE_OK) {
		lock_store_error(err, errlen, "reading back", key, sc, res);
		return -2;
	}
	*parsed = lock_payload_parse(res->body, res->body_len, p) == 0;
	res->last_modified = written_at(lk, res);
	return 1;
}

/* After an ambiguous create: is the file there, and is it ours (by nonce)?
 * Returns 1 ours (etag/lm filled), 0 someone else's, -1 absent, -2 failed. */
static int read_back_nonce(struct lock *lk, const char *key, const char *nonce,
			   struct lock_created *out, char *err, size_t errlen)
{
	struct store_result res = STORE_RESULT_INIT;
	struct lock_payload p;
	int parsed, r = lock_read_back(lk, key, &res, &p, &parsed, err, errlen);

	if (r == 1) {
		r = parsed && nonce[0] && strcmp(p.nonce, nonce) == 0;
		if (r) {
			snprintf(out->etag, sizeof(out->etag), "%s", res.etag);
			out->last_modified = res.last_modified;
		}
	}
	store_result_clear(&res);
	return r;
}

enum lock_code lock_create_epoch(struct lock *lk, uint64_t epoch,
				 const struct lock_payload *p, const char *client,
				 struct lock_created *out, char *err, size_t errlen)
{
	struct store_meta stamp = { (char *)LOCK_CLIENT_META, (char *)client };
	struct store_put_opts po = { .cond = STORE_COND_IF_NONE_MATCH_ANY,
				     .content_type = "application/json",
				     .meta = client && client[0] ? &stamp : NULL,
				     .nmeta = client && client[0] ? 1 : 0 };
	struct store_result res = STORE_RESULT_INIT;
	char key[LOCK_KEY_MAX];
	char *body = NULL;
	enum lock_code rc = LOCK_OK;
	enum store_code sc;
	int attempt, ambiguous = 0, r;
	int64_t send;

	memset(out, 0, sizeof(*out));
	out->send_mono_ms = -1;
	if (epoch == 0 || epoch > LOCK_EPOCH_MAX) {
		snprintf(err, errlen, "lock \"%s\": epoch %llu is out of range (1..%llu)",
			 lk->name, (unsigned long long)epoch, LOCK_EPOCH_MAX);
		return LOCK_ERR_INVALID;
	}
	lock_epoch_key(lk, epoch, key, sizeof(key));
	body = lock_payload_format(p);
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return LOCK_ERR_NOMEM;
	}
	for (attempt = 0;; attempt++) {
		send = timesrc_mono_ms(lk->time);
		if (out->send_mono_ms < 0)
			out->send_mono_ms = send; /* the earliest: conservative */
		sc = store_put(lk->st, key, body, strlen(body), &po, &res);
		if (sc == STORE_OK) {
			out->won = 1;
			snprintf(out->etag, sizeof(out->etag), "%s", res.etag);
			out->last_modified = written_at(lk, &res);
			goto out;
		}
		if (sc == STORE_PRECONDITION_FAILED && !ambiguous)
			goto out; /* someone else created it: lost the race */
		if (sc != STORE_PRECONDITION_FAILED && sc != STORE_CONFLICT &&
		    sc != STORE_ERR_IO && sc != STORE_ERR_SERVER) {
			lock_store_error(err, errlen, "creating", key, sc, &res);
			rc = sc == STORE_ERR_NOMEM ? LOCK_ERR_NOMEM : LOCK_ERR_STORE;
			goto out;
		}
		/* Unknown outcome (timeout, 5xx, 409), or a 412 after an earlier
		 * unknown outcome that may have been ours: the nonce decides. */
		ambiguous = 1;
		r = read_back_nonce(lk, key, p->nonce, out, err, errlen);
		if (r == 1) {
			out->won = 1;
			goto out;
		}
		if (r == 0)
			goto out;
		if (attempt >= lk->max_create_retries) {
			if (r == -1)
				lock_store_error(err, errlen, "creating", key, sc, &res);
			rc = LOCK_ERR_STORE;
			goto out;
		}
		timesrc_sleep_ms(lk->time, lock_backoff_ms(attempt, RETRY_BACKOFF_FIRST_MS,
							   RETRY_BACKOFF_CAP_MS));
	}
out:
	if (rc == LOCK_OK)
		lock_cache_latest(lk, epoch, out->won ? p : NULL, out->etag, out->last_modified);
	free(body);
	store_result_clear(&res);
	return rc;
}

/* --- acquire ------------------------------------------------------------------ */

/* One try: read the latest epoch; if nobody holds it, create the next. */
static enum lock_code acquire_once(struct lock *lk, const char *holder, const char *client,
				   int64_t ttl_ms, struct lock_grant *grant,
				   struct lock_info *info, char *err, size_t errlen)
{
	struct lock_payload p;
	struct lock_created made;
	enum lock_code rc;
	uint64_t next;
	int round;

	memset(&p, 0, sizeof(p));
	snprintf(p.leader_id, sizeof(p.leader_id), "%s", holder);
	p.validity_ms = ttl_ms;
	lock_self_identity(p.host, sizeof(p.host), &p.pid);
	if (lock_random_hex(p.nonce, sizeof(p.nonce), NONCE_BYTES) < 0) {
		snprintf(err, errlen, "no random bytes for a nonce");
		return LOCK_ERR_STORE;
	}
	for (round = 0; round <= lk->max_create_retries; round++) {
		/* the mark before the listing (lock_mark.c says why); a mark
		 * this struct lock knows is as good: its epoch's file was
		 * created before, so the listing sees it unless files were
		 * deleted, and a vanished latest file makes it read again */
		rc = lk->mark_known ? LOCK_OK : lock_mark_read(lk, NULL, err, errlen);
		if (rc == LOCK_OK)
			rc = latest_state(lk, info, 1, err, errlen);
		if (rc != LOCK_OK)
			return rc;
		note_mark(lk, info);
		if (info->state == LOCK_STATE_HELD || info->state == LOCK_STATE_UNREADABLE)
			return LOCK_HELD;
		next = info->mark + 1;
		rc = lock_create_epoch(lk, next, &p, client, &made, err, errlen);
		if (rc != LOCK_OK)
			return rc;
		if (!made.won)
			continue; /* 412: another node won; the next round reads it */
		rc = lock_mark_raise(lk, next, err, errlen);
		if (rc != LOCK_OK) {
			/* no grant: nobody holds this epoch; its lease lapses */
			return rc;
		}
		memset(grant, 0, sizeof(*grant));
		grant->epoch = next;
		lock_epoch_key(lk, grant->epoch, grant->key, sizeof(grant->key));
		snprintf(grant->etag, sizeof(grant->etag), "%s", made.etag);
		snprintf(grant->nonce, sizeof(grant->nonce), "%s", p.nonce);
		snprintf(grant->holder, sizeof(grant->holder), "%s", holder);
		snprintf(grant->client, sizeof(grant->client), "%s", client ? client : "");
		grant->ttl_ms = ttl_ms;
		grant->deadline_mono_ms = made.send_mono_ms + ttl_ms - lock_margin_for(lk, ttl_ms);
		grant->expires_at_ms = made.last_modified * 1000 + ttl_ms;
		return LOCK_OK;
	}
	/* every round another node won the create: it holds the lock, or held it */
	return LOCK_HELD;
}

enum lock_code lock_acquire(struct lock *lk, const struct lock_acquire_opts *ao,
			    struct lock_grant *grant, struct lock_info *holder_info,
			    char *err, size_t errlen)
{
	struct lock_info info;
	char holder[LOCK_HOLDER_MAX];
	int64_t ttl_ms = ao && ao->ttl_ms ? ao->ttl_ms : DEFAULT_TTL_MS;
	int64_t wait_ms = ao ? ao->wait_ms : 0, deadline, left, nap;
	long long pid;
	enum lock_code rc;
	int attempt;

	if (ttl_ms <= 0 || ttl_ms > TTL_MAX_MS || wait_ms < 0) {
		snprintf(err, errlen, "lock \"%s\": ttl must be 1 ms to 7 days and wait >= 0",
			 lk->name);
		return LOCK_ERR_INVALID;
	}
	if (ao && ao->holder) {
		if (!ao->holder[0] || strlen(ao->holder) >= sizeof(holder)) {
			snprintf(err, errlen, "holder id must be 1 to %d bytes", LOCK_HOLDER_MAX - 1);
			return LOCK_ERR_INVALID;
		}
		snprintf(holder, sizeof(holder), "%s", ao->holder);
	} else {
		char host[LOCK_HOLDER_MAX - 24];

		lock_self_identity(host, sizeof(host), &pid);
		snprintf(holder, sizeof(holder), "%s-%lld", host, pid);
	}
	deadline = timesrc_mono_ms(lk->time) + wait_ms;
	for (attempt = 0;; attempt++) {
		rc = acquire_once(lk, holder, ao ? ao->client : NULL, ttl_ms, grant, &info, err,
				  errlen);
		if (rc == LOCK_HELD && holder_info)
			*holder_info = info;
		if (rc != LOCK_HELD || wait_ms <= 0)
			return rc;
		left = deadline - timesrc_mono_ms(lk->time);
		if (left <= 0) {
			snprintf(err, errlen, "lock \"%s\" still held by \"%s\" (epoch %llu) after "
				 "waiting %lld ms", lk->name, info.payload.leader_id,
				 (unsigned long long)info.epoch, (long long)wait_ms);
			return LOCK_ERR_TIMEOUT;
		}
		/* Poll with growing pauses (the holder may release early), but
		 * wake when the lease lapses, and never past the wait. */
		nap = lock_backoff_ms(attempt, WAIT_BACKOFF_FIRST_MS, WAIT_BACKOFF_CAP_MS);
		if (info.remaining_ms > 0 && nap > info.remaining_ms)
			nap = info.remaining_ms;
		if (nap > left)
			nap = left;
		if (ao->on_wait)
			ao->on_wait(&info, wait_ms - left, ao->on_wait_arg);
		timesrc_sleep_ms(lk->time, nap > 0 ? nap : 1);
	}
}
