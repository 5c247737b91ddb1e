/* metrics.h — a small Prometheus registry rendered in the text exposition
 * format 0.0.4 for GET /_fence/metrics.
 *
 * Families (counter, gauge, histogram) are registered once with fixed label
 * names; series are created on first use from label values. Each family
 * holds at most METRICS_SERIES_MAX series, so label values a client can
 * influence (methods, lock names) cannot grow memory without bound: past the
 * cap updates are dropped and counted in fencegate_metrics_dropped_total.
 * Label values are escaped (\\ \" \n) and invalid UTF-8 becomes U+FFFD.
 * No I/O, no clock. Thread-safe: one registry serves every event-loop
 * worker. Updates take no lock once a series exists: each thread adds to
 * cells of its own (the first METRICS_SHARDS_MAX threads; later ones share
 * one set through atomic operations), and rendering sums them. Creating a
 * series, registering, rendering and metrics_each take the registry's
 * mutex. A reading may see an update racing with it or not, never half of
 * one counter; a histogram's _count is always its buckets' total. */
#ifndef FENCE_METRICS_H
#define FENCE_METRICS_H

#include <stddef.h>

#define METRICS_LABELS_MAX 4
#define METRICS_SERIES_MAX 1024
#define METRICS_BUCKETS_MAX 32
#define METRICS_SHARDS_MAX 64   /* threads with update cells of their own */

enum metrics_type {
	METRICS_COUNTER,
	METRICS_GAUGE,
	METRICS_HISTOGRAM,
};

struct metrics;         /* the registry */
struct metrics_family;  /* one metric name, owned by the registry */

struct metrics *metrics_new(void);       /* NULL on ENOMEM */
void metrics_free(struct metrics *m);    /* accepts NULL; frees its families */

/* Registers a family. name and label names must match
 * [a-zA-Z_:][a-zA-Z0-9_:]* (label names without ':'), nlabels <=
 * METRICS_LABELS_MAX, names unique in the registry. For a histogram, bounds
 * are nbounds (1..METRICS_BUCKETS_MAX) strictly increasing finite upper
 * bounds; "+Inf" is implicit. Strings are copied. Returns the family, or
 * NULL (invalid argument or ENOMEM). */
struct metrics_family *metrics_register(struct metrics *m, enum metrics_type type,
					const char *name, const char *help,
					size_t nlabels, const char *const *label_names,
					const double *bounds, size_t nbounds);

/* Updates the series whose label values are values[0..nlabels) (NULL when
 * nlabels is 0; a NULL value counts as ""). Return 0, or -1 if the family
 * has the wrong type, the update is invalid (negative counter increment,
 * NaN), the series cap is reached or on ENOMEM.
 *   metrics_add:     counter += v (v >= 0) or gauge += v (any sign), in the
 *                    calling thread's cells
 *   metrics_set:     gauge = v; also counter = v when v is not below the
 *                    current value (mirroring a counter kept elsewhere, e.g.
 *                    the ETag cache's hits); a set of the value the series
 *                    already holds writes nothing
 *   metrics_observe: histogram observation */
int metrics_add(struct metrics_family *f, const char *const *values, double v);
int metrics_set(struct metrics_family *f, const char *const *values, double v);
int metrics_observe(struct metrics_family *f, const char *const *values, double v);

/* Calls fn(values, value, arg) for every series of a counter or gauge
 * family (value: summed over threads), in creation order, under the
 * registry's mutex (fn must not touch
 * the registry). Returns the number of series, or -1 for a histogram or a
 * NULL family. */
typedef void (*metrics_each_fn)(const char *const *values, double value, void *arg);
int metrics_each(struct metrics_family *f, metrics_each_fn fn, void *arg);

/* Renders every family (in registration order, series in creation order)
 * with # HELP and # TYPE lines. Returns a malloc'd NUL-terminated buffer the
 * caller frees with free(), its length in *len (may be NULL); NULL on ENOMEM.
 * Content-Type: METRICS_CONTENT_TYPE. */
char *metrics_render(const struct metrics *m, size_t *len);

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The fencegate families (DESIGN.md "Lock HTTP API", /_fence/metrics). */
struct fencegate_metrics {
	struct metrics *registry;
	struct metrics_family *requests;         /* fencegate_requests_total{method,outcome} */
	struct metrics_family *rejections;       /* fencegate_rejections_total{code} */
	struct metrics_family *upstream_requests; /* fencegate_upstream_requests_total{kind} */
	struct metrics_family *in_flight;        /* fencegate_in_flight_requests */
	struct metrics_family *lock_epoch;       /* fencegate_lock_current_epoch{lock} */
	struct metrics_family *upstream_latency; /* fencegate_upstream_latency_seconds */
	struct metrics_family *etag_cache_hits;  /* fencegate_etag_cache_hits_total */
	struct metrics_family *etag_cache_misses;/* fencegate_etag_cache_misses_total */
	struct metrics_family *build_info;       /* fencegate_build_info{version} 1 */
	struct metrics_family *cpu_seconds;      /* process_cpu_seconds_total */
	struct metrics_family *rss_bytes;        /* process_resident_memory_bytes */
	struct metrics_family *open_fds;         /* process_open_fds */
	struct metrics_family *max_fds;          /* process_max_fds */
	struct metrics_family *start_time;       /* process_start_time_seconds */
	struct metrics_family *conns_open;       /* fencegate_connections_open */
	struct metrics_family *conns_accepted;   /* fencegate_connections_accepted_total */
	struct metrics_family *responses;        /* fencegate_responses_total{status} */
	struct metrics_family *store_seconds;    /* fencegate_lock_store_seconds{op} */
	struct metrics_family *store_errors;     /* fencegate_lock_store_errors_total{op} */
	struct metrics_family *reloads;          /* fencegate_reloads_total{result} */
	struct metrics_family *self_test;        /* fencegate_self_test_passed */
	/* With several event-loop workers: called at each scrape, on the
	 * scraping worker's loop, to set the gauges that live in the workers
	 * (in flight, connections, ETag cache hits and misses) to the process
	 * totals; NULL: the scraping proxy's own (one worker). */
	void (*collect)(struct fencegate_metrics *fm, void *arg);
	void *collect_arg;
};

/* The process_* gauges and counter, read now (procstat.h). */
void fencegate_metrics_update_process(struct fencegate_metrics *fm);

/* Creates a registry with the families above (upstream latency buckets:
 * 1ms 2.5ms 5ms 10ms 25ms 50ms 100ms 250ms 500ms 1s 2.5s 5s 10s). Returns 0,
 * or -1 on ENOMEM (nothing left allocated). Free with
 * fencegate_metrics_free(). */
int fencegate_metrics_init(struct fencegate_metrics *fm);
void fencegate_metrics_free(struct fencegate_metrics *fm); /* accepts zeroed */

/* A method label value from a request method: the method itself if it is one
 * of GET HEAD PUT POST DELETE PATCH OPTIONS, else "OTHER" (bounds the label
 * set). Static string. */
const char *metrics_method_label(const char *method);

#endif
