/* output: each worker's stdout+stderr pipe into LOG_DIR/workerlog.<rank>, and --tee ranks to the console
 * line by line with a [rank N] prefix. Nothing is buffered on the way to the log file. */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define OUTPUT_CHUNK 65536
#define OUTPUT_LINE_MAX 65536 /* a longer "line" is shown in pieces rather than held forever */

int output_open_logs(struct job *job, char *err, size_t errlen)
{
    for (int i = 0; i < job->nworkers; i++) {
        struct worker *w = &job->workers[i];
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/workerlog.%d", job->log_dir, w->rank);
        if (w->log_fd >= 0)
            close(w->log_fd);
        int flags = O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | (job->generation == 0 ? O_TRUNC : 0);
        w->log_fd = open(path, flags, 0644);
        if (w->log_fd < 0) {
            snprintf(err, errlen, "cannot open worker log '%s': %s; choose a writable --log-dir", path,
                     strerror(errno));
            return -1;
        }
    }
    return 0;
}

void output_close_logs(struct job *job)
{
    for (int i = 0; i < job->nworkers; i++) {
        if (job->workers[i].log_fd >= 0)
            close(job->workers[i].log_fd);
        job->workers[i].log_fd = -1;
        free(job->workers[i].line.buf);
        job->workers[i].line = (struct linebuf){ 0 };
    }
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
                     job->job_id, job->generation, job->generation, job->opt.max_restarts, w->rank, (int)w->pid,
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    util_write_all(w->log_fd, line, (size_t)n);
    w->gen_log_start = lseek(w->log_fd, 0, SEEK_END); /* the tail shows the worker's bytes, not this line */
}

/* Emits one console line "[rank N] text\n" in a single write so ranks never interleave mid-line. */
static void s_tee_line(const struct worker *w, const char *text, size_t len)
{
    char stackbuf[4096];
    char prefix[32];
    int plen = snprintf(prefix, sizeof prefix, "[rank %d] ", w->rank);
    size_t total = (size_t)plen + len + 1;
    char *out = total <= sizeof stackbuf ? stackbuf : malloc(total);
    if (!out)
        return;
    memcpy(out, prefix, (size_t)plen);
    memcpy(out + plen, text, len);
    out[total - 1] = '\n';
    util_write_all(STDOUT_FILENO, out, total);
    if (out != stackbuf)
        free(out);
}

static void s_tee_feed(struct worker *w, const char *data, size_t len)
{
    struct linebuf *lb = &w->line;
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

int output_pump(struct worker *w, size_t max_bytes)
{
    static char buf[OUTPUT_CHUNK];
    size_t moved = 0;
    while (w->out_fd >= 0 && (max_bytes == 0 || moved < max_bytes)) {
        ssize_t n = read(w->out_fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return 0; /* EAGAIN: nothing more now */
        }
        if (n == 0)
            return 1;
        if (w->log_fd >= 0)
            util_write_all(w->log_fd, buf, (size_t)n);
        if (w->tee)
            s_tee_feed(w, buf, (size_t)n);
        moved += (size_t)n;
    }
    return 0;
}

void output_finish(struct worker *w)
{
    if (w->out_fd < 0)
        return;
    output_pump(w, 0);
    if (w->tee && w->line.len > 0) {
        s_tee_line(w, w->line.buf, w->line.len);
        w->line.len = 0;
    }
    close(w->out_fd);
    w->out_fd = -1;
}

char *output_tail(const struct worker *w, int nlines, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (w->log_fd < 0 || cap < 8)
        return buf;
    off_t end = lseek(w->log_fd, 0, SEEK_END), start = w->gen_log_start;
    size_t want = 16384;
    if (end - start > (off_t)want)
        start = end - (off_t)want;
    char raw[16384];
    ssize_t n = pread(w->log_fd, raw, (size_t)(end - start), start);
    if (n <= 0)
        return buf;
    /* Walk back over nlines newlines (ignoring a final one) to find where the tail begins. */
    ssize_t i = n - 1;
    if (i >= 0 && raw[i] == '\n')
        i--;
    int seen = 0;
    for (; i >= 0; i--)
        if (raw[i] == '\n' && ++seen == nlines)
            break;
    size_t o = 0;
    int at_line_start = 1;
    for (ssize_t k = i + 1; k < n && o + 8 < cap; k++) {
        unsigned char c = (unsigned char)raw[k];
        if (at_line_start) {
            o += (size_t)snprintf(buf + o, cap - o, "    | ");
            at_line_start = 0;
        }
        if (o + 8 >= cap)
            break;
        if (c == '\n') {
            buf[o++] = '\n';
            at_line_start = 1;
        } else if (c == '\t' || (c >= 0x20 && c != 0x7f)) {
            buf[o++] = (char)c;
        } else {
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
        }
    }
    if (o > 0 && buf[o - 1] != '\n' && o + 1 < cap)
        buf[o++] = '\n';
    buf[o] = '\0';
    return buf;
}
