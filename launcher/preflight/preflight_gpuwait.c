/* preflight_gpuwait: whether a restarted generation may start: the previous generation's processes have let go of
 * the GPUs' memory (NVML still lists a process for a while after it died, until the driver has torn its context
 * down); bounded by a deadline, its length kept for the incident timeline. */
#include "launcher/preflight/preflight.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

void pf_gpuwait_begin(struct pf_gpuwait *w, int generation, const int *prev, int nprev, uint64_t now_ns,
                      uint64_t timeout_ns)
{
    memset(w, 0, sizeof *w);
    w->generation = generation;
    w->start_ns = w->end_ns = now_ns;
    w->deadline_ns = now_ns + timeout_ns;
    w->state = PF_GPUWAIT_WAITING;
    w->prev = prev;
    w->nprev = nprev;
}

static int s_alive(unsigned pid)
{
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

enum pf_gpuwait_state pf_gpuwait_feed(struct pf_gpuwait *w, const struct pf_gpu_proc *procs, int n,
                                      int (*alive)(unsigned pid), uint64_t now_ns)
{
    if (w->state != PF_GPUWAIT_WAITING)
        return w->state;
    if (!alive)
        alive = s_alive;
    w->polls++;
    w->held = 0;
    w->held_mib = 0;
    size_t o = 0;
    char what[sizeof w->what] = "";
    for (int i = 0; i < n; i++) {
        int ours = 0;
        for (int k = 0; k < w->nprev && !ours; k++)
            ours = w->prev[k] > 0 && (unsigned)w->prev[k] == procs[i].pid;
        int gone = !ours && !alive(procs[i].pid);
        if (!ours && !gone)
            continue;
        w->held++;
        w->held_mib += procs[i].used_mib;
        if (o + 80 < sizeof what)
            o += (size_t)snprintf(what + o, sizeof what - o, "%sGPU %.16s: pid %u (%s), %llu MiB", o ? "; " : "",
                                  procs[i].gpu, procs[i].pid, ours ? "a worker of the last generation" : "exited",
                                  procs[i].used_mib);
    }
    if (w->held)
        snprintf(w->what, sizeof w->what, "%s", what);
    w->end_ns = now_ns;
    if (!w->held)
        w->state = PF_GPUWAIT_RELEASED;
    else if (now_ns >= w->deadline_ns)
        w->state = PF_GPUWAIT_TIMEOUT;
    if (w->state != PF_GPUWAIT_WAITING)
        w->prev = NULL; /* borrowed only while waiting */
    return w->state;
}

double pf_gpuwait_seconds(const struct pf_gpuwait *w, uint64_t now_ns)
{
    uint64_t end = w->state == PF_GPUWAIT_WAITING ? now_ns : w->end_ns;
    return end > w->start_ns ? (double)(end - w->start_ns) / 1e9 : 0.0;
}
