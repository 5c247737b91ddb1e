/* multipart.c — a bounded FIFO table of multipart uploads the proxy saw
 * created, and the expat parser of the UploadId in CreateMultipartUpload
 * answers. It decides nothing: the fencing handler does. The table is
 * shared by the event-loop workers (a part may reach another worker than
 * its create): a mutex guards it. */
#include "multipart.h"

#include "wire/pct.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

struct mp_slot {
	char *id;                       /* NULL: free */
	struct multipart_upload u;
};

struct multipart_table {
	pthread_mutex_t mu;             /* everything below: the event-loop
					 * workers share one table */
	struct mp_slot *slots;          /* ring in insertion order */
	size_t capacity, head, count;
};

struct multipart_table *multipart_new(size_t capacity)
{
	struct multipart_table *t;

	if (capacity == 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->slots = calloc(capacity, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	t->capacity = capacity;
	pthread_mutex_init(&t->mu, NULL);
	return t;
}

void multipart_free(struct multipart_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->capacity; i++)
		free(t->slots[i].id);
	free(t->slots);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static struct mp_slot *find(const struct multipart_table *t, const char *id)
{
	/* linear in the table's live window: tables are small (uploads in
	 * flight) and lookups happen once per part */
	for (size_t i = 0; i < t->count; i++) {
		struct mp_slot *s = &t->slots[(t->head + i) % t->capacity];

		if (s->id && strcmp(s->id, id) == 0)
			return s;
	}
	return NULL;
}

static int put_locked(struct multipart_table *t, const char *upload_id,
		      const struct multipart_upload *u)
{
	struct mp_slot *s;
	char *id;

	if (!upload_id || strlen(upload_id) >= MULTIPART_ID_MAX)
		return -1;
	s = find(t, upload_id);
	if (s) {
		s->u = *u;
		return 0;
	}
	id = strdup(upload_id);
	if (!id)
		return -1;
	if (t->count == t->capacity) {
		s = &t->slots[t->head];
		free(s->id);
		s->id = NULL;
		t->head = (t->head + 1) % t->capacity;
		t->count--;
	}
	s = &t->slots[(t->head + t->count) % t->capacity];
	s->id = id;
	s->u = *u;
	t->count++;
	return 0;
}

int multipart_put(struct multipart_table *t, const char *upload_id,
		  const struct multipart_upload *u)
{
	int rc;

	pthread_mutex_lock(&t->mu);
	rc = put_locked(t, upload_id, u);
	pthread_mutex_unlock(&t->mu);
	return rc;
}

int multipart_get(const struct multipart_table *t, const char *upload_id,
		  struct multipart_upload *out)
{
	pthread_mutex_t *mu = (pthread_mutex_t *)&t->mu;
	struct mp_slot *s;
	int found;

	pthread_mutex_lock(mu);
	s = upload_id ? find(t, upload_id) : NULL;
	found = s != NULL;
	if (s && out)
		*out = s->u;
	pthread_mutex_unlock(mu);
	return found;
}

void multipart_remove(struct multipart_table *t, const char *upload_id)
{
	struct mp_slot *s;

	pthread_mutex_lock(&t->mu);
	s = upload_id ? find(t, upload_id) : NULL;
	if (s) {
		free(s->id);
		s->id = NULL; /* a hole: skipped by find, reclaimed when it is oldest */
	}
	pthread_mutex_unlock(&t->mu);
}

size_t multipart_count(const struct multipart_table *t)
{
	pthread_mutex_t *mu = (pthread_mutex_t *)&t->mu;
	size_t n = 0;

	pthread_mutex_lock(mu);
	for (size_t i = 0; i < t->count; i++)
		if (t->slots[(t->head + i) % t->capacity].id)
			n++;
	pthread_mutex_unlock(mu);
	return n;
}

/* ---- the CreateMultipartUpload answer --------------------------------- */

struct id_parse {
	XML_Parser xp;
	int depth;
	int in_id;
	int found;
	int overflow;
	char *out;
	size_t outlen, len;
};

static const char *local_name(const char *name)
{
	const char *sep = strrchr(name, '|');

	return sep ? sep + 1 : name;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
	struct id_parse *p = ud;

	p->depth++;
	if (p->depth == 2 && strcmp(local_name(name), "UploadId") == 0) {
		p->in_id = 1;
		p->len = 0;
	}
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct id_parse *p = ud;

	if (p->in_id && p->depth == 2) {
		p->in_id = 0;
		p->found = 1;
	}
	p->depth--;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct id_parse *p = ud;

	if (!p->in_id)
		return;
	if (p->len + (size_t)len >= p->outlen) {
		p->overflow = 1;
		return;
	}
	memcpy(p->out + p->len, s, (size_t)len);
	p->len += (size_t)len;
	p->out[p->len] = '\0';
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			       const XML_Char *pubid, int has_internal)
{
	struct id_parse *p = ud;

	XML_StopParser(p->xp, XML_FALSE);
}

int multipart_parse_upload_id(const char *xml, size_t len, char *out, size_t outlen)
{
	struct id_parse p;
	int ok;

	if (!xml || !out || outlen == 0 || len > MULTIPART_BODY_MAX)
		return -1;
	memset(&p, 0, sizeof(p));
	p.out = out;
	p.outlen = outlen;
	out[0] = '\0';
	p.xp = XML_ParserCreateNS(NULL, '|');
	if (!p.xp)
		return -1;
	XML_SetUserData(p.xp, &p);
	XML_SetElementHandler(p.xp, on_start, on_end);
	XML_SetCharacterDataHandler(p.xp, on_text);
	XML_SetStartDoctypeDeclHandler(p.xp, on_doctype);
	ok = XML_Parse(p.xp, xml, (int)len, XML_TRUE) == XML_STATUS_OK;
	XML_ParserFree(p.xp);
	if (!ok || !p.found || p.overflow || !out[0])
		return -1;
	return 0;
}

int multipart_query_param(const char *query, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name);
	const char *s = query;

	if (!query || outlen == 0)
		return 0;
	while (*s) {
		const char *amp = strchr(s, '&');
		size_t plen = amp ? (size_t)(amp - s) : strlen(s);

		if (plen >= nlen && strncmp(s, name, nlen) == 0 &&
		    (plen == nlen || s[nlen] == '=')) {
			const char *v = plen == nlen ? s + plen : s + nlen + 1;
			const char *end = s + plen;
			size_t o = 0;

			while (v < end) {
				char c = *v;

				if (c == '%' && end - v >= 3 && hex_value(v[1]) >= 0 && hex_value(v[2]) >= 0) {
					c = (char)(hex_value(v[1]) * 16 + hex_value(v[2]));
					v += 3;
				} else {
					if (c == '+')
						c = ' ';
					v++;
				}
				if (o + 1 >= outlen)
					return -1;
				out[o++] = c;
			}
			out[o] = '\0';
			return 1;
		}
		s = amp ? amp + 1 : s + plen;
	}
	return 0;
}
