/* fencing_http.c — HTTP mode of the fencing handler: any HTTP API
 * downstream, no buckets, no object CAS. The lock comes from the route
 * (config) or X-Fencing-Lock (no config, or a route that allows it); the
 * decision is fence_decide's; an allowed write passes the lock's epoch
 * barrier (barrier.h) and is forwarded with X-Fencing-Token: T and
 * X-Fencing-Lock: NAME, whatever header the token came in.
 *
 * Routes match what the downstream will see: a state-changing request whose
 * raw path a downstream could read as another path (httppath.h) is refused
 * before any route is matched, and so is a write whose path would match
 * another route if case were ignored (a downstream that folds case). */
#include "fencing_int.h"
#include "httppath.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "ops/log.h"
#include "policy/policy.h"
#include "wire/method.h"

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
	if (proxy_req_fwd_set(fr->req, "X-Fencing-Token", num) < 0 ||
	    proxy_req_fwd_set(fr->req, "X-Fencing-Lock", fr->lock->name) < 0)
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
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
	log_info("request \"%s\" lock \"%s\" epoch %" PRIu64 " accepted %" PRIu64
		 ": \"barrier_stale\"", proxy_req_id(fr->req), lk->name, fr->epoch,
		 lk->barrier.accepted);
	return fencing_reply_error(fr, 409, "FencingTokenStale", msg, true, c);
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
			fencing_continue(fr, http_forward(fr));
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
	log_warn("request \"%s\" lock \"%s\" epoch %" PRIu64 ": \"barrier_timeout\"",
		 proxy_req_id(fr->req), lk->name, fr->epoch);
	proxy_req_resume(fr->req, fencing_reply_error(fr, 503, "FencingBarrierTimeout", msg, false, 0));
}

enum proxy_action fencing_http_admit(struct freq *fr)
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
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	}
	log_info("request \"%s\" lock \"%s\" epoch %" PRIu64 " in flight %zu of epoch %"
		 PRIu64 ": \"barrier_wait\"", proxy_req_id(fr->req), lk->name, fr->epoch,
		 lk->barrier.n_inflight, lk->barrier.inflight_epoch);
	return PROXY_SUSPEND;
}

/* 1 if method may change state here: a write method (METHOD_WRITES), or a
 * read method that some route fences. */
static bool may_change_state(const struct policy *pol, const char *method)
{
	unsigned bit = method_bit(method);

	if (bit & METHOD_WRITES)
		return true;
	for (size_t i = 0; pol && i < pol->nroutes; i++)
		if (pol->routes[i].methods & bit)
			return true;
	return false;
}

/* The route a write's path matches only when ASCII case is ignored, when it
 * differs from route (the case-sensitive match), else NULL. With
 * unrouted_writes "reject", a path no route matches is refused anyway. */
static const struct policy_route *case_folded_route(const struct policy *pol, const char *path,
						    const struct policy_route *route)
{
	const struct policy_route *folded = policy_route_for_nocase(pol, path);

	if (folded == route || (!route && pol->unrouted_writes == POLICY_UNROUTED_REJECT))
		return NULL;
	return folded;
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
	/* without a config the request names its lock (X-Fencing-Lock) */
	enum policy_pick pick = POLICY_PICK_LOCK;

	*act = PROXY_HANDLED;
	ls = token_lock_from_request(proxy_req_header(req, "X-Fencing-Lock"),
				     proxy_req_header(req, "x-amz-meta-fencing-lock"), name,
				     sizeof(name));
	if (ls == TOKEN_LOCK_INVALID || ls == TOKEN_LOCK_CONFLICT) {
		fr->verdict = "refused";
		fencing_reply_error(fr, 400, "InvalidFencingLock",
			    "X-Fencing-Lock must be one lock name of [A-Za-z0-9._-]{1,128}", false, 0);
		return NULL;
	}
	if (pol) {
		if (policy_path_decode(proxy_req_path(req), path, sizeof(path)) < 0) {
			fr->verdict = "refused";
			fencing_reply_error(fr, 400, "InvalidURI", "the path is not a valid request path",
				    false, 0);
			return NULL;
		}
		pick = policy_pick_lock(pol, path, ls == TOKEN_LOCK_OK ? name : NULL, &route, &pl);
		if (may_change_state(pol, proxy_req_method(req))) {
			const struct policy_route *folded = case_folded_route(pol, path, route);
			char msg[320];

			if (folded) {
				snprintf(msg, sizeof(msg), "the path matches route \"%.200s\" only if "
					 "case is ignored: routes match case-sensitively; send the "
					 "route's exact case", folded->prefix);
				fr->verdict = "refused";
				fencing_reply_error(fr, 400, "InvalidURI", msg, false, 0);
				return NULL;
			}
		}
		if (route) {
			fr->fenced_methods = route->methods;
			fr->strict = route->strict;
		} else if (pol->unrouted_writes == POLICY_UNROUTED_REJECT) {
			if (!(method_bit(proxy_req_method(req)) & FENCE_METHODS_DEFAULT)) {
				*act = PROXY_PASS;
				return NULL;
			}
			fr->verdict = "refused";
			fencing_reply_error(fr, 403, "AccessDenied", "no route fences writes to this path",
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
	if (pick == POLICY_PICK_NAME_FORBIDDEN || pick == POLICY_PICK_NAME_UNKNOWN ||
	    (pick == POLICY_PICK_NO_ROUTE && ls == TOKEN_LOCK_OK)) {
		/* unrouted (bucket_lock): the path names the lock, not the request */
		fencing_refuse_lock_name(fr, pick);
		return NULL;
	}
	if (pl) {
		lk = lockreg_get_at(f->locks, pl->name, pl->store, pl->prefix, 1, &why);
	} else if (pol && !route) {
		/* unrouted_writes "bucket_lock": the first path segment, in the
		 * lock store */
		if (!pol->lock_store || !policy_bucket_lock(pol, path, name, sizeof(name))) {
			fr->verdict = "refused";
			fencing_reply_error(fr, 403, "AccessDenied", "no lock guards this path", false, 0);
			return NULL;
		}
		lk = lockreg_get_at(f->locks, name, pol->lock_store, NULL, 1, &why);
	} else if (ls == TOKEN_LOCK_OK) {
		lk = lockreg_get(f->locks, name, NULL, 1, &why);
	} else {
		fr->verdict = fence_strverdict(FENCE_REJECT_MISSING);
		fencing_reply_error(fr, 428, "FencingLockMissing",
			    "a write must name its lock: send X-Fencing-Lock: NAME with "
			    "X-Fencing-Token: EPOCH", false, 0);
		return NULL;
	}
	if (!lk)
		fencing_reply_untracked(fr, why);
	return lk;
}

enum proxy_action fencing_http_on_request(struct fencing *f, struct freq *fr)
{
	struct proxy_req *req = fr->req;
	enum proxy_action act;
	const char *ambiguous;

	fr->kind = S3_OBJECT_ATTR; /* lock level only: no object CAS */
	if (may_change_state(f->policy, proxy_req_method(req)) &&
	    (ambiguous = httppath_ambiguity(proxy_req_path(req)))) {
		fr->verdict = "refused";
		return fencing_reply_error(fr, 400, "InvalidURI", ambiguous, false, 0);
	}
	fr->key = strdup(proxy_req_path(req));
	if (!fr->key)
		return fencing_reply_error(fr, 500, "InternalError", "out of memory", false, 0);
	fr->lock = http_lock_for(fr, &act);
	if (!fr->lock) {
		if (act == PROXY_PASS && !fr->verdict)
			fr->verdict = fence_strverdict(FENCE_READ_PASS);
		return act;
	}
	fr->token = fencing_read_token(req);
	return fencing_step_when_current(fr);
}

struct barrier_release {
	struct fencing *f;
	struct lockreg_entry *lk;    /* entries are never freed before the loop */
	uint64_t epoch;
};

static void barrier_release_cb(evutil_socket_t fd, short what, void *arg)
{
	struct barrier_release *br = arg;

	(void)fd;
	(void)what;
	log_info("lock \"%s\": the write of epoch %" PRIu64 " with an unknown outcome "
		 "no longer holds the epoch barrier", br->lk->name, br->epoch);
	barrier_done(&br->lk->barrier, br->epoch);
	barrier_schedule(br->f, br->lk);
	free(br);
}

void fencing_http_done(struct freq *fr, const struct proxy_summary *s)
{
	struct fencing *f = fr->f;
	struct barrier_release *br;
	struct timeval tv;

	if (!fr->barrier_counted)
		return;
	fr->barrier_counted = false;
	/* A write whose answer never came (timeout, reset, client gone) may
	 * still be applied by the downstream: its upstream connection is
	 * closed by now, and for a grace after that it still counts as in
	 * flight, so no newer epoch's write overtakes it. One never sent
	 * (attempts 0: a waiter whose client left) is over at once. */
	if (s->attempts > 0 &&
	    (s->outcome == PROXY_OUT_UPSTREAM_ERROR || s->outcome == PROXY_OUT_CLIENT_GONE)) {
		if (f->barrier_grace_ms > 0 && (br = calloc(1, sizeof(*br)))) {
			br->f = f;
			br->lk = fr->lock;
			br->epoch = fr->epoch;
			tv.tv_sec = f->barrier_grace_ms / 1000;
			tv.tv_usec = (f->barrier_grace_ms % 1000) * 1000;
			if (event_base_once(f->base, -1, EV_TIMEOUT, barrier_release_cb, br, &tv) == 0)
				return;
			free(br);
		}
		if (f->barrier_grace_ms > 0)
			log_error("lock \"%s\": cannot hold the epoch barrier for a write of "
				  "unknown outcome", fr->lock->name);
	}
	/* the forwarded write is over: older-epoch barrier lifts */
	barrier_done(&fr->lock->barrier, fr->epoch);
	barrier_schedule(f, fr->lock);
}
