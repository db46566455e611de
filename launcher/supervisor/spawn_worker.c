/* spawn_worker: start (clone, vfork-style) and exec one worker in its own process group and the job cgroup,
 * output into a pipe, exec errors reported. */
#include "launcher/supervisor/spawn_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <paths.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher/supervisor/cgroup.h"
#include "launcher/topo/topo.h"

#define S_MPOL_PREFERRED 1
#define S_MPOL_PREFERRED_MANY 5 /* Linux >= 5.15 */

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
    const struct topo_bind *bind;
    int out_w, err_w, exec_w; /* err_w: the stderr pipe's write end, or -1 (stderr goes with stdout) */
    int cg_procs;  /* the job cgroup's cgroup.procs when the child must move itself there, else -1 */
    int cg_errno;  /* written by the child: why it could not */
    pid_t parent;
};

/* The child, on its own stack, sharing the launcher's memory until exec (CLONE_VM | CLONE_VFORK): only system
 * calls that change this process's attributes; the one write to the launcher's memory is cg_errno in its own
 * arguments, read after clone returns (posix_spawn reports errors the same way). Never returns. */
__attribute__((no_sanitize("address", "undefined"))) static int s_child(void *arg)
{
    struct child_args *a = arg;
    sigset_t none;
    sigemptyset(&none);
    /* Before exec, so before the worker can fork: none of its descendants starts outside the cgroup. */
    if (a->cg_procs >= 0 && write(a->cg_procs, "0", 1) != 1)
        a->cg_errno = errno;
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
    /* The plan's CPUs, and its NUMA nodes preferred for memory (preferred, not bound: a full node spills over
     * instead of killing the worker); both survive exec. One node: MPOL_PREFERRED; several: PREFERRED_MANY,
     * and a kernel without it keeps the default policy. */
    if (a->bind && a->bind->apply) {
        sched_setaffinity(0, sizeof a->bind->cpus, &a->bind->cpus);
        int nn = 0;
        for (int i = 0; i < TOPO_NODE_WORDS; i++)
            nn += __builtin_popcountl(a->bind->nodes[i]);
        if (nn)
            syscall(SYS_set_mempolicy, nn == 1 ? S_MPOL_PREFERRED : S_MPOL_PREFERRED_MANY, a->bind->nodes,
                    (unsigned long)TOPO_NODE_WORDS * 8 * sizeof(unsigned long));
    }
    int devnull = open(_PATH_DEVNULL, O_RDONLY);
    if (devnull >= 0 && devnull != 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    if (dup2(a->out_w, 1) < 0 || dup2(a->err_w >= 0 ? a->err_w : a->out_w, 2) < 0)
        goto fail;
    if (a->out_w > 2)
        close(a->out_w);
    if (a->err_w > 2)
        close(a->err_w);
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

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* The kernel's struct clone_args up to its cgroup field (CLONE_ARGS_SIZE_VER2). */
struct s_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size;
    uint64_t cgroup;
};

#if defined(__x86_64__) && defined(SYS_clone3)
/* clone3 has no C library wrapper that runs a function on a new stack: the child starts after the syscall
 * instruction on that stack, calls fn(arg) and exits with its value (fn never returns: it execs or _exits).
 * Returns the child's pid, or -errno. */
static long s_clone3(struct s_clone_args *ca, int (*fn)(void *), void *arg)
{
    long ret;
    register int (*r12)(void *) __asm__("r12") = fn;
    register void *r13 __asm__("r13") = arg;
    __asm__ volatile("syscall\n\t"
                     "test %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "mov %%r13, %%rdi\n\t"
                     "call *%%r12\n\t"
                     "mov %%eax, %%edi\n\t"
                     "mov $60, %%eax\n\t" /* SYS_exit */
                     "syscall\n\t"
                     "ud2\n"
                     "1:"
                     : "=a"(ret)
                     : "0"((long)SYS_clone3), "D"(ca), "S"(sizeof *ca), "r"(r12), "r"(r13)
                     : "rcx", "r11", "memory", "cc");
    return ret;
}
static int s_have_clone3 = 1;
#else
static long s_clone3(struct s_clone_args *ca, int (*fn)(void *), void *arg)
{
    (void)ca, (void)fn, (void)arg;
    return -ENOSYS;
}
static int s_have_clone3 = 0;
#endif

/* Starts the child in the job cgroup when there is one: born there with clone3(CLONE_INTO_CGROUP) (Linux >=
 * 5.7, x86-64), which costs nothing; else the child writes itself into cgroup.procs before exec, which costs
 * the first spawn of a generation a few ms (the kernel waits for an RCU grace period). */
static pid_t s_clone(struct child_args *a)
{
    int cg = cgroup_dir_fd();
    a->cg_procs = -1;
    a->cg_errno = 0;
    if (cg >= 0 && s_have_clone3) {
        struct s_clone_args ca = { .flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP, .exit_signal = SIGCHLD,
                                   .stack = (uintptr_t)s_stack, .stack_size = sizeof s_stack,
                                   .cgroup = (uint64_t)cg };
        long pid = s_clone3(&ca, s_child, a);
        if (pid > 0)
            return (pid_t)pid;
        if (pid == -EAGAIN || pid == -ENOMEM || pid == -EINTR) {
            errno = (int)-pid;
            return -1;
        }
        /* ENOSYS, E2BIG, EINVAL: a kernel without CLONE_INTO_CGROUP; other errors: the cgroup refused. */
        if (pid == -ENOSYS || pid == -E2BIG || pid == -EINVAL)
            s_have_clone3 = 0;
        else
            cgroup_placement_failed((int)-pid);
    }
    a->cg_procs = cgroup_procs_fd();
    pid_t pid = clone(s_child, s_stack + sizeof s_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
    if (pid > 0 && a->cg_errno)
        cgroup_placement_failed(a->cg_errno);
    return pid;
}

pid_t spawn_process(char *const argv[], char *const envp[], const struct topo_bind *bind, int *out_fd, int *err_fd,
                    int *exec_fd)
{
    int out[2] = { -1, -1 }, er[2] = { -1, -1 }, ex[2] = { -1, -1 };
    if (s_nignored < 0)
        s_find_ignored();
    if (pipe2(out, O_CLOEXEC) < 0 || (err_fd && pipe2(er, O_CLOEXEC) < 0) || pipe2(ex, O_CLOEXEC) < 0)
        goto error;
    struct child_args a = { .argv = argv, .envp = envp, .bind = bind, .out_w = out[1], .err_w = er[1], .exec_w = ex[1],
                            .parent = getpid() };
    /* vfork semantics: no page tables to copy (the launcher has ZeroMQ threads and a few MiB mapped), so a
     * spawn costs tens of microseconds instead of hundreds. */
    pid_t pid = s_clone(&a);
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
    if (err_fd) {
        close(er[1]);
        fcntl(er[0], F_SETFL, O_NONBLOCK);
        *err_fd = er[0];
    }
    return pid;
error:;
    int e = errno;
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (er[i] >= 0)
            close(er[i]);
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

/* The file a command name runs: itself with a '/', else the first executable-or-not match in PATH. */
static int s_locate(const char *prog, char *out, size_t cap)
{
    struct stat st;
    if (strchr(prog, '/')) {
        snprintf(out, cap, "%s", prog);
        return stat(prog, &st) == 0;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        snprintf(out, cap, "%.*s/%s", (int)len, len ? p : ".", prog);
        if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode))
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

void spawn_explain_exec(char *const argv[], int exec_errno, const char *python, char *buf, size_t cap)
{
    const char *prog = argv[0];
    char file[PATH_MAX + 256], line[256] = "";
    int found = s_locate(prog, file, sizeof file), is_py = python && *python && strcmp(prog, python) == 0;
    if (found && exec_errno != EISDIR) { /* the #! line, for ENOENT from a file that exists */
        FILE *f = fopen(file, "r");
        if (f && fgets(line, sizeof line, f) && strncmp(line, "#!", 2) == 0)
            line[strcspn(line, "\r\n")] = '\0';
        else
            line[0] = '\0';
        if (f)
            fclose(f);
    }
    if (exec_errno == ENOENT && !found && is_py)
        snprintf(buf, cap, "the Python interpreter is not found%s (plaunch runs %s with it); give --python PATH, "
                 "or set PYTHON_EXEC", strchr(prog, '/') ? "" : " in PATH", argv[1] ? argv[1] : "the program");
    else if (exec_errno == ENOENT && !found && strchr(prog, '/'))
        snprintf(buf, cap, "no such file");
    else if (exec_errno == ENOENT && !found)
        snprintf(buf, cap, "not a file here nor a command in PATH (%.300s)", getenv("PATH") ? getenv("PATH") : "unset");
    else if (exec_errno == ENOENT && line[0])
        snprintf(buf, cap, "%s exists, but the interpreter of its first line (%.200s) is not found", file, line);
    else if (exec_errno == EACCES && found && access(file, X_OK) < 0)
        snprintf(buf, cap, "permission denied: %s is not executable; chmod +x it, or name its interpreter "
                 "(plaunch python3 %s)", file, prog);
    else if (exec_errno == EISDIR)
        snprintf(buf, cap, "it is a directory, not a program");
    else if (exec_errno == ENOEXEC)
        snprintf(buf, cap, "%s is not a program this system runs (no #! line, not a binary for it)", file);
    else
        snprintf(buf, cap, "%s", strerror(exec_errno));
}

void spawn_describe_exit(int wait_status, int exec_errno, char *buf, size_t cap)
{
    if (exec_errno)
        snprintf(buf, cap, "could not be started: %s", strerror(exec_errno));
    else if (WIFSIGNALED(wait_status))
        snprintf(buf, cap, "was killed by SIG%s%s", sigabbrev_np(WTERMSIG(wait_status)),
                 WCOREDUMP(wait_status) ? " (core dumped)" : "");
    else
        snprintf(buf, cap, "exited with code %d", WEXITSTATUS(wait_status));
}
