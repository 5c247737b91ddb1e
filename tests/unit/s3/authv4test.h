/* authv4test.h — what test_auth.c and test_auth_refusals.c share beyond
 * authtest.h (the access keys, lookup(), NOW, the request under test):
 * sign() (wire/sigv4.c signing a request under test) and a typical signed
 * worker PUT at NOW. Test code only. */
#ifndef FENCE_TEST_AUTHV4TEST_H
#define FENCE_TEST_AUTHV4TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/auth.h"
#include "http/front.h"
#include "wire/sigv4.h"

#define NOW_DATE8     "20231114"
#define ZERO_SIG "0000000000000000000000000000000000000000000000000000000000000000"

/* ---- a request under test: authtest.h ------------------------------------- */

#include "authtest.h"

/* Signs r's current headers (all of them) as key/secret at amz_date and adds
 * the Authorization header. */
static inline void sign(struct treq *r, const char *key, const char *secret,
		 const char *amz_date, const char *payload)
{
	struct sigv4_header hs[32];
	struct sigv4_credentials cred = { key, secret, NULL };
	struct sigv4_request sreq;
	char *authz;
	size_t i;

	assert_true(r->h.n <= 32);
	for (i = 0; i < r->h.n; i++)
		hs[i] = (struct sigv4_header){ r->h.v[i].name, r->h.v[i].value };
	sreq = (struct sigv4_request){ r->method, r->path, r->query, hs, r->h.n,
				       payload, 1 };
	authz = sigv4_authorization(&sreq, &cred, "us-east-1", "s3", amz_date);
	assert_non_null(authz);
	add(r, "Authorization", authz);
	free(authz);
}

/* A typical signed PUT at NOW (worker key), unsigned payload. */
static inline void worker_put(struct treq *r)
{
	char date[17];

	memset(r, 0, sizeof(*r));
	r->method = "PUT";
	r->path = "/acme-billing/invoices/2023/a%20b%2Bc.json";
	r->query = "x-id=PutObject&tag=a%2Fb";
	sigv4_amz_date(NOW, date);
	add(r, "Host", "127.0.0.1:8080");
	add(r, "Content-Type", "application/json");
	add(r, "x-amz-date", date);
	add(r, "x-amz-content-sha256", SIGV4_UNSIGNED);
	add(r, "x-amz-meta-fencing-token", "7");
	add(r, "Content-Length", "12");
	sign(r, WORKER_KEY, WORKER_SECRET, date, SIGV4_UNSIGNED);
}
#endif
