/* status_html.c — the operator's status page as one HTML document: locks,
 * the last refused writes, an inline SVG chart of forwarded vs refused
 * writes, storage and the process. Rendered on the server from a
 * status_view, readable with JavaScript off (there is none), no external
 * asset, and it reloads itself (<meta http-equiv="refresh">).
 *
 * Every string from a request or a store goes through esc() (text and
 * attribute values alike). It does not gather anything (lockapi_status.c
 * does) and does no I/O but writing its output buffer. */
#include "status_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/utf8.h"

/* ---- escaping ------------------------------------------------------------- */

/* The text that stands for the character at p (n >= 1 bytes left) and its
 * length in *adv: an entity, U+FFFD for invalid UTF-8 and control
 * characters, or NULL (copy *adv bytes as they are). */
static const char *esc_step(const unsigned char *p, size_t n, size_t *adv)
{
	size_t l;

	*adv = 1;
	switch (*p) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&#39;";
	default: break;
	}
	if (*p < 0x20 && *p != '\t')
		return "\xEF\xBF\xBD";
	if (*p == 0x7F)
		return "\xEF\xBF\xBD";
	if (*p < 0x80)
		return NULL;
	l = utf8_seq_len(p, n);
	if (l == 0)
		return "\xEF\xBF\xBD";
	*adv = l;
	return NULL;
}

size_t status_html_escape(const char *s, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p), o = 0, adv;

	while (n) {
		const char *rep = esc_step(p, n, &adv);
		size_t rl = rep ? strlen(rep) : adv;

		if (o + rl >= outlen) {
			out[o] = '\0';
			return (size_t)-1;
		}
		memcpy(out + o, rep ? rep : (const char *)p, rl);
		o += rl;
		p += adv;
		n -= adv;
	}
	out[o] = '\0';
	return o;
}

static void esc(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p), adv;

	while (n) {
		const char *rep = esc_step(p, n, &adv);

		if (rep)
			fputs(rep, out);
		else
			fwrite(p, 1, adv, out);
		p += adv;
		n -= adv;
	}
}

/* ---- formatting ----------------------------------------------------------- */

/* "2026-12-05 21:40:12Z" for Unix ms t (0: "never"). */
static void fmt_time(char *buf, size_t len, int64_t t_ms)
{
	time_t t = (time_t)(t_ms / 1000);
	struct tm tm;

	if (t_ms <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "never");
		return;
	}
	strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* "850 ms", "12.3 s", "4 min 3 s", "2 h 5 min", "3 d 4 h". */
static void fmt_span(char *buf, size_t len, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		snprintf(buf, len, "%" PRId64 " ms", ms);
	else if (ms < 60000)
		snprintf(buf, len, "%.1f s", (double)ms / 1000.0);
	else if (ms < 3600000)
		snprintf(buf, len, "%" PRId64 " min %" PRId64 " s", ms / 60000, ms / 1000 % 60);
	else if (ms < 86400000)
		snprintf(buf, len, "%" PRId64 " h %" PRId64 " min", ms / 3600000, ms / 60000 % 60);
	else
		snprintf(buf, len, "%" PRId64 " d %" PRId64 " h", ms / 86400000, ms / 3600000 % 24);
}

static void fmt_bytes(char *buf, size_t len, double b)
{
	if (b >= 1024.0 * 1024.0 * 1024.0)
		snprintf(buf, len, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
	else if (b >= 1024.0 * 1024.0)
		snprintf(buf, len, "%.1f MiB", b / (1024.0 * 1024.0));
	else
		snprintf(buf, len, "%.0f KiB", b / 1024.0);
}

/* <time datetime="ISO">text</time> of Unix ms t, with its age. */
static void put_when(FILE *out, int64_t now_ms, int64_t t_ms)
{
	char when[40], ago[40];

	if (t_ms <= 0) {
		fputs("<span class=\"none\">never</span>", out);
		return;
	}
	fmt_time(when, sizeof(when), t_ms);
	fmt_span(ago, sizeof(ago), now_ms - t_ms);
	fprintf(out, "<time datetime=\"%s\">%s</time> <span class=\"age\">(%s ago)</span>", when,
		when, ago);
}

/* s as <code>, escaped; when s is empty, placeholder greyed out. */
static void put_code(FILE *out, const char *s, const char *placeholder)
{
	if (s && s[0]) {
		fputs("<code>", out);
		esc(out, s);
		fputs("</code>", out);
	} else {
		fprintf(out, "<span class=\"none\">%s</span>", placeholder);
	}
}

/* ---- sections ------------------------------------------------------------- */

static const char STYLE[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.2em 2em;color:#1d2330;background:#fbfbfd}"
	"h1{font-size:1.5em;margin:0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ccd}"
	".sub{color:#556;margin:.2em 0 1em}table{border-collapse:collapse;width:100%}"
	"th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #e3e5ec;vertical-align:top}"
	"th{background:#eef0f5;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}"
	"code{font:13px ui-monospace,monospace;overflow-wrap:anywhere}.none,.age{color:#778}"
	".ok{color:#17692c;font-weight:600}.bad{color:#b3261e;font-weight:600}"
	".warn{color:#8a5a00;font-weight:600}.reason{color:#b3261e}"
	"dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:0}"
	"dt{color:#556}dd{margin:0}.cols{display:grid;grid-template-columns:1fr 1fr;gap:0 3em}"
	"td.name code,time,td.forwarded,td.refused b{white-space:nowrap}.legend{margin:0}.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}";

static void put_head(FILE *out, const struct status_view *v)
{
	char when[40];

	fmt_time(when, sizeof(when), v->now_ms);
	fprintf(out,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		"<meta http-equiv=\"refresh\" content=\"%d\">"
		"<meta name=\"viewport\" content=\"width=device-width\">"
		"<title>fencegate status</title><style>%s</style></head>\n<body>\n"
		"<h1>fencegate status</h1>\n<p class=\"sub\">version <b id=\"version\">",
		STATUS_REFRESH_S, STYLE);
	esc(out, v->version);
	fprintf(out, "</b> · rendered <time id=\"now\" datetime=\"%s\">%s</time> · "
		"reloads every %d s · <a href=\"?format=json\">JSON</a></p>\n",
		when, when, STATUS_REFRESH_S);
}

static void put_lease(FILE *out, const struct status_view *v, const struct statusboard_lock *l)
{
	char span[40];
	int64_t left;

	if (!l->noted || strcmp(l->state, "held") != 0 || l->lease_end_ms <= 0) {
		fputs("<span class=\"none\">—</span>", out);
		return;
	}
	left = l->lease_end_ms - v->now_ms;
	if (left <= 0) {
		fmt_span(span, sizeof(span), -left);
		fprintf(out, "<span class=\"warn\">lapsed %s ago</span>", span);
	} else {
		fmt_span(span, sizeof(span), left);
		fprintf(out, "%s", span);
	}
	fmt_span(span, sizeof(span), v->now_ms - l->noted_at_ms);
	fprintf(out, " <span class=\"age\">(as read %s ago)</span>", span);
}

/* A lock's writes over the window as two lines in a small SVG: forwarded
 * (green) and refused (red), scaled to its own busiest slot. */
static void put_sparkline(FILE *out, const uint32_t *forwarded, const uint32_t *refused)
{
	static const char *const colors[] = { "#2e8b57", "#c0392b" };
	const uint32_t *lines[] = { forwarded, refused };
	uint32_t max = 0;

	for (size_t i = 0; i < STATUSBOARD_SLOTS; i++) {
		if (forwarded[i] > max)
			max = forwarded[i];
		if (refused[i] > max)
			max = refused[i];
	}
	if (!max) {
		fputs("<span class=\"none\">—</span>", out);
		return;
	}
	fprintf(out, "<svg class=\"spark\" width=\"%d\" height=\"24\" viewBox=\"0 0 %d 24\">"
		"<title>busiest %d s: %u writes</title>", 2 * STATUSBOARD_SLOTS,
		2 * STATUSBOARD_SLOTS, STATUSBOARD_SLOT_MS / 1000, max);
	for (size_t l = 0; l < 2; l++) {
		fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
			colors[l]);
		for (size_t i = 0; i < STATUSBOARD_SLOTS; i++) /* whole pixels: cheap */
			fprintf(out, "%s%zu,%u", i ? " " : "", 2 * i,
				22u - (unsigned)(20ull * lines[l][i] / max));
		fputs("\"/>", out);
	}
	fputs("</svg>", out);
}

static void put_locks(FILE *out, const struct status_view *v)
{
	const struct statusboard_snapshot *b = v->board;

	fputs("<section id=\"locks\"><h2>Locks</h2>\n", out);
	if (!b->nlocks) {
		fputs("<p class=\"none\">No lock used since start.</p></section>\n", out);
		return;
	}
	fputs("<table><thead><tr><th>lock</th><th>epoch</th><th>state</th><th>holder</th>"
	      "<th>lease left</th><th>last loaded</th><th>forwarded</th><th>refused</th>"
	      "<th>last 10 min</th></tr></thead><tbody>\n", out);
	for (size_t i = 0; i < b->nlocks; i++) {
		const struct statusboard_lock *l = &b->locks[i];

		fputs("<tr class=\"lock\" data-lock=\"", out);
		esc(out, l->name);
		fputs("\"><td class=\"name\"><code>", out);
		esc(out, l->name);
		if (l->noted)
			fprintf(out, "</code></td><td class=\"epoch num\">%" PRIu64 "</td>"
				"<td class=\"state\">", l->epoch);
		else
			fputs("</code></td><td class=\"epoch num none\">—</td><td class=\"state\">",
			      out);
		esc(out, l->noted ? l->state : "not loaded");
		if (l->load_failed_at_ms) {
			char ago[40];

			fmt_span(ago, sizeof(ago), v->now_ms - l->load_failed_at_ms);
			fprintf(out, " <span class=\"bad load-failed\">load failed %s ago</span> "
				"<span class=\"age\">(the log says why)</span>", ago);
		}
		fputs("</td><td class=\"holder\">", out);
		put_code(out, l->noted ? l->holder : NULL, "—");
		fputs("</td><td class=\"lease\">", out);
		put_lease(out, v, l);
		fputs("</td><td class=\"loaded\">", out);
		put_when(out, v->now_ms, l->loaded_at_ms);
		fprintf(out, "</td><td class=\"forwarded num\">%" PRIu64 "</td>"
			"<td class=\"refused\"><b>%" PRIu64 "</b>", l->forwarded, l->refused);
		for (size_t k = 0; k < l->nreasons; k++) {
			fputs(k ? ", " : " (", out);
			fputs("<span class=\"reason\">", out);
			esc(out, l->reasons[k].reason);
			fprintf(out, "</span> %" PRIu64, l->reasons[k].count);
		}
		fputs(l->nreasons ? ")</td><td class=\"spark\">" : "</td><td class=\"spark\">", out);
		put_sparkline(out, l->series_forwarded, l->series_refused);
		fputs("</td></tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
	if (b->untracked)
		fprintf(out, "<p class=\"warn\">%" PRIu64 " writes of locks past the first %d "
			"are counted in the totals only.</p>\n", b->untracked, STATUSBOARD_LOCKS);
	fputs("</section>\n", out);
}

static void put_epoch(FILE *out, const char *cls, bool has, uint64_t epoch)
{
	if (has)
		fprintf(out, "<td class=\"%s num\">%" PRIu64 "</td>", cls, epoch);
	else
		fprintf(out, "<td class=\"%s num none\">—</td>", cls);
}

static void put_refusals(FILE *out, const struct status_view *v)
{
	const struct statusboard_snapshot *b = v->board;
	char when[40];

	fprintf(out, "<section id=\"refused\"><h2>Last refused writes</h2>\n"
		"<p class=\"sub\">%" PRIu64 " forwarded and %" PRIu64 " refused since start; the "
		"last %d refusals, newest first.</p>\n", b->forwarded, b->refused, STATUSBOARD_RING);
	if (!b->nring) {
		fputs("<p class=\"none\">No write refused since start.</p></section>\n", out);
		return;
	}
	fputs("<table><thead><tr><th>time</th><th>client</th><th>lock</th><th>request</th>"
	      "<th>presented</th><th>current</th><th>reason</th></tr></thead><tbody>\n", out);
	for (size_t i = 0; i < b->nring; i++) {
		const struct statusboard_refusal *r = &b->ring[i];

		fmt_time(when, sizeof(when), r->at_ms);
		fprintf(out, "<tr class=\"refusal\"><td class=\"time\"><time datetime=\"%s\">%s"
			"</time></td><td class=\"client\">", when, when);
		put_code(out, r->client, "anonymous");
		fputs("</td><td class=\"lock\">", out);
		put_code(out, r->lock, "—");
		fputs("</td><td class=\"request\"><code>", out);
		esc(out, r->method);
		fputs(" ", out);
		esc(out, r->resource);
		fputs(r->resource_cut ? "…</code></td>" : "</code></td>", out);
		put_epoch(out, "presented", r->has_presented, r->presented);
		put_epoch(out, "current", r->has_current, r->current);
		fputs("<td class=\"reason\">", out);
		esc(out, r->reason);
		fputs("</td></tr>\n", out);
	}
	fputs("</tbody></table></section>\n", out);
}

/* Forwarded (green) over refused (red) per slot, stacked. */
static void put_chart(FILE *out, const struct status_view *v)
{
	const struct statusboard_snapshot *b = v->board;
	const int w = 720, h = 150, left = 40, top = 10, plot_h = 110;
	const double slot_w = (double)(w - left - 10) / STATUSBOARD_SLOTS;
	uint32_t max = 1;

	for (size_t i = 0; i < STATUSBOARD_SLOTS; i++)
		if (b->series_forwarded[i] + b->series_refused[i] > max)
			max = b->series_forwarded[i] + b->series_refused[i];
	fprintf(out, "<section id=\"chart\"><h2>Writes, last %d minutes</h2>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" role=\"img\" aria-labelledby=\"chart-title\">"
		"<title id=\"chart-title\">forwarded and refused writes per %d s</title>"
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#ccd\"/>"
		"<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%u</text>"
		"<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">0</text>",
		STATUSBOARD_SLOTS * STATUSBOARD_SLOT_MS / 60000, w, h, w, h,
		STATUSBOARD_SLOT_MS / 1000, left, top, w - left - 10, plot_h, left - 4, top + 10,
		max, left - 4, top + plot_h);
	for (size_t i = 0; i < STATUSBOARD_SLOTS; i++) {
		uint32_t f = b->series_forwarded[i], r = b->series_refused[i];
		double x = left + slot_w * (double)i + 1;
		double fh = (double)plot_h * f / max, rh = (double)plot_h * r / max;
		double base = top + plot_h;

		if (!f && !r)
			continue;
		fprintf(out, "<g><title>%u forwarded, %u refused</title>", f, r);
		if (f)
			fprintf(out, "<rect class=\"fwd\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				"height=\"%.1f\" fill=\"#2e8b57\"/>", x, base - fh, slot_w - 2, fh);
		if (r)
			fprintf(out, "<rect class=\"ref\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				"height=\"%.1f\" fill=\"#c0392b\"/>", x, base - fh - rh, slot_w - 2, rh);
		fputs("</g>", out);
	}
	fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"11\">−%d min</text>"
		"<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">now</text></svg>\n"
		"<p class=\"legend\"><span style=\"background:#2e8b57\"></span>forwarded"
		"<span style=\"background:#c0392b\"></span>refused</p></section>\n",
		left, top + plot_h + 16, STATUSBOARD_SLOTS * STATUSBOARD_SLOT_MS / 60000,
		w - 10, top + plot_h + 16);
}

static void put_storage(FILE *out, const struct status_view *v)
{
	static const char *const test_names[] = { "not configured", "running", "passed", "failed" };
	static const char *const test_cls[] = { "none", "warn", "ok", "bad" };
	int64_t last_load = 0;
	char span[40];

	for (size_t i = 0; i < v->board->nlocks; i++)
		if (v->board->locks[i].loaded_at_ms > last_load)
			last_load = v->board->locks[i].loaded_at_ms;
	fputs("<section id=\"storage\"><h2>Storage</h2><dl>\n<dt>mode</dt><dd>", out);
	esc(out, v->mode);
	fprintf(out, "</dd>\n<dt>backend self-test</dt><dd id=\"self-test\"><span class=\"%s\">%s</span>",
		test_cls[v->self_test], test_names[v->self_test]);
	if (v->self_test_message && v->self_test_message[0]) {
		fputs(": ", out);
		esc(out, v->self_test_message);
	}
	fprintf(out, " <span class=\"age\">(%d of %d event loops passed; it probes "
		"If-None-Match create, If-Match replace and delete)</span></dd>\n<dt>upstream</dt><dd id=\"upstream\">",
		v->workers_passed, v->workers);
	fmt_span(span, sizeof(span), v->probe_interval_ms);
	if (v->probe == STATUS_PROBE_UP)
		fprintf(out, "<span class=\"ok\">answering</span> <span class=\"age\">(a listing "
			"every %s)</span>", span);
	else if (v->probe == STATUS_PROBE_DOWN) {
		fputs("<span class=\"bad\">not answering</span>: ", out);
		esc(out, v->probe_message);
	} else {
		fputs("<span class=\"none\">not probed</span>", out);
	}
	fputs("</dd>\n<dt>last lock load</dt><dd>", out);
	put_when(out, v->now_ms, last_load);
	fputs("</dd>\n<dt>lock-store errors</dt><dd id=\"store-errors\">", out);
	if (!v->nstore_errors)
		fputs("<span class=\"ok\">none</span>", out);
	for (size_t i = 0; i < v->nstore_errors; i++) {
		fputs(i ? ", " : "", out);
		esc(out, v->store_errors[i].op);
		fprintf(out, " <b>%.0f</b>", v->store_errors[i].count);
	}
	fputs("</dd></dl></section>\n", out);
}

static void put_process(FILE *out, const struct status_view *v)
{
	char started[40], up[40], rss[40];

	fmt_time(started, sizeof(started), v->started_ms);
	fmt_span(up, sizeof(up), v->started_ms > 0 ? v->now_ms - v->started_ms : 0);
	fmt_bytes(rss, sizeof(rss), v->resident_bytes);
	fputs("<section id=\"process\"><h2>Process</h2><dl>\n<dt>version</dt><dd>", out);
	esc(out, v->version);
	fprintf(out, "</dd>\n<dt>started</dt><dd>%s <span class=\"age\">(up %s)</span></dd>\n"
		"<dt>event-loop workers</dt><dd>%d</dd>\n"
		"<dt>connections</dt><dd>%.0f open, %.0f accepted since start</dd>\n"
		"<dt>requests in flight</dt><dd>%.0f</dd>\n"
		"<dt>memory</dt><dd>%s resident</dd>\n<dt>CPU time</dt><dd>%.2f s</dd>\n"
		"<dt>file descriptors</dt><dd>%.0f of %.0f</dd></dl></section>\n",
		started, up, v->workers, v->connections_open, v->connections_accepted,
		v->in_flight, rss, v->cpu_seconds, v->open_fds, v->max_fds);
}

char *status_html(const struct status_view *v, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&buf, &n);

	if (!out)
		return NULL;
	/* the overview first; the long list of refusals last */
	put_head(out, v);
	put_locks(out, v);
	fputs("<div class=\"cols\">", out);
	put_storage(out, v);
	put_process(out, v);
	fputs("</div>\n", out);
	put_chart(out, v);
	put_refusals(out, v);
	fputs("</body></html>\n", out);
	if (fclose(out) != 0) {
		free(buf);
		return NULL;
	}
	if (len)
		*len = n;
	return buf;
}
