/* link: an agent's session with a remote coordinator: a ZeroMQ DEALER carrying TLS 1.3 records (or plaintext
 * frames with --insecure), wire messages in and out, and a fresh handshake whenever the session breaks. */
#ifndef PLAUNCH_LINK_H
#define PLAUNCH_LINK_H

#include "common/loop.h"
#include "common/tls/tls_chan.h"
#include "common/wire/wire.h"

typedef struct link link_t;

/* A checked message from the coordinator (HELLO is the first one of every session). */
typedef void (*link_msg_fn)(void *arg, const wire_msg_t *m);
/* The session failed (reason says why). fatal: it failed in its handshake (the coordinator refused our
 * credentials, or we refused its): the link stops. Otherwise a new handshake starts after a back-off. */
typedef void (*link_drop_fn)(void *arg, const char *reason, int fatal);

/* Where the first session goes (NULL: to the coordinator, which may REDIRECT it). */
struct link_first {
    int direct;                 /* ask the coordinator to serve this node itself from the first session on (a relay) */
    const char *relay;          /* "tcp://HOST:PORT": this node's relay by the ranked layout (docs/design.md, "The
                                   fan-out tree"): the first session opens there; when it fails (or the caller
                                   ends it with link_reset: the relay is late), the next goes to the coordinator,
                                   asking to be served directly. NULL or "" none */
};

/* Connects to endpoint ("tcp://host:port"), or first to a relay; tls NULL means plaintext. NULL + message in err
 * on failure. */
link_t *link_new(void *zctx, loop_t *loop, const char *endpoint, tls_ctx_t *tls, const struct link_first *first,
                 link_msg_fn on_msg, link_drop_fn on_drop, void *arg, char *err, size_t errlen);
void link_destroy(link_t **l);
/* Sends one message; 0, or -1 with errno ENOTCONN when the session is not open (the caller retries after the
 * next HELLO), EBADMSG when m breaks a bound of the protocol (logged; it can never be sent). */
int link_send(link_t *l, const wire_msg_t *m);
/* Starts a new session (new TLS handshake). */
void link_reset(link_t *l, const char *why);
int link_is_open(const link_t *l);
/* Why a coordinator gave no answer, for the message that ends the wait: no plaunch coordinator listens there
 * (its last sessions ended because the peer took the connection and never answered), or the usual causes. */
const char *link_no_answer_hint(const link_t *l);
/* The current session is with a relay (a REDIRECT's), not with the coordinator itself. */
int link_at_relay(const link_t *l);
/* on: the sessions that follow ask the coordinator to serve this node itself, never through a relay (a relay's
 * own session). */
void link_set_direct(link_t *l, int on);

/* The routing id prefix that asks for that (the coordinator checks it: launcher/coord/coord_relay.c). */
#define LINK_DIRECT "PLDIRECT"
#define LINK_DIRECT_LEN 8

#endif
