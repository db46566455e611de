/* strays: ends what a generation's workers left behind, so that nothing outlives its generation: the job
 * cgroup as a whole where there is one, then every child plaunch inherited as subreaper. */
#ifndef PLAUNCH_STRAYS_H
#define PLAUNCH_STRAYS_H

#include "launcher/job/job.h"

/* How long one clean-up may take (a fork bomb must not hold the job forever): past it, what is left is
 * logged and the job goes on; the next clean-up tries again. */
#define STRAYS_DEADLINE_MS 5000

/* Logs, once per job, how processes left behind are found and what that cannot catch. */
void strays_log_method(void);
/* Kills and reaps every process left behind by the workers of job: every child of plaunch that no part
 * registered (proc.h: live workers, the sentinel, the monitor's sampler, stacks captures are registered); call when no worker of the generation runs or after they were killed. When nothing is left, the sentinel
 * forgets the generation's process groups (their numbers are free for others now). Returns how many of
 * plaunch's children it killed. */
int strays_kill(const struct job *job);

#endif
