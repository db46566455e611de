/* agent_metrics: this node's /metrics (--metrics-port): the server of launcher/metrics/ in main's loop, with the
 * node's collector (generation, workers; each rank's output age, step and step rate from the node's goodput model;
 * the monitor's latest GPU and host gauges) and, on the coordinator's node, the job's from the coordinator's
 * model. Reads the agent's state; owns none of it. */
#ifndef PLAUNCH_AGENT_METRICS_H
#define PLAUNCH_AGENT_METRICS_H

#include "launcher/goodput/goodput.h"

typedef struct agent agent_t;

/* With --metrics-port: starts serving (a failure is a warning: metrics never stop a job). */
void agent_metrics_start(agent_t *ac);
/* The coordinator of this node exists: the job's families, read from its goodput model gp (which outlives the
 * metrics: agent_metrics_stop comes before the coordinator goes), join the node's. */
void agent_metrics_coord(agent_t *ac, const gp_t *gp);
void agent_metrics_stop(agent_t *ac);

#endif
