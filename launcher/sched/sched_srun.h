/* sched_srun: `plaunch --scheduler slurm PROGRAM` in a batch script (or under salloc): one plaunch per node of the
 * allocation through srun, stop signals relayed, the job's exit status returned. */
#ifndef PLAUNCH_SCHED_SRUN_H
#define PLAUNCH_SCHED_SRUN_H

#include <signal.h>

struct sched_srun_args {
    const char *job_id;   /* SLURM_JOB_ID: the job whose step is signalled */
    int nnodes;           /* srun --nodes */
    int elastic;          /* --nnodes MIN:MAX: a lost node must not end the step (no --kill-on-bad-exit) */
    double grace;         /* --grace: how long the nodes take to stop their workers */
    const char *token;    /* PLAUNCH_TOKEN for every node, or NULL when the options carry credentials */
    int quiet;
};

/* Starts `srun --nodes=N --ntasks-per-node=1 ... SELF argv[1..]` with envp (plus PLAUNCH_TOKEN) and waits for
 * it; signals in *sigs are already blocked and arrive through a signalfd. A stop signal (INT, TERM, HUP, QUIT)
 * becomes SIGTERM to the step's tasks (scancel --signal=TERM JOB.STEP), every node's plaunch; a second one, or
 * srun still there --grace + 15 s later, kills srun. USR1/USR2 go to srun, which passes them on. Returns srun's exit status
 * (the job's), 127 when there is no srun, 125 when it cannot be run. */
int sched_srun_run(int argc, char **argv, const struct sched_srun_args *a, char **envp, const sigset_t *sigs);

#endif
