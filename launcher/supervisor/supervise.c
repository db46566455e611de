/* supervise: the node's supervision core: handlers in the process's loop (signalfd, worker pipes, deadlines; the
 * workers' ends through the child registry) driving an explicit state x event table for start, failure, restart,
 * signal forwarding and shutdown. */
#include "launcher/supervisor/supervise.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "common/net.h"
#include "launcher/supervisor/output.h"
#include "common/proc.h"
#include "launcher/supervisor/sentinel.h"
#include "launcher/supervisor/spawn_worker.h"
#include "launcher/supervisor/strays.h"
#include "launcher/supervisor/wenv.h"

enum sup_state { ST_IDLE, ST_RUNNING, ST_STOPPING, ST_KILLING, ST_DONE, ST_N };
enum sup_event {
    EV_WORKER_OK,     /* a worker exited 0 */
    EV_WORKER_FAIL,   /* a worker exited non-zero or was killed */
    EV_ALL_GONE,      /* no worker of the generation is left */
    EV_STOP_SIGNAL,   /* TERM INT HUP QUIT to the launcher */
    EV_FWD_SIGNAL,    /* USR1 USR2: forwarded, the job goes on */
    EV_GRACE_EXPIRED, /* --grace passed since the stop began */
    EV_CTL_STOP,      /* the controller (coordinator) stops this generation */
    EV_N
};
enum stop_reason { STOP_NONE, STOP_FAILURE, STOP_SIGNAL, STOP_CTL };

struct sup {
    struct job *job;
    loop_t *loop;
    int sigfd;
    enum sup_state state;
    enum stop_reason reason;
    int stop_signal;          /* the signal that stopped the job */
    int grace_timer;
    int grace_signal;         /* the signal the grace period follows, named when it runs out */
    int running;              /* workers of the generation not yet reaped */
    int first_status;         /* wait status of the generation's first failure; -1 while none */
    int exit_code;
    int event_signal;         /* argument of the signal events */
    int held;                 /* the controller holds failure stops: the hang's stacks are being taken */
    const struct sup_ctl *ctl;
};

typedef void (*sup_action)(struct sup *s);

static const char *const s_state_names[] = { "idle", "running", "stopping", "killing", "done" };

static int s_on_output(loop_t *loop, int fd, void *sock, short revents, void *arg);
static void s_on_child(void *owner, const struct proc_exit *e);
static void s_dispatch(struct sup *s, enum sup_event ev);

/* ---- helpers ------------------------------------------------------------------------------------ */

static void s_signal_workers(struct sup *s, int sig)
{
    for (int i = 0; i < s->job->node.nworkers; i++) {
        struct worker *w = &s->job->workers[i];
        if (w->state == W_RUNNING && w->pid > 0) {
            proc_signal_group(w->pid, s, sig);
            if (sig == SIGTERM)
                proc_signal_group(w->pid, s, SIGCONT); /* a stopped group cannot act on SIGTERM */
        }
    }
}

/* Starts every worker of the current generation. Returns 0, or -1 when one could not be forked. */
static int s_start_generation(struct sup *s)
{
    struct job *job = s->job;
    s->first_status = -1;
    if (s->ctl->gen_start)
        s->ctl->gen_start(s->ctl->arg, job);
    log_info("generation %d: starting %d worker%s", job->gen.generation, job->node.nworkers, job->node.nworkers == 1 ? "" : "s");
    for (int i = 0; i < job->node.nworkers; i++) {
        struct worker *w = &job->workers[i];
        char **envp = wenv_build(job, w);
        if (!envp) {
            log_error("cannot build the environment of rank %d: %s", w->rank, strerror(errno));
            return -1;
        }
        /* A worker the console shows gets a pipe for its stderr (to plaunch's stderr); one only logged keeps one
         * pipe, so its workerlog has its writes in their exact order. Its CPUs: the plan's, made once (jobsetup). */
        w->pid = spawn_process(job->opt.prog_argv, envp, i < job->node.bind.n ? &job->node.bind.w[i] : NULL, &w->out_fd,
                               w->tee ? &w->err_fd : NULL, &w->exec_fd);
        int e = errno;
        free(envp);
        if (w->pid < 0) {
            log_error("cannot start rank %d: fork: %s", w->rank, strerror(e));
            return -1;
        }
        if (proc_add(w->pid, PROC_LEADER, s_on_child, s) < 0) {
            log_error("cannot start rank %d: %s", w->rank, strerror(errno));
            killpg(w->pid, SIGKILL); /* our child this instant; the loop reaps it as nobody's */
            w->pid = 0;
            return -1;
        }
        sentinel_watch(w->pid);
        w->state = W_RUNNING;
        w->start_ns = w->out_ns = loop_now_ns();
        w->exec_errno = 0;
        s->running++;
        output_marker(job, w);
        if (loop_add_fd(s->loop, w->out_fd, ZMQ_POLLIN, s_on_output, w) < 0 ||
            (w->err_fd >= 0 && loop_add_fd(s->loop, w->err_fd, ZMQ_POLLIN, s_on_output, w) < 0)) {
            log_error("event loop: %s", strerror(errno));
            return -1;
        }
        log_info("rank %d (local %d%s%s) started, pid %d", w->rank, w->local_rank, w->gpu[0] ? ", GPU " : "",
                 w->gpu, (int)w->pid);
    }
    return 0;
}

static void s_close_output(struct sup *s, struct worker *w)
{
    if (w->out_fd >= 0)
        loop_remove_fd(s->loop, w->out_fd);
    if (w->err_fd >= 0)
        loop_remove_fd(s->loop, w->err_fd);
    output_finish(w);
}

static int s_on_grace(loop_t *loop, int id, void *arg);

static void s_arm_grace(struct sup *s, int sig)
{
    s->grace_signal = sig;
    if (s->grace_timer > 0)
        loop_timer_cancel(s->loop, s->grace_timer);
    s->grace_timer = loop_timer_after_ms(s->loop, (int64_t)(s->job->opt.grace * 1000.0), s_on_grace, s);
}

static void s_cancel_grace(struct sup *s)
{
    if (s->grace_timer > 0)
        loop_timer_cancel(s->loop, s->grace_timer);
    s->grace_timer = 0;
}

/* A generation that could not be started: kill what did start, reap it here, end with 125. */
static void s_abort_generation(struct sup *s)
{
    for (int i = 0; i < s->job->node.nworkers; i++) {
        struct worker *w = &s->job->workers[i];
        if (w->state != W_RUNNING)
            continue;
        proc_signal_group(w->pid, s, SIGKILL);
        proc_wait(w->pid, s, -1, NULL);
        w->state = W_EXITED;
        s->running--;
    }
    s->exit_code = 125;
    s->state = ST_DONE;
    loop_stop(s->loop);
}

/* ---- actions ------------------------------------------------------------------------------------ */

static void a_none(struct sup *s)
{
    (void)s;
}

static void a_begin_stop_failure(struct sup *s)
{
    s->reason = STOP_FAILURE;
    s->state = ST_STOPPING;
    if (s->held) { /* every CPython rank got SIGABRT for its traceback: a SIGTERM now would kill it first */
        log_info("the other workers are stopped once the hung job's stacks are taken");
        return;
    }
    if (s->running > 0)
        log_info("stopping the other %d worker%s of generation %d (SIGTERM, SIGKILL after %gs)", s->running,
                 s->running == 1 ? "" : "s", s->job->gen.generation, s->job->opt.grace);
    s_signal_workers(s, SIGTERM);
    s_arm_grace(s, SIGTERM);
}

static void a_begin_stop_signal(struct sup *s)
{
    if (s->ctl->stop_signal)
        s->ctl->stop_signal(s->ctl->arg, s->event_signal);
    s->reason = STOP_SIGNAL;
    s->stop_signal = s->event_signal;
    s->state = ST_STOPPING;
    log_warn("got SIG%s: stopping %d worker%s (SIGKILL after %gs; send it again to kill now)",
             sigabbrev_np(s->event_signal) ? sigabbrev_np(s->event_signal) : "?", s->running,
             s->running == 1 ? "" : "s", s->job->opt.grace);
    s_signal_workers(s, s->event_signal);
    s_arm_grace(s, s->event_signal);
}

/* A second stop signal during a stop: no more waiting. A failure stop becomes a signal stop (no restart). */
static void a_escalate_signal(struct sup *s)
{
    if (s->reason == STOP_SIGNAL) {
        log_warn("got SIG%s again: killing the workers now", sigabbrev_np(s->event_signal));
        s_signal_workers(s, SIGKILL);
        s->state = ST_KILLING;
        s_cancel_grace(s);
        return;
    }
    int ctl = s->reason == STOP_CTL;
    s->reason = STOP_SIGNAL;
    s->stop_signal = s->event_signal;
    log_warn("got SIG%s while %s: no restart", sigabbrev_np(s->event_signal),
             ctl ? "the coordinator stops this generation" : "stopping after a failure");
    s_signal_workers(s, s->event_signal);
}

static void a_ctl_stop(struct sup *s)
{
    s->reason = STOP_CTL;
    s->state = ST_STOPPING;
    int sig = s->event_signal ? s->event_signal : SIGTERM;
    log_info("coordinator stops generation %d: SIG%s to %d worker%s, SIGKILL after %gs", s->job->gen.generation,
             sigabbrev_np(sig), s->running, s->running == 1 ? "" : "s", s->job->opt.grace);
    s_signal_workers(s, sig);
    s_arm_grace(s, sig);
    if (s->running == 0)
        s_dispatch(s, EV_ALL_GONE);
}

/* A stop signal with no worker running (waiting for the coordinator): the controller decides what follows. */
static void a_idle_signal(struct sup *s)
{
    s->stop_signal = s->event_signal;
    if (s->ctl->stop_signal)
        s->ctl->stop_signal(s->ctl->arg, s->event_signal);
    else
        supervise_finish(s, 128 + s->event_signal);
}

static void a_forward(struct sup *s)
{
    log_info("forwarding SIG%s to %d worker%s", sigabbrev_np(s->event_signal), s->running,
             s->running == 1 ? "" : "s");
    s_signal_workers(s, s->event_signal);
}

static void a_kill(struct sup *s)
{
    s->grace_timer = 0;
    log_warn("%d worker%s still running %gs after SIG%s: sending SIGKILL", s->running, s->running == 1 ? "" : "s",
             s->job->opt.grace, sigabbrev_np(s->grace_signal) ? sigabbrev_np(s->grace_signal) : "?");
    s_signal_workers(s, SIGKILL);
    s->state = ST_KILLING;
}

static void a_finish_ok(struct sup *s)
{
    strays_kill(s->job);
    log_info("all %d worker%s exited 0", s->job->node.nworkers, s->job->node.nworkers == 1 ? "" : "s");
    for (int i = 0; i < s->job->node.nworkers; i++)
        s_close_output(s, &s->job->workers[i]);
    s->state = ST_IDLE;
    s->ctl->gen_over(s->ctl->arg, s->job, 0);
}

/* The generation is over after a stop: the controller (the coordinator) decides between the next generation
 * and the end of the job. */
static void a_end_generation(struct sup *s)
{
    struct job *job = s->job;
    s_cancel_grace(s);
    strays_kill(job);
    for (int i = 0; i < job->node.nworkers; i++)
        s_close_output(s, &job->workers[i]);
    int code = s->reason == STOP_SIGNAL ? 128 + s->stop_signal
               : s->first_status >= 0   ? util_exit_code(s->first_status) : 0;
    s->state = ST_IDLE;
    s->reason = STOP_NONE;
    s->ctl->gen_over(s->ctl->arg, job, code);
}

/* state x event: what the launcher does. Unlisted pairs cannot happen or need nothing. */
static const sup_action s_table[ST_N][EV_N] = {
    [ST_IDLE] = { [EV_WORKER_OK] = a_none, [EV_WORKER_FAIL] = a_none, [EV_ALL_GONE] = a_none,
                  [EV_STOP_SIGNAL] = a_idle_signal, [EV_FWD_SIGNAL] = a_none, [EV_GRACE_EXPIRED] = a_none,
                  [EV_CTL_STOP] = a_none },
    [ST_RUNNING] = { [EV_WORKER_OK] = a_none, [EV_WORKER_FAIL] = a_begin_stop_failure,
                     [EV_ALL_GONE] = a_finish_ok, [EV_STOP_SIGNAL] = a_begin_stop_signal,
                     [EV_FWD_SIGNAL] = a_forward, [EV_GRACE_EXPIRED] = a_none,
                     [EV_CTL_STOP] = a_ctl_stop },
    [ST_STOPPING] = { [EV_WORKER_OK] = a_none, [EV_WORKER_FAIL] = a_none, [EV_ALL_GONE] = a_end_generation,
                      [EV_STOP_SIGNAL] = a_escalate_signal, [EV_FWD_SIGNAL] = a_forward,
                      [EV_GRACE_EXPIRED] = a_kill, [EV_CTL_STOP] = a_none },
    [ST_KILLING] = { [EV_WORKER_OK] = a_none, [EV_WORKER_FAIL] = a_none, [EV_ALL_GONE] = a_end_generation,
                     [EV_STOP_SIGNAL] = a_escalate_signal, [EV_FWD_SIGNAL] = a_forward,
                     [EV_GRACE_EXPIRED] = a_none, [EV_CTL_STOP] = a_none },
    [ST_DONE] = { [EV_WORKER_OK] = a_none, [EV_WORKER_FAIL] = a_none, [EV_ALL_GONE] = a_none,
                  [EV_STOP_SIGNAL] = a_none, [EV_FWD_SIGNAL] = a_none, [EV_GRACE_EXPIRED] = a_none,
                  [EV_CTL_STOP] = a_none },
};

static void s_dispatch(struct sup *s, enum sup_event ev)
{
    enum sup_state before = s->state;
    s_table[s->state][ev](s);
    if (s->state != before)
        log_debug("state %s -> %s", s_state_names[before], s_state_names[s->state]);
}

/* ---- event sources ------------------------------------------------------------------------------ */

static int s_on_grace(loop_t *loop, int id, void *arg)
{
    struct sup *s = arg;
    if (id == s->grace_timer)
        s_dispatch(s, EV_GRACE_EXPIRED);
    return 0;
}

static int s_on_output(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    struct worker *w = arg;
    /* Bounded per wake-up so one chatty worker cannot starve signals and the others. */
    if (output_pump(w, fd, 1 << 20)) {
        loop_remove_fd(loop, fd);
        output_finish_pipe(w, fd);
    }
    return 0;
}

static struct worker *s_find_worker(struct job *job, pid_t pid)
{
    for (int i = 0; i < job->node.nworkers; i++)
        if (job->workers[i].state == W_RUNNING && job->workers[i].pid == pid)
            return &job->workers[i];
    return NULL;
}

static void s_on_worker_exit(struct sup *s, struct worker *w, int status)
{
    struct job *job = s->job;
    w->state = W_EXITED;
    w->status = status;
    w->exit_ns = loop_now_ns();
    w->exec_errno = spawn_exec_errno(&w->exec_fd);
    s->running--;
    /* Everything the worker wrote is in the pipe by now: take it before anything else happens. */
    output_drain(w);
    int failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char what[256];
    spawn_describe_exit(status, w->exec_errno, what, sizeof what);
    if (failed && s->state == ST_RUNNING) {
        if (w->exec_errno) {
            char why[1024];
            spawn_explain_exec(job->opt.prog_argv, w->exec_errno, job->opt.python_used, why, sizeof why);
            log_error("rank %d: cannot run '%s': %s", w->rank, job->opt.prog_argv[0], why);
        } else
            log_warn("rank %d (pid %d) %s", w->rank, (int)w->pid, what);
    } else {
        log_info("rank %d (pid %d) %s", w->rank, (int)w->pid, what);
    }
    if (failed && s->first_status < 0 && s->state == ST_RUNNING)
        s->first_status = status;
    if (s->ctl->worker_exit)
        s->ctl->worker_exit(s->ctl->arg, job, w);
    s_dispatch(s, failed ? EV_WORKER_FAIL : EV_WORKER_OK);
    if (s->running == 0 && s->state != ST_DONE)
        s_dispatch(s, EV_ALL_GONE);
}

/* A worker reaped by the process's child registry (after supervise_finish none is running: nothing to do). */
static void s_on_child(void *owner, const struct proc_exit *e)
{
    struct sup *s = owner;
    struct worker *w = s_find_worker(s->job, e->pid);
    if (w && s->state != ST_DONE)
        s_on_worker_exit(s, w, e->status);
}

static int s_on_signal(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    struct sup *s = arg;
    struct signalfd_siginfo si[16];
    ssize_t n = read(fd, si, sizeof si);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    for (size_t i = 0; i < (size_t)n / sizeof *si && s->state != ST_DONE; i++) {
        int sig = (int)si[i].ssi_signo;
        s->event_signal = sig;
        s_dispatch(s, sig == SIGUSR1 || sig == SIGUSR2 ? EV_FWD_SIGNAL : EV_STOP_SIGNAL);
    }
    return 0;
}

/* ---- entry -------------------------------------------------------------------------------------- */

int supervise_block_signals(sigset_t *blocked)
{
    sigset_t set;
    sigemptyset(&set);
    int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaddset(&set, sigs[i]);
    signal(SIGPIPE, SIG_IGN);
    if (blocked)
        *blocked = set;
    return sigprocmask(SIG_BLOCK, &set, NULL);
}

int supervise_start(sup_t *s)
{
    s->state = ST_RUNNING;
    s->reason = STOP_NONE;
    if (s_start_generation(s) == 0)
        return 0;
    s_abort_generation(s);
    return -1;
}

void supervise_stop(sup_t *s, int sig)
{
    s->event_signal = sig;
    s_dispatch(s, EV_CTL_STOP);
}

void supervise_hold_stops(sup_t *s, int on)
{
    s->held = on;
    if (!on && s->state == ST_STOPPING && s->reason == STOP_FAILURE && s->grace_timer <= 0 && s->running > 0)
        a_begin_stop_failure(s);
}

void supervise_finish(sup_t *s, int exit_code)
{
    s_abort_generation(s);
    s->exit_code = exit_code;
}


sup_t *supervise_new(struct job *job, loop_t *loop, const struct sup_ctl *ctl, char *err, size_t errlen)
{
    struct sup *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *s = (struct sup){ .job = job, .loop = loop, .state = ST_IDLE, .exit_code = 125, .ctl = ctl, .first_status = -1 };
    sigset_t set;
    sigprocmask(SIG_BLOCK, NULL, &set);
    sigdelset(&set, SIGCHLD); /* the child registry's (proc.h) */
    s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s->sigfd < 0 || loop_add_fd(loop, s->sigfd, ZMQ_POLLIN, s_on_signal, s) < 0) {
        snprintf(err, errlen, "cannot set up the event loop: %s", strerror(errno));
        if (s->sigfd >= 0)
            close(s->sigfd);
        free(s);
        return NULL;
    }
    strays_log_method();
    return s;
}

int supervise_over(const sup_t *s)
{
    return s->state == ST_DONE;
}

int supervise_end(sup_t **sp)
{
    struct sup *s = *sp;
    struct job *job = s->job;
    for (int i = 0; i < job->node.nworkers; i++) {
        struct worker *w = &job->workers[i];
        if (w->state == W_RUNNING) {
            proc_signal_group(w->pid, s, SIGKILL);
            proc_wait(w->pid, s, -1, NULL);
            w->state = W_EXITED;
        }
        s_close_output(s, w);
    }
    strays_kill(job);
    s_cancel_grace(s);
    loop_remove_fd(s->loop, s->sigfd);
    close(s->sigfd);
    int code = s->exit_code;
    free(s);
    *sp = NULL;
    return code;
}
