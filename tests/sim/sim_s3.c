/* sim_s3.c — the simulation's S3: one bucket in memory behind the store
 * interface (lock/store/store.h), with S3's conditional writes (If-None-Match
 * "*", If-Match on PUT and DELETE: 412/404, now and then 409
 * ConditionalRequestConflict), ETags that are a hash of the content (so an
 * identical rewrite keeps its ETag, as MD5 does), Date and Last-Modified
 * in whole seconds, and per request a delay on the way in and on the way
 * out (sometimes a lag spike), a 5xx, a lost request or a lost answer
 * after the write applied. A call applies atomically at one simulated
 * instant between its two delays.
 *
 * It logs every applied write or delete of a data key (for the checker)
 * and the creation time of every epoch file. It does not model
 * pagination beyond max-keys, versions or multipart. */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "locks/sim/lock-"
#define MAX_EPOCHS 4096

struct obj {
	char *key;
	char *body;
	size_t len;
	char etag[24];
	int64_t last_modified;   /* Unix s */
	uint64_t epoch;          /* fencing-epoch metadata */
	unsigned long wid;       /* sim-wid metadata */
};

static struct {
	const struct sim_config *cfg;
	struct obj *objs;        /* sorted by key */
	size_t n, cap;
	struct sim_apply *log;
	size_t nlog, caplog;
	int64_t created[MAX_EPOCHS];
} W;

struct simstore {
	struct store base;
	bool faults;
	const struct sim_clock *clk;  /* the caller's, for deadline_mono_ms */
	bool cut;                     /* this call ran into the deadline */
};

static const struct store_ops sim_ops;

void sim_s3_reset(const struct sim_config *cfg)
{
	for (size_t i = 0; i < W.n; i++) {
		free(W.objs[i].key);
		free(W.objs[i].body);
	}
	free(W.objs);
	free(W.log);
	memset(&W, 0, sizeof(W));
	W.cfg = cfg;
	for (size_t i = 0; i < MAX_EPOCHS; i++)
		W.created[i] = -1;
}

const char *sim_s3_lock_prefix(void)
{
	return PREFIX;
}

const struct sim_apply *sim_s3_log(size_t *n)
{
	*n = W.nlog;
	return W.log;
}

int64_t sim_s3_epoch_created(uint64_t epoch)
{
	return epoch < MAX_EPOCHS ? W.created[epoch] : -1;
}

static uint64_t key_epoch(const char *key)
{
	size_t pl = strlen(PREFIX);

	if (strncmp(key, PREFIX, pl) != 0)
		return 0;
	return strtoull(key + pl, NULL, 10);
}

static ssize_t find(const char *key)
{
	size_t lo = 0, hi = W.n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(W.objs[mid].key, key);

		if (c == 0)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -((ssize_t)lo) - 1;
}

static void log_apply(const char *key, uint64_t epoch, unsigned long wid, bool del)
{
	struct sim_apply *a;

	if (strncmp(key, "locks/", 6) == 0)
		return;
	if (W.nlog == W.caplog) {
		W.caplog = W.caplog ? W.caplog * 2 : 256;
		W.log = realloc(W.log, W.caplog * sizeof(*W.log));
		if (!W.log)
			abort();
	}
	a = &W.log[W.nlog++];
	memset(a, 0, sizeof(*a));
	snprintf(a->key, sizeof(a->key), "%s", key);
	a->epoch = epoch;
	a->wid = wid;
	a->at = sim_now();
	a->is_delete = del;
}

static void content_etag(const char *body, size_t len, char *out, size_t outlen)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)body[i]) * 1099511628211ULL;
	snprintf(out, outlen, "\"%016llx\"", (unsigned long long)h);
}

static void write_obj(const char *key, const void *body, size_t len, uint64_t epoch,
		      unsigned long wid)
{
	ssize_t at = find(key);
	struct obj *o;

	if (at < 0) {
		size_t pos = (size_t)(-at - 1);

		if (W.n == W.cap) {
			W.cap = W.cap ? W.cap * 2 : 64;
			W.objs = realloc(W.objs, W.cap * sizeof(*W.objs));
			if (!W.objs)
				abort();
		}
		memmove(W.objs + pos + 1, W.objs + pos, (W.n - pos) * sizeof(*W.objs));
		W.n++;
		o = &W.objs[pos];
		memset(o, 0, sizeof(*o));
		o->key = strdup(key);
		if (key_epoch(key) && key_epoch(key) < MAX_EPOCHS && W.created[key_epoch(key)] < 0)
			W.created[key_epoch(key)] = sim_now();
	} else {
		o = &W.objs[at];
		free(o->body);
	}
	o->body = malloc(len + 1);
	if (!o->body || !o->key)
		abort();
	memcpy(o->body, body, len);
	o->body[len] = '\0';
	o->len = len;
	content_etag(o->body, len, o->etag, sizeof(o->etag));
	o->last_modified = (sim_epoch_wall_ms() + sim_now()) / 1000;
	o->epoch = epoch;
	o->wid = wid;
}

static void remove_obj(size_t at)
{
	free(W.objs[at].key);
	free(W.objs[at].body);
	memmove(W.objs + at, W.objs + at + 1, (W.n - at - 1) * sizeof(*W.objs));
	W.n--;
}

/* ---- faults and delays ----------------------------------------------------- */

enum fate { F_OK, F_SERVER, F_LOST_REQUEST, F_LOST_ANSWER, F_CONFLICT };

static int64_t one_way(void)
{
	if (sim_chance(15))
		return sim_between(200, 3000); /* a lag spike, or a paused sender */
	return sim_between(1, 25);
}

static enum fate fate_of(const struct simstore *s, bool conditional_write)
{
	unsigned r;

	if (!s->faults)
		return F_OK;
	r = (unsigned)(sim_rand() % 1000);
	if (r < 8)
		return F_SERVER;
	if (r < 13)
		return F_LOST_REQUEST;
	if (r < 20)
		return F_LOST_ANSWER;
	if (r < 25 && conditional_write)
		return F_CONFLICT;
	return F_OK;
}

static enum store_code answer(struct store *st, struct store_result *res, enum store_code code,
			      int status, const char *s3code)
{
	store_result_clear(res);
	res->code = code;
	res->http_status = status;
	res->server_date = (sim_epoch_wall_ms() + sim_now()) / 1000;
	res->attempts = 1;
	if (s3code)
		snprintf(res->err_code, sizeof(res->err_code), "%s", s3code);
	st->requests++;
	return code;
}

/* Sleeps ms, or until the caller's deadline (store.h) if that comes
 * first, which cuts the call. */
static void travel(struct simstore *s, int64_t ms)
{
	if (s->base.deadline_mono_ms && s->clk) {
		int64_t left = s->base.deadline_mono_ms - (sim_now() + s->clk->mono_offset_ms);

		if (left <= ms) {
			sim_sleep(left > 0 ? left : 0);
			s->cut = true;
			return;
		}
	}
	sim_sleep(ms);
}

/* The way in: a delay, then the fate decides whether the call applies (a
 * call cut by the deadline never arrives). */
static enum fate arrive(struct store *st, bool conditional_write)
{
	struct simstore *s = (struct simstore *)st;
	enum fate f = fate_of(s, conditional_write);

	s->cut = false;
	travel(s, one_way());
	return s->cut ? F_LOST_REQUEST : f;
}

/* The way out; failures that lost the answer take a client timeout. */
static enum store_code depart(struct store *st, enum fate f, enum store_code code,
			      struct store_result *res)
{
	struct simstore *s = (struct simstore *)st;

	if (!s->cut)
		travel(s, f == F_LOST_ANSWER || f == F_LOST_REQUEST ? sim_between(500, 2000)
								     : one_way());
	if (s->cut || f == F_LOST_ANSWER || f == F_LOST_REQUEST)
		return answer(st, res, STORE_ERR_IO, 0, NULL);
	return code;
}

/* ---- the operations -------------------------------------------------------- */

static void fill_obj(struct store_result *res, const struct obj *o, bool body)
{
	char num[24];

	snprintf(res->etag, sizeof(res->etag), "%s", o->etag);
	res->last_modified = o->last_modified;
	res->content_length = (int64_t)o->len;
	if (body) {
		res->body = malloc(o->len + 1);
		if (!res->body)
			abort();
		memcpy(res->body, o->body, o->len + 1);
		res->body_len = o->len;
	}
	if (o->epoch) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)o->epoch);
		res->meta[0].name = strdup("fencing-epoch");
		res->meta[0].value = strdup(num);
		if (!res->meta[0].name || !res->meta[0].value)
			abort();
		res->nmeta = 1;
	}
}

static enum store_code read_obj(struct store *st, const char *key, struct store_result *res,
				bool body)
{
	enum fate f = arrive(st, false);
	enum store_code code;
	ssize_t at;

	if (f == F_SERVER) {
		code = answer(st, res, STORE_ERR_SERVER, 500, "InternalError");
	} else if (f == F_LOST_REQUEST) {
		code = STORE_ERR_IO;
	} else if ((at = find(key)) < 0) {
		code = answer(st, res, STORE_NOT_FOUND, 404, "NoSuchKey");
	} else {
		code = answer(st, res, STORE_OK, 200, NULL);
		fill_obj(res, &W.objs[at], body);
	}
	return depart(st, f, code, res);
}

static enum store_code sim_get(struct store *st, const char *key, struct store_result *res)
{
	return read_obj(st, key, res, true);
}

static enum store_code sim_head(struct store *st, const char *key, struct store_result *res)
{
	return read_obj(st, key, res, false);
}

static const char *meta_of(const struct store_put_opts *o, const char *name)
{
	for (size_t i = 0; o && i < o->nmeta; i++)
		if (strcmp(o->meta[i].name, name) == 0)
			return o->meta[i].value;
	return NULL;
}

static enum store_code sim_put(struct store *st, const char *key, const void *body, size_t len,
			       const struct store_put_opts *opts, struct store_result *res)
{
	bool cond = opts && opts->cond != STORE_COND_NONE;
	enum fate f = arrive(st, cond);
	const char *ep = meta_of(opts, "fencing-epoch"), *wid = meta_of(opts, "sim-wid");
	enum store_code code;
	ssize_t at = find(key);

	if (f == F_SERVER)
		return depart(st, f, answer(st, res, STORE_ERR_SERVER, 500, "InternalError"), res);
	if (f == F_LOST_REQUEST)
		return depart(st, f, STORE_ERR_IO, res);
	if (f == F_CONFLICT)
		return depart(st, f, answer(st, res, STORE_CONFLICT, 409,
					    "ConditionalRequestConflict"), res);
	if (opts && opts->cond == STORE_COND_IF_NONE_MATCH_ANY && at >= 0) {
		code = answer(st, res, STORE_PRECONDITION_FAILED, 412, "PreconditionFailed");
	} else if (opts && opts->cond == STORE_COND_IF_MATCH && at < 0) {
		code = answer(st, res, STORE_NOT_FOUND, 404, "NoSuchKey");
	} else if (opts && opts->cond == STORE_COND_IF_MATCH &&
		   (!opts->etag || strcmp(opts->etag, W.objs[at].etag) != 0)) {
		code = answer(st, res, STORE_PRECONDITION_FAILED, 412, "PreconditionFailed");
	} else {
		uint64_t e = ep ? strtoull(ep, NULL, 10) : 0;
		unsigned long w = wid ? strtoul(wid, NULL, 10) : 0;

		write_obj(key, body, len, e, w);
		log_apply(key, e, w, false);
		code = answer(st, res, STORE_OK, 200, NULL);
		at = find(key);
		snprintf(res->etag, sizeof(res->etag), "%s", W.objs[at].etag);
		res->last_modified = W.objs[at].last_modified;
	}
	return depart(st, f, code, res);
}

/* A DELETE's epoch and write id travel in the handle (S3 has no metadata
 * on a DELETE): set by the caller just before store_delete. */
static uint64_t pending_del_epoch;
static unsigned long pending_del_wid;

void sim_s3_tag_delete(uint64_t epoch, unsigned long wid)
{
	pending_del_epoch = epoch;
	pending_del_wid = wid;
}

static enum store_code sim_del(struct store *st, const char *key, const char *if_match,
			       struct store_result *res)
{
	uint64_t e = pending_del_epoch;
	unsigned long w = pending_del_wid;
	enum fate f;
	enum store_code code;
	ssize_t at;

	pending_del_epoch = 0;
	pending_del_wid = 0;
	f = arrive(st, if_match != NULL);
	if (f == F_SERVER)
		return depart(st, f, answer(st, res, STORE_ERR_SERVER, 500, "InternalError"), res);
	if (f == F_LOST_REQUEST)
		return depart(st, f, STORE_ERR_IO, res);
	at = find(key);
	if (at < 0) {
		code = if_match ? answer(st, res, STORE_NOT_FOUND, 404, "NoSuchKey")
				: answer(st, res, STORE_OK, 204, NULL);
	} else if (if_match && strcmp(if_match, W.objs[at].etag) != 0) {
		code = answer(st, res, STORE_PRECONDITION_FAILED, 412, "PreconditionFailed");
	} else {
		remove_obj((size_t)at);
		log_apply(key, e, w, true);
		code = answer(st, res, STORE_OK, 204, NULL);
	}
	return depart(st, f, code, res);
}

static enum store_code sim_list(struct store *st, const char *prefix, const char *start_after,
				const char *continuation, int max_keys,
				struct store_list_page *page, struct store_result *res)
{
	enum fate f = arrive(st, false);
	const char *after = continuation ? continuation : start_after;
	size_t plen = strlen(prefix), n = 0;

	memset(page, 0, sizeof(*page));
	if (f == F_SERVER)
		return depart(st, f, answer(st, res, STORE_ERR_SERVER, 500, "InternalError"), res);
	if (f == F_LOST_REQUEST)
		return depart(st, f, STORE_ERR_IO, res);
	answer(st, res, STORE_OK, 200, NULL);
	page->entries = calloc((size_t)max_keys, sizeof(*page->entries));
	if (!page->entries)
		abort();
	for (size_t i = 0; i < W.n; i++) {
		const struct obj *o = &W.objs[i];

		if (strncmp(o->key, prefix, plen) != 0 || (after && strcmp(o->key, after) <= 0))
			continue;
		if (n == (size_t)max_keys) {
			page->truncated = 1;
			page->next_token = strdup(page->entries[n - 1].key);
			break;
		}
		page->entries[n].key = strdup(o->key);
		snprintf(page->entries[n].etag, sizeof(page->entries[n].etag), "%s", o->etag);
		page->entries[n].size = (int64_t)o->len;
		page->entries[n].last_modified = o->last_modified;
		n++;
	}
	page->n = n;
	return depart(st, f, STORE_OK, res);
}

static void sim_close(struct store *st)
{
	free(st); /* store_close frees the root */
}

static const struct store_ops sim_ops = {
	.scheme = "s3",
	.get = sim_get,
	.head = sim_head,
	.put = sim_put,
	.del = sim_del,
	.list = sim_list,
	.close = sim_close,
};

struct store *sim_s3_open(bool faults, const struct sim_clock *clk)
{
	struct simstore *s = calloc(1, sizeof(*s));

	if (!s)
		abort();
	s->clk = clk;
	s->base.ops = &sim_ops;
	s->base.root = strdup("");
	s->faults = faults;
	return &s->base;
}
