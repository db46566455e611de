/* coord_priv: the coordinator's state, shared by its floors. Not for other modules. Calls go down only, floor by floor:
 *   coord_server.c   the public face (coord_server.h); builds the transport with the handlers below
 *   coord_world.c    every message from an agent: JOIN, rejoin, worker exits, BYE, services (coord.c)
 *   coord_hang.c     the hang watch: progress reports, the verdict, stacks, --on-hang (calls coord_end.c)
 *   coord_end.c      the end of generations and of the job: restarts, losses, the summary
 *   coord_verdict.c  the job's outcome and restart budget, by one rule (coord_verdict.h); pure state
 *   coord_assign.c   the world of a generation: state, members, readiness, ASSIGN
 *   coord_transport.c  the ROUTER, TLS sessions, the in-process agent's mail, heartbeats, deadlines; calls up only
 *                    through struct coord_events
 *   coord_relay.c    the fan-out tree: which members relay, where a newcomer goes, what relays carry up; calls up
 *                    only through struct coord_events
 *   coord_peers.c, coord_conns.c, coord_mail.c, coord_admit.c  sessions by routing id; connections, their
 *                    caps and the monitor; the in-process agent's mail; ClientHellos waiting for a handshake slot
 *   coord_via.c      nodes behind a relay: found by (relay, handle); what goes down to each relay, batched
 *   coord_members.c  members counted and indexed (by generation, identity, requested rank) */
#ifndef PLAUNCH_COORD_PRIV_H
#define PLAUNCH_COORD_PRIV_H

#include "conn_guard.h"
#include "heartbeat.h"
#include "hindex.h"
#include "mon_diag.h"
#include "coord.h"
#include "coord_server.h"
#include "coord_verdict.h"
#include "peerlog.h"

#define CS_MAX_RID 256
/* A member whose connection closed is lost unless it is back (or at least reconnecting) within this: long enough
 * for an agent that restarts its session, short enough that a killed agent's node is replaced at once. */
#define CS_RECONNECT_GRACE_MS 250
#define CS_GONE_MAX 64 /* closes held back until the ROUTER is read; more are taken in at once */
/* How often a rendezvous that waits says who joined. */
#define CS_SAY_NS 5000000000ull

enum peer_state { PS_HANDSHAKE, PS_OPEN, PS_MEMBER, PS_GONE };

struct peer {
    int used;
    int local;                  /* the agent of the coordinator's own node */
    unsigned char rid[CS_MAX_RID];
    size_t rid_len;
    tls_chan_t *ch;             /* NULL in plaintext mode, for the local agent, and for a member whose session
                                   broke (it keeps its membership until it rejoins or is lost) */
    enum peer_state st;
    int fd;                     /* its connection (ZMQ_SRCFD; conn_guard tags it with the peer's index); -1 none */
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
};

struct local_mail {
    struct local_mail *next;
    int to_agent;               /* 1: coordinator -> agent, 0: agent -> coordinator */
    size_t len;
    unsigned char data[];
};

/* coord_members.c's counts and indexes (below coord_peers.c). */
#define CM_GENS 4                   /* generations with members at once: the current, the next, stragglers */
struct cm_joined {
    uint32_t gen;
    int n;
};
struct coord_members {
    int live;                       /* peers in PS_MEMBER */
    struct cm_joined joined[CM_GENS]; /* members by the generation they joined for */
    int overflow;                   /* more generations than slots: counts are taken by a scan */
    hindex_t ids;                   /* members by (host, pid) */
    int *rank_owner;                /* requested node rank -> peer + 1 (checked on lookup) */
    int nrank;
    int id_broken;                  /* out of memory once: lookups scan */
};

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
    /* coord_via.c asks coord_relay.c to flush relay r: now (urgent: its queue is full) or soon */
    void (*pending)(coord_server_t *cs, struct crelay *r, int urgent);
};

enum cs_state { CS_RENDEZVOUS, CS_RUNNING, CS_RESTARTING, CS_ENDING, CS_DONE };

/* How the transport (coord_transport.c, coord_conns.c) calls up into the membership logic above it: through these
 * handlers, set at construction (coord_server.c), never by name. */
struct coord_events {
    void (*on_message)(coord_server_t *cs, int peer, const wire_msg_t *m); /* decoded and checked */
    void (*peer_lost)(coord_server_t *cs, int peer, const char *why);      /* silent, or its connection closed */
    void (*rendezvous_timeout)(coord_server_t *cs);
    void (*last_call)(coord_server_t *cs);
    void (*fatal)(coord_server_t *cs, const char *text); /* the coordinator cannot go on (exit status 125) */
};

struct coord_server {
    const struct job *job;
    loop_t *loop;
    void *zctx, *router, *monitor;
    tls_ctx_t *tls;
    coord_t *coord;
    struct peer *peers;         /* peers[0] is the local agent */
    int npeers, cap;
    coord_local_fn local;
    void *local_arg;
    char job_id[WIRE_MAX_JOB_ID + 1];
    enum cs_state state;
    uint32_t generation;
    int world;
    struct coord_verdict verdict; /* the job's outcome and restart budget: written only through coord_verdict.h */
    int hb_timer, rdzv_timer, last_call_timer;
    int wait_for_more;          /* first rendezvous of an elastic job: a last call before starting below MAX */
    struct heartbeat hb;        /* the heartbeat rounds to every direct node, and the silence rule */
    uint64_t started_ns, said_ns;   /* the coordinator's start; its last "waiting for nodes" line */
    unsigned char *frame;
    conn_guard_t *guard;        /* accepted connections: caps and deadlines for unauthenticated ones */
    peerlog_t *plog;             /* warnings about unauthenticated peers, bounded */
    struct coord_events ev;     /* the floors above the transport, set by coord_server_new: called only through these */
    int zmtp_failed;            /* the monitor reported a failed ZeroMQ handshake: its DISCONNECTED comes next */
    unsigned zmtp_error;
    /* Connections the monitor reported closed, taken in once the ROUTER holds no more of their frames (a TLS
     * alert sent just before a close must still be read: it says why the peer gave up). */
    struct cs_gone { int fd, zmtp_failed; unsigned zmtp_error; } gone[CS_GONE_MAX];
    int ngone;
    /* The in-process agent's mail, both ways, delivered from the loop: a handler never re-enters the other side
     * (a worker exit must not start the next generation from inside the supervisor's own callback). */
    struct local_mail *mail_head, *mail_tail;
    int mail_timer;
    struct coord_members members;
    hindex_t rids;              /* sessions by routing id (coord_peers.c) */
    int rid_broken;             /* out of memory once: lookups scan */
    struct admit *admit_head, *admit_tail; /* coord_admit.c */
    int nadmit;
    int free_hint;              /* no free peer slot below this index */
    int ngrace;                 /* members in their reconnect grace */
    int bye_cursor;             /* coord_end_maybe_finish: every member below this index said BYE */
    /* coord_health.c: every rank's health summary as its node last sent it (REPORT "health"), by global rank */
    struct mon_rank_summary *health;
    int nhealth, health_cap;
    int *health_at, health_nat; /* by rank: its place in health + 1, 0 none */
    int health_bad;             /* reports refused (the first few are logged) */
    /* coord_hang.c: the hang watch; steplag: the step-rate stragglers for the Health block */
    struct coord_hang *hang;
    char steplag[2048];
    struct coord_tree tree;     /* coord_relay.c, coord_via.c */
};

#define CS_LAST_CALL_MS 1000 /* an elastic job with MIN nodes waits this long for more before it starts */

/* coord_transport.c */
/* Builds the transport: binds endpoint (NULL: a one-node job, no socket), calls up only through ev. */
coord_server_t *coord_transport_new(const struct job *job, loop_t *loop, void *zctx, const char *endpoint,
                                    tls_ctx_t *tls, coord_local_fn local, void *local_arg,
                                    const struct coord_events *ev, char *err, size_t errlen);
void coord_transport_destroy(coord_server_t **cs);
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
/* coord_health.c: the job's health (below coord_world.c and coord_end.c; calls only launcher/monitor/) */
/* A node's REPORT "health": its ranks' summaries, decoded with every bound checked, replacing earlier ones of
 * the same ranks. 0, or -1 (logged, the report dropped). */
int coord_health_add(coord_server_t *cs, int peer, const Plaunch__Report *r);
/* The Health block of the whole job into buf ("" when no sample came); 1 when it is worth the terminal (a
 * finding, or enough steady state to call the job healthy), 0 when plaunch.log is enough. */
int coord_health_block(coord_server_t *cs, char *buf, size_t cap);

/* coord_hang.c: the hang watch (below coord_world.c; calls coord_end.c, coord_transport.c and coord_hang_text.c) */
/* Starts the watch (nothing with --hang-timeout 0). 0, or -1 (out of memory). */
int coord_hang_start(coord_server_t *cs);
void coord_hang_destroy(coord_server_t *cs);
/* A node's REPORT "progress": [rank, step, output age ms, step age ms] per rank, every bound checked. */
int coord_hang_progress(coord_server_t *cs, int peer, const Plaunch__Report *r);
/* A node's REPORT "stacks" (one rank) or "stacks-done" (all of that node's ranks sent), while stacks are taken. */
int coord_hang_stacks(coord_server_t *cs, int peer, const Plaunch__Report *r);
/* coord_peers.c: the table of sessions, one per routing id (below coord_transport.c; calls nothing above it) */
/* The session of routing id rid (which came on fd), or -1. */
int coord_peers_find(coord_server_t *cs, int fd, const unsigned char *rid, size_t len);
/* A new session slot for rid; the caller tags the connection with it (conn_guard_set_tag) once it is sure the
 * frame came from that connection. The index, or -1. */
int coord_peers_new(coord_server_t *cs, const unsigned char *rid, size_t len, int fd);
/* Sends every pending TLS record of the session as one frame each. 0, or -1 with errno (EHOSTUNREACH: its
 * connection is gone). */
int coord_peers_flush(coord_server_t *cs, struct peer *p);
/* Ends the peer's session (close_notify) and forgets it; its connection is closed shortly, once a last message
 * (a REFUSE, an alert) has left. why: logged when not NULL. */
void coord_peers_drop(coord_server_t *cs, int peer, const char *why);
/* Frees the session and the slot; the connection stays (untagged). */
void coord_peers_release(coord_server_t *cs, int peer);
/* A member loses its session but keeps its membership: it may rejoin on a new one. */
void coord_peers_detach(coord_server_t *cs, int peer);
/* A rejoin: member `to` takes the session and connection of the new peer `from`, whose slot is freed. */
void coord_peers_move(coord_server_t *cs, int from, int to);
/* coord_relay.c: the fan-out tree (below coord_world.c, above coord_peers.c; calls up only through cs->ev) */
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
/* A member that joined directly: RELAY_START when the tree still wants relays. */
void coord_relay_consider(coord_server_t *cs, int peer);
/* RELAY_READY or RELAYED from a direct member. */
void coord_relay_in(coord_server_t *cs, int peer, const wire_msg_t *m);
/* A message for a node behind a relay (watch: it starts the node's heartbeats, an ASSIGN). 0, or -1. */
int coord_relay_send(coord_server_t *cs, int peer, const void *buf, size_t len, int watch);
/* What waits for relay member `peer` leaves now (before anything sent to the relay itself). */
void coord_relay_flush(coord_server_t *cs, int peer);
/* Relay member `peer` lost its session (lost 0: it may come back) or is lost (1): its nodes with it. */
void coord_relay_gone(coord_server_t *cs, int peer, int lost, const char *why);
/* coord_via.c: nodes behind a relay (below coord_peers.c; calls nothing above it but cs->tree.pending) */
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
/* The RELAYED for relay r encoded (caller frees), its queue emptied; NULL when nothing waits (or out of memory:
 * *failed set). */
void *coord_via_take(coord_server_t *cs, struct crelay *r, size_t *len, int *failed);
/* The relay a node is behind (NULL: none, or it is gone). */
struct crelay *coord_via_relay(coord_server_t *cs, const struct peer *p);
void coord_via_free(coord_server_t *cs);
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
/* coord_members.c: membership (below coord_peers.c; calls nothing above it) */
/* Peer becomes (or stays) a member, for generation gen; its host, pid, addr and req_rank are set already. */
void coord_members_set(coord_server_t *cs, int peer, int gen);
/* Peer stops being a member (before its slot is freed). */
void coord_members_unset(coord_server_t *cs, int peer);
/* Members that joined for gen; members whatever generation they joined for. */
int coord_members_count(const coord_server_t *cs, uint32_t gen);
int coord_members_live(const coord_server_t *cs);
/* The member (other than except) with that identity, or -1. */
int coord_members_find(const coord_server_t *cs, const char *host, uint32_t pid, const char *addr, int except);
/* The member (other than except) that asked for node rank `rank`, or -1. */
int coord_members_rank_owner(const coord_server_t *cs, int rank, int except);
void coord_members_free(coord_server_t *cs);
/* coord_conns.c: connections (below coord_transport.c; calls up only through cs->ev) */
#define CS_STR_(x) #x
#define CS_STR(x) CS_STR_(x)
/* Guard, bounded warnings and the ROUTER's monitor, whose events wake on_monitor; before the ROUTER binds. 0, or
 * -1 + message. */
int coord_conns_open(coord_server_t *cs, loop_io_fn on_monitor, char *err, size_t errlen);
void coord_conns_close(coord_server_t *cs);
/* Takes in every pending monitor event (a frame's connection is then known); closed connections wait in cs->gone
 * until coord_conns_settle. */
void coord_conns_drain_monitor(coord_server_t *cs);
/* Ends the connections in cs->gone: call it once the ROUTER has no frame left to read. */
void coord_conns_settle(coord_server_t *cs);
/* A member whose session ended (its connection, or its session behind a relay) is lost unless it is back within
 * CS_RECONNECT_GRACE_MS. */
void coord_conns_grace(coord_server_t *cs, int peer);
/* A plaintext REFUSE to routing id rid ("this coordinator requires TLS"). 0 sent, -1 not (no such peer now). */
int coord_conns_refuse_plaintext(coord_server_t *cs, const unsigned char *rid, size_t rid_len);
/* coord_world.c */
void coord_world_on_message(coord_server_t *cs, int peer, const wire_msg_t *m);
/* coord_assign.c */
void coord_assign_set_state(coord_server_t *cs, enum cs_state st);
int coord_assign_members(coord_server_t *cs, uint32_t gen);
void coord_assign_broadcast(coord_server_t *cs, const wire_msg_t *m);
void coord_assign_check_ready(coord_server_t *cs);
void coord_assign_last_call(coord_server_t *cs);
/* Members, whatever generation they last joined for (after a restart some are still on their way back). */
int coord_assign_live(coord_server_t *cs);
/* coord_end.c: the end of generations and of the job */
void coord_end_worker_exit(coord_server_t *cs, int peer, const wire_msg_t *m);
void coord_end_peer_lost(coord_server_t *cs, int peer, const char *why);
void coord_end_rendezvous_timeout(coord_server_t *cs);
void coord_end_stop_all(coord_server_t *cs, int reason, int sig, const char *text);
void coord_end_restart(coord_server_t *cs, const char *why);
void coord_end_maybe_finish(coord_server_t *cs);
/* The coordinator cannot go on (a message it must send cannot be encoded): logs why, ends the job for every node
 * with exit status 125 (root cause and BYE, whatever can still be sent). Runs once. */
void coord_end_fatal(coord_server_t *cs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
