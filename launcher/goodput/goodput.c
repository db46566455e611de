/* goodput: the model of the job's time (goodput.h): what its owner records, and the account everyone reads. */
#include "launcher/goodput/goodput_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GP_RATE_WINDOW_S 30.0 /* a rank's step rate: over its reports of about the last half minute */

gp_t *gp_new(const char *job_id, uint64_t mono_ns, int64_t unix_ms)
{
    gp_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->job_id, sizeof g->job_id, "%s", job_id ? job_id : "");
    g->start_ns = mono_ns;
    g->start_unix_ms = unix_ms;
    g->open = -1;
    g->end_t = -1;
    g->exit_status = -1;
    g->ledger_fd = -1;
    return g;
}

void gp_free(gp_t **pg)
{
    gp_t *g = *pg;
    if (!g)
        return;
    if (g->ledger_fd >= 0)
        close(g->ledger_fd);
    free(g->inc);
    free(g->gens);
    free(g->nodes);
    free(g->ranks);
    free(g->spares);
    free(g->swaps);
    free(g);
    *pg = NULL;
}

double gp_time(const gp_t *g, uint64_t mono_ns)
{
    if (g->frozen)
        return g->frozen_now + ((double)mono_ns - (double)g->start_ns) / 1e9;
    return mono_ns >= g->start_ns ? (double)(mono_ns - g->start_ns) / 1e9 : 0;
}

void *gp_grow(void *p, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return p;
    int n = *cap ? *cap : 8;
    while (n < need)
        n *= 2;
    void *q = realloc(p, (size_t)n * size);
    if (!q)
        return NULL;
    memset((char *)q + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
    *cap = n;
    return q;
}

static struct gp_gen *s_cur_gen(gp_t *g) { return g->ngens ? &g->gens[g->ngens - 1] : NULL; }

static double s_last_mark(const struct gp_incident *in, int *which)
{
    int m = GP_OCCURRED;
    for (int i = GP_OCCURRED + 1; i < GP_NMARKS; i++)
        if (in->at[i] >= 0)
            m = i;
    if (which)
        *which = m;
    return in->at[m];
}

/* Seconds per step of generation gen, which ended (its running time over its steps); 0 unknown. */
static double s_step_time(const gp_t *g, uint32_t gen)
{
    for (int i = g->ngens - 1; i >= 0; i--) {
        const struct gp_gen *gn = &g->gens[i];
        if (gn->gen != gen || gn->run_t < 0 || gn->end_t < 0)
            continue;
        if (gn->first_step < 0 || gn->last_step <= gn->first_step)
            return 0;
        return (gn->end_t - gn->run_t) / (double)(gn->last_step - gn->first_step);
    }
    return 0;
}

static void s_close(gp_t *g, double t)
{
    if (g->open < 0)
        return;
    struct gp_incident *in = &g->inc[g->open];
    double last = s_last_mark(in, NULL);
    in->end_t = t > last ? t : last;
    in->closed = 1;
    g->open = -1;
}

int gp_incident_open(gp_t *g, uint64_t now_ns, enum gp_cause cause, const struct gp_cause_info *ci)
{
    double now = gp_time(g, now_ns);
    if (g->end_t >= 0 || cause >= GP_NCAUSES)
        return -1;
    if (g->open >= 0) {
        struct gp_incident *in = &g->inc[g->open];
        if (in->at[GP_RENDEZVOUS] < 0)
            return in->id; /* the same teardown: a node lost with its ranks, a stop during a restart */
        /* the next generation failed before it made progress: that incident ends where this one starts */
    }
    double occ = now - (ci ? (double)ci->occurred_ago_ms / 1e3 : 0);
    /* the time before belongs to someone already: the running generation from its first progress, an open
     * incident up to its last mark */
    struct gp_gen *cg = s_cur_gen(g);
    double floor = cg && cg->run_t >= 0 ? cg->run_t : cg ? cg->start_t : 0;
    if (g->open >= 0) {
        double last = s_last_mark(&g->inc[g->open], NULL);
        floor = last > floor ? last : floor;
    }
    for (int i = 0; i < g->ninc; i++)
        if (g->inc[i].end_t > floor)
            floor = g->inc[i].end_t;
    if (occ < floor)
        occ = floor;
    if (occ > now)
        occ = now;
    s_close(g, occ);
    if (cg && cg->end_t < 0)
        cg->end_t = occ;
    g->count[cause]++;
    g->ntotal++;
    struct gp_incident *arr = gp_grow(g->inc, &g->cap_inc, g->ninc + 1, sizeof *g->inc);
    if (g->ninc >= GP_MAX_INCIDENTS || !arr)
        return -1;
    g->inc = arr;
    struct gp_incident *in = &g->inc[g->ninc];
    memset(in, 0, sizeof *in);
    in->id = g->ninc;
    in->cause = cause;
    in->generation = g->generation;
    in->rank = ci ? ci->rank : -1;
    in->node = ci ? ci->node : -1;
    snprintf(in->host, sizeof in->host, "%s", ci && ci->host ? ci->host : "");
    in->exit_code = ci ? ci->exit_code : -1;
    in->signal = ci ? ci->signal : 0;
    gp_oneline(in->text, sizeof in->text, ci && ci->text ? ci->text : "");
    for (int m = 0; m < GP_NMARKS; m++)
        in->at[m] = -1;
    in->at[GP_OCCURRED] = occ;
    in->at[GP_DETECTED] = now;
    in->end_t = -1;
    in->step_before = cg ? cg->last_step : -1;
    in->step_after = -1;
    g->open = g->ninc++;
    return in->id;
}

void gp_oneline(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    for (; *src && n + 1 < cap; src++)
        dst[n++] = (*src == '\n' || *src == '\r' || *src == '\t') ? ' ' : *src;
    dst[n] = 0;
}

void gp_incident_group(gp_t *g, const char *groups)
{
    if (g->open >= 0 && groups)
        gp_oneline(g->inc[g->open].group, sizeof g->inc[g->open].group, groups);
}

static void s_mark_at(gp_t *g, enum gp_mark m, double t)
{
    if (g->open < 0 || m <= GP_DETECTED || m >= GP_NMARKS)
        return;
    struct gp_incident *in = &g->inc[g->open];
    if (in->at[m] >= 0)
        return;
    int last;
    double lt = s_last_mark(in, &last);
    if (t < lt)
        t = lt;
    for (int i = last + 1; i <= (int)m; i++)
        in->at[i] = t; /* a mark skipped (no teardown to wait for) took no time of its own */
    if (m == GP_PROGRESS)
        s_close(g, t);
}

void gp_mark(gp_t *g, enum gp_mark m, uint64_t now_ns) { s_mark_at(g, m, gp_time(g, now_ns)); }

void gp_gen_begin(gp_t *g, uint32_t gen, int world, int nnodes, uint64_t now_ns)
{
    double now = gp_time(g, now_ns);
    struct gp_gen *cg = s_cur_gen(g);
    if (cg && cg->end_t < 0)
        cg->end_t = now;
    if (cg && cg->gen == gen && cg->run_t < 0 && cg->end_t == now) {
        /* the same generation assigned again (nothing ran): keep one entry */
        cg->end_t = -1;
    } else {
        struct gp_gen *arr = gp_grow(g->gens, &g->cap_gens, g->ngens + 1, sizeof *g->gens);
        if (!arr)
            return;
        g->gens = arr;
        cg = &g->gens[g->ngens++];
        if (g->ngens > 1)
            g->restarts++;
    }
    *cg = (struct gp_gen){ .gen = gen, .world = world, .nnodes = nnodes, .start_t = now, .run_t = -1, .end_t = -1,
                           .first_step = -1, .last_step = -1 };
    g->generation = gen;
    g->world = world;
    s_mark_at(g, GP_RENDEZVOUS, now);
    for (int i = 0; i < g->nnodes; i++)
        g->nodes[i].started = g->nodes[i].progressed = 0;
    for (int i = 0; i < g->nranks; i++) {
        g->ranks[i].r.step = -1;
        g->ranks[i].r.step_rate = NAN;
        g->ranks[i].r.out_t = -1;
        g->ranks[i].rate_t0 = -1;
    }
}

static struct gp_node_x *s_node(gp_t *g, int node_rank)
{
    if (node_rank < 0 || node_rank >= GP_MAX_NODES)
        return NULL;
    struct gp_node_x *arr = gp_grow(g->nodes, &g->cap_nodes, node_rank + 1, sizeof *g->nodes);
    if (!arr)
        return NULL;
    g->nodes = arr;
    for (; g->nnodes <= node_rank; g->nnodes++) {
        struct gp_node_x *x = &g->nodes[g->nnodes];
        memset(x, 0, sizeof *x);
        x->n.node_rank = g->nnodes;
        x->n.first_rank = -1;
        x->n.seen_t = -1;
        x->n.gpu_util = x->n.gpu_mem_mib = x->n.gpu_mem_total_mib = NAN;
    }
    return &g->nodes[node_rank];
}

struct gp_rank_x *gp_rank_get(gp_t *g, int rank)
{
    if (rank < 0 || rank >= GP_MAX_RANKS)
        return NULL;
    struct gp_rank_x *arr = gp_grow(g->ranks, &g->cap_ranks, rank + 1, sizeof *g->ranks);
    if (!arr)
        return NULL;
    g->ranks = arr;
    for (; g->nranks <= rank; g->nranks++) {
        struct gp_rank_x *x = &g->ranks[g->nranks];
        memset(x, 0, sizeof *x);
        x->r = (struct gp_rank){ .rank = g->nranks, .node = -1, .step = -1, .step_rate = NAN, .out_t = -1,
                                 .gpu_util = NAN, .gpu_mem_mib = NAN, .gpu_mem_total_mib = NAN };
        x->rate_t0 = -1;
    }
    return &g->ranks[rank];
}

void gp_node_set(gp_t *g, int node_rank, const char *host, int first_rank, int nranks, enum gp_node_state st,
                 uint64_t now_ns)
{
    struct gp_node_x *x = s_node(g, node_rank);
    if (!x)
        return;
    if (host)
        snprintf(x->n.host, sizeof x->n.host, "%s", host);
    if (first_rank >= 0) {
        x->n.first_rank = first_rank;
        x->n.nranks = nranks;
        for (int r = first_rank; r < first_rank + nranks; r++) {
            struct gp_rank_x *rx = gp_rank_get(g, r);
            if (rx)
                rx->r.node = node_rank;
        }
    }
    x->n.state = st;
    x->n.seen_t = gp_time(g, now_ns);
}

static void s_progress(gp_t *g, double t)
{
    struct gp_gen *cg = s_cur_gen(g);
    if (!cg || cg->end_t >= 0 || cg->run_t >= 0)
        return; /* the first progress heard decides (a later report of an earlier output changes nothing) */
    if (t < cg->start_t)
        t = cg->start_t;
    int o = g->open;
    cg->run_t = t;
    if (o >= 0) {
        s_mark_at(g, GP_PROGRESS, t);
        cg->run_t = g->inc[o].end_t; /* not before its last mark: the running time starts where it ends */
    }
}

void gp_node_heard(gp_t *g, int node_rank, uint64_t now_ns, uint64_t started_ago_ms, uint64_t progress_ago_ms,
                   double gpu_util, double gpu_mem_mib, double gpu_mem_total_mib)
{
    struct gp_node_x *x = s_node(g, node_rank);
    if (!x)
        return;
    double now = gp_time(g, now_ns);
    x->n.seen_t = now;
    if (gpu_util >= 0) {
        x->n.gpu_util = gpu_util;
        x->n.gpu_mem_mib = gpu_mem_mib;
        x->n.gpu_mem_total_mib = gpu_mem_total_mib;
    }
    struct gp_gen *cg = s_cur_gen(g);
    if (!cg)
        return;
    if (started_ago_ms && !x->started) {
        x->started = 1;
        x->started_t = now - (double)started_ago_ms / 1e3;
        int all = 1;
        double latest = 0;
        for (int i = 0; i < g->nnodes; i++) {
            const struct gp_node_x *y = &g->nodes[i];
            if (y->n.nranks <= 0 || y->n.state == GP_NODE_LOST)
                continue;
            if (!y->started)
                all = 0;
            else if (y->started_t > latest)
                latest = y->started_t;
        }
        if (all)
            s_mark_at(g, GP_STARTED, latest);
    }
    if (progress_ago_ms && !x->progressed) {
        x->progressed = 1;
        s_progress(g, now - (double)progress_ago_ms / 1e3);
    }
}

void gp_rank_progress(gp_t *g, int rank, int node, long long step, uint64_t out_age_ms, uint64_t now_ns)
{
    struct gp_rank_x *x = gp_rank_get(g, rank);
    struct gp_gen *cg = s_cur_gen(g);
    if (!x || !cg)
        return;
    double now = gp_time(g, now_ns);
    if (node >= 0)
        x->r.node = node;
    if (out_age_ms != UINT64_MAX) {
        double out = now - (double)out_age_ms / 1e3;
        if (out >= cg->start_t)
            x->r.out_t = out; /* the live view only: an agent counts a silent rank's age from its start, so the
                               * first progress comes from gp_node_heard (first output) and step reports */
    }
    if (step < 0)
        return;
    g->steps_reported = 1; /* the first progress comes from gp_node_heard: its node saw the first step first */
    if (cg->first_step < 0 || (x->r.step < 0 && step < cg->first_step))
        cg->first_step = step;
    if (step > cg->last_step)
        cg->last_step = step;
    if (g->ninc) {
        struct gp_incident *in = &g->inc[g->ninc - 1];
        if (in->generation < cg->gen && (in->step_after < 0 || (x->r.step < 0 && step < in->step_after)) &&
            cg->gen == in->generation + 1) {
            in->step_after = step;
            long long lost = in->step_before >= 0 ? in->step_before - step + 1 : 0;
            in->steps_lost = lost > 0 ? lost : 0;
            in->recompute_s = (double)in->steps_lost * s_step_time(g, in->generation);
        }
    }
    if (x->rate_t0 < 0 || step < x->rate_s0) {
        x->rate_t0 = now;
        x->rate_s0 = step;
    } else if (now > x->rate_t0 && step != x->r.step) {
        x->r.step_rate = (double)(step - x->rate_s0) / (now - x->rate_t0);
        if (now - x->rate_t0 > GP_RATE_WINDOW_S) { /* slide: the next rate counts from here */
            x->rate_t0 = now;
            x->rate_s0 = step;
        }
    }
    x->r.step = step;
}

void gp_rank_gpu(gp_t *g, int rank, double util, double mem_mib, double mem_total_mib)
{
    struct gp_rank_x *x = gp_rank_get(g, rank);
    if (!x)
        return;
    x->r.gpu_util = util;
    x->r.gpu_mem_mib = mem_mib;
    x->r.gpu_mem_total_mib = mem_total_mib;
}

void gp_finish(gp_t *g, uint64_t now_ns, int exit_status)
{
    if (g->end_t >= 0)
        return;
    double now = gp_time(g, now_ns);
    if (g->open >= 0) {
        g->inc[g->open].final = 1;
        s_close(g, now);
    }
    struct gp_gen *cg = s_cur_gen(g);
    if (cg && cg->end_t < 0)
        cg->end_t = now;
    g->end_t = now;
    g->exit_status = exit_status;
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].n.state != GP_NODE_LOST)
            g->nodes[i].n.state = GP_NODE_DONE;
}
