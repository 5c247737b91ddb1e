/* test_s3delete.c — the DeleteObjects body parser (proxy/s3/s3delete.c):
 * what S3 clients send (boto3, the AWS CLI, with and without a namespace,
 * Quiet, VersionId), every malformed shape refused (the bounds, a DOCTYPE,
 * unknown or repeated elements, stray text, a key that is empty, too long
 * or holds a NUL), and the DeleteResult answer (order, Quiet, escaping). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "s3/s3delete.h"

static int parse(const char *body, struct s3delete *d)
{
	char err[200];
	bool nomem;

	memset(d, 0, sizeof(*d));
	return s3delete_parse(body, strlen(body), d, &nomem, err, sizeof(err));
}

static void test_accepted(void **state)
{
	struct s3delete d;

	(void)state;
	assert_int_equal(parse("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			       "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			       "<Object><Key>a/b.txt</Key></Object>\n  "
			       "<Object><Key>k &amp; &lt;x&gt;</Key><VersionId>v1</VersionId></Object>"
			       "<Quiet>true</Quiet></Delete>", &d), 0);
	assert_int_equal(d.n, 2);
	assert_true(d.quiet);
	assert_string_equal(d.keys[0].key, "a/b.txt");
	assert_null(d.keys[0].version_id);
	assert_string_equal(d.keys[1].key, "k & <x>");
	assert_string_equal(d.keys[1].version_id, "v1");
	s3delete_clear(&d);

	assert_int_equal(parse("<s3:Delete xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			       "<s3:Object><s3:Key> spaced </s3:Key></s3:Object>"
			       "<s3:Quiet>False</s3:Quiet></s3:Delete>", &d), 0);
	assert_int_equal(d.n, 1);
	assert_false(d.quiet);
	assert_string_equal(d.keys[0].key, " spaced "); /* keys keep their spaces */
	s3delete_clear(&d);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"not xml",
		"<Delete></Delete>",                                   /* no object */
		"<Delete><Object></Object></Delete>",                  /* no key */
		"<Delete><Object><Key></Key></Object></Delete>",       /* empty key */
		"<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>",
		"<Delete><Object><Key>a</Key><Size>1</Size></Object></Delete>",
		"<Delete><Object><Key>a<b/></Key></Object></Delete>",  /* nested */
		"<Delete>text<Object><Key>a</Key></Object></Delete>",  /* stray text */
		"<Delete><Quiet>maybe</Quiet><Object><Key>a</Key></Object></Delete>",
		"<Delete><Quiet>true</Quiet><Quiet>true</Quiet>"
		"<Object><Key>a</Key></Object></Delete>",
		"<Remove><Object><Key>a</Key></Object></Remove>",      /* another root */
		"<Delete><Object><Key>a</Key></Object>",               /* unterminated */
		"<Delete><Object><Key>a</Key></Object></Delete><Delete/>",
		"<Delete><Object><Key>a&#0;b</Key></Object></Delete>", /* NUL: not XML */
		"<!DOCTYPE d [<!ENTITY x \"boom\">]><Delete><Object><Key>&x;</Key>"
		"</Object></Delete>",
		"<Delete><Object><Key>a</Key><VersionId></VersionId></Object></Delete>",
	};
	struct s3delete d;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &d) != -1)
			fail_msg("accepted: %s", bad[i]);
		assert_int_equal(d.n, 0);
		assert_null(d.keys);
	}
}

/* A body of n objects with keys of klen bytes. */
static char *body_of(size_t n, size_t klen)
{
	size_t cap = 32 + n * (klen + 40);
	char *b = malloc(cap), *p = b;

	p += sprintf(p, "<Delete>");
	for (size_t i = 0; i < n; i++) {
		p += sprintf(p, "<Object><Key>");
		memset(p, 'k', klen);
		p += klen;
		p += sprintf(p, "</Key></Object>");
	}
	sprintf(p, "</Delete>");
	return b;
}

static void test_bounds(void **state)
{
	struct s3delete d;
	char *b;

	(void)state;
	b = body_of(S3DELETE_KEYS_MAX, 10);
	assert_int_equal(parse(b, &d), 0);
	assert_int_equal(d.n, S3DELETE_KEYS_MAX);
	s3delete_clear(&d);
	free(b);
	b = body_of(S3DELETE_KEYS_MAX + 1, 10);
	assert_int_equal(parse(b, &d), -1);
	free(b);
	b = body_of(1, S3DELETE_KEY_MAX);
	assert_int_equal(parse(b, &d), 0);
	assert_int_equal(strlen(d.keys[0].key), S3DELETE_KEY_MAX);
	s3delete_clear(&d);
	free(b);
	b = body_of(1, S3DELETE_KEY_MAX + 1);
	assert_int_equal(parse(b, &d), -1);
	free(b);
}

static void test_result(void **state)
{
	struct s3delete d;
	size_t len = 0;
	char *xml;

	(void)state;
	assert_int_equal(parse("<Delete><Object><Key>a&amp;b</Key></Object>"
			       "<Object><Key>locks/x</Key></Object>"
			       "<Object><Key>c</Key><VersionId>7</VersionId></Object></Delete>", &d), 0);
	s3delete_fail(&d.keys[1], "AccessDenied", "lock file %d", 1);
	xml = s3delete_result_xml(&d, &len);
	assert_non_null(xml);
	assert_int_equal(strlen(xml), len);
	assert_non_null(strstr(xml, "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
				    "<Deleted><Key>a&amp;b</Key></Deleted>"
				    "<Error><Key>locks/x</Key><Code>AccessDenied</Code>"
				    "<Message>lock file 1</Message></Error>"
				    "<Deleted><Key>c</Key><VersionId>7</VersionId></Deleted>"
				    "</DeleteResult>"));
	free(xml);
	d.quiet = true;
	xml = s3delete_result_xml(&d, &len);
	assert_null(strstr(xml, "<Deleted>"));
	assert_non_null(strstr(xml, "<Error><Key>locks/x</Key>"));
	free(xml);
	s3delete_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_result),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
