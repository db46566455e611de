/* hang_trace: where one rank is: its processes (the worker and its descendants), each with its native threads and
 * frames and its Python threads and frames; every string and count bounded, owned by the trace. */
#ifndef PLAUNCH_HANG_TRACE_H
#define PLAUNCH_HANG_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define HANG_PROCS_MAX 1024        /* processes of one trace (one __stacks document: every root of a node) */
#define HANG_TREE_MAX 16           /* processes of one root's tree that are captured (the root first) */
#define HANG_THREADS_MAX 64        /* native threads of one process that are unwound (the main thread first) */
#define HANG_FRAMES_MAX 48         /* frames of one thread (the innermost ones) */
#define HANG_PY_THREADS_MAX 64     /* Python threads of one process */
#define HANG_STR_MAX 256           /* bytes of a function name or file path, NUL included ("..." marks a cut) */
#define HANG_SHORT_MAX 128         /* bytes of a module, thread name, comm, state, wchan, thread id */
#define HANG_ERR_MAX 256           /* bytes of an error message */
#define HANG_TRACE_BYTES_MAX (4u << 20) /* string bytes one trace holds; past it frames are dropped (cut) */

struct hang_frame {
    char *fn;        /* function name ("" unknown) */
    char *file;      /* source file ("" unknown) */
    int line;        /* source line (0 unknown) */
    char *module;    /* native: the module's file name (libc.so.6); "" for Python frames */
    uint64_t offset; /* native: the pc's offset into its module (0 unknown); never part of a signature */
};

struct hang_thread {
    int tid;        /* native: the kernel's thread id; Python: the native id when known, else 0 */
    char *id;       /* Python: faulthandler's or py-spy's thread id ("0x00007f..."), "" for native threads */
    char *name;     /* native: /proc comm; Python: the thread's name when known */
    char *state;    /* native: /proc state letter (R S D T t Z ...), "" unknown */
    char *wchan;    /* native: the kernel function it waits in ("" unknown or running) */
    char *error;    /* why its frames are missing or partial ("" none) */
    int current;    /* Python: the thread that says where the process is: faulthandler's "Current thread" (the one
                     * that took the signal), py-spy's thread whose native id is the pid */
    int cut;        /* frames beyond those kept were dropped */
    int nframes, cap;
    struct hang_frame *frames; /* innermost first */
};

struct hang_proc {
    int pid, ppid, root; /* root: the pid asked for whose tree this process is part of */
    char *comm;          /* /proc comm */
    char *exe;           /* /proc exe (what it runs) */
    char *state;
    char *error;         /* why native stacks are missing or partial ("" none) */
    int python;          /* the executable looks like CPython (python*) */
    int threads_total;   /* threads the process had; threads holds at most HANG_THREADS_MAX */
    int nthreads, tcap;
    struct hang_thread *threads; /* native; the main thread (tid == pid) first when captured */
    char *py_source;             /* "py-spy" or "faulthandler" or "" */
    char *py_error;              /* why Python stacks are missing ("" none) */
    int npy, pcap;
    struct hang_thread *py;      /* Python threads */
};

struct hang_trace {
    int nprocs, cap;
    struct hang_proc *procs;
    size_t bytes; /* string bytes held, at most HANG_TRACE_BYTES_MAX */
    char *cut;    /* what was dropped to fit a bound ("" nothing) */
};

struct hang_trace *hang_trace_new(void);
void hang_trace_destroy(struct hang_trace **t);

/* A new process (its strings ""), or NULL (HANG_PROCS_MAX reached, out of memory). */
struct hang_proc *hang_trace_add_proc(struct hang_trace *t, int pid, int ppid, int root);
/* The process of that pid, or NULL. */
struct hang_proc *hang_trace_find(struct hang_trace *t, int pid);
/* A new native (py 0) or Python (py 1) thread of p, or NULL (its bound reached, out of memory). */
struct hang_thread *hang_trace_add_thread(struct hang_trace *t, struct hang_proc *p, int py, int tid);
/* Drops p's Python threads (before a fresher source replaces them). */
void hang_trace_clear_python(struct hang_trace *t, struct hang_proc *p);
/* Drops every thread's frames (marking it cut), and with keep_threads 0 the threads themselves (Python and native):
 * what is left is the processes' headers. */
void hang_trace_strip(struct hang_trace *t, int keep_threads);
/* Appends a frame (strings may be NULL); 0, or -1 when the thread is full or the trace's byte budget is spent
 * (the thread is then marked cut). */
int hang_trace_add_frame(struct hang_trace *t, struct hang_thread *th, const char *fn, const char *file, int line,
                         const char *module, uint64_t offset);
/* Replaces *slot (one of the trace's strings) with a bounded, sanitised copy of s (NULL ""): at most cap - 1 bytes,
 * cut ones ending in "...", control characters and invalid UTF-8 as '?'. 0, or -1 out of memory (slot kept). */
int hang_trace_set(struct hang_trace *t, char **slot, const char *s, size_t cap);
/* printf into *slot, bounded by cap like hang_trace_set. */
int hang_trace_setf(struct hang_trace *t, char **slot, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Moves every process of src into dst: a pid dst already holds gains src's threads, Python threads and errors (those
 * dst does not have yet). 0, or -1 when dst is full (what fitted was moved). src is emptied. */
int hang_trace_merge(struct hang_trace *dst, struct hang_trace *src);
/* A new trace holding copies of the processes of root's tree, or NULL (out of memory). */
struct hang_trace *hang_trace_root(const struct hang_trace *t, int root);

/* The process that says where the rank is: the first with Python frames, else the first CPython one, else the
 * first that is not a wrapper (sh, bash, env, timeout, ...) with exactly one child, else the first; -1 if none. */
int hang_trace_primary(const struct hang_trace *t);
/* The main native thread of p: tid == pid, else (it exited, or has no frames) the first with frames, else the
 * first; -1 if none. */
int hang_trace_main_native(const struct hang_proc *p);
/* The main Python thread of p (faulthandler's current one, else the first); -1 if none. */
int hang_trace_main_python(const struct hang_proc *p);

#endif
