/* fencing_guard.c — lock files written through the S3 API (DESIGN.md "S3
 * mode"): the body (at most LOCKKEY_PAYLOAD_MAX bytes) is read, the lock's
 * latest epoch listed, lockkey_decide() rules on the protocol step and
 * lockbreak_decide() on whether this client may end a live lease (the
 * "break" permission and the client's access key, which authz recorded on
 * the request model), and an allowed create, rewrite or delete is
 * performed by the proxy itself on the lock's store, stamped with the
 * writer's access key, so forged epochs never land. Data keys never come
 * here. */
#include "fencing_int.h"

#include <stdlib.h>
#include <string.h>

#include "lockbreak.h"
#include "lockkey.h"
#include "ops/log.h"

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
	char client[S3REQ_CLIENT_MAX + 1]; /* authz's: who writes, "" unknown */
	bool may_break;                    /* authz's: "break" on this lock */
};

/* lockbreak_decide on an allowed create or rewrite: reads the latest epoch
 * file's writer stamp when the rule needs it, and turns a refusal into
 * j->d's (403 AccessDenied). Returns 0, or -1 on a store failure (j->err). */
static int guard_break_rule(struct guard_job *j, struct lockreg_io *io)
{
	struct freq *fr = j->fr;
	struct lockbreak_request br;
	struct lockbreak_decision bd;
	struct store_result head = STORE_RESULT_INIT;
	struct lock_payload pl;
	enum store_code sc;
	int rc = 0;

	memset(&br, 0, sizeof(br));
	br.create = j->d.verdict == LOCKKEY_ALLOW_CREATE;
	br.expired = lock_payload_parse(fr->body, fr->body_len, &pl) == 0 && pl.expired;
	br.latest_state = j->latest.state;
	br.client = j->client;
	br.may_break = j->may_break;
	lockbreak_decide(&br, &bd);
	if (bd.verdict == LOCKBREAK_NEED_WRITER) {
		sc = store_head(io->st, fr->key, &head);
		if (sc != STORE_OK && sc != STORE_NOT_FOUND) {
			snprintf(j->err, sizeof(j->err), "reading lock file \"%.200s\": %s", fr->key,
				 store_strerror(sc));
			rc = -1;
			goto out;
		}
		br.latest_writer_known = true;
		br.latest_writer = sc == STORE_OK ? store_result_meta(&head, LOCKBREAK_WRITER_META)
						  : NULL;
		lockbreak_decide(&br, &bd);
	}
	if (bd.verdict != LOCKBREAK_ALLOW) {
		j->d.verdict = LOCKKEY_REFUSE;
		j->d.status = 403;
		j->d.code = "AccessDenied";
		snprintf(j->d.message, sizeof(j->d.message), "%s", bd.message);
	}
out:
	store_result_clear(&head);
	return rc;
}

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
	lr.latest_payload = j->latest.state == LOCK_STATE_UNREADABLE ||
			    j->latest.state == LOCK_STATE_FREE ? NULL : &j->latest.payload;
	if (j->latest.mark > j->latest.epoch) {
		/* the files above the mark's epoch are gone (deleted out of
		 * band): the next create is mark + 1, and nothing below it
		 * may be renewed; the lost latest counts as released */
		lr.latest_epoch = j->latest.mark;
		lr.latest_state = LOCK_STATE_RELEASED;
		lr.latest_payload = NULL;
	}
	lockkey_decide(&lr, &j->d);
	if ((j->d.verdict == LOCKKEY_ALLOW_CREATE || j->d.verdict == LOCKKEY_ALLOW_REWRITE) &&
	    guard_break_rule(j, io) < 0) {
		j->io_failed = true;
		return;
	}
	switch (j->d.verdict) {
	case LOCKKEY_ALLOW_CREATE:
	case LOCKKEY_ALLOW_REWRITE: {
		struct store_put_opts po;
		struct store_meta stamp = { (char *)LOCKBREAK_WRITER_META, j->client };

		memset(&po, 0, sizeof(po));
		po.cond = j->d.verdict == LOCKKEY_ALLOW_CREATE ? STORE_COND_IF_NONE_MATCH_ANY
							       : STORE_COND_IF_MATCH;
		po.etag = j->if_match;
		po.content_type = j->content_type[0] ? j->content_type : "application/json";
		if (j->client[0]) {   /* who wrote it, for lockbreak's release rule */
			po.meta = &stamp;
			po.nmeta = 1;
		}
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
		fencing_reply_error(fr, 503, "ServiceUnavailable", j->err, false, 0);
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
		fencing_reply_error(fr, j->d.status, j->d.code, j->d.message, j->d.status == 409,
			    e->high_water);
		goto out;
	}
	if (j->d.verdict == LOCKKEY_READ_PASS || j->d.verdict == LOCKKEY_NOT_LOCK_KEY) {
		fencing_reply_error(fr, 500, "InternalError", "unexpected lock-key verdict", false, 0);
		goto out;
	}
	fencing_count_upstream(fr->f, "lock");
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
		fencing_reply_error(fr, 412, "PreconditionFailed",
			    "At least one of the pre-conditions you specified did not hold",
			    false, 0);
		break;
	case STORE_NOT_FOUND:
		fencing_reply_error(fr, 404, "NoSuchKey", "the lock file does not exist", false, 0);
		break;
	case STORE_CONFLICT:
		fencing_reply_error(fr, 409, "ConditionalRequestConflict",
			    "a conflicting conditional operation is in progress", false, 0);
		break;
	default: {
		char msg[320];

		snprintf(msg, sizeof(msg), "writing the lock file: %s%s%s", store_strerror(j->sc),
			 j->res.err_message[0] ? ": " : "", j->res.err_message);
		fencing_reply_error(fr, 503, "ServiceUnavailable", msg, false, 0);
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
	(void)req;
	return fencing_body_append(arg, data, len, LOCKKEY_PAYLOAD_MAX);
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
		fencing_reply_error(fr, 400, "InvalidLockPayload", "a lock file payload is at most 64 KiB",
			    false, 0);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
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
	{
		const struct s3req *m = s3req_of(req);

		if (m) {   /* NULL (ENOMEM): no client, no break (fail closed) */
			snprintf(j->client, sizeof(j->client), "%s", m->client);
			j->may_break = m->may_break;
		}
	}
	if (lockreg_submit(fr->f->locks, fr->lock, guard_run, guard_done, j) < 0) {
		free(j);
		fencing_reply_error(fr, 503, "SlowDown", "the worker pool is busy", false, 0);
	}
}

enum proxy_action fencing_guard_start(struct freq *fr)
{
	if (proxy_req_consume(fr->req, guard_body, guard_end, fr) < 0)
		return fencing_reply_error(fr, 500, "InternalError", "cannot read the body", false, 0);
	return PROXY_HANDLED;
}
