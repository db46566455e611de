/* coord_priv: the coordinator (struct coord_server) as its components, each behind its own header, and the floors
 * that tie them together. Not for other modules. Calls go down only, floor by floor:
 *   coord_server.c   the public face (coord_server.h); allocates the coordinator, each component sets up its part
 *   coord_world.c    every message from an agent: JOIN, rejoin, worker exits, BYE, services (services/coord_services.c)
 *   coord_hang.c     the hang watch: progress reports, stacks, --on-hang (coord_hang.h; calls coord_end.c)
 *   coord_end.c      the end of generations and of the job: restarts, losses, the summary
 *   coord_verdict.c  the job's outcome and restart budget, by one rule (coord_verdict.h); pure state
 *   coord_assign.c   the world of a generation: state, members, readiness, ASSIGN
 *   the transport    coord_transport.c, coord_admit.c, coord_mail.c, coord_conns.c (coord_transport.h): the
 *                    ROUTER, TLS sessions, heartbeats, deadlines; calls up only through struct coord_events
 *   the tree         coord_relay.c over coord_via.c (coord_tree.h): relays, REDIRECTs, what goes up and down
 *   the peers        coord_peers.c (coord_peers.h): sessions by routing id
 *   the members      coord_members.c (coord_members.h): counted and indexed by generation, identity, rank */
#ifndef PLAUNCH_COORD_PRIV_H
#define PLAUNCH_COORD_PRIV_H

#include "launcher/coord/services/coord_services.h"
#include "launcher/coord/coord_hang.h"
#include "launcher/coord/coord_members.h"
#include "launcher/coord/coord_peers.h"
#include "launcher/coord/coord_server.h"
#include "launcher/coord/coord_transport.h"
#include "launcher/coord/coord_tree.h"
#include "launcher/coord/verdict/coord_verdict.h"
#include "common/hindex.h"

/* How often a rendezvous that waits says who joined. */
#define CS_SAY_NS 5000000000ull

enum cs_state { CS_RENDEZVOUS, CS_RUNNING, CS_RESTARTING, CS_ENDING, CS_DONE };

struct coord_server {
    const struct job *job;
    const struct mon_thresh *thresh; /* the health thresholds (main owns them) */
    loop_t *loop;
    void *zctx;
    tls_ctx_t *tls;
    coord_services_t *services;
    struct peer *peers;         /* peers[0] is the local agent */
    int npeers, cap;
    coord_local_fn local;
    void *local_arg;
    char job_id[WIRE_MAX_JOB_ID + 1];
    enum cs_state state;
    uint32_t generation;
    uint64_t gen_ns;            /* the generation's ASSIGN went out (loop clock): --no-progress-time counts from it */
    int world;
    struct coord_verdict verdict; /* the job's outcome and restart budget: written only through coord_verdict.h */
    int wait_for_more;          /* first rendezvous of an elastic job: a last call before starting below MAX */
    struct coord_transport tr;  /* coord_transport.h */
    struct coord_members members;
    int free_hint;              /* no free peer slot below this index */
    int ngrace;                 /* members in their reconnect grace */
    int bye_cursor;             /* coord_end_maybe_finish: every member below this index said BYE */
    struct coord_health health; /* coord_hang.h */
    gp_t *gp;                   /* the job's time (launcher/goodput/): written by the floors that see its events */
    int gp_timer, gp_warned, gp_status_warned;
    int status_line;            /* the console's status line is ours to keep (an interactive stderr) */
    /* coord_hang.c: the hang watch; steplag: the step-rate stragglers for the Health block */
    struct coord_hang *hang;
    char steplag[2048];
    struct coord_tree tree;     /* coord_relay.c, coord_via.c */
    int resume_expect;          /* a takeover (coord_server_resume): the nodes alive, ASSIGN once they are back */
    coord_durable_fn durable;   /* each generation's durable state goes there (NULL: nowhere) */
    void *durable_arg;
};

#define CS_LAST_CALL_MS 1000 /* an elastic job with MIN nodes waits this long for more before it starts */

/* coord_world.c */
void coord_world_on_message(coord_server_t *cs, int peer, const wire_msg_t *m);
/* coord_assign.c */
void coord_assign_set_state(coord_server_t *cs, enum cs_state st);
int coord_assign_members(coord_server_t *cs, uint32_t gen);
void coord_assign_broadcast(coord_server_t *cs, const wire_msg_t *m);
void coord_assign_check_ready(coord_server_t *cs);
void coord_assign_last_call(coord_server_t *cs);
/* Members of the running generation without a rank stand by as spares, told so by a REPORT STANDBY (all: every
 * one, at a generation's start; else only those not told yet: a spare that joins while the job runs). */
void coord_assign_standby(coord_server_t *cs, int all);
/* Members, whatever generation they last joined for (after a restart some are still on their way back). */
int coord_assign_live(coord_server_t *cs);
/* coord_end.c: the end of generations and of the job */
/* A worker's exit; stepped and best: what coord_hang_stepped says of the generation's progress. */
void coord_end_worker_exit(coord_server_t *cs, int peer, const wire_msg_t *m, int stepped, long long best);
void coord_end_peer_lost(coord_server_t *cs, int peer, const char *why);
void coord_end_rendezvous_timeout(coord_server_t *cs);
void coord_end_stop_all(coord_server_t *cs, int reason, int sig, const char *text);
void coord_end_restart(coord_server_t *cs, const char *why);
void coord_end_maybe_finish(coord_server_t *cs);
/* The coordinator cannot go on (a message it must send cannot be encoded): logs why, ends the job for every node
 * with exit status 125 (root cause and BYE, whatever can still be sent). Runs once. */
void coord_end_fatal(coord_server_t *cs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
