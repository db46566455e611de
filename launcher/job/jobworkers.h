/* jobworkers: how many workers this node runs and which GPU each gets. */
#ifndef PLAUNCH_JOBWORKERS_H
#define PLAUNCH_JOBWORKERS_H

#include <stddef.h>

#include "launcher/job/job.h"

/* Fills job->workers (ranks from job->gen.rank_base), job->node.nworkers, job->node.gpu_mode and job->node.visible_devices from o
 * and the environment envp; 0, or -1 with err filled (bad input: exit status 2). */
int jobworkers_setup(struct job *job, const struct opts *o, char **envp, char *err, size_t errlen);

#endif
