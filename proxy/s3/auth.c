/* auth.c — verifies clients' AWS signatures (S3 mode). auth_verify_head
 * picks the mechanism, the SigV4 Authorization header (auth_header.c), a
 * SigV4 presigned query (auth_presign.c) or SigV2, header or query
 * (auth_v2.c), and this file holds what the SigV4 forms share:
 * the small parsers, the Credential and SignedHeaders parsing, the scope
 * checks, and the signature check itself, rebuilt with wire/sigv4_canon.c's
 * canonical request (S3 rules) and compared in constant time. It never does
 * I/O, reads no clock and knows no policy: the caller passes the time and a
 * secret lookup, and decides what an anonymous request may do. The body is
 * auth_body.c's; aws-chunked bodies are checked by awschunked.c. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "auth.h"
#include "auth_int.h"
#include "http/front.h"
#include "wire/method.h"
#include "wire/sigv4.h"

void auth_set_error(struct auth_error *e, int status, const char *code,
		    const char *fmt, ...)
{
	va_list ap;

	e->status = status;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

const char *auth_payload_name(enum auth_payload p)
{
	switch (p) {
	case AUTH_PAYLOAD_UNSIGNED: return "unsigned";
	case AUTH_PAYLOAD_SIGNED: return "signed";
	case AUTH_PAYLOAD_STREAMING_SIGNED: return "streaming-signed";
	case AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER: return "streaming-signed-trailer";
	case AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER: return "streaming-unsigned-trailer";
	}
	return "unknown";
}

void auth_result_clear(struct auth_result *r)
{
	if (r)
		OPENSSL_cleanse(r, sizeof(*r));
}

/* ---- small parsers -------------------------------------------------------- */

int auth_all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int auth_is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

static int num(const char *s, size_t n)
{
	int v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

/* Fills tm from calendar fields and checks that they denote a real instant
 * (timegm normalizes Feb 30 into March: compare back). Returns 0 or -1. */
static int make_time(int year, int mon, int day, int hour, int min, int sec,
		     time_t *t)
{
	struct tm tm = { 0 };

	if (year < 1970 || year > 9999 || mon < 1 || mon > 12 || day < 1 ||
	    day > 31 || hour > 23 || min > 59 || sec > 60)
		return -1;
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	*t = timegm(&tm);
	if (*t == (time_t)-1 || tm.tm_mday != day || tm.tm_mon != mon - 1)
		return -1;
	return 0;
}

/* "20130524T000000Z" -> t. Returns 0 or -1. */
int auth_parse_amz_date(const char *s, time_t *t)
{
	if (!s || strlen(s) != 16 || !auth_all_digits(s, 8) || s[8] != 'T' ||
	    !auth_all_digits(s + 9, 6) || s[15] != 'Z')
		return -1;
	return make_time(num(s, 4), num(s + 4, 2), num(s + 6, 2),
			 num(s + 9, 2), num(s + 11, 2), num(s + 13, 2), t);
}

/* RFC 7231 IMF-fixdate "Fri, 24 May 2013 00:00:00 GMT" -> t. Returns 0 or -1.
 * (The obsolete RFC 850 and asctime forms are not accepted.) */
int auth_parse_http_date(const char *s, time_t *t)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	const char *m;
	int mon;

	if (!s || strlen(s) != 29 || s[3] != ',' || s[4] != ' ' ||
	    !auth_all_digits(s + 5, 2) || s[7] != ' ' || s[11] != ' ' ||
	    !auth_all_digits(s + 12, 4) || s[16] != ' ' || !auth_all_digits(s + 17, 2) ||
	    s[19] != ':' || !auth_all_digits(s + 20, 2) || s[22] != ':' ||
	    !auth_all_digits(s + 23, 2) || strcmp(s + 25, " GMT") != 0)
		return -1;
	for (m = months, mon = 1; *m; m += 3, mon++)
		if (memcmp(m, s + 8, 3) == 0)
			break;
	if (!*m)
		return -1;
	return make_time(num(s + 12, 4), mon, num(s + 5, 2), num(s + 17, 2),
			 num(s + 20, 2), num(s + 23, 2), t);
}

/* RFC 7230 tchar, lowercase only (SignedHeaders names are lowercase). */
static int is_lower_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Splits "AK/DATE/REGION/SERVICE/aws4_request" (in place). Returns NULL, or
 * the reason it is malformed. */
const char *auth_parse_credential(char *cred, struct sigparams *sp)
{
	char *parts[5];
	size_t n = 0;
	char *p = cred;

	for (;;) {
		char *slash = strchr(p, '/');

		if (n == 5)
			return "the Credential has too many parts";
		parts[n++] = p;
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
	}
	if (n != 5)
		return "the Credential must be ACCESSKEY/DATE/REGION/SERVICE/aws4_request";
	if (!*parts[0] || strlen(parts[0]) > AUTH_ACCESS_KEY_MAX)
		return "the Credential has a bad access key";
	if (strlen(parts[1]) != 8 || !auth_all_digits(parts[1], 8))
		return "the Credential date must be YYYYMMDD";
	if (!*parts[2])
		return "the Credential has an empty region";
	if (strcmp(parts[4], "aws4_request") != 0)
		return "the Credential must end in aws4_request";
	sp->access_key = parts[0];
	sp->date8 = parts[1];
	sp->region = parts[2];
	sp->service = parts[3];
	return NULL;
}

/* Splits "a;b;c" (in place) into sp->signed_names. Returns NULL or a reason. */
const char *auth_parse_signed_headers(char *list, struct sigparams *sp)
{
	char *p = list;
	size_t i;

	if (!*p)
		return "SignedHeaders is empty";
	for (;;) {
		char *semi = strchr(p, ';');
		const char *c;

		if (semi)
			*semi = '\0';
		if (!*p)
			return "SignedHeaders has an empty name";
		for (c = p; *c; c++)
			if (!is_lower_tchar((unsigned char)*c))
				return "SignedHeaders names must be lowercase header names";
		for (i = 0; i < sp->nsigned; i++)
			if (strcmp(sp->signed_names[i], p) == 0)
				return "SignedHeaders names a header twice";
		if (sp->nsigned == AUTH_SIGNED_MAX)
			return "SignedHeaders names too many headers";
		sp->signed_names[sp->nsigned++] = p;
		if (!semi)
			break;
		p = semi + 1;
	}
	return NULL;
}

const char *auth_check_signature_format(const char *sig)
{
	if (strlen(sig) != 64 || !auth_is_hex(sig, 64))
		return "the Signature must be 64 hex digits";
	return NULL;
}

/* ---- verification ---------------------------------------------------------- */

/* Headers that change what the fencing handler decides: when present on a
 * signed request they must be among its SignedHeaders (x-amz-meta-fencing-*
 * are x-amz-* and always must). */
static const char *const fencing_headers[] = {
	"x-fencing-token", "x-fencing-lock", "if-match", "if-none-match",
};

static int name_signed(const struct sigparams *sp, const char *name)
{
	size_t i;

	for (i = 0; sp && i < sp->nsigned; i++)
		if (strcasecmp(sp->signed_names[i], name) == 0)
			return 1;
	return 0;
}

const char *auth_unsigned_fencing_header(const struct front_hdrs *h, const struct sigparams *sp)
{
	for (size_t i = 0; i < sizeof(fencing_headers) / sizeof(fencing_headers[0]); i++)
		if (front_hdrs_get(h, fencing_headers[i]) && !name_signed(sp, fencing_headers[i]))
			return fencing_headers[i];
	return NULL;
}

/* Everything common to header and query auth once the parameters, the
 * timestamp and the payload hash to sign are known: region, skew or expiry
 * (done by the caller), key lookup, header coverage, signature. */
void auth_verify_signature(const struct auth_request *req, const struct sigparams *sp,
			   const char *query, const char *payload_hash,
			   auth_secret_fn lookup, void *arg, struct auth_result *out)
{
	const struct front_hdrs *h = req->hdrs;
	struct sigv4_header *headers = NULL;
	struct sigv4_request sreq;
	char *canonical = NULL, *signed_list = NULL, *sts = NULL, *scope = NULL;
	const char *secret, *unsigned_name;
	char expect[65];
	size_t i, n = 0;

	secret = lookup(arg, sp->access_key);
	if (!secret) {
		reject(out, 403, "InvalidAccessKeyId",
		       "The AWS Access Key Id you provided does not exist in our records.");
		goto out;
	}
	if (!name_signed(sp, "host")) {
		reject(out, 403, "AccessDenied",
		       "There were headers present in the request which were not signed: host");
		goto out;
	}
	for (i = 0; i < h->n; i++) {
		if (strncasecmp(h->v[i].name, "x-amz-", 6) == 0 &&
		    !name_signed(sp, h->v[i].name)) {
			reject(out, 403, "AccessDenied",
			       "There were headers present in the request which were not signed: %.64s",
			       h->v[i].name);
			goto out;
		}
	}
	/* the proxy decides writes on these: a party on the path must not be
	 * able to add or change them on a signed write (a read's answer does
	 * not depend on them being honest) */
	unsigned_name = method_is_read(req->method) ? NULL : auth_unsigned_fencing_header(h, sp);
	if (unsigned_name) {
		reject(out, 403, "AccessDenied",
		       "There were headers present in the request which were not signed: "
		       "%s (fencing decides on it, so it must be signed)", unsigned_name);
		goto out;
	}
	for (i = 0; i < sp->nsigned; i++) {
		if (!front_hdrs_get(h, sp->signed_names[i])) {
			reject(out, 403, "SignatureDoesNotMatch",
			       "The signed header '%.64s' is missing from the request.",
			       sp->signed_names[i]);
			goto out;
		}
	}
	headers = calloc(h->n ? h->n : 1, sizeof(*headers));
	if (!headers)
		goto enomem;
	for (i = 0; i < h->n; i++)
		if (name_signed(sp, h->v[i].name))
			headers[n++] = (struct sigv4_header){ h->v[i].name, h->v[i].value };
	sreq = (struct sigv4_request){
		.method = req->method, .path = req->path, .query = query,
		.headers = headers, .nheaders = n, .payload_hash = payload_hash,
		.s3 = 1,
	};
	if (sigv4_canonical_request(&sreq, &canonical, &signed_list)) {
		/* malformed path or query escapes (ENOMEM is indistinguishable
		 * here and far less likely) */
		reject(out, 403, "SignatureDoesNotMatch", AUTH_MSG_MISMATCH);
		goto out;
	}
	scope = sigv4_scope(out->amz_date, sp->region, sp->service);
	if (!scope || strlen(scope) >= sizeof(out->scope))
		goto enomem;
	sts = sigv4_string_to_sign(out->amz_date, scope, canonical);
	if (!sts)
		goto enomem;
	sigv4_signing_key(secret, sp->date8, sp->region, sp->service, out->signing_key);
	sigv4_signature(out->signing_key, sts, expect);
	if (!sigv4_signature_equal(expect, sp->signature)) {
		reject(out, 403, "SignatureDoesNotMatch", AUTH_MSG_MISMATCH);
		goto out;
	}
	memcpy(out->scope, scope, strlen(scope) + 1);
	memcpy(out->seed_signature, expect, sizeof(expect));
	out->verdict = AUTH_VERIFIED;
	goto out;
enomem:
	reject(out, 500, "InternalError", "out of memory verifying the signature");
out:
	OPENSSL_cleanse(expect, sizeof(expect));
	free(headers);
	free(canonical);
	free(signed_list);
	free(sts);
	free(scope);
}

/* Scope checks shared by both forms. Returns 0, or -1 with out rejected. */
int auth_check_scope(const struct auth_request *req, const struct sigparams *sp,
		     const char *code, struct auth_result *out)
{
	int status = 400;

	if (memcmp(sp->date8, out->amz_date, 8) != 0) {
		reject(out, status, code,
		       "Invalid credential date. Date is not the same as X-Amz-Date.");
		return -1;
	}
	if (strcmp(sp->service, "s3") != 0) {
		reject(out, status, code, "The service '%.32s' is wrong; expecting 's3'",
		       sp->service);
		return -1;
	}
	if (req->region && strcmp(sp->region, req->region) != 0) {
		reject(out, status, code, "The region '%.32s' is wrong; expecting '%.32s'",
		       sp->region, req->region);
		return -1;
	}
	return 0;
}

void auth_verify_head(const struct auth_request *req, auth_secret_fn lookup,
		      void *arg, time_t now, struct auth_result *out)
{
	struct presign_query q = { { 0 }, NULL, 0 };
	struct v2_query q2 = { { 0 }, 0 };
	const char *authz, *why = NULL, *why2 = NULL;
	int rc, rc2;

	memset(out, 0, sizeof(*out));
	out->verdict = AUTH_REJECTED;
	out->payload = AUTH_PAYLOAD_UNSIGNED;
	out->decoded_length = -1;
	authz = front_hdrs_get(req->hdrs, "authorization");
	rc = auth_presign_query_parse(req->query, &q, &why);
	rc2 = auth_v2_query_parse(req->query, &q2, &why2);
	if (rc == -2 || rc2 == -2) {
		reject(out, 500, "InternalError", "out of memory");
		goto out;
	}
	if ((authz && (q.any || rc == -1 || q2.any || rc2 == -1)) ||
	    ((q.any || rc == -1) && (q2.any || rc2 == -1))) {
		reject(out, 400, "InvalidArgument",
		       "Only one auth mechanism allowed; only the X-Amz-Algorithm query "
		       "parameter, the Signature query parameter or the Authorization header "
		       "should be specified");
		goto out;
	}
	if (rc == -1 || rc2 == -1) {
		reject(out, 400, "AuthorizationQueryParametersError", "%s", rc == -1 ? why : why2);
		goto out;
	}
	if (authz) {
		if (front_hdrs_count(req->hdrs, "authorization") != 1) {
			reject(out, 400, "AuthorizationHeaderMalformed",
			       "The authorization header is malformed; it is repeated.");
			goto out;
		}
		if (strncmp(authz, "AWS ", 4) == 0)
			auth_v2_verify_header(req, authz, lookup, arg, now, out);
		else
			auth_verify_header_auth(req, authz, lookup, arg, now, out);
	} else if (q.any) {
		auth_verify_query_auth(req, &q, lookup, arg, now, out);
	} else if (q2.any) {
		auth_v2_verify_query(req, &q2, lookup, arg, now, out);
	} else {
		out->verdict = AUTH_ANONYMOUS;
		out->err.status = 0;
	}
out:
	if (out->verdict == AUTH_REJECTED)
		OPENSSL_cleanse(out->signing_key, sizeof(out->signing_key));
	auth_presign_query_free(&q);
	auth_v2_query_free(&q2);
}
