/* fence.c — the fencing verdict: given what the proxy knows about a request
 * and its lock, forward, reject (with status, code and message) or ask for a
 * lock-file lookup. Pure: no I/O, no clock, no allocation; the caller does
 * the lookups, the upstream write and the bookkeeping. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fence.h"

const char *fence_strverdict(enum fence_verdict v)
{
	switch (v) {
	case FENCE_FORWARD: return "forward";
	case FENCE_READ_PASS: return "read_pass";
	case FENCE_NEED_LOOKUP: return "need_lookup";
	case FENCE_REJECT_MISSING: return "reject_missing";
	case FENCE_REJECT_INVALID: return "reject_invalid";
	case FENCE_REJECT_STALE: return "reject_stale";
	case FENCE_REJECT_UNKNOWN: return "reject_unknown";
	}
	return "unknown";
}

/* Sets verdict, status and code of a rejection; the caller writes the
 * message. */
static void reject(struct fence_decision *out, enum fence_verdict v)
{
	out->verdict = v;
	switch (v) {
	case FENCE_REJECT_MISSING:
		out->status = 428;
		out->code = "FencingTokenMissing";
		break;
	case FENCE_REJECT_INVALID:
		out->status = 400;
		out->code = "FencingTokenInvalid";
		break;
	case FENCE_REJECT_UNKNOWN:
		out->status = 409;
		out->code = "FencingTokenUnknown";
		break;
	default:
		out->status = 409;
		out->code = "FencingTokenStale";
		break;
	}
}

#define MSG(...) snprintf(out->message, sizeof(out->message), __VA_ARGS__)

void fence_decide(const struct fence_input *in, struct fence_decision *out)
{
	unsigned mask = in->fenced_methods ? in->fenced_methods : FENCE_METHODS_DEFAULT;
	uint64_t t = in->token.epoch;
	const uint64_t c = in->current_epoch;

	memset(out, 0, sizeof(*out));
	out->high_water = c;

	if (!(method_bit(in->method) & mask)) {
		out->verdict = FENCE_READ_PASS;
		return;
	}
	switch (in->token.status) {
	case TOKEN_ABSENT:
		reject(out, FENCE_REJECT_MISSING);
		MSG("a write needs a fencing token: header X-Fencing-Token: N, or metadata "
		    "fencing-token=N (a tool that can send neither: see the README)");
		return;
	case TOKEN_CONFLICT:
		reject(out, FENCE_REJECT_INVALID);
		MSG("X-Fencing-Token and x-amz-meta-fencing-token differ");
		return;
	case TOKEN_MALFORMED:
		reject(out, FENCE_REJECT_INVALID);
		MSG("a fencing token is 1 to 19 decimal digits, value at least 1");
		return;
	case TOKEN_OK:
		break;
	}
	if (t == 0) {
		/* Never produced by token_parse(); refuse rather than trust it. */
		reject(out, FENCE_REJECT_INVALID);
		MSG("a fencing token is at least 1");
		return;
	}
	if (t < c) {
		reject(out, FENCE_REJECT_STALE);
		MSG("fencing token %" PRIu64 " is older than the current epoch %" PRIu64, t, c);
		return;
	}
	if (t > c) {
		switch (in->lock_file_exists) {
		case FENCE_TRI_UNKNOWN:
			out->verdict = FENCE_NEED_LOOKUP;
			return;
		case FENCE_TRI_NO:
			reject(out, FENCE_REJECT_UNKNOWN);
			MSG("no lock file for epoch %" PRIu64 " (current epoch %" PRIu64 ")", t, c);
			return;
		case FENCE_TRI_YES:
			out->high_water = t;
			out->raised = true;
			break;
		}
	}
	/* From here T == C (possibly just raised). */
	if (in->epoch_released) {
		reject(out, FENCE_REJECT_STALE);
		MSG("epoch %" PRIu64 " was released", t);
		return;
	}
	if (in->object_epoch > t) {
		reject(out, FENCE_REJECT_STALE);
		MSG("fencing token %" PRIu64 " is older than the epoch %" PRIu64
		    " the object was last written under", t, in->object_epoch);
		return;
	}
	if (in->strict && in->lease_lapsed) {
		reject(out, FENCE_REJECT_STALE);
		MSG("the lease of epoch %" PRIu64 " has lapsed (strict route)", t);
		return;
	}
	out->verdict = FENCE_FORWARD;
}
