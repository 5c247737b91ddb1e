/* test_auth_refusals.c — proxy/s3/auth.c: every SigV4 refusal of a client
 * request: wrong secret, unknown key, clock skew and expiry, malformed
 * Authorization headers, unsigned or missing headers, tampering, anonymous
 * requests, and a content SHA-256 that is not what was signed. */
#include "authv4test.h"

static void test_wrong_secret_and_unknown_key(void **state)
{
	struct treq r;
	char date[17];

	(void)state;
	sigv4_amz_date(NOW, date);
	worker_put(&r);
	front_hdrs_del(&r.h, "Authorization");
	sign(&r, WORKER_KEY, "not the secret", date, SIGV4_UNSIGNED);
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	front_hdrs_del(&r.h, "Authorization");
	sign(&r, "AKIAUNKNOWN", WORKER_SECRET, date, SIGV4_UNSIGNED);
	expect_reject(&r, NOW, 403, "InvalidAccessKeyId");
	treq_free(&r);
}

static void test_clock_skew(void **state)
{
	struct treq r;
	struct auth_result out;

	(void)state;
	worker_put(&r);
	expect_ok(&r, NOW + 14 * 60, &out);
	auth_result_clear(&out);
	expect_ok(&r, NOW - 14 * 60, &out);
	auth_result_clear(&out);
	expect_ok(&r, NOW + 900, &out);
	auth_result_clear(&out);
	expect_reject(&r, NOW + 16 * 60, 403, "RequestTimeTooSkewed");
	expect_reject(&r, NOW - 16 * 60, 403, "RequestTimeTooSkewed");
	/* an unparsable x-amz-date */
	front_hdrs_set(&r.h, "x-amz-date", "20231114T221320");
	expect_reject(&r, NOW, 403, "AccessDenied");
	front_hdrs_set(&r.h, "x-amz-date", "20231114T251320Z");
	expect_reject(&r, NOW, 403, "AccessDenied");
	/* the credential scope's date must be x-amz-date's date */
	front_hdrs_set(&r.h, "x-amz-date", "20231115T001000Z");
	expect_reject(&r, NOW, 400, "AuthorizationHeaderMalformed");
	treq_free(&r);
}

static void test_malformed_authorization(void **state)
{
#define CRED "Credential=" WORKER_KEY "/" NOW_DATE8 "/us-east-1/s3/aws4_request"
#define SH "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-meta-fencing-token"
#define SIG "Signature=" ZERO_SIG
	static const char *const bad[] = {
		"AWS4-HMAC-SHA256",
		"AWS4-HMAC-SHA256 ",
		"AWS4-HMAC-SHA256" CRED ", " SH ", " SIG,
		"aws4-hmac-sha256 " CRED ", " SH ", " SIG,
		"AWS4-HMAC-SHA256 " CRED ", " SH,
		"AWS4-HMAC-SHA256 " CRED ", " SIG,
		"AWS4-HMAC-SHA256 " SH ", " SIG,
		"AWS4-HMAC-SHA256 " CRED ", " CRED ", " SH ", " SIG,
		"AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG ", Foo=bar",
		"AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG ", junk",
		"AWS4-HMAC-SHA256 " CRED " " SH ", " SIG,
		"AWS4-HMAC-SHA256 Credential=" WORKER_KEY "/" NOW_DATE8 "/us-east-1/s3, " SH ", " SIG,
		"AWS4-HMAC-SHA256 Credential=" WORKER_KEY "/" NOW_DATE8
			"/us-east-1/s3/aws4_request/x, " SH ", " SIG,
		"AWS4-HMAC-SHA256 Credential=" WORKER_KEY "/2023111/us-east-1/s3/aws4_request, "
			SH ", " SIG,
		"AWS4-HMAC-SHA256 Credential=" WORKER_KEY "/" NOW_DATE8
			"/us-east-1/s3/aws4_reques, " SH ", " SIG,
		"AWS4-HMAC-SHA256 Credential=/" NOW_DATE8 "/us-east-1/s3/aws4_request, "
			SH ", " SIG,
		"AWS4-HMAC-SHA256 Credential=" WORKER_KEY "/" NOW_DATE8 "//s3/aws4_request, "
			SH ", " SIG,
		"AWS4-HMAC-SHA256 Credential=" WORKER_KEY "/" NOW_DATE8
			"/us-east-1/sqs/aws4_request, " SH ", " SIG,
		"AWS4-HMAC-SHA256 " CRED ", SignedHeaders=Host;x-amz-date, " SIG,
		"AWS4-HMAC-SHA256 " CRED ", SignedHeaders=host;;x-amz-date, " SIG,
		"AWS4-HMAC-SHA256 " CRED ", SignedHeaders=host;host, " SIG,
		"AWS4-HMAC-SHA256 " CRED ", SignedHeaders=, " SIG,
		"AWS4-HMAC-SHA256 " CRED ", " SH ", Signature=" ZERO_SIG "0",
		"AWS4-HMAC-SHA256 " CRED ", " SH ", Signature=" "g" ZERO_SIG,
		"AWS4-HMAC-SHA256 " CRED ", " SH ", Signature=",
	};
	size_t i;
	struct treq r;

	(void)state;
	worker_put(&r);
	/* the control: the same shape, well-formed, is a signature mismatch */
	front_hdrs_set(&r.h, "Authorization", "AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG);
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	front_hdrs_set(&r.h, "Authorization", "AWS4-HMAC-SHA256 " SIG "," SH "," CRED);
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct auth_result out;

		front_hdrs_set(&r.h, "Authorization", bad[i]);
		verify_at(&r, NOW, &out);
		if (out.verdict != AUTH_REJECTED || out.err.status != 400 ||
		    strcmp(out.err.code, "AuthorizationHeaderMalformed") != 0)
			fail_msg("variant %zu \"%s\": %d %s (%s)", i, bad[i], out.err.status,
				 out.err.code ? out.err.code : "-", out.err.message);
	}
	/* two Authorization headers */
	add(&r, "Authorization", "AWS4-HMAC-SHA256 " CRED ", " SH ", " SIG);
	expect_reject(&r, NOW, 400, "AuthorizationHeaderMalformed");
	/* Signature Version 2 is parsed as such (test_auth_v2.c): malformed */
	front_hdrs_set(&r.h, "Authorization", "AWS " WORKER_KEY);
	expect_reject(&r, NOW, 400, "InvalidArgument");
	treq_free(&r);
#undef CRED
#undef SH
#undef SIG
}

static void test_signed_header_coverage(void **state)
{
	struct treq r;
	struct auth_result out;
	char date[17];

	(void)state;
	sigv4_amz_date(NOW, date);
	/* a signed header missing from the request */
	worker_put(&r);
	front_hdrs_del(&r.h, "Content-Type");
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	treq_free(&r);
	/* host not signed */
	memset(&r, 0, sizeof(r));
	r.method = "GET";
	r.path = "/b/k";
	add(&r, "x-amz-date", date);
	add(&r, "x-amz-content-sha256", SIGV4_UNSIGNED);
	sign(&r, WORKER_KEY, WORKER_SECRET, date, SIGV4_UNSIGNED);
	add(&r, "Host", "127.0.0.1:8080");
	expect_reject(&r, NOW, 403, "AccessDenied");
	treq_free(&r);
	/* an x-amz-* header added after signing */
	worker_put(&r);
	expect_ok(&r, NOW, &out);
	auth_result_clear(&out);
	add(&r, "X-Amz-Meta-Fencing-Epoch", "9");
	expect_reject(&r, NOW, 403, "AccessDenied");
	treq_free(&r);
	/* the headers fencing decides on, added after signing: refused */
	static const char *const fencing[][2] = {
		{ "X-Fencing-Token", "8" }, { "x-fencing-lock", "other" },
		{ "If-Match", "\"abc\"" }, { "If-None-Match", "*" },
	};
	for (size_t i = 0; i < sizeof(fencing) / sizeof(fencing[0]); i++) {
		worker_put(&r);
		add(&r, fencing[i][0], fencing[i][1]);
		expect_reject(&r, NOW, 403, "AccessDenied");
		treq_free(&r);
	}
	/* ... and accepted when signed */
	memset(&r, 0, sizeof(r));
	r.method = "PUT";
	r.path = "/b/k";
	add(&r, "Host", "127.0.0.1:8080");
	add(&r, "x-amz-date", date);
	add(&r, "x-amz-content-sha256", SIGV4_UNSIGNED);
	add(&r, "X-Fencing-Token", "8");
	add(&r, "If-Match", "\"abc\"");
	sign(&r, WORKER_KEY, WORKER_SECRET, date, SIGV4_UNSIGNED);
	expect_ok(&r, NOW, &out);
	auth_result_clear(&out);
	treq_free(&r);
	/* a read decides nothing on them: unsigned is fine there */
	memset(&r, 0, sizeof(r));
	r.method = "GET";
	r.path = "/b/k";
	add(&r, "Host", "127.0.0.1:8080");
	add(&r, "x-amz-date", date);
	add(&r, "x-amz-content-sha256", SIGV4_UNSIGNED);
	sign(&r, WORKER_KEY, WORKER_SECRET, date, SIGV4_UNSIGNED);
	add(&r, "X-Fencing-Token", "8");
	add(&r, "If-None-Match", "\"abc\"");
	expect_ok(&r, NOW, &out);
	auth_result_clear(&out);
	treq_free(&r);
}

static void test_tampering(void **state)
{
	struct treq r;
	struct auth_result out;

	(void)state;
	worker_put(&r);
	expect_ok(&r, NOW, &out);
	auth_result_clear(&out);
	r.query = "x-id=PutObject&tag=a%2Fc";
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	r.query = "x-id=PutObject";
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	r.query = "x-id=PutObject&tag=a%2Fb";
	r.path = "/acme-billing/invoices/2023/a%20b%2Bd.json";
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	r.path = "/acme-billing/invoices/2023/a%20b%2Bc.json";
	r.method = "POST";
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	r.method = "PUT";
	front_hdrs_set(&r.h, "x-amz-meta-fencing-token", "8");
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	front_hdrs_set(&r.h, "x-amz-meta-fencing-token", "7");
	expect_ok(&r, NOW, &out);
	auth_result_clear(&out);
	/* the signature with its first or its last digit changed */
	{
		char orig[512], copy[512];
		char *sig;

		snprintf(orig, sizeof(orig), "%s", front_hdrs_get(&r.h, "Authorization"));
		memcpy(copy, orig, sizeof(copy));
		sig = strstr(copy, "Signature=") + 10;
		sig[0] = sig[0] == '0' ? '1' : '0';
		front_hdrs_set(&r.h, "Authorization", copy);
		expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
		sig[0] = orig[sig - copy];
		sig[63] = sig[63] == '0' ? '1' : '0';
		front_hdrs_set(&r.h, "Authorization", copy);
		expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	}
	treq_free(&r);
}

static void test_anonymous(void **state)
{
	struct treq r = { "GET", "/b/k", "X-Amz-Date=20231114T221320Z&x-amz-foo=1", NULL, { 0 } };
	struct auth_result out;

	(void)state;
	add(&r, "Host", "h");
	verify_at(&r, NOW, &out);
	assert_int_equal(out.verdict, AUTH_ANONYMOUS);
	assert_int_equal(out.err.status, 0);
	assert_int_equal(out.payload, AUTH_PAYLOAD_UNSIGNED);
	treq_free(&r);
}

static void test_content_sha256(void **state)
{
	struct treq r;
	struct auth_result out;
	char date[17];

	(void)state;
	sigv4_amz_date(NOW, date);
	/* missing */
	worker_put(&r);
	front_hdrs_del(&r.h, "x-amz-content-sha256");
	expect_reject(&r, NOW, 400, "InvalidRequest");
	/* not a known value */
	front_hdrs_set(&r.h, "x-amz-content-sha256", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD");
	expect_reject(&r, NOW, 400, "InvalidArgument");
	front_hdrs_set(&r.h, "x-amz-content-sha256", "abc");
	expect_reject(&r, NOW, 400, "InvalidArgument");
	treq_free(&r);

	/* streaming: needs x-amz-decoded-content-length */
	memset(&r, 0, sizeof(r));
	r.method = "PUT";
	r.path = "/b/k";
	add(&r, "Host", "h");
	add(&r, "x-amz-date", date);
	add(&r, "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	add(&r, "Content-Encoding", "aws-chunked");
	add(&r, "x-amz-trailer", "x-amz-checksum-CRC32");
	sign(&r, WORKER_KEY, WORKER_SECRET, date, "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	expect_reject(&r, NOW, 411, "MissingContentLength");
	treq_free(&r);
	memset(&r, 0, sizeof(r));
	r.method = "PUT";
	r.path = "/b/k";
	add(&r, "Host", "h");
	add(&r, "x-amz-date", date);
	add(&r, "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	add(&r, "x-amz-decoded-content-length", "11");
	add(&r, "x-amz-trailer", "x-amz-checksum-CRC32");
	sign(&r, WORKER_KEY, WORKER_SECRET, date, "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	add(&r, "Transfer-Encoding", "chunked");
	expect_ok(&r, NOW, &out);
	assert_int_equal(out.payload, AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER);
	assert_int_equal(out.decoded_length, 11);
	assert_string_equal(out.trailer_name, "x-amz-checksum-crc32");
	assert_string_equal(auth_payload_name(out.payload), "streaming-unsigned-trailer");
	auth_result_clear(&out);
	front_hdrs_set(&r.h, "x-amz-decoded-content-length", "1x");
	expect_reject(&r, NOW, 400, "InvalidArgument");
	treq_free(&r);
}

static void test_signed_hash_on_empty_body(void **state)
{
	static const char *hello_sha = /* sha256("hello") */
		"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
	struct treq r = { "PUT", "/b/k", NULL, NULL, { 0 } };
	struct auth_result out;
	char date[17];

	(void)state;
	sigv4_amz_date(NOW, date);
	add(&r, "Host", "h");
	add(&r, "x-amz-date", date);
	add(&r, "x-amz-content-sha256", hello_sha);
	sign(&r, WORKER_KEY, WORKER_SECRET, date, hello_sha);
	add(&r, "Content-Length", "0");
	expect_reject(&r, NOW, 400, "XAmzContentSHA256Mismatch");
	front_hdrs_set(&r.h, "Content-Length", "5");
	expect_ok(&r, NOW, &out);
	assert_int_equal(out.payload, AUTH_PAYLOAD_SIGNED);
	assert_string_equal(out.payload_hash, hello_sha);
	auth_result_clear(&out);
	treq_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrong_secret_and_unknown_key),
		cmocka_unit_test(test_clock_skew),
		cmocka_unit_test(test_malformed_authorization),
		cmocka_unit_test(test_signed_header_coverage),
		cmocka_unit_test(test_tampering),
		cmocka_unit_test(test_anonymous),
		cmocka_unit_test(test_content_sha256),
		cmocka_unit_test(test_signed_hash_on_empty_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
