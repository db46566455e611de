/* coord_peers: the coordinator's sessions, one per routing id, and what each peer is (coord_peers.c; below
 * coord_transport.c, calls nothing above it). Private to launcher/coord/. */
#ifndef PLAUNCH_COORD_PEERS_H
#define PLAUNCH_COORD_PEERS_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/conn/conn_session.h"
#include "launcher/coord/coord_server.h"
#include "common/tls/tls_chan.h"
#include "common/wire/wire.h"

/* A member whose connection closed is lost unless it is back (or at least reconnecting) within this: long enough
 * for an agent that restarts its session, short enough that a killed agent's node is replaced at once. */
#define CS_RECONNECT_GRACE_MS 250

enum peer_state { PS_HANDSHAKE, PS_OPEN, PS_MEMBER, PS_GONE };

struct peer {
    int used;
    int local;                  /* the agent of the coordinator's own node */
    /* routing id, connection (ZMQ_SRCFD; conn_guard tags it with the peer's index; -1 none) and TLS session (NULL
     * in plaintext mode, for the local agent, behind a relay, and for a member whose session broke: it keeps its
     * membership until it rejoins or is lost), served by launcher/conn/conn_session.c */
    struct conn_session_slot sess;
    enum peer_state st;
    int grace_timer;            /* member whose connection closed: lost when this fires */
    int reconnecting;           /* ... but a connection from its address came since: the heartbeat decides */
    char from[80];              /* remote address */
    uint64_t last_heard_ns;
    /* from JOIN */
    char host[WIRE_MAX_HOST + 1], addr[WIRE_MAX_HOST + 1];
    uint32_t pid, nproc, master_port;
    int req_rank;
    uint32_t *ports;
    /* behind a relay (coord_via.c): via is the relay's peer index (0: a direct session), handle its name for this
     * node; vclosed: the relay said its session ended (or the relay's own did): it may come back, or be lost */
    int via, vclosed;
    uint32_t handle;
    int relay;                  /* this member relays: its index in cs->tree.relays + 1; 0 none */
    int direct_slot;            /* its handshake holds one of the tree's direct places (cs->tree.direct_left) until
                                   it authenticates (spent) or its slot is released (given back) */
    /* membership */
    int node_rank;              /* in the current generation; -1 before ASSIGN */
    int joined_gen;             /* generation it joined for; -1 none */
    int byed, bye_status;
    /* spares (--spares; coord_members.c counts them) */
    int spare;                  /* a member standing by: no rank in the running generation */
    int suspect;                /* its workers failed two generations in a row: placed only when no other can be */
    int last_rank;              /* its node rank in the last generation it ran; -1 none (kept by a survivor) */
    uint64_t seq;               /* join order: the first --nnodes to join run, later ones stand by */
};

/* The table with the local agent's slot (peer 0); 0, or -1 out of memory. */
int coord_peers_init(coord_server_t *cs);
void coord_peers_free(coord_server_t *cs);
/* A new session slot for rid (not indexed: conn_session_index); the caller tags the connection with it
 * (conn_guard_set_tag) once it is sure the frame came from that connection. The index, or -1. Sessions are found
 * by routing id through conn_session_find (cs->tr.sess). */
int coord_peers_new(coord_server_t *cs, const unsigned char *rid, size_t len, int fd);
/* Ends the peer's session (close_notify) and forgets it; its connection is closed shortly, once a last message
 * (a REFUSE, an alert) has left. why: logged when not NULL. */
void coord_peers_drop(coord_server_t *cs, int peer, const char *why);
/* Frees the session and the slot; the connection stays (untagged). */
void coord_peers_release(coord_server_t *cs, int peer);
/* A member loses its session but keeps its membership: it may rejoin on a new one. */
void coord_peers_detach(coord_server_t *cs, int peer);
/* A rejoin: member `to` takes the session and connection of the new peer `from`, whose slot is freed. */
void coord_peers_move(coord_server_t *cs, int from, int to);

#endif
