/* lockreg.c — the registry of fenced locks: high-water marks, their loads
 * (the freshness rule of lockreg.h: a write waits for a load when what is
 * known is older than the refresh interval; concurrent writes share one),
 * and the background refresh of locks written often enough to earn it
 * (lockreg_refresh_wanted), with every store call
 * serialized per lock on the jobs pool.
 *
 * The decision about a request is not made here (fence.c is), and entries
 * are never evicted: the count is bounded instead. */
#include "lockreg.h"
#include "backendcaps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ops/log.h"

#define LOCKREG_HASH_SIZE 4096
#define LOCKREG_PROBE_PREFIX ".fencegate-selftest/probe-"

struct lockreg_waiter {
	lockreg_loaded_fn cb;
	void *arg;
	struct lockreg_waiter *next;
};

struct lockreg_op {
	lockreg_run_fn run;
	lockreg_done_fn done;
	void *arg;
	struct lockreg_entry *e;
	struct lockreg_op *next;
};

struct lockreg {
	struct event_base *base;
	struct jobs *jobs;
	char *s3_endpoint;
	char *data_dir;
	char *lock_store;
	char *region;
	const char *dialect;        /* static (a dialect row's name), or NULL */
	size_t max_locks;
	long refresh_ms;
	long active_ms;
	bool self_test;
	struct fencegate_metrics *metrics;
	struct lockmarks *marks;   /* shared with other workers; not owned */
	struct statusboard *board; /* shared; not owned */
	struct lockreg_entry *table[LOCKREG_HASH_SIZE]; /* chained by hnext */
	struct lockreg_entry *first, *last;
	size_t count;
	/* entries whose store is open, most recently used first (loop thread) */
	struct lockreg_entry *lru_head, *lru_tail;
	size_t open_stores;
	struct event *refresh_ev;
};

int64_t lockreg_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t lockreg_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* This entry's C only (a max). Returns 1 if raised. */
static int raise_local(struct lockreg_entry *e, uint64_t epoch)
{
	if (epoch <= e->high_water)
		return 0;
	__atomic_store_n(&e->high_water, epoch, __ATOMIC_RELAXED); /* lockreg_high_water */
	return 1;
}

/* What the other workers learned, into this entry's C. */
static void pull_mark(struct lockreg_entry *e)
{
	if (e->mark)
		raise_local(e, lockmark_read(e->mark));
}

int lockreg_raise(struct lockreg_entry *e, uint64_t epoch)
{
	lockmark_raise(e->mark, epoch);
	return raise_local(e, epoch);
}

/* What e knows of its lock's state, for the status page (loaded: it
 * comes from a load of the lock's files). */
static void publish(const struct lockreg_entry *e, bool loaded)
{
	if (e->reg && e->reg->board)
		statusboard_note_lock(e->reg->board, e->name, e->state_epoch,
				      lock_state_name(e->state), e->holder, e->lease_end_ms, loaded,
				      lockreg_wall_ms());
}

int lockreg_note(struct lockreg_entry *e, uint64_t epoch, enum lock_state state,
		 int64_t lease_end_ms, const char *holder, int64_t ttl_ms)
{
	int raised = lockreg_raise(e, epoch);

	if (epoch >= e->state_epoch) {
		e->state_epoch = epoch;
		e->state = state;
		e->lease_end_ms = lease_end_ms;
		e->ttl_ms = ttl_ms;
		snprintf(e->holder, sizeof(e->holder), "%s", holder ? holder : "");
		publish(e, false);
	}
	if (state == LOCK_STATE_RELEASED && epoch > e->released_epoch)
		e->released_epoch = epoch;
	if (state == LOCK_STATE_RELEASED)
		lockmark_note_released(e->mark, epoch); /* for the other workers */
	return raised;
}

uint64_t lockreg_high_water(const struct lockreg_entry *e)
{
	uint64_t c = __atomic_load_n(&e->high_water, __ATOMIC_RELAXED);
	uint64_t shared = lockmark_read(e->mark);

	return shared > c ? shared : c;
}

int lockreg_epoch_released(const struct lockreg_entry *e, uint64_t epoch)
{
	return epoch != 0 && (e->released_epoch == epoch || lockmark_released(e->mark) == epoch);
}

int lockreg_epoch_lapsed(const struct lockreg_entry *e, uint64_t epoch, int64_t now_ms)
{
	if (epoch == 0 || e->state_epoch != epoch)
		return 0;
	if (e->state == LOCK_STATE_LAPSED)
		return 1;
	return e->state == LOCK_STATE_HELD && e->lease_end_ms > 0 && now_ms >= e->lease_end_ms;
}

void lockreg_note_info(struct lockreg_entry *e, const struct lock_info *info)
{
	int64_t lease_end = 0;

	/* the epoch mark is part of C: files deleted out of band never lower
	 * it, and an epoch minted above them is the next one, not a forgery */
	lockreg_raise(e, info->mark);
	if (info->epoch == 0)
		return;
	if (info->state == LOCK_STATE_HELD || info->state == LOCK_STATE_UNREADABLE)
		lease_end = lockreg_wall_ms() + info->remaining_ms;
	lockreg_note(e, info->epoch, info->state, lease_end, info->payload.leader_id,
		     info->payload.validity_ms);
}

void lockreg_touch(struct lockreg_entry *e)
{
	lockreg_touch_at(e, lockreg_mono_ms());
}

void lockreg_touch_at(struct lockreg_entry *e, int64_t now_ms)
{
	e->use_gap_ms = e->used ? now_ms - e->last_used_ms : INT64_MAX;
	e->last_used_ms = now_ms;
	e->used = true;
}

int lockreg_refresh_wanted(const struct lockreg_entry *e, int64_t now_ms, long refresh_ms,
			   long active_ms)
{
	if (!e->loaded || !e->used || refresh_ms <= 0)
		return 0;
	return e->use_gap_ms <= refresh_ms && now_ms - e->last_used_ms <= active_ms &&
	       now_ms - e->last_refresh_ms >= refresh_ms / 2;
}

/* ---- the registry ---------------------------------------------------- */

static unsigned name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % LOCKREG_HASH_SIZE;
}

static void refresh_cb(evutil_socket_t fd, short what, void *arg);

struct lockreg *lockreg_new(const struct lockreg_config *cfg, char *err, size_t errlen)
{
	struct lockreg *r = calloc(1, sizeof(*r));
	char probe_prefix[LOCKREG_PREFIX_MAX];
	int fail = 0;

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->base = cfg->base;
	r->jobs = cfg->jobs;
	/* the optional strings, copied */
	fail |= cfg->s3_endpoint && !(r->s3_endpoint = strdup(cfg->s3_endpoint));
	fail |= cfg->data_dir && !(r->data_dir = strdup(cfg->data_dir));
	fail |= cfg->lock_store && !(r->lock_store = strdup(cfg->lock_store));
	fail |= cfg->region && !(r->region = strdup(cfg->region));
	r->dialect = cfg->dialect;
	r->max_locks = cfg->max_locks ? cfg->max_locks : LOCKREG_DEFAULT_MAX_LOCKS;
	r->refresh_ms = cfg->refresh_ms ? cfg->refresh_ms : 1000;
	r->active_ms = cfg->active_ms ? cfg->active_ms : 2 * r->refresh_ms;
	r->self_test = cfg->self_test;
	r->metrics = cfg->metrics;
	r->marks = cfg->marks;
	r->board = cfg->board;
	if (fail)
		goto nomem;
	if (r->lock_store &&
	    lockreg_store_prefix(r->lock_store, "x", probe_prefix, sizeof(probe_prefix)) < 0) {
		snprintf(err, errlen, "lock store \"%.200s\" is neither s3://BUCKET[/ROOT] nor "
			 "file:///DIR", r->lock_store);
		lockreg_free(r);
		return NULL;
	}
	if (!r->s3_endpoint && !r->data_dir && !r->lock_store && r->jobs) {
		snprintf(err, errlen, "lockreg: neither an S3 endpoint, a data directory nor a lock store");
		lockreg_free(r);
		return NULL;
	}
	if (r->base && r->jobs && r->refresh_ms > 0) {
		long period = r->refresh_ms / 2 > 0 ? r->refresh_ms / 2 : 1;
		struct timeval tv = { period / 1000, (period % 1000) * 1000 };

		r->refresh_ev = event_new(r->base, -1, EV_PERSIST, refresh_cb, r);
		if (!r->refresh_ev || event_add(r->refresh_ev, &tv) < 0)
			goto nomem;
	}
	return r;
nomem:
	snprintf(err, errlen, "out of memory");
	lockreg_free(r);
	return NULL;
}

void lockreg_free(struct lockreg *r)
{
	struct lockreg_entry *e, *next;

	if (!r)
		return;
	if (r->refresh_ev)
		event_free(r->refresh_ev);
	for (e = r->first; e; e = next) {
		next = e->next;
		while (e->waiters || e->waiters_next) {
			struct lockreg_waiter *w = e->waiters ? e->waiters : e->waiters_next;

			if (w == e->waiters)
				e->waiters = w->next;
			else
				e->waiters_next = w->next;
			free(w);
		}
		while (e->ops_head) {
			struct lockreg_op *op = e->ops_head;

			e->ops_head = op->next;
			free(op);
		}
		lock_close(e->lk);
		store_close(e->st);
		free(e);
	}
	free(r->s3_endpoint);
	free(r->data_dir);
	free(r->lock_store);
	free(r->region);
	free(r);
}

/* Finds lock name, or creates it (create set) with the given placement:
 * bucket (may be "") and either store_url + prefix or the bucket default. */
static struct lockreg_entry *entry_get(struct lockreg *r, const char *name, const char *bucket,
				       const char *store_url, const char *prefix, int create,
				       const char **why)
{
	unsigned h = name_hash(name);
	struct lockreg_entry *e;

	for (e = r->table[h]; e; e = e->hnext) {
		if (strcmp(e->name, name) == 0) {
			pull_mark(e);
			return e;
		}
	}
	if (!create)
		return NULL;
	if (r->count >= r->max_locks) {
		if (why)
			*why = "full";
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		if (why)
			*why = "out of memory";
		return NULL;
	}
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->bucket, sizeof(e->bucket), "%s", bucket ? bucket : "");
	if (store_url) {
		int n1 = snprintf(e->store_url, sizeof(e->store_url), "%s", store_url);
		int bad = n1 < 0 || (size_t)n1 >= sizeof(e->store_url);

		if (prefix) {
			int n2 = snprintf(e->prefix, sizeof(e->prefix), "%s", prefix);

			bad = bad || n2 < 0 || (size_t)n2 >= sizeof(e->prefix) || !prefix[0];
		} else {
			bad = bad || lockreg_store_prefix(store_url, name, e->prefix,
							  sizeof(e->prefix)) < 0;
		}
		if (bad) {
			free(e);
			if (why)
				*why = "invalid";
			return NULL;
		}
	} else {
		lockreg_default_prefix(name, e->prefix, sizeof(e->prefix));
	}
	e->reg = r;
	e->mark = lockmarks_get(r->marks, name);
	pull_mark(e);
	e->state = LOCK_STATE_FREE;
	e->use_gap_ms = INT64_MAX;
	e->barrier = (struct barrier)BARRIER_INIT;
	e->hnext = r->table[h];
	r->table[h] = e;
	if (r->last)
		r->last->next = e;
	else
		r->first = e;
	r->last = e;
	r->count++;
	return e;
}

struct lockreg_entry *lockreg_get(struct lockreg *r, const char *name, const char *bucket,
				  int create, const char **why)
{
	if (why)
		*why = NULL;
	if (!name || !lock_name_valid(name) ||
	    (!r->lock_store && (!bucket || !lockreg_bucket_valid(bucket)))) {
		if (why)
			*why = "invalid";
		return NULL;
	}
	if (r->lock_store)
		return entry_get(r, name, "", r->lock_store, NULL, create, why);
	return entry_get(r, name, bucket, NULL, NULL, create, why);
}

struct lockreg_entry *lockreg_get_at(struct lockreg *r, const char *name, const char *store_url,
				     const char *prefix, int create, const char **why)
{
	if (why)
		*why = NULL;
	if (!name || !lock_name_valid(name) || !store_url) {
		if (why)
			*why = "invalid";
		return NULL;
	}
	return entry_get(r, name, "", store_url, prefix, create, why);
}

int lockreg_in_bucket(const struct lockreg_entry *e, const char *bucket)
{
	if (!e->store_url[0])
		return strcmp(e->bucket, bucket) == 0;
	return lockreg_url_in_bucket(e->store_url, bucket);
}

void lockreg_adopt_shared(struct lockreg *r)
{
	size_t n;
	char **names = r->lock_store ? NULL : lockmarks_names(r->marks, &n);

	for (size_t i = 0; names && i < n; i++)
		lockreg_get(r, names[i], names[i], 1, NULL); /* configured: already here */
	if (names)
		lockmarks_names_free(names, n);
}

struct lockreg_entry *lockreg_first(struct lockreg *r)
{
	return r->first;
}

size_t lockreg_count(const struct lockreg *r)
{
	return r->count;
}

/* ---- serialized work ------------------------------------------------- */

/* Worker side: opens the entry's store and lock on first use. */
/* The store URL of e (url) and its client settings (sc); *bucket_dir set
 * when the store is a bucket directory of the embedded store. */
static void store_url_of(struct lockreg_entry *e, struct store_config *sc, char *url,
			 size_t urllen, bool *bucket_dir)
{
	struct lockreg *r = e->reg;

	memset(sc, 0, sizeof(*sc));
	*bucket_dir = false;
	if (e->store_url[0] && strncmp(e->store_url, "s3://", 5) == 0 &&
	    !r->s3_endpoint && r->data_dir) {
		/* embedded S3 mode: bucket B is the directory DATA/B (the
		 * root is part of the prefix) */
		snprintf(url, urllen, "file://%s/%.*s", r->data_dir,
			 (int)strcspn(e->store_url + 5, "/"), e->store_url + 5);
		*bucket_dir = true;
	} else if (e->store_url[0]) {
		/* its own store; an s3:// one on the S3 upstream in S3
		 * mode, else on AWS_ENDPOINT_URL / AWS */
		snprintf(url, urllen, "%s", e->store_url);
		sc->endpoint = r->s3_endpoint;
		sc->region = r->region;
		sc->dialect = r->dialect;
		sc->path_style = -1;
	} else if (r->s3_endpoint) {
		snprintf(url, urllen, "s3://%s", e->bucket);
		sc->endpoint = r->s3_endpoint;
		sc->region = r->region;
		sc->dialect = r->dialect;
		sc->path_style = 1;
	} else {
		snprintf(url, urllen, "file://%s/%s", r->data_dir, e->bucket);
		*bucket_dir = true;
	}
}

static void ensure_open(struct lockreg_entry *e, struct lockreg_io *io, char *err, size_t errlen)
{
	struct store_config sc;
	struct lock_options lo;
	char url[LOCKREG_STORE_MAX + 4200];
	bool bucket_dir;
	struct stat sb;

	io->st = NULL;
	io->lk = NULL;
	io->err = NULL;
	io->no_bucket = false;
	store_url_of(e, &sc, url, sizeof(url), &bucket_dir);
	/* a bucket of the embedded store exists when its directory does: a
	 * lock in a bucket nobody created must not create it (S3 answers
	 * NoSuchBucket), and one deleted since gets a fresh store later */
	if (bucket_dir && (lstat(url + 7, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
		lock_close(e->lk);
		store_close(e->st);
		e->lk = NULL;
		e->st = NULL;
		snprintf(err, errlen, "the bucket of lock \"%s\" does not exist", e->name);
		io->err = err;
		io->no_bucket = true;
		return;
	}
	if (!e->st) {
		sc.url = url;
		sc.timeout_ms = 10000;
		e->st = store_open(&sc, err, errlen);
		if (!e->st) {
			io->err = err;
			return;
		}
		if (e->lk) /* closed while idle (stores_after_op): what it knows stays */
			lock_set_store(e->lk, e->st);
	}
	if (!e->lk) {
		memset(&lo, 0, sizeof(lo));
		lo.prefix = e->prefix;
		e->lk = lock_open(e->st, e->name, &lo, err, errlen);
		if (!e->lk) {
			io->err = err;
			return;
		}
	}
	io->st = e->st;
	io->lk = e->lk;
}

static void op_run(void *arg)
{
	struct lockreg_op *op = arg;
	struct lockreg_io io;
	char err[256];

	err[0] = '\0';
	ensure_open(op->e, &io, err, sizeof(err));
	if (io.st)
		io.st->deadline_mono_ms = lockreg_mono_ms() + LOCKREG_OP_MS;
	op->run(op->e, &io, op->arg);
	if (io.st)
		io.st->deadline_mono_ms = 0;
}

static void op_start(struct lockreg_entry *e);

bool lockreg_bucket_missing(struct store *st)
{
	struct store_list_page page = {0};
	struct store_result res = STORE_RESULT_INIT;
	bool missing;

	if (!st || strcmp(st->ops->scheme, "s3") != 0)
		return false;
	missing = store_list(st, store_root(st), NULL, NULL, 1, &page, &res) == STORE_NOT_FOUND &&
		  strcmp(res.err_code, "NoSuchBucket") == 0;
	store_list_page_free(&page);
	store_result_clear(&res);
	return missing;
}

/* ---- open stores: at most LOCKREG_OPEN_STORES between operations ------- */

static void lru_unlink(struct lockreg *r, struct lockreg_entry *e)
{
	if (!e->st_listed)
		return;
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		r->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		r->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
	e->st_listed = false;
	r->open_stores--;
}

/* After an operation on e (loop thread, e idle): e's store, if open, is
 * the most recently used; then the least recently used idle stores past
 * the bound are closed. A busy entry's or one with queued operations is
 * skipped: its job may be using the store on a worker thread. */
static void stores_after_op(struct lockreg *r, struct lockreg_entry *e)
{
	struct lockreg_entry *v, *prev;

	lru_unlink(r, e);
	if (e->st) {
		e->lru_next = r->lru_head;
		if (r->lru_head)
			r->lru_head->lru_prev = e;
		else
			r->lru_tail = e;
		r->lru_head = e;
		e->st_listed = true;
		r->open_stores++;
	}
	for (v = r->lru_tail; v && r->open_stores > LOCKREG_OPEN_STORES; v = prev) {
		prev = v->lru_prev;
		if (v->busy || v->ops_head)
			continue;
		lru_unlink(r, v);
		if (v->lk)
			lock_set_store(v->lk, NULL);
		store_close(v->st);
		v->st = NULL;
	}
}

size_t lockreg_open_stores(const struct lockreg *r)
{
	return r->open_stores;
}

static void op_done(void *arg)
{
	struct lockreg_op *op = arg;
	struct lockreg_entry *e = op->e;

	e->busy = false;
	stores_after_op(e->reg, e);
	if (op->done)
		op->done(e, op->arg);
	free(op);
	op_start(e);
}

static void op_start(struct lockreg_entry *e)
{
	struct lockreg_op *op;

	while (!e->busy && e->ops_head) {
		op = e->ops_head;
		e->ops_head = op->next;
		if (!e->ops_head)
			e->ops_tail = NULL;
		e->n_ops--;
		op->next = NULL;
		e->busy = true;
		if (jobs_submit(e->reg->jobs, op_run, op_done, op) < 0) {
			/* the pool refuses (shutting down): run done() with an
			 * error the run() never set; callers treat it as failed */
			struct lockreg_io io = { NULL, NULL, "the worker pool is shutting down", false };

			e->busy = false;
			op->run(e, &io, op->arg);
			if (op->done)
				op->done(e, op->arg);
			free(op);
		}
	}
}

int lockreg_submit(struct lockreg *r, struct lockreg_entry *e, lockreg_run_fn run,
		   lockreg_done_fn done, void *arg)
{
	struct lockreg_op *op;

	if (!r->jobs)
		return -1;
	if (e->n_ops >= LOCKREG_QUEUE_MAX)
		return LOCKREG_FULL;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -1;
	op->run = run;
	op->done = done;
	op->arg = arg;
	op->e = e;
	if (e->ops_tail)
		e->ops_tail->next = op;
	else
		e->ops_head = op;
	e->ops_tail = op;
	e->n_ops++;
	op_start(e);
	return 0;
}

/* ---- loading --------------------------------------------------------- */

/* Knowledge loaded from a listing that started at load_started_ms is as of
 * then: loads are timed by their start, never by their answer. */

struct load_job {
	struct lock_info info;
	enum lock_code code;
	int64_t took_ms;    /* the store calls' time, on the worker */
	bool no_bucket;     /* failed: the bucket does not exist */
	char err[256];
	char mark_err[256]; /* the epoch mark could not be raised ("" none) */
};

/* Raises the store's epoch mark to what this proxy knows was minted (the
 * latest file listed, C: epochs it granted, files created through its S3
 * API, and stamps it saw), when the mark is below: the mark then survives
 * a deletion of the files even for epochs that clients made without
 * writing it (the TypeScript client; a lock file written through the S3
 * API, whose mark the guard refuses to clients). A failure is kept for
 * the log line of the load but does not fail it: the next load retries. */
static void repair_mark(struct lockreg_entry *e, struct lockreg_io *io, struct load_job *j)
{
	uint64_t known = lockreg_high_water(e);
	char err[256];

	if (j->info.mark > known)
		known = j->info.mark;   /* >= the latest file listed */
	if (known <= e->mark_synced)
		return;                 /* the steady state: no I/O */
	/* read it first: the client that made the epoch has usually raised
	 * it already (one GET, no conditional write that would lose) */
	if (lock_mark_read(io->lk, NULL, err, sizeof(err)) != LOCK_OK ||
	    lock_mark_raise(io->lk, known, err, sizeof(err)) != LOCK_OK) {
		snprintf(j->mark_err, sizeof(j->mark_err), "%s", err);
		return;
	}
	e->mark_synced = known;  /* worker-side: only jobs of e touch it */
}

static void load_run(struct lockreg_entry *e, struct lockreg_io *io, void *arg)
{
	struct load_job *j = arg;
	int64_t t0 = lockreg_mono_ms();

	if (!io->lk) {
		j->code = LOCK_ERR_STORE;
		snprintf(j->err, sizeof(j->err), "%s", io->err ? io->err : "no store");
		j->no_bucket = io->no_bucket;
		return;
	}
	if (e->reg->self_test && !e->tested && !lockmark_store_tested(e->mark)) {
		struct backend_report rep;

		j->code = lock_check_store_report(io->st, LOCKREG_PROBE_PREFIX, &rep, j->err,
						  sizeof(j->err));
		if (j->code == LOCK_OK || j->code == LOCK_ERR_UNSAFE)
			backendcaps_publish(&rep, e->reg->dialect); /* what fencing refuses */
		if (j->code == LOCK_OK) {
			unsigned missing = backend_caps_missing(backendcaps_of(&rep, e->reg->dialect),
								BACKEND_OP_LOCK);

			if (missing) { /* distrusted by the configured dialect */
				snprintf(j->err, sizeof(j->err), "%s (upstream.dialect \"%s\")",
					 backend_cap_lacking(missing), e->reg->dialect);
				j->code = LOCK_ERR_UNSAFE;
			}
		}
		if (j->code == LOCK_OK) {
			e->tested = true; /* worker-side flag: only jobs of e touch it */
			lockmark_set_store_tested(e->mark); /* and for the other workers */
		}
	}
	if (j->code == LOCK_OK)
		j->code = lock_status(io->lk, &j->info, j->err, sizeof(j->err));
	if (j->code == LOCK_OK)
		repair_mark(e, io, j);
	if (j->code == LOCK_ERR_STORE)
		j->no_bucket = lockreg_bucket_missing(io->st);
	j->took_ms = lockreg_mono_ms() - t0;
}

static int start_load(struct lockreg_entry *e);

static void call_waiters(struct lockreg_entry *e, struct lockreg_waiter *w, int ok)
{
	while (w) {
		struct lockreg_waiter *next = w->next;

		e->n_waiters--;
		w->cb(e, ok, w->arg);
		free(w);
		w = next;
	}
}

static void load_done(struct lockreg_entry *e, void *arg)
{
	struct load_job *j = arg;
	struct lockreg_waiter *w;
	int ok = j->code == LOCK_OK;

	e->loading = false;
	if (e->reg->metrics) {
		metrics_observe(e->reg->metrics->store_seconds, (const char *[]){ "load" },
				(double)j->took_ms / 1000.0);
		if (!ok)
			metrics_add(e->reg->metrics->store_errors, (const char *[]){ "load" }, 1);
	}
	if (j->mark_err[0])
		log_warn("lock \"%s\": the epoch mark was not raised: %s", e->name, j->mark_err);
	if (ok) {
		lockreg_note_info(e, &j->info);
		e->loaded = true;
		e->load_failed = false;
		e->load_no_bucket = false;
		e->last_refresh_ms = e->load_started_ms;
		publish(e, true);
	} else {
		e->load_failed = true;
		e->load_no_bucket = j->no_bucket;
		snprintf(e->load_err, sizeof(e->load_err), "%s", j->err);
		if (e->reg->board)
			statusboard_note_load_failed(e->reg->board, e->name, lockreg_wall_ms());
	}
	free(j);
	pull_mark(e);
	w = e->waiters;
	e->waiters = NULL;
	call_waiters(e, w, ok);
	if (e->waiters_next && !e->loading) {
		/* asked for while this load ran: they need one that starts later */
		e->waiters = e->waiters_next;
		e->waiters_next = NULL;
		if (start_load(e) < 0) {
			w = e->waiters;
			e->waiters = NULL;
			snprintf(e->load_err, sizeof(e->load_err), "out of memory");
			call_waiters(e, w, 0);
		}
	}
}

static int start_load(struct lockreg_entry *e)
{
	struct load_job *j;

	if (e->loading)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -1;
	e->loading = true;
	/* queued behind other work of this lock, the listing starts no
	 * earlier than now: a conservative start */
	e->load_started_ms = lockreg_mono_ms();
	if (lockreg_submit(e->reg, e, load_run, load_done, j) < 0) {
		e->loading = false;
		free(j);
		return -1;
	}
	return 0;
}

int lockreg_fresh_enough(const struct lockreg_entry *e, int64_t now_ms)
{
	long max_age = e->reg->refresh_ms;

	if (!e->loaded)
		return 0;
	return max_age < 0 || now_ms - e->last_refresh_ms <= max_age;
}

int lockreg_when_loaded(struct lockreg *r, struct lockreg_entry *e, lockreg_loaded_fn cb,
			void *arg)
{
	return lockreg_when_current(r, e, e->strict, cb, arg);
}

int lockreg_when_current(struct lockreg *r, struct lockreg_entry *e, bool fresh,
			 lockreg_loaded_fn cb, void *arg)
{
	struct lockreg_waiter *w;
	int64_t now = lockreg_mono_ms();
	bool join;

	if (!r->jobs) /* no I/O (unit tests): what is loaded is all there is */
		return e->loaded && !fresh ? 1 : -1;
	if (!fresh && lockreg_fresh_enough(e, now)) {
		pull_mark(e);
		return 1;
	}
	if (e->n_waiters >= LOCKREG_QUEUE_MAX)
		return LOCKREG_FULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -1;
	e->n_waiters++;
	w->cb = cb;
	w->arg = arg;
	/* a running load serves this request if it started recently enough
	 * (never for a fresh one: it may have listed before the request came) */
	join = e->loading && !fresh && (r->refresh_ms < 0 || now - e->load_started_ms <= r->refresh_ms);
	if (e->loading && !join) {
		w->next = e->waiters_next;
		e->waiters_next = w;
		return 0;
	}
	w->next = e->waiters;
	e->waiters = w;
	if (start_load(e) < 0) {
		e->waiters = w->next;
		e->n_waiters--;
		free(w);
		return -1;
	}
	return 0;
}

/* Background refresh of the locks written often enough to earn it
 * (lockreg_refresh_wanted), so that their writes rarely wait for a load. */
static void refresh_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lockreg *r = arg;
	int64_t now = lockreg_mono_ms();

	(void)fd;
	(void)what;
	for (struct lockreg_entry *e = r->first; e; e = e->next) {
		if (e->loading || e->busy ||
		    !lockreg_refresh_wanted(e, now, r->refresh_ms, r->active_ms))
			continue;
		if (start_load(e) < 0)
			return;
	}
}
