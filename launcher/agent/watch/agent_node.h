/* agent_node: this node's share of the live view and of the goodput ledger: REPORT NODE_STATE to the coordinator when
 * the generation's workers have all started, at their first output, and every AN_GPU_MS with the monitor's GPU
 * figures (docs/goodput.md); and the node's own goodput model (its ranks' steps, output ages, GPUs), written to
 * LOG_DIR/status.NODE.json once a second on a multi-node job. A floor below agent.c; calls agent_mon.c,
 * agent_hang.c, launcher/goodput/, job, common. */
#ifndef PLAUNCH_AGENT_NODE_H
#define PLAUNCH_AGENT_NODE_H

#include <stddef.h>

#include "launcher/agent/watch/agent_hang.h"
#include "launcher/agent/watch/agent_mon.h"
#include "launcher/goodput/goodput.h"
#include "launcher/job/job.h"
#include "common/loop.h"
#include "common/wire/wire.h"

typedef struct agent_node agent_node_t;
typedef void (*agent_node_send_fn)(void *arg, wire_report_t kind, void *body);

/* Ticks every 200 ms (no file, no message unless something is new). NULL when out of memory. */
agent_node_t *agent_node_new(struct job *job, agent_mon_t *mon, agent_hang_t *hang, loop_t *loop,
                             agent_node_send_fn send, void *arg);
/* A generation starts (before its workers spawn): what was sent is forgotten. */
void agent_node_generation(agent_node_t *n);
/* This node's model (no incidents: those are the coordinator's), for the metrics endpoint; NULL without one. */
const gp_t *agent_node_model(const agent_node_t *n);
/* Writes the last status.NODE.json (the node is done), stops the tick, frees; sets *n to NULL, safe twice. */
void agent_node_destroy(agent_node_t **n);

#endif
