/* query.h — a request's query string as a list of decoded parameters.
 *
 * "a=1&b&c=x%20y" becomes (a,"1") (b, no value) (c,"x y"): split on '&',
 * then on the first '=', each side decoded by pct.h with '+' as a space.
 * Empty segments ("a&&b", a trailing '&') are skipped. Order and
 * duplicates are kept: SigV4 signs every parameter, and a classifier that
 * must refuse duplicates asks query_duplicate(). Names compare
 * case-sensitively, as S3 compares them. */
#ifndef FENCE_QUERY_H
#define FENCE_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#define QUERY_PARAMS_MAX 64    /* more parameters than this: QUERY_TOO_MANY */

struct query_param {
	char *name;        /* decoded, NUL-terminated; may be "" ("=v") */
	char *value;       /* decoded, NUL-terminated; "" when absent */
	size_t value_len;  /* decoded length (a value may hold %00) */
	bool has_value;    /* "a=" and "a=x" have one, "a" has none */
};

struct query {
	struct query_param *v;
	size_t n;
};

enum query_status {
	QUERY_OK = 0,
	QUERY_BAD_ESCAPE,  /* a '%' not followed by two hex digits, or %00 in a name */
	QUERY_TOO_MANY,    /* over QUERY_PARAMS_MAX parameters */
	QUERY_NOMEM,
};

/* Parses raw (the query without '?'; NULL or "" give no parameters) into
 * *q, which the caller frees with query_free() whatever the result. */
enum query_status query_parse(const char *raw, struct query *q);

/* The first parameter called name, or NULL. */
const struct query_param *query_get(const struct query *q, const char *name);

/* The name of the first parameter that appears twice, or NULL. */
const char *query_duplicate(const struct query *q);

/* "ok", "malformed percent-encoding", ... Never NULL. */
const char *query_strerror(enum query_status st);

/* Frees what query_parse() filled and zeroes *q. Accepts NULL. */
void query_free(struct query *q);

#endif
