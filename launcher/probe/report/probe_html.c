/* probe_html: the probe's report as one self-contained HTML page (inline CSS and SVG, no external resources). */
#include "launcher/probe/report/probe_html.h"

#include "common/esc/esc.h"

#include "launcher/probe/report/probe_chart.h"
#include "launcher/probe/measure/probe_fmt.h"
#include "launcher/probe/report/probe_report.h"
#include "launcher/probe/report/probe_table.h"

#include <math.h>
#include <stdlib.h>

#ifndef PLAUNCH_VERSION
#define PLAUNCH_VERSION "(version unknown)"
#endif

static const char S_CSS[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1120px;"
    "color:#1d2330;padding:0 16px}h1{margin:0 0 4px}h2{margin-top:32px;border-bottom:1px solid #ccd}"
    ".meta{color:#556;margin:2px 0}table{border-collapse:collapse;margin:8px 0;font-size:13px}"
    "th,td{border:1px solid #ccd;padding:3px 8px;text-align:right}th{background:#eef1f7}"
    "td.l,th.l{text-align:left}ul.verdicts{list-style:none;padding:0}ul.verdicts li{margin:6px 0;"
    "padding:8px 12px;border-left:6px solid #99a;background:#f6f7fa}ul.verdicts li.flag{border-color:#d62728;"
    "background:#fdeeee}ul.verdicts li.ok{border-color:#2ca02c;background:#eef8ee}.sev{font-weight:bold;"
    "display:inline-block;min-width:3.5em}.why{color:#444;margin-top:3px;font-size:13px}.bad{color:#d62728;"
    "font-weight:bold}.summary{font-size:18px;font-weight:bold}.summary.flagged{color:#d62728}"
    ".summary.clean{color:#2ca02c}svg.chart{display:block;margin:12px 0;max-width:100%;height:auto}"
    "footer{margin-top:36px;color:#667;font-size:12px}";

static void s_verdicts(FILE *out, const struct probe_analysis *a)
{
    fprintf(out, "<h2 id=\"verdicts-title\">Verdicts</h2>\n<p class=\"summary %s\">%d flag%s%s</p>\n"
                 "<ul class=\"verdicts\" id=\"verdicts\">\n", a->nflags ? "flagged" : "clean", a->nflags,
            a->nflags == 1 ? "" : "s", a->nflags ? ": this set of GPUs does not scale as it should" : ": clean");
    static const enum probe_sev order[] = { PROBE_SEV_FLAG, PROBE_SEV_NOTE, PROBE_SEV_OK };
    static const char *const cls[] = { "ok", "note", "flag" };
    for (size_t o = 0; o < 3; o++)
        for (size_t i = 0; i < a->nverdicts; i++) {
            const struct probe_verdict *v = &a->verdicts[i];
            if (v->sev != order[o])
                continue;
            fprintf(out, "<li class=\"%s\" data-kind=\"%s\"><span class=\"sev\">%s</span> ", cls[v->sev], v->kind,
                    probe_verdict_sev_name(v->sev));
            esc_html(out, v->text);
            if (v->reason[0]) {
                fputs("<div class=\"why\">why: ", out);
                esc_html(out, v->reason);
                fputs("</div>", out);
            }
            fputs("</li>\n", out);
        }
    fputs("</ul>\n", out);
}

static void s_num(FILE *out, double v, int decimals, int bad)
{
    if (isfinite(v))
        fprintf(out, "<td%s>%.*f</td>", bad ? " class=\"bad\"" : "", decimals, v);
    else
        fputs("<td>-</td>", out);
}

static void s_scaling(FILE *out, const struct probe_meas *m, const struct probe_analysis *a)
{
    char ref[32], grad[32];
    probe_fmt_bytes(a->ref_bytes, ref, sizeof ref);
    probe_fmt_bytes(m->config.grad_bytes, grad, sizeof grad);
    fprintf(out, "<h2>Scaling</h2>\n<p>busbw compared at %s, the largest size every multi-GPU group measured (%% of "
                 "N=%d's); the synthetic training step is %.0f GFLOP of compute and then the ", a->ref_bytes ? ref : "-",
            a->base_n, m->config.step_gflop);
    for (int k = 0; k < m->config.nops; k++)
        fprintf(out, "%s%s", k ? " + " : "", probe_op_prose(m->config.ops[k]));
    fprintf(out, " of %s of gradients.</p>\n<table id=\"scaling\"><tr><th>N</th><th>nodes</th>", grad);
    for (int k = 0; k < m->config.nops; k++)
        fprintf(out, "<th>%s busbw GB/s</th><th>%%</th>", probe_op_title(m->config.ops[k]));
    fputs("<th>step ms</th><th>comm ms</th><th>throughput /s</th><th>efficiency</th><th>threshold</th></tr>\n", out);
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_group_stat *g = &a->groups[i];
        fprintf(out, "<tr><td>%d</td><td>%d</td>", g->n, g->nodes);
        for (int k = 0; k < m->config.nops; k++) {
            enum probe_op op = m->config.ops[k];
            s_num(out, g->busbw[op], 1, g->busbw_flag[op]);
            s_num(out, g->busbw_rel[op] * 100, 0, g->busbw_flag[op]);
        }
        s_num(out, g->step_us / 1e3, 3, 0);
        s_num(out, g->comm_us / 1e3, 3, 0);
        s_num(out, g->throughput, 1, 0);
        s_num(out, g->efficiency, 3, g->eff_flag);
        s_num(out, g->threshold, 2, 0);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

static void s_preflight(FILE *out, const struct probe_meas *m)
{
    fputs("<h2>Preflight</h2>\n<table id=\"gpus\"><tr><th>rank</th><th class=\"l\">host</th><th>local</th>"
          "<th class=\"l\">GPU</th><th class=\"l\">PCI</th><th>memory GiB</th><th>cc</th><th>driver CUDA</th>"
          "<th>runtime CUDA</th><th>NCCL</th></tr>\n", out);
    for (size_t i = 0; i < m->ngpus; i++) {
        const struct probe_gpu *g = &m->gpus[i];
        char drv[16], rt[16], nccl[16];
        probe_fmt_cuda_version(g->driver_cuda, drv, sizeof drv);
        probe_fmt_cuda_version(g->runtime_cuda, rt, sizeof rt);
        probe_fmt_nccl_version(g->nccl_version, nccl, sizeof nccl);
        fprintf(out, "<tr><td>%d</td><td class=\"l\">", g->rank);
        esc_html(out, g->host);
        fprintf(out, "</td><td>%d</td><td class=\"l\">", g->local_rank);
        esc_html(out, g->name);
        fputs("</td><td class=\"l\">", out);
        esc_html(out, g->pci_bus_id);
        fprintf(out, "</td><td>%.1f</td><td>%d.%d</td><td%s>%s</td><td>%s</td><td>%s</td></tr>\n",
                (double)g->memory_bytes / (1 << 30), g->cc_major, g->cc_minor,
                g->driver_cuda < g->runtime_cuda ? " class=\"bad\"" : "", drv, rt, nccl);
    }
    fputs("</table>\n", out);
    for (size_t h = 0; h < m->np2p; h++) {
        const struct probe_p2p *p = &m->p2p[h];
        fputs("<p>P2P access on <b>", out);
        esc_html(out, p->host);
        fputs("</b> (row can read column's memory)</p>\n<table class=\"p2p\"><tr><th>rank</th>", out);
        for (int j = 0; j < p->n; j++)
            fprintf(out, "<th>%d</th>", p->ranks[j]);
        fputs("</tr>\n", out);
        for (int i = 0; i < p->n; i++) {
            fprintf(out, "<tr><th>%d</th>", p->ranks[i]);
            for (int j = 0; j < p->n; j++)
                fputs(i == j ? "<td>&middot;</td>" : p->can[i * p->n + j] ? "<td>yes</td>" : "<td class=\"bad\">no</td>",
                      out);
            fputs("</tr>\n", out);
        }
        fputs("</table>\n", out);
    }
}

static void s_pairwise(FILE *out, const struct probe_meas *m)
{
    char size[32];
    double max = 0;
    if (m->pair_n < 2)
        return;
    probe_fmt_bytes(m->pair_bytes, size, sizeof size);
    for (int i = 0; i < m->pair_n * m->pair_n; i++)
        if (isfinite(m->pair_gbps[i]))
            max = fmax(max, m->pair_gbps[i]);
    fprintf(out, "<h2>Pairwise bandwidth</h2>\n<p>GB/s each way between two ranks exchanging %s (send/recv); "
                 "darker is faster.</p>\n<table id=\"pairwise\"><tr><th>rank</th>", size);
    for (int j = 0; j < m->pair_n; j++)
        fprintf(out, "<th>%d</th>", m->pair_ranks[j]);
    fputs("</tr>\n", out);
    for (int i = 0; i < m->pair_n; i++) {
        fprintf(out, "<tr><th>%d</th>", m->pair_ranks[i]);
        for (int j = 0; j < m->pair_n; j++) {
            double v = m->pair_gbps[i * m->pair_n + j];
            if (!isfinite(v)) {
                fputs("<td>&middot;</td>", out);
                continue;
            }
            double t = max > 0 ? v / max : 0; /* white to blue */
            fprintf(out, "<td style=\"background:rgb(%d,%d,255);color:%s\">%.1f</td>", (int)(255 - 200 * t),
                    (int)(255 - 150 * t), t > 0.6 ? "#fff" : "#000", v);
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

/* One placement's cells: time, algbw, busbw, #wrong (red when wrong). */
static void s_place(FILE *out, double time_us, double algbw, double busbw, double wrong, int verified)
{
    s_num(out, time_us, 2, 0);
    s_num(out, algbw, 2, 0);
    s_num(out, busbw, 2, 0);
    if (isfinite(wrong))
        fprintf(out, "<td%s>%.0f</td>", verified ? "" : " class=\"bad\"", wrong);
    else
        fprintf(out, "<td%s>%s</td>", verified ? "" : " class=\"bad\"", verified ? "ok" : "wrong");
}

/* Each sweep as nccl-tests' table: size, count, then out of place and in place. */
static void s_sweeps(FILE *out, const struct probe_meas *m)
{
    fputs("<h2>Sweeps</h2>\n<p>Each sweep in the columns of nccl-tests' <code>*_perf</code> (algbw = size / time, "
          "busbw = algbw &times; the collective's factor for N); red = the data read back after timing was wrong."
          "</p>\n", out);
    for (size_t i = 0; i < m->nsweeps; i++) {
        const struct probe_sweep *s = &m->sweeps[i];
        char title[256];
        probe_table_title(s, title, sizeof title);
        fprintf(out, "<h3>");
        esc_html(out, title);
        fprintf(out, "</h3>\n<table class=\"sweep\" data-op=\"%s\" data-n=\"%d\"><tr><th colspan=\"2\"></th>"
                     "<th colspan=\"4\">out-of-place</th><th colspan=\"4\">in-place</th></tr>\n<tr><th>size (B)</th>"
                     "<th>count</th><th>time us</th><th>algbw GB/s</th><th>busbw GB/s</th><th>#wrong</th><th>time us</th>"
                     "<th>algbw GB/s</th><th>busbw GB/s</th><th>#wrong</th></tr>\n", probe_op_name(s->op), s->n);
        for (size_t k = 0; k < s->nresults; k++) {
            const struct probe_result *r = &s->results[k];
            fprintf(out, "<tr><td>%llu</td><td>%llu</td>", (unsigned long long)r->bytes,
                    (unsigned long long)probe_table_count(m, s, r));
            s_place(out, r->time_us, r->algbw, r->busbw, r->wrong, r->verified);
            if (r->has_ip)
                s_place(out, r->ip.time_us, r->ip.algbw, r->ip.busbw, r->ip.wrong, r->ip.verified);
            else
                fputs("<td>-</td><td>-</td><td>-</td><td>-</td>", out);
            fputs("</tr>\n", out);
        }
        fprintf(out, "<tr><th colspan=\"2\">Avg bus bandwidth</th><td colspan=\"8\" class=\"l\">%g GB/s</td></tr>"
                     "\n</table>\n", probe_sweep_avg_busbw(s));
    }
}

void probe_html_page(FILE *out, const struct probe_meas *m, const struct probe_analysis *a)
{
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>plaunch probe: "
                 "%zu GPU(s)</title>\n<style>%s</style>\n</head>\n<body>\n<h1>plaunch probe</h1>\n<p class=\"meta\">"
                 "%zu GPU(s) on ", m->ngpus, S_CSS, m->ngpus);
    for (size_t i = 0; i < m->nhosts; i++) {
        fputs(i ? ", " : "", out);
        esc_html(out, m->hosts[i]);
    }
    fputs(" &middot; ", out);
    esc_html(out, m->date);
    fputs("</p>\n<p class=\"meta\" id=\"source\">source: ", out);
    esc_html(out, m->source);
    fprintf(out, "</p>\n<p class=\"meta\" id=\"timing\">timing: %s; %s; -n %d, -w %d</p>\n",
            probe_timing_label(m->config.timing), probe_dtype_name(m->config.dtype), m->config.iters,
            m->config.warmup_iters);
    s_verdicts(out, a);
    fputs("<h2>Bandwidth</h2>\n", out);
    for (int k = 0; k < m->config.nops; k++)
        if (probe_meas_has_op(m, m->config.ops[k]))
            probe_chart_busbw(out, m, m->config.ops[k]);
    fputs("<h2>Efficiency</h2>\n", out);
    probe_chart_efficiency(out, a);
    s_scaling(out, m, a);
    s_preflight(out, m);
    s_pairwise(out, m);
    s_sweeps(out, m);
    fputs("<footer>algbw = size / time; busbw = algbw &times; 2(n&minus;1)/n for AllReduce, (n&minus;1)/n for "
          "AllGather, ReduceScatter and AlltoAll, 1 for Broadcast, as nccl-tests defines them, so the figures compare "
          "one to one with its *_perf binaries. Efficiency = throughput(N) / (N &times; throughput(1)). "
          "Written by plaunch " PLAUNCH_VERSION "; schema " PROBE_SCHEMA ", docs/probe.md.</footer>\n"
          "</body>\n</html>\n", out);
}

int probe_html_write(const char *path, const struct probe_meas *m, const struct probe_analysis *a,
                     struct probe_err *err)
{
    struct ownfile_new n;
    FILE *f = probe_report_open(path, &n, err);
    if (f == NULL)
        return -1;
    probe_html_page(f, m, a);
    return probe_report_commit(f, &n, 1, err);
}
