/* hang_text: a bounded text buffer and the text of a trace. */
#include "launcher/hang/hang_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends len bytes of s. */
void hang_text_append(struct hang_text *b, const char *s, size_t len)
{
    if (b->full || b->oom)
        return;
    if (b->len + len + 1 > b->max) {
        b->full = 1;
        return;
    }
    if (b->len + len + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + len + 1)
            nc *= 2;
        char *p = realloc(b->p, nc);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p, b->cap = nc;
    }
    memcpy(b->p + b->len, s, len);
    b->len += len;
    b->p[b->len] = '\0';
}

void hang_text_put(struct hang_text *b, const char *fmt, ...)
{
    char tmp[4096]; /* longer than any line put: a frame's strings are bounded */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    hang_text_append(b, tmp, n < 0 ? 0 : (size_t)n >= sizeof tmp ? sizeof tmp - 1 : (size_t)n);
}

char *hang_text_take(struct hang_text *b)
{
    if (b->oom || !b->p) {
        free(b->p);
        return b->oom ? NULL : strdup("");
    }
    return b->p;
}

static void s_thread_text(struct hang_text *b, const struct hang_thread *th, int py)
{
    char where[HANG_STR_MAX * 2 + 32], tid[32] = "";
    if (py && th->tid)
        snprintf(tid, sizeof tid, " tid %d", th->tid);
    if (py)
        hang_text_put(b, "    Python thread %s%s%s%s%s:\n", th->id[0] ? th->id : "?", tid, th->name[0] ? " " : "",
                      th->name,
              th->current ? " (current)" : "");
    else
        hang_text_put(b, "    thread %d \"%s\"%s%s%s%s:\n", th->tid, th->name, th->state[0] ? " state " : "", th->state,
              th->wchan[0] ? " in kernel " : "", th->wchan);
    if (th->error[0])
        hang_text_put(b, "      (%s)\n", th->error);
    for (int i = 0; i < th->nframes; i++) {
        const struct hang_frame *f = &th->frames[i];
        if (f->file[0])
            snprintf(where, sizeof where, "%s:%d", f->file, f->line);
        else
            snprintf(where, sizeof where, "+0x%llx", (unsigned long long)f->offset);
        hang_text_put(b, "      #%-2d %s  %s%s%s\n", i, f->fn[0] ? f->fn : "??", py ? "" : f->module, py ? "" : " ",
                      where);
    }
    if (th->cut)
        hang_text_put(b, "      ... (outer frames cut)\n");
}

void hang_text_trace(struct hang_text *b, const struct hang_trace *t)
{
    if (t->cut[0])
        hang_text_put(b, "  (left out to fit: %s)\n", t->cut);
    for (int i = 0; i < t->nprocs; i++) {
        const struct hang_proc *p = &t->procs[i];
        hang_text_put(b, "  process %d %s (%s), parent %d, state %s, %d thread%s%s\n", p->pid,
                      p->comm[0] ? p->comm : "?",
              p->exe[0] ? p->exe : "?", p->ppid, p->state[0] ? p->state : "?", p->threads_total,
              p->threads_total == 1 ? "" : "s", p->python ? ", CPython" : "");
        if (p->error[0])
            hang_text_put(b, "    (%s)\n", p->error);
        if (p->npy || p->py_error[0])
            hang_text_put(b, "    Python stacks from %s%s%s%s\n", p->py_source[0] ? p->py_source : "?",
                  p->py_error[0] ? " (" : "", p->py_error, p->py_error[0] ? ")" : "");
        for (int k = 0; k < p->npy; k++)
            s_thread_text(b, &p->py[k], 1);
        for (int k = 0; k < p->nthreads; k++)
            s_thread_text(b, &p->threads[k], 0);
        if (p->threads_total > p->nthreads && p->nthreads > 0)
            hang_text_put(b, "    ... %d more threads not unwound\n", p->threads_total - p->nthreads);
    }
}

/* t's text (after a header naming rank when it is >= 0) if it fits with reserve bytes left; 0, or -1 (left out). */
int hang_text_trace_within(struct hang_text *b, const struct hang_trace *t, size_t reserve, int rank)
{
    struct hang_text st = { .max = b->len + reserve < b->max ? b->max - b->len - reserve : 0 };
    if (rank >= 0)
        hang_text_put(&st, " stacks of rank %d (the group shares the main thread; other threads may differ):\n", rank);
    hang_text_trace(&st, t);
    int fits = !st.full && !st.oom && st.p;
    if (fits)
        hang_text_append(b, st.p, st.len);
    free(st.p);
    return fits ? 0 : -1;
}

