/* probe_chart: the inline SVG charts of the probe's HTML page (busbw vs size per N, efficiency vs N). */
#include "launcher/probe/report/probe_chart.h"

#include "launcher/monitor/report/mon_chart.h"
#include "launcher/probe/measure/probe_fmt.h"

#include <math.h>
#include <stdlib.h>

static const char *const S_COLORS[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                        "#8c564b", "#e377c2", "#17becf", "#7f7f7f" };
#define S_NCOLORS (sizeof S_COLORS / sizeof S_COLORS[0])

/* Data space [x0,x1] x [y0,y1] mapped into a w x h picture with margins. */
struct s_frame {
    double x0, x1, y0, y1;
    int w, h, ml, mr, mt, mb;
};

static double s_px(const struct s_frame *f, double x)
{
    return f->ml + (x - f->x0) / (f->x1 - f->x0) * (f->w - f->ml - f->mr);
}

static double s_py(const struct s_frame *f, double y)
{
    return f->h - f->mb - (y - f->y0) / (f->y1 - f->y0) * (f->h - f->mt - f->mb);
}

static void s_open(FILE *out, const struct s_frame *f, const char *id, const char *title, const char *xlabel,
                   const char *ylabel)
{
    fprintf(out, "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n<title>%s</title>\n", id, f->w, f->h, f->w,
            f->h, title, title);
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" "
                 "height=\"%d\" fill=\"#f7f9fc\" stroke=\"#99a\"/>\n", f->w, f->h, f->ml, f->mt, f->w - f->ml - f->mr,
            f->h - f->mt - f->mb);
    fprintf(out, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", f->ml, title);
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
            (f->ml + f->w - f->mr) / 2.0, f->h - 10, xlabel);
    fprintf(out, "<text transform=\"translate(16 %.1f) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">%s"
                 "</text>\n", (f->mt + f->h - f->mb) / 2.0, ylabel);
}

static void s_yticks(FILE *out, const struct s_frame *f, double step, int decimals)
{
    for (double y = f->y0; y <= f->y1 + step * 1e-9; y += step)
        fprintf(out, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#dde\"/><text x=\"%d\" y=\"%.1f\" "
                     "font-size=\"11\" text-anchor=\"end\">%.*f</text>\n", f->ml, f->w - f->mr, s_py(f, y),
                s_py(f, y), f->ml - 6, s_py(f, y) + 4, decimals, y);
}

static void s_xtick(FILE *out, const struct s_frame *f, double x, const char *label)
{
    fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#dde\"/><text x=\"%.1f\" y=\"%d\" "
                 "font-size=\"11\" text-anchor=\"middle\">%s</text>\n", s_px(f, x), s_px(f, x), f->mt,
            f->h - f->mb, s_px(f, x), f->h - f->mb + 16, label);
}

static void s_legend(FILE *out, const struct s_frame *f, int row, const char *color, const char *label)
{
    double x = f->w - f->mr + 14, y = f->mt + 14 + 20 * row;
    fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%s</text>\n", x, x + 22, y, y, color, x + 28, y + 4,
            label);
}

/* ---- busbw vs size ------------------------------------------------------------------------------------- */

static int s_plotted(const struct probe_sweep *s, int single)
{
    return single ? s->n == 1 : s->n >= 2;
}

static double s_value(const struct probe_result *r, int single)
{
    return single ? r->algbw : r->busbw;
}

void probe_chart_busbw(FILE *out, const struct probe_meas *m, enum probe_op op)
{
    struct s_frame f = { 0, 1, 0, 1, 860, 420, 70, 190, 36, 50 };
    size_t nsizes = 0;
    uint64_t *sizes = probe_meas_sizes(m, &nsizes);
    int single = 1;
    double ymax = 0;
    char id[48], title[160];
    for (size_t i = 0; i < m->nsweeps; i++)
        single &= m->sweeps[i].op != op || m->sweeps[i].n < 2;
    for (size_t i = 0; i < m->nsweeps; i++)
        for (size_t k = 0; m->sweeps[i].op == op && s_plotted(&m->sweeps[i], single) && k < m->sweeps[i].nresults; k++)
            ymax = fmax(ymax, s_value(&m->sweeps[i].results[k], single));
    if (nsizes > 0) {
        f.x0 = log2((double)sizes[0]);
        f.x1 = log2((double)sizes[nsizes - 1]);
    }
    if (f.x1 <= f.x0)
        f.x1 = f.x0 + 1;
    double step = mon_chart_nice(fmax(ymax, 1e-9) * 1.08 / 5);
    f.y1 = step * 5;
    snprintf(id, sizeof id, "chart-busbw-%s", probe_op_name(op));
    if (single)
        snprintf(title, sizeof title, "%s algbw vs message size (one GPU: busbw is algbw times %g at N=1)",
                 probe_op_title(op), probe_op_bus_factor(op, 1));
    else
        snprintf(title, sizeof title, "%s busbw vs message size, per group size N", probe_op_title(op));
    s_open(out, &f, id, title, "message size (log2 scale)", single ? "algbw (GB/s)" : "busbw (GB/s)");
    s_yticks(out, &f, step, step < 1 ? 2 : step < 10 ? 1 : 0);
    int every = nsizes > 12 ? (int)((nsizes + 11) / 12) : 1;
    for (size_t k = 0; k < nsizes; k += (size_t)every) {
        char label[32];
        probe_fmt_bytes(sizes[k], label, sizeof label);
        s_xtick(out, &f, log2((double)sizes[k]), label);
    }
    int row = 0;
    for (size_t i = 0; i < m->nsweeps; i++) {
        const struct probe_sweep *s = &m->sweeps[i];
        if (s->op != op || !s_plotted(s, single) || s->nresults == 0)
            continue;
        const char *color = S_COLORS[row % S_NCOLORS];
        char label[64];
        snprintf(label, sizeof label, "N=%d%s%s", s->n, s->group == PROBE_GROUP_ONE_PER_NODE ? ", 1 per node" : "",
                 s->nodes > 1 && s->group == PROBE_GROUP_FIRST_N ? ", inter-node" : "");
        fprintf(out, "<g class=\"series\" data-n=\"%d\"><polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                     "points=\"", s->n, color);
        for (size_t k = 0; k < s->nresults; k++)
            fprintf(out, "%.1f,%.1f ", s_px(&f, log2((double)s->results[k].nominal)),
                    s_py(&f, s_value(&s->results[k], single)));
        fputs("\"/>\n", out);
        for (size_t k = 0; k < s->nresults; k++) {
            const struct probe_result *r = &s->results[k];
            int ok = r->verified && (!r->has_ip || r->ip.verified);
            char size[32];
            probe_fmt_bytes(r->nominal, size, sizeof size);
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" stroke=\"%s\" stroke-width=\"2\">"
                         "<title>%s, %s: %.2f GB/s%s</title></circle>\n", s_px(&f, log2((double)r->nominal)),
                    s_py(&f, s_value(r, single)), ok ? 3 : 5, ok ? color : "#ffffff", ok ? color : "#d62728", label,
                    size, s_value(r, single), ok ? "" : " (wrong data)");
        }
        fputs("</g>\n", out);
        s_legend(out, &f, row++, color, label);
    }
    if (row == 0)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" text-anchor=\"middle\">no sweep data</text>\n",
                s_px(&f, (f.x0 + f.x1) / 2), s_py(&f, f.y1 / 2));
    fputs("</svg>\n", out);
    free(sizes);
}

/* ---- efficiency vs N ------------------------------------------------------------------------------------ */

void probe_chart_efficiency(FILE *out, const struct probe_analysis *a)
{
    struct s_frame f = { 0, 1, 0, 1.1, 860, 380, 70, 190, 36, 50 };
    int nmax = 1, points = 0;
    for (size_t i = 0; i < a->ngroups; i++)
        if (isfinite(a->groups[i].efficiency)) {
            nmax = a->groups[i].n > nmax ? a->groups[i].n : nmax;
            f.y1 = fmax(f.y1, ceil(a->groups[i].efficiency * 10 + 0.5) / 10);
            points++;
        }
    double span = nmax > 1 ? log2(nmax) : 1;
    f.x0 = -0.08 * span; /* keep N=1 and the largest N off the frame */
    f.x1 = 1.08 * span;
    s_open(out, &f, "chart-efficiency", "Scaling efficiency vs GPUs (synthetic data-parallel step)",
           "GPUs in the group, N (log2 scale)", "efficiency = throughput(N) / (N * throughput(1))");
    s_yticks(out, &f, f.y1 > 2 ? 0.5 : 0.1, 1);
    for (size_t i = 0; i < a->ngroups; i++) {
        char label[16];
        snprintf(label, sizeof label, "%d", a->groups[i].n);
        if (isfinite(a->groups[i].efficiency))
            s_xtick(out, &f, log2(a->groups[i].n), label);
    }
    fprintf(out, "<line class=\"ideal\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#2ca02c\" "
                 "stroke-width=\"2\" stroke-dasharray=\"8 5\"/>\n", f.ml, f.w - f.mr, s_py(&f, 1), s_py(&f, 1));
    s_legend(out, &f, 0, "#2ca02c", "ideal (1.0)");
    s_legend(out, &f, 1, "#d62728", "threshold");
    s_legend(out, &f, 2, "#1f77b4", "measured");
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_group_stat *g = &a->groups[i];
        if (!isfinite(g->threshold) || !isfinite(g->efficiency))
            continue;
        double x = s_px(&f, log2(g->n)), y = s_py(&f, g->threshold);
        fprintf(out, "<g class=\"threshold\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
                     "stroke-width=\"3\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#d62728\">min %.2f"
                     "</text></g>\n", x - 14, x + 14, y, y, x + 16, y + 4, g->threshold);
    }
    if (points == 0) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" text-anchor=\"middle\">no synthetic-step data"
                     "</text>\n</svg>\n", s_px(&f, (f.x0 + f.x1) / 2), s_py(&f, 0.5));
        return;
    }
    fputs("<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"", out);
    for (size_t i = 0; i < a->ngroups; i++)
        if (isfinite(a->groups[i].efficiency))
            fprintf(out, "%.1f,%.1f ", s_px(&f, log2(a->groups[i].n)), s_py(&f, a->groups[i].efficiency));
    fputs("\"/>\n", out);
    for (size_t i = 0; i < a->ngroups; i++) {
        const struct probe_group_stat *g = &a->groups[i];
        if (!isfinite(g->efficiency))
            continue;
        fprintf(out, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>N=%d: efficiency %.3f"
                     "%s</title></circle>\n", g->eff_flag ? "flagged" : "point", s_px(&f, log2(g->n)),
                s_py(&f, g->efficiency), g->eff_flag ? "#d62728" : "#1f77b4", g->n, g->efficiency,
                g->eff_flag ? " (below threshold)" : "");
    }
    fputs("</svg>\n", out);
}
