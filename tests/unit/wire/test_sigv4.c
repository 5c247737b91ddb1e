/* test_sigv4.c — wire/sigv4 against every published vector in
 * tests/testdata/sigv4 (override with FENCE_SIGV4_TESTDATA): the classic
 * aws4_testsuite, the aws-c-auth aws-signing-test-suite/v4 (header and
 * presigned variants), and the worked S3 examples (header, presigned,
 * aws-chunked chunk and trailer signatures). One test per vector, named
 * after it, checking every intermediate step (the hand-written rules the
 * vectors do not cover are in test_sigv4_rules.c). A missing testdata
 * directory fails the run. */
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "sigv4_test.h"

#define TESTDATA_DEFAULT "tests/testdata/sigv4"
#define MAX_VECTORS 256

/* Credentials and constants of aws4_testsuite (its README). */
#define AWS4_ACCESS_KEY "AKIDEXAMPLE"
#define AWS4_SECRET_KEY "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define AWS4_REGION     "us-east-1"
#define AWS4_SERVICE    "service"
#define AWS4_TOKEN      "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"

/* The vector counts the README promises: fewer means data went missing. */
#define AWS4_EXPECTED   34
#define V4_EXPECTED     38
#define S3DOC_EXPECTED  7

enum suite { SUITE_AWS4, SUITE_V4, SUITE_S3DOC, SUITE_COUNT };

static const char *const suite_names[SUITE_COUNT] = {
	"aws4_testsuite", "aws-signing-test-suite/v4", "s3-doc-examples"
};

struct vector {
	enum suite suite;
	char name[PATH_MAX];  /* test name: suite-relative path or case name */
	char dir[PATH_MAX];   /* the vector's directory (not for s3-doc) */
	const cJSON *s3case;  /* s3-doc only */
};

static char testdata[PATH_MAX];
static struct vector vectors[MAX_VECTORS];
static size_t nvectors;
static unsigned found[SUITE_COUNT];
static unsigned ran[SUITE_COUNT];
static char discovery_error[PATH_MAX * 3];
static cJSON *s3doc;

/* The Authorization value of a signed-request file, trimmed, malloc'd. */
static char *signed_request_authorization(const char *path)
{
	struct http_req r;
	const char *v;
	char *out;

	parse_request_file(path, &r);
	v = http_req_header(&r, "Authorization");
	if (!v)
		fail_msg("%s: no Authorization header", path);
	out = strdup(v);
	trim_inplace(out);
	http_req_free(&r);
	return out;
}

/* The canonical form of a wire query, via a throwaway canonical request. */
static char *canonical_query_of(const char *query)
{
	struct sigv4_request req = {
		.method = "GET", .path = "/", .query = query,
		.payload_hash = SIGV4_UNSIGNED, .s3 = 1,
	};
	char *creq = NULL, *signed_list = NULL, *line;

	assert_int_equal(sigv4_canonical_request(&req, &creq, &signed_list), 0);
	line = nth_line(creq, 2);
	free(creq);
	free(signed_list);
	return line;
}

/* ---- shared signing checks ---------------------------------------------- */

struct expected {
	const char *creq;
	const char *sts;
	const char *signature;
	const char *authz;  /* NULL: not checked here */
};

/* Steps 1-4 for header auth, each checked against the vector. */
static void check_header_signing(const struct sigv4_request *req,
				 const struct sigv4_credentials *cred,
				 const char *region, const char *service,
				 const char *amz_date, const struct expected *want)
{
	char *creq = NULL, *signed_list = NULL, *scope, *sts, *authz;
	char *want_signed;
	unsigned char key[32];
	char sig[65];

	assert_int_equal(sigv4_canonical_request(req, &creq, &signed_list), 0);
	assert_string_equal(creq, want->creq);
	/* the signed-header list is the creq's next-to-last line */
	{
		const char *last_nl = strrchr(want->creq, '\n');
		const char *prev_nl;

		assert_non_null(last_nl);
		prev_nl = last_nl - 1;
		while (prev_nl > want->creq && *prev_nl != '\n')
			prev_nl--;
		want_signed = strndup(prev_nl + 1, (size_t)(last_nl - prev_nl - 1));
		assert_string_equal(signed_list, want_signed);
		free(want_signed);
	}
	scope = sigv4_scope(amz_date, region, service);
	assert_non_null(scope);
	sts = sigv4_string_to_sign(amz_date, scope, creq);
	assert_non_null(sts);
	assert_string_equal(sts, want->sts);
	sigv4_signing_key(cred->secret_key, amz_date, region, service, key);
	sigv4_signature(key, sts, sig);
	assert_string_equal(sig, want->signature);
	assert_true(sigv4_signature_equal(sig, want->signature));
	if (want->authz) {
		struct sigv4_signer *signer = sigv4_signer_new(cred, region, service);
		char buf[2048];
		int round;

		authz = sigv4_authorization(req, cred, region, service, amz_date);
		assert_non_null(authz);
		assert_string_equal(authz, want->authz);
		free(authz);
		/* the signer: the day's key derived at the first call, then kept */
		assert_non_null(signer);
		for (round = 0; round < 2; round++) {
			assert_int_equal(sigv4_signer_authorization(signer, req, amz_date, buf,
								    sizeof(buf)),
					 strlen(want->authz));
			assert_string_equal(buf, want->authz);
		}
		sigv4_signer_free(signer);
	}
	free(creq);
	free(signed_list);
	free(scope);
	free(sts);
}

/* Presigned query: the returned query minus X-Amz-Signature must be the
 * vector's canonical query, the signature the vector's; then the creq, sts
 * and signature are recomputed from it step by step. Returns the query
 * (malloc'd) for wire-form checks. */
static char *check_presign(const struct sigv4_request *req,
			   const struct sigv4_credentials *cred,
			   const char *region, const char *service,
			   const char *amz_date, long expires,
			   const struct expected *want)
{
	struct sigv4_request step = *req;
	char *query, *sig_param, *unsigned_query, *want_query;
	char *creq = NULL, *signed_list = NULL, *scope, *sts;
	unsigned char key[32];
	char sig[65];

	query = sigv4_presign_query(req, cred, region, service, amz_date, expires);
	assert_non_null(query);
	sig_param = strstr(query, "X-Amz-Signature=");
	assert_non_null(sig_param);
	assert_string_equal(sig_param + strlen("X-Amz-Signature="), want->signature);
	unsigned_query = strndup(query, (size_t)(sig_param - query));
	if (*unsigned_query)
		unsigned_query[strlen(unsigned_query) - 1] = '\0'; /* the '&' */
	want_query = nth_line(want->creq, 2);
	assert_string_equal(unsigned_query, want_query);

	step.query = unsigned_query;
	assert_int_equal(sigv4_canonical_request(&step, &creq, &signed_list), 0);
	assert_string_equal(creq, want->creq);
	scope = sigv4_scope(amz_date, region, service);
	sts = sigv4_string_to_sign(amz_date, scope, creq);
	assert_non_null(sts);
	assert_string_equal(sts, want->sts);
	sigv4_signing_key(cred->secret_key, amz_date, region, service, key);
	sigv4_signature(key, sts, sig);
	assert_string_equal(sig, want->signature);

	free(unsigned_query);
	free(want_query);
	free(creq);
	free(signed_list);
	free(scope);
	free(sts);
	return query;
}

/* ---- suite 1: aws4_testsuite ---------------------------------------------- */

static void test_aws4_vector(void **state)
{
	const struct vector *v = *state;
	const char *base = strrchr(v->dir, '/') + 1;
	char file[PATH_MAX * 2], ext[PATH_MAX];
	struct http_req r;
	struct sigv4_credentials cred = { AWS4_ACCESS_KEY, AWS4_SECRET_KEY, NULL };
	struct sigv4_request req = { 0 };
	struct expected want;
	char *creq, *sts, *authz, *sreq_authz, *want_sig;
	const char *amz_date;
	char payload_hash[65];
	int normalizing = strstr(v->name, "normalize-path/") != NULL;
	int s3;

	snprintf(file, sizeof(file), "%s/%s.req", v->dir, base);
	parse_request_file(file, &r);
	if (strcmp(base, "get-vanilla-with-session-token") == 0) {
		/* the .req omits the token its .creq signs (README) */
		http_req_add_header(&r, "X-Amz-Security-Token", AWS4_TOKEN);
		cred.session_token = AWS4_TOKEN;
	}
	amz_date = http_req_header(&r, "X-Amz-Date");
	assert_non_null(amz_date);
	sigv4_sha256_hex(r.body, r.bodylen, payload_hash);

	snprintf(ext, sizeof(ext), "%s.creq", base);
	creq = expect_file(v->dir, ext);
	snprintf(ext, sizeof(ext), "%s.sts", base);
	sts = expect_file(v->dir, ext);
	snprintf(ext, sizeof(ext), "%s.authz", base);
	authz = expect_file(v->dir, ext);
	want_sig = strstr(authz, "Signature=");
	assert_non_null(want_sig);
	want = (struct expected){ creq, sts, want_sig + strlen("Signature="), authz };

	req.method = r.method;
	req.path = r.path;
	req.query = r.query;
	req.headers = r.headers;
	req.nheaders = r.nheaders;
	req.payload_hash = payload_hash;
	/* The suite signs for a generic service (normalized, double-encoded);
	 * outside normalize-path/ the S3 rules must give the same answer. */
	for (s3 = 0; s3 <= (normalizing ? 0 : 1); s3++) {
		req.s3 = s3;
		check_header_signing(&req, &cred, AWS4_REGION, AWS4_SERVICE,
				     amz_date, &want);
	}

	/* .sreq carries the Authorization header; get-vanilla-with-session-token's
	 * is a known upstream copy of get-vanilla's (README), so skip that one. */
	if (strcmp(base, "get-vanilla-with-session-token") != 0) {
		snprintf(file, sizeof(file), "%s/%s.sreq", v->dir, base);
		sreq_authz = signed_request_authorization(file);
		assert_string_equal(sreq_authz, authz);
		free(sreq_authz);
	}

	free(creq);
	free(sts);
	free(authz);
	http_req_free(&r);
	ran[SUITE_AWS4]++;
}

/* ---- suite 2: aws-signing-test-suite/v4 ----------------------------------- */

static const char *json_string(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsString(item))
		fail_msg("json: \"%s\" missing or not a string", key);
	return item->valuestring;
}

static int json_bool(const cJSON *obj, const char *key, int dflt)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	return item ? cJSON_IsTrue(item) : dflt;
}

static void test_v4_vector(void **state)
{
	const struct vector *v = *state;
	char file[PATH_MAX * 2], amz_date[17], payload_hash[65];
	char *context_text, *creq, *sts, *sig, *authz, *query;
	char *their_query, *mine, *theirs, *with_token = NULL;
	char *token_enc;
	cJSON *context;
	const cJSON *creds;
	const char *region, *service, *token = NULL;
	struct http_req r, signed_req;
	struct sigv4_credentials cred = { 0 };
	struct sigv4_request req = { 0 };
	struct expected want;
	struct tm tm = { 0 };
	long expires;
	int normalize, sign_body, omit_token;

	context_text = expect_file(v->dir, "context.json");
	context = cJSON_Parse(context_text);
	if (!context)
		fail_msg("%s/context.json: bad json", v->dir);
	creds = cJSON_GetObjectItemCaseSensitive(context, "credentials");
	assert_non_null(creds);
	cred.access_key = json_string(creds, "access_key_id");
	cred.secret_key = json_string(creds, "secret_access_key");
	if (cJSON_GetObjectItemCaseSensitive(creds, "token"))
		token = json_string(creds, "token");
	region = json_string(context, "region");
	service = json_string(context, "service");
	normalize = json_bool(context, "normalize", 1);
	sign_body = json_bool(context, "sign_body", 0);
	omit_token = json_bool(context, "omit_session_token", 0);
	expires = (long)cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(context, "expiration_in_seconds"));
	if (!strptime(json_string(context, "timestamp"), "%Y-%m-%dT%H:%M:%SZ", &tm))
		fail_msg("%s: bad timestamp", v->dir);
	sigv4_amz_date(timegm(&tm), amz_date);

	snprintf(file, sizeof(file), "%s/request.txt", v->dir);
	parse_request_file(file, &r);
	sigv4_sha256_hex(r.body, r.bodylen, payload_hash);
	req.method = r.method;
	req.path = r.path;
	req.query = r.query;
	req.payload_hash = payload_hash;
	req.s3 = !normalize;

	/* header variant: the signer adds X-Amz-Date, x-amz-content-sha256 when
	 * signing the body, and the token unless it is added after signing */
	{
		struct http_req hr = r;

		http_req_add_header(&hr, "X-Amz-Date", amz_date);
		if (sign_body)
			http_req_add_header(&hr, "x-amz-content-sha256", payload_hash);
		if (token && !omit_token) {
			http_req_add_header(&hr, "X-Amz-Security-Token", token);
			cred.session_token = token;
		}
		req.headers = hr.headers;
		req.nheaders = hr.nheaders;
		creq = expect_file(v->dir, "header-canonical-request.txt");
		sts = expect_file(v->dir, "header-string-to-sign.txt");
		sig = expect_file(v->dir, "header-signature.txt");
		snprintf(file, sizeof(file), "%s/header-signed-request.txt", v->dir);
		authz = signed_request_authorization(file);
		want = (struct expected){ creq, sts, sig, authz };
		check_header_signing(&req, &cred, region, service, amz_date, &want);
		free(creq);
		free(sts);
		free(sig);
		free(authz);
	}

	/* query variant: the request's own headers; the token goes into the
	 * signed query unless omitted, then it is appended after signing */
	req.headers = r.headers;
	req.nheaders = r.nheaders;
	cred.session_token = token && !omit_token ? token : NULL;
	creq = expect_file(v->dir, "query-canonical-request.txt");
	sts = expect_file(v->dir, "query-string-to-sign.txt");
	sig = expect_file(v->dir, "query-signature.txt");
	want = (struct expected){ creq, sts, sig, NULL };
	query = check_presign(&req, &cred, region, service, amz_date, expires, &want);

	/* the presigned request line carries the same parameters */
	snprintf(file, sizeof(file), "%s/query-signed-request.txt", v->dir);
	parse_request_file(file, &signed_req);
	assert_non_null(signed_req.query);
	if (token && omit_token) {
		token_enc = sigv4_uri_encode(token, strlen(token), 1);
		assert_non_null(token_enc);
		assert_true(asprintf(&with_token, "%s&X-Amz-Security-Token=%s",
				     query, token_enc) > 0);
		free(token_enc);
	}
	their_query = signed_req.query;
	mine = canonical_query_of(with_token ? with_token : query);
	theirs = canonical_query_of(their_query);
	assert_string_equal(mine, theirs);

	free(mine);
	free(theirs);
	free(with_token);
	free(query);
	free(creq);
	free(sts);
	free(sig);
	http_req_free(&signed_req);
	http_req_free(&r);
	cJSON_Delete(context);
	free(context_text);
	ran[SUITE_V4]++;
}

/* ---- suite 3: s3-doc-examples.json ---------------------------------------- */

/* The doc prints "Credential=...,SignedHeaders=...,Signature=..."; we emit
 * the equally valid ", " separators of the other suites. */
static char *authz_without_spaces(const char *authz)
{
	char *out = strdup(authz), *w = out;
	const char *p;

	for (p = authz; *p; p++) {
		if (*p == ' ' && p > authz && p[-1] == ',')
			continue;
		*w++ = *p;
	}
	*w = '\0';
	return out;
}

static void check_chunks(const cJSON *c, const unsigned char key[32],
			 const char *amz_date, const char *scope,
			 const char *seed, long content_length)
{
	const cJSON *chunks = cJSON_GetObjectItemCaseSensitive(c, "chunks");
	const cJSON *chunk, *trailer;
	char prev[65], sig[65], hash[65];
	long framed = 0;

	assert_true(cJSON_IsArray(chunks));
	snprintf(prev, sizeof(prev), "%s", seed);
	cJSON_ArrayForEach(chunk, chunks) {
		size_t size = (size_t)cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(chunk, "size"));
		const char *byte = json_string(chunk, "byte");
		const cJSON *want_hash = cJSON_GetObjectItemCaseSensitive(
			chunk, "string_to_sign_data_sha256");
		char *data = malloc(size + 1), *header_line = NULL;

		assert_non_null(data);
		memset(data, byte[0], size);
		sigv4_sha256_hex(data, size, hash);
		free(data);
		if (want_hash)
			assert_string_equal(hash, want_hash->valuestring);
		sigv4_chunk_signature(key, amz_date, scope, prev, hash, sig);
		assert_string_equal(sig, json_string(chunk, "signature"));
		assert_true(asprintf(&header_line, "%zx;chunk-signature=%s", size,
				     sig) > 0);
		assert_string_equal(header_line, json_string(chunk, "chunk_header_line"));
		framed += (long)(strlen(header_line) + 2 + size + 2);
		free(header_line);
		snprintf(prev, sizeof(prev), "%s", sig);
	}
	trailer = cJSON_GetObjectItemCaseSensitive(c, "trailer");
	if (trailer) {
		const char *canonical = json_string(trailer, "canonical_trailer");

		sigv4_sha256_hex(canonical, strlen(canonical), hash);
		sigv4_trailer_signature(key, amz_date, scope, prev, hash, sig);
		assert_string_equal(sig, json_string(trailer, "signature"));
	} else if (content_length >= 0) {
		/* the framing adds up to the signed Content-Length */
		assert_int_equal(framed, content_length);
	}
}

static void test_s3doc_vector(void **state)
{
	const struct vector *v = *state;
	const cJSON *c = v->s3case, *item, *creds;
	const char *amz_date, *region, *service, *kind;
	struct sigv4_header headers[MAX_HEADERS];
	struct sigv4_request req = { 0 };
	struct sigv4_credentials cred = { 0 };
	struct expected want;
	char *query = NULL, *authz = NULL, *q;
	char hash[65];
	size_t n = 0;
	long content_length = -1;

	creds = cJSON_GetObjectItemCaseSensitive(s3doc, "credentials");
	cred.access_key = json_string(creds, "access_key_id");
	cred.secret_key = json_string(creds, "secret_access_key");
	amz_date = json_string(s3doc, "x-amz-date");
	region = json_string(s3doc, "region");
	service = json_string(s3doc, "service");
	kind = json_string(c, "kind");

	req.method = json_string(c, "method");
	req.path = json_string(c, "path");
	req.s3 = 1;
	if (strcmp(kind, "presigned") == 0) {
		const cJSON *params = cJSON_GetObjectItemCaseSensitive(
			c, "query_without_signature");
		const char *url = json_string(c, "url");
		char *presigned;

		headers[n].name = "Host";
		headers[n++].value = json_string(c, "host");
		req.headers = headers;
		req.nheaders = n;
		req.payload_hash = SIGV4_UNSIGNED;
		want = (struct expected){ json_string(c, "canonical_request"),
					  json_string(c, "string_to_sign"),
					  json_string(c, "signature"), NULL };
		presigned = check_presign(&req, &cred, region, service, amz_date,
					  atol(json_string(params, "X-Amz-Expires")),
					  &want);
		/* the doc's URL lists the parameters in sorted order too */
		q = strchr(url, '?');
		assert_non_null(q);
		assert_string_equal(presigned, q + 1);
		sigv4_sha256_hex(want.creq, strlen(want.creq), hash);
		assert_string_equal(hash, json_string(c, "canonical_request_sha256"));
		free(presigned);
		ran[SUITE_S3DOC]++;
		return;
	}

	/* header kind: the wire query from the [name, value] pairs */
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(c, "query")) {
		const char *name = cJSON_GetArrayItem(item, 0)->valuestring;
		const char *value = cJSON_GetArrayItem(item, 1)->valuestring;
		char *grown = NULL;

		/* a valueless parameter is sent bare, as in "GET /?lifecycle" */
		assert_true(asprintf(&grown, "%s%s%s%s%s", query ? query : "",
				     query ? "&" : "", name, *value ? "=" : "",
				     value) > 0);
		free(query);
		query = grown;
	}
	req.query = query;
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(c, "signed_headers")) {
		assert_true(n < MAX_HEADERS);
		headers[n].name = item->string;
		headers[n++].value = item->valuestring;
		if (strcmp(item->string, "content-length") == 0)
			content_length = atol(item->valuestring);
	}
	req.headers = headers;
	req.nheaders = n;
	req.payload_hash = json_string(c, "x-amz-content-sha256");
	if (cJSON_GetObjectItemCaseSensitive(c, "body")) {
		const char *body = json_string(c, "body");

		sigv4_sha256_hex(body, strlen(body), hash);
		assert_string_equal(hash, req.payload_hash);
	}

	authz = sigv4_authorization(&req, &cred, region, service, amz_date);
	assert_non_null(authz);
	{
		char *compact = authz_without_spaces(authz);

		assert_string_equal(compact, json_string(c, "authorization"));
		free(compact);
	}
	want = (struct expected){ json_string(c, "canonical_request"),
				  json_string(c, "string_to_sign"),
				  json_string(c, "signature"), NULL };
	check_header_signing(&req, &cred, region, service, amz_date, &want);
	sigv4_sha256_hex(want.creq, strlen(want.creq), hash);
	assert_string_equal(hash, json_string(c, "canonical_request_sha256"));
	{
		char *creq = NULL, *signed_list = NULL;

		assert_int_equal(sigv4_canonical_request(&req, &creq, &signed_list), 0);
		assert_string_equal(signed_list, json_string(c, "signed_headers_list"));
		free(creq);
		free(signed_list);
	}

	if (cJSON_GetObjectItemCaseSensitive(c, "chunks")) {
		unsigned char key[32];
		char *scope = sigv4_scope(amz_date, region, service);

		assert_string_equal(scope, json_string(s3doc, "scope"));
		assert_string_equal(json_string(c, "seed_signature"), want.signature);
		sigv4_signing_key(cred.secret_key, amz_date, region, service, key);
		check_chunks(c, key, amz_date, scope, want.signature, content_length);
		free(scope);
	}
	free(authz);
	free(query);
	ran[SUITE_S3DOC]++;
}

/* ---- discovery and bookkeeping ------------------------------------------- */

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted subdirectory names of dir (malloc'd array of malloc'd names). */
static size_t list_subdirs(const char *dir, char ***out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;

	*out = NULL;
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char path[PATH_MAX * 2];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!is_dir(path))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), name_cmp);
	*out = names;
	return n;
}

static void add_vector(enum suite suite, const char *name, const char *dir,
		       const cJSON *s3case)
{
	struct vector *v;

	if (nvectors >= MAX_VECTORS) {
		snprintf(discovery_error, sizeof(discovery_error),
			 "more than %d vectors", MAX_VECTORS);
		return;
	}
	v = &vectors[nvectors++];
	v->suite = suite;
	snprintf(v->name, sizeof(v->name), "%s/%s", suite_names[suite], name);
	snprintf(v->dir, sizeof(v->dir), "%s", dir ? dir : "");
	v->s3case = s3case;
	found[suite]++;
}

/* aws4_testsuite: a directory D holding D/<basename>.req is a case; any
 * other directory is a folder of cases (normalize-path/, post-sts-token/). */
static void discover_aws4(const char *dir, const char *rel, int depth)
{
	char **subdirs;
	size_t n, i;

	n = list_subdirs(dir, &subdirs);
	for (i = 0; i < n; i++) {
		char path[PATH_MAX], req[PATH_MAX * 3], relname[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, subdirs[i]);
		snprintf(relname, sizeof(relname), "%s%s%s", rel, *rel ? "/" : "",
			 subdirs[i]);
		snprintf(req, sizeof(req), "%s/%s.req", path, subdirs[i]);
		if (is_file(req))
			add_vector(SUITE_AWS4, relname, path, NULL);
		else if (depth < 3)
			discover_aws4(path, relname, depth + 1);
		free(subdirs[i]);
	}
	free(subdirs);
}

static void discover(void)
{
	char path[PATH_MAX * 2], ctx[PATH_MAX * 3];
	char **subdirs;
	size_t n, i;
	char *json;
	const cJSON *c;
	const char *env = getenv("FENCE_SIGV4_TESTDATA");

	snprintf(testdata, sizeof(testdata), "%s", env && *env ? env : TESTDATA_DEFAULT);
	if (!is_dir(testdata)) {
		snprintf(discovery_error, sizeof(discovery_error),
			 "testdata directory '%s' is missing (run from the repo "
			 "root or set FENCE_SIGV4_TESTDATA)", testdata);
		return;
	}

	snprintf(path, sizeof(path), "%s/aws4_testsuite", testdata);
	discover_aws4(path, "", 0);

	snprintf(path, sizeof(path), "%s/aws-signing-test-suite/v4", testdata);
	n = list_subdirs(path, &subdirs);
	for (i = 0; i < n; i++) {
		snprintf(ctx, sizeof(ctx), "%s/%s/context.json", path, subdirs[i]);
		if (is_file(ctx)) {
			char dir[PATH_MAX * 3];

			snprintf(dir, sizeof(dir), "%s/%s", path, subdirs[i]);
			add_vector(SUITE_V4, subdirs[i], dir, NULL);
		}
		free(subdirs[i]);
	}
	free(subdirs);

	snprintf(path, sizeof(path), "%s/s3-doc-examples.json", testdata);
	json = slurp(path, NULL);
	if (json) {
		s3doc = cJSON_Parse(json);
		free(json);
	}
	if (!s3doc) {
		snprintf(discovery_error, sizeof(discovery_error),
			 "cannot read or parse %s", path);
		return;
	}
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(s3doc, "cases")) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");

		if (cJSON_IsString(name))
			add_vector(SUITE_S3DOC, name->valuestring, NULL, c);
	}
}

/* Runs first: the data is there, complete as the README describes. */
static void test_testdata_present(void **state)
{
	(void)state;
	if (discovery_error[0])
		fail_msg("%s", discovery_error);
	if (found[SUITE_AWS4] < AWS4_EXPECTED || found[SUITE_V4] < V4_EXPECTED ||
	    found[SUITE_S3DOC] < S3DOC_EXPECTED)
		fail_msg("found %u/%u/%u vectors in %s, expected at least %u/%u/%u",
			 found[SUITE_AWS4], found[SUITE_V4], found[SUITE_S3DOC],
			 testdata, AWS4_EXPECTED, V4_EXPECTED, S3DOC_EXPECTED);
}

/* Runs last: every discovered vector ran to the end. */
static void test_all_vectors_ran(void **state)
{
	unsigned total = 0;
	int i;

	(void)state;
	for (i = 0; i < SUITE_COUNT; i++)
		total += ran[i];
	printf("sigv4: %u vectors ran (%s %u, %s %u, %s %u) from %s\n", total,
	       suite_names[SUITE_AWS4], ran[SUITE_AWS4], suite_names[SUITE_V4],
	       ran[SUITE_V4], suite_names[SUITE_S3DOC], ran[SUITE_S3DOC], testdata);
	assert_true(total > 0);
	for (i = 0; i < SUITE_COUNT; i++)
		assert_int_equal(ran[i], found[i]);
}

int main(void)
{
	static struct CMUnitTest vector_tests[MAX_VECTORS + 2];
	size_t i, n = 0;
	int failures;

	discover();
	vector_tests[n++] = (struct CMUnitTest){ "testdata-present",
						 test_testdata_present, NULL,
						 NULL, NULL };
	for (i = 0; i < nvectors; i++) {
		static void (*const runners[SUITE_COUNT])(void **) = {
			test_aws4_vector, test_v4_vector, test_s3doc_vector
		};

		vector_tests[n++] = (struct CMUnitTest){ vectors[i].name,
							 runners[vectors[i].suite],
							 NULL, NULL, &vectors[i] };
	}
	vector_tests[n++] = (struct CMUnitTest){ "all-vectors-ran",
						 test_all_vectors_ran, NULL,
						 NULL, NULL };

	failures = _cmocka_run_group_tests("sigv4_vectors", vector_tests, n,
					   NULL, NULL);
	cJSON_Delete(s3doc);
	return failures ? 1 : 0;
}
