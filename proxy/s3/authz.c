/* authz.c — authentication and permissions on the request path (see
 * authz.h): SigV4 or SigV2 (S3 mode) or bearer tokens (HTTP mode) against the
 * policy's clients, then read / write / lock permission by path prefix,
 * then the body filter that verifies a signed payload or decodes aws-chunked.
 * What the lock-file guard needs to know (the client's access key, whether
 * it may break the lock) it records on the S3 request model.
 * It never forwards, fences or touches the store: refusals are answered
 * here, everything else passes on down the chain. */
#include "authz.h"
#include "s3req.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "auth.h"
#include "awschunked.h"
#include "lock/core/lock.h"
#include "ops/log.h"
#include "wire/method.h"
#include "wire/pct.h"

#define AUTHZ_PATH_MAX 8192

struct authz {
	enum proxy_mode mode;
	struct policy *pol;
	unsigned long refused;
	struct fencegate_metrics *metrics;
	void (*log_fn)(const struct proxy_summary *s, const char *verdict, void *arg);
	void *log_arg;
	int decode_chunked;
};

/* A refused request's report, once it is over. */
struct refusal {
	struct authz *a;
	char verdict[64];
};

/* Per-request body filter state: one of the two checkers. */
struct body_check {
	struct auth_body *signed_body;
	struct awschunked *chunked;
};

struct authz *authz_new(const struct authz_config *cfg)
{
	struct authz *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->mode = cfg->mode;
	a->metrics = cfg->metrics;
	a->log_fn = cfg->log_fn;
	a->log_arg = cfg->log_arg;
	a->decode_chunked = cfg->decode_chunked;
	return a;
}

void authz_set_policy(struct authz *a, struct policy *pol)
{
	struct policy *old = a->pol;

	a->pol = policy_hold(pol);
	policy_free(old);
}

void authz_free(struct authz *a)
{
	if (!a)
		return;
	policy_free(a->pol);
	free(a);
}

int authz_may_break(const struct authz *a, const char *principal, const char *lock)
{
	const struct policy *pol = a->pol;
	const struct policy_client *c = NULL;

	if (!pol || !principal)
		return 0;
	if (a->mode == PROXY_MODE_S3) {
		c = policy_client_by_key(pol, principal);
	} else {
		for (size_t i = 0; i < pol->nclients && !c; i++)
			if (pol->clients[i].name && strcmp(pol->clients[i].name, principal) == 0)
				c = &pol->clients[i];
	}
	return c && policy_client_may_break(pol, c, lock);
}

unsigned long authz_refused(const struct authz *a)
{
	return a->refused;
}

static const char *secret_of(void *arg, const char *access_key)
{
	const struct policy_client *c = policy_client_by_key(arg, access_key);

	return c ? c->secret : NULL;
}

static void refusal_done(const struct proxy_summary *s, void *arg)
{
	struct refusal *r = arg;

	r->a->log_fn(s, r->verdict, r->a->log_arg);
	free(r);
}

static enum proxy_action refuse(struct authz *a, struct proxy_req *req, int status,
				const char *code, const char *message)
{
	struct front_hdrs h = {0};
	struct refusal *r = a->log_fn ? calloc(1, sizeof(*r)) : NULL;

	a->refused++;
	if (a->metrics)
		metrics_add(a->metrics->rejections, (const char *[]){ code }, 1);
	if (r) {
		r->a = a;
		snprintf(r->verdict, sizeof(r->verdict), "auth:%s", code);
		proxy_req_on_done(req, refusal_done, r);
	}
	if (status == 401)
		front_hdrs_add(&h, "WWW-Authenticate", "Bearer realm=\"fencegate\"");
	proxy_req_reply_error(req, status, code, message, h.n ? &h : NULL);
	front_hdrs_clear(&h);
	return PROXY_HANDLED;
}

/* The value of query parameter name, decoded, into out; "" when absent. */
static int query_param(const char *query, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name);
	const char *s = query;

	out[0] = '\0';
	while (s && *s) {
		const char *amp = strchr(s, '&');
		size_t len = amp ? (size_t)(amp - s) : strlen(s);

		if (len > nlen && strncmp(s, name, nlen) == 0 && s[nlen] == '=')
			return pct_decode(s + nlen + 1, len - nlen - 1, PCT_NO_NUL, out, outlen) < 0 ? -1 : 0;
		s = amp ? amp + 1 : s + len;
	}
	return 0;
}

/* S3: 1 if the decoded path names an object (/bucket/key...). */
static int has_key(const char *dpath)
{
	const char *slash = dpath[0] == '/' ? strchr(dpath + 1, '/') : NULL;

	return slash && slash[1];
}

/* S3: the name of the lock whose lock files path is under, into name; 1 if
 * found, else 0. */
static int lock_file_of(const struct policy *pol, const char *dpath, char *name, size_t namelen)
{
	char buf[AUTHZ_PATH_MAX];

	for (size_t i = 0; i < pol->nlocks; i++) {
		const struct policy_lock *l = &pol->locks[i];
		const char *bucket;
		size_t blen;

		if (strncmp(l->store, "s3://", 5) != 0)
			continue;
		bucket = l->store + 5;
		blen = strcspn(bucket, "/");
		if ((size_t)snprintf(buf, sizeof(buf), "/%.*s/%s", (int)blen, bucket, l->prefix) >=
		    sizeof(buf))
			continue;
		if (strncmp(dpath, buf, strlen(buf)) == 0) {
			snprintf(name, namelen, "%s", l->name);
			return 1;
		}
	}
	if (pol->unrouted_writes == POLICY_UNROUTED_BUCKET_LOCK &&
	    policy_bucket_lock(pol, dpath, name, namelen)) {
		snprintf(buf, sizeof(buf), "/%s/locks/%s/lock-", name, name);
		if (strncmp(dpath, buf, strlen(buf)) == 0)
			return 1;
	}
	return 0;
}

/* Decides whether client c (NULL: anonymous) may make this request.
 * Returns 0, or -1 after refusing it. */
/* Every object a request touches is authorised: a copy (CopyObject,
 * UploadPartCopy) reads its source with the proxy's credentials, so the
 * client needs "read" on /SRCBUCKET/SRCKEY, as s3req.c decoded it (the
 * one parse fencing and the embedded store copy from). Returns 0, or -1
 * after refusing. */
static int check_copy_source(struct authz *a, const struct policy_client *c,
			     struct proxy_req *req)
{
	const struct s3req *m = s3req_of(req);
	char res[AUTHZ_PATH_MAX];

	if (!m) {
		refuse(a, req, 500, "InternalError", "out of memory");
		return -1;
	}
	if (!m->copy.key)
		return 0; /* not a copy (a malformed one is refused by fencing) */
	if ((size_t)snprintf(res, sizeof(res), "/%s/%s", m->copy.bucket, m->copy.key) >=
		    sizeof(res) ||
	    !policy_client_allows(c, res, POLICY_ACT_READ)) {
		refuse(a, req, 403, "AccessDenied",
		       "this client may not read the copy source (x-amz-copy-source)");
		return -1;
	}
	return 0;
}

static int check_access(struct authz *a, const struct policy *pol, const struct policy_client *c,
			struct proxy_req *req, const char *dpath)
{
	const char *method = proxy_req_method(req);
	int read = method_is_read(method);
	char res[AUTHZ_PATH_MAX], name[LOCK_NAME_MAX + 1];
	const struct policy_route *route;

	if (strncmp(dpath, "/_fence/", 8) == 0 || strcmp(dpath, "/_fence") == 0) {
		if (!c) {
			refuse(a, req, a->mode == PROXY_MODE_HTTP ? 401 : 403,
			       a->mode == PROXY_MODE_HTTP ? "Unauthorized" : "AccessDenied",
			       "the lock API needs an authenticated client");
			return -1;
		}
		if (strcmp(dpath, "/_fence/status") == 0 &&
		    !policy_client_allows(c, "/", POLICY_ACT_ADMIN)) {
			refuse(a, req, 403, "AccessDenied",
			       "the status page needs the \"admin\" permission on \"/\"");
			return -1;
		}
		if (strncmp(dpath, "/_fence/locks/", 14) == 0 && !read) {
			size_t n = strcspn(dpath + 14, "/");

			snprintf(name, sizeof(name), "%.*s", (int)n, dpath + 14);
			if (!policy_client_may_lock(pol, c, name)) {
				refuse(a, req, 403, "AccessDenied",
				       "this client may not take or change that lock");
				return -1;
			}
		}
		return 0;
	}
	if (!c) {
		route = policy_route_for(pol, dpath);
		if (read && route && route->anonymous_read)
			return 0;
		refuse(a, req, a->mode == PROXY_MODE_HTTP ? 401 : 403,
		       a->mode == PROXY_MODE_HTTP ? "Unauthorized" : "AccessDenied",
		       a->mode == PROXY_MODE_HTTP ? "a bearer token is required"
						  : "Anonymous access is forbidden");
		return -1;
	}
	snprintf(res, sizeof(res), "%s", dpath);
	if (a->mode == PROXY_MODE_S3 && read && !has_key(dpath) && strcmp(dpath, "/") != 0) {
		/* a bucket-level read (ListObjects, GetBucketLocation): on the
		 * listed prefix, inside the bucket */
		char prefix[AUTHZ_PATH_MAX];
		size_t blen = strcspn(dpath + 1, "/");

		if (query_param(proxy_req_query(req), "prefix", prefix, sizeof(prefix)) < 0 ||
		    (size_t)snprintf(res, sizeof(res), "/%.*s/%s", (int)blen, dpath + 1, prefix) >=
			    sizeof(res)) {
			refuse(a, req, 400, "InvalidArgument", "bad prefix parameter");
			return -1;
		}
	}
	if (a->mode == PROXY_MODE_S3 && !read) {
		/* operations on the bucket as a whole: the permission is on
		 * "/B/", so a client held to a prefix inside it cannot */
		const struct s3req *m = s3req_of(req);
		unsigned act = 0;

		if (!m) {
			refuse(a, req, 500, "InternalError", "out of memory");
			return -1;
		}
		if (m->cls == S3_BUCKET_CONFIG)
			act = POLICY_ACT_ADMIN;
		else if (m->cls == S3_DELETE_OBJECTS)
			act = POLICY_ACT_WRITE;
		if (act && m->bucket[0]) {
			snprintf(res, sizeof(res), "/%s/", m->bucket);
			if (!policy_client_allows(c, res, act)) {
				refuse(a, req, 403, "AccessDenied",
				       act == POLICY_ACT_ADMIN
				       ? "bucket configuration needs the \"admin\" permission on the bucket"
				       : "DeleteObjects needs \"write\" on the whole bucket (delete keys "
					 "one at a time inside a prefix)");
				return -1;
			}
			return 0;
		}
	}
	if (a->mode == PROXY_MODE_S3 && !read && lock_file_of(pol, dpath, name, sizeof(name))) {
		if (!policy_client_may_lock(pol, c, name)) {
			refuse(a, req, 403, "AccessDenied", "lock files are writable only with \"lock\"");
			return -1;
		}
		return check_copy_source(a, c, req);
	}
	if (!policy_client_allows(c, res, read ? POLICY_ACT_READ : POLICY_ACT_WRITE)) {
		refuse(a, req, 403, "AccessDenied", read ? "this client may not read here"
							 : "this client may not write here");
		return -1;
	}
	return a->mode == PROXY_MODE_S3 && !read ? check_copy_source(a, c, req) : 0;
}

/* ---- body filters ---------------------------------------------------- */

static int emit(void *arg, const char *data, size_t len)
{
	return proxy_req_filter_emit(arg, data, len);
}

static void from_auth_error(const struct auth_error *ae, struct proxy_body_error *err)
{
	err->status = ae->status ? ae->status : 500;
	err->code = ae->code ? ae->code : "InternalError";
	snprintf(err->message, sizeof(err->message), "%s", ae->message);
}

static void from_chunked_error(const struct awschunked *d, struct proxy_body_error *err)
{
	const char *code = NULL, *message = NULL;

	awschunked_error(d, &err->status, &code, &message);
	err->code = code ? code : "InternalError";
	snprintf(err->message, sizeof(err->message), "%s", message ? message : "");
}

static int check_feed(struct proxy_req *req, const char *data, size_t len, void *arg,
		      struct proxy_body_error *err)
{
	struct body_check *b = arg;
	struct auth_error ae = {0};

	if (b->signed_body) {
		if (auth_body_update(b->signed_body, data, len, &ae) < 0) {
			from_auth_error(&ae, err);
			return -1;
		}
		return 0;
	}
	if (awschunked_feed(b->chunked, data, len) == AWSCHUNKED_ERROR) {
		from_chunked_error(b->chunked, err);
		return -1;
	}
	return 0;
}

static int check_end(struct proxy_req *req, void *arg, struct proxy_body_error *err)
{
	struct body_check *b = arg;
	struct auth_error ae = {0};

	if (b->signed_body) {
		if (auth_body_final(b->signed_body, &ae) < 0) {
			from_auth_error(&ae, err);
			return -1;
		}
		return 0;
	}
	if (awschunked_finish(b->chunked) != AWSCHUNKED_DONE) {
		from_chunked_error(b->chunked, err);
		return -1;
	}
	return 0;
}

static void check_free(void *arg)
{
	struct body_check *b = arg;

	if (!b)
		return;
	auth_body_free(b->signed_body);
	awschunked_free(b->chunked);
	free(b);
}

/* Drops token from a comma-separated Content-Encoding value. */
static int drop_coding(struct proxy_req *req, const char *token)
{
	const char *v = proxy_req_header(req, "Content-Encoding");
	char out[512];
	size_t o = 0;

	if (!v)
		return 0;
	while (*v) {
		size_t n = strcspn(v, ",");
		const char *s = v;
		size_t len = n;

		while (len && (*s == ' ' || *s == '\t')) {
			s++;
			len--;
		}
		while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			len--;
		if (len && !(len == strlen(token) && strncasecmp(s, token, len) == 0) &&
		    o + len + 2 < sizeof(out)) {
			if (o)
				out[o++] = ',';
			memcpy(out + o, s, len);
			o += len;
		}
		v += n;
		if (*v == ',')
			v++;
	}
	out[o] = '\0';
	return proxy_req_fwd_set(req, "Content-Encoding", o ? out : NULL);
}

/* Installs the body check the verified head asks for. Returns 0, or -1
 * after answering. */
static int install_body_check(struct authz *a, struct proxy_req *req,
			      const struct auth_result *res, int unchecked)
{
	struct body_check *b;
	struct proxy_body_filter f;
	int64_t length;

	if (res->payload == AUTH_PAYLOAD_UNSIGNED)
		return 0;
	if (res->payload == AUTH_PAYLOAD_SIGNED && !proxy_req_has_body(req))
		return 0; /* an empty body's hash was checked with the head */
	b = calloc(1, sizeof(*b));
	if (!b)
		goto nomem;
	if (res->payload == AUTH_PAYLOAD_SIGNED) {
		b->signed_body = auth_body_new(res, emit, req);
		if (!b->signed_body)
			goto nomem;
		length = proxy_req_content_length(req);
	} else {
		struct awschunked_params cp = {
			.mode = res->payload == AUTH_PAYLOAD_STREAMING_SIGNED ? AWSCHUNKED_SIGNED
				: res->payload == AUTH_PAYLOAD_STREAMING_SIGNED_TRAILER
					? AWSCHUNKED_SIGNED_TRAILER : AWSCHUNKED_UNSIGNED_TRAILER,
			.signing_key = res->signing_key,
			.amz_date = res->amz_date,
			.scope = res->scope,
			.seed_signature = res->seed_signature,
			.decoded_length = res->decoded_length,
			.trailer_name = res->trailer_name,
			.signatures_unchecked = unchecked,
		};

		if (!proxy_req_has_body(req)) {
			free(b);
			refuse(a, req, 400, "IncompleteBody", "the aws-chunked body is missing");
			return -1;
		}
		b->chunked = awschunked_new(&cp, emit, req);
		if (!b->chunked)
			goto nomem;
		length = res->decoded_length;
		/* forward the decoded payload as a plain body */
		if (drop_coding(req, "aws-chunked") < 0 ||
		    proxy_req_fwd_set(req, "x-amz-content-sha256", "UNSIGNED-PAYLOAD") < 0 ||
		    proxy_req_fwd_set(req, "x-amz-decoded-content-length", NULL) < 0 ||
		    proxy_req_fwd_set(req, "x-amz-trailer", NULL) < 0 ||
		    proxy_req_fwd_set(req, "x-amz-sdk-checksum-algorithm", NULL) < 0)
			goto nomem;
	}
	f = (struct proxy_body_filter){ check_feed, check_end, check_free, b };
	if (proxy_req_set_body_filter(req, &f, length) < 0)
		goto nomem;
	return 0;
nomem:
	check_free(b);
	proxy_req_reply_error(req, 500, "InternalError", "cannot set up the body check", NULL);
	return -1;
}

/* ---- what fencing learns from authz -------------------------------------- */

/* Records on the request model who the client is and whether it may break
 * the lock of a lock-file write (the guard, fencing_guard.c, asks). c NULL:
 * authentication off (everything allowed). On ENOMEM nothing is recorded:
 * the guard then refuses to break (fail closed). */
static void grant_fencing(struct proxy_req *req, const struct policy *pol,
			  const struct policy_client *c, const char *dpath)
{
	struct s3req *m;
	char name[LOCK_NAME_MAX + 1];

	if (!s3req_of(req))
		return;
	m = proxy_req_model(req);  /* s3req_of's, owned by req */
	if (!c) {
		m->may_break = true;
		return;
	}
	snprintf(m->client, sizeof(m->client), "%s", c->access_key ? c->access_key : "");
	m->may_break = !method_is_read(proxy_req_method(req)) &&
		       lock_file_of(pol, dpath, name, sizeof(name)) &&
		       policy_client_may_break(pol, c, name);
}

/* ---- the handler ----------------------------------------------------- */

static enum proxy_action on_s3(struct authz *a, const struct policy *pol, struct proxy_req *req,
			       const char *dpath)
{
	struct auth_request ar;
	struct auth_result res;
	const struct policy_client *c = NULL;
	enum proxy_action act = PROXY_HANDLED;

	/* the request model first: it moves a SigV2 presigned URL's x-amz-*
	 * parameters into the headers, where the signature covers them
	 * (s3req.c); NULL (ENOMEM) is refused below by whoever needs it */
	(void)s3req_of(req);
	ar = (struct auth_request){ proxy_req_method(req), proxy_req_path(req),
				    proxy_req_query(req), proxy_req_headers(req), NULL };
	auth_verify_head(&ar, secret_of, (void *)pol, time(NULL), &res);
	switch (res.verdict) {
	case AUTH_REJECTED:
		log_info("request \"%s\": authentication failed for \"%s\": \"%s\"",
			 proxy_req_id(req), res.access_key, res.err.code);
		refuse(a, req, res.err.status, res.err.code, res.err.message);
		goto out;
	case AUTH_ANONYMOUS:
		break;
	case AUTH_VERIFIED:
		c = policy_client_by_key(pol, res.access_key);
		if (!c) { /* cannot happen: the lookup found it */
			refuse(a, req, 403, "InvalidAccessKeyId", "unknown access key");
			goto out;
		}
		break;
	}
	/* verified: logged as who it is, even if refused below */
	if (c && proxy_req_set_principal(req, c->access_key) < 0) {
		proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
		goto out;
	}
	if (check_access(a, pol, c, req, dpath) < 0)
		goto out;
	if (c)
		log_debug("request \"%s\": client \"%s\" (%s%s)", proxy_req_id(req), c->name,
			  res.sigv2 ? "sigv2, " : "", auth_payload_name(res.payload));
	if (c && install_body_check(a, req, &res, 0) < 0)
		goto out;
	if (c)
		grant_fencing(req, pol, c, dpath);
	act = PROXY_PASS;
out:
	auth_result_clear(&res);
	return act;
}

static enum proxy_action on_http(struct authz *a, const struct policy *pol,
				 struct proxy_req *req, const char *dpath)
{
	const char *h = proxy_req_header(req, "Authorization");
	const struct policy_client *c = NULL;

	if (h) {
		if (strncasecmp(h, "Bearer ", 7) != 0)
			return refuse(a, req, 401, "Unauthorized",
				      "only bearer tokens are accepted");
		h += 7;
		while (*h == ' ')
			h++;
		c = policy_client_by_token(pol, h, strlen(h));
		if (!c)
			return refuse(a, req, 401, "Unauthorized", "unknown bearer token");
	}
	if (c && proxy_req_set_principal(req, c->name) < 0) {
		proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
		return PROXY_HANDLED;
	}
	if (check_access(a, pol, c, req, dpath) < 0)
		return PROXY_HANDLED;
	/* the token is the proxy's credential, not the downstream's */
	if (proxy_req_fwd_set(req, "Authorization", NULL) < 0) {
		proxy_req_reply_error(req, 500, "InternalError", "out of memory", NULL);
		return PROXY_HANDLED;
	}
	return PROXY_PASS;
}

/* Authentication off, re-signed for an upstream: an aws-chunked body is
 * decoded and forwarded plain (its framing and checksum trailer checked,
 * its chunk signatures, which nobody can check here, parsed only), as
 * with authentication on. Returns 0, or -1 after answering. */
static int decode_unauthenticated(struct authz *a, struct proxy_req *req)
{
	struct auth_result res;
	int rc = 0;

	memset(&res, 0, sizeof(res));
	if (auth_payload_of(proxy_req_headers(req), &res) < 0) {
		refuse(a, req, res.err.status, res.err.code, res.err.message);
		rc = -1;
	} else if (res.payload != AUTH_PAYLOAD_UNSIGNED && res.payload != AUTH_PAYLOAD_SIGNED) {
		rc = install_body_check(a, req, &res, 1);
	}
	auth_result_clear(&res);
	return rc;
}

enum proxy_action authz_on_request(struct proxy_req *req, void *arg)
{
	struct authz *a = arg;
	const struct policy *pol = a->pol;
	const char *path = proxy_req_path(req);
	char dpath[AUTHZ_PATH_MAX];

	if (strcmp(path, "/_fence/health") == 0 || strcmp(path, "/_fence/metrics") == 0 ||
	    strcmp(path, "/_fence/ready") == 0 || strcmp(path, "/_fence/live") == 0)
		return PROXY_PASS;
	if (!pol || pol->nclients == 0) {
		/* authentication off (loopback only) */
		if (a->mode == PROXY_MODE_S3 && strncmp(path, "/_fence/", 8) != 0) {
			grant_fencing(req, pol, NULL, NULL);
			if (a->decode_chunked && decode_unauthenticated(a, req) < 0)
				return PROXY_HANDLED;
		}
		return PROXY_PASS;
	}
	if (policy_path_decode(path, dpath, sizeof(dpath)) < 0)
		return refuse(a, req, 400, "InvalidURI", "the request path cannot be used");
	if (a->mode == PROXY_MODE_HTTP)
		return on_http(a, pol, req, dpath);
	return on_s3(a, pol, req, dpath);
}
