/* coord_tree: the fan-out tree: which members relay, where a newcomer goes, what relays carry up
 * (coord_relay.c, between coord_world.c and coord_peers.c, calling up only through cs->ev), and the nodes behind
 * each relay with what goes down to it (coord_via.c). Private to launcher/coord/. */
#ifndef PLAUNCH_COORD_TREE_H
#define PLAUNCH_COORD_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/coord/coord_peers.h"
#include "launcher/coord/coord_server.h"
#include "common/hindex.h"
#include "common/wire/wire.h"

/* The fan-out tree (coord_relay.c, coord_via.c): what goes down to one relay at its next flush, in order. */
struct via_item {
    int event;                  /* PLAUNCH__RELAY_ITEM__EVENT__MESSAGE or __DROP */
    int watch;
    uint32_t *to;
    size_t nto, capto;
    unsigned char *payload;     /* owned copy */
    size_t len;
};
struct crelay {
    int peer;                   /* its member slot; -1 once it is gone */
    int ready;                  /* RELAY_READY named an endpoint */
    char endpoint[WIRE_MAX_ENDPOINT + 1];
    int load;                   /* sessions its nodes opened there (authenticated) and not ended */
    int reserved;               /* REDIRECTs to it whose node has not opened its session yet (coord_relay.c) */
    int nodes;                  /* sessions the coordinator knows behind it (bounded: a relay cannot make more) */
    struct via_item *out;
    int nout, capout;
    size_t bytes;               /* payload bytes in out */
};
struct coord_resv {
    uint64_t deadline_ns;
    int relay;                  /* index in relays; -1 taken by its node's session, or released */
    uint32_t hash;              /* of from */
    char from[48];              /* the address it was sent from */
};
struct coord_tree {
    int fanout;                 /* K: nodes per relay; 0 no tree */
    int want;                   /* relays the job needs */
    int max_children;           /* RELAY_START.max_children */
    int asked;                  /* RELAY_START sent and not refused */
    int direct_left;            /* newcomers still taken directly, to become relays (held by handshakes under way) */
    struct crelay *relays;
    int nrelays, cap;
    hindex_t vias;              /* nodes behind a relay, by (relay, handle) */
    int via_broken;             /* out of memory once: lookups scan */
    int flush_timer;
    /* REDIRECTs sent before any authentication, as reservations with a deadline, oldest first (a ring of
     * want * max_children); one per source address */
    struct coord_resv *resv;
    int resv_head, resv_n, resv_cap, resv_timer;
    long redirects, released, refused; /* for the log */
    int ranked_ready;           /* relays that announced themselves in their JOIN */
    int ranked;                 /* the ranked layout (--node-hosts, a fixed size): relays announce themselves in
                                   their JOIN (relay_endpoint), nobody is asked to relay until one is lost */
    uint32_t census_gen;        /* the generation the census line was written for, + 1 (0 none yet) */
    struct coord_census census; /* of the last generation formed (coord_server.h) */
};

/* coord_relay.c: the tree itself (below coord_world.c, above coord_peers.c; calls up only through cs->ev) */
/* How many relays the job wants (--relay-fanout, the node count, TLS); nothing to free when it wants none. */
void coord_relay_init(coord_server_t *cs);
void coord_relay_free(coord_server_t *cs);
/* A ClientHello on connection fd (routing id rid) with no session yet: 1 when the node was sent to a relay
 * (REDIRECT sent, the connection refused), 0 when the coordinator takes it itself. */
int coord_relay_route(coord_server_t *cs, int fd, const unsigned char *rid, size_t rid_len);
/* A newcomer's TLS handshake starts here (not a relay's own session): it holds one of the places taken directly
 * until it authenticates; a handshake that fails gives it back (coord_peers_release). */
void coord_relay_direct(coord_server_t *cs, int peer);
/* 1 when a newcomer would be sent to a relay now (one is ready and has room). */
int coord_relay_room(coord_server_t *cs);
/* A member that joined directly: a relay of the ranked layout when its JOIN named its endpoint (ranked_ep not
 * ""), else RELAY_START when the tree still wants relays. */
void coord_relay_consider(coord_server_t *cs, int peer, const char *ranked_ep);

/* RELAY_READY or RELAYED from a direct member. */
void coord_relay_in(coord_server_t *cs, int peer, const wire_msg_t *m);
/* A message for a node behind a relay (watch: it starts the node's heartbeats, an ASSIGN). 0, or -1. */
int coord_relay_send(coord_server_t *cs, int peer, const void *buf, size_t len, int watch);
/* What waits for relay member `peer` leaves now (before anything sent to the relay itself). */
void coord_relay_flush(coord_server_t *cs, int peer);
/* Relay member `peer` lost its session (lost 0: it may come back) or is lost (1): its nodes with it. */
void coord_relay_gone(coord_server_t *cs, int peer, int lost, const char *why);
/* coord_via.c: nodes behind a relay and what goes down to each relay (below coord_peers.c; calls conn_router for
 * the relay's own session, nothing above it but cs->ev.fatal) */
/* The node behind relay member `relay` named handle, or -1. */
int coord_via_find(coord_server_t *cs, int relay, uint32_t handle);
/* Indexes peer (its via and handle set). */
void coord_via_index(coord_server_t *cs, int peer);
/* Queues for relay r: a message for its node `handle` (payload copied; the same bytes for several nodes in a row
 * go once), or the end of that node's session (DROP). 0, or -1 out of memory. */
int coord_via_queue(coord_server_t *cs, struct crelay *r, uint32_t handle, int event, const void *payload,
                    size_t len, int watch);
/* Empties r's queue. */
void coord_via_clear(struct crelay *r);
/* Peer leaves its relay (its slot is freed, or takes another session): via 0, the relay's count down. */
void coord_via_forget(coord_server_t *cs, struct peer *p);
/* Bytes to relay member `peer`'s own session (not to a node behind it). */
void coord_via_send(coord_server_t *cs, int peer, const void *buf, size_t len);
/* What waits for relay r leaves now, as one RELAYED to its own session. */
void coord_via_flush(coord_server_t *cs, struct crelay *r);
/* The relay a node is behind (NULL: none, or it is gone). */
struct crelay *coord_via_relay(coord_server_t *cs, const struct peer *p);
void coord_via_free(coord_server_t *cs);

#endif
