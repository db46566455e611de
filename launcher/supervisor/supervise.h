/* supervise: the node's supervision core: one event loop (signalfd, worker pipes, deadlines) driving an
 * explicit state x event table for start, failure, restart, signal forwarding and shutdown. */
#ifndef PLAUNCH_SUPERVISE_H
#define PLAUNCH_SUPERVISE_H

#include <signal.h>

#include "job.h"

typedef struct sup sup_t;

/* The node's controller (the agent: the link to the coordinator, in process on a one-node job). No generation
 * starts until supervise_start; when all workers are gone the supervisor waits (gen_over) for supervise_start (the next
 * generation) or supervise_finish (the end of the job). Callbacks other than setup and gen_over are optional. */
struct sup_ctl {
    void *arg;
    /* The loop exists: register sockets and timers. -1 ends the run with 125. */
    int (*setup)(void *arg, sup_t *s, loop_t *loop);
    /* Workers of job->generation are about to start (ranks and ports are set). */
    void (*gen_start)(void *arg, const struct job *job);
    void (*worker_exit)(void *arg, const struct job *job, const struct worker *w);
    /* Every worker of the generation is gone; exit_code is this node's verdict (0 = all ok). */
    void (*gen_over)(void *arg, const struct job *job, int exit_code);
    /* The launcher got a stop signal (TERM INT HUP QUIT). */
    void (*stop_signal)(void *arg, int sig);
    void (*teardown)(void *arg);
};

/* Blocks the signals the loop takes through signalfd (CHLD, the stop signals, USR1, USR2) and returns them in
 * *blocked when not NULL; call before any fork. */
int supervise_block_signals(sigset_t *blocked);
/* Runs the job to its end; returns the launcher's exit status. */
int supervise_run(struct job *job, const struct sup_ctl *ctl);

/* For the controller, from inside the loop. */
int supervise_start(sup_t *s);                       /* start the workers of job->generation; 0 or -1 */
void supervise_stop(sup_t *s, int sig);              /* stop the workers: sig (0 = SIGTERM), SIGKILL after --grace */
void supervise_finish(sup_t *s, int exit_code);      /* kill what is left, end the run with exit_code */
/* on: a worker's failure stops none of the others (their stacks are being taken); off: a stop held meanwhile
 * begins now. */
void supervise_hold_stops(sup_t *s, int on);

#endif
