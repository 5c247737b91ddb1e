/* backendcaps.c — turns a self-test report into what the fencing path acts
 * on (dialect.h's process-wide record) and says so in the log, once per
 * process. No I/O but the log; no probing (lock_selftest.c does). */
#include "backendcaps.h"

#include <stdlib.h>

#include "ops/log.h"

unsigned backendcaps_of(const struct backend_report *rep, const char *dialect)
{
	unsigned unprobed = ~rep->probed & (CAP_COPY_IF_NONE_MATCH | CAP_MPU_IF_NONE_MATCH |
					    CAP_RACE);

	if (!dialect)
		dialect = getenv("FENCE_S3_DIALECT"); /* as store_s3_open reads it */
	return dialect_trusted_caps(dialect_find(dialect), rep->caps | unprobed);
}

void backendcaps_publish(const struct backend_report *rep, const char *dialect)
{
	static int logged;
	unsigned caps = backendcaps_of(rep, dialect), cap, missing;

	backend_caps_publish(caps);
	if (rep->etag_form != DIALECT_ETAG_AUTO)
		backend_etag_publish(rep->etag_form);
	if (__atomic_exchange_n(&logged, 1, __ATOMIC_ACQ_REL))
		return;
	for (cap = 1; cap & CAP_ALL; cap <<= 1)
		log_info("backend capability %s: %s (%s)", backend_cap_name(cap),
			 !(rep->probed & cap) ? "not probed" : rep->caps & cap ? "ok" : "MISSING",
			 lock_report_seen(rep, cap));
	for (int op = 0; op < BACKEND_OP_COUNT; op++) {
		missing = backend_caps_missing(caps, (enum backend_op)op);
		if (missing && backend_refuses((enum backend_op)op))
			log_warn("fenced %s requests will be refused (501): %s",
				 backend_op_name((enum backend_op)op), backend_cap_lacking(missing));
		else if (missing)
			log_warn("fenced %s requests are forwarded although %s: a zombie's "
				 "through a replica that has not seen the newer epoch can land",
				 backend_op_name((enum backend_op)op), backend_cap_lacking(missing));
	}
}
