/* s3delete.c — the DeleteObjects body (expat, strict and bounded) and the
 * DeleteResult answer. It neither decides nor deletes: see s3delete.h. */
#include "s3delete.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <expat.h>

#include "wire/s3err.h"

/* Where the parser is in the document. */
enum where { AT_TOP, IN_DELETE, IN_QUIET, IN_OBJECT, IN_KEY, IN_VERSION, AT_END };

struct parse {
	XML_Parser xp;
	struct s3delete *d;
	enum where at;
	char text[S3DELETE_KEY_MAX + 1];   /* the current leaf's text */
	size_t text_len;
	bool text_too_long;
	bool has_key, has_version, has_quiet;
	bool nomem;
	char err[160];
};

static const char *local_name(const XML_Char *name)
{
	const char *colon = strrchr(name, ':');

	return colon ? colon + 1 : name;
}

static void stop(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void stop(struct parse *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->err[0]) {
		va_start(ap, fmt);
		vsnprintf(p->err, sizeof(p->err), fmt, ap);
		va_end(ap);
	}
	XML_StopParser(p->xp, XML_FALSE);
}

static void on_start(void *arg, const XML_Char *name, const XML_Char **attrs)
{
	struct parse *p = arg;
	const char *n = local_name(name);
	struct s3delete *d = p->d;

	(void)attrs;
	p->text_len = 0;
	p->text_too_long = false;
	switch (p->at) {
	case AT_TOP:
		if (strcmp(n, "Delete") != 0)
			return stop(p, "the document is not a <Delete>");
		p->at = IN_DELETE;
		return;
	case IN_DELETE:
		if (strcmp(n, "Quiet") == 0 && !p->has_quiet) {
			p->has_quiet = true;
			p->at = IN_QUIET;
			return;
		}
		if (strcmp(n, "Object") != 0)
			return stop(p, "unexpected <%.40s> in <Delete>", n);
		if (d->n == S3DELETE_KEYS_MAX)
			return stop(p, "more than %d objects in one request", S3DELETE_KEYS_MAX);
		if (!d->keys) {
			d->keys = calloc(S3DELETE_KEYS_MAX, sizeof(*d->keys));
			if (!d->keys) {
				p->nomem = true;
				return stop(p, "out of memory");
			}
		}
		d->n++;
		p->has_key = p->has_version = false;
		p->at = IN_OBJECT;
		return;
	case IN_OBJECT:
		if (strcmp(n, "Key") == 0 && !p->has_key) {
			p->at = IN_KEY;
			return;
		}
		if (strcmp(n, "VersionId") == 0 && !p->has_version) {
			p->at = IN_VERSION;
			return;
		}
		return stop(p, "unexpected or repeated <%.40s> in <Object>", n);
	default:
		return stop(p, "unexpected <%.40s>", n);
	}
}

static char *take_text(struct parse *p)
{
	char *s = malloc(p->text_len + 1);

	if (!s) {
		p->nomem = true;
		stop(p, "out of memory");
		return NULL;
	}
	memcpy(s, p->text, p->text_len);
	s[p->text_len] = '\0';
	return s;
}

static void on_end(void *arg, const XML_Char *name)
{
	struct parse *p = arg;
	struct s3delete_key *k = p->d->n ? &p->d->keys[p->d->n - 1] : NULL;

	(void)name;
	switch (p->at) {
	case IN_QUIET:
		p->text[p->text_len] = '\0';
		if (strcasecmp(p->text, "true") == 0)
			p->d->quiet = true;
		else if (strcasecmp(p->text, "false") != 0)
			return stop(p, "<Quiet> is true or false");
		p->at = IN_DELETE;
		return;
	case IN_KEY:
		if (p->text_too_long)
			return stop(p, "a <Key> is longer than %d bytes", S3DELETE_KEY_MAX);
		if (p->text_len == 0 || memchr(p->text, '\0', p->text_len))
			return stop(p, "a <Key> is empty or holds a NUL");
		if (!(k->key = take_text(p)))
			return;
		p->has_key = true;
		p->at = IN_OBJECT;
		return;
	case IN_VERSION:
		if (p->text_too_long || p->text_len == 0)
			return stop(p, "a <VersionId> is empty or too long");
		if (!(k->version_id = take_text(p)))
			return;
		p->has_version = true;
		p->at = IN_OBJECT;
		return;
	case IN_OBJECT:
		if (!p->has_key)
			return stop(p, "an <Object> without a <Key>");
		p->at = IN_DELETE;
		return;
	case IN_DELETE:
		p->at = AT_END;
		return;
	default:
		return stop(p, "unbalanced document");
	}
}

static void on_text(void *arg, const XML_Char *s, int len)
{
	struct parse *p = arg;
	size_t n = (size_t)len;

	if (p->at != IN_KEY && p->at != IN_VERSION && p->at != IN_QUIET) {
		for (int i = 0; i < len; i++)
			if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
				return stop(p, "text outside an element's value");
		return;
	}
	if (p->text_len + n > S3DELETE_KEY_MAX) {
		p->text_too_long = true;
		return;
	}
	memcpy(p->text + p->text_len, s, n);
	p->text_len += n;
}

static void on_doctype(void *arg, const XML_Char *name, const XML_Char *sysid,
		       const XML_Char *pubid, int has_internal_subset)
{
	(void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
	stop(arg, "a DOCTYPE is not allowed");
}

int s3delete_parse(const char *body, size_t len, struct s3delete *d, bool *nomem,
		   char *err, size_t errlen)
{
	struct parse p;
	int ok;

	memset(&p, 0, sizeof(p));
	*nomem = false;
	if (len > S3DELETE_BODY_MAX) {
		snprintf(err, errlen, "the body is larger than %u bytes", S3DELETE_BODY_MAX);
		return -1;
	}
	p.d = d;
	p.xp = XML_ParserCreate("UTF-8");
	if (!p.xp) {
		*nomem = true;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	XML_SetUserData(p.xp, &p);
	XML_SetElementHandler(p.xp, on_start, on_end);
	XML_SetCharacterDataHandler(p.xp, on_text);
	XML_SetStartDoctypeDeclHandler(p.xp, on_doctype);
	ok = XML_Parse(p.xp, body ? body : "", (int)len, XML_TRUE) == XML_STATUS_OK;
	if (ok && p.at != AT_END)
		snprintf(p.err, sizeof(p.err), "the document ended early");
	else if (ok && d->n == 0)
		snprintf(p.err, sizeof(p.err), "no <Object> to delete");
	else if (!ok && !p.err[0])
		snprintf(p.err, sizeof(p.err), "not XML: %s",
			 XML_ErrorString(XML_GetErrorCode(p.xp)));
	XML_ParserFree(p.xp);
	if (p.err[0]) {
		*nomem = p.nomem;
		snprintf(err, errlen, "%s", p.err);
		s3delete_clear(d);
		return -1;
	}
	return 0;
}

void s3delete_fail(struct s3delete_key *k, const char *code, const char *fmt, ...)
{
	va_list ap;

	k->code = code;
	va_start(ap, fmt);
	vsnprintf(k->message, sizeof(k->message), fmt, ap);
	va_end(ap);
}

/* ---- the answer --------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, cap;
	bool nomem;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->nomem)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 1024;
		char *nb;

		while (o->len + n + 1 > cap)
			cap *= 2;
		if (!(nb = realloc(o->buf, cap))) {
			o->nomem = true;
			return;
		}
		o->buf = nb;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void put_element(struct out *o, const char *name, const char *text)
{
	size_t need = s3err_xml_text(text, NULL, 0);
	char *esc = malloc(need + 1);

	if (!esc) {
		o->nomem = true;
		return;
	}
	s3err_xml_text(text, esc, need + 1);
	put(o, "<", 1);
	put(o, name, strlen(name));
	put(o, ">", 1);
	put(o, esc, need);
	put(o, "</", 2);
	put(o, name, strlen(name));
	put(o, ">", 1);
	free(esc);
}

/* s must be a string literal */
#define PUTS(o, s) put((o), "" s, sizeof(s) - 1)

char *s3delete_result_xml(const struct s3delete *d, size_t *len)
{
	struct out o = { 0 };

	PUTS(&o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		 "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (size_t i = 0; i < d->n; i++) {
		const struct s3delete_key *k = &d->keys[i];

		if (!k->code && d->quiet)
			continue;
		if (k->code)
			PUTS(&o, "<Error>");
		else
			PUTS(&o, "<Deleted>");
		put_element(&o, "Key", k->key);
		if (k->version_id)
			put_element(&o, "VersionId", k->version_id);
		if (k->code) {
			put_element(&o, "Code", k->code);
			put_element(&o, "Message", k->message);
		}
		if (k->code)
			PUTS(&o, "</Error>");
		else
			PUTS(&o, "</Deleted>");
	}
	PUTS(&o, "</DeleteResult>");
	if (o.nomem) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}

void s3delete_clear(struct s3delete *d)
{
	for (size_t i = 0; d->keys && i < d->n; i++) {
		free(d->keys[i].key);
		free(d->keys[i].version_id);
	}
	free(d->keys);
	memset(d, 0, sizeof(*d));
}
