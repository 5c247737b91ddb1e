/* fuzz_token.c — libFuzzer target for the fencing token and lock name
 * parsers (proxy/fence/token.c) and the verdict they feed (proxy/fence/fence.c).
 *
 * Input: header value, then optionally '\n' and a metadata value. Checks
 * that an accepted token is exactly 1-19 ASCII digits with the value strtoull
 * reads, that header/metadata reconciliation is symmetric, and that the
 * verdict never lowers the epoch. Aborts on any violation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fence/fence.h"
#include "fence/token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_single(const char *s, size_t len)
{
	uint64_t epoch = 0;
	enum token_status st = token_parse(s, len, &epoch);
	char copy[32];
	size_t i;

	if (st == TOKEN_ABSENT || st == TOKEN_CONFLICT)
		abort();
	if (st != TOKEN_OK)
		return;
	if (len < 1 || len > TOKEN_DIGITS_MAX || epoch == 0)
		abort();
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			abort();
	memcpy(copy, s, len);
	copy[len] = '\0';
	if (strtoull(copy, NULL, 10) != epoch)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	const char *nl = memchr(in, '\n', size);
	size_t hlen = nl ? (size_t)(nl - in) : size;
	const char *meta = nl ? nl + 1 : NULL;
	size_t mlen = nl ? size - hlen - 1 : 0;
	struct token a = TOKEN_INIT, b = TOKEN_INIT;
	char *hs = NULL, *ms = NULL, name[TOKEN_LOCK_NAME_MAX + 1];
	struct fence_input fi;
	struct fence_decision d;

	check_single(in, hlen);
	if (meta)
		check_single(meta, mlen);

	/* Reconciliation does not depend on order. */
	token_add(&a, in, hlen);
	token_add(&a, meta, mlen);
	token_add(&b, meta, mlen);
	token_add(&b, in, hlen);
	if (a.status != b.status || (a.status == TOKEN_OK && a.epoch != b.epoch))
		abort();

	/* The verdict: never lowers C, rejects every non-OK token on a write. */
	memset(&fi, 0, sizeof(fi));
	fi.method = "PUT";
	fi.token = a;
	fi.current_epoch = size > 0 ? data[0] : 0;
	fi.lock_file_exists = size > 1 ? (enum fence_tri)(data[1] % 3) : FENCE_TRI_UNKNOWN;
	fi.object_epoch = size > 2 ? data[2] : 0;
	fi.strict = size > 3 && (data[3] & 1);
	fi.lease_lapsed = size > 3 && (data[3] & 2);
	fi.epoch_released = size > 3 && (data[3] & 4);
	fence_decide(&fi, &d);
	if (d.high_water < fi.current_epoch)
		abort();
	if (a.status != TOKEN_OK && d.verdict != FENCE_REJECT_MISSING &&
	    d.verdict != FENCE_REJECT_INVALID)
		abort();
	if (d.verdict == FENCE_FORWARD && (a.status != TOKEN_OK || a.epoch < fi.current_epoch))
		abort();

	/* Lock names, as NUL-terminated strings (an inner NUL ends them). */
	hs = strndup(in, hlen);
	ms = meta ? strndup(meta, mlen) : NULL;
	if (hs && (!meta || ms)) {
		enum token_lock_status ls = token_lock_from_request(hs, ms, name, sizeof(name));

		if (ls == TOKEN_LOCK_OK &&
		    (!token_lock_name_valid(name, strlen(name)) || strcmp(name, hs) != 0))
			abort();
	}
	free(hs);
	free(ms);
	return 0;
}
