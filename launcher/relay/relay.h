/* relay: an agent's service to the nodes the coordinator sends it (its children) in a job of many nodes: a ROUTER
 * on the agent's own address, a TLS 1.3 server session per child with the job's credentials, the coordinator's own
 * limits on peers that never authenticate (conn_guard, peerlog), HELLO and heartbeats to each child, their
 * messages up to the coordinator in RELAYED batches, and the coordinator's down to them. */
#ifndef PLAUNCH_RELAY_H
#define PLAUNCH_RELAY_H

/* Calling rules: one relay per agent, run by its host's event loop (the agent's, or a simulator thread's), used from
 * that loop's thread only. The host wraps what `up` gets in a RELAYED envelope and sends it over its own session
 * with the coordinator; it hands every RELAYED from the coordinator to relay_down. Errors: NULL + err. */

#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"
#include "common/tls/tls_chan.h"
#include "common/wire/wire.h"

typedef struct relay relay_t;

/* Up to the coordinator: items in order, borrowed for the call. 0, or -1 when it could not be sent (lost). */
typedef int (*relay_up_fn)(void *arg, const Plaunch__Relayed *batch);

struct relay_cfg {
    const char *bind_addr;      /* the agent's own address (JOIN.addr): the relay listens on an ephemeral port */
    const char *job_id;         /* of the envelopes the relay writes itself (HELLO, HEARTBEAT) */
    const char *hello_host;     /* HELLO.hostname for its children: the coordinator's */
    uint32_t generation;        /* of what it writes itself; relay_set_generation follows the agent's */
    int max_children;           /* RELAY_START's */
    int hb_interval_ms, hb_timeout_ms;
    int port;                   /* 0: an ephemeral port; else this one (a relay of the ranked layout, which its
                                   children know from --node-hosts: docs/design.md, "The fan-out tree") */
    int held;                   /* children's sessions open, but their HELLO (and OPENED up) waits for
                                   relay_release: the relay's own JOIN must reach the coordinator first */
};

relay_t *relay_new(void *zctx, loop_t *loop, tls_ctx_t *server_tls, const struct relay_cfg *cfg, relay_up_fn up,
                   void *arg, char *err, size_t errlen);
/* "tcp://ADDR:PORT" it listens on (for RELAY_READY). */
const char *relay_endpoint(const relay_t *r);
/* A RELAYED from the coordinator (checked by wire_decode): messages to children, DROPs; items in order. */
void relay_down(relay_t *r, const Plaunch__Relayed *batch);
void relay_set_generation(relay_t *r, uint32_t gen);
/* The relay's own JOIN is on its session with the coordinator: the children that authenticated meanwhile get their
 * HELLO (naming hello_host, the coordinator's host) and go up as OPENED, in that order. job_id: the job's (known
 * from the coordinator's HELLO). */
void relay_release(relay_t *r, const char *job_id, const char *hello_host);
/* Its session with the coordinator broke: new children wait again (relay_drop_all ended the others). */
void relay_hold(relay_t *r);
/* The relay's own session with the coordinator broke: every child's session ends (each goes back to the
 * coordinator); nothing is reported up. A held relay (relay_hold first) keeps the children whose HELLO waits: the
 * coordinator never heard of them, and they get it at the next relay_release. */
void relay_drop_all(relay_t *r, const char *why);
/* Open child sessions. */
int relay_children(const relay_t *r);
/* close_notify to each child, then frees; what is queued may leave for 500 ms. Safe on NULL and twice. */
void relay_destroy(relay_t **r);

#endif
