/* objcas.h — the object-level compare-and-swap of S3 mode, as decisions
 * (DESIGN.md "Object-level compare-and-swap").
 *
 * An allowed write goes upstream conditioned on the object's current
 * version: If-Match its ETag, or If-None-Match "*" for a new key. The
 * version comes from the ETag cache (objcache.h) or from a HEAD, and a lost
 * race (412/409/404 on our condition) is followed by a fresh read of the
 * lock, then of the object, and a bounded re-send.
 *
 * The unread create (issue 26, the cold path). A PutObject with no client
 * condition, whose key is not in the cache and whose whole body stays held
 * for a re-send, goes first with If-None-Match "*" and no HEAD: one
 * upstream request for a new key. If S3 answers 412 (or 409
 * ConditionalRequestConflict) to that condition, the key exists: the
 * object is read (HEAD) and decided exactly as after a HEAD-first order
 * (newer epoch: 409; else a re-send with If-Match its ETag, counted among
 * the bounded re-sends). Why this is as safe as the HEAD-first order:
 *   - the lock-level check already passed (T is the lock's highest epoch,
 *     from knowledge fresh by the freshness rule); the object-level CAS
 *     only closes the race between that check and the write reaching S3;
 *   - a key absent at the write is exactly what the HEAD-first order
 *     conditions on after a HEAD said "absent": the same request,
 *     If-None-Match "*", which S3 applies only if the key still does not
 *     exist; so the unread create lands only where the HEAD-first order's
 *     create would have landed;
 *   - a key present makes it fail without effect, and the HEAD that
 *     follows is later than the one the HEAD-first order would have made:
 *     what it decides on is at least as new. The lock is not re-read for
 *     it (nothing says the object changed since the decision; a newer
 *     epoch the registry learns meanwhile still refuses the re-send, as
 *     after any HEAD); a 412 to the re-send's If-Match is a lost race as
 *     before (lock re-read, HEAD, bounded).
 * It needs the upstream to honour If-None-Match "*" on PUT: the self-test
 * measures it and a backend that ignores it has fenced PUTs refused
 * (dialect.h backend_refuses). It is not used for CopyObject (moto and
 * radosgw ignore the copy destination's condition: an unread copy could
 * overwrite a newer epoch's object), CompleteMultipartUpload (its re-send
 * after a failed conditional completion is not proven here), a DELETE, a
 * client's own condition, or a body that is not held whole (larger than
 * the held window, or of unknown length): those keep the HEAD first.
 *
 * Pure: no I/O, no clock, no allocation. The caller (fencing_s3.c, the
 * simulation in tests/sim/) does the HEADs, the lock reloads, the cache
 * updates and the forwarding; these functions only say which step comes
 * next. The client's own conditions are honoured as S3 would, never
 * replaced by ours. */
#ifndef FENCE_OBJCAS_H
#define FENCE_OBJCAS_H

#include <stdbool.h>
#include <stdint.h>

#include "objcache.h"

enum objcas_action {
	OBJCAS_IF_MATCH = 0,  /* forward with If-Match: step.etag */
	OBJCAS_IF_ABSENT,     /* forward with If-None-Match: "*" */
	OBJCAS_HEAD,          /* read the object's version, then objcas_after_head */
	OBJCAS_GONE,          /* answer 204 here: a DELETE of a missing key (an
			       * unconditional DELETE could remove what a newer
			       * epoch creates meanwhile) */
	OBJCAS_STALE,         /* 409: the object was written under a newer epoch */
	OBJCAS_NO_SUCH_KEY,   /* 404: the client's If-Match, the key is missing */
	OBJCAS_PRECONDITION,  /* 412: the client's If-Match does not match */
	OBJCAS_GIVE_UP,       /* 503 SlowDown: the object kept changing, or the
			       * body cannot be sent again */
	OBJCAS_HEAD_FAILED,   /* 503: the object's version could not be read */
};

/* "if_match", "if_absent", "head", ... Never NULL. */
const char *objcas_straction(enum objcas_action a);

struct objcas_in {
	bool is_delete;               /* DELETE (else a write that stores) */
	bool plain_put;               /* PutObject: not a copy, a multipart
				       * completion nor a DELETE (the unread
				       * create applies to it alone) */
	bool client_inm;              /* the client sent If-None-Match: "*" */
	const char *client_if_match;  /* the client's If-Match, quoted; "" or NULL none */
	const struct objcache_entry *cached; /* the cache's entry; NULL on a miss */
	uint64_t epoch;               /* T, the write's epoch */
	/* from the HEAD, for objcas_after_head */
	int head_found;               /* 1 found, 0 absent, -1 the HEAD failed */
	const char *head_etag;        /* when found, quoted */
	uint64_t head_epoch;          /* its fencing-epoch, 0 none */
	/* a re-send after our condition lost a race */
	bool after_race;
	int resends;                  /* re-sends so far */
	int max_resends;
	bool can_resend;              /* the body is still held (objcas_first:
				       * it will be held whole, its length known
				       * and within the held window) */
};

struct objcas_step {
	enum objcas_action action;
	const char *etag;             /* OBJCAS_IF_MATCH: points into in */
	bool ours;                    /* the condition is the proxy's (a lost race
				       * is retried), not the client's (its 412
				       * is the client's answer) */
	bool unread;                  /* OBJCAS_IF_ABSENT of the unread create:
				       * sent without reading the object, so a
				       * 412/409 means "it exists" (OBJCAS_EXISTS),
				       * not a lost race */
};

/* The first step of an allowed write: the client's If-None-Match "*"
 * (create only) or If-Match (used as is when the cache agrees), else our
 * If-Match from the cache, else the unread create (plain_put and
 * can_resend: If-None-Match "*", ours, unread), else a HEAD. */
void objcas_first(const struct objcas_in *in, struct objcas_step *out);

/* The step after a HEAD (head_* set), also when re-sending after a race. */
void objcas_after_head(const struct objcas_in *in, struct objcas_step *out);

enum objcas_answer {
	OBJCAS_RELAY = 0,   /* the answer is the client's */
	OBJCAS_DELETED,     /* our If-Match DELETE found no object: answer 204 */
	OBJCAS_RACE,        /* our condition lost a race: reload the lock (a
			     * newer epoch?), then HEAD and objcas_after_head
			     * with after_race */
	OBJCAS_EXISTS,      /* the unread create found the key: HEAD (no lock
			     * reload), then objcas_after_head with after_race
			     * (the re-send is counted and bounded) */
};

/* What an upstream answer (status, not 2xx) to a write with a condition
 * means. ours: the condition was the proxy's; cond_if_match: it was
 * If-Match (a 404 then means the object vanished); unread: it was the
 * unread create (objcas_step.unread). */
enum objcas_answer objcas_on_answer(int status, bool ours, bool cond_if_match, bool unread,
				    bool is_delete);

#endif
