/* itest_lock.c — the lock protocol against a real store.
 *
 * Run by tests/integration/run.py twice: once with FENCE_STORE=s3://BUCKET
 * and AWS_ENDPOINT_URL pointing at a moto_server it started, once with
 * FENCE_STORE=file:///DIR. Real time, real store: these tests sleep only
 * where a real lease must lapse (1 s leases). Lease arithmetic with a fake
 * clock lives in tests/unit/test_lock.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lock/core/lock.h"
#include "lock/store/store.h"

static char errbuf[512];

static struct store *open_store(void)
{
	struct store_config cfg = { .url = getenv("FENCE_STORE"), .path_style = -1 };
	struct store *st = store_open(&cfg, errbuf, sizeof(errbuf));

	if (!st)
		fail_msg("store_open(%s): %s", cfg.url ? cfg.url : "(unset)", errbuf);
	return st;
}

/* A lock name unique to this run, so reruns against one bucket don't clash. */
static void unique_name(char *out, size_t len, const char *what)
{
	snprintf(out, len, "it-%s-%ld-%ld", what, (long)getpid(), (long)time(NULL));
}

static struct lock *open_lock(struct store *st, const char *name)
{
	struct lock *lk = lock_open(st, name, NULL, errbuf, sizeof(errbuf));

	if (!lk)
		fail_msg("lock_open(%s): %s", name, errbuf);
	return lk;
}

static enum lock_code acquire(struct lock *lk, const char *holder, int64_t ttl_ms,
			      struct lock_grant *g, struct lock_info *who)
{
	struct lock_acquire_opts ao = { .holder = holder, .ttl_ms = ttl_ms };

	memset(g, 0, sizeof(*g));
	return lock_acquire(lk, &ao, g, who, errbuf, sizeof(errbuf));
}

/* Acquiring a lock whose latest epoch this client knows costs exactly two
 * requests: a list after the known key and the create. */
static void test_acquire_known_latest_costs_three_requests(void **state)
{
	char name[LOCK_NAME_MAX];
	struct store *st = open_store();
	struct lock *lk;
	struct lock_grant g;
	unsigned long before;

	(void)state;
	unique_name(name, sizeof(name), "cost");
	lk = open_lock(st, name);
	assert_int_equal(acquire(lk, "w1", 30000, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1);
	assert_int_equal(lock_release(lk, &g, errbuf, sizeof(errbuf)), LOCK_OK);

	before = st->requests;
	assert_int_equal(acquire(lk, "w1", 30000, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 2);
	print_message("acquire with known latest: %lu requests\n", st->requests - before);
	/* list, create, and the epoch mark's raise (its value is known) */
	assert_int_equal(st->requests - before, 3);

	assert_int_equal(lock_release(lk, &g, errbuf, sizeof(errbuf)), LOCK_OK);
	lock_close(lk);
	store_close(st);
}

/* A held lock is refused to a second client, naming the holder; after
 * release the next epoch goes to the second client. */
static void test_held_release_reacquire(void **state)
{
	char name[LOCK_NAME_MAX];
	struct store *st1 = open_store(), *st2 = open_store();
	struct lock *a, *b;
	struct lock_grant ga, gb;
	struct lock_info who;

	(void)state;
	unique_name(name, sizeof(name), "held");
	a = open_lock(st1, name);
	b = open_lock(st2, name);
	assert_int_equal(acquire(a, "alice", 30000, &ga, NULL), LOCK_OK);
	assert_int_equal(ga.epoch, 1);

	memset(&who, 0, sizeof(who));
	assert_int_equal(acquire(b, "bob", 30000, &gb, &who), LOCK_HELD);
	assert_string_equal(who.payload.leader_id, "alice");
	assert_int_equal(who.epoch, 1);
	assert_true(who.remaining_ms > 25000 && who.remaining_ms <= 31000);

	assert_int_equal(lock_renew(a, &ga, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(lock_release(a, &ga, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(acquire(b, "bob", 30000, &gb, NULL), LOCK_OK);
	assert_int_equal(gb.epoch, 2);
	/* alice's epoch is gone: renewing it reports the loss */
	assert_int_equal(lock_renew(a, &ga, errbuf, sizeof(errbuf)), LOCK_LOST);

	lock_close(a);
	lock_close(b);
	store_close(st1);
	store_close(st2);
}

/* A 1 s lease lapses by the server's clock; the old holder then learns it
 * lost the lock when it tries to renew. */
static void test_lease_lapse(void **state)
{
	char name[LOCK_NAME_MAX];
	struct store *st1 = open_store(), *st2 = open_store();
	struct lock *a, *b;
	struct lock_grant ga, gb;
	struct lock_info who;
	enum lock_code rc = LOCK_HELD;
	int i;

	(void)state;
	unique_name(name, sizeof(name), "lapse");
	a = open_lock(st1, name);
	b = open_lock(st2, name);
	assert_int_equal(acquire(a, "alice", 1000, &ga, NULL), LOCK_OK);
	assert_int_equal(acquire(b, "bob", 30000, &gb, &who), LOCK_HELD);

	/* 1 s lease + 1 s rounding against the contender + 1 s Date resolution */
	for (i = 0; i < 40 && rc == LOCK_HELD; i++) {
		usleep(250 * 1000);
		rc = acquire(b, "bob", 30000, &gb, NULL);
	}
	assert_int_equal(rc, LOCK_OK);
	assert_int_equal(gb.epoch, 2);
	print_message("1 s lease lapsed after %d polls of 250 ms\n", i);
	assert_true(i >= 4); /* not before one second had passed */

	assert_int_equal(lock_renew(a, &ga, errbuf, sizeof(errbuf)), LOCK_LOST);
	lock_close(a);
	lock_close(b);
	store_close(st1);
	store_close(st2);
}

/* break: never deletes, creates epoch+1 already expired. */
static void test_break(void **state)
{
	char name[LOCK_NAME_MAX];
	struct store *st = open_store(), *st2 = open_store();
	struct lock *a, *breaker;
	struct lock_grant ga;
	struct lock_info info;
	uint64_t broken = 0;

	(void)state;
	unique_name(name, sizeof(name), "break");
	a = open_lock(st, name);
	breaker = open_lock(st2, name);
	assert_int_equal(acquire(a, "stuck", 30000, &ga, NULL), LOCK_OK);
	assert_int_equal(lock_break(breaker, "operator", &broken, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(broken, ga.epoch + 1);
	assert_int_equal(lock_status(breaker, &info, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(info.epoch, broken);
	assert_int_equal(info.state, LOCK_STATE_RELEASED);
	assert_int_equal(lock_renew(a, &ga, errbuf, sizeof(errbuf)), LOCK_LOST);
	assert_int_equal(acquire(breaker, "next", 30000, &ga, NULL), LOCK_OK);
	assert_int_equal(ga.epoch, broken + 1);
	lock_close(a);
	lock_close(breaker);
	store_close(st);
	store_close(st2);
}

/* A history of 1,005 epochs (more than one list page): a new client finds
 * 1005 and acquires 1006; gc keeps the newest and never the latest. */
static void test_long_history_and_gc(void **state)
{
	char name[LOCK_NAME_MAX], key[1200];
	struct store *st = open_store(), *st2 = open_store();
	struct lock *writer, *lk;
	struct lock_grant g;
	struct lock_payload p;
	struct store_put_opts po = { .cond = STORE_COND_IF_NONE_MATCH_ANY,
				     .content_type = "application/json" };
	struct store_result res = STORE_RESULT_INIT;
	char *json;
	unsigned long before;
	unsigned deleted = 0;
	uint64_t e, latest = 0;

	(void)state;
	unique_name(name, sizeof(name), "hist");
	writer = open_lock(st, name);
	memset(&p, 0, sizeof(p));
	strcpy(p.leader_id, "history");
	p.validity_ms = 1000;
	p.expired = true;
	json = lock_payload_format(&p);
	assert_non_null(json);
	for (e = 1; e <= 1005; e++) {
		lock_epoch_key(writer, e, key, sizeof(key));
		assert_int_equal(store_put(st, key, json, strlen(json), &po, &res), STORE_OK);
	}
	free(json);
	store_result_clear(&res);

	lk = open_lock(st2, name);
	before = st2->requests;
	assert_int_equal(lock_latest_epoch(lk, &latest, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(latest, 1005);
	print_message("latest of 1005 epochs: %lu requests (list pages)\n", st2->requests - before);
	assert_true(st2->requests - before >= 2); /* more than one page */

	assert_int_equal(acquire(lk, "w", 30000, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1006);
	assert_int_equal(lock_release(lk, &g, errbuf, sizeof(errbuf)), LOCK_OK);

	assert_int_equal(lock_gc(lk, 3, &deleted, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(deleted, 1003);
	lock_close(lk);

	/* a fresh client sees epochs 1004..1006 only, and goes on at 1007 */
	lk = open_lock(st2, name);
	assert_int_equal(lock_latest_epoch(lk, &latest, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(latest, 1006);
	lock_epoch_key(lk, 1003, key, sizeof(key));
	assert_int_equal(store_head(st2, key, &res), STORE_NOT_FOUND);
	lock_epoch_key(lk, 1004, key, sizeof(key));
	assert_int_equal(store_head(st2, key, &res), STORE_OK);
	store_result_clear(&res);
	assert_int_equal(acquire(lk, "w", 30000, &g, NULL), LOCK_OK);
	assert_int_equal(g.epoch, 1007);
	assert_int_equal(lock_gc(lk, 1, &deleted, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(lock_latest_epoch(lk, &latest, errbuf, sizeof(errbuf)), LOCK_OK);
	assert_int_equal(latest, 1007);

	lock_close(writer);
	lock_close(lk);
	store_close(st);
	store_close(st2);
}

#define RACERS 6
#define ROUNDS 12

/* One racer process: acquire without waiting, and on success write the
 * epoch to fd and release. Exits 0, or 1 on an error (not on LOCK_HELD). */
static int racer(const char *name, int id, int fd)
{
	struct store *st = open_store();
	struct lock *lk = open_lock(st, name);
	struct lock_grant g;
	char holder[32];
	int r, rc = 0;
	uint64_t last = 0;
	time_t deadline = time(NULL) + 60;

	snprintf(holder, sizeof(holder), "racer-%d", id);
	for (r = 0; r < ROUNDS && time(NULL) < deadline; r++) {
		enum lock_code c = acquire(lk, holder, 30000, &g, NULL);

		if (c == LOCK_HELD) {
			usleep(2000 * (unsigned)(id + 1));
			continue;
		}
		if (c != LOCK_OK) {
			fprintf(stderr, "racer %d: acquire: %s: %s\n", id, lock_strerror(c), errbuf);
			rc = 1;
			break;
		}
		if (g.epoch <= last) {
			fprintf(stderr, "racer %d: epoch went from %llu to %llu\n", id,
				(unsigned long long)last, (unsigned long long)g.epoch);
			rc = 1;
		}
		last = g.epoch;
		if (write(fd, &g.epoch, sizeof(g.epoch)) != sizeof(g.epoch))
			rc = 1;
		if (lock_release(lk, &g, errbuf, sizeof(errbuf)) != LOCK_OK) {
			fprintf(stderr, "racer %d: release %llu: %s\n", id,
				(unsigned long long)g.epoch, errbuf);
			rc = 1;
		}
	}
	lock_close(lk);
	store_close(st);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* N processes race for one lock: exactly one winner per epoch, and the
 * epochs won are 1..max with no gap and no duplicate. */
static void test_concurrent_acquirers(void **state)
{
	char name[LOCK_NAME_MAX];
	int fds[2], i, status, failures = 0;
	pid_t pids[RACERS];
	uint64_t won[RACERS * ROUNDS], e;
	size_t n = 0;

	(void)state;
	unique_name(name, sizeof(name), "race");
	assert_int_equal(pipe(fds), 0);
	for (i = 0; i < RACERS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			close(fds[0]);
			_exit(racer(name, i, fds[1]));
		}
	}
	close(fds[1]);
	while (n < RACERS * ROUNDS && read(fds[0], &e, sizeof(e)) == sizeof(e))
		won[n++] = e;
	close(fds[0]);
	for (i = 0; i < RACERS; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failures++;
	}
	assert_int_equal(failures, 0);
	print_message("%d racers won %zu epochs\n", RACERS, n);
	assert_true(n >= 2);
	qsort(won, n, sizeof(won[0]), cmp_u64);
	for (i = 0; i < (int)n; i++)
		assert_int_equal(won[i], (uint64_t)i + 1);
}

/* The backend self-test passes on a store that honours If-None-Match. */
static void test_check_store(void **state)
{
	struct store *st = open_store();

	(void)state;
	assert_int_equal(lock_check_store(st, store_root(st), errbuf, sizeof(errbuf)), LOCK_OK);
	store_close(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_store),
		cmocka_unit_test(test_acquire_known_latest_costs_three_requests),
		cmocka_unit_test(test_held_release_reacquire),
		cmocka_unit_test(test_break),
		cmocka_unit_test(test_lease_lapse),
		cmocka_unit_test(test_concurrent_acquirers),
		cmocka_unit_test(test_long_history_and_gc),
	};

	if (!getenv("FENCE_STORE")) {
		fprintf(stderr, "itest_lock: FENCE_STORE is not set; run it from tests/integration/run.py\n");
		return 1;
	}
	return cmocka_run_group_tests_name(getenv("FENCE_STORE"), tests, NULL, NULL);
}
