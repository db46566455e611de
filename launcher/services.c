/* services: what a node offers its libplaunch workers: the ipc:// endpoint and, on a one-node job, the
 * in-process coordinator that hands out NCCL ids and runs barriers. */
#include "services.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "log.h"

/* Coordinator -> agent, in process. */
static int s_coord_send(void *arg, int peer, const wire_msg_t *m)
{
    struct services *sv = arg;
    agent_ipc_deliver(sv->ipc, m);
    return 0;
}

/* Worker request -> coordinator: in process, or through the multi-node agent's link. */
static int s_up(void *arg, const wire_msg_t *m)
{
    struct services *sv = arg;
    if (sv->coord) {
        coord_on_msg(sv->coord, 0, m);
        return 0;
    }
    return sv->up ? sv->up(sv->up_arg, m) : -1;
}

int services_open(struct services *sv, struct job *job, loop_t *loop, int with_coord, char *err, size_t errlen)
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
    if (with_coord && !(sv->coord = coord_new(job->job_id, s_coord_send, sv))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void services_close(struct services *sv)
{
    coord_destroy(&sv->coord);
    agent_ipc_destroy(&sv->ipc);
    if (sv->zctx)
        zmq_ctx_term(sv->zctx);
    sv->zctx = NULL;
}

void services_generation(struct services *sv, uint32_t gen, uint32_t world_size)
{
    if (sv->coord)
        coord_set_generation(sv->coord, gen, world_size);
    if (sv->ipc)
        agent_ipc_set_generation(sv->ipc, gen);
}

static int s_local_setup(void *arg, sup_t *s, loop_t *loop)
{
    struct services *sv = arg;
    char err[512];
    if (services_open(sv, sv->job, loop, 1, err, sizeof err) < 0) {
        log_error("%s", err);
        return -1;
    }
    return 0;
}

static void s_local_gen_start(void *arg, const struct job *job)
{
    services_generation(arg, (uint32_t)job->generation, (uint32_t)job->world_size);
}

static void s_local_teardown(void *arg)
{
    services_close(arg);
}

void services_local_ctl(struct services *sv, struct sup_ctl *ctl)
{
    memset(ctl, 0, sizeof *ctl);
    ctl->arg = sv;
    ctl->setup = s_local_setup;
    ctl->gen_start = s_local_gen_start;
    ctl->teardown = s_local_teardown;
}
