/* hang_stacks: the `plaunch __stacks [OPTIONS] PID...` process the agent spawns when a job hangs: one capture
 * process per worker (at most 4 at once; hang_stack, then py-spy when it is on PATH), each under its own deadline
 * and killed past it, their parts merged; prints one JSON document (hang_json, docs/hang.md) on stdout with every
 * pid asked for, an "error" on those that failed. Only pids whose parent is --parent (default: the caller, i.e. the
 * agent whose workers they are) are touched. */
#ifndef PLAUNCH_HANG_STACKS_H
#define PLAUNCH_HANG_STACKS_H

#define HANG_STACKS_PIDS_MAX 64        /* pids one run takes */
#define HANG_STACKS_DEADLINE_MS 10000  /* --deadline-ms default: the whole run */
#define HANG_STACKS_STOP_MS 1000       /* --stop-ms default: how long one process's threads may take to stop */

/* argv[0] is "__stacks". Exit status 0 with the document printed (whatever failed per pid), 2 on bad usage, 1 when
 * the document could not be written. */
int hang_stacks_main(int argc, char **argv);

#endif
