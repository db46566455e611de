/* hang_pyspy: Python stacks of a live CPython process through py-spy, when it is on PATH (optional, never
 * required): `py-spy dump --pid PID --json`, bounded in time and output, killed past its deadline. Run by a
 * `plaunch __stacks` capture process after it has let the process go (py-spy attaches on its own). */
#ifndef PLAUNCH_HANG_PYSPY_H
#define PLAUNCH_HANG_PYSPY_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/hang/hang_trace.h"

#define HANG_PYSPY_OUT_MAX (1u << 20) /* bytes of py-spy's answer that are read */

/* The path of the first executable py-spy on PATH into buf; 0, or -1 when there is none. */
int hang_pyspy_find(char *buf, size_t cap);
/* Runs exe on p's pid until deadline_ms (hang_proc_now_ms time) and puts its threads into p (py_source "py-spy"),
 * or why not into p->py_error. The threads found, or -1. py-spy is registered with the child registry (proc.h) and
 * waited for there, bounded. */
int hang_pyspy_run(const char *exe, struct hang_trace *t, struct hang_proc *p, int64_t deadline_ms);
/* py-spy's JSON (an array of threads, each with frames of name, filename, line) into p's Python threads; the
 * threads found, or -1 with a message (not JSON, not that shape). Keys other than those read are ignored. */
int hang_pyspy_parse(struct hang_trace *t, struct hang_proc *p, const char *text, size_t len, char *err,
                     size_t errlen);

#endif
