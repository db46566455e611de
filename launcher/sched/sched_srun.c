/* sched_srun: one plaunch per node of a Slurm allocation, started through srun from a batch script; this
 * process only relays signals and returns srun's status, in one loop over a signalfd with a deadline. */
#include "sched_srun.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loop.h"
#include "util.h"

/* How long past --grace srun gets to bring every node's plaunch down before it is killed. */
#define SRUN_SLACK_MS 15000

struct srun_run {
    pid_t pid;
    pid_t stopper;      /* the squeue + scancel that signals the step, while it runs */
    const char *job, *step_name;
    int status;         /* srun's wait status, once reaped */
    int done;
    int stops;          /* stop signals seen */
    int kill_timer;
    double grace;
    int quiet;
};

static int s_kill_now(loop_t *loop, int id, void *arg)
{
    struct srun_run *r = arg;
    r->kill_timer = 0;
    if (!r->done) {
        fprintf(stderr, "plaunch: srun did not end within --grace %g s + %d s; killing it (Slurm ends the step)\n",
                r->grace, SRUN_SLACK_MS / 1000);
        kill(-r->pid, SIGKILL);
    }
    return 0;
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
    extern char **environ;
    posix_spawnattr_t attr;
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigmask(&attr, &none);
    if (posix_spawn(&r->stopper, "/bin/sh", NULL, &attr, argv, environ) != 0) {
        r->stopper = 0;
        kill(r->pid, SIGTERM);
    }
    posix_spawnattr_destroy(&attr);
}

static int s_on_signal(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    struct srun_run *r = arg;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            int st;
            if (r->stopper > 0 && waitpid(r->stopper, &st, WNOHANG) == r->stopper) {
                r->stopper = 0;
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) /* no step found, or no scancel: srun kills at once */
                    kill(r->pid, SIGTERM);
            }
            if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
                r->status = st;
                r->done = 1;
                loop_stop(loop);
            }
        } else if (sig == SIGUSR1 || sig == SIGUSR2) {
            kill(r->pid, sig);
        } else if (++r->stops == 1) {
            if (!r->quiet)
                fprintf(stderr, "plaunch: %s: stopping the job on every node (SIGTERM to the step; workers get "
                        "--grace %g s)\n", strsignal(sig), r->grace);
            s_stop_step(r);
            r->kill_timer = loop_timer_after_ms(loop, (int64_t)(r->grace * 1000) + SRUN_SLACK_MS, s_kill_now, r);
        } else {
            fprintf(stderr, "plaunch: %s again: killing srun now\n", strsignal(sig));
            kill(-r->pid, SIGKILL);
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
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&fa);
    /* Its own process group: a Ctrl-C reaches this plaunch only, which stops the job with --grace (srun would
     * take a single SIGINT as a request for the tasks' state). Its stdin is /dev/null, as workers' are. */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, sigs);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    int rc = env && args ? posix_spawnp(&r.pid, "srun", &fa, &attr, args, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
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
    loop_t *loop = loop_new();
    int sfd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK);
    if (!loop || sfd < 0 || loop_add_fd(loop, sfd, ZMQ_POLLIN, s_on_signal, &r) < 0) {
        fprintf(stderr, "plaunch: error: cannot wait for srun: %s; stopping it\n", strerror(errno));
        kill(-r.pid, SIGKILL);
        waitpid(r.pid, &r.status, 0); /* SIGKILL: srun is gone at once */
        r.done = 1;
    } else if (loop_run(loop) < 0 || !r.done) {
        fprintf(stderr, "plaunch: error: waiting for srun failed: %s; stopping it\n", strerror(errno));
        kill(-r.pid, SIGKILL);
        waitpid(r.pid, &r.status, 0);
    }
    if (sfd >= 0)
        close(sfd);
    loop_destroy(&loop);
    return util_exit_code(r.status);
}
