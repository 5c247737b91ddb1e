/* token.h — parsing the fencing token and lock name a request presents.
 *
 * A write names its epoch in header "X-Fencing-Token" and/or object metadata
 * "x-amz-meta-fencing-token", and may name its lock in "X-Fencing-Lock" /
 * "x-amz-meta-fencing-lock". This module only parses and reconciles those
 * values; it never looks at methods, policy or the lock store. Pure: no I/O,
 * no clock, no allocation, no global state.
 *
 * Token syntax (DESIGN.md "Fencing on the proxy"): 1 to 19 ASCII decimal
 * digits, nothing else (no sign, no spaces, no "0x", no surrounding
 * whitespace — the HTTP parser has already stripped optional whitespace
 * around a field value), value >= 1. Leading zeros ARE accepted ("007" is
 * epoch 7): the rule is "decimal digits only", and lock keys carry the epoch
 * zero-padded ("lock-0000000007.json"), so a client may copy it from there.
 * Every 19-digit value fits a uint64_t. Two occurrences (header and metadata,
 * or a repeated header) are compared by value: "7" and "007" agree. */
#ifndef FENCE_TOKEN_H
#define FENCE_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_DIGITS_MAX 19

enum token_status {
	TOKEN_ABSENT = 0,  /* no occurrence at all */
	TOKEN_OK,          /* every occurrence well-formed and equal; epoch set */
	TOKEN_MALFORMED,   /* an occurrence is not 1-19 digits with value >= 1 */
	TOKEN_CONFLICT,    /* well-formed occurrences with different values */
};

/* "absent", "ok", "malformed", "conflict". Never NULL. */
const char *token_strstatus(enum token_status st);

/* The reconciled token of one request. Start from TOKEN_INIT (absent). */
struct token {
	enum token_status status;
	uint64_t epoch;              /* valid only when status == TOKEN_OK */
};

#define TOKEN_INIT { .status = TOKEN_ABSENT, .epoch = 0 }

/* Parses one value of len bytes (need not be NUL-terminated; a NUL inside
 * makes it malformed). On TOKEN_OK stores the epoch in *epoch (may be NULL).
 * value == NULL means "no such header": TOKEN_ABSENT. An empty value is
 * TOKEN_MALFORMED (the header was sent, with nothing in it). */
enum token_status token_parse(const char *value, size_t len, uint64_t *epoch);

/* Folds one more occurrence (header or metadata, in any order) into t:
 * ABSENT+ok → OK; OK+equal → OK; OK+different → CONFLICT; anything+malformed
 * → MALFORMED; MALFORMED and CONFLICT stick. value == NULL is a no-op.
 * Returns the new t->status. */
enum token_status token_add(struct token *t, const char *value, size_t len);

/* Convenience for the usual case: header and metadata value as
 * NUL-terminated strings, either NULL when absent. */
struct token token_from_request(const char *header, const char *metadata);

/* Lock names: [A-Za-z0-9._-]{1,128}, and not "." or ".." (the name becomes a
 * key path segment, "locks/NAME/lock-"); the same rule as lock_name_valid()
 * in lock/core/lock.h. */
#define TOKEN_LOCK_NAME_MAX 128

enum token_lock_status {
	TOKEN_LOCK_ABSENT = 0,   /* neither header nor metadata names a lock */
	TOKEN_LOCK_OK,           /* name copied to the caller's buffer */
	TOKEN_LOCK_INVALID,      /* a value breaks the name rule */
	TOKEN_LOCK_CONFLICT,     /* header and metadata name different locks */
};

/* 1 if name[0..len) is a valid lock name, else 0. */
int token_lock_name_valid(const char *name, size_t len);

/* Reconciles "X-Fencing-Lock" (header) and "x-amz-meta-fencing-lock"
 * (metadata), NUL-terminated, either NULL when absent. On TOKEN_LOCK_OK the
 * name is copied NUL-terminated into out, which must hold at least
 * TOKEN_LOCK_NAME_MAX + 1 bytes (outlen is checked; too small → INVALID).
 * Lock names compare exactly (case-sensitive). Whether the request may name
 * a lock at all is policy's call, not this function's. */
enum token_lock_status token_lock_from_request(const char *header, const char *metadata,
					       char *out, size_t outlen);

#endif
