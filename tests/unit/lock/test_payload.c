/* test_payload.c — lock file payloads (lock_payload.c): our format, the
 * TypeScript client's and the Java design's, and everything that must be
 * refused (garbage, missing fields, wrong types, huge input). Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lock/core/lock.h"

static int parse(const char *json, struct lock_payload *p)
{
	return lock_payload_parse(json, strlen(json), p);
}

static void test_our_format_round_trips(void **state)
{
	struct lock_payload in, out;
	char *json;

	(void)state;
	memset(&in, 0, sizeof(in));
	snprintf(in.leader_id, sizeof(in.leader_id), "worker-7 \"quoted\" é");
	in.validity_ms = 30000;
	in.expired = false;
	snprintf(in.nonce, sizeof(in.nonce), "9f1c00aa");
	snprintf(in.host, sizeof(in.host), "node-3");
	in.pid = 4121;
	in.renewals = 12;
	json = lock_payload_format(&in);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"validityMs\":30000"));
	assert_non_null(strstr(json, "\"expired\":false"));
	assert_non_null(strstr(json, "\"v\":1"));
	assert_int_equal(parse(json, &out), 0);
	assert_string_equal(out.leader_id, in.leader_id);
	assert_int_equal(out.validity_ms, 30000);
	assert_false(out.expired);
	assert_string_equal(out.nonce, "9f1c00aa");
	assert_string_equal(out.host, "node-3");
	assert_int_equal(out.pid, 4121);
	assert_int_equal(out.renewals, 12);
	free(json);

	in.expired = true;
	json = lock_payload_format(&in);
	assert_non_null(json);
	assert_int_equal(parse(json, &out), 0);
	assert_true(out.expired);
	free(json);
}

static void test_design_example(void **state)
{
	struct lock_payload p;

	(void)state;
	assert_int_equal(parse("{\"leaderId\": \"worker-7\", \"validityMs\": 30000, \"expired\": false,\n"
			       " \"nonce\": \"9f1c\", \"host\": \"node-3\", \"pid\": 4121, "
			       "\"renewals\": 0, \"v\": 1}\n", &p), 0);
	assert_string_equal(p.leader_id, "worker-7");
	assert_int_equal(p.pid, 4121);
}

static void test_typescript_format(void **state)
{
	struct lock_payload p;

	(void)state;
	assert_int_equal(parse("{\"leaderId\":\"ts\",\"validityMs\":10000,\"expired\":true}", &p), 0);
	assert_string_equal(p.leader_id, "ts");
	assert_int_equal(p.validity_ms, 10000);
	assert_true(p.expired);
	assert_string_equal(p.nonce, "");
	assert_int_equal(p.renewals, 0);
}

static void test_java_format(void **state)
{
	struct lock_payload p;

	(void)state;
	assert_int_equal(parse("{\"leaderId\":\"j\",\"validity_ms\":5000,\"expired\":false}", &p), 0);
	assert_int_equal(p.validity_ms, 5000);
	assert_false(p.expired);
	/* validityMs wins when both are present */
	assert_int_equal(parse("{\"leaderId\":\"j\",\"validityMs\":7,\"validity_ms\":5000}", &p), 0);
	assert_int_equal(p.validity_ms, 7);
	/* unknown fields are ignored */
	assert_int_equal(parse("{\"leaderId\":\"j\",\"validity_ms\":1,\"extra\":{\"a\":[1,2]}}", &p), 0);
}

/* Every one of these is unreadable: parse answers -1 and zeroes the payload. */
static const char *const refused[] = {
	"",
	"not json",
	"{",
	"[]",
	"null",
	"\"leaderId\"",
	"{}",
	"{\"leaderId\":\"x\"}",                                     /* no validity */
	"{\"validityMs\":1000}",                                    /* no leaderId */
	"{\"leaderId\":7,\"validityMs\":1000}",                     /* wrong type */
	"{\"leaderId\":null,\"validityMs\":1000}",
	"{\"leaderId\":\"x\",\"validityMs\":\"1000\"}",
	"{\"leaderId\":\"x\",\"validityMs\":-1}",
	"{\"leaderId\":\"x\",\"validityMs\":1e300}",
	"{\"leaderId\":\"x\",\"validityMs\":true}",
	"{\"leaderId\":\"x\",\"validityMs\":\"1\",\"validity_ms\":1000}",
	"{\"leaderId\":\"x\",\"validity_ms\":-5}",
	"{\"leaderId\":\"x\",\"validityMs\":1000} trailing",
	"{\"leaderId\":\"x\",\"validityMs\":1000}{}",
};

static void test_refused(void **state)
{
	struct lock_payload p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		memset(&p, 0x5a, sizeof(p));
		if (parse(refused[i], &p) != -1)
			fail_msg("accepted: %s", refused[i]);
		assert_string_equal(p.leader_id, "");
		assert_int_equal(p.validity_ms, 0);
	}
	assert_int_equal(lock_payload_parse(NULL, 0, &p), -1);
}

static void test_optional_fields_of_wrong_type(void **state)
{
	struct lock_payload p;

	(void)state;
	/* a mangled "expired" never frees a lock: it counts as not expired */
	assert_int_equal(parse("{\"leaderId\":\"x\",\"validityMs\":1,\"expired\":\"true\"}", &p), 0);
	assert_false(p.expired);
	assert_int_equal(parse("{\"leaderId\":\"x\",\"validityMs\":1,\"expired\":1}", &p), 0);
	assert_false(p.expired);
	assert_int_equal(parse("{\"leaderId\":\"x\",\"validityMs\":1,\"nonce\":5,\"pid\":\"7\","
			       "\"renewals\":-3,\"host\":[]}", &p), 0);
	assert_string_equal(p.nonce, "");
	assert_int_equal(p.pid, 0);
	assert_int_equal(p.renewals, 0);
	assert_string_equal(p.host, "");
}

static void test_huge_input(void **state)
{
	struct lock_payload p;
	size_t n = 1 << 20, i;
	char *json = malloc(n + 64);
	char nonce[200];

	(void)state;
	assert_non_null(json);
	/* a 1 MiB leaderId: not a lock file of ours */
	i = (size_t)sprintf(json, "{\"validityMs\":1,\"leaderId\":\"");
	memset(json + i, 'a', n);
	strcpy(json + i + n, "\"}");
	assert_int_equal(parse(json, &p), -1);
	/* a leaderId longer than the buffer but in a small file is truncated */
	i = (size_t)sprintf(json, "{\"validityMs\":1,\"leaderId\":\"");
	memset(json + i, 'b', 1000);
	strcpy(json + i + 1000, "\"}");
	assert_int_equal(parse(json, &p), 0);
	assert_int_equal(strlen(p.leader_id), LOCK_HOLDER_MAX - 1);
	/* an over-long nonce is never taken for ours: it reads as "" */
	memset(nonce, 'c', 150);
	nonce[150] = '\0';
	snprintf(json, n, "{\"leaderId\":\"x\",\"validityMs\":1,\"nonce\":\"%s\"}", nonce);
	assert_int_equal(parse(json, &p), 0);
	assert_string_equal(p.nonce, "");
	/* deep nesting is refused by cJSON, not a stack overflow */
	for (i = 0; i < 100000; i++)
		json[i] = '[';
	json[i] = '\0';
	assert_int_equal(parse(json, &p), -1);
	/* a length that stops early: only that prefix is read */
	strcpy(json, "{\"leaderId\":\"x\",\"validityMs\":1}GARBAGE");
	assert_int_equal(lock_payload_parse(json, strlen(json) - 7, &p), 0);
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_our_format_round_trips),
		cmocka_unit_test(test_design_example),
		cmocka_unit_test(test_typescript_format),
		cmocka_unit_test(test_java_format),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_optional_fields_of_wrong_type),
		cmocka_unit_test(test_huge_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
