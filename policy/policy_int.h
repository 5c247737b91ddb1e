/* policy_int.h — what the configuration's files share (policy.c, loading:
 * the walk over the JSON, building and freeing; policy_schema.c, the key
 * table and the checks of one value; policy_check.c, the checks across
 * keys; policy_match.c, the lookups). Not a public interface: policy.h is.
 *
 * One struct parser per load: the first error wins and is the one the
 * caller sees, with the key path in front. */
#ifndef FENCE_POLICY_INT_H
#define FENCE_POLICY_INT_H

#include <stddef.h>

#include "policy.h"

/* ---- the schema table (policy_schema.c) --------------------------------- */

enum ktype {
	KT_OBJECT,    /* nested object, embedded struct at off */
	KT_OBJECTS,   /* array of objects: pointer at off, count at off_n */
	KT_STRING,    /* char * at off */
	KT_STRINGS,   /* array of strings: elements of size elem, the char * at
		       * offset 0 of each; pointer at off, count at off_n */
	KT_BOOL,      /* bool at off */
	KT_INT,       /* long long at off */
	KT_ENUM,      /* int at off: index into values */
	KT_NAME,      /* const char * at off: values[index] (static) */
	KT_METHODS,   /* unsigned METHOD_* mask at off */
	KT_ACTIONS,   /* unsigned POLICY_ACT_* mask at off */
};

#define KF_REQUIRED     1u
#define KF_DOC_DEFAULT  2u  /* def is documentation: computed after the walk */

typedef int (*check_fn)(const char *value, char *why, size_t whylen);

struct key {
	const char *path;
	enum ktype type;
	const char *def;          /* JSON text of the default, or NULL */
	long long min, max;       /* INT: value; STRING: length; arrays: count */
	unsigned flags;
	size_t off, off_n, elem;
	const char *const *values;
	check_fn check;
	const char *doc;
};

#define STR_MAX 4096

/* The table, in README order; a table path's parent is the part before its
 * last '.', array elements are "name[]". */
extern const struct key policy_keys[];
extern const size_t policy_nkeys;

/* "HOST:PORT" -> host (no brackets) and port; loopback and family. Returns
 * 0, or -1 with a message in why. */
int policy_split_listen(const char *v, char *host, size_t hostlen, int *port,
			int *loopback, int *ipv6, char *why, size_t whylen);
/* 1 if b[0..n) is a valid S3 bucket name (3-63 of [a-z0-9.-], starting and
 * ending alphanumeric). */
int policy_bucket_name_valid(const char *b, size_t n);
/* 1 if path p has a "." or ".." segment. */
int policy_has_dot_segment(const char *p);

/* ---- loading (policy.c) -------------------------------------------------- */

struct parser {
	char *err;
	size_t errlen;
	int failed;   /* first error wins */
};

/* Records the first error of a load as "PATH: message" (path NULL or "":
 * "config"); returns -1. */
int policy_fail(struct parser *ps, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- checks across keys (policy_check.c) --------------------------------- */

/* After the walk: relates keys to each other, fills what is derived (listen
 * hosts, lock stores and prefixes, secrets, the sorted routes and access
 * keys). Returns 0, or -1 with ps failed. */
int policy_check(struct parser *ps, struct policy *p);
/* The first segment of a decoded path into out, if it is a valid lock name
 * not starting with '_' (reserved for /_fence/). Returns 1 or 0. */
int policy_first_segment(const char *path, char *out, size_t outlen);

#endif
