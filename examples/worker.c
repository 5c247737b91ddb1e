/* worker.c — a read-modify-write worker in C: libfencelock takes the lock
 * through fencegate's S3 API and keeps it renewed on a thread of its own;
 * libcurl reads the object and writes it back with the epoch as
 * X-Fencing-Token, after checking the lease still has time left. A write
 * whose epoch is no longer current gets 409 from the proxy and is never
 * stored.
 *
 *   cc -o worker examples/worker.c $(pkg-config --cflags --libs libfencelock libcurl)
 *   FENCEGATE=http://127.0.0.1:8080 AWS_ACCESS_KEY_ID=worker \
 *       AWS_SECRET_ACCESS_KEY=worker ./worker BUCKET KEY
 *
 * It adds 1 to the number stored at BUCKET/KEY and prints the new value;
 * exit 3 when another worker holds the lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <fencegate/fencelock.h>

#define WRITE_NEEDS_MS 5000 /* the write must be done well before the deadline */

static size_t keep_body(char *data, size_t size, size_t n, void *arg)
{
	char *buf = arg;
	size_t have = strlen(buf), len = size * n;

	if (have + len >= 32)
		return 0; /* a counter, not a file: refuse anything longer */
	memcpy(buf + have, data, len);
	buf[have + len] = '\0';
	return len;
}

/* GET (body NULL) or PUT url; returns the HTTP status, 0 when none. */
static long http(const char *url, const char *body, uint64_t epoch, char out[32])
{
	struct curl_slist *hdrs = NULL;
	char token[64];
	long status = 0;
	CURL *c = curl_easy_init();

	if (!c)
		return 0;
	out[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	if (body) {
		snprintf(token, sizeof(token), "X-Fencing-Token: %llu", (unsigned long long)epoch);
		hdrs = curl_slist_append(hdrs, token);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return status;
}

int main(int argc, char **argv)
{
	const char *gate = getenv("FENCEGATE") ? getenv("FENCEGATE") : "http://127.0.0.1:8080";
	struct fence_options o = { .holder = "example-worker-c", .ttl_ms = 30000,
				   .endpoint = gate };
	char store[300], url[600], old[32], new[32], err[512];
	struct fence_lock *fl;
	enum fence_result rc;
	uint64_t epoch;
	long st;
	int code = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: worker BUCKET KEY\n");
		return 2;
	}
	snprintf(store, sizeof(store), "s3://%s", argv[1]);
	snprintf(url, sizeof(url), "%s/%s/%s", gate, argv[1], argv[2]);
	if (!(fl = fence_open(store, argv[1], &o, err, sizeof(err)))) {
		fprintf(stderr, "worker: %s\n", err);
		return 1;
	}
	rc = fence_acquire(fl, &epoch, err, sizeof(err));
	if (rc != FENCE_OK) {
		fprintf(stderr, "worker: %s\n", err);
		code = rc == FENCE_HELD ? 3 : 1;
		goto out;
	}
	if (fence_keep(fl, NULL, NULL, err, sizeof(err)) != FENCE_OK) {
		fprintf(stderr, "worker: %s\n", err);
		goto out;
	}
	st = http(url, NULL, 0, old);
	if (st != 200 && st != 404) {
		fprintf(stderr, "worker: GET %s answered %ld\n", url, st);
		goto out;
	}
	snprintf(new, sizeof(new), "%lld", (st == 200 ? atoll(old) : 0) + 1);
	if (fence_lease_left_ms(fl) < WRITE_NEEDS_MS) {
		fprintf(stderr, "worker: the lease is (nearly) over; not writing\n");
		goto out;
	}
	st = http(url, new, epoch, old);
	if (st != 200) {
		fprintf(stderr, "worker: PUT %s answered %ld%s\n", url, st,
			st == 409 ? " (our epoch is stale: someone else took the lock)" : "");
		goto out;
	}
	if (fence_release(fl, err, sizeof(err)) != FENCE_OK) {
		fprintf(stderr, "worker: %s\n", err);
		goto out;
	}
	printf("%s\n", new);
	code = 0;
out:
	fence_close(fl);
	return code;
}
