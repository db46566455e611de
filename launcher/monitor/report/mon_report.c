/* mon_report: a job's monitor files read back into one bounded series per rank, and judged as the job would be. */
#include "launcher/monitor/report/mon_report.h"

#include "common/esc/esc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher/monitor/sampling/mon_csv.h"
#include "launcher/monitor/report/mon_report_log.h"
#include "launcher/monitor/sampling/mon_sampler.h"

#define S_HASH (2 * MON_REPORT_RANKS_MAX) /* a power of two, at most half full */
#define S_CHUNK (64u << 10)

/* One monitor file: NODE (from its name) and whether it is the rotated, older part. */
struct s_file {
    char name[MON_NODE_MAX + 16];
    int old;
};

struct s_reader {
    struct mon_report *r;
    const struct mon_thresh *th;
    int hash[S_HASH];             /* index into r->ranks + 1; 0 empty */
    int cap;                      /* r->ranks allocated */
    int last_node;                /* the node of the previous row (rows of one file share it) */
    const char *file;
    long long line;
    long long out_of_order;
    long long bytes;              /* read of all the files so far (MON_REPORT_TOTAL_MAX) */
    int left_out;                 /* files past the total */
};

void mon_report_note(struct mon_report *r, const char *fmt, ...)
{
    va_list ap;
    r->errors++;
    if (r->nnotes == MON_REPORT_NOTES) {
        r->notes_dropped++;
        return;
    }
    char raw[MON_REPORT_NOTE_LEN];
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* names and fields from the directory: shown on a terminal and a page, escaped (common/esc) */
    esc_term(r->notes[r->nnotes++], MON_REPORT_NOTE_LEN, raw, sizeof raw, 0);
}

/* monitor.NODE.csv or monitor.NODE.csv.1, NODE as the agent writes it (a node label: safe in a file name). */
static int s_match(const char *name, struct s_file *f)
{
    size_t len = strlen(name);
    if (strncmp(name, "monitor.", 8) != 0 || len >= sizeof f->name)
        return 0;
    f->old = len > 6 && strcmp(name + len - 6, ".csv.1") == 0;
    size_t end = len - (f->old ? 6 : 4);
    if (!f->old && (len < 4 || strcmp(name + len - 4, ".csv") != 0))
        return 0;
    if (end <= 8)
        return 0;
    for (size_t i = 8; i < end; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", name[i]))
            return 0;
    snprintf(f->name, sizeof f->name, "%s", name);
    return 1;
}

/* By node, the older part first. */
static int s_file_cmp(const void *a, const void *b)
{
    const struct s_file *x = a, *y = b;
    size_t lx = strlen(x->name) - (x->old ? 2 : 0), ly = strlen(y->name) - (y->old ? 2 : 0);
    int c = strncmp(x->name, y->name, lx < ly ? lx : ly);
    if (c == 0 && lx != ly)
        c = lx < ly ? -1 : 1;
    return c ? c : y->old - x->old;
}

static const char *s_kind(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO (named pipe)" : S_ISCHR(mode) ? "a character device"
           : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/* Printable ASCII only: names come from files anyone could have written, and go to terminals, HTML and JSON. */
static void s_ascii(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            *s = '?';
}

static int s_node(struct s_reader *rd, const char *node)
{
    struct mon_report *r = rd->r;
    if (rd->last_node >= 0 && strcmp(r->nodes[rd->last_node], node) == 0)
        return rd->last_node;
    for (int i = 0; i < r->nnodes; i++)
        if (strcmp(r->nodes[i], node) == 0)
            return rd->last_node = i;
    if (r->nnodes == MON_REPORT_NODES_MAX) {
        mon_report_note(r, "%s/%s:%lld: more than %d node names in the monitor files: row refused", r->dir, rd->file,
                        rd->line, MON_REPORT_NODES_MAX);
        return -1;
    }
    snprintf(r->nodes[r->nnodes], MON_NODE_MAX, "%s", node);
    r->node_ranks[r->nnodes] = 0;
    return rd->last_node = r->nnodes++;
}

static unsigned s_hash(int node, int rank)
{
    unsigned h = (unsigned)rank * 2654435761u ^ (unsigned)node * 40503u;
    return (h ^ (h >> 15)) & (S_HASH - 1);
}

/* The series of (node, rank), made on its first row; NULL when refused (a limit) or out of memory (-1 in *oom). */
static struct mon_report_rank *s_rank(struct s_reader *rd, int node, int rank, int *oom)
{
    struct mon_report *r = rd->r;
    unsigned h = s_hash(node, rank);
    for (; rd->hash[h]; h = (h + 1) & (S_HASH - 1)) {
        struct mon_report_rank *k = &r->ranks[rd->hash[h] - 1];
        if (k->node == node && k->ser->rank == rank)
            return k;
    }
    if (r->nranks == MON_REPORT_RANKS_MAX || r->node_ranks[node] == MON_TARGETS_MAX) {
        mon_report_note(r, "%s/%s:%lld: more than %d ranks %s: row of rank %d refused", r->dir, rd->file, rd->line,
                        r->nranks == MON_REPORT_RANKS_MAX ? MON_REPORT_RANKS_MAX : MON_TARGETS_MAX,
                        r->nranks == MON_REPORT_RANKS_MAX ? "in all" : "on one node", rank);
        return NULL;
    }
    if (r->nranks == rd->cap) {
        int cap = rd->cap ? 2 * rd->cap : 64;
        struct mon_report_rank *k = realloc(r->ranks, (size_t)cap * sizeof *k);
        if (!k)
            return *oom = 1, NULL;
        r->ranks = k;
        rd->cap = cap;
    }
    struct mon_report_rank *k = &r->ranks[r->nranks];
    memset(k, 0, sizeof *k);
    if (!(k->ser = malloc(sizeof *k->ser)))
        return *oom = 1, NULL;
    mon_series_init(k->ser, rank, r->nodes[node]);
    k->ser->idle_util = rd->th->idle_util;
    k->node = node;
    r->node_ranks[node]++;
    rd->hash[h] = ++r->nranks;
    return k;
}

/* One complete line (no newline); -1 when out of memory. */
static int s_line(struct s_reader *rd, const char *line)
{
    struct mon_report *r = rd->r;
    struct mon_sample s;
    char node[MON_NODE_MAX], why[256];
    int oom = 0;
    if (mon_csv_is_header(line))
        return 0;
    if (mon_csv_parse(line, &s, node, why, sizeof why) < 0) {
        mon_report_note(r, "%s/%s:%lld: %s: row refused", r->dir, rd->file, rd->line, why);
        return 0;
    }
    s_ascii(node);
    s_ascii(s.gpu);
    s_ascii(s.pci);
    int n = s_node(rd, node);
    struct mon_report_rank *k = n < 0 ? NULL : s_rank(rd, n, s.rank, &oom);
    if (!k)
        return oom ? -1 : 0;
    if (k->rows && s.t_ms < k->t_last) { /* a series is in time order; a clock stepped back is left out */
        rd->out_of_order++;
        return 0;
    }
    mon_series_add(k->ser, &s);
    if (!k->rows++)
        k->t_first = s.t_ms;
    k->t_last = s.t_ms;
    if (!r->rows++ || s.t_ms < r->t_first)
        r->t_first = s.t_ms;
    if (s.t_ms > r->t_last)
        r->t_last = s.t_ms;
    return 0;
}

/* The lines of fd's first size bytes; a last line without its newline is a row still being written. */
static int s_lines(struct s_reader *rd, int fd, off_t size)
{
    static char buf[S_CHUNK];
    char line[MON_CSV_LINE_MAX + 1];
    size_t len = 0;
    int toolong = 0;
    rd->line = 1;
    while (size > 0) {
        ssize_t n = read(fd, buf, size < (off_t)sizeof buf ? (size_t)size : sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            mon_report_note(rd->r, "%s/%s: read error after line %lld: %s", rd->r->dir, rd->file, rd->line,
                            strerror(errno));
            return 0;
        }
        if (n == 0)
            break;
        size -= n;
        for (char *p = buf, *end = buf + n; p < end;) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t take = (size_t)((nl ? nl : end) - p);
            if (!toolong && len + take + (nl != NULL) > MON_CSV_LINE_MAX) {
                toolong = 1;
                mon_report_note(rd->r, "%s/%s:%lld: line longer than %d bytes: not a row plaunch writes; refused",
                                rd->r->dir, rd->file, rd->line, MON_CSV_LINE_MAX);
            }
            if (!toolong)
                memcpy(line + len, p, take);
            len += take;
            p += take;
            if (!nl)
                break;
            p++;
            line[toolong ? 0 : len] = '\0';
            if (!toolong && s_line(rd, line) < 0)
                return -1;
            rd->line++;
            len = 0;
            toolong = 0;
        }
    }
    if (len > 0)
        rd->r->partial++;
    return 0;
}

/* How much of a file of size bytes is read: within MON_REPORT_FILE_MAX and what MON_REPORT_TOTAL_MAX leaves. */
static off_t s_bound(struct s_reader *rd, const char *name, off_t size)
{
    struct mon_report *r = rd->r;
    long long left = MON_REPORT_TOTAL_MAX - rd->bytes, take = size;
    if (take > MON_REPORT_FILE_MAX) {
        take = MON_REPORT_FILE_MAX;
        mon_report_note(r, "%s/%s is %lld MiB, more than a monitor file grows to (%lld MiB, then it rotates): only "
                        "its first %lld MiB read", r->dir, name, (long long)size >> 20, MON_CSV_ROTATE >> 20,
                        take >> 20);
    }
    if (take > left) {
        take = left;
        mon_report_note(r, "%s/%s: the report reads at most %lld MiB of monitor files: only the first %lld MiB of "
                        "this one read, the files after it left out", r->dir, name, MON_REPORT_TOTAL_MAX >> 20,
                        take >> 20);
    }
    rd->bytes += take;
    return (off_t)take;
}

/* Opens, checks and reads one file; -1 when out of memory. */
static int s_file(struct s_reader *rd, int dfd, const char *name)
{
    struct mon_report *r = rd->r;
    struct stat st;
    rd->file = name;
    rd->last_node = -1;
    /* O_NOFOLLOW: a planted link is refused, never followed; O_NONBLOCK: a FIFO's open never waits for a writer */
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            mon_report_note(r, "%s/%s is a symbolic link: refused (monitor files are written in place)", r->dir, name);
        else
            mon_report_note(r, "cannot open %s/%s: %s", r->dir, name, strerror(errno));
        return 0;
    }
    int rc = 0;
    if (fstat(fd, &st) < 0)
        mon_report_note(r, "cannot stat %s/%s: %s", r->dir, name, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        mon_report_note(r, "%s/%s is %s, not a regular file: refused", r->dir, name, s_kind(st.st_mode));
    else if (fcntl(fd, F_SETFL, 0) < 0)
        mon_report_note(r, "cannot read %s/%s: %s", r->dir, name, strerror(errno));
    else if (rd->bytes >= MON_REPORT_TOTAL_MAX)
        rd->left_out++;
    else
        rc = s_lines(rd, fd, s_bound(rd, name, st.st_size));
    close(fd);
    return rc;
}

/* The matching names of dfd, sorted; NULL with *n = 0 when none, -1 in *n when out of memory. */
static struct s_file *s_list(int dfd, const char *dir, int *n, struct mon_report *r)
{
    struct s_file *files = NULL, f;
    int cap = 0;
    *n = 0;
    DIR *d = fdopendir(dup(dfd));
    if (!d)
        return *n = -1, NULL;
    rewinddir(d); /* a dup shares dfd's offset */
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!s_match(e->d_name, &f))
            continue;
        if (*n == MON_REPORT_FILES_MAX) {
            mon_report_note(r, "%s: more than %d monitor files: the others are left out", dir, MON_REPORT_FILES_MAX);
            break;
        }
        if (*n == cap) {
            struct s_file *g = realloc(files, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *g);
            if (!g) {
                free(files);
                closedir(d);
                return *n = -1, NULL;
            }
            files = g;
        }
        files[(*n)++] = f;
    }
    closedir(d);
    if (*n > 0)
        qsort(files, (size_t)*n, sizeof *files, s_file_cmp);
    return files;
}

static int s_by_rank(const void *a, const void *b)
{
    const struct mon_report_rank *x = a, *y = b;
    if (x->ser->rank != y->ser->rank)
        return x->ser->rank < y->ser->rank ? -1 : 1;
    return (x->t_last > y->t_last) - (x->t_last < y->t_last);
}

/* The generation of a series' last point. */
static int s_last_gen(const struct mon_report_rank *k)
{
    int len = mon_series_len(k->ser);
    return len ? mon_series_get(k->ser, len - 1, NULL)->generation : -1;
}

/* In rank order; a rank that ran on several nodes (an elastic job's later generation put it elsewhere) keeps the
 * series of its latest generation, as the job's own diagnosis did. */
static void s_settle(struct mon_report *r)
{
    if (r->nranks == 0)
        return;
    qsort(r->ranks, (size_t)r->nranks, sizeof *r->ranks, s_by_rank);
    int out = 0;
    for (int i = 0; i < r->nranks; i++) {
        struct mon_report_rank *k = &r->ranks[i];
        if (out > 0 && r->ranks[out - 1].ser->rank == k->ser->rank) {
            struct mon_report_rank *prev = &r->ranks[out - 1];
            int keep_new = s_last_gen(k) >= s_last_gen(prev); /* sorted: k's last row is the later one */
            struct mon_report_rank *drop = keep_new ? prev : k;
            r->node_ranks[drop->node]--;
            free(drop->ser);
            if (keep_new)
                *prev = *k;
            r->moved++;
            continue;
        }
        r->ranks[out++] = *k;
    }
    r->nranks = out;
}

int mon_report_read(const char *dir, const struct mon_thresh *th, struct mon_report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(err, errlen, "cannot open the log directory '%s': %s", dir, strerror(errno));
        return -2;
    }
    int n, rc = -1;
    struct s_reader *rd = calloc(1, sizeof *rd);
    struct s_file *files = rd ? s_list(dfd, dir, &n, r) : NULL;
    if (!rd || n < 0) {
        snprintf(err, errlen, "%s: %s", dir, rd ? strerror(errno) : "out of memory");
        goto out;
    }
    if (n == 0) {
        snprintf(err, errlen, "no monitor.*.csv in %s: was the job run with --monitor 0?", dir);
        rc = -2;
        goto out;
    }
    r->nfiles = n;
    r->nodes = malloc((size_t)MON_REPORT_NODES_MAX * sizeof *r->nodes);
    r->node_ranks = malloc((size_t)MON_REPORT_NODES_MAX * sizeof *r->node_ranks);
    if (!r->nodes || !r->node_ranks)
        goto oom;
    rd->r = r;
    rd->th = th;
    for (int i = 0; i < n; i++)
        if (s_file(rd, dfd, files[i].name) < 0)
            goto oom;
    if (rd->left_out)
        mon_report_note(r, "%s: %d monitor file%s left out: past the %lld MiB a report reads", dir, rd->left_out,
                        rd->left_out == 1 ? "" : "s", MON_REPORT_TOTAL_MAX >> 20);
    if (rd->out_of_order)
        mon_report_note(r, "%s: %lld rows earlier than their rank's previous row (a clock stepped back?) left out",
                        dir, rd->out_of_order);
    s_settle(r);
    struct mon_report_log lg;
    mon_report_log_read(dfd, dir, &lg);
    r->root_cause = lg.root_cause;
    r->health_logged = lg.health;
    r->goodput = lg.goodput;
    snprintf(r->log_file, sizeof r->log_file, "%s", lg.file);
    for (int i = 0; i < lg.nnotes; i++)
        mon_report_note(r, "%s", lg.notes[i]);
    r->errors += lg.notes_dropped;
    r->notes_dropped += lg.notes_dropped;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "%s: out of memory reading the monitor files", dir);
out:
    free(files);
    free(rd);
    close(dfd);
    return rc;
}

int mon_report_judge(struct mon_report *r, const struct mon_thresh *th)
{
    int max = 4 * r->nranks + 16;
    r->sum = calloc((size_t)(r->nranks ? r->nranks : 1), sizeof *r->sum);
    r->f = calloc((size_t)max, sizeof *r->f);
    r->block = malloc(MON_REPORT_BLOCK_MAX);
    if (!r->sum || !r->f || !r->block)
        return -1;
    for (int i = 0; i < r->nranks; i++)
        mon_diag_rank(r->ranks[i].ser, th, &r->sum[i]);
    r->nf = mon_diag_job(r->sum, r->nranks, th, r->f, max);
    if (r->nf < 0)
        return r->nf = 0, -1;
    mon_diag_block(r->sum, r->nranks, th, r->f, r->nf, r->block, MON_REPORT_BLOCK_MAX);
    return 0;
}

void mon_report_free(struct mon_report *r)
{
    for (int i = 0; r->ranks && i < r->nranks; i++)
        free(r->ranks[i].ser);
    free(r->ranks);
    free(r->nodes);
    free(r->node_ranks);
    free(r->root_cause);
    free(r->health_logged);
    gp_free(&r->goodput);
    free(r->sum);
    free(r->f);
    free(r->block);
    r->ranks = NULL, r->nodes = NULL, r->node_ranks = NULL, r->root_cause = r->health_logged = NULL;
    r->sum = NULL, r->f = NULL, r->block = NULL;
    r->nranks = 0;
}
