/* test_lockkey.c — the lock-file guard (proxy/fence/lockkey.c): epoch key syntax,
 * and which creates, rewrites and deletes of lock files the proxy's S3 API
 * lets through (no forged epochs, no stolen live locks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence/lockkey.h"

#define PREFIX "locks/inv/lock-"
#define LIVE "{\"leaderId\":\"w7\",\"validityMs\":30000,\"expired\":false,\"nonce\":\"n1\"}"
#define EXPIRED "{\"leaderId\":\"w7\",\"validityMs\":30000,\"expired\":true}"
#define TS_STYLE "{\"leaderId\":\"ts\",\"validityMs\":1000}"
#define JAVA_STYLE "{\"leaderId\":\"java\",\"validity_ms\":1000}"

static void test_classify(void **state)
{
	static const struct {
		const char *key;
		enum lockkey_class cls;
		uint64_t epoch;
	} cases[] = {
		{ "locks/inv/lock-0000000001.json", LOCKKEY_EPOCH_FILE, 1 },
		{ "locks/inv/lock-0000000042.json", LOCKKEY_EPOCH_FILE, 42 },
		{ "locks/inv/lock-9999999999.json", LOCKKEY_EPOCH_FILE, 9999999999ULL },
		{ "locks/inv/lock-10000000000.json", LOCKKEY_EPOCH_FILE, 10000000000ULL },
		{ "locks/inv/lock-18446744073709551615.json", LOCKKEY_EPOCH_FILE, UINT64_MAX },
		{ "locks/inv/lock-18446744073709551616.json", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock-18446744073709551617.json", LOCKKEY_MALFORMED, 0 }, /* wraps to 1 */
		{ "locks/inv/lock-0000000000.json", LOCKKEY_MALFORMED, 0 },  /* epoch 0 */
		{ "locks/inv/lock-000000001.json", LOCKKEY_MALFORMED, 0 },   /* 9 digits */
		{ "locks/inv/lock-00000000001.json", LOCKKEY_MALFORMED, 0 }, /* 11, padded */
		{ "locks/inv/lock-1.json", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock-0000000001.JSON", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock-0000000001.json.bak", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock-0000000001", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock-+000000001.json", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock- 000000001.json", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock-0000000001.json/x", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock-", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock-probe", LOCKKEY_MALFORMED, 0 },
		{ "locks/inv/lock", LOCKKEY_NOT_LOCK, 0 },
		{ "locks/inv2/lock-0000000001.json", LOCKKEY_NOT_LOCK, 0 },
		{ "data/locks/inv/lock-0000000001.json", LOCKKEY_NOT_LOCK, 0 },
		{ "invoices/2026/01.pdf", LOCKKEY_NOT_LOCK, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t epoch = 0;
		enum lockkey_class cls = lockkey_classify(cases[i].key, PREFIX, &epoch);

		if (cls != cases[i].cls || (cls == LOCKKEY_EPOCH_FILE && epoch != cases[i].epoch))
			fail_msg("%s: class %d epoch %llu", cases[i].key, cls,
				 (unsigned long long)epoch);
	}
	assert_int_equal(lockkey_classify("anything", "", NULL), LOCKKEY_NOT_LOCK);
	assert_int_equal(lockkey_classify("lock-0000000003.json", "lock-", NULL),
			 LOCKKEY_EPOCH_FILE);
	assert_true(lockkey_under_prefix("locks/inv/lock-x", PREFIX));
	assert_false(lockkey_under_prefix("locks/inv/loc", PREFIX));
}

/* The latest epoch's payload: w7 with nonce n1 (LIVE's holder). */
static const struct lock_payload held_by_w7 = { .leader_id = "w7", .validity_ms = 30000,
						 .nonce = "n1" };

/* A PUT request on epoch e with the given conditions and body. */
static struct lockkey_request put(uint64_t e, const char *inm, const char *im,
				  const char *body, uint64_t latest, enum lock_state st)
{
	static char key[64];
	struct lockkey_request r;

	snprintf(key, sizeof(key), PREFIX "%010llu.json", (unsigned long long)e);
	memset(&r, 0, sizeof(r));
	r.method = "PUT";
	r.key = key;
	r.prefix = PREFIX;
	r.if_none_match = inm;
	r.if_match = im;
	r.payload = body;
	r.payload_len = body ? strlen(body) : 0;
	r.latest_epoch = latest;
	r.latest_state = st;
	r.latest_payload = &held_by_w7;
	return r;
}

static void expect(const struct lockkey_request *r, enum lockkey_verdict v, int status,
		   const char *code)
{
	struct lockkey_decision d;

	lockkey_decide(r, &d);
	if (d.verdict != v || d.status != status ||
	    (code ? !d.code || strcmp(code, d.code) : d.code != NULL))
		fail_msg("%s %s inm=%s im=%s latest=%llu: got %s %d %s (%s)", r->method, r->key,
			 r->if_none_match ? r->if_none_match : "-",
			 r->if_match ? r->if_match : "-", (unsigned long long)r->latest_epoch,
			 lockkey_strverdict(d.verdict), d.status, d.code ? d.code : "-",
			 d.message);
	if (v == LOCKKEY_REFUSE)
		assert_true(strlen(d.message) > 0);
}

static void test_create(void **state)
{
	struct lockkey_request r;
	struct lockkey_decision d;

	(void)state;
	/* The first epoch of a free lock. */
	r = put(1, "*", NULL, LIVE, 0, LOCK_STATE_FREE);
	expect(&r, LOCKKEY_ALLOW_CREATE, 0, NULL);
	lockkey_decide(&r, &d);
	assert_int_equal(d.epoch, 1);
	/* latest+1 after a lapsed or released latest; payload formats of the
	 * TypeScript and Java clients too. */
	r = put(8, "*", NULL, LIVE, 7, LOCK_STATE_LAPSED);
	expect(&r, LOCKKEY_ALLOW_CREATE, 0, NULL);
	r = put(8, "*", NULL, TS_STYLE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_ALLOW_CREATE, 0, NULL);
	r = put(8, " * ", NULL, JAVA_STYLE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_ALLOW_CREATE, 0, NULL);
	/* Forging: anything but latest+1. */
	r = put(9999999999ULL, "*", NULL, LIVE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 409, "LockEpochNotNext");
	r = put(7, "*", NULL, LIVE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 409, "LockEpochNotNext");
	r = put(3, "*", NULL, LIVE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 409, "LockEpochNotNext");
	r = put(2, "*", NULL, LIVE, 0, LOCK_STATE_FREE);
	expect(&r, LOCKKEY_REFUSE, 409, "LockEpochNotNext");
	/* Stealing a live lock is refused; a break (already expired) is not. */
	r = put(8, "*", NULL, LIVE, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 409, "LockHeld");
	r = put(8, "*", NULL, LIVE, 7, LOCK_STATE_UNREADABLE);
	expect(&r, LOCKKEY_REFUSE, 409, "LockHeld");
	r = put(8, "*", NULL, EXPIRED, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_ALLOW_CREATE, 0, NULL);
	/* Conditions. */
	r = put(8, NULL, NULL, LIVE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 428, "ConditionalWriteRequired");
	r = put(8, "\"*\"", NULL, LIVE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 428, "ConditionalWriteRequired");
	r = put(8, "\"abc\"", NULL, LIVE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 428, "ConditionalWriteRequired");
	r = put(8, "*", "\"abc\"", LIVE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockWrite");
	/* Payloads. */
	r = put(8, "*", NULL, NULL, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockPayload");
	r = put(8, "*", NULL, "", 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockPayload");
	r = put(8, "*", NULL, "not json", 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockPayload");
	r = put(8, "*", NULL, "{\"validityMs\":1}", 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockPayload");
	r = put(8, "*", NULL, "{\"leaderId\":\"x\",\"validityMs\":-5}", 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockPayload");
	r = put(8, "*", NULL, "[1]", 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockPayload");
	/* Overflow of latest+1 cannot wrap to epoch 0 or 1. */
	r = put(1, "*", NULL, LIVE, UINT64_MAX, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 409, "LockEpochNotNext");
}

static void test_rewrite(void **state)
{
	struct lockkey_request r;

	(void)state;
	/* Renew and release of the latest. */
	r = put(7, NULL, "\"e1\"", LIVE, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_ALLOW_REWRITE, 0, NULL);
	r = put(7, NULL, "\"e1\"", EXPIRED, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_ALLOW_REWRITE, 0, NULL);
	/* A lapsed lease is not revived; marking it expired is fine. */
	r = put(7, NULL, "\"e1\"", LIVE, 7, LOCK_STATE_LAPSED);
	expect(&r, LOCKKEY_REFUSE, 409, "LockLost");
	r = put(7, NULL, "\"e1\"", EXPIRED, 7, LOCK_STATE_LAPSED);
	expect(&r, LOCKKEY_ALLOW_REWRITE, 0, NULL);
	/* A live lease keeps its holder: another leaderId or nonce is refused,
	 * and so is a live rewrite over an unreadable payload. */
	r = put(7, NULL, "\"e1\"", "{\"leaderId\":\"thief\",\"validityMs\":30000,"
		"\"nonce\":\"n1\"}", 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 409, "LockHolderMismatch");
	r = put(7, NULL, "\"e1\"", "{\"leaderId\":\"w7\",\"validityMs\":30000,"
		"\"nonce\":\"n2\"}", 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 409, "LockHolderMismatch");
	r = put(7, NULL, "\"e1\"", LIVE, 7, LOCK_STATE_UNREADABLE);
	r.latest_payload = NULL;
	expect(&r, LOCKKEY_REFUSE, 409, "LockLost");
	r = put(7, NULL, "\"e1\"", EXPIRED, 7, LOCK_STATE_UNREADABLE);
	r.latest_payload = NULL;
	expect(&r, LOCKKEY_ALLOW_REWRITE, 0, NULL);
	/* A released epoch stays released. */
	r = put(7, NULL, "\"e1\"", LIVE, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_REFUSE, 409, "LockLost");
	r = put(7, NULL, "\"e1\"", EXPIRED, 7, LOCK_STATE_RELEASED);
	expect(&r, LOCKKEY_ALLOW_REWRITE, 0, NULL);
	/* Old and future epochs. */
	r = put(6, NULL, "\"e1\"", LIVE, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 409, "LockLost");
	r = put(8, NULL, "\"e1\"", LIVE, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 409, "LockEpochNotNext");
	/* Unconditional or wildcard. */
	r = put(7, NULL, "*", LIVE, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 428, "ConditionalWriteRequired");
	r = put(7, NULL, "", LIVE, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 428, "ConditionalWriteRequired");
	r = put(7, NULL, NULL, LIVE, 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 428, "ConditionalWriteRequired");
	r = put(7, NULL, "\"e1\"", "garbage", 7, LOCK_STATE_HELD);
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockPayload");
}

static void test_other_methods(void **state)
{
	struct lockkey_request r;

	(void)state;
	r = put(7, NULL, NULL, NULL, 7, LOCK_STATE_HELD);
	r.method = "GET";
	expect(&r, LOCKKEY_READ_PASS, 0, NULL);
	r.method = "HEAD";
	expect(&r, LOCKKEY_READ_PASS, 0, NULL);
	r.method = "POST";
	expect(&r, LOCKKEY_REFUSE, 405, "MethodNotAllowed");
	r.method = "PATCH";
	expect(&r, LOCKKEY_REFUSE, 405, "MethodNotAllowed");
	r.method = NULL;
	expect(&r, LOCKKEY_REFUSE, 405, "MethodNotAllowed");
	/* Garbage collection: old files only, never the latest. */
	r.method = "DELETE";
	expect(&r, LOCKKEY_REFUSE, 409, "LockFileIsLatest");
	r.latest_epoch = 9;
	expect(&r, LOCKKEY_ALLOW_DELETE, 0, NULL);
	r = put(12, NULL, NULL, NULL, 9, LOCK_STATE_HELD);
	r.method = "DELETE";
	expect(&r, LOCKKEY_REFUSE, 409, "LockFileIsLatest");
	/* Copies and multipart onto a lock key. */
	r = put(8, "*", NULL, LIVE, 7, LOCK_STATE_RELEASED);
	r.copy_or_multipart = true;
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockWrite");
	/* Malformed keys under the prefix: reads pass, writes are refused. */
	r = put(8, "*", NULL, LIVE, 7, LOCK_STATE_RELEASED);
	r.key = PREFIX "9999999999999.json.tmp";
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockKey");
	r.method = "DELETE";
	expect(&r, LOCKKEY_REFUSE, 400, "InvalidLockKey");
	r.method = "GET";
	expect(&r, LOCKKEY_READ_PASS, 0, NULL);
	/* Data keys are not this module's business. */
	r = put(8, NULL, NULL, NULL, 7, LOCK_STATE_HELD);
	r.key = "invoices/1.pdf";
	expect(&r, LOCKKEY_NOT_LOCK_KEY, 0, NULL);
	assert_string_equal(lockkey_strverdict(LOCKKEY_ALLOW_CREATE), "allow_create");
}

/* The lock's epoch mark, outside the prefix: a lock key that clients only
 * read, whatever the write (create, rewrite, delete, copy, a high value). */
static void test_epoch_mark(void **state)
{
	static const char *const writes[] = { "PUT", "DELETE", "POST", NULL };
	char mark[200];
	struct lockkey_request r;
	size_t i;

	(void)state;
	assert_int_equal(lock_mark_key_of(PREFIX, mark, sizeof(mark)), 0);
	assert_null(strstr(mark, PREFIX));           /* not under the lock prefix */
	assert_int_equal(lockkey_classify(mark, PREFIX, NULL), LOCKKEY_EPOCH_MARK);
	assert_int_equal(lockkey_under_prefix(mark, PREFIX), 1);
	assert_int_equal(lockkey_classify(mark, "locks/other/lock-", NULL), LOCKKEY_NOT_LOCK);
	for (i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		r = put(8, "*", NULL, "{\"epoch\":9999999999}", 7, LOCK_STATE_RELEASED);
		r.key = mark;
		r.method = writes[i];
		expect(&r, LOCKKEY_REFUSE, 403, LOCK_MARK_RESERVED_CODE);
		r.if_none_match = NULL;
		r.if_match = "\"etag\"";
		r.copy_or_multipart = true;
		expect(&r, LOCKKEY_REFUSE, 403, LOCK_MARK_RESERVED_CODE);
	}
	r.method = "GET";
	expect(&r, LOCKKEY_READ_PASS, 0, NULL);
	r.method = "HEAD";
	expect(&r, LOCKKEY_READ_PASS, 0, NULL);
	/* a key near it is data */
	r.key = "fencing-marks/inv/high-water.json.bak";
	r.method = "PUT";
	expect(&r, LOCKKEY_NOT_LOCK_KEY, 0, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_rewrite),
		cmocka_unit_test(test_other_methods),
		cmocka_unit_test(test_epoch_mark),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
