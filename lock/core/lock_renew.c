/* lock_renew.c — the holder's side of the lock protocol: renewing and
 * releasing, by rewriting our own epoch file If-Match the ETag of our last
 * write (or of the file as read, for a grant known only by its epoch), then
 * confirming that no newer epoch exists; a lapsed lease, a newer epoch or a
 * failed condition is LOCK_LOST, and an answer that comes after the
 * holder's own deadline counts as lost whatever the store said. It never
 * creates an epoch file (lock.c does) and never deletes one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

/* Reads our epoch file for a grant that has no ETag (a renew or release by
 * epoch number, e.g. from another process) and fills the grant from it.
 * *base receives the file's payload. */
static enum lock_code adopt_epoch_file(struct lock *lk, struct lock_grant *grant,
				       int releasing, struct lock_payload *base,
				       char *err, size_t errlen)
{
	struct lock_info info;
	enum lock_code rc;
	int missing, parsed = 0;
	int64_t sent = timesrc_mono_ms(lk->time);

	rc = lock_read_epoch(lk, grant->epoch, &info, &missing, &parsed, err, errlen);
	if (rc != LOCK_OK)
		return rc;
	if (missing) {
		snprintf(err, errlen, "lock \"%s\": epoch %llu does not exist", lk->name,
			 (unsigned long long)grant->epoch);
		return LOCK_LOST;
	}
	if (info.state == LOCK_STATE_RELEASED) {
		snprintf(err, errlen, "lock \"%s\": epoch %llu was released", lk->name,
			 (unsigned long long)grant->epoch);
		return LOCK_LOST;
	}
	if (!parsed) {
		snprintf(err, errlen, "lock \"%s\": epoch file \"%s\" is unreadable", lk->name,
			 info.key);
		return LOCK_LOST;
	}
	/* A lapsed lease may be taken by a contender at any moment: renewing
	 * it now could leave two holders believing in a live lease. */
	if (!releasing && info.state == LOCK_STATE_LAPSED) {
		snprintf(err, errlen, "lock \"%s\": the lease of epoch %llu has lapsed", lk->name,
			 (unsigned long long)grant->epoch);
		return LOCK_LOST;
	}
	*base = info.payload;
	snprintf(grant->key, sizeof(grant->key), "%s", info.key);
	snprintf(grant->etag, sizeof(grant->etag), "%s", info.etag);
	snprintf(grant->nonce, sizeof(grant->nonce), "%s", info.payload.nonce);
	snprintf(grant->holder, sizeof(grant->holder), "%s", info.payload.leader_id);
	snprintf(grant->client, sizeof(grant->client), "%s", info.client);
	grant->ttl_ms = info.payload.validity_ms;
	grant->renewals = info.payload.renewals;
	/* the deadline this holder would have had: the lease left by the
	 * store's clock, less the margin, from when we asked */
	grant->deadline_mono_ms = sent + info.remaining_ms - lock_margin_for(lk, grant->ttl_ms);
	if (!releasing && timesrc_mono_ms(lk->time) >= grant->deadline_mono_ms) {
		snprintf(err, errlen, "lock \"%s\": the lease of epoch %llu is within its safety "
			 "margin of lapsing", lk->name, (unsigned long long)grant->epoch);
		return LOCK_LOST;
	}
	return LOCK_OK;
}

/* After a renewal landed: 1 when a newer epoch exists (a break, or a
 * contender), 0 when none does, -1 when the listing failed. */
static int superseded(struct lock *lk, uint64_t epoch, uint64_t *latest, char *err,
		      size_t errlen)
{
	if (lock_latest_epoch(lk, latest, err, errlen) != LOCK_OK)
		return -1;
	return *latest > epoch;
}

/* After an ambiguous rewrite: 1 applied (etag/lm filled), 0 not applied (the
 * file is still the version we hold), -1 someone else changed it or it is
 * gone, -2 could not read. */
static int rewrite_outcome(struct lock *lk, const char *key, const char *old_etag,
			   const struct lock_payload *want, struct lock_created *out,
			   char *err, size_t errlen)
{
	struct store_result res = STORE_RESULT_INIT;
	struct lock_payload p;
	int parsed, r = lock_read_back(lk, key, &res, &p, &parsed, err, errlen);

	if (r == 1 && strcmp(res.etag, old_etag) == 0) {
		r = 0;
	} else if (r == 1 && parsed && strcmp(p.nonce, want->nonce) == 0 &&
		   p.renewals == want->renewals && p.expired == want->expired) {
		snprintf(out->etag, sizeof(out->etag), "%s", res.etag);
		out->last_modified = res.last_modified;
	} else if (r == 1) {
		r = -1;
	}
	store_result_clear(&res);
	return r;
}

/* Renew (releasing = 0) or release (1): rewrite our epoch file If-Match. */
static enum lock_code rewrite(struct lock *lk, struct lock_grant *grant, int releasing,
			      char *err, size_t errlen)
{
	struct store_put_opts po = { .cond = STORE_COND_IF_MATCH,
				     .content_type = "application/json" };
	struct store_result res = STORE_RESULT_INIT;
	struct store_meta stamp = { (char *)LOCK_CLIENT_META, NULL };
	struct lock_payload want;
	struct lock_created done;
	const char *what = releasing ? "releasing" : "renewing";
	char *body = NULL;
	uint64_t latest = 0;
	enum lock_code rc;
	enum store_code sc;
	int attempt, ambiguous = 0, r;
	int64_t send = 0, now, deadline, saved_deadline = lk->st->deadline_mono_ms;

	if (!grant || grant->epoch == 0 || grant->epoch > LOCK_EPOCH_MAX) {
		snprintf(err, errlen, "lock \"%s\": no epoch to %s", lk->name,
			 releasing ? "release" : "renew");
		return LOCK_ERR_INVALID;
	}
	now = timesrc_mono_ms(lk->time);
	/* Our deadline is send + ttl - margin: past it the holder has stopped
	 * (or must), and a contender may soon take epoch+1. */
	if (!releasing && grant->etag[0] && grant->deadline_mono_ms &&
	    now >= grant->deadline_mono_ms) {
		snprintf(err, errlen, "lock \"%s\": the lease of epoch %llu passed its deadline "
			 "%lld ms before this renewal", lk->name, (unsigned long long)grant->epoch,
			 (long long)(now - grant->deadline_mono_ms));
		return LOCK_LOST;
	}
	deadline = releasing || !grant->etag[0] ? 0 : grant->deadline_mono_ms;
	if (deadline)
		lk->st->deadline_mono_ms = deadline; /* no request outlives it */
	rc = lock_latest_epoch(lk, &latest, err, errlen);
	if (rc != LOCK_OK)
		goto out;
	if (latest != grant->epoch) {
		if (latest > grant->epoch)
			snprintf(err, errlen, "lock \"%s\": epoch %llu was superseded by epoch %llu",
				 lk->name, (unsigned long long)grant->epoch,
				 (unsigned long long)latest);
		else
			snprintf(err, errlen, "lock \"%s\": epoch %llu does not exist (latest is %llu)",
				 lk->name, (unsigned long long)grant->epoch,
				 (unsigned long long)latest);
		rc = LOCK_LOST;
		goto out;
	}
	lock_epoch_key(lk, grant->epoch, grant->key, sizeof(grant->key));
	memset(&want, 0, sizeof(want));
	if (!grant->etag[0]) {
		rc = adopt_epoch_file(lk, grant, releasing, &want, err, errlen);
		if (rc != LOCK_OK)
			goto out;
		deadline = releasing ? 0 : grant->deadline_mono_ms;
		if (deadline)
			lk->st->deadline_mono_ms = deadline;
	} else {
		snprintf(want.leader_id, sizeof(want.leader_id), "%s", grant->holder);
		snprintf(want.nonce, sizeof(want.nonce), "%s", grant->nonce);
		want.validity_ms = grant->ttl_ms;
		want.renewals = grant->renewals;
	}
	lock_self_identity(want.host, sizeof(want.host), &want.pid);
	want.expired = releasing;
	if (!releasing)
		want.renewals++;
	body = lock_payload_format(&want);
	if (!body) {
		snprintf(err, errlen, "out of memory");
		rc = LOCK_ERR_NOMEM;
		goto out;
	}
	po.etag = grant->etag;
	if (grant->client[0]) { /* the writer stamp stays the holder's */
		stamp.value = grant->client;
		po.meta = &stamp;
		po.nmeta = 1;
	}
	memset(&done, 0, sizeof(done));
	for (attempt = 0;; attempt++) {
		now = timesrc_mono_ms(lk->time);
		if (deadline && now >= deadline) {
			snprintf(err, errlen, "lock \"%s\": no answer to the renewal of epoch %llu "
				 "before the holder's deadline", lk->name,
				 (unsigned long long)grant->epoch);
			rc = LOCK_LOST;
			goto out;
		}
		if (!send)
			send = now;
		sc = store_put(lk->st, grant->key, body, strlen(body), &po, &res);
		if (sc == STORE_OK) {
			snprintf(done.etag, sizeof(done.etag), "%s", res.etag);
			done.last_modified = res.last_modified ? res.last_modified :
					     timesrc_wall_ms(lk->time) / 1000;
			break;
		}
		if ((sc == STORE_PRECONDITION_FAILED && !ambiguous) || sc == STORE_NOT_FOUND) {
			snprintf(err, errlen, "lock \"%s\": epoch %llu was changed by someone else "
				 "(%s)", lk->name, (unsigned long long)grant->epoch,
				 store_strerror(sc));
			rc = LOCK_LOST;
			goto out;
		}
		if (sc != STORE_PRECONDITION_FAILED && sc != STORE_CONFLICT &&
		    sc != STORE_ERR_IO && sc != STORE_ERR_SERVER) {
			lock_store_error(err, errlen, what, grant->key, sc, &res);
			rc = sc == STORE_ERR_NOMEM ? LOCK_ERR_NOMEM : LOCK_ERR_STORE;
			goto out;
		}
		ambiguous = 1;
		r = rewrite_outcome(lk, grant->key, grant->etag, &want, &done, err, errlen);
		if (r == 1)
			break;
		if (r == -1) {
			snprintf(err, errlen, "lock \"%s\": epoch %llu was changed by someone else",
				 lk->name, (unsigned long long)grant->epoch);
			rc = LOCK_LOST;
			goto out;
		}
		if (attempt >= lk->max_create_retries) {
			if (r == 0)
				lock_store_error(err, errlen, what, grant->key, sc, &res);
			rc = LOCK_ERR_STORE;
			goto out;
		}
		timesrc_sleep_ms(lk->time, lock_backoff_ms(attempt, RETRY_BACKOFF_FIRST_MS,
							   RETRY_BACKOFF_CAP_MS));
	}
	lock_cache_latest(lk, grant->epoch, &want, done.etag, done.last_modified);
	now = timesrc_mono_ms(lk->time);
	if (deadline && now >= deadline) {
		/* S3 said yes, too late: a contender may already have judged the
		 * old lease lapsed and taken epoch+1 */
		snprintf(err, errlen, "lock \"%s\": the renewal of epoch %llu was answered %lld ms "
			 "after the holder's deadline", lk->name, (unsigned long long)grant->epoch,
			 (long long)(now - deadline));
		grant->etag[0] = '\0';
		rc = LOCK_LOST;
		goto out;
	}
	if (!releasing) {
		/* a newer epoch file does not change ours: look for one */
		lk->st->deadline_mono_ms = send + grant->ttl_ms - lock_margin_for(lk, grant->ttl_ms);
		r = superseded(lk, grant->epoch, &latest, err, errlen);
		if (r != 0) {
			/* the rewrite is ours (keep its ETag), the lease is not
			 * extended until a renewal is confirmed */
			snprintf(grant->etag, sizeof(grant->etag), "%s", done.etag);
			grant->renewals = want.renewals;
			if (r > 0)
				snprintf(err, errlen, "lock \"%s\": epoch %llu was superseded by epoch "
					 "%llu", lk->name, (unsigned long long)grant->epoch,
					 (unsigned long long)latest);
			rc = r > 0 ? LOCK_LOST : LOCK_ERR_STORE;
			goto out;
		}
	}
	if (releasing) {
		/* forget the ETag: a released epoch is never rewritten by us */
		grant->etag[0] = '\0';
		grant->deadline_mono_ms = 0;
		grant->expires_at_ms = 0;
	} else {
		snprintf(grant->etag, sizeof(grant->etag), "%s", done.etag);
		grant->renewals = want.renewals;
		grant->deadline_mono_ms = send + grant->ttl_ms - lock_margin_for(lk, grant->ttl_ms);
		grant->expires_at_ms = done.last_modified * 1000 + grant->ttl_ms;
	}
	rc = LOCK_OK;
out:
	lk->st->deadline_mono_ms = saved_deadline;
	free(body);
	store_result_clear(&res);
	return rc;
}

enum lock_code lock_renew(struct lock *lk, struct lock_grant *grant, char *err, size_t errlen)
{
	return rewrite(lk, grant, 0, err, errlen);
}

enum lock_code lock_release(struct lock *lk, struct lock_grant *grant, char *err, size_t errlen)
{
	return rewrite(lk, grant, 1, err, errlen);
}
