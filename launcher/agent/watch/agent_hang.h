/* agent_hang: this node's share of the hang watch: every worker's progress (its output, the step number in its
 * PLAUNCH_PROGRESS_FILE) reported to the coordinator each tick (REPORT PROGRESS). Calls up only through send. */
#ifndef PLAUNCH_AGENT_HANG_H
#define PLAUNCH_AGENT_HANG_H

#include <stddef.h>

#include "launcher/job/job.h"
#include "common/loop.h"
#include "common/wire/wire.h"

typedef struct agent_hang agent_hang_t;
/* Sends a REPORT of kind to the coordinator: body is that kind's message (Plaunch__Progress, ...), borrowed. */
typedef void (*agent_hang_send_fn)(void *arg, wire_report_t kind, void *body);

/* NULL with --hang-timeout 0 (and no message), or NULL + message. */
agent_hang_t *agent_hang_new(const struct job *job, loop_t *loop, agent_hang_send_fn send, void *arg, char *err,
                             size_t errlen);
/* Before a generation's workers start: their progress files are emptied, their steps forgotten. */
void agent_hang_generation(agent_hang_t *h);
/* When this generation's first step report was read (at the watch's pace); 0 none yet, or no watch. */
uint64_t agent_hang_first_step_ns(const agent_hang_t *h);
/* A local rank's latest step as last read (-1 none, or no watch). */
long long agent_hang_step(const agent_hang_t *h, int local_rank);
void agent_hang_destroy(agent_hang_t **h);

#endif
