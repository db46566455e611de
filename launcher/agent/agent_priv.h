/* agent_priv: the agent's state, shared by agent.c (set-up, supervisor hooks, the link's callbacks),
 * agent_inbox.c (how it takes the coordinator's messages) and the floor below both, agent_proto.c (what the agent
 * says to the coordinator). agent_proto.c calls neither. Not for other modules. */
#ifndef PLAUNCH_AGENT_PRIV_H
#define PLAUNCH_AGENT_PRIV_H

#include <stdint.h>

#include "launcher/agent/agent.h"
#include "launcher/agent/watch/agent_hang.h"
#include "launcher/agent/agent_ipc.h"
#include "launcher/agent/watch/agent_mon.h"
#include "launcher/agent/watch/agent_node.h"
#include "launcher/agent/agent_etcd.h"
#include "launcher/agent/agent_relay.h"
#include "launcher/agent/watch/agent_stacks.h"
#include "launcher/coord/coord_server.h"
#include "common/wire/heartbeat.h"
#include "launcher/agent/link.h"
#include "common/loop.h"
#include "launcher/preflight/preflight.h"
#include "common/resolve.h"
#include "common/tls/tls_chan.h"
#include "common/wire/wire.h"

/* How often a node that waits for its coordinator (its name, its answer) says so. */
#define AGENT_SAY_NS 5000000000ull

enum ac_state {
    AC_CONNECTING, /* waiting for HELLO */
    AC_JOINING,    /* JOIN sent, waiting for ASSIGN */
    AC_RUNNING,    /* workers of a generation run */
    AC_STANDBY,    /* a spare (--spares): no rank, no workers; heartbeats watched, waiting for a restart */
    AC_VERDICT,    /* our workers failed and are gone: waiting for the coordinator's STOP */
    AC_WAIT_END,   /* BYE sent: waiting for the job's end */
    AC_DONE
};

struct agent {
    struct job *job;
    const struct mon_thresh *thresh; /* the health thresholds (main owns them) */
    void *zctx;                /* the ZeroMQ context of the coordinator link and the workers' endpoint */
    agent_ipc_t *ipc;          /* the workers' ipc:// endpoint (libplaunch) */
    sup_t *sup;
    loop_t *loop;
    coord_server_t *cs;
    link_t *link;
    tls_ctx_t *tls;
    struct relay *relay;       /* this node relays for others (agent_relay.c); NULL none */
    tls_ctx_t *relay_tls;      /* ... with its own credentials, as a server */
    int ranked_relay;          /* ... from the start, as the ranked layout says (its JOIN names its endpoint) */
    char first_relay[300];     /* this node's relay by the ranked layout ("tcp://HOST:PORT"), or "" */
    int first_wait_ms;         /* ... how long it waits for it before it joins the coordinator directly */
    int first_timer;           /* ... that wait, until the first session (agent_relay.c) */
    char coord_host[256];      /* the coordinator's host name (HELLO), which the relay's HELLO gives its nodes */
    char endpoint[300];
    char master_host[256];     /* --master's HOST, a name or a number */
    char master_ip[256];       /* its IPv4 address once known; 0.0.0.0 where the scheduler's first node binds */
    int resolving;             /* master_host is a name that has not resolved yet */
    resolve_t *resolve;        /* the lookup in flight */
    int state_timer_resolve;   /* the next lookup */
    uint64_t said_ns;          /* the last "waiting for ..." line */
    char retry_hint[4096];     /* the command line for the other nodes (creds_tls) */
    agent_mon_t *mon;          /* the health monitor; NULL with --monitor 0 */
    agent_node_t *node;        /* REPORT NODE_STATE: started, first output, GPU figures (the live view) */
    agent_hang_t *hang;        /* the hang watch's progress reports; NULL with --hang-timeout 0 */
    struct metrics *metrics;   /* /metrics (agent_metrics.c); NULL without --metrics-port */
    agent_stacks_t *stacks;    /* ... and the stacks of a hung job */
    int preflight_pending;     /* the preflight checks run: no JOIN before their verdict */
    int join_waiting;          /* a HELLO came while they ran */
    int master_port;
    int hosts_coord;
    int job_id_given;
    enum ac_state st;
    int stop_reason;           /* last STOP's reason; 0 none */
    int last_code;             /* this node's verdict for the generation */
    int heard;                 /* a HELLO came at least once */
    int assigned;              /* an ASSIGN came at least once: from then on heartbeats decide, before it
                                  --rdzv-timeout does (a coordinator forming a big world is late to answer) */
    uint64_t last_heard_ns, started_ns;
    struct heartbeat hb;       /* to the coordinator once assigned, and its silence */
    int hb_timer;
    int state_timer;           /* the deadline of a state that waits on the coordinator */
    int drain_timer;           /* after the BYE: the nodes behind this relay take theirs before it goes */
    int bye_status;
    int end_wait_sig;          /* a stop signal that came after this node's BYE: the job's end is awaited a while */
    uint64_t drain_until_ns;
    struct pf_findings pf;     /* the node preflight's findings: logged, and in every JOIN (agent_preflight.c) */
    struct pf_gpuwait gw;      /* the GPU memory wait of the last restart */
    int gw_active, gw_timer, gw_state, gw_prev[WIRE_MAX_LOCAL];
    agent_etcd_t *etcd;        /* --master etcd://: the election (agent_etcd.c); NULL otherwise */
    char coord_addr[300];      /* ... the coordinator's HOST:PORT as etcd names it */
    int failover;              /* ... it was lost: workers stop, then a new election (agent_connect.c) */
    int took_over;             /* ... a coordinator this node hosts now takes over a running job */
    char lost_addr[300], lost_why[300];
};

/* agent_proto.c */
/* The agent cannot go on (a message it cannot encode): ends this node with 125. */
void agent_proto_fatal(agent_t *ac, const char *what, const char *why);
/* A message to the coordinator: in process, or over the link. */
void agent_proto_up(agent_t *ac, const wire_msg_t *m);
/* A worker's request (libplaunch, through agent_ipc) on its way to the coordinator. */
int agent_proto_worker_up(void *arg, const wire_msg_t *m);
void agent_proto_set_state(agent_t *ac, enum ac_state st);
void agent_proto_send_bye(agent_t *ac, int code);
void agent_proto_send_join(agent_t *ac);
/* Ends this node's part of the job with code. */
void agent_proto_finish(agent_t *ac, int code);
/* This node ends as stopped by sig: its BYE says so, its exit status is 128 + sig. */
void agent_proto_end_by_signal(agent_t *ac, int sig);
/* SIGTERM, SIGINT, ... with no worker running, on a node whose coordinator is elsewhere. */
void agent_proto_stop_signal(agent_t *ac, int sig);
/* The heartbeat timer: sends heartbeats, decides that the coordinator is lost or the rendezvous too late. */
int agent_proto_hb_tick(loop_t *loop, int id, void *arg);

/* agent_preflight.c (a floor between agent.c/agent_inbox.c and agent_proto.c) */
/* The node preflight before the first JOIN: findings logged and kept for JOIN; 0 go on, 2 (strict and a finding:
 * the node must end with it). */
int agent_preflight_node(agent_t *ac);
/* A restart's JOIN: the memory cgroup checked against the last generation's use, then, bounded by
 * --gpu-release-wait, the GPUs' memory released by the last generation's processes; then the JOIN goes out. */
void agent_preflight_restart(agent_t *ac);
void agent_preflight_stop(agent_t *ac);
/* agent_connect.c: the coordinator in this process or the link to it (0, or -1 after a message); the etcd
 * election's set-up (0, or -1 with a message: exit 2), start, and its takeover once this node's workers are gone. */
int agent_connect(agent_t *ac);
int agent_connect_link(agent_t *ac, int again); /* again: a relink, the first link's relay plan kept */
int agent_connect_etcd_new(agent_t *ac, char *err, size_t errlen);
void agent_connect_etcd_start(agent_t *ac);
void agent_connect_failover(agent_t *ac);

/* agent_inbox.c */
/* A message from the coordinator. */
void agent_inbox_on_msg(agent_t *ac, const wire_msg_t *m);

#endif
