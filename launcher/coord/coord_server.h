/* coord_server: the coordinator of a multi-node job: a ZeroMQ ROUTER whose peers are agents behind TLS 1.3
 * sessions (or plaintext with --insecure), plus the in-process agent of its own node. It forms the world
 * (JOIN -> ASSIGN), keeps heartbeats, serves NCCL ids and barriers, restarts or ends the job for everyone. */
#ifndef PLAUNCH_COORD_SERVER_H
#define PLAUNCH_COORD_SERVER_H

#include "launcher/goodput/goodput.h"
#include "launcher/job/job.h"
#include "common/loop.h"
#include "launcher/monitor/diagnosis/mon_thresh.h"
#include "common/tls/tls_chan.h"
#include "common/wire/wire.h"

typedef struct coord_server coord_server_t;
/* Delivers a coordinator message to the agent of this node (in process). */
typedef void (*coord_local_fn)(void *arg, const wire_msg_t *m);

/* Binds endpoint ("tcp://addr:port"); tls NULL means plaintext; endpoint NULL: a one-node job, whose only
 * member is the in-process agent (no socket, no heartbeats). thresh: the health thresholds, kept by the caller for the coordinator's life. NULL + message on failure. */
coord_server_t *coord_server_new(const struct job *job, loop_t *loop, void *zctx, const char *endpoint,
                                 tls_ctx_t *tls, const struct mon_thresh *thresh, coord_local_fn local, void *local_arg,
                                 char *err, size_t errlen);
void coord_server_destroy(coord_server_t **cs);
/* The local agent is ready: it gets its HELLO (and joins like any other). */
void coord_server_local_hello(coord_server_t *cs);
/* A message from this node's agent; 0, or -1 with a message when it cannot be encoded (the agent ends the job). */
int coord_server_local_in(coord_server_t *cs, const wire_msg_t *m, char *err, size_t errlen);
/* Each generation's durable state, told when its ASSIGN goes out (the etcd election keeps it: the agent). */
typedef void (*coord_durable_fn)(void *arg, uint32_t generation, int restarts_used, int nnodes);
void coord_server_on_generation(coord_server_t *cs, coord_durable_fn fn, void *arg);
/* A coordinator that takes over a job whose coordinator was lost (etcd): its first generation, the restarts the
 * job already spent (the verdict goes on from there), and how many nodes are alive to wait for before the first
 * ASSIGN (0: as a first rendezvous). Before coord_server_local_hello. */
void coord_server_resume(coord_server_t *cs, uint32_t generation, int restarts_used, int expect);
/* The job's goodput model (launcher/goodput/), for readers on this node (the metrics endpoint); the coordinator
 * writes it. */
const gp_t *coord_server_goodput(const coord_server_t *cs);
/* This node's launcher got a stop signal: stop every node. */
void coord_server_stop_signal(coord_server_t *cs, int sig);

/* Who the coordinator holds a session for, counted when a generation starts to run (the census line of the log). */
struct coord_census {
    uint32_t generation;
    int direct;                 /* members with a session here (the local agent not counted) ... */
    int relays;                 /* ... of which relays */
    int behind;                 /* members whose session is at a relay */
    int fallback;               /* direct members the ranked layout puts behind a relay (their relay failed them;
                                   some may relay now, asked when a relay of the layout was lost) */
    long redirects;             /* REDIRECTs sent so far (newcomers that knew no rank) */
};
/* The last census; zeros before the first generation runs. */
void coord_server_census(const coord_server_t *cs, struct coord_census *out);

#endif
