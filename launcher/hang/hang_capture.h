/* hang_capture: the native stacks of a worker's process tree: every process held stopped under ptrace (hang_proc),
 * every thread unwound with libdwfl (hang_dw): function names, source file:line where debug information exists,
 * else module + offset. Runs in a `plaunch __stacks` capture process, one per worker, which exits right after. */
#ifndef PLAUNCH_HANG_CAPTURE_H
#define PLAUNCH_HANG_CAPTURE_H

#include <stdint.h>

#include "launcher/hang/hang_dw.h"
#include "launcher/hang/hang_trace.h"

/* Takes one part of the capture: a trace of one process holding its header and at most one thread (the part is
 * destroyed after the call). Returns 0, or -1 to stop the capture. */
typedef int (*hang_capture_emit_fn)(struct hang_trace *part, void *arg);

struct hang_capture_opts {
    int64_t deadline_ms; /* hang_proc_now_ms() past which no more frames are read */
    int stop_ms;         /* how long the threads of one process may take to stop (uninterruptible ones never do) */
};

/* Captures root and its descendants (at most HANG_TREE_MAX, breadth first; a child counts only while its parent
 * is held stopped and /proc says so before and after it is seized): each process's header first, then each thread
 * as it is unwound, through emit. dw may be NULL (no libdw: headers, threads' states and the reason only). The
 * CPython processes' pids go into py_pids (at most HANG_TREE_MAX); their count. Every held thread is let go
 * before it returns. */
int hang_capture_tree(const struct hang_dw *dw, const char *dw_err, int root, const struct hang_capture_opts *o,
                      hang_capture_emit_fn emit, void *arg, int *py_pids);

#endif
