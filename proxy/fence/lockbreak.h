/* lockbreak.h — who may end a live lease through the proxy's S3 API.
 *
 * lockkey.h decides whether a lock-file write is a well-formed step of the
 * lock protocol; this decides, for a write it allowed, whether the client
 * may take that step. A live latest epoch (held by the server's clock, or
 * unreadable, which counts as held) belongs to the client that wrote its
 * file: the access key the proxy stamps on every lock file it writes
 * (x-amz-meta-fencing-client). Without the "break" permission a client
 *
 *   may not create latest+1 already "expired" over a live latest (a break,
 *     what fencectl break does): that ends someone's lease early;
 *   may rewrite the live latest (renew it, or mark it "expired": release)
 *     only if it is that file's writer. Another client's rewrite could end
 *     the lease (mark it expired) or take it over (a renewal would make it
 *     the writer), so it needs "break" too.
 *
 * A file without a stamp (written by the lock API, directly on the store,
 * or with authentication off) has no known writer: rewriting it while it
 * is live needs "break". The payload's leaderId and nonce do not identify
 * a client: any reader of the lock file can copy them.
 *
 * Everything else lockkey.h allows needs only "lock": a create over a
 * free, lapsed or released latest, a rewrite of a lapsed or released
 * latest (marking it expired), deleting an old epoch. Pure: no I/O, no
 * clock, no allocation. */
#ifndef FENCE_LOCKBREAK_H
#define FENCE_LOCKBREAK_H

#include <stdbool.h>

#include "lock/core/lock.h"

/* The metadata name (lowercase, without x-amz-meta-) of the writer stamp. */
#define LOCKBREAK_WRITER_META LOCK_CLIENT_META

enum lockbreak_verdict {
	LOCKBREAK_ALLOW = 0,
	LOCKBREAK_NEED_WRITER,  /* ask again with latest_writer_known (read the
				 * latest epoch file's stamp first) */
	LOCKBREAK_REFUSE,       /* 403 AccessDenied: message says why */
};

struct lockbreak_request {
	bool create;                  /* a create of latest+1; else a rewrite of
				       * the latest (lockkey allowed it) */
	bool expired;                 /* the new payload says "expired": true */
	enum lock_state latest_state; /* HELD and UNREADABLE are live */
	const char *client;           /* the requesting access key; NULL or ""
				       * when anonymous / authentication off */
	bool may_break;               /* the client has "break" on the lock */
	bool latest_writer_known;     /* latest_writer was read */
	const char *latest_writer;    /* the latest epoch file's stamp, NULL none */
};

#define LOCKBREAK_MESSAGE_MAX 160  /* = LOCKKEY_MESSAGE_MAX */

struct lockbreak_decision {
	enum lockbreak_verdict verdict;
	char message[LOCKBREAK_MESSAGE_MAX];  /* "" unless refused */
};

/* Decides one allowed lock-file write (see the banner). Never fails; req
 * and out must not be NULL. */
void lockbreak_decide(const struct lockbreak_request *req, struct lockbreak_decision *out);

/* "allow", "need_writer", "refuse". */
const char *lockbreak_strverdict(enum lockbreak_verdict v);

#endif
