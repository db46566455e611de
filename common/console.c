/* console: plaunch's stdout and stderr, written without ever blocking the event loop: whole lines go out at once
 * while the reader keeps up, wait in a bounded queue while it lags, and are dropped (counted, and the gap
 * reported) while it does not read at all. The log files, not the console, are the record. */
#include "common/console.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

enum how {
    HOW_DISCARD,  /* not open: nothing to write to */
    HOW_DIRECT,   /* regular file or block device: a write never waits for a reader */
    HOW_NONBLOCK, /* pipe or terminal, reopened with O_NONBLOCK in a file description of our own */
    HOW_SOCKET,   /* send(MSG_DONTWAIT): non-blocking per call */
    HOW_POLL,     /* could not reopen: write only what poll() says fits, at most PIPE_BUF at a time */
};

struct stream {
    int ready;           /* the descriptor was looked at */
    enum how how;
    int wfd;             /* where the bytes go */
    int own_wfd;         /* wfd was opened here */
    struct stream *same; /* stderr and stdout are one pipe or terminal: stderr uses stdout's stream */
    unsigned fds;        /* bit 1: stdout, bit 2: stderr */
    char *buf;           /* queued bytes: buf[head, head + len) */
    size_t head, len, cap;
    int dropping;        /* the queue filled: lines are dropped until it drains */
    uint64_t gap;        /* lines dropped since the last notice */
    uint64_t dropped;    /* lines dropped in all */
    int broken;          /* the reader is gone (EPIPE): everything is discarded */
    int mid_line;        /* the last byte that went out was not a newline */
    int watched;         /* in the loop for POLLOUT */
};

static struct stream s_streams[3]; /* [1] stdout, [2] stderr */
/* The status line at the bottom of an interactive stderr (console_status): shown after the last whole line,
 * erased before the next one goes out and drawn again after it. */
static char s_status[CONSOLE_STATUS_MAX + 8];
static size_t s_status_len;
static int s_status_shown;
static char s_hints[3][512];
static loop_t *s_loop;

static uint64_t s_lines(const char *data, size_t len)
{
    uint64_t n = 0;
    for (const char *p = data, *end = data + len; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        n++;
    return n ? n : 1;
}

static void s_open(int fd)
{
    struct stream *s = &s_streams[fd];
    struct stat st, mine, other;
    char path[64];
    s->ready = 1;
    s->fds = 1u << fd;
    s->wfd = -1;
    if (fstat(fd, &st) < 0)
        return;
    s->wfd = fd;
    if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
        s->how = HOW_DIRECT;
        return;
    }
    int queued1 = s_streams[1].how == HOW_NONBLOCK || s_streams[1].how == HOW_SOCKET || s_streams[1].how == HOW_POLL;
    if (fd == 2 && s_streams[1].ready && queued1 && fstat(1, &other) == 0 &&
        other.st_dev == st.st_dev && other.st_ino == st.st_ino) {
        s->same = &s_streams[1]; /* one queue keeps the two in order and lines whole */
        s_streams[1].fds |= s->fds;
        return;
    }
    if (S_ISSOCK(st.st_mode)) {
        s->how = HOW_SOCKET;
        return;
    }
    /* O_NONBLOCK on fd itself would reach every process sharing its open file description (the shell, other jobs
     * on the terminal): a fresh description of the same pipe or terminal keeps the flag to ourselves. */
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int nfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (nfd >= 0 && fstat(nfd, &mine) == 0 && mine.st_dev == st.st_dev && mine.st_ino == st.st_ino) {
        s->how = HOW_NONBLOCK;
        s->wfd = nfd;
        s->own_wfd = 1;
        return;
    }
    if (nfd >= 0)
        close(nfd);
    s->how = HOW_POLL;
}

static struct stream *s_stream(int fd)
{
    if (fd != 1 && fd != 2)
        return NULL;
    if (!s_streams[1].ready)
        s_open(1); /* first, so that stderr can find out it is the same */
    if (!s_streams[fd].ready)
        s_open(fd);
    return s_streams[fd].same ? s_streams[fd].same : &s_streams[fd];
}

/* Writes what the reader takes now; returns the count, or -1 once the reader is gone. */
static ssize_t s_write(struct stream *s, const char *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n;
        if (s->how == HOW_SOCKET) {
            n = send(s->wfd, data + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else if (s->how == HOW_POLL) {
            struct pollfd p = { .fd = s->wfd, .events = POLLOUT };
            if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
                break;
            n = write(s->wfd, data + done, len - done < PIPE_BUF ? len - done : PIPE_BUF);
        } else {
            n = write(s->wfd, data + done, len - done);
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            s->broken = 1;
            s->len = 0;
            return -1;
        }
        done += (size_t)n;
    }
    if (done > 0)
        s->mid_line = data[done - 1] != '\n';
    return (ssize_t)done;
}

static int s_append(struct stream *s, const char *data, size_t len)
{
    if (s->head + s->len + len > s->cap && s->head > 0) {
        memmove(s->buf, s->buf + s->head, s->len);
        s->head = 0;
    }
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : CONSOLE_QUEUE;
        while (cap < s->len + len)
            cap *= 2;
        char *nb = realloc(s->buf, cap);
        if (!nb)
            return -1;
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->head + s->len, data, len);
    s->len += len;
    return 0;
}

/* "plaunch: 12 console lines dropped (stdout was not read); every line is in DIR/workerlog.N", after a newline
 * when a line was cut off in the middle (queued bytes always end a line). */
static int s_notice(const struct stream *s, uint64_t lines, char *buf, size_t cap)
{
    int both = s->fds == 6u;
    const char *h1 = s->fds & 2u ? s_hints[1] : "", *h2 = s->fds & 4u ? s_hints[2] : "";
    int n = snprintf(buf, cap, "%splaunch: %llu console line%s dropped (%s %s %s)%s%s%s%s\n",
                     s->len == 0 && s->mid_line ? "\n" : "", (unsigned long long)lines, lines == 1 ? "" : "s",
                     both ? "stdout and stderr" : s->fds & 2u ? "stdout" : "stderr", both ? "were" : "was",
                     s->broken ? "closed by its reader" : "not read", *h1 ? "; " : "", h1, *h2 ? "; " : "", h2);
    return n < (int)cap ? n : (int)cap - 1;
}

static int s_on_writable(loop_t *loop, int fd, void *sock, short revents, void *arg);
static void s_put_lines(struct stream *s, const char *data, size_t len);
static void s_status_draw(struct stream *s, int erase);

static void s_watch(struct stream *s, int on)
{
    if (!s_loop || s->how == HOW_DIRECT || on == s->watched)
        return;
    if (on ? loop_add_fd(s_loop, s->wfd, ZMQ_POLLOUT, s_on_writable, s) == 0 : loop_remove_fd(s_loop, s->wfd) == 0)
        s->watched = on;
}

/* Gives the reader what it takes of the queue; once the queue has drained, the gap is reported where it is. */
static void s_flush(struct stream *s)
{
    if (s->len > 0) {
        ssize_t n = s_write(s, s->buf + s->head, s->len);
        if (n > 0) {
            s->head += (size_t)n;
            s->len -= (size_t)n;
        }
    }
    if (s->dropping && !s->broken && s->len <= CONSOLE_QUEUE / 2) {
        char note[1400];
        int n = s_notice(s, s->gap, note, sizeof note);
        if (s->len == 0 && s->mid_line == 0) {
            ssize_t w = s_write(s, note, (size_t)n);
            if (w >= 0 && w < n)
                s_append(s, note + w, (size_t)(n - w));
        } else {
            s_append(s, note, (size_t)n);
        }
        s->dropping = 0;
        s->gap = 0;
    }
    if (s->len == 0)
        s->head = 0;
    s_watch(s, s->len > 0 && !s->broken);
}

static int s_on_writable(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    s_flush(arg);
    if (s_status_len && arg == s_stream(2))
        s_status_draw(arg, 0); /* the queue drained: the status line comes back */
    return 0;
}

int console_status_able(void)
{
    const char *term = getenv("TERM");
    return isatty(STDERR_FILENO) && term && *term && strcmp(term, "dumb") != 0;
}

void console_status(const char *line)
{
    struct stream *s = s_stream(2);
    if (!s || s->how == HOW_DIRECT)
        return;
    if (s_status_shown)
        s_status_draw(s, 1);
    s_status_len = 0;
    if (!line || !*line)
        return;
    int n = snprintf(s_status, sizeof s_status, "\r\033[K%.*s", CONSOLE_STATUS_MAX, line);
    s_status_len = n > 0 && (size_t)n < sizeof s_status ? (size_t)n : 0;
    s_status_draw(s, 0);
}

/* The status line's stream: erase it (1) or draw it again (0), only while nothing is queued there (a line that
 * waits is never cut by it), and without the stream's own idea of a line begun. */
static void s_status_draw(struct stream *s, int erase)
{
    if (!s_status_len || s->broken || s->len > 0 || s->dropping || s->wfd < 0 || erase != s_status_shown)
        return;
    int mid = s->mid_line;
    if (erase) { /* whole, before anything else: what the reader does not take now is queued first */
        ssize_t n = s_write(s, "\r\033[K", 4);
        if (n >= 0 && n < 4 && s_append(s, "\r\033[K" + n, (size_t)(4 - n)) == 0)
            s_watch(s, 1);
    } else {
        s_write(s, s_status, s_status_len); /* a part that does not go out is cleared by the next erase */
    }
    s->mid_line = mid;
    s_status_shown = !erase;
}

void console_put(int fd, const char *data, size_t len)
{
    struct stream *s = s_stream(fd);
    if (!s || len == 0 || s->wfd < 0)
        return;
    struct stream *st = s_status_len ? s_stream(2) : NULL;
    if (st == s && s_status_shown)
        s_status_draw(s, 1);
    s_put_lines(s, data, len);
    if (st == s)
        s_status_draw(s, 0);
}

static void s_put_lines(struct stream *s, const char *data, size_t len)
{
    if (s->broken) {
        s->dropped += s_lines(data, len);
        s->gap += s_lines(data, len);
        return;
    }
    if (s->how == HOW_DIRECT) {
        util_write_all(s->wfd, data, len);
        return;
    }
    if (s->len > 0 || s->dropping)
        s_flush(s);
    if (s->dropping || s->len + len > CONSOLE_QUEUE) {
        s->dropping = 1;
        uint64_t n = s_lines(data, len);
        s->gap += n;
        s->dropped += n;
        return;
    }
    if (s->len == 0) { /* the usual case: the whole line in one write */
        ssize_t n = s_write(s, data, len);
        if (n < 0 || (size_t)n == len)
            return;
        data += n;
        len -= (size_t)n;
    }
    s_append(s, data, len); /* a line begun goes out whole, so a partial one is always queued */
    s_watch(s, 1);
}

void console_set_hint(int fd, const char *hint)
{
    if (fd == 1 || fd == 2)
        snprintf(s_hints[fd], sizeof s_hints[fd], "%s", hint ? hint : "");
}

void console_attach(loop_t *loop)
{
    s_loop = loop;
    for (int fd = 1; fd <= 2; fd++)
        if (s_streams[fd].ready && !s_streams[fd].same)
            s_watch(&s_streams[fd], s_streams[fd].len > 0);
}

void console_detach(void)
{
    for (int fd = 1; fd <= 2; fd++)
        if (s_streams[fd].ready && !s_streams[fd].same)
            s_watch(&s_streams[fd], 0);
    s_loop = NULL;
}

/* Waits for the reader while it makes progress; what is still queued after idle_ms without any is dropped (then
 * returns 1). */
static int s_drain(struct stream *s, int idle_ms)
{
    while (s->len > 0 && !s->broken) {
        struct pollfd p = { .fd = s->wfd, .events = POLLOUT };
        size_t before = s->len;
        if (poll(&p, 1, idle_ms) <= 0)
            break;
        s_flush(s);
        if (s->len == before)
            break; /* writable yet nothing taken: a reader that is gone or a device that refuses */
    }
    if (s->len == 0)
        return 0;
    uint64_t n = s_lines(s->buf + s->head, s->len);
    s->gap += n;
    s->dropped += n;
    s->len = 0;
    return 1;
}

uint64_t console_finish(int idle_ms, char *summary, size_t cap)
{
    uint64_t total = 0;
    size_t o = 0;
    char note[1400];
    summary[0] = '\0';
    console_status(NULL); /* the screen is left with the lines, not the status */
    console_detach();
    for (int fd = 1; fd <= 2; fd++) {
        struct stream *s = &s_streams[fd];
        if (!s->ready || s->same || s->how == HOW_DIRECT || s->wfd < 0)
            continue;
        int stalled = s_drain(s, idle_ms);
        int n = s_notice(s, s->gap, note, sizeof note);
        if (s->gap > 0 && !stalled && !s->broken) { /* the reader is back: the notice goes where lines are missing */
            ssize_t w = s_write(s, note, (size_t)n);
            if (w > 0 && w < n) {
                s_append(s, note + w, (size_t)(n - w));
                s_drain(s, idle_ms);
            }
            s->gap = w > 0 ? 0 : s->gap;
        }
        if (s->gap > 0 && fd == 1 && !(s->fds & 4u)) /* stdout takes nothing more: say it on stderr */
            console_put(2, note + (note[0] == '\n'), (size_t)n - (note[0] == '\n'));
        if (s->dropped > 0 && o < cap)
            o += (size_t)snprintf(summary + o, cap - o, "%s%llu console line%s dropped on %s (%s)", o ? "; " : "",
                                  (unsigned long long)s->dropped, s->dropped == 1 ? "" : "s",
                                  s->fds == 6u ? "stdout and stderr" : fd == 1 ? "stdout" : "stderr",
                                  s->broken ? "its reader went away" : "not read");
        total += s->dropped;
    }
    for (int fd = 1; fd <= 2; fd++) {
        struct stream *s = &s_streams[fd];
        if (s->own_wfd)
            close(s->wfd);
        free(s->buf);
        memset(s, 0, sizeof *s);
    }
    return total;
}
