/* coord_transport: the coordinator's transport: the ROUTER, TLS sessions, heartbeats, deadlines
 * (coord_transport.c), ClientHellos waiting for a slot (coord_admit.c), the in-process agent's mail (coord_mail.c),
 * connections and the monitor (coord_conns.c). It calls up only through struct coord_events. Private to
 * launcher/coord/. */
#ifndef PLAUNCH_COORD_TRANSPORT_H
#define PLAUNCH_COORD_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/conn/conn_guard.h"
#include "launcher/conn/conn_reader.h"
#include "launcher/conn/conn_session.h"
#include "launcher/coord/coord_server.h"
#include "common/wire/heartbeat.h"
#include "common/loop.h"
#include "launcher/conn/peerlog.h"
#include "common/wire/wire.h"


struct local_mail {
    struct local_mail *next;
    int to_agent;               /* 1: coordinator -> agent, 0: agent -> coordinator */
    size_t len;
    unsigned char data[];
};

/* How the transport (coord_transport.c, coord_conns.c) calls up into the membership logic above it: through these
 * handlers, set at construction (coord_server.c), never by name. */
struct coord_events {
    void (*on_message)(coord_server_t *cs, int peer, const wire_msg_t *m); /* decoded and checked */
    void (*peer_lost)(coord_server_t *cs, int peer, const char *why);      /* silent, or its connection closed */
    void (*rendezvous_timeout)(coord_server_t *cs);
    void (*last_call)(coord_server_t *cs);
    void (*fatal)(coord_server_t *cs, const char *text); /* the coordinator cannot go on (exit status 125) */
};

/* The transport's state (in struct coord_server as `tr`): written by coord_transport.c, coord_conns.c,
 * coord_admit.c and coord_mail.c; the others use the socket and the sessions' server to send to their sessions. */
struct coord_transport {
    void *router;
    conn_reader_t *reader;      /* the ROUTER's read loop: monitor, frames, closes held until read (launcher/conn/) */
    conn_guard_t *guard;        /* accepted connections: caps and deadlines for unauthenticated ones */
    peerlog_t *plog;            /* warnings about unauthenticated peers, bounded */
    conn_session_t *sess;       /* the sessions' server (launcher/conn/): frames, handshakes, sessions by routing
                                   id; the coordinator's policy through its handlers (coord_transport.c) */
    struct coord_events ev;     /* the floors above the transport, set by coord_server_new: called only through these */
    /* The in-process agent's mail, both ways, delivered from the loop: a handler never re-enters the other side
     * (a worker exit must not start the next generation from inside the supervisor's own callback). */
    struct local_mail *mail_head, *mail_tail;
    int mail_timer;
    struct admit *admit_head, *admit_tail; /* coord_admit.c */
    int nadmit;
    int hb_timer, rdzv_timer, last_call_timer;
    struct heartbeat hb;        /* the heartbeat rounds to every direct node, and the silence rule */
    uint64_t started_ns, said_ns; /* the coordinator's start; its last "waiting for nodes" line */
};

/* Opens the transport: binds endpoint (NULL: a one-node job, no socket, no heartbeats), calls up only through
 * ev. 0, or -1 + message (coord_transport_close cleans up). */
int coord_transport_open(coord_server_t *cs, const char *endpoint, const struct coord_events *ev, char *err,
                         size_t errlen);
/* Ends every session (close_notify), closes the socket; the peer table stays (coord_peers_free). */
void coord_transport_close(coord_server_t *cs);
/* The coordinator speaks first: HELLO to a peer whose session opened (0: the local agent). */
int coord_transport_hello(coord_server_t *cs, int peer);
int coord_transport_send(coord_server_t *cs, int peer, const wire_msg_t *m);
/* The encoding of m (caller frees), or NULL after ending the job (a message the coordinator cannot say); peer
 * names the receiver in that message, -1 for every node. */
void *coord_transport_encode(coord_server_t *cs, int peer, const wire_msg_t *m, size_t *len);
/* Sends an encoded message (one encoding for a message that many nodes get). */
int coord_transport_send_encoded(coord_server_t *cs, int peer, const void *buf, size_t len);
/* (Re)arms the deadline of the rendezvous under way; 0 disarms. */
void coord_transport_rendezvous_deadline(coord_server_t *cs, double seconds);
/* (Re)arms the elastic last call (ms >= 0), or disarms it (-1). */
void coord_transport_last_call(coord_server_t *cs, int ms);
/* coord_admit.c: ClientHellos waiting for a handshake slot (below coord_transport.c; calls conn_guard only) */
#define CS_ADMIT_FRAME 2048 /* a plaunch ClientHello is ~300 bytes; a bigger first frame is not kept */
#define CS_TAG_ADMIT (-2)   /* conn_guard tag of a connection whose ClientHello waits (no session yet) */
struct admit {
    struct admit *next;
    int fd;
    uint64_t serial;            /* conn_guard_serial: the frame's connection, not a later one on the same number */
    size_t rid_len, len;
    unsigned char data[];       /* routing id, then the frame */
};
/* Keeps the ClientHello of fd's connection (routing id rid) until a slot frees; 0, or -1 (too big, more than one
 * per waiting connection, out of memory: the caller closes the connection). */
int coord_admit_push(coord_server_t *cs, int fd, const unsigned char *rid, size_t rid_len, const void *frame,
                     size_t len);
/* The oldest waiting ClientHello (caller frees), or NULL. */
struct admit *coord_admit_pop(coord_server_t *cs);
/* 1 when a's connection is still the one that sent it, unauthenticated and without a handshake under way (it
 * may then queue another frame). */
int coord_admit_current(coord_server_t *cs, const struct admit *a);
void coord_admit_free(coord_server_t *cs);
/* coord_mail.c: the in-process agent's mail (below coord_transport.c) */
/* Queues the encoded message buf[len] for the other side of this process (to_agent: 1 coordinator -> agent). */
int coord_mail_post(coord_server_t *cs, int to_agent, const void *buf, size_t len);
/* A message of the local agent, queued for the loop (never handled inside the caller). */
int coord_mail_post_local(coord_server_t *cs, const wire_msg_t *m, char *err, size_t errlen);
void coord_mail_free(coord_server_t *cs);
/* coord_conns.c: connections (below coord_transport.c; calls up only through cs->ev) */
#define CS_STR_(x) #x
#define CS_STR(x) CS_STR_(x)
/* Guard, bounded warnings and the ROUTER's read loop (conn_reader, with ops: the frames' handler and what runs after
 * each round); before the ROUTER binds. 0, or -1 with err. */
int coord_conns_open(coord_server_t *cs, const struct conn_reader_ops *ops, char *err, size_t errlen);
void coord_conns_close(coord_server_t *cs);
/* A member whose session ended (its connection, or its session behind a relay) is lost unless it is back within
 * CS_RECONNECT_GRACE_MS. */
void coord_conns_grace(coord_server_t *cs, int peer);

#endif
