/* cgroup: the job's cgroup v2 directory that workers are born into, ended as a whole (cgroup.kill, or freeze
 * and SIGKILL each member on kernels before 5.14), removed at the end of the job. */
#include "launcher/supervisor/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "launcher/supervisor/procfile.h"

static struct {
    int dir_fd;    /* the job cgroup; -1 when there is none */
    int procs_fd;  /* its cgroup.procs (write "0" to move oneself in) */
    int events_fd; /* its cgroup.events ("populated", "frozen"), pollable */
    int use_kill;  /* cgroup.kill exists and PLAUNCH_CGROUP is not "freeze" */
    int place;     /* workers are still being placed (no placement has failed) */
    char path[PATH_MAX];
    char why[PATH_MAX + 256];
} s_cg = { .dir_fd = -1, .procs_fd = -1, .events_fd = -1 };

/* Undoes the octal escapes (\040 for a space) of a /proc/self/mountinfo field, in place. */
static void s_unescape(char *s)
{
    char *o = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
            *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
}

/* The first cgroup2 mount: its mount point and the cgroup it shows as its root. 0, or -1. */
static int s_find_mount(char *text, char *mnt, size_t mcap, char *root, size_t rcap)
{
    char *lsave = NULL;
    for (char *line = strtok_r(text, "\n", &lsave); line; line = strtok_r(NULL, "\n", &lsave)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
        char *fields[5], *save = NULL, *tok = strtok_r(line, " ", &save);
        int n = 0;
        for (; tok && n < 5; tok = strtok_r(NULL, " ", &save))
            fields[n++] = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " ", &save);
        tok = tok ? strtok_r(NULL, " ", &save) : NULL;
        if (n == 5 && tok && strcmp(tok, "cgroup2") == 0) {
            s_unescape(fields[3]);
            s_unescape(fields[4]);
            snprintf(root, rcap, "%s", fields[3]);
            snprintf(mnt, mcap, "%s", fields[4]);
            return 0;
        }
    }
    return -1;
}

/* plaunch's own cgroup v2 path: the "0::" line of /proc/self/cgroup. 0, or -1. */
static int s_own_cgroup(char *text, char *own, size_t cap)
{
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(own, cap, "%s", line + 3);
            return 0;
        }
    return -1;
}

/* The directory of plaunch's own cgroup in the file system, into path. 0, or -1 with s_cg.why set. */
static int s_own_dir(char *path, size_t cap)
{
    char mnt[PATH_MAX], root[PATH_MAX], own[PATH_MAX], *text = NULL;
    size_t tcap = 0;
    const char *why = NULL;
    if (procfile_read(AT_FDCWD, "/proc/self/mountinfo", &text, &tcap) < 0 ||
        s_find_mount(text, mnt, sizeof mnt, root, sizeof root) < 0)
        why = "no cgroup v2 file system is mounted";
    else if (procfile_read(AT_FDCWD, "/proc/self/cgroup", &text, &tcap) < 0 || s_own_cgroup(text, own, sizeof own) < 0)
        why = "/proc/self/cgroup has no cgroup v2 (\"0::\") line";
    free(text);
    if (why) {
        snprintf(s_cg.why, sizeof s_cg.why, "%s", why);
        return -1;
    }
    size_t rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (strncmp(own, root, rlen) != 0 || (own[rlen] != '/' && own[rlen] != '\0') || strstr(own, " (deleted)")) {
        snprintf(s_cg.why, sizeof s_cg.why, "plaunch's cgroup %.1000s is not under the cgroup v2 mount %.1000s "
                 "(root %.1000s)", own, mnt, root);
        return -1;
    }
    const char *rest = strcmp(own + rlen, "/") == 0 ? "" : own + rlen;
    if ((size_t)snprintf(path, cap, "%s%s", mnt, rest) >= cap)
        return -1;
    return 0;
}

static void s_close_fds(void)
{
    int *fds[] = { &s_cg.dir_fd, &s_cg.procs_fd, &s_cg.events_fd };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

/* Opens the directory at s_cg.path and the files used later. 0, or -1 (all closed). */
static int s_open(void)
{
    s_cg.dir_fd = open(s_cg.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    s_cg.procs_fd = s_cg.dir_fd < 0 ? -1 : openat(s_cg.dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    s_cg.events_fd = s_cg.dir_fd < 0 ? -1 : openat(s_cg.dir_fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
    if (s_cg.procs_fd >= 0 && s_cg.events_fd >= 0)
        return 0;
    int e = errno;
    s_close_fds();
    errno = e;
    return -1;
}

/* mkdir plaunch.<pid> under dir (a suffix when the name is taken: never adopt a directory we did not make). */
static int s_make_dir(const char *dir)
{
    for (int i = 0; i < 10; i++) {
        int n = i == 0 ? snprintf(s_cg.path, sizeof s_cg.path, "%s/plaunch.%d", dir, (int)getpid())
                       : snprintf(s_cg.path, sizeof s_cg.path, "%s/plaunch.%d.%d", dir, (int)getpid(), i);
        if (n < 0 || (size_t)n >= sizeof s_cg.path) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (mkdir(s_cg.path, 0755) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

int cgroup_create(void)
{
    const char *env = getenv("PLAUNCH_CGROUP");
    char parent[PATH_MAX], *type = NULL;
    size_t tcap = 0;
    if (env && (strcmp(env, "0") == 0 || strcmp(env, "off") == 0)) {
        snprintf(s_cg.why, sizeof s_cg.why, "turned off by PLAUNCH_CGROUP=%s", env);
        return -1;
    }
    if (s_own_dir(parent, sizeof parent) < 0)
        return -1;
    if (s_make_dir(parent) < 0) {
        /* EACCES/EPERM: not root and not delegated; EROFS: a container's read-only /sys/fs/cgroup. */
        snprintf(s_cg.why, sizeof s_cg.why, "cannot create a cgroup in %s: %s", parent, strerror(errno));
        s_cg.path[0] = '\0';
        return -1;
    }
    const char *missing = s_open() < 0 ? "cgroup.procs or cgroup.events" : NULL;
    /* Moving a process in needs write access to the common ancestor's cgroup.procs: plaunch's own. */
    char ppath[PATH_MAX + 16];
    snprintf(ppath, sizeof ppath, "%s/cgroup.procs", parent);
    if (!missing && access(ppath, W_OK) < 0)
        missing = "write access to the parent's cgroup.procs";
    /* Before 5.2 (no cgroup.freeze) nothing can end a cgroup without racing its forks. */
    if (!missing && faccessat(s_cg.dir_fd, "cgroup.freeze", W_OK, 0) < 0)
        missing = "cgroup.freeze (Linux >= 5.2)";
    /* A threaded subtree takes no processes as a whole. */
    if (!missing && (procfile_read(s_cg.dir_fd, "cgroup.type", &type, &tcap) < 0 || strcmp(type, "domain\n") != 0))
        missing = "a domain cgroup (plaunch's cgroup is threaded)";
    free(type);
    if (missing) {
        snprintf(s_cg.why, sizeof s_cg.why, "%s lacks %s", s_cg.path, missing);
        s_close_fds();
        rmdir(s_cg.path);
        s_cg.path[0] = '\0';
        return -1;
    }
    s_cg.use_kill = faccessat(s_cg.dir_fd, "cgroup.kill", W_OK, 0) == 0 && !(env && strcmp(env, "freeze") == 0);
    s_cg.place = 1;
    snprintf(s_cg.why, sizeof s_cg.why, "cgroup %s (%s)", s_cg.path,
             s_cg.use_kill ? "cgroup.kill" : "cgroup.freeze, then SIGKILL to each member");
    if (env && *env && strcmp(env, "1") != 0 && strcmp(env, "freeze") != 0)
        snprintf(s_cg.why + strlen(s_cg.why), sizeof s_cg.why - strlen(s_cg.why),
                 " (PLAUNCH_CGROUP=%.32s is not 0, 1 or freeze: ignored)", env);
    return 0;
}

const char *cgroup_describe(void)
{
    return s_cg.why;
}

int cgroup_in_use(void)
{
    return s_cg.dir_fd >= 0;
}

int cgroup_dir_fd(void)
{
    return s_cg.place ? s_cg.dir_fd : -1;
}

int cgroup_procs_fd(void)
{
    return s_cg.place ? s_cg.procs_fd : -1;
}

void cgroup_placement_failed(int err)
{
    if (!s_cg.place)
        return;
    s_cg.place = 0;
    log_warn("cannot start workers in the job cgroup %s: %s; from now on they are ended by process group and as "
             "plaunch's children only (PLAUNCH_CGROUP=0 skips the cgroup)", s_cg.path, strerror(err));
}

/* Reads cgroup.events: the value of key ("populated", "frozen"), or -1. */
static int s_event(const char *key)
{
    char buf[256];
    ssize_t n = pread(s_cg.events_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    size_t klen = strlen(key);
    for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, key, klen) == 0 && p[klen] == ' ')
            return atoi(p + klen + 1);
    return -1;
}

/* Waits until cgroup.events says key is want, woken by its change notification. 0, or -1 at deadline. */
static int s_wait_event(const char *key, int want, uint64_t deadline_ns)
{
    for (;;) {
        int v = s_event(key);
        if (v == want)
            return 0;
        uint64_t now = loop_now_ns();
        if (v < 0 || now >= deadline_ns)
            return -1;
        struct pollfd p = { .fd = s_cg.events_fd, .events = POLLPRI };
        uint64_t ms = (deadline_ns - now + 999999) / 1000000;
        if (poll(&p, 1, ms > 60000 ? 60000 : (int)ms) < 0 && errno != EINTR)
            return -1;
    }
}

static int s_write(const char *name, const char *val)
{
    int fd = openat(s_cg.dir_fd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, val, strlen(val));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* Without cgroup.kill: freeze (nothing in it can fork or exit on its own, so each listed pid stays the one
 * we saw), SIGKILL every member, thaw so that the killed can exit and the next generation can run. */
static void s_freeze_kill(uint64_t deadline_ns)
{
    if (s_write("cgroup.freeze", "1") < 0)
        return;
    s_wait_event("frozen", 1, deadline_ns);
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = procfile_read(s_cg.dir_fd, "cgroup.procs", &buf, &cap);
    size_t len = n > 0 ? (size_t)n : 0;
    /* One pid per line: only numbers ended by their newline count. */
    for (size_t i = 0; buf && i < len;) {
        char *end = memchr(buf + i, '\n', len - i);
        if (!end)
            break;
        *end = '\0';
        long pid = strtol(buf + i, NULL, 10);
        if (pid > 0)
            kill((pid_t)pid, SIGKILL);
        i = (size_t)(end - buf) + 1;
    }
    free(buf);
    s_write("cgroup.freeze", "0");
}

/* Linux (6.18 at least) kills every child born with CLONE_INTO_CGROUP into a cgroup that was once ended
 * through cgroup.kill (the fork compares the kill counts of the parent's and the child's cgroups), so a killed
 * cgroup that is to take workers again is replaced by a fresh one of the same name. */
static void s_renew(void)
{
    s_close_fds();
    if (rmdir(s_cg.path) == 0 && mkdir(s_cg.path, 0755) == 0 && s_open() == 0)
        return;
    log_warn("cannot renew the job cgroup %s after cgroup.kill: %s; workers are ended by process group and as "
             "plaunch's children from now on", s_cg.path, strerror(errno));
    s_close_fds();
    s_cg.place = 0;
}

int cgroup_kill(uint64_t deadline_ns)
{
    if (s_cg.dir_fd < 0 || s_event("populated") == 0)
        return 0;
    /* cgroup.kill also stops the forks racing with it: one round. A freeze can miss a process that was
     * being created as it listed the members: a few rounds until the deadline. */
    while (loop_now_ns() < deadline_ns) {
        if (s_cg.use_kill) {
            if (s_write("cgroup.kill", "1") < 0) {
                log_warn("cannot write %s/cgroup.kill: %s", s_cg.path, strerror(errno));
                return -1;
            }
            int empty = s_wait_event("populated", 0, deadline_ns) == 0;
            if (empty && s_cg.place)
                s_renew();
            if (empty)
                return 0;
        } else {
            s_freeze_kill(deadline_ns);
            uint64_t round = loop_now_ns() + 200000000;
            if (s_wait_event("populated", 0, round < deadline_ns ? round : deadline_ns) == 0)
                return 0;
        }
    }
    if (s_event("populated") == 0)
        return 0;
    log_warn("processes of %s are still alive after SIGKILL (stuck in the kernel?); see its cgroup.procs",
             s_cg.path);
    return -1;
}

void cgroup_remove(void)
{
    if (!s_cg.path[0])
        return;
    /* By name: in the sentinel the inherited descriptors may name a cgroup plaunch has since renewed. */
    s_cg.place = 0;
    s_close_fds();
    if (s_open() == 0)
        cgroup_kill(loop_now_ns() + 5000000000ull);
    s_close_fds();
    if (rmdir(s_cg.path) < 0 && errno != ENOENT)
        log_warn("cannot remove the job cgroup %s: %s", s_cg.path, strerror(errno));
    s_cg.path[0] = '\0';
}
