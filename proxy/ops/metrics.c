/* metrics.c — counters, gauges and histograms with labels, rendered in the
 * Prometheus text format. It keeps values in memory only; serving them over
 * HTTP is the lock API's job.
 *
 * One registry serves every event-loop worker without a lock on the
 * update path: each thread that updates gets cells of its own (a shard),
 * adds there with plain loads and stores (it is the only writer), and a
 * reader sums every shard's cells at render time. What a series is (its
 * label values) is shared and append-only: created once under the
 * registry's mutex, published with a release store, looked up without the
 * lock. metrics_set writes a shared base per series (the value less what
 * the shards added), so a set still means "the value is now v". Threads
 * past METRICS_SHARDS_MAX share one last shard through atomic
 * read-modify-writes. Registering, creating a series, rendering and
 * metrics_each take the mutex; nothing frees a series before
 * metrics_free. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "procstat.h"
#include "wire/utf8.h"

#define SERIES_CHUNK 32  /* series per chunk: chunks never move once published */
#define SERIES_CHUNKS ((METRICS_SERIES_MAX + SERIES_CHUNK - 1) / SERIES_CHUNK)
#define SHARED_SHARD METRICS_SHARDS_MAX /* the shard of threads past the cap */

typedef _Atomic uint64_t cell_t; /* a double's bits, or a bucket's count */

struct series {                    /* immutable once published, but base */
	char *values[METRICS_LABELS_MAX];
	cell_t base;               /* counter, gauge: bits of a double */
};

/* One thread's cells of one family: per series ncells cells (counter and
 * gauge: the sum of its adds; histogram: nbounds + 1 per-bucket counts,
 * then the sum of observations), SERIES_CHUNK series per chunk. */
struct family_shard {
	_Atomic(cell_t *) chunk[SERIES_CHUNKS];
};

struct metrics_family {
	enum metrics_type type;
	char *name;
	char *help;
	size_t nlabels;
	char *label_names[METRICS_LABELS_MAX];
	double bounds[METRICS_BUCKETS_MAX];
	size_t nbounds;
	size_t ncells;
	_Atomic(struct series *) ids[SERIES_CHUNKS];
	_Atomic size_t nseries;
	atomic_bool has_adds;      /* a shard ever added to a counter or gauge */
	_Atomic(struct family_shard *) shard[METRICS_SHARDS_MAX + 1];
	struct metrics *registry;
	struct metrics_family *next;
};

struct metrics {
	pthread_mutex_t mu;        /* the family list, series creation, owners */
	uint64_t id;               /* unique per registry, never reused */
	struct metrics_family *first, *last;
	_Atomic uint64_t dropped;
	pthread_t owner[METRICS_SHARDS_MAX]; /* the thread of each shard */
	size_t nowners;
};

static _Atomic uint64_t next_registry_id = 1;

/* The calling thread's shard in the registry it used last. */
static _Thread_local struct {
	uint64_t id;
	size_t shard;
} tl_shard;

static uint64_t bits_of(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

static double double_of(uint64_t u)
{
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(struct metrics));

	if (m && pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return NULL;
	}
	if (m)
		m->id = atomic_fetch_add(&next_registry_id, 1);
	return m;
}

static void family_free(struct metrics_family *f)
{
	size_t i, j, n;

	if (!f)
		return;
	n = atomic_load(&f->nseries);
	for (i = 0; i < SERIES_CHUNKS; i++) {
		struct series *chunk = atomic_load(&f->ids[i]);

		for (j = 0; chunk && j < SERIES_CHUNK && i * SERIES_CHUNK + j < n; j++)
			for (size_t l = 0; l < f->nlabels; l++)
				free(chunk[j].values[l]);
		free(chunk);
	}
	for (i = 0; i <= METRICS_SHARDS_MAX; i++) {
		struct family_shard *fs = atomic_load(&f->shard[i]);

		for (j = 0; fs && j < SERIES_CHUNKS; j++)
			free(atomic_load(&fs->chunk[j]));
		free(fs);
	}
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
	f->ncells = type == METRICS_HISTOGRAM ? nbounds + 2 : 1;
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

/* ---- series: shared, append-only ------------------------------------ */

static struct series *series_at(struct metrics_family *f, size_t i)
{
	struct series *chunk = atomic_load_explicit(&f->ids[i / SERIES_CHUNK],
						    memory_order_acquire);

	return &chunk[i % SERIES_CHUNK];
}

/* The index among the first n series whose labels are values, or -1. */
static long series_find(struct metrics_family *f, const char *const *values, size_t from,
			size_t n)
{
	size_t i, j;

	for (i = from; i < n; i++) {
		const struct series *s = series_at(f, i);

		for (j = 0; j < f->nlabels; j++)
			if (strcmp(s->values[j], values[j] ? values[j] : "") != 0)
				break;
		if (j == f->nlabels)
			return (long)i;
	}
	return -1;
}

/* The index of the series for values, created on first use (under the
 * mutex); -1 past the cap or on ENOMEM (counted as dropped). */
static long series_index(struct metrics_family *f, const char *const *values)
{
	struct metrics *m = f->registry;
	size_t n = atomic_load_explicit(&f->nseries, memory_order_acquire), j;
	struct series *chunk, *s;
	long i = series_find(f, values, 0, n);

	if (i >= 0)
		return i;
	pthread_mutex_lock(&m->mu);
	i = series_find(f, values, n, atomic_load_explicit(&f->nseries, memory_order_relaxed));
	if (i >= 0)
		goto out;
	n = atomic_load_explicit(&f->nseries, memory_order_relaxed);
	if (n == METRICS_SERIES_MAX)
		goto drop;
	chunk = atomic_load_explicit(&f->ids[n / SERIES_CHUNK], memory_order_relaxed);
	if (!chunk) {
		chunk = calloc(SERIES_CHUNK, sizeof(*chunk));
		if (!chunk)
			goto drop;
		atomic_store_explicit(&f->ids[n / SERIES_CHUNK], chunk, memory_order_release);
	}
	s = &chunk[n % SERIES_CHUNK];
	for (j = 0; j < f->nlabels; j++) {
		if (!(s->values[j] = strdup(values[j] ? values[j] : ""))) {
			while (j-- > 0) {
				free(s->values[j]);
				s->values[j] = NULL;
			}
			goto drop;
		}
	}
	atomic_store_explicit(&f->nseries, n + 1, memory_order_release);
	i = (long)n;
	goto out;
drop:
	atomic_fetch_add(&m->dropped, 1);
	i = -1;
out:
	pthread_mutex_unlock(&m->mu);
	return i;
}

/* ---- shards: one writer each ------------------------------------------ */

/* The calling thread's shard: its own while there is room, else the
 * shared one. */
static size_t shard_of(struct metrics *m)
{
	pthread_t self;
	size_t i;

	if (tl_shard.id == m->id)
		return tl_shard.shard;
	self = pthread_self();
	pthread_mutex_lock(&m->mu);
	for (i = 0; i < m->nowners && !pthread_equal(m->owner[i], self); i++)
		;
	if (i == m->nowners && m->nowners < METRICS_SHARDS_MAX)
		m->owner[m->nowners++] = self;
	pthread_mutex_unlock(&m->mu);
	tl_shard.id = m->id;
	tl_shard.shard = i < METRICS_SHARDS_MAX ? i : SHARED_SHARD;
	return tl_shard.shard;
}

/* *slot, allocated (zeroed, size bytes) and published on first use; NULL
 * on ENOMEM. Several threads may race only on the shared shard: the loser
 * frees its copy. */
static void *publish(void *_Atomic *slot, size_t size)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire), *expected = NULL;

	if (p)
		return p;
	p = calloc(1, size);
	if (!p)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(slot, &expected, p, memory_order_acq_rel,
						     memory_order_acquire)) {
		free(p);
		return expected;
	}
	return p;
}

/* The calling thread's cells of series idx; NULL on ENOMEM. */
static cell_t *cells_of(struct metrics_family *f, size_t shard, size_t idx)
{
	struct family_shard *fs = publish((void *_Atomic *)&f->shard[shard], sizeof(*fs));
	cell_t *chunk;

	if (!fs)
		return NULL;
	chunk = publish((void *_Atomic *)&fs->chunk[idx / SERIES_CHUNK],
			SERIES_CHUNK * f->ncells * sizeof(cell_t));
	return chunk ? chunk + idx % SERIES_CHUNK * f->ncells : NULL;
}

/* cell += v (a double's bits): a plain load and store for the shard's only
 * writer, a compare-and-swap loop on the shared shard. */
static void cell_add_double(cell_t *c, double v, bool shared)
{
	uint64_t old = atomic_load_explicit(c, memory_order_relaxed);

	if (!shared) {
		atomic_store_explicit(c, bits_of(double_of(old) + v), memory_order_relaxed);
		return;
	}
	while (!atomic_compare_exchange_weak_explicit(c, &old, bits_of(double_of(old) + v),
						      memory_order_relaxed, memory_order_relaxed))
		;
}

static void cell_inc(cell_t *c, bool shared)
{
	if (shared)
		atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
	else
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
				      memory_order_relaxed);
}

/* Shard i's cell k of series idx, or NULL where that thread never wrote. */
static cell_t *shard_cell(struct metrics_family *f, size_t i, size_t idx, size_t k)
{
	struct family_shard *fs = atomic_load_explicit(&f->shard[i], memory_order_acquire);
	cell_t *chunk = fs ? atomic_load_explicit(&fs->chunk[idx / SERIES_CHUNK],
						  memory_order_acquire) : NULL;

	return chunk ? &chunk[idx % SERIES_CHUNK * f->ncells + k] : NULL;
}

/* Sum over every shard of cell k of series idx: a count, or a double. */
static uint64_t sum_count(struct metrics_family *f, size_t idx, size_t k)
{
	uint64_t total = 0;
	cell_t *c;

	for (size_t i = 0; i <= METRICS_SHARDS_MAX; i++)
		if ((c = shard_cell(f, i, idx, k)))
			total += atomic_load_explicit(c, memory_order_relaxed);
	return total;
}

static double sum_double(struct metrics_family *f, size_t idx, size_t k)
{
	double total = 0;
	cell_t *c;

	for (size_t i = 0; i <= METRICS_SHARDS_MAX; i++)
		if ((c = shard_cell(f, i, idx, k)))
			total += double_of(atomic_load_explicit(c, memory_order_relaxed));
	return total;
}

/* A counter's or gauge's value: its base plus every shard's adds. */
static double series_value(struct metrics_family *f, size_t idx)
{
	double base = double_of(atomic_load_explicit(&series_at(f, idx)->base,
						     memory_order_relaxed));

	if (!atomic_load_explicit(&f->has_adds, memory_order_relaxed))
		return base;
	return base + sum_double(f, idx, 0);
}

/* ---- updates ---------------------------------------------------------- */

int metrics_add(struct metrics_family *f, const char *const *values, double v)
{
	size_t shard;
	cell_t *c;
	long idx;

	if (!f || f->type == METRICS_HISTOGRAM || isnan(v) ||
	    (f->type == METRICS_COUNTER && v < 0) || (f->nlabels && !values))
		return -1;
	if ((idx = series_index(f, values)) < 0)
		return -1;
	shard = shard_of(f->registry);
	if (!(c = cells_of(f, shard, (size_t)idx))) {
		atomic_fetch_add(&f->registry->dropped, 1);
		return -1;
	}
	if (!atomic_load_explicit(&f->has_adds, memory_order_relaxed))
		atomic_store_explicit(&f->has_adds, true, memory_order_relaxed);
	cell_add_double(c, v, shard == SHARED_SHARD);
	return 0;
}

/* The base becomes v less what the shards added so far, so the value reads
 * v; an add racing with it lands before or after, never lost. */
int metrics_set(struct metrics_family *f, const char *const *values, double v)
{
	struct series *s;
	uint64_t old, want;
	double adds;
	long idx;

	if (!f || f->type == METRICS_HISTOGRAM || isnan(v) || (f->nlabels && !values))
		return -1;
	if ((idx = series_index(f, values)) < 0)
		return -1;
	s = series_at(f, (size_t)idx);
	adds = atomic_load_explicit(&f->has_adds, memory_order_relaxed)
		? sum_double(f, (size_t)idx, 0) : 0;
	want = bits_of(v - adds);
	old = atomic_load_explicit(&s->base, memory_order_relaxed);
	do {
		if (f->type == METRICS_COUNTER && v < double_of(old) + adds)
			return -1;
		if (old == want) /* unchanged (an epoch set per write): no store */
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&s->base, &old, want,
							memory_order_relaxed,
							memory_order_relaxed));
	return 0;
}

int metrics_observe(struct metrics_family *f, const char *const *values, double v)
{
	size_t shard, i;
	cell_t *c;
	long idx;

	if (!f || f->type != METRICS_HISTOGRAM || isnan(v) || (f->nlabels && !values))
		return -1;
	if ((idx = series_index(f, values)) < 0)
		return -1;
	shard = shard_of(f->registry);
	if (!(c = cells_of(f, shard, (size_t)idx))) {
		atomic_fetch_add(&f->registry->dropped, 1);
		return -1;
	}
	for (i = 0; i < f->nbounds && v > f->bounds[i]; i++)
		;
	cell_inc(&c[i], shard == SHARED_SHARD);
	cell_add_double(&c[f->nbounds + 1], v, shard == SHARED_SHARD);
	return 0;
}

int metrics_each(struct metrics_family *f, metrics_each_fn fn, void *arg)
{
	size_t i, n;

	if (!f || f->type == METRICS_HISTOGRAM)
		return -1;
	pthread_mutex_lock(&f->registry->mu);
	n = atomic_load_explicit(&f->nseries, memory_order_acquire);
	for (i = 0; i < n; i++)
		fn((const char *const *)series_at(f, i)->values, series_value(f, i), arg);
	pthread_mutex_unlock(&f->registry->mu);
	return (int)n;
}

/* A float as Prometheus reads it: shortest of %.15g/%.17g that round-trips. */
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

static void render_family(FILE *out, struct metrics_family *f)
{
	static const char *const type_names[] = { "counter", "gauge", "histogram" };
	char num[40], le[40];
	size_t i, b, n = atomic_load_explicit(&f->nseries, memory_order_acquire);

	fprintf(out, "# HELP %s ", f->name);
	put_escaped(out, f->help, false);
	fprintf(out, "\n# TYPE %s %s\n", f->name, type_names[f->type]);
	for (i = 0; i < n; i++) {
		const struct series *s = series_at(f, i);
		uint64_t cumulative = 0;

		if (f->type != METRICS_HISTOGRAM) {
			fmt_value(num, sizeof(num), series_value(f, i));
			fputs(f->name, out);
			put_labels(out, f, s, NULL);
			fprintf(out, " %s\n", num);
			continue;
		}
		/* the count is the buckets' total, so the two always agree */
		for (b = 0; b <= f->nbounds; b++) {
			cumulative += sum_count(f, i, b);
			if (b < f->nbounds)
				fmt_value(le, sizeof(le), f->bounds[b]);
			else
				snprintf(le, sizeof(le), "+Inf");
			fprintf(out, "%s_bucket", f->name);
			put_labels(out, f, s, le);
			fprintf(out, " %llu\n", (unsigned long long)cumulative);
		}
		fmt_value(num, sizeof(num), sum_double(f, i, f->nbounds + 1));
		fprintf(out, "%s_sum", f->name);
		put_labels(out, f, s, NULL);
		fprintf(out, " %s\n%s_count", num, f->name);
		put_labels(out, f, s, NULL);
		fprintf(out, " %llu\n", (unsigned long long)cumulative);
	}
}

char *metrics_render(const struct metrics *m, size_t *len)
{
	struct metrics_family *f;
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
		"fencegate_metrics_dropped_total %llu\n", (unsigned long long)atomic_load(&((struct metrics *)m)->dropped));
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
	fm->upstream_requests = metrics_register(
		r, METRICS_COUNTER, "fencegate_upstream_requests_total",
		"Requests the proxy sent upstream (forwards, re-sends, HEADs, lock writes)",
		1, (const char *[]){ "kind" }, NULL, 0);
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
