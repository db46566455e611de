/* agent_ipc: the node agent's ipc:// endpoint for libplaunch workers: takes their NCCL id and barrier
 * requests up to the coordinator and hands the answers back to every worker waiting on the key. */
#ifndef PLAUNCH_AGENT_IPC_H
#define PLAUNCH_AGENT_IPC_H

#include "common/loop.h"
#include "common/wire/wire.h"

typedef struct agent_ipc agent_ipc_t;
/* Forwards a checked worker request towards the coordinator; 0 or -1 (the worker is refused at once). Called with
 * m NULL when an answer for a worker cannot be encoded: nobody would ever hear it, and the job must end. */
typedef int (*agent_ipc_up_fn)(void *arg, const wire_msg_t *m);

/* Binds endpoint ("ipc://DIR/agent") on a ROUTER in zctx and watches it in loop. NULL + message on failure. */
agent_ipc_t *agent_ipc_new(void *zctx, loop_t *loop, const char *endpoint, const char *job_id,
                           agent_ipc_up_fn up, void *arg, char *err, size_t errlen);
void agent_ipc_destroy(agent_ipc_t **ipc);
/* The job id workers must present (a multi-node agent learns it from the coordinator). */
void agent_ipc_set_job(agent_ipc_t *ipc, const char *job_id);
/* A new generation: answers still pending are dropped (their workers are gone). */
void agent_ipc_set_generation(agent_ipc_t *ipc, uint32_t gen);
/* An answer from the coordinator for the workers waiting for it: NCCL_ID and BARRIER_DONE by key (BARRIER_DONE
 * with ranks: only theirs), a REFUSE of a worker request by its key and rank. Refusals are logged rate-limited. */
void agent_ipc_deliver(agent_ipc_t *ipc, const wire_msg_t *m);

#endif
