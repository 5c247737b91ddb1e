/* s3err.c — formats S3-style XML and JSON error bodies with proper escaping.
 * It chooses no status codes and sends nothing; the caller does. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "decimal.h"
#include "s3err.h"
#include "utf8.h"

/* A bounded writer that keeps counting past the end of its buffer. */
struct out {
	char *buf;
	size_t cap;
	size_t len;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t room = o->cap - o->len;

		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

/* 1 for printable ASCII that XML character data takes as it is. */
static int xml_plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7F && c != '&' && c != '<' && c != '>' && c != '"' &&
	       c != '\'';
}

/* Writes s as XML character data: runs of plain ASCII in one piece, the
 * rest byte by byte (escapes, control characters, UTF-8 checked). */
static void put_xml_text(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	while (n > 0) {
		size_t l = 0;

		while (l < n && xml_plain(p[l]))
			l++;
		if (l > 0) {
			put(o, (const char *)p, l);
			p += l;
			n -= l;
			continue;
		}
		switch (*p) {
		case '&': puts_(o, "&amp;"); l = 1; break;
		case '<': puts_(o, "&lt;"); l = 1; break;
		case '>': puts_(o, "&gt;"); l = 1; break;
		case '"': puts_(o, "&quot;"); l = 1; break;
		case '\'': puts_(o, "&apos;"); l = 1; break;
		case '\t': case '\n': case '\r':
			put(o, (const char *)p, 1);
			l = 1;
			break;
		default:
			if (*p < 0x20 || *p == 0x7F) {
				puts_(o, REPLACEMENT);
				l = 1;
			} else if ((l = utf8_seq_len(p, n)) == 0) {
				puts_(o, REPLACEMENT);
				l = 1;
			} else {
				put(o, (const char *)p, l);
			}
		}
		p += l;
		n -= l;
	}
}

static void put_element(struct out *o, const char *name, const char *text)
{
	put(o, "<", 1);
	puts_(o, name);
	put(o, ">", 1);
	put_xml_text(o, text);
	put(o, "</", 2);
	puts_(o, name);
	put(o, ">", 1);
}

size_t s3err_xml(const struct s3err *e, char *buf, size_t buflen)
{
	struct out o = { .buf = buf, .cap = buflen ? buflen - 1 : 0, .len = 0 };
	char num[24];

	puts_(&o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
	put_element(&o, "Code", e->code ? e->code : "InternalError");
	put_element(&o, "Message", e->message ? e->message : "");
	if (e->resource)
		put_element(&o, "Resource", e->resource);
	if (e->request_id)
		put_element(&o, "RequestId", e->request_id);
	if (e->has_epoch) {
		decimal_u64(num, e->current_epoch);
		put_element(&o, "CurrentEpoch", num);
	}
	puts_(&o, "</Error>");
	if (buflen)
		buf[o.len < buflen ? o.len : buflen - 1] = '\0';
	return o.len;
}

size_t s3err_xml_text(const char *text, char *buf, size_t buflen)
{
	struct out o = { .buf = buf, .cap = buflen ? buflen - 1 : 0, .len = 0 };

	put_xml_text(&o, text);
	if (buflen)
		buf[o.len < buflen ? o.len : buflen - 1] = '\0';
	return o.len;
}

char *s3err_xml_dup(const struct s3err *e, size_t *len)
{
	char first[1024]; /* every body the proxy writes fits: formatted once */
	size_t need = s3err_xml(e, first, sizeof(first));
	char *body = malloc(need + 1);

	if (!body)
		return NULL;
	if (need < sizeof(first))
		memcpy(body, first, need + 1);
	else
		s3err_xml(e, body, need + 1);
	if (len)
		*len = need;
	return body;
}

/* A copy of s with invalid UTF-8 replaced by U+FFFD (cJSON escapes control
 * characters itself but passes invalid bytes through). malloc'd. */
static char *utf8_clean_dup(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, l;
	char *copy = malloc(n * 3 + 1);

	if (!copy)
		return NULL;
	while (n > 0) {
		if ((l = utf8_seq_len(p, n)) == 0) {
			memcpy(copy + i, REPLACEMENT, 3);
			i += 3;
			l = 1;
		} else {
			memcpy(copy + i, p, l);
			i += l;
		}
		p += l;
		n -= l;
	}
	copy[i] = '\0';
	return copy;
}

static int add_string(cJSON *obj, const char *name, const char *value)
{
	char *clean = utf8_clean_dup(value);
	int ok = clean && cJSON_AddStringToObject(obj, name, clean) != NULL;

	free(clean);
	return ok ? 0 : -1;
}

char *s3err_json_dup(const struct s3err *e, size_t *len)
{
	cJSON *obj = NULL;
	char *printed = NULL, *body = NULL;
	char num[24];

	obj = cJSON_CreateObject();
	if (!obj)
		goto out;
	if (add_string(obj, "error", e->code ? e->code : "InternalError") ||
	    add_string(obj, "message", e->message ? e->message : ""))
		goto out;
	if (e->has_epoch) {
		/* Raw, so epochs above 2^53 stay exact (cJSON numbers are doubles). */
		decimal_u64(num, e->current_epoch);
		if (!cJSON_AddRawToObject(obj, "currentEpoch", num))
			goto out;
	}
	if (e->request_id && add_string(obj, "requestId", e->request_id))
		goto out;
	printed = cJSON_PrintUnformatted(obj);
	if (!printed)
		goto out;
	/* Hand back plain malloc memory whatever cJSON's hooks are. */
	body = strdup(printed);
	if (body && len)
		*len = strlen(body);
out:
	if (printed)
		cJSON_free(printed);
	cJSON_Delete(obj);
	return body;
}
