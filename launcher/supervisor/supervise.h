/* supervise: the node's supervision core: handlers in the process's loop (signalfd, worker pipes, deadlines; the
 * workers' ends through the child registry, proc.h) driving an explicit state x event table for start, failure,
 * restart, signal forwarding and shutdown. The loop is main's: the supervisor registers in it like every part. */
#ifndef PLAUNCH_SUPERVISE_H
#define PLAUNCH_SUPERVISE_H

#include <signal.h>
#include <stddef.h>

#include "launcher/job/job.h"
#include "common/loop.h"

typedef struct sup sup_t;

/* The node's controller (the agent: the link to the coordinator, in process on a one-node job). No generation
 * starts until supervise_start; when all workers are gone the supervisor waits (gen_over) for supervise_start (the next
 * generation) or supervise_finish (the end of the job). Callbacks other than gen_over are optional. */
struct sup_ctl {
    void *arg;
    /* Workers of job->gen.generation are about to start (ranks and ports are set). */
    void (*gen_start)(void *arg, const struct job *job);
    void (*worker_exit)(void *arg, const struct job *job, const struct worker *w);
    /* Every worker of the generation is gone; exit_code is this node's verdict (0 = all ok). */
    void (*gen_over)(void *arg, const struct job *job, int exit_code);
    /* The launcher got a stop signal (TERM INT HUP QUIT). */
    void (*stop_signal)(void *arg, int sig);
};

/* Blocks the signals the loop takes through signalfd (CHLD, the stop signals, USR1, USR2) and returns them in
 * *blocked when not NULL; call before any fork. */
int supervise_block_signals(sigset_t *blocked);
/* Registers the supervisor's handlers in loop (a signalfd for the signals supervise_block_signals blocked, less
 * SIGCHLD, which is the child registry's: attach it, proc_attach, to the same loop). NULL with a message. */
sup_t *supervise_new(struct job *job, loop_t *loop, const struct sup_ctl *ctl, char *err, size_t errlen);
/* Whether the run has ended (supervise_finish): the loop has nothing more to do for it. */
int supervise_over(const sup_t *s);
/* After the loop: kills and reaps the workers still running, ends what they left behind, takes the handlers out
 * of the loop and frees *s; returns the launcher's exit status (125 when the run never ended). */
int supervise_end(sup_t **s);

/* For the controller, from inside the loop. */
int supervise_start(sup_t *s);                       /* start the workers of job->gen.generation; 0 or -1 */
void supervise_stop(sup_t *s, int sig);              /* stop the workers: sig (0 = SIGTERM), SIGKILL after --grace */
void supervise_finish(sup_t *s, int exit_code);      /* kill what is left, end the run with exit_code */
/* on: a worker's failure stops none of the others (their stacks are being taken); off: a stop held meanwhile
 * begins now. */
void supervise_hold_stops(sup_t *s, int on);

#endif
