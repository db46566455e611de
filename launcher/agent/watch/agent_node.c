/* agent_node: REPORT NODE_STATE: when this node's workers of the generation all started, when the first of them wrote,
 * and the monitor's latest GPU figures per rank (agent_node.h). */
#include "agent_node.h"

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
};

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
        if (w->first_out_ns && (!first || w->first_out_ns < first))
            first = w->first_out_ns;
    }
    uint64_t step = agent_hang_first_step_ns(n->hang); /* a rank that reports steps but writes nothing */
    if (step >= n->gen_ns && (!first || step < first))
        first = step;
    int new_started = all && !n->sent_started, new_progress = first && !n->sent_progress;
    int gpu_due = n->mon && now - n->gpu_sent_ns >= (uint64_t)AN_GPU_MS * 1000000u;
    if (!new_started && !new_progress && !gpu_due)
        return 0;
    Plaunch__NodeState ns = PLAUNCH__NODE_STATE__INIT;
    Plaunch__NodeRankGpu *gpus = calloc((size_t)job->node.nworkers, sizeof *gpus);
    Plaunch__NodeRankGpu **list = calloc((size_t)job->node.nworkers, sizeof *list);
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
    n->timer = loop_timer_after_ms(loop, AN_TICK_MS, s_tick, n);
    return n;
}

void agent_node_generation(agent_node_t *n)
{
    if (!n)
        return;
    n->gen_ns = loop_now_ns();
    n->sent_started = n->sent_progress = 0;
}

void agent_node_destroy(agent_node_t **np)
{
    agent_node_t *n = np ? *np : NULL;
    if (!n)
        return;
    if (n->timer > 0)
        loop_timer_cancel(n->loop, n->timer);
    free(n);
    *np = NULL;
}
