/* test_lock.c — the lock protocol (lock.c, lock_admin.c, lease.c) against an
 * in-memory store with a fake clock and injectable faults, so leases lapse
 * without sleeping and ambiguous writes happen on demand. The real backends
 * are exercised by tests/integration/itest_lock.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lock/lock.h"
#include "lock/store.h"
#include "lock/timesrc.h"

/* --- fake clock ---------------------------------------------------------- */

struct fakeclock {
	int64_t wall_ms;
	int64_t mono_ms;
	int sleeps;
};

static int64_t fc_wall(void *ctx) { return ((struct fakeclock *)ctx)->wall_ms; }
static int64_t fc_mono(void *ctx) { return ((struct fakeclock *)ctx)->mono_ms; }

static void fc_sleep(void *ctx, int64_t ms)
{
	struct fakeclock *c = ctx;

	assert_true(ms >= 0);
	c->wall_ms += ms;
	c->mono_ms += ms;
	c->sleeps++;
}

static void fc_advance(struct fakeclock *c, int64_t ms)
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

static struct memstore *ms_of(struct store *st) { return (struct memstore *)st; }

static ssize_t ms_find(const struct memstore *ms, const char *key)
{
	size_t i;

	for (i = 0; i < ms->n; i++)
		if (strcmp(ms->objs[i].key, key) == 0)
			return (ssize_t)i;
	return -1;
}

static void ms_write(struct memstore *ms, const char *key, const void *body, size_t len)
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

static void ms_answer(struct memstore *ms, struct store_result *res, enum store_code code,
		      int http)
{
	store_result_clear(res);
	res->code = code;
	res->http_status = http;
	res->server_date = ms->no_date ? 0 : ms->clk->wall_ms / 1000;
	res->attempts = 1;
	ms->base.requests++;
}

static enum store_code ms_get(struct store *st, const char *key, struct store_result *res)
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

static enum store_code ms_head(struct store *st, const char *key, struct store_result *res)
{
	enum store_code sc = ms_get(st, key, res);

	free(res->body);
	res->body = NULL;
	res->body_len = 0;
	return sc;
}

static enum store_code ms_put(struct store *st, const char *key, const void *body, size_t len,
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

static enum store_code ms_del(struct store *st, const char *key, const char *if_match,
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

static enum store_code ms_list(struct store *st, const char *prefix, const char *start_after,
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

static void ms_close(struct store *st)
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

static struct memstore *ms_new(struct fakeclock *clk, const char *root)
{
	struct memstore *ms = calloc(1, sizeof(*ms));

	assert_non_null(ms);
	ms->base.ops = &memstore_ops;
	ms->base.root = strdup(root);
	ms->clk = clk;
	ms->page_size = 1000;
	return ms;
}

static void ms_fault(struct memstore *ms, enum fault f)
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

static struct lock *fx_open(struct fx *f, const char *name)
{
	struct lock_options o = { .time = &f->ts };
	struct lock *lk = lock_open(&f->ms->base, name, &o, f->err, sizeof(f->err));

	assert_non_null(lk);
	return lk;
}

static int setup(void **state)
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

static int teardown(void **state)
{
	struct fx *f = *state;

	lock_close(f->a);
	lock_close(f->b);
	store_close(&f->ms->base);
	free(f);
	return 0;
}

static enum lock_code acq(struct fx *f, struct lock *lk, const char *holder, int64_t ttl_ms,
			  int64_t wait_ms, struct lock_grant *g, struct lock_info *who)
{
	struct lock_acquire_opts ao = { .holder = holder, .ttl_ms = ttl_ms, .wait_ms = wait_ms };

	memset(g, 0, sizeof(*g));
	if (who)
		memset(who, 0, sizeof(*who));
	return lock_acquire(lk, &ao, g, who, f->err, sizeof(f->err));
}

/* The payload stored at epoch e of lock "jobs". */
static struct lock_payload stored(struct fx *f, uint64_t e)
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

static void put_raw(struct fx *f, uint64_t e, const char *body)
{
	char key[1200];

	lock_epoch_key(f->a, e, key, sizeof(key));
	ms_write(f->ms, key, body, strlen(body));
}

/* --- tests ------------------------------------------------------------------ */

static void test_names_and_keys(void **state)
{
	struct fx *f = *state;
	char key[1200], long_name[200];
	struct lock_options o = { .prefix = "custom/lock-", .time = &f->ts };
	struct lock *lk;

	assert_true(lock_name_valid("a"));
	assert_true(lock_name_valid("Jobs_1.x-y"));
	assert_false(lock_name_valid(""));
	assert_false(lock_name_valid("."));
	assert_false(lock_name_valid(".."));
	assert_false(lock_name_valid("a/b"));
	assert_false(lock_name_valid("a b"));
	assert_false(lock_name_valid(NULL));
	memset(long_name, 'x', 128);
	long_name[128] = '\0';
	assert_true(lock_name_valid(long_name));
	long_name[128] = 'x';
	long_name[129] = '\0';
	assert_false(lock_name_valid(long_name));
	assert_null(lock_open(&f->ms->base, "..", NULL, f->err, sizeof(f->err)));
	assert_non_null(strstr(f->err, "invalid lock name"));

	assert_string_equal(lock_prefix(f->a), "root/locks/jobs/lock-");
	assert_string_equal(lock_name(f->a), "jobs");
	lock_epoch_key(f->a, 42, key, sizeof(key));
	assert_string_equal(key, "root/locks/jobs/lock-0000000042.json");
	assert_int_equal(lock_key_epoch(f->a, key), 42);
	assert_int_equal(lock_key_epoch(f->a, "root/locks/jobs/lock-0000000042.json.bak"), 0);
	assert_int_equal(lock_key_epoch(f->a, "root/locks/jobs/lock-42.json"), 0);
	assert_int_equal(lock_key_epoch(f->a, "root/locks/jobs/lock-00000000x2.json"), 0);
	assert_int_equal(lock_key_epoch(f->a, "root/locks/other/lock-0000000042.json"), 0);

	lk = lock_open(&f->ms->base, "jobs", &o, f->err, sizeof(f->err));
	assert_non_null(lk);
	assert_string_equal(lock_prefix(lk), "custom/lock-");
	lock_close(lk);
}

static void test_lease_arithmetic(void **state)
{
	(void)state;
	/* same second: the full lease plus the contender's extra second */
	assert_int_equal(lock_lease_remaining_ms(100, 30000, 100), 31000);
	assert_int_equal(lock_lease_remaining_ms(100, 30000, 112), 19000);
	/* the one-second boundary: live at lm + validity, lapsed a second later */
	assert_int_equal(lock_lease_remaining_ms(100, 30000, 130), 1000);
	assert_int_equal(lock_lease_remaining_ms(100, 30000, 131), 0);
	assert_true(lock_lease_remaining_ms(100, 30000, 200) < 0);
	assert_int_equal(lock_lease_remaining_ms(100, 0, 100), 1000);
	assert_int_equal(lock_lease_remaining_ms(100, 0, 101), 0);
	/* absurd inputs saturate instead of overflowing */
	assert_true(lock_lease_remaining_ms(0, INT64_MAX, 0) == INT64_MAX);
	assert_true(lock_lease_remaining_ms(INT64_MIN, 1000, INT64_MAX) < 0);
	assert_true(lock_lease_remaining_ms(INT64_MAX, 1000, INT64_MIN) > 0);
}

static void test_acquire_free_then_held(void **state)
{
	struct fx *f = *state;
	struct lock_grant g, g2;
	struct lock_info who;
	struct lock_payload p;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	assert_string_equal(g.key, "root/locks/jobs/lock-0000000001.json");
	assert_string_equal(g.holder, "alice");
	assert_true(g.etag[0] == '"');
	assert_int_equal(strlen(g.nonce), 32);
	/* sent at mono 5000000; margin min(1000 + 3000, 15000) */
	assert_int_equal(g.deadline_mono_ms, 5000000 + 30000 - 4000);
	assert_int_equal(g.expires_at_ms, 1700000000000LL + 30000);
	p = stored(f, 1);
	assert_string_equal(p.leader_id, "alice");
	assert_int_equal(p.validity_ms, 30000);
	assert_false(p.expired);
	assert_string_equal(p.nonce, g.nonce);
	assert_int_equal(p.renewals, 0);
	assert_true(p.pid > 0);
	assert_non_null(strstr(f->ms->objs[0].body, "\"v\":1"));

	fc_advance(&f->clk, 12300);
	assert_int_equal(acq(f, f->b, "bob", 30000, 0, &g2, &who), LOCK_HELD);
	assert_int_equal(who.epoch, 1);
	assert_int_equal(who.state, LOCK_STATE_HELD);
	assert_string_equal(who.payload.leader_id, "alice");
	assert_int_equal(who.remaining_ms, 30000 - 11000); /* date is 12 s after lm */
	/* the holder itself is refused too: a lock is not re-entrant */
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g2, NULL), LOCK_HELD);
}

static void test_default_holder_and_bad_args(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_acquire_opts ao = { .ttl_ms = -5 };
	char big[400];

	assert_int_equal(lock_acquire(f->a, &ao, &g, NULL, f->err, sizeof(f->err)),
			 LOCK_ERR_INVALID);
	memset(big, 'h', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(acq(f, f->a, big, 1000, 0, &g, NULL), LOCK_ERR_INVALID);
	assert_int_equal(f->ms->base.requests, 0);
	assert_int_equal(lock_acquire(f->a, NULL, &g, NULL, f->err, sizeof(f->err)), LOCK_OK);
	assert_non_null(strchr(g.holder, '-')); /* "<host>-<pid>" */
	assert_int_equal(g.ttl_ms, 30000);
}

static void test_release_and_reacquire(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &ga, NULL), LOCK_OK);
	assert_int_equal(lock_release(f->a, &ga, f->err, sizeof(f->err)), LOCK_OK);
	assert_true(stored(f, 1).expired);
	assert_int_equal(acq(f, f->b, "bob", 30000, 0, &gb, NULL), LOCK_OK);
	assert_int_equal(gb.epoch, 2);
	/* alice's epoch is superseded */
	assert_int_equal(lock_renew(f->a, &ga, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "superseded by epoch 2"));
	assert_int_equal(lock_release(f->a, &ga, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_released_grant_cannot_resurrect(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "released"));
	assert_true(stored(f, 1).expired);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_lease_lapses_at_the_second_boundary(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info who;

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &ga, NULL), LOCK_OK);
	/* 10.999 s later the server's Date is lm + 10: live for one more second */
	fc_advance(&f->clk, 10999);
	assert_int_equal(acq(f, f->b, "bob", 10000, 0, &gb, &who), LOCK_HELD);
	assert_int_equal(who.remaining_ms, 1000);
	fc_advance(&f->clk, 1);
	assert_int_equal(acq(f, f->b, "bob", 10000, 0, &gb, &who), LOCK_OK);
	assert_int_equal(gb.epoch, 2);
	assert_int_equal(lock_renew(f->a, &ga, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_status_states(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info info;

	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.state, LOCK_STATE_FREE);
	assert_int_equal(info.epoch, 0);
	assert_int_equal(acq(f, f->a, "alice", 5000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.state, LOCK_STATE_HELD);
	assert_int_equal(info.remaining_ms, 6000);
	fc_advance(&f->clk, 6000);
	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.state, LOCK_STATE_LAPSED);
	assert_int_equal(info.remaining_ms, 0);
	assert_string_equal(lock_state_name(info.state), "lapsed");
}

static void test_renew_extends_the_lease(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info who;
	char old_etag[STORE_ETAG_MAX];

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &ga, NULL), LOCK_OK);
	snprintf(old_etag, sizeof(old_etag), "%s", ga.etag);
	fc_advance(&f->clk, 7000); /* before the deadline of 8 s (ttl - margin) */
	assert_int_equal(lock_renew(f->a, &ga, f->err, sizeof(f->err)), LOCK_OK);
	assert_string_not_equal(ga.etag, old_etag);
	assert_int_equal(ga.renewals, 1);
	assert_int_equal(ga.deadline_mono_ms, 5007000 + 10000 - 2000);
	assert_int_equal(stored(f, 1).renewals, 1);
	assert_string_equal(stored(f, 1).nonce, ga.nonce);
	/* 8 s into the renewed lease it is still alive */
	fc_advance(&f->clk, 8000);
	assert_int_equal(acq(f, f->b, "bob", 10000, 0, &gb, &who), LOCK_HELD);
	assert_int_equal(who.remaining_ms, 3000);
}

/* Issue 7, item 2: a renewal sent in time whose answer comes after the
 * holder's deadline is lost, whatever the store said. */
static void test_renew_answered_after_the_deadline(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	fc_advance(&f->clk, 10000);
	f->ms->put_faults[f->ms->nfaults++] = F_SLOW;
	f->ms->slow_ms = 21500; /* sent at 10 s, answered at 31.5 s */
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "after the holder's deadline"));
	assert_string_equal(g.etag, ""); /* nothing left to renew with */
}

/* Issue 7, item 2: a newer epoch does not change our file's ETag, so the
 * rewrite succeeds; the listing after it must find the newer epoch. */
static void test_renew_superseded_while_rewriting(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	int64_t deadline;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	deadline = g.deadline_mono_ms;
	fc_advance(&f->clk, 5000);
	f->ms->put_faults[f->ms->nfaults++] = F_NEWER_AFTER;
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "superseded by epoch 2"));
	assert_int_equal(g.deadline_mono_ms, deadline); /* never extended */
}

static void test_renew_after_own_lease_ran_out(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &g, NULL), LOCK_OK);
	fc_advance(&f->clk, 8000); /* nobody took epoch 2, but the deadline is here */
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "passed its deadline"));
	/* release is still allowed: it only gives the lock up */
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
}

static void test_renew_by_epoch_number(void **state)
{
	struct fx *f = *state;
	struct lock_grant g, other;

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &g, NULL), LOCK_OK);
	memset(&other, 0, sizeof(other));
	other.epoch = 1; /* what `fencectl renew jobs 1` knows */
	assert_int_equal(lock_renew(f->b, &other, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(other.renewals, 1);
	assert_string_equal(other.holder, "alice");
	assert_string_equal(other.nonce, g.nonce);
	assert_int_equal(stored(f, 1).renewals, 1);
	memset(&other, 0, sizeof(other));
	other.epoch = 1;
	assert_int_equal(lock_release(f->b, &other, f->err, sizeof(f->err)), LOCK_OK);
	memset(&other, 0, sizeof(other));
	other.epoch = 1;
	assert_int_equal(lock_renew(f->b, &other, f->err, sizeof(f->err)), LOCK_LOST);
	other.epoch = 7;
	assert_int_equal(lock_renew(f->b, &other, f->err, sizeof(f->err)), LOCK_LOST);
	assert_non_null(strstr(f->err, "does not exist"));
}

static void test_renew_condition_failed(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 10000, 0, &g, NULL), LOCK_OK);
	snprintf(g.etag, sizeof(g.etag), "\"not-the-etag\"");
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_break(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info info;
	uint64_t broken = 0;

	assert_int_equal(acq(f, f->a, "stuck", 30000, 0, &ga, NULL), LOCK_OK);
	assert_int_equal(lock_break(f->b, NULL, &broken, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(broken, 2);
	assert_int_equal(f->ms->n, 2); /* nothing deleted */
	assert_string_equal(stored(f, 2).leader_id, "fencectl-break");
	assert_true(stored(f, 2).expired);
	assert_int_equal(lock_status(f->b, &info, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(info.state, LOCK_STATE_RELEASED);
	assert_int_equal(lock_renew(f->a, &ga, f->err, sizeof(f->err)), LOCK_LOST);
	assert_int_equal(acq(f, f->b, "next", 30000, 0, &gb, NULL), LOCK_OK);
	assert_int_equal(gb.epoch, 3);
	assert_int_equal(lock_break(f->a, "operator", &broken, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(broken, 4);
	assert_string_equal(stored(f, 4).leader_id, "operator");
}

static void test_gc_keeps_latest(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	unsigned deleted = 99;
	uint64_t latest = 0;
	int i;

	for (i = 0; i < 5; i++) {
		assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
		assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	}
	assert_int_equal(lock_gc(f->b, 0, &deleted, f->err, sizeof(f->err)), LOCK_ERR_INVALID);
	assert_int_equal(lock_gc(f->b, 2, &deleted, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(deleted, 3);
	assert_int_equal(f->ms->n, 2);
	assert_int_equal(stored(f, 4).expired, true);
	assert_int_equal(lock_gc(f->b, 1, &deleted, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(deleted, 1);
	assert_int_equal(lock_gc(f->b, 1, &deleted, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(deleted, 0);
	assert_int_equal(f->ms->n, 1);
	assert_int_equal(lock_latest_epoch(f->b, &latest, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(latest, 5);
	assert_int_equal(acq(f, f->b, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 6);
}

static void test_pagination_over_many_epochs(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock *fresh;
	uint64_t e, latest = 0;
	unsigned long before;
	unsigned deleted = 0;

	f->ms->page_size = 100;
	for (e = 1; e <= 1005; e++)
		put_raw(f, e, "{\"leaderId\":\"h\",\"validityMs\":1000,\"expired\":true}");
	before = f->ms->lists;
	assert_int_equal(lock_latest_epoch(f->a, &latest, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(latest, 1005);
	assert_int_equal(f->ms->lists - before, 11); /* ceil(1005 / 100) pages */
	/* steady state: one list after the known key */
	before = f->ms->lists;
	assert_int_equal(lock_latest_epoch(f->a, &latest, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(f->ms->lists - before, 1);
	assert_string_equal(f->ms->last_start_after, "root/locks/jobs/lock-0000001005.json");

	assert_int_equal(acq(f, f->b, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1006);
	assert_int_equal(lock_release(f->b, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(lock_gc(f->b, 3, &deleted, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(deleted, 1003);
	fresh = fx_open(f, "jobs");
	assert_int_equal(acq(f, fresh, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1007);
	lock_close(fresh);
}

static void test_junk_keys_are_ignored(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	uint64_t latest = 0;

	put_raw(f, 3, "{\"leaderId\":\"h\",\"validityMs\":1000,\"expired\":true}");
	ms_write(f->ms, "root/locks/jobs/lock-0000000009.json.tmp", "x", 1);
	ms_write(f->ms, "root/locks/jobs/lock-zzz", "x", 1);
	ms_write(f->ms, "root/locks/jobs/lock-00000000099.json", "x", 1);
	ms_write(f->ms, "root/locks/jobsx/lock-0000000050.json", "x", 1);
	assert_int_equal(lock_latest_epoch(f->a, &latest, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(latest, 3);
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 4);
}

static void test_known_latest_costs_two_requests(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	unsigned long before;

	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	before = f->ms->base.requests;
	assert_int_equal(acq(f, f->a, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 2);
	assert_int_equal(f->ms->base.requests - before, 2);
	assert_int_equal(f->ms->lists, 3);
	assert_string_equal(f->ms->last_start_after, "root/locks/jobs/lock-0000000001.json");
	/* renew: list + put + list (a newer epoch?); release: list + put */
	before = f->ms->base.requests;
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(f->ms->base.requests - before, 5);
	/* another client that released epoch 2 behind our back: we must read */
	before = f->ms->base.requests;
	assert_int_equal(acq(f, f->b, "w", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 3);
	assert_int_equal(f->ms->base.requests - before, 3); /* list, get, create */
}

static void test_ambiguous_create_applied_is_ours(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	char key[1200];

	ms_fault(f->ms, F_APPLY_THEN_IO);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	lock_epoch_key(f->a, 1, key, sizeof(key));
	assert_string_equal(g.etag, f->ms->objs[ms_find(f->ms, key)].etag);
	assert_int_equal(f->ms->puts, 1); /* resolved by reading, not by writing again */
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
}

static void test_ambiguous_create_someone_elses(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;

	ms_fault(f->ms, F_OTHER_THEN_IO);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "other");
	assert_int_equal(who.epoch, 1);
}

static void test_create_race_412(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;

	ms_fault(f->ms, F_OTHER_FIRST);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "other");
}

static void test_create_not_applied_is_retried(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	ms_fault(f->ms, F_CONFLICT); /* 409 */
	ms_fault(f->ms, F_SERVER);   /* 500 */
	ms_fault(f->ms, F_IO);       /* timeout */
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	assert_int_equal(f->ms->puts, 4);
	assert_true(f->clk.sleeps >= 3); /* backed off between tries */
	/* the deadline counts from the first send: conservative */
	assert_int_equal(g.deadline_mono_ms, 5000000 + 30000 - 4000);
}

static void test_create_applied_then_412_on_retry(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	/* our create lands but times out and the read-back fails: the retry's
	 * 412 must be checked against our nonce, not taken as lost */
	ms_fault(f->ms, F_APPLY_THEN_IO);
	f->ms->fail_gets = 1;
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	assert_int_equal(f->ms->puts, 2);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
}

static void test_create_gives_up(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	int i;

	for (i = 0; i < 8; i++)
		ms_fault(f->ms, F_SERVER);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_ERR_STORE);
	assert_non_null(strstr(f->err, "lock-0000000001.json"));
	assert_int_equal(f->ms->puts, 6); /* 1 + 5 retries */
}

static void test_ambiguous_renew_and_release(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	ms_fault(f->ms, F_APPLY_THEN_IO);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(g.renewals, 1);
	assert_int_equal(stored(f, 1).renewals, 1);
	ms_fault(f->ms, F_IO);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(g.renewals, 2);
	assert_int_equal(stored(f, 1).renewals, 2);
	ms_fault(f->ms, F_OTHER_THEN_IO);
	assert_int_equal(lock_renew(f->a, &g, f->err, sizeof(f->err)), LOCK_LOST);
}

static void test_unreadable_payload_held_then_lapsed(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;

	put_raw(f, 1, "this is not json");
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_int_equal(who.state, LOCK_STATE_UNREADABLE);
	assert_int_equal(who.remaining_ms, 61000);
	fc_advance(&f->clk, 60000);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_int_equal(who.remaining_ms, 1000);
	fc_advance(&f->clk, 1000);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 2);
	/* missing fields are unreadable too */
	put_raw(f, 3, "{\"leaderId\":\"x\"}");
	assert_int_equal(acq(f, f->b, "bob", 30000, 0, &g, &who), LOCK_HELD);
	assert_int_equal(who.state, LOCK_STATE_UNREADABLE);
}

static void test_typescript_and_java_payloads(void **state)
{
	struct fx *f = *state;
	struct lock_grant g;
	struct lock_info who;

	put_raw(f, 1, "{\"leaderId\":\"ts-node\",\"validityMs\":20000,\"expired\":false}");
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "ts-node");
	assert_int_equal(who.remaining_ms, 21000);
	put_raw(f, 1, "{\"leaderId\":\"ts-node\",\"validityMs\":20000,\"expired\":true}");
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 2);
	assert_int_equal(lock_release(f->a, &g, f->err, sizeof(f->err)), LOCK_OK);

	put_raw(f, 3, "{\"leaderId\":\"java\",\"validity_ms\":5000,\"expired\":false}");
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "java");
	assert_int_equal(who.remaining_ms, 6000);
	fc_advance(&f->clk, 6000);
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 4);
}

static void test_check_store(void **state)
{
	struct fx *f = *state;

	assert_int_equal(lock_check_store(&f->ms->base, "root/", f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(f->ms->n, 0); /* probe deleted */
	assert_true(f->ms->puts >= 2);

	f->ms->ignore_if_none_match = 1;
	assert_int_equal(lock_check_store(&f->ms->base, NULL, f->err, sizeof(f->err)),
			 LOCK_ERR_UNSAFE);
	assert_non_null(strstr(f->err, "store ignores If-None-Match"));
	assert_non_null(strstr(f->err, "conditional writes"));
	assert_int_equal(f->ms->n, 0);

	/* every condition is probed, and the one missing is named */
	f->ms->ignore_if_none_match = 0;
	f->ms->ignore_del_if_match = 1;
	assert_int_equal(lock_check_store(&f->ms->base, NULL, f->err, sizeof(f->err)),
			 LOCK_ERR_UNSAFE);
	assert_non_null(strstr(f->err, "ignores If-Match on DELETE"));
	assert_int_equal(f->ms->n, 0);
	f->ms->ignore_del_if_match = 0;
	f->ms->no_date = 1;
	assert_int_equal(lock_check_store(&f->ms->base, NULL, f->err, sizeof(f->err)),
			 LOCK_ERR_UNSAFE);
	assert_non_null(strstr(f->err, "no Date header"));
	assert_int_equal(f->ms->n, 0);
}

static void test_wait_honours_lease_left(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	unsigned long before;
	int64_t start;
	int round;

	/* Polls back off up to seconds apart, yet the waiter wakes within a
	 * second of the lapse: it sleeps no longer than the lease has left.
	 * Jitter is random, so several rounds. */
	for (round = 0; round < 6; round++) {
		start = f->clk.wall_ms;
		assert_int_equal(start % 1000, 0);
		assert_int_equal(acq(f, f->a, "alice", 60000, 0, &ga, NULL), LOCK_OK);
		before = f->ms->base.requests;
		assert_int_equal(acq(f, f->b, "bob", 30000, 90000, &gb, NULL), LOCK_OK);
		assert_int_equal(gb.epoch, ga.epoch + 1);
		/* live until Date = lm + 60; taken within that second */
		assert_true(f->clk.wall_ms - start >= 61000);
		assert_true(f->clk.wall_ms - start < 62000);
		assert_true(f->ms->base.requests - before < 80);
		assert_int_equal(lock_release(f->b, &gb, f->err, sizeof(f->err)), LOCK_OK);
		f->clk.wall_ms += 1000 - f->clk.wall_ms % 1000;
	}
}

static void test_wait_times_out_at_deadline(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info who;
	int64_t start;

	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &ga, NULL), LOCK_OK);
	start = f->clk.mono_ms;
	assert_int_equal(acq(f, f->b, "bob", 30000, 5000, &gb, &who), LOCK_ERR_TIMEOUT);
	assert_int_equal(f->clk.mono_ms - start, 5000); /* not a millisecond past */
	assert_string_equal(who.payload.leader_id, "alice");
	assert_non_null(strstr(f->err, "alice"));
}

static void test_wait_sees_early_release(void **state)
{
	struct fx *f = *state;
	struct lock_grant ga, gb;
	struct lock_info who;

	/* bob polls with backoff; alice's released file shows up between polls */
	assert_int_equal(acq(f, f->a, "alice", 30000, 0, &ga, NULL), LOCK_OK);
	assert_int_equal(acq(f, f->b, "bob", 30000, 400, &gb, &who), LOCK_ERR_TIMEOUT);
	assert_int_equal(lock_release(f->a, &ga, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(acq(f, f->b, "bob", 30000, 400, &gb, NULL), LOCK_OK);
	assert_int_equal(gb.epoch, 2);
}

static void test_list_names(void **state)
{
	struct fx *f = *state;
	char **names = NULL;
	size_t n = 0, i;
	char key[200];
	int e;

	f->ms->page_size = 3;
	for (e = 1; e <= 7; e++) {
		snprintf(key, sizeof(key), "root/locks/alpha/lock-%010d.json", e);
		ms_write(f->ms, key, "{}", 2);
	}
	ms_write(f->ms, "root/locks/a.b/lock-0000000001.json", "{}", 2);
	ms_write(f->ms, "root/locks/alpha0/lock-0000000001.json", "{}", 2);
	ms_write(f->ms, "root/locks/readme.txt", "x", 1);
	ms_write(f->ms, "root/locks/bad name/lock-0000000001.json", "x", 1);
	ms_write(f->ms, "root/locks/zed/x", "x", 1);
	ms_write(f->ms, "root/other/locks/no/lock-0000000001.json", "x", 1);
	assert_int_equal(lock_list_names(&f->ms->base, &names, &n, f->err, sizeof(f->err)), LOCK_OK);
	assert_int_equal(n, 4);
	assert_string_equal(names[0], "a.b");
	assert_string_equal(names[1], "alpha");
	assert_string_equal(names[2], "alpha0");
	assert_string_equal(names[3], "zed");
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_names_and_keys),
		T(test_lease_arithmetic),
		T(test_acquire_free_then_held),
		T(test_default_holder_and_bad_args),
		T(test_release_and_reacquire),
		T(test_released_grant_cannot_resurrect),
		T(test_lease_lapses_at_the_second_boundary),
		T(test_status_states),
		T(test_renew_extends_the_lease),
		T(test_renew_after_own_lease_ran_out),
		T(test_renew_answered_after_the_deadline),
		T(test_renew_superseded_while_rewriting),
		T(test_renew_by_epoch_number),
		T(test_renew_condition_failed),
		T(test_break),
		T(test_gc_keeps_latest),
		T(test_pagination_over_many_epochs),
		T(test_junk_keys_are_ignored),
		T(test_known_latest_costs_two_requests),
		T(test_ambiguous_create_applied_is_ours),
		T(test_ambiguous_create_someone_elses),
		T(test_create_race_412),
		T(test_create_not_applied_is_retried),
		T(test_create_applied_then_412_on_retry),
		T(test_create_gives_up),
		T(test_ambiguous_renew_and_release),
		T(test_unreadable_payload_held_then_lapsed),
		T(test_typescript_and_java_payloads),
		T(test_check_store),
		T(test_wait_honours_lease_left),
		T(test_wait_times_out_at_deadline),
		T(test_wait_sees_early_release),
		T(test_list_names),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
