/* agent_hang: this node's share of the hang watch: every worker's progress (its output, the step number in its
 * PLAUNCH_PROGRESS_FILE) reported to the coordinator each tick (REPORT "progress"); on the coordinator's
 * "stacks-request", every worker's native stacks (plaunch __stacks, one process per worker with a deadline), then
 * the CPython processes of each worker ended with SIGABRT so that faulthandler prints every thread's traceback into
 * the rank's log, which is read back; one REPORT "stacks" per rank, then "stacks-done". Calls up only through send. */
#ifndef PLAUNCH_AGENT_HANG_H
#define PLAUNCH_AGENT_HANG_H

#include <stddef.h>

#include "job.h"
#include "loop.h"

typedef struct agent_hang agent_hang_t;
/* Sends a REPORT of kind with json (len bytes) to the coordinator. */
typedef void (*agent_hang_send_fn)(void *arg, const char *kind, const char *json, size_t len);

/* NULL with --hang-timeout 0 (and no message), or NULL + message. */
agent_hang_t *agent_hang_new(struct job *job, loop_t *loop, agent_hang_send_fn send, void *arg, char *err,
                             size_t errlen);
/* Before a generation's workers start: their progress files are emptied, their steps forgotten. */
void agent_hang_generation(agent_hang_t *h);
/* The coordinator's "stacks-request" (json, len: {"gen":G,"deadline_ms":D}); ignored while one is under way. */
void agent_hang_request(agent_hang_t *h, const char *json, size_t len);
void agent_hang_destroy(agent_hang_t **h);

#endif
