/* lock_mark.c — a lock's epoch mark: one small object per lock, outside the
 * lock-file prefix, holding the highest epoch the lock protocol has minted,
 * so that deleting the epoch files (a lifecycle rule on "locks/", an
 * operator's `aws s3 rm --recursive`, a restored backup) does not let
 * epochs start again at 1. Acquire and break mint max(latest file, mark,
 * what this struct lock saw) + 1. It does not decide anything about a
 * lease; lock.c and lock_admin.c call it.
 *
 * Where: lock_mark_key_of() — the prefix's last "locks/" segment becomes
 * "fencing-marks/" ("ROOT/locks/NAME/lock-" → "ROOT/fencing-marks/NAME/
 * high-water.json"), so it stays under the store's root but out of reach of
 * a deletion of "locks/" or "locks/NAME/". Body: {"epoch":N,"lock":"NAME",
 * "v":1}.
 *
 * Never lowered: a raise reads the mark and rewrites it conditionally
 * (If-Match its ETag, or If-None-Match "*" when absent) only if it is below
 * the new epoch; a lost race re-reads and tries again.
 *
 * Order, and why: the epoch file first, the mark second, and the mark is
 * read before the listing.
 *  - Mark after file: the mark never names an epoch that was not created,
 *    so an acquirer that reads mark M and then lists sees file M (or a
 *    newer one) unless files were deleted — it never jumps over an epoch
 *    another client is creating right now and so never steals a live lease
 *    (writing the mark first would let a second acquirer see M, list before
 *    M's file lands, and create M+1 over the live holder of M).
 *  - A crash between the two writes leaves file E+1 with the mark below it.
 *    The grant (the token) is handed out only after both writes, so nobody
 *    holds E+1: the worst case, files deleted before anyone repairs the
 *    mark, mints E+1 again for the next holder, which no writer ever used.
 *    Repairs: every acquire and every load of the proxy's registry raises
 *    the mark to the latest file it lists (lock_mark_raise), and a mark
 *    write that fails fails the acquire (the file's lease then lapses).
 *  - A proxy in front of the store keeps the mark of locks whose files are
 *    written through its S3 API: it answers a client's write of the mark
 *    403 LOCK_MARK_RESERVED_CODE, taken here as done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lock_int.h"

#define MARK_RETRIES 5
#define MARK_BODY_MAX 4096

int lock_mark_key_of(const char *prefix, char *out, size_t outlen)
{
	const char *seg = NULL, *p, *rest;
	size_t plen, tail;
	int n;

	if (!prefix || !out)
		return -1;
	for (p = prefix; (p = strstr(p, "locks/")); p++)
		if (p == prefix || p[-1] == '/')
			seg = p;
	plen = strlen(prefix);
	tail = plen;
	if (plen >= 5 && strcmp(prefix + plen - 5, "lock-") == 0 &&
	    (plen == 5 || prefix[plen - 6] == '/'))
		tail = plen - 5;   /* ".../NAME/lock-" → ".../NAME/" */
	rest = seg ? seg + 6 : prefix;
	if (prefix + tail < rest)
		tail = (size_t)(rest - prefix);
	if (plen > 4096)
		return -1;
	n = snprintf(out, outlen, "%.*sfencing-marks/%.*shigh-water.json",
		     seg ? (int)(seg - prefix) : 0, prefix, (int)(prefix + tail - rest), rest);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

const char *lock_mark_key(const struct lock *lk)
{
	return lk->mark_key;
}

/* The epoch in a mark's body; -1 if it is not a mark. */
static int mark_parse(const char *body, size_t len, uint64_t *epoch)
{
	cJSON *obj = NULL;
	const cJSON *v;
	int rc = -1;

	if (!body || len == 0 || len > MARK_BODY_MAX)
		return -1;
	obj = cJSON_ParseWithLength(body, len);
	v = obj ? cJSON_GetObjectItemCaseSensitive(obj, "epoch") : NULL;
	/* epochs stay below 2^53 (LOCK_EPOCH_MAX), where a double is exact */
	if (v && cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble <= (double)LOCK_EPOCH_MAX &&
	    (double)(uint64_t)v->valuedouble == v->valuedouble) {
		*epoch = (uint64_t)v->valuedouble;
		rc = 0;
	}
	cJSON_Delete(obj);
	return rc;
}

enum lock_code lock_mark_read(struct lock *lk, uint64_t *mark, char *err, size_t errlen)
{
	struct store_result res = STORE_RESULT_INIT;
	enum lock_code rc = LOCK_OK;
	enum store_code sc;
	uint64_t epoch = 0;

	sc = store_get(lk->st, lk->mark_key, &res);
	if (sc == STORE_NOT_FOUND) {
		lk->mark_exists = 0;
		lk->mark_etag[0] = '\0';
	} else if (sc != STORE_OK) {
		lock_store_error(err, errlen, "reading the epoch mark", lk->mark_key, sc, &res);
		rc = sc == STORE_ERR_NOMEM ? LOCK_ERR_NOMEM : LOCK_ERR_STORE;
		goto out;
	} else if (mark_parse(res.body, res.body_len, &epoch) < 0) {
		/* fail closed: it may have held a higher epoch than the files */
		snprintf(err, errlen, "epoch mark \"%s\" is not {\"epoch\":N}: restore it, or "
			 "write the highest epoch ever taken of lock \"%s\" there", lk->mark_key,
			 lk->name);
		rc = LOCK_ERR_STORE;
		goto out;
	} else {
		lk->mark_exists = 1;
		snprintf(lk->mark_etag, sizeof(lk->mark_etag), "%s", res.etag);
	}
	lk->mark_epoch = epoch;
	lk->mark_known = 1;
	if (epoch > lk->floor)
		lk->floor = epoch;
	if (mark)
		*mark = epoch;
out:
	store_result_clear(&res);
	return rc;
}

enum lock_code lock_mark_raise(struct lock *lk, uint64_t epoch, char *err, size_t errlen)
{
	struct store_result res = STORE_RESULT_INIT;
	struct store_put_opts po;
	enum lock_code rc = LOCK_OK;
	enum store_code sc;
	char body[LOCK_NAME_MAX + 96];
	int attempt;

	if (epoch > lk->floor)
		lk->floor = epoch;
	snprintf(body, sizeof(body), "{\"epoch\":%llu,\"lock\":\"%s\",\"v\":1}",
		 (unsigned long long)epoch, lk->name);
	for (attempt = 0; attempt < MARK_RETRIES; attempt++) {
		if (!lk->mark_known) {
			rc = lock_mark_read(lk, NULL, err, errlen);
			if (rc != LOCK_OK)
				goto out;
		}
		if (lk->mark_epoch >= epoch)
			goto out;   /* never lowered */
		memset(&po, 0, sizeof(po));
		po.cond = lk->mark_exists ? STORE_COND_IF_MATCH : STORE_COND_IF_NONE_MATCH_ANY;
		po.etag = lk->mark_etag;
		po.content_type = "application/json";
		store_result_clear(&res);
		sc = store_put(lk->st, lk->mark_key, body, strlen(body), &po, &res);
		if (sc == STORE_OK) {
			lk->mark_epoch = epoch;
			lk->mark_exists = 1;
			snprintf(lk->mark_etag, sizeof(lk->mark_etag), "%s", res.etag);
			goto out;
		}
		if (sc == STORE_ERR_DENIED && strcmp(res.err_code, LOCK_MARK_RESERVED_CODE) == 0)
			goto out;   /* a proxy in front keeps it */
		if (sc != STORE_PRECONDITION_FAILED && sc != STORE_NOT_FOUND &&
		    sc != STORE_CONFLICT && sc != STORE_ERR_IO && sc != STORE_ERR_SERVER) {
			lock_store_error(err, errlen, "writing the epoch mark", lk->mark_key, sc, &res);
			rc = sc == STORE_ERR_NOMEM ? LOCK_ERR_NOMEM : LOCK_ERR_STORE;
			goto out;
		}
		/* another writer moved it, or the outcome is unknown: read again */
		lk->mark_known = 0;
		if (sc != STORE_PRECONDITION_FAILED && sc != STORE_NOT_FOUND)
			timesrc_sleep_ms(lk->time, lock_backoff_ms(attempt, RETRY_BACKOFF_FIRST_MS,
								   RETRY_BACKOFF_CAP_MS));
	}
	snprintf(err, errlen, "writing the epoch mark \"%s\": no stable answer in %d tries",
		 lk->mark_key, MARK_RETRIES);
	rc = LOCK_ERR_STORE;
out:
	store_result_clear(&res);
	return rc;
}
