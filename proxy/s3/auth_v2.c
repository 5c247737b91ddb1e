/* auth_v2.c — clients' AWS Signature Version 2 (S3 mode): the header form
 * "Authorization: AWS AKID:signature" and the presigned query
 * (AWSAccessKeyId, Signature, Expires, as boto3's generate_presigned_url
 * makes against a custom endpoint). It parses them, enforces the clock
 * (Date or x-amz-date within AUTH_MAX_SKEW_S; Expires not past, at most
 * AUTH_PRESIGN_MAX_S ahead), rebuilds the StringToSign with
 * wire/sigv2.c and compares the HMAC-SHA1 in constant time.
 *
 * SigV2 signs the x-amz-* headers, Content-MD5 and Content-Type, never
 * X-Fencing-*, If-Match or If-None-Match: a write carrying any of those is
 * refused (auth_unsigned_fencing_header), so the "fencing headers are
 * signed" rule of SigV4 holds; the token goes as x-amz-meta-fencing-token,
 * which SigV2 always signs. It does not handle SigV4 (auth_header.c,
 * auth_presign.c), and it never does I/O or reads a clock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "auth.h"
#include "auth_int.h"
#include "http/front.h"
#include "wire/method.h"
#include "wire/pct.h"
#include "wire/query.h"
#include "wire/sigv2.h"

static const char *const v2_names[V2Q_COUNT] = { "AWSAccessKeyId", "Signature", "Expires" };

void auth_v2_query_free(struct v2_query *q)
{
	for (size_t i = 0; i < V2Q_COUNT; i++)
		free(q->value[i]);
	memset(q, 0, sizeof(*q));
}

int auth_v2_query_parse(const char *query, struct v2_query *q, const char **why)
{
	const char *p = query ? query : "";

	while (*p) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t nlen = eq ? (size_t)(eq - p) : len;

		for (int i = 0; i < V2Q_COUNT; i++) {
			if (nlen != strlen(v2_names[i]) || memcmp(p, v2_names[i], nlen) != 0)
				continue;
			if (q->value[i]) {
				*why = "a Signature Version 2 query parameter is repeated";
				return -1;
			}
			/* no '+'-as-space: a Signature's raw '+' is a '+' */
			q->value[i] = eq ? pct_decode_dup(eq + 1, len - nlen - 1, PCT_NO_NUL, NULL)
					 : strdup("");
			if (!q->value[i]) {
				if (!eq || errno != EINVAL)
					return -2;
				*why = "a Signature Version 2 query parameter has a bad %-escape";
				return -1;
			}
			if (i == V2Q_ACCESS_KEY || i == V2Q_SIGNATURE)
				q->any = 1;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

/* "Tue, 27 Mar 2007 19:36:42 +0000" (the offset form the S3 guide and
 * s3cmd use) or IMF-fixdate "... GMT" -> t. Returns 0 or -1. */
static int parse_v2_date(const char *s, time_t *t)
{
	char gmt[30];
	size_t n = s ? strlen(s) : 0;
	int off;

	if (n == 29)
		return auth_parse_http_date(s, t);
	if (n != 31 || (s[26] != '+' && s[26] != '-') || s[25] != ' ' ||
	    !auth_all_digits(s + 27, 4))
		return -1;
	memcpy(gmt, s, 25);
	memcpy(gmt + 25, " GMT", 5);
	if (auth_parse_http_date(gmt, t))
		return -1;
	off = ((s[27] - '0') * 10 + (s[28] - '0')) * 3600 + ((s[29] - '0') * 10 + (s[30] - '0')) * 60;
	if (off > 14 * 3600)
		return -1;
	*t += s[26] == '+' ? -off : off;
	return 0;
}

/* x-amz-content-sha256 is optional in SigV2; when sent (signed, as every
 * x-amz-* is) a SHA-256 is checked as the body streams. Streaming
 * (aws-chunked) payloads need SigV4. Returns 0, or -1 with out rejected. */
static int v2_payload(const struct front_hdrs *h, struct auth_result *out)
{
	const char *content = front_hdrs_get(h, "x-amz-content-sha256");

	out->payload = AUTH_PAYLOAD_UNSIGNED;
	if (!content)
		return 0;
	if (auth_classify_payload(content, out) ||
	    (out->payload != AUTH_PAYLOAD_UNSIGNED && out->payload != AUTH_PAYLOAD_SIGNED)) {
		out->payload = AUTH_PAYLOAD_UNSIGNED;
		reject(out, 400, "InvalidRequest",
		       "with Signature Version 2, x-amz-content-sha256 must be UNSIGNED-PAYLOAD or "
		       "a SHA-256 in hex (aws-chunked uploads need Signature Version 4)");
		return -1;
	}
	if (auth_empty_body_mismatch(h, out)) {
		reject(out, 400, "XAmzContentSHA256Mismatch",
		       "The provided 'x-amz-content-sha256' header does not match what was computed.");
		return -1;
	}
	return 0;
}

/* Key lookup, the fencing-header rule and the signature, for both forms:
 * out verified or rejected. expires: the presigned query's, else NULL. */
static void v2_verify(const struct auth_request *req, const char *access_key,
		      const char *signature, const char *expires, auth_secret_fn lookup,
		      void *arg, struct auth_result *out)
{
	const struct front_hdrs *h = req->hdrs;
	struct sigv2_header *headers = NULL;
	struct sigv2_request sreq;
	char *sts = NULL;
	char expect[SIGV2_SIGNATURE_LEN + 1];
	const char *secret, *unsigned_name;

	expect[0] = '\0';
	secret = lookup(arg, access_key);
	if (!secret) {
		reject(out, 403, "InvalidAccessKeyId",
		       "The AWS Access Key Id you provided does not exist in our records.");
		goto out;
	}
	unsigned_name = method_is_read(req->method) ? NULL : auth_unsigned_fencing_header(h, NULL);
	if (unsigned_name) {
		reject(out, 403, "AccessDenied",
		       "There were headers present in the request which were not signed: %s "
		       "(Signature Version 2 cannot sign it; send the token as "
		       "x-amz-meta-fencing-token, or sign with Signature Version 4)", unsigned_name);
		goto out;
	}
	headers = calloc(h->n ? h->n : 1, sizeof(*headers));
	if (!headers)
		goto enomem;
	for (size_t i = 0; i < h->n; i++)
		headers[i] = (struct sigv2_header){ h->v[i].name, h->v[i].value };
	sreq = (struct sigv2_request){
		.method = req->method, .bucket = NULL, .path = req->path, .query = req->query,
		.headers = headers, .nheaders = h->n, .expires = expires,
	};
	if (sigv2_string_to_sign(&sreq, &sts) < 0) {
		/* the query cannot be read (ENOMEM is far less likely): refused
		 * whatever the signature says (found by fuzz_sigv2: 62 harmless
		 * parameters plus the 3 presign ones) */
		reject(out, 400, "InvalidArgument", "the query string cannot be read (a bad "
		       "%%-escape, or more than %d parameters)", QUERY_PARAMS_MAX);
		goto out;
	}
	sigv2_signature(secret, sts, expect);
	if (!sigv2_signature_equal(expect, signature)) {
		reject(out, 403, "SignatureDoesNotMatch", AUTH_MSG_MISMATCH);
		goto out;
	}
	out->verdict = AUTH_VERIFIED;
	goto out;
enomem:
	reject(out, 500, "InternalError", "out of memory verifying the signature");
out:
	OPENSSL_cleanse(expect, sizeof(expect));
	free(headers);
	free(sts);
}

/* An access key as S3 takes it: 1..AUTH_ACCESS_KEY_MAX printable bytes,
 * no blank or ':'. */
static int access_key_ok(const char *s, size_t n)
{
	if (n == 0 || n > AUTH_ACCESS_KEY_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f || s[i] == ':')
			return 0;
	return 1;
}

void auth_v2_verify_header(const struct auth_request *req, const char *authz,
			   auth_secret_fn lookup, void *arg, time_t now, struct auth_result *out)
{
	const struct front_hdrs *h = req->hdrs;
	const char *cred = authz + 4, *colon = strchr(cred, ':'), *when;
	char signature[SIGV2_SIGNATURE_LEN + 1];
	time_t t;

	out->sigv2 = 1;
	if (!colon || !access_key_ok(cred, (size_t)(colon - cred)) ||
	    strlen(colon + 1) != SIGV2_SIGNATURE_LEN) {
		reject(out, 400, "InvalidArgument",
		       "AWS authorization header is invalid. Expected AwsAccessKeyId:signature");
		return;
	}
	snprintf(out->access_key, sizeof(out->access_key), "%.*s", (int)(colon - cred), cred);
	memcpy(signature, colon + 1, sizeof(signature));
	/* x-amz-date wins over Date (SigV2 signs it among the x-amz-* headers) */
	when = front_hdrs_get(h, "x-amz-date");
	if (!when)
		when = front_hdrs_get(h, "date");
	if (!when || parse_v2_date(when, &t)) {
		reject(out, 403, "AccessDenied",
		       "AWS authentication requires a valid Date or x-amz-date header");
		return;
	}
	if (t > now + AUTH_MAX_SKEW_S || t < now - AUTH_MAX_SKEW_S) {
		reject(out, 403, "RequestTimeTooSkewed",
		       "The difference between the request time and the current time is too large.");
		return;
	}
	if (v2_payload(h, out))
		return;
	v2_verify(req, out->access_key, signature, NULL, lookup, arg, out);
}

void auth_v2_verify_query(const struct auth_request *req, const struct v2_query *q,
			  auth_secret_fn lookup, void *arg, time_t now, struct auth_result *out)
{
	const char *ak = q->value[V2Q_ACCESS_KEY], *exp = q->value[V2Q_EXPIRES];
	char signature[SIGV2_SIGNATURE_LEN + 1];
	long long expires;
	size_t n;

	out->sigv2 = 1;
	out->presigned = 1;
	if (!ak || !q->value[V2Q_SIGNATURE] || !exp) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "Query-string authentication requires the Signature, Expires and "
		       "AWSAccessKeyId parameters");
		return;
	}
	if (!access_key_ok(ak, strlen(ak)) || strlen(q->value[V2Q_SIGNATURE]) != SIGV2_SIGNATURE_LEN) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "AWSAccessKeyId or Signature is malformed");
		return;
	}
	snprintf(out->access_key, sizeof(out->access_key), "%s", ak);
	memcpy(signature, q->value[V2Q_SIGNATURE], sizeof(signature));
	for (char *c = signature; *c; c++)
		if (*c == ' ')
			*c = '+';   /* an unencoded '+' decoded as a space upstream of us */
	n = strlen(exp);
	if (n < 1 || n > 12 || !auth_all_digits(exp, n)) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "Expires must be a number of seconds since the epoch");
		return;
	}
	expires = strtoll(exp, NULL, 10);
	if ((long long)now > expires) {
		reject(out, 403, "AccessDenied", "Request has expired");
		return;
	}
	if (expires > (long long)now + AUTH_PRESIGN_MAX_S + AUTH_MAX_SKEW_S) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "Expires must be at most 604800 seconds (7 days) from now");
		return;
	}
	if (v2_payload(req->hdrs, out))
		return;
	v2_verify(req, ak, signature, exp, lookup, arg, out);
}
