/* fencing_delete.c — DeleteObjects (POST /{bucket}?delete), fenced key by
 * key. Its keys are in the body, where neither the lock-file guard nor the
 * object CAS of a forwarded request can see them, so the proxy never
 * forwards it: it decides the token once for the request (fencing.c, before
 * the body is read: a stale or missing token costs no body), reads and
 * verifies the body (Content-MD5 / x-amz-checksum-*, s3delete.c parses
 * it), refuses lock-file keys and keys another lock fences, then deletes
 * each key on the jobs pool as a fenced DELETE does: HEAD, refuse if the
 * object's epoch is newer than the token, DELETE If-Match its ETag, again
 * after a lost race (bounded). In front of S3 a key's version
 * (<VersionId>) is deleted by its id, fenced at lock level only, as a
 * single DELETE ?versionId= is; on the embedded store version "null" is
 * the key. The answer is S3's DeleteResult. An unfenced DeleteObjects
 * (unrouted_writes: allow) takes the same path with unconditional
 * deletes, lock files still refused.
 *
 * Both backends: the upstream S3 (the proxy's credentials) and the
 * embedded store's directory, through the lock/store/store.h interface. It does
 * not parse XML (s3delete.c) nor decide tokens (fence.c). */
#include "fencing_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lock/store/dialect.h"
#include "lockkey.h"
#include "ops/log.h"
#include "policy/policy.h"
#include "s3/s3delete.h"
#include "wire/checksum.h"

#define DELETE_CAS_ATTEMPTS 5

struct delete_job {
	struct freq *fr;
	struct s3delete batch;       /* owned */
	bool fenced;                 /* compare with fr->epoch; else unconditional */
	uint64_t epoch;
	unsigned long requests;      /* store requests sent */
	char err[256];               /* no store at all: every key fails with it */
};

/* ---- worker side ------------------------------------------------------ */

/* 1 (k failed) if the lock moved past the token's epoch while the batch
 * ran: the lock-level check, repeated per key. */
static int superseded(struct delete_job *j, struct s3delete_key *k)
{
	if (lockreg_high_water(j->fr->lock) <= j->epoch)
		return 0;
	s3delete_fail(k, "FencingTokenStale", "epoch %" PRIu64 " was superseded while the "
		      "batch ran", j->epoch);
	return 1;
}

/* One version of a key, in front of S3: fenced at lock level as a single
 * DELETE ?versionId= is (fencing.c passes that through once the token is
 * decided): no object CAS, since a version is never rewritten and its
 * delete does not touch the current object's epoch check. The upstream's
 * refusal (no such version, a malformed id) is the key's error. */
static void delete_version(struct delete_job *j, struct store *st, struct s3delete_key *k)
{
	struct store_delete_opts del = { .version_id = k->version_id };
	struct store_result res = STORE_RESULT_INIT;
	enum store_code sc;

	if (j->fenced && superseded(j, k))
		return;
	j->requests++;
	fencing_store_deadline(st);
	sc = store_delete_ex(st, k->key, &del, &res);
	if (sc != STORE_OK && sc != STORE_NOT_FOUND)
		s3delete_fail(k, sc == STORE_ERR_DENIED ? "AccessDenied"
			      : res.http_status == 400 ? "InvalidArgument" : "InternalError",
			      "the delete of version \"%.64s\" failed: %s%s%s", k->version_id,
			      res.err_code[0] ? res.err_code : store_strerror(sc),
			      res.err_message[0] ? ": " : "", res.err_message);
	store_result_clear(&res);
}

/* One key: the object CAS of a fenced DELETE (fencing_s3.c), or a plain
 * delete when unfenced. A key that does not exist is deleted, as S3 says. */
static void delete_one(struct delete_job *j, struct store *st, struct s3delete_key *k)
{
	struct store_result res = STORE_RESULT_INIT;
	enum store_code sc;

	for (int attempt = 0; attempt < DELETE_CAS_ATTEMPTS; attempt++) {
		struct store_delete_opts del = {0};
		char cur[STORE_ETAG_MAX], cur_epoch[24] = "";
		const char *v;
		uint64_t written;

		if (j->fenced) {
			if (superseded(j, k)) /* before the HEAD too: a refused
					       * key costs no request */
				goto out;
			j->requests++;
			fencing_store_deadline(st);
			sc = store_head(st, k->key, &res);
			if (sc == STORE_NOT_FOUND)
				goto out;
			if (sc != STORE_OK) {
				s3delete_fail(k, "ServiceUnavailable", "cannot read the object: %s",
					      store_strerror(sc));
				goto out;
			}
			written = fencing_object_epoch(&res);
			if (written > j->epoch) {
				s3delete_fail(k, "FencingTokenStale",
					      "the object was written under epoch %" PRIu64
					      ", newer than the token's %" PRIu64, written, j->epoch);
				goto out;
			}
			if (superseded(j, k))
				goto out;
			snprintf(cur, sizeof(cur), "%s", res.etag);
			del.if_match = cur;
			if (strcmp(st->ops->scheme, "file") == 0) {
				/* the local store can check the very version (ETag
				 * and epoch), which S3 cannot: same bytes rewritten
				 * under a newer epoch fail the condition */
				v = store_result_meta(&res, "fencing-epoch");
				snprintf(cur_epoch, sizeof(cur_epoch), "%s", v ? v : "");
				del.if_meta.name = "fencing-epoch";
				del.if_meta.value = cur_epoch;
			}
		}
		j->requests++;
		fencing_store_deadline(st);
		sc = store_delete_ex(st, k->key, &del, &res);
		if (sc == STORE_OK || sc == STORE_NOT_FOUND)
			goto out;
		if (sc != STORE_PRECONDITION_FAILED || !j->fenced) {
			s3delete_fail(k, sc == STORE_ERR_DENIED ? "AccessDenied" : "InternalError",
				      "the delete failed: %s", store_strerror(sc));
			goto out;
		}
		/* another writer replaced the object since the HEAD: again */
	}
	s3delete_fail(k, "SlowDown", "the object kept changing; try again");
out:
	store_result_clear(&res);
}

static void delete_run(void *arg)
{
	struct delete_job *j = arg;
	struct freq *fr = j->fr;
	struct store *st = fencing_thread_store(fr->f, fr->bucket, j->err, sizeof(j->err));

	for (size_t i = 0; i < j->batch.n; i++) {
		struct s3delete_key *k = &j->batch.keys[i];

		if (k->code)
			continue;
		if (!st)
			s3delete_fail(k, "ServiceUnavailable", "%s", j->err);
		else if (k->version_id && j->fr->f->s3_endpoint)
			delete_version(j, st, k);
		else
			delete_one(j, st, k);
	}
}

/* ---- loop side -------------------------------------------------------- */

static void delete_done(void *arg)
{
	struct delete_job *j = arg;
	struct freq *fr = j->fr;
	struct fencing *f = fr->f;
	size_t len = 0, failed = 0;
	char *xml;

	for (unsigned long i = 0; i < j->requests; i++)
		fencing_count_upstream(f, "delete");
	for (size_t i = 0; i < j->batch.n; i++) {
		failed += j->batch.keys[i].code != NULL;
		if (f->objects)
			objcache_invalidate(f->objects, fr->bucket, j->batch.keys[i].key);
	}
	log_info("request \"%s\" bucket \"%s\": DeleteObjects of %zu keys, %zu refused "
		 "or failed", proxy_req_id(fr->req), fr->bucket, j->batch.n, failed);
	xml = s3delete_result_xml(&j->batch, &len);
	if (!xml)
		fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	else
		proxy_req_reply(fr->req, 200, NULL, "application/xml", xml, len);
	free(xml);
	s3delete_clear(&j->batch);
	free(j);
}

/* 0 if the body matches the checksum headers the client sent (Content-MD5,
 * x-amz-checksum-*), else -1 after replying 400 BadDigest. */
static int verify_body(struct freq *fr)
{
	const struct front_hdrs *h = proxy_req_headers(fr->req);

	for (size_t i = 0; i < h->n; i++) {
		enum checksum_algo algo = strcasecmp(h->v[i].name, "Content-MD5") == 0
					  ? CHECKSUM_MD5 : checksum_from_header(h->v[i].name);
		char have[CHECKSUM_BASE64_MAX];

		if (algo == CHECKSUM_NONE)
			continue;
		if (checksum_of(algo, fr->body ? fr->body : "", fr->body_len, have) < 0) {
			fencing_reply_error(fr, 500, "InternalError", "cannot hash the body", false, 0);
			return -1;
		}
		if (strcmp(have, h->v[i].value) != 0) {
			fr->verdict = "refused";
			fencing_reply_error(fr, 400, "BadDigest",
					    "the body does not match its checksum header", false, 0);
			return -1;
		}
	}
	return 0;
}

/* 1 if key is one of a lock's files in this bucket: the bucket lock's
 * default layout, the request's lock, or any configured lock stored here. */
static int is_lock_file(struct freq *fr, const char *key)
{
	const struct policy *pol = fr->f->policy;
	char prefix[LOCKREG_PREFIX_MAX];

	if (lockreg_default_prefix(fr->bucket, prefix, sizeof(prefix)) == 0 &&
	    lockkey_under_prefix(key, prefix))
		return 1;
	if (fr->lock && lockreg_in_bucket(fr->lock, fr->bucket) &&
	    lockkey_under_prefix(key, fr->lock->prefix))
		return 1;
	for (size_t i = 0; pol && i < pol->nlocks; i++) {
		const struct policy_lock *c = &pol->locks[i];

		if (c->store && c->prefix && lockreg_url_in_bucket(c->store, fr->bucket) &&
		    lockkey_under_prefix(key, c->prefix))
			return 1;
	}
	return 0;
}

/* With a config: refuses a key whose route names another lock than the
 * request's (or, unfenced, any lock at all). 0 or -1 with k failed. */
static int check_route(struct freq *fr, struct s3delete_key *k)
{
	const struct policy *pol = fr->f->policy;
	const struct policy_route *route;
	const char *want;
	char path[S3REQ_BUCKET_MAX + S3DELETE_KEY_MAX + 3];

	if (!pol)
		return 0;
	snprintf(path, sizeof(path), "/%s/%s", fr->bucket, k->key);
	route = policy_route_for(pol, path);
	if (route)
		want = route->lock->name;
	else if (pol->unrouted_writes == POLICY_UNROUTED_REJECT)
		want = NULL;
	else if (pol->unrouted_writes == POLICY_UNROUTED_BUCKET_LOCK)
		want = fr->bucket;
	else
		return 0; /* unrouted, allowed unfenced: fenced or not is fine */
	if (!want) {
		s3delete_fail(k, "AccessDenied", "no route fences writes to this key");
		return -1;
	}
	if (!fr->lock || strcmp(fr->lock->name, want) != 0) {
		s3delete_fail(k, "AccessDenied",
			      "this key is fenced by lock \"%s\": delete it in a request fenced by "
			      "that lock", want);
		return -1;
	}
	return 0;
}

/* A fenced batch with a key deleted by the object CAS (no version, or the
 * embedded store's) on an upstream the self-test saw ignore DELETE's
 * If-Match: 1 after replying 501, as a fenced DELETE is answered there. A
 * batch of versions only goes on: their deletes take no condition. */
static int lacking_delete_condition(struct freq *fr, const struct s3delete *batch)
{
	const char *lacking = fr->delete_fenced ? backend_refuses(BACKEND_OP_DELETE) : NULL;

	for (size_t i = 0; lacking && i < batch->n; i++)
		if (!batch->keys[i].version_id || !fr->f->s3_endpoint) {
			fr->verdict = "refused";
			fencing_reply_error(fr, 501, "NotImplemented", lacking, false, 0);
			return 1;
		}
	return 0;
}

static int delete_body(struct proxy_req *req, const char *data, size_t len, void *arg)
{
	(void)req;
	return fencing_body_append(arg, data, len, S3DELETE_BODY_MAX);
}

static void delete_end(struct proxy_req *req, int ok, void *arg)
{
	struct freq *fr = arg;
	struct delete_job *j;
	char err[200];
	bool nomem;

	(void)req;
	if (!ok)
		return;
	if (fr->body_too_big) {
		fr->verdict = "refused";
		fencing_reply_error(fr, 400, "MalformedXML", "a DeleteObjects body is at most 2 MiB",
				    false, 0);
		return;
	}
	if (verify_body(fr) < 0)
		return;
	if (!(j = calloc(1, sizeof(*j)))) {
		fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
		return;
	}
	j->fr = fr;
	j->fenced = fr->delete_fenced;
	j->epoch = fr->epoch;
	if (s3delete_parse(fr->body, fr->body_len, &j->batch, &nomem, err, sizeof(err)) < 0) {
		free(j);
		fr->verdict = "refused";
		fencing_reply_error(fr, nomem ? 500 : 400, nomem ? "InternalError" : "MalformedXML",
				    err, false, 0);
		return;
	}
	if (lacking_delete_condition(fr, &j->batch)) {
		s3delete_clear(&j->batch);
		free(j);
		return;
	}
	for (size_t i = 0; i < j->batch.n; i++) {
		struct s3delete_key *k = &j->batch.keys[i];

		if (is_lock_file(fr, k->key))
			s3delete_fail(k, "AccessDenied",
				      "lock files are not deleted by DeleteObjects (the lock "
				      "protocol deletes them one at a time)");
		else if (k->version_id && !fr->f->s3_endpoint && strcmp(k->version_id, "null") != 0)
			/* the embedded store keeps one version, "null": the object
			 * itself, deleted as the key is (what version-aware
			 * cleanups send); in front of S3 a version is deleted by
			 * its id (delete_version) */
			s3delete_fail(k, "NotImplemented", "the embedded store keeps one "
				      "version of each key, \"null\"");
		else
			check_route(fr, k);
	}
	if (jobs_submit(fr->f->jobs, delete_run, delete_done, j) < 0) {
		s3delete_clear(&j->batch);
		free(j);
		fencing_reply_error(fr, 503, "SlowDown", "the worker pool is busy", false, 0);
	}
}

enum proxy_action fencing_delete_start(struct freq *fr, bool fenced)
{
	/* an upstream that ignores DELETE's If-Match: lacking_delete_condition,
	 * once the body says whether any key needs the condition */
	fr->delete_fenced = fenced;
	if (proxy_req_consume(fr->req, delete_body, delete_end, fr) < 0)
		return fencing_reply_error(fr, 500, "InternalError", "cannot read the body", false, 0);
	return PROXY_HANDLED;
}
