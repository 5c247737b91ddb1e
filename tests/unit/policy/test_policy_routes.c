/* test_policy_routes.c — what a loaded configuration (policy/) decides:
 * longest-prefix routing (and what it would pick if case were ignored), permissions (including who may break a lock),
 * which lock a request takes, http mode, and decoding the request path. */
#include "policy_test.h"

static void test_longest_prefix(void **state)
{
	struct policy *p = parse_ok(
		"{\"locks\":[{\"name\":\"all\",\"store\":\"s3://bkt\"},"
		"{\"name\":\"inv\",\"store\":\"s3://bkt\"},{\"name\":\"y2024\",\"store\":\"s3://bkt\"},"
		"{\"name\":\"short\",\"store\":\"s3://bkt\"}],"
		"\"routes\":[{\"prefix\":\"/bkt/\",\"lock\":\"all\"},"
		"{\"prefix\":\"/bkt/invoices/2024/\",\"lock\":\"y2024\"},"
		"{\"prefix\":\"/bkt/invoices/\",\"lock\":\"inv\"},"
		"{\"prefix\":\"/bkt/inv\",\"lock\":\"short\"}]}");
	static const struct {
		const char *path, *lock;
	} cases[] = {
		{ "/bkt/invoices/2024/a.pdf", "y2024" },
		{ "/bkt/invoices/2024/", "y2024" },
		{ "/bkt/invoices/2024", "inv" },        /* not under "/bkt/invoices/2024/" */
		{ "/bkt/invoices/2023/a.pdf", "inv" },
		{ "/bkt/invoices/", "inv" },
		{ "/bkt/invoices", "all" },             /* "/bkt/invoices/" needs the slash */
		{ "/bkt/inv", "short" },
		{ "/bkt/inv/x", "short" },
		{ "/bkt/invx", "all" },                 /* segment boundary */
		{ "/bkt/reports/r", "all" },
		{ "/bkt/", "all" },
		{ "/bkt", NULL },
		{ "/bktx/a", NULL },
		{ "/other/a", NULL },
		{ "/", NULL },
		{ "", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct policy_route *r = policy_route_for(p, cases[i].path);

		if (!cases[i].lock) {
			if (r)
				fail_msg("%s: routed to %s", cases[i].path, r->lock_name);
			continue;
		}
		if (!r)
			fail_msg("%s: unrouted, want %s", cases[i].path, cases[i].lock);
		assert_string_equal(r->lock->name, cases[i].lock);
	}
	assert_null(policy_route_for(p, NULL));
	assert_null(policy_route_for(NULL, "/bkt/x"));
	assert_int_equal(policy_prefix_matches("/", "/anything"), 1);
	assert_int_equal(policy_prefix_matches("/a/b", "/a/bc"), 0);
	assert_int_equal(policy_prefix_matches("/a/b", "/a/b/c"), 1);
	assert_int_equal(policy_prefix_matches("/a/b", "/A/b/c"), 0);   /* case-sensitive */
	/* ignoring case: the route a downstream that folds case would apply */
	assert_string_equal(policy_route_for_nocase(p, "/BKT/Invoices/2024/x")->lock->name, "y2024");
	assert_string_equal(policy_route_for_nocase(p, "/bkt/INVOICES/x")->lock->name, "inv");
	assert_string_equal(policy_route_for(p, "/bkt/INVOICES/x")->lock->name, "all");
	assert_string_equal(policy_route_for_nocase(p, "/bkt/invoices/x")->lock->name, "inv");
	assert_null(policy_route_for_nocase(p, "/BKTX/a"));
	assert_null(policy_route_for(p, "/BKT/a"));
	assert_string_equal(policy_route_for_nocase(p, "/BKT/a")->lock->name, "all");
	assert_null(policy_route_for_nocase(NULL, "/bkt/x"));
	policy_free(p);
}

static const char perm_config[] =
	"{\"listen\":[\"0.0.0.0:8080\"],"
	"\"locks\":[{\"name\":\"inv\",\"store\":\"s3://bkt\"},{\"name\":\"rep\",\"store\":\"s3://bkt\"}],"
	"\"routes\":[{\"prefix\":\"/bkt/invoices/\",\"lock\":\"inv\"},"
	"{\"prefix\":\"/bkt/reports/\",\"lock\":\"rep\",\"anonymous_read\":true}],"
	"\"clients\":[{\"name\":\"writer\",\"access_key\":\"AKW\",\"secret_env\":\"WORKER1_SECRET\","
	"  \"allow\":[{\"prefix\":\"/bkt/invoices/\",\"actions\":[\"read\",\"write\",\"lock\"]},"
	"            {\"prefix\":\"/bkt/\",\"actions\":[\"read\"]},"
	"            {\"prefix\":\"/bkt/reports/2024/\",\"actions\":[\"write\",\"lock\"]}]},"
	" {\"name\":\"reader\",\"access_key\":\"AKR\",\"secret_env\":\"READER1_SECRET\","
	"  \"allow\":[{\"prefix\":\"/bkt\",\"actions\":[\"read\"]}]},"
	" {\"name\":\"nobody\",\"access_key\":\"AKN\",\"secret_env\":\"WORKER2_SECRET\"}]}";

/* "break" is its own action: granted by the same route-coverage rule as
 * "lock", never implied by it (nor by write or admin). */
static void test_break_permission(void **state)
{
	static const char config[] =
		"{\"listen\":[\"0.0.0.0:8080\"],"
		"\"locks\":[{\"name\":\"inv\",\"store\":\"s3://bkt\"}],"
		"\"routes\":[{\"prefix\":\"/bkt/invoices/\",\"lock\":\"inv\"}],"
		"\"unrouted_writes\":\"bucket_lock\","
		"\"clients\":["
		"{\"access_key\":\"AKLOCK\",\"secret_env\":\"WORKER1_SECRET\",\"allow\":["
		" {\"prefix\":\"/\",\"actions\":[\"read\",\"write\",\"lock\",\"admin\"]}]},"
		"{\"access_key\":\"AKBREAK\",\"secret_env\":\"WORKER1_SECRET\",\"allow\":["
		" {\"prefix\":\"/bkt/invoices/\",\"actions\":[\"read\",\"write\",\"lock\",\"break\"]},"
		" {\"prefix\":\"/other\",\"actions\":[\"lock\",\"break\"]}]},"
		"{\"access_key\":\"AKNARROW\",\"secret_env\":\"WORKER1_SECRET\",\"allow\":["
		" {\"prefix\":\"/bkt/invoices/2024/\",\"actions\":[\"lock\",\"break\"]}]}]}";
	static const struct {
		const char *key, *lock;
		int may_lock, may_break;
	} cases[] = {
		{ "AKLOCK", "inv", 1, 0 },      /* everything but break */
		{ "AKLOCK", "other", 1, 0 },    /* a bucket lock */
		{ "AKBREAK", "inv", 1, 1 },
		{ "AKBREAK", "other", 1, 1 },
		{ "AKBREAK", "bkt", 0, 0 },     /* bucket lock of /bkt: not covered */
		{ "AKNARROW", "inv", 0, 0 },    /* narrower than the route */
		{ "AKBREAK", "nosuch", 0, 0 },
		{ NULL, "inv", 1, 1 },          /* authentication off */
	};
	struct policy *p = parse_ok(config);

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct policy_client *c = cases[i].key ? policy_client_by_key(p, cases[i].key)
							     : NULL;

		assert_true(!cases[i].key || c);
		if (policy_client_may_lock(p, c, cases[i].lock) != cases[i].may_lock ||
		    policy_client_may_break(p, c, cases[i].lock) != cases[i].may_break)
			fail_msg("case %zu (%s on %s): lock %d break %d", i,
				 cases[i].key ? cases[i].key : "-", cases[i].lock,
				 policy_client_may_lock(p, c, cases[i].lock),
				 policy_client_may_break(p, c, cases[i].lock));
	}
	assert_true(policy_client_allows(policy_client_by_key(p, "AKBREAK"), "/bkt/invoices/x",
					 POLICY_ACT_BREAK));
	assert_false(policy_client_allows(policy_client_by_key(p, "AKLOCK"), "/bkt/invoices/x",
					  POLICY_ACT_BREAK));
	assert_false(policy_client_may_break(NULL, policy_client_by_key(p, "AKBREAK"), "inv"));
	assert_false(policy_client_may_break(p, policy_client_by_key(p, "AKBREAK"), NULL));
	policy_free(p);
}

static void test_permissions(void **state)
{
	struct policy *p = parse_ok(perm_config);
	const struct policy_client *w = policy_client_by_key(p, "AKW");
	const struct policy_client *r = policy_client_by_key(p, "AKR");
	const struct policy_client *n = policy_client_by_key(p, "AKN");

	(void)state;
	assert_non_null(w);
	assert_non_null(r);
	assert_non_null(n);
	assert_string_equal(w->name, "writer");
	assert_false(p->listen[0].loopback);
	/* union of matching entries */
	assert_true(policy_client_allows(w, "/bkt/invoices/a", POLICY_ACT_WRITE));
	assert_true(policy_client_allows(w, "/bkt/invoices/a", POLICY_ACT_READ | POLICY_ACT_WRITE));
	assert_true(policy_client_allows(w, "/bkt/other", POLICY_ACT_READ));
	assert_false(policy_client_allows(w, "/bkt/other", POLICY_ACT_WRITE));
	assert_false(policy_client_allows(w, "/bkt/other", POLICY_ACT_READ | POLICY_ACT_WRITE));
	assert_true(policy_client_allows(w, "/bkt/reports/2024/x", POLICY_ACT_READ | POLICY_ACT_WRITE));
	assert_false(policy_client_allows(w, "/bkt/reports/2023/x", POLICY_ACT_WRITE));
	assert_false(policy_client_allows(w, "/other/x", POLICY_ACT_READ));
	assert_false(policy_client_allows(w, "/bkt/invoices/a", 0));
	/* "/bkt" without slash covers the bucket itself and below, not "/bktx" */
	assert_true(policy_client_allows(r, "/bkt", POLICY_ACT_READ));
	assert_true(policy_client_allows(r, "/bkt/invoices/a", POLICY_ACT_READ));
	assert_false(policy_client_allows(r, "/bktx/a", POLICY_ACT_READ));
	assert_false(policy_client_allows(r, "/bkt/invoices/a", POLICY_ACT_WRITE));
	assert_false(policy_client_allows(n, "/bkt/invoices/a", POLICY_ACT_READ));
	/* authentication off */
	assert_true(policy_client_allows(NULL, "/anything", POLICY_ACT_WRITE));
	/* lock: the allow entry must cover a whole route of that lock */
	assert_true(policy_client_may_lock(p, w, "inv"));
	assert_false(policy_client_may_lock(p, w, "rep"));  /* only /bkt/reports/2024/ */
	assert_false(policy_client_may_lock(p, r, "inv"));
	assert_false(policy_client_may_lock(p, w, "nosuch"));
	assert_true(policy_client_may_lock(p, NULL, "inv"));
	assert_true(policy_route_for(p, "/bkt/reports/x")->anonymous_read);
	assert_false(policy_route_for(p, "/bkt/invoices/x")->anonymous_read);
	/* by key: exact, case-sensitive */
	assert_null(policy_client_by_key(p, "akw"));
	assert_null(policy_client_by_key(p, ""));
	assert_null(policy_client_by_key(p, NULL));
	assert_null(policy_client_by_token(p, "w1-secret", 9));  /* s3 mode: no tokens */
	policy_free(p);
}

/* Both modes' one rule for the lock of a write (policy_pick_lock). */
static void test_pick_lock(void **state)
{
	struct policy *p = parse_ok(
		"{\"mode\":\"http\",\"upstream\":{\"endpoint\":\"http://127.0.0.1:9000\"},"
		"\"lock_store\":\"file:///var/l\","
		"\"locks\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
		"\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"a\"},"
		"{\"prefix\":\"/open/\",\"lock\":\"a\",\"allow_lock_header\":true}]}");
	static const struct {
		const char *path, *named;
		enum policy_pick want;
		const char *lock;
	} rows[] = {
		{ "/a/x", NULL, POLICY_PICK_LOCK, "a" },
		{ "/a/x", "a", POLICY_PICK_LOCK, "a" },          /* naming the route's own */
		{ "/a/x", "b", POLICY_PICK_NAME_FORBIDDEN, NULL },
		{ "/open/x", "b", POLICY_PICK_LOCK, "b" },
		{ "/open/x", "zz", POLICY_PICK_NAME_UNKNOWN, NULL },
		{ "/open/x", NULL, POLICY_PICK_LOCK, "a" },
		{ "/elsewhere", NULL, POLICY_PICK_NO_ROUTE, NULL },
		{ "/elsewhere", "a", POLICY_PICK_NO_ROUTE, NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct policy_route *route;
		const struct policy_lock *lock;
		enum policy_pick got = policy_pick_lock(p, rows[i].path, rows[i].named, &route, &lock);

		if (got != rows[i].want || (rows[i].lock ? !lock || strcmp(lock->name, rows[i].lock)
							 : lock != NULL))
			fail_msg("%s named %s: got %d lock %s", rows[i].path,
				 rows[i].named ? rows[i].named : "-", (int)got, lock ? lock->name : "-");
		assert_true((route != NULL) == (got != POLICY_PICK_NO_ROUTE));
	}
	policy_free(p);
}

static void test_http_mode(void **state)
{
	struct policy *p = parse_ok(
		"{\"mode\":\"http\",\"upstream\":{\"endpoint\":\"http://127.0.0.1:9000/api\"},"
		"\"lock_store\":\"s3://acme-locks/fg\","
		"\"locks\":[{\"name\":\"ledger\"},{\"name\":\"other\",\"store\":\"file:///var/l\"}],"
		"\"routes\":[{\"prefix\":\"/ledger/\",\"lock\":\"ledger\",\"methods\":[\"POST\",\"GET\"],"
		"\"allow_lock_header\":true,\"strict\":true}],"
		"\"clients\":[{\"token_env\":\"LEDGER_TOKEN\",\"allow\":[{\"prefix\":\"/\",\"actions\":[\"read\"]}]},"
		"{\"name\":\"dash\",\"token_env\":\"DASHBOARD_TOKEN\"}]}");
	const struct policy_route *r;
	const struct policy_client *c;

	(void)state;
	assert_int_equal(p->mode, POLICY_MODE_HTTP);
	assert_null(p->data_dir);
	assert_string_equal(p->locks[0].store, "s3://acme-locks/fg");
	assert_string_equal(p->locks[0].prefix, "fg/locks/ledger/lock-");
	assert_string_equal(p->locks[1].prefix, "locks/other/lock-");
	r = policy_route_for(p, "/ledger/entries");
	assert_non_null(r);
	assert_int_equal(r->methods, METHOD_POST | METHOD_GET | METHOD_OTHER);
	assert_true(r->allow_lock_header);
	assert_true(r->strict);
	c = policy_client_by_token(p, "ledger-token", 12);
	assert_non_null(c);
	assert_string_equal(c->name, "clients[0]");
	assert_null(c->access_key);
	c = policy_client_by_token(p, "dashboard-token", 15);
	assert_non_null(c);
	assert_string_equal(c->name, "dash");
	assert_null(policy_client_by_token(p, "ledger-toke", 11));
	assert_null(policy_client_by_token(p, "ledger-token\n", 13));
	assert_null(policy_client_by_token(p, "", 0));
	assert_null(policy_client_by_key(p, "clients[0]"));
	policy_free(p);
}

static void test_path_decode(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(policy_path_decode("/b/%69nvoices/x", out, sizeof(out)), 0);
	assert_string_equal(out, "/b/invoices/x");
	assert_int_equal(policy_path_decode("/b/a%2Fb", out, sizeof(out)), 0);
	assert_string_equal(out, "/b/a/b");
	assert_int_equal(policy_path_decode("/b/a+b%20c", out, sizeof(out)), 0);
	assert_string_equal(out, "/b/a+b c");
	assert_int_equal(policy_path_decode("/", out, sizeof(out)), 0);
	assert_int_equal(policy_path_decode("/b/..x/", out, sizeof(out)), 0);
	assert_int_equal(policy_path_decode("/b/%00", out, sizeof(out)), -1);
	assert_int_equal(policy_path_decode("/b/%4", out, sizeof(out)), -1);
	assert_int_equal(policy_path_decode("/b/%zz", out, sizeof(out)), -1);
	assert_int_equal(policy_path_decode("/b/../x", out, sizeof(out)), -1);
	assert_int_equal(policy_path_decode("/b/%2E%2E/x", out, sizeof(out)), -1);
	assert_int_equal(policy_path_decode("/b/.", out, sizeof(out)), -1);
	assert_int_equal(policy_path_decode("b/x", out, sizeof(out)), -1);
	assert_int_equal(policy_path_decode("/0123456789", out, 11), -1);  /* too long */
	assert_int_equal(policy_path_decode("/012345678", out, 11), 0);
	assert_int_equal(policy_path_decode(NULL, out, sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_longest_prefix),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_break_permission),
		cmocka_unit_test(test_http_mode),
		cmocka_unit_test(test_path_decode),
		cmocka_unit_test(test_pick_lock),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
