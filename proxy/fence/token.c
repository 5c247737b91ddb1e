/* token.c — parses and reconciles the fencing token and lock name a request
 * presents (header and/or S3 metadata). It decides nothing about whether the
 * token is current: that is fence.c. Pure: no I/O, no allocation. */
#include <string.h>

#include "token.h"

const char *token_strstatus(enum token_status st)
{
	switch (st) {
	case TOKEN_ABSENT: return "absent";
	case TOKEN_OK: return "ok";
	case TOKEN_MALFORMED: return "malformed";
	case TOKEN_CONFLICT: return "conflict";
	}
	return "unknown";
}

enum token_status token_parse(const char *value, size_t len, uint64_t *epoch)
{
	uint64_t v = 0;
	size_t i;

	if (!value)
		return TOKEN_ABSENT;
	if (len == 0 || len > TOKEN_DIGITS_MAX)
		return TOKEN_MALFORMED;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];

		if (c < '0' || c > '9')
			return TOKEN_MALFORMED;
		/* 19 digits never exceed 9999999999999999999 < UINT64_MAX. */
		v = v * 10 + (uint64_t)(c - '0');
	}
	if (v == 0)
		return TOKEN_MALFORMED;
	if (epoch)
		*epoch = v;
	return TOKEN_OK;
}

enum token_status token_add(struct token *t, const char *value, size_t len)
{
	uint64_t epoch = 0;
	enum token_status st;

	if (!value)
		return t->status;
	st = token_parse(value, len, &epoch);
	switch (t->status) {
	case TOKEN_ABSENT:
		t->status = st;
		t->epoch = st == TOKEN_OK ? epoch : 0;
		break;
	case TOKEN_OK:
		if (st == TOKEN_MALFORMED) {
			t->status = TOKEN_MALFORMED;
			t->epoch = 0;
		} else if (epoch != t->epoch) {
			t->status = TOKEN_CONFLICT;
			t->epoch = 0;
		}
		break;
	case TOKEN_MALFORMED:
	case TOKEN_CONFLICT:
		/* Malformed wins over conflict: it is the more specific fault. */
		if (st == TOKEN_MALFORMED)
			t->status = TOKEN_MALFORMED;
		break;
	}
	return t->status;
}

struct token token_from_request(const char *header, const char *metadata)
{
	struct token t = TOKEN_INIT;

	if (header)
		token_add(&t, header, strlen(header));
	if (metadata)
		token_add(&t, metadata, strlen(metadata));
	return t;
}

int token_lock_name_valid(const char *name, size_t len)
{
	size_t i;

	if (!name || len == 0 || len > TOKEN_LOCK_NAME_MAX)
		return 0;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

enum token_lock_status token_lock_from_request(const char *header, const char *metadata,
					       char *out, size_t outlen)
{
	const char *name = header ? header : metadata;
	size_t len;

	if (out && outlen)
		out[0] = '\0';
	if (!name)
		return TOKEN_LOCK_ABSENT;
	len = strlen(name);
	if (!token_lock_name_valid(name, len))
		return TOKEN_LOCK_INVALID;
	if (header && metadata) {
		if (!token_lock_name_valid(metadata, strlen(metadata)))
			return TOKEN_LOCK_INVALID;
		if (strcmp(header, metadata) != 0)
			return TOKEN_LOCK_CONFLICT;
	}
	if (!out || outlen < len + 1)
		return TOKEN_LOCK_INVALID;
	memcpy(out, name, len + 1);
	return TOKEN_LOCK_OK;
}
