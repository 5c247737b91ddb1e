/* s3local_headers.c — the embedded S3 server's object request headers,
 * read once on the loop into the call: conditions, ranges and response-
 * overrides of a read; of a write its content type, the representation
 * headers it keeps, x-amz-meta-*, Content-MD5, aws-chunked framing, copy
 * sources, and the fencing contract's epoch headers (s3local.h). It
 * decides nothing about the object (s3local_object.c). */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "http/proxy.h"
#include "s3local.h"
#include "s3local_int.h"
#include "lock/store/store.h"

/* An HTTP-date header to Unix seconds; 0 when absent or unparsable (S3
 * ignores a date it cannot read). */
static int64_t parse_http_date(const char *v)
{
	time_t t;

	if (!v || !*v)
		return 0;
	t = curl_getdate(v, NULL);
	return t > 0 ? (int64_t)t : 0;
}

static int is_any(const char *v)
{
	return v && (strcmp(v, "*") == 0 || strcmp(v, "\"*\"") == 0);
}

/* ---- request parsing (loop thread) ------------------------------------- */

/* Copies user metadata (x-amz-meta-*) of the forwarded request into c.
 * Returns 0 or -1 after replying. */
static int take_metadata(struct s3l_call *c)
{
	struct front_hdrs fwd = {0}, *hs = &fwd;
	size_t i, total = 0, plen = strlen("x-amz-meta-");
	int rc = -1;

	if (proxy_req_fwd_headers(c->req, &fwd) < 0) {
		s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
		goto out;
	}
	for (i = 0; i < hs->n; i++) {
		const char *name = hs->v[i].name;

		if (strncasecmp(name, "x-amz-meta-", plen) != 0)
			continue;
		if (!name[plen]) {
			s3l_bad_request(c->req, 400, "InvalidArgument", "a metadata header without a name");
			goto out;
		}
		total += strlen(name + plen) + strlen(hs->v[i].value);
		if (c->nmeta == STORE_META_MAX || total > S3L_META_BYTES) {
			s3l_bad_request(c->req, 400, "MetadataTooLarge",
					"your metadata headers exceed what the embedded store keeps "
					"(16 pairs, 2 KiB)");
			goto out;
		}
		c->meta[c->nmeta].name = strdup(name + plen);
		c->meta[c->nmeta].value = strdup(hs->v[i].value);
		c->nmeta++;
		if (!c->meta[c->nmeta - 1].name || !c->meta[c->nmeta - 1].value) {
			s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	front_hdrs_clear(&fwd);
	return rc;
}

/* The checksum a PUT or UploadPart asks for: one x-amz-checksum-ALGO
 * header with its value (verified against the body, then kept), or an
 * algorithm named by x-amz-sdk-checksum-algorithm or x-amz-trailer (the
 * value is then computed and kept; a trailer is verified on the way).
 * Returns 0 or -1 after replying, as S3 answers. */
static int take_checksum(struct s3l_call *c)
{
	static const enum checksum_algo algos[] = {
		CHECKSUM_CRC32, CHECKSUM_CRC32C, CHECKSUM_CRC64NVME, CHECKSUM_SHA1, CHECKSUM_SHA256,
	};
	unsigned char bin[CHECKSUM_DIGEST_MAX];
	const char *v, *named;
	size_t i, found = 0;

	for (i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
		v = proxy_req_fwd_header(c->req, checksum_header(algos[i]));
		if (!v)
			continue;
		if (++found > 1) {
			s3l_bad_request(c->req, 400, "InvalidRequest",
					"Expecting a single x-amz-checksum- header. Multiple checksum "
					"Types are not allowed.");
			return -1;
		}
		if (checksum_unbase64(algos[i], v, bin) == 0) {
			char msg[96];

			snprintf(msg, sizeof(msg), "Value for %s header is invalid.",
				 checksum_header(algos[i]));
			s3l_bad_request(c->req, 400, "InvalidRequest", msg);
			return -1;
		}
		c->checksum_algo = algos[i];
		free(c->checksum_want);
		if (!(c->checksum_want = strdup(v))) {
			s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
			return -1;
		}
	}
	if (found)
		return 0;
	named = proxy_req_fwd_header(c->req, "x-amz-trailer");
	if (named) {
		c->checksum_algo = checksum_from_header(named); /* the decoder checks it */
		return 0;
	}
	named = proxy_req_fwd_header(c->req, "x-amz-sdk-checksum-algorithm");
	if (named && (c->checksum_algo = checksum_from_name(named)) == CHECKSUM_NONE) {
		s3l_bad_request(c->req, 400, "InvalidRequest",
				"Checksum algorithm provided is unsupported. Please try again with any "
				"of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]");
		return -1;
	}
	return 0;
}

/* The representation headers an object keeps (store_hdr_names) into c;
 * Content-Encoding without its aws-chunked framing. Returns 0 or -1 after
 * replying. */
static int take_stored_headers(struct s3l_call *c)
{
	size_t i, total = 0;

	for (i = 0; i < STORE_HDR_COUNT; i++) {
		const char *v = proxy_req_fwd_header(c->req, store_hdr_names[i]);
		char *val;

		if (!v || !*v)
			continue;
		total += strlen(v);
		if (total > S3L_META_BYTES) {
			s3l_bad_request(c->req, 400, "MetadataTooLarge",
					"your representation headers exceed what the embedded store keeps (2 KiB)");
			return -1;
		}
		val = strdup(v);
		if (!val) {
			s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
			return -1;
		}
		if (i == STORE_HDR_CONTENT_ENCODING) {
			/* "aws-chunked" is framing, not the object's encoding */
			char *out = val, *tok, *save = NULL, *copy = strdup(v);

			if (!copy) {
				free(val);
				s3l_bad_request(c->req, 503, "SlowDown", "out of memory");
				return -1;
			}
			*out = '\0';
			for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				while (*tok == ' ' || *tok == '\t')
					tok++;
				if (!*tok || strncasecmp(tok, "aws-chunked", 11) == 0)
					continue;
				if (*val)
					strcat(out, ",");
				strcat(out, tok);
			}
			free(copy);
			if (!*val) {
				free(val);
				continue;
			}
		}
		c->headers[i] = val;
	}
	return 0;
}

/* Object requests: headers into c. Returns 0 or -1 after replying. */
int s3l_take_object_headers(struct s3l_call *c, const struct s3l_query *q)
{
	struct proxy_req *req = c->req;
	const char *v;

	v = proxy_req_fwd_header(req, "If-Match");
	if (v && !(c->if_match = strdup(v)))
		goto nomem;
	v = proxy_req_fwd_header(req, "If-None-Match");
	if (v && !(c->if_none_match = strdup(v)))
		goto nomem;
	if (c->op == OP_GET || c->op == OP_HEAD) {
		static const struct { const char *param, *header; } ov[] = {
			{ "response-content-type", "Content-Type" },
			{ "response-content-language", "Content-Language" },
			{ "response-expires", "Expires" },
			{ "response-cache-control", "Cache-Control" },
			{ "response-content-disposition", "Content-Disposition" },
			{ "response-content-encoding", "Content-Encoding" },
		};
		size_t i;

		v = proxy_req_fwd_header(req, "x-amz-checksum-mode");
		c->checksum_mode = v && strcasecmp(v, "ENABLED") == 0;
		c->if_modified_since = parse_http_date(proxy_req_fwd_header(req, "If-Modified-Since"));
		c->if_unmodified_since = parse_http_date(proxy_req_fwd_header(req, "If-Unmodified-Since"));
		v = proxy_req_fwd_header(req, "Range");
		if (v && !(c->range = strdup(v)))
			goto nomem;
		for (i = 0; i < sizeof(ov) / sizeof(ov[0]); i++) {
			const char *val = s3l_query_get(q, ov[i].param, NULL);
			const char *p;

			if (!val)
				continue;
			for (p = val; *p; p++)
				if ((unsigned char)*p < 0x20 || *p == 0x7f) {
					s3l_bad_request(req, 400, "InvalidArgument",
							"a response- parameter holds a control byte");
					return -1;
				}
			c->overrides[c->noverrides].name = (char *)ov[i].header;
			c->overrides[c->noverrides].value = strdup(val);
			if (!c->overrides[c->noverrides++].value)
				goto nomem;
		}
		return 0;
	}
	if (c->op == OP_GET_ACL || c->op == OP_MPU_LIST_PARTS)
		return 0;
	v = proxy_req_fwd_header(req, S3LOCAL_EPOCH_CURRENT_HEADER);
	if (v && s3l_parse_u64(v, &c->lock_epoch) < 0) {
		s3l_bad_request(req, 400, "InvalidArgument",
				S3LOCAL_EPOCH_CURRENT_HEADER " must be an epoch (1-19 digits)");
		return -1;
	}
	if (c->op == OP_MPU_ABORT)
		return 0;
	if (c->op == OP_DELETE) {
		v = proxy_req_fwd_header(req, S3LOCAL_EPOCH_CHECK_HEADER);
		if (v) {
			if (s3l_parse_u64(v, &c->epoch) < 0 || c->epoch == 0) {
				s3l_bad_request(req, 400, "InvalidArgument",
						S3LOCAL_EPOCH_CHECK_HEADER " must be an epoch (1-19 digits, >= 1)");
				return -1;
			}
			c->has_epoch = 1;
		}
		return 0;
	}
	/* PUT */
	if (c->if_none_match && !is_any(c->if_none_match)) {
		s3l_not_implemented(req, "If-None-Match with an ETag on PUT (only \"*\")");
		return -1;
	}
	if (c->if_none_match && c->if_match) {
		s3l_bad_request(req, 400, "InvalidRequest", "If-Match and If-None-Match cannot be combined");
		return -1;
	}
	if (c->if_match && strlen(c->if_match) >= STORE_ETAG_MAX) {
		s3l_bad_request(req, 400, "InvalidArgument", "If-Match is too long");
		return -1;
	}
	v = proxy_req_fwd_header(req, S3LOCAL_EPOCH_META_HEADER);
	if (v) {
		if (s3l_parse_u64(v, &c->epoch) < 0 || c->epoch == 0) {
			s3l_bad_request(req, 400, "InvalidArgument",
					S3LOCAL_EPOCH_META_HEADER " must be an epoch (1-19 digits, >= 1)");
			return -1;
		}
		c->has_epoch = 1;
	}
	v = proxy_req_fwd_header(req, "Content-Type");
	if (v && *v && !(c->content_type = strdup(v)))
		goto nomem;
	if (c->content_type && strlen(c->content_type) >= sizeof(c->res.content_type)) {
		s3l_bad_request(req, 400, "InvalidArgument", "Content-Type is too long");
		return -1;
	}
	v = proxy_req_fwd_header(req, "Content-MD5");
	if (v && !(c->content_md5 = strdup(v)))
		goto nomem;
	v = proxy_req_fwd_header(req, "Content-Encoding");
	c->aws_chunked = v && front_list_has(v, "aws-chunked");
	if (take_stored_headers(c) < 0)
		return -1;
	if ((c->op == OP_PUT || c->op == OP_MPU_PART) && take_checksum(c) < 0)
		return -1;
	v = proxy_req_fwd_header(req, "x-amz-content-sha256");
	if (v && strncmp(v, "STREAMING-", 10) == 0)
		c->aws_chunked = 1;
	c->decoded_length = -1;
	v = proxy_req_fwd_header(req, "x-amz-decoded-content-length");
	if (v) {
		uint64_t dl;

		if (s3l_parse_u64(v, &dl) < 0) {
			s3l_bad_request(req, 400, "InvalidArgument", "bad x-amz-decoded-content-length");
			return -1;
		}
		c->decoded_length = (int64_t)dl;
	}
	if (c->op == OP_COPY || c->op == OP_MPU_PART_COPY) {
		static const struct { const char *name; size_t off; } copy_hdrs[] = {
			{ "x-amz-copy-source", offsetof(struct s3l_call, copy_source) },
			{ "x-amz-copy-source-range", offsetof(struct s3l_call, copy_range) },
			{ "x-amz-copy-source-if-match", offsetof(struct s3l_call, copy_if_match) },
			{ "x-amz-copy-source-if-none-match", offsetof(struct s3l_call, copy_if_none_match) },
		};
		size_t i;

		for (i = 0; i < sizeof(copy_hdrs) / sizeof(copy_hdrs[0]); i++) {
			char **dst = (char **)((char *)c + copy_hdrs[i].off);

			v = proxy_req_fwd_header(req, copy_hdrs[i].name);
			if (v && !(*dst = strdup(v)))
				goto nomem;
		}
		v = proxy_req_fwd_header(req, "x-amz-metadata-directive");
		if (v && strcasecmp(v, "REPLACE") != 0 && strcasecmp(v, "COPY") != 0) {
			s3l_bad_request(req, 400, "InvalidArgument",
					"x-amz-metadata-directive must be COPY or REPLACE");
			return -1;
		}
		c->replace_metadata = v && strcasecmp(v, "REPLACE") == 0;
	}
	if (proxy_req_fwd_header(req, "x-amz-tagging")) {
		s3l_not_implemented(req, "tagging (x-amz-tagging)");
		return -1;
	}
	if (proxy_req_fwd_header(req, "x-amz-object-lock-mode") ||
	    proxy_req_fwd_header(req, "x-amz-object-lock-retain-until-date") ||
	    proxy_req_fwd_header(req, "x-amz-object-lock-legal-hold")) {
		s3l_not_implemented(req, "object lock");
		return -1;
	}
	return take_metadata(c);
nomem:
	s3l_bad_request(req, 503, "SlowDown", "out of memory");
	return -1;
}
