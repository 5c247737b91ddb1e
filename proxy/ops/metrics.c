/* metrics.c — counters, gauges and histograms with labels, rendered in the
 * Prometheus text format. It keeps values in memory only; serving them over
 * HTTP is the lock API's job. One registry serves every event-loop worker:
 * a mutex per registry makes each update and each rendering atomic (an
 * update is a few arithmetic operations, so the lock is held briefly). */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "procstat.h"
#include "wire/utf8.h"

struct series {
	char *values[METRICS_LABELS_MAX];
	double value;              /* counter, gauge */
	uint64_t *buckets;         /* histogram: per-bucket (not cumulative),
				    * nbounds + 1 (the last is +Inf) */
	double sum;
	uint64_t count;
};

struct metrics_family {
	enum metrics_type type;
	char *name;
	char *help;
	size_t nlabels;
	char *label_names[METRICS_LABELS_MAX];
	double bounds[METRICS_BUCKETS_MAX];
	size_t nbounds;
	struct series *series;
	size_t nseries, cap;
	struct metrics *registry;
	struct metrics_family *next;
};

struct metrics {
	pthread_mutex_t mu;     /* everything below and every family's series */
	struct metrics_family *first, *last;
	uint64_t dropped;
};

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(struct metrics));

	if (m && pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return NULL;
	}
	return m;
}

static void family_free(struct metrics_family *f)
{
	size_t i, j;

	if (!f)
		return;
	for (i = 0; i < f->nseries; i++) {
		for (j = 0; j < f->nlabels; j++)
			free(f->series[i].values[j]);
		free(f->series[i].buckets);
	}
	free(f->series);
	for (j = 0; j < f->nlabels; j++)
		free(f->label_names[j]);
	free(f->name);
	free(f->help);
	free(f);
}

void metrics_free(struct metrics *m)
{
	struct metrics_family *f, *next;

	if (!m)
		return;
	for (f = m->first; f; f = next) {
		next = f->next;
		family_free(f);
	}
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static bool name_valid(const char *s, bool colon_ok)
{
	const char *p;

	if (!s || !*s)
		return false;
	for (p = s; *p; p++) {
		char c = *p;
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			     (colon_ok && c == ':');

		if (!alpha && !(p > s && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

struct metrics_family *metrics_register(struct metrics *m, enum metrics_type type,
					const char *name, const char *help,
					size_t nlabels, const char *const *label_names,
					const double *bounds, size_t nbounds)
{
	struct metrics_family *f = NULL, *g;
	size_t i;

	if (!m || !name_valid(name, true) || nlabels > METRICS_LABELS_MAX ||
	    (nlabels && !label_names))
		return NULL;
	for (g = m->first; g; g = g->next)
		if (strcmp(g->name, name) == 0)
			return NULL;
	for (i = 0; i < nlabels; i++)
		if (!name_valid(label_names[i], false) || strcmp(label_names[i], "le") == 0)
			return NULL;
	if (type == METRICS_HISTOGRAM) {
		if (!bounds || nbounds == 0 || nbounds > METRICS_BUCKETS_MAX)
			return NULL;
		for (i = 0; i < nbounds; i++)
			if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
				return NULL;
	} else {
		nbounds = 0;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		goto fail;
	f->type = type;
	f->nlabels = nlabels;
	f->nbounds = nbounds;
	if (nbounds)
		memcpy(f->bounds, bounds, nbounds * sizeof(*bounds));
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	if (!f->name || !f->help)
		goto fail;
	for (i = 0; i < nlabels; i++)
		if (!(f->label_names[i] = strdup(label_names[i])))
			goto fail;
	f->registry = m;
	pthread_mutex_lock(&m->mu);
	for (g = m->first; g; g = g->next) {
		if (strcmp(g->name, name) == 0) {
			pthread_mutex_unlock(&m->mu);
			goto fail;
		}
	}
	if (m->last)
		m->last->next = f;
	else
		m->first = f;
	m->last = f;
	pthread_mutex_unlock(&m->mu);
	return f;
fail:
	family_free(f);
	return NULL;
}

/* The series for values, created on first use; NULL past the cap or ENOMEM. */
static struct series *series_get(struct metrics_family *f, const char *const *values)
{
	struct series *s;
	size_t i, j;

	for (i = 0; i < f->nseries; i++) {
		for (j = 0; j < f->nlabels; j++)
			if (strcmp(f->series[i].values[j], values[j] ? values[j] : "") != 0)
				break;
		if (j == f->nlabels)
			return &f->series[i];
	}
	if (f->nseries == METRICS_SERIES_MAX)
		goto drop;
	if (f->nseries == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		struct series *grown = realloc(f->series, cap * sizeof(*grown));

		if (!grown)
			goto drop;
		f->series = grown;
		f->cap = cap;
	}
	s = &f->series[f->nseries];
	memset(s, 0, sizeof(*s));
	for (j = 0; j < f->nlabels; j++)
		if (!(s->values[j] = strdup(values[j] ? values[j] : "")))
			goto undo;
	if (f->type == METRICS_HISTOGRAM &&
	    !(s->buckets = calloc(f->nbounds + 1, sizeof(*s->buckets))))
		goto undo;
	f->nseries++;
	return s;
undo:
	for (j = 0; j < f->nlabels; j++)
		free(s->values[j]);
	free(s->buckets);
drop:
	f->registry->dropped++;
	return NULL;
}

static int metrics_add_locked(struct metrics_family *f, const char *const *values, double v)
{
	struct series *s;

	if (!f || f->type == METRICS_HISTOGRAM || isnan(v) ||
	    (f->type == METRICS_COUNTER && v < 0) || (f->nlabels && !values))
		return -1;
	if (!(s = series_get(f, values)))
		return -1;
	s->value += v;
	return 0;
}

static int metrics_set_locked(struct metrics_family *f, const char *const *values, double v)
{
	struct series *s;

	if (!f || f->type == METRICS_HISTOGRAM || isnan(v) || (f->nlabels && !values))
		return -1;
	if (!(s = series_get(f, values)))
		return -1;
	if (f->type == METRICS_COUNTER && v < s->value)
		return -1;
	s->value = v;
	return 0;
}

static int metrics_observe_locked(struct metrics_family *f, const char *const *values, double v)
{
	struct series *s;
	size_t i;

	if (!f || f->type != METRICS_HISTOGRAM || isnan(v) || (f->nlabels && !values))
		return -1;
	if (!(s = series_get(f, values)))
		return -1;
	for (i = 0; i < f->nbounds && v > f->bounds[i]; i++)
		;
	s->buckets[i]++;
	s->sum += v;
	s->count++;
	return 0;
}

/* The public updates: one at a time per registry. */
#define LOCKED_UPDATE(fn)                                                          \
	int fn(struct metrics_family *f, const char *const *values, double v)      \
	{                                                                          \
		int rc;                                                            \
                                                                                   \
		if (!f)                                                            \
			return -1;                                                 \
		pthread_mutex_lock(&f->registry->mu);                              \
		rc = fn##_locked(f, values, v);                                    \
		pthread_mutex_unlock(&f->registry->mu);                            \
		return rc;                                                         \
	}
LOCKED_UPDATE(metrics_add)
LOCKED_UPDATE(metrics_set)
LOCKED_UPDATE(metrics_observe)

/* A float as Prometheus reads it: shortest of %.15g/%.17g that round-trips. */
int metrics_each(struct metrics_family *f, metrics_each_fn fn, void *arg)
{
	int n;

	if (!f || f->type == METRICS_HISTOGRAM)
		return -1;
	pthread_mutex_lock(&f->registry->mu);
	for (size_t i = 0; i < f->nseries; i++)
		fn((const char *const *)f->series[i].values, f->series[i].value, arg);
	n = (int)f->nseries;
	pthread_mutex_unlock(&f->registry->mu);
	return n;
}

static void fmt_value(char *buf, size_t len, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
	} else if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	} else {
		snprintf(buf, len, "%.15g", v);
		if (strtod(buf, NULL) != v)
			snprintf(buf, len, "%.17g", v);
	}
}

/* Writes s escaped: always \\ and \n; \" too inside label values. */
static void put_escaped(FILE *out, const char *s, bool label_value)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), l;

	while (n > 0) {
		if (*p == '\\') {
			fputs("\\\\", out);
			l = 1;
		} else if (*p == '\n') {
			fputs("\\n", out);
			l = 1;
		} else if (*p == '"' && label_value) {
			fputs("\\\"", out);
			l = 1;
		} else if ((l = utf8_seq_len(p, n)) == 0) {
			fputs("\xEF\xBF\xBD", out);
			l = 1;
		} else {
			fwrite(p, 1, l, out);
		}
		p += l;
		n -= l;
	}
}

/* {a="x",b="y"[,le="..."]} — nothing when there are no labels at all. */
static void put_labels(FILE *out, const struct metrics_family *f, const struct series *s,
		       const char *le)
{
	size_t j;

	if (f->nlabels == 0 && !le)
		return;
	fputc('{', out);
	for (j = 0; j < f->nlabels; j++) {
		fprintf(out, "%s%s=\"", j ? "," : "", f->label_names[j]);
		put_escaped(out, s->values[j], true);
		fputc('"', out);
	}
	if (le)
		fprintf(out, "%sle=\"%s\"", f->nlabels ? "," : "", le);
	fputc('}', out);
}

static void render_family(FILE *out, const struct metrics_family *f)
{
	static const char *const type_names[] = { "counter", "gauge", "histogram" };
	char num[40], le[40];
	size_t i, b;

	fprintf(out, "# HELP %s ", f->name);
	put_escaped(out, f->help, false);
	fprintf(out, "\n# TYPE %s %s\n", f->name, type_names[f->type]);
	for (i = 0; i < f->nseries; i++) {
		const struct series *s = &f->series[i];
		uint64_t cumulative = 0;

		if (f->type != METRICS_HISTOGRAM) {
			fmt_value(num, sizeof(num), s->value);
			fputs(f->name, out);
			put_labels(out, f, s, NULL);
			fprintf(out, " %s\n", num);
			continue;
		}
		for (b = 0; b <= f->nbounds; b++) {
			cumulative += s->buckets[b];
			if (b < f->nbounds)
				fmt_value(le, sizeof(le), f->bounds[b]);
			else
				snprintf(le, sizeof(le), "+Inf");
			fprintf(out, "%s_bucket", f->name);
			put_labels(out, f, s, le);
			fprintf(out, " %llu\n", (unsigned long long)cumulative);
		}
		fmt_value(num, sizeof(num), s->sum);
		fprintf(out, "%s_sum", f->name);
		put_labels(out, f, s, NULL);
		fprintf(out, " %s\n%s_count", num, f->name);
		put_labels(out, f, s, NULL);
		fprintf(out, " %llu\n", (unsigned long long)s->count);
	}
}

char *metrics_render(const struct metrics *m, size_t *len)
{
	const struct metrics_family *f;
	char *buf = NULL;
	size_t size = 0;
	FILE *out;

	out = open_memstream(&buf, &size);
	if (!out)
		return NULL;
	pthread_mutex_lock((pthread_mutex_t *)&m->mu);
	for (f = m->first; f; f = f->next)
		render_family(out, f);
	fprintf(out, "# HELP fencegate_metrics_dropped_total Metric updates dropped "
		"(series cap reached or out of memory).\n"
		"# TYPE fencegate_metrics_dropped_total counter\n"
		"fencegate_metrics_dropped_total %llu\n", (unsigned long long)m->dropped);
	pthread_mutex_unlock((pthread_mutex_t *)&m->mu);
	if (ferror(out)) {
		fclose(out);
		free(buf);
		return NULL;
	}
	if (fclose(out) != 0) {
		free(buf);
		return NULL;
	}
	if (len)
		*len = size;
	return buf;
}

const char *metrics_method_label(const char *method)
{
	static const char *const known[] = {
		"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS",
	};
	size_t i;

	for (i = 0; method && i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(method, known[i]) == 0)
			return known[i];
	return "OTHER";
}

int fencegate_metrics_init(struct fencegate_metrics *fm)
{
	static const double latency_bounds[] = {
		0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	};
	static const char *const method_outcome[] = { "method", "outcome" };
	static const char *const code[] = { "code" };
	static const char *const lock[] = { "lock" };
	static const char *const version[] = { "version" };
	static const char *const status[] = { "status" };
	static const char *const op[] = { "op" };
	static const char *const result[] = { "result" };
	struct metrics *r;

	memset(fm, 0, sizeof(*fm));
	r = fm->registry = metrics_new();
	if (!r)
		return -1;
	fm->requests = metrics_register(r, METRICS_COUNTER, "fencegate_requests_total",
					"Requests handled, by method and outcome.",
					2, method_outcome, NULL, 0);
	fm->rejections = metrics_register(r, METRICS_COUNTER, "fencegate_rejections_total",
					  "Requests refused by the proxy, by error code.",
					  1, code, NULL, 0);
	fm->in_flight = metrics_register(r, METRICS_GAUGE, "fencegate_in_flight_requests",
					 "Requests being processed now.", 0, NULL, NULL, 0);
	fm->lock_epoch = metrics_register(r, METRICS_GAUGE, "fencegate_lock_current_epoch",
					  "Highest epoch the proxy knows, per lock.",
					  1, lock, NULL, 0);
	fm->upstream_latency = metrics_register(r, METRICS_HISTOGRAM,
						"fencegate_upstream_latency_seconds",
						"Time from sending a request upstream to its "
						"response headers.", 0, NULL, latency_bounds,
						sizeof(latency_bounds) / sizeof(latency_bounds[0]));
	fm->etag_cache_hits = metrics_register(r, METRICS_COUNTER,
					       "fencegate_etag_cache_hits_total",
					       "Object ETag cache lookups that hit.", 0, NULL, NULL, 0);
	fm->etag_cache_misses = metrics_register(r, METRICS_COUNTER,
						 "fencegate_etag_cache_misses_total",
						 "Object ETag cache lookups that missed.",
						 0, NULL, NULL, 0);
	fm->build_info = metrics_register(r, METRICS_GAUGE, "fencegate_build_info",
					  "The running build (value 1).", 1, version, NULL, 0);
	fm->cpu_seconds = metrics_register(r, METRICS_COUNTER, "process_cpu_seconds_total",
					   "User and system CPU time spent, in seconds.",
					   0, NULL, NULL, 0);
	fm->rss_bytes = metrics_register(r, METRICS_GAUGE, "process_resident_memory_bytes",
					 "Resident memory, in bytes.", 0, NULL, NULL, 0);
	fm->open_fds = metrics_register(r, METRICS_GAUGE, "process_open_fds",
					"Open file descriptors.", 0, NULL, NULL, 0);
	fm->max_fds = metrics_register(r, METRICS_GAUGE, "process_max_fds",
				       "The open file descriptor limit.", 0, NULL, NULL, 0);
	fm->start_time = metrics_register(r, METRICS_GAUGE, "process_start_time_seconds",
					  "Start time of the process, Unix seconds.",
					  0, NULL, NULL, 0);
	fm->conns_open = metrics_register(r, METRICS_GAUGE, "fencegate_connections_open",
					  "Client connections open now.", 0, NULL, NULL, 0);
	fm->conns_accepted = metrics_register(r, METRICS_COUNTER,
					      "fencegate_connections_accepted_total",
					      "Client connections accepted.", 0, NULL, NULL, 0);
	fm->responses = metrics_register(r, METRICS_COUNTER, "fencegate_responses_total",
					 "Responses sent, by HTTP status.", 1, status, NULL, 0);
	fm->store_seconds = metrics_register(r, METRICS_HISTOGRAM, "fencegate_lock_store_seconds",
					     "Time of lock-store operations (loads, lock API "
					     "calls), by operation.", 1, op, latency_bounds,
					     sizeof(latency_bounds) / sizeof(latency_bounds[0]));
	fm->store_errors = metrics_register(r, METRICS_COUNTER, "fencegate_lock_store_errors_total",
					    "Lock-store operations that failed, by operation.",
					    1, op, NULL, 0);
	fm->reloads = metrics_register(r, METRICS_COUNTER, "fencegate_reloads_total",
				       "Configuration reloads (SIGHUP), by result.",
				       1, result, NULL, 0);
	fm->self_test = metrics_register(r, METRICS_GAUGE, "fencegate_self_test_passed",
					 "1 once the backend self-test passed, else 0.",
					 0, NULL, NULL, 0);
	if (!fm->requests || !fm->rejections || !fm->in_flight || !fm->lock_epoch ||
	    !fm->upstream_latency || !fm->etag_cache_hits || !fm->etag_cache_misses ||
	    !fm->build_info || !fm->cpu_seconds || !fm->rss_bytes || !fm->open_fds ||
	    !fm->max_fds || !fm->start_time || !fm->conns_open || !fm->conns_accepted ||
	    !fm->responses || !fm->store_seconds || !fm->store_errors || !fm->reloads ||
	    !fm->self_test) {
		fencegate_metrics_free(fm);
		return -1;
	}
	/* Unlabelled series exist from the start, so they render as 0. */
	metrics_set(fm->in_flight, NULL, 0);
	metrics_set(fm->etag_cache_hits, NULL, 0);
	metrics_set(fm->etag_cache_misses, NULL, 0);
	metrics_set(fm->build_info, (const char *[]){ FENCE_VERSION }, 1);
	metrics_set(fm->conns_open, NULL, 0);
	metrics_set(fm->conns_accepted, NULL, 0);
	metrics_set(fm->self_test, NULL, 0);
	metrics_add(fm->reloads, (const char *[]){ "ok" }, 0);
	metrics_add(fm->reloads, (const char *[]){ "refused" }, 0);
	fencegate_metrics_update_process(fm);
	return 0;
}

void fencegate_metrics_update_process(struct fencegate_metrics *fm)
{
	struct procstat ps;

	procstat_read(&ps); /* what could not be read stays 0 */
	metrics_set(fm->cpu_seconds, NULL, ps.cpu_seconds);
	metrics_set(fm->rss_bytes, NULL, ps.resident_bytes);
	metrics_set(fm->open_fds, NULL, ps.open_fds);
	metrics_set(fm->max_fds, NULL, ps.max_fds);
	metrics_set(fm->start_time, NULL, ps.start_time);
}

void fencegate_metrics_free(struct fencegate_metrics *fm)
{
	if (!fm)
		return;
	metrics_free(fm->registry);
	memset(fm, 0, sizeof(*fm));
}
