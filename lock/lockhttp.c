/* lockhttp.c — one JSON request to fencegate's lock HTTP API over libcurl.
 * It knows the transport only; what the answers mean is the caller's
 * business (fencectl maps 409 LockHeld / LockLost to its exit codes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "lockhttp.h"

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

int lockhttp_request(const char *base_url, const char *method, const char *path,
		     const char *body_json, long timeout_ms, long *status,
		     char **reply, char *err, size_t errlen)
{
	struct reply_buf rb = { 0 };
	struct curl_slist *hdrs = NULL;
	char *url = NULL;
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
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &rb);
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
