/* test_policy.c — the configuration (policy/): DESIGN.md's sketch
 * and the example configs load, every refusal names its key path, defaults
 * match the table, the no-config default, and README.md documents every
 * key with its default. Routing and permissions are in test_policy_routes.c. */
#include "policy_test.h"

/* DESIGN.md "Config file", verbatim. */
static const char design_sketch[] =
"{\n"
"  \"listen\": [\"127.0.0.1:8080\"],\n"
"  \"tls\": {\"cert\": \"…\", \"key\": \"…\"},\n"
"  \"mode\": \"s3\",\n"
"  \"upstream\": {\"endpoint\": \"https://s3.eu-west-1.amazonaws.com\",\n"
"               \"region\": \"eu-west-1\", \"profile\": \"fencegate\"},\n"
"  \"locks\": [{\"name\": \"invoices\", \"store\": \"s3://acme-billing\",\n"
"             \"prefix\": \"locks/invoices/lock-\"}],\n"
"  \"routes\": [{\"prefix\": \"/acme-billing/invoices/\", \"lock\": \"invoices\",\n"
"              \"methods\": [\"PUT\", \"POST\", \"DELETE\"], \"strict\": false}],\n"
"  \"unrouted_writes\": \"reject\",\n"
"  \"clients\": [{\"access_key\": \"AKIAWORKER1\", \"secret_env\": \"WORKER1_SECRET\",\n"
"               \"allow\": [{\"prefix\": \"/acme-billing/invoices/\",\n"
"                          \"actions\": [\"read\", \"write\", \"lock\"]}]}],\n"
"  \"limits\": {\"header_bytes\": 16384, \"idle_timeout_ms\": 60000}\n"
"}\n";

static void test_design_sketch(void **state)
{
	struct policy *p = parse_ok(design_sketch);
	const struct policy_route *r;
	const struct policy_client *c;

	(void)state;
	assert_int_equal(p->nlisten, 1);
	assert_string_equal(p->listen[0].host, "127.0.0.1");
	assert_int_equal(p->listen[0].port, 8080);
	assert_true(p->listen[0].loopback);
	assert_true(p->tls.enabled);
	assert_string_equal(p->tls.cert, "…");
	assert_int_equal(p->tls.min_version, 12);
	assert_int_equal(p->mode, POLICY_MODE_S3);
	assert_string_equal(p->upstream.endpoint, "https://s3.eu-west-1.amazonaws.com");
	assert_string_equal(p->upstream.region, "eu-west-1");
	assert_string_equal(p->upstream.profile, "fencegate");
	assert_true(p->upstream.verify);
	assert_null(p->data_dir);
	assert_int_equal(p->nlocks, 1);
	assert_string_equal(p->locks[0].store, "s3://acme-billing");
	assert_string_equal(p->locks[0].prefix, "locks/invoices/lock-");
	r = policy_route_for(p, "/acme-billing/invoices/2024/inv-1.pdf");
	assert_non_null(r);
	assert_ptr_equal(r->lock, policy_lock_by_name(p, "invoices"));
	assert_int_equal(r->methods, METHOD_PUT | METHOD_POST | METHOD_DELETE | METHOD_OTHER);
	assert_false(r->strict);
	assert_int_equal(p->unrouted_writes, POLICY_UNROUTED_REJECT);
	c = policy_client_by_key(p, "AKIAWORKER1");
	assert_non_null(c);
	assert_string_equal(c->name, "AKIAWORKER1");
	assert_string_equal(c->secret, "w1-secret");
	assert_int_equal(c->secret_len, 9);
	assert_null(policy_client_by_key(p, "AKIAWORKER2"));
	assert_int_equal(p->limits.header_bytes, 16384);
	assert_int_equal(p->limits.idle_timeout_ms, 60000);
	assert_int_equal(p->limits.header_count, 100);      /* default */
	assert_int_equal(p->limits.refresh_interval_ms, 1000);
	policy_free(p);
}

static void test_defaults(void **state)
{
	struct policy *p = parse_ok("{}");
	struct policy_key_info info, *ki = &info;

	(void)state;
	assert_int_equal(p->nlisten, 1);
	assert_string_equal(p->listen[0].addr, "127.0.0.1:8080");
	assert_int_equal(p->mode, POLICY_MODE_S3);
	assert_false(p->tls.enabled);
	assert_int_equal(p->tls.min_version, 12);
	assert_null(p->upstream.endpoint);
	assert_string_equal(p->upstream.region, "us-east-1");
	assert_true(p->upstream.verify);
	assert_string_equal(p->data_dir, "./fencegate-data");
	assert_null(p->lock_store);
	assert_int_equal(p->nlocks + p->nroutes + p->nclients, 0);
	assert_int_equal(p->unrouted_writes, POLICY_UNROUTED_REJECT);
	assert_string_equal(p->log.level, "info");
	assert_string_equal(p->log.format, "json");
	assert_null(p->log.access_log);
	assert_null(p->log.error_log);
	/* every integer limit equals the table's default */
	for (size_t i = 0; policy_key_info(i, ki); i++) {
		static const struct { const char *key; size_t off; } lim[] = {
			{ "limits.header_bytes", offsetof(struct policy_limits, header_bytes) },
			{ "limits.header_count", offsetof(struct policy_limits, header_count) },
			{ "limits.url_bytes", offsetof(struct policy_limits, url_bytes) },
			{ "limits.idle_timeout_ms", offsetof(struct policy_limits, idle_timeout_ms) },
			{ "limits.header_timeout_ms", offsetof(struct policy_limits, header_timeout_ms) },
			{ "limits.body_timeout_ms", offsetof(struct policy_limits, body_timeout_ms) },
			{ "limits.body_min_rate", offsetof(struct policy_limits, body_min_rate) },
			{ "limits.send_timeout_ms", offsetof(struct policy_limits, send_timeout_ms) },
			{ "limits.max_connections", offsetof(struct policy_limits, max_connections) },
			{ "limits.replay_bytes", offsetof(struct policy_limits, replay_bytes) },
			{ "limits.upstream_connect_timeout_ms",
			  offsetof(struct policy_limits, upstream_connect_timeout_ms) },
			{ "limits.upstream_timeout_ms", offsetof(struct policy_limits, upstream_timeout_ms) },
			{ "limits.upstream_total_timeout_ms",
			  offsetof(struct policy_limits, upstream_total_timeout_ms) },
			{ "limits.drain_timeout_ms", offsetof(struct policy_limits, drain_timeout_ms) },
			{ "limits.refresh_interval_ms", offsetof(struct policy_limits, refresh_interval_ms) },
			{ "limits.objcache_entries", offsetof(struct policy_limits, objcache_entries) },
		};
		size_t j;

		if (strncmp(ki->path, "limits.", 7) != 0)
			continue;
		for (j = 0; j < sizeof(lim) / sizeof(lim[0]); j++)
			if (strcmp(lim[j].key, ki->path) == 0)
				break;
		if (j == sizeof(lim) / sizeof(lim[0]))
			fail_msg("limit %s not checked here", ki->path);
		assert_int_equal(*(const long long *)((const char *)&p->limits + lim[j].off),
				 strtoll(ki->def, NULL, 10));
	}
	assert_int_equal(p->limits.header_bytes, 16384);
	assert_int_equal(p->limits.header_timeout_ms, 10000);
	policy_free(p);
}

#define LOCK_INV "\"locks\":[{\"name\":\"inv\",\"store\":\"s3://bkt\"}]"
#define ROUTE_INV "\"routes\":[{\"prefix\":\"/bkt/inv/\",\"lock\":\"inv\"}]"
#define BASE LOCK_INV "," ROUTE_INV

struct bad_case {
	const char *json;
	const char *want;  /* substring of the error */
};

static const struct bad_case bad_cases[] = {
	/* syntax and shape */
	{ "{", "config: invalid JSON at line 1" },
	{ "{\n\"mode\": \"s3\",\n}", "config: invalid JSON at line 3" },
	{ "[]", "config: must be a JSON object" },
	{ "{} {}", "config: invalid JSON" },
	{ "{\"mode\":\"s3\",\"mode\":\"s3\"}", "mode: given twice" },
	{ "{\"bogus\":1}", "bogus: unknown key" },
	{ "{\"limts\":{}}", "limts: unknown key (did you mean \"limits\"?)" },
	/* listen */
	{ "{\"listen\":\"127.0.0.1:8080\"}", "listen: must be an array of strings" },
	{ "{\"listen\":[8080]}", "listen[0]: must be a string" },
	{ "{\"listen\":[]}", "listen: needs at least 1 element" },
	{ "{\"listen\":[\"127.0.0.1\"]}", "listen[0]: \"127.0.0.1\" is not ADDR:PORT" },
	{ "{\"listen\":[\"127.0.0.1:0\"]}", "listen[0]: \"127.0.0.1:0\": port must be 1 to 65535" },
	{ "{\"listen\":[\"127.0.0.1:65536\"]}", "listen[0]: \"127.0.0.1:65536\": port must be" },
	{ "{\"listen\":[\"127.0.0.1:80x\"]}", "listen[0]: \"127.0.0.1:80x\": port must be" },
	{ "{\"listen\":[\"localhost:80\"]}", "listen[0]: \"localhost:80\": \"localhost\" is not an IPv4" },
	{ "{\"listen\":[\"::1:80\"]}", "listen[0]: \"::1:80\" is not ADDR:PORT (write IPv6 as [::1]:PORT)" },
	{ "{\"listen\":[\"[::1:80\"]}", "listen[0]: \"[::1:80\" is not ADDR:PORT" },
	{ "{\"listen\":[\"[zz]:80\"]}", "listen[0]: \"[zz]:80\": \"zz\" is not an IPv6 address" },
	{ "{\"listen\":[\"127.0.0.1:80\",\"127.0.0.1:80\"]}", "listen[1]: \"127.0.0.1:80\" is given twice" },
	{ "{\"listen\":[\"0.0.0.0:8080\"]}",
	  "clients: authentication is off (no clients) but listen address \"0.0.0.0:8080\" is not loopback" },
	{ "{\"listen\":[\"127.0.0.1:1\",\":8080\"]}",
	  "clients: authentication is off (no clients) but listen address \":8080\" is not loopback" },
	{ "{\"listen\":[\"[::]:8080\"]}", "listen address \"[::]:8080\" is not loopback" },
	{ "{\"listen\":[\"10.1.2.3:8080\"]}", "listen address \"10.1.2.3:8080\" is not loopback" },
	/* mode, enums */
	{ "{\"mode\":\"ftp\"}", "mode: \"ftp\" is not one of \"s3\", \"http\"" },
	{ "{\"mode\":1}", "mode: must be one of \"s3\", \"http\"" },
	{ "{\"unrouted_writes\":\"deny\"}", "unrouted_writes: \"deny\" is not one of \"reject\", \"allow\", \"bucket_lock\"" },
	{ "{\"log\":{\"level\":\"trace\"}}", "log.level: \"trace\" is not one of" },
	{ "{\"log\":{\"format\":\"text\"}}", "log.format: \"text\" is not one of \"json\"" },
	{ "{\"log\":{\"access_log\":\"access.log\"}}", "log.access_log: \"access.log\": an absolute path" },
	{ "{\"log\":{\"error_log\":\"error.log\"}}", "log.error_log: \"error.log\": an absolute path" },
	{ "{\"log\":{\"lvl\":\"info\"}}", "log.lvl: unknown key (did you mean \"level\"?)" },
	/* tls */
	{ "{\"tls\":{\"key\":\"/k.pem\"}}", "tls.cert: required with tls" },
	{ "{\"tls\":{\"cert\":\"/c.pem\"}}", "tls.key: required with tls" },
	{ "{\"tls\":{\"cert\":\"/c\",\"key\":\"/k\",\"min_version\":\"1.1\"}}",
	  "tls.min_version: \"1.1\" is not one of \"1.2\", \"1.3\"" },
	{ "{\"tls\":{\"cert\":\"\",\"key\":\"/k\"}}", "tls.cert: must not be empty" },
	{ "{\"tls\":true}", "tls: must be an object" },
	/* limits: types and bounds */
	{ "{\"limits\":[]}", "limits: must be an object" },
	{ "{\"limits\":{\"header_bytes\":10}}", "limits.header_bytes: 10 is out of range (256 to 1048576)" },
	{ "{\"limits\":{\"header_bytes\":2000000}}", "limits.header_bytes: 2000000 is out of range" },
	{ "{\"limits\":{\"header_bytes\":1.5}}", "limits.header_bytes: must be an integer" },
	{ "{\"limits\":{\"header_bytes\":\"16k\"}}", "limits.header_bytes: must be an integer" },
	{ "{\"limits\":{\"idle_timeout_ms\":0}}", "limits.idle_timeout_ms: 0 is out of range" },
	{ "{\"limits\":{\"refresh_interval_ms\":-1}}", "limits.refresh_interval_ms: -1 is out of range" },
	{ "{\"limits\":{\"objcache_entries\":1e300}}", "limits.objcache_entries: 1.0000000000000001e+300 is out of range" },
	{ "{\"limits\":{\"header_byte\":1}}", "limits.header_byte: unknown key (did you mean \"header_bytes\"?)" },
	/* upstream */
	{ "{\"upstream\":{\"endpoint\":\"ftp://h/\"}}", "upstream.endpoint: \"ftp://h/\": the scheme must be http or https" },
	{ "{\"upstream\":{\"endpoint\":\"not a url\"}}", "upstream.endpoint: \"not a url\" is not a valid URL" },
	{ "{\"upstream\":{\"endpoint\":\"http://u:p@h/\"}}", "upstream.endpoint: \"http://u:p@h/\" is not a valid URL" },
	{ "{\"upstream\":{\"endpoint\":\"http://h/?x=1\"}}", "upstream.endpoint: \"http://h/?x=1\": no query" },
	{ "{\"upstream\":{\"verify\":\"yes\"}}", "upstream.verify: must be true or false" },
	{ "{\"upstream\":{\"endpoint\":\"http://h\"},\"data_dir\":\"/d\"}", "data_dir: not allowed with upstream.endpoint" },
	{ "{\"mode\":\"http\"}", "upstream.endpoint: required in http mode" },
	{ "{\"mode\":\"http\",\"upstream\":{\"endpoint\":\"http://h\"},\"unrouted_writes\":\"bucket_lock\"}",
	  "unrouted_writes: \"bucket_lock\" in http mode needs lock_store" },
	{ "{\"lock_store\":\"/var/locks\"}", "lock_store: \"/var/locks\" is not s3://BUCKET[/ROOT] or file:///DIR" },
	/* locks */
	{ "{\"locks\":{}}", "locks: must be an array of objects" },
	{ "{\"locks\":[\"inv\"]}", "locks[0]: must be an object" },
	{ "{\"locks\":[{\"store\":\"s3://bkt\"}]}", "locks[0].name: required" },
	{ "{\"locks\":[{\"name\":\"a/b\",\"store\":\"s3://bkt\"}]}", "locks[0].name: \"a/b\" is not a valid lock name" },
	{ "{\"locks\":[{\"name\":\"..\",\"store\":\"s3://bkt\"}]}", "locks[0].name: \"..\" is not a valid lock name" },
	{ "{\"locks\":[{\"name\":\"inv\",\"store\":\"http://x\"}]}", "locks[0].store: \"http://x\" is not s3://BUCKET" },
	{ "{\"locks\":[{\"name\":\"inv\",\"store\":\"s3://AB\"}]}", "locks[0].store: \"s3://AB\": \"AB\" is not a valid bucket name" },
	{ "{\"locks\":[{\"name\":\"inv\",\"store\":\"s3://bkt\",\"prefix\":\"/x\"}]}", "locks[0].prefix: \"/x\" must be a key prefix" },
	{ "{\"locks\":[{\"name\":\"inv\",\"store\":\"s3://bkt\"},{\"name\":\"inv\",\"store\":\"s3://bkt\"}]}",
	  "locks[1].name: \"inv\" is also the name of locks[0]" },
	{ "{\"locks\":[{\"name\":\"inv\"}]}", "locks[0].store: required" },
	{ "{\"locks\":[{\"name\":\"inv\",\"stor\":\"s3://bkt\"}]}", "locks[0].stor: unknown key (did you mean \"store\"?)" },
	/* routes */
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\",\"metods\":[\"PUT\"]}]}",
	  "routes[0].metods: unknown key (did you mean \"methods\"?)" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\"},{\"prefix\":\"/b/\",\"lock\":\"invoce\"}]}",
	  "routes[1].lock: no lock named \"invoce\"" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\"}]}", "routes[0].lock: required" },
	{ "{" LOCK_INV ",\"routes\":[{\"lock\":\"inv\"}]}", "routes[0].prefix: required" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"bkt/\",\"lock\":\"inv\"}]}", "routes[0].prefix: \"bkt/\" must start with \"/\"" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/bkt/../x/\",\"lock\":\"inv\"}]}", "routes[0].prefix: \"/bkt/../x/\" has an empty" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/bkt/%41/\",\"lock\":\"inv\"}]}", "routes[0].prefix: \"/bkt/%41/\": write the path decoded" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/_fence/x\",\"lock\":\"inv\"}]}", "routes[0].prefix: \"/_fence/\" is reserved" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\"},{\"prefix\":\"/a/\",\"lock\":\"inv\"}]}",
	  "routes[1].prefix: \"/a/\" is also the prefix of routes[0]" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\",\"methods\":[\"PUT\",\"FETCH\"]}]}",
	  "routes[0].methods[1]: unknown method \"FETCH\" (one of \"GET\", \"HEAD\", \"PUT\", \"POST\", \"DELETE\", \"PATCH\")" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\",\"methods\":[\"put\"]}]}",
	  "routes[0].methods[0]: unknown method \"put\"" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\",\"methods\":[]}]}", "routes[0].methods: must not be empty" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\",\"methods\":\"PUT\"}]}", "routes[0].methods: must be an array" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\",\"strict\":\"yes\"}]}", "routes[0].strict: must be true or false" },
	{ "{" LOCK_INV ",\"routes\":[{\"prefix\":\"/a/\",\"lock\":\"inv\",\"strict\":1}]}", "routes[0].strict: must be true or false" },
	/* clients */
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\",\"secret_file\":\"/x\"}]}",
	  "clients[0]: give secret_env or secret_file, not both" },
	{ "{\"clients\":[{\"access_key\":\"AK1\"}]}", "clients[0]: needs secret_env or secret_file" },
	{ "{\"clients\":[{\"secret_env\":\"WORKER1_SECRET\"}]}", "clients[0].access_key: required in s3 mode" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"FG_TEST_UNSET\"}]}",
	  "clients[0].secret_env: environment variable \"FG_TEST_UNSET\" is not set" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"FG_EMPTY\"}]}",
	  "clients[0].secret_env: environment variable \"FG_EMPTY\" is empty" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"A-B\"}]}",
	  "clients[0].secret_env: \"A-B\" is not an environment variable name" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_file\":\"/nonexistent/fencegate-secret\"}]}",
	  "clients[0].secret_file: cannot read \"/nonexistent/fencegate-secret\": No such file or directory" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_file\":\"/tmp\"}]}",
	  "clients[0].secret_file: \"/tmp\" is not a regular file" },
	{ "{\"clients\":[{\"access_key\":\"AK/1\",\"secret_env\":\"WORKER1_SECRET\"}]}",
	  "clients[0].access_key: \"AK/1\": an access key is" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\"},"
	  "{\"access_key\":\"AK1\",\"secret_env\":\"WORKER2_SECRET\"}]}",
	  "clients[1].access_key: \"AK1\" is also the access key of clients[0]" },
	{ "{\"clients\":[{\"name\":\"w\",\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\"},"
	  "{\"name\":\"w\",\"access_key\":\"AK2\",\"secret_env\":\"WORKER2_SECRET\"}]}",
	  "clients[1].name: \"w\" is also the name of clients[0]" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"token_env\":\"WORKER1_SECRET\"}]}",
	  "clients[0]: token_env is for http mode" },
	{ "{\"mode\":\"http\",\"upstream\":{\"endpoint\":\"http://h\"},"
	  "\"clients\":[{\"access_key\":\"AK1\",\"token_env\":\"LEDGER_TOKEN\"}]}",
	  "clients[0]: access_key is for s3 mode" },
	{ "{\"mode\":\"http\",\"upstream\":{\"endpoint\":\"http://h\"},\"clients\":[{}]}",
	  "clients[0]: needs token_env or token_file" },
	{ "{\"mode\":\"http\",\"upstream\":{\"endpoint\":\"http://h\"},"
	  "\"clients\":[{\"token_env\":\"LEDGER_TOKEN\"},{\"token_env\":\"LEDGER_TOKEN\"}]}",
	  "clients[1].token_env: same token as clients[0]" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\","
	  "\"allow\":[{\"prefix\":\"/b/\",\"actions\":[\"read\",\"delete\"]}]}]}",
	  "clients[0].allow[0].actions[1]: unknown action \"delete\" (one of \"read\", \"write\", \"lock\", \"admin\", \"break\")" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\","
	  "\"allow\":[{\"actions\":[\"read\"]}]}]}",
	  "clients[0].allow[0].prefix: required" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\","
	  "\"allow\":[{\"prefix\":\"/b/\"}]}]}",
	  "clients[0].allow[0].actions: required" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\","
	  "\"allow\":[{\"prefix\":\"/b/\",\"actions\":[]}]}]}",
	  "clients[0].allow[0].actions: must not be empty" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\","
	  "\"allow\":[{\"prefix\":\"/b/\",\"actions\":[\"read\"],\"action\":[]}]}]}",
	  "clients[0].allow[0].action: unknown key (did you mean \"actions\"?)" },
	{ "{\"clients\":[{\"access_key\":\"AK1\",\"secret_env\":\"WORKER1_SECRET\",\"allow\":{}}]}",
	  "clients[0].allow: must be an array of objects" },
	/* no config string holds a control character: cJSON cuts at \u0000 */
	{ "{\"data_dir\":\"/srv/a\\u0000/b\"}", "control character" },
	{ "{\"data_dir\":\"/srv/a\\u001F\"}", "at line 1, column 20" },
	{ "{\"data_dir\":\"/srv/a\\n\"}", "control character" },
	{ "{\"data_dir\":\"/srv/a\tb\"}", "control character" },
	{ "{\"data_dir\":\"/srv/a\x7f\"}", "control character" },
	{ "{\"data_dir\":\"x\",\n \"log\":{\"level\":\"in\\tfo\"}}",
	  "at line 2, column 20" },
};

static void test_bad_configs(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		char err[POLICY_ERR_MAX] = "";
		struct policy *p = parse(bad_cases[i].json, err, sizeof(err));

		if (p) {
			policy_free(p);
			fail_msg("case %zu accepted: %s", i, bad_cases[i].json);
		}
		if (!strstr(err, bad_cases[i].want))
			fail_msg("case %zu: %s\n  error: %s\n  want:  %s", i, bad_cases[i].json,
				 err, bad_cases[i].want);
	}
}

/* The empty secret file and the NUL byte need run-time paths. */
static void test_bad_runtime(void **state)
{
	char json[512], err[POLICY_ERR_MAX] = "", want[160];
	struct policy *p;

	(void)state;
	snprintf(json, sizeof(json), "{\"clients\":[{\"access_key\":\"AK1\",\"secret_file\":\"%s\"}]}",
		 empty_file);
	assert_null(parse(json, err, sizeof(err)));
	snprintf(want, sizeof(want), "clients[0].secret_file: \"%s\" is empty", empty_file);
	assert_non_null(strstr(err, want));

	/* an escaped backslash before n is no control character; whitespace
	 * between tokens is JSON's */
	p = parse("{\n\t\"data_dir\": \"/srv/a\\\\n\"\r\n}", err, sizeof(err));
	assert_non_null(p);
	assert_string_equal(p->data_dir, "/srv/a\\n");
	policy_free(p);

	assert_null(policy_parse("{}\0{}", 5, err, sizeof(err)));
	assert_non_null(strstr(err, "config: contains a NUL byte"));

	assert_null(policy_load("/nonexistent/fencegate.json", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/fencegate.json: cannot open"));

	/* a tiny err buffer is still NUL-terminated */
	assert_null(parse("{\"bogus\":1}", err, 4));
	assert_string_equal(err, "bo:"); /* the path keeps at most half the room */
	p = parse("{\"bogus\":1}", NULL, 0);
	assert_null(p);
}

static void test_secret_file_and_load(void **state)
{
	char json[512], err[POLICY_ERR_MAX] = "", path[] = "/tmp/test_policy_cfg.XXXXXX";
	struct policy *p;
	FILE *f;
	int fd;

	(void)state;
	snprintf(json, sizeof(json),
		 "{\"clients\":[{\"access_key\":\"AK1\",\"secret_file\":\"%s\"}],"
		 "\"routes\":[{\"prefix\":\"/b/\",\"lock\":\"nosuch\"}]}", secret_file);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);
	/* errors from a file name the file, then the key */
	assert_null(policy_load(path, err, sizeof(err)));
	{
		char want[128];

		snprintf(want, sizeof(want), "%s: routes[0].lock: no lock named \"nosuch\"", path);
		assert_string_equal(err, want);
	}
	snprintf(json, sizeof(json),
		 "{\"clients\":[{\"access_key\":\"AK1\",\"secret_file\":\"%s\"}]}", secret_file);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);
	p = policy_load(path, err, sizeof(err));
	if (!p)
		fail_msg("%s", err);
	assert_string_equal(p->source, path);
	assert_string_equal(policy_client_by_key(p, "AK1")->secret, "file-secret");
	assert_string_equal(p->clients[0].secret_file, secret_file);
	unlink(path);
	/* references: two holders, the last free frees (ASan checks) */
	assert_ptr_equal(policy_hold(p), p);
	policy_free(p);
	assert_string_equal(p->clients[0].name, "AK1");
	policy_free(p);
	policy_free(NULL);
	assert_null(policy_hold(NULL));
}

static void test_lock_store_defaults(void **state)
{
	struct policy *p = parse_ok(
		"{\"upstream\":{\"endpoint\":\"http://127.0.0.1:9000\"},"
		"\"locks\":[{\"name\":\"inv\"},{\"name\":\"rooted\",\"store\":\"s3://bkt/team/a\"},"
		"{\"name\":\"ts\",\"store\":\"s3://bkt\",\"prefix\":\"locks/lock-\"}],"
		"\"routes\":[{\"prefix\":\"/acme-billing/invoices/\",\"lock\":\"inv\"}]}");

	(void)state;
	/* in s3 mode a lock lives in the bucket of its route by default */
	assert_string_equal(p->locks[0].store, "s3://acme-billing");
	assert_string_equal(p->locks[0].prefix, "locks/inv/lock-");
	assert_string_equal(p->locks[1].prefix, "team/a/locks/rooted/lock-");
	assert_string_equal(p->locks[2].prefix, "locks/lock-");
	assert_null(policy_lock_by_name(p, "INV"));
	assert_null(policy_lock_by_name(p, NULL));
	policy_free(p);
}

static void test_policy_default(void **state)
{
	char err[POLICY_ERR_MAX] = "", name[LOCK_NAME_MAX + 1];
	struct policy_flags f = { 0 };
	const char *wide[] = { "0.0.0.0:8080" };
	const char *two[] = { "127.0.0.1:9001", "[::1]:9001" };
	struct policy *p;

	(void)state;
	p = policy_default(&f, err, sizeof(err));
	if (!p)
		fail_msg("%s", err);
	assert_string_equal(p->listen[0].addr, "127.0.0.1:8080");
	assert_string_equal(p->data_dir, "./fencegate-data");
	assert_int_equal(p->unrouted_writes, POLICY_UNROUTED_BUCKET_LOCK);
	assert_int_equal(p->nclients, 0);
	assert_string_equal(p->source, "(flags)");
	assert_int_equal(policy_bucket_lock(p, "/acme-billing/invoices/x", name, sizeof(name)), 1);
	assert_string_equal(name, "acme-billing");
	assert_int_equal(policy_bucket_lock(p, "/demo", name, sizeof(name)), 1);
	assert_string_equal(name, "demo");
	assert_int_equal(policy_bucket_lock(p, "/_fence/locks", name, sizeof(name)), 0);
	assert_int_equal(policy_bucket_lock(p, "/", name, sizeof(name)), 0);
	assert_int_equal(policy_bucket_lock(p, "//x", name, sizeof(name)), 0);
	assert_int_equal(policy_bucket_lock(p, "/a b/x", name, sizeof(name)), 0);
	assert_true(policy_client_may_lock(p, NULL, "demo"));
	policy_free(p);

	f.listen = wide;
	f.nlisten = 1;
	assert_null(policy_default(&f, err, sizeof(err)));
	assert_string_equal(err, "flags: clients: authentication is off (no clients) but listen "
			    "address \"0.0.0.0:8080\" is not loopback");

	f.listen = two;
	f.nlisten = 2;
	f.upstream = "http://127.0.0.1:9000";
	p = policy_default(&f, err, sizeof(err));
	if (!p)
		fail_msg("%s", err);
	assert_int_equal(p->nlisten, 2);
	assert_true(p->listen[1].ipv6);
	assert_true(p->listen[1].loopback);
	assert_string_equal(p->listen[1].host, "::1");
	assert_string_equal(p->upstream.endpoint, "http://127.0.0.1:9000");
	assert_null(p->data_dir);
	policy_free(p);

	f.mode = POLICY_MODE_HTTP;
	f.data_dir = "/srv/fg";
	p = policy_default(&f, err, sizeof(err));
	if (!p)
		fail_msg("%s", err);
	assert_string_equal(p->lock_store, "file:///srv/fg");
	policy_free(p);

	f.upstream = "ftp://x";
	assert_null(policy_default(&f, err, sizeof(err)));
	assert_non_null(strstr(err, "flags: upstream.endpoint: \"ftp://x\": the scheme"));
}

/* Every deploy/examples/ JSON file loads (run from the source tree, as make does). */
static void test_examples(void **state)
{
	glob_t g;
	size_t i;

	(void)state;
	assert_int_equal(glob("deploy/examples/*.json", 0, NULL, &g), 0);
	assert_true(g.gl_pathc >= 3);
	for (i = 0; i < g.gl_pathc; i++) {
		char err[POLICY_ERR_MAX];
		struct policy *p = policy_load(g.gl_pathv[i], err, sizeof(err));

		if (!p)
			fail_msg("%s", err);
		if (strstr(g.gl_pathv[i], "s3-two-workers")) {
			const struct policy_client *w = policy_client_by_key(p, "AKIAWORKER1");
			const struct policy_client *r = policy_client_by_key(p, "AKIAREADER1");

			assert_non_null(w);
			assert_non_null(r);
			assert_true(policy_client_allows(w, "/acme-billing/invoices/a", POLICY_ACT_WRITE));
			assert_true(policy_client_may_lock(p, w, "invoices"));
			assert_true(policy_client_allows(r, "/acme-billing/invoices/a", POLICY_ACT_READ));
			assert_false(policy_client_allows(r, "/acme-billing/invoices/a", POLICY_ACT_WRITE));
			assert_false(policy_client_may_lock(p, r, "invoices"));
		}
		policy_free(p);
	}
	globfree(&g);
}

/* Every key of the table is in policy/README.md, on a line with its default. */
static void test_readme_documents_every_key(void **state)
{
	FILE *f = fopen("policy/README.md", "r");
	char *text = NULL;
	size_t cap = 0;
	ssize_t n;
	struct policy_key_info info, *ki = &info;
	size_t found = 0, total = 0;

	(void)state;
	assert_non_null(f);
	n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	assert_true(n > 0);
	for (size_t i = 0; policy_key_info(i, ki); i++) {
		char needle[160];
		const char *at, *eol;

		total++;
		snprintf(needle, sizeof(needle), "| `%s` |", ki->path);
		at = strstr(text, needle);
		if (!at)
			fail_msg("policy/README.md does not document `%s`", ki->path);
		eol = strchr(at, '\n');
		if (ki->def) {
			char def[200];
			const char *d;

			snprintf(def, sizeof(def), "`%s`", ki->def);
			d = strstr(at, def);
			if (!d || (eol && d > eol))
				fail_msg("policy/README.md: `%s` does not show its default %s",
					 ki->path, def);
		}
		found++;
	}
	assert_int_equal(found, total);
	assert_true(total > 40);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_design_sketch),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad_configs),
		cmocka_unit_test(test_bad_runtime),
		cmocka_unit_test(test_secret_file_and_load),
		cmocka_unit_test(test_lock_store_defaults),
		cmocka_unit_test(test_policy_default),
		cmocka_unit_test(test_examples),
		cmocka_unit_test(test_readme_documents_every_key),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
