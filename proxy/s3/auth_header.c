/* auth_header.c — header authentication: parses "Authorization:
 * AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...", takes
 * the request time from x-amz-date (or Date), refuses it beyond
 * AUTH_MAX_SKEW_S from now, requires x-amz-content-sha256 as the payload
 * hash that was signed, and verifies through auth.c. It does not handle
 * presigned queries (auth_presign.c) and does not check the body
 * (auth_body.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "auth_int.h"
#include "http/front.h"
#include "wire/sigv4.h"

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*end = '\0';
	return s;
}

/* Parses "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..."
 * (components in any order, separated by ',' and optional blanks). Returns
 * NULL, "" on ENOMEM, or the reason the header is malformed. */
static const char *parse_authorization(const char *value, struct sigparams *sp)
{
	char *cred = NULL, *names = NULL, *sig = NULL;
	char *p, *comma;
	const char *why;
	size_t alg = strlen(SIGV4_ALGORITHM);

	if (strncmp(value, SIGV4_ALGORITHM, alg) != 0 ||
	    (value[alg] != ' ' && value[alg] != '\t'))
		return "the Authorization header must start with AWS4-HMAC-SHA256 and a space";
	sp->store = strdup(value + alg);
	if (!sp->store)
		return "";
	p = sp->store;
	for (;;) {
		char *item, *eq;

		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		item = trim(p);
		eq = strchr(item, '=');
		if (!eq)
			return "an Authorization component lacks '='";
		*eq = '\0';
		if (strcmp(item, "Credential") == 0 && !cred)
			cred = eq + 1;
		else if (strcmp(item, "SignedHeaders") == 0 && !names)
			names = eq + 1;
		else if (strcmp(item, "Signature") == 0 && !sig)
			sig = eq + 1;
		else
			return "the Authorization header has an unknown or repeated component";
		if (!comma)
			break;
		p = comma + 1;
	}
	if (!cred || !names || !sig)
		return "the Authorization header needs Credential, SignedHeaders and Signature";
	why = auth_parse_credential(cred, sp);
	if (!why)
		why = auth_parse_signed_headers(names, sp);
	if (!why)
		why = auth_check_signature_format(sig);
	sp->signature = sig;
	return why;
}

void auth_verify_header_auth(const struct auth_request *req, const char *authz,
			     auth_secret_fn lookup, void *arg, time_t now,
			     struct auth_result *out)
{
	const struct front_hdrs *h = req->hdrs;
	struct sigparams sp = { 0 };
	const char *why, *xdate, *date, *content;
	time_t t;

	why = parse_authorization(authz, &sp);
	if (why && !*why) {
		reject(out, 500, "InternalError", "out of memory parsing Authorization");
		goto out;
	}
	if (why) {
		reject(out, 400, "AuthorizationHeaderMalformed",
		       "The authorization header is malformed; %s.", why);
		goto out;
	}
	snprintf(out->access_key, sizeof(out->access_key), "%s", sp.access_key);
	xdate = front_hdrs_get(h, "x-amz-date");
	date = front_hdrs_get(h, "date");
	if (xdate) {
		if (auth_parse_amz_date(xdate, &t)) {
			reject(out, 403, "AccessDenied",
			       "AWS authentication requires a valid Date or x-amz-date header");
			goto out;
		}
		memcpy(out->amz_date, xdate, 17);
	} else if (date && !auth_parse_http_date(date, &t)) {
		sigv4_amz_date(t, out->amz_date);
	} else {
		reject(out, 403, "AccessDenied",
		       "AWS authentication requires a valid Date or x-amz-date header");
		goto out;
	}
	if (auth_check_scope(req, &sp, "AuthorizationHeaderMalformed", out))
		goto out;
	if (t > now + AUTH_MAX_SKEW_S || t < now - AUTH_MAX_SKEW_S) {
		reject(out, 403, "RequestTimeTooSkewed",
		       "The difference between the request time and the current time is too large.");
		goto out;
	}
	content = front_hdrs_get(h, "x-amz-content-sha256");
	if (!content) {
		reject(out, 400, "InvalidRequest",
		       "Missing required header for this request: x-amz-content-sha256");
		goto out;
	}
	if (auth_classify_payload(content, out)) {
		reject(out, 400, "InvalidArgument",
		       "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a supported "
		       "STREAMING-* value, or a SHA-256 in hex");
		goto out;
	}
	if (auth_streaming_headers(h, out))
		goto out;
	auth_verify_signature(req, &sp, req->query, content, lookup, arg, out);
	if (out->verdict == AUTH_VERIFIED && auth_empty_body_mismatch(h, out)) {
		reject(out, 400, "XAmzContentSHA256Mismatch",
		       "The provided 'x-amz-content-sha256' header does not match what was computed.");
		goto out;
	}
out:
	free(sp.store);
}
