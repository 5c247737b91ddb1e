/* lock_payload.c — what a lock file says and what a lock may be called: the
 * JSON payload of an epoch file (ours, the TypeScript client's, the Java
 * design's "validity_ms") and the lock name rule. Pure: no store, no clock.
 * It does not judge leases (lease.c) nor decide who holds a lock (lock.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lock.h"

/* A lock file is a few hundred bytes; anything bigger is not one of ours. */
#define PAYLOAD_MAX_BYTES (64 * 1024)
/* 100 years: a larger lease is a corrupt file, not a lease. */
#define VALIDITY_MAX_MS (100LL * 365 * 24 * 3600 * 1000)

int lock_name_valid(const char *name)
{
	size_t i;

	if (!name || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= LOCK_NAME_MAX)
			return 0;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

/* Copies a string field, truncated to fit; absent or not a string: "". */
static void copy_string_field(const cJSON *obj, const char *field, char *out, size_t outlen)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, field);

	out[0] = '\0';
	if (cJSON_IsString(it) && it->valuestring)
		snprintf(out, outlen, "%s", it->valuestring);
}

/* An integral number field within [lo, hi]; 0 with *ok = 0 otherwise. */
static long long number_field(const cJSON *obj, const char *field, double lo, double hi,
			      int *ok)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, field);

	*ok = 0;
	if (!cJSON_IsNumber(it) || !(it->valuedouble >= lo && it->valuedouble <= hi))
		return 0;
	*ok = 1;
	return (long long)it->valuedouble;
}

int lock_payload_parse(const char *json, size_t len, struct lock_payload *out)
{
	cJSON *root = NULL;
	const cJSON *leader, *nonce;
	const char *end = NULL;
	int ok = 0, rc = -1;
	long long validity;

	memset(out, 0, sizeof(*out));
	if (!json || len == 0 || len > PAYLOAD_MAX_BYTES)
		goto out;
	root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
	if (!cJSON_IsObject(root) || !end)
		goto out;
	for (; end < json + len; end++) /* nothing but blanks may follow */
		if (*end != ' ' && *end != '\t' && *end != '\r' && *end != '\n')
			goto out;

	leader = cJSON_GetObjectItemCaseSensitive(root, "leaderId");
	if (!cJSON_IsString(leader) || !leader->valuestring)
		goto out;
	snprintf(out->leader_id, sizeof(out->leader_id), "%s", leader->valuestring);

	validity = number_field(root, "validityMs", 0, (double)VALIDITY_MAX_MS, &ok);
	if (!ok && !cJSON_GetObjectItemCaseSensitive(root, "validityMs"))
		validity = number_field(root, "validity_ms", 0, (double)VALIDITY_MAX_MS, &ok);
	if (!ok)
		goto out;
	out->validity_ms = validity;

	/* Optional fields: absent or of the wrong type counts as absent.
	 * "expired" anything but true leaves the lease to its validity (the
	 * safe reading: a mangled flag never frees a lock). */
	out->expired = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "expired"));
	/* A nonce too long for our buffer is never ours: keep it "" rather
	 * than a truncation that could compare equal. */
	nonce = cJSON_GetObjectItemCaseSensitive(root, "nonce");
	if (cJSON_IsString(nonce) && nonce->valuestring &&
	    strlen(nonce->valuestring) < sizeof(out->nonce))
		memcpy(out->nonce, nonce->valuestring, strlen(nonce->valuestring) + 1);
	copy_string_field(root, "host", out->host, sizeof(out->host));
	out->pid = number_field(root, "pid", 0, 9.0e15, &ok);
	out->renewals = number_field(root, "renewals", 0, 9.0e15, &ok);
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc < 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

char *lock_payload_format(const struct lock_payload *p)
{
	cJSON *root = NULL;
	char *json = NULL;

	root = cJSON_CreateObject();
	if (!root)
		goto out;
	if (!cJSON_AddStringToObject(root, "leaderId", p->leader_id) ||
	    !cJSON_AddNumberToObject(root, "validityMs", (double)p->validity_ms) ||
	    !cJSON_AddBoolToObject(root, "expired", p->expired) ||
	    !cJSON_AddStringToObject(root, "nonce", p->nonce) ||
	    !cJSON_AddStringToObject(root, "host", p->host) ||
	    !cJSON_AddNumberToObject(root, "pid", (double)p->pid) ||
	    !cJSON_AddNumberToObject(root, "renewals", (double)p->renewals) ||
	    !cJSON_AddNumberToObject(root, "v", 1))
		goto out;
	json = cJSON_PrintUnformatted(root);
out:
	cJSON_Delete(root);
	return json;
}
