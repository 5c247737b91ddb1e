/* lockapi_args.c — parses the JSON body of a lock API call strictly: cJSON
 * checks the syntax and builds the tree, this file refuses what cJSON lets
 * through (a key given twice, where cJSON would keep the first; a number that
 * is not exactly an integer in range, which a double cannot tell) and reads
 * integer fields from their literal digits, never through a double.
 *
 * Pure: no I/O, no clock; it does not know what the lock calls do. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lockapi_args.h"

/* ---- duplicate keys ------------------------------------------------------ */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key found twice in one object of the tree, or NULL. Sets *oom
 * if memory ran out (the caller refuses the body). */
static const char *duplicate_key(const cJSON *node, bool *oom)
{
	const cJSON *c;
	const char **names = NULL;
	const char *dup = NULL;
	size_t n = 0, i;

	if (!node || *oom)
		return NULL;
	for (c = node->child; c; c = c->next)
		n++;
	if (cJSON_IsObject(node) && n > 1) {
		names = malloc(n * sizeof(*names));
		if (!names) {
			*oom = true;
			return NULL;
		}
		for (i = 0, c = node->child; c; c = c->next)
			names[i++] = c->string ? c->string : "";
		qsort(names, n, sizeof(*names), cmp_names);
		for (i = 1; i < n && !dup; i++)
			if (strcmp(names[i - 1], names[i]) == 0)
				dup = names[i];
		free(names);
		if (dup)
			return dup;
	}
	for (c = node->child; c && !dup; c = c->next)
		dup = duplicate_key(c, oom);
	return dup;
}

/* ---- number literals ----------------------------------------------------- */

/* The position of target among the tree's numbers in document order (cJSON
 * keeps members in the order it read them), counting from *seen; -1 if
 * target is not in the tree. */
static long number_index(const cJSON *node, const cJSON *target, long *seen)
{
	const cJSON *c;
	long at;

	if (cJSON_IsNumber(node)) {
		if (node == target)
			return *seen;
		(*seen)++;
	}
	for (c = node->child; c; c = c->next) {
		at = number_index(c, target, seen);
		if (at >= 0)
			return at;
	}
	return -1;
}

static bool number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

/* The index-th number literal of text, a document cJSON parsed. A number
 * starts at '-' or a digit outside a string and runs over the characters
 * cJSON's number reader takes (in a valid document nothing of that set can
 * follow the part cJSON consumed). Returns 0 with *lit, *lit_len, or -1. */
static int number_literal(const char *text, size_t len, long index, const char **lit,
			  size_t *lit_len)
{
	size_t i = 0, start;
	long n = 0;

	while (i < len) {
		char c = text[i];

		if (c == '"') {
			for (i++; i < len && text[i] != '"'; i++)
				if (text[i] == '\\')
					i++;
			i++;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			start = i;
			while (i < len && number_char(text[i]))
				i++;
			if (n++ == index) {
				*lit = text + start;
				*lit_len = i - start;
				return 0;
			}
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			while (i < len && ((text[i] >= 'a' && text[i] <= 'z') ||
					   (text[i] >= 'A' && text[i] <= 'Z')))
				i++;
		} else {
			i++;
		}
	}
	return -1;
}

/* Reads integer member name of obj from its literal in text, within
 * [min, max] (min >= 0). Returns 0 (absent or null: *out untouched), 1, or
 * -1 (not an integer literal, or out of range). */
static int int_member(const char *text, size_t len, const cJSON *obj, const char *name,
		      int64_t min, int64_t max, int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	const char *lit = NULL;
	size_t lit_len = 0, i;
	uint64_t value = 0;
	long seen = 0, index;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v))
		return -1;
	index = number_index(obj, v, &seen);
	if (index < 0 || number_literal(text, len, index, &lit, &lit_len) < 0 || lit_len == 0)
		return -1;
	/* JSON's integer form without a sign (every field's min is >= 0): one
	 * digit, or digits without a leading zero; no fraction, no exponent */
	if (lit_len > 1 && lit[0] == '0')
		return -1;
	for (i = 0; i < lit_len; i++) {
		unsigned d;

		if (lit[i] < '0' || lit[i] > '9')
			return -1;
		d = (unsigned)(lit[i] - '0');
		if ((uint64_t)d > (uint64_t)max || value > ((uint64_t)max - d) / 10)
			return -1;             /* above max, before it can overflow */
		value = value * 10 + d;
	}
	if (value < (uint64_t)min || value > (uint64_t)max)
		return -1;
	*out = (int64_t)value;
	return 1;
}

/* ---- the body ------------------------------------------------------------ */

int lockapi_args_parse(const char *body, size_t len, bool need_epoch, int64_t max_wait_ms,
		       struct lockapi_args *out, char *err, size_t errlen)
{
	cJSON *obj = NULL;
	const cJSON *v;
	const char *end = NULL, *dup;
	bool oom = false;
	int64_t n = 0;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->ttl_ms = LOCKAPI_TTL_DEFAULT;
	if (max_wait_ms < 0)
		max_wait_ms = 0;
	if (len > LOCKAPI_BODY_MAX) {
		snprintf(err, errlen, "the body is larger than 16 KiB");
		goto out;
	}
	if (len == 0) {
		if (!need_epoch)
			rc = 0;
		else
			snprintf(err, errlen, "a JSON body with \"epoch\" is required");
		goto out;
	}
	obj = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	if (!obj || !cJSON_IsObject(obj)) {
		snprintf(err, errlen, "the body is not a JSON object");
		goto out;
	}
	while (end < body + len && strchr(" \t\r\n", *end) && *end)
		end++;
	if (end != body + len) {
		snprintf(err, errlen, "the body has data after its JSON object");
		goto out;
	}
	dup = duplicate_key(obj, &oom);
	if (oom) {
		snprintf(err, errlen, "the body could not be checked (out of memory)");
		goto out;
	}
	if (dup) {
		snprintf(err, errlen, "the body has the key \"%.64s\" more than once", dup);
		goto out;
	}
	if (int_member(body, len, obj, "ttlMs", 1, LOCKAPI_TTL_MAX, &out->ttl_ms) < 0) {
		snprintf(err, errlen, "\"ttlMs\" must be an integer from 1 to %lld",
			 (long long)LOCKAPI_TTL_MAX);
		goto out;
	}
	if (int_member(body, len, obj, "waitMs", 0, max_wait_ms, &out->wait_ms) < 0) {
		snprintf(err, errlen, "\"waitMs\" must be an integer from 0 to %" PRId64
			 " (the configured maximum)", max_wait_ms);
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(obj, "holder");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v) || !v->valuestring[0] ||
		    strlen(v->valuestring) >= sizeof(out->holder)) {
			snprintf(err, errlen, "\"holder\" must be a non-empty string of at most %d bytes",
				 LOCK_HOLDER_MAX - 1);
			goto out;
		}
		snprintf(out->holder, sizeof(out->holder), "%s", v->valuestring);
	}
	if (need_epoch) {
		if (int_member(body, len, obj, "epoch", 1, LOCKAPI_EPOCH_MAX, &n) != 1) {
			snprintf(err, errlen, "\"epoch\" must be an integer from 1 to %" PRId64,
				 (int64_t)LOCKAPI_EPOCH_MAX);
			goto out;
		}
		out->epoch = (uint64_t)n;
	}
	rc = 0;
out:
	cJSON_Delete(obj);
	return rc;
}
