/* listen.h — the front end's listening sockets (internal to proxy/http).
 *
 * Binds "ADDR:PORT" sockets and accepts on them through libevent's
 * evconnlistener, pausing every listener while any reason to pause holds:
 * the connection limit is reached (clients wait in the kernel's backlog),
 * or accept() just failed (out of descriptors: EMFILE, ENFILE, or memory),
 * when the listeners back off for LISTEN_BACKOFF_MS instead of spinning on
 * a socket that stays readable. Failures are logged at most once per
 * LISTEN_LOG_EVERY_MS, with a count of the ones not logged. Also the
 * descriptor budget: how many connections RLIMIT_NOFILE allows. It never
 * reads or writes a connection: accepted sockets go to the callback. */
#ifndef FENCE_LISTEN_H
#define FENCE_LISTEN_H

#include <stddef.h>

#include <event2/event.h>
#include <event2/listener.h>

#define LISTEN_MAX          16
#define LISTEN_BACKOFF_MS   100
#define LISTEN_LOG_EVERY_MS 5000
/* descriptors kept for everything but client connections (logs, the loop,
 * worker threads, store calls, files served) */
#define LISTEN_FD_RESERVE   32

struct listen_set;

/* An empty set on base; accepted sockets go to cb(…, arg). NULL on ENOMEM. */
struct listen_set *listen_set_new(struct event_base *base, evconnlistener_cb cb, void *arg);

/* Binds and listens on "ADDR:PORT", "[V6]:PORT" or ":PORT" (all IPv4).
 * Returns 0, or -1 with a message in err. */
int listen_set_add(struct listen_set *ls, const char *addr, char *err, size_t errlen);

/* 0 if "ADDR:PORT" can be bound by a socket without SO_REUSEPORT, i.e.
 * nobody listens there yet (not even another process's SO_REUSEPORT
 * sockets, which the kernel would otherwise let ours join silently); -1
 * with a message in err. Binds a probe socket and closes it. */
int listen_addr_free(const char *addr, char *err, size_t errlen);

/* full: the connection limit is reached (pause) or no longer (resume,
 * unless a backoff is running). */
void listen_set_full(struct listen_set *ls, int full);

/* on: the sockets listen_set_add binds from now on set SO_REUSEPORT, so
 * several event loops (each its own set) listen on one address and the
 * kernel spreads new connections over them. Off by default. */
void listen_set_reuse_port(struct listen_set *ls, int on);

/* Closes every listener for good (drain). The set stays valid. */
void listen_set_close(struct listen_set *ls);

/* accept() failures so far (for tests and logs). */
unsigned long listen_set_failures(const struct listen_set *ls);

/* Closes and frees. Accepts NULL. */
void listen_set_free(struct listen_set *ls);

/* The connections the descriptor limit allows for a wanted maximum
 * (0: no limit asked): raises the soft RLIMIT_NOFILE toward the hard one
 * when 2 descriptors per connection (client and upstream) plus
 * LISTEN_FD_RESERVE do not fit, and returns wanted, or less (at least 1)
 * when they still do not, with why in msg (else msg is ""). */
size_t listen_connection_budget(size_t wanted, char *msg, size_t msglen);

#endif
