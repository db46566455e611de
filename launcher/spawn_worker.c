/* spawn_worker: start (clone, vfork-style) and exec one worker in its own process group, output into a pipe, exec errors reported. */
#include "spawn_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <paths.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static struct rlimit s_nofile; /* the limit plaunch was started with, restored in workers */
static int s_nofile_set;

void spawn_set_worker_nofile(const struct rlimit *rl)
{
    s_nofile = *rl;
    s_nofile_set = 1;
}

/* Signals ignored in the launcher (SIGPIPE by plaunch; SIGINT and SIGQUIT when a shell started it in the
 * background; SIGHUP under nohup): ignored dispositions survive exec, and a worker that cannot see SIGINT
 * cannot be stopped by a forwarded Ctrl-C, so the child resets them. Found once, in the launcher. */
static int s_ignored[NSIG], s_nignored = -1;

static void s_find_ignored(void)
{
    s_nignored = 0;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sig != SIGKILL && sig != SIGSTOP && sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            s_ignored[s_nignored++] = sig;
    }
}

struct child_args {
    char *const *argv;
    char *const *envp;
    int out_w, exec_w;
    pid_t parent;
};

/* The child, on its own stack, sharing the launcher's memory until exec (CLONE_VM | CLONE_VFORK): only system
 * calls that change this process's attributes, nothing that writes the launcher's memory. Never returns. */
__attribute__((no_sanitize("address", "undefined"))) static int s_child(void *arg)
{
    const struct child_args *a = arg;
    sigset_t none;
    sigemptyset(&none);
    setpgid(0, 0);
    /* Dies with the launcher; the check closes the race where the launcher died before prctl. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != a->parent)
        _exit(128 + SIGKILL);
    for (int i = 0; i < s_nignored; i++)
        signal(s_ignored[i], SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (s_nofile_set)
        setrlimit(RLIMIT_NOFILE, &s_nofile);
    int devnull = open(_PATH_DEVNULL, O_RDONLY);
    if (devnull >= 0 && devnull != 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    if (dup2(a->out_w, 1) < 0 || dup2(a->out_w, 2) < 0)
        goto fail;
    if (a->out_w > 2)
        close(a->out_w);
    execvpe(a->argv[0], a->argv, a->envp);
fail:;
    int e = errno;
    struct stat st; /* exec says EACCES for a directory; tell the user what a shell would */
    if (e == EACCES && strchr(a->argv[0], '/') && stat(a->argv[0], &st) == 0 && S_ISDIR(st.st_mode))
        e = EISDIR;
    ssize_t unused = write(a->exec_w, &e, sizeof e);
    (void)unused;
    _exit(e == ENOENT ? 127 : 126);
}

/* The child's stack: the launcher is suspended while the child uses it (CLONE_VFORK), so one serves all. */
static char s_stack[64 * 1024] __attribute__((aligned(64)));

pid_t spawn_process(char *const argv[], char *const envp[], int *out_fd, int *exec_fd)
{
    int out[2] = { -1, -1 }, ex[2] = { -1, -1 };
    if (s_nignored < 0)
        s_find_ignored();
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(ex, O_CLOEXEC) < 0)
        goto error;
    struct child_args a = { .argv = argv, .envp = envp, .out_w = out[1], .exec_w = ex[1], .parent = getpid() };
    /* vfork semantics: no page tables to copy (the launcher has ZeroMQ threads and a few MiB mapped), so a
     * spawn costs tens of microseconds instead of hundreds. */
    pid_t pid = clone(s_child, s_stack + sizeof s_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    if (pid < 0)
        goto error;
    /* Both sides set the group, so signals sent right after the spawn reach it whoever runs first. */
    setpgid(pid, pid);
    close(out[1]);
    close(ex[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(ex[0], F_SETFL, O_NONBLOCK);
    *out_fd = out[0];
    *exec_fd = ex[0];
    return pid;
error:;
    int e = errno;
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (ex[i] >= 0)
            close(ex[i]);
    }
    errno = e;
    return -1;
}

int spawn_exec_errno(int *exec_fd)
{
    int e = 0;
    if (*exec_fd < 0)
        return 0;
    ssize_t n = read(*exec_fd, &e, sizeof e);
    close(*exec_fd);
    *exec_fd = -1;
    return n == (ssize_t)sizeof e ? e : 0;
}
