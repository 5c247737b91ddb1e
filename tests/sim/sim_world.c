/* sim_world.c — S3 mode in the simulation: workers that take the lock with
 * the real library (acquire, renew on a third of the lease, pause like a
 * stopped process, write with their token whatever happened meanwhile),
 * proxy replicas that decide each write as fencing.c and fencing_s3.c do
 * (the registry's freshness rule, fence_decide, the ETag cache and the
 * objcas.h steps, a reload of the lock after a lost race), and the
 * checker over what the simulated S3 applied.
 *
 * A replica here runs its request logic in the calling worker's coroutine
 * (as the proxy's loop runs a request), with its loads serialized as the
 * registry's jobs are. The old-logic switches of struct sim_config
 * re-create issue 7's findings so the checker can be seen to catch them. */
#include "sim.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence/fence.h"
#include "fence/lockreg.h"
#include "fence/objcas.h"
#include "fence/objcache.h"
#include "lock/core/lock.h"

#define KEYS 3
#define MAX_WIDS 20000
#define MAX_HOLDS 4096
#define ACTIVE_MS 4000          /* old logic: refresh only locks used this recently */
#define MAX_RESENDS 3

struct replica {
	int id;
	struct sim_clock clk;
	struct store *st;
	struct lock *lk;
	struct lockreg *reg;         /* the real registry, without jobs: the entry's */
	struct lockreg_entry *e;     /* knowledge and the freshness rule */
	struct objcache *cache;
	bool loading;
	int64_t last_used;
};

struct worker {
	int id;
	struct sim_clock clk;
	struct store *st;
	struct lock *lk;
};

struct wnote {                   /* what the checker knows of one write */
	bool acked;
	bool raced;                  /* its condition lost a race at least once */
	uint64_t epoch;
	uint64_t known_c;            /* C of the replica when it last forwarded */
	int64_t knowledge_at;        /* the start of the listing C came from */
	int64_t raced_at;            /* when its condition last lost */
	int64_t arrived;
};

struct hold {
	uint64_t epoch;
	int64_t start, end;
	int worker;
};

static struct {
	const struct sim_config *cfg;
	struct sim_report *rep;
	struct replica *replicas;
	struct worker *workers;
	struct wnote *notes;         /* by write id */
	unsigned long next_wid;
	struct hold holds[MAX_HOLDS];
	size_t nholds;
	unsigned char granted[4096];
	int running;                 /* workers still running */
} G;

__attribute__((format(printf, 2, 3)))
void sim_violation(struct sim_report *rep, const char *fmt, ...)
{
	va_list ap;

	if (rep->first[0])
		return;
	va_start(ap, fmt);
	vsnprintf(rep->first, sizeof(rep->first), fmt, ap);
	va_end(ap);
}

/* ---- a replica's knowledge of the lock ------------------------------------ */

/* Waits for a load that started at or after need (running loads are
 * serialized, as the registry's jobs are), running one if none did.
 * Returns 0, or -1 when the load failed. */
static int replica_load(struct replica *r, int64_t need)
{
	struct lock_info info;
	char err[256];
	int64_t start;

	while (r->loading)
		sim_sleep(2);
	if (r->e->loaded && r->e->last_refresh_ms >= need)
		return 0;
	r->loading = true;
	start = sim_now();
	G.rep->requests++;
	if (lock_status(r->lk, &info, err, sizeof(err)) != LOCK_OK) {
		r->loading = false;
		return -1;
	}
	lockreg_note_info(r->e, &info);
	r->e->loaded = true;
	r->e->last_refresh_ms = start; /* knowledge is as of the listing's start */
	r->loading = false;
	return 0;
}

/* The old T > C lookup: a GET of epoch T's file, which proves it exists,
 * not that it is the latest. */
static int old_lookup(struct replica *r, uint64_t t, bool *found)
{
	struct store_result res = STORE_RESULT_INIT;
	char key[256];
	enum store_code sc;

	lock_epoch_key(r->lk, t, key, sizeof(key));
	sc = store_get(r->st, key, &res);
	*found = sc == STORE_OK;
	if (*found)
		lockreg_note(r->e, t, LOCK_STATE_HELD, 0, NULL, 0);
	store_result_clear(&res);
	return sc == STORE_OK || sc == STORE_NOT_FOUND ? 0 : -1;
}

static void refresher(void *arg)
{
	struct replica *r = arg;
	int64_t period = G.cfg->refresh_ms / 2 > 0 ? G.cfg->refresh_ms / 2 : 1;

	while (!sim_over() && G.running > 0) {
		sim_sleep(period);
		if (!r->e->loaded || r->loading ||
		    sim_now() - r->e->last_refresh_ms < G.cfg->refresh_ms / 2)
			continue;
		if (G.cfg->old_idle && sim_now() - r->last_used > ACTIVE_MS)
			continue; /* the old rule: idle locks are left alone */
		replica_load(r, sim_now());
	}
}

/* ---- a replica's write path ------------------------------------------------ */

static enum store_code send_write(struct replica *r, const char *key, uint64_t t,
				  const char *body, bool del, unsigned long wid,
				  const struct objcas_step *st, struct store_result *res)
{
	char num[24], wnum[24];
	struct store_meta meta[2] = { { "fencing-epoch", num }, { "sim-wid", wnum } };
	struct store_put_opts po = { .meta = meta, .nmeta = 2 };

	snprintf(num, sizeof(num), "%" PRIu64, t);
	snprintf(wnum, sizeof(wnum), "%lu", wid);
	G.rep->requests++;
	if (del) {
		sim_s3_tag_delete(t, wid);
		return store_delete(r->st, key, st && st->action == OBJCAS_IF_MATCH ? st->etag : NULL,
				    res);
	}
	if (st) {
		po.cond = st->action == OBJCAS_IF_MATCH ? STORE_COND_IF_MATCH
							: STORE_COND_IF_NONE_MATCH_ANY;
		po.etag = st->etag;
	}
	return store_put(r->st, key, body, strlen(body), &po, res);
}

static int status_of(enum store_code sc)
{
	switch (sc) {
	case STORE_OK: return 200;
	case STORE_NOT_FOUND: return 404;
	case STORE_PRECONDITION_FAILED: return 412;
	case STORE_CONFLICT: return 409;
	default: return 503;
	}
}

/* The object CAS of an allowed write; returns the client's status. */
static int replica_cas(struct replica *r, const char *key, uint64_t t, const char *body,
		       bool del, unsigned long wid)
{
	struct objcache_entry ce;
	struct objcas_in in;
	struct objcas_step st;
	struct store_result res = STORE_RESULT_INIT;
	char head_etag[STORE_ETAG_MAX], cond_etag[STORE_ETAG_MAX];
	enum store_code sc;
	int status = 503;
	bool existed = false;           /* the unread create found the key */
	const char *v;

	memset(&in, 0, sizeof(in));
	in.is_delete = del;
	in.epoch = t;
	in.client_if_match = "";
	in.max_resends = MAX_RESENDS;
	in.plain_put = !del;
	/* a body held whole (the unread create of a miss) or one beyond the
	 * held window (HEAD first; a lost race is then not re-sent): both */
	in.can_resend = !sim_chance(200);
	in.head_etag = head_etag;
	in.cached = objcache_get(r->cache, "b", key, &ce) ? &ce : NULL;
	objcas_first(&in, &st);
	if (st.unread)
		G.rep->unread_creates++;
	for (int round = 0; round < 20; round++) {
		switch (st.action) {
		case OBJCAS_HEAD:
			G.rep->requests++;
			sc = store_head(r->st, key, &res);
			in.head_found = sc == STORE_OK ? 1 : sc == STORE_NOT_FOUND ? 0 : -1;
			snprintf(head_etag, sizeof(head_etag), "%s", res.etag);
			v = store_result_meta(&res, "fencing-epoch");
			in.head_epoch = v ? strtoull(v, NULL, 10) : 0;
			if (G.cfg->bad_unread && existed)
				in.head_epoch = 0;
			objcas_after_head(&in, &st);
			if (in.head_found > 0 && st.action != OBJCAS_STALE)
				objcache_put(r->cache, "b", key, head_etag, in.head_epoch);
			/* as fencing_s3.c: the write goes with the newest knowledge
			 * (the old logic did not look again) */
			if (!G.cfg->old_cas &&
			    (st.action == OBJCAS_IF_MATCH || st.action == OBJCAS_IF_ABSENT) &&
			    (t < r->e->high_water || lockreg_epoch_released(r->e, t))) {
				status = 409;
				goto out;
			}
			if (in.after_race && (st.action == OBJCAS_IF_MATCH || st.action == OBJCAS_IF_ABSENT))
				in.resends++;
			continue;
		case OBJCAS_IF_MATCH:
		case OBJCAS_IF_ABSENT:
			if (st.etag) { /* it may point into the cache copy or head_etag */
				snprintf(cond_etag, sizeof(cond_etag), "%s", st.etag);
				st.etag = cond_etag;
			}
			G.notes[wid].known_c = r->e->high_water;
			G.notes[wid].knowledge_at = r->e->last_refresh_ms;
			sc = send_write(r, key, t, body, del, wid, &st, &res);
			if (sc == STORE_OK) {
				if (!del)
					objcache_put(r->cache, "b", key, res.etag, t);
				else
					objcache_invalidate(r->cache, "b", key);
				status = 200;
				goto out;
			}
			objcache_invalidate(r->cache, "b", key);
			if (store_failed(sc)) {
				status = 503; /* outcome unknown: not acknowledged */
				goto out;
			}
			switch (objcas_on_answer(status_of(sc), st.ours,
						 st.action == OBJCAS_IF_MATCH, st.unread, del)) {
			case OBJCAS_RELAY:
				status = status_of(sc);
				goto out;
			case OBJCAS_EXISTS:
				/* as fencing_s3.c: the key exists; read it and
				 * decide, no lock reload (objcas.h) */
				G.rep->unread_existed++;
				existed = true;
				in.after_race = true;
				st.action = OBJCAS_HEAD;
				continue;
			case OBJCAS_DELETED:
				status = 204;
				goto out;
			case OBJCAS_RACE:
				break;
			}
			G.notes[wid].raced = true;
			G.notes[wid].raced_at = sim_now();
			if (!G.cfg->old_cas) {
				/* the lock first: a newer epoch may have deleted the
				 * object or rewritten the same bytes */
				if (replica_load(r, sim_now()) < 0) {
					status = 503;
					goto out;
				}
				if (t < r->e->high_water || lockreg_epoch_released(r->e, t)) {
					status = 409;
					goto out;
				}
			}
			in.after_race = true;
			st.action = OBJCAS_HEAD;
			continue;
		case OBJCAS_GONE:
			status = 204;
			goto out;
		case OBJCAS_STALE:
			status = 409;
			goto out;
		default:
			status = 503;
			goto out;
		}
	}
out:
	store_result_clear(&res);
	return status;
}

static int replica_write(struct replica *r, const char *key, uint64_t t, const char *body,
			 bool del, unsigned long wid)
{
	struct fence_input in;
	struct fence_decision d;
	struct objcache_entry ce;
	bool looked_up = false, found = false;
	int64_t arrived = sim_now();

	r->last_used = arrived;
	G.notes[wid].arrived = arrived;
	if (G.cfg->unfenced) {
		struct store_result res = STORE_RESULT_INIT;
		int st = status_of(send_write(r, key, t, body, del, wid, NULL, &res));

		store_result_clear(&res);
		return st;
	}
	if (G.cfg->old_idle) {
		if (!r->e->loaded && replica_load(r, arrived) < 0)
			return 503;
	} else if (!lockreg_fresh_enough(r->e, arrived) &&
		   replica_load(r, arrived - G.cfg->refresh_ms) < 0) {
		return 503;
	}
	for (int round = 0; round < 3; round++) {
		memset(&in, 0, sizeof(in));
		in.method = del ? "DELETE" : "PUT";
		in.token.status = TOKEN_OK;
		in.token.epoch = t;
		in.current_epoch = r->e->high_water;
		in.lock_file_exists = looked_up ? (found ? FENCE_TRI_YES : FENCE_TRI_NO)
						: FENCE_TRI_UNKNOWN;
		if (t <= r->e->high_water)
			in.epoch_released = lockreg_epoch_released(r->e, t);
		if (objcache_get(r->cache, "b", key, &ce))
			in.object_epoch = ce.epoch;
		fence_decide(&in, &d);
		if (d.raised)
			lockreg_raise(r->e, d.high_water);
		if (d.verdict == FENCE_FORWARD)
			return replica_cas(r, key, t, body, del, wid);
		if (d.verdict != FENCE_NEED_LOOKUP)
			return d.status;
		looked_up = true;
		if (G.cfg->old_idle) {
			if (old_lookup(r, t, &found) < 0)
				return 503;
		} else {
			if (replica_load(r, sim_now()) < 0)
				return 503;
			found = false; /* after a fresh load a T above C has no file */
		}
	}
	return 503;
}

/* ---- workers ------------------------------------------------------------------ */

/* The renewal before issue 7: judged once before it is sent, nothing after. */
static enum lock_code old_renew(struct worker *w, struct lock_grant *g)
{
	struct store_put_opts po = { .cond = STORE_COND_IF_MATCH, .etag = g->etag,
				     .content_type = "application/json" };
	struct store_result res = STORE_RESULT_INIT;
	struct lock_payload p;
	uint64_t latest = 0;
	int64_t send, margin = g->ttl_ms / 10 + 1000 < g->ttl_ms / 2 ? g->ttl_ms / 10 + 1000
								   : g->ttl_ms / 2;
	enum store_code sc;
	char err[256], *body;

	if (lock_latest_epoch(w->lk, &latest, err, sizeof(err)) != LOCK_OK)
		return LOCK_ERR_STORE;
	if (latest != g->epoch)
		return LOCK_LOST;
	send = timesrc_mono_ms(&w->clk.ts);
	if (send >= g->deadline_mono_ms + margin)
		return LOCK_LOST;
	memset(&p, 0, sizeof(p));
	snprintf(p.leader_id, sizeof(p.leader_id), "%s", g->holder);
	snprintf(p.nonce, sizeof(p.nonce), "%s", g->nonce);
	p.validity_ms = g->ttl_ms;
	p.renewals = ++g->renewals;
	body = lock_payload_format(&p);
	if (!body)
		return LOCK_ERR_NOMEM;
	sc = store_put(w->st, g->key, body, strlen(body), &po, &res);
	free(body);
	if (sc == STORE_OK) {
		snprintf(g->etag, sizeof(g->etag), "%s", res.etag);
		g->deadline_mono_ms = send + g->ttl_ms - margin;
	}
	store_result_clear(&res);
	return sc == STORE_OK ? LOCK_OK : store_failed(sc) ? LOCK_ERR_STORE : LOCK_LOST;
}

static void record_hold(struct worker *w, uint64_t epoch, int64_t start, int64_t end)
{
	if (G.nholds < MAX_HOLDS)
		G.holds[G.nholds++] = (struct hold){ epoch, start, end, w->id };
}

static void worker_body(void *arg)
{
	static const char *const keys[KEYS] = { "k0", "k1", "k2" };
	struct worker *w = arg;
	const struct sim_config *cfg = G.cfg;
	struct lock_acquire_opts ao = { .ttl_ms = cfg->ttl_ms };
	char holder[32], body[96], err[256];
	struct lock_grant g;
	enum lock_code rc;

	snprintf(holder, sizeof(holder), "w%d", w->id);
	ao.holder = holder;
	while (!sim_over()) {
		int64_t start, end, last_renew;
		int writes;

		rc = lock_acquire(w->lk, &ao, &g, NULL, err, sizeof(err));
		if (rc != LOCK_OK) {
			sim_sleep(sim_between(50, 800));
			continue;
		}
		G.rep->grants++;
		if (g.epoch < sizeof(G.granted) && G.granted[g.epoch]++) {
			G.rep->twice++;
			sim_violation(G.rep, "epoch %" PRIu64 " handed out twice (worker %d)",
				      g.epoch, w->id);
		}
		start = sim_now();
		end = g.deadline_mono_ms - w->clk.mono_offset_ms;
		last_renew = start;
		writes = (int)sim_between(1, 8);
		for (int i = 0; i < writes && !sim_over(); i++) {
			const char *key = keys[sim_between(0, KEYS - 1)];
			struct replica *r = &G.replicas[sim_between(0, cfg->replicas - 1)];
			bool del = cfg->identical_bodies && sim_chance(150);
			unsigned long wid;
			int st;

			if (sim_now() - last_renew >= cfg->ttl_ms / 3) {
				rc = cfg->old_renew ? old_renew(w, &g)
						    : lock_renew(w->lk, &g, err, sizeof(err));
				last_renew = sim_now();
				if (rc == LOCK_OK) {
					end = g.deadline_mono_ms - w->clk.mono_offset_ms;
				} else if (rc == LOCK_LOST) {
					if (sim_now() < end)
						end = sim_now();
					break;
				}
			}
			/* stopped between its last look at the lease and the
			 * write (GC, SIGSTOP): a zombie does not look again */
			if (sim_chance(80))
				sim_sleep(sim_between(0, 2 * cfg->ttl_ms));
			if (G.next_wid + 1 >= MAX_WIDS)
				break;
			wid = ++G.next_wid;
			G.notes[wid].epoch = g.epoch;
			if (cfg->identical_bodies)
				snprintf(body, sizeof(body), "%c", "AB"[sim_between(0, 1)]);
			else
				snprintf(body, sizeof(body), "w%d-e%" PRIu64 "-%lu", w->id, g.epoch, wid);
			st = replica_write(r, key, g.epoch, body, del, wid);
			if (st >= 200 && st < 300) {
				G.notes[wid].acked = true;
				G.rep->acks++;
			} else {
				G.rep->refused++;
			}
			sim_sleep(sim_between(1, 300));
		}
		if (sim_chance(500)) {
			/* the holder gives up when it decides to release, whatever
			 * the release's answer */
			if (sim_now() < end)
				end = sim_now();
			lock_release(w->lk, &g, err, sizeof(err));
		}
		record_hold(w, g.epoch, start, end);
		sim_sleep(sim_between(10, 500));
	}
	G.running--;
}

/* ---- the checker ------------------------------------------------------------ */

static void check(void)
{
	const struct sim_config *cfg = G.cfg;
	size_t n;
	const struct sim_apply *log = sim_s3_log(&n);

	/* acknowledged writes applied after a newer epoch's write */
	for (int k = 0; k < KEYS; k++) {
		char key[8];
		uint64_t max = 0;

		snprintf(key, sizeof(key), "k%d", k);
		for (size_t i = 0; i < n; i++) {
			const struct sim_apply *a = &log[i];
			const struct wnote *wn;

			if (strcmp(a->key, key) != 0)
				continue;
			if (a->epoch >= max) {
				max = a->epoch;
				continue;
			}
			wn = a->wid ? &G.notes[a->wid] : NULL;
			if (!wn || !wn->acked)
				continue;
			/* the documented window: the newer epoch's lock file was
			 * created after the listing the forwarding replica knew the
			 * lock from (which started at most the refresh interval
			 * before the write arrived, and after its last lost race),
			 * and its writes left the ETag as it was (identical bytes)
			 * or deleted the object. Only possible with identical
			 * bodies or deletes: otherwise every late write is a bug. */
			if (cfg->identical_bodies && !cfg->unfenced && wn->known_c < max &&
			    sim_s3_epoch_created(max) > wn->knowledge_at &&
			    (!wn->raced || wn->knowledge_at >= wn->raced_at)) {
				G.rep->windowed++;
				continue;
			}
			G.rep->late_acks++;
			sim_violation(G.rep, "write %lu of epoch %" PRIu64 " to %s (arrived %" PRId64
				      " ms, forwarded knowing epoch %" PRIu64 ", %s) applied at %" PRId64
				      " ms after epoch %" PRIu64 " wrote it, and acknowledged", a->wid,
				      a->epoch, key, wn->arrived, wn->known_c,
				      wn->raced ? "after a lost race" : "first condition", a->at, max);
		}
	}
	/* acknowledged writes decided on knowledge older than the interval */
	for (unsigned long wid = 1; wid <= G.next_wid; wid++) {
		const struct wnote *wn = &G.notes[wid];

		if (!wn->acked || cfg->unfenced)
			continue;
		for (uint64_t e = wn->epoch + 1; e < sizeof(G.granted); e++) {
			int64_t c = sim_s3_epoch_created(e);

			if (c < 0)
				break;
			if (c < wn->arrived - cfg->refresh_ms) {
				G.rep->stale_decided++;
				sim_violation(G.rep, "write %lu of epoch %" PRIu64 " arrived at %" PRId64
					      " ms and was acknowledged; epoch %" PRIu64 " existed since %"
					      PRId64 " ms", wid, wn->epoch, wn->arrived, e, c);
				break;
			}
		}
	}
	/* two holders at once, by their own clocks */
	for (size_t i = 0; i < G.nholds; i++)
		for (size_t j = i + 1; j < G.nholds; j++) {
			const struct hold *a = &G.holds[i], *b = &G.holds[j];

			if (a->epoch != b->epoch && a->start < b->end && b->start < a->end) {
				G.rep->overlaps++;
				sim_violation(G.rep, "epoch %" PRIu64 " (worker %d, %" PRId64 "-%" PRId64
					      " ms) and epoch %" PRIu64 " (worker %d, %" PRId64 "-%"
					      PRId64 " ms) both held", a->epoch, a->worker, a->start,
					      a->end, b->epoch, b->worker, b->start, b->end);
			}
		}
}

/* ---- one schedule ------------------------------------------------------------ */

void sim_world_run(const struct sim_config *cfg, struct sim_report *rep)
{
	struct lock_options lo = { .prefix = sim_s3_lock_prefix() };
	struct lockreg_config rc = { .refresh_ms = cfg->refresh_ms };
	char err[256];
	const char *why;

	memset(&G, 0, sizeof(G));
	G.cfg = cfg;
	G.rep = rep;
	G.replicas = calloc((size_t)cfg->replicas, sizeof(*G.replicas));
	G.workers = calloc((size_t)cfg->workers, sizeof(*G.workers));
	G.notes = calloc(MAX_WIDS, sizeof(*G.notes));
	if (!G.replicas || !G.workers || !G.notes)
		abort();
	sim_s3_reset(cfg);
	for (int i = 0; i < cfg->replicas; i++) {
		struct replica *r = &G.replicas[i];

		r->id = i;
		sim_clock_init(&r->clk, sim_between(-3000, 3000), sim_between(0, 100000));
		r->st = sim_s3_open(true, &r->clk);
		lo.time = &r->clk.ts;
		r->lk = lock_open(r->st, "sim", &lo, err, sizeof(err));
		r->reg = lockreg_new(&rc, err, sizeof(err));
		r->e = r->reg ? lockreg_get(r->reg, "sim", "bkt", 1, &why) : NULL;
		r->cache = objcache_new(64, NULL);
		if (!r->lk || !r->e || !r->cache)
			abort();
		sim_spawn(refresher, r);
	}
	for (int i = 0; i < cfg->workers; i++) {
		struct worker *w = &G.workers[i];

		w->id = i;
		sim_clock_init(&w->clk, sim_between(-5000, 5000), sim_between(0, 100000));
		w->st = sim_s3_open(true, &w->clk);
		lo.time = &w->clk.ts;
		w->lk = lock_open(w->st, "sim", &lo, err, sizeof(err));
		if (!w->lk)
			abort();
		G.running++;
		sim_spawn(worker_body, w);
	}
	sim_run(cfg->duration_ms);
	check();
	for (int i = 0; i < cfg->replicas; i++) {
		lock_close(G.replicas[i].lk);
		store_close(G.replicas[i].st);
		lockreg_free(G.replicas[i].reg);
		objcache_free(G.replicas[i].cache);
	}
	for (int i = 0; i < cfg->workers; i++) {
		lock_close(G.workers[i].lk);
		store_close(G.workers[i].st);
	}
	free(G.replicas);
	free(G.workers);
	free(G.notes);
}
