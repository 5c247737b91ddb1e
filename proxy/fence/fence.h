/* fence.h — the fencing verdict for one request (DESIGN.md "Fencing on the
 * proxy", the decision table).
 *
 * fence_decide() is pure: no I/O, no clock, no allocation, no global state.
 * Everything it needs comes in struct fence_input; what it cannot know (does
 * the lock file of a newer epoch T exist?) it asks for with
 * FENCE_NEED_LOOKUP, and the caller looks it up and calls again.
 *
 * Inputs about "epoch T" (released, lapsed) describe the lock file of the
 * presented epoch as far as the caller knows: for T == C that is the
 * current epoch's file; for T > C it is what the lookup found. They are
 * ignored for T < C (stale whatever they say). */
#ifndef FENCE_FENCE_H
#define FENCE_FENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "token.h"
#include "wire/method.h"

/* Methods fenced when a route names none: the writes (method.h). */
#define FENCE_METHODS_DEFAULT METHOD_WRITES

enum fence_verdict {
	FENCE_FORWARD = 0,      /* fenced write, token current: forward it */
	FENCE_READ_PASS,        /* method not fenced: forward untouched */
	FENCE_NEED_LOOKUP,      /* T > C and lock_file_T unknown: look up the
				 * lock file of epoch T, call again */
	FENCE_REJECT_MISSING,   /* 428 FencingTokenMissing */
	FENCE_REJECT_INVALID,   /* 400 FencingTokenInvalid */
	FENCE_REJECT_STALE,     /* 409 FencingTokenStale */
	FENCE_REJECT_UNKNOWN,   /* 409 FencingTokenUnknown */
};

/* "forward", "read_pass", "need_lookup", "reject_missing", ... Never NULL. */
const char *fence_strverdict(enum fence_verdict v);

/* Three-valued knowledge of a fact the caller may have to look up. */
enum fence_tri {
	FENCE_TRI_UNKNOWN = 0,
	FENCE_TRI_NO,
	FENCE_TRI_YES,
};

struct fence_input {
	const char *method;          /* request method, e.g. "PUT" */
	unsigned fenced_methods;     /* METHOD_* set; 0 means FENCE_METHODS_DEFAULT
				      * (a zero mask never unfences writes) */
	struct token token;          /* from token_from_request()/token_add() */
	uint64_t current_epoch;      /* C: the lock's highest known epoch, 0 none */
	bool epoch_released;         /* epoch T's file is known "expired" */
	enum fence_tri lock_file_exists; /* does epoch T's file exist? only
				      * consulted when T > C */
	uint64_t object_epoch;       /* epoch the object was last written under,
				      * 0 = none/unknown */
	bool strict;                 /* route is strict */
	bool lease_lapsed;           /* epoch T's lease is known lapsed (by the
				      * server's clock) */
};

#define FENCE_MESSAGE_MAX 160

struct fence_decision {
	enum fence_verdict verdict;
	int status;                  /* HTTP status of a rejection; 0 otherwise */
	const char *code;            /* S3/JSON error code (static); NULL unless
				      * rejected */
	char message[FENCE_MESSAGE_MAX]; /* human message; "" unless rejected */
	uint64_t high_water;         /* C after this decision, >= current_epoch:
				      * the value for X-Fencing-Epoch */
	bool raised;                 /* high_water > current_epoch: T > C was
				      * verified by a real lock file; store it
				      * (as a max: epochs only go up) */
};

/* The verdict, exactly DESIGN.md's table, checked in this order:
 *   not a fenced method                      → READ_PASS
 *   no token                                 → 428 FencingTokenMissing
 *   malformed / header≠metadata              → 400 FencingTokenInvalid
 *   T < C                                    → 409 FencingTokenStale
 *   T > C, lock file T unknown               → NEED_LOOKUP
 *   T > C, no lock file T                    → 409 FencingTokenUnknown
 *   T > C, lock file T exists                → C raised to T, then as T == C:
 *   epoch T released                         → 409 FencingTokenStale
 *   object_epoch > T                         → 409 FencingTokenStale
 *   strict and T's lease lapsed              → 409 FencingTokenStale
 *   otherwise                                → FORWARD
 * A non-strict write under a lapsed current epoch is forwarded: fencing,
 * not the lease, is the safety net. Never fails; in and out must not be
 * NULL. */
void fence_decide(const struct fence_input *in, struct fence_decision *out);

#endif
