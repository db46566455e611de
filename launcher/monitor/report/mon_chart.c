/* mon_chart: the report's per-metric time-series charts (inline SVG), downsampled to a fixed number of buckets. */
#include "launcher/monitor/report/mon_chart.h"

#include "common/esc/esc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const S_COLORS[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                        "#9467bd", "#8c564b", "#e377c2", "#17becf" };
#define S_NCOLORS (int)(sizeof S_COLORS / sizeof S_COLORS[0])
#define S_RESTARTS 16

static const struct {
    const char *id, *title, *unit, *ref;
} S_M[MON_CHART_N] = {
    { "util", "GPU busy", "% of the time a kernel ran", NULL },
    { "gmem", "GPU memory", "MiB (the rank's processes, else the device)", "device total" },
    { "gmem-change", "GPU memory change since the rank's first sample", "MiB", NULL },
    { "rss", "Host memory (RSS of the rank's processes)", "MiB", NULL },
    { "cpu", "Host CPU", "% of one core", NULL },
    { "temp", "GPU temperature", "degrees C", NULL },
    { "power", "GPU power", "W", "power limit" },
};

/* Data space [0, nb) x [y0, y1] in a w x h picture with margins. */
struct s_frame {
    int nb;
    double y0, y1, span_s;
    int w, h, ml, mr, mt, mb;
};

const char *mon_chart_id(enum mon_chart_metric m)
{
    return S_M[m].id;
}

const char *mon_chart_title(enum mon_chart_metric m)
{
    return S_M[m].title;
}

static double s_px(const struct s_frame *f, double b)
{
    return f->ml + (b + 0.5) / f->nb * (f->w - f->ml - f->mr);
}

static double s_py(const struct s_frame *f, double y)
{
    return f->h - f->mb - (y - f->y0) / (f->y1 - f->y0) * (f->h - f->mt - f->mb);
}

/* The smallest of 1, 2, 2.5, 5 times a power of ten that is >= v. */
double mon_chart_nice(double v)
{
    static const double steps[] = { 1, 2, 2.5, 5, 10 };
    if (!(v > 0))
        return 1;
    double p = pow(10, floor(log10(v)));
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * p >= v * (1 - 1e-12))
            return steps[i] * p;
    return 10 * p;
}

static double s_value(const struct mon_sample *s, enum mon_chart_metric m)
{
    switch (m) {
    case MON_CHART_UTIL: return s->gpu_util;
    case MON_CHART_GMEM:
    case MON_CHART_GMEM_CHANGE: return isnan(s->gpu_mem_proc_mib) ? s->gpu_mem_used_mib : s->gpu_mem_proc_mib;
    case MON_CHART_RSS: return s->rss_mib;
    case MON_CHART_CPU: return s->cpu_pct;
    case MON_CHART_TEMP: return s->temp_c;
    case MON_CHART_POWER: return s->power_w;
    default: return NAN;
    }
}

static double s_ref(const struct mon_sample *s, enum mon_chart_metric m)
{
    return m == MON_CHART_GMEM ? s->gpu_mem_total_mib : m == MON_CHART_POWER ? s->power_limit_w : NAN;
}

/* Rank i's points averaged into nb buckets over the job's span (NAN: none), short gaps filled by interpolation so
 * that ranks can be compared bucket by bucket; a long gap (a stop, a restart) stays open. The reference (total,
 * limit) goes into *ref as the most seen. */
static void s_bucket(const struct mon_report *r, int i, enum mon_chart_metric m, int nb, double *row, double *w,
                     double *ref)
{
    const struct mon_series *ser = r->ranks[i].ser;
    double span = (double)(r->t_last - r->t_first) + 1, base = m == MON_CHART_GMEM_CHANGE ? NAN : 0;
    for (int b = 0; b < nb; b++)
        row[b] = 0, w[b] = 0;
    for (int k = 0, len = mon_series_len(ser); k < len; k++) {
        const struct mon_point *pt;
        const struct mon_sample *s = mon_series_get(ser, k, &pt);
        double v = s_value(s, m), x = s_ref(s, m);
        if (isfinite(x) && !(x <= *ref))
            *ref = x;
        if (!isfinite(v))
            continue;
        if (isnan(base))
            base = v;
        v -= base;
        int b = (int)((double)(s->t_ms - r->t_first) / span * nb);
        b = b < 0 ? 0 : b >= nb ? nb - 1 : b;
        double wt = pt && pt->samples > 0 ? pt->samples : 1;
        row[b] += v * wt;
        w[b] += wt;
    }
    int first = -1, last = -1, filled = 0;
    for (int b = 0; b < nb; b++) {
        row[b] = w[b] > 0 ? row[b] / w[b] : NAN;
        if (w[b] > 0) {
            first = first < 0 ? b : first;
            last = b;
            filled++;
        }
    }
    if (filled < 2)
        return;
    double gap = 5.0 * (last - first) / (filled - 1);
    gap = gap < 4 ? 4 : gap;
    for (int a = first, b; a < last; a = b) {
        for (b = a + 1; isnan(row[b]); b++)
            ;
        if (b - a > 1 && b - a <= gap)
            for (int c = a + 1; c < b; c++)
                row[c] = row[a] + (row[b] - row[a]) * (c - a) / (b - a);
    }
}

static int s_dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A line through row's finite buckets, broken where they are not; a lone point is a dot. */
static void s_path(FILE *out, const struct s_frame *f, const double *row, const char *attrs)
{
    fprintf(out, "<path %s d=\"", attrs);
    for (int b = 0; b < f->nb; b++) {
        if (isnan(row[b]))
            continue;
        int start = b == 0 || isnan(row[b - 1]), end = b + 1 == f->nb || isnan(row[b + 1]);
        fprintf(out, "%s%.1f,%.1f%s", start ? "M" : " L", s_px(f, b), s_py(f, row[b]), start && end ? " h0.5" : "");
    }
    fputs("\"/>\n", out);
}

static void s_legend(FILE *out, const struct s_frame *f, int row, const char *color, int band, const char *label,
                     const char *node)
{
    double x = f->w - f->mr + 12, y = f->mt + 10 + 18 * row;
    if (band)
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"10\" fill=\"%s\" fill-opacity=\"0.25\"/>", x,
                y - 5, color);
    else
        fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>", x,
                x + 22, y, y, color);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s", x + 28, y + 4, label);
    if (node) {
        fputs(" (", out);
        char cut[18];
        snprintf(cut, sizeof cut, "%.14s%s", node, strlen(node) > 14 ? "~" : "");
        esc_html(out, cut);
        fputs(")", out);
    }
    fputs("</text>\n", out);
}

static void s_axes(FILE *out, const struct s_frame *f, enum mon_chart_metric m, int nranks)
{
    fprintf(out, "<svg id=\"chart-%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n<title>%s, %d rank%s</title>\n", S_M[m].id,
            f->w, f->h, f->w, f->h, S_M[m].title, S_M[m].title, nranks, nranks == 1 ? "" : "s");
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/><rect x=\"%d\" y=\"%d\" width=\"%d\" "
                 "height=\"%d\" fill=\"#f7f9fc\" stroke=\"#99a\"/>\n", f->w, f->h, f->ml, f->mt, f->w - f->ml - f->mr,
            f->h - f->mt - f->mb);
    fprintf(out, "<text x=\"%d\" y=\"22\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", f->ml, S_M[m].title);
    fprintf(out, "<text transform=\"translate(16 %.1f) rotate(-90)\" font-size=\"11\" text-anchor=\"middle\">%s"
                 "</text>\n", (f->mt + f->h - f->mb) / 2.0, S_M[m].unit);
    double step = mon_chart_nice((f->y1 - f->y0) / 5);
    for (double y = ceil(f->y0 / step - 1e-9) * step; y <= f->y1 + step * 1e-9; y += step)
        fprintf(out, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#dde\"/><text x=\"%d\" y=\"%.1f\" "
                     "font-size=\"11\" text-anchor=\"end\">%.*f</text>\n", f->ml, f->w - f->mr, s_py(f, y),
                s_py(f, y), f->ml - 6, s_py(f, y) + 4, step < 1 ? 1 : 0, fabs(y) < step * 1e-6 ? 0 : y);
    /* time since the first sample, in the unit that suits the span */
    double unit = f->span_s < 180 ? 1 : f->span_s < 3 * 3600 ? 60 : 3600;
    const char *uname = unit == 1 ? "s" : unit == 60 ? "min" : "h";
    double len = f->span_s / unit, xs = mon_chart_nice(len / 6);
    for (double t = 0; len > 0 && t <= len * (1 + 1e-9); t += xs) {
        double x = f->ml + t / len * (f->w - f->ml - f->mr);
        fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#dde\"/><text x=\"%.1f\" y=\"%d\" "
                     "font-size=\"11\" text-anchor=\"middle\">%g</text>\n", x, x, f->mt, f->h - f->mb, x,
                f->h - f->mb + 15, t);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">time since the first sample (%s)"
                 "</text>\n", (f->ml + f->w - f->mr) / 2.0, f->h - 8, uname);
}

/* Dashed lines where a generation began (a restart): the earliest point of each generation after the first. */
static void s_restarts(FILE *out, const struct mon_report *r, const struct s_frame *f)
{
    int gen[S_RESTARTS], n = 0, g0 = -1;
    int64_t at[S_RESTARTS];
    for (int i = 0; i < r->nranks; i++)
        for (int k = 0, len = mon_series_len(r->ranks[i].ser); k < len; k++) {
            const struct mon_sample *s = mon_series_get(r->ranks[i].ser, k, NULL);
            g0 = g0 < 0 || s->generation < g0 ? s->generation : g0;
        }
    for (int i = 0; i < r->nranks; i++)
        for (int k = 0, len = mon_series_len(r->ranks[i].ser), prev = -1; k < len; k++) {
            const struct mon_sample *s = mon_series_get(r->ranks[i].ser, k, NULL);
            if (s->generation != prev && s->generation != g0) {
                int j = 0;
                while (j < n && gen[j] != s->generation)
                    j++;
                if (j == n && n < S_RESTARTS)
                    gen[n] = s->generation, at[n++] = s->t_ms;
                else if (j < n && s->t_ms < at[j])
                    at[j] = s->t_ms;
            }
            prev = s->generation;
        }
    double span = (double)(r->t_last - r->t_first) + 1;
    for (int j = 0; j < n; j++) {
        double x = f->ml + (double)(at[j] - r->t_first) / span * (f->w - f->ml - f->mr);
        fprintf(out, "<g class=\"restart\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#888\" "
                     "stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%d\" font-size=\"10\" fill=\"#666\">gen %d</text>"
                     "<title>generation %d starts</title></g>\n", x, x, f->mt, f->h - f->mb, x + 3, f->mt + 11, gen[j],
                gen[j]);
    }
}

static int s_index(const struct mon_report *r, int rank)
{
    int lo = 0, hi = r->nranks - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, v = r->ranks[mid].ser->rank;
        if (v == rank)
            return mid;
        if (v < rank)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* The min-max band and the median of every bucket, then the named ranks; col holds nranks values, lo 3 x nb. */
static void s_band(FILE *out, const struct mon_report *r, const struct s_frame *f, const double *v, const int *named,
                   int nnamed, double *col, double *lo)
{
    int nb = f->nb;
    double *hi = lo + nb, *med = hi + nb;
    for (int b = 0; b < nb; b++) {
        int n = 0;
        for (int i = 0; i < r->nranks; i++)
            if (!isnan(v[(size_t)i * nb + b]))
                col[n++] = v[(size_t)i * nb + b];
        qsort(col, (size_t)n, sizeof *col, s_dcmp);
        lo[b] = n ? col[0] : NAN;
        hi[b] = n ? col[n - 1] : NAN;
        med[b] = n ? (n % 2 ? col[n / 2] : (col[n / 2 - 1] + col[n / 2]) / 2) : NAN;
    }
    fputs("<path class=\"band\" fill=\"#1f77b4\" fill-opacity=\"0.22\" stroke=\"none\" d=\"", out);
    int first = 1;
    for (int b = 0; b < nb; b++)
        if (!isnan(hi[b]))
            fprintf(out, "%s%.1f,%.1f", first ? "M" : " L", s_px(f, b), s_py(f, hi[b])), first = 0;
    for (int b = nb - 1; b >= 0 && !first; b--)
        if (!isnan(lo[b]))
            fprintf(out, " L%.1f,%.1f", s_px(f, b), s_py(f, lo[b]));
    fputs(first ? "\"/>\n" : " Z\"/>\n", out);
    s_path(out, f, med, "class=\"median\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"");
    char label[64];
    snprintf(label, sizeof label, "min-max of %d ranks", r->nranks);
    s_legend(out, f, 0, "#1f77b4", 1, label, NULL);
    s_legend(out, f, 1, "#1f77b4", 0, "median", NULL);
    for (int j = 0, row = 2; j < nnamed && row < 2 + MON_CHART_LINES; j++) {
        int i = s_index(r, named[j]);
        if (i < 0)
            continue;
        const char *color = S_COLORS[(row - 1) % S_NCOLORS];
        char attrs[200];
        snprintf(attrs, sizeof attrs, "class=\"rank named\" data-rank=\"%d\" fill=\"none\" stroke=\"%s\" "
                 "stroke-width=\"2\"", named[j], color);
        s_path(out, f, v + (size_t)i * nb, attrs);
        snprintf(label, sizeof label, "rank %d", named[j]);
        s_legend(out, f, row++, color, 0, label, r->ranks[i].ser->node);
    }
}

/* The value axis: GPU busy 0-100; a change from 0 both ways; RSS fitted to its values (at least 256 MiB tall, the
 * growth a finding needs); the others from 0 to the largest value or reference. */
static void s_range(struct s_frame *f, enum mon_chart_metric m, double lo, double hi, double ref)
{
    if (m == MON_CHART_UTIL) {
        f->y0 = 0, f->y1 = 100;
        return;
    }
    if (isfinite(ref))
        hi = fmax(hi, ref);
    if (m == MON_CHART_GMEM_CHANGE || m == MON_CHART_RSS) {
        lo = m == MON_CHART_RSS ? lo : fmin(lo, 0);
        hi = m == MON_CHART_RSS ? hi : fmax(hi, 0);
        double pad = fmax(256 - (hi - lo), 0) / 2;
        lo -= pad, hi += pad;
        if (m == MON_CHART_RSS && lo < 0)
            hi -= lo, lo = 0;
        double step = mon_chart_nice((hi - lo) * 1.08 / 5);
        f->y0 = floor(lo / step) * step;
        f->y1 = f->y0 + step * ceil((hi - f->y0) / step + 1e-9);
        return;
    }
    f->y0 = 0;
    f->y1 = mon_chart_nice(fmax(hi, 1e-9) * 1.08 / 5) * 5;
}

int mon_chart_draw(FILE *out, const struct mon_report *r, enum mon_chart_metric m, const int *named, int nnamed)
{
    struct s_frame f = { MON_CHART_POINTS, 0, 1, 0, 860, 280, 70, 200, 34, 42 };
    if (r->nranks == 0)
        return 1;
    int band = r->nranks > MON_CHART_LINES;
    double *v = malloc((size_t)r->nranks * f.nb * sizeof *v), *w = malloc((size_t)f.nb * 3 * sizeof *w), ref = NAN;
    double *col = band ? malloc((size_t)r->nranks * sizeof *col) : NULL;
    if (!v || !w || (band && !col)) {
        free(v);
        free(w);
        free(col);
        return -1;
    }
    double ymax = -INFINITY, ymin = INFINITY;
    int any = 0;
    for (int i = 0; i < r->nranks; i++) {
        s_bucket(r, i, m, f.nb, v + (size_t)i * f.nb, w, &ref);
        for (int b = 0; b < f.nb; b++)
            if (isfinite(v[(size_t)i * f.nb + b])) {
                any = 1;
                ymax = fmax(ymax, v[(size_t)i * f.nb + b]);
                ymin = fmin(ymin, v[(size_t)i * f.nb + b]);
            }
    }
    if (!any) {
        free(v);
        free(w);
        free(col);
        return 1;
    }
    s_range(&f, m, ymin, ymax, ref);
    f.span_s = (double)(r->t_last - r->t_first) / 1000;
    s_axes(out, &f, m, r->nranks);
    s_restarts(out, r, &f);
    if (isfinite(ref)) {
        fprintf(out, "<g class=\"ref\"><line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
                     "stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/><title>%s %.0f</title></g>\n", f.ml, f.w - f.mr,
                s_py(&f, ref), s_py(&f, ref), S_M[m].ref, ref);
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" fill=\"#d62728\" text-anchor=\"end\">%s %.0f</text>\n",
                f.w - f.mr - 4, s_py(&f, ref) - 4, S_M[m].ref, ref);
    }
    if (band) {
        s_band(out, r, &f, v, named, nnamed, col, w);
    } else {
        for (int i = 0; i < r->nranks; i++) {
            int rank = r->ranks[i].ser->rank, is_named = 0;
            for (int j = 0; j < nnamed; j++)
                is_named |= named[j] == rank;
            char attrs[200], label[48];
            snprintf(attrs, sizeof attrs, "class=\"rank%s\" data-rank=\"%d\" fill=\"none\" stroke=\"%s\" "
                     "stroke-width=\"%s\"", is_named ? " named" : "", rank, S_COLORS[i % S_NCOLORS],
                     is_named ? "2.5" : "1.5");
            s_path(out, &f, v + (size_t)i * f.nb, attrs);
            snprintf(label, sizeof label, "%srank %d", is_named ? "* " : "", rank);
            s_legend(out, &f, i, S_COLORS[i % S_NCOLORS], 0, label, r->ranks[i].ser->node);
        }
    }
    fputs("</svg>\n", out);
    free(v);
    free(w);
    free(col);
    return 0;
}
