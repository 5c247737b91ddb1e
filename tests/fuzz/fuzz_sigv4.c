/* fuzz_sigv4.c — libFuzzer target for the SigV4 canonicalization: arbitrary
 * method, path, query and header bytes go to sigv4_canonical_request (both
 * S3 and normalizing rules) and to sigv4_presign_query. It checks memory
 * safety and a few invariants, not signature values (the unit test's
 * published vectors do that).
 *
 * Input layout: byte 0 = flags (bit 0: S3 rules); then fields separated by
 * '\n': method, path, query, and any number of "name:value" header lines. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/sigv4.h"

#define FUZZ_MAX_HEADERS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Splits buf in place on '\n' into at most max fields; returns the count. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sigv4_header headers[FUZZ_MAX_HEADERS];
	struct sigv4_credentials cred = { "AKIDEXAMPLE", "secret", "token" };
	struct sigv4_request req = { 0 };
	char *fields[3 + FUZZ_MAX_HEADERS];
	char *buf, *creq = NULL, *signed_list = NULL, *query, *enc;
	size_t nfields, i, nheaders = 0;

	if (size < 1)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0'; /* embedded NULs just end the string early */

	enc = sigv4_uri_encode(buf, strlen(buf), data[0] & 2);
	if (enc && strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			  "0123456789-._~%/") != strlen(enc))
		abort(); /* only unreserved characters and escapes come out */
	free(enc);

	nfields = split_lines(buf, fields, 3 + FUZZ_MAX_HEADERS);
	for (i = 3; i < nfields; i++) {
		char *colon = strchr(fields[i], ':');

		if (!colon)
			continue;
		*colon = '\0';
		headers[nheaders].name = fields[i];
		headers[nheaders].value = colon + 1;
		nheaders++;
	}
	req.method = fields[0];
	req.path = nfields > 1 ? fields[1] : NULL;
	req.query = nfields > 2 ? fields[2] : NULL;
	req.headers = headers;
	req.nheaders = nheaders;
	req.payload_hash = SIGV4_UNSIGNED;
	req.s3 = data[0] & 1;

	if (sigv4_canonical_request(&req, &creq, &signed_list) == 0) {
		/* method, URI, query, headers..., blank, signed list, payload */
		if (creq[strlen(creq) - strlen(SIGV4_UNSIGNED) - 1] != '\n' ||
		    strchr(signed_list, '\n'))
			abort();
		free(creq);
		free(signed_list);
		query = sigv4_presign_query(&req, &cred, "us-east-1", "s3",
					    "20150830T123600Z", 3600);
		if (!query || !strstr(query, "X-Amz-Signature="))
			abort(); /* signable requests must presign too */
		free(query);
	}
	free(buf);
	return 0;
}
