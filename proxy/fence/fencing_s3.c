/* fencing_s3.c — S3 mode of the fencing handler: classifies each S3
 * request, finds the lock of a write (bucket lock or the policy's route),
 * sends lock-file keys to the guard, and conditions allowed writes on the
 * object's current version (the object-level compare-and-swap, with an
 * ETag cache, the unread create of a cache miss, HEADs on the jobs pool,
 * bounded re-sends after a lost race).
 * Multipart uploads are tracked by upload id from the upstream's answer.
 *
 * In embedded mode (no upstream) it only decides and stamps; s3local does
 * the object CAS (s3local.h, FENCING CONTRACT). */
#include "fencing_int.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lock/store/dialect.h"
#include "lockbreak.h"
#include "lockkey.h"
#include "objcas.h"
#include "ops/log.h"
#include "policy/policy.h"
#include "s3/s3req.h"

static int is_star(const char *v)
{
	return v && (strcmp(v, "*") == 0 || strcmp(v, "\"*\"") == 0);
}

/* If-Match as S3 takes it: one ETag, quoted or not ("abc" and abc are the
 * same), into out with its quotes, the form S3 answers ETags in. -1 for a
 * list, an empty value or one too long. */
static int quote_etag(const char *v, char *out, size_t outlen)
{
	size_t n = strlen(v);

	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	if (n >= 2 && v[0] == '"' && v[n - 1] == '"')
		v++, n -= 2;
	if (n == 0 || n + 3 > outlen || memchr(v, '"', n) || memchr(v, ',', n))
		return -1;
	snprintf(out, outlen, "\"%.*s\"", (int)n, v);
	return 0;
}

/* ---- per-thread stores for object HEADs -------------------------------- */

void fencing_store_deadline(struct store *st)
{
	st->deadline_mono_ms = timesrc_mono_ms(timesrc_system()) + FENCING_STORE_CALL_MS;
}

struct store *fencing_thread_store(struct fencing *f, const char *bucket, char *err,
				   size_t errlen)
{
	int idx = jobs_worker_index();
	struct tstore *row, *victim;
	struct store_config sc;
	char url[PATH_MAX + 128];

	if (idx < 0 || idx >= f->nthreads) {
		snprintf(err, errlen, "not on a worker thread");
		return NULL;
	}
	row = &f->tstores[(size_t)idx * TSTORES_PER_THREAD];
	victim = &row[0];
	for (int i = 0; i < TSTORES_PER_THREAD; i++) {
		if (row[i].st && strcmp(row[i].bucket, bucket) == 0) {
			row[i].used++;
			fencing_store_deadline(row[i].st);
			return row[i].st;
		}
		if (!row[i].st || (victim->st && row[i].used < victim->used))
			victim = &row[i];
	}
	store_close(victim->st);
	memset(victim, 0, sizeof(*victim));
	memset(&sc, 0, sizeof(sc));
	if (f->s3_endpoint)
		snprintf(url, sizeof(url), "s3://%s", bucket);
	else
		snprintf(url, sizeof(url), "file://%s/%s", f->data_dir ? f->data_dir : ".", bucket);
	sc.url = url;
	sc.endpoint = f->s3_endpoint;
	sc.region = f->region;
	sc.path_style = 1;
	sc.timeout_ms = 10000;
	victim->st = store_open(&sc, err, errlen);
	if (!victim->st)
		return NULL;
	snprintf(victim->bucket, sizeof(victim->bucket), "%s", bucket);
	victim->used = 1;
	fencing_store_deadline(victim->st);
	return victim->st;
}

/* ---- object-level compare-and-swap (S3 upstream mode) ------------------ */

struct head_job {
	struct fencing *f;
	struct freq *fr;
	int after_response;          /* resume after a response suspend */
};

uint64_t fencing_object_epoch(const struct store_result *res)
{
	const char *v = store_result_meta(res, "fencing-epoch");
	uint64_t e = 0;

	if (!v || token_parse(v, strlen(v), &e) != TOKEN_OK)
		return 0;
	return e;
}

static void head_run(void *arg)
{
	struct head_job *j = arg;
	struct freq *fr = j->fr;
	struct store_result res = STORE_RESULT_INIT;
	struct store *st;
	enum store_code sc;
	char err[256];

	fr->head_found = -1;
	fr->head_epoch = 0;
	free(fr->head_err);
	fr->head_err = NULL;
	fr->head_etag[0] = '\0';
	st = fencing_thread_store(j->f, fr->bucket, err, sizeof(err));
	if (!st) {
		fr->head_err = strdup(err);
		return;
	}
	sc = store_head(st, fr->key, &res);
	if (sc == STORE_NOT_FOUND) {
		fr->head_found = 0;
	} else if (sc == STORE_OK) {
		fr->head_found = 1;
		snprintf(fr->head_etag, sizeof(fr->head_etag), "%s", res.etag);
		fr->head_epoch = fencing_object_epoch(&res);
	} else {
		snprintf(err, sizeof(err), "HEAD \"%.200s\": %s", fr->key, store_strerror(sc));
		fr->head_err = strdup(err);
	}
	store_result_clear(&res);
}

static enum proxy_action cas_after_head(struct freq *fr, int after_response);

static void head_done(void *arg)
{
	struct head_job *j = arg;
	struct freq *fr = j->fr;
	int after = j->after_response;

	free(j);
	fencing_count_upstream(fr->f, "head");
	if (proxy_req_client_gone(fr->req)) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
		return;
	}
	fencing_continue(fr, cas_after_head(fr, after));
}

/* The object's HEAD as the upstream answered it (proxy_req_head_target:
 * on the loop, the write's own target), read into fr as head_run would. */
static void head_answered(struct proxy_req *req, int status, const struct front_hdrs *hdrs,
			  const char *detail, void *arg)
{
	struct head_job *j = arg;
	struct freq *fr = j->fr;
	const char *etag, *epoch;
	char err[320];

	(void)req;
	fr->head_found = -1;
	fr->head_epoch = 0;
	free(fr->head_err);
	fr->head_err = NULL;
	fr->head_etag[0] = '\0';
	err[0] = '\0';
	if (status == 404) {
		fr->head_found = 0;
	} else if (status >= 200 && status < 300) {
		etag = front_hdrs_get(hdrs, "ETag");
		epoch = front_hdrs_get(hdrs, "x-amz-meta-fencing-epoch");
		if (!etag || !*etag || strlen(etag) >= sizeof(fr->head_etag)) {
			snprintf(err, sizeof(err), "HEAD \"%.200s\": the answer has no usable ETag",
				 fr->key);
		} else {
			fr->head_found = 1;
			strcpy(fr->head_etag, etag);
			if (!epoch || token_parse(epoch, strlen(epoch), &fr->head_epoch) != TOKEN_OK)
				fr->head_epoch = 0; /* as fencing_object_epoch: no stamp */
		}
	} else if (status) {
		snprintf(err, sizeof(err), "HEAD \"%.200s\": upstream answered %d", fr->key, status);
	} else {
		snprintf(err, sizeof(err), "HEAD \"%.200s\": %s", fr->key, detail);
	}
	if (err[0] && !(fr->head_err = strdup(err)))
		fr->head_found = -1; /* "out of memory" (cas_act) */
	head_done(j);
}

/* Reads the object before the write: on the loop's own upstream client
 * when the proxy forwards to one, else (the embedded store) through the
 * lock library's store on the job threads; FENCING_STORE_CALL_MS either way
 * (no retry on the loop: a failure is the client's 503 SlowDown, which
 * SDKs retry). */
static enum proxy_action start_head(struct freq *fr, int after_response)
{
	struct head_job *j = calloc(1, sizeof(*j));
	char err[256], msg[320];

	if (!j)
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	j->f = fr->f;
	j->fr = fr;
	j->after_response = after_response;
	if (proxy_req_can_head(fr->req)) {
		if (proxy_req_head_target(fr->req, FENCING_STORE_CALL_MS, head_answered, j,
					  err, sizeof(err)) < 0) {
			free(j);
			snprintf(msg, sizeof(msg), "cannot read the object's version: %s", err);
			return fencing_reply_error(fr, 503, "SlowDown", msg, false, 0);
		}
		return PROXY_SUSPEND;
	}
	if (jobs_submit(fr->f->jobs, head_run, head_done, j) < 0) {
		free(j);
		return fencing_reply_error(fr, 503, "SlowDown", "the worker pool is busy", false, 0);
	}
	return PROXY_SUSPEND;
}

/* Forwards conditioned on the object being at etag (If-Match) or, with
 * etag NULL, absent (If-None-Match: *); the other condition is removed. */
static enum proxy_action forward_conditioned(struct freq *fr, const char *etag, bool ours)
{
	char spelled[STORE_ETAG_MAX]; /* as the upstream takes If-Match (dialect.h) */

	if (etag && backend_etag_current() == DIALECT_ETAG_BARE)
		etag = dialect_spell_etag(DIALECT_ETAG_BARE, etag, spelled, sizeof(spelled));
	if (proxy_req_fwd_set(fr->req, etag ? "If-Match" : "If-None-Match", etag ? etag : "*") < 0 ||
	    proxy_req_fwd_set(fr->req, etag ? "If-None-Match" : "If-Match", NULL) < 0)
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	fr->our_condition = ours;
	fr->cond_if_match = etag != NULL;
	fr->cond_unread = false;
	return PROXY_PASS;
}

static enum proxy_action reply_stale_object(struct freq *fr, uint64_t object_epoch)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "the object was last written under epoch %" PRIu64
		 ", newer than the token %" PRIu64, object_epoch, fr->epoch);
	fr->verdict = fence_strverdict(FENCE_REJECT_STALE);
	/* object metadata is not a verified epoch (anyone with direct access
	 * can write it): it refuses this write but never raises C */
	fr->current = fr->lock->high_water;
	return fencing_reply_error(fr, 409, "FencingTokenStale", msg, true, fr->lock->high_water);
}

/* The CAS step objcas.h chose, carried out. */
static enum proxy_action cas_act(struct freq *fr, const struct objcas_step *st, int after_response)
{
	enum proxy_action fwd = after_response ? PROXY_FORWARD : PROXY_PASS;
	char msg[320];

	switch (st->action) {
	case OBJCAS_IF_MATCH:
		return forward_conditioned(fr, st->etag, st->ours) == PROXY_PASS ? fwd : PROXY_HANDLED;
	case OBJCAS_IF_ABSENT:
		if (forward_conditioned(fr, NULL, st->ours) != PROXY_PASS)
			return PROXY_HANDLED;
		fr->cond_unread = st->unread;
		return fwd;
	case OBJCAS_HEAD:
		return start_head(fr, after_response);
	case OBJCAS_GONE:
		proxy_req_reply(fr->req, 204, NULL, NULL, NULL, 0);
		return PROXY_HANDLED;
	case OBJCAS_STALE:
		return reply_stale_object(fr, fr->head_epoch);
	case OBJCAS_NO_SUCH_KEY:
		return fencing_reply_error(fr, 404, "NoSuchKey", "If-Match: the object does not exist",
					   false, 0);
	case OBJCAS_PRECONDITION:
		return fencing_reply_error(fr, 412, "PreconditionFailed",
					   "If-Match does not match the object's ETag", false, 0);
	case OBJCAS_GIVE_UP:
		return fencing_reply_error(fr, 503, "SlowDown",
					   "the object kept changing under the write; retry", false, 0);
	case OBJCAS_HEAD_FAILED:
		snprintf(msg, sizeof(msg), "cannot read the object's version: %s",
			 fr->head_err ? fr->head_err : "out of memory");
		return fencing_reply_error(fr, 503, "SlowDown", msg, false, 0);
	}
	return fencing_reply_error(fr, 500, "InternalError", "object CAS", false, 0);
}

static void cas_input(struct freq *fr, struct objcas_in *in, int after_response)
{
	memset(in, 0, sizeof(*in));
	in->is_delete = fr->kind == S3_OBJECT_DELETE;
	in->plain_put = fr->kind == S3_OBJECT_PUT;
	in->client_inm = fr->client_inm;
	in->client_if_match = fr->client_if_match;
	in->cached = fr->cache_hit ? &fr->cached : NULL;
	in->epoch = fr->epoch;
	in->head_found = fr->head_found;
	in->head_etag = fr->head_etag;
	in->head_epoch = fr->head_epoch;
	in->after_race = after_response;
	in->resends = fr->cas_resends;
	in->max_resends = fr->f->max_cas_retries;
	in->can_resend = proxy_req_can_resend(fr->req);
}

enum proxy_action fencing_step_cas(struct freq *fr)
{
	struct objcas_in in;
	struct objcas_step st;

	const char *lacking = backend_refuses(fr->kind == S3_OBJECT_DELETE ? BACKEND_OP_DELETE
					      : fr->kind == S3_OBJECT_COPY ? BACKEND_OP_COPY
					      : fr->kind == S3_MPU_COMPLETE ? BACKEND_OP_MPU_COMPLETE
					      : BACKEND_OP_PUT);

	if (lacking) /* the self-test saw the upstream ignore this condition */
		return fencing_reply_error(fr, 501, "NotImplemented", lacking, false, 0);
	cas_input(fr, &in, 0); /* the cache was looked up by step_decide */
	objcas_first(&in, &st);
	return cas_act(fr, &st, 0);
}

/* 409 if the lock moved past the write's epoch while it waited (for a HEAD,
 * a reload): it goes with the newest knowledge there is, not with what was
 * known at its decision. Returns 1 after replying. */
static int superseded_meanwhile(struct freq *fr, enum proxy_action *act)
{
	struct lockreg_entry *e = fr->lock;
	char msg[160];

	if (fr->epoch >= e->high_water && !lockreg_epoch_released(e, fr->epoch))
		return 0;
	snprintf(msg, sizeof(msg), "epoch %" PRIu64 " was superseded (current epoch %" PRIu64
		 ") while this write waited", fr->epoch, e->high_water);
	fr->verdict = fence_strverdict(FENCE_REJECT_STALE);
	fr->current = e->high_water;
	*act = fencing_reply_error(fr, 409, "FencingTokenStale", msg, true, e->high_water);
	return 1;
}

static enum proxy_action cas_after_head(struct freq *fr, int after_response)
{
	struct objcas_in in;
	struct objcas_step st;
	enum proxy_action act;

	cas_input(fr, &in, after_response);
	objcas_after_head(&in, &st);
	if (fr->head_found > 0 && st.action != OBJCAS_STALE)
		objcache_put(fr->f->objects, fr->bucket, fr->key, fr->head_etag, fr->head_epoch);
	if ((st.action == OBJCAS_IF_MATCH || st.action == OBJCAS_IF_ABSENT) &&
	    superseded_meanwhile(fr, &act))
		return act;
	if (after_response && (st.action == OBJCAS_IF_MATCH || st.action == OBJCAS_IF_ABSENT))
		fr->cas_resends++;
	return cas_act(fr, &st, after_response);
}

/* ---- the upstream answer ------------------------------------------------ */

static void observe_latency(struct freq *fr)
{
	if (fr->f->metrics && fr->t_forward_us)
		metrics_observe(fr->f->metrics->upstream_latency, NULL,
				(double)(fencing_mono_us() - fr->t_forward_us) / 1e6);
}

/* Keeps the (small) CreateMultipartUpload answer to read its UploadId. */
static void capture_body(struct proxy_req *req, const char *data, size_t len, void *arg)
{
	struct freq *fr = arg;
	char *nb;

	if (fr->resp_len + len > MULTIPART_BODY_MAX)
		return;
	nb = realloc(fr->resp_body, fr->resp_len + len + 1);
	if (!nb)
		return;
	fr->resp_body = nb;
	memcpy(nb + fr->resp_len, data, len);
	fr->resp_len += len;
	nb[fr->resp_len] = '\0';
}

/* The answer reached the client in the same loop turn, so no UploadPart of
 * it can be decided before this runs. */
void fencing_record_upload(struct freq *fr)
{
	struct multipart_upload u;
	char id[MULTIPART_ID_MAX];

	if (!fr->resp_body ||
	    multipart_parse_upload_id(fr->resp_body, fr->resp_len, id, sizeof(id)) < 0) {
		log_warn("request \"%s\": no UploadId in the CreateMultipartUpload answer; its "
			 "parts will need X-Fencing-Token", proxy_req_id(fr->req));
		return;
	}
	memset(&u, 0, sizeof(u));
	snprintf(u.bucket, sizeof(u.bucket), "%s", fr->bucket);
	snprintf(u.lock, sizeof(u.lock), "%s", fr->lock->name);
	u.epoch = fr->epoch;
	multipart_put(fr->f->uploads, id, &u);
}

void fencing_note_upload(void *arg, const char *bucket, const char *upload_id, int created,
			 uint64_t epoch, const char *lock)
{
	struct fencing *f = arg;
	struct multipart_upload u;

	if (!created) {
		multipart_remove(f->uploads, upload_id);
		return;
	}
	if (!lock)
		return;
	memset(&u, 0, sizeof(u));
	snprintf(u.bucket, sizeof(u.bucket), "%s", bucket);
	snprintf(u.lock, sizeof(u.lock), "%s", lock);
	u.epoch = epoch;
	multipart_put(f->uploads, upload_id, &u);
}

/* A read's answer: the proxy's stamp is not the client's metadata (a
 * client that compares metadata after a round trip sees what it wrote).
 * x-amz-meta-fencing-epoch becomes X-Fencing-Object-Epoch; the lock name and
 * a lock file's writer are dropped. Returns 0, or -1 after replying 500. */
static int hide_stamp(struct proxy_req *req)
{
	/* the lock name, and the writer of a lock file (lockbreak.h) */
	static const char *const hidden[] = { "x-amz-meta-fencing-lock",
					      "x-amz-meta-" LOCKBREAK_WRITER_META };
	const char *v = proxy_req_resp_header(req, "x-amz-meta-fencing-epoch");
	char *epoch = v ? strdup(v) : NULL;
	int r = 0;

	if (v && !epoch)
		goto nomem;
	if (epoch && (proxy_req_resp_set_header(req, "x-amz-meta-fencing-epoch", NULL) < 0 ||
		      proxy_req_resp_set_header(req, "X-Fencing-Object-Epoch", epoch) < 0))
		goto nomem;
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		if (proxy_req_resp_header(req, hidden[i]) &&
		    proxy_req_resp_set_header(req, hidden[i], NULL) < 0)
			goto nomem;
	goto out;
nomem:
	proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
	r = -1;
out:
	free(epoch);
	return r;
}

/* After a lost race: the lock as of now decides first. */
static void cas_reloaded(struct lockreg_entry *e, int ok, void *arg)
{
	struct freq *fr = arg;
	enum proxy_action act;

	if (proxy_req_client_gone(fr->req)) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
		return;
	}
	if (!ok) {
		char what[80];

		snprintf(what, sizeof(what), "cannot re-read lock \"%.40s\"", e->name);
		proxy_req_resume(fr->req, fencing_reply_load_failed(fr, "SlowDown", what,
								   e->load_err));
		return;
	}
	if (superseded_meanwhile(fr, &act)) {
		proxy_req_resume(fr->req, act);
		return;
	}
	act = start_head(fr, 1);
	if (act != PROXY_SUSPEND)
		proxy_req_resume(fr->req, act);
}

static enum proxy_resp_action on_response(struct proxy_req *req, void *arg)
{
	struct freq *fr = arg;
	struct fencing *f = fr->f;
	int status = proxy_req_resp_status(req);
	const char *etag;
	int r;

	fencing_count_upstream(f, fr->kind == S3_READ ? "read" : "write");
	observe_latency(fr);
	if (fr->kind == S3_READ)
		return hide_stamp(req) < 0 ? PROXY_RESP_REPLACED : PROXY_RESP_RELAY;
	if (status >= 200 && status < 300) {
		if (fr->kind == S3_OBJECT_PUT && (etag = proxy_req_resp_header(req, "ETag")) && *etag)
			objcache_put(f->objects, fr->bucket, fr->key, etag, fr->epoch);
		else if (fr->key && fencing_kind_has_object_cas(fr->kind))
			objcache_invalidate(f->objects, fr->bucket, fr->key);
		if (fr->kind == S3_MPU_COMPLETE || fr->kind == S3_MPU_ABORT)
			multipart_remove(f->uploads, fr->upload_id);
		if (fr->kind == S3_MPU_CREATE)
			proxy_req_on_resp_body(req, capture_body, fr);
		return PROXY_RESP_RELAY;
	}
	if (!fr->key || !fencing_kind_has_object_cas(fr->kind))
		return PROXY_RESP_RELAY;
	objcache_invalidate(f->objects, fr->bucket, fr->key);
	switch (objcas_on_answer(status, fr->our_condition, fr->cond_if_match, fr->cond_unread,
				 fr->kind == S3_OBJECT_DELETE)) {
	case OBJCAS_RELAY:
		return PROXY_RESP_RELAY;
	case OBJCAS_EXISTS:
		/* the unread create found the key: read it and decide as a
		 * HEAD-first order would have (objcas.h); no lock reload */
		return start_head(fr, 1) == PROXY_SUSPEND ? PROXY_RESP_SUSPEND
							  : PROXY_RESP_REPLACED;
	case OBJCAS_DELETED:
		proxy_req_reply(req, 204, NULL, NULL, NULL, 0);
		return PROXY_RESP_REPLACED;
	case OBJCAS_RACE:
		break;
	}
	/* our condition lost a race: someone changed the object since we
	 * decided. Re-read the lock first (a newer epoch may have rewritten
	 * it with the same bytes, so its ETag proves nothing, or deleted
	 * it), then the object's epoch; refuse, re-send (bounded), or 503 */
	r = lockreg_when_current(f->locks, fr->lock, true, cas_reloaded, fr);
	if (r == 0)
		return PROXY_RESP_SUSPEND;
	fencing_reply_wait_failed(fr, r);
	return PROXY_RESP_REPLACED;
}

/* ---- the request ------------------------------------------------------- */

/* Headers the proxy owns (DESIGN.md "Fail closed"; s3local.h's contract):
 * a client may not set an object's fencing epoch, nor speak to the
 * embedded store for the proxy. The token and the lock name are taken
 * from the request here; none of the client's X-Fencing-* and
 * x-amz-meta-fencing-* is forwarded (fencing_owned_prefixes): the stamp
 * fencing sets is the object's only fencing metadata. Returns 0, or -1
 * after refusing. */
static int read_owned_headers(struct freq *fr)
{
	struct proxy_req *req = fr->req;
	const char *v;

	if (proxy_req_header(req, "x-amz-meta-fencing-epoch")) {
		fr->verdict = "refused";
		fencing_reply_error(fr, 400, "InvalidArgument",
				    "x-amz-meta-fencing-epoch is set by the proxy, never by a client",
				    false, 0);
		return -1;
	}
	fr->token = fencing_read_token(req);
	for (int i = 0; i < 2; i++) {
		char *dst = i ? fr->header_lock : fr->meta_lock; /* both sized alike */

		v = proxy_req_header(req, i ? "X-Fencing-Lock" : "x-amz-meta-fencing-lock");
		if (v && strlen(v) >= sizeof(fr->meta_lock)) {
			fr->verdict = "refused";
			fencing_reply_error(fr, 400, "InvalidFencingLock", "the lock name is too long",
					    false, 0);
			return -1;
		}
		snprintf(dst, sizeof(fr->meta_lock), "%s", v ? v : "");
	}
	return 0;
}

/* S3 mode with a config: the lock of a write to /{bucket}/{key} from the
 * policy's route (X-Fencing-Lock only where the route allows it), or per
 * unrouted_writes: reject (403), allow (forwarded unfenced: *act PASS),
 * bucket_lock (lock {bucket}, as without a config). NULL after replying
 * (*act HANDLED) or for an unfenced write (*act PASS). */
static struct lockreg_entry *s3_policy_lock(struct freq *fr, enum proxy_action *act)
{
	struct fencing *f = fr->f;
	struct proxy_req *req = fr->req;
	const struct policy *pol = f->policy;
	const struct policy_route *route;
	const struct policy_lock *pl = NULL;
	char name[TOKEN_LOCK_NAME_MAX + 1], path[8192];
	enum token_lock_status ls;
	enum policy_pick pick;
	struct lockreg_entry *lk;
	const char *why = NULL;

	*act = PROXY_HANDLED;
	if (policy_path_decode(proxy_req_path(req), path, sizeof(path)) < 0 ||
	    (fr->kind == S3_DELETE_OBJECTS && strlen(path) + 2 > sizeof(path))) {
		fr->verdict = "refused";
		fencing_reply_error(fr, 400, "InvalidURI", "the path is not a valid request path", false, 0);
		return NULL;
	}
	if (fr->kind == S3_DELETE_OBJECTS && path[strlen(path) - 1] != '/')
		strcat(path, "/"); /* its keys are in the body: the bucket's root route */
	ls = token_lock_from_request((fr->header_lock[0] ? fr->header_lock : NULL),
				     fr->meta_lock[0] ? fr->meta_lock : NULL, name,
				     sizeof(name));
	if (ls == TOKEN_LOCK_INVALID || ls == TOKEN_LOCK_CONFLICT) {
		fr->verdict = "refused";
		fencing_reply_error(fr, 400, "InvalidFencingLock", "not one valid lock name", false, 0);
		return NULL;
	}
	/* keys under a configured lock's prefix in its own bucket are lock
	 * files, whatever route covers them: the lock-file guard takes them */
	for (size_t i = 0; fr->key && i < pol->nlocks; i++) {
		const struct policy_lock *c = &pol->locks[i];
		struct lockreg_entry *ce;

		if (!c->store || !c->prefix ||
		    lockkey_classify(fr->key, c->prefix, NULL) == LOCKKEY_NOT_LOCK)
			continue;
		ce = lockreg_get_at(f->locks, c->name, c->store, c->prefix, 1, &why);
		if (ce && lockreg_in_bucket(ce, fr->bucket))
			return ce;
	}
	pick = policy_pick_lock(pol, path, ls == TOKEN_LOCK_OK ? name : NULL, &route, &pl);
	if (pick == POLICY_PICK_NAME_FORBIDDEN || pick == POLICY_PICK_NAME_UNKNOWN) {
		fencing_refuse_lock_name(fr, pick);
		return NULL;
	}
	if (route) {
		fr->fenced_methods = route->methods;
		fr->strict = route->strict;
		lk = lockreg_get_at(f->locks, pl->name, pl->store, pl->prefix, 1, &why);
	} else if (pol->unrouted_writes == POLICY_UNROUTED_REJECT) {
		fr->verdict = "refused";
		fencing_reply_error(fr, 403, "AccessDenied", "no route fences writes to this path", false, 0);
		return NULL;
	} else if (pol->unrouted_writes == POLICY_UNROUTED_ALLOW) {
		fr->verdict = "unfenced";
		*act = PROXY_PASS;
		return NULL;
	} else {
		if (ls == TOKEN_LOCK_OK && strcmp(name, fr->bucket) != 0) {
			fr->verdict = "refused";
			fencing_reply_error(fr, 400, "InvalidFencingLock",
				    "an unrouted write to bucket B is fenced by lock B only", false, 0);
			return NULL;
		}
		lk = lockreg_get(f->locks, fr->bucket, fr->bucket, 1, &why);
	}
	if (!lk)
		fencing_reply_untracked(fr, why);
	return lk;
}

/* The S3 request path after the common set-up (fencing_on_request). */
enum proxy_action fencing_s3_on_request(struct fencing *f, struct freq *fr)
{
	struct proxy_req *req = fr->req;
	const struct s3req *m = s3req_of(req);
	const char *v;
	const char *why = NULL;
	char lockname[TOKEN_LOCK_NAME_MAX + 1];
	enum token_lock_status ls;

	if (!m)
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	if (f->s3_endpoint)
		proxy_req_on_response(req, on_response, fr);
	{ /* cut to the buffer like snprintf; a cut name fails lockreg_bucket_valid */
		size_t bl = strlen(m->bucket);

		if (bl >= sizeof(fr->bucket))
			bl = sizeof(fr->bucket) - 1;
		memcpy(fr->bucket, m->bucket, bl);
		fr->bucket[bl] = '\0';
	}
	if (m->key && !(fr->key = strdup(m->key)))
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	fr->kind = m->cls;
	if (m->cls == S3_REFUSED) {
		fr->verdict = "refused";
		log_info("request \"%s\": refused: \"%s\"", proxy_req_id(req), m->message);
		return fencing_reply_error(fr, m->status, m->code, m->message, false, 0);
	}
	if (m->cls == S3_READ) {
		fr->verdict = fence_strverdict(FENCE_READ_PASS);
		return PROXY_PASS;
	}
	if (read_owned_headers(fr) < 0)
		return PROXY_HANDLED;
	if (m->cls == S3_BUCKET_WRITE || m->cls == S3_BUCKET_CONFIG) {
		/* bucket administration (create, delete when empty,
		 * configuration) is not guarded by a lock; authz asks for
		 * "write" or "admin" */
		fr->verdict = "unfenced";
		return PROXY_PASS;
	}
	if (m->upload_id) {
		if (strlen(m->upload_id) >= MULTIPART_ID_MAX)
			return fencing_reply_error(fr, 400, "InvalidArgument",
						   "the upload id is too long", false, 0);
		if (!(fr->upload_id = strdup(m->upload_id)))
			return fencing_reply_error(fr, 500, "InternalError", "out of memory",
						   false, 0);
	}
	if (!lockreg_bucket_valid(fr->bucket))
		return fencing_reply_error(fr, 400, "InvalidBucketName", "not a valid S3 bucket name",
				   false, 0);
	if (f->policy) {
		/* -c: the route names the lock (see s3_policy_lock) */
		enum proxy_action act = PROXY_HANDLED;

		fr->lock = s3_policy_lock(fr, &act);
		if (!fr->lock && act == PROXY_PASS && fr->kind == S3_DELETE_OBJECTS)
			return fencing_delete_start(fr, false); /* never forwarded */
		if (!fr->lock)
			return act;
	} else {
		fr->lock = lockreg_get(f->locks, fr->bucket, fr->bucket, 1, &why);
		if (!fr->lock)
			return fencing_reply_error(fr, 503, "SlowDown",
					   why && strcmp(why, "full") == 0 ? "too many locks in use"
									   : "cannot track this lock",
					   false, 0);
		ls = token_lock_from_request((fr->header_lock[0] ? fr->header_lock : NULL),
					     fr->meta_lock[0] ? fr->meta_lock : NULL,
					     lockname, sizeof(lockname));
		if (ls == TOKEN_LOCK_INVALID || ls == TOKEN_LOCK_CONFLICT ||
		    (ls == TOKEN_LOCK_OK && strcmp(lockname, fr->lock->name) != 0))
			return fencing_reply_error(fr, 400, "InvalidFencingLock",
					   "without a config, bucket B is fenced by lock B only",
					   false, 0);
	}

	if (fr->key && lockreg_in_bucket(fr->lock, fr->bucket) &&
	    lockkey_classify(fr->key, fr->lock->prefix, NULL) != LOCKKEY_NOT_LOCK) {
		/* only plain PutObject and DeleteObject are lock-protocol
		 * operations; the guard refuses everything else */
		fr->copy_or_multipart = fr->kind != S3_OBJECT_PUT && fr->kind != S3_OBJECT_DELETE;
		fr->lock_file = true;
		lockreg_touch(fr->lock);
		return fencing_guard_start(fr);
	}
	if (fr->kind == S3_DELETE_OBJECTS)
		goto decide; /* the body's keys: fencing_delete.c after the verdict */

	v = proxy_req_header(req, "If-None-Match");
	if (v) {
		if (!is_star(v))
			return fencing_reply_error(fr, 501, "NotImplemented",
					   "A header you provided implies functionality that is "
					   "not implemented (If-None-Match on a write takes \"*\" "
					   "only, as S3)", false, 0);
		fr->client_inm = true;
	}
	v = proxy_req_header(req, "If-Match");
	if (v && quote_etag(v, fr->client_if_match, sizeof(fr->client_if_match)) < 0)
		return fencing_reply_error(fr, 400, "InvalidArgument",
					   "If-Match is not one ETag", false, 0);
	if (fr->client_inm && fr->client_if_match[0])
		return fencing_reply_error(fr, 400, "InvalidArgument",
				   "If-Match and If-None-Match together", false, 0);
	if (fr->kind == S3_OBJECT_COPY) {
		v = proxy_req_header(req, "x-amz-metadata-directive");
		if (v && strcasecmp(v, "REPLACE") != 0 && strcasecmp(v, "COPY") != 0)
			return fencing_reply_error(fr, 400, "InvalidArgument",
					   "Unknown metadata directive.", false, 0);
		/* COPY (the default): in front of S3 the proxy sends REPLACE
		 * with the source's metadata and its own stamp (fencing_copy.c);
		 * the embedded store copies the source's metadata itself and
		 * takes the stamp from this request (s3local_copy.c) */
		fr->copy_metadata = (!v || strcasecmp(v, "COPY") == 0) && f->s3_endpoint;
		/* a backend that ignores the copy destination's condition
		 * (radosgw, moto) cannot be trusted with the object CAS: the
		 * copy is decided on a listing made for it, as on a strict
		 * route, so a lagging replica's zombie copy meets the newer
		 * epoch (the window left: listing to S3) */
		if (f->s3_endpoint && backend_caps_refusal(backend_caps_current(), BACKEND_OP_COPY))
			fr->strict = true;
	}
	if (fr->kind == S3_MPU_PART || fr->kind == S3_MPU_COMPLETE || fr->kind == S3_MPU_ABORT) {
		struct multipart_upload u;
		int known = multipart_get(f->uploads, fr->upload_id, &u);

		if (known && strcmp(u.bucket, fr->bucket) != 0)
			known = 0;
		if (fr->token.status == TOKEN_ABSENT) {
			if (!known) {
				fr->verdict = fence_strverdict(FENCE_REJECT_MISSING);
				return fencing_reply_error(fr, 428, "FencingTokenMissing",
						   "this proxy does not know the upload: send "
						   "X-Fencing-Token", false, 0);
			}
			fr->token.status = TOKEN_OK;
			fr->token.epoch = u.epoch;
		} else if (fr->token.status == TOKEN_OK && known && fr->token.epoch != u.epoch) {
			char msg[160];

			snprintf(msg, sizeof(msg), "the upload was created under epoch %" PRIu64,
				 u.epoch);
			fr->verdict = fence_strverdict(FENCE_REJECT_STALE);
			return fencing_reply_error(fr, 409, "FencingTokenStale", msg, true,
					   fr->lock->high_water);
		}
	}
decide:
	return fencing_step_when_current(fr);
}

