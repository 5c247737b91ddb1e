/* store_s3_open.c — opening an S3 store: the region (config, AWS_REGION,
 * AWS_DEFAULT_REGION, us-east-1), the endpoint (config, AWS_ENDPOINT_URL_S3,
 * AWS_ENDPOINT_URL, else AWS's for the region), path-style or
 * virtual-hosted addressing (automatic: virtual-hosted only on
 * *.amazonaws.com for DNS-safe bucket names), AWS_CA_BUNDLE, credentials
 * (wire/awscreds.c) and the libcurl handle. It sends no request: the first
 * one is the caller's (store_s3.c does the sending). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "wire/awscreds.h"
#include "wire/sigv4.h"
#include "store.h"
#include "store_s3_int.h"

#define DEFAULT_TIMEOUT_MS 10000L
#define DEFAULT_RETRIES  4

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* A bucket name usable as a DNS label in front of the endpoint host. */
static int bucket_dns_ok(const char *b)
{
	size_t n = strlen(b);

	if (n < 3 || n > 63 || b[0] == '-' || b[n - 1] == '-')
		return 0;
	for (; *b; b++)
		if (!((*b >= 'a' && *b <= 'z') || (*b >= '0' && *b <= '9') || *b == '-'))
			return 0;
	return 1;
}

static int host_is_aws(const char *host)
{
	static const char suffix[] = ".amazonaws.com";
	size_t n = strlen(host), m = sizeof(suffix) - 1;

	return n > m && strcasecmp(host + n - m, suffix) == 0;
}

/* Splits the endpoint and fills host, origin and path_base. Returns 0, or -1
 * with err set. */
static int set_address(struct store_s3 *s, const char *endpoint, int path_style,
		       const char *bucket, char *err, size_t errlen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *epath = NULL, *ebucket = NULL;
	int rc = -1, default_port;
	size_t plen;

	if (!u) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (curl_url_set(u, CURLUPART_URL, endpoint, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		snprintf(err, errlen, "endpoint \"%s\" is not a URL (e.g. https://s3.eu-west-1.amazonaws.com)",
			 endpoint);
		goto out;
	}
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
		snprintf(err, errlen, "endpoint \"%s\": scheme must be http or https", endpoint);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
		port = NULL;
	if (curl_url_get(u, CURLUPART_PATH, &epath, 0) != CURLUE_OK)
		epath = NULL;
	plen = epath ? strlen(epath) : 0;
	while (plen && epath[plen - 1] == '/')
		epath[--plen] = '\0';

	if (path_style < 0) {
		/* auto: virtual-hosted only on AWS itself (the default endpoint
		 * is), and only for names that make a valid TLS host name */
		path_style = !host_is_aws(host) || !bucket_dns_ok(bucket);
	}
	default_port = port && ((strcmp(scheme, "https") == 0 && strcmp(port, "443") == 0) ||
				(strcmp(scheme, "http") == 0 && strcmp(port, "80") == 0));
	if (port && default_port) {
		curl_free(port);
		port = NULL;
	}
	if (asprintf(&s->host, "%s%s%s%s%s", path_style ? "" : bucket, path_style ? "" : ".",
		     host, port ? ":" : "", port ? port : "") < 0) {
		s->host = NULL;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (asprintf(&s->origin, "%s://%s", scheme, s->host) < 0) {
		s->origin = NULL;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (path_style) {
		ebucket = sigv4_uri_encode(bucket, strlen(bucket), 1);
		if (!ebucket || asprintf(&s->path_base, "%s/%s", epath ? epath : "", ebucket) < 0) {
			s->path_base = NULL;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	} else if (!(s->path_base = strdup(epath ? epath : ""))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(epath);
	free(ebucket);
	curl_url_cleanup(u);
	return rc;
}

struct store *store_s3_open(const struct store_config *cfg, const char *bucket,
			    char *err, size_t errlen)
{
	struct store_s3 *s = NULL;
	const char *dialect, *region, *endpoint, *ca;
	char *default_endpoint = NULL;
	size_t i;

	if (!bucket || !*bucket) {
		snprintf(err, errlen, "no bucket given");
		return NULL;
	}
	for (i = 0; bucket[i]; i++)
		if (bucket[i] == '/' || (unsigned char)bucket[i] <= 0x20 || (unsigned char)bucket[i] >= 0x7f) {
			snprintf(err, errlen, "bucket name \"%s\" is not valid", bucket);
			return NULL;
		}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base.ops = &store_s3_ops;
	s->base.ext = &store_s3_ext_ops;
	if (!(s->bucket = strdup(bucket))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s->time = cfg->time ? cfg->time : timesrc_system();
	s->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
	s->max_retries = cfg->max_retries == 0 ? DEFAULT_RETRIES :
			 cfg->max_retries < 0 ? 0 : cfg->max_retries;
	if (getrandom(&s->jitter_state, sizeof(s->jitter_state), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(s->jitter_state))
		s->jitter_state = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)s;

	dialect = cfg->dialect && *cfg->dialect ? cfg->dialect : env_nonempty("FENCE_S3_DIALECT");
	if (dialect && strcasecmp(dialect, "auto") != 0) {
		const struct dialect *d = dialect_find(dialect);

		if (!d) {
			snprintf(err, errlen, "unknown S3 dialect \"%.60s\" (auto, aws, ceph-rgw, "
				 "minio, r2, gcs-xml, ...)", dialect);
			goto fail;
		}
		s->base.etag_form = d->etag;
	}

	region = cfg->region && *cfg->region ? cfg->region : env_nonempty("AWS_REGION");
	if (!region)
		region = env_nonempty("AWS_DEFAULT_REGION");
	if (!region)
		region = "us-east-1";
	if (!store_s3_header_safe(region) || strchr(region, '/') || !(s->region = strdup(region))) {
		snprintf(err, errlen, "bad region \"%s\"", region);
		goto fail;
	}
	endpoint = cfg->endpoint && *cfg->endpoint ? cfg->endpoint : env_nonempty("AWS_ENDPOINT_URL_S3");
	if (!endpoint)
		endpoint = env_nonempty("AWS_ENDPOINT_URL");
	if (!endpoint) {
		if (asprintf(&default_endpoint, "https://s3.%s.amazonaws.com", region) < 0) {
			default_endpoint = NULL;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		endpoint = default_endpoint;
	}
	if (set_address(s, endpoint, cfg->path_style, bucket, err, errlen) < 0)
		goto fail;
	ca = env_nonempty("AWS_CA_BUNDLE");
	if (ca && !(s->ca_bundle = strdup(ca))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (aws_credentials_load(cfg->profile, &s->cred, err, errlen) < 0)
		goto fail;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl initialisation failed");
		goto fail;
	}
	s->curl = curl_easy_init();
	if (!s->curl) {
		curl_global_cleanup();
		snprintf(err, errlen, "libcurl initialisation failed");
		goto fail;
	}
	free(default_endpoint);
	return &s->base;
fail:
	free(default_endpoint);
	store_s3_close(&s->base);
	return NULL;
}
