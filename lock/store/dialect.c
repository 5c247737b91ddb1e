/* dialect.c — the table of known S3-compatible backends, the names of the
 * capabilities and operations, which capability each operation needs, and
 * the process-wide record of what the upstream was measured to honour.
 *
 * It sends nothing: the measuring is lock_selftest.c's, the spelling of
 * If-Match on the wire store_s3.c's, the refusing fencing's. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dialect.h"

#define PUT_BOTH (CAP_PUT_IF_MATCH_QUOTED | CAP_PUT_IF_MATCH_BARE)

static const struct dialect TABLE[] = {
	{ "aws", "AWS S3", DIALECT_ETAG_QUOTED, 404, 1,
	  CAP_PUT_IF_NONE_MATCH | PUT_BOTH | CAP_MPU_IF_NONE_MATCH | CAP_DATE | CAP_RACE, 0,
	  DIALECT_VENDOR,
	  "If-Match on a missing key answers 404, not 412; a concurrent conditional write may "
	  "answer 409 ConditionalRequestConflict (retried); DELETE and copy-destination "
	  "conditions are probed" },
	{ "ceph-rgw", "Ceph RGW 16.2 (radosgw)", DIALECT_ETAG_BARE, 404, 0,
	  CAP_PUT_IF_NONE_MATCH | CAP_PUT_IF_MATCH_BARE | CAP_DATE | CAP_RACE,
	  CAP_PUT_IF_MATCH_QUOTED | CAP_DELETE_IF_MATCH | CAP_COPY_IF_NONE_MATCH |
	  CAP_MPU_IF_NONE_MATCH,
	  DIALECT_TESTED,
	  "a quoted If-Match answers 412 even when it matches (sent bare); DELETE If-Match, "
	  "copy-destination and CompleteMultipartUpload If-None-Match are ignored" },
	{ "minio", "MinIO", DIALECT_ETAG_QUOTED, 412, 0,
	  CAP_PUT_IF_NONE_MATCH | CAP_PUT_IF_MATCH_QUOTED | CAP_DATE, CAP_DELETE_IF_MATCH,
	  DIALECT_REPORTS, "reported to ignore If-Match on DELETE and delete anyway" },
	{ "r2", "Cloudflare R2", DIALECT_ETAG_QUOTED, 412, 0,
	  CAP_PUT_IF_NONE_MATCH | CAP_PUT_IF_MATCH_QUOTED | CAP_DATE, 0, DIALECT_VENDOR,
	  "conditional PUT documented; DELETE, copy and multipart conditions are probed" },
	{ "gcs-xml", "Google Cloud Storage, XML API", DIALECT_ETAG_QUOTED, 412, 0,
	  CAP_DATE, 0, DIALECT_VENDOR,
	  "its native preconditions are generations (x-goog-if-generation-match), which "
	  "fencegate does not send: every ETag condition is probed" },
	{ "tigris", "Tigris", DIALECT_ETAG_QUOTED, 412, 0,
	  CAP_PUT_IF_NONE_MATCH | CAP_PUT_IF_MATCH_QUOTED | CAP_DATE, 0, DIALECT_VENDOR,
	  "conditions are global only with X-Tigris-Consistent: true, which fencegate does not "
	  "send: the race is probed, and across regions not proven" },
	{ "seaweedfs", "SeaweedFS", DIALECT_ETAG_QUOTED, 412, 0, CAP_DATE, CAP_RACE,
	  DIALECT_REPORTS, "reported to let all three of three racing If-None-Match writers win" },
	{ "garage", "Garage", DIALECT_ETAG_QUOTED, 412, 0, CAP_DATE, 0, DIALECT_REPORTS,
	  "conditional writes not documented: every condition is probed" },
	{ "b2", "Backblaze B2 (S3 API)", DIALECT_ETAG_QUOTED, 412, 0, CAP_DATE,
	  CAP_PUT_IF_NONE_MATCH | PUT_BOTH, DIALECT_REPORTS,
	  "reported to answer conditional writes with NotImplemented" },
	{ "oci", "Oracle OCI Object Storage (S3 API)", DIALECT_ETAG_QUOTED, 412, 0, CAP_DATE,
	  CAP_PUT_IF_NONE_MATCH | PUT_BOTH, DIALECT_REPORTS,
	  "reported to ignore If-None-Match silently and overwrite" },
	{ "rustfs", "RustFS", DIALECT_ETAG_QUOTED, 412, 0, CAP_DATE, CAP_RACE, DIALECT_REPORTS,
	  "reported atomic against one endpoint and racy across four" },
	{ "versitygw", "Versity Gateway, posix backend", DIALECT_ETAG_QUOTED, 412, 0, CAP_DATE,
	  CAP_RACE, DIALECT_REPORTS, "reported to let 2 to all 32 racing writers win" },
	{ "embedded", "fencegate's embedded store (file://)", DIALECT_ETAG_QUOTED, 412, 0,
	  CAP_ALL, 0, DIALECT_TESTED,
	  "conditions are checked under the store's own locks; the proxy applies them itself" },
	{ "moto", "moto_server 5 (a mock)", DIALECT_ETAG_QUOTED, 404, 0,
	  CAP_PUT_IF_NONE_MATCH | CAP_PUT_IF_MATCH_QUOTED | CAP_DELETE_IF_MATCH |
	  CAP_MPU_IF_NONE_MATCH | CAP_DATE,
	  CAP_COPY_IF_NONE_MATCH, DIALECT_TESTED,
	  "checks are check-then-act in Python; copy-destination conditions are ignored" },
};

#define TABLE_LEN (sizeof(TABLE) / sizeof(TABLE[0]))

static const char *const CAP_NAMES[CAP_COUNT] = {
	"put_if_none_match", "put_if_match_quoted", "put_if_match_bare", "delete_if_match",
	"copy_if_none_match", "complete_multipart_if_none_match", "date", "race",
};

int backend_cap_index(unsigned cap)
{
	for (int i = 0; i < CAP_COUNT; i++)
		if (cap == 1u << i)
			return i;
	return -1;
}

const char *backend_cap_name(unsigned cap)
{
	int i = backend_cap_index(cap);

	return i < 0 ? NULL : CAP_NAMES[i];
}

const char *backend_cap_lacking(unsigned cap)
{
	static const char *const lacking[CAP_COUNT] = {
		"backend ignores If-None-Match on PUT",
		"backend ignores If-Match on PUT",
		"backend ignores If-Match on PUT without quotes",
		"backend ignores If-Match on DELETE",
		"backend ignores conditions on the CopyObject destination",
		"backend ignores If-None-Match on CompleteMultipartUpload",
		"backend sends no Date header",
		"backend let more than one racing If-None-Match writer win",
	};
	int i = backend_cap_index(cap);

	return i < 0 ? NULL : lacking[i];
}

const char *backend_op_name(enum backend_op op)
{
	static const char *const names[BACKEND_OP_COUNT] = {
		"lock", "put", "delete", "copy", "complete_multipart",
	};

	return (unsigned)op < BACKEND_OP_COUNT ? names[op] : "unknown";
}

unsigned backend_caps_missing(unsigned caps, enum backend_op op)
{
	if (!(caps & CAP_PUT_IF_NONE_MATCH))
		return CAP_PUT_IF_NONE_MATCH;
	if (!(caps & CAP_PUT_IF_MATCH))
		return CAP_PUT_IF_MATCH_QUOTED;
	switch (op) {
	case BACKEND_OP_LOCK:
		if (!(caps & CAP_DATE))
			return CAP_DATE;
		return caps & CAP_RACE ? 0 : CAP_RACE;
	case BACKEND_OP_PUT:
		return 0;
	case BACKEND_OP_DELETE:
		return caps & CAP_DELETE_IF_MATCH ? 0 : CAP_DELETE_IF_MATCH;
	case BACKEND_OP_COPY:
		return caps & CAP_COPY_IF_NONE_MATCH ? 0 : CAP_COPY_IF_NONE_MATCH;
	case BACKEND_OP_MPU_COMPLETE:
		return caps & CAP_MPU_IF_NONE_MATCH ? 0 : CAP_MPU_IF_NONE_MATCH;
	case BACKEND_OP_COUNT:
		break;
	}
	return CAP_ALL;
}

const char *backend_caps_refusal(unsigned caps, enum backend_op op)
{
	unsigned cap = backend_caps_missing(caps, op);

	if (!cap)
		return NULL;
	return cap == CAP_ALL ? "unknown operation" : backend_cap_lacking(cap);
}

const struct dialect *dialect_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < TABLE_LEN; i++)
		if (strcasecmp(TABLE[i].name, name) == 0)
			return &TABLE[i];
	return NULL;
}

const struct dialect *dialect_at(size_t i)
{
	return i < TABLE_LEN ? &TABLE[i] : NULL;
}

unsigned dialect_trusted_caps(const struct dialect *d, unsigned probed)
{
	return d ? probed & ~d->lacks : probed;
}

/* ---- what this process measured ----------------------------------------- */

static unsigned published_caps = CAP_ALL;
static int published_etag = DIALECT_ETAG_AUTO;

void backend_caps_publish(unsigned caps)
{
	__atomic_store_n(&published_caps, caps, __ATOMIC_RELEASE);
}

unsigned backend_caps_current(void)
{
	return __atomic_load_n(&published_caps, __ATOMIC_ACQUIRE);
}

const char *backend_refuses(enum backend_op op)
{
	if ((unsigned)op >= BACKEND_OP_COUNT || !(BACKEND_ENFORCED & (1u << op)))
		return NULL;
	return backend_caps_refusal(backend_caps_current(), op);
}

void backend_etag_publish(enum dialect_etag form)
{
	__atomic_store_n(&published_etag, (int)form, __ATOMIC_RELEASE);
}

enum dialect_etag backend_etag_current(void)
{
	return (enum dialect_etag)__atomic_load_n(&published_etag, __ATOMIC_ACQUIRE);
}

const char *dialect_spell_etag(enum dialect_etag form, const char *etag, char *buf,
			       size_t len)
{
	const char *orig = etag;
	size_t n;

	if (!etag || strcmp(etag, "*") == 0)
		return etag;
	if (strncmp(etag, "W/", 2) == 0)
		etag += 2;
	n = strlen(etag);
	if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
		etag++;
		n -= 2;
	}
	if (form == DIALECT_ETAG_BARE) {
		if (n + 1 > len)
			return orig;
		memcpy(buf, etag, n);
		buf[n] = '\0';
	} else if (snprintf(buf, len, "\"%.*s\"", (int)n, etag) >= (int)len) {
		return orig;
	}
	return buf;
}
