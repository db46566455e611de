/* wenv: the environment of each worker: the inherited one plus the torch/Paddle/CUDA/PLAUNCH contract. */
#ifndef PLAUNCH_WENV_H
#define PLAUNCH_WENV_H

#include "job.h"

/* Copies environ without the variables plaunch sets into job->base_env; 0, or -1 with errno. */
int wenv_init(struct job *job, char **environ_in);
void wenv_fini(struct job *job);
/* One worker's envp in a single allocation (free() it); NULL with errno on failure. */
char **wenv_build(const struct job *job, const struct worker *w);
/* One node's ports of a generation: MASTER_PORT and one PADDLE endpoint per worker, distinct, free on the host
 * address at the time (picked afresh each generation: the last one's may be in TIME_WAIT). 0, or -1 logged. */
int wenv_pick_ports(struct job *job);

#endif
