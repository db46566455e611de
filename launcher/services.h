/* services: what a node offers its libplaunch workers: the ZeroMQ context and the ipc:// endpoint whose requests
 * the agent controller takes to the coordinator. */
#ifndef PLAUNCH_SERVICES_H
#define PLAUNCH_SERVICES_H

#include "agent_ipc.h"
#include "job.h"

struct services {
    struct job *job;
    void *zctx;
    agent_ipc_t *ipc;
    /* Where worker requests go (set by the agent controller). */
    int (*up)(void *arg, const wire_msg_t *m);
    void *up_arg;
};

/* Creates the ZeroMQ context and binds the workers' endpoint. 0, or -1 with a message in err. */
int services_open(struct services *sv, struct job *job, loop_t *loop, char *err, size_t errlen);
void services_close(struct services *sv);
/* A new generation of world_size ranks begins. */
void services_generation(struct services *sv, uint32_t gen, uint32_t world_size);

#endif
