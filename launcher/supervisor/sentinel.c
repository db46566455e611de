/* sentinel: a tiny watcher process that ends the job cgroup and the workers' process groups if the launcher
 * itself dies (SIGKILL, OOM) so that no worker or worker child outlives it. */
#include "launcher/supervisor/sentinel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "launcher/supervisor/cgroup.h"
#include "common/log.h"
#include "common/proc.h"

#define SENTINEL_MAX_GROUPS 65536

static int s_fd = -1;
static pid_t s_pid = -1;

/* Does /proc/<pid>/environ hold marker? Reads in chunks so long environments are scanned whole. */
static int s_has_marker(const char *pid, const char *marker)
{
    char path[64], buf[8192];
    size_t mlen = strlen(marker), keep = 0;
    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int found = 0;
    for (;;) {
        ssize_t n = read(fd, buf + keep, sizeof buf - keep);
        if (n <= 0)
            break;
        size_t len = keep + (size_t)n;
        for (size_t i = 0; i + mlen <= len && !found; i++)
            found = (i == 0 || buf[i - 1] == '\0') && memcmp(buf + i, marker, mlen) == 0 &&
                    (i + mlen == len || buf[i + mlen] == '\0');
        if (found || mlen >= sizeof buf / 2)
            break;
        keep = len < mlen ? len : mlen;
        memmove(buf, buf + len - keep, keep);
    }
    close(fd);
    return found;
}

/* Kills every process that still carries the worker marker: descendants that left their group. */
static void s_kill_marked(const char *marker)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    pid_t self = getpid();
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid != self && s_has_marker(e->d_name, marker))
            kill(pid, SIGKILL);
    }
    closedir(d);
}

/* The launcher died without cleaning up: remove its run directory too ("PLAUNCH_AGENT=ipc://DIR/agent"). */
static void s_remove_run_dir(const char *marker)
{
    const char *p = strstr(marker, "ipc://");
    char path[4200];
    if (!p)
        return;
    snprintf(path, sizeof path, "%s", p + 6);
    unlink(path);
    char *slash = strrchr(path, '/');
    if (slash && slash != path) {
        *slash = '\0';
        /* the workers' progress files (progress.LOCAL_RANK): the directory is the launcher's, mode 0700 */
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d)) != NULL;)
            if (strncmp(e->d_name, "progress.", 9) == 0)
                unlinkat(dirfd(d), e->d_name, 0);
        if (d)
            closedir(d);
        rmdir(path);
    }
}

/* Records: pgid > 0 watch a group, -pgid forget it (reaped with all its members: the number is free for
 * others), 0 released (normal end). EOF without "released" means the launcher died. */
static void s_run(int fd, const char *marker)
{
    static pid_t groups[SENTINEL_MAX_GROUPS];
    int n = 0, released = 0;
    int32_t rec;
    for (;;) {
        ssize_t r = read(fd, &rec, sizeof rec);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != (ssize_t)sizeof rec)
            break;
        released = rec == 0;
        if (rec > 0 && n < SENTINEL_MAX_GROUPS)
            groups[n++] = rec;
        for (int i = n - 1; rec < 0 && i >= 0; i--)
            if (groups[i] == -rec) {
                groups[i] = groups[--n];
                break;
            }
    }
    if (released)
        _exit(0);
    /* Groups first: their members are alive, so the numbers are still theirs. */
    for (int i = 0; i < n; i++)
        kill(-groups[i], SIGKILL);
    cgroup_remove();
    if (marker[0])
        s_kill_marked(marker);
    s_remove_run_dir(marker);
    _exit(0);
}

/* The sentinel ended before plaunch did (reaped by the child registry). */
static void s_on_exit(void *owner, const struct proc_exit *e)
{
    log_warn("the orphan sentinel (pid %d) died; workers are still tied to plaunch by PDEATHSIG", (int)e->pid);
}

pid_t sentinel_start(const char *marker)
{
    int p[2];
    /* Before the fork, so that the sentinel knows the cgroup it must end. */
    cgroup_create();
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        /* Own process group: a Ctrl-C meant for the job must not kill the watcher first. */
        setpgid(0, 0);
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        prctl(PR_SET_NAME, "plaunch-sentinel");
        close(p[1]);
        for (int fd = 0; fd < 3; fd++)
            if (fd != p[0]) {
                int nul = open("/dev/null", O_RDWR);
                if (nul >= 0 && nul != fd) {
                    dup2(nul, fd);
                    close(nul);
                }
            }
        s_run(p[0], marker ? marker : "");
    }
    close(p[0]);
    proc_add(pid, 0, s_on_exit, &s_pid); /* before anything can reap it: no one else waits in plaunch */
    /* A sentinel that stopped reading (SIGSTOP) must not stop the launcher: records it cannot take are lost. */
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    s_fd = p[1];
    s_pid = pid;
    return pid;
}

static void s_send(int32_t rec)
{
    static int warned;
    if (s_fd < 0)
        return;
    ssize_t n;
    while ((n = write(s_fd, &rec, sizeof rec)) < 0 && errno == EINTR)
        ;
    if (n < 0 && !warned) {
        warned = 1;
        log_warn("the orphan sentinel (pid %d) does not take its records (%s): if plaunch is killed now, "
                 "processes of this job may survive it", (int)s_pid, strerror(errno));
    }
}

void sentinel_watch(pid_t pgid)
{
    s_send((int32_t)pgid);
}

void sentinel_forget(pid_t pgid)
{
    if (pgid > 0)
        s_send(-(int32_t)pgid);
}

void sentinel_release(void)
{
    /* The cgroup goes first: until "released" arrives, a sentinel still ends it if plaunch dies now. */
    cgroup_remove();
    s_send(0);
    if (s_fd >= 0)
        close(s_fd);
    s_fd = -1;
    /* It exits at once on EOF: reap it, or it lingers as a zombie of whatever init adopts it. */
    if (s_pid > 0)
        proc_wait(s_pid, &s_pid, -1, NULL);
    s_pid = -1;
}
