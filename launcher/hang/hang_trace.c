/* hang_trace: the bounded model of a rank's stacks: processes, threads, frames, sanitised strings, merging. */
#include "launcher/hang/hang_trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char s_empty[] = "";

struct hang_trace *hang_trace_new(void)
{
    struct hang_trace *t = calloc(1, sizeof *t);
    if (t)
        t->cut = s_empty;
    return t;
}

static void s_str_free(char *s)
{
    if (s != s_empty)
        free(s);
}

/* Frees th's frames' strings; nframes becomes 0 (the array is kept). */
static void s_frames_free(struct hang_thread *th)
{
    for (int i = 0; i < th->nframes; i++) {
        s_str_free(th->frames[i].fn);
        s_str_free(th->frames[i].file);
        s_str_free(th->frames[i].module);
    }
    th->nframes = 0;
}

static void s_thread_free(struct hang_thread *th)
{
    s_frames_free(th);
    free(th->frames);
    s_str_free(th->id);
    s_str_free(th->name);
    s_str_free(th->state);
    s_str_free(th->wchan);
    s_str_free(th->error);
}

static void s_proc_free(struct hang_proc *p)
{
    for (int i = 0; i < p->nthreads; i++)
        s_thread_free(&p->threads[i]);
    for (int i = 0; i < p->npy; i++)
        s_thread_free(&p->py[i]);
    free(p->threads);
    free(p->py);
    s_str_free(p->comm);
    s_str_free(p->exe);
    s_str_free(p->state);
    s_str_free(p->error);
    s_str_free(p->py_source);
    s_str_free(p->py_error);
}

void hang_trace_destroy(struct hang_trace **t)
{
    if (!t || !*t)
        return;
    for (int i = 0; i < (*t)->nprocs; i++)
        s_proc_free(&(*t)->procs[i]);
    free((*t)->procs);
    s_str_free((*t)->cut);
    free(*t);
    *t = NULL;
}

/* Grows *arr (of elem-sized items, *cap of them) to hold n + 1, at most max; 0, or -1. */
static int s_grow(void **arr, int *cap, int n, int max, size_t elem)
{
    if (n >= max)
        return -1;
    if (n < *cap)
        return 0;
    int nc = *cap ? *cap * 2 : 4;
    nc = nc > max ? max : nc;
    void *a = realloc(*arr, (size_t)nc * elem);
    if (!a)
        return -1;
    *arr = a;
    *cap = nc;
    return 0;
}

struct hang_proc *hang_trace_add_proc(struct hang_trace *t, int pid, int ppid, int root)
{
    if (s_grow((void **)&t->procs, &t->cap, t->nprocs, HANG_PROCS_MAX, sizeof *t->procs) < 0)
        return NULL;
    struct hang_proc *p = &t->procs[t->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid, p->ppid = ppid, p->root = root;
    p->comm = p->exe = p->state = p->error = p->py_source = p->py_error = s_empty;
    return p;
}

struct hang_proc *hang_trace_find(struct hang_trace *t, int pid)
{
    for (int i = 0; i < t->nprocs; i++)
        if (t->procs[i].pid == pid)
            return &t->procs[i];
    return NULL;
}

struct hang_thread *hang_trace_add_thread(struct hang_trace *t, struct hang_proc *p, int py, int tid)
{
    (void)t;
    struct hang_thread **arr = py ? &p->py : &p->threads;
    int *n = py ? &p->npy : &p->nthreads;
    if (s_grow((void **)arr, py ? &p->pcap : &p->tcap, *n, py ? HANG_PY_THREADS_MAX : HANG_THREADS_MAX,
               sizeof **arr) < 0)
        return NULL;
    struct hang_thread *th = &(*arr)[(*n)++];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->id = th->name = th->state = th->wchan = th->error = s_empty;
    return th;
}

static size_t s_thread_bytes(const struct hang_thread *th)
{
    size_t n = strlen(th->id) + strlen(th->name) + strlen(th->state) + strlen(th->wchan) + strlen(th->error);
    for (int i = 0; i < th->nframes; i++)
        n += strlen(th->frames[i].fn) + strlen(th->frames[i].file) + strlen(th->frames[i].module);
    return n;
}

void hang_trace_clear_python(struct hang_trace *t, struct hang_proc *p)
{
    for (int i = 0; i < p->npy; i++) {
        size_t n = s_thread_bytes(&p->py[i]);
        t->bytes -= n < t->bytes ? n : t->bytes;
        s_thread_free(&p->py[i]);
    }
    p->npy = 0;
}

void hang_trace_strip(struct hang_trace *t, int keep_threads)
{
    for (int i = 0; i < t->nprocs; i++) {
        struct hang_proc *p = &t->procs[i];
        struct hang_thread *ths[2] = { p->threads, p->py };
        int *ns[2] = { &p->nthreads, &p->npy };
        for (int py = 0; py < 2; py++) {
            for (int k = 0; k < *ns[py]; k++) {
                struct hang_thread *th = &ths[py][k];
                size_t n = s_thread_bytes(th);
                if (keep_threads) {
                    th->cut |= th->nframes > 0;
                    s_frames_free(th);
                    n -= s_thread_bytes(th);
                } else {
                    s_thread_free(th);
                }
                t->bytes -= n < t->bytes ? n : t->bytes;
            }
            if (!keep_threads)
                *ns[py] = 0;
        }
    }
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t s_utf8_len(const unsigned char *s, size_t left)
{
    size_t n = s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;
    if (n == 0 || n > left)
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
        (s[0] == 0xf4 && s[1] >= 0x90))
        return 0; /* overlong, surrogate, past U+10FFFF */
    return n;
}

int hang_trace_set(struct hang_trace *t, char **slot, const char *s, size_t cap)
{
    size_t len = s ? strnlen(s, cap + 4) : 0, room = cap - 1, o = 0;
    if (len == 0) {
        if (*slot != s_empty) {
            t->bytes -= strlen(*slot);
            s_str_free(*slot);
        }
        *slot = s_empty;
        return 0;
    }
    int cut = len > room;
    size_t keep = cut ? room - 3 : len;
    char *d = malloc(room + 1);
    if (!d)
        return -1;
    for (size_t i = 0; i < keep;) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80 ? 1 : s_utf8_len((const unsigned char *)s + i, keep - i);
        if (c < 0x20 || c == 0x7f || n == 0) {
            d[o++] = '?';
            i++;
            continue;
        }
        memcpy(d + o, s + i, n);
        o += n, i += n;
    }
    if (cut)
        memcpy(d + o, "...", 3), o += 3;
    d[o] = '\0';
    if (*slot != s_empty)
        t->bytes -= strlen(*slot);
    s_str_free(*slot);
    *slot = d;
    t->bytes += o;
    return 0;
}

int hang_trace_setf(struct hang_trace *t, char **slot, size_t cap, const char *fmt, ...)
{
    char buf[HANG_STR_MAX * 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return hang_trace_set(t, slot, buf, cap);
}

int hang_trace_add_frame(struct hang_trace *t, struct hang_thread *th, const char *fn, const char *file, int line,
                         const char *module, uint64_t offset)
{
    size_t need = (fn ? strnlen(fn, HANG_STR_MAX) : 0) + (file ? strnlen(file, HANG_STR_MAX) : 0) +
                  (module ? strnlen(module, HANG_SHORT_MAX) : 0);
    if (t->bytes + need > HANG_TRACE_BYTES_MAX ||
        s_grow((void **)&th->frames, &th->cap, th->nframes, HANG_FRAMES_MAX, sizeof *th->frames) < 0) {
        th->cut = 1;
        return -1;
    }
    struct hang_frame *f = &th->frames[th->nframes];
    f->fn = f->file = f->module = s_empty;
    f->line = line > 0 ? line : 0;
    f->offset = offset;
    if (hang_trace_set(t, &f->fn, fn, HANG_STR_MAX) < 0 || hang_trace_set(t, &f->file, file, HANG_STR_MAX) < 0 ||
        hang_trace_set(t, &f->module, module, HANG_SHORT_MAX) < 0) {
        s_str_free(f->fn), s_str_free(f->file), s_str_free(f->module);
        th->cut = 1;
        return -1;
    }
    th->nframes++;
    return 0;
}

/* Moves thread arrays and strings from one process record to another (same pid). */
static int s_merge_proc(struct hang_trace *dst, struct hang_proc *d, struct hang_proc *s)
{
    int rc = 0;
    struct hang_thread **from[2] = { &s->threads, &s->py };
    int *nfrom[2] = { &s->nthreads, &s->npy };
    for (int py = 0; py < 2; py++) {
        for (int i = 0; i < *nfrom[py]; i++) {
            struct hang_thread *th = hang_trace_add_thread(dst, d, py, 0);
            if (!th) {
                rc = -1;
                s_thread_free(&(*from[py])[i]);
                continue;
            }
            *th = (*from[py])[i];
        }
        *nfrom[py] = 0;
    }
    char **ds[] = { &d->comm, &d->exe, &d->state, &d->error, &d->py_source, &d->py_error };
    char **ss[] = { &s->comm, &s->exe, &s->state, &s->error, &s->py_source, &s->py_error };
    for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++)
        if (**ds[k] == '\0' && **ss[k] != '\0') {
            s_str_free(*ds[k]);
            *ds[k] = *ss[k];
            *ss[k] = s_empty;
        }
    d->python |= s->python;
    d->threads_total = d->threads_total > s->threads_total ? d->threads_total : s->threads_total;
    if (d->ppid == 0)
        d->ppid = s->ppid;
    return rc;
}

int hang_trace_merge(struct hang_trace *dst, struct hang_trace *src)
{
    int rc = 0;
    for (int i = 0; i < src->nprocs; i++) {
        struct hang_proc *s = &src->procs[i], *d = hang_trace_find(dst, s->pid);
        if (!d && (d = hang_trace_add_proc(dst, s->pid, s->ppid, s->root)) == NULL) {
            rc = -1;
            continue;
        }
        if (s_merge_proc(dst, d, s) < 0)
            rc = -1;
    }
    dst->bytes += src->bytes;
    for (int i = 0; i < src->nprocs; i++)
        s_proc_free(&src->procs[i]);
    src->nprocs = 0;
    src->bytes = 0;
    return rc;
}

static int s_copy_thread(struct hang_trace *t, struct hang_proc *p, int py, const struct hang_thread *s)
{
    struct hang_thread *th = hang_trace_add_thread(t, p, py, s->tid);
    if (!th)
        return -1;
    th->current = s->current, th->cut = s->cut;
    if (hang_trace_set(t, &th->id, s->id, HANG_SHORT_MAX) < 0 ||
        hang_trace_set(t, &th->name, s->name, HANG_SHORT_MAX) < 0 ||
        hang_trace_set(t, &th->state, s->state, HANG_SHORT_MAX) < 0 ||
        hang_trace_set(t, &th->wchan, s->wchan, HANG_SHORT_MAX) < 0 ||
        hang_trace_set(t, &th->error, s->error, HANG_ERR_MAX) < 0)
        return -1;
    for (int i = 0; i < s->nframes; i++) {
        const struct hang_frame *f = &s->frames[i];
        if (hang_trace_add_frame(t, th, f->fn, f->file, f->line, f->module, f->offset) < 0)
            return -1;
    }
    return 0;
}

struct hang_trace *hang_trace_root(const struct hang_trace *t, int root)
{
    struct hang_trace *r = hang_trace_new();
    for (int i = 0; r && i < t->nprocs; i++) {
        const struct hang_proc *s = &t->procs[i];
        if (s->root != root)
            continue;
        struct hang_proc *p = hang_trace_add_proc(r, s->pid, s->ppid, s->root);
        if (!p || hang_trace_set(r, &p->comm, s->comm, HANG_SHORT_MAX) < 0 ||
            hang_trace_set(r, &p->exe, s->exe, HANG_STR_MAX) < 0 ||
            hang_trace_set(r, &p->state, s->state, HANG_SHORT_MAX) < 0 ||
            hang_trace_set(r, &p->error, s->error, HANG_ERR_MAX) < 0 ||
            hang_trace_set(r, &p->py_source, s->py_source, HANG_SHORT_MAX) < 0 ||
            hang_trace_set(r, &p->py_error, s->py_error, HANG_ERR_MAX) < 0)
            goto fail;
        p->python = s->python, p->threads_total = s->threads_total;
        for (int k = 0; k < s->nthreads; k++)
            if (s_copy_thread(r, p, 0, &s->threads[k]) < 0)
                goto fail;
        for (int k = 0; k < s->npy; k++)
            if (s_copy_thread(r, p, 1, &s->py[k]) < 0)
                goto fail;
    }
    return r;
fail:
    hang_trace_destroy(&r);
    return NULL;
}

/* Programs that only start another one and wait for it. */
static int s_wrapper(const char *comm)
{
    static const char *const w[] = { "sh", "bash", "dash", "zsh", "ksh", "env", "timeout", "stdbuf", "nice",
                                     "numactl", "taskset", "chrt", "setsid", "time", "xargs" };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (strcmp(comm, w[i]) == 0)
            return 1;
    return 0;
}

int hang_trace_primary(const struct hang_trace *t)
{
    for (int i = 0; i < t->nprocs; i++)
        for (int k = 0; k < t->procs[i].npy; k++)
            if (t->procs[i].py[k].nframes > 0)
                return i;
    for (int i = 0; i < t->nprocs; i++)
        if (t->procs[i].python)
            return i;
    for (int i = 0; i < t->nprocs; i++) {
        int kids = 0;
        for (int k = 0; k < t->nprocs; k++)
            kids += t->procs[k].ppid == t->procs[i].pid && k != i;
        if (!(s_wrapper(t->procs[i].comm) && kids == 1))
            return i;
    }
    return t->nprocs > 0 ? 0 : -1;
}

int hang_trace_main_native(const struct hang_proc *p)
{
    int first = -1;
    for (int i = 0; i < p->nthreads; i++) {
        if (p->threads[i].tid == p->pid && p->threads[i].nframes > 0)
            return i;
        if (first < 0 && p->threads[i].nframes > 0)
            first = i;
    }
    return first >= 0 ? first : p->nthreads > 0 ? 0 : -1;
}

int hang_trace_main_python(const struct hang_proc *p)
{
    for (int i = 0; i < p->npy; i++)
        if (p->py[i].current)
            return i;
    return p->npy > 0 ? 0 : -1;
}
