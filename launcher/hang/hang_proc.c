/* hang_proc: bounded /proc reads of another process and ptrace seize/interrupt/detach of its threads with a
 * deadline (PTRACE_SEIZE sends no SIGSTOP, so a thread that never stops is left exactly as it was). */
#include "launcher/hang/hang_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t hang_proc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hang_proc_read(int pid, const char *name, char *buf, size_t cap)
{
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, name);
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    int e = errno;
    close(fd);
    buf[got] = '\0';
    while (got > 0 && buf[got - 1] == '\n')
        buf[--got] = '\0';
    errno = e;
    return (int)got;
}

int hang_proc_stat(int pid, int tid, char *state, int *ppid)
{
    char name[64], buf[1024];
    snprintf(name, sizeof name, "task/%d/stat", tid);
    if (hang_proc_read(pid, name, buf, sizeof buf) <= 0)
        return -1;
    char *close_paren = strrchr(buf, ')'); /* the comm may hold ')' itself */
    int pp = 0;
    char st = '?';
    if (!close_paren || sscanf(close_paren + 1, " %c %d", &st, &pp) != 2)
        return -1;
    if (state)
        *state = st;
    if (ppid)
        *ppid = pp;
    return 0;
}

int hang_proc_exe(int pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, buf, cap - 1);
    buf[n > 0 ? n : 0] = '\0';
    const char *base = strrchr(buf, '/');
    base = base ? base + 1 : buf;
    return strncmp(base, "python", 6) == 0;
}

/* A decimal directory entry name as a positive id, else 0. */
static int s_id(const char *name)
{
    char *end;
    long v = strtol(name, &end, 10);
    return *name && *end == '\0' && v > 0 && v <= 0x3fffffff ? (int)v : 0;
}

int hang_proc_threads(int pid, int *tids, int cap, int *total)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    *total = 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int n = 0, have_main = 0, room = cap - 1; /* tids[0] is kept for the main thread */
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int tid = s_id(e->d_name);
        if (!tid)
            continue;
        (*total)++;
        if (tid == pid) {
            have_main = 1;
            continue;
        }
        /* The room smallest other tids, sorted: append, or replace the largest when smaller. */
        if (room <= 0 || (n == room && tid >= tids[n - 1]))
            continue;
        int i = n < room ? n++ : n - 1;
        for (; i > 0 && tids[i - 1] > tid; i--)
            tids[i] = tids[i - 1];
        tids[i] = tid;
    }
    closedir(d);
    if (have_main && cap > 0) {
        memmove(tids + 1, tids, (size_t)n * sizeof *tids);
        tids[0] = pid;
        n++;
    }
    return n;
}

int hang_proc_children(int pid, int *kids, int cap)
{
    char path[64], name[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while (n < cap && (e = readdir(d)) != NULL) {
        int tid = s_id(e->d_name);
        if (!tid)
            continue;
        snprintf(name, sizeof name, "task/%d/children", tid);
        int len = hang_proc_read(pid, name, buf, sizeof buf);
        /* Only numbers followed by their separator count: the last one of a cut read may be partial. */
        for (char *p = buf; len > 0 && n < cap && *p;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || *end != ' ') /* the kernel writes "PID " for each: a number without one was cut */
                break;
            int dup = 0;
            for (int k = 0; k < n; k++)
                dup |= kids[k] == (int)v;
            if (!dup && v > 0)
                kids[n++] = (int)v;
            p = end + 1;
        }
    }
    closedir(d);
    return n;
}

static int s_index(const struct hang_hold *h, int tid)
{
    for (int i = 0; i < h->n; i++)
        if (h->tid[i] == tid)
            return i;
    return -1;
}

/* Takes every event waiting for us; the number of threads still seized and not stopped. The capture process's own
 * wait, outside the child registry (proc.h): ptrace's stops of the seized threads come only through waitpid, and
 * this process has no child at this point (py-spy runs after the release). */
static int s_drain(struct hang_hold *h)
{
    for (;;) {
        int st;
        pid_t r = waitpid(-1, &st, __WALL | WNOHANG);
        if (r <= 0)
            break;
        int i = s_index(h, r);
        if (i < 0)
            continue;
        if (WIFSTOPPED(st)) {
            if (h->st[i] == HANG_HOLD_SEIZED)
                h->sig[i] = (st >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
            h->st[i] = HANG_HOLD_STOPPED;
        } else if (WIFEXITED(st) || WIFSIGNALED(st)) {
            h->st[i] = HANG_HOLD_GONE;
        }
    }
    int waiting = 0;
    for (int i = 0; i < h->n; i++)
        waiting += h->st[i] == HANG_HOLD_SEIZED;
    return waiting;
}

int hang_proc_hold(struct hang_hold *h, int pid, int64_t deadline_ms, char *err, size_t errlen)
{
    char state = '?', buf[256];
    memset(h, 0, sizeof *h);
    h->pid = pid;
    if (hang_proc_stat(pid, pid, &state, NULL) < 0) {
        snprintf(err, errlen, "pid %d: no such process (it exited)", pid);
        return -1;
    }
    h->n = hang_proc_threads(pid, h->tid, HANG_THREADS_MAX, &h->total);
    /* A main thread that called pthread_exit is a zombie too, while the other threads go on. */
    if ((state == 'Z' || state == 'X') && h->total <= 1) {
        snprintf(err, errlen, "pid %d is a zombie: it exited and its parent has not reaped it", pid);
        return -1;
    }
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int seized = 0;
    for (int i = 0; i < h->n; i++) {
        char name[64];
        h->state[i] = '?';
        hang_proc_stat(pid, h->tid[i], &h->state[i], NULL);
        snprintf(name, sizeof name, "task/%d/wchan", h->tid[i]);
        if (hang_proc_read(pid, name, h->wchan[i], sizeof h->wchan[i]) < 0 || strcmp(h->wchan[i], "0") == 0)
            h->wchan[i][0] = '\0';
        if (ptrace(PTRACE_SEIZE, h->tid[i], NULL, NULL) < 0) {
            h->err[i] = errno;
            continue;
        }
        h->st[i] = HANG_HOLD_SEIZED;
        seized++;
        if (ptrace(PTRACE_INTERRUPT, h->tid[i], NULL, NULL) < 0)
            h->st[i] = HANG_HOLD_GONE;
    }
    int64_t t0 = hang_proc_now_ms();
    while (seized && s_drain(h) > 0) {
        int64_t left = deadline_ms - hang_proc_now_ms();
        if (left <= 0)
            break;
        struct timespec ts = { .tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000 };
        sigtimedwait(&chld, NULL, &ts);
    }
    h->waited_ms = (int)(hang_proc_now_ms() - t0);
    int stopped = 0;
    for (int i = 0; i < h->n; i++)
        stopped += h->st[i] == HANG_HOLD_STOPPED;
    if (stopped > 0)
        return 0;
    hang_proc_why(h, 0, buf, sizeof buf);
    snprintf(err, errlen, "pid %d: %s", pid, h->n ? buf : "no thread left");
    return -1;
}

void hang_proc_why(const struct hang_hold *h, int i, char *buf, size_t cap)
{
    char name[64], wchan[64] = "", tracer[32] = "", status[2048];
    char state = '?';
    buf[0] = '\0';
    switch (h->st[i]) {
    case HANG_HOLD_STOPPED:
        return;
    case HANG_HOLD_GONE:
        snprintf(buf, cap, "thread %d exited during the capture", h->tid[i]);
        return;
    case HANG_HOLD_SEIZED:
        hang_proc_stat(h->pid, h->tid[i], &state, NULL);
        snprintf(name, sizeof name, "task/%d/wchan", h->tid[i]);
        hang_proc_read(h->pid, name, wchan, sizeof wchan);
        snprintf(buf, cap, "thread %d did not stop within %d ms (state %c%s%s)%s", h->tid[i], h->waited_ms, state,
                 wchan[0] && strcmp(wchan, "0") ? ", in " : "", wchan[0] && strcmp(wchan, "0") ? wchan : "",
                 state == 'D' ? ": it waits in the kernel where ptrace cannot reach it (uninterruptible sleep, vfork, "
                 "a driver)" : "");
        return;
    case HANG_HOLD_NONE:
        break;
    }
    if (h->err[i] == EPERM) {
        snprintf(name, sizeof name, "task/%d/status", h->tid[i]);
        hang_proc_read(h->pid, name, status, sizeof status);
        const char *t = strstr(status, "TracerPid:");
        if (t)
            sscanf(t + 10, " %31s", tracer);
        if (tracer[0] && strcmp(tracer, "0") != 0)
            snprintf(buf, cap, "thread %d is already traced by pid %s (a debugger or profiler): ptrace refused",
                     h->tid[i], tracer);
        else if (hang_proc_stat(h->pid, h->tid[i], &state, NULL) == 0 && (state == 'Z' || state == 'X'))
            snprintf(buf, cap, "thread %d has exited (zombie)", h->tid[i]);
        else
            snprintf(buf, cap, "thread %d: ptrace not permitted (run plaunch as root or with CAP_SYS_PTRACE, or "
                     "lower kernel.yama.ptrace_scope)", h->tid[i]);
    } else if (h->err[i] == ESRCH) {
        snprintf(buf, cap, "thread %d exited before the capture", h->tid[i]);
    } else {
        snprintf(buf, cap, "thread %d: ptrace: %s", h->tid[i], strerror(h->err[i]));
    }
}

void hang_proc_release(struct hang_hold *h)
{
    for (int i = 0; i < h->n; i++)
        if (h->st[i] == HANG_HOLD_STOPPED) {
            ptrace(PTRACE_DETACH, h->tid[i], NULL, (void *)(intptr_t)h->sig[i]);
            h->st[i] = HANG_HOLD_NONE;
            h->err[i] = 0;
        }
}
