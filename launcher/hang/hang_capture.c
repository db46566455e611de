/* hang_capture: tree walk under ptrace, libdwfl unwinding and symbolisation (cached per pc), parts emitted as they
 * are done so that a capture killed at its deadline has already given what it found. */
#include "launcher/hang/hang_capture.h"

#include "launcher/hang/hang_proc.h"

#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_CACHE 512 /* pcs remembered per process: threads waiting in one place share them */

struct s_sym {
    uint64_t pc; /* 0: empty */
    int line;
    uint64_t offset;
    char fn[HANG_STR_MAX + 4], file[HANG_STR_MAX + 4], module[HANG_SHORT_MAX];
};

struct s_unwind {
    const struct hang_dw *dw;
    Dwfl *dwfl;
    struct hang_trace *t;
    struct hang_thread *th;
    int64_t deadline_ms;
    struct s_sym *cache;
};

static const char *s_base(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path ? path : "";
}

/* What is known about pc (adj: the address inside the call instruction for callers). */
static void s_symbolise(struct s_unwind *u, uint64_t pc, uint64_t adj, struct s_sym *s)
{
    char dem[HANG_STR_MAX * 2];
    memset(s, 0, sizeof *s);
    s->pc = pc;
    Dwfl_Module *mod = u->dw->addrmodule(u->dwfl, adj);
    if (!mod)
        return;
    Dwarf_Addr start = 0;
    const char *mname = u->dw->module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
    snprintf(s->module, sizeof s->module, "%s", s_base(mname));
    s->offset = adj - start;
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = u->dw->module_addrinfo(mod, adj, &off, &sym, NULL, NULL, NULL);
    if (name) {
        snprintf(s->fn, sizeof s->fn, "%s", hang_dw_demangle(u->dw, name, dem, sizeof dem));
        char *ver = strchr(s->fn, '@'); /* __libc_start_main@@GLIBC_2.34: the version says nothing here */
        if (ver && ver != s->fn)
            *ver = '\0';
    }
    Dwfl_Line *line = u->dw->module_getsrc(mod, adj);
    int lineno = 0;
    const char *file = line ? u->dw->lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (file) {
        snprintf(s->file, sizeof s->file, "%s", file);
        s->line = lineno;
    }
}

static int s_frame(Dwfl_Frame *state, void *arg)
{
    struct s_unwind *u = arg;
    Dwarf_Addr pc;
    bool activation = false;
    if (!u->dw->frame_pc(state, &pc, &activation))
        return DWARF_CB_ABORT;
    if (hang_proc_now_ms() > u->deadline_ms) {
        u->th->cut = 1;
        hang_trace_set(u->t, &u->th->error, "the capture's deadline passed: outer frames are missing", HANG_ERR_MAX);
        return DWARF_CB_ABORT;
    }
    uint64_t adj = activation || pc == 0 ? pc : pc - 1;
    struct s_sym *s = &u->cache[(pc ^ (pc >> 12)) % S_CACHE], mine;
    if (s->pc != pc) {
        s_symbolise(u, pc, adj, &mine);
        *s = mine;
    }
    if (hang_trace_add_frame(u->t, u->th, s->fn, s->file, s->line, s->module, s->offset) < 0)
        return DWARF_CB_ABORT;
    return DWARF_CB_OK;
}

/* The header of a process part: pid, comm, exe, state, threads. */
static struct hang_proc *s_header(struct hang_trace *t, int pid, int ppid, int root, char st, int total,
                                  const char *error)
{
    char buf[HANG_STR_MAX], state[2] = { st, '\0' };
    struct hang_proc *p = hang_trace_add_proc(t, pid, ppid, root);
    if (!p)
        return NULL;
    hang_proc_read(pid, "comm", buf, sizeof buf);
    hang_trace_set(t, &p->comm, buf, HANG_SHORT_MAX);
    p->python = hang_proc_exe(pid, buf, sizeof buf);
    hang_trace_set(t, &p->exe, buf, HANG_STR_MAX);
    hang_trace_set(t, &p->state, state, HANG_SHORT_MAX);
    hang_trace_set(t, &p->error, error, HANG_ERR_MAX);
    p->threads_total = total;
    return p;
}

static int s_emit(struct hang_trace **part, hang_capture_emit_fn emit, void *arg)
{
    int rc = emit(*part, arg);
    hang_trace_destroy(part);
    return rc;
}

/* One thread of a held process: its /proc facts, its frames or why there are none. */
static int s_thread(const struct hang_dw *dw, Dwfl *dwfl, const struct hang_hold *h, int i, const char *dwfl_err,
                    int64_t deadline_ms, struct s_sym *cache, hang_capture_emit_fn emit, void *arg)
{
    char buf[HANG_ERR_MAX], name[64], state[2] = "?";
    int tid = h->tid[i];
    struct hang_trace *t = hang_trace_new();
    struct hang_proc *p = t ? hang_trace_add_proc(t, h->pid, 0, 0) : NULL;
    struct hang_thread *th = p ? hang_trace_add_thread(t, p, 0, tid) : NULL;
    if (!th) {
        hang_trace_destroy(&t);
        return 0;
    }
    snprintf(name, sizeof name, "task/%d/comm", tid);
    hang_proc_read(h->pid, name, buf, sizeof buf);
    hang_trace_set(t, &th->name, buf, HANG_SHORT_MAX);
    state[0] = h->state[i]; /* as it was before it was seized */
    hang_trace_set(t, &th->state, state, HANG_SHORT_MAX);
    hang_trace_set(t, &th->wchan, h->wchan[i], HANG_SHORT_MAX);
    hang_proc_why(h, i, buf, sizeof buf);
    if (buf[0]) {
        hang_trace_set(t, &th->error, buf, HANG_ERR_MAX);
    } else if (dwfl_err) {
        hang_trace_set(t, &th->error, dwfl_err, HANG_ERR_MAX);
    } else {
        struct s_unwind u = { .dw = dw, .dwfl = dwfl, .t = t, .th = th, .deadline_ms = deadline_ms, .cache = cache };
        if (dw->getthread_frames(dwfl, tid, s_frame, &u) < 0 && th->nframes == 0)
            hang_trace_setf(t, &th->error, HANG_ERR_MAX, "thread %d: unwinding failed: %s", tid, hang_dw_error(dw));
    }
    return s_emit(&t, emit, arg);
}

/* Unwinds every thread of a held process, then lets it go (before libdwfl's clean-up, which can take a while). */
static int s_unwind_proc(const struct hang_dw *dw, const char *dw_err, struct hang_hold *h, int64_t deadline_ms,
                         hang_capture_emit_fn emit, void *arg)
{
    char *debuginfo_path = NULL;
    const Dwfl_Callbacks cb = { .find_elf = dw ? dw->proc_find_elf : NULL,
                                .find_debuginfo = dw ? dw->find_debuginfo : NULL, .debuginfo_path = &debuginfo_path };
    char errbuf[HANG_ERR_MAX];
    const char *err = dw ? NULL : dw_err;
    Dwfl *dwfl = dw ? dw->begin(&cb) : NULL;
    struct s_sym *cache = calloc(S_CACHE, sizeof *cache);
    if (dw && (!dwfl || !cache)) {
        err = "out of memory for libdwfl";
    } else if (dw) {
        /* Through a stopped thread: a main thread that exited (a zombie leader) has no memory map left. */
        int via = h->pid;
        for (int i = h->n - 1; i >= 0; i--)
            via = h->st[i] == HANG_HOLD_STOPPED ? h->tid[i] : via;
        dw->report_begin(dwfl);
        int r = dw->proc_report(dwfl, via);
        dw->report_end(dwfl, NULL, NULL);
        if (r != 0 || dw->proc_attach(dwfl, via, true) != 0) {
            snprintf(errbuf, sizeof errbuf, "libdwfl cannot read pid %d's modules: %s", h->pid,
                     r > 0 ? strerror(r) : hang_dw_error(dw));
            err = errbuf;
        }
    }
    int rc = 0;
    for (int i = 0; i < h->n && rc == 0; i++)
        rc = s_thread(dw, dwfl, h, i, err, deadline_ms, cache, emit, arg);
    hang_proc_release(h);
    free(cache);
    if (dwfl)
        dw->end(dwfl);
    return rc;
}

int hang_capture_tree(const struct hang_dw *dw, const char *dw_err, int root, const struct hang_capture_opts *o,
                      hang_capture_emit_fn emit, void *arg, int *py_pids)
{
    static struct hang_hold held[HANG_TREE_MAX];
    int pids[HANG_TREE_MAX], parents[HANG_TREE_MAX], nq = 1, nheld = 0, npy = 0, rc = 0;
    char err[HANG_ERR_MAX];
    pids[0] = root, parents[0] = 0;
    /* Breadth first: hold each process, then list its children while it is held (a stopped parent cannot reap,
     * so its children's pids cannot be reused under us). */
    for (int q = 0; q < nq && rc == 0; q++) {
        int pid = pids[q], ppid = 0;
        char pstate = '?';
        if ((hang_proc_stat(pid, pid, &pstate, &ppid) < 0 && q > 0) || (q > 0 && ppid != parents[q]))
            continue; /* gone, or no longer the child of the one we hold */
        /* At most half of what is left: a process that never stops leaves time for its children and the unwinding. */
        int64_t now = hang_proc_now_ms(), half = o->deadline_ms > now ? (o->deadline_ms - now) / 2 : 0;
        int64_t stop_by = now + (o->stop_ms < half ? o->stop_ms : half);
        err[0] = '\0';
        struct hang_hold *h = &held[nheld];
        int holding = hang_proc_hold(h, pid, stop_by, err, sizeof err) == 0;
        nheld += holding;
        if (q > 0 && (hang_proc_stat(pid, pid, NULL, &ppid) < 0 || ppid != parents[q])) {
            if (holding)
                hang_proc_release(&held[--nheld]);
            continue;
        }
        struct hang_trace *t = hang_trace_new();
        struct hang_proc *p = t ? s_header(t, pid, ppid, root, pstate, h->total, err) : NULL;
        if (p && p->python && npy < HANG_TREE_MAX)
            py_pids[npy++] = pid;
        if (t)
            rc = s_emit(&t, emit, arg);
        int kids[HANG_TREE_MAX];
        int nk = hang_proc_children(pid, kids, HANG_TREE_MAX);
        for (int k = 0; k < nk && nq < HANG_TREE_MAX; k++)
            pids[nq] = kids[k], parents[nq++] = pid;
    }
    /* Each one is let go once unwound: its children are held already, so their pids stay theirs. */
    for (int i = 0; i < nheld && rc == 0; i++)
        rc = s_unwind_proc(dw, dw_err, &held[i], o->deadline_ms, emit, arg);
    for (int i = 0; i < nheld; i++)
        hang_proc_release(&held[i]); /* those left when emit failed */
    return npy;
}
