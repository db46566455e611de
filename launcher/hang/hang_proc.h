/* hang_proc: one process of a worker's tree as the capture sees it: bounded /proc reads (threads, children, state,
 * comm, exe, wchan) and holding its threads stopped under ptrace with a deadline. Owned by the `plaunch __stacks`
 * capture processes; they block SIGCHLD before hang_proc_hold (the stops are waited for with sigtimedwait). */
#ifndef PLAUNCH_HANG_PROC_H
#define PLAUNCH_HANG_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/hang/hang_trace.h"

enum hang_hold_state { HANG_HOLD_NONE, HANG_HOLD_SEIZED, HANG_HOLD_STOPPED, HANG_HOLD_GONE };

/* A process whose threads (at most HANG_THREADS_MAX, the main one first) are held under ptrace. */
struct hang_hold {
    int pid, total;                        /* total: threads /proc listed */
    int waited_ms;                         /* how long the stops were waited for */
    int n;                                 /* threads listed (and tried) */
    int tid[HANG_THREADS_MAX];
    enum hang_hold_state st[HANG_THREADS_MAX];
    int sig[HANG_THREADS_MAX];             /* a signal that stopped it, delivered again when it is let go */
    int err[HANG_THREADS_MAX];             /* errno of PTRACE_SEIZE, 0 */
    char state[HANG_THREADS_MAX];          /* each thread's state and wchan as they were before it was seized */
    char wchan[HANG_THREADS_MAX][48];
};

/* Milliseconds of CLOCK_MONOTONIC, the time base of the capture's deadlines. */
int64_t hang_proc_now_ms(void);
/* Reads at most cap - 1 bytes of /proc/PID/NAME (NAME may be "task/TID/wchan"), NUL-terminated, trailing newline
 * removed; the length, or -1 with errno. */
int hang_proc_read(int pid, const char *name, char *buf, size_t cap);
/* From /proc/PID/task/TID/stat: the state letter and the parent pid; 0, or -1 when it is gone. */
int hang_proc_stat(int pid, int tid, char *state, int *ppid);
/* The executable's path into buf; "" when unknown. Whether it looks like CPython (its name begins with python). */
int hang_proc_exe(int pid, char *buf, size_t cap);
/* The threads of pid, its main thread first then by tid, at most cap into tids; how many exist in *total (0 when
 * the process is gone). Returns how many were stored. */
int hang_proc_threads(int pid, int *tids, int cap, int *total);
/* The children of every thread of pid (/proc/PID/task/TID/children), at most cap, each once; their count. */
int hang_proc_children(int pid, int *kids, int cap);

/* Seizes every listed thread of pid and interrupts it, then waits until each one stops, is gone, or deadline_ms
 * (hang_proc_now_ms) passes. 0 when at least one thread stopped; -1 with a message (the process is gone, a zombie,
 * traced by another tracer, not permitted, no thread stopped in time). A thread that has not stopped stays seized
 * until the calling process exits: the capture process ends right after the capture. */
int hang_proc_hold(struct hang_hold *h, int pid, int64_t deadline_ms, char *err, size_t errlen);
/* Why thread i has no stack (seize refused, gone, not stopped in time with its state and wchan) into buf; "" when
 * it is stopped. */
void hang_proc_why(const struct hang_hold *h, int i, char *buf, size_t cap);
/* Lets every stopped thread go (with the signal it stopped on); the seized ones that never stopped stay seized. */
void hang_proc_release(struct hang_hold *h);

#endif
