/* lockkey.h — the guard for lock files written through the proxy's S3 API
 * (DESIGN.md "S3 mode", "Epoch forging").
 *
 * Keys under a lock prefix ("locks/NAME/lock-") are lock files: the lock
 * protocol governs them, not data fencing. A client must not be able to
 * forge "lock-9999999999.json" and fence everyone out, nor steal a live
 * lock, so a write to a lock key is allowed only as one of:
 *
 *   create   PUT, If-None-Match: *, epoch == latest + 1, valid payload, and
 *            either the latest epoch is not held (free, lapsed, released) or
 *            the payload is already "expired": true (a break)
 *   rewrite  PUT, If-Match: <etag>, epoch == latest, valid payload, and
 *            either the payload is "expired": true (release, or marking
 *            the epoch expired), or it renews: the latest is held (live by
 *            the server's clock) and the payload keeps its holder (the same
 *            leaderId, and the same nonce when the latest has one). A
 *            released or lapsed lease is never revived, and a rewrite never
 *            changes the holder of a live lease.
 *   delete   DELETE of an epoch older than the latest (garbage collection);
 *            never the latest
 *
 * The lock's epoch mark (lock_mark_key_of(prefix), outside the prefix) is a
 * lock key too: reads pass, every write is refused 403
 * LOCK_MARK_RESERVED_CODE (the proxy raises it itself: a client that could
 * write it could fence everyone out, or lower it).
 *
 * Reads (GET, HEAD) pass. Anything else — other methods, copies, multipart,
 * a key under the prefix that is not exactly "<prefix>%010llu.json" with
 * epoch >= 1 — is refused. Pure: no I/O, no clock, no allocation. The caller
 * supplies the latest epoch and its state (fresh: list before deciding; lock
 * writes are rare) and the request body (lock files are small: buffer at
 * most LOCKKEY_PAYLOAD_MAX bytes).
 *
 * Error codes (status, code):
 *   400 InvalidLockKey           key under the prefix but not an epoch file
 *   400 InvalidLockPayload       payload missing, too big or not a lock
 *                                payload (lock_payload_parse() refused it)
 *   400 InvalidLockWrite         both If-Match and If-None-Match, a copy or
 *                                multipart upload onto a lock key
 *   405 MethodNotAllowed         POST, PATCH or another method on a lock key
 *   428 ConditionalWriteRequired PUT without If-None-Match: * or
 *                                If-Match: <etag>
 *   409 LockEpochNotNext         create of an epoch other than latest + 1,
 *                                or rewrite of an epoch above the latest
 *   409 LockHeld                 create while the latest epoch is held,
 *                                payload not expired
 *   409 LockLost                 rewrite of an epoch below the latest, or
 *                                reviving a released or lapsed latest
 *   409 LockHolderMismatch       a live rewrite naming another holder
 *   409 LockFileIsLatest         delete of the latest epoch file (or above)
 *   403 EpochMarkReserved        any write of the lock's epoch mark */
#ifndef FENCE_LOCKKEY_H
#define FENCE_LOCKKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock/core/lock.h"

#define LOCKKEY_PAYLOAD_MAX 65536

enum lockkey_class {
	LOCKKEY_NOT_LOCK = 0,   /* key not under the prefix: data, fence it */
	LOCKKEY_EPOCH_FILE,     /* exactly "<prefix>%010llu.json", epoch >= 1 */
	LOCKKEY_MALFORMED,      /* under the prefix, but not an epoch file */
	LOCKKEY_EPOCH_MARK,     /* the lock's epoch mark (lock_mark_key_of) */
};

#define LOCKKEY_KEY_MAX 1100

/* Classifies key against prefix (both NUL-terminated; an empty prefix
 * matches nothing). On LOCKKEY_EPOCH_FILE stores the epoch in *epoch (may be
 * NULL). The digits must be exactly what "%010llu" prints: ten digits
 * zero-padded, or more digits without a leading zero. */
enum lockkey_class lockkey_classify(const char *key, const char *prefix, uint64_t *epoch);

/* 1 if key starts with prefix (and prefix is not empty), or is the lock's
 * epoch mark, else 0. */
int lockkey_under_prefix(const char *key, const char *prefix);

enum lockkey_verdict {
	LOCKKEY_NOT_LOCK_KEY = 0, /* not a lock key: the data-fencing path applies */
	LOCKKEY_READ_PASS,        /* GET/HEAD of a lock key: forward */
	LOCKKEY_ALLOW_CREATE,     /* forward; on a 2xx answer raise the lock's
				   * cached epoch to decision.epoch */
	LOCKKEY_ALLOW_REWRITE,    /* forward (renew/release of the latest) */
	LOCKKEY_ALLOW_DELETE,     /* forward (GC of an old epoch) */
	LOCKKEY_REFUSE,           /* answer status/code/message; never forward */
};

const char *lockkey_strverdict(enum lockkey_verdict v);

struct lockkey_request {
	const char *method;          /* "PUT", "DELETE", ... */
	const char *key;             /* object key, without the bucket */
	const char *prefix;          /* the lock's key prefix, "locks/NAME/lock-" */
	const char *if_none_match;   /* header value, NULL if absent */
	const char *if_match;        /* header value, NULL if absent */
	bool copy_or_multipart;      /* x-amz-copy-source, ?uploads, ?uploadId,
				      * ?partNumber: refused on lock keys */
	const char *payload;         /* request body (PUT), may be NULL */
	size_t payload_len;
	uint64_t latest_epoch;       /* the lock's latest epoch, 0 if none */
	enum lock_state latest_state; /* its state; UNREADABLE counts as held */
	const struct lock_payload *latest_payload; /* its payload when readable,
				      * else NULL (a live rewrite is refused) */
};

#define LOCKKEY_MESSAGE_MAX 160

struct lockkey_decision {
	enum lockkey_verdict verdict;
	int status;                  /* of a refusal; 0 otherwise */
	const char *code;            /* static; NULL unless refused */
	char message[LOCKKEY_MESSAGE_MAX]; /* "" unless refused */
	uint64_t epoch;              /* the key's epoch, 0 if not an epoch file */
};

/* Decides one request on a key (see the banner for the rules). Never fails;
 * req and out must not be NULL. */
void lockkey_decide(const struct lockkey_request *req, struct lockkey_decision *out);

#endif
