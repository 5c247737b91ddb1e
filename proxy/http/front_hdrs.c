/* front_hdrs.c — the front end's header lists (case-insensitive names, in
 * arrival order, strings in a few blocks freed at once), comma-separated
 * token lists, default limits and freeing a parsed message. No parsing, no
 * sockets. */
#include "front.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


/* String storage: blocks that never move, newest first. The first block of
 * a list also holds its first entries. Sizes keep a block within glibc's
 * per-thread cache (up to 1032 bytes). */
struct front_hdrs_block {
	struct front_hdrs_block *next;
	size_t used, size;
	char data[];
};

_Static_assert(offsetof(struct front_hdrs_block, data) % _Alignof(struct front_hdr) == 0,
	       "a block's data can hold entries");

#define BLOCK_BYTES (1024 - sizeof(struct front_hdrs_block))
#define FIRST_ENTRIES ((size_t)16)

static struct front_hdrs_block *block_new(struct front_hdrs *h, size_t need)
{
	size_t size = need > BLOCK_BYTES ? need : BLOCK_BYTES;
	struct front_hdrs_block *b = malloc(sizeof(*b) + size);

	if (!b)
		return NULL;
	b->next = h->blocks;
	b->used = 0;
	b->size = size;
	h->blocks = b;
	return b;
}

/* len bytes of string storage, or NULL on ENOMEM. */
static char *block_take(struct front_hdrs *h, size_t len)
{
	struct front_hdrs_block *b = h->blocks;
	char *at;

	if (!b || b->size - b->used < len) {
		/* a string too big for the rest of the newest block gets one of
		 * its own behind it, so the room left stays usable */
		if (b && len > BLOCK_BYTES / 2 && b->size - b->used >= BLOCK_BYTES / 4) {
			struct front_hdrs_block *big = malloc(sizeof(*big) + len);

			if (!big)
				return NULL;
			big->next = b->next;
			big->used = big->size = len;
			b->next = big;
			return big->data;
		}
		if (!(b = block_new(h, len)))
			return NULL;
	}
	at = b->data + b->used;
	b->used += len;
	return at;
}

/* Room for one more entry (the list is full). Returns 0, or -1 on ENOMEM. */
static int entry_room(struct front_hdrs *h)
{
	struct front_hdr *nv;
	size_t cap;

	if (h->n < h->cap)
		return 0;
	if (!h->v) {
		struct front_hdrs_block *b = block_new(h, FIRST_ENTRIES * sizeof(*nv));

		if (!b)
			return -1;
		h->v = (struct front_hdr *)(void *)b->data;
		b->used = FIRST_ENTRIES * sizeof(*nv);
		h->cap = FIRST_ENTRIES;
		h->v_shared = 1;
		return 0;
	}
	if (h->cap > SIZE_MAX / 2 / sizeof(*nv))
		return -1;
	cap = h->cap < FIRST_ENTRIES ? FIRST_ENTRIES * 2 : h->cap * 2; /* a small caller's array too */
	if (h->v_shared) {
		nv = malloc(cap * sizeof(*nv));
		if (nv)
			memcpy(nv, h->v, h->n * sizeof(*nv));
	} else {
		nv = realloc(h->v, cap * sizeof(*nv));
	}
	if (!nv)
		return -1;
	h->v = nv;
	h->cap = cap;
	h->v_shared = 0;
	return 0;
}

void front_hdrs_init(struct front_hdrs *h, struct front_hdr *buf, size_t cap)
{
	memset(h, 0, sizeof(*h));
	h->v = buf;
	h->cap = cap;
	h->v_shared = 1;
}

const char *front_hdrs_get(const struct front_hdrs *h, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; h && i < h->n; i++)
		if (front_hdr_is(&h->v[i], name, len))
			return h->v[i].value;
	return NULL;
}

size_t front_hdrs_count(const struct front_hdrs *h, const char *name)
{
	size_t len = strlen(name), n = 0;

	for (size_t i = 0; h && i < h->n; i++)
		if (front_hdr_is(&h->v[i], name, len))
			n++;
	return n;
}

int front_hdrs_addn(struct front_hdrs *h, const char *name, size_t nlen,
		    const char *value, size_t vlen)
{
	struct front_hdr *e;
	char *s;

	if (nlen > UINT32_MAX || vlen > UINT32_MAX || nlen > SIZE_MAX / 4 || vlen > SIZE_MAX / 4 ||
	    (h->n == h->cap && entry_room(h) < 0) || !(s = block_take(h, nlen + vlen + 2)))
		return -1;
	e = &h->v[h->n++];
	e->name = s;
	memcpy(s, name, nlen);
	s[nlen] = '\0';
	e->value = s + nlen + 1;
	memcpy(e->value, value, vlen);
	e->value[vlen] = '\0';
	e->nlen = (uint32_t)nlen;
	e->vlen = (uint32_t)vlen;
	return 0;
}

int front_hdrs_add(struct front_hdrs *h, const char *name, const char *value)
{
	return front_hdrs_addn(h, name, strlen(name), value, strlen(value));
}

int front_hdrs_add_ref(struct front_hdrs *h, const char *name, size_t nlen,
		       const char *value, size_t vlen)
{
	struct front_hdr *e;

	if (nlen > UINT32_MAX || vlen > UINT32_MAX || (h->n == h->cap && entry_room(h) < 0))
		return -1;
	e = &h->v[h->n++];
	e->name = (char *)name;   /* never written through (front.h) */
	e->value = (char *)value;
	e->nlen = (uint32_t)nlen;
	e->vlen = (uint32_t)vlen;
	return 0;
}

size_t front_hdrs_del(struct front_hdrs *h, const char *name)
{
	size_t i = 0, out, removed = 0, len;

	if (!h)
		return 0;
	len = strlen(name);
	while (i < h->n && !front_hdr_is(&h->v[i], name, len))
		i++;
	/* from the first match on, the others move up (their strings stay in
	 * their blocks until clear) */
	for (out = i; i < h->n; i++) {
		if (front_hdr_is(&h->v[i], name, len))
			removed++;
		else
			h->v[out++] = h->v[i];
	}
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
	struct front_hdrs_block *b;

	if (!h)
		return;
	if (!h->v_shared)
		free(h->v);
	b = h->blocks;
	while (b) {
		struct front_hdrs_block *next = b->next;

		free(b);
		b = next;
	}
	memset(h, 0, sizeof(*h));
}

const char *front_list_next(const char **pos, size_t *len)
{
	const char *p = *pos, *end;

	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	if (!*p) {
		*pos = p;
		return NULL;
	}
	end = p;
	while (*end && *end != ',')
		end++;
	*len = (size_t)(end - p);
	while (*len && (p[*len - 1] == ' ' || p[*len - 1] == '\t'))
		(*len)--;
	*pos = end;
	return p;
}

/* 1 if the list value has the token name (nlen bytes, case-insensitive). */
static int list_has_n(const char *value, const char *name, size_t nlen)
{
	size_t len;
	const char *pos = value, *t;

	while (pos && (t = front_list_next(&pos, &len)))
		if (len == nlen && strncasecmp(t, name, nlen) == 0)
			return 1;
	return 0;
}

int front_list_has(const char *value, const char *token)
{
	return list_has_n(value, token, strlen(token));
}

int front_hdr_hop_by_hop(const struct front_hdr *e)
{
	switch (e->nlen) {
	case 2:
		return FRONT_HDR_IS(e, "TE");
	case 7:
		return FRONT_HDR_IS(e, "Trailer") || FRONT_HDR_IS(e, "Upgrade");
	case 10:
		return FRONT_HDR_IS(e, "Connection") || FRONT_HDR_IS(e, "Keep-Alive");
	}
	/* Proxy-Connection, Proxy-Authorization, Proxy-Authenticate */
	return e->nlen >= 6 && strncasecmp(e->name, "Proxy-", 6) == 0;
}

/* The message's framing and target: never hop-by-hop. */
static int framing_field(const char *name, size_t len)
{
	return (len == 4 && strncasecmp(name, "Host", 4) == 0) ||
	       (len == 14 && strncasecmp(name, "Content-Length", 14) == 0) ||
	       (len == 17 && strncasecmp(name, "Transfer-Encoding", 17) == 0);
}

#define CONNECTION_LINES_MAX 16

int front_hdrs_drop_hop_by_hop(struct front_hdrs *h, const char **why)
{
	const char *conn[CONNECTION_LINES_MAX];
	size_t nconn = 0, out = 0;

	/* the Connection values first: their entries move below */
	for (size_t i = 0; i < h->n; i++) {
		const char *pos, *t;
		size_t len;

		if (!FRONT_HDR_IS(&h->v[i], "Connection"))
			continue;
		if (nconn == CONNECTION_LINES_MAX) {
			*why = "too many connection header lines";
			return -1;
		}
		conn[nconn++] = pos = h->v[i].value;
		while ((t = front_list_next(&pos, &len)))
			if (framing_field(t, len)) {
				*why = "the connection header names a framing field";
				return -1;
			}
	}
	for (size_t i = 0; i < h->n; i++) {
		const struct front_hdr *e = &h->v[i];
		int drop = front_hdr_hop_by_hop(e);

		for (size_t c = 0; c < nconn && !drop; c++)
			drop = list_has_n(conn[c], e->name, e->nlen);
		if (!drop)
			h->v[out++] = *e;
	}
	h->n = out;
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
	free(msg->query); /* method, target and path are in msg's allocation */
	front_hdrs_clear(&msg->hdrs);
	free(msg);
}

