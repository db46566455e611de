/* hang_group: signatures, groups, odd ones out, informative frames, rank ranges, the summary and the full text. */
#include "launcher/hang/hang_group.h"

#include "launcher/hang/hang_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_SUMMARY_GROUPS 8 /* groups named in the summary; the rest are counted */

struct s_member {
    const char *sig; /* "" without stacks */
    int rank, idx;
};

struct s_grp {
    int first, n, odd, rank0; /* rank0: its smallest rank (members are sorted by rank) */
};

struct hang_group {
    const struct hang_rank *ranks;
    int n, ngroups, nostack; /* nostack: members at the end of order without a signature */
    struct s_member *order;  /* grouped: groups by size, then the ranks without stacks */
    char **sigs;
    struct s_grp *groups;
};

/* The thread whose frames say where the rank is, and its process; NULL when there is none with frames. */
static const struct hang_thread *s_main(const struct hang_trace *t, const struct hang_proc **proc, int *py)
{
    int pi = t ? hang_trace_primary(t) : -1;
    if (pi < 0)
        return NULL;
    const struct hang_proc *p = *proc = &t->procs[pi];
    int k = hang_trace_main_python(p);
    if (k >= 0 && p->py[k].nframes > 0) {
        *py = 1;
        return &p->py[k];
    }
    k = hang_trace_main_native(p);
    *py = 0;
    return k >= 0 && p->threads[k].nframes > 0 ? &p->threads[k] : NULL;
}

/* "P fn\tfile\tline\n" per Python frame, "N fn\tmodule\tfile\n" per native one (no lines: a spinning thread's
 * pc moves within its function); NULL without frames. */
static char *s_signature(const struct hang_trace *t)
{
    const struct hang_proc *p;
    int py;
    const struct hang_thread *th = s_main(t, &p, &py);
    if (!th)
        return NULL;
    struct hang_text b = { .max = (size_t)HANG_FRAMES_MAX * (2 * HANG_STR_MAX + HANG_SHORT_MAX + 32) };
    for (int i = 0; i < th->nframes; i++) {
        const struct hang_frame *f = &th->frames[i];
        if (py)
            hang_text_put(&b, "P %s\t%s\t%d\n", f->fn, f->file, f->line);
        else
            hang_text_put(&b, "N %s\t%s\t%s\n", f->fn, f->module, f->fn[0] ? f->file : "");
    }
    return hang_text_take(&b);
}

static int s_has(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

static int s_begins(const char *s, const char *pre)
{
    return strncmp(s, pre, strlen(pre)) == 0;
}

/* Frames nobody wants named: the C library, the dynamic loader, the interpreter, Python's standard library, the
 * sanitizers' interceptors. */
static int s_internal(const struct hang_frame *f, int py)
{
    if (py) {
        int stdlib = s_has(f->file, "/lib/python") && !s_has(f->file, "-packages/");
        return stdlib || s_begins(f->file, "<frozen ") || f->file[0] == '\0';
    }
    static const char *const mods[] = { "libc.so", "libc-", "libpthread", "ld-linux", "ld-", "libpython",
                                        "python", "libstdc++", "libgcc_s", "linux-vdso", "[vdso]", "libdl",
                                        "librt", "libm.so", "libasan", "libubsan", "libtsan", "liblsan" };
    for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
        if (s_begins(f->module, mods[i]))
            return 1;
    return f->fn[0] == '\0' && f->module[0] == '\0';
}

/* Frames of libraries: site-packages for Python, shared objects for native code. */
static int s_library(const struct hang_frame *f, int py)
{
    return py ? s_has(f->file, "/site-packages/") || s_has(f->file, "/dist-packages/") : s_has(f->module, ".so");
}

/* A file as the summary shows it: from the package for libraries, else its base name. */
static const char *s_short(const char *file)
{
    const char *p = strstr(file, "-packages/");
    if (p)
        return p + 10;
    p = strrchr(file, '/');
    return p ? p + 1 : file;
}

static void s_where(const struct hang_frame *f, int py, int with_fn, char *buf, size_t cap)
{
    if (f->file[0] && (py || f->line > 0))
        snprintf(buf, cap, "%s%s%s:%d", with_fn && f->fn[0] ? f->fn : "", with_fn && f->fn[0] ? " in " : "",
                 s_short(f->file), f->line);
    else if (f->fn[0])
        snprintf(buf, cap, "%s in %s", f->fn, f->module[0] ? f->module : "?");
    else
        snprintf(buf, cap, "%s+0x%llx", f->module[0] ? f->module : "?", (unsigned long long)f->offset);
}

/* The most informative frame of a rank (and the user frame below it when it is in a library). */
static void s_headline(const struct hang_trace *t, char *buf, size_t cap)
{
    const struct hang_proc *p;
    int py, h = -1, u = -1;
    const struct hang_thread *th = s_main(t, &p, &py);
    char a[HANG_STR_MAX * 2 + 16], b[HANG_STR_MAX * 2 + 16];
    if (!th) {
        snprintf(buf, cap, "no frames");
        return;
    }
    for (int i = 0; i < th->nframes && h < 0; i++)
        if (!s_internal(&th->frames[i], py))
            h = i;
    if (h < 0)
        h = 0;
    for (int i = h; i < th->nframes && u < 0; i++)
        if (!s_internal(&th->frames[i], py) && !s_library(&th->frames[i], py))
            u = i;
    s_where(&th->frames[h], py, 1, a, sizeof a);
    if (u > h) {
        s_where(&th->frames[u], py, 0, b, sizeof b);
        snprintf(buf, cap, "%s <- %s", a, b);
    } else {
        snprintf(buf, cap, "%s", a);
    }
}

static int s_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

size_t hang_group_ranges(const int *ranks, int n, char *buf, size_t cap)
{
    int *r = n > 0 ? malloc((size_t)n * sizeof *r) : NULL;
    size_t o = 0;
    if (cap == 0)
        return 0;
    buf[0] = '\0';
    if (!r)
        return 0;
    memcpy(r, ranks, (size_t)n * sizeof *r);
    qsort(r, (size_t)n, sizeof *r, s_cmp_int);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && (r[j + 1] == r[j] || r[j + 1] == r[j] + 1))
            j++;
        char part[32];
        int len = r[j] == r[i] ? snprintf(part, sizeof part, "%s%d", o ? "," : "", r[i])
                               : snprintf(part, sizeof part, "%s%d-%d", o ? "," : "", r[i], r[j]);
        if (o + (size_t)len + 5 > cap) { /* room for ",..." */
            if (o + 5 <= cap)
                o += (size_t)snprintf(buf + o, cap - o, ",...");
            break;
        }
        memcpy(buf + o, part, (size_t)len + 1);
        o += (size_t)len;
        i = j + 1;
    }
    free(r);
    return o;
}

static int s_cmp_member(const void *a, const void *b)
{
    const struct s_member *x = a, *y = b;
    if (!x->sig[0] != !y->sig[0])
        return x->sig[0] ? -1 : 1;
    int c = strcmp(x->sig, y->sig);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

/* Bigger groups first, then the one with the smallest rank. */
static int s_cmp_group(const void *a, const void *b)
{
    const struct s_grp *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return (x->rank0 > y->rank0) - (x->rank0 < y->rank0);
}

hang_group_t *hang_group_new(const struct hang_rank *ranks, int n)
{
    hang_group_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->ranks = ranks, g->n = n;
    g->order = calloc((size_t)(n ? n : 1), sizeof *g->order);
    g->sigs = calloc((size_t)(n ? n : 1), sizeof *g->sigs);
    g->groups = calloc((size_t)(n ? n : 1), sizeof *g->groups);
    struct s_member *tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    if (!g->order || !g->sigs || !g->groups || !tmp)
        goto fail;
    for (int i = 0; i < n; i++) {
        g->sigs[i] = s_signature(ranks[i].trace);
        g->order[i] = (struct s_member){ .sig = g->sigs[i] ? g->sigs[i] : "", .rank = ranks[i].rank, .idx = i };
    }
    qsort(g->order, (size_t)n, sizeof *g->order, s_cmp_member);
    for (int i = 0; i < n; i++) {
        if (!g->order[i].sig[0]) {
            g->nostack = n - i;
            break;
        }
        if (i == 0 || strcmp(g->order[i].sig, g->order[i - 1].sig) != 0)
            g->groups[g->ngroups++] = (struct s_grp){ .first = i, .rank0 = g->order[i].rank };
        g->groups[g->ngroups - 1].n++;
    }
    qsort(g->groups, (size_t)g->ngroups, sizeof *g->groups, s_cmp_group);
    /* Lay the members out in group order, so that group k's ranks are contiguous again. */
    int o = 0;
    for (int k = 0; k < g->ngroups; k++) {
        memcpy(tmp + o, g->order + g->groups[k].first, (size_t)g->groups[k].n * sizeof *tmp);
        g->groups[k].first = o;
        o += g->groups[k].n;
    }
    memcpy(g->order, tmp, (size_t)o * sizeof *tmp);
    free(tmp);
    int stacked = n - g->nostack;
    for (int k = 0; k < g->ngroups; k++)
        g->groups[k].odd = stacked >= 3 && g->groups[0].n >= 2 && g->groups[0].n * 2 >= stacked &&
                           g->groups[k].n == 1;
    return g;
fail:
    free(tmp);
    hang_group_destroy(&g);
    return NULL;
}

void hang_group_destroy(hang_group_t **g)
{
    if (!g || !*g)
        return;
    for (int i = 0; (*g)->sigs && i < (*g)->n; i++)
        free((*g)->sigs[i]);
    free((*g)->sigs);
    free((*g)->order);
    free((*g)->groups);
    free(*g);
    *g = NULL;
}

int hang_group_count(const hang_group_t *g)
{
    return g->ngroups;
}

int hang_group_odd(const hang_group_t *g, int *out, int cap)
{
    int n = 0;
    for (int k = 0; k < g->ngroups && n < cap; k++)
        if (g->groups[k].odd)
            out[n++] = g->order[g->groups[k].first].rank;
    return n;
}

/* Stack names: A..Z, then AA, AB, ... */
static void s_name(int k, char *buf, size_t cap)
{
    if (k < 26)
        snprintf(buf, cap, "%c", 'A' + k);
    else
        snprintf(buf, cap, "%c%c", 'A' + (k / 26 - 1) % 26, 'A' + k % 26);
}

/* The ranks of members [first, first + n) as ranges. */
static void s_ranks(const hang_group_t *g, int first, int n, char *buf, size_t cap)
{
    int *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    buf[0] = '\0';
    if (!r)
        return;
    for (int i = 0; i < n; i++)
        r[i] = g->order[first + i].rank;
    hang_group_ranges(r, n, buf, cap);
    free(r);
}

static const char *s_str(const char *s)
{
    return s ? s : "";
}

char *hang_group_summary(const hang_group_t *g)
{
    struct hang_text b = { .max = HANG_GROUP_SUMMARY_MAX };
    char ranks[256], head[HANG_STR_MAX * 4 + 64], name[8];
    int odd = 0;
    for (int k = 0; k < g->ngroups; k++)
        odd += g->groups[k].odd;
    for (int k = 0; k < g->ngroups && k < S_SUMMARY_GROUPS; k++) {
        const struct s_grp *gr = &g->groups[k];
        s_ranks(g, gr->first, gr->n, ranks, sizeof ranks);
        s_headline(g->ranks[g->order[gr->first].idx].trace, head, sizeof head);
        s_name(k, name, sizeof name);
        hang_text_put(&b, "%s%s %s%s stack %s (%s)%s", k ? "; " : "", gr->n > 1 ? "ranks" : "rank", ranks,
              gr->n > 1 ? " share" : ":", name, head,
              gr->odd ? odd == 1 ? " <- the odd one out" : " <- odd one out" : "");
    }
    if (g->ngroups > S_SUMMARY_GROUPS)
        hang_text_put(&b, "; %d more stacks", g->ngroups - S_SUMMARY_GROUPS);
    if (g->nostack) {
        int first = g->n - g->nostack;
        const struct hang_rank *r = &g->ranks[g->order[first].idx];
        const char *why = r->error && r->error[0] ? r->error
                          : r->trace && r->trace->nprocs && r->trace->procs[0].error[0] ? r->trace->procs[0].error
                          : "nothing was captured";
        s_ranks(g, first, g->nostack, ranks, sizeof ranks);
        if (g->nostack > 1)
            hang_text_put(&b, "%sranks %s: no stack (rank %d: %.200s)", g->ngroups ? "; " : "", ranks, r->rank, why);
        else
            hang_text_put(&b, "%srank %s: no stack (%.200s)", g->ngroups ? "; " : "", ranks, why);
    }
    if (b.full && b.len + 4 <= b.max) { /* cut: say so */
        b.full = 0;
        hang_text_put(&b, " ...");
    }
    return hang_text_take(&b);
}

static void s_member_line(struct hang_text *b, const struct hang_rank *r)
{
    hang_text_put(b, "  rank %d  node %s  GPU %s  pid %d%s%s\n", r->rank, s_str(r->node)[0] ? r->node : "?",
          s_str(r->gpu)[0] ? r->gpu : "-", r->pid, r->error && r->error[0] ? "  " : "", s_str(r->error));
}

char *hang_group_text(const hang_group_t *g, int generation)
{
    struct hang_text b = { .max = HANG_GROUP_TEXT_MAX - 256 }; /* room for the closing note */
    char name[8], head[HANG_STR_MAX * 4 + 64], ranks[256];
    char *summary = hang_group_summary(g);
    int stacks_left_out = 0;
    hang_text_put(&b, "plaunch hang report, generation %d: %d rank%s, %d distinct stack%s\n\n", generation, g->n,
          g->n == 1 ? "" : "s", g->ngroups, g->ngroups == 1 ? "" : "s");
    hang_text_put(&b, "%s\n", summary ? summary : "");
    free(summary);
    for (int k = 0; k < g->ngroups; k++) {
        const struct s_grp *gr = &g->groups[k];
        const struct hang_rank *first = &g->ranks[g->order[gr->first].idx];
        s_name(k, name, sizeof name);
        s_ranks(g, gr->first, gr->n, ranks, sizeof ranks);
        s_headline(first->trace, head, sizeof head);
        hang_text_put(&b, "\n== stack %s: %d rank%s (%s)%s: %s\n", name, gr->n, gr->n == 1 ? "" : "s", ranks,
              gr->odd ? ", the odd one out" : "", head);
        for (int i = 0; i < gr->n; i++)
            s_member_line(&b, &g->ranks[g->order[gr->first + i].idx]);
        /* Keep room for the headers and ranks of the groups still to come: stacks go while the budget lasts. */
        size_t later = (size_t)(g->ngroups - k) * (sizeof head + 320) + (size_t)(g->n - gr->first) * 160;
        stacks_left_out += hang_text_trace_within(&b, first->trace, later, first->rank) < 0;
    }
    if (g->nostack) {
        hang_text_put(&b, "\n== no stack: %d rank%s\n", g->nostack, g->nostack == 1 ? "" : "s");
        for (int i = g->n - g->nostack; i < g->n; i++) {
            const struct hang_rank *r = &g->ranks[g->order[i].idx];
            s_member_line(&b, r);
            if (r->trace)
                hang_text_trace_within(&b, r->trace, (size_t)(g->n - i) * 160, -1);
        }
    }
    int cut = b.full;
    b.full = 0, b.max = HANG_GROUP_TEXT_MAX;
    if (stacks_left_out || cut)
        hang_text_put(&b, "\n(%s%d group%s were left out to keep this file under %u bytes)\n",
              cut ? "ranks and stacks of some groups were cut; the stacks of " : "the stacks of ", stacks_left_out,
              stacks_left_out == 1 ? "" : "s", HANG_GROUP_TEXT_MAX);
    return hang_text_take(&b);
}
