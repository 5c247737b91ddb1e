/* fencing.c — the fencing handler: classifies each S3 request, decides
 * fenced writes against the lock's high-water mark, stamps and conditions
 * the allowed ones (object-level compare-and-swap with an ETag cache),
 * guards lock files and tracks multipart uploads.
 *
 * Every store call (first load of a lock, lookups of newer epochs, HEADs of
 * objects, lock-file writes) runs on the jobs pool while the request is
 * suspended; the loop never blocks. It does not serve /_fence/ and does not
 * forward anything itself: proxy.c does. */
#include "fencing.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "ops/accesslog.h"
#include "fence.h"
#include "lockkey.h"
#include "ops/log.h"
#include "multipart.h"
#include "objcache.h"
#include "policy/policy.h"
#include "wire/s3err.h"
#include "token.h"
#include "wire/pct.h"

#define TSTORES_PER_THREAD 16

struct tstore {
	char bucket[LOCKREG_BUCKET_MAX + 1];
	struct store *st;
	unsigned long used;
};

struct fencing {
	struct lockreg *locks;
	struct jobs *jobs;
	int nthreads;
	struct fencegate_metrics *metrics;
	struct metrics_family *upstream_requests; /* fencegate_upstream_requests_total{kind} */
	char *s3_endpoint;
	char *region;
	struct objcache *objects;
	struct multipart_table *uploads;
	int max_cas_retries;
	FILE *access_log;
	struct tstore *tstores;        /* nthreads rows of TSTORES_PER_THREAD */
	unsigned long upstream_count;
	/* HTTP mode */
	bool http_mode;
	struct event_base *base;
	long barrier_timeout_ms;
	struct policy *policy;         /* NULL: no config (lock from X-Fencing-Lock) */
};

enum op_kind {
	OP_READ = 0,
	OP_PUT,              /* PutObject */
	OP_COPY,             /* CopyObject (PUT with x-amz-copy-source) */
	OP_CREATE_MPU,       /* POST ?uploads */
	OP_UPLOAD_PART,      /* PUT ?partNumber&uploadId (also UploadPartCopy) */
	OP_COMPLETE_MPU,     /* POST ?uploadId */
	OP_ABORT_MPU,        /* DELETE ?uploadId */
	OP_DELETE,           /* DeleteObject */
	OP_OTHER_WRITE,      /* tagging, ACLs, multi-object delete, ...: lock-level only */
	OP_LOCK_FILE,        /* a write to a key under the lock's prefix */
};

/* One request's fencing state (the req's ctx). */
struct freq {
	struct fencing *f;
	struct proxy_req *req;
	enum op_kind kind;
	char bucket[LOCKREG_BUCKET_MAX + 1];
	char *key;                   /* percent-decoded, NULL for bucket-level */
	struct lockreg_entry *lock;
	struct token token;
	uint64_t epoch;              /* T, once known */
	enum fence_tri lock_file_exists;
	bool lookup_released;
	bool lookup_lapsed;
	int cache_hit;               /* objcache lookup of step_decide: 1 hit */
	struct objcache_entry cached;
	bool client_inm;             /* client sent If-None-Match: * */
	char client_if_match[STORE_ETAG_MAX];
	char upload_id[MULTIPART_ID_MAX];
	int cas_resends;
	bool our_condition;          /* the forwarded condition is ours */
	bool cond_if_match;          /* ours is If-Match (else If-None-Match *) */
	/* object HEAD result */
	int head_found;              /* 1, 0, -1 failure */
	char head_etag[STORE_ETAG_MAX];
	uint64_t head_epoch;
	char head_err[256];
	/* lock-file guard */
	bool copy_or_multipart;      /* copy source, ?uploads, ?uploadId on a lock key */
	char *body;
	size_t body_len;
	bool body_too_big;
	/* multipart answer capture */
	char *resp_body;
	size_t resp_len;
	/* HTTP mode (key holds the request path, for the log) and routes */
	unsigned fenced_methods;       /* the route's; 0: FENCE_METHODS_DEFAULT */
	bool strict;                   /* the route is strict */
	struct barrier_waiter waiter;  /* queued in lock->barrier while waiting */
	bool barrier_waiting;          /* waiter is queued or on the ready list */
	bool barrier_counted;          /* forwarded: counts in flight until done */
	struct event *barrier_timer;
	/* log */
	const char *verdict;
	bool has_current;
	uint64_t current;
	int64_t t_start_ms;
	int64_t t_forward_us;
};

static void freq_free(void *arg)
{
	struct freq *fr = arg;

	if (!fr)
		return;
	if (fr->barrier_timer)
		event_free(fr->barrier_timer);
	free(fr->key);
	free(fr->body);
	free(fr->resp_body);
	free(fr);
}

static int64_t mono_us(void)
{
	return lockreg_mono_ms() * 1000;
}

/* ---- small helpers ---------------------------------------------------- */

static int is_star(const char *v)
{
	return v && (strcmp(v, "*") == 0 || strcmp(v, "\"*\"") == 0);
}

static void count_upstream(struct fencing *f, const char *kind)
{
	f->upstream_count++;
	if (f->upstream_requests)
		metrics_add(f->upstream_requests, (const char *[]){ kind }, 1);
}

static void count_rejection(struct fencing *f, const char *code)
{
	if (f->metrics)
		metrics_add(f->metrics->rejections, (const char *[]){ code }, 1);
}

/* Answers an error with the S3 XML body (CurrentEpoch and X-Fencing-Epoch
 * when has_epoch). Returns PROXY_HANDLED. */
static enum proxy_action reply_error(struct freq *fr, int status, const char *code,
				     const char *message, bool has_epoch, uint64_t epoch)
{
	struct front_hdrs h = {0};
	char resource[1200], num[24];
	struct s3err e = { .code = code, .message = message, .resource = NULL,
			   .request_id = proxy_req_id(fr->req), .has_epoch = has_epoch,
			   .current_epoch = epoch };
	char *body;
	size_t len = 0;

	if (fr->key) {
		snprintf(resource, sizeof(resource), "/%s/%.1100s", fr->bucket, fr->key);
		e.resource = resource;
	}
	if (fr->f->http_mode)
		body = s3err_json_dup(&e, &len); /* resource unset: not in JSON */
	else
		body = s3err_xml_dup(&e, &len);
	if (status == 409 || status == 428 || status == 400)
		count_rejection(fr->f, code);
	if (has_epoch) {
		snprintf(num, sizeof(num), "%" PRIu64, epoch);
		front_hdrs_add(&h, "X-Fencing-Epoch", num);
	}
	if (status == 503 && fr->f->http_mode)
		front_hdrs_add(&h, "Retry-After", "1");
	if (!body)
		proxy_req_reply_error(fr->req, status, code, message, &h);
	else
		proxy_req_reply(fr->req, status, &h, fr->f->http_mode ? S3ERR_JSON_CONTENT_TYPE :
				S3ERR_XML_CONTENT_TYPE, body, len);
	front_hdrs_clear(&h);
	free(body);
	return PROXY_HANDLED; /* fr may be gone now (a consumed request) */
}

static enum proxy_action reply_decision(struct freq *fr, const struct fence_decision *d)
{
	fr->has_current = true;
	fr->current = d->high_water;
	return reply_error(fr, d->status, d->code, d->message, d->status == 409, d->high_water);
}

/* ---- per-thread stores for object HEADs -------------------------------- */

/* Worker side: this thread's store for bucket (opened on first use; the
 * least used one is closed when the row is full). */
static struct store *thread_store(struct fencing *f, const char *bucket, char *err,
				  size_t errlen)
{
	int idx = jobs_worker_index();
	struct tstore *row, *victim;
	struct store_config sc;
	char url[128];

	if (idx < 0 || idx >= f->nthreads) {
		snprintf(err, errlen, "not on a worker thread");
		return NULL;
	}
	row = &f->tstores[(size_t)idx * TSTORES_PER_THREAD];
	victim = &row[0];
	for (int i = 0; i < TSTORES_PER_THREAD; i++) {
		if (row[i].st && strcmp(row[i].bucket, bucket) == 0) {
			row[i].used++;
			return row[i].st;
		}
		if (!row[i].st || (victim->st && row[i].used < victim->used))
			victim = &row[i];
	}
	store_close(victim->st);
	memset(victim, 0, sizeof(*victim));
	memset(&sc, 0, sizeof(sc));
	snprintf(url, sizeof(url), "s3://%s", bucket);
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
	return victim->st;
}

/* ---- the decision, step by step ---------------------------------------- */

static enum proxy_action step_decide(struct freq *fr);
static enum proxy_action step_cas(struct freq *fr);
static enum proxy_action http_admit(struct freq *fr);
static enum proxy_resp_action on_response(struct proxy_req *req, void *arg);

/* Continues a suspended request with the action a step returned. */
static void continue_with(struct freq *fr, enum proxy_action act)
{
	if (act != PROXY_SUSPEND)
		proxy_req_resume(fr->req, act);
}

static void loaded_cb(struct lockreg_entry *e, int ok, void *arg)
{
	struct freq *fr = arg;

	if (proxy_req_client_gone(fr->req)) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
		return;
	}
	if (!ok) {
		char msg[320];

		snprintf(msg, sizeof(msg), "cannot read lock \"%.40s\": %.256s", e->name, e->load_err);
		log_warn("%s", msg);
		fr->verdict = "error";
		proxy_req_resume(fr->req, reply_error(fr, 503, "ServiceUnavailable", msg, false, 0));
		return;
	}
	continue_with(fr, step_decide(fr));
}

static void lookup_cb(struct lockreg_entry *e, const struct lockreg_lookup *res, void *arg)
{
	struct freq *fr = arg;

	if (proxy_req_client_gone(fr->req)) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
		return;
	}
	if (res->found < 0) {
		char msg[320];

		snprintf(msg, sizeof(msg), "cannot verify epoch %" PRIu64 ": %s", res->epoch,
			 res->err);
		fr->verdict = "error";
		proxy_req_resume(fr->req, reply_error(fr, 503, "ServiceUnavailable", msg, false, 0));
		return;
	}
	fr->lock_file_exists = res->found ? FENCE_TRI_YES : FENCE_TRI_NO;
	fr->lookup_released = res->found && res->state == LOCK_STATE_RELEASED;
	fr->lookup_lapsed = res->found && res->state == LOCK_STATE_LAPSED;
	continue_with(fr, step_decide(fr));
}

static bool kind_has_object_cas(enum op_kind k)
{
	return k == OP_PUT || k == OP_COPY || k == OP_COMPLETE_MPU || k == OP_DELETE;
}

static bool kind_stamps(enum op_kind k)
{
	return k == OP_PUT || k == OP_COPY || k == OP_CREATE_MPU;
}

/* Runs fence_decide with what is known; looks up, rejects or goes on. */
static enum proxy_action step_decide(struct freq *fr)
{
	struct fencing *f = fr->f;
	struct lockreg_entry *lk = fr->lock;
	struct fence_input in;
	struct fence_decision d;
	uint64_t t = fr->token.status == TOKEN_OK ? fr->token.epoch : 0;

	memset(&in, 0, sizeof(in));
	in.method = proxy_req_method(fr->req);
	in.fenced_methods = fr->fenced_methods;
	in.token = fr->token;
	in.current_epoch = lk->high_water;
	in.lock_file_exists = fr->lock_file_exists;
	in.strict = lk->strict || fr->strict;
	if (t && t > lk->high_water) {
		in.epoch_released = fr->lookup_released;
		in.lease_lapsed = fr->lookup_lapsed;
	} else if (t) {
		in.epoch_released = lockreg_epoch_released(lk, t);
		in.lease_lapsed = lockreg_epoch_lapsed(lk, t, lockreg_wall_ms());
	}
	fr->cache_hit = 0;
	if (f->s3_endpoint && fr->key && kind_has_object_cas(fr->kind) &&
	    objcache_get(f->objects, fr->bucket, fr->key, &fr->cached)) {
		fr->cache_hit = 1;
		in.object_epoch = fr->cached.epoch;
	}
	fence_decide(&in, &d);
	fr->has_current = true;
	fr->current = d.high_water;
	if (d.raised && lockreg_raise(lk, d.high_water) && f->metrics)
		metrics_set(f->metrics->lock_epoch, (const char *[]){ lk->name },
			    (double)lk->high_water);
	fr->verdict = fence_strverdict(d.verdict);
	switch (d.verdict) {
	case FENCE_READ_PASS:
		return PROXY_PASS;
	case FENCE_NEED_LOOKUP:
		if (lockreg_lookup_epoch(f->locks, lk, t, lookup_cb, fr) < 0)
			return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
		return PROXY_SUSPEND;
	case FENCE_FORWARD:
		break;
	default:
		log_info("request \"%s\" lock \"%s\" key \"%s\" epoch \"%" PRIu64 "\" current \"%"
			 PRIu64 "\": \"%s\"", proxy_req_id(fr->req), lk->name,
			 fr->key ? fr->key : "", t, d.high_water, fr->verdict);
		return reply_decision(fr, &d);
	}
	fr->epoch = t;
	if (f->metrics)
		metrics_set(f->metrics->lock_epoch, (const char *[]){ lk->name },
			    (double)lk->high_water);
	if (f->http_mode)
		return http_admit(fr);
	if (fr->kind == OP_UPLOAD_PART || fr->kind == OP_ABORT_MPU || fr->kind == OP_OTHER_WRITE)
		return PROXY_PASS;
	if (kind_stamps(fr->kind)) {
		char num[24];

		snprintf(num, sizeof(num), "%" PRIu64, t);
		if (proxy_req_set_header(fr->req, "x-amz-meta-fencing-epoch", num) < 0 ||
		    proxy_req_set_header(fr->req, "x-amz-meta-fencing-lock", lk->name) < 0)
			return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	}
	if (!f->s3_endpoint) {
		/* embedded: s3local does the object CAS (s3local.h contract) */
		if (fr->kind == OP_DELETE) {
			char num[24];

			snprintf(num, sizeof(num), "%" PRIu64, t);
			if (proxy_req_set_header(fr->req, "X-Fencing-Epoch-Check", num) < 0)
				return reply_error(fr, 500, "InternalError", "out of memory",
						   false, 0);
		}
		return PROXY_PASS;
	}
	if (fr->kind == OP_CREATE_MPU)
		return PROXY_PASS;
	return step_cas(fr);
}

/* ---- object-level compare-and-swap (S3 upstream mode) ------------------ */

struct head_job {
	struct fencing *f;
	struct freq *fr;
	int after_response;          /* resume after a response suspend */
};

static void head_run(void *arg)
{
	struct head_job *j = arg;
	struct freq *fr = j->fr;
	struct store_result res = STORE_RESULT_INIT;
	struct store *st;
	enum store_code sc;
	const char *ep;
	char err[256];

	fr->head_found = -1;
	fr->head_epoch = 0;
	fr->head_etag[0] = '\0';
	st = thread_store(j->f, fr->bucket, err, sizeof(err));
	if (!st) {
		snprintf(fr->head_err, sizeof(fr->head_err), "%s", err);
		return;
	}
	sc = store_head(st, fr->key, &res);
	if (sc == STORE_NOT_FOUND) {
		fr->head_found = 0;
	} else if (sc == STORE_OK) {
		fr->head_found = 1;
		snprintf(fr->head_etag, sizeof(fr->head_etag), "%s", res.etag);
		ep = store_result_meta(&res, "fencing-epoch");
		if (ep) {
			uint64_t v = 0;

			if (token_parse(ep, strlen(ep), &v) == TOKEN_OK)
				fr->head_epoch = v;
		}
	} else {
		snprintf(fr->head_err, sizeof(fr->head_err), "HEAD \"%.200s\": %s", fr->key,
			 store_strerror(sc));
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
	count_upstream(fr->f, "head");
	if (proxy_req_client_gone(fr->req)) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
		return;
	}
	continue_with(fr, cas_after_head(fr, after));
}

static enum proxy_action start_head(struct freq *fr, int after_response)
{
	struct head_job *j = calloc(1, sizeof(*j));

	if (!j)
		return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	j->f = fr->f;
	j->fr = fr;
	j->after_response = after_response;
	if (jobs_submit(fr->f->jobs, head_run, head_done, j) < 0) {
		free(j);
		return reply_error(fr, 503, "SlowDown", "the worker pool is busy", false, 0);
	}
	return PROXY_SUSPEND;
}

static enum proxy_action forward_if_match(struct freq *fr, const char *etag, bool ours)
{
	if (proxy_req_set_header(fr->req, "If-Match", etag) < 0 ||
	    proxy_req_set_header(fr->req, "If-None-Match", NULL) < 0)
		return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	fr->our_condition = ours;
	fr->cond_if_match = true;
	return PROXY_PASS;
}

static enum proxy_action forward_if_absent(struct freq *fr, bool ours)
{
	if (proxy_req_set_header(fr->req, "If-None-Match", "*") < 0 ||
	    proxy_req_set_header(fr->req, "If-Match", NULL) < 0)
		return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	fr->our_condition = ours;
	fr->cond_if_match = false;
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
	return reply_error(fr, 409, "FencingTokenStale", msg, true, fr->lock->high_water);
}

/* Sets the upstream condition for an allowed write, HEADing the object when
 * the cache does not know it. */
static enum proxy_action step_cas(struct freq *fr)
{
	const struct objcache_entry *ce = &fr->cached;
	int hit = fr->cache_hit; /* looked up by step_decide just before */

	if (fr->client_inm)
		return forward_if_absent(fr, false); /* create only: S3 checks it */
	if (fr->client_if_match[0]) {
		if (hit && strcmp(ce->etag, fr->client_if_match) == 0)
			return forward_if_match(fr, fr->client_if_match, false);
		return start_head(fr, 0);
	}
	if (hit)
		return forward_if_match(fr, ce->etag, true);
	return start_head(fr, 0);
}

static enum proxy_action cas_after_head(struct freq *fr, int after_response)
{
	struct fencing *f = fr->f;

	if (fr->head_found < 0) {
		char msg[320];

		snprintf(msg, sizeof(msg), "cannot read the object's version: %s", fr->head_err);
		return reply_error(fr, 503, "SlowDown", msg, false, 0);
	}
	if (fr->head_found && fr->head_epoch > fr->epoch)
		return reply_stale_object(fr, fr->head_epoch);
	if (fr->head_found)
		objcache_put(f->objects, fr->bucket, fr->key, fr->head_etag, fr->head_epoch);
	if (after_response) {
		if (!fr->head_found && fr->kind == OP_DELETE) {
			proxy_req_reply(fr->req, 204, NULL, NULL, NULL, 0);
			return PROXY_HANDLED;
		}
		if (fr->cas_resends >= f->max_cas_retries || !proxy_req_can_resend(fr->req))
			return reply_error(fr, 503, "SlowDown",
					   "the object kept changing under the write; retry", false, 0);
		fr->cas_resends++;
	}
	if (fr->client_if_match[0]) {
		if (!fr->head_found)
			return reply_error(fr, 404, "NoSuchKey",
					   "If-Match: the object does not exist", false, 0);
		if (strcmp(fr->head_etag, fr->client_if_match) != 0)
			return reply_error(fr, 412, "PreconditionFailed",
					   "If-Match does not match the object's ETag", false, 0);
		return forward_if_match(fr, fr->client_if_match, false) == PROXY_PASS
		       ? (after_response ? PROXY_FORWARD : PROXY_PASS) : PROXY_HANDLED;
	}
	if (!fr->head_found) {
		if (fr->kind == OP_DELETE) {
			/* S3 answers 204 to a DELETE of a missing key; an
			 * unconditional DELETE could remove an object a newer
			 * epoch creates meanwhile, so answer it here */
			proxy_req_reply(fr->req, 204, NULL, NULL, NULL, 0);
			return PROXY_HANDLED;
		}
		if (forward_if_absent(fr, true) != PROXY_PASS)
			return PROXY_HANDLED;
	} else if (forward_if_match(fr, fr->head_etag, true) != PROXY_PASS) {
		return PROXY_HANDLED;
	}
	return after_response ? PROXY_FORWARD : PROXY_PASS;
}

/* ---- the upstream answer ------------------------------------------------ */

static void observe_latency(struct freq *fr)
{
	if (fr->f->metrics && fr->t_forward_us)
		metrics_observe(fr->f->metrics->upstream_latency, NULL,
				(double)(mono_us() - fr->t_forward_us) / 1e6);
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

/* After a relayed CreateMultipartUpload: remember upload id -> epoch. The
 * answer reached the client in the same loop turn, so no UploadPart of it
 * can be decided before this runs. */
static void record_upload(struct freq *fr)
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

static enum proxy_resp_action on_response(struct proxy_req *req, void *arg)
{
	struct freq *fr = arg;
	struct fencing *f = fr->f;
	int status = proxy_req_resp_status(req);
	const char *etag;

	count_upstream(f, fr->kind == OP_READ ? "read" : "write");
	observe_latency(fr);
	if (fr->kind == OP_READ)
		return PROXY_RESP_RELAY;
	if (status >= 200 && status < 300) {
		if (fr->kind == OP_PUT && (etag = proxy_req_resp_header(req, "ETag")) && *etag)
			objcache_put(f->objects, fr->bucket, fr->key, etag, fr->epoch);
		else if (fr->key && kind_has_object_cas(fr->kind))
			objcache_invalidate(f->objects, fr->bucket, fr->key);
		if (fr->kind == OP_COMPLETE_MPU || fr->kind == OP_ABORT_MPU)
			multipart_remove(f->uploads, fr->upload_id);
		if (fr->kind == OP_CREATE_MPU)
			proxy_req_on_resp_body(req, capture_body, fr);
		return PROXY_RESP_RELAY;
	}
	if (!fr->key || !kind_has_object_cas(fr->kind))
		return PROXY_RESP_RELAY;
	objcache_invalidate(f->objects, fr->bucket, fr->key);
	if (status == 404 && fr->kind == OP_DELETE && fr->our_condition) {
		/* the object vanished under our If-Match: deleted is deleted */
		proxy_req_reply(req, 204, NULL, NULL, NULL, 0);
		return PROXY_RESP_REPLACED;
	}
	if (!fr->our_condition ||
	    !(status == 412 || status == 409 || (status == 404 && fr->cond_if_match)))
		return PROXY_RESP_RELAY; /* the client's own condition, or no race */
	/* our condition lost a race: re-read the object's epoch, then refuse
	 * (newer epoch), re-send with the new version (bounded), or 503 */
	if (start_head(fr, 1) != PROXY_SUSPEND)
		return PROXY_RESP_REPLACED;
	return PROXY_RESP_SUSPEND;
}

/* ---- lock-file writes through the S3 API -------------------------------- */

struct guard_job {
	struct freq *fr;
	struct lockkey_decision d;
	enum store_code sc;
	struct store_result res;
	struct lock_info latest;
	bool io_failed;
	char err[320];
	char method[16];
	char if_match[STORE_ETAG_MAX];
	char if_none_match[8];
	char content_type[128];
	bool copy_or_multipart;
};

static void guard_run(struct lockreg_entry *e, struct lockreg_io *io, void *arg)
{
	struct guard_job *j = arg;
	struct freq *fr = j->fr;
	struct lockkey_request lr;
	char err[256];

	if (!io->lk) {
		j->io_failed = true;
		snprintf(j->err, sizeof(j->err), "%s", io->err ? io->err : "no store");
		return;
	}
	if (lock_status(io->lk, &j->latest, err, sizeof(err)) != LOCK_OK) {
		j->io_failed = true;
		snprintf(j->err, sizeof(j->err), "reading lock \"%.40s\": %.256s", e->name, err);
		return;
	}
	memset(&lr, 0, sizeof(lr));
	lr.method = j->method;
	lr.key = fr->key;
	lr.prefix = e->prefix;
	lr.if_none_match = j->if_none_match[0] ? j->if_none_match : NULL;
	lr.if_match = j->if_match[0] ? j->if_match : NULL;
	lr.copy_or_multipart = j->copy_or_multipart;
	lr.payload = fr->body;
	lr.payload_len = fr->body_len;
	lr.latest_epoch = j->latest.epoch;
	lr.latest_state = j->latest.state;
	lockkey_decide(&lr, &j->d);
	switch (j->d.verdict) {
	case LOCKKEY_ALLOW_CREATE:
	case LOCKKEY_ALLOW_REWRITE: {
		struct store_put_opts po;

		memset(&po, 0, sizeof(po));
		po.cond = j->d.verdict == LOCKKEY_ALLOW_CREATE ? STORE_COND_IF_NONE_MATCH_ANY
							       : STORE_COND_IF_MATCH;
		po.etag = j->if_match;
		po.content_type = j->content_type[0] ? j->content_type : "application/json";
		j->sc = store_put(io->st, fr->key, fr->body ? fr->body : "", fr->body_len, &po,
				  &j->res);
		break;
	}
	case LOCKKEY_ALLOW_DELETE:
		j->sc = store_delete(io->st, fr->key, j->if_match[0] ? j->if_match : NULL, &j->res);
		break;
	default:
		break;
	}
}

static void guard_done(struct lockreg_entry *e, void *arg)
{
	struct guard_job *j = arg;
	struct freq *fr = j->fr;
	struct front_hdrs h = {0};
	struct lock_payload pl;

	if (j->io_failed) {
		fr->verdict = "error";
		reply_error(fr, 503, "ServiceUnavailable", j->err, false, 0);
		goto out;
	}
	if (j->latest.epoch)
		lockreg_note_info(e, &j->latest);
	fr->has_current = true;
	fr->current = e->high_water;
	fr->verdict = lockkey_strverdict(j->d.verdict);
	if (j->d.verdict == LOCKKEY_REFUSE) {
		log_info("request \"%s\" lock \"%s\" key \"%s\": refused \"%s\"",
			 proxy_req_id(fr->req), e->name, fr->key, j->d.code);
		reply_error(fr, j->d.status, j->d.code, j->d.message, j->d.status == 409,
			    e->high_water);
		goto out;
	}
	if (j->d.verdict == LOCKKEY_READ_PASS || j->d.verdict == LOCKKEY_NOT_LOCK_KEY) {
		reply_error(fr, 500, "InternalError", "unexpected lock-key verdict", false, 0);
		goto out;
	}
	count_upstream(fr->f, "lock");
	switch (j->sc) {
	case STORE_OK:
		if (j->d.verdict != LOCKKEY_ALLOW_DELETE &&
		    lock_payload_parse(fr->body, fr->body_len, &pl) == 0) {
			enum lock_state st = pl.expired ? LOCK_STATE_RELEASED : LOCK_STATE_HELD;
			int64_t end = pl.expired ? 0 : lockreg_wall_ms() + pl.validity_ms;

			lockreg_note(e, j->d.epoch, st, end, pl.leader_id, pl.validity_ms);
			if (fr->f->metrics)
				metrics_set(fr->f->metrics->lock_epoch, (const char *[]){ e->name },
					    (double)e->high_water);
		}
		if (j->res.etag[0])
			front_hdrs_add(&h, "ETag", j->res.etag);
		proxy_req_reply(fr->req, j->d.verdict == LOCKKEY_ALLOW_DELETE ? 204 : 200, &h,
				NULL, NULL, 0);
		break;
	case STORE_PRECONDITION_FAILED:
		reply_error(fr, 412, "PreconditionFailed",
			    "At least one of the pre-conditions you specified did not hold",
			    false, 0);
		break;
	case STORE_NOT_FOUND:
		reply_error(fr, 404, "NoSuchKey", "the lock file does not exist", false, 0);
		break;
	case STORE_CONFLICT:
		reply_error(fr, 409, "ConditionalRequestConflict",
			    "a conflicting conditional operation is in progress", false, 0);
		break;
	default: {
		char msg[320];

		snprintf(msg, sizeof(msg), "writing the lock file: %s%s%s", store_strerror(j->sc),
			 j->res.err_message[0] ? ": " : "", j->res.err_message);
		reply_error(fr, 503, "ServiceUnavailable", msg, false, 0);
		break;
	}
	}
out:
	front_hdrs_clear(&h);
	store_result_clear(&j->res);
	free(j);
}

static int guard_body(struct proxy_req *req, const char *data, size_t len, void *arg)
{
	struct freq *fr = arg;
	char *nb;

	if (fr->body_too_big)
		return 0;
	if (fr->body_len + len > LOCKKEY_PAYLOAD_MAX) {
		fr->body_too_big = true;
		return 0;
	}
	nb = realloc(fr->body, fr->body_len + len + 1);
	if (!nb)
		return -1;
	fr->body = nb;
	memcpy(fr->body + fr->body_len, data, len);
	fr->body_len += len;
	fr->body[fr->body_len] = '\0';
	return 0;
}

static void guard_end(struct proxy_req *req, int ok, void *arg)
{
	struct freq *fr = arg;
	struct guard_job *j;
	const char *v;

	if (!ok)
		return;
	if (fr->body_too_big) {
		fr->verdict = lockkey_strverdict(LOCKKEY_REFUSE);
		reply_error(fr, 400, "InvalidLockPayload", "a lock file payload is at most 64 KiB",
			    false, 0);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		reply_error(fr, 500, "InternalError", "out of memory", false, 0);
		return;
	}
	j->fr = fr;
	j->res = (struct store_result)STORE_RESULT_INIT;
	snprintf(j->method, sizeof(j->method), "%s", proxy_req_method(req));
	if ((v = proxy_req_header(req, "If-Match")))
		snprintf(j->if_match, sizeof(j->if_match), "%s", v);
	if ((v = proxy_req_header(req, "If-None-Match")))
		snprintf(j->if_none_match, sizeof(j->if_none_match), "%s", v);
	if ((v = proxy_req_header(req, "Content-Type")))
		snprintf(j->content_type, sizeof(j->content_type), "%s", v);
	j->copy_or_multipart = fr->copy_or_multipart;
	if (lockreg_submit(fr->f->locks, fr->lock, guard_run, guard_done, j) < 0) {
		free(j);
		reply_error(fr, 503, "SlowDown", "the worker pool is busy", false, 0);
	}
}

/* ---- classification ----------------------------------------------------- */

/* 1 if the query names an S3 sub-resource (?tagging, ?acl, ?versionId,
 * ...); parameters that do not change the operation -- "x-id" (added by
 * AWS SDK v3) and presigned-URL authentication (X-Amz-*, and SigV2's
 * AWSAccessKeyId/Signature/Expires) -- are ignored. */
static int has_subresource(const char *query)
{
	const char *s = query;

	if (!query)
		return 0;
	while (*s) {
		size_t plen = strcspn(s, "&");
		size_t nlen = strcspn(s, "=&");

		if (nlen > 0 && !(nlen == 4 && strncasecmp(s, "x-id", 4) == 0) &&
		    !(nlen > 6 && strncasecmp(s, "X-Amz-", 6) == 0) &&
		    !(nlen == 14 && strncmp(s, "AWSAccessKeyId", 14) == 0) &&
		    !(nlen == 9 && strncmp(s, "Signature", 9) == 0) &&
		    !(nlen == 7 && strncmp(s, "Expires", 7) == 0))
			return 1;
		s += plen;
		if (*s == '&')
			s++;
	}
	return 0;
}

static enum op_kind classify(struct freq *fr, const char *method, const char *query)
{
	char tmp[8];
	int has_upload_id = multipart_query_param(query, "uploadId", fr->upload_id,
						  sizeof(fr->upload_id)) == 1;

	if (!(method_bit(method) & FENCE_METHODS_DEFAULT))
		return OP_READ;
	if (!fr->key)
		return OP_OTHER_WRITE; /* bucket-level: multi-object delete etc. */
	if (strcmp(method, "PUT") == 0) {
		if (has_upload_id)
			return OP_UPLOAD_PART;
		if (has_subresource(query))
			return OP_OTHER_WRITE; /* ?tagging, ?acl, ?retention ... */
		return proxy_req_header(fr->req, "x-amz-copy-source") ? OP_COPY : OP_PUT;
	}
	if (strcmp(method, "POST") == 0) {
		if (multipart_query_param(query, "uploads", tmp, sizeof(tmp)) == 1)
			return OP_CREATE_MPU;
		if (has_upload_id)
			return OP_COMPLETE_MPU;
		return OP_OTHER_WRITE;
	}
	if (strcmp(method, "DELETE") == 0) {
		if (has_upload_id)
			return OP_ABORT_MPU;
		if (has_subresource(query))
			return OP_OTHER_WRITE; /* ?versionId, ?tagging */
		return OP_DELETE;
	}
	return OP_OTHER_WRITE;
}

/* The token from every X-Fencing-Token / x-amz-meta-fencing-token line. */
static struct token read_token(struct proxy_req *req)
{
	const struct front_hdrs *h = proxy_req_headers(req);
	struct token t = TOKEN_INIT;

	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(h->v[i].name, "X-Fencing-Token") == 0 ||
		    strcasecmp(h->v[i].name, "x-amz-meta-fencing-token") == 0)
			token_add(&t, h->v[i].value, strlen(h->v[i].value));
	return t;
}

static void req_done(const struct proxy_summary *s, void *arg);
static enum proxy_action http_on_request(struct fencing *f, struct freq *fr);

/* 1 if the lock's files live in bucket (so keys under its prefix there are
 * lock files): a bucket-named lock, or a store "s3://BUCKET[/ROOT]". */
static int store_in_bucket(const struct lockreg_entry *lk, const char *bucket)
{
	size_t blen = strlen(bucket);

	if (!lk->store_url[0])
		return strcmp(lk->bucket, bucket) == 0;
	return strncmp(lk->store_url, "s3://", 5) == 0 &&
	       strncmp(lk->store_url + 5, bucket, blen) == 0 &&
	       (lk->store_url[5 + blen] == '\0' || lk->store_url[5 + blen] == '/');
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
	struct lockreg_entry *lk;
	const char *why = NULL;

	*act = PROXY_HANDLED;
	if (policy_path_decode(proxy_req_path(req), path, sizeof(path)) < 0) {
		fr->verdict = "refused";
		reply_error(fr, 400, "InvalidURI", "the path is not a valid request path", false, 0);
		return NULL;
	}
	ls = token_lock_from_request(proxy_req_header(req, "X-Fencing-Lock"),
				     proxy_req_header(req, "x-amz-meta-fencing-lock"), name,
				     sizeof(name));
	if (ls == TOKEN_LOCK_INVALID || ls == TOKEN_LOCK_CONFLICT) {
		fr->verdict = "refused";
		reply_error(fr, 400, "InvalidFencingLock", "not one valid lock name", false, 0);
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
		if (ce && store_in_bucket(ce, fr->bucket))
			return ce;
	}
	route = policy_route_for(pol, path);
	if (route) {
		pl = route->lock;
		fr->fenced_methods = route->methods;
		fr->strict = route->strict;
		if (ls == TOKEN_LOCK_OK && strcmp(name, pl->name) != 0) {
			pl = route->allow_lock_header ? policy_lock_by_name(pol, name) : NULL;
			if (!pl) {
				fr->verdict = "refused";
				reply_error(fr, 400, "InvalidFencingLock",
					    route->allow_lock_header ? "no lock of that name is configured"
					    : "this route does not let a request name its lock",
					    false, 0);
				return NULL;
			}
		}
		lk = lockreg_get_at(f->locks, pl->name, pl->store, pl->prefix, 1, &why);
	} else if (pol->unrouted_writes == POLICY_UNROUTED_REJECT) {
		fr->verdict = "refused";
		reply_error(fr, 403, "AccessDenied", "no route fences writes to this path", false, 0);
		return NULL;
	} else if (pol->unrouted_writes == POLICY_UNROUTED_ALLOW) {
		fr->verdict = "unfenced";
		*act = PROXY_PASS;
		return NULL;
	} else {
		if (ls == TOKEN_LOCK_OK && strcmp(name, fr->bucket) != 0) {
			fr->verdict = "refused";
			reply_error(fr, 400, "InvalidFencingLock",
				    "an unrouted write to bucket B is fenced by lock B only", false, 0);
			return NULL;
		}
		lk = lockreg_get(f->locks, fr->bucket, fr->bucket, 1, &why);
	}
	if (!lk) {
		reply_error(fr, 503, "SlowDown",
			    why && strcmp(why, "full") == 0 ? "too many locks in use"
							    : "cannot track this lock", false, 0);
		return NULL;
	}
	return lk;
}

enum proxy_action fencing_on_request(struct proxy_req *req, void *arg)
{
	struct fencing *f = arg;
	const char *path = proxy_req_path(req);
	const char *method = proxy_req_method(req);
	const char *query = proxy_req_query(req);
	const char *slash, *v;
	struct freq *fr;
	size_t blen;
	const char *why = NULL;
	char lockname[TOKEN_LOCK_NAME_MAX + 1];
	enum token_lock_status ls;
	int r;

	if (strncmp(path, "/_fence/", 8) == 0 || strcmp(path, "/_fence") == 0)
		return PROXY_PASS;
	fr = calloc(1, sizeof(*fr));
	if (!fr) {
		proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
		return PROXY_HANDLED;
	}
	fr->f = f;
	fr->req = req;
	fr->t_start_ms = lockreg_wall_ms();
	fr->t_forward_us = mono_us();
	proxy_req_set_ctx(req, fr, freq_free);
	proxy_req_on_done(req, req_done, fr);
	if (f->http_mode)
		return http_on_request(f, fr);
	if (f->s3_endpoint)
		proxy_req_on_response(req, on_response, fr);

	/* /{bucket}/{key} */
	if (path[0] == '/') {
		slash = strchr(path + 1, '/');
		blen = slash ? (size_t)(slash - path - 1) : strlen(path + 1);
		if (blen >= sizeof(fr->bucket)) {
			fr->verdict = "refused";
			return reply_error(fr, 400, "InvalidBucketName",
					   "a bucket name is at most 63 characters", false, 0);
		}
		memcpy(fr->bucket, path + 1, blen);
		fr->bucket[blen] = '\0';
		if (slash && slash[1]) {
			fr->key = pct_decode_dup(slash + 1, strlen(slash + 1), PCT_NO_NUL, NULL);
			if (!fr->key)
				return reply_error(fr, 400, "InvalidURI",
						   "the key is not valid percent-encoding", false, 0);
		}
	}
	fr->kind = classify(fr, method, query);
	if (fr->kind == OP_READ) {
		fr->verdict = fence_strverdict(FENCE_READ_PASS);
		return PROXY_PASS;
	}
	if (!fr->bucket[0]) {
		fr->verdict = "refused";
		return reply_error(fr, 405, "MethodNotAllowed", "writes need /{bucket}/{key}",
				   false, 0);
	}
	if (!fr->key && !(strcmp(method, "POST") == 0 && query &&
			  multipart_query_param(query, "delete", lockname, sizeof(lockname)) == 1)) {
		/* bucket administration (create, delete when empty,
		 * configuration) is not guarded by the bucket's lock */
		fr->verdict = "unfenced";
		return PROXY_PASS;
	}
	if (!fr->key) {
		/* POST /{bucket}?delete: the keys are in the body, so neither the
		 * lock-file guard nor the per-object CAS could see them */
		fr->verdict = "refused";
		return reply_error(fr, 501, "NotImplemented",
				   "multi-object delete is not fenced object by object; delete "
				   "keys one at a time (each DELETE is compare-and-swapped)",
				   false, 0);
	}
	if (!lockreg_bucket_valid(fr->bucket))
		return reply_error(fr, 400, "InvalidBucketName", "not a valid S3 bucket name",
				   false, 0);
	if (f->policy) {
		/* -c: the route names the lock (see s3_policy_lock) */
		enum proxy_action act = PROXY_HANDLED;

		fr->lock = s3_policy_lock(fr, &act);
		if (!fr->lock)
			return act;
	} else {
		fr->lock = lockreg_get(f->locks, fr->bucket, fr->bucket, 1, &why);
		if (!fr->lock)
			return reply_error(fr, 503, "SlowDown",
					   why && strcmp(why, "full") == 0 ? "too many locks in use"
									   : "cannot track this lock",
					   false, 0);
		ls = token_lock_from_request(proxy_req_header(req, "X-Fencing-Lock"),
					     proxy_req_header(req, "x-amz-meta-fencing-lock"),
					     lockname, sizeof(lockname));
		if (ls == TOKEN_LOCK_INVALID || ls == TOKEN_LOCK_CONFLICT ||
		    (ls == TOKEN_LOCK_OK && strcmp(lockname, fr->lock->name) != 0))
			return reply_error(fr, 400, "InvalidFencingLock",
					   "without a config, bucket B is fenced by lock B only",
					   false, 0);
	}

	if (fr->key && store_in_bucket(fr->lock, fr->bucket) &&
	    lockkey_classify(fr->key, fr->lock->prefix, NULL) != LOCKKEY_NOT_LOCK) {
		fr->copy_or_multipart = proxy_req_header(req, "x-amz-copy-source") != NULL ||
					fr->kind == OP_CREATE_MPU || fr->kind == OP_UPLOAD_PART ||
					fr->kind == OP_COMPLETE_MPU || fr->kind == OP_ABORT_MPU;
		fr->kind = OP_LOCK_FILE;
		lockreg_touch(fr->lock);
		if (proxy_req_consume(req, guard_body, guard_end, fr) < 0)
			return reply_error(fr, 500, "InternalError", "cannot read the body",
					   false, 0);
		return PROXY_HANDLED;
	}

	fr->token = read_token(req);
	v = proxy_req_header(req, "If-None-Match");
	if (v) {
		if (!is_star(v))
			return reply_error(fr, 501, "NotImplemented",
					   "only If-None-Match: * is supported on writes", false, 0);
		fr->client_inm = true;
	}
	v = proxy_req_header(req, "If-Match");
	if (v)
		snprintf(fr->client_if_match, sizeof(fr->client_if_match), "%s", v);
	if (fr->client_inm && fr->client_if_match[0])
		return reply_error(fr, 400, "InvalidArgument",
				   "If-Match and If-None-Match together", false, 0);
	if (fr->kind == OP_COPY) {
		v = proxy_req_header(req, "x-amz-metadata-directive");
		if (!v || strcasecmp(v, "REPLACE") != 0)
			return reply_error(fr, 400, "InvalidRequest",
					   "a fenced CopyObject needs x-amz-metadata-directive: "
					   "REPLACE (the copy must carry its own fencing epoch)",
					   false, 0);
	}
	if (fr->kind == OP_UPLOAD_PART || fr->kind == OP_COMPLETE_MPU || fr->kind == OP_ABORT_MPU) {
		struct multipart_upload u;
		int known = multipart_get(f->uploads, fr->upload_id, &u);

		if (known && strcmp(u.bucket, fr->bucket) != 0)
			known = 0;
		if (fr->token.status == TOKEN_ABSENT) {
			if (!known) {
				fr->verdict = fence_strverdict(FENCE_REJECT_MISSING);
				return reply_error(fr, 428, "FencingTokenMissing",
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
			return reply_error(fr, 409, "FencingTokenStale", msg, true,
					   fr->lock->high_water);
		}
	}
	r = lockreg_when_current(f->locks, fr->lock, fr->strict || fr->lock->strict, loaded_cb, fr);
	if (r < 0)
		return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	if (r == 0)
		return PROXY_SUSPEND;
	return step_decide(fr);
}

/* ---- HTTP mode ------------------------------------------------------------
 *
 * Any HTTP API downstream: no buckets, no object CAS. The lock comes from
 * the route (config) or X-Fencing-Lock (no config, or a route that allows
 * it); the decision is fence_decide's; an allowed write passes the lock's
 * epoch barrier (barrier.h) and is forwarded with X-Fencing-Token: T and
 * X-Fencing-Lock: NAME, whatever header the token came in. */

static void barrier_drain_cb(evutil_socket_t fd, short what, void *arg);

/* Decides the waiters the barrier released or overtook, from the loop (not
 * from inside another request's done hook). */
static void barrier_schedule(struct fencing *f, struct lockreg_entry *lk)
{
	static const struct timeval zero = { 0, 0 };

	if (!lk->barrier.ready || lk->barrier_scheduled)
		return;
	if (event_base_once(f->base, -1, EV_TIMEOUT, barrier_drain_cb, lk, &zero) == 0)
		lk->barrier_scheduled = true;
	else
		log_error("lock \"%s\": cannot schedule the epoch barrier", lk->name);
}

/* Sets the downstream's fencing headers and forwards (counted in flight). */
static enum proxy_action http_forward(struct freq *fr)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, fr->epoch);
	fr->barrier_counted = true;
	fr->verdict = fence_strverdict(FENCE_FORWARD);
	if (proxy_req_set_header(fr->req, "X-Fencing-Token", num) < 0 ||
	    proxy_req_set_header(fr->req, "X-Fencing-Lock", fr->lock->name) < 0)
		return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	return PROXY_PASS;
}

static enum proxy_action http_barrier_stale(struct freq *fr)
{
	struct lockreg_entry *lk = fr->lock;
	uint64_t c = lk->high_water > lk->barrier.accepted ? lk->high_water : lk->barrier.accepted;
	char msg[200];

	snprintf(msg, sizeof(msg), "epoch %" PRIu64 " is below epoch %" PRIu64
		 " already accepted for lock \"%.64s\"", fr->epoch, lk->barrier.accepted, lk->name);
	fr->verdict = fence_strverdict(FENCE_REJECT_STALE);
	fr->has_current = true;
	fr->current = c;
	log_info("request \"%s\" lock \"%s\" epoch \"%" PRIu64 "\" accepted \"%" PRIu64
		 "\": \"barrier_stale\"", proxy_req_id(fr->req), lk->name, fr->epoch,
		 lk->barrier.accepted);
	return reply_error(fr, 409, "FencingTokenStale", msg, true, c);
}

static void barrier_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lockreg_entry *lk = arg;
	struct barrier_waiter *w;

	(void)fd;
	(void)what;
	lk->barrier_scheduled = false;
	while ((w = barrier_pop(&lk->barrier))) {
		struct freq *fr = w->cookie;

		fr->barrier_waiting = false;
		evtimer_del(fr->barrier_timer);
		if (w->verdict == BARRIER_GO) {
			/* counted now; a client that left is finished by the
			 * resume, and its done hook uncounts it */
			continue_with(fr, http_forward(fr));
		} else {
			proxy_req_resume(fr->req, http_barrier_stale(fr));
		}
	}
}

static void barrier_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct freq *fr = arg;
	struct lockreg_entry *lk = fr->lock;
	char msg[240];

	(void)fd;
	(void)what;
	if (!fr->barrier_waiting || fr->waiter.verdict != BARRIER_WAIT)
		return; /* decided meanwhile: the drain answers it */
	barrier_cancel(&lk->barrier, &fr->waiter);
	fr->barrier_waiting = false;
	snprintf(msg, sizeof(msg), "writes of an older epoch of lock \"%.64s\" are still in flight "
		 "after %ld ms; epoch %" PRIu64 " was not forwarded, retry", lk->name,
		 fr->f->barrier_timeout_ms, fr->epoch);
	fr->verdict = "barrier_timeout";
	log_warn("request \"%s\" lock \"%s\" epoch \"%" PRIu64 "\": \"barrier_timeout\"",
		 proxy_req_id(fr->req), lk->name, fr->epoch);
	proxy_req_resume(fr->req, reply_error(fr, 503, "FencingBarrierTimeout", msg, false, 0));
}

/* The write was decided FORWARD: pass the lock's epoch barrier. */
static enum proxy_action http_admit(struct freq *fr)
{
	struct fencing *f = fr->f;
	struct lockreg_entry *lk = fr->lock;
	enum barrier_verdict v;
	struct timeval tv;

	v = barrier_admit(&lk->barrier, fr->epoch, &fr->waiter, fr);
	barrier_schedule(f, lk); /* waiters this epoch overtook are now stale */
	switch (v) {
	case BARRIER_GO:
		return http_forward(fr);
	case BARRIER_STALE:
		return http_barrier_stale(fr);
	case BARRIER_WAIT:
		break;
	}
	fr->barrier_waiting = true;
	fr->verdict = "barrier_wait";
	if (!fr->barrier_timer)
		fr->barrier_timer = evtimer_new(f->base, barrier_timeout_cb, fr);
	tv.tv_sec = f->barrier_timeout_ms / 1000;
	tv.tv_usec = (f->barrier_timeout_ms % 1000) * 1000;
	if (!fr->barrier_timer || evtimer_add(fr->barrier_timer, &tv) < 0) {
		barrier_cancel(&lk->barrier, &fr->waiter);
		fr->barrier_waiting = false;
		return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	}
	log_info("request \"%s\" lock \"%s\" epoch \"%" PRIu64 "\" in flight \"%zu\" of epoch \"%"
		 PRIu64 "\": \"barrier_wait\"", proxy_req_id(fr->req), lk->name, fr->epoch,
		 lk->barrier.n_inflight, lk->barrier.inflight_epoch);
	return PROXY_SUSPEND;
}

/* The lock of a write in HTTP mode: from the policy's route, or without a
 * config from X-Fencing-Lock. Returns the entry, or NULL after replying
 * (*act set) or when the request is not fenced at all (*act = PASS). */
static struct lockreg_entry *http_lock_for(struct freq *fr, enum proxy_action *act)
{
	struct fencing *f = fr->f;
	struct proxy_req *req = fr->req;
	const struct policy *pol = f->policy;
	const struct policy_route *route = NULL;
	const struct policy_lock *pl = NULL;
	char name[TOKEN_LOCK_NAME_MAX + 1], path[8192];
	enum token_lock_status ls;
	struct lockreg_entry *lk;
	const char *why = NULL;
	bool header_ok = pol == NULL;

	*act = PROXY_HANDLED;
	ls = token_lock_from_request(proxy_req_header(req, "X-Fencing-Lock"),
				     proxy_req_header(req, "x-amz-meta-fencing-lock"), name,
				     sizeof(name));
	if (ls == TOKEN_LOCK_INVALID || ls == TOKEN_LOCK_CONFLICT) {
		fr->verdict = "refused";
		reply_error(fr, 400, "InvalidFencingLock",
			    "X-Fencing-Lock must be one lock name of [A-Za-z0-9._-]{1,128}", false, 0);
		return NULL;
	}
	if (pol) {
		if (policy_path_decode(proxy_req_path(req), path, sizeof(path)) < 0) {
			fr->verdict = "refused";
			reply_error(fr, 400, "InvalidURI", "the path is not a valid request path",
				    false, 0);
			return NULL;
		}
		route = policy_route_for(pol, path);
		if (route) {
			pl = route->lock;
			fr->fenced_methods = route->methods;
			fr->strict = route->strict;
			header_ok = route->allow_lock_header;
		} else if (pol->unrouted_writes == POLICY_UNROUTED_REJECT) {
			if (!(method_bit(proxy_req_method(req)) & FENCE_METHODS_DEFAULT)) {
				*act = PROXY_PASS;
				return NULL;
			}
			fr->verdict = "refused";
			reply_error(fr, 403, "AccessDenied", "no route fences writes to this path",
				    false, 0);
			return NULL;
		} else if (pol->unrouted_writes == POLICY_UNROUTED_ALLOW) {
			fr->verdict = "unfenced";
			*act = PROXY_PASS;
			return NULL;
		}
	}
	if (!(method_bit(proxy_req_method(req)) &
	      (fr->fenced_methods ? fr->fenced_methods : FENCE_METHODS_DEFAULT))) {
		fr->verdict = fence_strverdict(FENCE_READ_PASS);
		*act = PROXY_PASS;
		return NULL;
	}
	if (ls == TOKEN_LOCK_OK && !header_ok && !(pl && strcmp(pl->name, name) == 0)) {
		fr->verdict = "refused";
		reply_error(fr, 400, "InvalidFencingLock",
			    "this route does not let a request name its lock", false, 0);
		return NULL;
	}
	if (ls == TOKEN_LOCK_OK && pol && header_ok) {
		pl = policy_lock_by_name(pol, name);
		if (!pl) {
			fr->verdict = "refused";
			reply_error(fr, 400, "InvalidFencingLock", "no lock of that name is configured",
				    false, 0);
			return NULL;
		}
	}
	if (pl) {
		lk = lockreg_get_at(f->locks, pl->name, pl->store, pl->prefix, 1, &why);
	} else if (pol && !route) {
		/* unrouted_writes "bucket_lock": the first path segment, in the
		 * lock store */
		if (!pol->lock_store || !policy_bucket_lock(pol, path, name, sizeof(name))) {
			fr->verdict = "refused";
			reply_error(fr, 403, "AccessDenied", "no lock guards this path", false, 0);
			return NULL;
		}
		lk = lockreg_get_at(f->locks, name, pol->lock_store, NULL, 1, &why);
	} else if (ls == TOKEN_LOCK_OK) {
		lk = lockreg_get(f->locks, name, NULL, 1, &why);
	} else {
		fr->verdict = fence_strverdict(FENCE_REJECT_MISSING);
		reply_error(fr, 428, "FencingLockMissing",
			    "a write must name its lock: send X-Fencing-Lock: NAME with "
			    "X-Fencing-Token: EPOCH", false, 0);
		return NULL;
	}
	if (!lk) {
		reply_error(fr, 503, "ServiceUnavailable",
			    why && strcmp(why, "full") == 0 ? "too many locks in use"
							    : "cannot track this lock", false, 0);
		return NULL;
	}
	return lk;
}

static enum proxy_action http_on_request(struct fencing *f, struct freq *fr)
{
	struct proxy_req *req = fr->req;
	enum proxy_action act;
	int r;

	(void)f;
	fr->kind = OP_OTHER_WRITE;
	fr->key = strdup(proxy_req_path(req));
	if (!fr->key)
		return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	fr->lock = http_lock_for(fr, &act);
	if (!fr->lock) {
		if (act == PROXY_PASS && !fr->verdict)
			fr->verdict = fence_strverdict(FENCE_READ_PASS);
		return act;
	}
	fr->token = read_token(req);
	r = lockreg_when_current(f->locks, fr->lock, fr->strict || fr->lock->strict, loaded_cb, fr);
	if (r < 0)
		return reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	if (r == 0)
		return PROXY_SUSPEND;
	return step_decide(fr);
}

/* ---- completion: metrics and the access log ----------------------------- */

static void write_log(struct fencing *f, const struct proxy_summary *s, const char *bucket,
		      const char *key, const char *lock, uint64_t presented, bool has_current,
		      uint64_t current, const char *verdict, int64_t t_ms)
{
	struct accesslog_entry e;
	char *line;
	size_t len = 0;

	if (f->metrics)
		metrics_add(f->metrics->requests,
			    (const char *[]){ metrics_method_label(s->method),
					      verdict ? verdict : "other" }, 1);
	if (!f->access_log)
		return;
	memset(&e, 0, sizeof(e));
	e.time_ms = t_ms;
	e.request_id = s->id;
	e.method = s->method;
	e.bucket = bucket;
	e.key = key;
	e.lock = lock;
	e.presented_epoch = presented;
	e.has_current_epoch = has_current;
	e.current_epoch = current;
	e.verdict = verdict;
	e.upstream_status = s->upstream_status;
	e.status = s->status;
	e.bytes_in = s->bytes_in;
	e.bytes_out = s->bytes_out;
	e.duration_ms = (double)s->duration_us / 1000.0;
	line = accesslog_format(&e, &len);
	if (line) {
		fwrite(line, 1, len, f->access_log);
		fflush(f->access_log);
		free(line);
	}
}

static void req_done(const struct proxy_summary *s, void *arg)
{
	struct freq *fr = arg;

	if (fr->barrier_counted) {
		/* the forwarded write is over: older-epoch barrier lifts */
		fr->barrier_counted = false;
		barrier_done(&fr->lock->barrier, fr->epoch);
		barrier_schedule(fr->f, fr->lock);
	}

	if (fr->kind == OP_CREATE_MPU && s->outcome == PROXY_OUT_UPSTREAM &&
	    s->status >= 200 && s->status < 300)
		record_upload(fr);

	write_log(fr->f, s, fr->bucket[0] ? fr->bucket : NULL, fr->key,
		  fr->lock ? fr->lock->name : NULL,
		  fr->token.status == TOKEN_OK ? fr->token.epoch : 0, fr->has_current,
		  fr->current, fr->verdict, fr->t_start_ms);
}

void fencing_log_request(struct fencing *f, const struct proxy_summary *s, const char *lock,
			 const char *verdict)
{
	write_log(f, s, NULL, NULL, lock, 0, false, 0, verdict,
		  lockreg_wall_ms() - s->duration_us / 1000);
}

/* ---- lifecycle ---------------------------------------------------------- */

static void preload_cb(struct lockreg_entry *e, int ok, void *arg)
{
	(void)arg;
	if (ok)
		log_info("lock \"%s\": epoch \"%" PRIu64 "\" loaded", e->name, e->high_water);
	else
		log_warn("lock \"%s\": cannot load its epoch: %s", e->name, e->load_err);
}

struct fencing *fencing_new(const struct fencing_config *cfg, char *err, size_t errlen)
{
	struct fencing *f = calloc(1, sizeof(*f));
	unsigned char seed[16];
	FILE *rnd;

	if (!f)
		goto nomem;
	f->locks = cfg->locks;
	f->jobs = cfg->jobs;
	f->nthreads = cfg->nthreads > 0 ? cfg->nthreads : 1;
	f->metrics = cfg->metrics;
	f->max_cas_retries = cfg->max_cas_retries > 0 ? cfg->max_cas_retries : 3;
	f->access_log = cfg->access_log;
	f->http_mode = cfg->http_mode;
	f->base = cfg->base;
	f->barrier_timeout_ms = cfg->barrier_timeout_ms > 0 ? cfg->barrier_timeout_ms : 5000;
	if (f->http_mode && !f->base) {
		snprintf(err, errlen, "fencing: HTTP mode needs the event base (epoch barrier)");
		fencing_free(f);
		return NULL;
	}
	if (cfg->s3_endpoint && !(f->s3_endpoint = strdup(cfg->s3_endpoint)))
		goto nomem;
	if (cfg->region && !(f->region = strdup(cfg->region)))
		goto nomem;
	rnd = fopen("/dev/urandom", "rb");
	if (!rnd || fread(seed, 1, sizeof(seed), rnd) != sizeof(seed)) {
		if (rnd)
			fclose(rnd);
		snprintf(err, errlen, "cannot read /dev/urandom for the ETag cache seed");
		fencing_free(f);
		return NULL;
	}
	fclose(rnd);
	f->objects = objcache_new(cfg->objcache_capacity ? cfg->objcache_capacity : 100000, seed);
	f->uploads = multipart_new(cfg->multipart_capacity ? cfg->multipart_capacity : 10000);
	f->tstores = calloc((size_t)f->nthreads * TSTORES_PER_THREAD, sizeof(*f->tstores));
	if (!f->objects || !f->uploads || !f->tstores)
		goto nomem;
	if (f->metrics)
		f->upstream_requests = metrics_register(
			f->metrics->registry, METRICS_COUNTER, "fencegate_upstream_requests_total",
			"Requests the proxy sent upstream (forwards, re-sends, HEADs, lock writes)",
			1, (const char *[]){ "kind" }, NULL, 0);
	return f;
nomem:
	snprintf(err, errlen, "out of memory");
	fencing_free(f);
	return NULL;
}

void fencing_free(struct fencing *f)
{
	if (!f)
		return;
	if (f->tstores)
		for (size_t i = 0; i < (size_t)f->nthreads * TSTORES_PER_THREAD; i++)
			store_close(f->tstores[i].st);
	free(f->tstores);
	objcache_free(f->objects);
	multipart_free(f->uploads);
	free(f->s3_endpoint);
	free(f->region);
	policy_free(f->policy);
	free(f);
}

int fencing_lock_known(const struct fencing *f, const char *name)
{
	const struct policy *pol = f->policy;

	if (!pol || pol->unrouted_writes == POLICY_UNROUTED_BUCKET_LOCK)
		return 1;
	return policy_lock_by_name(pol, name) != NULL;
}

int fencing_set_policy(struct fencing *f, struct policy *pol, char *err, size_t errlen)
{
	struct policy *old = f->policy;

	if (pol) {
		/* register configured locks now: a request names them by name,
		 * and their high-water marks load before the first write */
		for (size_t i = 0; i < pol->nlocks; i++) {
			const struct policy_lock *pl = &pol->locks[i];
			const char *why = NULL;
			struct lockreg_entry *e;

			if (!pl->store || !pl->prefix) {
				log_warn("lock \"%s\" has no store: not registered", pl->name);
				continue;
			}
			e = lockreg_get_at(f->locks, pl->name, pl->store, pl->prefix, 1, &why);
			if (!e) {
				snprintf(err, errlen, "lock \"%s\": %s", pl->name,
					 why ? why : "cannot register");
				return -1;
			}
			if (strcmp(e->store_url, pl->store) != 0 || strcmp(e->prefix, pl->prefix) != 0)
				log_warn("lock \"%s\" moved to \"%s\" \"%s\": a restart is needed to "
					 "use it (still \"%s\" \"%s\")", pl->name, pl->store, pl->prefix,
					 e->store_url, e->prefix);
			if (f->jobs && !e->loaded)
				lockreg_when_loaded(f->locks, e, preload_cb, NULL);
		}
	}
	f->policy = policy_hold(pol);
	policy_free(old);
	return 0;
}

unsigned long fencing_upstream_requests(const struct fencing *f)
{
	return f->upstream_count;
}

void fencing_update_metrics(struct fencing *f)
{
	struct objcache_stats st;

	if (!f->metrics)
		return;
	objcache_stats(f->objects, &st);
	metrics_set(f->metrics->etag_cache_hits, NULL, (double)st.hits);
	metrics_set(f->metrics->etag_cache_misses, NULL, (double)st.misses);
}
