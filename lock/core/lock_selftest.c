/* lock_selftest.c — the backend self-test: every condition fencegate uses,
 * measured one capability at a time on a probe key (PUT If-None-Match: *,
 * PUT If-Match quoted and bare, matching and not, DELETE If-Match a wrong
 * ETag, Date on answers, and N writers racing If-None-Match: * for one
 * key, a few rounds), with the verdict for the lock protocol on top
 * (lock_check_store). It writes only under the probe prefix and removes
 * what it wrote. CopyObject and CompleteMultipartUpload conditions are
 * probed where the store can send them (store_probe_ops); elsewhere they
 * are reported as not probed, and count as missing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_int.h"

#define WRONG_ETAG "\"fencegate-selftest-no-such-etag\""

static const char PROBE_BODY[] = "fencegate backend self-test probe; safe to delete\n";

/* Writes the probe with cond; the answer code. 409 (a conflicting write in
 * flight) is retried a few times: it settles nothing. */
static enum store_code probe_put(struct store *st, const char *key, enum store_cond cond,
				 const char *etag, struct store_result *res)
{
	struct store_put_opts po = { .cond = cond, .etag = etag, .content_type = "text/plain" };
	enum store_code sc = STORE_CONFLICT;
	int i;

	for (i = 0; i < 3 && sc == STORE_CONFLICT; i++)
		sc = store_put(st, key, PROBE_BODY, sizeof(PROBE_BODY) - 1, &po, res);
	return sc;
}

/* Records whether cap held, and what was seen. */
static void note(struct backend_report *rep, unsigned cap, int held, const char *seen)
{
	int i = backend_cap_index(cap);

	rep->probed |= cap;
	if (held)
		rep->caps |= cap;
	else
		rep->caps &= ~cap;
	if (i >= 0)
		snprintf(rep->seen[i], sizeof(rep->seen[i]), "%s", seen);
}

/* An answer that is neither "honoured" nor "ignored": the probe cannot go
 * on. */
static enum lock_code probe_failed(char *err, size_t errlen, const char *what, const char *key,
				   enum store_code sc, const struct store_result *res)
{
	lock_store_error(err, errlen, what, key, sc, res);
	return LOCK_ERR_STORE;
}

/* If-Match in one spelling: a wrong ETag must answer 412, the object's own
 * 2xx. *etag follows the object. */
static enum lock_code probe_if_match(struct store *st, const char *key, enum dialect_etag form,
				     unsigned cap, char *etag, struct backend_report *rep,
				     char *err, size_t errlen)
{
	struct store_result res = STORE_RESULT_INIT;
	char spelled[STORE_ETAG_MAX], seen[96];
	const char *how = form == DIALECT_ETAG_BARE ? "bare" : "quoted";
	enum lock_code rc = LOCK_OK;
	enum store_code sc;

	st->etag_form = form;
	sc = probe_put(st, key, STORE_COND_IF_MATCH,
		       dialect_spell_etag(form, WRONG_ETAG, spelled, sizeof(spelled)), &res);
	if (sc == STORE_OK) {
		snprintf(etag, STORE_ETAG_MAX, "%s", res.etag);
		snprintf(seen, sizeof(seen), "a write If-Match a wrong %s ETag succeeded", how);
		note(rep, cap, 0, seen);
		goto out;
	}
	if (sc != STORE_PRECONDITION_FAILED) {
		rc = probe_failed(err, errlen, "self-test: write If-Match a wrong ETag", key, sc,
				  &res);
		goto out;
	}
	sc = probe_put(st, key, STORE_COND_IF_MATCH,
		       dialect_spell_etag(form, etag, spelled, sizeof(spelled)), &res);
	if (sc == STORE_OK) {
		snprintf(etag, STORE_ETAG_MAX, "%s", res.etag);
		snprintf(seen, sizeof(seen), "412 to a wrong %s ETag, 2xx to the object's", how);
		note(rep, cap, 1, seen);
	} else if (sc == STORE_PRECONDITION_FAILED) {
		snprintf(seen, sizeof(seen), "412 to the object's own %s ETag", how);
		note(rep, cap, 0, seen);
	} else {
		rc = probe_failed(err, errlen, "self-test: write If-Match its ETag", key, sc, &res);
	}
out:
	store_result_clear(&res);
	return rc;
}

/* DELETE If-Match a wrong ETag: must answer 412 and keep the object.
 * *created is cleared when the probe is gone. */
static enum lock_code probe_delete(struct store *st, const char *key, int *created,
				   struct backend_report *rep, char *err, size_t errlen)
{
	struct store_result res = STORE_RESULT_INIT;
	enum lock_code rc = LOCK_OK;
	enum store_code sc;

	sc = store_delete(st, key, WRONG_ETAG, &res);
	if (sc == STORE_OK) {
		*created = 0;
		note(rep, CAP_DELETE_IF_MATCH, 0, "a delete If-Match a wrong ETag deleted the "
		     "object");
	} else if (sc == STORE_PRECONDITION_FAILED) {
		sc = store_head(st, key, &res);
		if (sc == STORE_NOT_FOUND)
			*created = 0;
		note(rep, CAP_DELETE_IF_MATCH, sc == STORE_OK,
		     sc == STORE_OK ? "412, object kept" : "412, but the object is gone");
	} else {
		rc = probe_failed(err, errlen, "self-test: delete If-Match a wrong ETag", key, sc,
				  &res);
	}
	store_result_clear(&res);
	return rc;
}

/* ---- the race ------------------------------------------------------------- */

/* Holds the racers until every thread is up, then lets them all go. */
struct start_gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open;
};

struct racer {
	pthread_t thread;
	struct store *st;
	struct start_gate *gate;
	const char *key;
	enum store_code code;
	int started;                /* thread is running (join it) */
};

static void *race_one(void *arg)
{
	struct racer *r = arg;
	struct store_result res = STORE_RESULT_INIT;
	struct store_put_opts po = { .cond = STORE_COND_IF_NONE_MATCH_ANY,
				     .content_type = "text/plain" };

	pthread_mutex_lock(&r->gate->mu);
	while (!r->gate->open)
		pthread_cond_wait(&r->gate->cv, &r->gate->mu);
	pthread_mutex_unlock(&r->gate->mu);
	r->code = store_put(r->st, r->key, PROBE_BODY, sizeof(PROBE_BODY) - 1, &po, &res);
	store_result_clear(&res);
	return NULL;
}

/* One round: every racer that could be started creates key at once. The
 * number that won, and in *errors those that failed otherwise. */
static int race_round(struct racer *r, int n, const char *key, int *errors)
{
	struct start_gate gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	int i, winners = 0;

	*errors = 0;
	for (i = 0; i < n; i++) {
		r[i].gate = &gate;
		r[i].key = key;
		r[i].code = STORE_ERR_IO;
		r[i].started = pthread_create(&r[i].thread, NULL, race_one, &r[i]) == 0;
	}
	pthread_mutex_lock(&gate.mu);
	gate.open = 1;
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
	for (i = 0; i < n; i++) {
		if (r[i].started)
			pthread_join(r[i].thread, NULL);
		winners += r[i].code == STORE_OK;
		*errors += r[i].code != STORE_OK && r[i].code != STORE_PRECONDITION_FAILED &&
			   r[i].code != STORE_CONFLICT;
	}
	pthread_cond_destroy(&gate.cv);
	pthread_mutex_destroy(&gate.mu);
	return winners;
}

/* LOCK_SELFTEST_RACERS writers, each on its own store, create the same
 * fresh key with If-None-Match: * at once, LOCK_SELFTEST_ROUNDS times:
 * exactly one may win each round. */
static enum lock_code probe_race(struct store *st, const struct store_config *cfg,
				 const char *base_key, struct backend_report *rep, char *err,
				 size_t errlen)
{
	struct racer r[LOCK_SELFTEST_RACERS];
	struct store_result res = STORE_RESULT_INIT;
	char key[LOCK_KEY_MAX + 32], why[160], seen[96];
	enum lock_code rc = LOCK_OK;
	int n = 0, round, i, winners, others, worst = 1;

	memset(r, 0, sizeof(r));
	for (n = 0; n < LOCK_SELFTEST_RACERS; n++) {
		r[n].st = store_open(cfg, why, sizeof(why));
		if (!r[n].st)
			break;
		r[n].st->etag_form = st->etag_form;
	}
	/* short of descriptors (a small RLIMIT_NOFILE): the race runs with
	 * the writers it could open; with fewer than two it is not probed
	 * (as without a configuration), rather than failing the self-test
	 * for a limit of this machine */
	if (n < 2)
		goto out;
	for (round = 0; round < LOCK_SELFTEST_ROUNDS && rc == LOCK_OK; round++) {
		snprintf(key, sizeof(key), "%s-race-%d", base_key, round);
		winners = race_round(r, n, key, &others);
		store_delete(st, key, NULL, &res);
		if (winners > worst)
			worst = winners;
		if (winners == 0 && others)
			goto out; /* every writer failed with an error (out of
				   * descriptors, say; the single-writer probes
				   * passed): not probed, rather than a verdict */
	}
	if (rc == LOCK_OK) {
		snprintf(seen, sizeof(seen), "%d writers, %d rounds: at most %d won a round", n,
			 LOCK_SELFTEST_ROUNDS, worst);
		note(rep, CAP_RACE, worst == 1, seen);
	}
out:
	for (i = 0; i < n; i++)
		store_close(r[i].st);
	store_result_clear(&res);
	return rc;
}

/* ---- the whole probe ------------------------------------------------------ */

enum lock_code lock_probe_store(struct store *st, const struct store_config *race_cfg,
				const char *probe_prefix, struct backend_report *rep,
				char *err, size_t errlen)
{
	struct store_result res = STORE_RESULT_INIT;
	char key[LOCK_KEY_MAX], token[33], etag[STORE_ETAG_MAX];
	enum dialect_etag form_was = st->etag_form;
	enum lock_code rc = LOCK_OK;
	enum store_code sc;
	int created = 0;

	memset(rep, 0, sizeof(*rep));
	if (!probe_prefix)
		probe_prefix = store_root(st);
	if (lock_random_hex(token, sizeof(token), 8) < 0) {
		snprintf(err, errlen, "no random bytes for the probe key");
		return LOCK_ERR_STORE;
	}
	if (snprintf(key, sizeof(key), "%sfencegate-selftest-%s", probe_prefix, token) >=
	    (int)sizeof(key) - 16) {
		snprintf(err, errlen, "probe prefix is too long");
		return LOCK_ERR_INVALID;
	}

	sc = probe_put(st, key, STORE_COND_IF_NONE_MATCH_ANY, NULL, &res);
	if (sc != STORE_OK) {
		rc = probe_failed(err, errlen, "self-test: creating probe", key, sc, &res);
		goto out;
	}
	created = 1;
	note(rep, CAP_DATE, res.server_date != 0,
	     res.server_date ? "answers carry Date" : "no Date header on the answer");
	snprintf(etag, sizeof(etag), "%s", res.etag);
	sc = probe_put(st, key, STORE_COND_IF_NONE_MATCH_ANY, NULL, &res);
	if (sc == STORE_OK) {
		snprintf(etag, sizeof(etag), "%s", res.etag);
		note(rep, CAP_PUT_IF_NONE_MATCH, 0, "a second create succeeded");
	} else if (sc == STORE_PRECONDITION_FAILED) {
		note(rep, CAP_PUT_IF_NONE_MATCH, 1, "412 to a second create");
	} else {
		rc = probe_failed(err, errlen, "self-test: second create of probe", key, sc, &res);
		goto out;
	}
	rc = probe_if_match(st, key, DIALECT_ETAG_QUOTED, CAP_PUT_IF_MATCH_QUOTED, etag, rep,
			    err, errlen);
	if (rc == LOCK_OK)
		rc = probe_if_match(st, key, DIALECT_ETAG_BARE, CAP_PUT_IF_MATCH_BARE, etag, rep,
				    err, errlen);
	if (rc != LOCK_OK)
		goto out;
	rep->etag_form = rep->caps & CAP_PUT_IF_MATCH_QUOTED ? DIALECT_ETAG_QUOTED
			 : rep->caps & CAP_PUT_IF_MATCH_BARE ? DIALECT_ETAG_BARE : form_was;
	st->etag_form = rep->etag_form;
	if (st->ext && st->ext->probe_copy) {
		sc = st->ext->probe_copy(st, key, &res);
		note(rep, CAP_COPY_IF_NONE_MATCH, sc == STORE_PRECONDITION_FAILED,
		     sc == STORE_PRECONDITION_FAILED ? "412 to a copy onto an existing key"
		     : sc == STORE_OK ? "a copy onto an existing key succeeded"
		     : store_strerror(sc));
	}
	if (st->ext && st->ext->probe_complete) {
		sc = st->ext->probe_complete(st, key, &res);
		note(rep, CAP_MPU_IF_NONE_MATCH, sc == STORE_PRECONDITION_FAILED,
		     sc == STORE_PRECONDITION_FAILED ? "412 to a completion onto an existing key"
		     : sc == STORE_OK ? "a completion onto an existing key succeeded"
		     : store_strerror(sc));
	}
	rc = probe_delete(st, key, &created, rep, err, errlen);
	if (rc == LOCK_OK && race_cfg)
		rc = probe_race(st, race_cfg, key, rep, err, errlen);
out:
	if (rc != LOCK_OK)
		st->etag_form = form_was;
	if (created) {
		sc = store_delete(st, key, NULL, &res);
		if (sc != STORE_OK && sc != STORE_NOT_FOUND && rc == LOCK_OK)
			rc = probe_failed(err, errlen, "self-test: deleting probe", key, sc, &res);
	}
	store_result_clear(&res);
	return rc;
}

unsigned lock_probe_missing(const struct backend_report *rep, enum backend_op op)
{
	/* what was not probed does not refuse the lock protocol: the race
	 * needs a configuration to open racers with */
	unsigned caps = rep->caps;

	if (op == BACKEND_OP_LOCK)
		caps |= ~rep->probed & CAP_RACE;
	return backend_caps_missing(caps, op);
}

const char *lock_report_seen(const struct backend_report *rep, unsigned cap)
{
	int i = backend_cap_index(cap);

	return i >= 0 && rep->seen[i][0] ? rep->seen[i] : "not probed";
}

enum lock_code lock_check_store_report(struct store *st, const char *probe_prefix,
				       struct backend_report *rep, char *err, size_t errlen)
{
	enum lock_code rc;
	unsigned missing;

	rc = lock_probe_store(st, NULL, probe_prefix, rep, err, errlen);
	if (rc != LOCK_OK)
		return rc;
	missing = lock_probe_missing(rep, BACKEND_OP_LOCK);
	if (missing) {
		snprintf(err, errlen, "%s (%s), so two writers could both hold a lock; use a "
			 "backend with conditional writes", backend_cap_lacking(missing),
			 lock_report_seen(rep, missing));
		return LOCK_ERR_UNSAFE;
	}
	return LOCK_OK;
}

enum lock_code lock_check_store(struct store *st, const char *probe_prefix,
				char *err, size_t errlen)
{
	struct backend_report rep;

	return lock_check_store_report(st, probe_prefix, &rep, err, errlen);
}
