/* output: each worker's output pipes into LOG_DIR/workerlog.<rank> (spliced in the kernel when the rank is not
 * shown), and the console's ranks line by line with a [rank N] prefix, stdout to stdout and stderr to stderr.
 * Nothing is buffered on the way to the log file; what a full file system refuses is counted, reported, and marked
 * in the log. */
#include "launcher/supervisor/output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/console.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/ownfile.h"

#define OUTPUT_CHUNK 65536
#define OUTPUT_LINE_MAX 65536 /* a longer "line" is shown in pieces rather than held forever */
#define OUTPUT_SPLICE (1 << 20)
#define OUTPUT_PIPE (1 << 20)

static char s_log_dir[PATH_MAX]; /* for messages */

int output_open_logs(struct job *job, char *err, size_t errlen)
{
    static const char fix[] = "choose another --log-dir";
    int n = job->node.nworkers, opened = 0;
    int *fds = malloc(((size_t)n + 1) * sizeof *fds);
    int dfd = fds ? ownfile_open_dir(job->node.log_dir, "log directory", fix, err, errlen) : -1;
    if (!fds)
        snprintf(err, errlen, "out of memory");
    /* Every log is proved ours before any is emptied, so a refusal loses no old log. Not O_APPEND (splice(2)
     * refuses such files): this process is each workerlog's only writer. */
    for (; dfd >= 0 && opened < n; opened++) {
        char name[32];
        snprintf(name, sizeof name, "workerlog.%d", job->workers[opened].rank);
        if ((fds[opened] = ownfile_open(dfd, job->node.log_dir, name, 0, fix, err, errlen)) < 0)
            break;
    }
    if (dfd >= 0)
        close(dfd);
    for (int i = 0; i < opened; i++) {
        struct worker *w = &job->workers[i];
        if (opened < n) {
            close(fds[i]);
            continue;
        }
        /* An earlier run's lines stay (Paddle appends too): this run's start after its marker line, and every
         * reader of this run (the failure's tail, the tracebacks) starts there. --log_overwrite empties. */
        if (job->gen.generation == 0 && job->opt.log_overwrite && ownfile_empty(fds[i]) < 0)
            log_warn("cannot empty %s/workerlog.%d: %s", job->node.log_dir, w->rank, strerror(errno));
        else if (lseek(fds[i], 0, SEEK_END) < 0)
            log_warn("cannot go to the end of %s/workerlog.%d: %s", job->node.log_dir, w->rank, strerror(errno));
        if (w->log_fd >= 0)
            close(w->log_fd);
        w->log_fd = fds[i];
    }
    free(fds);
    if (opened < n)
        return -1;
    char hint[PATH_MAX + 64];
    snprintf(s_log_dir, sizeof s_log_dir, "%s", job->node.log_dir);
    snprintf(hint, sizeof hint, "every line is in %s/workerlog.N", job->node.log_dir);
    console_set_hint(1, hint);
    return 0;
}

void output_close_logs(struct job *job)
{
    for (int i = 0; i < job->node.nworkers; i++) {
        struct worker *w = &job->workers[i];
        if (w->log_fd >= 0)
            close(w->log_fd);
        w->log_fd = -1;
        free(w->line.buf);
        free(w->eline.buf);
        w->line = w->eline = (struct linebuf){ 0 };
    }
}

/* Bytes the log could not take: said at once on the console (once per run of failures), counted per rank. */
static void s_lost(struct worker *w, size_t n, int err)
{
    if (w->log_gap == 0)
        log_error("cannot write %s/workerlog.%d: %s: rank %d's output is being lost (the worker goes on; a marker "
                  "in the log will show the gap); free space on that file system", s_log_dir, w->rank,
                  strerror(err), w->rank);
    w->log_errno = err;
    w->log_gap += n;
    w->gen_lost += n;
    w->log_lost += n;
}

static size_t s_write_some(int fd, const char *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            errno = n == 0 ? EIO : errno;
            break;
        }
        done += (size_t)n;
    }
    return done;
}

/* After a loss, the first write that works marks the gap, so no reader takes the lines around it as adjacent. */
static int s_mark_gap(struct worker *w)
{
    char mark[256];
    int n = snprintf(mark, sizeof mark, "\n==== plaunch: %llu bytes of rank %d's output were lost here (%s) ====\n",
                     (unsigned long long)w->log_gap, w->rank, strerror(w->log_errno));
    if (s_write_some(w->log_fd, mark, (size_t)n) < (size_t)n)
        return -1;
    log_warn("rank %d's log is written again after %llu bytes were lost", w->rank, (unsigned long long)w->log_gap);
    w->log_gap = 0;
    w->resume_at = lseek(w->log_fd, 0, SEEK_CUR);
    return 0;
}

static void s_log_write(struct worker *w, const char *data, size_t len)
{
    if (w->log_fd < 0)
        return;
    if (w->log_gap > 0 && s_mark_gap(w) < 0) {
        s_lost(w, len, errno);
        return;
    }
    size_t done = s_write_some(w->log_fd, data, len);
    if (done < len)
        s_lost(w, len - done, errno);
}

void output_marker(const struct job *job, struct worker *w)
{
    char line[512];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line,
                     "==== plaunch: job %s generation %d (restart %d of %d) rank %d pid %d started "
                     "%04d-%02d-%02dT%02d:%02d:%02dZ ====\n",
                     job->node.job_id, job->gen.generation, job->gen.generation, job->opt.max_restarts, w->rank, (int)w->pid,
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    w->gen_lost = 0;
    w->resume_at = 0;
    /* A larger pipe: a chatty worker waits for us less often and each wake-up moves more. Only as root: other
     * users' pipes share a per-user budget (fs.pipe-user-pages-soft), and past it every new pipe of theirs would
     * be cut to one page. */
    if (w->out_fd >= 0 && geteuid() == 0)
        fcntl(w->out_fd, F_SETPIPE_SZ, OUTPUT_PIPE);
    if (w->err_fd >= 0 && geteuid() == 0)
        fcntl(w->err_fd, F_SETPIPE_SZ, OUTPUT_PIPE);
    s_log_write(w, line, (size_t)n);
    w->gen_log_start = lseek(w->log_fd, 0, SEEK_CUR); /* the tail shows the worker's bytes, not this line */
}

/* Console lines of one pump (one pipe, so one console stream s_batch_fd), "[rank N] text\n" each, go out in one
 * write: whole lines only, so ranks never interleave mid-line, and a chatty rank costs one write per pump rather
 * than one per line. */
static char s_batch[OUTPUT_CHUNK];
static size_t s_batch_len;
static int s_batch_fd = STDOUT_FILENO;

static void s_tee_flush(void)
{
    if (s_batch_len > 0)
        console_put(s_batch_fd, s_batch, s_batch_len);
    s_batch_len = 0;
}

static void s_tee_line(const struct worker *w, const char *text, size_t len)
{
    char prefix[32];
    int plen = snprintf(prefix, sizeof prefix, "[rank %d] ", w->rank);
    size_t total = (size_t)plen + len + 1;
    if (s_batch_len + total > sizeof s_batch)
        s_tee_flush();
    char *out = total <= sizeof s_batch ? s_batch + s_batch_len : malloc(total);
    if (!out)
        return;
    memcpy(out, prefix, (size_t)plen);
    memcpy(out + plen, text, len);
    out[total - 1] = '\n';
    if (out == s_batch + s_batch_len) {
        s_batch_len += total;
        return;
    }
    console_put(s_batch_fd, out, total); /* a line longer than the batch: on its own */
    free(out);
}

static void s_tee_feed(struct worker *w, struct linebuf *lb, const char *data, size_t len)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (lb->len == 0 && nl) {
            s_tee_line(w, data, take); /* whole line in hand: no copy */
        } else {
            if (lb->len + take > lb->cap) {
                size_t cap = lb->cap ? lb->cap : 256;
                while (cap < lb->len + take)
                    cap *= 2;
                char *nb = realloc(lb->buf, cap);
                if (!nb)
                    return;
                lb->buf = nb;
                lb->cap = cap;
            }
            memcpy(lb->buf + lb->len, data, take);
            lb->len += take;
            if (nl || lb->len >= OUTPUT_LINE_MAX) {
                s_tee_line(w, lb->buf, lb->len);
                lb->len = 0;
            }
        }
        if (!nl)
            return;
        data = nl + 1;
        len -= take + 1;
    }
}

/* One pipe of w: its stdout's (out_fd, which also carries stderr when err_fd < 0) or its stderr's. */
struct s_pipe {
    int *fd;
    struct linebuf *line;
    int shown;      /* its lines go to the console */
    int console_fd; /* which: STDOUT_FILENO or STDERR_FILENO */
};

static int s_pipe_of(struct worker *w, int fd, struct s_pipe *p)
{
    if (fd >= 0 && fd == w->err_fd)
        *p = (struct s_pipe){ &w->err_fd, &w->eline, (w->tee & JOB_TEE_ERR) != 0, STDERR_FILENO };
    else if (fd >= 0 && fd == w->out_fd)
        *p = (struct s_pipe){ &w->out_fd, &w->line, (w->tee & JOB_TEE_OUT) != 0, STDOUT_FILENO };
    else
        return -1;
    return 0;
}

static int s_pump(struct worker *w, const struct s_pipe *p, size_t max_bytes)
{
    static char buf[OUTPUT_CHUNK];
    size_t moved = 0;
    while (*p->fd >= 0 && (max_bytes == 0 || moved < max_bytes)) {
        /* A pipe that is not shown needs no copy in user space: the kernel moves its pages to the file. */
        if (!p->shown && w->log_fd >= 0 && w->log_gap == 0 && !w->no_splice) {
            size_t want = max_bytes && max_bytes - moved < OUTPUT_SPLICE ? max_bytes - moved : OUTPUT_SPLICE;
            ssize_t n = splice(*p->fd, NULL, w->log_fd, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                moved += (size_t)n;
                if ((size_t)n < want && max_bytes)
                    return 0; /* the pipe is empty now: the loop wakes us for more, without an EAGAIN call */
                continue;
            }
            if (n == 0)
                return 1;
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)
                w->no_splice = 1;
            /* else (ENOSPC, EIO, ...): read the bytes below, where a failed write is counted and reported */
        }
        ssize_t n = read(*p->fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return 0; /* EAGAIN: nothing more now */
        }
        if (n == 0)
            return 1;
        s_log_write(w, buf, (size_t)n);
        if (p->shown)
            s_tee_feed(w, p->line, buf, (size_t)n);
        moved += (size_t)n;
        if ((size_t)n < sizeof buf && max_bytes)
            return 0;
    }
    return 0;
}

int output_pump(struct worker *w, int fd, size_t max_bytes)
{
    struct s_pipe p;
    if (s_pipe_of(w, fd, &p) < 0)
        return 1;
    w->out_ns = loop_now_ns(); /* the pipe woke us: the rank wrote (progress for the hang watch) */
    if (w->first_out_ns < w->start_ns)
        w->first_out_ns = w->out_ns; /* its first output of the generation (the goodput ledger's first progress) */
    s_batch_fd = p.console_fd;
    int eof = s_pump(w, &p, max_bytes);
    s_tee_flush();
    return eof;
}

void output_drain(struct worker *w)
{
    output_pump(w, w->out_fd, 0);
    output_pump(w, w->err_fd, 0);
}

void output_finish_pipe(struct worker *w, int fd)
{
    struct s_pipe p;
    if (s_pipe_of(w, fd, &p) < 0)
        return;
    output_pump(w, fd, 0);
    if (p.shown && p.line->len > 0) {
        s_batch_fd = p.console_fd;
        s_tee_line(w, p.line->buf, p.line->len);
        s_tee_flush();
        p.line->len = 0;
    }
    close(*p.fd);
    *p.fd = -1;
}

void output_finish(struct worker *w)
{
    output_finish_pipe(w, w->out_fd);
    output_finish_pipe(w, w->err_fd);
}

/* Copies raw log bytes into buf as printable lines, the last nlines of them (unindented: the summary that quotes
 * them formats them, once). */
static size_t s_quote(const char *raw, ssize_t n, int nlines, char *buf, size_t cap)
{
    /* Walk back over nlines newlines (ignoring a final one) to find where the tail begins. */
    ssize_t i = n - 1;
    if (i >= 0 && raw[i] == '\n')
        i--;
    int seen = 0;
    for (; i >= 0; i--)
        if (raw[i] == '\n' && ++seen == nlines)
            break;
    size_t o = 0;
    for (ssize_t k = i + 1; k < n && o + 8 < cap; k++) {
        unsigned char c = (unsigned char)raw[k];
        if (c == '\n') {
            buf[o++] = '\n';
        } else if (c == '\t' || (c >= 0x20 && c != 0x7f)) {
            buf[o++] = (char)c;
        } else {
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
        }
    }
    if (o > 0 && buf[o - 1] != '\n' && o + 1 < cap)
        buf[o++] = '\n';
    return o;
}

char *output_tail(const struct worker *w, int nlines, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (w->log_fd < 0 || cap < 8)
        return buf;
    off_t end = lseek(w->log_fd, 0, SEEK_END), start = w->gen_log_start;
    size_t o = 0;
    /* Lines from before a loss are not the last lines: say what is missing instead of quoting them. */
    if (w->log_gap > 0) {
        int n = snprintf(buf, cap, "[plaunch: no tail: the last %llu bytes rank %d wrote were lost (%s)]\n",
                         (unsigned long long)w->log_gap, w->rank, strerror(w->log_errno));
        (void)n; /* cut to cap by snprintf: still a line that says it */
        return buf;
    }
    if (w->gen_lost > 0) {
        int n = snprintf(buf, cap, "[plaunch: incomplete: %llu bytes of this generation's output were lost "
                         "before the lines below (%s)]\n", (unsigned long long)w->gen_lost, strerror(w->log_errno));
        o = n < (int)cap ? (size_t)n : 0;
        buf[o] = '\0';
        if (w->resume_at > start)
            start = w->resume_at;
    }
    if (end - start > 16384)
        start = end - 16384;
    char raw[16384];
    ssize_t n = end > start ? pread(w->log_fd, raw, (size_t)(end - start), start) : 0;
    if (n > 0)
        o += s_quote(raw, n, nlines, buf + o, cap - o);
    buf[o] = '\0';
    return buf;
}

int output_final_status(const struct job *job, int code)
{
    char list[2048];
    size_t o = 0;
    for (int i = 0; i < job->node.nworkers && o < sizeof list; i++)
        if (job->workers[i].log_lost)
            o += (size_t)snprintf(list + o, sizeof list - o, "%srank %d lost %llu bytes", o ? ", " : "",
                                  job->workers[i].rank, (unsigned long long)job->workers[i].log_lost);
    if (log_lost_bytes() && o < sizeof list)
        o += (size_t)snprintf(list + o, sizeof list - o, "%splaunch.log lost %llu bytes", o ? ", " : "",
                              (unsigned long long)log_lost_bytes());
    if (o == 0)
        return code;
    log_error("the logs in %s are incomplete (a full or failing file system): %s%s", job->node.log_dir, list,
              code == 0 ? "; exit status 125 although every worker exited 0" : "");
    return code == 0 ? 125 : code;
}
