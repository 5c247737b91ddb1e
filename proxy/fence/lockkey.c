/* lockkey.c — decides whether a request on a lock file may go through the
 * proxy's S3 API: epoch files are created only as latest+1 while the lock is
 * free (or as a break), rewritten only conditionally, deleted only when old;
 * the lock's epoch mark (lock_mark_key_of) is read-only to clients.
 * It does no I/O: the caller lists the lock and buffers the body first. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lockkey.h"

/* 1 if key is the epoch mark of the lock whose files are under prefix.
 * Every mark key ends in MARK_SUFFIX (lock_mark_key_of), so a key that
 * does not, nearly every key a write names, is answered without building
 * the mark's key. */
#define MARK_SUFFIX "high-water.json"
static int is_mark_key(const char *key, const char *prefix)
{
	char mark[LOCKKEY_KEY_MAX];
	size_t klen;

	if (!key || !prefix || !*prefix)
		return 0;
	klen = strlen(key);
	if (klen < sizeof(MARK_SUFFIX) - 1 ||
	    memcmp(key + klen - (sizeof(MARK_SUFFIX) - 1), MARK_SUFFIX, sizeof(MARK_SUFFIX) - 1) != 0)
		return 0;
	return lock_mark_key_of(prefix, mark, sizeof(mark)) == 0 && strcmp(key, mark) == 0;
}

int lockkey_under_prefix(const char *key, const char *prefix)
{
	size_t plen;

	if (!key || !prefix || !*prefix)
		return 0;
	plen = strlen(prefix);
	return strncmp(key, prefix, plen) == 0 || is_mark_key(key, prefix);
}

enum lockkey_class lockkey_classify(const char *key, const char *prefix, uint64_t *epoch)
{
	const char *digits, *p;
	char canonical[32];
	uint64_t v = 0;
	size_t ndigits;

	if (is_mark_key(key, prefix))
		return LOCKKEY_EPOCH_MARK;
	if (!lockkey_under_prefix(key, prefix))
		return LOCKKEY_NOT_LOCK;
	digits = key + strlen(prefix);
	for (p = digits; *p >= '0' && *p <= '9'; p++)
		;
	ndigits = (size_t)(p - digits);
	if (ndigits < 10 || ndigits > 20 || strcmp(p, ".json") != 0)
		return LOCKKEY_MALFORMED;
	for (p = digits; p < digits + ndigits; p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return LOCKKEY_MALFORMED;
		v = v * 10 + d;
	}
	if (v == 0)
		return LOCKKEY_MALFORMED;
	/* Exactly what the lock code writes, so one epoch has one key. */
	snprintf(canonical, sizeof(canonical), "%010" PRIu64 ".json", v);
	if (strcmp(canonical, digits) != 0)
		return LOCKKEY_MALFORMED;
	if (epoch)
		*epoch = v;
	return LOCKKEY_EPOCH_FILE;
}

const char *lockkey_strverdict(enum lockkey_verdict v)
{
	switch (v) {
	case LOCKKEY_NOT_LOCK_KEY: return "not_lock_key";
	case LOCKKEY_READ_PASS: return "read_pass";
	case LOCKKEY_ALLOW_CREATE: return "allow_create";
	case LOCKKEY_ALLOW_REWRITE: return "allow_rewrite";
	case LOCKKEY_ALLOW_DELETE: return "allow_delete";
	case LOCKKEY_REFUSE: return "refuse";
	}
	return "unknown";
}

#define REFUSE(st, cd, ...) do { \
	out->verdict = LOCKKEY_REFUSE; \
	out->status = (st); \
	out->code = (cd); \
	snprintf(out->message, sizeof(out->message), __VA_ARGS__); \
} while (0)

/* Header value without surrounding spaces/tabs equals s. */
static int header_is(const char *value, const char *s)
{
	size_t n;

	while (*value == ' ' || *value == '\t')
		value++;
	n = strlen(value);
	while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
		n--;
	return n == strlen(s) && strncmp(value, s, n) == 0;
}

static int header_blank(const char *value)
{
	return header_is(value, "");
}

/* Parses the payload; 0 and *p filled, or -1. */
static int payload_ok(const struct lockkey_request *req, struct lock_payload *p)
{
	if (!req->payload || req->payload_len == 0 || req->payload_len > LOCKKEY_PAYLOAD_MAX)
		return -1;
	return lock_payload_parse(req->payload, req->payload_len, p) == 0 ? 0 : -1;
}

static void decide_put(const struct lockkey_request *req, struct lockkey_decision *out)
{
	bool create = req->if_none_match != NULL;
	bool rewrite = req->if_match != NULL;
	uint64_t e = out->epoch, latest = req->latest_epoch;
	struct lock_payload payload;

	if (create && rewrite) {
		REFUSE(400, "InvalidLockWrite",
		       "a lock file write carries If-None-Match or If-Match, not both");
		return;
	}
	if (create && !header_is(req->if_none_match, "*")) {
		REFUSE(428, "ConditionalWriteRequired",
		       "a lock file is created with If-None-Match: *");
		return;
	}
	if (rewrite && (header_blank(req->if_match) || header_is(req->if_match, "*"))) {
		REFUSE(428, "ConditionalWriteRequired",
		       "a lock file is rewritten with If-Match: <etag>");
		return;
	}
	if (!create && !rewrite) {
		REFUSE(428, "ConditionalWriteRequired",
		       "a lock file write needs If-None-Match: * (create) or "
		       "If-Match: <etag> (rewrite)");
		return;
	}
	if (create) {
		if (latest == UINT64_MAX || e != latest + 1) {
			REFUSE(409, "LockEpochNotNext",
			       "epoch %" PRIu64 " is not the next epoch %" PRIu64, e,
			       latest + 1);
			return;
		}
	} else {
		if (e > latest) {
			REFUSE(409, "LockEpochNotNext",
			       "epoch %" PRIu64 " does not exist (latest epoch %" PRIu64 ")",
			       e, latest);
			return;
		}
		if (e < latest) {
			REFUSE(409, "LockLost",
			       "epoch %" PRIu64 " is no longer the latest epoch %" PRIu64,
			       e, latest);
			return;
		}
	}
	if (payload_ok(req, &payload)) {
		REFUSE(400, "InvalidLockPayload",
		       "the body is not a lock payload (JSON with leaderId and validityMs, "
		       "at most %d bytes)", LOCKKEY_PAYLOAD_MAX);
		return;
	}
	if (create) {
		if (!payload.expired && (req->latest_state == LOCK_STATE_HELD ||
					 req->latest_state == LOCK_STATE_UNREADABLE)) {
			REFUSE(409, "LockHeld", "epoch %" PRIu64 " is held", latest);
			return;
		}
		out->verdict = LOCKKEY_ALLOW_CREATE;
		return;
	}
	if (!payload.expired) {
		/* a live rewrite is a renewal: of a live lease, by its holder */
		const struct lock_payload *cur = req->latest_payload;

		if (req->latest_state == LOCK_STATE_RELEASED) {
			REFUSE(409, "LockLost", "epoch %" PRIu64 " was released", e);
			return;
		}
		if (req->latest_state != LOCK_STATE_HELD || !cur) {
			REFUSE(409, "LockLost", "epoch %" PRIu64 "'s lease lapsed: it cannot be "
			       "renewed", e);
			return;
		}
		if (strcmp(cur->leader_id, payload.leader_id) != 0 ||
		    (cur->nonce[0] && strcmp(cur->nonce, payload.nonce) != 0)) {
			REFUSE(409, "LockHolderMismatch", "epoch %" PRIu64 " is held by another "
			       "holder: a rewrite may renew it, not take it", e);
			return;
		}
	}
	out->verdict = LOCKKEY_ALLOW_REWRITE;
}

void lockkey_decide(const struct lockkey_request *req, struct lockkey_decision *out)
{
	enum lockkey_class cls;
	const char *m = req->method ? req->method : "";
	uint64_t epoch = 0;

	memset(out, 0, sizeof(*out));
	cls = lockkey_classify(req->key, req->prefix, &epoch);
	if (cls == LOCKKEY_NOT_LOCK) {
		out->verdict = LOCKKEY_NOT_LOCK_KEY;
		return;
	}
	out->epoch = cls == LOCKKEY_EPOCH_FILE ? epoch : 0;
	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0) {
		out->verdict = LOCKKEY_READ_PASS;
		return;
	}
	if (cls == LOCKKEY_EPOCH_MARK) {
		REFUSE(403, LOCK_MARK_RESERVED_CODE, "the epoch mark of this lock is kept by the "
		       "proxy (raised to every epoch created through it); clients only read it");
		return;
	}
	if (strcmp(m, "PUT") != 0 && strcmp(m, "DELETE") != 0) {
		REFUSE(405, "MethodNotAllowed", "lock files accept GET, HEAD, PUT and DELETE only");
		return;
	}
	if (cls == LOCKKEY_MALFORMED) {
		REFUSE(400, "InvalidLockKey",
		       "keys under the lock prefix are epoch files \"%.60s%%010llu.json\"",
		       req->prefix);
		return;
	}
	if (req->copy_or_multipart) {
		REFUSE(400, "InvalidLockWrite",
		       "lock files are written by a plain PUT, not a copy or multipart upload");
		return;
	}
	if (strcmp(m, "DELETE") == 0) {
		if (epoch >= req->latest_epoch) {
			REFUSE(409, "LockFileIsLatest",
			       "epoch %" PRIu64 " is not older than the latest epoch %" PRIu64
			       "; only old epoch files may be deleted", epoch, req->latest_epoch);
			return;
		}
		out->verdict = LOCKKEY_ALLOW_DELETE;
		return;
	}
	decide_put(req, out);
}
