/* jobsetup: turns options into a job: workers (jobworkers.c), log and run directories, tee ranks. */
#ifndef PLAUNCH_JOBSETUP_H
#define PLAUNCH_JOBSETUP_H

#include "launcher/job/job.h"

/* Returns 0, or -1 with err filled; *exit_code is then 2 for bad input, 125 for launcher failures. */
int jobsetup_init(struct job *job, const struct opts *o, char **envp, char *err, size_t errlen, int *exit_code);
void jobsetup_fini(struct job *job);
/* The binding plan of the node's workers (job->node.bind), from --cpu-bind and the topology. 0, or -1 with err (bad
 * input: exit 2). */
int jobsetup_binding(struct job *job, char *err, size_t errlen);
/* Marks the workers whose output goes to the console (--tee), for the ranks they have now. */
int jobsetup_tee(struct job *job, const struct opts *o, char *err, size_t errlen);

/* One node: the ports of a generation (its writer, the agent, calls it on each ASSIGN): MASTER_PORT and one
 * PADDLE endpoint per worker, distinct, free on the host address at the time (picked afresh each generation: the
 * last one's may be in TIME_WAIT); --master-port / --master-addr for the workers win. 0, or -1 with err. */
int jobsetup_pick_ports(struct job *job, char *err, size_t errlen);

#endif
