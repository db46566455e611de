/* strays: kills and reaps what a generation's workers left behind: the job cgroup as a whole, then plaunch's
 * own children (descendants re-parented to it as subreaper), read whole from /proc. Only an unreaped child of
 * ours keeps its pid until we reap it, so nothing else can be hit by a kill here. */
#include "launcher/supervisor/strays.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/supervisor/cgroup.h"
#include "common/log.h"
#include "common/proc.h"
#include "launcher/supervisor/procfile.h"
#include "launcher/supervisor/sentinel.h"

struct pidset {
    pid_t *pid;
    int n, cap;
    char *buf;  /* the children file, read whole */
    size_t len, bcap;
};

void strays_log_method(void)
{
    if (cgroup_in_use())
        log_info("processes left behind by workers: ended with the job's %s, by the sentinel too if plaunch is "
                 "killed", cgroup_describe());
    else
        log_info("processes left behind by workers: no job cgroup (%s); they are ended by process group and as "
                 "plaunch's inherited children, and after a SIGKILL of plaunch by the sentinel through their "
                 "PLAUNCH_AGENT variable: one that leaves its session and clears its environment "
                 "(setsid env -i) then survives", cgroup_describe());
}

static int s_add(struct pidset *ps, pid_t pid)
{
    if (ps->n == ps->cap) {
        int cap = ps->cap ? ps->cap * 2 : 256;
        pid_t *np = realloc(ps->pid, (size_t)cap * sizeof *np);
        if (!np)
            return -1;
        ps->pid = np;
        ps->cap = cap;
    }
    ps->pid[ps->n++] = pid;
    return 0;
}

/* The strays among plaunch's children: every complete number (digits ended by a space or newline) that no part
 * registered as its child (the sentinel, running workers, the monitor's sampler...: proc.h). Count, or -1 with
 * errno. */
static int s_strays(struct pidset *ps, const struct job *job)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    ssize_t len = procfile_read(AT_FDCWD, path, &ps->buf, &ps->bcap);
    if (len < 0)
        return -1;
    ps->len = (size_t)len;
    ps->n = 0;
    size_t i = 0;
    while (i < ps->len) {
        size_t start = i;
        long pid = 0;
        while (i < ps->len && ps->buf[i] >= '0' && ps->buf[i] <= '9' && pid < 1L << 30)
            pid = pid * 10 + (ps->buf[i++] - '0');
        int whole = i > start && i < ps->len && (ps->buf[i] == ' ' || ps->buf[i] == '\n');
        while (i < ps->len && ps->buf[i] != ' ' && ps->buf[i] != '\n')
            i++;
        i++;
        if (!whole || pid <= 0 || proc_owned((pid_t)pid))
            continue;
        if (s_add(ps, (pid_t)pid) < 0)
            return -1;
    }
    return ps->n;
}

static void s_list(char *out, size_t cap, const pid_t *pid, int n)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n && i < 8 && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%d", i ? " " : "", (int)pid[i]);
    if (n > 8 && o < cap)
        snprintf(out + o, cap - o, " and %d more", n - 8);
}

int strays_kill(const struct job *job)
{
    uint64_t deadline = loop_now_ns() + (uint64_t)STRAYS_DEADLINE_MS * 1000000u;
    struct pidset ps = { 0 };
    int killed = 0, rounds = 0, complete = 0;
    char first[160] = "";
    /* The cgroup ends everything at once (a fork bomb, a setsid daemon); its dead are our children to reap. */
    cgroup_kill(deadline);
    for (;;) {
        int n = s_strays(&ps, job);
        if (n < 0) {
            log_warn("cannot list plaunch's children (/proc/self/task/%d/children): %s; processes left behind by "
                     "workers may survive", (int)getpid(), strerror(errno));
            break;
        }
        if (n == 0) {
            complete = 1;
            break;
        }
        if (loop_now_ns() >= deadline) {
            char left[160];
            s_list(left, sizeof left, ps.pid, n);
            log_warn("%d process%s left behind by workers still there %d s after SIGKILL (pid %s; stuck in the "
                     "kernel, or forking faster than they die): going on; the next clean-up tries again", n,
                     n == 1 ? "" : "es", STRAYS_DEADLINE_MS / 1000, left);
            break;
        }
        for (int i = 0; i < n; i++)
            kill(ps.pid[i], SIGKILL);
        if (!killed)
            s_list(first, sizeof first, ps.pid, n);
        killed += n;
        rounds++;
        proc_reap_strays(ps.pid, &ps.n, deadline);
    }
    if (killed)
        log_info("ended %d process%s left behind by workers (%d round%s; pid %s)", killed, killed == 1 ? "" : "es",
                 rounds, rounds == 1 ? "" : "s", first);
    /* Every member of the exited workers' groups is gone: their numbers may be anyone's from now on. */
    for (int w = 0; complete && w < job->node.nworkers; w++)
        if (job->workers[w].state == W_EXITED && job->workers[w].pid > 0)
            sentinel_forget(job->workers[w].pid);
    free(ps.pid);
    free(ps.buf);
    return killed;
}
