/* proc: the registry of this process's children: each pid with its owner, deadlines, signals to proven children
 * only, and the one reaper (proc.h says how). */
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct s_entry {
    pid_t pid;
    int flags;
    proc_exit_fn fn;
    void *owner;
    int timer;         /* its deadline's loop timer, 0 none */
    proc_late_fn late;
    int killed_late;
};

static struct {
    struct s_entry *e;
    int n, cap;
    loop_t *loop;
    int sfd;
} s_reg = { .sfd = -1 };

static int s_find(pid_t pid)
{
    for (int i = 0; i < s_reg.n; i++)
        if (s_reg.e[i].pid == pid)
            return i;
    return -1;
}

/* The entry of owner's child pid, or -1 with ESRCH. */
static int s_find_owned(pid_t pid, const void *owner)
{
    int i = pid > 0 ? s_find(pid) : -1;
    if (i < 0 || s_reg.e[i].owner != owner || owner == NULL) {
        errno = ESRCH;
        return -1;
    }
    return i;
}

static int s_reserve(void)
{
    if (s_reg.n < s_reg.cap)
        return 0;
    int cap = s_reg.cap ? s_reg.cap * 2 : 32;
    struct s_entry *e = realloc(s_reg.e, (size_t)cap * sizeof *e);
    if (!e) {
        errno = ENOMEM;
        return -1;
    }
    s_reg.e = e;
    s_reg.cap = cap;
    return 0;
}

/* Forgets entry i (the child was reaped); returns what it was. */
static struct s_entry s_remove(int i)
{
    struct s_entry e = s_reg.e[i];
    if (e.timer > 0 && s_reg.loop)
        loop_timer_cancel(s_reg.loop, e.timer);
    s_reg.e[i] = s_reg.e[--s_reg.n];
    return e;
}

/* Reaps every child that has ended and tells its owner; an unregistered one (a re-parented descendant) is only
 * reaped. Owners' callbacks may start, register, signal and wait for children. */
static void s_sweep(void)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid <= 0)
            return;
        int i = s_find(pid);
        if (i < 0)
            continue;
        struct s_entry e = s_remove(i);
        if (e.fn) {
            struct proc_exit x = { .pid = pid, .status = st, .late = e.killed_late };
            e.fn(e.owner, &x);
        }
    }
}

static int s_on_sigchld(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    struct signalfd_siginfo si[16];
    while (read(fd, si, sizeof si) > 0)
        ;
    /* SIGCHLDs coalesce: one read stands for any number of ended children. */
    s_sweep();
    return 0;
}

int proc_attach(loop_t *loop, char *err, size_t errlen)
{
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    proc_detach();
    s_reg.sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s_reg.sfd < 0 || loop_add_fd(loop, s_reg.sfd, ZMQ_POLLIN, s_on_sigchld, NULL) < 0) {
        snprintf(err, errlen, "cannot watch child processes (signalfd): %s", strerror(errno));
        if (s_reg.sfd >= 0)
            close(s_reg.sfd);
        s_reg.sfd = -1;
        return -1;
    }
    s_reg.loop = loop;
    return 0;
}

void proc_detach(void)
{
    if (s_reg.loop) {
        for (int i = 0; i < s_reg.n; i++)
            if (s_reg.e[i].timer > 0)
                loop_timer_cancel(s_reg.loop, s_reg.e[i].timer);
        for (int i = 0; i < s_reg.n; i++)
            s_reg.e[i].timer = 0;
        loop_remove_fd(s_reg.loop, s_reg.sfd);
    }
    if (s_reg.sfd >= 0)
        close(s_reg.sfd);
    s_reg.sfd = -1;
    s_reg.loop = NULL;
}

int proc_add(pid_t pid, int flags, proc_exit_fn fn, void *owner)
{
    if (pid <= 0) {
        errno = EINVAL;
        return -1;
    }
    if (s_find(pid) >= 0) {
        errno = EEXIST;
        return -1;
    }
    if (s_reserve() < 0)
        return -1;
    s_reg.e[s_reg.n++] = (struct s_entry){ .pid = pid, .flags = flags, .fn = fn, .owner = owner };
    return 0;
}

pid_t proc_spawn(const struct proc_spawn *sp, proc_exit_fn fn, void *owner)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    pid_t pid = -1;
    /* Room first: once it runs, the child must be registered before anything else happens. */
    if (s_reserve() < 0)
        return -1;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc) {
        errno = rc;
        return -1;
    }
    if ((rc = posix_spawnattr_init(&at)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        errno = rc;
        return -1;
    }
    short flags = (short)((sp->mask ? POSIX_SPAWN_SETSIGMASK : 0) | (sp->dfl ? POSIX_SPAWN_SETSIGDEF : 0) |
                          (sp->group ? POSIX_SPAWN_SETPGROUP : 0));
    for (int fd = 0; fd < 3 && rc == 0; fd++) {
        if (sp->stdio[fd] == PROC_NULL)
            rc = posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
        else if (sp->stdio[fd] >= 0)
            rc = posix_spawn_file_actions_adddup2(&fa, sp->stdio[fd], fd);
    }
    if (rc == 0)
        rc = posix_spawnattr_setflags(&at, flags);
    if (rc == 0 && sp->mask)
        rc = posix_spawnattr_setsigmask(&at, sp->mask);
    if (rc == 0 && sp->dfl)
        rc = posix_spawnattr_setsigdefault(&at, sp->dfl);
    if (rc == 0 && sp->group)
        rc = posix_spawnattr_setpgroup(&at, 0);
    char *const *envp = sp->envp ? sp->envp : environ;
    if (rc == 0)
        rc = sp->search ? posix_spawnp(&pid, sp->path, &fa, &at, sp->argv, envp)
                        : posix_spawn(&pid, sp->path, &fa, &at, sp->argv, envp);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    s_reg.e[s_reg.n++] = (struct s_entry){ .pid = pid, .flags = sp->group ? PROC_LEADER : 0, .fn = fn,
                                           .owner = owner };
    return pid;
}

int proc_signal(pid_t pid, const void *owner, int sig)
{
    /* Registered means not reaped yet: the number cannot be anyone else's. */
    if (s_find_owned(pid, owner) < 0)
        return -1;
    return kill(pid, sig);
}

int proc_signal_group(pid_t pid, const void *owner, int sig)
{
    int i = s_find_owned(pid, owner);
    if (i < 0)
        return -1;
    if (!(s_reg.e[i].flags & PROC_LEADER)) {
        errno = ESRCH;
        return -1;
    }
    /* A group lives as long as its unreaped leader: the group is still the one it started. */
    return killpg(pid, sig);
}

static int s_on_deadline(loop_t *loop, int id, void *arg)
{
    pid_t pid = (pid_t)(intptr_t)arg;
    int i = s_find(pid);
    if (i < 0 || s_reg.e[i].timer != id)
        return 0;
    s_reg.e[i].timer = 0;
    s_reg.e[i].killed_late = 1;
    if (s_reg.e[i].late)
        s_reg.e[i].late(s_reg.e[i].owner, pid);
    /* The callback may have reaped it (proc_wait): look again. */
    if ((i = s_find(pid)) >= 0)
        s_reg.e[i].flags & PROC_LEADER ? killpg(pid, SIGKILL) : kill(pid, SIGKILL);
    return 0;
}

int proc_deadline(pid_t pid, const void *owner, uint64_t deadline_ns, proc_late_fn late)
{
    int i = s_find_owned(pid, owner);
    if (i < 0)
        return -1;
    if (!s_reg.loop) {
        errno = EINVAL;
        return -1;
    }
    if (s_reg.e[i].timer > 0)
        loop_timer_cancel(s_reg.loop, s_reg.e[i].timer);
    s_reg.e[i].timer = loop_timer_at(s_reg.loop, deadline_ns, s_on_deadline, (void *)(intptr_t)pid);
    s_reg.e[i].late = late;
    return s_reg.e[i].timer > 0 ? 0 : -1;
}

int proc_wait(pid_t pid, const void *owner, int timeout_ms, int *status)
{
    if (s_find_owned(pid, owner) < 0)
        return -1;
    uint64_t until = loop_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
    int pidfd = -1, polled = 0, rc = -1;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, timeout_ms < 0 ? 0 : WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == pid || r < 0) { /* ECHILD cannot be (only this module reaps): forget it all the same */
            int i = s_find(pid);
            if (i >= 0)
                s_remove(i);
            if (r == pid && status)
                *status = st;
            rc = r == pid ? 0 : -1;
            break;
        }
        uint64_t now = loop_now_ns();
        if (now >= until) {
            errno = ETIMEDOUT;
            break;
        }
        int left = (int)((until - now + 999999) / 1000000);
#ifdef SYS_pidfd_open
        /* Our unreaped child: the pidfd is surely its own. */
        if (pidfd < 0 && !polled)
            pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
        if (pidfd >= 0 && !polled) {
            struct pollfd p = { .fd = pidfd, .events = POLLIN };
            poll(&p, 1, left);
            polled = 1;
        } else {
            /* The pidfd is readable once the child has exited, yet a wait right then can find it not reapable
             * yet (Linux 6.18: 2 stops in 40 under ASan left a zombie): it is asked again every ms. */
            poll(NULL, 0, 1);
        }
    }
    if (pidfd >= 0) {
        int e = errno;
        close(pidfd);
        errno = e;
    }
    return rc;
}

void proc_disown(pid_t pid, const void *owner)
{
    int i = s_find_owned(pid, owner);
    if (i < 0)
        return;
    if (s_reg.e[i].timer > 0 && s_reg.loop)
        loop_timer_cancel(s_reg.loop, s_reg.e[i].timer);
    s_reg.e[i].timer = 0;
    s_reg.e[i].fn = NULL;
    s_reg.e[i].owner = NULL;
}

int proc_run(const struct proc_spawn *sp, int *status)
{
    static char owner;
    pid_t pid = proc_spawn(sp, NULL, &owner);
    return pid < 0 ? -1 : proc_wait(pid, &owner, -1, status);
}

int proc_owned(pid_t pid)
{
    return pid > 0 && s_find(pid) >= 0;
}

int proc_reap_strays(pid_t *pids, int *n, uint64_t deadline_ns)
{
    for (;;) {
        for (int i = 0; i < *n;) {
            pid_t r = proc_owned(pids[i]) ? pids[i] : waitpid(pids[i], NULL, WNOHANG);
            if (r == pids[i] || (r < 0 && errno == ECHILD))
                pids[i] = pids[--*n];
            else
                i++;
        }
        if (*n == 0 || loop_now_ns() >= deadline_ns)
            return *n;
        poll(NULL, 0, 1);
    }
}
