/* store.c — what every store backend shares: opening one from a URL,
 * result and listing cleanup, and key validation. The backends themselves
 * live in store_s3.c and store_fs.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

const char *store_strerror(enum store_code code)
{
	switch (code) {
	case STORE_OK: return "ok";
	case STORE_NOT_FOUND: return "not found";
	case STORE_PRECONDITION_FAILED: return "precondition failed";
	case STORE_CONFLICT: return "conflicting concurrent write";
	case STORE_ERR_IO: return "i/o error or timeout talking to the store";
	case STORE_ERR_SERVER: return "store server error";
	case STORE_ERR_DENIED: return "access denied by the store";
	case STORE_ERR_INVALID: return "invalid request";
	case STORE_ERR_PROTOCOL: return "unexpected answer from the store";
	case STORE_ERR_NOMEM: return "out of memory";
	}
	return "unknown store error";
}

void store_result_clear(struct store_result *res)
{
	size_t i;

	if (!res)
		return;
	free(res->body);
	for (i = 0; i < res->nmeta && i < STORE_META_MAX; i++) {
		free(res->meta[i].name);
		free(res->meta[i].value);
	}
	for (i = 0; i < STORE_HDR_COUNT; i++)
		free(res->headers[i]);
	memset(res, 0, sizeof(*res));
	res->content_length = -1;
}

const char *const store_hdr_names[STORE_HDR_COUNT] = {
	"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires",
};

enum store_code store_delete_ex(struct store *st, const char *key,
				const struct store_delete_opts *opts, struct store_result *res)
{
	if (st->ext && st->ext->del_opts)
		return st->ext->del_opts(st, key, opts, res);
	if (opts && (opts->if_meta.name || opts->version_id)) {
		store_result_clear(res);
		res->code = STORE_ERR_INVALID;
		snprintf(res->err_message, sizeof(res->err_message), "this store cannot %s",
			 opts->version_id ? "delete one version" : "condition a delete on metadata");
		return STORE_ERR_INVALID;
	}
	return st->ops->del(st, key, opts ? opts->if_match : NULL, res);
}

const char *store_result_meta(const struct store_result *res, const char *name)
{
	size_t i;

	for (i = 0; i < res->nmeta && i < STORE_META_MAX; i++)
		if (res->meta[i].name && strcmp(res->meta[i].name, name) == 0)
			return res->meta[i].value;
	return NULL;
}

void store_list_page_free(struct store_list_page *page)
{
	size_t i;

	if (!page)
		return;
	for (i = 0; i < page->n; i++)
		free(page->entries[i].key);
	free(page->entries);
	free(page->next_token);
	memset(page, 0, sizeof(*page));
}

int store_key_valid(const char *key, size_t len)
{
	size_t i, seg = 0;

	if (!key || len == 0 || len > 1024 || key[0] == '/')
		return 0;
	for (i = 0; i <= len; i++) {
		unsigned char c = i < len ? (unsigned char)key[i] : '/';

		if (i < len && (c < 0x20 || c == 0x7f))
			return 0;
		if (c != '/')
			continue;
		/* segment is key[seg .. i) */
		if (i == seg && i < len)
			return 0; /* "//" */
		if (i - seg == 1 && key[seg] == '.')
			return 0;
		if (i - seg == 2 && key[seg] == '.' && key[seg + 1] == '.')
			return 0;
		seg = i + 1;
	}
	return 1;
}

/* Splits "s3://BUCKET/ROOT" into bucket and root ("" or "ROOT/"). */
static int split_s3_url(const char *rest, char **bucket, char **root)
{
	const char *slash = strchr(rest, '/');
	size_t blen = slash ? (size_t)(slash - rest) : strlen(rest);
	const char *r = slash ? slash + 1 : "";
	size_t rlen = strlen(r);

	*bucket = strndup(rest, blen);
	*root = malloc(rlen + 2);
	if (!*bucket || !*root)
		return -1;
	memcpy(*root, r, rlen);
	if (rlen && r[rlen - 1] != '/')
		(*root)[rlen++] = '/';
	(*root)[rlen] = '\0';
	return 0;
}

struct store *store_open(const struct store_config *cfg, char *err, size_t errlen)
{
	struct store *st = NULL;
	char *bucket = NULL, *root = NULL;
	const char *url = cfg->url;

	if (!url || !*url) {
		snprintf(err, errlen, "no store given: pass --store s3://BUCKET or file:///DIR, or set FENCE_STORE");
		return NULL;
	}
	if (strncmp(url, "s3://", 5) == 0) {
		if (split_s3_url(url + 5, &bucket, &root) < 0) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		if (!*bucket) {
			snprintf(err, errlen, "store url \"%s\" has no bucket (s3://BUCKET[/ROOT])", url);
			goto out;
		}
		st = store_s3_open(cfg, bucket, err, errlen);
	} else if (strncmp(url, "file://", 7) == 0 || strstr(url, "://") == NULL) {
		const char *dir = strncmp(url, "file://", 7) == 0 ? url + 7 : url;

		if (!*dir) {
			snprintf(err, errlen, "store url \"%s\" has no directory (file:///DIR)", url);
			goto out;
		}
		root = strdup("");
		if (!root) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		st = store_fs_open(cfg, dir, err, errlen);
	} else {
		snprintf(err, errlen, "store url \"%s\": unknown scheme (use s3:// or file://)", url);
		goto out;
	}
	if (st) {
		st->root = root;
		root = NULL;
	}
out:
	free(bucket);
	free(root);
	return st;
}

void store_close(struct store *st)
{
	char *root;

	if (!st)
		return;
	root = st->root;
	st->ops->close(st);
	free(root);
}

const char *store_root(const struct store *st)
{
	return st->root ? st->root : "";
}

int store_etag_matches(const char *want, const char *have)
{
	size_t wl, hl;

	while (*want == ' ')
		want++;
	if (strcmp(want, "*") == 0)
		return 1;
	if (strncmp(want, "W/", 2) == 0)
		want += 2;
	wl = strlen(want);
	hl = strlen(have);
	if (wl >= 2 && want[0] == '"' && want[wl - 1] == '"') {
		want++;
		wl -= 2;
	}
	if (hl >= 2 && have[0] == '"' && have[hl - 1] == '"') {
		have++;
		hl -= 2;
	}
	return wl == hl && strncasecmp(want, have, wl) == 0;
}
