/* coord_priv: state shared by coord_server.c (sessions, transport, heartbeats) and coord_world.c (membership,
 * ranks, generations, the end of the job). Not for other modules. */
#ifndef PLAUNCH_COORD_PRIV_H
#define PLAUNCH_COORD_PRIV_H

#include "conn_guard.h"
#include "coord.h"
#include "coord_server.h"
#include "peerlog.h"

#define CS_MAX_RID 256
/* A member whose connection closed is lost unless it is back (or at least reconnecting) within this: long enough
 * for an agent that restarts its session, short enough that a killed agent's node is replaced at once. */
#define CS_RECONNECT_GRACE_MS 250

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
    uint64_t hb_seq;
    /* from JOIN */
    char host[WIRE_MAX_HOST + 1], addr[WIRE_MAX_HOST + 1];
    uint32_t pid, nproc, master_port;
    int req_rank;
    uint32_t *ports;
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

enum cs_state { CS_RENDEZVOUS, CS_RUNNING, CS_RESTARTING, CS_ENDING, CS_DONE };

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
    int restarts_left;
    int world;
    int job_status, status_set;
    char failure[4096];         /* the root cause, for the summary */
    int hb_timer, rdzv_timer, last_call_timer;
    int wait_for_more;          /* first rendezvous of an elastic job: a last call before starting below MAX */
    uint64_t hb_sent_ns;
    unsigned char *frame;
    conn_guard_t *guard;        /* accepted connections: caps and deadlines for unauthenticated ones */
    peerlog_t *plog;             /* warnings about unauthenticated peers, bounded */
    /* cw_peer_lost, set by coord_server_new: coord_conns.c, below the membership logic, calls up only through it */
    void (*lose_member)(coord_server_t *cs, int peer, const char *why);
    int zmtp_failed;            /* the monitor reported a failed ZeroMQ handshake: its DISCONNECTED comes next */
    unsigned zmtp_error;
    /* The in-process agent's mail, both ways, delivered from the loop: a handler never re-enters the other side
     * (a worker exit must not start the next generation from inside the supervisor's own callback). */
    struct local_mail *mail_head, *mail_tail;
    int mail_timer;
    int fatal;                  /* cw_fatal ran: the job is ending with 125 */
};

#define CS_LAST_CALL_MS 1000 /* an elastic job with MIN nodes waits this long for more before it starts */

/* coord_server.c */
int cs_send(coord_server_t *cs, int peer, const wire_msg_t *m);
/* (Re)arms the deadline of the rendezvous under way; 0 disarms. */
void cs_rendezvous_deadline(coord_server_t *cs, double seconds);
/* (Re)arms the elastic last call (ms >= 0), or disarms it (-1). */
void cs_last_call(coord_server_t *cs, int ms);
/* coord_peers.c: the table of sessions, one per routing id (below coord_server.c; calls nothing above it) */
/* The session of routing id rid (which came on fd), or -1. */
int cp_find(coord_server_t *cs, int fd, const unsigned char *rid, size_t len);
/* A new session slot for rid; the caller tags the connection with it (conn_guard_set_tag) once it is sure the
 * frame came from that connection. The index, or -1. */
int cp_new(coord_server_t *cs, const unsigned char *rid, size_t len, int fd);
/* Sends every pending TLS record of the session as one frame each. 0, or -1 with errno (EHOSTUNREACH: its
 * connection is gone). */
int cp_flush(coord_server_t *cs, struct peer *p);
/* Ends the peer's session (close_notify) and forgets it; its connection is closed shortly, once a last message
 * (a REFUSE, an alert) has left. why: logged when not NULL. */
void cp_drop(coord_server_t *cs, int peer, const char *why);
/* Frees the session and the slot; the connection stays (untagged). */
void cp_release(coord_server_t *cs, int peer);
/* A member loses its session but keeps its membership: it may rejoin on a new one. */
void cp_detach(coord_server_t *cs, int peer);
/* A rejoin: member `to` takes the session and connection of the new peer `from`, whose slot is freed. */
void cp_move(coord_server_t *cs, int from, int to);
/* coord_conns.c: connections (below coord_server.c) */
#define CS_STR_(x) #x
#define CS_STR(x) CS_STR_(x)
/* Guard, bounded warnings and the ROUTER's monitor; before the ROUTER binds. 0, or -1 + message. */
int cc_open(coord_server_t *cs, char *err, size_t errlen);
void cc_close(coord_server_t *cs);
/* Takes in every pending monitor event (a frame's connection is then known). */
void cc_drain_monitor(coord_server_t *cs);
/* A plaintext REFUSE to routing id rid ("this coordinator requires TLS"). 0 sent, -1 not (no such peer now). */
int cc_refuse_plaintext(coord_server_t *cs, const unsigned char *rid, size_t rid_len);
/* coord_world.c: membership */
void cw_on_message(coord_server_t *cs, int peer, const wire_msg_t *m);
void cw_set_state(coord_server_t *cs, enum cs_state st);
int cw_members(coord_server_t *cs, uint32_t gen);
void cw_broadcast(coord_server_t *cs, const wire_msg_t *m);
void cw_check_ready(coord_server_t *cs);
void cw_last_call(coord_server_t *cs);
/* coord_end.c: the end of generations and of the job */
void cw_on_worker_exit(coord_server_t *cs, int peer, const wire_msg_t *m);
void cw_peer_lost(coord_server_t *cs, int peer, const char *why);
void cw_rendezvous_timeout(coord_server_t *cs);
void cw_stop_all(coord_server_t *cs, int reason, int sig, const char *text);
void cw_restart(coord_server_t *cs, const char *why);
void cw_maybe_finish(coord_server_t *cs);
/* The coordinator cannot go on (a message it must send cannot be encoded): logs why, ends the job for every node
 * with exit status 125 (root cause and BYE, whatever can still be sent). Runs once. */
void cw_fatal(coord_server_t *cs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
