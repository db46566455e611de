/* agent_etcd: this node's part in electing the job's coordinator through etcd (--master etcd://...): its lease
 * (kept alive from the loop), its membership key, the campaign for the coordinator's key, the watch on that key,
 * and the job's durable state (generation, restarts spent, incidents) that a coordinator taking over resumes
 * from. Calls up only through struct agent_etcd_cb. The keys are in docs/resilience.md, its etcd part. */
#ifndef PLAUNCH_AGENT_ETCD_H
#define PLAUNCH_AGENT_ETCD_H

#include <stdint.h>

#include "launcher/job/job.h"
#include "common/loop.h"

typedef struct agent_etcd agent_etcd_t;

struct agent_etcd_cb {
    /* The election decided: this node coordinates (leader) at addr, or follows the coordinator at addr. */
    void (*elected)(void *arg, int leader, const char *addr);
    /* The coordinator this node follows is gone from etcd (its lease expired, or another holds the key). */
    void (*lost)(void *arg, const char *why);
    /* This node cannot go on with the election (its deadline passed; it lost the lead): ends it with code. */
    void (*fail)(void *arg, int code, const char *why);
    void *arg;
};

/* The durable state a coordinator that takes over starts from. */
struct agent_etcd_state {
    uint32_t generation;   /* the last generation assigned */
    int restarts_used;     /* the restart budget spent */
    int alive;             /* nodes with a live lease (membership keys) */
};

/* Connects to the endpoints of --master etcd://..., grants this node's lease (TTL: --heartbeat-timeout, at least
 * 2 s) and writes its membership key. me: HOST:PORT this node would serve the coordinator at. NULL + message in
 * err when etcd cannot be reached (the caller exits 2). Blocks at most a few etcd calls of ETCD_CALL_MS each. */
agent_etcd_t *agent_etcd_new(const struct job *job, const char *me, char *err, size_t errlen);
/* The first endpoint's host (the route to it picks this node's address before the lease exists). */
int agent_etcd_host(const char *master, char *host, size_t cap);
/* Registers the keepalive and watch timer and starts the first election. */
void agent_etcd_start(agent_etcd_t *ae, loop_t *loop, const struct agent_etcd_cb *cb);
/* A new election after the coordinator at lost_addr was lost (its key counts as gone until it expires). */
void agent_etcd_elect(agent_etcd_t *ae, const char *lost_addr, const char *why);
/* A leader whose port was taken since it was published serves at me instead: the key says so. 0, or -1 (logged). */
int agent_etcd_move(agent_etcd_t *ae, const char *me);
/* The coordinator this node follows went silent (heartbeats): it is lost for this node whatever etcd says. */
void agent_etcd_silent(agent_etcd_t *ae, const char *why);
/* For a coordinator taking over: the job's durable state. 0, or -1 (none: a first generation). */
int agent_etcd_load(agent_etcd_t *ae, struct agent_etcd_state *st);
/* The coordinator's durable state after each ASSIGN, and one incident line (its generation names it). */
void agent_etcd_save(agent_etcd_t *ae, uint32_t generation, int restarts_used, int nnodes);
void agent_etcd_incident(agent_etcd_t *ae, uint32_t generation, const char *text);
/* The job ended on this node: a leader removes the job's keys, everyone revokes its lease. */
void agent_etcd_finish(agent_etcd_t *ae);
void agent_etcd_destroy(agent_etcd_t **ae);
/* This node holds the coordinator's key. */
int agent_etcd_leader(const agent_etcd_t *ae);

#endif
