/* test_sigv4_sizes.c — sigv4_authorization and struct sigv4_signer (stack
 * buffers, the per-thread and per-signer caches of derived keys with their
 * HMAC states, the string to sign fed to the MAC piecewise) against an
 * independent reference, across the sizes where its buffers spill to the
 * heap or its key cache is bypassed: long paths, many or long headers, a
 * long signed-header list, long regions and services, secrets around and
 * beyond one HMAC block. The reference builds the canonical request with
 * sigv4_canonical_request and does the rest with OpenSSL's EVP digest and
 * HMAC() one-shots and snprintf. The same answers must come from several
 * threads at once (each with a cache of its own) and across a change of
 * day. */
#include "sigv4_test.h"

#include <pthread.h>

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
	struct sigv4_signer *signer;
	size_t i, d;

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
	signer = sigv4_signer_new(&cred, region, service);
	assert_non_null(signer);
	/* each date twice (a key-cache miss, then a hit), then the first day
	 * again: the signer derives the key at each change of day */
	for (d = 0; d < 5; d++) {
		const char *date = dates[d / 2 % 2];
		char *want = reference_authorization(&req, &cred, region, service, date);
		char *got = sigv4_authorization(&req, &cred, region, service, date);
		size_t len = sigv4_signer_authorization(signer, &req, date, NULL, 0);
		char *sgot = malloc(len + 1);

		if (!got || strcmp(got, want) != 0)
			fail_msg("%s: got %s, want %s", c->name, got ? got : "(null)", want);
		assert_non_null(sgot);
		assert_int_equal(len, strlen(want));
		assert_int_equal(sigv4_signer_authorization(signer, &req, date, sgot, len), len);
		assert_string_equal(sgot, ""); /* one byte short: nothing written */
		assert_int_equal(sigv4_signer_authorization(signer, &req, date, sgot, len + 1),
				 len);
		if (strcmp(sgot, want) != 0)
			fail_msg("%s: signer got %s, want %s", c->name, sgot, want);
		free(sgot);
		free(got);
		free(want);
	}
	sigv4_signer_free(signer);
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

/* ---- several threads at once ------------------------------------------- */

#define SIGNERS 4
#define SIGN_ROUNDS 300

/* Requests that differ in secret, day, region and service: more than a
 * thread's cache holds, so its entries are replaced as the rounds go. */
struct thread_case {
	const char *secret, *date, *region, *service;
};

static const struct thread_case thread_cases[] = {
	{ "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830T123600Z", "us-east-1", "service" },
	{ "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830T123600Z", "us-east-1", "s3" },
	{ "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150831T000000Z", "us-east-1", "s3" },
	{ "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830T235959Z", "eu-west-1", "s3" },
	{ "another-secret", "20150830T123600Z", "us-east-1", "s3" },
	{ "another-secret", "20261205T235959Z", "us-east-1", "s3" },
	{ "test", "20261206T000000Z", "us-east-1", "s3" },
};
#define NCASES (sizeof(thread_cases) / sizeof(thread_cases[0]))

static const struct sigv4_header thread_headers[] = {
	{ "Host", "127.0.0.1:9000" }, { "x-amz-date", "set per case" },
	{ "x-amz-content-sha256", SIGV4_UNSIGNED },
};

struct signer_thread {
	char *want[NCASES];
	int wrong;
	pthread_barrier_t *start;
	size_t first;
};

static struct sigv4_request thread_request(struct sigv4_header h[3], const char *date)
{
	memcpy(h, thread_headers, sizeof(thread_headers));
	h[1].value = date;
	return (struct sigv4_request){ .method = "PUT", .path = "/bench/k/obj-0001",
				       .query = "", .headers = h, .nheaders = 3,
				       .payload_hash = SIGV4_UNSIGNED, .s3 = 1 };
}

static void *signer_run(void *arg)
{
	struct signer_thread *t = arg;
	struct sigv4_signer *signers[NCASES];
	char buf[512];
	size_t r, i;

	for (i = 0; i < NCASES; i++) {
		struct sigv4_credentials cred = { "AKIDEXAMPLE", thread_cases[i].secret, NULL };

		signers[i] = sigv4_signer_new(&cred, thread_cases[i].region,
					      thread_cases[i].service);
	}
	pthread_barrier_wait(t->start);
	for (r = 0; r < SIGN_ROUNDS; r++) {
		const struct thread_case *c;
		struct sigv4_header h[3];
		struct sigv4_request req;
		struct sigv4_credentials cred;
		char *got;

		i = (t->first + r * 3) % NCASES; /* each thread its own order */
		c = &thread_cases[i];
		req = thread_request(h, c->date);
		cred = (struct sigv4_credentials){ "AKIDEXAMPLE", c->secret, NULL };
		got = sigv4_authorization(&req, &cred, c->region, c->service, c->date);
		t->wrong += !got || strcmp(got, t->want[i]) != 0;
		free(got);
		t->wrong += !signers[i] ||
			    sigv4_signer_authorization(signers[i], &req, c->date, buf,
						       sizeof(buf)) != strlen(t->want[i]) ||
			    strcmp(buf, t->want[i]) != 0;
	}
	for (i = 0; i < NCASES; i++)
		sigv4_signer_free(signers[i]);
	return NULL;
}

static void test_threads(void **state)
{
	struct signer_thread t[SIGNERS];
	pthread_t th[SIGNERS];
	pthread_barrier_t start;
	char *want[NCASES];
	size_t i, k;

	(void)state;
	for (i = 0; i < NCASES; i++) {
		struct sigv4_header h[3];
		struct sigv4_request req = thread_request(h, thread_cases[i].date);
		struct sigv4_credentials cred = { "AKIDEXAMPLE", thread_cases[i].secret, NULL };

		want[i] = reference_authorization(&req, &cred, thread_cases[i].region,
						  thread_cases[i].service, thread_cases[i].date);
	}
	assert_int_equal(pthread_barrier_init(&start, NULL, SIGNERS), 0);
	for (k = 0; k < SIGNERS; k++) {
		memcpy(t[k].want, want, sizeof(want));
		t[k].wrong = 0;
		t[k].start = &start;
		t[k].first = k;
		assert_int_equal(pthread_create(&th[k], NULL, signer_run, &t[k]), 0);
	}
	for (k = 0; k < SIGNERS; k++) {
		pthread_join(th[k], NULL);
		assert_int_equal(t[k].wrong, 0);
	}
	pthread_barrier_destroy(&start);
	for (i = 0; i < NCASES; i++)
		free(want[i]);
}

int main(void)
{
	static const struct CMUnitTest size_tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests_name("sigv4_sizes", size_tests, NULL, NULL);
}
