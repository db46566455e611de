/* agent_preflight: the node preflight before the first JOIN (findings logged, carried in JOIN to the coordinator's
 * Health block; strict ends the node with 2) and a restart's JOIN held back, bounded, until the memory cgroup was
 * checked and the last generation's processes released the GPUs' memory (NVML's process list, through the
 * monitor's sampler). A floor between agent.c/agent_inbox.c and agent_proto.c. */
#include "launcher/agent/agent_priv.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/esc/esc.h"
#include "common/log.h"
#include "common/util.h"

#define GW_POLL_MS 200     /* between two looks at the GPUs' processes */
#define GW_PROCS_MAX 1024  /* processes read from one answer */

static int s_driver_gpus(void)
{
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return d ? n : -1;
}

/* Each finding as a warning; a value from the environment may hold any byte, so the line is escaped first. */
static void s_log(const struct pf_findings *f)
{
    static char safe[4 * PF_LINE];
    for (int i = 0; i < f->n; i++) {
        esc_term(safe, sizeof safe, f->line[i], strlen(f->line[i]), 0);
        log_warn("preflight: %s", safe);
    }
    if (f->dropped)
        log_warn("preflight: %d more finding%s not shown", f->dropped, f->dropped == 1 ? "" : "s");
}

int agent_preflight_node(agent_t *ac)
{
    struct job *job = ac->job;
    if (strcmp(job->opt.preflight, "off") == 0)
        return 0;
    struct pf_input in = {
        .gpu_workers = job->node.gpu_mode ? job->node.nworkers : 0, .cpu_workers = job->node.gpu_mode ? 0 : job->node.nworkers,
        .shm_per_gpu = job->opt.shm_gpu, .shm_per_cpu = job->opt.shm_cpu, .ld_library_path = getenv("LD_LIBRARY_PATH"),
        .driver_cuda = agent_mon_cuda_driver(ac->mon), .visible = getenv("CUDA_VISIBLE_DEVICES"),
        .driver_gpus = s_driver_gpus(), .nccl_ifname = getenv("NCCL_SOCKET_IFNAME"),
        .gloo_ifname = getenv("GLOO_SOCKET_IFNAME"),
    };
    int n = preflight_node(&in, &ac->pf);
    log_info("preflight: %d node finding%s on %s", n, n == 1 ? "" : "s", job->node.hostname);
    s_log(&ac->pf);
    if (n == 0 || strcmp(job->opt.preflight, "strict") != 0)
        return 0;
    static char safe[4 * PF_LINE];
    esc_term(safe, sizeof safe, ac->pf.line[0], strlen(ac->pf.line[0]), 0);
    log_error("--preflight strict: %d finding%s on %s; not starting (exit status 2): %s", n, n == 1 ? "" : "s",
              job->node.hostname, safe);
    return 2;
}

/* "/kubepods/..." from the 0:: line of /proc/self/cgroup (cgroup v2), "" when there is none. */
static void s_self_cgroup(char *buf, size_t cap)
{
    char text[8192];
    buf[0] = '\0';
    if (util_read_small("/proc/self/cgroup", text, sizeof text) < 0)
        return;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (strncmp(line, "0::", 3) == 0)
            snprintf(buf, cap, "%s", strcmp(line + 3, "/") == 0 ? "" : line + 3);
}

/* The wait is over (or was never needed): the JOIN goes out unless the job moved on meanwhile. */
static void s_join(agent_t *ac)
{
    ac->gw_active = 0;
    if (ac->gw_timer > 0)
        loop_timer_cancel(ac->loop, ac->gw_timer);
    ac->gw_timer = 0;
    if ((int)ac->st == ac->gw_state && ac->stop_reason == PLAUNCH__STOP__REASON__RESTART)
        agent_proto_send_join(ac);
}

static void s_end(agent_t *ac, const char *why)
{
    const struct pf_gpuwait *w = &ac->gw;
    double s = pf_gpuwait_seconds(w, loop_now_ns());
    if (why)
        log_warn("gpu-wait: generation %d: waited %.2f s; %s: starting without knowing whether the GPUs are free",
                 w->generation, s, why);
    else if (w->state == PF_GPUWAIT_RELEASED)
        log_info("gpu-wait: generation %d: the GPUs hold no memory of the last generation after %.2f s (%d look%s)",
                 w->generation, s, w->polls, w->polls == 1 ? "" : "s");
    else
        log_warn("gpu-wait: generation %d: after %.2f s (--gpu-release-wait %g) the GPUs still hold %llu MiB of the "
                 "last generation (%s); starting anyway: the new workers may run out of GPU memory", w->generation, s,
                 ac->job->opt.gpu_release_wait, w->held_mib, w->what);
    s_join(ac);
}

static void s_ask(agent_t *ac);

static int s_on_timer(loop_t *loop, int id, void *arg)
{
    agent_t *ac = arg;
    if (id != ac->gw_timer)
        return 0;
    ac->gw_timer = 0;
    if (ac->gw_active)
        s_ask(ac);
    return 0;
}

static void s_on_procs(void *arg, const char *lines, int n, int ok)
{
    agent_t *ac = arg;
    static struct pf_gpu_proc procs[GW_PROCS_MAX];
    if (!ac->gw_active)
        return;
    if (!ok) {
        s_end(ac, "NVML gave no answer");
        return;
    }
    int k = 0;
    for (int i = 0; i < n && lines && k < GW_PROCS_MAX; i++, lines += strlen(lines) + 1)
        if (sscanf(lines, "%63s %u %llu", procs[k].gpu, &procs[k].pid, &procs[k].used_mib) == 3)
            k++;
    if (pf_gpuwait_feed(&ac->gw, procs, k, NULL, loop_now_ns()) != PF_GPUWAIT_WAITING)
        s_end(ac, NULL);
    else
        ac->gw_timer = loop_timer_after_ms(ac->loop, GW_POLL_MS, s_on_timer, ac);
}

static void s_ask(agent_t *ac)
{
    if (agent_mon_gpu_procs(ac->mon, s_on_procs, ac))
        return;
    if (loop_now_ns() >= ac->gw.deadline_ns) /* the sampler stayed busy */
        s_end(ac, "the sampler was busy until the deadline");
    else
        ac->gw_timer = loop_timer_after_ms(ac->loop, GW_POLL_MS, s_on_timer, ac);
}

void agent_preflight_restart(agent_t *ac)
{
    struct job *job = ac->job;
    struct pf_findings f;
    char cg[4096];
    memset(&f, 0, sizeof f);
    s_self_cgroup(cg, sizeof cg);
    if (strcmp(job->opt.preflight, "off") != 0)
        preflight_cgroup("/sys/fs/cgroup", cg, agent_mon_rss_peak_mib(ac->mon, 1), job->gen.generation, &f);
    s_log(&f);
    if (f.n && strcmp(job->opt.preflight, "strict") == 0) {
        log_error("--preflight strict: not restarting on %s (exit status 2): see the finding above", job->node.hostname);
        agent_proto_send_bye(ac, 2);
        agent_proto_finish(ac, 2);
        return;
    }
    ac->gw_state = (int)ac->st;
    if (ac->gw_active) /* a second STOP of the same restart: the wait under way sends the JOIN */
        return;
    if (job->opt.gpu_release_wait <= 0 || !agent_mon_can_ask_gpus(ac->mon)) {
        agent_proto_send_join(ac);
        return;
    }
    int n = 0;
    for (int i = 0; i < job->node.nworkers && n < WIRE_MAX_LOCAL; i++)
        if (job->workers[i].pid > 0)
            ac->gw_prev[n++] = (int)job->workers[i].pid;
    pf_gpuwait_begin(&ac->gw, job->gen.generation + 1, ac->gw_prev, n, loop_now_ns(),
                     (uint64_t)(job->opt.gpu_release_wait * 1e9));
    ac->gw_active = 1;
    s_ask(ac);
}

void agent_preflight_stop(agent_t *ac)
{
    ac->gw_active = 0;
    if (ac->gw_timer > 0)
        loop_timer_cancel(ac->loop, ac->gw_timer);
    ac->gw_timer = 0;
}

const struct pf_gpuwait *agent_gpuwait_last(const agent_t *ac)
{
    return ac && ac->gw.polls ? &ac->gw : NULL;
}
