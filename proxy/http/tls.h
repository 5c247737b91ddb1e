/* tls.h — the listener's TLS context (OpenSSL) built from the config's
 * "tls" section: certificate chain and key from PEM files, TLS 1.2 or newer
 * only, optional client-certificate CA. A reload builds a new context from
 * the same (renewed) files; connections already open keep the old one.
 * It does no I/O on sockets (libevent's bufferevent_openssl does, front.c). */
#ifndef FENCE_TLS_H
#define FENCE_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

struct policy_tls;

/* A server context for t (t->enabled must be set). Returns it with one
 * reference (SSL_CTX_free), or NULL with a message in err that names the
 * config key ("tls.key: cannot load \"/etc/x.pem\": ..."). */
SSL_CTX *tls_server_ctx_new(const struct policy_tls *t, char *err, size_t errlen);

#endif
