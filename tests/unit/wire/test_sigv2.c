/* test_sigv2.c — wire/sigv2 against the worked Signature Version 2
 * examples of the S3 developer guide (tests/testdata/sigv2/
 * s3-doc-examples.json, override the folder with FENCE_SIGV2_TESTDATA; a
 * missing file fails the run): for every case the StringToSign built from
 * the request as sent, and the signature of the published StringToSign;
 * then the canonicalization rules the examples do not show (sub-resource
 * order and values, x-amz-date, Expires, repeated and folded x-amz-*). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "tests/unit/testdata.h"

#include "wire/sigv2.h"

#define TESTDATA_DEFAULT "tests/testdata/sigv2"
#define DOC_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define DOC_CASES  9  /* what the README promises: fewer means data went missing */
#define MAX_HEADERS 32

static cJSON *doc;

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The StringToSign of one case, built from its request. */
static char *case_sts(const cJSON *c)
{
	struct sigv2_header hs[MAX_HEADERS];
	const cJSON *hdrs = cJSON_GetObjectItemCaseSensitive(c, "headers"), *h;
	struct sigv2_request req;
	size_t n = 0;
	char *sts = NULL;

	cJSON_ArrayForEach(h, hdrs) {
		assert_true(n < MAX_HEADERS);
		hs[n++] = (struct sigv2_header){ cJSON_GetArrayItem(h, 0)->valuestring,
						 cJSON_GetArrayItem(h, 1)->valuestring };
	}
	req = (struct sigv2_request){
		.method = jstr(c, "method"), .bucket = jstr(c, "bucket"), .path = jstr(c, "path"),
		.query = jstr(c, "query"), .headers = hs, .nheaders = n,
		.expires = jstr(c, "expires"),
	};
	assert_int_equal(sigv2_string_to_sign(&req, &sts), 0);
	return sts;
}

static void test_doc_cases(void **state)
{
	const cJSON *c;
	int n = 0;

	(void)state;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(doc, "cases")) {
		const char *name = jstr(c, "name");
		const char *by_rule = jstr(c, "string_to_sign_by_rule");
		const char *want = by_rule ? by_rule : jstr(c, "string_to_sign");
		const char *renamed = jstr(c, "signature_as_renamed_on_page_today");
		char sig[SIGV2_SIGNATURE_LEN + 1];
		char *sts = case_sts(c);

		n++;
		if (strcmp(sts, want) != 0)
			fail_msg("%s: StringToSign\n%s\nwanted\n%s", name, sts, want);
		/* the published signature signs the published string */
		sigv2_signature(DOC_SECRET, jstr(c, "string_to_sign"), sig);
		if (strcmp(sig, jstr(c, "signature")) != 0)
			fail_msg("%s: signature %s, published %s", name, sig, jstr(c, "signature"));
		assert_true(sigv2_signature_equal(sig, jstr(c, "signature")));
		sigv2_signature(DOC_SECRET, sts, sig);
		if (by_rule && strcmp(sig, jstr(c, "signature_by_rule")) != 0)
			fail_msg("%s: rule signature %s", name, sig);
		/* the page's renamed bucket does not match its signatures */
		if (renamed)
			assert_string_not_equal(renamed, jstr(c, "signature"));
		free(sts);
	}
	assert_int_equal(n, DOC_CASES);
}

/* ---- rules the examples do not cover ---------------------------------------- */

static char *sts_of(const char *method, const char *path, const char *query,
		    const struct sigv2_header *hs, size_t n, const char *expires)
{
	struct sigv2_request req = { method, NULL, path, query, hs, n, expires };
	char *sts = NULL;

	assert_int_equal(sigv2_string_to_sign(&req, &sts), 0);
	return sts;
}

static void test_subresources(void **state)
{
	const struct sigv2_header date[] = { { "Date", "Tue, 27 Mar 2007 19:36:42 +0000" } };
	char *sts;

	(void)state;
	/* sorted by name, non-sub-resources dropped, values decoded */
	sts = sts_of("GET", "/b/k", "versionId=v%2B1&x-id=GetObject&acl&prefix=p"
		     "&response-content-type=text%2Fplain&AWSAccessKeyId=A", date, 1, NULL);
	assert_string_equal(sts, "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n"
			    "/b/k?acl&response-content-type=text/plain&versionId=v+1");
	free(sts);
	/* multipart: partNumber before uploadId; "uploads" with an empty value */
	sts = sts_of("PUT", "/b/k", "uploadId=U&partNumber=2", date, 1, NULL);
	assert_string_equal(strrchr(sts, '\n') + 1, "/b/k?partNumber=2&uploadId=U");
	free(sts);
	sts = sts_of("POST", "/b/k", "uploads=", date, 1, NULL);
	assert_string_equal(strrchr(sts, '\n') + 1, "/b/k?uploads=");
	free(sts);
	sts = sts_of("POST", "/b/", "delete", date, 1, NULL);
	assert_string_equal(strrchr(sts, '\n') + 1, "/b/?delete");
	free(sts);
	/* a path-style bucket without its '/' is signed with it (botocore) */
	sts = sts_of("GET", "/b", "prefix=p&encoding-type=url", date, 1, NULL);
	assert_string_equal(strrchr(sts, '\n') + 1, "/b/");
	free(sts);
	sts = sts_of("GET", "/", NULL, date, 1, NULL);
	assert_string_equal(strrchr(sts, '\n') + 1, "/");
	free(sts);
	/* a bad escape in a sub-resource cannot be signed */
	{
		struct sigv2_request req = { "GET", NULL, "/b/k", "acl=%zz", date, 1, NULL };
		char *bad = (char *)1;

		assert_int_equal(sigv2_string_to_sign(&req, &bad), -1);
		assert_null(bad);
	}
	assert_true(sigv2_is_subresource("tagging"));
	assert_false(sigv2_is_subresource("prefix"));
	assert_false(sigv2_is_subresource("Signature"));
}

static void test_dates_and_headers(void **state)
{
	const struct sigv2_header hs[] = {
		{ "Date", "Wed, 28 Mar 2007 01:29:59 +0000" },
		{ "X-Amz-Date", " Tue, 27 Mar 2007 21:20:26 +0000 " },
		{ "x-amz-meta-fencing-token", "7" },
		{ "X-AMZ-META-A", "one " },
		{ "x-amz-meta-a", " two" },
		{ "Content-Type", " text/plain " },
		{ "Content-Length", "3" },
		{ "X-Fencing-Token", "7" },
	};
	char *sts;

	(void)state;
	/* x-amz-date: the Date position is empty, x-amz-date is signed by name */
	sts = sts_of("PUT", "/b/k", NULL, hs, sizeof(hs) / sizeof(hs[0]), NULL);
	assert_string_equal(sts, "PUT\n\ntext/plain\n\n"
			    "x-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n"
			    "x-amz-meta-a:one,two\n"
			    "x-amz-meta-fencing-token:7\n/b/k");
	free(sts);
	/* presigned: Expires in the date position, x-amz-* still signed */
	sts = sts_of("GET", "/b/k", "", hs + 2, 1, "1175139620");
	assert_string_equal(sts, "GET\n\n\n1175139620\nx-amz-meta-fencing-token:7\n/b/k");
	free(sts);
	/* no date at all: an empty position */
	sts = sts_of("DELETE", "/b/k", NULL, hs + 7, 1, NULL);
	assert_string_equal(sts, "DELETE\n\n\n\n/b/k");
	free(sts);
}

static void test_signature_compare(void **state)
{
	char sig[SIGV2_SIGNATURE_LEN + 1];

	(void)state;
	sigv2_signature(DOC_SECRET, "GET\n\n\nWed, 28 Mar 2007 01:29:59 +0000\n/", sig);
	assert_string_equal(sig, "qGdzdERIC03wnaRNKh6OqZehG9s=");
	assert_true(sigv2_signature_equal(sig, "qGdzdERIC03wnaRNKh6OqZehG9s="));
	assert_false(sigv2_signature_equal(sig, "qGdzdERIC03wnaRNKh6OqZehG9S="));
	assert_false(sigv2_signature_equal(sig, "qGdzdERIC03wnaRNKh6OqZehG9s"));
	assert_false(sigv2_signature_equal(sig, ""));
	assert_false(sigv2_signature_equal(NULL, sig));
}

static int load_doc(void **state)
{
	(void)state;
	doc = testdata_json("FENCE_SIGV2_TESTDATA", TESTDATA_DEFAULT, "s3-doc-examples.json",
			    "test_sigv2");
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
		cmocka_unit_test(test_doc_cases),
		cmocka_unit_test(test_subresources),
		cmocka_unit_test(test_dates_and_headers),
		cmocka_unit_test(test_signature_compare),
	};

	return cmocka_run_group_tests(tests, load_doc, free_doc);
}
