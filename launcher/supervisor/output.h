/* output: each worker's output pipes into LOG_DIR/workerlog.<rank> (spliced in the kernel when the rank is not
 * shown), and the console's ranks line by line with a [rank N] prefix, stdout to stdout and stderr to stderr.
 * Nothing is buffered on the way to the log file; what a full file system refuses is counted, reported, and marked
 * in the log. */
#ifndef PLAUNCH_OUTPUT_H
#define PLAUNCH_OUTPUT_H

#include "launcher/job/job.h"

/* Opens (first generation: truncates) workerlog.<rank> for every worker, refusing links, other users' files and
 * unsafe directories (ownfile.h); -1 with a message in err. */
int output_open_logs(struct job *job, char *err, size_t errlen);
void output_close_logs(struct job *job);
/* Writes the generation marker line to the worker's log and remembers where this generation starts. */
void output_marker(const struct job *job, struct worker *w);
/* Moves what is readable now from the pipe fd (w->out_fd or w->err_fd) to the log and, for a stream the console
 * shows, to the console (at most max_bytes; 0 = all). Returns 1 at that pipe's EOF (or for another fd), 0
 * otherwise. */
int output_pump(struct worker *w, int fd, size_t max_bytes);
/* Both pipes, all that is readable now (a worker that exited has written everything). */
void output_drain(struct worker *w);
/* Reads what is left of pipe fd without blocking, flushes its partial console line, closes it. */
void output_finish_pipe(struct worker *w, int fd);
/* output_finish_pipe for both pipes. */
void output_finish(struct worker *w);
/* Copies the last nlines lines of this generation's log into buf (printable, one per
 * line, not indented); returns buf. After a loss it
 * never quotes lines from before it: a "[plaunch: ...]" line says that the tail is missing or incomplete. */
char *output_tail(const struct worker *w, int nlines, char *buf, size_t cap);
/* The job's exit status given the workers' code: when a log lost bytes it says so (per rank) and turns 0 into 125. */
int output_final_status(const struct job *job, int code);

#endif
