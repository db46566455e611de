/* hang_pytb: Python tracebacks from faulthandler's dump in a worker's log (PYTHONFAULTHANDLER=1, then SIGABRT):
 * "Fatal Python error: Aborted", then per thread "Thread 0x... (most recent call first):" or "Current thread
 * 0x...", then "  File "x.py", line 88 in load_batch" lines. Parses a bounded tail of the log given as a buffer,
 * robust to garbage, cut lines and other output interleaved. */
#ifndef PLAUNCH_HANG_PYTB_H
#define PLAUNCH_HANG_PYTB_H

#include <stddef.h>

#include "launcher/hang/hang_trace.h"

/* Parses the last dump in buf into p's Python threads (those p held are replaced; py_source "faulthandler"): at
 * most HANG_PY_THREADS_MAX threads of HANG_FRAMES_MAX frames, innermost first, thread ids as faulthandler prints
 * them (tid 0: it prints no kernel id), "Current thread" marked current. A dump followed by a plaunch generation
 * marker is an earlier generation's and does not count; a last line without its newline may be cut and is
 * ignored. The number of threads found (0: no dump, p untouched), or -1 out of memory. */
int hang_pytb_parse(struct hang_trace *t, struct hang_proc *p, const char *buf, size_t len);
/* hang_pytb_parse into the process of t the dump belongs to: pid's when t holds it, else t's first CPython
 * process, else its first, else a new process pid (> 0). The threads found, or -1 with a message. */
int hang_pytb_attach(struct hang_trace *t, int pid, const char *buf, size_t len, char *err, size_t errlen);

/* hang_pytb_attach on the last tail bytes (at most HANG_PYTB_TAIL_MAX) of the regular file open on fd (a worker's
 * log), read with pread (fd's offset is not moved). The threads found, or -1 with a message. */
#define HANG_PYTB_TAIL_MAX (1u << 20)
int hang_pytb_attach_fd(struct hang_trace *t, int pid, int fd, size_t tail, char *err, size_t errlen);

#endif
