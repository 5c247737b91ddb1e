/* query.c — query strings split and decoded once (query.h). Says nothing
 * about what a parameter means: classification and signing do that. */
#include "query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pct.h"

const char *query_strerror(enum query_status st)
{
	switch (st) {
	case QUERY_OK:
		return "ok";
	case QUERY_BAD_ESCAPE:
		return "malformed percent-encoding in the query";
	case QUERY_TOO_MANY:
		return "too many query parameters";
	case QUERY_NOMEM:
		return "out of memory";
	}
	return "unknown query error";
}

void query_free(struct query *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++) {
		free(q->v[i].name);
		free(q->v[i].value);
	}
	free(q->v);
	q->v = NULL;
	q->n = 0;
}

enum query_status query_parse(const char *raw, struct query *q)
{
	const char *s = raw;

	q->v = NULL;
	q->n = 0;
	if (!raw || !*raw)
		return QUERY_OK;
	q->v = calloc(QUERY_PARAMS_MAX, sizeof(*q->v));
	if (!q->v)
		return QUERY_NOMEM;
	while (*s) {
		size_t seg = strcspn(s, "&");
		const char *eq = memchr(s, '=', seg);
		size_t nlen = eq ? (size_t)(eq - s) : seg;
		struct query_param *p;

		if (seg == 0) {
			s++;
			continue;
		}
		if (q->n == QUERY_PARAMS_MAX)
			return QUERY_TOO_MANY;
		p = &q->v[q->n];
		errno = 0;
		p->name = pct_decode_dup(s, nlen, PCT_PLUS_SPACE | PCT_NO_NUL, NULL);
		if (p->name)
			p->value = eq ? pct_decode_dup(eq + 1, seg - nlen - 1, PCT_PLUS_SPACE,
						       &p->value_len)
				      : strdup("");
		if (!p->name || !p->value) {
			enum query_status st = errno == ENOMEM ? QUERY_NOMEM : QUERY_BAD_ESCAPE;

			free(p->name);
			p->name = NULL;
			return st;
		}
		p->has_value = eq != NULL;
		q->n++;
		s += seg;
		if (*s == '&')
			s++;
	}
	return QUERY_OK;
}

const struct query_param *query_get(const struct query *q, const char *name)
{
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->v[i].name, name) == 0)
			return &q->v[i];
	return NULL;
}

const char *query_duplicate(const struct query *q)
{
	for (size_t i = 0; i < q->n; i++)
		for (size_t j = i + 1; j < q->n; j++)
			if (strcmp(q->v[i].name, q->v[j].name) == 0)
				return q->v[i].name;
	return NULL;
}
