/* sigv4_test.h — readers of the signing vectors that test_sigv4.c and
 * test_sigv4_rules.c share: a whole file, the expected-output files of a
 * vector, a raw HTTP request as the vector files write it, and line n of a
 * canonical request. Test code only. */
#ifndef FENCE_TEST_SIGV4_TEST_H
#define FENCE_TEST_SIGV4_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wire/sigv4.h"

#define MAX_HEADERS 40

/* The whole file, NUL-terminated, malloc'd; NULL if unreadable. */
static inline char *slurp(const char *path, size_t *lenp)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)len + 1);
		if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		}
		if (buf) {
			buf[len] = '\0';
			if (lenp)
				*lenp = (size_t)len;
		}
	}
	fclose(f);
	return buf;
}

/* A vector file with trailing line ends removed; fails the test if missing. */
static inline char *expect_file(const char *dir, const char *file)
{
	char path[PATH_MAX * 2];
	char *text;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	text = slurp(path, NULL);
	if (!text)
		fail_msg("cannot read %s", path);
	len = strlen(text);
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	return text;
}

/* A raw HTTP request as the vector files write it: request line with a
 * target that may contain spaces, "Name:value" headers with folded
 * continuation lines, blank line, body. */
struct http_req {
	char *text;   /* owns all strings below */
	char *method;
	char *path;
	char *query;  /* NULL when the target has no '?' */
	struct sigv4_header headers[MAX_HEADERS];
	char *folded[MAX_HEADERS]; /* malloc'd values of folded headers */
	size_t nheaders;
	const char *body;
	size_t bodylen;
};

/* Next line of *p (LF or CRLF), NUL-terminated in place; NULL at the end. */
static inline char *next_line(char **p, int *at_end)
{
	char *line = *p, *nl;

	if (*at_end)
		return NULL;
	nl = strchr(line, '\n');
	if (!nl) {
		*at_end = 1;
		*p = line + strlen(line);
	} else {
		*nl = '\0';
		*p = nl + 1;
	}
	if (*line && line[strlen(line) - 1] == '\r')
		line[strlen(line) - 1] = '\0';
	return line;
}

static inline void http_req_free(struct http_req *r)
{
	size_t i;

	for (i = 0; i < MAX_HEADERS; i++)
		free(r->folded[i]);
	free(r->text);
	memset(r, 0, sizeof(*r));
}

static inline void http_req_add_header(struct http_req *r, const char *name,
				const char *value)
{
	assert_true(r->nheaders < MAX_HEADERS);
	r->headers[r->nheaders].name = name;
	r->headers[r->nheaders].value = value;
	r->nheaders++;
}

static inline void parse_request_file(const char *path, struct http_req *r)
{
	char *p, *line, *sp, *last_sp, *q;
	int at_end = 0;

	memset(r, 0, sizeof(*r));
	r->text = slurp(path, NULL);
	if (!r->text)
		fail_msg("cannot read %s", path);
	p = r->text;
	line = next_line(&p, &at_end);
	assert_non_null(line);
	sp = strchr(line, ' ');
	last_sp = strrchr(line, ' ');
	if (!sp || sp == last_sp)
		fail_msg("%s: bad request line '%s'", path, line);
	*sp = '\0';
	*last_sp = '\0';
	r->method = line;
	r->path = sp + 1;
	q = strchr(r->path, '?');
	if (q) {
		*q = '\0';
		r->query = q + 1;
	}
	while ((line = next_line(&p, &at_end)) != NULL && *line) {
		if (*line == ' ' || *line == '\t') {
			/* folded continuation: join to the previous value */
			size_t last;
			char *joined;

			if (r->nheaders == 0)
				fail_msg("%s: continuation before any header", path);
			last = r->nheaders - 1;
			if (asprintf(&joined, "%s %s", r->headers[last].value, line) < 0)
				fail_msg("out of memory");
			free(r->folded[last]);
			r->folded[last] = joined;
			r->headers[last].value = joined;
			continue;
		}
		sp = strchr(line, ':');
		if (!sp)
			fail_msg("%s: header without ':' '%s'", path, line);
		*sp = '\0';
		http_req_add_header(r, line, sp + 1);
	}
	r->body = at_end ? "" : p;
	r->bodylen = strlen(r->body);
}

static inline const char *http_req_header(const struct http_req *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].name, name) == 0)
			return r->headers[i].value;
	return NULL;
}

/* Line n (0-based) of text, malloc'd. */
static inline char *nth_line(const char *text, int n)
{
	const char *end;

	while (n-- > 0) {
		text = strchr(text, '\n');
		assert_non_null(text);
		text++;
	}
	end = strchr(text, '\n');
	return strndup(text, end ? (size_t)(end - text) : strlen(text));
}

static inline void trim_inplace(char *s)
{
	size_t len = strlen(s), start = strspn(s, " \t");

	while (len > start && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	memmove(s, s + start, len - start);
	s[len - start] = '\0';
}

#endif
