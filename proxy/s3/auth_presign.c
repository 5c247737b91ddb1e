/* auth_presign.c — query-string (presigned URL) authentication: finds and
 * decodes the X-Amz-* parameters (each at most once), checks the
 * algorithm, Credential, SignedHeaders, X-Amz-Date and X-Amz-Expires (up to
 * seven days; not before the date minus the allowed skew), and verifies
 * the query without X-Amz-Signature and with UNSIGNED-PAYLOAD through
 * auth.c. It does not handle the Authorization header (auth_header.c) and
 * does not make presigned URLs (wire/sigv4.c does). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "auth_int.h"
#include "http/front.h"
#include "wire/pct.h"
#include "wire/sigv4.h"

/* Decodes s[0..n) (%XY, '+' = space) into a malloc'd string. Returns NULL on
 * ENOMEM or a bad escape (*bad = 1). */
static char *query_decode(const char *s, size_t n, int *bad)
{
	char *out = pct_decode_dup(s, n, PCT_PLUS_SPACE, NULL);

	*bad = !out && errno == EINVAL;
	return out;
}

static const char *const qparam_names[Q_COUNT] = {
	"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
	"X-Amz-SignedHeaders", "X-Amz-Signature"
};

void auth_presign_query_free(struct presign_query *q)
{
	size_t i;

	for (i = 0; i < Q_COUNT; i++)
		free(q->value[i]);
	free(q->without_signature);
}

/* Returns 0, -1 malformed (*why set), -2 ENOMEM. */
int auth_presign_query_parse(const char *query, struct presign_query *q,
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

void auth_verify_query_auth(const struct auth_request *req, struct presign_query *q,
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
	why = auth_parse_credential(sp.store, &sp);
	if (!why)
		why = auth_parse_signed_headers(names, &sp);
	if (!why)
		why = auth_check_signature_format(q->value[Q_SIGNATURE]);
	if (why) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "The X-Amz-* query parameters are malformed; %s.", why);
		goto out;
	}
	sp.signature = q->value[Q_SIGNATURE];
	snprintf(out->access_key, sizeof(out->access_key), "%s", sp.access_key);
	n = strlen(q->value[Q_EXPIRES]);
	expires = n >= 1 && n <= 6 && auth_all_digits(q->value[Q_EXPIRES], n) ?
		  strtol(q->value[Q_EXPIRES], NULL, 10) : 0;
	if (expires < 1 || expires > AUTH_PRESIGN_MAX_S) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "X-Amz-Expires must be a number of seconds from 1 to 604800");
		goto out;
	}
	if (auth_parse_amz_date(q->value[Q_DATE], &t)) {
		reject(out, 400, "AuthorizationQueryParametersError",
		       "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
		goto out;
	}
	memcpy(out->amz_date, q->value[Q_DATE], 17);
	if (auth_check_scope(req, &sp, "AuthorizationQueryParametersError", out))
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
	if (content && auth_classify_payload(content, out)) {
		reject(out, 400, "InvalidArgument",
		       "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a supported "
		       "STREAMING-* value, or a SHA-256 in hex");
		goto out;
	}
	if (auth_streaming_headers(req->hdrs, out))
		goto out;
	out->presigned = 1;
	auth_verify_signature(req, &sp, q->without_signature, SIGV4_UNSIGNED, lookup, arg, out);
out:
	free(sp.store);
}
