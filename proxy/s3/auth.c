/* auth.c — verifies clients' AWS Signature V4: the Authorization header or a
 * presigned query, rebuilt with wire/sigv4.c's canonical request (S3 rules)
 * and compared in constant time; then a signed payload hash against the body
 * as it streams. It never does I/O, reads no clock and knows no policy: the
 * caller passes the time and a secret lookup, and decides what an anonymous
 * request may do. aws-chunked bodies are checked by awschunked.c. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "auth.h"
#include "http/front.h"
#include "wire/pct.h"
#include "wire/sigv4.h"

#define AUTH_SIGNED_MAX 64   /* names in SignedHeaders */

#define STREAMING_SIGNED          "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define STREAMING_SIGNED_TRAILER  "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define STREAMING_UNSIGNED_TRAILER "STREAMING-UNSIGNED-PAYLOAD-TRAILER"

#define MSG_MISMATCH "The request signature we calculated does not match the " \
	"signature you provided. Check your key and signing method."

static void set_error(struct auth_error *e, int status, const char *code,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void set_error(struct auth_error *e, int status, const char *code,
		      const char *fmt, ...)
{
	va_list ap;

	e->status = status;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

/* Marks out rejected; returns nothing so callers can `reject(...); goto out;`. */
#define reject(out, status, code, ...) do { \
		(out)->verdict = AUTH_REJECTED; \
		set_error(&(out)->err, status, code, __VA_ARGS__); \
	} while (0)

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

static int all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int is_hex(const char *s, size_t n)
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
static int parse_amz_date(const char *s, time_t *t)
{
	if (!s || strlen(s) != 16 || !all_digits(s, 8) || s[8] != 'T' ||
	    !all_digits(s + 9, 6) || s[15] != 'Z')
		return -1;
	return make_time(num(s, 4), num(s + 4, 2), num(s + 6, 2),
			 num(s + 9, 2), num(s + 11, 2), num(s + 13, 2), t);
}

/* RFC 7231 IMF-fixdate "Fri, 24 May 2013 00:00:00 GMT" -> t. Returns 0 or -1.
 * (The obsolete RFC 850 and asctime forms are not accepted.) */
static int parse_http_date(const char *s, time_t *t)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	const char *m;
	int mon;

	if (!s || strlen(s) != 29 || s[3] != ',' || s[4] != ' ' ||
	    !all_digits(s + 5, 2) || s[7] != ' ' || s[11] != ' ' ||
	    !all_digits(s + 12, 4) || s[16] != ' ' || !all_digits(s + 17, 2) ||
	    s[19] != ':' || !all_digits(s + 20, 2) || s[22] != ':' ||
	    !all_digits(s + 23, 2) || strcmp(s + 25, " GMT") != 0)
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

/* ---- the parsed signature parameters ---------------------------------------
 * Filled from the Authorization header or the X-Amz-* query; strings point
 * into `store` (a private copy). */
struct sigparams {
	char *store;
	const char *access_key;
	const char *date8;
	const char *region;
	const char *service;
	const char *signature;
	const char *signed_names[AUTH_SIGNED_MAX];
	size_t nsigned;
};

/* Splits "AK/DATE/REGION/SERVICE/aws4_request" (in place). Returns NULL, or
 * the reason it is malformed. */
static const char *parse_credential(char *cred, struct sigparams *sp)
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
	if (strlen(parts[1]) != 8 || !all_digits(parts[1], 8))
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
static const char *parse_signed_headers(char *list, struct sigparams *sp)
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

static const char *check_signature_format(const char *sig)
{
	if (strlen(sig) != 64 || !is_hex(sig, 64))
		return "the Signature must be 64 hex digits";
	return NULL;
}

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
	why = parse_credential(cred, sp);
	if (!why)
		why = parse_signed_headers(names, sp);
	if (!why)
		why = check_signature_format(sig);
	sp->signature = sig;
	return why;
}

/* ---- query parameters ------------------------------------------------------ */

/* Decodes s[0..n) (%XY, '+' = space) into a malloc'd string. Returns NULL on
 * ENOMEM or a bad escape (*bad = 1). */
static char *query_decode(const char *s, size_t n, int *bad)
{
	char *out = pct_decode_dup(s, n, PCT_PLUS_SPACE, NULL);

	*bad = !out && errno == EINVAL;
	return out;
}

enum qparam {
	Q_ALGORITHM, Q_CREDENTIAL, Q_DATE, Q_EXPIRES, Q_SIGNED_HEADERS,
	Q_SIGNATURE, Q_COUNT
};

static const char *const qparam_names[Q_COUNT] = {
	"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
	"X-Amz-SignedHeaders", "X-Amz-Signature"
};

/* The presign parameters of a query. */
struct presign_query {
	char *value[Q_COUNT];   /* decoded, NULL when absent */
	char *without_signature; /* the raw query minus X-Amz-Signature */
	int any;                /* an X-Amz-Algorithm/-Credential/-Signature seen */
};

static void presign_query_free(struct presign_query *q)
{
	size_t i;

	for (i = 0; i < Q_COUNT; i++)
		free(q->value[i]);
	free(q->without_signature);
}

/* Returns 0, -1 malformed (*why set), -2 ENOMEM. */
static int presign_query_parse(const char *query, struct presign_query *q,
			       const char **why)
{
	const char *p = query ? query : "";
	size_t keep = 0;

	q->without_signature = malloc(strlen(p) + 1);
	if (!q->without_signature)
		return -2;
	while (*p) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t nlen = eq ? (size_t)(eq - p) : len;
		char *name;
		int bad = 0, i, which = -1;

		name = query_decode(p, nlen, &bad);
		if (!name && !bad)
			return -2;
		if (name) {
			for (i = 0; i < Q_COUNT; i++)
				if (strcmp(name, qparam_names[i]) == 0)
					which = i;
			free(name);
		}
		if (which >= 0) {
			if (q->value[which]) {
				*why = "a X-Amz-* query parameter is repeated";
				return -1;
			}
			q->value[which] = eq ? query_decode(eq + 1, len - nlen - 1, &bad)
					     : strdup("");
			if (!q->value[which]) {
				if (!bad)
					return -2;
				*why = "a X-Amz-* query parameter has a bad %-escape";
				return -1;
			}
			if (which == Q_ALGORITHM || which == Q_CREDENTIAL ||
			    which == Q_SIGNATURE)
				q->any = 1;
		}
		if (which != Q_SIGNATURE && len > 0) {
			if (keep)
				q->without_signature[keep++] = '&';
			memcpy(q->without_signature + keep, p, len);
			keep += len;
		}
		if (!end)
			break;
		p = end + 1;
	}
	q->without_signature[keep] = '\0';
	return 0;
}

/* ---- verification ---------------------------------------------------------- */

/* Headers that change what the fencing handler decides: when present on a
 * signed request they must be among its SignedHeaders (x-amz-meta-fencing-*
 * are x-amz-* and always must). */
static const char *const fencing_headers[] = {
	"x-fencing-token", "x-fencing-lock", "if-match", "if-none-match",
};

static int is_read_method(const char *m)
{
	return m && (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 ||
		     strcmp(m, "OPTIONS") == 0);
}

static int name_signed(const struct sigparams *sp, const char *name)
{
	size_t i;

	for (i = 0; i < sp->nsigned; i++)
		if (strcasecmp(sp->signed_names[i], name) == 0)
			return 1;
	return 0;
}

/* Payload mode from an x-amz-content-sha256 value. Returns 0 or -1. */
static int classify_payload(const char *v, struct auth_result *out)
{
	size_t i;

	if (strcmp(v, SIGV4_UNSIGNED) == 0)
		out->payload = AUTH_PAYLOAD_UNSIGNED;
	else if (strcmp(v, STREAMING_SIGNED) == 0)
		out->payload = AUTH_PAYLOAD_STREAMING_SIGNED;
	else if (strcmp(v, STREAMING_SIGNED_TRAILER) == 0)
		out->payload = AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER;
	else if (strcmp(v, STREAMING_UNSIGNED_TRAILER) == 0)
		out->payload = AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
	else if (strlen(v) == 64 && is_hex(v, 64)) {
		out->payload = AUTH_PAYLOAD_SIGNED;
		for (i = 0; i < 64; i++)
			out->payload_hash[i] = (char)tolower((unsigned char)v[i]);
		out->payload_hash[64] = '\0';
	} else
		return -1;
	return 0;
}

/* The streaming headers: x-amz-decoded-content-length and x-amz-trailer.
 * Returns 0, or -1 with out rejected. */
static int streaming_headers(const struct front_hdrs *h, struct auth_result *out)
{
	const char *dl = front_hdrs_get(h, "x-amz-decoded-content-length");
	const char *tr = front_hdrs_get(h, "x-amz-trailer");
	size_t i, n;

	if (out->payload == AUTH_PAYLOAD_UNSIGNED || out->payload == AUTH_PAYLOAD_SIGNED)
		return 0;
	if (!dl) {
		reject(out, 411, "MissingContentLength",
		       "aws-chunked uploads need x-amz-decoded-content-length");
		return -1;
	}
	n = strlen(dl);
	if (n == 0 || n > 18 || !all_digits(dl, n) ||
	    front_hdrs_count(h, "x-amz-decoded-content-length") != 1) {
		reject(out, 400, "InvalidArgument",
		       "x-amz-decoded-content-length must be one decimal number");
		return -1;
	}
	out->decoded_length = strtoll(dl, NULL, 10);
	if (out->payload == AUTH_PAYLOAD_STREAMING_SIGNED || !tr || !*tr)
		return 0;
	n = strlen(tr);
	if (n > AUTH_TRAILER_NAME_MAX || front_hdrs_count(h, "x-amz-trailer") != 1) {
		reject(out, 400, "InvalidArgument", "x-amz-trailer is too long or repeated");
		return -1;
	}
	for (i = 0; i <= n; i++)
		out->trailer_name[i] = (char)tolower((unsigned char)tr[i]);
	return 0;
}

/* A signed hash that is not the empty body's, on a request that has no
 * body: reject before anything is forwarded. */
static int empty_body_mismatch(const struct front_hdrs *h, const struct auth_result *out)
{
	const char *cl = front_hdrs_get(h, "content-length");
	int no_body;

	if (out->payload != AUTH_PAYLOAD_SIGNED)
		return 0;
	no_body = cl ? strcmp(cl, "0") == 0 : !front_hdrs_get(h, "transfer-encoding");
	return no_body && strcmp(out->payload_hash, SIGV4_EMPTY_SHA256) != 0;
}

/* Everything common to header and query auth once the parameters, the
 * timestamp and the payload hash to sign are known: region, skew or expiry
 * (done by the caller), key lookup, header coverage, signature. */
static void verify_signature(const struct auth_request *req, const struct sigparams *sp,
			     const char *query, const char *payload_hash,
			     auth_secret_fn lookup, void *arg, struct auth_result *out)
{
	const struct front_hdrs *h = req->hdrs;
	struct sigv4_header *headers = NULL;
	struct sigv4_request sreq;
	char *canonical = NULL, *signed_list = NULL, *sts = NULL, *scope = NULL;
	const char *secret;
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
	for (i = 0; !is_read_method(req->method) &&
		    i < sizeof(fencing_headers) / sizeof(fencing_headers[0]); i++) {
		/* the proxy decides writes on these: a party on the path must
		 * not be able to add or change them on a signed write (a
		 * read's answer does not depend on them being honest) */
		if (front_hdrs_get(h, fencing_headers[i]) && !name_signed(sp, fencing_headers[i])) {
			reject(out, 403, "AccessDenied",
			       "There were headers present in the request which were not signed: "
			       "%s (fencing decides on it, so it must be signed)", fencing_headers[i]);
			goto out;
		}
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
		reject(out, 403, "SignatureDoesNotMatch", MSG_MISMATCH);
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
		reject(out, 403, "SignatureDoesNotMatch", MSG_MISMATCH);
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
static int check_scope(const struct auth_request *req, const struct sigparams *sp,
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

static void verify_header_auth(const struct auth_request *req, const char *authz,
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
		if (parse_amz_date(xdate, &t)) {
			reject(out, 403, "AccessDenied",
			       "AWS authentication requires a valid Date or x-amz-date header");
			goto out;
		}
		memcpy(out->amz_date, xdate, 17);
	} else if (date && !parse_http_date(date, &t)) {
		sigv4_amz_date(t, out->amz_date);
	} else {
		reject(out, 403, "AccessDenied",
		       "AWS authentication requires a valid Date or x-amz-date header");
		goto out;
	}
	if (check_scope(req, &sp, "AuthorizationHeaderMalformed", out))
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
	if (classify_payload(content, out)) {
		reject(out, 400, "InvalidArgument",
		       "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a supported "
		       "STREAMING-* value, or a SHA-256 in hex");
		goto out;
	}
	if (streaming_headers(h, out))
		goto out;
	verify_signature(req, &sp, req->query, content, lookup, arg, out);
	if (out->verdict == AUTH_VERIFIED && empty_body_mismatch(h, out)) {
		reject(out, 400, "XAmzContentSHA256Mismatch",
		       "The provided 'x-amz-content-sha256' header does not match what was computed.");
		goto out;
	}
out:
	free(sp.store);
}

static void verify_query_auth(const struct auth_request *req, struct presign_query *q,
			      auth_secret_fn lookup, void *arg, time_t now,
			      struct auth_result *out)
{
	struct sigparams sp = { 0 };
	const char *why = NULL, *content;
	char *names = NULL;
	size_t i, n;
	long expires;
	time_t t;

	for (i = 0; i < Q_COUNT; i++) {
		if (!q->value[i]) {
			reject(out, 400, "AuthorizationQueryParametersError",
			       "Query-string authentication requires %s.", qparam_names[i]);
			goto out;
		}
	}
	if (strcmp(q->value[Q_ALGORITHM], SIGV4_ALGORITHM) != 0) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
		goto out;
	}
	/* one allocation holds the credential and signed-header copies */
	n = strlen(q->value[Q_CREDENTIAL]);
	sp.store = malloc(n + strlen(q->value[Q_SIGNED_HEADERS]) + 2);
	if (!sp.store) {
		reject(out, 500, "InternalError", "out of memory");
		goto out;
	}
	memcpy(sp.store, q->value[Q_CREDENTIAL], n + 1);
	names = sp.store + n + 1;
	strcpy(names, q->value[Q_SIGNED_HEADERS]);
	why = parse_credential(sp.store, &sp);
	if (!why)
		why = parse_signed_headers(names, &sp);
	if (!why)
		why = check_signature_format(q->value[Q_SIGNATURE]);
	if (why) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "The X-Amz-* query parameters are malformed; %s.", why);
		goto out;
	}
	sp.signature = q->value[Q_SIGNATURE];
	snprintf(out->access_key, sizeof(out->access_key), "%s", sp.access_key);
	n = strlen(q->value[Q_EXPIRES]);
	expires = n >= 1 && n <= 6 && all_digits(q->value[Q_EXPIRES], n) ?
		  strtol(q->value[Q_EXPIRES], NULL, 10) : 0;
	if (expires < 1 || expires > AUTH_PRESIGN_MAX_S) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "X-Amz-Expires must be a number of seconds from 1 to 604800");
		goto out;
	}
	if (parse_amz_date(q->value[Q_DATE], &t)) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
		goto out;
	}
	memcpy(out->amz_date, q->value[Q_DATE], 17);
	if (check_scope(req, &sp, "AuthorizationQueryParametersError", out))
		goto out;
	if (t > now + AUTH_MAX_SKEW_S) {
		reject(out, 403, "AccessDenied", "Request is not valid yet");
		goto out;
	}
	if (now > t + expires) {
		reject(out, 403, "AccessDenied", "Request has expired");
		goto out;
	}
	/* The canonical payload of a presigned URL is UNSIGNED-PAYLOAD; a
	 * client's x-amz-content-sha256 header (signed, as every x-amz-* must
	 * be) still says how the body is framed and checked. */
	content = front_hdrs_get(req->hdrs, "x-amz-content-sha256");
	if (content && classify_payload(content, out)) {
		reject(out, 400, "InvalidArgument",
		       "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a supported "
		       "STREAMING-* value, or a SHA-256 in hex");
		goto out;
	}
	if (streaming_headers(req->hdrs, out))
		goto out;
	out->presigned = 1;
	verify_signature(req, &sp, q->without_signature, SIGV4_UNSIGNED, lookup, arg, out);
out:
	free(sp.store);
}

void auth_verify_head(const struct auth_request *req, auth_secret_fn lookup,
		      void *arg, time_t now, struct auth_result *out)
{
	struct presign_query q = { { 0 }, NULL, 0 };
	const char *authz, *why = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	out->verdict = AUTH_REJECTED;
	out->payload = AUTH_PAYLOAD_UNSIGNED;
	out->decoded_length = -1;
	authz = front_hdrs_get(req->hdrs, "authorization");
	rc = presign_query_parse(req->query, &q, &why);
	if (rc == -2) {
		reject(out, 500, "InternalError", "out of memory");
		goto out;
	}
	if (authz && (q.any || rc == -1)) {
		reject(out, 400, "InvalidArgument",
		       "Only one auth mechanism allowed; only the X-Amz-Algorithm query "
		       "parameter or the Authorization header should be specified");
		goto out;
	}
	if (rc == -1) {
		reject(out, 400, "AuthorizationQueryParametersError", "%s", why);
		goto out;
	}
	if (authz) {
		if (front_hdrs_count(req->hdrs, "authorization") != 1) {
			reject(out, 400, "AuthorizationHeaderMalformed",
			       "The authorization header is malformed; it is repeated.");
			goto out;
		}
		if (strncmp(authz, SIGV4_ALGORITHM, strlen(SIGV4_ALGORITHM)) != 0 &&
		    strncmp(authz, "AWS ", 4) == 0) {
			reject(out, 400, "InvalidRequest",
			       "The authorization mechanism you have provided is not "
			       "supported. Please use AWS4-HMAC-SHA256.");
			goto out;
		}
		verify_header_auth(req, authz, lookup, arg, now, out);
	} else if (q.any) {
		verify_query_auth(req, &q, lookup, arg, now, out);
	} else {
		out->verdict = AUTH_ANONYMOUS;
		out->err.status = 0;
	}
out:
	if (out->verdict == AUTH_REJECTED)
		OPENSSL_cleanse(out->signing_key, sizeof(out->signing_key));
	presign_query_free(&q);
}

/* ---- signed payload hash ----------------------------------------------------
 * States: checking (ctx set), passthrough (ctx NULL: not a SIGNED payload),
 * failed (an emit failed or the hash mismatched; nothing more is emitted).
 * held/has_held: the last byte seen, emitted only by a successful final. */
struct auth_body {
	EVP_MD_CTX *ctx;
	char expect[65];
	auth_emit_fn emit;
	void *arg;
	char held;
	int has_held;
	int failed;
};

struct auth_body *auth_body_new(const struct auth_result *result,
				auth_emit_fn emit, void *arg)
{
	struct auth_body *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->emit = emit;
	b->arg = arg;
	if (result->verdict == AUTH_VERIFIED && result->payload == AUTH_PAYLOAD_SIGNED) {
		memcpy(b->expect, result->payload_hash, sizeof(b->expect));
		b->ctx = EVP_MD_CTX_new();
		if (!b->ctx || !EVP_DigestInit_ex(b->ctx, EVP_sha256(), NULL)) {
			auth_body_free(b);
			return NULL;
		}
	}
	return b;
}

static int body_emit(struct auth_body *b, const char *data, size_t len,
		     struct auth_error *err)
{
	if (!len || !b->emit)
		return 0;
	if (b->emit(b->arg, data, len)) {
		b->failed = 1;
		set_error(err, 500, "InternalError", "the body could not be forwarded");
		return -1;
	}
	return 0;
}

int auth_body_update(struct auth_body *b, const void *data, size_t len,
		     struct auth_error *err)
{
	const char *p = data;

	if (b->failed) {
		set_error(err, 500, "InternalError", "the body check already failed");
		return -1;
	}
	if (!len)
		return 0;
	if (b->ctx && !EVP_DigestUpdate(b->ctx, p, len)) {
		b->failed = 1;
		set_error(err, 500, "InternalError", "hashing failed");
		return -1;
	}
	if (b->has_held && body_emit(b, &b->held, 1, err))
		return -1;
	if (body_emit(b, p, len - 1, err))
		return -1;
	b->held = p[len - 1];
	b->has_held = 1;
	return 0;
}

int auth_body_final(struct auth_body *b, struct auth_error *err)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	char hex[65];
	size_t i;

	if (b->failed) {
		set_error(err, 500, "InternalError", "the body check already failed");
		return -1;
	}
	if (b->ctx) {
		if (!EVP_DigestFinal_ex(b->ctx, md, &mdlen) || mdlen != 32) {
			b->failed = 1;
			set_error(err, 500, "InternalError", "hashing failed");
			return -1;
		}
		for (i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", md[i]);
		EVP_MD_CTX_free(b->ctx);
		b->ctx = NULL;
		if (strcmp(hex, b->expect) != 0) {
			b->failed = 1;
			set_error(err, 400, "XAmzContentSHA256Mismatch",
				  "The provided 'x-amz-content-sha256' header does not "
				  "match what was computed.");
			return -1;
		}
	}
	if (b->has_held && body_emit(b, &b->held, 1, err))
		return -1;
	b->has_held = 0;
	return 0;
}

void auth_body_free(struct auth_body *b)
{
	if (!b)
		return;
	EVP_MD_CTX_free(b->ctx);
	free(b);
}
