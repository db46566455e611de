/* supervise: the node's supervision core: one event loop (signalfd, worker pipes, deadlines) driving an
 * explicit state x event table for start, failure, restart, signal forwarding and shutdown. */
#ifndef PLAUNCH_SUPERVISE_H
#define PLAUNCH_SUPERVISE_H

#include <signal.h>

#include "job.h"

/* Blocks the signals the loop takes through signalfd; call before any fork. */
int supervise_block_signals(sigset_t *old);
/* Runs the job to its end; returns the launcher's exit status. */
int supervise_run(struct job *job);

#endif
