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
 *   - parsing is deterministic (the same input, the same class). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fence/fence.h"
#include "http/front.h"
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
	if (!line[0][0] || line[1][0] != '/')
		goto out;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (s3req_parse(&a, line[0], line[1], line[2][0] ? line[2] : NULL, &hdrs) == 0 &&
	    s3req_parse(&b, line[0], line[1], line[2][0] ? line[2] : NULL, &hdrs) == 0) {
		check(&a, line[0]);
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
