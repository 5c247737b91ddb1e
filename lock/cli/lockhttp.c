/* lockhttp.c — one JSON request to fencegate's lock HTTP API over libcurl,
 * SigV4-signed (wire/sigv4.c) when credentials are given, TLS verified
 * against the CA bundle named. It knows the transport only; what the
 * answers mean is the caller's business (fencectl maps 409 LockHeld /
 * LockLost to its exit codes). It does not look for credentials itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "lockhttp.h"
#include "wire/sigv4.h"

#define LOCKHTTP_REPLY_MAX (1024 * 1024) /* a lock list; more is not an answer */

struct reply_buf {
	char *data;
	size_t len;
	int too_big;
};

static size_t collect(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct reply_buf *rb = arg;
	size_t n = size * nmemb;
	char *grown;

	if (rb->len + n > LOCKHTTP_REPLY_MAX) {
		rb->too_big = 1;
		return 0;
	}
	grown = realloc(rb->data, rb->len + n + 1);
	if (!grown)
		return 0;
	rb->data = grown;
	memcpy(rb->data + rb->len, ptr, n);
	rb->len += n;
	rb->data[rb->len] = '\0';
	return n;
}

/* Appends "name: value" to *list. Returns 0, or -1 (ENOMEM). */
static int add_header(struct curl_slist **list, const char *name, const char *value)
{
	struct curl_slist *grown;
	char *line = NULL;

	if (asprintf(&line, "%s: %s", name, value) < 0)
		return -1;
	grown = curl_slist_append(*list, line);
	free(line);
	if (!grown)
		return -1;
	*list = grown;
	return 0;
}

/* The SigV4 headers of METHOD url with body (NULL: none) appended to *list:
 * Host (as signed), X-Amz-Date, X-Amz-Content-Sha256, the session token and
 * Authorization. Returns 0, or -1 with a message in err. */
static int sign(struct curl_slist **list, const char *url, const char *method,
		const char *body, const struct lockhttp_opts *o, char *err, size_t errlen)
{
	char amz_date[17], payload_hash[65], *host = NULL, *port = NULL, *path = NULL;
	char *query = NULL, *hostport = NULL, *auth = NULL;
	struct sigv4_header sh[4];
	struct sigv4_request rq;
	struct sigv4_credentials cred = { o->cred->access_key, o->cred->secret_key,
					  o->cred->session_token };
	CURLU *u = curl_url();
	int rc = -1;
	size_t n = 0;

	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
		snprintf(err, errlen, "cannot sign a request to \"%s\": not a URL", url);
		goto out;
	}
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	curl_url_get(u, CURLUPART_PORT, &port, 0); /* only when the URL names one */
	if (asprintf(&hostport, "%s%s%s", host, port ? ":" : "", port ? port : "") < 0) {
		hostport = NULL;
		goto nomem;
	}
	sigv4_amz_date(time(NULL), amz_date);
	sigv4_sha256_hex(body ? body : "", body ? strlen(body) : 0, payload_hash);
	sh[n++] = (struct sigv4_header){ "host", hostport };
	sh[n++] = (struct sigv4_header){ "x-amz-content-sha256", payload_hash };
	sh[n++] = (struct sigv4_header){ "x-amz-date", amz_date };
	if (cred.session_token)
		sh[n++] = (struct sigv4_header){ "x-amz-security-token", cred.session_token };
	rq = (struct sigv4_request){ .method = method, .path = path, .query = query,
				     .headers = sh, .nheaders = n,
				     .payload_hash = payload_hash, .s3 = 1 };
	auth = sigv4_authorization(&rq, &cred, o->region ? o->region : "us-east-1", "s3",
				   amz_date);
	if (!auth) {
		snprintf(err, errlen, "cannot sign the request to \"%s\"", url);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (add_header(list, sh[i].name, sh[i].value) < 0)
			goto nomem;
	if (add_header(list, "Authorization", auth) < 0)
		goto nomem;
	rc = 0;
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
out:
	free(auth);
	free(hostport);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_url_cleanup(u);
	return rc;
}

/* The CA bundle to verify with: opts's, else $AWS_CA_BUNDLE, else
 * $SSL_CERT_FILE; NULL: libcurl's default. */
static const char *ca_file(const struct lockhttp_opts *o)
{
	const char *f = o ? o->ca_file : NULL;

	if (!f || !*f)
		f = getenv("AWS_CA_BUNDLE");
	if (!f || !*f)
		f = getenv("SSL_CERT_FILE");
	return f && *f ? f : NULL;
}

int lockhttp_request(const char *base_url, const struct lockhttp_opts *opts,
		     const char *method, const char *path, const char *body_json,
		     long timeout_ms, long *status, char **reply, char *err, size_t errlen)
{
	struct reply_buf rb = { 0 };
	struct curl_slist *hdrs = NULL, *grown;
	char *url = NULL;
	const char *ca = ca_file(opts);
	size_t blen = strlen(base_url);
	CURL *h = NULL;
	CURLcode cc;
	int rc = -1;

	*status = 0;
	*reply = NULL;
	while (blen && base_url[blen - 1] == '/')
		blen--;
	url = malloc(blen + strlen(path) + 1);
	h = curl_easy_init();
	if (!url || !h) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memcpy(url, base_url, blen);
	strcpy(url + blen, path);
	if (ca && access(ca, R_OK) != 0) {
		snprintf(err, errlen, "cannot read the CA bundle \"%s\"", ca);
		goto out;
	}
	if (add_header(&hdrs, "Content-Type", "application/json") < 0 ||
	    !(grown = curl_slist_append(hdrs, "Expect:"))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	hdrs = grown;
	if (opts && opts->cred && sign(&hdrs, url, method, body_json, opts, err, errlen) < 0)
		goto out;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &rb);
	if (ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	if (body_json)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body_json);
	cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		snprintf(err, errlen, "%s %s: %s", method, url,
			 rb.too_big ? "answer larger than 1 MiB" : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	*reply = rb.data;
	rb.data = NULL;
	rc = 0;
out:
	curl_slist_free_all(hdrs);
	if (h)
		curl_easy_cleanup(h);
	free(url);
	free(rb.data);
	return rc;
}
