/* dialect.h — what S3-compatible backends do with the conditions fencing
 * relies on: the capabilities the self-test measures (enum backend_cap),
 * which operation needs which (backend_caps_refusal), and a table of
 * known backends (struct dialect) saying how a condition must be spelled
 * there and which capabilities are known missing or not to be trusted
 * whatever a probe saw.
 *
 * Pure data and pure functions, except the process-wide record of the
 * upstream's measured capabilities (backend_caps_publish/current), which
 * the proxy's self-test fills once and its fencing path reads. */
#ifndef FENCE_DIALECT_H
#define FENCE_DIALECT_H

#include <stddef.h>

/* Capability bits: each is one condition the backend honours atomically. */
enum backend_cap {
	CAP_PUT_IF_NONE_MATCH   = 1u << 0, /* PUT If-None-Match: * creates only */
	CAP_PUT_IF_MATCH_QUOTED = 1u << 1, /* PUT If-Match "etag": 2xx iff it matches */
	CAP_PUT_IF_MATCH_BARE   = 1u << 2, /* PUT If-Match etag (no quotes): same */
	CAP_DELETE_IF_MATCH     = 1u << 3, /* DELETE If-Match wrong: 412, object kept */
	CAP_COPY_IF_NONE_MATCH  = 1u << 4, /* CopyObject destination If-None-Match: * */
	CAP_MPU_IF_NONE_MATCH   = 1u << 5, /* CompleteMultipartUpload If-None-Match: * */
	CAP_DATE                = 1u << 6, /* a Date header on answers */
	CAP_RACE                = 1u << 7, /* N racing If-None-Match writers: one wins */
};
#define CAP_COUNT 8
#define CAP_ALL   ((1u << CAP_COUNT) - 1)
/* Either spelling of If-Match is enough: the store spells it the working way. */
#define CAP_PUT_IF_MATCH (CAP_PUT_IF_MATCH_QUOTED | CAP_PUT_IF_MATCH_BARE)

/* The index (0..CAP_COUNT-1) of one capability bit, -1 for a value that
 * is not exactly one known bit. */
int backend_cap_index(unsigned cap);

/* The short name of one capability bit ("put_if_none_match"), NULL for a
 * value that is not exactly one known bit. */
const char *backend_cap_name(unsigned cap);

/* A constant sentence saying what a backend without cap does ("backend
 * ignores If-Match on DELETE"); NULL for 0 or an unknown value. */
const char *backend_cap_lacking(unsigned cap);

/* What fencegate does that needs conditions. */
enum backend_op {
	BACKEND_OP_LOCK,         /* acquire, renew, release, break on lock files */
	BACKEND_OP_PUT,          /* a fenced PUT (and POST object) */
	BACKEND_OP_DELETE,       /* a fenced DELETE, each key of DeleteObjects */
	BACKEND_OP_COPY,         /* a fenced CopyObject */
	BACKEND_OP_MPU_COMPLETE, /* a fenced CompleteMultipartUpload */
	BACKEND_OP_COUNT
};

/* "lock", "put", "delete", "copy", "complete_multipart". */
const char *backend_op_name(enum backend_op op);

/* 0 when a backend with caps may serve op; else the first capability op
 * needs that caps lacks (for If-Match on PUT: CAP_PUT_IF_MATCH_QUOTED). */
unsigned backend_caps_missing(unsigned caps, enum backend_op op);

/* NULL when a backend with caps may serve op; else
 * backend_cap_lacking(backend_caps_missing(caps, op)), for an error answer
 * or a log line. */
const char *backend_caps_refusal(unsigned caps, enum backend_op op);

/* How If-Match must be spelled for a backend. */
enum dialect_etag {
	DIALECT_ETAG_AUTO = 0, /* unknown: quoted, and learn bare on a false 412 */
	DIALECT_ETAG_QUOTED,   /* "abc" as S3 returns it */
	DIALECT_ETAG_BARE,     /* abc: radosgw 16 answers 412 to a matching quoted one */
};

/* Where a row's facts come from. */
enum dialect_source {
	DIALECT_TESTED,  /* run in this repository's suite */
	DIALECT_VENDOR,  /* the vendor's documentation */
	DIALECT_REPORTS, /* public issue reports; the start-up probe decides */
};

struct dialect {
	const char *name;          /* "aws", "ceph-rgw", ... (upstream.dialect) */
	const char *title;         /* "Ceph RGW 16 (radosgw)" */
	enum dialect_etag etag;    /* how to spell If-Match */
	int missing_if_match;      /* status of If-Match on a missing key: 404 or 412 */
	int retry_409;             /* answers 409 ConditionalRequestConflict: retry */
	unsigned known;            /* capabilities documented or seen to hold */
	unsigned lacks;            /* capabilities missing or not to be trusted: never
				    * granted, whatever the probe sees */
	enum dialect_source source;
	const char *note;          /* one sentence for the matrix */
};

/* The row called name (case-insensitive), or NULL. "auto" and NULL give
 * NULL: probe everything, trust what the probe sees. */
const struct dialect *dialect_find(const char *name);

/* Row i of the table (0..), NULL past the end. */
const struct dialect *dialect_at(size_t i);

/* The capabilities to act on: what the probe measured, less what the
 * dialect (NULL: none) says cannot be trusted. */
unsigned dialect_trusted_caps(const struct dialect *d, unsigned probed);

/* The upstream's capabilities as this process measured them, once: the
 * proxy's self-test publishes, fencing reads. Before any publish every
 * capability counts as present (the self-test gate already keeps writes
 * out until it passed). Thread-safe. */
void backend_caps_publish(unsigned caps);
unsigned backend_caps_current(void);

/* backend_caps_refusal(backend_caps_current(), op) for the operations
 * whose refusal is enforced (BACKEND_ENFORCED); NULL for the others and
 * when op may go ahead. The one call fencing makes before an operation.
 *
 * CopyObject is not refused where the copy destination's condition is
 * ignored (radosgw, and moto, the suite's mock): fencing decides such a
 * copy on a lock listing made for it, as a strict route does
 * (fencing_s3.c), so a zombie copy through a lagging replica meets the
 * newer epoch; what remains is the time between that listing and the copy
 * reaching the backend. */
#define BACKEND_ENFORCED ((1u << BACKEND_OP_LOCK) | (1u << BACKEND_OP_PUT) | \
			  (1u << BACKEND_OP_DELETE) | (1u << BACKEND_OP_MPU_COMPLETE))
const char *backend_refuses(enum backend_op op);

/* How the upstream takes If-Match, as this process learned it (published
 * by the self-test; DIALECT_ETAG_AUTO before: quoted). Thread-safe. */
void backend_etag_publish(enum dialect_etag form);
enum dialect_etag backend_etag_current(void);

/* etag spelled for If-Match under form: with its quotes ("abc") unless
 * form is DIALECT_ETAG_BARE (abc). Writes into buf (len bytes) and
 * returns buf; returns etag itself when it does not fit or is "*". */
const char *dialect_spell_etag(enum dialect_etag form, const char *etag, char *buf,
			       size_t len);

#endif
