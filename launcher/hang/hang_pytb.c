/* hang_pytb: faulthandler's all-threads dump, found at the end of a log tail and parsed line by line; anything that
 * is not a header or frame line of the dump is skipped. */
#include "launcher/hang/hang_pytb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct s_text {
    const char *s;
    size_t n;
};

static int s_starts(struct s_text l, const char *pre)
{
    size_t k = strlen(pre);
    return l.n >= k && memcmp(l.s, pre, k) == 0;
}

/* Line i of buf (complete lines only: a last one without its newline may be cut); 0 at the end. */
static int s_next(const char *buf, size_t len, size_t *pos, struct s_text *l)
{
    if (*pos >= len)
        return 0;
    const char *nl = memchr(buf + *pos, '\n', len - *pos);
    if (!nl)
        return 0;
    l->s = buf + *pos;
    l->n = (size_t)(nl - l->s);
    if (l->n && l->s[l->n - 1] == '\r')
        l->n--;
    *pos = (size_t)(nl - buf) + 1;
    return 1;
}

/* "Thread 0xHEX (most recent call first):", "Current thread 0xHEX ...", or "Stack (most recent call first):":
 * 1 with the id and whether it is current, else 0. */
static int s_header(struct s_text l, char *id, size_t cap, int *current)
{
    static const char tail[] = " (most recent call first):";
    size_t k = sizeof tail - 1;
    if (s_starts(l, "Stack (most recent call first):")) {
        id[0] = '\0';
        *current = 1;
        return 1;
    }
    size_t at = s_starts(l, "Current thread 0x") ? 15 : s_starts(l, "Thread 0x") ? 7 : 0;
    if (!at || l.n < at + 2 + k || memcmp(l.s + l.n - k, tail, k) != 0)
        return 0;
    size_t hex = at + 2;
    while (hex < l.n - k && strchr("0123456789abcdefABCDEF", l.s[hex]))
        hex++;
    if (hex != l.n - k || hex == at + 2)
        return 0;
    snprintf(id, cap, "%.*s", (int)(hex - at), l.s + at);
    *current = at == 15;
    return 1;
}

static void s_copy(char *dst, size_t cap, const char *s, size_t n)
{
    n = n < cap - 1 ? n : cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* `  File "FILE", line N in NAME` (FILE may be ???, N may be ???): 1 with its parts, else 0. */
static int s_frame(struct s_text l, char *file, char *fn, size_t cap, int *line)
{
    static const char sep[] = ", line ";
    if (!s_starts(l, "  File "))
        return 0;
    const char *p = l.s + 7, *end = l.s + l.n, *at = NULL;
    for (const char *q = p; q + sizeof sep - 1 <= end; q++) /* the last ", line ": a path may hold one */
        if (memcmp(q, sep, sizeof sep - 1) == 0)
            at = q;
    if (!at)
        return 0;
    if (at - p >= 2 && p[0] == '"' && at[-1] == '"')
        s_copy(file, cap, p + 1, (size_t)(at - p - 2));
    else if (at - p == 3 && memcmp(p, "???", 3) == 0)
        s_copy(file, cap, "???", 3);
    else
        return 0;
    const char *num = at + sizeof sep - 1, *q = num;
    long v = 0;
    while (q < end && *q >= '0' && *q <= '9' && v < 1000000000)
        v = v * 10 + (*q++ - '0');
    if (q == num && end - num >= 3 && memcmp(num, "???", 3) == 0)
        q = num + 3;
    if (q == num || end - q < 4 || memcmp(q, " in ", 4) != 0 || q + 4 == end)
        return 0;
    s_copy(fn, cap, q + 4, (size_t)(end - q - 4));
    *line = (int)v;
    return 1;
}

/* Where the last dump starts (0 when there is none, else its offset + 1). */
static size_t s_find(const char *buf, size_t len)
{
    size_t pos = 0, fatal = 0, header = 0, here;
    struct s_text l;
    char id[64];
    int cur;
    for (here = pos; s_next(buf, len, &pos, &l); here = pos) {
        if (s_starts(l, "==== plaunch: ")) /* a generation began after any dump before it */
            fatal = header = 0;
        else if (s_starts(l, "Fatal Python error: "))
            fatal = here + 1, header = 0;
        else if (!fatal && !header && s_header(l, id, sizeof id, &cur))
            header = here + 1;
    }
    return fatal ? fatal : header;
}

int hang_pytb_parse(struct hang_trace *t, struct hang_proc *p, const char *buf, size_t len)
{
    size_t pos = s_find(buf, len);
    if (pos-- == 0)
        return 0;
    struct s_text l;
    struct hang_thread *th = NULL;
    char id[HANG_SHORT_MAX], file[HANG_STR_MAX * 2], fn[HANG_STR_MAX * 2];
    int found = 0, added = 0, current = 0, line = 0, more = 0;
    while (s_next(buf, len, &pos, &l)) {
        if (s_starts(l, "Extension modules:") || (found && s_starts(l, "Fatal Python error: ")))
            break;
        if (s_header(l, id, sizeof id, &current)) {
            if (found++ == 0) {
                hang_trace_clear_python(t, p);
                if (hang_trace_set(t, &p->py_source, "faulthandler", HANG_SHORT_MAX) < 0)
                    return -1;
                hang_trace_set(t, &p->py_error, "", HANG_ERR_MAX);
            }
            th = hang_trace_add_thread(t, p, 1, 0);
            if (!th)
                continue; /* past HANG_PY_THREADS_MAX: its frames are skipped */
            added++;
            th->current = current;
            if (hang_trace_set(t, &th->id, id, HANG_SHORT_MAX) < 0)
                return -1;
        } else if (th && s_frame(l, file, fn, sizeof file, &line)) {
            hang_trace_add_frame(t, th, fn, file, line, NULL, 0); /* past the bound: marked cut */
        } else if (th && l.n == 5 && memcmp(l.s, "  ...", 5) == 0) {
            th->cut = 1; /* faulthandler's own depth limit */
        } else if (found && l.n == 3 && memcmp(l.s, "...", 3) == 0) {
            more = 1; /* faulthandler's own thread limit */
        }
    }
    if (found > added || more)
        hang_trace_setf(t, &p->py_error, HANG_ERR_MAX, "more Python threads than the %d kept%s", added,
                        more ? " (faulthandler stopped at its own limit)" : "");
    return added;
}

int hang_pytb_attach(struct hang_trace *t, int pid, const char *buf, size_t len, char *err, size_t errlen)
{
    struct hang_proc *p = pid > 0 ? hang_trace_find(t, pid) : NULL;
    for (int i = 0; !p && i < t->nprocs; i++)
        if (t->procs[i].python)
            p = &t->procs[i];
    if (!p && t->nprocs > 0)
        p = &t->procs[0];
    if (!p && pid > 0)
        p = hang_trace_add_proc(t, pid, 0, pid);
    if (!p) {
        snprintf(err, errlen, "faulthandler dump: no process to attach it to (pid %d; the trace is %s)", pid,
                 t->nprocs >= HANG_PROCS_MAX ? "full" : "empty");
        return -1;
    }
    int n = hang_pytb_parse(t, p, buf, len);
    if (n < 0)
        snprintf(err, errlen, "faulthandler dump of pid %d: out of memory", p->pid);
    return n;
}

int hang_pytb_attach_fd(struct hang_trace *t, int pid, int fd, size_t tail, char *err, size_t errlen)
{
    struct stat st;
    tail = tail < HANG_PYTB_TAIL_MAX ? tail : HANG_PYTB_TAIL_MAX;
    errno = 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "faulthandler dump: the log is not a regular file (%s)",
                 errno ? strerror(errno) : "a pipe or device");
        return -1;
    }
    off_t from = st.st_size > (off_t)tail ? st.st_size - (off_t)tail : 0;
    char *buf = malloc(tail ? tail : 1);
    size_t got = 0;
    while (buf && got < tail) {
        ssize_t r = pread(fd, buf + got, tail - got, from + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (!buf) {
        snprintf(err, errlen, "faulthandler dump: out of memory for %zu bytes of log", tail);
        return -1;
    }
    int n = hang_pytb_attach(t, pid, buf, got, err, errlen);
    free(buf);
    return n;
}
