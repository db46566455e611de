/* sched_srun: one plaunch per node of a Slurm allocation, started through srun from a batch script; this
 * process only relays signals and returns srun's status, in one loop over a signalfd, with the child registry
 * (proc.h) reaping srun and its stopper and killing srun at its deadline. */
#include "launcher/sched/sched_srun.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/proc.h"
#include "common/util.h"

/* How long past --grace srun gets to bring every node's plaunch down before it is killed. */
#define SRUN_SLACK_MS 15000

struct srun_run {
    pid_t pid;
    pid_t stopper;      /* the squeue + scancel that signals the step, while it runs */
    const char *job, *step_name;
    int status;         /* srun's wait status, once reaped */
    int done;
    int stops;          /* stop signals seen */
    loop_t *loop;
    double grace;
    int quiet;
};

/* srun's deadline after a stop: the registry kills its group right after this. */
static void s_late(void *owner, pid_t pid)
{
    struct srun_run *r = owner;
    fprintf(stderr, "plaunch: srun did not end within --grace %g s + %d s; killing it (Slurm ends the step)\n",
            r->grace, SRUN_SLACK_MS / 1000);
}

static void s_srun_exit(void *owner, const struct proc_exit *e)
{
    struct srun_run *r = owner;
    r->status = e->status;
    r->done = 1;
    loop_stop(r->loop);
}

/* The squeue + scancel child ended: without a step found, or without scancel, srun gets the SIGTERM after all
 * (it then kills its tasks at once). */
static void s_stopper_exit(void *owner, const struct proc_exit *e)
{
    struct srun_run *r = owner;
    r->stopper = 0;
    if (!WIFEXITED(e->status) || WEXITSTATUS(e->status) != 0)
        proc_signal(r->pid, r, SIGTERM);
}

/* SIGTERM to the tasks of our step, which gives every node's plaunch its --grace. Not to srun: srun answers a
 * SIGTERM by killing its tasks at once. The step is found by its name with squeue, then signalled with scancel,
 * in a child, so the loop never waits for Slurm's commands; when that fails, srun gets the SIGTERM after all. */
static void s_stop_step(struct srun_run *r)
{
    static const char script[] =
        "step=$(squeue --noheader --steps --jobs \"$1\" --format '%i %j' | awk -v n=\"$2\" '$2 == n {print $1; exit}')"
        " && [ -n \"$step\" ] && exec scancel --quiet --signal=TERM \"$step\"";
    char *argv[] = { "sh", "-c", (char *)script, "sh", (char *)r->job, (char *)r->step_name, NULL };
    sigset_t none;
    sigemptyset(&none);
    struct proc_spawn sp = { .path = "/bin/sh", .argv = argv, .stdio = { PROC_KEEP, PROC_KEEP, PROC_KEEP },
                             .mask = &none };
    r->stopper = proc_spawn(&sp, s_stopper_exit, r);
    if (r->stopper < 0) {
        r->stopper = 0;
        proc_signal(r->pid, r, SIGTERM);
    }
}

static int s_on_signal(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    struct srun_run *r = arg;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGUSR1 || sig == SIGUSR2) {
            proc_signal(r->pid, r, sig);
        } else if (++r->stops == 1) {
            if (!r->quiet)
                fprintf(stderr, "plaunch: %s: stopping the job on every node (SIGTERM to the step; workers get "
                        "--grace %g s)\n", strsignal(sig), r->grace);
            s_stop_step(r);
            proc_deadline(r->pid, r, loop_now_ns() + (uint64_t)(r->grace * 1e9) + SRUN_SLACK_MS * 1000000ull,
                          s_late);
        } else {
            fprintf(stderr, "plaunch: %s again: killing srun now\n", strsignal(sig));
            proc_signal_group(r->pid, r, SIGKILL);
        }
    }
    return 0;
}

/* envp plus PLAUNCH_TOKEN=token (replacing one there); NULL when out of memory. */
static char **s_child_env(char **envp, const char *token, char *entry, size_t cap)
{
    size_t n = 0, k = 0;
    while (envp[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!token || strncmp(envp[i], "PLAUNCH_TOKEN=", 14) != 0)
            env[k++] = envp[i];
    if (token) {
        snprintf(entry, cap, "PLAUNCH_TOKEN=%s", token);
        env[k++] = entry;
    }
    env[k] = NULL;
    return env;
}

/* srun's command line: its options, then this binary with our own arguments (argv[0] replaced). */
static char **s_srun_argv(int argc, char **argv, const struct sched_srun_args *a, char *self, char *name, char *nodes,
                          size_t cap)
{
    char **v = calloc((size_t)argc + 8, sizeof *v);
    int k = 0;
    if (!v)
        return NULL;
    snprintf(nodes, cap, "--nodes=%d", a->nnodes);
    v[k++] = "srun";
    v[k++] = nodes;
    v[k++] = name; /* --job-name=: names the step, to find it again for scancel */
    v[k++] = "--ntasks-per-node=1";
    /* a node that fails (bad configuration: exit 2) ends the step at once, unless nodes may come and go */
    v[k++] = a->elastic ? "--kill-on-bad-exit=0" : "--kill-on-bad-exit=1";
    v[k++] = "--input=none";
    v[k++] = self;
    for (int i = 1; i < argc; i++)
        v[k++] = argv[i];
    v[k] = NULL;
    return v;
}

int sched_srun_run(int argc, char **argv, const struct sched_srun_args *a, char **envp, const sigset_t *sigs)
{
    char self[PATH_MAX], nodes[32], tokenvar[300], step[64], name[80];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "plaunch: error: cannot find this program's path (/proc/self/exe): %s\n", strerror(errno));
        return 125;
    }
    self[n] = '\0';
    struct srun_run r = { .grace = a->grace, .quiet = a->quiet, .job = a->job_id, .step_name = step };
    snprintf(step, sizeof step, "plaunch-%d", (int)getpid());
    snprintf(name, sizeof name, "--job-name=%s", step);
    char **env = s_child_env(envp, a->token, tokenvar, sizeof tokenvar);
    char **args = s_srun_argv(argc, argv, a, self, name, nodes, sizeof nodes);
    sigset_t none;
    sigemptyset(&none);
    /* Its own process group: a Ctrl-C reaches this plaunch only, which stops the job with --grace (srun would
     * take a single SIGINT as a request for the tasks' state). Its stdin is /dev/null, as workers' are. */
    struct proc_spawn sp = { .path = "srun", .argv = args, .envp = env, .search = 1,
                             .stdio = { PROC_NULL, PROC_KEEP, PROC_KEEP }, .group = 1, .mask = &none, .dfl = sigs };
    r.pid = env && args ? proc_spawn(&sp, s_srun_exit, &r) : (errno = ENOMEM, -1);
    int rc = r.pid < 0 ? errno : 0;
    free(env);
    free(args);
    if (rc != 0) {
        fprintf(stderr, "plaunch: error: --scheduler slurm cannot run srun: %s%s\n", strerror(rc),
                rc == ENOENT ? " (no srun on PATH: run this on a node of the Slurm cluster)" : "");
        return rc == ENOENT ? 127 : 125;
    }
    if (!a->quiet)
        fprintf(stderr, "plaunch: starting plaunch on %d node%s of this allocation: srun --nodes=%d "
                "--ntasks-per-node=1 ...\n", a->nnodes, a->nnodes == 1 ? "" : "s", a->nnodes);
    char err[256];
    sigset_t stops = *sigs;
    sigdelset(&stops, SIGCHLD); /* the child registry's */
    loop_t *loop = r.loop = loop_new();
    int sfd = signalfd(-1, &stops, SFD_CLOEXEC | SFD_NONBLOCK);
    int ok = loop && sfd >= 0 && loop_add_fd(loop, sfd, ZMQ_POLLIN, s_on_signal, &r) == 0;
    if (!ok)
        snprintf(err, sizeof err, "%s", strerror(errno));
    else
        ok = proc_attach(loop, err, sizeof err) == 0;
    if (!ok) {
        fprintf(stderr, "plaunch: error: cannot wait for srun: %s; stopping it\n", err);
        proc_signal_group(r.pid, &r, SIGKILL);
        proc_wait(r.pid, &r, -1, &r.status); /* SIGKILL: srun is gone at once */
        r.done = 1;
    } else if (loop_run(loop) < 0 || !r.done) {
        fprintf(stderr, "plaunch: error: waiting for srun failed: %s; stopping it\n", strerror(errno));
        proc_signal_group(r.pid, &r, SIGKILL);
        proc_wait(r.pid, &r, -1, &r.status);
    }
    proc_detach();
    if (sfd >= 0)
        close(sfd);
    loop_destroy(&loop);
    return util_exit_code(r.status);
}
