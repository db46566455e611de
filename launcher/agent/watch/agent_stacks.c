/* agent_stacks: for a hung job, where each of this node's ranks is (agent_stacks.h says how). */
#include "launcher/agent/watch/agent_stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launcher/hang/hang_json.h"
#include "launcher/hang/hang_proc.h"
#include "launcher/hang/hang_pytb.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/wire/wire.h"

#define AS_OUT_MAX (4u << 20)     /* one __stacks answer */
#define AS_TAIL (256u << 10)      /* the end of a rank's log searched for faulthandler's dump */
#define AS_SEND_MAX (60u << 10)   /* one rank's REPORT STACKS */
#define AS_ABORT_MS 2500          /* CPython ranks have this long to print their tracebacks and end */
#define AS_POLL_MS 50
#define AS_PY_PIDS 8              /* CPython processes ended per worker (itself and its children) */

enum as_state { AS_IDLE, AS_NATIVE, AS_ABORT };

struct as_worker {
    int in;                       /* running when the request came */
    int rank, local;
    pid_t pid;
    pid_t cap_pid;                /* its __stacks process (registered, proc.h); 0 none */
    int cap_fd;
    char *buf;
    size_t len;
    int truncated;
    int py_pidfd[AS_PY_PIDS], npy;
};

struct agent_stacks {
    const struct job *job;
    loop_t *loop;
    agent_hang_send_fn send;
    agent_stacks_hold_fn hold;
    void *arg;
    char exe[PATH_MAX];
    int st_timer;
    enum as_state st;
    uint64_t abort_until_ns;
    int abort;                /* this collection ends the CPython ranks for their tracebacks (not a warning's) */
    struct as_worker *w;
    int nw;
};

static int s_pidfd_open(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int s_pidfd_kill(int pidfd, int sig)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static int s_gone(int pidfd)
{
    struct pollfd p = { .fd = pidfd, .events = POLLIN };
    return poll(&p, 1, 0) != 0;
}

/* ---- stacks: native, by plaunch __stacks ------------------------------------------------------------- */

static void s_drop_capture(agent_stacks_t *h, struct as_worker *w)
{
    if (w->cap_fd >= 0) {
        loop_remove_fd(h->loop, w->cap_fd);
        close(w->cap_fd);
    }
    if (w->cap_pid > 0) {
        /* done or not: it has nothing more to say (the loop's reaper takes it; refused once it was reaped) */
        proc_signal(w->cap_pid, h, SIGKILL);
        proc_disown(w->cap_pid, h);
    }
    w->cap_fd = -1;
    w->cap_pid = 0;
}

static void s_abort_phase(agent_stacks_t *h);

static void s_native_maybe_done(agent_stacks_t *h)
{
    for (int i = 0; i < h->nw; i++)
        if (h->w[i].in && h->w[i].cap_fd >= 0)
            return;
    s_abort_phase(h);
}

static int s_on_capture(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    agent_stacks_t *h = arg;
    struct as_worker *w = NULL;
    for (int i = 0; i < h->nw && !w; i++)
        if (h->w[i].cap_fd == fd)
            w = &h->w[i];
    if (!w)
        return 0;
    for (;;) {
        char tmp[16384];
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            break;
        size_t take = w->len + (size_t)n > AS_OUT_MAX ? AS_OUT_MAX - w->len : (size_t)n;
        char *b = take ? realloc(w->buf, w->len + take + 1) : w->buf;
        if (!b || take < (size_t)n) {
            w->truncated = 1;
            break;
        }
        memcpy(b + w->len, tmp, take);
        w->buf = b;
        w->len += take;
        w->buf[w->len] = '\0';
    }
    s_drop_capture(h, w);
    if (h->st == AS_NATIVE)
        s_native_maybe_done(h);
    return 0;
}

static int s_spawn_capture(agent_stacks_t *h, struct as_worker *w, int deadline_ms)
{
    int p[2];
    char dl[32], pid[32];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    snprintf(dl, sizeof dl, "%d", deadline_ms);
    snprintf(pid, sizeof pid, "%d", (int)w->pid);
    char *argv[] = { h->exe, "__stacks", "--deadline-ms", dl, pid, NULL };
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    /* the workers' environment (wenv.c: without PLAUNCH_TOKEN), not the agent's: the collector and the py-spy it
     * runs hold no credential of the job */
    struct proc_spawn sp = { .path = h->exe, .argv = argv, .envp = job_base_env(h->job),
                             .stdio = { PROC_NULL, p[1], PROC_KEEP }, .group = 1, .mask = &none, .dfl = &all };
    pid_t child = proc_spawn(&sp, NULL, h);
    int e = errno;
    close(p[1]);
    if (child < 0) {
        close(p[0]);
        errno = e;
        return -1;
    }
    w->cap_pid = child;
    w->cap_fd = p[0];
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    if (loop_add_fd(h->loop, p[0], ZMQ_POLLIN, s_on_capture, h) < 0) {
        s_drop_capture(h, w);
        return -1;
    }
    return 0;
}

/* ---- stacks: CPython tracebacks, by SIGABRT and faulthandler ------------------------------------------ */

/* Whether pid's command (/proc/PID/comm) is CPython's. */
static int s_is_python(pid_t pid)
{
    char comm[32];
    return hang_proc_read((int)pid, "comm", comm, sizeof comm) > 0 && strncmp(comm, "python", 6) == 0;
}

/* SIGABRT to the worker and its direct children that run CPython, each through a pidfd proved to be the process
 * found (the worker is our unreaped child; a child's parent is checked again after its pidfd is open). */
static void s_abort_worker(struct as_worker *w)
{
    int cand[AS_PY_PIDS];
    cand[0] = (int)w->pid;
    int nc = 1 + hang_proc_children((int)w->pid, cand + 1, AS_PY_PIDS - 1);
    w->npy = 0;
    for (int i = 0; i < nc; i++) {
        if (!s_is_python(cand[i]))
            continue;
        int pfd = s_pidfd_open(cand[i]);
        if (pfd < 0)
            continue;
        char state;
        int ppid = -1;
        if ((i > 0 && (hang_proc_stat(cand[i], cand[i], &state, &ppid) < 0 || ppid != w->pid)) ||
            s_pidfd_kill(pfd, SIGABRT) < 0) {
            close(pfd);
            continue;
        }
        w->py_pidfd[w->npy++] = pfd;
    }
}

static void s_send_all(agent_stacks_t *h);

static int s_abort_poll(loop_t *loop, int id, void *arg)
{
    agent_stacks_t *h = arg;
    h->st_timer = 0;
    int left = 0;
    for (int i = 0; i < h->nw; i++) {
        for (int k = 0; k < h->w[i].npy; k++)
            left += !s_gone(h->w[i].py_pidfd[k]);
        /* and its exit taken in by the supervisor, which drains its output pipe into the log first: the dump is
         * in the file only then */
        left += h->w[i].npy > 0 && h->job->workers[i].state == W_RUNNING && h->job->workers[i].pid == h->w[i].pid;
    }
    if (left && loop_now_ns() < h->abort_until_ns) {
        h->st_timer = loop_timer_after_ms(loop, AS_POLL_MS, s_abort_poll, h);
        return 0;
    }
    if (left)
        log_warn("stacks: %d CPython process%s did not end within %.1f s of SIGABRT; their tracebacks may be "
                 "missing", left, left == 1 ? "" : "es", AS_ABORT_MS / 1000.0);
    s_send_all(h);
    return 0;
}

static void s_abort_phase(agent_stacks_t *h)
{
    if (h->st_timer > 0)
        loop_timer_cancel(h->loop, h->st_timer);
    for (int i = 0; i < h->nw; i++)
        if (h->w[i].in)
            s_drop_capture(h, &h->w[i]);
    h->st = AS_ABORT;
    if (h->hold && h->abort)
        h->hold(h->arg, 1);
    int any = 0;
    for (int i = 0; h->abort && i < h->nw; i++) {
        struct as_worker *w = &h->w[i];
        const struct worker *wk = &h->job->workers[i];
        if (w->in && wk->state == W_RUNNING && wk->pid == w->pid) {
            s_abort_worker(w);
            any += w->npy;
        }
    }
    h->abort_until_ns = loop_now_ns() + (uint64_t)AS_ABORT_MS * 1000000ull;
    /* one poll interval even when nothing was aborted, or all at once: the output pump takes the last bytes */
    h->st_timer = loop_timer_after_ms(h->loop, AS_POLL_MS * (any ? 1 : 0), s_abort_poll, h);
}

static int s_native_deadline(loop_t *loop, int id, void *arg)
{
    agent_stacks_t *h = arg;
    h->st_timer = 0;
    if (h->st == AS_NATIVE)
        s_abort_phase(h);
    return 0;
}

/* ---- the answers ------------------------------------------------------------------------------------- */

/* One rank's REPORT STACKS: its worker's tree from plaunch __stacks, its CPython processes' tracebacks from its
 * log, within AS_SEND_MAX (hang_json drops the least telling frames first). */
static void s_send_rank(agent_stacks_t *h, struct as_worker *w, const struct worker *wk)
{
    char err[256] = "";
    struct hang_json_rank who = { .rank = w->rank, .pid = (int)w->pid };
    snprintf(who.node, sizeof who.node, "%.*s", (int)sizeof who.node - 1, h->job->node.node_label);
    snprintf(who.gpu, sizeof who.gpu, "%s", wk->gpu);
    struct hang_trace *t = w->len ? hang_json_decode(w->buf, w->len, NULL, NULL, err, sizeof err) : NULL;
    if (!t) {
        snprintf(who.error, sizeof who.error, "native stacks: %.200s",
                 w->truncated ? "the answer of plaunch __stacks was too large"
                 : w->len    ? err
                             : "no answer from plaunch __stacks in time");
        t = hang_trace_new();
    }
    if (t && h->abort && wk->log_fd >= 0 && hang_pytb_attach_fd(t, (int)w->pid, wk->log_fd, AS_TAIL, err, sizeof err) < 0 &&
        !who.error[0])
        snprintf(who.error, sizeof who.error, "Python tracebacks: %s", err);
    char *json = t ? hang_json_encode(t, &who, AS_SEND_MAX) : NULL;
    Plaunch__Stacks st = PLAUNCH__STACKS__INIT;
    st.rank = (uint32_t)w->rank;
    st.doc.data = (uint8_t *)json;
    st.doc.len = json ? strlen(json) : 0;
    if (json)
        h->send(h->arg, WIRE_R_STACKS, &st);
    else
        log_warn("stacks: rank %d's stacks cannot be encoded (out of memory)", w->rank);
    free(json);
    hang_trace_destroy(&t);
}

static void s_send_all(agent_stacks_t *h)
{
    int n = 0;
    Plaunch__StacksDone done = PLAUNCH__STACKS_DONE__INIT;
    for (int i = 0; i < h->nw; i++) {
        struct as_worker *w = &h->w[i];
        if (!w->in)
            continue;
        s_send_rank(h, w, &h->job->workers[i]);
        for (int k = 0; k < w->npy; k++)
            close(w->py_pidfd[k]);
        w->npy = 0;
        free(w->buf);
        w->buf = NULL;
        w->len = 0;
        w->in = 0;
        n++;
    }
    done.ranks = (uint32_t)n;
    h->send(h->arg, WIRE_R_STACKS_DONE, &done);
    h->st = AS_IDLE;
    if (h->hold && h->abort)
        h->hold(h->arg, 0);
}

void agent_stacks_request(agent_stacks_t *h, const Plaunch__StacksRequest *req)
{
    if (!h || h->st != AS_IDLE)
        return;
    int deadline = (int)req->deadline_ms; /* checked by the wire layer: 1..600 s */
    /* abort false asks for the stacks of a job that goes on (a warning): no SIGABRT, nothing ends */
    h->abort = req->abort;
    int native_ms = deadline / 2 > 3000 ? 3000 : deadline / 2, n = 0;
    h->st = AS_NATIVE;
    for (int i = 0; i < h->nw; i++) {
        struct as_worker *w = &h->w[i];
        const struct worker *wk = &h->job->workers[i];
        w->in = wk->state == W_RUNNING && wk->pid > 0;
        if (!w->in)
            continue;
        w->rank = wk->rank, w->local = wk->local_rank, w->pid = wk->pid, w->truncated = 0, w->len = 0;
        if (s_spawn_capture(h, w, native_ms) == 0)
            n++;
        else
            log_warn("stacks: cannot run plaunch __stacks for rank %d: %s", wk->rank, strerror(errno));
    }
    log_info("stacks: taking the stacks of %d rank%s on %s", n, n == 1 ? "" : "s", h->job->node.node_label);
    h->st_timer = loop_timer_after_ms(h->loop, native_ms + 500, s_native_deadline, h);
    if (n == 0)
        s_native_maybe_done(h);
}

agent_stacks_t *agent_stacks_new(const struct job *job, loop_t *loop, agent_hang_send_fn send, agent_stacks_hold_fn hold,
                                 void *arg, char *err, size_t errlen)
{
    if (job->opt.hang_timeout <= 0)
        return NULL;
    agent_stacks_t *h = calloc(1, sizeof *h);
    ssize_t len = -1;
    if (h && (h->w = calloc((size_t)job->node.nworkers + 1, sizeof *h->w)) != NULL)
        len = readlink("/proc/self/exe", h->exe, sizeof h->exe - 1);
    if (len <= 0) {
        snprintf(err, errlen, "hang watch: %s", h && h->w ? "cannot find this program (/proc/self/exe)"
                                                           : "out of memory");
        if (h)
            free(h->w);
        free(h);
        return NULL;
    }
    h->exe[len] = '\0';
    h->job = job, h->loop = loop, h->send = send, h->hold = hold, h->arg = arg, h->nw = job->node.nworkers;
    for (int i = 0; i < h->nw; i++)
        h->w[i].cap_fd = -1;
    return h;
}

void agent_stacks_destroy(agent_stacks_t **hp)
{
    agent_stacks_t *h = hp ? *hp : NULL;
    if (!h)
        return;
    if (h->st_timer > 0)
        loop_timer_cancel(h->loop, h->st_timer);
    for (int i = 0; i < h->nw; i++) {
        s_drop_capture(h, &h->w[i]);
        for (int k = 0; k < h->w[i].npy; k++)
            close(h->w[i].py_pidfd[k]);
        free(h->w[i].buf);
    }
    free(h->w);
    free(h);
    *hp = NULL;
}
