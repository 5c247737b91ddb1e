/* lockreg_name.c — the names and places of fenced locks, as pure string
 * rules: which bucket names S3 takes, where a lock's epoch files live (the
 * default layout, or under a lock store's root), and whether a lock store
 * lies in a bucket. No I/O and no state: the registry (lockreg.c) and the
 * handlers call these with what a request or the config names. */
#include "lockreg.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wire/bucketname.h"

int lockreg_bucket_valid(const char *name)
{
	return name && s3_bucket_name_valid(name, strlen(name));
}

int lockreg_default_prefix(const char *name, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "locks/%s/lock-", name);

	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int lockreg_store_prefix(const char *store_url, const char *name, char *out, size_t outlen)
{
	const char *root = "", *slash;
	size_t rlen = 0;
	int n;

	if (!store_url || !name)
		return -1;
	if (strncmp(store_url, "s3://", 5) == 0) {
		slash = strchr(store_url + 5, '/');
		if (slash == store_url + 5)
			return -1; /* no bucket */
		if (slash) {
			root = slash + 1;
			rlen = strlen(root);
			while (rlen && root[rlen - 1] == '/')
				rlen--;
		}
	} else if (strncmp(store_url, "file://", 7) != 0) {
		return -1;
	}
	if (rlen > (size_t)INT32_MAX)
		return -1;
	n = snprintf(out, outlen, "%.*s%slocks/%s/lock-", (int)rlen, root, rlen ? "/" : "", name);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int lockreg_url_in_bucket(const char *store_url, const char *bucket)
{
	size_t blen = strlen(bucket);

	return strncmp(store_url, "s3://", 5) == 0 &&
	       strncmp(store_url + 5, bucket, blen) == 0 &&
	       (store_url[5 + blen] == '\0' || store_url[5 + blen] == '/');
}
