/* spawn_worker: fork and exec one worker in its own process group, output into a pipe, exec errors reported. */
#include "spawn_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <paths.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

static struct rlimit s_nofile; /* the limit plaunch was started with, restored in workers */
static int s_nofile_set;

void spawn_set_worker_nofile(const struct rlimit *rl)
{
    s_nofile = *rl;
    s_nofile_set = 1;
}

/* Child side after fork: only async-signal-safe calls until exec. Never returns. */
static void s_child(char *const argv[], char *const envp[], int out_w, int exec_w, pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    setpgid(0, 0);
    /* Dies with the launcher; the check closes the race where the launcher died before prctl. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(128 + SIGKILL);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (s_nofile_set)
        setrlimit(RLIMIT_NOFILE, &s_nofile);
    int devnull = open(_PATH_DEVNULL, O_RDONLY);
    if (devnull >= 0 && devnull != 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    if (dup2(out_w, 1) < 0 || dup2(out_w, 2) < 0)
        goto fail;
    if (out_w > 2)
        close(out_w);
    execvpe(argv[0], argv, envp);
fail:;
    int e = errno;
    ssize_t unused = write(exec_w, &e, sizeof e);
    (void)unused;
    _exit(e == ENOENT ? 127 : 126);
}

pid_t spawn_process(char *const argv[], char *const envp[], int *out_fd, int *exec_fd)
{
    int out[2] = { -1, -1 }, ex[2] = { -1, -1 };
    pid_t parent = getpid();
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(ex, O_CLOEXEC) < 0)
        goto error;
    pid_t pid = fork();
    if (pid < 0)
        goto error;
    if (pid == 0)
        s_child(argv, envp, out[1], ex[1], parent);
    /* Both sides set the group, so signals sent right after fork reach it whoever runs first. */
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
