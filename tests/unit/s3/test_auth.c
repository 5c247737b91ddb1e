/* test_auth.c — proxy/s3/auth.c: SigV4 verification of client requests.
 * The worked S3 examples (tests/testdata/sigv4/s3-doc-examples.json,
 * override with FENCE_SIGV4_TESTDATA; missing data fails) verified at their
 * own date; round trips with requests signed by wire/sigv4.c; and the
 * streaming payload-hash check of the body. Every refusal (wrong secret,
 * unknown key, clock skew, malformed or tampered requests) is in
 * test_auth_refusals.c. */
#include <cjson/cJSON.h>

#include "authv4test.h"
#include "tests/unit/testdata.h"

#define TESTDATA_DEFAULT "tests/testdata/sigv4"
#define DOC_NOW    ((time_t)1369353600) /* 2013-05-24T00:00:00Z */

static cJSON *doc;

/* ---- the S3 documentation examples ------------------------------------------------ */

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	if (!cJSON_IsString(v))
		fail_msg("missing string %s", key);
	return v->valuestring;
}

static void test_doc_header_cases(void **state)
{
	const cJSON *c;
	unsigned checked = 0;

	(void)state;
	assert_non_null(doc);
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
		const cJSON *line;
		struct treq r = { 0 };
		struct auth_result out;
		char target[512] = "";
		const char *q, *content, *name = jstr(c, "name");
		int first = 1;

		if (strcmp(jstr(c, "kind"), "header") != 0)
			continue;
		r.method = jstr(c, "method");
		r.path = jstr(c, "path");
		cJSON_ArrayForEach(line, cJSON_GetObjectItem(c, "request_headers_as_sent")) {
			char hname[128];
			const char *colon, *v;

			if (first) { /* the request line: take the query from it */
				sscanf(line->valuestring, "%*s %511s", target);
				first = 0;
				continue;
			}
			colon = strchr(line->valuestring, ':');
			assert_non_null(colon);
			snprintf(hname, sizeof(hname), "%.*s",
				 (int)(colon - line->valuestring), line->valuestring);
			for (v = colon + 1; *v == ' '; v++)
				;
			add(&r, hname, v);
		}
		q = strchr(target, '?');
		r.query = q ? q + 1 : NULL;
		if (cJSON_GetObjectItem(c, "body") && !front_hdrs_get(&r.h, "content-length"))
			add(&r, "Content-Length", "21");
		add(&r, "Authorization", jstr(c, "authorization"));
		expect_ok(&r, DOC_NOW, &out);
		assert_string_equal(out.seed_signature, jstr(c, "signature"));
		assert_string_equal(out.access_key, DOC_KEY);
		assert_string_equal(out.scope, "20130524/us-east-1/s3/aws4_request");
		assert_string_equal(out.amz_date, "20130524T000000Z");
		content = jstr(c, "x-amz-content-sha256");
		if (strcmp(content, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") == 0) {
			assert_int_equal(out.payload, AUTH_PAYLOAD_STREAMING_SIGNED);
			assert_int_equal(out.decoded_length, 66560);
		} else if (strcmp(content, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") == 0) {
			assert_int_equal(out.payload, AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER);
			assert_string_equal(out.trailer_name, "x-amz-checksum-crc32c");
		} else {
			assert_int_equal(out.payload, AUTH_PAYLOAD_SIGNED);
			assert_string_equal(out.payload_hash, content);
		}
		auth_result_clear(&out);
		/* one day later the same request is refused */
		expect_reject(&r, DOC_NOW + 86400, 403, "RequestTimeTooSkewed");
		/* a changed signed header breaks the signature; an added
		 * x-amz-* header is refused as unsigned */
		if (cJSON_GetObjectItem(cJSON_GetObjectItem(c, "signed_headers"),
					"x-amz-storage-class")) {
			front_hdrs_set(&r.h, "x-amz-storage-class", "STANDARD");
			expect_reject(&r, DOC_NOW, 403, "SignatureDoesNotMatch");
		} else {
			front_hdrs_set(&r.h, "x-amz-storage-class", "STANDARD");
			expect_reject(&r, DOC_NOW, 403, "AccessDenied");
		}
		(void)name;
		treq_free(&r);
		checked++;
	}
	assert_int_equal(checked, 6);
}

static const cJSON *doc_presigned(void)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases"))
		if (strcmp(jstr(c, "kind"), "presigned") == 0)
			return c;
	fail_msg("no presigned case");
	return NULL;
}

static void test_doc_presigned(void **state)
{
	const cJSON *c;
	struct treq r = { 0 };
	struct auth_result out;
	char query[1024];
	const char *q;

	(void)state;
	assert_non_null(doc);
	c = doc_presigned();
	q = strchr(jstr(c, "url"), '?');
	assert_non_null(q);
	snprintf(query, sizeof(query), "%s", q + 1);
	r.method = "GET";
	r.path = jstr(c, "path");
	r.query = query;
	add(&r, "Host", jstr(c, "host"));
	expect_ok(&r, DOC_NOW, &out);
	assert_true(out.presigned);
	assert_int_equal(out.payload, AUTH_PAYLOAD_UNSIGNED);
	assert_string_equal(out.seed_signature, jstr(c, "signature"));
	assert_string_equal(out.access_key, DOC_KEY);
	auth_result_clear(&out);
	/* valid to the last second of X-Amz-Expires=86400, then expired */
	expect_ok(&r, DOC_NOW + 86400, &out);
	auth_result_clear(&out);
	expect_reject(&r, DOC_NOW + 86401, 403, "AccessDenied");
	verify_at(&r, DOC_NOW + 86401, &out);
	assert_string_equal(out.err.message, "Request has expired");
	/* not valid before its date (beyond the skew allowance) */
	expect_ok(&r, DOC_NOW - 900, &out);
	auth_result_clear(&out);
	expect_reject(&r, DOC_NOW - 901, 403, "AccessDenied");
	/* a lengthened expiry is covered by the signature */
	memcpy(strstr(query, "86400"), "86401", 5);
	expect_reject(&r, DOC_NOW, 403, "SignatureDoesNotMatch");
	memcpy(strstr(query, "86401"), "86400", 5);
	/* an extra parameter, a tampered path, another Host */
	{
		char more[1100];

		snprintf(more, sizeof(more), "%s&versionId=1", query);
		r.query = more;
		expect_reject(&r, DOC_NOW, 403, "SignatureDoesNotMatch");
		r.query = query;
	}
	r.path = "/test.txT";
	expect_reject(&r, DOC_NOW, 403, "SignatureDoesNotMatch");
	r.path = jstr(c, "path");
	front_hdrs_set(&r.h, "Host", "evil.example.com");
	expect_reject(&r, DOC_NOW, 403, "SignatureDoesNotMatch");
	front_hdrs_set(&r.h, "Host", jstr(c, "host"));
	/* an unsigned x-amz-* header */
	add(&r, "x-amz-meta-a", "b");
	expect_reject(&r, DOC_NOW, 403, "AccessDenied");
	front_hdrs_del(&r.h, "x-amz-meta-a");
	/* query and header auth together */
	add(&r, "Authorization", "AWS4-HMAC-SHA256 Credential=x");
	expect_reject(&r, DOC_NOW, 400, "InvalidArgument");
	front_hdrs_del(&r.h, "Authorization");
	/* without the signature it is an incomplete presign */
	*strstr(query, "&X-Amz-Signature=") = '\0';
	expect_reject(&r, DOC_NOW, 400, "AuthorizationQueryParametersError");
	treq_free(&r);
}

/* Presign queries built by hand: parameter checks before the signature. */
static void test_presign_query_errors(void **state)
{
	static const struct {
		const char *query;
		int status;
		const char *code;
	} cases[] = {
		{ "X-Amz-Algorithm=AWS4-HMAC-SHA256", 400, "AuthorizationQueryParametersError" },
		{ "X-Amz-Signature=" ZERO_SIG, 400, "AuthorizationQueryParametersError" },
#define PQ(alg, cred, date, exp, sh, sig) \
	"X-Amz-Algorithm=" alg "&X-Amz-Credential=" cred "&X-Amz-Date=" date \
	"&X-Amz-Expires=" exp "&X-Amz-SignedHeaders=" sh "&X-Amz-Signature=" sig
#define CRED WORKER_KEY "%2F" NOW_DATE8 "%2Fus-east-1%2Fs3%2Faws4_request"
#define DATE NOW_DATE8 "T221320Z"
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "3600", "host", ZERO_SIG), 403,
		  "SignatureDoesNotMatch" }, /* the control: well-formed */
		{ PQ("AWS4-HMAC-SHA1", CRED, DATE, "3600", "host", ZERO_SIG), 400,
		  "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "0", "host", ZERO_SIG), 400,
		  "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "604801", "host", ZERO_SIG), 400,
		  "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "-5", "host", ZERO_SIG), 400,
		  "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "1e3", "host", ZERO_SIG), 400,
		  "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", CRED, "20231114T221320", "3600", "host", ZERO_SIG),
		  400, "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", CRED, "20231115T221320Z", "3600", "host", ZERO_SIG),
		  400, "AuthorizationQueryParametersError" }, /* scope date differs */
		{ PQ("AWS4-HMAC-SHA256", WORKER_KEY "%2F" NOW_DATE8 "%2Fus-east-1%2Fs3",
		     DATE, "3600", "host", ZERO_SIG), 400, "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "3600", "x-amz-date", ZERO_SIG), 403,
		  "AccessDenied" }, /* host not signed */
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "3600", "host", "abc"), 400,
		  "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", "NOPE%2F" NOW_DATE8 "%2Fus-east-1%2Fs3%2Faws4_request",
		     DATE, "3600", "host", ZERO_SIG), 403, "InvalidAccessKeyId" },
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "3600", "host", ZERO_SIG)
		  "&X-Amz-Date=" DATE, 400, "AuthorizationQueryParametersError" },
		{ PQ("AWS4-HMAC-SHA256", CRED, DATE, "36%0", "host", ZERO_SIG), 400,
		  "AuthorizationQueryParametersError" },
#undef PQ
#undef CRED
#undef DATE
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct treq r = { .method = "GET", .path = "/b/k", .query = cases[i].query };
		struct auth_result out;

		add(&r, "Host", "127.0.0.1:8080");
		verify_at(&r, NOW, &out);
		if (out.verdict != AUTH_REJECTED || out.err.status != cases[i].status ||
		    strcmp(out.err.code, cases[i].code) != 0)
			fail_msg("case %zu (%s): got %d %s (%s)", i, cases[i].query,
				 out.err.status, out.err.code ? out.err.code : "-",
				 out.err.message);
		treq_free(&r);
	}
}

/* ---- round trips with wire/sigv4.c ---------------------------------------------------- */

static void test_roundtrip_header(void **state)
{
	static const struct {
		const char *method, *path, *query;
	} shapes[] = {
		{ "GET", "/", NULL },
		{ "GET", "/bucket", "list-type=2&prefix=a%20b%2Fc&delimiter=%2F" },
		{ "PUT", "/bucket/k%C3%A9y%21%2A%27%28%29", "partNumber=2&uploadId=x~y" },
		{ "DELETE", "/bucket/a/b/../c", "" },
		{ "POST", "/bucket/key", "uploads" },
		{ "HEAD", "/bucket/with+plus", "versionId=3&versionId=1" },
	};
	size_t i;
	char date[17];

	(void)state;
	sigv4_amz_date(NOW, date);
	for (i = 0; i < sizeof(shapes) / sizeof(*shapes); i++) {
		struct treq r = { shapes[i].method, shapes[i].path, shapes[i].query, NULL, { 0 } };
		struct auth_result out;

		add(&r, "host", "proxy.internal:8443");
		add(&r, "X-Amz-Date", date);
		add(&r, "X-Amz-Content-Sha256", SIGV4_EMPTY_SHA256);
		add(&r, "x-amz-meta-note", "  two   spaces  ");
		add(&r, "X-Amz-Meta-Multi", "a");
		add(&r, "x-amz-meta-multi", "b");
		sign(&r, WORKER_KEY, WORKER_SECRET, date, SIGV4_EMPTY_SHA256);
		expect_ok(&r, NOW, &out);
		assert_int_equal(out.payload, AUTH_PAYLOAD_SIGNED);
		assert_string_equal(out.access_key, WORKER_KEY);
		auth_result_clear(&out);
		/* headers the client did not sign may be added (not x-amz-*) */
		add(&r, "User-Agent", "test");
		expect_ok(&r, NOW, &out);
		auth_result_clear(&out);
		/* the region must match when the proxy requires one */
		r.region = "us-east-1";
		expect_ok(&r, NOW, &out);
		auth_result_clear(&out);
		r.region = "eu-west-1";
		expect_reject(&r, NOW, 400, "AuthorizationHeaderMalformed");
		treq_free(&r);
	}
}

static void test_roundtrip_date_header(void **state)
{
	struct treq r = { "GET", "/b/k", NULL, NULL, { 0 } };
	struct auth_result out;
	char date[17];

	(void)state;
	/* no x-amz-date: the Date header is the timestamp */
	sigv4_amz_date(NOW, date);
	add(&r, "Host", "h");
	add(&r, "Date", "Tue, 14 Nov 2023 22:13:20 GMT");
	add(&r, "x-amz-content-sha256", SIGV4_UNSIGNED);
	sign(&r, WORKER_KEY, WORKER_SECRET, date, SIGV4_UNSIGNED);
	expect_ok(&r, NOW, &out);
	assert_string_equal(out.amz_date, date);
	auth_result_clear(&out);
	expect_reject(&r, NOW + 901, 403, "RequestTimeTooSkewed");
	front_hdrs_set(&r.h, "Date", "Tue, 14 Nov 2023 22:13:20 UTC");
	expect_reject(&r, NOW, 403, "AccessDenied");
	front_hdrs_set(&r.h, "Date", "Tue, 31 Nov 2023 22:13:20 GMT");
	expect_reject(&r, NOW, 403, "AccessDenied");
	front_hdrs_del(&r.h, "Date");
	expect_reject(&r, NOW, 403, "AccessDenied");
	treq_free(&r);
}

static void test_roundtrip_presign(void **state)
{
	struct sigv4_header host = { "host", "127.0.0.1:8080" };
	struct sigv4_request sreq = { "GET", "/bucket/a%20key", "list-type=2&prefix=x%2By",
				      &host, 1, SIGV4_UNSIGNED, 1 };
	struct sigv4_credentials cred = { WORKER_KEY, WORKER_SECRET, "tok/en+1" };
	struct treq r = { "GET", "/bucket/a%20key", NULL, NULL, { 0 } };
	struct auth_result out;
	char date[17];
	char *query;

	(void)state;
	sigv4_amz_date(NOW, date);
	query = sigv4_presign_query(&sreq, &cred, "us-east-1", "s3", date, 600);
	assert_non_null(query);
	r.query = query;
	add(&r, "Host", "127.0.0.1:8080");
	expect_ok(&r, NOW + 600, &out);
	assert_true(out.presigned);
	auth_result_clear(&out);
	expect_reject(&r, NOW + 601, 403, "AccessDenied");
	/* the security token is part of the signed query */
	*strstr(query, "X-Amz-Security-Token=") = 'Y';
	expect_reject(&r, NOW, 403, "SignatureDoesNotMatch");
	free(query);
	treq_free(&r);
}

/* ---- the body hash -------------------------------------------------------------------- */

struct sink {
	char out[256];
	size_t len;
	int fail;
};

static int sink_emit(void *arg, const char *data, size_t len)
{
	struct sink *s = arg;

	if (s->fail)
		return -1;
	assert_true(s->len + len <= sizeof(s->out));
	memcpy(s->out + s->len, data, len);
	s->len += len;
	return 0;
}

static void test_body_hash(void **state)
{
	const char *body = "Welcome to Amazon S3.";
	size_t len = strlen(body), a, b;
	struct auth_result res = { 0 };
	struct auth_error err = { 0 };

	(void)state;
	res.verdict = AUTH_VERIFIED;
	res.payload = AUTH_PAYLOAD_SIGNED;
	/* the put-object example's x-amz-content-sha256 */
	strcpy(res.payload_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
	for (a = 0; a <= len; a++) {
		for (b = a; b <= len; b++) {
			struct sink s = { .len = 0 };
			struct auth_body *ab = auth_body_new(&res, sink_emit, &s);

			assert_non_null(ab);
			assert_int_equal(auth_body_update(ab, body, a, &err), 0);
			assert_int_equal(auth_body_update(ab, body + a, b - a, &err), 0);
			assert_int_equal(auth_body_update(ab, body + b, len - b, &err), 0);
			assert_int_equal(s.len, len - 1); /* the last byte waits */
			assert_int_equal(auth_body_final(ab, &err), 0);
			assert_int_equal(s.len, len);
			assert_memory_equal(s.out, body, len);
			auth_body_free(ab);
		}
	}
	/* one byte changed: 400, and the body never completes */
	{
		struct sink s = { .len = 0 };
		struct auth_body *ab = auth_body_new(&res, sink_emit, &s);

		assert_int_equal(auth_body_update(ab, "Welcome to Amazon S3!", len, &err), 0);
		assert_int_equal(auth_body_final(ab, &err), -1);
		assert_int_equal(err.status, 400);
		assert_string_equal(err.code, "XAmzContentSHA256Mismatch");
		assert_int_equal(s.len, len - 1);
		auth_body_free(ab);
	}
	/* a short body */
	{
		struct auth_body *ab = auth_body_new(&res, NULL, NULL);

		assert_int_equal(auth_body_update(ab, body, len - 1, &err), 0);
		assert_int_equal(auth_body_final(ab, &err), -1);
		assert_string_equal(err.code, "XAmzContentSHA256Mismatch");
		auth_body_free(ab);
	}
	/* the emitter failing */
	{
		struct sink s = { .fail = 1 };
		struct auth_body *ab = auth_body_new(&res, sink_emit, &s);

		assert_int_equal(auth_body_update(ab, body, len, &err), -1);
		assert_int_equal(err.status, 500);
		auth_body_free(ab);
	}
	/* UNSIGNED-PAYLOAD passes anything */
	{
		struct sink s = { .len = 0 };
		struct auth_body *ab;

		res.payload = AUTH_PAYLOAD_UNSIGNED;
		ab = auth_body_new(&res, sink_emit, &s);
		assert_int_equal(auth_body_update(ab, "xyz", 3, &err), 0);
		assert_int_equal(auth_body_final(ab, &err), 0);
		assert_int_equal(s.len, 3);
		auth_body_free(ab);
	}
}

/* The signature comparisons must be sigv4_signature_equal (constant time,
 * CRYPTO_memcmp), not strcmp/memcmp: a tripwire on the sources. */
static void test_constant_time_compare_used(void **state)
{
	static const struct {
		const char *file;
		const char *needle;
		int min;
	} uses[] = {
		{ "proxy/s3/auth.c", "sigv4_signature_equal(expect, sp->signature)", 1 },
		{ "proxy/s3/awschunked.c", "sigv4_signature_equal(expect, ", 2 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		FILE *f = fopen(uses[i].file, "r");
		char *text = calloc(1, 1 << 17);
		const char *p;
		int n = 0;

		assert_non_null(f);
		assert_non_null(text);
		assert_true(fread(text, 1, (1 << 17) - 1, f) > 0);
		fclose(f);
		for (p = text; (p = strstr(p, uses[i].needle)); p++)
			n++;
		if (n < uses[i].min)
			fail_msg("%s compares signatures without sigv4_signature_equal",
				 uses[i].file);
		assert_null(strstr(text, "strcmp(expect"));
		assert_null(strstr(text, "memcmp(expect"));
		free(text);
	}
	/* and sigv4_signature_equal itself compares every byte */
	assert_true(sigv4_signature_equal(ZERO_SIG, ZERO_SIG));
	{
		char other[65];

		memcpy(other, ZERO_SIG, sizeof(other));
		other[0] = '1';
		assert_false(sigv4_signature_equal(ZERO_SIG, other));
		other[0] = '0';
		other[63] = '1';
		assert_false(sigv4_signature_equal(ZERO_SIG, other));
	}
}

/* ---- setup ---------------------------------------------------------------------------- */

static int load_doc(void **state)
{
	(void)state;
	doc = testdata_json("FENCE_SIGV4_TESTDATA", TESTDATA_DEFAULT, "s3-doc-examples.json",
			    "test_auth");
	return doc ? 0 : -1;
}

static int free_doc(void **state)
{
	(void)state;
	cJSON_Delete(doc);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc_header_cases),
		cmocka_unit_test(test_doc_presigned),
		cmocka_unit_test(test_presign_query_errors),
		cmocka_unit_test(test_roundtrip_header),
		cmocka_unit_test(test_roundtrip_date_header),
		cmocka_unit_test(test_roundtrip_presign),
		cmocka_unit_test(test_body_hash),
		cmocka_unit_test(test_constant_time_compare_used),
	};

	return cmocka_run_group_tests(tests, load_doc, free_doc);
}
