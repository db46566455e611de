/* agent_stacks: for a hung job, where each of this node's ranks is: on the coordinator's STACKS_REQUEST, every
 * running worker's native stacks (plaunch __stacks, one process per worker with a deadline), then the CPython
 * processes of each worker ended with SIGABRT so that faulthandler prints every thread's traceback into the rank's
 * log, which is read back; one REPORT STACKS per rank, then STACKS_DONE. Calls up only through send and hold. */
#ifndef PLAUNCH_AGENT_STACKS_H
#define PLAUNCH_AGENT_STACKS_H

#include <stddef.h>

#include "launcher/agent/watch/agent_hang.h"
#include "launcher/job/job.h"
#include "common/loop.h"

typedef struct agent_stacks agent_stacks_t;

/* hold(arg, 1) before the CPython ranks get SIGABRT, hold(arg, 0) once their tracebacks are read: a rank that ends
 * first must not have the others stopped before they printed theirs. */
typedef void (*agent_stacks_hold_fn)(void *arg, int on);

/* NULL with --hang-timeout 0 (and no message), or NULL + message. */
agent_stacks_t *agent_stacks_new(const struct job *job, loop_t *loop, agent_hang_send_fn send, agent_stacks_hold_fn hold,
                                 void *arg, char *err, size_t errlen);
/* The coordinator's STACKS_REQUEST (checked by the wire layer); ignored while one is under way. */
void agent_stacks_request(agent_stacks_t *s, const Plaunch__StacksRequest *req);
void agent_stacks_destroy(agent_stacks_t **s);

#endif
