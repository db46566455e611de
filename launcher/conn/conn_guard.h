/* conn_guard: what peers that have not authenticated may cost the coordinator. It keeps a table of the TCP
 * connections libzmq accepted (by descriptor, as the ROUTER's socket monitor reports them), caps them per address and
 * in total, caps TLS handshakes under way, gives each connection a deadline to authenticate, and closes a
 * connection that libzmq owns with shutdown(2), after proving that the descriptor still is that connection (same
 * local and remote address and port). It knows nothing of TLS or of the job: its owner says what each connection
 * became, and hears through one callback whenever a connection ends. */
#ifndef PLAUNCH_CONN_GUARD_H
#define PLAUNCH_CONN_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"

enum conn_state {
    CONN_FREE,    /* nothing known on this descriptor */
    CONN_NEW,     /* accepted, not yet authenticated (no TLS handshake started) */
    CONN_PENDING, /* a TLS handshake under way */
    CONN_TRUSTED, /* authenticated (or plaintext mode): no deadline, not counted against any cap */
    CONN_REFUSED, /* refused: closed at its next frame or after a short linger that lets the refusal leave */
    CONN_CLOSING, /* shut down by the guard; libzmq has not reported the close yet */
};

/* Why a connection ended (the callback's argument). */
enum conn_why {
    CONN_GONE,        /* libzmq closed it: the peer hung up, a protocol error, a ZeroMQ handshake timeout */
    CONN_DEADLINE,    /* not authenticated within auth_ms of its connect */
    CONN_PER_ADDR,    /* over max_per_addr unauthenticated connections from its address */
    CONN_TOTAL,       /* over max_unauth unauthenticated connections */
    CONN_HANDSHAKES,  /* over max_pending TLS handshakes under way */
    CONN_REFUSAL,     /* refused earlier; closed after the linger or at its next frame */
    CONN_DESCRIPTORS, /* the process ran out of descriptors */
};

struct conn_limits {
    int max_unauth;   /* connections not (yet) authenticated, in total */
    int max_per_addr; /* ... from one address */
    int max_pending;  /* TLS handshakes under way */
    int auth_ms;      /* from connect to authenticated */
    int stall_ms;     /* over a cap, a connection silent for this long makes room for a newcomer */
    int linger_ms;    /* a refused connection is closed this long after the refusal */
};

/* The coordinator's limits (docs/security.md): a quarter of the descriptor limit, at most 256, for connections
 * that have not authenticated, or, for a job of `expected` nodes when that is more than half of it, expected more
 * (never more than the descriptor limit less 512): its nodes connect together. Half of the 256 from one address; a quarter in TLS handshakes under
 * way (a ClientHello beyond waits for a slot). */
#define CONN_MAX_UNAUTH 256
#define CONN_AUTH_MS 10000
#define CONN_STALL_MS 1000
#define CONN_LINGER_MS 1000
void conn_guard_limits(struct conn_limits *lim, int expected);

typedef struct conn_guard conn_guard_t;
/* A connection ended. tag: what conn_guard_set_tag gave it (-1 none); was: its state before; addr: its remote
 * address (numeric). Called from inside any conn_guard call except conn_guard_destroy. */
typedef void (*conn_end_fn)(void *arg, int fd, int tag, enum conn_state was, enum conn_why why, const char *addr);

conn_guard_t *conn_guard_new(loop_t *loop, const struct conn_limits *lim, conn_end_fn on_end, void *arg);
void conn_guard_destroy(conn_guard_t **g);

/* The monitor's ACCEPTED: records the connection; over a cap, closes a stalled older one or this one. */
void conn_guard_accepted(conn_guard_t *g, int fd);
/* The monitor's DISCONNECTED: libzmq closed fd. Ends it (callback with CONN_GONE unless the guard closed it). */
void conn_guard_gone(conn_guard_t *g, int fd);
/* The state of the connection on fd, and its remote address in *addr (borrowed until the next call). A frame's
 * descriptor (ZMQ_SRCFD) may be that of a connection that is over, and the number may already be another
 * connection's: drain the monitor first, so that the record is the live connection's. adopt: a live connection the
 * monitor never reported is recorded now; when fd is no connection, CONN_CLOSING (the frame's connection is over). */
enum conn_state conn_guard_lookup(conn_guard_t *g, int fd, int adopt, const char **addr);
/* A frame from fd's connection: a sign of life (a connection silent for stall_ms may be pushed out). */
void conn_guard_active(conn_guard_t *g, int fd);
/* The remote address of fd ("?" when unknown); borrowed until the next call. */
const char *conn_guard_addr(const conn_guard_t *g, int fd);
int conn_guard_tag(const conn_guard_t *g, int fd);
void conn_guard_set_tag(conn_guard_t *g, int fd, int tag);
/* NEW -> PENDING (a TLS handshake starts) within max_pending, closing a stalled handshake to make room when
 * needed. 1 moved, 0 already under way (or authenticated), -1 when fd is no live connection, 2 when every slot is
 * taken by a live handshake (fd stays NEW, its deadline running: the caller may ask again later). */
int conn_guard_pending(conn_guard_t *g, int fd);
/* 1 when a handshake could start now (a stalled one may be closed to make room), else 0. */
int conn_guard_pending_room(conn_guard_t *g);
/* A number that names the connection on fd among all the guard recorded (0: none): a descriptor number is reused. */
uint64_t conn_guard_serial(const conn_guard_t *g, int fd);
/* PENDING -> NEW: the handshake that moved it was not this connection's (a frame of an earlier one). */
void conn_guard_unpend(conn_guard_t *g, int fd);
/* Authenticated: no deadline, no cap. */
void conn_guard_trust(conn_guard_t *g, int fd);
/* Refused: closed after the linger, or at once if it sends another frame (conn_guard_frame says CONN_REFUSED). */
void conn_guard_refuse(conn_guard_t *g, int fd);
/* Closes fd now (when it is still the recorded connection). */
void conn_guard_close(conn_guard_t *g, int fd, enum conn_why why);
/* accept(2) failed for want of descriptors: closes the oldest unauthenticated connections to make room. */
void conn_guard_out_of_fds(conn_guard_t *g);
/* Connections in state st. */
int conn_guard_count(const conn_guard_t *g, enum conn_state st);

#endif
