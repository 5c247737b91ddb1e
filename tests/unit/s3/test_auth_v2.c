/* test_auth_v2.c — proxy/s3/auth_v2.c through auth_verify_head: SigV2
 * client requests. The path-style worked examples of the S3 developer
 * guide (values from tests/testdata/sigv2/s3-doc-examples.json, which
 * test_sigv2.c checks in full) verified at their own date; round trips signed with wire/sigv2.c, header and
 * presigned; then each refusal: wrong secret, unknown key, skew, expiry,
 * malformed header and query, mixed mechanisms, tampering, aws-chunked,
 * and the fencing headers SigV2 cannot sign on a write. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/auth.h"
#include "http/front.h"
#include "wire/sigv2.h"
#include "wire/sigv4.h"

#define NOW_HTTP      "Tue, 14 Nov 2023 22:13:20 GMT"
#define NOW_PLUS0     "Tue, 14 Nov 2023 22:13:20 +0000"

#include "authtest.h"

static char qbuf[512];  /* the query of the request under test */

/* An empty request under test whose query is qbuf. */
static void treq_init(struct treq *r, const char *method, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->path = path;
	qbuf[0] = '\0';
	r->query = qbuf;
}

static void expect_v2(struct treq *r, time_t now, struct auth_result *out)
{
	expect_ok(r, now, out);
	assert_int_equal(out->sigv2, 1);
}

/* The signature of r as it stands (expires: presigned), by secret. */
static void signature_of(struct treq *r, const char *secret, const char *expires,
			 char sig[SIGV2_SIGNATURE_LEN + 1])
{
	struct sigv2_header hs[32];
	struct sigv2_request req;
	char *sts = NULL;

	assert_true(r->h.n <= 32);
	for (size_t i = 0; i < r->h.n; i++)
		hs[i] = (struct sigv2_header){ r->h.v[i].name, r->h.v[i].value };
	req = (struct sigv2_request){ r->method, NULL, r->path, r->query, hs, r->h.n, expires };
	assert_int_equal(sigv2_string_to_sign(&req, &sts), 0);
	sigv2_signature(secret, sts, sig);
	free(sts);
}

/* Signs r's headers with the header form. */
static void sign_header(struct treq *r, const char *key, const char *secret)
{
	char sig[SIGV2_SIGNATURE_LEN + 1], value[256];

	signature_of(r, secret, NULL, sig);
	snprintf(value, sizeof(value), "AWS %s:%s", key, sig);
	add(r, "Authorization", value);
}

/* Appends AWSAccessKeyId, Expires and the %-encoded Signature to r's query. */
static void presign(struct treq *r, const char *key, const char *secret, long long expires)
{
	char sig[SIGV2_SIGNATURE_LEN + 1], exp[24], enc[3 * SIGV2_SIGNATURE_LEN + 1];
	size_t o = 0;

	snprintf(exp, sizeof(exp), "%lld", expires);
	signature_of(r, secret, exp, sig);
	for (const char *c = sig; *c; c++)
		o += (size_t)(*c == '+' || *c == '/' || *c == '=' ?
			      snprintf(enc + o, sizeof(enc) - o, "%%%02X", (unsigned char)*c) :
			      snprintf(enc + o, sizeof(enc) - o, "%c", *c));
	snprintf(qbuf + strlen(qbuf), sizeof(qbuf) - strlen(qbuf),
		 "%sAWSAccessKeyId=%s&Expires=%s&Signature=%s", qbuf[0] ? "&" : "", key, exp, enc);
}

static void worker_put(struct treq *r)
{
	treq_init(r, "PUT", "/acme-billing/invoices/a%20b%2Bc.json");
	add(r, "Host", "127.0.0.1:8080");
	add(r, "Date", NOW_PLUS0);
	add(r, "Content-Type", "application/json");
	add(r, "Content-Length", "12");
	add(r, "x-amz-meta-fencing-token", "7");
	sign_header(r, WORKER_KEY, WORKER_SECRET);
}

/* ---- the guide's path-style examples ---------------------------------------- */

static void test_doc_examples(void **state)
{
	struct treq r;
	struct auth_result out;

	(void)state;
	/* List all my buckets, at its own date (Wed, 28 Mar 2007 01:29:59) */
	treq_init(&r, "GET", "/");
	add(&r, "Host", "s3.us-west-1.amazonaws.com");
	add(&r, "Date", "Wed, 28 Mar 2007 01:29:59 +0000");
	add(&r, "Authorization", "AWS " DOC_KEY ":qGdzdERIC03wnaRNKh6OqZehG9s=");
	expect_v2(&r, 1175045399, &out);
	assert_string_equal(out.access_key, DOC_KEY);
	assert_int_equal(out.presigned, 0);
	assert_int_equal(out.payload, AUTH_PAYLOAD_UNSIGNED);
	/* the same an hour later: skewed */
	expect_reject(&r, 1175045399 + 3600, 403, "RequestTimeTooSkewed");
	treq_free(&r);
	/* Unicode keys: the path is signed as sent, escapes and case kept */
	treq_init(&r, "GET", "/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re");
	add(&r, "Host", "s3.us-west-1.amazonaws.com");
	add(&r, "Date", "Wed, 28 Mar 2007 01:49:49 +0000");
	add(&r, "Authorization", "AWS " DOC_KEY ":DNEZGsoieTZ92F3bUfSPQcbGmlM=");
	expect_v2(&r, 1175046589, &out);
	r.path = "/dictionary/fran%c3%a7ais/pr%c3%a9f%c3%a8re";
	expect_reject(&r, 1175046589, 403, "SignatureDoesNotMatch");
	treq_free(&r);
	/* Delete with x-amz-date, signed by the rule (README of the data) */
	treq_init(&r, "DELETE", "/johnsmith/photos/puppy.jpg");
	add(&r, "User-Agent", "dotnet");
	add(&r, "Host", "s3.amazonaws.com");
	add(&r, "Date", "Tue, 27 Mar 2007 21:20:27 +0000");
	add(&r, "x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000");
	add(&r, "Authorization", "AWS " DOC_KEY ":lx3byBScXR6KzyMaifNkardMwNk=");
	/* the page's own signature signs the other string */
	expect_reject(&r, 1175030426, 403, "SignatureDoesNotMatch");
	treq_free(&r);
}

/* ---- round trips ----------------------------------------------------------- */

static void test_roundtrip_header(void **state)
{
	struct treq r;
	struct auth_result out;

	(void)state;
	worker_put(&r);
	expect_v2(&r, NOW, &out);
	assert_string_equal(out.access_key, WORKER_KEY);
	/* within the skew, either side */
	expect_v2(&r, NOW + 899, &out);
	expect_v2(&r, NOW - 899, &out);
	expect_reject(&r, NOW + 901, 403, "RequestTimeTooSkewed");
	expect_reject(&r, NOW - 901, 403, "RequestTimeTooSkewed");
	treq_free(&r);
	/* GMT form and x-amz-date (which wins over a wrong Date) */
	treq_init(&r, "GET", "/acme-billing/invoices/a");
	snprintf(qbuf, sizeof(qbuf), "versionId=3&response-content-type=text%%2Fplain");
	add(&r, "Date", "Mon, 01 Jan 2001 00:00:00 GMT");
	add(&r, "X-Amz-Date", NOW_HTTP);
	sign_header(&r, WORKER_KEY, WORKER_SECRET);
	expect_v2(&r, NOW, &out);
	/* a changed sub-resource is a different request */
	snprintf(qbuf, sizeof(qbuf), "versionId=4&response-content-type=text%%2Fplain");
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	/* a parameter that is not a sub-resource is not signed */
	snprintf(qbuf, sizeof(qbuf), "versionId=3&response-content-type=text%%2Fplain&x-id=G");
	expect_v2(&r, NOW, &out);
	treq_free(&r);
}

static void test_roundtrip_presign(void **state)
{
	struct treq r;
	struct auth_result out;

	(void)state;
	treq_init(&r, "GET", "/acme-billing/invoices/report.pdf");
	add(&r, "Host", "127.0.0.1:8080");
	presign(&r, WORKER_KEY, WORKER_SECRET, NOW + 3600);
	expect_v2(&r, NOW, &out);
	assert_int_equal(out.presigned, 1);
	assert_string_equal(out.access_key, WORKER_KEY);
	expect_v2(&r, NOW + 3600, &out);
	expect_reject(&r, NOW + 3601, 403, "AccessDenied");  /* expired */
	/* the Date header plays no part in a presigned request */
	add(&r, "Date", "Mon, 01 Jan 2001 00:00:00 GMT");
	expect_v2(&r, NOW, &out);
	/* tampered: another key, another expiry */
	r.path = "/acme-billing/invoices/other.pdf";
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	r.path = "/acme-billing/invoices/report.pdf";
	*strstr(qbuf, "Expires=") = '\0';
	strcat(qbuf, "Expires=1700007200&Signature=x");
	expect_reject(&r, NOW, 400, "AuthorizationQueryParametersError");
	treq_free(&r);
	/* a raw '+' in the Signature (not %-encoded) still verifies */
	treq_init(&r, "GET", "/b/k");
	for (int i = 0; i < 64; i++) {
		char sig[SIGV2_SIGNATURE_LEN + 1], exp[24];

		snprintf(exp, sizeof(exp), "%lld", (long long)NOW + 60 + i);
		qbuf[0] = '\0';
		signature_of(&r, WORKER_SECRET, exp, sig);
		if (!strchr(sig, '+'))
			continue;
		snprintf(qbuf, sizeof(qbuf), "AWSAccessKeyId=%s&Expires=%s&Signature=%s",
			 WORKER_KEY, exp, sig);
		/* '=' padding unencoded is a value byte too */
		expect_v2(&r, NOW, &out);
		break;
	}
	treq_free(&r);
}

/* ---- refusals -------------------------------------------------------------- */

static void test_keys_and_tampering(void **state)
{
	struct treq r;

	(void)state;
	worker_put(&r);
	front_hdrs_set(&r.h, "Content-Type", "text/plain");
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	treq_free(&r);
	worker_put(&r);
	front_hdrs_set(&r.h, "x-amz-meta-fencing-token", "8");
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	treq_free(&r);
	worker_put(&r);
	add(&r, "x-amz-meta-fencing-lock", "other");   /* an added x-amz-* header */
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	treq_free(&r);
	worker_put(&r);
	add(&r, "Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==");
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	treq_free(&r);
	/* wrong secret, unknown key */
	treq_init(&r, "GET", "/b/k");
	add(&r, "Date", NOW_PLUS0);
	sign_header(&r, WORKER_KEY, "not the secret");
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	front_hdrs_del(&r.h, "Authorization");
	sign_header(&r, "AKIANOBODY", WORKER_SECRET);
	expect_reject(&r, NOW, 403, "InvalidAccessKeyId");
	treq_free(&r);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"AWS ", "AWS " WORKER_KEY, "AWS :qGdzdERIC03wnaRNKh6OqZehG9s=",
		"AWS " WORKER_KEY ":", "AWS " WORKER_KEY ":short=",
		"AWS " WORKER_KEY ":qGdzdERIC03wnaRNKh6OqZehG9s==",
		"AWS a b:qGdzdERIC03wnaRNKh6OqZehG9s=",
	};
	struct treq r;
	struct auth_result out;

	(void)state;
	treq_init(&r, "GET", "/b/k");
	add(&r, "Date", NOW_PLUS0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		front_hdrs_set(&r.h, "Authorization", bad[i]);
		verify_at(&r, NOW, &out);
		if (out.verdict != AUTH_REJECTED || out.err.status != 400 ||
		    strcmp(out.err.code, "InvalidArgument") != 0)
			fail_msg("\"%s\": %d %s", bad[i], out.err.status, out.err.code ? out.err.code : "-");
	}
	/* no usable date */
	front_hdrs_set(&r.h, "Authorization", "AWS " WORKER_KEY ":qGdzdERIC03wnaRNKh6OqZehG9s=");
	front_hdrs_set(&r.h, "Date", "20231114T221320Z");
	expect_reject(&r, NOW, 403, "AccessDenied");
	front_hdrs_set(&r.h, "Date", "Tue, 14 Nov 2023 22:13:20 +2500");
	expect_reject(&r, NOW, 403, "AccessDenied");
	front_hdrs_del(&r.h, "Date");
	expect_reject(&r, NOW, 403, "AccessDenied");
	/* an offset other than +0000 is honoured */
	front_hdrs_set(&r.h, "Date", "Tue, 14 Nov 2023 23:13:20 +0100");
	front_hdrs_del(&r.h, "Authorization");
	sign_header(&r, WORKER_KEY, WORKER_SECRET);
	expect_v2(&r, NOW, &out);
	/* header and query together */
	snprintf(qbuf, sizeof(qbuf), "AWSAccessKeyId=%s&Expires=1700003600&Signature=x",
		 WORKER_KEY);
	expect_reject(&r, NOW, 400, "InvalidArgument");
	treq_free(&r);
	/* SigV2 and SigV4 query together; incomplete or bad query */
	treq_init(&r, "GET", "/b/k");
	snprintf(qbuf, sizeof(qbuf), "AWSAccessKeyId=A&Expires=1&Signature=s&"
		 "X-Amz-Algorithm=AWS4-HMAC-SHA256");
	expect_reject(&r, NOW, 400, "InvalidArgument");
	snprintf(qbuf, sizeof(qbuf), "AWSAccessKeyId=%s&Signature=x", WORKER_KEY);
	expect_reject(&r, NOW, 400, "AuthorizationQueryParametersError");
	snprintf(qbuf, sizeof(qbuf), "AWSAccessKeyId=A&AWSAccessKeyId=B&Expires=1&Signature=s");
	expect_reject(&r, NOW, 400, "AuthorizationQueryParametersError");
	snprintf(qbuf, sizeof(qbuf), "AWSAccessKeyId=A&Expires=1&Signature=%%zz");
	expect_reject(&r, NOW, 400, "AuthorizationQueryParametersError");
	qbuf[0] = '\0';
	presign(&r, WORKER_KEY, WORKER_SECRET, NOW + 8 * 86400);   /* too far ahead */
	expect_reject(&r, NOW, 400, "AuthorizationQueryParametersError");
	qbuf[0] = '\0';
	strcpy(qbuf, "AWSAccessKeyId=" WORKER_KEY "&Expires=-5&Signature=qGdzdERIC03wnaRNKh6OqZehG9s%3D");
	expect_reject(&r, NOW, 400, "AuthorizationQueryParametersError");
	/* Expires alone is an ordinary parameter: anonymous */
	strcpy(qbuf, "Expires=1");
	verify_at(&r, NOW, &out);
	assert_int_equal(out.verdict, AUTH_ANONYMOUS);
	treq_free(&r);
}

/* SigV2 cannot sign X-Fencing-*, If-Match, If-None-Match: refused on a
 * write whatever the signature, allowed on a read. */
static void test_fencing_headers_on_writes(void **state)
{
	static const char *const fencing[][2] = {
		{ "X-Fencing-Token", "7" }, { "X-Fencing-Lock", "invoices" },
		{ "If-Match", "\"abc\"" }, { "If-None-Match", "*" },
	};
	struct treq r;
	struct auth_result out;

	(void)state;
	for (size_t i = 0; i < sizeof(fencing) / sizeof(fencing[0]); i++) {
		treq_init(&r, i % 2 ? "DELETE" : "PUT", "/acme-billing/invoices/a");
		add(&r, "Date", NOW_PLUS0);
		add(&r, fencing[i][0], fencing[i][1]);
		sign_header(&r, WORKER_KEY, WORKER_SECRET);  /* valid over what V2 signs */
		verify_at(&r, NOW, &out);
		assert_int_equal(out.verdict, AUTH_REJECTED);
		assert_int_equal(out.err.status, 403);
		assert_string_equal(out.err.code, "AccessDenied");
		assert_non_null(strstr(out.err.message, fencing[i][0][0] == 'X' ? "x-fencing" : "if-"));
		/* the same on a read passes */
		r.method = "GET";
		front_hdrs_del(&r.h, "Authorization");
		sign_header(&r, WORKER_KEY, WORKER_SECRET);
		expect_v2(&r, NOW, &out);
		treq_free(&r);
	}
	/* presigned writes too */
	treq_init(&r, "PUT", "/acme-billing/invoices/a");
	add(&r, "X-Fencing-Token", "7");
	presign(&r, WORKER_KEY, WORKER_SECRET, NOW + 60);
	expect_reject(&r, NOW, 403, "AccessDenied");
	treq_free(&r);
}

static void test_payload(void **state)
{
	struct treq r;
	struct auth_result out;

	(void)state;
	/* a SHA-256 in x-amz-content-sha256 is signed and checked on the body */
	treq_init(&r, "PUT", "/b/k");
	add(&r, "Date", NOW_PLUS0);
	add(&r, "Content-Length", "3");
	add(&r, "x-amz-content-sha256",
	    "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
	sign_header(&r, WORKER_KEY, WORKER_SECRET);
	expect_v2(&r, NOW, &out);
	assert_int_equal(out.payload, AUTH_PAYLOAD_SIGNED);
	assert_string_equal(out.payload_hash,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* ... which cannot match an empty body */
	front_hdrs_set(&r.h, "Content-Length", "0");
	expect_reject(&r, NOW, 400, "XAmzContentSHA256Mismatch");
	treq_free(&r);
	/* aws-chunked needs SigV4 */
	treq_init(&r, "PUT", "/b/k");
	add(&r, "Date", NOW_PLUS0);
	add(&r, "x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	sign_header(&r, WORKER_KEY, WORKER_SECRET);
	expect_reject(&r, NOW, 400, "InvalidRequest");
	front_hdrs_set(&r.h, "x-amz-content-sha256", "junk");
	expect_reject(&r, NOW, 400, "InvalidRequest");
	treq_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc_examples),
		cmocka_unit_test(test_roundtrip_header),
		cmocka_unit_test(test_roundtrip_presign),
		cmocka_unit_test(test_keys_and_tampering),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_fencing_headers_on_writes),
		cmocka_unit_test(test_payload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
