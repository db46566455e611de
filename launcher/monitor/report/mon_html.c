/* mon_html: plaunch report's self-contained HTML page (inline CSS and SVG, no script, no external resource). */
#include "launcher/monitor/report/mon_html.h"

#include "common/esc/esc.h"

#include <math.h>
#include <string.h>

#include "launcher/monitor/report/mon_chart.h"
#include "launcher/monitor/report/mon_report_out.h"

#ifndef PLAUNCH_VERSION
#define PLAUNCH_VERSION "(version unknown)"
#endif

static const char S_CSS[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1120px;"
    "color:#1d2330;padding:0 16px}h1{margin:0 0 4px}h2{margin-top:30px;border-bottom:1px solid #ccd}"
    ".meta{color:#556;margin:2px 0;overflow-wrap:anywhere}table{border-collapse:collapse;margin:8px 0;font-size:13px}"
    "th,td{border:1px solid #ccd;padding:3px 8px;text-align:right}th{background:#eef1f7}td.l,th.l{text-align:left}"
    "ul.findings{list-style:none;padding:0}ul.findings li{margin:6px 0;padding:8px 12px;border-left:6px solid "
    "#d62728;background:#fdeeee}.kind{font-weight:bold;display:inline-block;min-width:9em}"
    ".summary{font-size:18px;font-weight:bold}.summary.flagged{color:#d62728}.summary.clean{color:#2ca02c}"
    "details{margin:8px 0}summary{cursor:pointer;color:#445}"
    "pre{background:#f6f7fa;border:1px solid #dde;padding:8px 10px;overflow-x:auto;font-size:12px;"
    "white-space:pre-wrap;overflow-wrap:anywhere}pre.cause{border-left:6px solid #d62728}"
    "svg.chart{display:block;margin:10px 0;max-width:100%;height:auto}.none{color:#667;font-style:italic}"
    "ul.warnings li{color:#8a5a00}footer{margin-top:36px;color:#667;font-size:12px}";

static void s_findings(FILE *out, const struct mon_report *r)
{
    fprintf(out, "<h2 id=\"findings-title\">Findings</h2>\n<p class=\"summary %s\" id=\"verdict\">",
            r->nf ? "flagged" : "clean");
    if (r->nf)
        fprintf(out, "%d finding%s over %d rank%s", r->nf, r->nf == 1 ? "" : "s", r->nranks, r->nranks == 1 ? "" : "s");
    else
        fputs(r->nranks ? "no finding" : "no data", out);
    fputs("</p>\n<ul class=\"findings\" id=\"findings\">\n", out);
    for (int i = 0; i < r->nf; i++) {
        const struct mon_finding *f = &r->f[i];
        fprintf(out, "<li data-kind=\"%s\" data-rank=\"%d\"><span class=\"kind\">%s</span> ",
                mon_diag_kind_name(f->kind), f->rank, mon_diag_kind_name(f->kind));
        esc_html(out, f->text);
        fputs("</li>\n", out);
    }
    /* the same as the terminal and plaunch.log show it, for copying; open at once when it is all there is */
    fprintf(out, "</ul>\n<details%s><summary>The Health block as text</summary>\n<pre id=\"health\">",
            r->nf ? "" : " open");
    esc_html(out, r->block ? r->block : "");
    fputs("</pre>\n</details>\n", out);
}

static void s_logs(FILE *out, const struct mon_report *r)
{
    static char blk[16 << 10];
    if (r->goodput && gp_block(r->goodput, 0, blk, sizeof blk)) { /* where the job's time went */
        fputs("<h2>Goodput</h2>\n<pre id=\"goodput\">", out);
        esc_html(out, blk);
        fputs("</pre>\n", out);
    }
    if (r->root_cause) {
        fputs("<h2>Root cause</h2>\n<p class=\"meta\">from ", out);
        esc_html(out, r->dir);
        fputc('/', out);
        esc_html(out, r->log_file);
        fputs("</p>\n<pre class=\"cause\" id=\"root-cause\">", out);
        esc_html(out, r->root_cause);
        fputs("</pre>\n", out);
    }
    if (r->health_logged) {
        fputs("<details><summary>The job's own Health block, as it wrote it into its plaunch log when it ended"
              "</summary>\n<pre id=\"health-logged\">", out);
        esc_html(out, r->health_logged);
        fputs("</pre>\n</details>\n", out);
    }
}

/* The ranks the findings name, each once, in their order. */
static int s_named(const struct mon_report *r, int *named, int max)
{
    int n = 0;
    for (int i = 0; i < r->nf && n < max; i++) {
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= named[j] == r->f[i].rank;
        if (!seen)
            named[n++] = r->f[i].rank;
    }
    return n;
}

static int s_charts(FILE *out, const struct mon_report *r)
{
    int named[MON_CHART_LINES];
    int nnamed = s_named(r, named, MON_CHART_LINES);
    fprintf(out, "<h2>Time series</h2>\n<p>Every chart spans the job from its first sample to its last, averaged into "
                 "%d steps; dashed grey lines mark restarts (a new generation).", MON_CHART_POINTS);
    if (r->nranks > MON_CHART_LINES)
        fprintf(out, " With %d ranks, each chart shows the band from the lowest to the highest rank at each step and "
                     "their median, and the ranks the findings name as lines.", r->nranks);
    else if (nnamed)
        fputs(" Ranks the findings name are drawn thicker and marked * in the legend.", out);
    fputs("</p>\n", out);
    for (int m = 0; m < MON_CHART_N; m++) {
        int rc = mon_chart_draw(out, r, (enum mon_chart_metric)m, named, nnamed);
        if (rc < 0)
            return -1;
        if (rc == 1)
            fprintf(out, "<p class=\"none\" id=\"none-%s\">%s: no data (CPU workers, no NVML, or not reported)</p>\n",
                    mon_chart_id((enum mon_chart_metric)m), mon_chart_title((enum mon_chart_metric)m));
    }
    return 0;
}

static void s_cell(FILE *out, double v, int decimals)
{
    char b[32];
    fprintf(out, "<td>%s</td>", mon_report_out_num(v, decimals, b, sizeof b));
}

static void s_table(FILE *out, const struct mon_report *r)
{
    fputs("<h2>Ranks</h2>\n<p>The steady state each rank was judged on (after the warm-up of its latest generation); "
          "memory first and last are the fitted line's values at the start and end of it.</p>\n<table id=\"ranks\">"
          "<tr><th>rank</th><th class=\"l\">node</th><th class=\"l\">GPU</th><th>samples judged</th><th>rows read</th>"
          "<th>steady s</th><th>GPU busy %</th><th>idle %</th><th>host CPU %</th><th>RSS MiB first</th><th>last</th>"
          "<th>GPU MiB first</th><th>last</th><th>total</th><th>throttle % thermal</th><th>power</th><th>hw</th>"
          "<th>Xid</th></tr>\n", out);
    for (int i = 0; i < r->nranks; i++) {
        const struct mon_rank_summary *s = &r->sum[i];
        fprintf(out, "<tr><td>%d</td><td class=\"l\">", s->rank);
        esc_html(out, s->node);
        fputs("</td><td class=\"l\">", out);
        esc_html(out, s->gpu[0] ? s->gpu : "-");
        fprintf(out, "</td><td>%d</td><td>%lld</td>", s->samples, r->ranks[i].rows);
        s_cell(out, s->steady_s, 0);
        s_cell(out, s->util_mean, 1);
        s_cell(out, s->idle_frac * 100, 1);
        s_cell(out, s->cpu_mean, 1);
        s_cell(out, s->rss_first_mib, 0);
        s_cell(out, s->rss_last_mib, 0);
        s_cell(out, s->gmem_first_mib, 0);
        s_cell(out, s->gmem_last_mib, 0);
        s_cell(out, s->gmem_total_mib, 0);
        s_cell(out, s->thr_thermal_frac * 100, 0);
        s_cell(out, s->thr_power_frac * 100, 0);
        s_cell(out, s->thr_hw_frac * 100, 0);
        fprintf(out, "<td>%d</td></tr>\n", s->xid_count);
    }
    fputs("</table>\n", out);
}

static void s_warnings(FILE *out, const struct mon_report *r)
{
    if (!r->nnotes && !r->partial && !r->moved)
        return;
    fputs("<h2>Reading notes</h2>\n<ul class=\"warnings\" id=\"warnings\">\n", out);
    for (int i = 0; i < r->nnotes; i++) {
        fputs("<li>", out);
        esc_html(out, r->notes[i]);
        fputs("</li>\n", out);
    }
    if (r->notes_dropped)
        fprintf(out, "<li>and %d more</li>\n", r->notes_dropped);
    if (r->partial)
        fprintf(out, "<li>the last line of %lld file%s was still being written (a running job): ignored</li>\n",
                r->partial, r->partial == 1 ? "" : "s");
    if (r->moved)
        fprintf(out, "<li>%d earlier series left out: %s ran on another node in a later generation (an elastic "
                     "restart); the latest one counts</li>\n", r->moved, r->moved == 1 ? "its rank" : "their ranks");
    fputs("</ul>\n", out);
}

int mon_html_page(FILE *out, const struct mon_report *r)
{
    char head[PATH_MAX + 512];
    mon_report_out_headline(r, head, sizeof head);
    int nodes = mon_report_out_nodes(r);
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>plaunch report: %d "
                 "rank%s on %d node%s</title>\n<style>%s</style>\n</head>\n<body>\n<h1>plaunch report</h1>\n"
                 "<p class=\"meta\" id=\"headline\">", r->nranks, r->nranks == 1 ? "" : "s", nodes,
            nodes == 1 ? "" : "s", S_CSS);
    esc_html(out, head);
    fputs("</p>\n", out);
    s_findings(out, r);
    s_logs(out, r);
    int rc = s_charts(out, r);
    s_table(out, r);
    s_warnings(out, r);
    fputs("<footer>GPU busy = NVML utilization.gpu (the share of time a kernel ran); idle = the share of NVML's fine "
          "samples at about 0 %; memory growth and the other findings are judged on the steady state of each rank's "
          "latest generation (conf/monitor.ini). Written by plaunch " PLAUNCH_VERSION " (plaunch report).</footer>\n"
          "</body>\n</html>\n", out);
    return rc;
}
