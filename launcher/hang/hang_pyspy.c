/* hang_pyspy: py-spy found on PATH, run with pipes and a deadline, its JSON read into Python threads. */
#include "launcher/hang/hang_pyspy.h"

#include "launcher/hang/hang_proc.h"
#include "common/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_ERR_TAIL 400 /* bytes of py-spy's stderr kept for the message */

int hang_pyspy_find(char *buf, size_t cap)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 0 && (size_t)snprintf(buf, cap, "%.*s/py-spy", (int)n, p) < cap && access(buf, X_OK) == 0)
            return 0;
        p += n + (end ? 1 : 0);
    }
    buf[0] = '\0';
    return -1;
}

static int s_set_error(struct hang_trace *t, struct hang_proc *p, const char *msg)
{
    hang_trace_set(t, &p->py_error, msg, HANG_ERR_MAX);
    return -1;
}

int hang_pyspy_parse(struct hang_trace *t, struct hang_proc *p, const char *text, size_t len, char *err,
                     size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!json_is_array(root)) {
        snprintf(err, errlen, "py-spy: %s%s", root ? "expected an array of threads" : "not JSON: ",
                 root ? "" : je.text);
        json_decref(root);
        return -1;
    }
    hang_trace_clear_python(t, p);
    hang_trace_set(t, &p->py_source, "py-spy", HANG_SHORT_MAX);
    int n = 0;
    size_t i;
    json_t *to;
    json_array_foreach(root, i, to) {
        json_t *fa = json_object_get(to, "frames"), *os = json_object_get(to, "os_thread_id");
        json_t *id = json_object_get(to, "thread_id"), *name = json_object_get(to, "thread_name");
        if (!json_is_object(to) || !json_is_array(fa))
            continue;
        long long tid = json_is_integer(os) ? json_integer_value(os) : 0;
        struct hang_thread *th = hang_trace_add_thread(t, p, 1, tid > 0 && tid < (1 << 22) ? (int)tid : 0);
        if (!th)
            break;
        n++;
        th->current = th->tid == p->pid;
        if (json_is_integer(id))
            hang_trace_setf(t, &th->id, HANG_SHORT_MAX, "0x%016llx", (unsigned long long)json_integer_value(id));
        if (json_is_string(name))
            hang_trace_set(t, &th->name, json_string_value(name), HANG_SHORT_MAX);
        size_t k;
        json_t *fo;
        json_array_foreach(fa, k, fo) {
            json_t *fn = json_object_get(fo, "name"), *file = json_object_get(fo, "filename");
            json_t *line = json_object_get(fo, "line");
            long long ln = json_is_integer(line) ? json_integer_value(line) : 0;
            if (hang_trace_add_frame(t, th, json_is_string(fn) ? json_string_value(fn) : "",
                                     json_is_string(file) ? json_string_value(file) : "",
                                     ln > 0 && ln < 1000000000 ? (int)ln : 0, NULL, 0) < 0)
                break;
        }
    }
    json_decref(root);
    return n;
}

/* Reads what is there from fd into buf (at most cap, the rest counted in *over); 0 at EOF, 1 otherwise. */
static int s_drain(int fd, char *buf, size_t cap, size_t *len, size_t *over, int keep_tail)
{
    char tmp[4096];
    ssize_t r = read(fd, tmp, sizeof tmp);
    if (r < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if (r == 0)
        return 0;
    size_t n = (size_t)r;
    if (keep_tail && n + *len > cap) { /* keep the last cap bytes */
        size_t drop = n + *len - cap < *len ? n + *len - cap : *len;
        memmove(buf, buf + drop, *len - drop);
        *len -= drop;
    }
    size_t take = cap - *len < n ? cap - *len : n;
    memcpy(buf + *len, tmp, take);
    *len += take;
    *over += n - take;
    return 1;
}

static char s_owner; /* py-spy's owner in the child registry */

/* Waits for pid's exit until deadline (then kills it and waits a little more); its wait status, or -1. */
static int s_reap(pid_t pid, int64_t deadline_ms)
{
    int st;
    int64_t left = deadline_ms - hang_proc_now_ms();
    if (proc_wait(pid, &s_owner, left > 0 ? (int)left : 0, &st) == 0)
        return st;
    proc_signal(pid, &s_owner, SIGKILL);
    if (proc_wait(pid, &s_owner, 1000, &st) == 0)
        return st;
    proc_disown(pid, &s_owner); /* stuck in the kernel: the capture process's exit leaves it to the subreaper */
    return -1;
}

int hang_pyspy_run(const char *exe, struct hang_trace *t, struct hang_proc *p, int64_t deadline_ms)
{
    int out[2] = { -1, -1 }, errp[2] = { -1, -1 };
    char pidtxt[16], msg[HANG_ERR_MAX + S_ERR_TAIL], errtail[S_ERR_TAIL + 1];
    size_t olen = 0, over = 0, elen = 0, eover = 0;
    char *obuf = malloc(HANG_PYSPY_OUT_MAX);
    if (!obuf || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        free(obuf);
        for (int i = 0; i < 2; i++) {
            if (out[i] >= 0)
                close(out[i]);
            if (errp[i] >= 0)
                close(errp[i]);
        }
        return s_set_error(t, p, "py-spy not run: out of memory or descriptors");
    }
    snprintf(pidtxt, sizeof pidtxt, "%d", p->pid);
    pid_t child = fork();
    if (child == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(errp[1], STDERR_FILENO);
        execl(exe, "py-spy", "dump", "--pid", pidtxt, "--json", (char *)NULL);
        dprintf(STDERR_FILENO, "cannot run %s: %s", exe, strerror(errno));
        _exit(127);
    }
    if (child > 0 && proc_add(child, 0, NULL, &s_owner) < 0) {
        kill(child, SIGKILL); /* our child this instant: nothing else reaps in this process */
        child = -1;
        errno = ENOMEM;
    }
    close(out[1]);
    close(errp[1]);
    struct pollfd fds[2] = { { .fd = out[0], .events = POLLIN }, { .fd = errp[0], .events = POLLIN } };
    int open_fds = child > 0 ? 2 : 0, late = 0;
    while (open_fds > 0 && over == 0) {
        int64_t left = deadline_ms - hang_proc_now_ms();
        if (left <= 0) {
            late = 1;
            break;
        }
        if (poll(fds, 2, (int)left) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int more = i == 0 ? s_drain(fds[i].fd, obuf, HANG_PYSPY_OUT_MAX, &olen, &over, 0)
                              : s_drain(fds[i].fd, errtail, S_ERR_TAIL, &elen, &eover, 1);
            if (!more) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    if (child > 0 && (late || over))
        proc_signal(child, &s_owner, SIGKILL);
    int st = child > 0 ? s_reap(child, late || over ? hang_proc_now_ms() : deadline_ms) : -1;
    errtail[elen] = '\0';
    int n = -1;
    if (child < 0)
        snprintf(msg, sizeof msg, "py-spy not run: fork: %s", strerror(errno));
    else if (late)
        snprintf(msg, sizeof msg, "py-spy did not answer before the deadline: killed");
    else if (over)
        snprintf(msg, sizeof msg, "py-spy wrote more than %u bytes: killed", HANG_PYSPY_OUT_MAX);
    else if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        snprintf(msg, sizeof msg, "py-spy failed (%s %d): %s", st >= 0 && WIFSIGNALED(st) ? "signal" : "exit",
                 st < 0 ? -1 : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), elen ? errtail : "no message");
    else
        n = hang_pyspy_parse(t, p, obuf, olen, msg, sizeof msg);
    free(obuf);
    if (n < 0)
        return s_set_error(t, p, msg);
    return n;
}
