/* test_sigv4_rules.c — wire/sigv4 rules the published vectors in
 * tests/testdata/sigv4 (test_sigv4.c) do not pin down: URI encoding, the
 * canonical URI (S3 and normalized), query and headers, dates and hashes,
 * constant-time signature comparison, and the requests it refuses to sign. */
#include "sigv4_test.h"

/* Canonical request of (method GET, path, query, one host header). */
static char *creq_of(const char *path, const char *query, int s3)
{
	static const struct sigv4_header host = { "Host", "example.com" };
	struct sigv4_request req = {
		.method = "GET", .path = path, .query = query, .headers = &host,
		.nheaders = 1, .payload_hash = SIGV4_EMPTY_SHA256, .s3 = s3,
	};
	char *creq = NULL, *signed_list = NULL;

	if (sigv4_canonical_request(&req, &creq, &signed_list))
		return NULL;
	assert_string_equal(signed_list, "host");
	free(signed_list);
	return creq;
}

static void assert_uri(const char *path, int s3, const char *want)
{
	char *creq = creq_of(path, NULL, s3);
	char *line;

	assert_non_null(creq);
	line = nth_line(creq, 1);
	assert_string_equal(line, want);
	free(line);
	free(creq);
}

static void assert_query(const char *query, const char *want)
{
	char *creq = creq_of("/", query, 1);
	char *line;

	assert_non_null(creq);
	line = nth_line(creq, 2);
	assert_string_equal(line, want);
	free(line);
	free(creq);
}

static void test_uri_encode(void **state)
{
	char *s;

	(void)state;
	s = sigv4_uri_encode("a b/c~-._+=é", strlen("a b/c~-._+=é"), 0);
	assert_string_equal(s, "a%20b/c~-._%2B%3D%C3%A9");
	free(s);
	s = sigv4_uri_encode("a/b", 3, 1);
	assert_string_equal(s, "a%2Fb");
	free(s);
	s = sigv4_uri_encode("", 0, 1);
	assert_string_equal(s, "");
	free(s);
	s = sigv4_uri_encode("a\0b", 3, 1);
	assert_string_equal(s, "a%00b");
	free(s);
}

static void test_canonical_uri_s3(void **state)
{
	(void)state;
	/* once-encoded, as given: no dot removal, no slash collapsing */
	assert_uri("/bucket/a//b/../c/./d", 1, "/bucket/a//b/../c/./d");
	assert_uri("/bucket/a%2Fb%2fc", 1, "/bucket/a%2Fb%2Fc");
	assert_uri("/bucket/a%20b+c$", 1, "/bucket/a%20b%2Bc%24");
	assert_uri("/bucket/%7Euser%41", 1, "/bucket/~userA");
	assert_uri("/bucket/é", 1, "/bucket/%C3%A9");
	assert_uri("", 1, "/");
	assert_uri(NULL, 1, "/");
	assert_uri("key", 1, "/key");
	assert_null(creq_of("/bucket/a%zz", NULL, 1));
	assert_null(creq_of("/bucket/a%4", NULL, 1));
	assert_null(creq_of("/bucket/a%", NULL, 1));
}

static void test_canonical_uri_normalized(void **state)
{
	(void)state;
	assert_uri("/a/b/..", 0, "/a/");
	assert_uri("/a/b/../c", 0, "/a/c");
	assert_uri("/../..", 0, "/");
	assert_uri("/a/./b/.", 0, "/a/b/");
	assert_uri("//a///b", 0, "/a/b");
	assert_uri("/a%2Fb", 0, "/a%252Fb"); /* encoded twice */
	assert_uri("/a b", 0, "/a%20b");
	assert_uri("/", 0, "/");
	assert_uri("a/./b", 0, "/a/b");
	assert_uri("/..a/b..", 0, "/..a/b..");
	assert_null(creq_of("/a%g0", NULL, 0));
}

static void test_canonical_query_rules(void **state)
{
	(void)state;
	assert_query("b=2&a=1&a=0", "a=0&a=1&b=2");
	assert_query("lifecycle", "lifecycle=");
	assert_query("acl=", "acl=");
	assert_query("&&x&", "x=");
	/* a literal '+' is a space as S3 reads it; an encoded one stays '+' */
	assert_query("q=a+b&q=a%2Bb", "q=a%20b&q=a%2Bb");
	assert_query("prefix=dir/sub&delimiter=/", "delimiter=%2F&prefix=dir%2Fsub");
	assert_query("k=%7e%41", "k=~A");
	assert_query("k=a=b", "k=a%3Db");
	assert_query("%41=1&B=2&a=3", "A=1&B=2&a=3");
	assert_null(creq_of("/", "a=%4", 1));
	assert_null(creq_of("/", "a%zz=1", 1));
}

static void test_canonical_headers_rules(void **state)
{
	static const struct sigv4_header headers[] = {
		{ "X-Amz-Meta-B", "  two\t\twords  " },
		{ "Host", "example.com" },
		{ "x-amz-meta-a", "1" },
		{ "X-AMZ-META-A", " 2 " },
		{ "x-amz-meta-empty", "   " },
	};
	static const struct sigv4_header bad_name[] = { { "Bad Name", "x" } };
	static const struct sigv4_header colon_name[] = { { "a:b", "x" } };
	static const struct sigv4_header empty_name[] = { { "", "x" } };
	struct sigv4_request req = {
		.method = "PUT", .path = "/b/k", .headers = headers,
		.nheaders = sizeof(headers) / sizeof(headers[0]),
		.payload_hash = SIGV4_UNSIGNED, .s3 = 1,
	};
	char *creq = NULL, *signed_list = NULL;

	(void)state;
	assert_int_equal(sigv4_canonical_request(&req, &creq, &signed_list), 0);
	assert_string_equal(creq, "PUT\n/b/k\n\n"
			    "host:example.com\n"
			    "x-amz-meta-a:1,2\n"
			    "x-amz-meta-b:two words\n"
			    "x-amz-meta-empty:\n"
			    "\n"
			    "host;x-amz-meta-a;x-amz-meta-b;x-amz-meta-empty\n"
			    "UNSIGNED-PAYLOAD");
	free(creq);
	free(signed_list);

	req.nheaders = 1;
	req.headers = bad_name;
	assert_int_equal(sigv4_canonical_request(&req, &creq, &signed_list), -1);
	req.headers = colon_name;
	assert_int_equal(sigv4_canonical_request(&req, &creq, &signed_list), -1);
	req.headers = empty_name;
	assert_int_equal(sigv4_canonical_request(&req, &creq, &signed_list), -1);
	req.headers = headers;
	req.payload_hash = NULL;
	assert_int_equal(sigv4_canonical_request(&req, &creq, &signed_list), -1);
}

static void test_dates_and_hashes(void **state)
{
	char date[17], hex[65];

	(void)state;
	sigv4_amz_date(0, date);
	assert_string_equal(date, "19700101T000000Z");
	sigv4_amz_date(1440938160, date);
	assert_string_equal(date, "20150830T123600Z");
	/* the same second again (served from the per-thread cache), the next
	 * one, and back */
	sigv4_amz_date(1440938160, date);
	assert_string_equal(date, "20150830T123600Z");
	sigv4_amz_date(1440938161, date);
	assert_string_equal(date, "20150830T123601Z");
	sigv4_amz_date(0, date);
	assert_string_equal(date, "19700101T000000Z");
	sigv4_sha256_hex("", 0, hex);
	assert_string_equal(hex, SIGV4_EMPTY_SHA256);
	sigv4_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_null(sigv4_scope("2015", "r", "s"));
}

static void test_signature_equal(void **state)
{
	const char *a = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";
	const char *b = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf30";

	(void)state;
	assert_true(sigv4_signature_equal(a, a));
	assert_false(sigv4_signature_equal(a, b));
	assert_false(sigv4_signature_equal(a, "5fa00f"));
	assert_false(sigv4_signature_equal("", ""));
	assert_false(sigv4_signature_equal(NULL, a));
	assert_false(sigv4_signature_equal(a, NULL));
}

static void test_signing_refusals(void **state)
{
	static const struct sigv4_header host = { "Host", "example.com" };
	struct sigv4_request req = {
		.method = "GET", .path = "/b/k", .query = "prefix=a/b",
		.headers = &host, .nheaders = 1,
		.payload_hash = SIGV4_UNSIGNED, .s3 = 1,
	};
	struct sigv4_credentials cred = { "AKID", "SECRET", "tok+en/=" };
	char *q;

	(void)state;
	assert_null(sigv4_presign_query(&req, &cred, "us-east-1", "s3",
					"20150830T123600Z", 0));
	assert_null(sigv4_presign_query(&req, &cred, "us-east-1", "s3",
					"20150830T123600Z", 604801));
	assert_null(sigv4_presign_query(&req, &cred, "us-east-1", "s3",
					"20150830", 60));
	assert_null(sigv4_authorization(&req, &cred, "us-east-1", "s3", "bad"));
	cred.secret_key = NULL;
	assert_null(sigv4_authorization(&req, &cred, "us-east-1", "s3",
					"20150830T123600Z"));
	cred.secret_key = "SECRET";

	q = sigv4_presign_query(&req, &cred, "us-east-1", "s3",
				"20150830T123600Z", 604800);
	assert_non_null(q);

	assert_non_null(strstr(q, "&X-Amz-Expires=604800&"));
	assert_non_null(strstr(q, "&X-Amz-Security-Token=tok%2Ben%2F%3D&"));
	/* sorted by code point: "prefix" after "X-Amz-*", the signature last */
	assert_non_null(strstr(q, "&X-Amz-SignedHeaders=host&prefix=a%2Fb"
			       "&X-Amz-Signature="));
	free(q);
}

int main(void)
{
	static const struct CMUnitTest rule_tests[] = {
		cmocka_unit_test(test_uri_encode),
		cmocka_unit_test(test_canonical_uri_s3),
		cmocka_unit_test(test_canonical_uri_normalized),
		cmocka_unit_test(test_canonical_query_rules),
		cmocka_unit_test(test_canonical_headers_rules),
		cmocka_unit_test(test_dates_and_hashes),
		cmocka_unit_test(test_signature_equal),
		cmocka_unit_test(test_signing_refusals),
	};

	return cmocka_run_group_tests_name("sigv4_rules", rule_tests, NULL, NULL);
}
