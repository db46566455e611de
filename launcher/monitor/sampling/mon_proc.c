/* mon_proc: a rank's process tree from /proc and its RSS, threads and CPU share; the node's available memory. */
#include "launcher/monitor/sampling/mon_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One process as the previous sample saw it: (pid, start time) names it even when pids are reused. */
struct s_tick {
    pid_t pid;
    unsigned long long start, ticks;
};

struct s_rank {
    int rank;
    pid_t root;
    unsigned long long root_start;
    uint64_t t_ns;
    int n;
    struct s_tick *t; /* sorted by pid, MON_PROC_TREE_MAX */
};

struct mon_proc {
    struct s_rank *ranks;
    int nranks, cap;
    char *buf;
    size_t bcap;
    struct s_tick *cur; /* MON_PROC_TREE_MAX */
};

struct s_stat {
    unsigned long long ticks, start;
    long threads, rss_pages;
};

static uint64_t s_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reads path whole into p->buf (grown as needed, up to 16 MiB), NUL-terminated: its length, or -1. */
static ssize_t s_read(mon_proc_t *p, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (;;) {
        if (len + 1 >= p->bcap) {
            size_t cap = p->bcap ? p->bcap * 2 : 4096;
            char *b = cap <= (16u << 20) ? realloc(p->buf, cap) : NULL;
            if (b == NULL) {
                close(fd);
                return -1;
            }
            p->buf = b, p->bcap = cap;
        }
        ssize_t r = read(fd, p->buf + len, p->bcap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    p->buf[len] = '\0';
    return (ssize_t)len;
}

/* /proc/PID/stat: the fields after the command name (which may hold spaces and parentheses). */
static int s_stat(mon_proc_t *p, pid_t pid, struct s_stat *st)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (s_read(p, path) < 0)
        return -1;
    char *c = strrchr(p->buf, ')');
    if (c == NULL)
        return -1;
    unsigned long long f[24] = { 0 }; /* f[k] is field k + 3 of proc(5): state is field 3 */
    int k = 0;
    for (c++; *c && k < 24; k++) {
        while (*c == ' ')
            c++;
        f[k] = strtoull(c, &c, 10);
        while (*c && *c != ' ')
            c++;
    }
    if (k < 22)
        return -1;
    st->ticks = f[14 - 3] + f[15 - 3];
    st->threads = (long)f[20 - 3];
    st->start = f[22 - 3];
    st->rss_pages = (long)f[24 - 3];
    return 0;
}

/* Appends the children of every thread of pid to out[*n..cap). */
static void s_children(mon_proc_t *p, pid_t pid, pid_t *out, int *n, int cap)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < cap) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
        if (s_read(p, path) <= 0)
            continue;
        for (char *c = p->buf; *c && *n < cap;) {
            char *end;
            long child = strtol(c, &end, 10);
            if (end == c)
                break;
            if (child > 0)
                out[(*n)++] = (pid_t)child;
            c = end;
        }
    }
    closedir(d);
}

int mon_proc_tree(mon_proc_t *p, pid_t root, pid_t *out, int cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", (int)root);
    if (root <= 0 || cap <= 0 || access(path, F_OK) < 0)
        return 0;
    int n = 0;
    out[n++] = root;
    for (int i = 0; i < n && n < cap; i++)
        s_children(p, out[i], out, &n, cap);
    return n;
}

mon_proc_t *mon_proc_new(void)
{
    mon_proc_t *p = calloc(1, sizeof *p);
    if (p && (p->cur = calloc(MON_PROC_TREE_MAX, sizeof *p->cur)) == NULL) {
        free(p);
        p = NULL;
    }
    return p;
}

void mon_proc_destroy(mon_proc_t **pp)
{
    if (pp == NULL || *pp == NULL)
        return;
    mon_proc_t *p = *pp;
    for (int i = 0; i < p->nranks; i++)
        free(p->ranks[i].t);
    free(p->ranks);
    free(p->buf);
    free(p->cur);
    free(p);
    *pp = NULL;
}

static struct s_rank *s_rank(mon_proc_t *p, int rank)
{
    for (int i = 0; i < p->nranks; i++)
        if (p->ranks[i].rank == rank)
            return &p->ranks[i];
    if (p->nranks == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        struct s_rank *r = realloc(p->ranks, (size_t)cap * sizeof *r);
        if (r == NULL)
            return NULL;
        p->ranks = r, p->cap = cap;
    }
    struct s_rank *r = &p->ranks[p->nranks];
    memset(r, 0, sizeof *r);
    r->rank = rank;
    if ((r->t = calloc(MON_PROC_TREE_MAX, sizeof *r->t)) == NULL)
        return NULL;
    p->nranks++;
    return r;
}

static int s_tick_cmp(const void *a, const void *b)
{
    pid_t x = ((const struct s_tick *)a)->pid, y = ((const struct s_tick *)b)->pid;
    return (x > y) - (x < y);
}

int mon_proc_sample(mon_proc_t *p, int rank, pid_t pid, struct mon_sample *s, pid_t *tree, int cap)
{
    static long page_kib, hz;
    if (page_kib == 0)
        page_kib = sysconf(_SC_PAGESIZE) / 1024, hz = sysconf(_SC_CLK_TCK);
    uint64_t now = s_now_ns();
    int n = mon_proc_tree(p, pid, tree, cap < MON_PROC_TREE_MAX ? cap : MON_PROC_TREE_MAX);
    struct s_rank *r = s_rank(p, rank);
    long rss = 0, threads = 0;
    int procs = 0;
    struct s_stat st;
    for (int i = 0; i < n; i++) {
        if (s_stat(p, tree[i], &st) < 0)
            continue; /* exited while we walked */
        if (i == 0 && r && (r->root != pid || r->root_start != st.start)) {
            r->root = pid, r->root_start = st.start; /* a new worker: no previous sample to compare with */
            r->n = 0, r->t_ns = 0;
        }
        rss += st.rss_pages, threads += st.threads;
        p->cur[procs++] = (struct s_tick){ .pid = tree[i], .start = st.start, .ticks = st.ticks };
    }
    s->procs = procs;
    s->threads = (int)threads;
    s->rss_mib = (double)rss * (double)page_kib / 1024.0;
    s->cpu_pct = NAN;
    if (r == NULL)
        return n;
    qsort(p->cur, (size_t)procs, sizeof *p->cur, s_tick_cmp);
    if (r->t_ns && procs > 0 && now > r->t_ns) {
        /* Each process's CPU time since the previous sample; one born since then counts whole. Processes that
         * ended in between take their last ticks with them (a lower bound, never a negative share). */
        unsigned long long delta = 0;
        for (int i = 0, j = 0; i < procs; i++) {
            while (j < r->n && r->t[j].pid < p->cur[i].pid)
                j++;
            int known = j < r->n && r->t[j].pid == p->cur[i].pid && r->t[j].start == p->cur[i].start;
            unsigned long long before = known ? r->t[j].ticks : 0;
            delta += p->cur[i].ticks > before ? p->cur[i].ticks - before : 0;
        }
        s->cpu_pct = (double)delta / (double)hz / ((double)(now - r->t_ns) / 1e9) * 100.0;
    }
    memcpy(r->t, p->cur, (size_t)procs * sizeof *r->t);
    r->n = procs;
    r->t_ns = procs > 0 ? now : 0;
    return n;
}

double mon_proc_mem_avail(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (f == NULL)
        return NAN;
    char line[256];
    double total = -1, avail = -1;
    while (fgets(line, sizeof line, f) && (total < 0 || avail < 0)) {
        unsigned long long kib;
        if (sscanf(line, "MemTotal: %llu", &kib) == 1)
            total = (double)kib;
        else if (sscanf(line, "MemAvailable: %llu", &kib) == 1)
            avail = (double)kib;
    }
    fclose(f);
    return total > 0 && avail >= 0 ? avail / total : NAN;
}
