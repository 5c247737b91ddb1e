/* tls.c — builds the listener's OpenSSL server context from the config:
 * certificate chain, private key (checked against the certificate), minimum
 * protocol TLS 1.2 (or 1.3 when configured), optional client certificates.
 * It neither accepts connections nor watches files: the daemon calls it at
 * start, for `fencegate -t`, and on SIGHUP to pick up renewed certificates. */
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>

#include "policy/policy.h"

/* The oldest queued OpenSSL error as text (and the queue cleared). */
static void ssl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();

	if (e)
		ERR_error_string_n(e, buf, len);
	else
		snprintf(buf, len, "unknown error");
	ERR_clear_error();
}

/* 0 if path can be opened for reading, else -1 with the reason in err. */
static int readable(const char *key, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");

	if (!f) {
		snprintf(err, errlen, "%s: cannot open \"%s\": %s", key, path, strerror(errno));
		return -1;
	}
	fclose(f);
	return 0;
}

SSL_CTX *tls_server_ctx_new(const struct policy_tls *t, char *err, size_t errlen)
{
	SSL_CTX *ctx = NULL;
	char why[256];

	ERR_clear_error();
	if (!t->enabled || !t->cert || !t->key) {
		snprintf(err, errlen, "tls: cert and key are needed");
		return NULL;
	}
	if (readable("tls.cert", t->cert, err, errlen) < 0 ||
	    readable("tls.key", t->key, err, errlen) < 0 ||
	    (t->ca && readable("tls.ca", t->ca, err, errlen) < 0))
		return NULL;
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "tls: cannot create a context: %s", why);
		return NULL;
	}
	if (!SSL_CTX_set_min_proto_version(ctx, t->min_version == 13 ? TLS1_3_VERSION
								       : TLS1_2_VERSION)) {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "tls.min_version: %s", why);
		goto fail;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
				 SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "tls.cert: cannot load \"%s\": %s", t->cert, why);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "tls.key: cannot load \"%s\": %s", t->key, why);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "tls.key: \"%s\" does not match tls.cert \"%s\": %s",
			 t->key, t->cert, why);
		goto fail;
	}
	if (t->ca) {
		if (SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1) {
			ssl_reason(why, sizeof(why));
			snprintf(err, errlen, "tls.ca: cannot load \"%s\": %s", t->ca, why);
			goto fail;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}
