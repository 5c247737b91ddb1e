/* upstream_head.c — a transfer's request head: the target URL split into
 * scheme, host and port (the last authority remembered, so the next
 * transfer to it skips the URL parser: most go to one upstream), the
 * origin that keys the connection pool, and the head built once in one
 * allocation (kept for a retry). */
#include "upstream_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Sets x->t: origin "http[s]://host:port" and host in one block (origin
 * first: freeing it frees both). Returns 0 or -1 on ENOMEM. */
static int set_target(struct upstream_xfer *x, int tls, const char *host, size_t hlen,
		      uint16_t port)
{
	const char *scheme = tls ? "https://" : "http://";
	size_t slen = tls ? 8 : 7;
	char digits[8], *p;
	int nd = 0;

	do
		digits[nd++] = (char)('0' + port % 10);
	while ((port /= 10) > 0 && nd < (int)sizeof(digits));
	p = malloc(slen + hlen + 1 + (size_t)nd + 1 + hlen + 1);
	if (!p)
		return -1;
	x->t.origin = p;
	memcpy(p, scheme, slen);
	p += slen;
	memcpy(p, host, hlen);
	p += hlen;
	*p++ = ':';
	while (nd > 0)
		*p++ = digits[--nd];
	*p++ = '\0';
	x->t.host = p;
	memcpy(p, host, hlen);
	p[hlen] = '\0';
	return 0;
}

/* The authority of the last URL: "http[s]://authority" and what it says. */
struct up_last_target {
	size_t len;
	int tls;
	uint16_t port;
	size_t hlen;
	char *host;   /* after the prefix in the same block */
	char pre[];
};

void up_head_forget(struct upstream *u)
{
	free(u->last_target);
	u->last_target = NULL;
}

static void remember(struct upstream *u, const char *url, size_t len, int tls, uint16_t port,
		     const char *host, size_t hlen)
{
	struct up_last_target *l = malloc(sizeof(*l) + len + hlen + 1);

	if (!l)
		return; /* only a shortcut */
	up_head_forget(u);
	l->len = len;
	l->tls = tls;
	l->port = port;
	l->hlen = hlen;
	memcpy(l->pre, url, len);
	l->host = l->pre + len;
	memcpy(l->host, host, hlen);
	l->host[hlen] = '\0';
	u->last_target = l;
}

/* Splits "http[s]://authority/target" into x->t; *target points into url.
 * Only the scheme and authority are parsed: the target goes out as is.
 * Returns 0, -1 for a URL that is not one, -2 on ENOMEM. */
static int parse_target(struct upstream_xfer *x, const char *url, const char **target,
			const char **authority, size_t *alen)
{
	struct up_last_target *l = x->u->last_target;
	struct http_parser_url pu;
	const char *a, *end;
	int tls;

	if (strncasecmp(url, "http://", 7) == 0)
		tls = 0;
	else if (strncasecmp(url, "https://", 8) == 0)
		tls = 1;
	else
		return -1;
	a = url + (tls ? 8 : 7);
	end = a + strcspn(a, "/?#");
	if (l && l->len == (size_t)(end - url) && memcmp(l->pre, url, l->len) == 0) {
		x->t.tls = l->tls;
		x->t.port = l->port;
		if (set_target(x, l->tls, l->host, l->hlen, l->port) < 0)
			return -2;
	} else {
		http_parser_url_init(&pu);
		if (end == a || http_parser_parse_url(url, (size_t)(end - url), 0, &pu) != 0 ||
		    !(pu.field_set & (1 << UF_HOST)))
			return -1;
		x->t.tls = tls;
		x->t.port = (pu.field_set & (1 << UF_PORT)) ? pu.port : (tls ? 443 : 80);
		if (set_target(x, tls, url + pu.field_data[UF_HOST].off,
			       pu.field_data[UF_HOST].len, x->t.port) < 0)
			return -2;
		remember(x->u, url, (size_t)(end - url), tls, x->t.port, x->t.host,
			 pu.field_data[UF_HOST].len);
	}
	*target = *end == '/' ? end : NULL;
	if (*end == '?')
		*target = end; /* "/" is put in front */
	*authority = a;
	*alen = (size_t)(end - a);
	return 0;
}

static char *put(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/* The request head in one allocation: request line, the caller's headers,
 * Host if they have none, the body's framing, Expect. */
static int build_head(struct upstream_xfer *x, const struct upstream_request *req,
		      const char *target, const char *authority, size_t alen)
{
	const struct front_hdrs *h = req->hdrs;
	char framing[48];
	size_t mlen = strlen(req->method), tlen = target ? strlen(target) : 0;
	size_t flen = 0, len;
	int has_host = 0;
	char *p;

	if (x->body_length >= 0)
		flen = (size_t)snprintf(framing, sizeof(framing), "Content-Length: %lld\r\n",
					(long long)x->body_length);
	else if (x->body_length == -2)
		flen = (size_t)snprintf(framing, sizeof(framing), "Transfer-Encoding: chunked\r\n");
	len = mlen + 1 + (target && *target == '?' ? 1 : 0) + (target ? tlen : 1) +
	      sizeof(" HTTP/1.1\r\n") - 1 + flen + 2;
	for (size_t i = 0; h && i < h->n; i++) {
		const char *n = h->v[i].name;

		if ((n[0] == 'H' || n[0] == 'h') && strcasecmp(n, "Host") == 0)
			has_host = 1;
		len += strlen(n) + 2 + strlen(h->v[i].value) + 2;
	}
	if (!has_host)
		len += sizeof("Host: \r\n") - 1 + alen;
	if (x->want_expect)
		len += sizeof("Expect: 100-continue\r\n") - 1;
	p = x->head = malloc(len);
	if (!p)
		return -1;
	p = put(p, req->method, mlen);
	*p++ = ' ';
	if (!target || *target == '?')
		*p++ = '/';
	if (target)
		p = put(p, target, tlen);
	p = put(p, " HTTP/1.1\r\n", sizeof(" HTTP/1.1\r\n") - 1);
	if (!has_host) {
		p = put(p, "Host: ", 6);
		p = put(p, authority, alen);
		p = put(p, "\r\n", 2);
	}
	for (size_t i = 0; h && i < h->n; i++) {
		p = put(p, h->v[i].name, strlen(h->v[i].name));
		p = put(p, ": ", 2);
		p = put(p, h->v[i].value, strlen(h->v[i].value));
		p = put(p, "\r\n", 2);
	}
	p = put(p, framing, flen);
	if (x->want_expect)
		p = put(p, "Expect: 100-continue\r\n", sizeof("Expect: 100-continue\r\n") - 1);
	p = put(p, "\r\n", 2);
	x->head_len = (size_t)(p - x->head);
	return 0;
}

int up_head_make(struct upstream_xfer *x, const struct upstream_request *req)
{
	const char *target = NULL, *authority = NULL;
	size_t alen = 0;
	int rc = parse_target(x, req->url, &target, &authority, &alen);

	if (rc < 0)
		return rc;
	return build_head(x, req, target, authority, alen) < 0 ? -2 : 0;
}
