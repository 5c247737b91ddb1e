/* lock_test.h — what test_lock.c and test_lock_faults.c share: a fake clock,
 * an in-memory store with injectable faults (so leases lapse without
 * sleeping and ambiguous writes happen on demand), and the fixture of two
 * clients of lock "jobs" on one store. Test code only. */
#ifndef FENCE_TEST_LOCK_TEST_H
#define FENCE_TEST_LOCK_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lock/core/lock.h"
#include "lock/store/store.h"
#include "lock/store/timesrc.h"

/* --- fake clock ---------------------------------------------------------- */

struct fakeclock {
	int64_t wall_ms;
	int64_t mono_ms;
	int sleeps;
};

static inline int64_t fc_wall(void *ctx) { return ((struct fakeclock *)ctx)->wall_ms; }
static inline int64_t fc_mono(void *ctx) { return ((struct fakeclock *)ctx)->mono_ms; }

static inline void fc_sleep(void *ctx, int64_t ms)
{
	struct fakeclock *c = ctx;

	assert_true(ms >= 0);
	c->wall_ms += ms;
	c->mono_ms += ms;
	c->sleeps++;
}

static inline void fc_advance(struct fakeclock *c, int64_t ms)
{
	c->wall_ms += ms;
	c->mono_ms += ms;
}

/* --- in-memory store ------------------------------------------------------- */

enum fault {
	F_NONE,
	F_APPLY_THEN_IO,   /* the write happens, the answer is lost (timeout) */
	F_IO,              /* timeout, nothing written */
	F_SERVER,          /* 500, nothing written */
	F_CONFLICT,        /* 409, nothing written */
	F_OTHER_THEN_IO,   /* another client's file lands, then our answer is lost */
	F_OTHER_FIRST,     /* another client's file lands just before ours */
	F_SLOW,            /* applied, answered slow_ms later (the clock moves) */
	F_NEWER_AFTER,     /* applied, then epoch+1 is created (a break lands) */
	F_RESERVED,        /* 403 EpochMarkReserved (a proxy keeps the mark), nothing written */
};

struct memobj {
	char *key;
	char *body;
	size_t len;
	char etag[40];
	int64_t last_modified;
};

struct memstore {
	struct store base;
	struct fakeclock *clk;
	struct memobj *objs;          /* sorted by key */
	size_t n, cap;
	int page_size;
	int ignore_if_none_match;
	int ignore_del_if_match;      /* DELETE If-Match is not checked */
	int no_date;                  /* answers carry no Date */
	enum fault put_faults[8];     /* consumed by successive puts */
	size_t nfaults;
	int fail_gets;                /* the next n gets answer 500 */
	int64_t slow_ms;              /* F_SLOW's delay */
	unsigned etag_seq;
	unsigned long lists, gets, puts, dels;
	char last_start_after[1200];  /* of the last list call */
};

static const char OTHER_PAYLOAD[] =
	"{\"leaderId\":\"other\",\"validityMs\":30000,\"expired\":false,"
	"\"nonce\":\"0123456789abcdef0123456789abcdef\",\"renewals\":0,\"v\":1}";

static inline struct memstore *ms_of(struct store *st) { return (struct memstore *)st; }

static inline ssize_t ms_find(const struct memstore *ms, const char *key)
{
	size_t i;

	for (i = 0; i < ms->n; i++)
		if (strcmp(ms->objs[i].key, key) == 0)
			return (ssize_t)i;
	return -1;
}

static inline void ms_write(struct memstore *ms, const char *key, const void *body, size_t len)
{
	ssize_t at = ms_find(ms, key);
	struct memobj *o;
	size_t i;

	if (at < 0) {
		if (ms->n == ms->cap) {
			ms->cap = ms->cap ? ms->cap * 2 : 64;
			ms->objs = realloc(ms->objs, ms->cap * sizeof(*ms->objs));
			assert_non_null(ms->objs);
		}
		for (i = ms->n; i > 0 && strcmp(ms->objs[i - 1].key, key) > 0; i--)
			ms->objs[i] = ms->objs[i - 1];
		ms->n++;
		o = &ms->objs[i];
		memset(o, 0, sizeof(*o));
		o->key = strdup(key);
	} else {
		o = &ms->objs[at];
		free(o->body);
	}
	o->body = malloc(len + 1);
	assert_non_null(o->body);
	memcpy(o->body, body, len);
	o->body[len] = '\0';
	o->len = len;
	snprintf(o->etag, sizeof(o->etag), "\"etag-%u\"", ++ms->etag_seq);
	o->last_modified = ms->clk->wall_ms / 1000;
}

static inline void ms_answer(struct memstore *ms, struct store_result *res, enum store_code code,
		      int http)
{
	store_result_clear(res);
	res->code = code;
	res->http_status = http;
	res->server_date = ms->no_date ? 0 : ms->clk->wall_ms / 1000;
	res->attempts = 1;
	ms->base.requests++;
}

static inline enum store_code ms_get(struct store *st, const char *key, struct store_result *res)
{
	struct memstore *ms = ms_of(st);
	ssize_t at = ms_find(ms, key);

	ms->gets++;
	if (ms->fail_gets > 0) {
		ms->fail_gets--;
		ms_answer(ms, res, STORE_ERR_SERVER, 500);
		return STORE_ERR_SERVER;
	}
	if (at < 0) {
		ms_answer(ms, res, STORE_NOT_FOUND, 404);
		return STORE_NOT_FOUND;
	}
	ms_answer(ms, res, STORE_OK, 200);
	res->body = malloc(ms->objs[at].len + 1);
	assert_non_null(res->body);
	memcpy(res->body, ms->objs[at].body, ms->objs[at].len + 1);
	res->body_len = ms->objs[at].len;
	res->content_length = (int64_t)ms->objs[at].len;
	snprintf(res->etag, sizeof(res->etag), "%s", ms->objs[at].etag);
	res->last_modified = ms->objs[at].last_modified;
	return STORE_OK;
}

static inline enum store_code ms_head(struct store *st, const char *key, struct store_result *res)
{
	enum store_code sc = ms_get(st, key, res);

	free(res->body);
	res->body = NULL;
	res->body_len = 0;
	return sc;
}

static inline enum store_code ms_put(struct store *st, const char *key, const void *body, size_t len,
			      const struct store_put_opts *opts, struct store_result *res)
{
	struct memstore *ms = ms_of(st);
	enum fault f = F_NONE;
	ssize_t at;

	ms->puts++;
	if (ms->nfaults) {
		f = ms->put_faults[0];
		memmove(ms->put_faults, ms->put_faults + 1, (ms->nfaults - 1) * sizeof(f));
		ms->nfaults--;
	}
	switch (f) {
	case F_IO:
		ms_answer(ms, res, STORE_ERR_IO, 0);
		return STORE_ERR_IO;
	case F_SERVER:
		ms_answer(ms, res, STORE_ERR_SERVER, 500);
		return STORE_ERR_SERVER;
	case F_CONFLICT:
		ms_answer(ms, res, STORE_CONFLICT, 409);
		return STORE_CONFLICT;
	case F_RESERVED:
		ms_answer(ms, res, STORE_ERR_DENIED, 403);
		snprintf(res->err_code, sizeof(res->err_code), "%s", LOCK_MARK_RESERVED_CODE);
		return STORE_ERR_DENIED;
	case F_OTHER_THEN_IO:
		ms_write(ms, key, OTHER_PAYLOAD, strlen(OTHER_PAYLOAD));
		ms_answer(ms, res, STORE_ERR_IO, 0);
		return STORE_ERR_IO;
	case F_OTHER_FIRST:
		ms_write(ms, key, OTHER_PAYLOAD, strlen(OTHER_PAYLOAD));
		break;
	default:
		break;
	}
	at = ms_find(ms, key);
	if (opts && opts->cond == STORE_COND_IF_NONE_MATCH_ANY && at >= 0 &&
	    !ms->ignore_if_none_match) {
		ms_answer(ms, res, STORE_PRECONDITION_FAILED, 412);
		return STORE_PRECONDITION_FAILED;
	}
	if (opts && opts->cond == STORE_COND_IF_MATCH) {
		if (at < 0) {
			ms_answer(ms, res, STORE_NOT_FOUND, 404);
			return STORE_NOT_FOUND;
		}
		if (!opts->etag || strcmp(opts->etag, ms->objs[at].etag) != 0) {
			ms_answer(ms, res, STORE_PRECONDITION_FAILED, 412);
			return STORE_PRECONDITION_FAILED;
		}
	}
	ms_write(ms, key, body, len);
	at = ms_find(ms, key);
	if (f == F_APPLY_THEN_IO) {
		ms_answer(ms, res, STORE_ERR_IO, 0);
		return STORE_ERR_IO;
	}
	if (f == F_SLOW)
		fc_advance(ms->clk, ms->slow_ms);
	if (f == F_NEWER_AFTER) {
		/* "...lock-0000000001.json" → "...lock-0000000002.json" */
		char next[1200];
		size_t n = strlen(key);
		unsigned long long e;

		assert_true(n > 15 && n < sizeof(next));
		e = strtoull(key + n - 15, NULL, 10);
		snprintf(next, sizeof(next), "%.*s%010llu.json", (int)(n - 15), key, e + 1);
		ms_write(ms, next, OTHER_PAYLOAD, strlen(OTHER_PAYLOAD));
		at = ms_find(ms, key);
	}
	ms_answer(ms, res, STORE_OK, 200);
	snprintf(res->etag, sizeof(res->etag), "%s", ms->objs[at].etag);
	res->last_modified = ms->objs[at].last_modified;
	return STORE_OK;
}

static inline enum store_code ms_del(struct store *st, const char *key, const char *if_match,
			      struct store_result *res)
{
	struct memstore *ms = ms_of(st);
	ssize_t at = ms_find(ms, key);

	ms->dels++;
	if (at < 0) {
		ms_answer(ms, res, STORE_NOT_FOUND, 404);
		return STORE_NOT_FOUND;
	}
	if (if_match && !ms->ignore_del_if_match && strcmp(if_match, ms->objs[at].etag) != 0) {
		ms_answer(ms, res, STORE_PRECONDITION_FAILED, 412);
		return STORE_PRECONDITION_FAILED;
	}
	free(ms->objs[at].key);
	free(ms->objs[at].body);
	memmove(ms->objs + at, ms->objs + at + 1, (ms->n - (size_t)at - 1) * sizeof(*ms->objs));
	ms->n--;
	ms_answer(ms, res, STORE_OK, 204);
	return STORE_OK;
}

static inline enum store_code ms_list(struct store *st, const char *prefix, const char *start_after,
			       const char *continuation, int max_keys,
			       struct store_list_page *page, struct store_result *res)
{
	struct memstore *ms = ms_of(st);
	const char *from = continuation ? continuation : start_after;
	size_t i, limit = (size_t)(max_keys < ms->page_size ? max_keys : ms->page_size);

	ms->lists++;
	assert_true(max_keys >= 1 && max_keys <= 1000);
	snprintf(ms->last_start_after, sizeof(ms->last_start_after), "%s",
		 start_after ? start_after : "");
	memset(page, 0, sizeof(*page));
	page->entries = calloc(limit, sizeof(*page->entries));
	assert_non_null(page->entries);
	for (i = 0; i < ms->n; i++) {
		const struct memobj *o = &ms->objs[i];

		if (strncmp(o->key, prefix, strlen(prefix)) != 0)
			continue;
		if (from && strcmp(o->key, from) <= 0)
			continue;
		if (page->n == limit) {
			page->truncated = 1;
			page->next_token = strdup(page->entries[page->n - 1].key);
			break;
		}
		page->entries[page->n].key = strdup(o->key);
		snprintf(page->entries[page->n].etag, STORE_ETAG_MAX, "%s", o->etag);
		page->entries[page->n].size = (int64_t)o->len;
		page->entries[page->n].last_modified = o->last_modified;
		page->n++;
	}
	ms_answer(ms, res, STORE_OK, 200);
	return STORE_OK;
}

static inline void ms_close(struct store *st)
{
	struct memstore *ms = ms_of(st);
	size_t i;

	for (i = 0; i < ms->n; i++) {
		free(ms->objs[i].key);
		free(ms->objs[i].body);
	}
	free(ms->objs);
	free(ms);
}

static const struct store_ops memstore_ops = {
	"mem", ms_get, ms_head, ms_put, ms_del, ms_list, ms_close,
};

static inline struct memstore *ms_new(struct fakeclock *clk, const char *root)
{
	struct memstore *ms = calloc(1, sizeof(*ms));

	assert_non_null(ms);
	ms->base.ops = &memstore_ops;
	ms->base.root = strdup(root);
	ms->clk = clk;
	ms->page_size = 1000;
	return ms;
}

static inline void ms_fault(struct memstore *ms, enum fault f)
{
	assert_true(ms->nfaults < 8);
	ms->put_faults[ms->nfaults++] = f;
}

/* --- fixture ------------------------------------------------------------------ */

struct fx {
	struct fakeclock clk;
	struct timesrc ts;
	struct memstore *ms;
	struct lock *a, *b;     /* two clients of lock "jobs" on one store */
	char err[512];
};

static inline struct lock *fx_open(struct fx *f, const char *name)
{
	struct lock_options o = { .time = &f->ts };
	struct lock *lk = lock_open(&f->ms->base, name, &o, f->err, sizeof(f->err));

	assert_non_null(lk);
	return lk;
}

static inline int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->clk.wall_ms = 1700000000000LL; /* on a second boundary */
	f->clk.mono_ms = 5000000;
	f->ts = (struct timesrc){ fc_wall, fc_mono, fc_sleep, &f->clk };
	f->ms = ms_new(&f->clk, "root/");
	f->a = fx_open(f, "jobs");
	f->b = fx_open(f, "jobs");
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fx *f = *state;

	lock_close(f->a);
	lock_close(f->b);
	store_close(&f->ms->base);
	free(f);
	return 0;
}

static inline enum lock_code acq(struct fx *f, struct lock *lk, const char *holder, int64_t ttl_ms,
			  int64_t wait_ms, struct lock_grant *g, struct lock_info *who)
{
	struct lock_acquire_opts ao = { .holder = holder, .ttl_ms = ttl_ms, .wait_ms = wait_ms };

	memset(g, 0, sizeof(*g));
	if (who)
		memset(who, 0, sizeof(*who));
	return lock_acquire(lk, &ao, g, who, f->err, sizeof(f->err));
}

/* The payload stored at epoch e of lock "jobs". */
static inline struct lock_payload stored(struct fx *f, uint64_t e)
{
	char key[1200];
	struct lock_payload p;
	ssize_t at;

	lock_epoch_key(f->a, e, key, sizeof(key));
	at = ms_find(f->ms, key);
	assert_true(at >= 0);
	assert_int_equal(lock_payload_parse(f->ms->objs[at].body, f->ms->objs[at].len, &p), 0);
	return p;
}

static inline void put_raw(struct fx *f, uint64_t e, const char *body)
{
	char key[1200];

	lock_epoch_key(f->a, e, key, sizeof(key));
	ms_write(f->ms, key, body, strlen(body));
}
#endif
