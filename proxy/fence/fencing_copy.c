/* fencing_copy.c — CopyObject with x-amz-metadata-directive COPY (S3's
 * default) in S3 mode. A copy must carry its own fencing epoch, and with
 * COPY S3 would copy the source's stamp instead; so the proxy reads the
 * source's metadata and representation headers (a HEAD on the jobs pool)
 * and sends the copy as REPLACE with them plus its own stamp, conditioned
 * on that very source version (x-amz-copy-source-if-match: its ETag). The
 * client sees what COPY gives: the source's metadata on the copy.
 *
 * Refused rather than approximated: a copy of a given version (versionId)
 * and a source with more user metadata than the store keeps. It does not
 * decide anything (fence.h did) and does not touch the destination's CAS
 * (fencing_step_cas does, after it). */
#include "fencing_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wire/pct.h"

struct copy_job {
	struct freq *fr;
	char bucket[LOCKREG_BUCKET_MAX + 1];
	char *key;
	enum store_code sc;
	struct store_result res;
	char err[256];
};

static void copy_job_free(struct copy_job *j)
{
	store_result_clear(&j->res);
	free(j->key);
	free(j);
}

static void copy_run(void *arg)
{
	struct copy_job *j = arg;
	struct store *st = fencing_thread_store(j->fr->f, j->bucket, j->err, sizeof(j->err));

	if (!st) {
		j->sc = STORE_ERR_IO;
		return;
	}
	j->sc = store_head(st, j->key, &j->res);
}

/* The client's x-amz-meta-* (S3 ignores them with COPY) and the
 * representation headers make way for the source's. */
static int clear_client_metadata(struct proxy_req *req)
{
	const struct front_hdrs *h = proxy_req_headers(req);

	for (size_t i = 0; i < h->n; i++) {
		const char *n = h->v[i].name;

		if (strncasecmp(n, "x-amz-meta-", 11) == 0 &&
		    strncasecmp(n + 11, "fencing-", 8) != 0 && proxy_req_fwd_set(req, n, NULL) < 0)
			return -1;
	}
	for (int i = 0; i < STORE_HDR_COUNT; i++)
		if (proxy_req_fwd_set(req, store_hdr_names[i], NULL) < 0)
			return -1;
	return 0;
}

/* Sets the source's metadata on the forwarded copy. Returns 0, or -1 after
 * replying. */
static int replace_with_source(struct freq *fr, const struct store_result *src)
{
	struct proxy_req *req = fr->req;
	const char *client_cond = proxy_req_header(req, "x-amz-copy-source-if-match");
	char name[300];

	if (client_cond && strcmp(client_cond, src->etag) != 0) {
		fencing_reply_error(fr, 412, "PreconditionFailed",
				    "x-amz-copy-source-if-match does not match the source's ETag",
				    false, 0);
		return -1;
	}
	if (clear_client_metadata(req) < 0 ||
	    proxy_req_fwd_set(req, "x-amz-metadata-directive", "REPLACE") < 0 ||
	    proxy_req_fwd_set(req, "Content-Type",
				 src->content_type[0] ? src->content_type : NULL) < 0 ||
	    proxy_req_fwd_set(req, "x-amz-copy-source-if-match", src->etag) < 0)
		goto nomem;
	for (size_t i = 0; i < src->nmeta; i++) {
		if (strncmp(src->meta[i].name, "fencing-", 8) == 0)
			continue; /* the source's stamp; the copy has its own */
		snprintf(name, sizeof(name), "x-amz-meta-%s", src->meta[i].name);
		if (proxy_req_fwd_set(req, name, src->meta[i].value) < 0)
			goto nomem;
	}
	for (int i = 0; i < STORE_HDR_COUNT; i++)
		if (src->headers[i] &&
		    proxy_req_fwd_set(req, store_hdr_names[i], src->headers[i]) < 0)
			goto nomem;
	return 0;
nomem:
	fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	return -1;
}

static void copy_done(void *arg)
{
	struct copy_job *j = arg;
	struct freq *fr = j->fr;
	char msg[400];

	fencing_count_upstream(fr->f, "head");
	if (proxy_req_client_gone(fr->req)) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
	} else if (j->sc == STORE_NOT_FOUND) {
		proxy_req_resume(fr->req, fencing_reply_error(fr, 404, "NoSuchKey",
				 "The specified copy source does not exist", false, 0));
	} else if (j->sc != STORE_OK) {
		snprintf(msg, sizeof(msg), "cannot read the copy source: %s%s%.200s",
			 store_strerror(j->sc), j->err[0] ? ": " : "", j->err);
		proxy_req_resume(fr->req, fencing_reply_error(fr, 503, "SlowDown", msg, false, 0));
	} else if (j->res.meta_dropped) {
		proxy_req_resume(fr->req, fencing_reply_error(fr, 501, "NotImplemented",
				 "the copy source has more user metadata than the proxy keeps: "
				 "send x-amz-metadata-directive: REPLACE with the metadata",
				 false, 0));
	} else if (replace_with_source(fr, &j->res) < 0) {
		proxy_req_resume(fr->req, PROXY_HANDLED);
	} else {
		fencing_continue(fr, fencing_step_cas(fr));
	}
	copy_job_free(j);
}

enum proxy_action fencing_copy_prepare(struct freq *fr)
{
	const struct s3req *m = s3req_of(fr->req);
	struct copy_job *j;

	if (!m || !m->copy.key) /* s3req.c refuses a copy without a source */
		return fencing_reply_error(fr, 500, "InternalError", "no copy source", false, 0);
	if (m->copy.version)
		return fencing_reply_error(fr, 501, "NotImplemented",
					   "a fenced copy of one version of an object needs "
					   "x-amz-metadata-directive: REPLACE", false, 0);
	j = calloc(1, sizeof(*j));
	if (!j || !(j->key = strdup(m->copy.key))) {
		free(j);
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	}
	j->fr = fr;
	j->res = (struct store_result)STORE_RESULT_INIT;
	snprintf(j->bucket, sizeof(j->bucket), "%s", m->copy.bucket);
	if (jobs_submit(fr->f->jobs, copy_run, copy_done, j) < 0) {
		copy_job_free(j);
		return fencing_reply_error(fr, 503, "SlowDown", "the worker pool is busy", false, 0);
	}
	return PROXY_SUSPEND;
}
