/* probe_report: the probe's terminal table and its JSON report (the measurements plus the analysis). */
#include "launcher/probe/report/probe_report.h"

#include "launcher/probe/measure/probe_fmt.h"
#include "launcher/probe/report/probe_table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- terminal table -------------------------------------------------------------------------------------- */

static void s_cell(char *buf, size_t len, double v, int decimals, const char *suffix)
{
    if (isfinite(v))
        snprintf(buf, len, "%.*f%s", decimals, v, suffix);
    else
        snprintf(buf, len, "-");
}

static void s_table_preflight(FILE *out, const struct probe_meas *m)
{
    fprintf(out, "\nPreflight\n  %-4s %-20s %-24s %10s %4s %7s %7s %7s\n", "rank", "host", "gpu", "memory", "cc",
            "driver", "runtime", "nccl");
    for (size_t i = 0; i < m->ngpus; i++) {
        const struct probe_gpu *g = &m->gpus[i];
        char drv[16], rt[16], nccl[16], cc[16] = "-";
        probe_fmt_cuda_version(g->driver_cuda, drv, sizeof drv);
        probe_fmt_cuda_version(g->runtime_cuda, rt, sizeof rt);
        probe_fmt_nccl_version(g->nccl_version, nccl, sizeof nccl);
        if (g->cc_major)
            snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        fprintf(out, "  %-4d %-20.20s %-24.24s %6.1f GiB %4s %7s %7s %7s\n", g->rank, g->host,
                g->name[0] ? g->name : "-", (double)g->memory_bytes / (1 << 30), cc, drv, rt, nccl);
    }
    for (size_t h = 0; h < m->np2p; h++) {
        const struct probe_p2p *p = &m->p2p[h];
        if (p->n < 2)
            continue;
        fprintf(out, "  P2P on %s (rows and columns: ranks", p->host);
        for (int i = 0; i < p->n; i++)
            fprintf(out, " %d", p->ranks[i]);
        fprintf(out, "; y = peer access):\n");
        for (int i = 0; i < p->n; i++) {
            fprintf(out, "    %4d ", p->ranks[i]);
            for (int j = 0; j < p->n; j++)
                fprintf(out, " %c", i == j ? '.' : p->can[i * p->n + j] ? 'y' : 'N');
            fputc('\n', out);
        }
    }
}

static void s_table_sweeps(FILE *out, const struct probe_meas *m)
{
    if (m->nsweeps)
        fprintf(out, "\nSweeps, as nccl-tests prints them (algbw = size / time; busbw = algbw * the collective's factor "
                     "for N: AllReduce 2(N-1)/N, AllGather, ReduceScatter and AlltoAll (N-1)/N, Broadcast 1)\n");
    for (size_t i = 0; i < m->nsweeps; i++)
        probe_table_sweep(out, m, &m->sweeps[i]);
}

/* The busbw of every collective at the reference size per N, and its share of the base N's. */
static void s_table_busbw(FILE *out, const struct probe_meas *m, const struct probe_analysis *a)
{
    char ref[32];
    if (a->base_n == 0)
        return;
    probe_fmt_bytes(a->ref_bytes, ref, sizeof ref);
    fprintf(out, "\nbusbw at %s, GB/s (%% of N=%d; ! = dropped more than allowed)\n  %-4s %5s", ref, a->base_n, "N",
            "nodes");
    for (int k = 0; k < m->config.nops; k++)
        fprintf(out, " %17s", probe_op_title(m->config.ops[k]));
    fputc('\n', out);
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_group_stat *g = &a->groups[i];
        if (g->n < 2)
            continue;
        fprintf(out, "  %-4d %5d", g->n, g->nodes);
        for (int k = 0; k < m->config.nops; k++) {
            enum probe_op op = m->config.ops[k];
            char cell[48] = "-";
            if (isfinite(g->busbw[op]))
                snprintf(cell, sizeof cell, "%.1f (%.0f%%)%c", g->busbw[op], 100 * g->busbw_rel[op],
                         g->busbw_flag[op] ? '!' : ' ');
            fprintf(out, " %17s", cell);
        }
        fputc('\n', out);
    }
}

static void s_table_scaling(FILE *out, const struct probe_meas *m, const struct probe_analysis *a)
{
    char grad[32], ops[96] = "";
    probe_fmt_bytes(m->config.grad_bytes, grad, sizeof grad);
    for (int k = 0, used = 0; k < m->config.nops; k++)
        used += snprintf(ops + used, sizeof ops - (size_t)used, "%s%s", k ? " + " : "",
                         probe_op_prose(m->config.ops[k]));
    fprintf(out, "\nScaling (synthetic training step: %.0f GFLOP of compute, then the %s of %s)\n"
                 "  %-4s %5s %9s %9s %12s %10s %9s\n", m->config.step_gflop, ops, grad, "N", "nodes", "step ms",
            "comm ms", "throughput/s", "efficiency", "threshold");
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_group_stat *g = &a->groups[i];
        char step[16], comm[16], thr[16], eff[16], lim[16];
        s_cell(step, sizeof step, g->step_us / 1e3, 3, "");
        s_cell(comm, sizeof comm, g->comm_us / 1e3, 3, "");
        s_cell(thr, sizeof thr, g->throughput, 1, "");
        s_cell(eff, sizeof eff, g->efficiency, 3, "");
        s_cell(lim, sizeof lim, g->threshold, 2, "");
        fprintf(out, "  %-4d %5d %9s %9s %12s %9s%c %9s\n", g->n, g->nodes, step, comm, thr, eff,
                g->eff_flag ? '!' : ' ', lim);
    }
}

void probe_report_table(FILE *out, const struct probe_meas *m, const struct probe_analysis *a)
{
    fprintf(out, "plaunch probe: %zu GPU(s) on %zu host(s):", m->ngpus, m->nhosts);
    for (size_t i = 0; i < m->nhosts; i++)
        fprintf(out, " %s", m->hosts[i]);
    fprintf(out, "\n  date %s; source: %s\n  timing: %s\n", m->date, m->source, probe_timing_label(m->config.timing));
    s_table_preflight(out, m);
    s_table_sweeps(out, m);
    s_table_busbw(out, m, a);
    s_table_scaling(out, m, a);
    fprintf(out, "\nVerdicts (%d flag%s)\n", a->nflags, a->nflags == 1 ? "" : "s");
    for (size_t i = 0; i < a->nverdicts; i++) {
        const struct probe_verdict *v = &a->verdicts[i];
        fprintf(out, "  %-4s  %s%s%s\n", probe_verdict_sev_name(v->sev), v->text, v->reason[0] ? "; why: " : "", v->reason);
    }
    fflush(out);
}

/* ---- JSON ------------------------------------------------------------------------------------------------ */

static json_t *s_real(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* Overwrites every result's algbw/busbw with the values the analysis used; adds each sweep's op (schema 1
 * files have none) and nccl-tests' Avg bus bandwidth. */
static void s_json_bandwidths(json_t *doc, const struct probe_meas *m)
{
    json_t *sweeps = json_object_get(doc, "sweeps");
    for (size_t i = 0; i < m->nsweeps && i < json_array_size(sweeps); i++) {
        const struct probe_sweep *s = &m->sweeps[i];
        json_t *sw = json_array_get(sweeps, i), *res = json_object_get(sw, "results");
        json_object_set_new(sw, "op", json_string(probe_op_name(s->op)));
        json_object_set_new(sw, "avg_busbw_gbps", s_real(probe_sweep_avg_busbw(s)));
        for (size_t k = 0; k < s->nresults && k < json_array_size(res); k++) {
            const struct probe_result *r = &s->results[k];
            json_t *ro = json_array_get(res, k), *ip = json_object_get(ro, "in_place");
            json_object_set_new(ro, "algbw_gbps", s_real(r->algbw));
            json_object_set_new(ro, "busbw_gbps", s_real(r->busbw));
            if (r->has_ip && json_is_object(ip)) {
                json_object_set_new(ip, "algbw_gbps", s_real(r->ip.algbw));
                json_object_set_new(ip, "busbw_gbps", s_real(r->ip.busbw));
            }
        }
    }
}

/* {"allreduce": {"busbw_gbps", "busbw_rel", "busbw_flag"}, ...} for the collectives measured at N. */
static json_t *s_json_by_op(const struct probe_meas *m, const struct probe_group_stat *g)
{
    json_t *o = json_object();
    for (int k = 0; o && k < m->config.nops; k++) {
        enum probe_op op = m->config.ops[k];
        json_object_set_new(o, probe_op_name(op), json_pack("{s:o, s:o, s:b}", "busbw_gbps", s_real(g->busbw[op]),
                                                            "busbw_rel", s_real(g->busbw_rel[op]), "busbw_flag",
                                                            g->busbw_flag[op]));
    }
    return o;
}

static json_t *s_json_thresholds(const struct probe_thresholds *t)
{
    json_t *eff = json_object();
    for (size_t i = 0; i < t->neff; i++) {
        char key[32];
        snprintf(key, sizeof key, "min_at_%d", t->eff_n[i]);
        json_object_set_new(eff, key, json_real(t->eff_min[i]));
    }
    return json_pack("{s:o, s:f, s:f}", "efficiency", eff, "busbw_max_drop", t->busbw_max_drop,
                     "pair_slow_fraction", t->pair_slow_fraction);
}

json_t *probe_report_json(const struct probe_meas *m, const struct probe_analysis *a,
                          const struct probe_thresholds *t)
{
    json_t *doc = json_deep_copy(m->json), *groups = json_array(), *verdicts = json_array();
    if (doc == NULL || groups == NULL || verdicts == NULL)
        goto error;
    s_json_bandwidths(doc, m);
    enum probe_op first = m->config.ops[0];
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_group_stat *g = &a->groups[i];
        json_array_append_new(groups, json_pack("{s:i, s:i, s:o, s:o, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "n",
                                                g->n, "nodes", g->nodes, "busbw_gbps", s_real(g->busbw[first]),
                                                "busbw_rel", s_real(g->busbw_rel[first]), "busbw_flag",
                                                g->any_busbw_flag, "by_op", s_json_by_op(m, g), "step_time_us",
                                                s_real(g->step_us), "throughput", s_real(g->throughput), "efficiency",
                                                s_real(g->efficiency), "threshold", s_real(g->threshold),
                                                "comm_time_us", s_real(g->comm_us), "efficiency_flag", g->eff_flag));
    }
    for (size_t i = 0; i < a->nverdicts; i++) {
        const struct probe_verdict *v = &a->verdicts[i];
        json_array_append_new(verdicts, json_pack("{s:s, s:s, s:s, s:s}", "severity",
                                                  v->sev == PROBE_SEV_FLAG ? "flag" : probe_verdict_sev_name(v->sev), "kind",
                                                  v->kind, "text", v->text, "reason", v->reason));
    }
    json_t *an = json_pack("{s:I, s:i, s:s, s:s, s:o, s:o, s:o, s:i, s:i}", "ref_bytes", (json_int_t)a->ref_bytes,
                           "base_n", a->base_n, "timing", probe_timing_name(m->config.timing), "timing_label",
                           probe_timing_label(m->config.timing), "thresholds", s_json_thresholds(t), "groups", groups,
                           "verdicts", verdicts, "flags", a->nflags, "exit_status", probe_analysis_exit_status(a));
    groups = verdicts = NULL;
    if (an == NULL || json_object_set_new(doc, "analysis", an) < 0)
        goto error;
    return doc;
error:
    json_decref(groups);
    json_decref(verdicts);
    json_decref(doc);
    return NULL;
}

FILE *probe_report_open(const char *path, struct ownfile_new *n, struct probe_err *err)
{
    char msg[sizeof err->msg];
    if (strcmp(path, "-") == 0)
        return stdout;
    if (ownfile_new_open(n, path, 0644, 0, msg, sizeof msg) < 0) {
        probe_err_set(err, "%s", msg);
        return NULL;
    }
    FILE *f = ownfile_new_stream(n);
    if (f == NULL) {
        probe_err_set(err, "%s: cannot write: %s", path, strerror(errno));
        ownfile_new_abort(n);
    }
    return f;
}

int probe_report_commit(FILE *f, struct ownfile_new *n, int ok, struct probe_err *err)
{
    char msg[sizeof err->msg];
    if (f == stdout)
        return fflush(stdout) == 0 && ok ? 0 : (probe_err_set(err, "stdout: write failed: %s", strerror(errno)), -1);
    if (ownfile_new_commit(n, ok, msg, sizeof msg) == 0)
        return 0;
    probe_err_set(err, "%s", msg);
    return -1;
}

int probe_report_json_write(const char *path, const struct probe_meas *m, const struct probe_analysis *a,
                            const struct probe_thresholds *t, struct probe_err *err)
{
    struct ownfile_new n;
    json_t *doc = probe_report_json(m, a, t);
    if (doc == NULL) {
        probe_err_set(err, "%s: out of memory while building the JSON report", path);
        return -1;
    }
    FILE *f = probe_report_open(path, &n, err);
    if (f == NULL) {
        json_decref(doc);
        return -1;
    }
    int rc = json_dumpf(doc, f, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
    json_decref(doc);
    if (rc == 0)
        fputc('\n', f);
    return probe_report_commit(f, &n, rc == 0, err);
}
