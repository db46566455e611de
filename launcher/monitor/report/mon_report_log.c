/* mon_report_log: the root-cause and Health blocks of a job's plaunch logs, escaped of what a terminal would obey,
 * and its goodput ledger read back. */
#include "launcher/monitor/report/mon_report_log.h"

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

#define S_LOGS_MAX 4096 /* plaunch.NODE.log files looked at */

enum s_block { S_NONE, S_ROOT, S_HEALTH };

/* One block being gathered. */
struct s_gather {
    enum s_block in;
    char *buf;
    size_t len;
    int cut;
    char *root, *health;          /* the file's last complete blocks */
};

/* A block from the file as it may be shown: escaped for a terminal (common/esc); the raw one is freed. */
static char *s_shown(char *raw)
{
    char *shown = esc_term_dup(raw, ESC_LINES);
    free(raw);
    return shown;
}

static void s_note(struct mon_report_log *lg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_note(struct mon_report_log *lg, const char *fmt, ...)
{
    va_list ap;
    if (lg->nnotes == MON_REPORT_LOG_NOTES) {
        lg->notes_dropped++;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(lg->notes[lg->nnotes++], MON_REPORT_LOG_NOTE_LEN, fmt, ap);
    va_end(ap);
}

static void s_append(struct s_gather *g, const char *line)
{
    size_t n = strlen(line);
    if (g->len + n + 2 > MON_REPORT_LOG_BLOCK) {
        g->cut = 1;
        return;
    }
    memcpy(g->buf + g->len, line, n);
    g->len += n;
    g->buf[g->len++] = '\n';
    g->buf[g->len] = '\0';
}

static void s_close(struct s_gather *g)
{
    if (g->in == S_NONE)
        return;
    if (g->cut)
        s_append(g, "  [plaunch report: the block is longer than 16 KiB; the rest is left out]");
    char *text = strdup(g->buf);
    char **slot = g->in == S_ROOT ? &g->root : &g->health;
    if (text) {
        free(*slot);
        *slot = text;
    }
    g->in = S_NONE;
}

static void s_open_block(struct s_gather *g, enum s_block in, const char *line)
{
    s_close(g);
    g->in = in;
    g->len = 0;
    g->cut = 0;
    g->buf[0] = '\0';
    s_append(g, line);
}

/* The block a line opens, continues or closes. Blocks are written verbatim by log_block: their own lines start
 * with "plaunch: " or are indented; every event line starts with its time stamp. */
static void s_line(struct s_gather *g, const char *line)
{
    if (strncmp(line, "plaunch: ===== job ", 19) == 0 && strstr(line, " failed: root cause ====="))
        return s_open_block(g, S_ROOT, line);
    if (strncmp(line, "plaunch: ===== health", 21) == 0)
        return s_open_block(g, S_HEALTH, line);
    if (strncmp(line, "plaunch: health: ", 17) == 0) {
        s_open_block(g, S_HEALTH, line);
        return s_close(g);
    }
    if (g->in != S_NONE && (line[0] == ' ' || line[0] == '\t'))
        return s_append(g, line);
    if (g->in == S_ROOT && (strncmp(line, "plaunch: exit status ", 21) == 0 ||
                            strncmp(line, "plaunch: every node exits with ", 31) == 0)) {
        s_append(g, line);
        return s_close(g);
    }
    s_close(g);
}

/* Reads one log line by line (lines cut at MON_REPORT_LOG_LINE), within the size it had when opened. */
static void s_read(struct mon_report_log *lg, const char *dir, int fd, off_t size, const char *name,
                   struct s_gather *g)
{
    static char buf[64 << 10];
    char line[MON_REPORT_LOG_LINE];
    size_t len = 0;
    while (size > 0) {
        ssize_t n = read(fd, buf, size < (off_t)sizeof buf ? (size_t)size : sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            s_note(lg, "cannot read %s/%s: %s", dir, name, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        size -= n;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof line - 1)
                    line[len++] = buf[i] ? buf[i] : '?';
                continue;
            }
            line[len] = '\0';
            s_line(g, line);
            len = 0;
        }
    }
    if (len > 0) { /* a last line still being written */
        line[len] = '\0';
        s_line(g, line);
    }
    s_close(g);
}

static void s_log(int dfd, const char *dir, struct mon_report_log *lg, const char *name, struct s_gather *g,
                  long long *budget)
{
    struct stat st;
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        s_note(lg, "%s/%s %s: refused", dir, name, errno == ELOOP ? "is a symbolic link" : strerror(errno));
        return;
    }
    off_t size = 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, 0) < 0) {
        s_note(lg, "%s/%s is not a regular file: refused", dir, name);
    } else if (*budget <= 0) {
        s_note(lg, "%s/%s left out: the report reads at most %lld MiB of logs", dir, name, MON_REPORT_LOG_TOTAL >> 20);
    } else {
        size = st.st_size;
        if (size > MON_REPORT_LOG_TAIL) { /* its end: where a job writes its root cause and Health block */
            s_note(lg, "%s/%s is %lld MiB: only its last %lld MiB read", dir, name, (long long)size >> 20,
                   MON_REPORT_LOG_TAIL >> 20);
            size = MON_REPORT_LOG_TAIL;
        }
        if (size > *budget)
            size = *budget;
        *budget -= size;
        if (lseek(fd, st.st_size - size, SEEK_SET) < 0)
            s_note(lg, "cannot read %s/%s: %s", dir, name, strerror(errno));
        else
            s_read(lg, dir, fd, size, name, g);
    }
    close(fd);
}

/* plaunch.log or plaunch.NODE.log */
static int s_is_log(const char *name)
{
    size_t len = strlen(name);
    return len >= 11 && len < 80 && strncmp(name, "plaunch.", 8) == 0 && strcmp(name + len - 4, ".log") == 0 &&
           !strchr(name + 8, '/');
}

static int s_cmp(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    int px = strcmp(x, "plaunch.log") == 0, py = strcmp(y, "plaunch.log") == 0;
    return px != py ? py - px : strcmp(x, y);
}

/* LOG_DIR/goodput.jsonl as the goodput model; NULL when there is none (no note) or it is refused (a note). */
static gp_t *s_goodput(int dfd, const char *dir, struct mon_report_log *lg)
{
    struct stat st;
    char err[600];
    int fd = openat(dfd, "goodput.jsonl", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            s_note(lg, "%s/goodput.jsonl %s: refused", dir, errno == ELOOP ? "is a symbolic link" : strerror(errno));
        return NULL;
    }
    gp_t *g = NULL;
    char *buf = NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)GP_LEDGER_MAX) {
        s_note(lg, "%s/goodput.jsonl: %s: refused", dir, S_ISREG(st.st_mode) ? "larger than a ledger grows"
                                                                              : "not a regular file");
    } else if ((buf = malloc((size_t)st.st_size + 1)) != NULL) {
        ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
        g = n >= 0 ? gp_ledger_load(buf, (size_t)n, err, sizeof err) : NULL;
        if (!g)
            s_note(lg, "%s/%s", dir, n >= 0 ? err : "goodput.jsonl: cannot be read");
    }
    free(buf);
    close(fd);
    return g;
}

void mon_report_log_read(int dfd, const char *dir, struct mon_report_log *lg)
{
    char *names[S_LOGS_MAX];
    int n = 0;
    long long budget = MON_REPORT_LOG_TOTAL;
    memset(lg, 0, sizeof *lg);
    struct s_gather g = { .buf = malloc(MON_REPORT_LOG_BLOCK) };
    DIR *d = g.buf ? fdopendir(dup(dfd)) : NULL;
    if (!d) {
        s_note(lg, "cannot read the plaunch logs in %s: %s", dir, strerror(errno));
        free(g.buf);
        return;
    }
    rewinddir(d); /* the descriptor is a dup of dfd: it shares its offset, which a listing before moved to the end */
    for (struct dirent *e; n < S_LOGS_MAX && (e = readdir(d)) != NULL;)
        if (s_is_log(e->d_name) && (names[n] = strdup(e->d_name)) != NULL)
            n++;
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, s_cmp);
    for (int i = 0; i < n && (!lg->root_cause || !lg->health); i++) {
        s_log(dfd, dir, lg, names[i], &g, &budget);
        if (g.root && !lg->root_cause) {
            lg->root_cause = g.root;
            snprintf(lg->file, sizeof lg->file, "%s", names[i]);
            g.root = NULL;
        }
        if (g.health && !lg->health) {
            lg->health = g.health;
            g.health = NULL;
        }
        free(g.root);
        free(g.health);
        g.root = g.health = NULL;
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(g.buf);
    lg->root_cause = s_shown(lg->root_cause);
    lg->goodput = s_goodput(dfd, dir, lg);
    lg->health = s_shown(lg->health);
}

void mon_report_log_free(struct mon_report_log *lg)
{
    free(lg->root_cause);
    free(lg->health);
    lg->root_cause = lg->health = NULL;
    gp_free(&lg->goodput);
}
