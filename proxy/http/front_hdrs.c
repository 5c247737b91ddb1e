/* front_hdrs.c — the front end's header lists (case-insensitive names, in
 * arrival order), comma-separated token lists, default limits and freeing a
 * parsed message. No parsing, no sockets. */
#include "front.h"

#include <stdlib.h>
#include <string.h>


const char *front_hdrs_get(const struct front_hdrs *h, const char *name)
{
	for (size_t i = 0; h && i < h->n; i++)
		if (strcasecmp(h->v[i].name, name) == 0)
			return h->v[i].value;
	return NULL;
}

size_t front_hdrs_count(const struct front_hdrs *h, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; h && i < h->n; i++)
		if (strcasecmp(h->v[i].name, name) == 0)
			n++;
	return n;
}

int front_hdrs_addn(struct front_hdrs *h, const char *name, size_t nlen,
		    const char *value, size_t vlen)
{
	char *n = NULL, *v = NULL;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct front_hdr *nv = realloc(h->v, cap * sizeof(*nv));

		if (!nv)
			return -1;
		h->v = nv;
		h->cap = cap;
	}
	n = strndup(name, nlen);
	v = strndup(value, vlen);
	if (!n || !v) {
		free(n);
		free(v);
		return -1;
	}
	h->v[h->n].name = n;
	h->v[h->n].value = v;
	h->n++;
	return 0;
}

int front_hdrs_add(struct front_hdrs *h, const char *name, const char *value)
{
	return front_hdrs_addn(h, name, strlen(name), value, strlen(value));
}

size_t front_hdrs_del(struct front_hdrs *h, const char *name)
{
	size_t out = 0, removed = 0;

	for (size_t i = 0; h && i < h->n; i++) {
		if (strcasecmp(h->v[i].name, name) == 0) {
			free(h->v[i].name);
			free(h->v[i].value);
			removed++;
			continue;
		}
		h->v[out++] = h->v[i];
	}
	if (h)
		h->n = out;
	return removed;
}

int front_hdrs_set(struct front_hdrs *h, const char *name, const char *value)
{
	front_hdrs_del(h, name);
	return value ? front_hdrs_add(h, name, value) : 0;
}

void front_hdrs_clear(struct front_hdrs *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].name);
		free(h->v[i].value);
	}
	free(h->v);
	memset(h, 0, sizeof(*h));
}

int front_list_has(const char *value, const char *token)
{
	size_t tlen = strlen(token);
	const char *p = value;

	while (p && *p) {
		const char *end;
		size_t len;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		end = p;
		while (*end && *end != ',')
			end++;
		len = (size_t)(end - p);
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == tlen && strncasecmp(p, token, tlen) == 0)
			return 1;
		p = end;
	}
	return 0;
}


void front_limits_default(struct front_limits *l)
{
	l->header_bytes = 16 * 1024;
	l->header_count = 100;
	l->url_bytes = 8 * 1024;
	l->idle_timeout_ms = 60000;
	l->header_timeout_ms = 10000;
	l->body_timeout_ms = 60000;
	l->body_min_rate = 1024;
	l->send_timeout_ms = 60000;
	l->input_buffer = 64 * 1024;
	l->output_buffer = 64 * 1024;
	l->discard_max = 1024 * 1024;
	l->max_connections = 0;
}

void front_msg_free(struct front_msg *msg)
{
	if (!msg)
		return;
	free(msg->method);
	free(msg->target);
	free(msg->path);
	free(msg->query);
	front_hdrs_clear(&msg->hdrs);
	free(msg);
}

