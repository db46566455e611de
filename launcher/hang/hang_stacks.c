/* hang_stacks: `plaunch __stacks`: ownership checks, capture processes run from one loop with deadlines (the child
 * registry, proc.h, reaps them and kills them at their deadlines), their line-by-line parts merged, the document
 * printed. */
#include "launcher/hang/hang_stacks.h"

#include "launcher/hang/hang_dw.h"
#include "launcher/hang/hang_json.h"
#include "launcher/hang/hang_proc.h"
#include "launcher/hang/hang_pyspy.h"
#include "launcher/hang/hang_capture.h"
#include "common/loop.h"
#include "common/proc.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_PARALLEL 4              /* capture processes at once (each loads debug information) */
#define S_LINE_MAX (512u << 10)   /* bytes of one part (a thread of 48 frames is ~30 KiB) */
#define S_GRACE_MS 500            /* after the deadline: how long killed captures may take to be reaped */
#define S_FRAMES_MAX (5u << 20)   /* bytes of parts before their frames are dropped, */
#define S_THREADS_MAX (1u << 20)  /* and then their threads: with the processes' headers (1024 of < 1 KiB), the
                                   * document stays under HANG_JSON_MAX */
_Static_assert(S_FRAMES_MAX + S_THREADS_MAX + HANG_PROCS_MAX * 1024u < HANG_JSON_MAX, "the document fits its decoder");

static const char s_usage[] =
    "Usage: plaunch __stacks [--deadline-ms N] [--stop-ms N] [--per-pid-ms N] [--parent PID] [--no-py-spy] PID...\n"
    "  (started by plaunch's agent on a hang; prints the native and Python stacks of each PID's process tree as\n"
    "  one JSON document, docs/hang.md; only children of --parent, by default the caller, are touched)\n";

struct s_stacks;

struct s_kid {
    struct s_stacks *s;
    int root;
    pid_t pid; /* the capture process; 0 not started */
    int fd, eof, reaped, done, status, killed;
    int64_t start_ms, deadline_ms;
    size_t len;
    char *line;
    char err[HANG_ERR_MAX];
};

struct s_stacks {
    loop_t *loop;
    struct hang_trace *out;
    struct s_kid kids[HANG_STACKS_PIDS_MAX];
    int n, next, running, left, over;
    size_t out_bytes; /* of the parts merged so far */
    int64_t deadline_ms, per_ms, stop_ms;
    pid_t self;
    struct hang_dw dw;
    int have_dw;
    char dw_err[HANG_ERR_MAX], pyspy[512];
};

static int s_emit(struct hang_trace *part, void *arg)
{
    int fd = *(int *)arg;
    char *text = hang_json_encode(part, NULL, 0);
    int rc = text && util_write_all(fd, text, strlen(text)) == 0 && util_write_all(fd, "\n", 1) == 0 ? 0 : -1;
    free(text);
    return rc;
}

/* The capture process of one root: native stacks, then py-spy on the CPython ones. Never returns. */
static void s_capture(struct s_stacks *s, struct s_kid *k, int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != s->self)
        _exit(1);
    /* Its own deadline comes a little before the one it is killed at, so that it can say what ran late. */
    int64_t now = hang_proc_now_ms(), span = k->deadline_ms - now;
    int64_t own = k->deadline_ms - (span / 10 < 200 ? span / 10 : 200);
    struct hang_capture_opts o = { .deadline_ms = s->pyspy[0] ? now + (own - now) * 2 / 3 : own,
                                   .stop_ms = (int)s->stop_ms };
    int py[HANG_TREE_MAX];
    int npy = hang_capture_tree(s->have_dw ? &s->dw : NULL, s->dw_err, k->root, &o, s_emit, &fd, py);
    for (int i = 0; s->pyspy[0] && i < npy; i++) {
        struct hang_trace *t = hang_trace_new();
        struct hang_proc *p = t ? hang_trace_add_proc(t, py[i], 0, k->root) : NULL;
        if (p) {
            hang_pyspy_run(s->pyspy, t, p, own);
            s_emit(t, &fd);
        }
        hang_trace_destroy(&t);
    }
    _exit(0);
}

static void s_kid_error(struct s_kid *k, const char *msg)
{
    if (!k->err[0])
        snprintf(k->err, sizeof k->err, "%s", msg);
}

static void s_start_next(struct s_stacks *s);

static void s_finish(struct s_kid *k)
{
    struct s_stacks *s = k->s;
    if (k->done || !(k->eof && k->reaped))
        return;
    k->done = 1;
    s->running--;
    if (!k->killed && !(WIFEXITED(k->status) && WEXITSTATUS(k->status) == 0)) {
        char msg[HANG_ERR_MAX];
        snprintf(msg, sizeof msg, "the capture process ended with %s %d", WIFSIGNALED(k->status) ? "signal" : "exit",
                 WIFSIGNALED(k->status) ? WTERMSIG(k->status) : WEXITSTATUS(k->status));
        s_kid_error(k, msg);
    }
    free(k->line);
    k->line = NULL;
    if (--s->left == 0)
        loop_stop(s->loop);
    else
        s_start_next(s);
}

/* One complete part from a capture process, merged into the document (its processes belong to k's root). */
static void s_part(struct s_kid *k, const char *text, size_t len)
{
    char err[HANG_ERR_MAX];
    struct hang_trace *part = hang_json_decode(text, len, NULL, NULL, err, sizeof err);
    if (!part) {
        s_kid_error(k, err);
        return;
    }
    for (int i = 0; i < part->nprocs; i++)
        part->procs[i].root = k->root;
    /* The document stays within what the agent decodes: frames go first, then threads; headers always fit. */
    struct s_stacks *s = k->s;
    if (s->out_bytes + len > S_FRAMES_MAX) {
        hang_trace_strip(part, s->out_bytes + len <= S_FRAMES_MAX + S_THREADS_MAX);
        s_kid_error(k, "the document reached its bound: frames (or threads) were left out");
        char *left = hang_json_encode(part, NULL, 0);
        len = left ? strlen(left) : len;
        free(left);
    }
    s->out_bytes += len;
    if (hang_trace_merge(s->out, part) < 0)
        s_kid_error(k, "the document is full: processes or threads were left out");
    hang_trace_destroy(&part);
}

static int s_on_data(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    struct s_kid *k = arg;
    char buf[65536];
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (r <= 0) {
        loop_remove_fd(loop, fd);
        close(fd);
        k->fd = -1;
        k->eof = 1;
        s_finish(k);
        return 0;
    }
    for (ssize_t i = 0; i < r; i++) {
        if (buf[i] == '\n') {
            s_part(k, k->line, k->len);
            k->len = 0;
        } else if (k->len < S_LINE_MAX) {
            k->line[k->len++] = buf[i];
        } else if (!k->killed) {
            proc_signal(k->pid, k, SIGKILL);
            k->killed = 1;
            s_kid_error(k, "the capture process wrote a part past 512 KiB: killed");
        }
    }
    return 0;
}

/* Its deadline: the registry kills it right after this. */
static void s_on_late(void *owner, pid_t pid)
{
    struct s_kid *k = owner;
    char msg[HANG_ERR_MAX];
    if (k->done || k->killed)
        return;
    k->killed = 1;
    snprintf(msg, sizeof msg, "the capture did not end within its %lld ms: killed (what it had sent is kept)",
             (long long)(k->deadline_ms - k->start_ms));
    s_kid_error(k, msg);
}

static void s_on_exit(void *owner, const struct proc_exit *e)
{
    struct s_kid *k = owner;
    k->reaped = 1;
    k->status = e->status;
    s_finish(k);
}

static void s_start_next(struct s_stacks *s)
{
    while (!s->over && s->running < S_PARALLEL && s->next < s->n) {
        struct s_kid *k = &s->kids[s->next++];
        if (k->done)
            continue;
        int p[2];
        k->line = malloc(S_LINE_MAX);
        int64_t now = k->start_ms = hang_proc_now_ms();
        k->deadline_ms = now + s->per_ms < s->deadline_ms ? now + s->per_ms : s->deadline_ms;
        if (!k->line || pipe2(p, O_CLOEXEC) < 0 || (k->pid = fork()) < 0) {
            s_kid_error(k, "cannot start a capture process (out of memory, descriptors or processes)");
            k->done = 1;
            free(k->line);
            k->line = NULL;
            s->left--;
            continue;
        }
        if (k->pid == 0) {
            close(p[0]);
            s_capture(s, k, p[1]);
        }
        close(p[1]);
        k->fd = p[0];
        s->running++;
        if (proc_add(k->pid, 0, s_on_exit, k) < 0) {
            kill(k->pid, SIGKILL); /* our child this instant; the loop reaps it as nobody's */
            k->reaped = k->killed = 1;
            s_kid_error(k, "cannot watch the capture process");
        } else {
            proc_deadline(k->pid, k, (uint64_t)k->deadline_ms * 1000000u, s_on_late);
        }
        if (loop_add_fd(s->loop, k->fd, ZMQ_POLLIN, s_on_data, k) < 0) {
            proc_signal(k->pid, k, SIGKILL);
            k->killed = 1;
            k->eof = 1;
            s_kid_error(k, "cannot watch the capture process");
        }
    }
    if (s->left == 0)
        loop_stop(s->loop);
}

static int s_on_grace(loop_t *loop, int id, void *arg)
{
    loop_stop(loop);
    return 0;
}

/* The whole run's deadline: what runs is killed, what waits is not started. */
static int s_on_deadline(loop_t *loop, int id, void *arg)
{
    struct s_stacks *s = arg;
    s->over = 1;
    for (int i = 0; i < s->n; i++) {
        struct s_kid *k = &s->kids[i];
        if (k->done)
            continue;
        if (k->pid > 0 && !k->killed) {
            proc_signal(k->pid, k, SIGKILL);
            k->killed = 1;
            s_kid_error(k, "the run's deadline passed during the capture: killed (what it had sent is kept)");
        } else if (k->pid == 0) {
            s_kid_error(k, "not captured: the run's deadline passed before its turn");
            k->done = 1;
            s->left--;
        }
    }
    if (s->left == 0)
        loop_stop(loop);
    else
        loop_timer_after_ms(loop, S_GRACE_MS, s_on_grace, s);
    return 0;
}

static int s_number(const char *opt, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "plaunch __stacks: %s wants a whole number in [%ld, %ld], not '%s'\n%s", opt, lo, hi,
                v ? v : "", s_usage);
        return -1;
    }
    *out = x;
    return 0;
}

/* Options and pids into s; 0, or -1 after a message. */
static int s_args(struct s_stacks *s, int argc, char **argv, long *parent, int *no_pyspy)
{
    long deadline = HANG_STACKS_DEADLINE_MS, stop = HANG_STACKS_STOP_MS, per = 0, v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--no-py-spy") == 0) {
            *no_pyspy = 1;
        } else if (strcmp(a, "--deadline-ms") == 0 || strcmp(a, "--stop-ms") == 0 || strcmp(a, "--per-pid-ms") == 0 ||
                   strcmp(a, "--parent") == 0) {
            long *dst = strcmp(a, "--deadline-ms") == 0 ? &deadline : strcmp(a, "--stop-ms") == 0 ? &stop
                        : strcmp(a, "--per-pid-ms") == 0 ? &per : parent;
            if (s_number(a, i + 1 < argc ? argv[i + 1] : NULL, dst == parent ? 1 : 10, dst == parent ? 4194304 : 600000,
                         dst) < 0)
                return -1;
            i++;
        } else if (strcmp(a, "--help") == 0) {
            fputs(s_usage, stdout);
            exit(0);
        } else if (a[0] == '-') {
            fprintf(stderr, "plaunch __stacks: unknown option '%s'\n%s", a, s_usage);
            return -1;
        } else {
            if (s->n == HANG_STACKS_PIDS_MAX) {
                fprintf(stderr, "plaunch __stacks: more than %d pids\n", HANG_STACKS_PIDS_MAX);
                return -1;
            }
            if (s_number("a pid", a, 1, 4194304, &v) < 0)
                return -1;
            s->kids[s->n].root = (int)v;
            s->kids[s->n].s = s;
            s->kids[s->n++].fd = -1;
        }
    }
    if (s->n == 0) {
        fprintf(stderr, "plaunch __stacks: no pid given\n%s", s_usage);
        return -1;
    }
    /* A fair share each when there are more pids than capture processes at once. */
    s->per_ms = per ? per : s->n <= S_PARALLEL ? deadline : deadline * S_PARALLEL / s->n;
    s->stop_ms = stop;
    s->deadline_ms = hang_proc_now_ms() + deadline;
    return 0;
}

/* Refuses pids that are not parent's children (the agent's workers): their numbers may be anyone's. */
static void s_check_owner(struct s_stacks *s, int parent)
{
    char msg[HANG_ERR_MAX];
    for (int i = 0; i < s->n; i++) {
        struct s_kid *k = &s->kids[i];
        int ppid = 0;
        for (int j = 0; j < i && !k->done; j++)
            if (s->kids[j].root == k->root)
                k->done = 1; /* asked twice: captured once */
        if (k->done)
            continue;
        if (hang_proc_stat(k->root, k->root, NULL, &ppid) < 0)
            snprintf(msg, sizeof msg, "pid %d: no such process (it exited)", k->root);
        else if (ppid != parent)
            snprintf(msg, sizeof msg, "pid %d is not a child of pid %d (its parent is %d): not ours, left alone",
                     k->root, parent, ppid);
        else
            continue;
        s_kid_error(k, msg);
        k->done = 1;
    }
    s->left = 0;
    for (int i = 0; i < s->n; i++)
        s->left += !s->kids[i].done;
}

/* Every pid asked for has its process in the document, with what went wrong. */
static void s_errors(struct s_stacks *s)
{
    for (int i = 0; i < s->n; i++) {
        struct s_kid *k = &s->kids[i];
        if (!k->pid && !k->err[0] && !k->done)
            s_kid_error(k, "not captured");
        struct hang_proc *p = hang_trace_find(s->out, k->root);
        if (!p && !(p = hang_trace_add_proc(s->out, k->root, 0, k->root)))
            continue;
        if (k->err[0] && !p->error[0])
            hang_trace_set(s->out, &p->error, k->err, HANG_ERR_MAX);
        else if (k->err[0] && !strstr(p->error, k->err))
            hang_trace_setf(s->out, &p->error, HANG_ERR_MAX, "%s; %s", p->error, k->err);
    }
}

int hang_stacks_main(int argc, char **argv)
{
    static struct s_stacks st;
    struct s_stacks *s = &st;
    long parent = getppid();
    int no_pyspy = 0, rc = 1;
    if (s_args(s, argc, argv, &parent, &no_pyspy) < 0)
        return 2;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    unsetenv("DEBUGINFOD_URLS"); /* no network fetches of debug information while the job hangs */
    s->self = getpid();
    s->have_dw = hang_dw_open(&s->dw, NULL, s->dw_err, sizeof s->dw_err) == 0;
    if (no_pyspy || hang_pyspy_find(s->pyspy, sizeof s->pyspy) < 0)
        s->pyspy[0] = '\0';
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    s->out = hang_trace_new();
    s->loop = loop_new();
    char err[256] = "out of memory";
    if (!s->out || !s->loop || proc_attach(s->loop, err, sizeof err) < 0 ||
        loop_timer_at(s->loop, (uint64_t)s->deadline_ms * 1000000u, s_on_deadline, s) < 0) {
        fprintf(stderr, "plaunch __stacks: cannot set up its loop: %s\n", err);
        goto out;
    }
    s_check_owner(s, (int)parent);
    s_start_next(s);
    if (s->left > 0)
        loop_run(s->loop);
    s_errors(s);
    char *text = hang_json_encode(s->out, NULL, 0);
    if (text && util_write_all(STDOUT_FILENO, text, strlen(text)) == 0 && util_write_all(STDOUT_FILENO, "\n", 1) == 0)
        rc = 0;
    else
        fprintf(stderr, "plaunch __stacks: cannot write the document: %s\n", text ? strerror(errno) : "out of memory");
    free(text);
out:
    proc_detach();
    loop_destroy(&s->loop);
    hang_trace_destroy(&s->out);
    if (s->have_dw)
        hang_dw_close(&s->dw);
    return rc;
}
