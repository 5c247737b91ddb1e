/* accesslog.c — formats the per-request JSON access-log line. It neither
 * writes nor buffers log output; the caller owns the destination. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "accesslog.h"

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

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *p, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF) {
		len = 2;
		cp = p[0] & 0x1F;
	} else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
		len = 3;
		cp = p[0] & 0x0F;
	} else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
		len = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

/* Adds name: s (valid UTF-8 copy) or null. 0 or -1 on ENOMEM. */
static int add_string(cJSON *obj, const char *name, const char *s)
{
	const unsigned char *p;
	size_t n, i = 0, l;
	char *clean;
	int rc;

	if (!s)
		return cJSON_AddNullToObject(obj, name) ? 0 : -1;
	p = (const unsigned char *)s;
	n = strlen(s);
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
	rc = cJSON_AddStringToObject(obj, name, clean) ? 0 : -1;
	free(clean);
	return rc;
}

/* Adds name: v as an exact integer, or null when !present. */
static int add_uint(cJSON *obj, const char *name, bool present, uint64_t v)
{
	char num[24];

	if (!present)
		return cJSON_AddNullToObject(obj, name) ? 0 : -1;
	snprintf(num, sizeof(num), "%" PRIu64, v);
	return cJSON_AddRawToObject(obj, name, num) ? 0 : -1;
}

char *accesslog_format(const struct accesslog_entry *e, size_t *len)
{
	cJSON *obj = NULL;
	char *printed = NULL, *line = NULL;
	char when[32], num[40];
	size_t n;
	double ms;

	obj = cJSON_CreateObject();
	if (!obj)
		goto out;
	accesslog_time(e->time_ms, when, sizeof(when));
	ms = isfinite(e->duration_ms) && e->duration_ms > 0 ? e->duration_ms : 0;
	snprintf(num, sizeof(num), "%.3f", ms);
	if (add_string(obj, "time", when) ||
	    add_string(obj, "requestId", e->request_id) ||
	    add_string(obj, "method", e->method) ||
	    add_string(obj, "bucket", e->bucket) ||
	    add_string(obj, "key", e->key) ||
	    add_string(obj, "lock", e->lock) ||
	    add_uint(obj, "presentedEpoch", e->presented_epoch != 0, e->presented_epoch) ||
	    add_uint(obj, "currentEpoch", e->has_current_epoch, e->current_epoch) ||
	    add_string(obj, "verdict", e->verdict) ||
	    add_uint(obj, "upstreamStatus", e->upstream_status > 0,
		     (uint64_t)(e->upstream_status > 0 ? e->upstream_status : 0)) ||
	    add_uint(obj, "status", true, (uint64_t)(e->status > 0 ? e->status : 0)) ||
	    add_uint(obj, "bytesIn", true, e->bytes_in) ||
	    add_uint(obj, "bytesOut", true, e->bytes_out) ||
	    !cJSON_AddRawToObject(obj, "durationMs", num))
		goto out;
	printed = cJSON_PrintUnformatted(obj);
	if (!printed)
		goto out;
	n = strlen(printed);
	line = malloc(n + 2);
	if (!line)
		goto out;
	memcpy(line, printed, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	if (len)
		*len = n + 1;
out:
	if (printed)
		cJSON_free(printed);
	cJSON_Delete(obj);
	return line;
}
