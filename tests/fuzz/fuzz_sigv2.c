/* fuzz_sigv2.c — libFuzzer target for Signature Version 2: arbitrary
 * method, path, query and header bytes go to wire/sigv2's StringToSign and
 * through auth_verify_head (proxy/s3/auth_v2.c's header and query parsers).
 * Invariants, beyond memory safety:
 *   - a StringToSign starts with the method and its four positional lines,
 *     and its resource holds the path as sent;
 *   - what sigv2 signs, the verifier accepts (header form at "now", and
 *     presigned with an Expires ahead), or refuses only for a reason that
 *     does not depend on the signature (mixed mechanisms, an unsigned
 *     fencing header on a write, a bad x-amz-content-sha256);
 *   - a signature changed in one character never verifies.
 *
 * Input layout: byte 0 = flags (bit 0: x-amz-date instead of Date); then
 * fields separated by '\n': method, path, query, and any number of
 * "name:value" header lines (Authorization, Date and x-amz-date lines are
 * dropped: the target sets them). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/front.h"
#include "s3/auth.h"
#include "wire/sigv2.h"

#define FUZZ_MAX_HEADERS 16
#define NOW ((time_t)1700000000)
#define AK "AKIAFUZZ"
#define SECRET "fuzz/secret+key"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *lookup(void *arg, const char *access_key)
{
	(void)arg;
	return strcmp(access_key, AK) == 0 ? SECRET : NULL;
}

static size_t split_lines(char *buf, char **fields, size_t max)
{
	size_t n = 0;
	char *p = buf;

	while (n < max) {
		char *nl = strchr(p, '\n');

		fields[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

/* A refusal that does not depend on the signature's value. */
static int signature_independent(const struct auth_result *r)
{
	static const char *const ok[] = {
		"InvalidArgument", "AuthorizationQueryParametersError", "AccessDenied",
		"InvalidRequest", "XAmzContentSHA256Mismatch", "AuthorizationHeaderMalformed",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (r->err.code && strcmp(r->err.code, ok[i]) == 0)
			return 1;
	return 0;
}

static void verify(const char *method, const char *path, const char *query,
		   const struct front_hdrs *h, int must_pass, struct auth_result *out)
{
	struct auth_request ar = { method, path, query, h, NULL };

	auth_verify_head(&ar, lookup, NULL, NOW, out);
	if (must_pass && out->verdict != AUTH_VERIFIED &&
	    !(out->verdict == AUTH_REJECTED && signature_independent(out)))
		abort();   /* signed by sigv2, refused by its verifier */
	if (!must_pass && out->verdict == AUTH_VERIFIED)
		abort();   /* a tampered signature verified */
	auth_result_clear(out);
}

/* sig with its first character changed. */
static void tamper(char *sig)
{
	sig[0] = sig[0] == 'A' ? 'B' : 'A';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sigv2_header hs[FUZZ_MAX_HEADERS + 2];
	struct front_hdrs h = { 0 };
	struct sigv2_request req;
	struct auth_result res;
	char *fields[3 + FUZZ_MAX_HEADERS], *buf, *sts = NULL, *query2 = NULL;
	char sig[SIGV2_SIGNATURE_LEN + 1], authz[64 + SIGV2_SIGNATURE_LEN], enc[3 * 29];
	const char *method, *path, *query;
	size_t nfields, n = 0, o = 0, i;

	if (size < 1)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	nfields = split_lines(buf, fields, 3 + FUZZ_MAX_HEADERS);
	method = fields[0][0] ? fields[0] : "GET";
	path = nfields > 1 && fields[1][0] == '/' ? fields[1] : "/";
	query = nfields > 2 ? fields[2] : "";
	for (i = 3; i < nfields; i++) {
		char *colon = strchr(fields[i], ':');

		if (!colon || colon == fields[i])
			continue;
		*colon = '\0';
		if (strcasecmp(fields[i], "authorization") == 0 || strcasecmp(fields[i], "date") == 0 ||
		    strcasecmp(fields[i], "x-amz-date") == 0)
			continue;
		hs[n++] = (struct sigv2_header){ fields[i], colon + 1 };
	}
	hs[n++] = (struct sigv2_header){ data[0] & 1 ? "x-amz-date" : "Date",
					 "Tue, 14 Nov 2023 22:13:20 GMT" };
	req = (struct sigv2_request){ method, NULL, path, query, hs, n, NULL };
	for (i = 0; i < n; i++)
		if (front_hdrs_add(&h, hs[i].name, hs[i].value) < 0)
			goto out;

	if (sigv2_string_to_sign(&req, &sts) == 0) {
		const char *p = sts;
		int lines = 0;

		if (strncmp(sts, method, strlen(method)) != 0 || sts[strlen(method)] != '\n')
			abort();
		while (lines < 4 && (p = strchr(p, '\n')))
			p++, lines++;
		if (lines != 4 || !strstr(p, path))
			abort();
		/* header form */
		sigv2_signature(SECRET, sts, sig);
		snprintf(authz, sizeof(authz), "AWS %s:%s", AK, sig);
		if (front_hdrs_add(&h, "Authorization", authz) < 0)
			goto out;
		verify(method, path, query, &h, 1, &res);
		tamper(sig);
		snprintf(authz, sizeof(authz), "AWS %s:%s", AK, sig);
		front_hdrs_set(&h, "Authorization", authz);
		verify(method, path, query, &h, 0, &res);
		front_hdrs_del(&h, "Authorization");
		free(sts);
		sts = NULL;
		/* presigned: Expires replaces the date */
		req.expires = "1700000600";
		if (sigv2_string_to_sign(&req, &sts) == 0) {
			sigv2_signature(SECRET, sts, sig);
			for (const char *c = sig; *c; c++)
				o += (size_t)snprintf(enc + o, sizeof(enc) - o,
						      *c == '+' || *c == '/' || *c == '=' ? "%%%02X" : "%c",
						      (unsigned char)*c);
			if (asprintf(&query2, "%s%sAWSAccessKeyId=%s&Expires=1700000600&Signature=%s",
				     query, query[0] ? "&" : "", AK, enc) < 0) {
				query2 = NULL;
				goto out;
			}
			verify(method, path, query2, &h, 1, &res);
			query2[strlen(query2) - strlen(enc)] = enc[0] == 'A' ? 'B' : 'A';
			verify(method, path, query2, &h, 0, &res);
		}
	}
out:
	free(query2);
	free(sts);
	front_hdrs_clear(&h);
	free(buf);
	return 0;
}
