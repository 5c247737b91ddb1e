/* policy.c — loads the JSON configuration (a file, text, or the quick
 * command-line flags) into an immutable, reference-counted struct policy:
 * the JSON is walked against the schema table (policy_schema.c), which
 * applies defaults and refuses unknown keys and wrong types with the key
 * path in every error; then the checks across keys run (policy_check.c).
 * It does not answer lookups (policy_match.c) and does not open the TLS
 * files, the stores or the upstream: the daemon does, and -t should too. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "wire/method.h"
#include "policy.h"
#include "policy_int.h"

/* ---- parser state -------------------------------------------------------- */

int policy_fail(struct parser *ps, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->failed)
		return -1;
	ps->failed = 1;
	if (!ps->err || ps->errlen == 0)
		return -1;
	/* a hostile key can make the path longer than the message: keep at
	 * most half of it, so "PATH: reason" is always recognisable */
	n = snprintf(ps->err, ps->errlen, "%.*s: ", (int)(ps->errlen / 2),
		     path && *path ? path : "config");
	if (n < 0 || (size_t)n >= ps->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the walk over the JSON -------------------------------------------- */

/* The table path's parent ("" for top level) equals tpath; *name gets the
 * last component. */
static int key_in(const struct key *k, const char *tpath, const char **name)
{
	const char *dot = strrchr(k->path, '.');
	size_t plen = dot ? (size_t)(dot - k->path) : 0;

	if (strlen(tpath) != plen || strncmp(k->path, tpath, plen) != 0)
		return 0;
	*name = dot ? dot + 1 : k->path;
	return 1;
}

static const struct key *key_find(const char *tpath, const char *name)
{
	const char *kn;

	for (size_t i = 0; i < policy_nkeys; i++)
		if (key_in(&policy_keys[i], tpath, &kn) && strcmp(kn, name) == 0)
			return &policy_keys[i];
	return NULL;
}

/* Edit distance, capped: for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[65], cur[65];

	if (la > 64 || lb > 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
	}
	return prev[lb];
}

static const char *suggest(const char *tpath, const char *name)
{
	const char *best = NULL, *kn;
	size_t best_d = 3;

	for (size_t i = 0; i < policy_nkeys; i++) {
		size_t d;

		if (!key_in(&policy_keys[i], tpath, &kn))
			continue;
		d = edit_distance(name, kn);
		if (d < best_d) {
			best_d = d;
			best = kn;
		}
	}
	return best;
}

static void path_join(char *out, size_t outlen, const char *parent, const char *name)
{
	if (!parent || !*parent)
		snprintf(out, outlen, "%s", name);
	else
		snprintf(out, outlen, "%s.%s", parent, name);
}

static int has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static int walk_object(struct parser *ps, const cJSON *obj, const char *tpath,
		       const char *path, void *base);

static int set_string(struct parser *ps, const struct key *k, const cJSON *it,
		      const char *path, char **slot)
{
	const char *s;
	size_t n;
	char why[256];

	if (!cJSON_IsString(it) || !it->valuestring)
		return policy_fail(ps, path, "must be a string");
	s = it->valuestring;
	n = strlen(s);
	if ((long long)n < k->min)
		return policy_fail(ps, path, "must not be empty");
	if ((long long)n > k->max)
		return policy_fail(ps, path, "longer than %lld bytes", k->max);
	if (has_control(s))
		return policy_fail(ps, path, "contains a control character");
	if (k->check && k->check(s, why, sizeof(why)) < 0)
		return policy_fail(ps, path, "%s", why);
	free(*slot);
	*slot = strdup(s);
	if (!*slot)
		return policy_fail(ps, path, "out of memory");
	return 0;
}

static int enum_index(const char *const *values, const char *s)
{
	for (int i = 0; values[i]; i++)
		if (strcmp(values[i], s) == 0)
			return i;
	return -1;
}

static void enum_list(const char *const *values, char *out, size_t outlen)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; values[i] && used < outlen; i++) {
		int n = snprintf(out + used, outlen - used, "%s\"%s\"", i ? ", " : "", values[i]);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

static const char *const method_names[] = { "GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", NULL };
static const char *const action_names[] = { "read", "write", "lock", "admin", "break", NULL };

/* Array of names from a fixed list -> bit mask. */
static int set_names(struct parser *ps, const struct key *k, const cJSON *it,
		     const char *path, unsigned *slot)
{
	const char *const *names = k->type == KT_METHODS ? method_names : action_names;
	const cJSON *el;
	unsigned mask = 0;
	int i = 0, n;
	char epath[600], list[128];

	if (!cJSON_IsArray(it))
		return policy_fail(ps, path, "must be an array of strings");
	n = cJSON_GetArraySize(it);
	if (n < k->min)
		return policy_fail(ps, path, "must not be empty");
	cJSON_ArrayForEach(el, it) {
		int idx;

		snprintf(epath, sizeof(epath), "%s[%d]", path, i++);
		if (!cJSON_IsString(el))
			return policy_fail(ps, epath, "must be a string");
		idx = enum_index(names, el->valuestring);
		if (idx < 0) {
			enum_list(names, list, sizeof(list));
			return policy_fail(ps, epath, "unknown %s \"%s\" (one of %s)",
					   k->type == KT_METHODS ? "method" : "action",
					   el->valuestring, list);
		}
		if (k->type == KT_METHODS)
			mask |= method_from_name(el->valuestring);
		else
			mask |= 1u << idx;
	}
	if (k->type == KT_METHODS)
		mask |= METHOD_OTHER;
	*slot = mask;
	return 0;
}

/* Stores JSON value it at key k into base (the enclosing struct). */
static int set_value(struct parser *ps, const struct key *k, const cJSON *it,
		     const char *path, void *base)
{
	char *field = (char *)base + k->off;
	char epath[600], list[128];

	switch (k->type) {
	case KT_OBJECT:
		if (!cJSON_IsObject(it))
			return policy_fail(ps, path, "must be an object");
		return walk_object(ps, it, k->path, path, field);
	case KT_STRING:
		return set_string(ps, k, it, path, (char **)field);
	case KT_BOOL:
		if (!cJSON_IsBool(it))
			return policy_fail(ps, path, "must be true or false");
		*(bool *)field = cJSON_IsTrue(it);
		return 0;
	case KT_INT: {
		double v;

		if (!cJSON_IsNumber(it))
			return policy_fail(ps, path, "must be an integer");
		v = it->valuedouble;
		if (!isfinite(v) || v != floor(v))
			return policy_fail(ps, path, "must be an integer");
		if (v < (double)k->min || v > (double)k->max)
			return policy_fail(ps, path, "%.17g is out of range (%lld to %lld)", v, k->min,
					   k->max);
		*(long long *)field = (long long)v;
		return 0;
	}
	case KT_ENUM:
	case KT_NAME: {
		int idx;

		enum_list(k->values, list, sizeof(list));
		if (!cJSON_IsString(it))
			return policy_fail(ps, path, "must be one of %s", list);
		idx = enum_index(k->values, it->valuestring);
		if (idx < 0)
			return policy_fail(ps, path, "\"%s\" is not one of %s", it->valuestring, list);
		if (k->type == KT_NAME)
			*(const char **)field = k->values[idx];
		else
			*(int *)field = idx;
		return 0;
	}
	case KT_METHODS:
	case KT_ACTIONS:
		return set_names(ps, k, it, path, (unsigned *)field);
	case KT_STRINGS:
	case KT_OBJECTS: {
		const cJSON *el;
		char *items;
		size_t n, i = 0;
		char etpath[128];

		if (!cJSON_IsArray(it))
			return policy_fail(ps, path, "must be an array%s",
					   k->type == KT_OBJECTS ? " of objects" : " of strings");
		n = (size_t)cJSON_GetArraySize(it);
		if ((long long)n < k->min)
			return policy_fail(ps, path, "needs at least %lld element%s", k->min,
					   k->min == 1 ? "" : "s");
		if ((long long)n > k->max)
			return policy_fail(ps, path, "more than %lld elements", k->max);
		if (*(void **)field)
			return policy_fail(ps, path, "given twice");
		items = n ? calloc(n, k->elem) : NULL;
		if (n && !items)
			return policy_fail(ps, path, "out of memory");
		*(void **)field = items;
		*(size_t *)((char *)base + k->off_n) = n;
		snprintf(etpath, sizeof(etpath), "%s[]", k->path);
		cJSON_ArrayForEach(el, it) {
			char *elem = items + i * k->elem;

			snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
			i++;
			if (k->type == KT_STRINGS) {
				struct key sk = *k;

				sk.min = 1;
				sk.max = 256;
				if (set_string(ps, &sk, el, epath, (char **)elem) < 0)
					return -1;
			} else {
				if (!cJSON_IsObject(el))
					return policy_fail(ps, epath, "must be an object");
				if (walk_object(ps, el, etpath, epath, elem) < 0)
					return -1;
			}
		}
		return 0;
	}
	}
	return policy_fail(ps, path, "internal: unknown key type");
}

/* Applies the JSON default text of k. */
static int set_default(struct parser *ps, const struct key *k, const char *path, void *base)
{
	cJSON *def = cJSON_Parse(k->def);
	int rc;

	if (!def)
		return policy_fail(ps, path, "internal: bad default");
	rc = set_value(ps, k, def, path, base);
	cJSON_Delete(def);
	return rc;
}

/* Walks obj (NULL: absent, only defaults) whose table path is tpath and
 * real path is path, filling base. */
static int walk_object(struct parser *ps, const cJSON *obj, const char *tpath,
		       const char *path, void *base)
{
	const cJSON *it, *prev;
	const char *kn;
	char cpath[600];

	if (obj) {
		cJSON_ArrayForEach(it, obj) {
			const struct key *k;

			if (!it->string)
				return policy_fail(ps, path, "internal: member without a name");
			path_join(cpath, sizeof(cpath), path, it->string);
			for (prev = obj->child; prev != it; prev = prev->next)
				if (strcmp(prev->string, it->string) == 0)
					return policy_fail(ps, cpath, "given twice");
			k = key_find(tpath, it->string);
			if (!k) {
				const char *s = suggest(tpath, it->string);

				if (s)
					return policy_fail(ps, cpath, "unknown key (did you mean \"%s\"?)", s);
				return policy_fail(ps, cpath, "unknown key");
			}
			if (set_value(ps, k, it, cpath, base) < 0)
				return -1;
		}
	}
	for (size_t i = 0; i < policy_nkeys; i++) {
		const struct key *k = &policy_keys[i];

		if (!key_in(k, tpath, &kn))
			continue;
		if (obj && cJSON_GetObjectItemCaseSensitive(obj, kn))
			continue;
		path_join(cpath, sizeof(cpath), path, kn);
		if (k->flags & KF_REQUIRED)
			return policy_fail(ps, cpath, "required");
		if (k->type == KT_OBJECT) {
			if (walk_object(ps, NULL, k->path, cpath, (char *)base + k->off) < 0)
				return -1;
		} else if (k->def && !(k->flags & KF_DOC_DEFAULT)) {
			if (set_default(ps, k, cpath, base) < 0)
				return -1;
		}
	}
	return 0;
}

/* ---- building and freeing ---------------------------------------------- */

static void free_str(char *s, int wipe)
{
	if (s && wipe)
		explicit_bzero(s, strlen(s));
	free(s);
}

static void policy_destroy(struct policy *p)
{
	struct policy_client *cs = p->clients;

	for (size_t i = 0; p->listen && i < p->nlisten; i++) {
		free(p->listen[i].addr);
		free(p->listen[i].host);
	}
	free(p->listen);
	free(p->tls.cert);
	free(p->tls.key);
	free(p->tls.ca);
	free(p->upstream.endpoint);
	free(p->upstream.region);
	free(p->upstream.dialect);
	free(p->upstream.profile);
	free(p->upstream.ca_bundle);
	free(p->data_dir);
	free(p->lock_store);
	for (size_t i = 0; p->locks && i < p->nlocks; i++) {
		free(p->locks[i].name);
		free(p->locks[i].store);
		free(p->locks[i].prefix);
	}
	free(p->locks);
	for (size_t i = 0; p->routes && i < p->nroutes; i++) {
		free(p->routes[i].prefix);
		free(p->routes[i].lock_name);
	}
	free(p->routes);
	for (size_t i = 0; cs && i < p->nclients; i++) {
		struct policy_client *c = &cs[i];

		free(c->name);
		free(c->access_key);
		if (c->secret)
			explicit_bzero(c->secret, c->secret_len);
		free(c->secret);
		explicit_bzero(c->token_sha256, sizeof(c->token_sha256));
		for (size_t j = 0; c->allow && j < c->nallow; j++)
			free(c->allow[j].prefix);
		free(c->allow);
		free_str(c->secret_env, 0);
		free_str(c->secret_file, 0);
		free_str(c->token_env, 0);
		free_str(c->token_file, 0);
	}
	free(cs);
	free(p->by_key);
	free(p->log.access_log);
	free(p->log.error_log);
	free(p->source);
	free(p);
}

static void line_col(const char *text, const char *at, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (const char *s = text; s < at && *s; s++) {
		if (*s == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* The first control character (below 0x20, or DEL) in a JSON string of
 * text, raw or escaped (\n, \u0000, ...): a path, a name or a secret's
 * variable with one would be cut short or mean something else. NULL when
 * there is none. Outside strings (whitespace) they are JSON's business. */
static const char *string_control_char(const char *text)
{
	int in_string = 0;

	for (const char *c = text; *c; c++) {
		unsigned char ch = (unsigned char)*c;

		if (!in_string) {
			in_string = ch == '"';
			continue;
		}
		if (ch == '"') {
			in_string = 0;
		} else if (ch < 0x20 || ch == 0x7f) {
			return c;
		} else if (ch == '\\') {
			if (!c[1])
				return NULL;
			if (strchr("bfnrt", c[1]))
				return c;
			if (c[1] == 'u') {
				unsigned v = 0;
				int i;

				for (i = 2; i < 6 && isxdigit((unsigned char)c[i]); i++)
					v = v * 16 + (unsigned)(isdigit((unsigned char)c[i])
						? c[i] - '0' : (tolower((unsigned char)c[i]) - 'a' + 10));
				if (i == 6 && (v < 0x20 || v == 0x7f))
					return c;
			}
			c++; /* the escaped character */
		}
	}
	return NULL;
}

/* Parses NUL-terminated text of length len; source names it in p->source. */
static struct policy *parse_text(const char *text, size_t len, const char *source,
				 char *err, size_t errlen)
{
	struct parser ps = { err, errlen, 0 };
	struct policy *p = NULL;
	cJSON *root = NULL;
	const char *end = NULL;

	if (err && errlen)
		err[0] = '\0';
	if (strlen(text) != len) {
		policy_fail(&ps, NULL, "contains a NUL byte");
		goto fail;
	}
	end = string_control_char(text);
	if (end) {
		int line, col;

		line_col(text, end, &line, &col);
		policy_fail(&ps, NULL, "a control character (a NUL, newline, tab, ...) in a string "
			    "at line %d, column %d: no config string may hold one", line, col);
		goto fail;
	}
	root = cJSON_ParseWithOpts(text, &end, 1);
	if (!root) {
		int line, col;

		line_col(text, end ? end : text, &line, &col);
		policy_fail(&ps, NULL, "invalid JSON at line %d, column %d", line, col);
		goto fail;
	}
	if (!cJSON_IsObject(root)) {
		policy_fail(&ps, NULL, "must be a JSON object");
		goto fail;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		policy_fail(&ps, NULL, "out of memory");
		goto fail;
	}
	p->refs = 1;
	if (walk_object(&ps, root, "", "", p) < 0)
		goto fail;
	if (policy_check(&ps, p) < 0)
		goto fail;
	p->source = strdup(source);
	if (!p->source) {
		policy_fail(&ps, NULL, "out of memory");
		goto fail;
	}
	cJSON_Delete(root);
	return p;
fail:
	cJSON_Delete(root);
	if (p)
		policy_destroy(p);
	return NULL;
}

struct policy *policy_parse(const char *json, size_t len, char *err, size_t errlen)
{
	char *text = NULL;
	struct policy *p;

	if (!json || len > (size_t)POLICY_FILE_MAX) {
		snprintf(err, errlen, "config: %s", json ? "larger than 1 MiB" : "no text");
		return NULL;
	}
	text = malloc(len + 1);
	if (!text) {
		snprintf(err, errlen, "config: out of memory");
		return NULL;
	}
	memcpy(text, json, len);
	text[len] = '\0';
	p = parse_text(text, len, "(text)", err, errlen);
	free(text);
	return p;
}

struct policy *policy_load(const char *path, char *err, size_t errlen)
{
	struct policy *p = NULL;
	char *text = NULL, inner[POLICY_ERR_MAX];
	struct stat st;
	size_t n = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	if (st.st_size > POLICY_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %ld bytes", path, POLICY_FILE_MAX);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, text + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	text[n] = '\0';
	p = parse_text(text, n, path, inner, sizeof(inner));
	if (!p)
		snprintf(err, errlen, "%s: %s", path, inner);
out:
	free(text);
	close(fd);
	return p;
}

struct policy *policy_default(const struct policy_flags *flags, char *err, size_t errlen)
{
	cJSON *root = cJSON_CreateObject(), *listen = NULL, *up = NULL;
	char *text = NULL, *abs = NULL, inner[POLICY_ERR_MAX];
	const char *data_dir = flags->data_dir ? flags->data_dir : "./fencegate-data";
	struct policy *p = NULL;
	int ok = root != NULL;

	if (ok && flags->listen && flags->nlisten) {
		ok = (listen = cJSON_AddArrayToObject(root, "listen")) != NULL;
		for (size_t i = 0; ok && i < flags->nlisten; i++)
			ok = cJSON_AddItemToArray(listen, cJSON_CreateString(flags->listen[i]));
	}
	if (ok)
		ok = cJSON_AddStringToObject(root, "mode", flags->mode == POLICY_MODE_HTTP ?
					     "http" : "s3") != NULL;
	if (ok && flags->upstream) {
		ok = (up = cJSON_AddObjectToObject(root, "upstream")) != NULL &&
			cJSON_AddStringToObject(up, "endpoint", flags->upstream) != NULL;
		if (ok && flags->mode == POLICY_MODE_S3) {
			const char *region = getenv("AWS_REGION");

			if (!region || !*region)
				region = getenv("AWS_DEFAULT_REGION");
			if (region && *region)
				ok = cJSON_AddStringToObject(up, "region", region) != NULL;
		}
	} else if (ok && flags->mode == POLICY_MODE_S3) {
		ok = cJSON_AddStringToObject(root, "data_dir", data_dir) != NULL;
	}
	if (ok && flags->mode == POLICY_MODE_HTTP) {
		const char *store = flags->lock_store;

		if (!store) {
			char cwd[PATH_MAX];

			if (data_dir[0] == '/')
				ok = asprintf(&abs, "file://%s", data_dir) >= 0;
			else if (getcwd(cwd, sizeof(cwd)))
				ok = asprintf(&abs, "file://%s/%s", cwd,
					      strncmp(data_dir, "./", 2) == 0 ? data_dir + 2 :
					      data_dir) >= 0;
			else
				ok = 0;
			if (!ok)
				abs = NULL;
			store = abs;
		}
		ok = ok && cJSON_AddStringToObject(root, "lock_store", store) != NULL;
	}
	if (ok)
		ok = cJSON_AddStringToObject(root, "unrouted_writes", "bucket_lock") != NULL;
	if (ok)
		ok = (text = cJSON_PrintUnformatted(root)) != NULL;
	if (!ok) {
		snprintf(err, errlen, "flags: out of memory");
		goto out;
	}
	p = parse_text(text, strlen(text), "(flags)", inner, sizeof(inner));
	if (!p)
		snprintf(err, errlen, "flags: %s", inner);
out:
	free(text);
	free(abs);
	cJSON_Delete(root);
	return p;
}

struct policy *policy_hold(struct policy *p)
{
	if (p)
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	return p;
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	policy_destroy(p);
}
