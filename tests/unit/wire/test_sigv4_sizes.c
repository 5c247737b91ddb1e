/* test_sigv4_sizes.c — sigv4_authorization (stack buffers, cached HMAC
 * states, the string to sign fed to the MAC piecewise) against an
 * independent reference, across the sizes where its buffers spill to the
 * heap or its key cache is bypassed: long paths, many or long headers, a
 * long signed-header list, long regions and services, secrets around and
 * beyond one HMAC block. The reference builds the canonical request with
 * sigv4_canonical_request and does the rest with OpenSSL's EVP digest and
 * HMAC() one-shots and snprintf. */
#include "sigv4_test.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define MAX_CASE_HEADERS 40

struct size_case {
	const char *name;
	size_t path_len;     /* 0: "/b/k" */
	size_t nheaders;     /* besides host */
	size_t hname_len;    /* length of each extra header's name */
	size_t value_len;    /* length of each extra header's value */
	size_t region_len;   /* 0: "us-east-1" */
	size_t service_len;  /* 0: "s3" */
	size_t secret_len;
};

static const struct size_case size_cases[] = {
	{ "typical", 0, 2, 12, 16, 0, 0, 40 },
	{ "long path", 3000, 2, 12, 16, 0, 0, 40 },
	{ "many headers", 0, 30, 14, 10, 0, 0, 40 },
	{ "long values", 0, 4, 12, 600, 0, 0, 40 },
	{ "long signed list", 0, 12, 40, 4, 0, 0, 40 },
	{ "long region and service", 0, 2, 12, 16, 80, 40, 40 },
	{ "secret fills a block", 0, 2, 12, 16, 0, 0, 60 },
	{ "secret over a block", 0, 2, 12, 16, 0, 0, 61 },
	{ "long secret", 0, 2, 12, 16, 0, 0, 200 },
};

/* n characters of a pattern starting at seed, NUL-terminated, malloc'd. */
static char *filled(size_t n, const char *alphabet, size_t seed)
{
	size_t k = strlen(alphabet), i;
	char *s = malloc(n + 1);

	assert_non_null(s);
	for (i = 0; i < n; i++)
		s[i] = alphabet[(seed + i) % k];
	s[n] = '\0';
	return s;
}

static void hex_of(const unsigned char *md, size_t n, char *hex)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
}

/* The Authorization value computed by the reference path, malloc'd. */
static char *reference_authorization(const struct sigv4_request *req,
				     const struct sigv4_credentials *cred,
				     const char *region, const char *service,
				     const char *amz_date)
{
	char *creq = NULL, *signed_list = NULL, *sts, *ksecret, *authz;
	unsigned char md[32], k1[32], k2[32], k3[32], key[32];
	unsigned int mdlen = 0;
	char hash[65], sig[65], scope[512];
	size_t len;

	assert_int_equal(sigv4_canonical_request(req, &creq, &signed_list), 0);
	assert_true(EVP_Digest(creq, strlen(creq), md, &mdlen, EVP_sha256(), NULL));
	hex_of(md, 32, hash);
	snprintf(scope, sizeof(scope), "%.8s/%s/%s/aws4_request", amz_date,
		 region, service);
	len = strlen(amz_date) + strlen(scope) + 100;
	sts = malloc(len);
	assert_non_null(sts);
	snprintf(sts, len, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, scope, hash);
	len = strlen(cred->secret_key) + 5;
	ksecret = malloc(len);
	assert_non_null(ksecret);
	snprintf(ksecret, len, "AWS4%s", cred->secret_key);
	assert_non_null(HMAC(EVP_sha256(), ksecret, (int)strlen(ksecret),
			     (const unsigned char *)amz_date, 8, k1, NULL));
	assert_non_null(HMAC(EVP_sha256(), k1, 32, (const unsigned char *)region,
			     strlen(region), k2, NULL));
	assert_non_null(HMAC(EVP_sha256(), k2, 32, (const unsigned char *)service,
			     strlen(service), k3, NULL));
	assert_non_null(HMAC(EVP_sha256(), k3, 32,
			     (const unsigned char *)"aws4_request", 12, key, NULL));
	assert_non_null(HMAC(EVP_sha256(), key, 32, (const unsigned char *)sts,
			     strlen(sts), md, NULL));
	hex_of(md, 32, sig);
	len = strlen(cred->access_key) + strlen(scope) + strlen(signed_list) + 200;
	authz = malloc(len);
	assert_non_null(authz);
	snprintf(authz, len, "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
		 "Signature=%s", cred->access_key, scope, signed_list, sig);
	free(creq);
	free(signed_list);
	free(sts);
	free(ksecret);
	return authz;
}

static void check_case(const struct size_case *c)
{
	static const char *const dates[] = { "20150830T123600Z", "20150831T000001Z" };
	struct sigv4_header headers[MAX_CASE_HEADERS + 1];
	char *names[MAX_CASE_HEADERS], *values[MAX_CASE_HEADERS];
	char *path, *region, *service, *secret;
	struct sigv4_credentials cred;
	struct sigv4_request req;
	size_t i, d, round;

	assert_true(c->nheaders <= MAX_CASE_HEADERS);
	path = c->path_len ? filled(c->path_len, "/abc-%20~xyz09", 0) : strdup("/b/k");
	path[0] = '/';
	region = c->region_len ? filled(c->region_len, "abcdefgh-", 1) : strdup("us-east-1");
	service = c->service_len ? filled(c->service_len, "service", 2) : strdup("s3");
	secret = filled(c->secret_len, "ABCdef012/+xyzQRS", 3);
	headers[0] = (struct sigv4_header){ "Host", "example.com" };
	for (i = 0; i < c->nheaders; i++) {
		/* distinct names ("X-Amz-Meta-" + a counter), values with runs of
		 * spaces to collapse and a duplicate name every 5th header */
		names[i] = filled(c->hname_len, "abcdefghij", i);
		memcpy(names[i], "X-Amz-Meta-", c->hname_len < 11 ? c->hname_len : 11);
		if (c->hname_len > 13) {
			names[i][11] = (char)('a' + (i / 10) % 26);
			names[i][12] = (char)('0' + i % 10);
		}
		if (i % 5 == 4 && i > 0)
			memcpy(names[i], names[i - 1], c->hname_len);
		values[i] = filled(c->value_len, "v al  ue\t", i);
		headers[i + 1] = (struct sigv4_header){ names[i], values[i] };
	}
	req = (struct sigv4_request){
		.method = "PUT", .path = path, .query = "b=2&a=1",
		.headers = headers, .nheaders = c->nheaders + 1,
		.payload_hash = SIGV4_UNSIGNED, .s3 = 1,
	};
	cred = (struct sigv4_credentials){ "AKIDEXAMPLE", secret, NULL };
	/* each date twice: a key-cache miss, then a hit */
	for (d = 0; d < 2; d++) {
		for (round = 0; round < 2; round++) {
			char *want = reference_authorization(&req, &cred, region,
							     service, dates[d]);
			char *got = sigv4_authorization(&req, &cred, region, service,
							dates[d]);

			if (!got || strcmp(got, want) != 0)
				fail_msg("%s: got %s, want %s", c->name,
					 got ? got : "(null)", want);
			free(got);
			free(want);
		}
	}
	for (i = 0; i < c->nheaders; i++) {
		free(names[i]);
		free(values[i]);
	}
	free(path);
	free(region);
	free(service);
	free(secret);
}

static void test_sizes(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(size_cases) / sizeof(size_cases[0]); i++)
		check_case(&size_cases[i]);
}

int main(void)
{
	static const struct CMUnitTest size_tests[] = {
		cmocka_unit_test(test_sizes),
	};

	return cmocka_run_group_tests_name("sigv4_sizes", size_tests, NULL, NULL);
}
