/* test_status.c — the status page's board and renderers
 * (proxy/fence/statusboard.c, status_html.c, status_json.c): the ring of
 * refused writes wraps and keeps the newest, every bound holds (locks,
 * reasons, field lengths cut on a UTF-8 boundary, invalid UTF-8 replaced), the series forgets old
 * slots, epochs only go up, HTML escaping over a table of hostile inputs,
 * and the rendered page and JSON carry the board's state with every
 * string from a request escaped. Last, it renders a full board many times
 * and prints the cost per render (measured, not asserted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fence/status_render.h"
#include "fence/statusboard.h"

#define T0 1796500005000LL /* a Unix ms, in the middle of a 10 s slot */

static void refuse(struct statusboard *b, const char *lock, const char *key, const char *reason,
		   uint64_t presented, int64_t at)
{
	statusboard_note_write(b, &(struct statusboard_write){
		.lock = lock, .client = "AKIDTEST", .method = "PUT", .bucket = "bkt", .key = key,
		.has_presented = true, .presented = presented, .has_current = true, .current = 9,
		.reason = reason }, at);
}

static void forward(struct statusboard *b, const char *lock, int64_t at)
{
	statusboard_note_write(b, &(struct statusboard_write){
		.lock = lock, .method = "PUT", .bucket = "bkt", .key = "k",
		.has_presented = true, .presented = 9, .has_current = true, .current = 9 }, at);
}

static void test_ring_wraps_newest_first(void **state)
{
	struct statusboard *b = statusboard_new();
	struct statusboard_snapshot *s;
	char key[32];

	(void)state;
	assert_non_null(b);
	s = statusboard_snapshot(b, T0);
	assert_int_equal(s->nring, 0);
	statusboard_snapshot_free(s);
	for (int i = 0; i < 2 * STATUSBOARD_RING + 50; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		refuse(b, "L", key, "FencingTokenStale", (uint64_t)i, T0 + i);
	}
	s = statusboard_snapshot(b, T0 + 1000);
	assert_non_null(s);
	assert_int_equal(s->nring, STATUSBOARD_RING);
	assert_string_equal(s->ring[0].resource, "/bkt/k249");       /* newest */
	assert_string_equal(s->ring[STATUSBOARD_RING - 1].resource, "/bkt/k150");
	for (size_t i = 1; i < s->nring; i++)
		assert_true(s->ring[i - 1].at_ms > s->ring[i].at_ms);
	assert_int_equal(s->ring[0].presented, 249);
	assert_int_equal(s->ring[0].current, 9);
	assert_string_equal(s->ring[0].client, "AKIDTEST");
	assert_int_equal(s->refused, 2 * STATUSBOARD_RING + 50);
	assert_int_equal(s->nlocks, 1);
	assert_int_equal(s->locks[0].refused, 2 * STATUSBOARD_RING + 50);
	statusboard_snapshot_free(s);
	statusboard_free(b);
}

static void test_bounds(void **state)
{
	struct statusboard *b = statusboard_new();
	struct statusboard_snapshot *s;
	char name[32], longkey[2000], reason[32];

	(void)state;
	for (int i = 0; i < STATUSBOARD_LOCKS + 5; i++) {
		snprintf(name, sizeof(name), "lock-%d", i);
		forward(b, name, T0);
	}
	/* reasons past the cap count as "other" */
	for (int i = 0; i < STATUSBOARD_REASONS + 3; i++) {
		snprintf(reason, sizeof(reason), "Reason%d", i);
		refuse(b, "lock-0", "k", reason, 1, T0);
	}
	/* a key longer than the field, cut inside a two-byte character */
	memset(longkey, 'a', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	/* "/bkt/" + key: 'é' at bytes 510-511 of the resource, across the cut */
	memcpy(longkey + STATUSBOARD_RESOURCE_MAX - 7, "\xC3\xA9", 2);
	refuse(b, "lock-0", longkey, "FencingTokenStale", 1, T0);
	s = statusboard_snapshot(b, T0);
	assert_int_equal(s->nlocks, STATUSBOARD_LOCKS);
	assert_int_equal(s->untracked, 5);
	assert_int_equal(s->forwarded, STATUSBOARD_LOCKS + 5);  /* totals count them all */
	assert_int_equal(s->locks[0].nreasons, STATUSBOARD_REASONS);
	assert_string_equal(s->locks[0].reasons[STATUSBOARD_REASONS - 1].reason, "other");
	/* Reason7 to Reason10 and the last refusal's FencingTokenStale */
	assert_int_equal(s->locks[0].reasons[STATUSBOARD_REASONS - 1].count, 5);
	assert_true(s->ring[0].resource_cut);
	assert_true(strlen(s->ring[0].resource) < STATUSBOARD_RESOURCE_MAX);
	/* the cut never leaves half a character: the whole 'é' goes */
	assert_int_equal(strlen(s->ring[0].resource), STATUSBOARD_RESOURCE_MAX - 2);
	assert_int_equal(s->ring[0].resource[STATUSBOARD_RESOURCE_MAX - 3], 'a');
	assert_false(s->ring[1].resource_cut);
	statusboard_snapshot_free(s);
	/* keys and holders are kept as valid UTF-8 (the JSON form prints them) */
	refuse(b, "lock-0", "a\xFF" "b\xC3", "FencingTokenStale", 1, T0);
	statusboard_note_lock(b, "lock-0", 3, "held", "w\x80x", 0, false, T0);
	s = statusboard_snapshot(b, T0);
	assert_string_equal(s->ring[0].resource, "/bkt/a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
	assert_string_equal(s->locks[0].holder, "w\xEF\xBF\xBDx");
	statusboard_snapshot_free(s);
	statusboard_free(b);
}

static void test_series_window(void **state)
{
	struct statusboard *b = statusboard_new();
	struct statusboard_snapshot *s;

	(void)state;
	forward(b, "L", T0);
	forward(b, "L", T0 + 1);
	refuse(b, "L", "k", "FencingTokenStale", 1, T0 + 2);
	forward(b, "L", T0 + STATUSBOARD_SLOT_MS); /* the next slot */
	refuse(b, "M", "k", "FencingTokenMissing", 1, T0 + STATUSBOARD_SLOT_MS);
	s = statusboard_snapshot(b, T0 + STATUSBOARD_SLOT_MS);
	assert_int_equal(s->series_forwarded[STATUSBOARD_SLOTS - 1], 1);
	assert_int_equal(s->series_refused[STATUSBOARD_SLOTS - 1], 1);
	assert_int_equal(s->series_forwarded[STATUSBOARD_SLOTS - 2], 2);
	assert_int_equal(s->series_refused[STATUSBOARD_SLOTS - 2], 1);
	/* per lock: L's and M's apart */
	assert_string_equal(s->locks[0].name, "L");
	assert_int_equal(s->locks[0].series_forwarded[STATUSBOARD_SLOTS - 2], 2);
	assert_int_equal(s->locks[0].series_refused[STATUSBOARD_SLOTS - 2], 1);
	assert_int_equal(s->locks[0].series_forwarded[STATUSBOARD_SLOTS - 1], 1);
	assert_int_equal(s->locks[0].series_refused[STATUSBOARD_SLOTS - 1], 0);
	assert_string_equal(s->locks[1].name, "M");
	assert_int_equal(s->locks[1].series_refused[STATUSBOARD_SLOTS - 1], 1);
	assert_int_equal(s->locks[1].series_forwarded[STATUSBOARD_SLOTS - 2], 0);
	assert_int_equal(s->series_start_ms % STATUSBOARD_SLOT_MS, 0);
	statusboard_snapshot_free(s);
	/* a whole window later: T0's slot is out (it reads 0 though it was
	 * not reused yet), T0 + one slot is the oldest in */
	s = statusboard_snapshot(b, T0 + (int64_t)STATUSBOARD_SLOTS * STATUSBOARD_SLOT_MS);
	assert_int_equal(s->series_forwarded[0], 1);
	for (size_t i = 1; i < STATUSBOARD_SLOTS; i++)
		assert_int_equal(s->series_forwarded[i] + s->series_refused[i], 0);
	assert_int_equal(s->forwarded, 3); /* totals are since start */
	assert_int_equal(s->locks[0].series_forwarded[0], 1);
	assert_int_equal(s->locks[0].series_refused[STATUSBOARD_SLOTS - 1], 0);
	statusboard_snapshot_free(s);
	/* a slot reused by a later period starts from 0 */
	forward(b, "L", T0 + (int64_t)STATUSBOARD_SLOTS * STATUSBOARD_SLOT_MS);
	s = statusboard_snapshot(b, T0 + (int64_t)STATUSBOARD_SLOTS * STATUSBOARD_SLOT_MS);
	assert_int_equal(s->series_forwarded[STATUSBOARD_SLOTS - 1], 1);
	assert_int_equal(s->series_refused[STATUSBOARD_SLOTS - 1], 0);
	statusboard_snapshot_free(s);
	statusboard_free(b);
}

static void test_lock_state_only_goes_up(void **state)
{
	struct statusboard *b = statusboard_new();
	struct statusboard_snapshot *s;

	(void)state;
	statusboard_note_lock(b, "L", 5, "held", "w-1", T0 + 30000, true, T0);
	statusboard_note_lock(b, "L", 4, "held", "stale-worker", T0 + 90000, false, T0 + 5);
	s = statusboard_snapshot(b, T0 + 10);
	assert_int_equal(s->nlocks, 1);
	assert_true(s->locks[0].noted);
	assert_int_equal(s->locks[0].epoch, 5);
	assert_string_equal(s->locks[0].holder, "w-1");
	assert_int_equal(s->locks[0].lease_end_ms, T0 + 30000);
	assert_int_equal(s->locks[0].loaded_at_ms, T0);
	statusboard_snapshot_free(s);
	statusboard_note_lock(b, "L", 5, "released", "w-1", 0, false, T0 + 20);
	statusboard_note_load_failed(b, "L", T0 + 30);
	s = statusboard_snapshot(b, T0 + 40);
	assert_string_equal(s->locks[0].state, "released");
	assert_int_equal(s->locks[0].load_failed_at_ms, T0 + 30);
	statusboard_snapshot_free(s);
	statusboard_note_lock(b, "L", 6, "held", "w-2", T0 + 60000, true, T0 + 50);
	s = statusboard_snapshot(b, T0 + 60);
	assert_int_equal(s->locks[0].epoch, 6);
	assert_int_equal(s->locks[0].load_failed_at_ms, 0); /* a good load clears it */
	assert_int_equal(s->locks[0].loaded_at_ms, T0 + 50);
	statusboard_snapshot_free(s);
	statusboard_free(b);
	/* NULL boards are no-ops */
	statusboard_note_lock(NULL, "L", 1, "held", "x", 0, true, T0);
	statusboard_note_write(NULL, &(struct statusboard_write){ .lock = "L" }, T0);
	statusboard_free(NULL);
	statusboard_snapshot_free(NULL);
}

static const struct {
	const char *name, *in, *out;
} ESCAPES[] = {
	{ "plain", "invoices/a.pdf", "invoices/a.pdf" },
	{ "script", "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;" },
	{ "attribute break", "\" onmouseover=\"x", "&quot; onmouseover=&quot;x" },
	{ "single quote", "it's", "it&#39;s" },
	{ "ampersand entity", "&lt;", "&amp;lt;" },
	{ "utf-8 kept", "caf\xC3\xA9 \xE2\x82\xAC", "caf\xC3\xA9 \xE2\x82\xAC" },
	{ "invalid utf-8", "a\xFF" "b", "a\xEF\xBF\xBD" "b" },
	{ "truncated sequence", "a\xE2\x82", "a\xEF\xBF\xBD\xEF\xBF\xBD" },
	{ "overlong slash", "\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD" },
	{ "control chars", "a\nb\rc\x01" "d\te", "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD" "d\te" },
	{ "empty", "", "" },
};

static void test_html_escape_table(void **state)
{
	char out[256], small[8];

	(void)state;
	for (size_t i = 0; i < sizeof(ESCAPES) / sizeof(ESCAPES[0]); i++) {
		size_t n = status_html_escape(ESCAPES[i].in, out, sizeof(out));

		if (n == (size_t)-1 || strcmp(out, ESCAPES[i].out) != 0)
			fail_msg("%s: got \"%s\"", ESCAPES[i].name, out);
		assert_int_equal(n, strlen(ESCAPES[i].out));
	}
	/* too small: -1 and a terminated prefix that does not split an entity */
	assert_true(status_html_escape("<<<<", small, sizeof(small)) == (size_t)-1);
	assert_string_equal(small, "&lt;");
	assert_int_equal(status_html_escape(NULL, out, sizeof(out)), 0);
}

#define HOSTILE "<script>alert('x')</script>\"&"

/* A view over a board with a hostile lock holder, client and key. */
static struct statusboard *hostile_board(void)
{
	struct statusboard *b = statusboard_new();

	statusboard_note_lock(b, "orders", 7, "held", HOSTILE, T0 + 25000, true, T0 - 1000);
	forward(b, "orders", T0 - 500);
	statusboard_note_write(b, &(struct statusboard_write){
		.lock = "orders", .client = HOSTILE, .method = "PUT", .bucket = "orders",
		.key = "a/" HOSTILE, .has_presented = true, .presented = 6, .has_current = true,
		.current = 7, .reason = "FencingTokenStale" }, T0 - 400);
	return b;
}

static void fill_view(struct status_view *v, const struct statusboard_snapshot *s)
{
	memset(v, 0, sizeof(*v));
	v->now_ms = T0;
	v->board = s;
	v->version = "0.1.0";
	v->started_ms = T0 - 3600 * 1000;
	v->workers = 2;
	v->mode = "local directory";
	v->self_test = STATUS_TEST_FAILED;
	v->self_test_message = "store said <b>no</b>";
	v->workers_passed = 1;
	v->probe = STATUS_PROBE_DOWN;
	v->probe_message = "listing \"s3://x\": <timeout>";
	v->nstore_errors = 1;
	snprintf(v->store_errors[0].op, sizeof(v->store_errors[0].op), "load");
	v->store_errors[0].count = 3;
}

static void test_html_page(void **state)
{
	struct statusboard *b = hostile_board();
	struct statusboard_snapshot *s = statusboard_snapshot(b, T0);
	struct status_view v;
	size_t len = 0;
	char *html;

	(void)state;
	fill_view(&v, s);
	html = status_html(&v, &len);
	assert_non_null(html);
	assert_int_equal(len, strlen(html));
	assert_non_null(strstr(html, "<meta http-equiv=\"refresh\" content=\"5\">"));
	assert_null(strstr(html, "<script")); /* none of ours, none of theirs */
	assert_null(strstr(html, "</script>\""));
	assert_null(strstr(html, "<b>no</b>"));
	assert_null(strstr(html, "<timeout>"));
	assert_non_null(strstr(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;"));
	assert_non_null(strstr(html, "data-lock=\"orders\""));
	assert_non_null(strstr(html, "<td class=\"epoch num\">7</td>"));
	assert_non_null(strstr(html, "<td class=\"presented num\">6</td>"));
	assert_non_null(strstr(html, "<td class=\"reason\">FencingTokenStale</td>"));
	assert_non_null(strstr(html, "PUT /orders/a/&lt;script&gt;"));
	assert_non_null(strstr(html, "25.0 s")); /* lease left */
	assert_non_null(strstr(html, "<svg"));
	assert_non_null(strstr(html, "class=\"ref\""));
	assert_non_null(strstr(html, "class=\"fwd\""));
	assert_non_null(strstr(html, "<svg class=\"spark\""));   /* the lock's own line */
	assert_non_null(strstr(html, "<polyline"));
	assert_null(strstr(html, "src=")); /* nothing fetched */
	assert_null(strstr(html, "<link"));
	assert_null(strstr(html, "url("));
	free(html);
	statusboard_snapshot_free(s);
	statusboard_free(b);
}

static void test_json_form(void **state)
{
	struct statusboard *b = hostile_board();
	struct statusboard_snapshot *s = statusboard_snapshot(b, T0);
	struct status_view v;
	cJSON *o, *l, *r, *text;
	char *printed;

	(void)state;
	fill_view(&v, s);
	o = status_json(&v);
	assert_non_null(o);
	/* through text and back, as a client reads it */
	printed = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	o = cJSON_Parse(printed);
	free(printed);
	assert_non_null(o);
	l = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "locks"), 0);
	assert_string_equal(cJSON_GetObjectItem(l, "lock")->valuestring, "orders");
	assert_int_equal(cJSON_GetObjectItem(l, "epoch")->valuedouble, 7);
	assert_string_equal(cJSON_GetObjectItem(l, "holder")->valuestring, HOSTILE);
	assert_int_equal(cJSON_GetObjectItem(l, "leaseLeftMs")->valuedouble, 25000);
	assert_int_equal(cJSON_GetObjectItem(l, "forwarded")->valuedouble, 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(l, "refusedByReason"),
					     "FencingTokenStale")->valuedouble, 1);
	text = cJSON_GetObjectItem(cJSON_GetObjectItem(l, "series"), "refused");
	assert_int_equal(cJSON_GetArraySize(text), STATUSBOARD_SLOTS);
	assert_int_equal(cJSON_GetArrayItem(text, STATUSBOARD_SLOTS - 1)->valuedouble, 1);
	r = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "refusedWrites"), 0);
	assert_string_equal(cJSON_GetObjectItem(r, "reason")->valuestring, "FencingTokenStale");
	assert_string_equal(cJSON_GetObjectItem(r, "client")->valuestring, HOSTILE);
	assert_string_equal(cJSON_GetObjectItem(r, "resource")->valuestring, "/orders/a/" HOSTILE);
	assert_int_equal(cJSON_GetObjectItem(r, "presentedEpoch")->valuedouble, 6);
	assert_int_equal(cJSON_GetObjectItem(r, "currentEpoch")->valuedouble, 7);
	text = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "storage"), "selfTest");
	assert_string_equal(text->valuestring, "failed");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "storage"),
								 "storeErrors"), "load")->valuedouble, 3);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "series"),
								"forwarded")), STATUSBOARD_SLOTS);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "process"), "uptimeMs")
			 ->valuedouble, 3600 * 1000);
	cJSON_Delete(o);
	statusboard_snapshot_free(s);
	statusboard_free(b);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A full page (100 locks, a full ring) rendered N times; prints the cost. */
static void test_render_cost(void **state)
{
	struct statusboard *b = statusboard_new();
	struct statusboard_snapshot *s;
	struct status_view v;
	char name[32];
	size_t len = 0, jlen = 0;
	const int n = 300;
	double t0, t_snap, t_html, t_json;

	(void)state;
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "lock-%02d", i);
		statusboard_note_lock(b, name, (uint64_t)i + 1, "held", "worker-a", T0 + 30000, true,
				      T0);
		for (int k = 0; k < 3; k++)
			refuse(b, name, "some/key/path.bin", k ? "FencingTokenStale"
							       : "FencingTokenMissing", 1, T0 - k);
		forward(b, name, T0 - (int64_t)i * 5000);
	}
	t0 = now_s();
	for (int i = 0; i < n; i++)
		statusboard_snapshot_free(statusboard_snapshot(b, T0));
	t_snap = (now_s() - t0) / n;
	s = statusboard_snapshot(b, T0);
	fill_view(&v, s);
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		char *html = status_html(&v, &len);

		assert_non_null(html);
		free(html);
	}
	t_html = (now_s() - t0) / n;
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		cJSON *o = status_json(&v);
		char *text = cJSON_PrintUnformatted(o);

		assert_non_null(text);
		jlen = strlen(text);
		free(text);
		cJSON_Delete(o);
	}
	t_json = (now_s() - t0) / n;
	printf("render cost (100 locks, %d refusals): snapshot %.1f us, "
	       "HTML %.1f us (%zu bytes), JSON %.1f us (%zu bytes)\n", STATUSBOARD_RING,
	       t_snap * 1e6, t_html * 1e6, len, t_json * 1e6, jlen);
	statusboard_snapshot_free(s);
	statusboard_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_wraps_newest_first),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_series_window),
		cmocka_unit_test(test_lock_state_only_goes_up),
		cmocka_unit_test(test_html_escape_table),
		cmocka_unit_test(test_html_page),
		cmocka_unit_test(test_json_form),
		cmocka_unit_test(test_render_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
