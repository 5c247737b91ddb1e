/* fuzz_s3xml.c — libFuzzer target for the S3 XML parsers. Each input is
 * parsed as a list page (in one piece and split in two at a point the input
 * chooses) and as an error body; results must agree and nothing may leak or
 * read out of bounds. It checks robustness, not S3 semantics. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lock/store/s3xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *xml = (const char *)data;
	struct store_list_page whole, split;
	struct s3xml_list *p;
	enum s3xml_code a, b;
	char code[STORE_ERRCODE_MAX], msg[STORE_ERRMSG_MAX], upload_id[64];
	size_t cut, i;

	a = s3xml_parse_list(xml, size, &whole, NULL, 0);
	if (a == S3XML_OK) {
		for (i = 0; i < whole.n; i++)
			if (!whole.entries[i].key || strlen(whole.entries[i].key) == 0)
				abort();
	} else if (whole.n || whole.entries || whole.next_token) {
		abort(); /* a failed parse must leave the page empty */
	}

	cut = size ? data[0] % (size + 1) : 0;
	p = s3xml_list_new();
	if (p) {
		b = s3xml_list_feed(p, xml, cut, 0, NULL, 0);
		if (b == S3XML_OK)
			b = s3xml_list_feed(p, xml + cut, size - cut, 1, NULL, 0);
		if (b == S3XML_OK)
			b = s3xml_list_take(p, &split);
		else
			memset(&split, 0, sizeof(split));
		/* feeding in pieces must not change the verdict or the page */
		if ((a == S3XML_OK) != (b == S3XML_OK))
			abort();
		if (a == S3XML_OK && b == S3XML_OK) {
			if (whole.n != split.n || whole.truncated != split.truncated)
				abort();
			for (i = 0; i < whole.n; i++)
				if (strcmp(whole.entries[i].key, split.entries[i].key) != 0)
					abort();
		}
		store_list_page_free(&split);
		s3xml_list_free(p);
	}
	store_list_page_free(&whole);

	if (s3xml_parse_error(xml, size, code, sizeof(code), msg, sizeof(msg)) == S3XML_OK) {
		if (strlen(code) >= sizeof(code) || strlen(msg) >= sizeof(msg))
			abort();
	} else if (code[0] || msg[0]) {
		abort();
	}

	/* the self-test's UploadId: set only on success, always terminated */
	if (s3xml_parse_upload_id(xml, size, upload_id, sizeof(upload_id)) == S3XML_OK) {
		if (!upload_id[0] || strlen(upload_id) >= sizeof(upload_id))
			abort();
	} else if (upload_id[0]) {
		abort();
	}
	return 0;
}
