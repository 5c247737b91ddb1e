/* fuzz_classify.c — libFuzzer target for the S3 request model
 * (proxy/s3/s3req.c) and the verdict it feeds (proxy/fence/fence.c).
 *
 * Input: "METHOD\nPATH\nQUERY\nName: value\n..." (missing lines are empty).
 * The safety invariant, checked on every input (abort on violation):
 *   - a request whose method can change state never classifies as a read;
 *   - the only classes that pass unfenced (bucket create/delete, bucket
 *     configuration) name no key and come from a bucket-level table entry;
 *   - every fenced class, tokenless, is refused by the verdict (never
 *     FORWARD or READ_PASS), and DeleteObjects is fenced as DELETE is;
 *   - a refused request carries a 4xx/5xx status and a code;
 *   - parsing is deterministic (the same input, the same class);
 *   - hop-by-hop removal (front_hdrs_drop_hop_by_hop, as front_parse.c
 *     runs it) leaves no Connection, no fixed hop-by-hop field and no
 *     field a Connection line named, or refuses a head that names framing;
 *   - every object touched is exposed for authorisation: a write that
 *     carries x-amz-copy-source is refused or a copy whose model names the
 *     source (bucket and key), and only a copy has one;
 *   - what is judged is what is sent: the forwarded head (preq_fwd_merge,
 *     the forwarder's one rule) over the client's hostile fields carries
 *     every field the verdict set, once, with its value, and no client
 *     field of a name the verdict set or removed, nor a hop-by-hop one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fence/fence.h"
#include "http/front.h"
#include "http/proxy_int.h"
#include "s3/s3req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int is_read_method(const char *m)
{
	return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 || strcmp(m, "OPTIONS") == 0;
}

static void check(const struct s3req *r, const char *method)
{
	if (!is_read_method(method) && r->cls == S3_READ)
		abort();
	if (r->cls == S3_REFUSED) {
		if (r->status < 400 || r->status > 599 || !r->code)
			abort();
		return;
	}
	if (r->cls == S3_BUCKET_WRITE || r->cls == S3_BUCKET_CONFIG ||
	    r->cls == S3_DELETE_OBJECTS) {
		if (r->key || !r->op || r->op->object)
			abort();
	}
	if (r->cls != S3_READ && r->cls != S3_BUCKET_WRITE && r->cls != S3_BUCKET_CONFIG) {
		struct fence_input in;
		struct fence_decision d;

		if (!r->bucket[0])
			abort();
		memset(&in, 0, sizeof(in));
		in.method = r->cls == S3_DELETE_OBJECTS ? "DELETE" : method;
		in.token = (struct token)TOKEN_INIT;
		in.current_epoch = 5;
		fence_decide(&in, &d);
		if (d.verdict == FENCE_FORWARD || d.verdict == FENCE_READ_PASS)
			abort();
	}
}

/* 1 if name (len bytes) is a token of a Connection line of h. */
static int named_by_connection(const struct front_hdrs *h, const char *name, size_t len)
{
	for (size_t i = 0; i < h->n; i++) {
		const char *pos = h->v[i].value, *t;
		size_t tl;

		if (!FRONT_HDR_IS(&h->v[i], "Connection"))
			continue;
		while ((t = front_list_next(&pos, &tl)))
			if (tl == len && strncasecmp(t, name, len) == 0)
				return 1;
	}
	return 0;
}

static void check_hop_by_hop(const struct front_hdrs *orig, const struct front_hdrs *after,
			     int rc)
{
	if (rc < 0) {
		if (after->n != orig->n)
			abort(); /* a refused head is left as it was */
		return;
	}
	for (size_t i = 0; i < after->n; i++) {
		const struct front_hdr *e = &after->v[i];

		if (front_hdr_hop_by_hop(e) || named_by_connection(orig, e->name, e->nlen))
			abort();
	}
}

static void check_copy(const struct s3req *r, const struct front_hdrs *hdrs)
{
	int has = front_hdrs_get(hdrs, "x-amz-copy-source") != NULL;

	if (r->cls == S3_REFUSED || r->cls == S3_READ)
		return;
	if (has && (!r->op || !r->op->copy_source || !r->copy.key || !r->copy.bucket[0]))
		abort();
	if (r->copy.key && (!r->op || !r->op->copy_source))
		abort();
}

/* The verdict's fields and removals, as fencing_s3.c sets them. */
static const char *const VERDICT[][2] = {
	{ "x-amz-meta-fencing-epoch", "7" }, { "x-amz-meta-fencing-lock", "ledger" },
	{ "If-Match", "\"etag\"" }, { "x-amz-metadata-directive", "REPLACE" },
};
static const char *const REMOVED[] = { "If-None-Match", "x-amz-meta-color" };

static int fuzz_theirs(const struct front_hdr *e, int from_client, void *arg)
{
	return FRONT_HDR_IS(e, "Host") || FRONT_HDR_IS(e, "Content-Length") ||
	       (from_client && e->nlen >= 10 && strncasecmp(e->name, "x-fencing-", 10) == 0);
}

static void check_forwarded(const struct front_hdrs *client)
{
	struct front_hdrs set = { 0 }, named = { 0 }, out = { 0 };
	size_t nv = sizeof(VERDICT) / sizeof(VERDICT[0]), nr = sizeof(REMOVED) / sizeof(REMOVED[0]);

	for (size_t i = 0; i < nv; i++)
		if (front_hdrs_add(&set, VERDICT[i][0], VERDICT[i][1]) < 0 ||
		    front_hdrs_add(&named, VERDICT[i][0], "") < 0)
			goto out;
	for (size_t i = 0; i < nr; i++)
		if (front_hdrs_add(&named, REMOVED[i], "") < 0)
			goto out;
	if (preq_fwd_merge(client, &set, &named, fuzz_theirs, NULL, &out) < 0)
		goto out;
	for (size_t i = 0; i < nv; i++)
		if (front_hdrs_count(&out, VERDICT[i][0]) != 1 ||
		    strcmp(front_hdrs_get(&out, VERDICT[i][0]), VERDICT[i][1]) != 0)
			abort();
	for (size_t i = 0; i < nr; i++)
		if (front_hdrs_get(&out, REMOVED[i]))
			abort();
	for (size_t i = 0; i < out.n; i++)
		if (front_hdr_hop_by_hop(&out.v[i]) ||
		    (out.v[i].nlen >= 10 && strncasecmp(out.v[i].name, "x-fencing-", 10) == 0))
			abort();
out:
	front_hdrs_clear(&set);
	front_hdrs_clear(&named);
	front_hdrs_clear(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *line[3] = { "", "", "" }, *p, *nl;
	struct front_hdrs hdrs = { 0 };
	struct s3req a, b;
	int i;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (strlen(buf) != size) { /* NUL bytes: not an HTTP request head */
		free(buf);
		return 0;
	}
	p = buf;
	for (i = 0; i < 3 && p; i++) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		line[i] = p;
		p = nl ? nl + 1 : NULL;
	}
	while (p && *p) {
		char *colon;

		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		colon = strchr(p, ':');
		if (colon) {
			*colon = '\0';
			front_hdrs_add(&hdrs, p, colon + 1 + (colon[1] == ' '));
		}
		p = nl ? nl + 1 : NULL;
	}
	{
		struct front_hdrs orig = { 0 };
		const char *why = NULL;
		int rc;

		for (size_t k = 0; k < hdrs.n; k++)
			front_hdrs_add(&orig, hdrs.v[k].name, hdrs.v[k].value);
		rc = front_hdrs_drop_hop_by_hop(&hdrs, &why);
		check_hop_by_hop(&orig, &hdrs, rc);
		front_hdrs_clear(&orig);
		if (rc < 0)
			goto out; /* front_parse.c answers 400 */
	}
	check_forwarded(&hdrs);
	if (!line[0][0] || line[1][0] != '/')
		goto out;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (s3req_parse(&a, line[0], line[1], line[2][0] ? line[2] : NULL, &hdrs) == 0 &&
	    s3req_parse(&b, line[0], line[1], line[2][0] ? line[2] : NULL, &hdrs) == 0) {
		check(&a, line[0]);
		check_copy(&a, &hdrs);
		if (a.cls != b.cls || a.op != b.op)
			abort();
	}
	s3req_clear(&a);
	s3req_clear(&b);
out:
	front_hdrs_clear(&hdrs);
	free(buf);
	return 0;
}
