/* agent_node: REPORT NODE_STATE: when this node's workers of the generation all started, when the first of them wrote,
 * and the monitor's latest GPU figures per rank (agent_node.h). */
#include "launcher/agent/watch/agent_node.h"

#include "common/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AN_TICK_MS 200 /* a look at a few workers in memory; a message only when something is new */
#define AN_GPU_MS 10000 /* GPU figures at most this often: 16,384 nodes send 1,600 a second */

struct agent_node {
    struct job *job;
    agent_mon_t *mon;
    agent_hang_t *hang;
    loop_t *loop;
    agent_node_send_fn send;
    void *arg;
    int timer;
    uint64_t gen_ns;           /* when this generation began here */
    int sent_started, sent_progress;
    uint64_t gpu_sent_ns;
    gp_t *gp;                  /* this node's view (NULL: out of memory, no view) */
    char status_name[320];     /* status.NODE.json; "" on a one-node job (the coordinator's status.json is all) */
    int warned;
};

/* The node's model from what the agent holds in memory: its workers, their steps, the monitor's last samples. */
static void s_model(agent_node_t *n, uint64_t now, uint64_t started_ago_ms, uint64_t progress_ago_ms)
{
    struct job *job = n->job;
    double util = 0, mem = 0, total = 0;
    int k = 0;
    for (int i = 0; i < job->node.nworkers; i++) {
        const struct worker *w = &job->workers[i];
        struct mon_sample s;
        if (w->state == W_RUNNING)
            gp_rank_progress(n->gp, w->rank, job->gen.node_rank, agent_hang_step(n->hang, i),
                             now > w->out_ns ? (now - w->out_ns) / 1000000u : 0, now);
        if (!agent_mon_latest(n->mon, i, job->gen.generation, &s))
            continue;
        double m = !isnan(s.gpu_mem_proc_mib) ? s.gpu_mem_proc_mib : s.gpu_mem_used_mib;
        gp_rank_gpu(n->gp, w->rank, s.gpu_util, m, s.gpu_mem_total_mib);
        if (!isnan(s.gpu_util))
            util += s.gpu_util, mem += isnan(m) ? 0 : m, total += isnan(s.gpu_mem_total_mib) ? 0 : s.gpu_mem_total_mib,
                k++;
    }
    gp_node_heard(n->gp, job->gen.node_rank, now, started_ago_ms, progress_ago_ms, k ? util / k : -1, mem, total);
    char err[512];
    if (n->status_name[0] && gp_status_write_as(n->gp, job->node.log_dir, n->status_name, now, err, sizeof err) < 0 &&
        !n->warned++)
        log_warn("%s (the coordinator's status.json and plaunch status --master still show this node)", err);
}

/* A monitor figure for the wire: -1 when not known. */
static int64_t s_fig(double v, double scale, double hi)
{
    if (isnan(v) || v < 0)
        return -1;
    v *= scale;
    return v > hi ? (int64_t)hi : (int64_t)(v + 0.5);
}

static int s_tick(loop_t *loop, int id, void *arg)
{
    agent_node_t *n = arg;
    struct job *job = n->job;
    (void)id;
    n->timer = loop_timer_after_ms(loop, AN_TICK_MS, s_tick, n);
    uint64_t now = loop_now_ns(), started = 0, first = 0;
    int all = job->node.nworkers > 0;
    for (int i = 0; i < job->node.nworkers; i++) {
        const struct worker *w = &job->workers[i];
        if (w->state == W_IDLE || w->start_ns < n->gen_ns) {
            all = 0;
            continue;
        }
        started = w->start_ns > started ? w->start_ns : started;
        if (w->first_out_ns >= w->start_ns && (!first || w->first_out_ns < first))
            first = w->first_out_ns;
    }
    uint64_t step = agent_hang_first_step_ns(n->hang); /* a rank that reports steps but writes nothing */
    if (step >= n->gen_ns && (!first || step < first))
        first = step;
    if (n->gp)
        s_model(n, now, all ? (now - started) / 1000000u + 1 : 0, first ? (now - first) / 1000000u + 1 : 0);
    int new_started = all && !n->sent_started, new_progress = first && !n->sent_progress;
    int gpu_due = n->mon && now - n->gpu_sent_ns >= (uint64_t)AN_GPU_MS * 1000000u;
    if (!new_started && !new_progress && !gpu_due)
        return 0;
    Plaunch__NodeState ns = PLAUNCH__NODE_STATE__INIT;
    Plaunch__NodeRankGpu *gpus = calloc((size_t)job->node.nworkers + 1, sizeof *gpus);
    Plaunch__NodeRankGpu **list = calloc((size_t)job->node.nworkers + 1, sizeof *list);
    if (!gpus || !list) {
        free(gpus);
        free(list);
        return 0;
    }
    /* ages, not times: the coordinator's clock is not this one (+1: 0 means "not yet") */
    ns.started_ago_ms = all ? (now - started) / 1000000u + 1 : 0;
    ns.progress_ago_ms = first ? (now - first) / 1000000u + 1 : 0;
    for (int i = 0; gpu_due && i < job->node.nworkers; i++) {
        struct mon_sample s;
        if (!agent_mon_latest(n->mon, i, job->gen.generation, &s))
            continue;
        Plaunch__NodeRankGpu *g = &gpus[ns.n_ranks];
        plaunch__node_rank_gpu__init(g);
        g->rank = (uint32_t)job->workers[i].rank;
        g->util_permille = (int32_t)s_fig(s.gpu_util, 10, 1000);
        g->mem_mib = s_fig(!isnan(s.gpu_mem_proc_mib) ? s.gpu_mem_proc_mib : s.gpu_mem_used_mib, 1, 1u << 24);
        g->total_mib = s_fig(s.gpu_mem_total_mib, 1, 1u << 24);
        list[ns.n_ranks++] = g;
    }
    ns.ranks = list;
    n->sent_started |= all;
    n->sent_progress |= first != 0;
    if (gpu_due)
        n->gpu_sent_ns = now;
    n->send(n->arg, WIRE_R_NODE_STATE, &ns);
    free(list);
    free(gpus);
    return 0;
}

agent_node_t *agent_node_new(struct job *job, agent_mon_t *mon, agent_hang_t *hang, loop_t *loop,
                             agent_node_send_fn send, void *arg)
{
    agent_node_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    *n = (struct agent_node){ .job = job, .mon = mon, .hang = hang, .loop = loop, .send = send, .arg = arg };
    n->gen_ns = loop_now_ns();
    n->gpu_sent_ns = n->gen_ns;
    n->gp = gp_new(job->node.job_id, n->gen_ns, 0);
    if (job->node.multi)
        snprintf(n->status_name, sizeof n->status_name, "status.%s.json", job->node.node_label);
    n->timer = loop_timer_after_ms(loop, AN_TICK_MS, s_tick, n);
    return n;
}

void agent_node_generation(agent_node_t *n)
{
    if (!n)
        return;
    n->gen_ns = loop_now_ns();
    n->sent_started = n->sent_progress = 0;
    const struct job *job = n->job;
    if (!n->gp)
        return;
    gp_gen_begin(n->gp, (uint32_t)job->gen.generation, job->gen.world_size, job->gen.nnodes, n->gen_ns);
    gp_node_set(n->gp, job->gen.node_rank, job->node.node_label, job->gen.rank_base, job->node.nworkers, GP_NODE_RUNNING, n->gen_ns);
}

const gp_t *agent_node_model(const agent_node_t *n)
{
    return n ? n->gp : NULL;
}

void agent_node_destroy(agent_node_t **np)
{
    agent_node_t *n = np ? *np : NULL;
    if (!n)
        return;
    if (n->timer > 0)
        loop_timer_cancel(n->loop, n->timer);
    char err[512];
    if (n->gp && n->status_name[0]) {
        gp_finish(n->gp, loop_now_ns(), -1);
        gp_status_write_as(n->gp, n->job->node.log_dir, n->status_name, loop_now_ns(), err, sizeof err);
    }
    gp_free(&n->gp);
    free(n);
    *np = NULL;
}
