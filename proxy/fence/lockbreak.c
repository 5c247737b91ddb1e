/* lockbreak.c — whether an allowed lock-file write that ends a live lease
 * may be made by this client (see lockbreak.h): "break" for a break or
 * for rewriting a live epoch file someone else wrote, nothing more for its
 * writer's own renewal or release. It neither reads the store nor knows the policy: the caller
 * passes the latest epoch's state and stamp and the client's permission. */
#include <stdio.h>
#include <string.h>

#include "lockbreak.h"

const char *lockbreak_strverdict(enum lockbreak_verdict v)
{
	switch (v) {
	case LOCKBREAK_ALLOW: return "allow";
	case LOCKBREAK_NEED_WRITER: return "need_writer";
	case LOCKBREAK_REFUSE: return "refuse";
	}
	return "unknown";
}

void lockbreak_decide(const struct lockbreak_request *req, struct lockbreak_decision *out)
{
	bool live = req->latest_state == LOCK_STATE_HELD ||
		    req->latest_state == LOCK_STATE_UNREADABLE;
	bool known_client = req->client && *req->client;

	memset(out, 0, sizeof(*out));
	out->verdict = LOCKBREAK_ALLOW;
	if (!live || req->may_break)
		return;   /* ends no live lease, or the client may */
	if (req->create) {
		if (!req->expired)
			return;   /* (lockkey refuses it: LockHeld) */
		out->verdict = LOCKBREAK_REFUSE;
		snprintf(out->message, sizeof(out->message),
			 "breaking a live lock (creating the next epoch expired) needs the "
			 "\"break\" permission");
		return;
	}
	if (!req->latest_writer_known) {
		out->verdict = LOCKBREAK_NEED_WRITER;
		return;
	}
	if (known_client && req->latest_writer && strcmp(req->latest_writer, req->client) == 0)
		return;   /* its writer renews or releases it */
	out->verdict = LOCKBREAK_REFUSE;
	snprintf(out->message, sizeof(out->message),
		 "%s a live epoch file another client wrote needs the \"break\" permission",
		 req->expired ? "marking expired" : "rewriting");
}
