/* services: what a node offers its libplaunch workers: the ZeroMQ context and the ipc:// endpoint whose requests
 * the agent controller takes to the coordinator. */
#include "services.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>


/* Worker request -> the agent controller, which takes it to the coordinator. */
static int s_up(void *arg, const wire_msg_t *m)
{
    struct services *sv = arg;
    return sv->up ? sv->up(sv->up_arg, m) : -1;
}

int services_open(struct services *sv, struct job *job, loop_t *loop, char *err, size_t errlen)
{
    sv->job = job;
    sv->zctx = zmq_ctx_new();
    if (!sv->zctx) {
        snprintf(err, errlen, "ZeroMQ context: %s", zmq_strerror(errno));
        return -1;
    }
    zmq_ctx_set(sv->zctx, ZMQ_BLOCKY, 0);
    sv->ipc = agent_ipc_new(sv->zctx, loop, job->agent_endpoint, job->job_id, s_up, sv, err, errlen);
    if (!sv->ipc)
        return -1;
    return 0;
}

void services_close(struct services *sv)
{
    agent_ipc_destroy(&sv->ipc);
    if (sv->zctx)
        zmq_ctx_term(sv->zctx);
    sv->zctx = NULL;
}

void services_generation(struct services *sv, uint32_t gen, uint32_t world_size)
{
    if (sv->ipc)
        agent_ipc_set_generation(sv->ipc, gen);
}
