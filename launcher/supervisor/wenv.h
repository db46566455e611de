/* wenv: the environment of each worker: the inherited one plus the torch/Paddle/CUDA/PLAUNCH contract. */
#ifndef PLAUNCH_WENV_H
#define PLAUNCH_WENV_H

#include "launcher/job/job.h"

/* Copies environ without the variables plaunch sets into job->node.base_env; 0, or -1 with errno. */
int wenv_init(struct job *job, char **environ_in);
void wenv_fini(struct job *job);
/* One worker's envp in a single allocation (free() it); NULL with errno on failure. */
char **wenv_build(const struct job *job, const struct worker *w);

#endif
