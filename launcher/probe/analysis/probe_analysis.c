/* probe_analysis: turns probe measurements into scaling figures and one verdict line per finding. */
#include "launcher/probe/analysis/probe_analysis.h"

#include "launcher/probe/measure/probe_fmt.h"
#include "launcher/probe/analysis/probe_preflight.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct probe_group_stat *probe_analysis_group(const struct probe_analysis *a, int n)
{
    for (size_t i = 0; i < a->ngroups; i++)
        if (a->groups[i].n == n)
            return &a->groups[i];
    return NULL;
}

int probe_analysis_exit_status(const struct probe_analysis *a)
{
    return a->nflags > 0 ? PROBE_EXIT_FLAGGED : 0;
}

/* ---- group figures ------------------------------------------------------------------------------------- */

/* The first sweep of group kind g and size n, whatever its collective (they share their ranks). */
static const struct probe_sweep *s_any_sweep(const struct probe_meas *m, enum probe_group g, int n)
{
    for (size_t i = 0; i < m->nsweeps; i++)
        if (m->sweeps[i].group == g && m->sweeps[i].n == n)
            return &m->sweeps[i];
    return NULL;
}

/* The ranks of the first-n group of size n: the sweep's list when recorded, else 0..n-1. Caller frees. */
static int *s_group_ranks(const struct probe_meas *m, int n)
{
    const struct probe_sweep *s = s_any_sweep(m, PROBE_GROUP_FIRST_N, n);
    int *r = calloc((size_t)n + 1, sizeof *r);
    for (int i = 0; r && i < n; i++)
        r[i] = s ? s->ranks[i] : i;
    return r;
}

/* Hosts the ranks span, from the preflight records; 0 when a rank has none. */
static int s_nodes_of(const struct probe_meas *m, const int *ranks, int n)
{
    int nodes = 0;
    for (int i = 0; i < n; i++) {
        const struct probe_gpu *g = probe_meas_gpu(m, ranks[i]);
        if (g == NULL)
            return 0;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(probe_meas_gpu(m, ranks[j])->host, g->host) == 0;
        nodes += !seen;
    }
    return nodes;
}

static int s_add_n(struct probe_analysis *a, int n)
{
    size_t i = 0;
    while (i < a->ngroups && a->groups[i].n < n)
        i++;
    if (i < a->ngroups && a->groups[i].n == n)
        return 0;
    memmove(&a->groups[i + 1], &a->groups[i], (a->ngroups - i) * sizeof a->groups[0]);
    a->ngroups++;
    struct probe_group_stat *g = &a->groups[i];
    memset(g, 0, sizeof *g);
    g->n = n;
    g->step_us = g->comm_us = g->throughput = g->efficiency = g->threshold = NAN;
    for (int op = 0; op < PROBE_NOPS; op++)
        g->busbw[op] = g->busbw_rel[op] = NAN;
    return 0;
}

/* The largest size every multi-GPU first-n sweep measured: where a ring is bandwidth-bound. */
static void s_pick_ref(const struct probe_meas *m, struct probe_analysis *a)
{
    for (size_t i = 0; i < m->nsweeps; i++) {
        const struct probe_sweep *s = &m->sweeps[i];
        if (s->group != PROBE_GROUP_FIRST_N || s->n < 2)
            continue;
        for (size_t k = 0; k < s->nresults; k++) {
            uint64_t b = s->results[k].nominal;
            int everywhere = b > a->ref_bytes;
            for (size_t j = 0; j < m->nsweeps && everywhere; j++)
                if (m->sweeps[j].group == PROBE_GROUP_FIRST_N && m->sweeps[j].n >= 2)
                    everywhere = probe_sweep_result(&m->sweeps[j], b) != NULL;
            if (everywhere)
                a->ref_bytes = b;
        }
    }
    for (size_t i = 0; a->ref_bytes && i < a->ngroups && !a->base_n; i++)
        if (a->groups[i].n >= 2 && s_any_sweep(m, PROBE_GROUP_FIRST_N, a->groups[i].n))
            a->base_n = a->groups[i].n;
}

static int s_fill_groups(const struct probe_meas *m, const struct probe_thresholds *t, struct probe_analysis *a)
{
    a->groups = calloc(m->nsweeps + m->nsteps + 1, sizeof *a->groups);
    if (a->groups == NULL)
        return -1;
    for (size_t i = 0; i < m->nsweeps; i++)
        if (m->sweeps[i].group == PROBE_GROUP_FIRST_N)
            s_add_n(a, m->sweeps[i].n);
    for (size_t i = 0; i < m->nsteps; i++)
        s_add_n(a, m->steps[i].n);
    s_pick_ref(m, a);
    const struct probe_step *one = probe_meas_step(m, 1);
    for (size_t i = 0; i < a->ngroups; i++) {
        struct probe_group_stat *g = &a->groups[i];
        int *ranks = s_group_ranks(m, g->n);
        if (ranks == NULL)
            return -1;
        g->nodes = s_nodes_of(m, ranks, g->n);
        free(ranks);
        if (g->nodes == 0) {
            const struct probe_sweep *s = s_any_sweep(m, PROBE_GROUP_FIRST_N, g->n);
            g->nodes = s ? s->nodes : 1;
        }
        for (int op = 0; op < PROBE_NOPS && g->n >= 2; op++) {
            const struct probe_result *r =
                probe_sweep_result(probe_meas_sweep(m, (enum probe_op)op, PROBE_GROUP_FIRST_N, g->n), a->ref_bytes);
            const struct probe_result *base_r =
                probe_sweep_result(probe_meas_sweep(m, (enum probe_op)op, PROBE_GROUP_FIRST_N, a->base_n), a->ref_bytes);
            if (r == NULL)
                continue;
            g->busbw[op] = r->busbw;
            g->busbw_rel[op] = base_r ? r->busbw / base_r->busbw : NAN;
            g->busbw_flag[op] = g->busbw_rel[op] < 1.0 - t->busbw_max_drop;
            g->any_busbw_flag |= g->busbw_flag[op];
        }
        const struct probe_step *st = probe_meas_step(m, g->n);
        if (st) {
            g->step_us = st->step_us;
            g->comm_us = st->comm_us;
            g->throughput = st->throughput;
            g->threshold = probe_threshold_for(t, g->n);
            if (one)
                g->efficiency = st->throughput / (g->n * one->throughput);
            g->eff_flag = isfinite(g->efficiency) && isfinite(g->threshold) && g->efficiency < g->threshold;
        }
    }
    return 0;
}

/* ---- reasons --------------------------------------------------------------------------------------------- */

/* The collective the network comparison uses: the first one named that has a one-per-node sweep. */
static enum probe_op s_net_op(const struct probe_meas *m)
{
    for (int k = 0; k < m->config.nops; k++)
        for (size_t i = 0; i < m->nsweeps; i++)
            if (m->sweeps[i].op == m->config.ops[k] && m->sweeps[i].group == PROBE_GROUP_ONE_PER_NODE)
                return m->config.ops[k];
    return m->config.ops[0];
}

/* busbw of the largest one-node first-n group and of the one-per-node sweep of op at one size; 0 when unknown. */
static uint64_t s_net_compare(const struct probe_meas *m, const struct probe_analysis *a, enum probe_op op,
                              double *inter, double *intra, int *intra_n, int *nodes)
{
    const struct probe_sweep *net = NULL;
    for (size_t i = 0; i < m->nsweeps; i++)
        if (m->sweeps[i].op == op && m->sweeps[i].group == PROBE_GROUP_ONE_PER_NODE && m->sweeps[i].nresults &&
            (!net || m->sweeps[i].n > net->n))
            net = &m->sweeps[i];
    if (net == NULL)
        return 0;
    const struct probe_result *r = probe_sweep_result(net, a->ref_bytes);
    if (r == NULL)
        r = &net->results[net->nresults - 1];
    *inter = r->busbw;
    *nodes = net->n;
    *intra = NAN;
    *intra_n = 0;
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_result *q =
            probe_sweep_result(probe_meas_sweep(m, op, PROBE_GROUP_FIRST_N, a->groups[i].n), r->nominal);
        if (a->groups[i].nodes == 1 && a->groups[i].n >= 2 && q) {
            *intra = q->busbw;
            *intra_n = a->groups[i].n;
        }
    }
    return r->nominal;
}

/* "all-reduce" or "reduce-scatter + all-gather": the synthetic step's communication in words. */
static void s_step_ops(const struct probe_meas *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < m->config.nops && used + 2 < len; k++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? " + " : "", probe_op_prose(m->config.ops[k]));
}

static void s_reason(const struct probe_meas *m, const struct probe_thresholds *t, const struct probe_analysis *a,
                     const struct probe_group_stat *g, int base_n, int for_eff, char *buf, size_t len)
{
    int *ranks = s_group_ranks(m, g->n), *base = s_group_ranks(m, base_n);
    const struct probe_group_stat *b = probe_analysis_group(a, base_n);
    char links[768] = "", size[32], ops[96];
    size_t used;
    buf[0] = '\0';
    if (g->nodes > (b ? b->nodes : 1)) {
        double inter, intra;
        int intra_n, nodes;
        enum probe_op op = s_net_op(m);
        used = (size_t)snprintf(buf, len, "inter-node: the N=%d group spans %d nodes while N=%d stays on %d",
                                g->n, g->nodes, base_n, b ? b->nodes : 1);
        uint64_t at = s_net_compare(m, a, op, &inter, &intra, &intra_n, &nodes);
        probe_fmt_bytes(at, size, sizeof size);
        if (at && isfinite(intra) && used < len)
            used += (size_t)snprintf(buf + used, len - used, "; at %s one GPU per node (%d nodes) reaches %.1f GB/s "
                                     "%s busbw against %.1f GB/s inside a node (N=%d): the network is the bottleneck",
                                     size, nodes, inter, probe_op_title(op), intra, intra_n);
    }
    if (ranks && base)
        probe_preflight_links(m, t, ranks, g->n, base, base_n, links, sizeof links);
    free(ranks);
    free(base);
    used = strlen(buf);
    if (links[0] && used + 2 < len)
        snprintf(buf + used, len - used, "%s%s", used ? "; " : "", links);
    used = strlen(buf);
    for (int op = 0; for_eff && op < PROBE_NOPS && used + 2 < len; op++)
        if (g->busbw_flag[op])
            used += (size_t)snprintf(buf + used, len - used, "%s%s busbw at N=%d is %.0f%% below N=%d",
                                     used ? "; " : "", probe_op_title((enum probe_op)op), g->n,
                                     100 * (1 - g->busbw_rel[op]), a->base_n);
    if (for_eff && isfinite(g->comm_us) && used + 2 < len) {
        probe_fmt_bytes(m->config.grad_bytes, size, sizeof size);
        s_step_ops(m, ops, sizeof ops);
        snprintf(buf + used, len - used, "%sthe %s of %s takes %.2f ms of the %.2f ms step (%.0f%%)",
                 used ? "; " : "", ops, size, g->comm_us / 1e3, g->step_us / 1e3, 100 * g->comm_us / g->step_us);
    }
    if (buf[0] == '\0')
        snprintf(buf, len, "no missing P2P, slow pair or extra node in the data explains it; compare with "
                           "nccl-tests (scripts/compare-nccl-tests.sh) on the same GPUs");
}

/* ---- verdicts ---------------------------------------------------------------------------------------------- */

static int s_busbw_op(const struct probe_meas *m, const struct probe_thresholds *t, struct probe_analysis *a,
                      enum probe_op op)
{
    char size[32], why[1024];
    const char *title = probe_op_title(op);
    const struct probe_group_stat *b = probe_analysis_group(a, a->base_n), *low = NULL;
    probe_fmt_bytes(a->ref_bytes, size, sizeof size);
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_group_stat *g = &a->groups[i];
        if (g->n <= a->base_n || !isfinite(g->busbw_rel[op]))
            continue;
        if (!low || g->busbw_rel[op] < low->busbw_rel[op])
            low = g;
        if (!g->busbw_flag[op])
            continue;
        s_reason(m, t, a, g, a->base_n, 0, why, sizeof why);
        if (probe_verdict_add(a, PROBE_SEV_FLAG, "busbw-drop", why, "%s busbw drop at N=%d: %.1f GB/s at %s is "
                               "%.0f%% below N=%d's %.1f GB/s (allowed: %.0f%%)", title, g->n, g->busbw[op], size,
                               100 * (1 - g->busbw_rel[op]), a->base_n, b->busbw[op], 100 * t->busbw_max_drop) < 0)
            return -1;
    }
    if (!isfinite(b->busbw[op]))
        return probe_verdict_add(a, PROBE_SEV_NOTE, "busbw-drop", NULL, "%s busbw scaling not checked: no sweep at "
                                  "N=%d and %s", title, a->base_n, size);
    if (low == NULL)
        return probe_verdict_add(a, PROBE_SEV_NOTE, "busbw-drop", NULL, "%s busbw scaling: only N=%d swept (%.1f "
                                  "GB/s at %s), nothing to compare", title, a->base_n, b->busbw[op], size);
    if (low->busbw_flag[op])
        return 0;
    return probe_verdict_add(a, PROBE_SEV_OK, "busbw-drop", NULL, "%s busbw holds: every N from %d up keeps at "
                              "least %.0f%% of N=%d's %.1f GB/s at %s (lowest: %.0f%% at N=%d)", title, a->base_n,
                              100 * (1 - t->busbw_max_drop), a->base_n, b->busbw[op], size,
                              100 * low->busbw_rel[op], low->n);
}

static int s_busbw_verdicts(const struct probe_meas *m, const struct probe_thresholds *t, struct probe_analysis *a)
{
    if (a->base_n == 0)
        return probe_verdict_add(a, PROBE_SEV_NOTE, "busbw-drop", NULL, "busbw scaling not checked: no sweeps of "
                                  "2 or more GPUs at a common size (at N=1 busbw is 0 by definition, but for "
                                  "Broadcast)");
    for (int k = 0; k < m->config.nops; k++)
        if (probe_meas_has_op(m, m->config.ops[k]) && s_busbw_op(m, t, a, m->config.ops[k]) < 0)
            return -1;
    return 0;
}

static int s_eff_verdicts(const struct probe_meas *m, const struct probe_thresholds *t, struct probe_analysis *a)
{
    char why[1024], ok[512] = "";
    int checked = 0, flagged = 0;
    if (m->nsteps == 0)
        return probe_verdict_add(a, PROBE_SEV_NOTE, "efficiency", NULL, "scaling efficiency not checked: no "
                                  "synthetic data-parallel step in the data");
    if (!probe_meas_step(m, 1))
        return probe_verdict_add(a, PROBE_SEV_NOTE, "efficiency", NULL, "scaling efficiency not checked: it needs "
                                  "the N=1 step as its baseline");
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_group_stat *g = &a->groups[i];
        if (g->n < 2 || !isfinite(g->efficiency))
            continue;
        checked++;
        size_t used = strlen(ok);
        if (isfinite(g->threshold) && used + 2 < sizeof ok)
            snprintf(ok + used, sizeof ok - used, "%s%.2f at N=%d (>= %.2f)", used ? ", " : "", g->efficiency,
                     g->n, g->threshold);
        if (!g->eff_flag)
            continue;
        flagged++;
        s_reason(m, t, a, g, 1, 1, why, sizeof why);
        if (probe_verdict_add(a, PROBE_SEV_FLAG, "efficiency", why, "sublinear scaling at N=%d: efficiency %.2f is "
                               "below the %.2f threshold (throughput %.4g/s against an ideal %.4g/s)", g->n,
                               g->efficiency, g->threshold, g->throughput, g->throughput / g->efficiency) < 0)
            return -1;
    }
    if (checked == 0)
        return probe_verdict_add(a, PROBE_SEV_NOTE, "efficiency", NULL, "scaling efficiency: only N=1 measured; run "
                                  "on 2 or more GPUs to check scaling");
    if (flagged)
        return 0;
    return probe_verdict_add(a, PROBE_SEV_OK, "efficiency", NULL, "scaling efficiency meets the thresholds: %s",
                              ok[0] ? ok : "no threshold applies to the measured group sizes");
}

static int s_network_note(const struct probe_meas *m, struct probe_analysis *a)
{
    double inter, intra;
    int intra_n, nodes;
    char size[32];
    enum probe_op op = s_net_op(m);
    uint64_t at = s_net_compare(m, a, op, &inter, &intra, &intra_n, &nodes);
    if (at == 0)
        return m->nhosts > 1 ? probe_verdict_add(a, PROBE_SEV_NOTE, "network", NULL, "%zu hosts but no one-GPU-per-"
                                                  "node sweep: inter-node bandwidth not measured apart", m->nhosts) : 0;
    probe_fmt_bytes(at, size, sizeof size);
    if (!isfinite(intra))
        return probe_verdict_add(a, PROBE_SEV_NOTE, "network", NULL, "inter-node: one GPU per node (%d nodes) "
                                  "reaches %.1f GB/s %s busbw at %s", nodes, inter, probe_op_title(op), size);
    return probe_verdict_add(a, PROBE_SEV_NOTE, "network", NULL, "inter-node vs intra-node: one GPU per node (%d "
                              "nodes) reaches %.1f GB/s %s busbw at %s, %d GPUs inside a node %.1f GB/s (%.1fx)",
                              nodes, inter, probe_op_title(op), size, intra_n, intra,
                              inter > 0 ? intra / inter : INFINITY);
}

struct probe_analysis *probe_analyse(const struct probe_meas *m, const struct probe_thresholds *t,
                                     struct probe_err *err)
{
    struct probe_analysis *a = calloc(1, sizeof *a);
    if (a == NULL || s_fill_groups(m, t, a) < 0 || probe_preflight_check(m, t, a) < 0 ||
        s_busbw_verdicts(m, t, a) < 0 || s_eff_verdicts(m, t, a) < 0 || s_network_note(m, a) < 0) {
        probe_err_set(err, "out of memory while analysing the probe measurements");
        probe_analysis_destroy(&a);
        return NULL;
    }
    return a;
}

void probe_analysis_destroy(struct probe_analysis **ap)
{
    if (ap == NULL || *ap == NULL)
        return;
    free((*ap)->groups);
    free((*ap)->verdicts);
    free(*ap);
    *ap = NULL;
}
