/* backendcaps.h — the upstream's capabilities as this process measured
 * them (lock_probe_store), made known to the fencing path (dialect.h
 * backend_caps_publish, backend_etag_publish) and to the log, once per
 * process. Called by the proxy's self-test (lockapi_health.c) and by the
 * per-lock check before a lock's first load (lockreg.c); both probe the
 * same upstream. It probes nothing itself. */
#ifndef FENCE_BACKENDCAPS_H
#define FENCE_BACKENDCAPS_H

#include "lock/core/lock.h"

/* The capabilities fencing acts on: what rep saw, less what the dialect
 * (a dialect_find name; NULL: FENCE_S3_DIALECT; "auto" or unknown: none)
 * says cannot be trusted. A
 * copy, multipart or race condition the probe did not measure counts as
 * present (as before there was a probe): only a condition seen ignored
 * refuses its operation. */
unsigned backendcaps_of(const struct backend_report *rep, const char *dialect);

/* Publishes backendcaps_of(rep, dialect) and rep's If-Match spelling for
 * the fencing path; the first call in the process also logs each
 * capability and each operation refused or left unguarded. Thread-safe. */
void backendcaps_publish(const struct backend_report *rep, const char *dialect);

#endif
