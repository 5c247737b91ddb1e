/* fencing.c — the fencing handler's common path: every request gets a
 * struct freq, the mode's entry (fencing_s3.c or fencing_http.c) finds its
 * lock and classifies it, and fencing_step_decide() takes the verdict
 * (fence.h) against the lock's high-water mark (lockreg.h). Rejections
 * are answered here and never reach upstream. Also the access-log line of
 * every request, and the handler's life cycle.
 *
 * Every store call (loads of a lock, also for a newer epoch, HEADs of
 * objects, lock-file writes) runs on the jobs pool while the request is
 * suspended; the loop never blocks. It does not serve /_fence/ and does not
 * forward anything itself: proxy.c does. */
#include "fencing_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "ops/accesslog.h"
#include "ops/log.h"
#include "ops/logfile.h"
#include "policy/policy.h"
#include "wire/decimal.h"
#include "wire/method.h"
#include "wire/s3err.h"

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
	free(fr->upload_id);
	free(fr->head_err);
	free(fr);
}

int64_t fencing_mono_us(void)
{
	return lockreg_mono_ms() * 1000;
}

/* ---- small helpers ---------------------------------------------------- */

void fencing_count_upstream(struct fencing *f, const char *kind)
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

enum proxy_action fencing_reply_error(struct freq *fr, int status, const char *code,
				     const char *message, bool has_epoch, uint64_t epoch)
{
	struct front_hdrs h = {0};
	char resource[LOCKREG_BUCKET_MAX + 1100 + 3], num[DECIMAL_U64_MAX];
	struct s3err e = { .code = code, .message = message, .resource = NULL,
			   .request_id = proxy_req_id(fr->req), .has_epoch = has_epoch,
			   .current_epoch = epoch };
	char *body;
	size_t len = 0;

	if (fr->key) { /* "/bucket/key", the key cut at 1100 bytes */
		size_t bl = strlen(fr->bucket), kl = strnlen(fr->key, 1100);

		resource[0] = '/';
		memcpy(resource + 1, fr->bucket, bl);
		resource[1 + bl] = '/';
		memcpy(resource + 2 + bl, fr->key, kl);
		resource[2 + bl + kl] = '\0';
		e.resource = resource;
	}
	if (fr->f->http_mode)
		body = s3err_json_dup(&e, &len); /* resource unset: not in JSON */
	else
		body = s3err_xml_dup(&e, &len);
	if (status == 409 || status == 428 || status == 400)
		count_rejection(fr->f, code);
	if (status == 409 || status == 428 || status == 400 || status == 403)
		fr->refusal = code; /* the status page's reason */
	if (has_epoch) {
		decimal_u64(num, epoch);
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

void fencing_refuse_lock_name(struct freq *fr, enum policy_pick pick)
{
	fr->verdict = "refused";
	fencing_reply_error(fr, 400, "InvalidFencingLock",
			    pick == POLICY_PICK_NAME_UNKNOWN ? "no lock of that name is configured"
			    : "this route does not let a request name its lock", false, 0);
}

void fencing_reply_untracked(struct freq *fr, const char *why)
{
	fencing_reply_error(fr, 503, fr->f->http_mode ? "ServiceUnavailable" : "SlowDown",
			    why && strcmp(why, "full") == 0 ? "too many locks in use"
							    : "cannot track this lock", false, 0);
}

enum proxy_action fencing_reply_wait_failed(struct freq *fr, int r)
{
	char msg[200];

	if (r != LOCKREG_FULL)
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	snprintf(msg, sizeof(msg), "%d requests already wait on lock \"%.64s\"; retry",
		 LOCKREG_QUEUE_MAX, fr->lock->name);
	fr->verdict = "error";
	return fencing_reply_error(fr, 503, "SlowDown", msg, false, 0);
}

enum proxy_action fencing_reply_load_failed(struct freq *fr, const char *code, const char *what,
					    const char *detail)
{
	char msg[320];

	log_warn("request \"%s\": %s: %s", proxy_req_id(fr->req), what, detail);
	snprintf(msg, sizeof(msg), "%s: the lock store failed or did not answer; the server's log "
		 "has the details (request %s)", what, proxy_req_id(fr->req));
	fr->verdict = "error";
	return fencing_reply_error(fr, 503, code, msg, false, 0);
}

static enum proxy_action reply_decision(struct freq *fr, const struct fence_decision *d)
{
	fr->has_current = true;
	fr->current = d->high_water;
	return fencing_reply_error(fr, d->status, d->code, d->message, d->status == 409, d->high_water);
}

/* ---- the decision, step by step ---------------------------------------- */

void fencing_continue(struct freq *fr, enum proxy_action act)
{
	if (act != PROXY_SUSPEND)
		proxy_req_resume(fr->req, act);
}

void fencing_loaded_cb(struct lockreg_entry *e, int ok, void *arg)
{
	struct freq *fr = arg;

	if (proxy_req_client_gone(fr->req)) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
		return;
	}
	if (!ok && e->load_no_bucket && fr->bucket[0] && lockreg_in_bucket(e, fr->bucket)) {
		/* the bucket the client named does not exist: S3's answer, not a
		 * 503 every SDK would retry */
		fr->verdict = "no_bucket";
		proxy_req_resume(fr->req, fencing_reply_error(fr, 404, "NoSuchBucket",
				 "The specified bucket does not exist", false, 0));
		return;
	}
	if (!ok) {
		char what[80];

		snprintf(what, sizeof(what), "cannot read lock \"%.40s\"", e->name);
		proxy_req_resume(fr->req, fencing_reply_load_failed(fr, "ServiceUnavailable", what,
								   e->load_err));
		return;
	}
	fencing_continue(fr, fencing_step_decide(fr));
}

/* T > C: a load that started after the request came has listed every
 * epoch after C (lockreg.h, the freshness rule). */
static void lookup_cb(struct lockreg_entry *e, int ok, void *arg)
{
	struct freq *fr = arg;

	if (proxy_req_client_gone(fr->req)) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
		return;
	}
	if (!ok) {
		char what[80];

		snprintf(what, sizeof(what), "cannot verify epoch %" PRIu64, fr->token.epoch);
		proxy_req_resume(fr->req, fencing_reply_load_failed(fr, "ServiceUnavailable", what,
								   e->load_err));
		return;
	}
	fr->looked_up = true;
	fencing_continue(fr, fencing_step_decide(fr));
}

static bool kind_stamps(enum s3_class k)
{
	return k == S3_OBJECT_PUT || k == S3_OBJECT_COPY || k == S3_MPU_CREATE;
}

enum proxy_action fencing_step_when_current(struct freq *fr)
{
	int r;

	lockreg_touch(fr->lock); /* once per request: the refresh learns its pace */
	r = lockreg_when_current(fr->f->locks, fr->lock, fr->strict || fr->lock->strict,
				 fencing_loaded_cb, fr);

	if (r < 0)
		return fencing_reply_wait_failed(fr, r);
	if (r == 0)
		return PROXY_SUSPEND;
	return fencing_step_decide(fr);
}

enum proxy_action fencing_step_decide(struct freq *fr)
{
	struct fencing *f = fr->f;
	struct lockreg_entry *lk = fr->lock;
	struct fence_input in;
	struct fence_decision d;
	uint64_t t = fr->token.status == TOKEN_OK ? fr->token.epoch : 0;
	int r;

	memset(&in, 0, sizeof(in));
	/* DeleteObjects deletes: a route fences it as it fences DELETE */
	in.method = fr->kind == S3_DELETE_OBJECTS ? "DELETE" : proxy_req_method(fr->req);
	in.fenced_methods = fr->fenced_methods;
	in.token = fr->token;
	in.current_epoch = lk->high_water;
	/* after a fresh load every epoch file up to the latest is known: a T
	 * still above C has none */
	in.lock_file_exists = fr->looked_up ? FENCE_TRI_NO : FENCE_TRI_UNKNOWN;
	in.strict = lk->strict || fr->strict;
	if (t && t <= lk->high_water) {
		in.epoch_released = lockreg_epoch_released(lk, t);
		in.lease_lapsed = lockreg_epoch_lapsed(lk, t, lockreg_wall_ms());
	}
	fr->cache_hit = 0;
	if (f->s3_endpoint && fr->key && fencing_kind_has_object_cas(fr->kind) &&
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
		if (fr->kind == S3_DELETE_OBJECTS)
			return fencing_delete_start(fr, false); /* a route without DELETE */
		return PROXY_PASS;
	case FENCE_NEED_LOOKUP:
		r = lockreg_when_current(f->locks, lk, true, lookup_cb, fr);
		if (r == 0)
			return PROXY_SUSPEND;
		return fencing_reply_wait_failed(fr, r); /* a fresh wait is never 1 */
	case FENCE_FORWARD:
		break;
	default:
		log_info("request \"%s\" lock \"%s\" key \"%s\" epoch %" PRIu64 " current %"
			 PRIu64 ": \"%s\"", proxy_req_id(fr->req), lk->name,
			 fr->key ? fr->key : "", t, d.high_water, fr->verdict);
		return reply_decision(fr, &d);
	}
	fr->epoch = t;
	if (f->metrics)
		metrics_set(f->metrics->lock_epoch, (const char *[]){ lk->name },
			    (double)lk->high_water);
	if (f->http_mode)
		return fencing_http_admit(fr);
	if (fr->kind == S3_DELETE_OBJECTS)
		return fencing_delete_start(fr, true);
	if (fr->kind == S3_MPU_PART || fr->kind == S3_MPU_ABORT || fr->kind == S3_OBJECT_ATTR)
		return PROXY_PASS;
	if (kind_stamps(fr->kind)) {
		char num[DECIMAL_U64_MAX];

		decimal_u64(num, t);
		if (proxy_req_fwd_set(fr->req, "x-amz-meta-fencing-epoch", num) < 0 ||
		    proxy_req_fwd_set(fr->req, "x-amz-meta-fencing-lock", lk->name) < 0)
			return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	}
	if (!f->s3_endpoint) {
		/* embedded: s3local does the object CAS (s3local.h contract) */
		char num[DECIMAL_U64_MAX], cur[DECIMAL_U64_MAX];

		decimal_u64(num, t);
		decimal_u64(cur, lk->high_water);
		if ((fr->kind == S3_OBJECT_DELETE &&
		     proxy_req_fwd_set(fr->req, "X-Fencing-Epoch-Check", num) < 0) ||
		    proxy_req_fwd_set(fr->req, "X-Fencing-Epoch-Current", cur) < 0)
			return fencing_reply_error(fr, 500, "InternalError", "out of memory",
						   false, 0);
		return PROXY_PASS;
	}
	if (fr->kind == S3_MPU_CREATE)
		return PROXY_PASS;
	if (fr->copy_metadata)
		return fencing_copy_prepare(fr); /* then fencing_step_cas */
	return fencing_step_cas(fr);
}

/* ---- the request -------------------------------------------------------- */

int fencing_body_append(struct freq *fr, const char *data, size_t len, size_t max)
{
	char *nb;

	if (fr->body_too_big)
		return 0;
	if (fr->body_len + len > max) {
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

struct token fencing_read_token(struct proxy_req *req)
{
	const struct front_hdrs *h = proxy_req_headers(req);
	struct token t = TOKEN_INIT;

	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(h->v[i].name, "X-Fencing-Token") == 0 ||
		    strcasecmp(h->v[i].name, "x-amz-meta-fencing-token") == 0)
			token_add(&t, h->v[i].value, strlen(h->v[i].value));
	return t;
}

const char *const fencing_owned_prefixes[] = { "x-fencing-", "x-amz-meta-fencing-", NULL };

static void req_done(const struct proxy_summary *s, void *arg);

enum proxy_action fencing_on_request(struct proxy_req *req, void *arg)
{
	struct fencing *f = arg;
	const char *path = proxy_req_path(req);
	struct freq *fr;

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
	fr->t_forward_us = fencing_mono_us();
	proxy_req_set_ctx(req, fr, freq_free);
	proxy_req_on_done(req, req_done, fr);
	if (f->http_mode)
		return fencing_http_on_request(f, fr);
	return fencing_s3_on_request(f, fr);
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
	if (!f->access_log || !f->access_log->access)
		return;
	proxy_summary_log_entry(s, &e);
	e.time_ms = t_ms;
	e.bucket = bucket;
	e.key = key;
	e.lock = lock;
	e.presented_epoch = presented;
	e.has_current_epoch = has_current;
	e.current_epoch = current;
	e.verdict = verdict;
	line = accesslog_format(&e, &len);
	if (line) {
		logfiles_access_write(f->access_log, line, len);
		free(line);
	}
}

/* The status page's count of a decided write: refused (with its reason),
 * or forwarded by the verdict. Reads and undecided requests are not. */
static void note_status(const struct freq *fr, const struct proxy_summary *s)
{
	bool forwarded = fr->verdict && strcmp(fr->verdict, "forward") == 0;

	if (!fr->f->board || method_is_read(s->method) || (!fr->refusal && !forwarded))
		return;
	statusboard_note_write(fr->f->board, &(struct statusboard_write){
		.lock = fr->lock ? fr->lock->name : NULL,
		.client = s->principal ? s->principal : s->peer,
		.method = s->method, .bucket = fr->bucket, .key = fr->key,
		.has_presented = fr->token.status == TOKEN_OK, .presented = fr->token.epoch,
		.has_current = fr->has_current, .current = fr->current,
		.reason = fr->refusal }, lockreg_wall_ms());
}

static void req_done(const struct proxy_summary *s, void *arg)
{
	struct freq *fr = arg;

	fencing_http_done(fr, s);
	if (fr->kind == S3_MPU_CREATE && s->outcome == PROXY_OUT_UPSTREAM &&
	    s->status >= 200 && s->status < 300)
		fencing_record_upload(fr);

	write_log(fr->f, s, fr->bucket[0] ? fr->bucket : NULL, fr->key,
		  fr->lock ? fr->lock->name : NULL,
		  fr->token.status == TOKEN_OK ? fr->token.epoch : 0, fr->has_current,
		  fr->current, fr->verdict, fr->t_start_ms);
	note_status(fr, s);
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
		log_info("lock \"%s\": epoch %" PRIu64 " loaded", e->name, e->high_water);
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
	f->board = cfg->board;
	f->barrier_timeout_ms = cfg->barrier_timeout_ms > 0 ? cfg->barrier_timeout_ms : 5000;
	f->barrier_grace_ms = cfg->barrier_grace_ms ? cfg->barrier_grace_ms : 2000;
	if (f->http_mode && !f->base) {
		snprintf(err, errlen, "fencing: HTTP mode needs the event base (epoch barrier)");
		fencing_free(f);
		return NULL;
	}
	if (cfg->s3_endpoint && !(f->s3_endpoint = strdup(cfg->s3_endpoint)))
		goto nomem;
	if (cfg->data_dir && !(f->data_dir = strdup(cfg->data_dir)))
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
	f->uploads = cfg->uploads;
	if (!f->uploads) {
		f->uploads = multipart_new(cfg->multipart_capacity ? cfg->multipart_capacity
								  : 10000);
		f->own_uploads = true;
	}
	f->tstores = calloc((size_t)f->nthreads * TSTORES_PER_THREAD, sizeof(*f->tstores));
	if (!f->objects || !f->uploads || !f->tstores)
		goto nomem;
	if (f->metrics) /* one family for every worker: registered once, in metrics.c */
		f->upstream_requests = f->metrics->upstream_requests;
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
	if (f->own_uploads)
		multipart_free(f->uploads);
	free(f->s3_endpoint);
	free(f->data_dir);
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

void fencing_cache_counts(const struct fencing *f, uint64_t *hits, uint64_t *misses)
{
	objcache_counts(f->objects, hits, misses);
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

