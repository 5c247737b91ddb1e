/* test_s3xml.c — the S3 XML parsers against real-shaped pages, error bodies
 * and hostile input. Every document here is one S3 (or moto) could send, or
 * one that must be refused without crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lock/store/s3xml.h"

#define NS "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

/* Two keys, not truncated, in the shape AWS sends. */
static const char page_two[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult " NS ">"
	"<Name>b</Name><Prefix>locks/a/lock-</Prefix><KeyCount>2</KeyCount>"
	"<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
	"<Contents><Key>locks/a/lock-0000000001.json</Key>"
	"<LastModified>2024-08-20T10:11:12.000Z</LastModified>"
	"<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>"
	"<Size>123</Size><StorageClass>STANDARD</StorageClass></Contents>"
	"<Contents><Key>locks/a/lock-0000000002.json</Key>"
	"<LastModified>2024-08-20T10:11:13Z</LastModified>"
	"<ETag>\"abc\"</ETag><Size>0</Size></Contents>"
	"</ListBucketResult>";

static void test_page_two_entries(void **state)
{
	struct store_list_page page;
	char err[200];

	(void)state;
	assert_int_equal(s3xml_parse_list(page_two, strlen(page_two), &page, err, sizeof(err)),
			 S3XML_OK);
	assert_int_equal(page.n, 2);
	assert_false(page.truncated);
	assert_null(page.next_token);
	assert_string_equal(page.entries[0].key, "locks/a/lock-0000000001.json");
	assert_string_equal(page.entries[0].etag, "\"9b2cf535f27731c974343645a3985328\"");
	assert_int_equal(page.entries[0].size, 123);
	assert_int_equal(page.entries[0].last_modified, 1724148672); /* 2024-08-20T10:11:12Z */
	assert_string_equal(page.entries[1].key, "locks/a/lock-0000000002.json");
	assert_string_equal(page.entries[1].etag, "\"abc\"");
	assert_int_equal(page.entries[1].size, 0);
	assert_int_equal(page.entries[1].last_modified, 1724148673);
	store_list_page_free(&page);
}

static void test_truncated_with_token(void **state)
{
	static const char xml[] =
		"<ListBucketResult " NS "><IsTruncated>true</IsTruncated>"
		"<Contents><Key>k1</Key><Size>1</Size></Contents>"
		"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
		"<KeyCount>1</KeyCount></ListBucketResult>";
	struct store_list_page page;

	(void)state;
	assert_int_equal(s3xml_parse_list(xml, strlen(xml), &page, NULL, 0), S3XML_OK);
	assert_true(page.truncated);
	assert_non_null(page.next_token);
	assert_string_equal(page.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	assert_int_equal(page.n, 1);
	assert_string_equal(page.entries[0].key, "k1");
	assert_string_equal(page.entries[0].etag, ""); /* absent stays empty */
	store_list_page_free(&page);
}

/* A truncated page without a token is handed back; the caller decides. */
static void test_truncated_without_token(void **state)
{
	static const char xml[] =
		"<ListBucketResult><IsTruncated>true</IsTruncated>"
		"<Contents><Key>k</Key></Contents></ListBucketResult>";
	struct store_list_page page;

	(void)state;
	assert_int_equal(s3xml_parse_list(xml, strlen(xml), &page, NULL, 0), S3XML_OK);
	assert_true(page.truncated);
	assert_null(page.next_token);
	store_list_page_free(&page);
}

static void test_empty_result(void **state)
{
	static const char xml[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
		"<ListBucketResult " NS "><Name>b</Name><Prefix>none/</Prefix>"
		"<KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
		"<IsTruncated>false</IsTruncated></ListBucketResult>";
	struct store_list_page page;
	struct s3xml_list *p;

	(void)state;
	assert_int_equal(s3xml_parse_list(xml, strlen(xml), &page, NULL, 0), S3XML_OK);
	assert_int_equal(page.n, 0);
	assert_null(page.entries);
	assert_false(page.truncated);
	store_list_page_free(&page);

	p = s3xml_list_new();
	assert_non_null(p);
	assert_int_equal(s3xml_list_feed(p, xml, strlen(xml), 1, NULL, 0), S3XML_OK);
	assert_int_equal(s3xml_list_key_count(p), 0);
	s3xml_list_free(p);
}

static void test_entity_escaped_keys(void **state)
{
	static const char xml[] =
		"<ListBucketResult " NS "><IsTruncated>false</IsTruncated>"
		"<Contents><Key>a&amp;b &lt;c&gt; &quot;d&apos; &#233;&#x4E2D;</Key></Contents>"
		"<Contents><Key><![CDATA[x<&>y]]></Key></Contents>"
		"<Contents><Key>  spaced  </Key></Contents>"
		"</ListBucketResult>";
	struct store_list_page page;

	(void)state;
	assert_int_equal(s3xml_parse_list(xml, strlen(xml), &page, NULL, 0), S3XML_OK);
	assert_int_equal(page.n, 3);
	assert_string_equal(page.entries[0].key, "a&b <c> \"d' \xc3\xa9\xe4\xb8\xad");
	assert_string_equal(page.entries[1].key, "x<&>y");
	assert_string_equal(page.entries[2].key, "  spaced  "); /* keys are not trimmed */
	store_list_page_free(&page);
}

/* Feeding one byte at a time gives the same page as one buffer. */
static void test_streaming_byte_by_byte(void **state)
{
	struct s3xml_list *p = s3xml_list_new();
	struct store_list_page page;
	size_t i, len = strlen(page_two);

	(void)state;
	assert_non_null(p);
	for (i = 0; i < len; i++)
		assert_int_equal(s3xml_list_feed(p, page_two + i, 1, 0, NULL, 0), S3XML_OK);
	assert_int_equal(s3xml_list_feed(p, NULL, 0, 1, NULL, 0), S3XML_OK);
	assert_int_equal(s3xml_list_key_count(p), 2);
	assert_int_equal(s3xml_list_take(p, &page), S3XML_OK);
	assert_int_equal(page.n, 2);
	assert_string_equal(page.entries[1].key, "locks/a/lock-0000000002.json");
	store_list_page_free(&page);
	/* a second take gives an empty page */
	assert_int_equal(s3xml_list_take(p, &page), S3XML_OK);
	assert_int_equal(page.n, 0);
	s3xml_list_free(p);
}

/* Several pages in sequence, as a caller following tokens would see them. */
static void test_several_pages(void **state)
{
	char xml[4096];
	int pg;

	(void)state;
	for (pg = 0; pg < 3; pg++) {
		struct store_list_page page;
		int last = pg == 2;

		snprintf(xml, sizeof(xml),
			 "<ListBucketResult " NS "><IsTruncated>%s</IsTruncated>"
			 "<Contents><Key>lock-%010d.json</Key><Size>10</Size></Contents>"
			 "<Contents><Key>lock-%010d.json</Key><Size>11</Size></Contents>"
			 "%s%s%s</ListBucketResult>",
			 last ? "false" : "true", pg * 2 + 1, pg * 2 + 2,
			 last ? "" : "<NextContinuationToken>tok",
			 last ? "" : (pg == 0 ? "0" : "1"),
			 last ? "" : "</NextContinuationToken>");
		assert_int_equal(s3xml_parse_list(xml, strlen(xml), &page, NULL, 0), S3XML_OK);
		assert_int_equal(page.n, 2);
		assert_int_equal(page.truncated, !last);
		if (last)
			assert_null(page.next_token);
		else
			assert_string_equal(page.next_token, pg == 0 ? "tok0" : "tok1");
		assert_int_equal(page.entries[1].size, 11);
		store_list_page_free(&page);
	}
}

/* The same elements under a namespace prefix. */
static void test_prefixed_namespace(void **state)
{
	static const char xml[] =
		"<s3:ListBucketResult xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<s3:IsTruncated>false</s3:IsTruncated>"
		"<s3:Contents><s3:Key>k</s3:Key><s3:Size>5</s3:Size></s3:Contents>"
		"</s3:ListBucketResult>";
	struct store_list_page page;

	(void)state;
	assert_int_equal(s3xml_parse_list(xml, strlen(xml), &page, NULL, 0), S3XML_OK);
	assert_int_equal(page.n, 1);
	assert_int_equal(page.entries[0].size, 5);
	store_list_page_free(&page);
}

struct bad_case {
	const char *name;
	const char *xml;
	enum s3xml_code want;
};

static const struct bad_case bad_cases[] = {
	{ "empty", "", S3XML_ERR_SYNTAX },
	{ "truncated mid-tag", "<ListBucketResult><Contents><Key>k</Ke", S3XML_ERR_SYNTAX },
	{ "truncated after entry", "<ListBucketResult><Contents><Key>k</Key></Contents>", S3XML_ERR_SYNTAX },
	{ "mismatched tags", "<ListBucketResult><Key></Size></ListBucketResult>", S3XML_ERR_SYNTAX },
	{ "junk after root", "<ListBucketResult/><x/>", S3XML_ERR_SYNTAX },
	{ "unknown entity", "<ListBucketResult><Contents><Key>&nope;</Key></Contents></ListBucketResult>", S3XML_ERR_SYNTAX },
	{ "nul char ref", "<ListBucketResult><Contents><Key>&#0;</Key></Contents></ListBucketResult>", S3XML_ERR_SYNTAX },
	{ "unbound prefix", "<x:ListBucketResult/>", S3XML_ERR_SYNTAX },
	{ "doctype", "<!DOCTYPE ListBucketResult [<!ENTITY a \"aaaa\">]><ListBucketResult/>", S3XML_ERR_SYNTAX },
	{ "billion laughs", "<!DOCTYPE l [<!ENTITY a \"xxxxxxxx\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">"
	  "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;\">]><ListBucketResult><Contents><Key>&c;</Key></Contents></ListBucketResult>",
	  S3XML_ERR_SYNTAX },
	{ "external entity", "<!DOCTYPE l [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><ListBucketResult><Contents><Key>&e;</Key></Contents></ListBucketResult>",
	  S3XML_ERR_SYNTAX },
	{ "error as root", "<Error><Code>NoSuchBucket</Code></Error>", S3XML_ERR_SHAPE },
	{ "contents without key", "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "empty key", "<ListBucketResult><Contents><Key></Key></Contents></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "two keys", "<ListBucketResult><Contents><Key>a</Key><Key>b</Key></Contents></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "negative size", "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "size overflow", "<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999</Size></Contents></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "size trailing junk", "<ListBucketResult><Contents><Key>a</Key><Size>12x</Size></Contents></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "bad date", "<ListBucketResult><Contents><Key>a</Key><LastModified>yesterday</LastModified></Contents></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "bad bool", "<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "element in key", "<ListBucketResult><Contents><Key>a<b/></Key></Contents></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "bad keycount", "<ListBucketResult><KeyCount>two</KeyCount></ListBucketResult>", S3XML_ERR_SHAPE },
	{ "long etag", "<ListBucketResult><Contents><Key>a</Key><ETag>"
	  "\"0123456789012345678901234567890123456789012345678901234567890123456789"
	  "0123456789012345678901234567890123456789012345678901234567890123456789\"</ETag></Contents></ListBucketResult>",
	  S3XML_ERR_LIMIT },
};

static void test_malformed_documents(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct store_list_page page;
		char err[200] = "";
		enum s3xml_code got;

		got = s3xml_parse_list(bad_cases[i].xml, strlen(bad_cases[i].xml), &page, err, sizeof(err));
		if (got != bad_cases[i].want)
			fail_msg("case \"%s\": got %s (%s), want %s", bad_cases[i].name,
				 s3xml_strerror(got), err, s3xml_strerror(bad_cases[i].want));
		assert_true(err[0] != '\0');
		assert_int_equal(page.n, 0);
		assert_null(page.entries);
		assert_null(page.next_token);
	}
}

/* After an error, feeding more does not resurrect the parser. */
static void test_error_is_sticky(void **state)
{
	struct s3xml_list *p = s3xml_list_new();
	struct store_list_page page;
	static const char bad[] = "<ListBucketResult><</ListBucketResult>";

	(void)state;
	assert_non_null(p);
	assert_int_equal(s3xml_list_feed(p, bad, strlen(bad), 0, NULL, 0), S3XML_ERR_SYNTAX);
	assert_int_equal(s3xml_list_feed(p, page_two, strlen(page_two), 1, NULL, 0), S3XML_ERR_SYNTAX);
	assert_int_equal(s3xml_list_take(p, &page), S3XML_ERR_SYNTAX);
	assert_int_equal(page.n, 0);
	s3xml_list_free(p);

	/* take before the final feed refuses */
	p = s3xml_list_new();
	assert_non_null(p);
	assert_int_equal(s3xml_list_feed(p, page_two, 20, 0, NULL, 0), S3XML_OK);
	assert_int_not_equal(s3xml_list_take(p, &page), S3XML_OK);
	s3xml_list_free(p); /* frees the half-built state */
}

static void test_error_body(void **state)
{
	static const char xml[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<Error><Code>PreconditionFailed</Code>"
		"<Message>At least one of the pre-conditions you specified did not hold</Message>"
		"<Condition>If-Match</Condition><RequestId>X</RequestId><HostId>Y</HostId></Error>";
	char code[STORE_ERRCODE_MAX], msg[STORE_ERRMSG_MAX];

	(void)state;
	assert_int_equal(s3xml_parse_error(xml, strlen(xml), code, sizeof(code), msg, sizeof(msg)),
			 S3XML_OK);
	assert_string_equal(code, "PreconditionFailed");
	assert_string_equal(msg, "At least one of the pre-conditions you specified did not hold");
}

static void test_error_body_edges(void **state)
{
	char code[8], msg[16];
	static const char ctl[] = "<Error><Code>Bad&#10;Code</Code><Message>a&#9;b&amp;c</Message></Error>";
	static const char nomsg[] = "<Error xmlns=\"x\"><Code>NoSuchKey</Code></Error>";
	static const char notxml[] = "<html><body>502 Bad Gateway</body></html>";
	static const char trunc[] = "<Error><Code>SlowDown</Code><Mess";

	(void)state;
	/* control characters replaced, long values cut to fit */
	assert_int_equal(s3xml_parse_error(ctl, strlen(ctl), code, sizeof(code), msg, sizeof(msg)), S3XML_OK);
	assert_string_equal(code, "Bad?Cod");
	assert_string_equal(msg, "a?b&c");
	assert_int_equal(s3xml_parse_error(nomsg, strlen(nomsg), code, sizeof(code), msg, sizeof(msg)), S3XML_OK);
	assert_string_equal(code, "NoSuchK");
	assert_string_equal(msg, "");
	assert_int_equal(s3xml_parse_error(notxml, strlen(notxml), code, sizeof(code), msg, sizeof(msg)),
			 S3XML_ERR_SHAPE);
	assert_string_equal(code, "");
	assert_int_equal(s3xml_parse_error(trunc, strlen(trunc), code, sizeof(code), msg, sizeof(msg)),
			 S3XML_ERR_SYNTAX);
	assert_string_equal(code, "");
	assert_string_equal(msg, "");
	assert_int_equal(s3xml_parse_error("", 0, code, sizeof(code), msg, sizeof(msg)), S3XML_ERR_SYNTAX);
}

/* Large and garbage inputs: bounded, no crash, the right refusal. */
static void test_huge_and_garbage(void **state)
{
	size_t big = 3u << 20, i, len;
	char *buf = malloc(big + 256);
	struct store_list_page page;
	unsigned seed = 12345;

	(void)state;
	assert_non_null(buf);

	/* a 3 MiB key: beyond the text limit (and fed across pieces) */
	len = (size_t)sprintf(buf, "<ListBucketResult><Contents><Key>");
	memset(buf + len, 'k', big);
	len += big;
	len += (size_t)sprintf(buf + len, "</Key></Contents></ListBucketResult>");
	assert_int_equal(s3xml_parse_list(buf, len, &page, NULL, 0), S3XML_ERR_LIMIT);

	/* deep nesting */
	len = (size_t)sprintf(buf, "<ListBucketResult>");
	for (i = 0; i < 1000; i++)
		len += (size_t)sprintf(buf + len, "<a>");
	assert_int_equal(s3xml_parse_list(buf, len, &page, NULL, 0), S3XML_ERR_LIMIT);

	/* more entries than a page may hold */
	len = (size_t)sprintf(buf, "<ListBucketResult>");
	for (i = 0; i <= S3XML_ENTRIES_MAX; i++)
		len += (size_t)sprintf(buf + len, "<Contents><Key>k%zu</Key></Contents>", i);
	len += (size_t)sprintf(buf + len, "</ListBucketResult>");
	assert_true(len < big);
	assert_int_equal(s3xml_parse_list(buf, len, &page, NULL, 0), S3XML_ERR_LIMIT);

	/* exactly the limit is fine */
	len = (size_t)sprintf(buf, "<ListBucketResult>");
	for (i = 0; i < S3XML_ENTRIES_MAX; i++)
		len += (size_t)sprintf(buf + len, "<Contents><Key>k%zu</Key></Contents>", i);
	len += (size_t)sprintf(buf + len, "</ListBucketResult>");
	assert_int_equal(s3xml_parse_list(buf, len, &page, NULL, 0), S3XML_OK);
	assert_int_equal(page.n, S3XML_ENTRIES_MAX);
	assert_string_equal(page.entries[S3XML_ENTRIES_MAX - 1].key, "k9999");
	store_list_page_free(&page);

	/* random bytes (with NULs) */
	for (i = 0; i < 4096; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (char)(seed >> 16);
	}
	assert_int_not_equal(s3xml_parse_list(buf, 4096, &page, NULL, 0), S3XML_OK);
	buf[0] = '<';
	assert_int_not_equal(s3xml_parse_list(buf, 4096, &page, NULL, 0), S3XML_OK);
	free(buf);
}

static void test_iso8601(void **state)
{
	int64_t t = -1;

	(void)state;
	assert_int_equal(s3xml_parse_iso8601("1970-01-01T00:00:00Z", &t), 0);
	assert_int_equal(t, 0);
	assert_int_equal(s3xml_parse_iso8601("2009-10-12T17:50:30.000Z", &t), 0);
	assert_int_equal(t, 1255369830);
	assert_int_equal(s3xml_parse_iso8601("2009-10-12T19:50:30.5+02:00", &t), 0);
	assert_int_equal(t, 1255369830);
	assert_int_equal(s3xml_parse_iso8601("2009-10-12T16:50:30-01:00", &t), 0);
	assert_int_equal(t, 1255369830);
	assert_int_equal(s3xml_parse_iso8601("2009-10-12T17:50:30", &t), -1);   /* no zone */
	assert_int_equal(s3xml_parse_iso8601("2009-10-12T17:50:30.Z", &t), -1);
	assert_int_equal(s3xml_parse_iso8601("2009-10-12T17:50:30Zjunk", &t), -1);
	assert_int_equal(s3xml_parse_iso8601("2009-13-12T17:50:30Z", &t), -1);
	assert_int_equal(s3xml_parse_iso8601(" 2009-10-12T17:50:30Z", &t), -1);
	assert_int_equal(s3xml_parse_iso8601("", &t), -1);
}

/* The UploadId of a CreateMultipartUpload answer (the self-test's
 * multipart probe): namespaced or not; missing, oversized or another
 * document refused. */
static void test_upload_id(void **state)
{
	static const char ok[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
		"<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Bucket>b</Bucket><Key>k</Key><UploadId> 2~abc-DEF </UploadId>"
		"</InitiateMultipartUploadResult>";
	static const char none[] = "<InitiateMultipartUploadResult><Key>k</Key>"
				   "</InitiateMultipartUploadResult>";
	static const char other[] = "<Error><UploadId>x</UploadId></Error>";
	char id[16];

	(void)state;
	assert_int_equal(s3xml_parse_upload_id(ok, strlen(ok), id, sizeof(id)), S3XML_OK);
	assert_string_equal(id, "2~abc-DEF");
	assert_int_equal(s3xml_parse_upload_id(none, strlen(none), id, sizeof(id)),
			 S3XML_ERR_SHAPE);
	assert_string_equal(id, "");
	assert_int_equal(s3xml_parse_upload_id(other, strlen(other), id, sizeof(id)),
			 S3XML_ERR_SHAPE);
	assert_int_equal(s3xml_parse_upload_id(ok, strlen(ok), id, 5), S3XML_ERR_SHAPE);
	assert_int_equal(s3xml_parse_upload_id("<a", 2, id, sizeof(id)), S3XML_ERR_SYNTAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_two_entries),
		cmocka_unit_test(test_truncated_with_token),
		cmocka_unit_test(test_truncated_without_token),
		cmocka_unit_test(test_empty_result),
		cmocka_unit_test(test_entity_escaped_keys),
		cmocka_unit_test(test_streaming_byte_by_byte),
		cmocka_unit_test(test_several_pages),
		cmocka_unit_test(test_prefixed_namespace),
		cmocka_unit_test(test_malformed_documents),
		cmocka_unit_test(test_error_is_sticky),
		cmocka_unit_test(test_error_body),
		cmocka_unit_test(test_error_body_edges),
		cmocka_unit_test(test_huge_and_garbage),
		cmocka_unit_test(test_iso8601),
		cmocka_unit_test(test_upload_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
