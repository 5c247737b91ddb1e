/* store_s3_list.c — ListObjectsV2 for the S3 store: one page per call,
 * its query built in canonical order and its XML parsed by s3xml.c, and
 * the query-string builder the other calls share. It sends nothing itself
 * (store_s3_perform in store_s3.c does, with the retries) and never
 * follows a continuation on its own: the caller asks page by page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3xml.h"
#include "store.h"
#include "store_s3_int.h"
#include "wire/sigv4.h"

#define LIST_BODY_MAX    ((size_t)8 << 20)   /* XML of one listing page */

/* Appends "&name=encoded(value)" (without '&' when q is empty). */
int store_s3_query_add(char **q, const char *name, const char *value)
{
	char *enc = sigv4_uri_encode(value, strlen(value), 1), *grown = NULL;
	int n;

	if (!enc)
		return -1;
	n = asprintf(&grown, "%s%s%s=%s", *q ? *q : "", *q ? "&" : "", name, enc);
	free(enc);
	if (n < 0)
		return -1;
	free(*q);
	*q = grown;
	return 0;
}

enum store_code store_s3_list(struct store *st, const char *prefix, const char *start_after,
			      const char *continuation, int max_keys,
			      struct store_list_page *page, struct store_result *res)
{
	struct store_s3 *s = (struct store_s3 *)st;
	struct s3_call c = { .method = "GET", .body_max = LIST_BODY_MAX, .idempotent = 1 };
	struct body_buf buf = { 0 };
	char *query = NULL, num[16], why[200];
	enum store_code code;
	enum s3xml_code xc;

	store_result_clear(res);
	memset(page, 0, sizeof(*page));
	if (max_keys < 1 || max_keys > 1000)
		return store_s3_refuse(res, "max_keys must be 1 to 1000");
	snprintf(num, sizeof(num), "%d", max_keys);
	/* parameters in canonical (sorted) order */
	if ((continuation && *continuation && store_s3_query_add(&query, "continuation-token", continuation)) ||
	    store_s3_query_add(&query, "list-type", "2") ||
	    store_s3_query_add(&query, "max-keys", num) ||
	    (prefix && *prefix && store_s3_query_add(&query, "prefix", prefix)) ||
	    (start_after && *start_after && store_s3_query_add(&query, "start-after", start_after))) {
		code = res->code = STORE_ERR_NOMEM;
		goto out;
	}
	c.query = query;
	code = store_s3_perform(s, &c, &buf, res);
	if (code != STORE_OK)
		goto out;
	xc = s3xml_parse_list(buf.data ? buf.data : "", buf.len, page, why, sizeof(why));
	if (xc != S3XML_OK) {
		code = xc == S3XML_ERR_NOMEM ? STORE_ERR_NOMEM : STORE_ERR_PROTOCOL;
		snprintf(res->err_message, sizeof(res->err_message), "listing: %s", why);
	} else if (page->truncated && !page->next_token) {
		code = STORE_ERR_PROTOCOL;
		snprintf(res->err_message, sizeof(res->err_message),
			 "listing is truncated but has no continuation token");
	}
	if (code != STORE_OK)
		store_list_page_free(page);
	res->code = code;
out:
	free(query);
	free(buf.data);
	return code;
}
