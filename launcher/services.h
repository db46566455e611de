/* services: what a node offers its libplaunch workers: the ipc:// endpoint and, on a one-node job, the
 * in-process coordinator that hands out NCCL ids and runs barriers. */
#ifndef PLAUNCH_SERVICES_H
#define PLAUNCH_SERVICES_H

#include "agent_ipc.h"
#include "coord.h"
#include "job.h"
#include "supervise.h"

struct services {
    struct job *job;
    void *zctx;
    agent_ipc_t *ipc;
    coord_t *coord;             /* NULL when the coordinator is elsewhere */
    /* Where worker requests go when the coordinator is remote (set by the multi-node agent). */
    int (*up)(void *arg, const wire_msg_t *m);
    void *up_arg;
};

/* Creates the ZeroMQ context and binds the workers' endpoint; with_coord adds the in-process coordinator.
 * 0, or -1 with a message in err. */
int services_open(struct services *sv, struct job *job, loop_t *loop, int with_coord, char *err, size_t errlen);
void services_close(struct services *sv);
/* A new generation of world_size ranks begins. */
void services_generation(struct services *sv, uint32_t gen, uint32_t world_size);
/* The supervisor controller of a one-node job. */
void services_local_ctl(struct services *sv, struct sup_ctl *ctl);

#endif
