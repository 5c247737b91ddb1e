/* accesslog.c — formats the per-request JSON access-log line, with the
 * credentials of a presigned query redacted. It neither writes nor
 * buffers log output; the caller owns the destination. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "accesslog.h"
#include "wire/pct.h"
#include "wire/utf8.h"

/* Query parameters whose value is a credential: a log reader must not be
 * able to replay a presigned URL (SigV4, SigV2) from the access log. */
static const char *const secret_params[] = {
	"X-Amz-Signature", "X-Amz-Security-Token", "Signature",
};
#define REDACTED "REDACTED"

char *accesslog_time(int64_t unix_ms, char *buf, size_t buflen)
{
	int64_t secs = unix_ms / 1000, ms = unix_ms % 1000;
	struct tm tm;
	time_t t;

	if (buflen)
		buf[0] = '\0';
	if (ms < 0) {
		ms += 1000;
		secs--;
	}
	t = (time_t)secs;
	if (buflen < 25 || !gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		return buf;
	snprintf(buf, buflen, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)ms);
	return buf;
}

/* Adds item under the constant key name (cJSON keeps the pointer, never
 * copies or frees it). 0, or -1 (item freed) on ENOMEM. */
static int add_item(cJSON *obj, const char *name, cJSON *item)
{
	if (!item)
		return -1;
	if (!cJSON_AddItemToObjectCS(obj, name, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

/* 1 when s[0..n) is valid UTF-8 throughout. */
static bool utf8_valid(const unsigned char *p, size_t n)
{
	size_t l;

	while (n > 0) {
		if ((l = utf8_seq_len(p, n)) == 0)
			return false;
		p += l;
		n -= l;
	}
	return true;
}

/* Adds name: s or null. Valid UTF-8 (the usual case) is referenced, not
 * copied: s must outlive obj. Otherwise a copy with each invalid byte
 * replaced by U+FFFD is stored in *scratch, which the caller frees after
 * printing (at most one such string per call site). 0 or -1 on ENOMEM. */
static int add_string(cJSON *obj, const char *name, const char *s, char **scratch)
{
	const unsigned char *p;
	size_t n, i = 0, l;
	char *clean;

	if (!s)
		return add_item(obj, name, cJSON_CreateNull());
	p = (const unsigned char *)s;
	n = strlen(s);
	if (utf8_valid(p, n))
		return add_item(obj, name, cJSON_CreateStringReference(s));
	clean = malloc(n * 3 + 1);
	if (!clean)
		return -1;
	while (n > 0) {
		if ((l = utf8_seq_len(p, n)) == 0) {
			memcpy(clean + i, "\xEF\xBF\xBD", 3);
			i += 3;
			l = 1;
		} else {
			memcpy(clean + i, p, l);
			i += l;
		}
		p += l;
		n -= l;
	}
	clean[i] = '\0';
	*scratch = clean;
	return add_item(obj, name, cJSON_CreateStringReference(clean));
}

/* 1 when the (percent-encoded) parameter name is a credential. Names are
 * compared decoded and without case, so "x-amz-%53ignature" is one too. */
static bool secret_param(const char *name, size_t len)
{
	char decoded[64];
	ssize_t n = pct_decode(name, len, PCT_PLUS_SPACE, decoded, sizeof(decoded));

	if (n < 0)
		return false; /* longer than any secret name, or malformed */
	for (size_t i = 0; i < sizeof(secret_params) / sizeof(secret_params[0]); i++)
		if ((size_t)n == strlen(secret_params[i]) &&
		    strncasecmp(decoded, secret_params[i], (size_t)n) == 0)
			return true;
	return false;
}

/* query with the value of every credential parameter replaced by
 * REDACTED, in a malloc'd string; NULL on ENOMEM. */
static char *redact_query(const char *query)
{
	size_t qlen = strlen(query), i = 0;
	/* each '&'-separated segment grows by at most strlen(REDACTED) + 1 */
	char *out = malloc(qlen + (qlen / 2 + 1) * (sizeof(REDACTED) + 1) + 1);
	const char *seg = query;

	if (!out)
		return NULL;
	while (*seg) {
		size_t slen = strcspn(seg, "&");
		const char *eq = memchr(seg, '=', slen);
		size_t nlen = eq ? (size_t)(eq - seg) : slen;

		if (eq && secret_param(seg, nlen)) {
			memcpy(out + i, seg, nlen + 1);
			i += nlen + 1;
			memcpy(out + i, REDACTED, sizeof(REDACTED) - 1);
			i += sizeof(REDACTED) - 1;
		} else {
			memcpy(out + i, seg, slen);
			i += slen;
		}
		seg += slen;
		if (*seg == '&')
			out[i++] = *seg++;
	}
	out[i] = '\0';
	return out;
}

/* Adds name: v as an exact integer, or null when !present. */
static int add_uint(cJSON *obj, const char *name, bool present, uint64_t v)
{
	char num[24];

	if (!present)
		return add_item(obj, name, cJSON_CreateNull());
	snprintf(num, sizeof(num), "%" PRIu64, v);
	return add_item(obj, name, cJSON_CreateRaw(num));
}

/* Worst-case printed size of s as a JSON string: every byte may become
 * "\\u00XX" (or one U+FFFD, 3 bytes), plus quotes. */
static size_t json_string_room(const char *s)
{
	return s ? strlen(s) * 6 + 2 : 4;
}

char *accesslog_format(const struct accesslog_entry *e, size_t *len)
{
	/* one scratch slot per string field that may need a U+FFFD copy */
	enum { S_TIME, S_ID, S_ADDR, S_ACCESS_KEY, S_METHOD, S_PATH, S_QUERY, S_BUCKET, S_KEY,
	       S_LOCK, S_VERDICT, S_AGENT, S_COUNT };
	char *scratch[S_COUNT] = { NULL };
	char *query = NULL;
	const char *access_key = e->access_key ? e->access_key : "-";
	cJSON *obj = NULL;
	char *line = NULL;
	char when[32], num[40];
	size_t n, room;
	double ms;
	int i;

	if (e->query && !(query = redact_query(e->query)))
		goto out;
	obj = cJSON_CreateObject();
	if (!obj)
		goto out;
	accesslog_time(e->time_ms, when, sizeof(when));
	ms = isfinite(e->duration_ms) && e->duration_ms > 0 ? e->duration_ms : 0;
	snprintf(num, sizeof(num), "%.3f", ms);
	if (add_string(obj, "time", when, &scratch[S_TIME]) ||
	    add_string(obj, "requestId", e->request_id, &scratch[S_ID]) ||
	    add_string(obj, "remoteAddr", e->remote_addr, &scratch[S_ADDR]) ||
	    add_string(obj, "accessKey", access_key, &scratch[S_ACCESS_KEY]) ||
	    add_string(obj, "method", e->method, &scratch[S_METHOD]) ||
	    add_string(obj, "path", e->path, &scratch[S_PATH]) ||
	    add_string(obj, "query", query, &scratch[S_QUERY]) ||
	    add_string(obj, "bucket", e->bucket, &scratch[S_BUCKET]) ||
	    add_string(obj, "key", e->key, &scratch[S_KEY]) ||
	    add_string(obj, "lock", e->lock, &scratch[S_LOCK]) ||
	    add_uint(obj, "presentedEpoch", e->presented_epoch != 0, e->presented_epoch) ||
	    add_uint(obj, "currentEpoch", e->has_current_epoch, e->current_epoch) ||
	    add_string(obj, "verdict", e->verdict, &scratch[S_VERDICT]) ||
	    add_uint(obj, "upstreamStatus", e->upstream_status > 0,
		     (uint64_t)(e->upstream_status > 0 ? e->upstream_status : 0)) ||
	    add_uint(obj, "status", true, (uint64_t)(e->status > 0 ? e->status : 0)) ||
	    add_uint(obj, "bytesIn", true, e->bytes_in) ||
	    add_uint(obj, "bytesOut", true, e->bytes_out) ||
	    add_item(obj, "durationMs", cJSON_CreateRaw(num)) ||
	    add_string(obj, "userAgent", e->user_agent, &scratch[S_AGENT]))
		goto out;
	/* printed straight into the line: keys, numbers and punctuation fit in
	 * 512 bytes; cJSON asks for a few spare bytes at the end */
	room = 512 + json_string_room(when) + json_string_room(e->request_id) +
	       json_string_room(e->remote_addr) + json_string_room(access_key) +
	       json_string_room(e->method) + json_string_room(e->path) +
	       json_string_room(query) + json_string_room(e->bucket) +
	       json_string_room(e->key) + json_string_room(e->lock) +
	       json_string_room(e->verdict) + json_string_room(e->user_agent);
	if (room > INT_MAX)
		goto out;
	line = malloc(room);
	if (!line)
		goto out;
	if (!cJSON_PrintPreallocated(obj, line, (int)room - 2, 0)) {
		free(line);
		line = NULL;
		goto out;
	}
	n = strlen(line);
	line[n] = '\n';
	line[n + 1] = '\0';
	if (len)
		*len = n + 1;
out:
	cJSON_Delete(obj);
	for (i = 0; i < S_COUNT; i++)
		free(scratch[i]);
	free(query);
	return line;
}
