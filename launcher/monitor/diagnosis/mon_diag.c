/* mon_diag: a rank's steady state from its series, the job's findings across ranks (stragglers), the Health block. */
#include "launcher/monitor/diagnosis/mon_diag.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/monitor/diagnosis/mon_findings.h"

const char *mon_diag_kind_name(enum mon_kind k)
{
    static const char *const names[MON_NKINDS] = {
        [MON_INPUT_BOUND] = "input-bound",       [MON_STRAGGLER] = "straggler",
        [MON_GPU_MEM_GROWTH] = "gpu-mem-growth", [MON_HOST_MEM_GROWTH] = "host-mem-growth",
        [MON_THROTTLE] = "throttling",           [MON_ECC] = "ecc",
        [MON_XID] = "xid",                       [MON_MEM_NEAR_FULL] = "mem-near-full",
    };
    return (unsigned)k < MON_NKINDS ? names[k] : "unknown";
}

/* ---- one rank's summary -------------------------------------------------------------------------------- */

/* A weighted mean. */
struct s_mean {
    double sum, w;
};

static void s_mean_add(struct s_mean *m, double v, double w)
{
    if (!isnan(v))
        m->sum += v * w, m->w += w;
}

static double s_mean_get(const struct s_mean *m)
{
    return m->w > 0 ? m->sum / m->w : NAN;
}

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A weighted least-squares line of the field at off over points [a, len): slope per minute, r2, the line's value at
 * the first point and span_s later; NAN without three points or without a spread in time. */
static void s_fit(const struct mon_series *ser, int a, int len, size_t off, double span_s, double *slope,
                  double *r2, double *first, double *last)
{
    const struct mon_sample *s0 = mon_series_get(ser, a, NULL);
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0, x0 = NAN;
    int pts = 0;
    *slope = *r2 = *first = *last = NAN;
    for (int pass = 0; pass < 2; pass++) {
        double mx = sw > 0 ? sx / sw : 0, my = sw > 0 ? sy / sw : 0;
        for (int i = a; i < len; i++) {
            const struct mon_point *p;
            const struct mon_sample *s = mon_series_get(ser, i, &p);
            double y = *(const double *)((const char *)s + off);
            double x = (double)(s->t_ms - s0->t_ms) / 60000.0, w = p->samples;
            if (isnan(y))
                continue;
            if (pass == 0) {
                sw += w, sx += w * x, sy += w * y, pts++;
                x0 = isnan(x0) ? x : x0;
            } else {
                sxx += w * (x - mx) * (x - mx), sxy += w * (x - mx) * (y - my), syy += w * (y - my) * (y - my);
            }
        }
        if (pass == 0 && pts < 3)
            return;
    }
    if (!(sxx > 0))
        return;
    double mx = sx / sw, my = sy / sw;
    *slope = sxy / sxx;
    *r2 = syy > 0 ? fmin(1, sxy * sxy / (sxx * syy)) : 0;
    *first = my + *slope * (x0 - mx);
    *last = *first + *slope * span_s / 60;
}

static void s_summary_clear(const struct mon_series *ser, struct mon_rank_summary *out)
{
    memset(out, 0, sizeof *out);
    out->rank = ser->rank;
    snprintf(out->node, sizeof out->node, "%s", ser->node);
    snprintf(out->gpu, sizeof out->gpu, "%s", ser->gpu);
    snprintf(out->pci, sizeof out->pci, "%s", ser->pci);
    double *nan_fields[] = {
        &out->util_mean,       &out->idle_frac,          &out->idle_gap_ms,        &out->cpu_mean,
        &out->rss_first_mib,   &out->rss_last_mib,       &out->rss_slope_mib_min,  &out->rss_r2,
        &out->gmem_first_mib,  &out->gmem_last_mib,      &out->gmem_slope_mib_min, &out->gmem_r2,
        &out->gmem_total_mib,  &out->gmem_peak_frac,     &out->gmem_headroom_mib,  &out->thr_thermal_frac,
        &out->thr_power_frac,  &out->thr_hw_frac,        &out->sm_clock_mean_mhz,  &out->sm_clock_max_mhz,
        &out->temp_max_c,      &out->power_mean_w,       &out->power_limit_w,      &out->host_avail_min_frac,
    };
    for (size_t i = 0; i < sizeof nan_fields / sizeof nan_fields[0]; i++)
        *nan_fields[i] = NAN;
    out->ecc_uncorrected = out->ecc_corrected_delta = out->ecc_uncorrected_delta = -1;
    out->xid_last = -1;
}

/* ECC and Xid over the whole series: the latest totals, their increase, the events. */
static void s_events(const struct mon_series *ser, int len, struct mon_rank_summary *out)
{
    long long ue0 = -1, ce0 = -1, ce = -1;
    for (int i = 0; i < len; i++) {
        const struct mon_point *p;
        const struct mon_sample *s = mon_series_get(ser, i, &p);
        if (s->ecc_uncorrected >= 0) {
            ue0 = ue0 < 0 ? s->ecc_uncorrected : ue0;
            out->ecc_uncorrected = s->ecc_uncorrected;
        }
        if (s->ecc_corrected >= 0) {
            ce0 = ce0 < 0 ? s->ecc_corrected : ce0;
            ce = s->ecc_corrected;
        }
        out->xid_count += p->xids;
        if (s->xid > 0 || (s->xid == 0 && out->xid_last < 0))
            out->xid_last = s->xid;
    }
    /* a total that went down was reset (the driver reloaded): all of the latest one is new */
    if (out->ecc_uncorrected >= 0)
        out->ecc_uncorrected_delta = out->ecc_uncorrected >= ue0 ? out->ecc_uncorrected - ue0 : out->ecc_uncorrected;
    if (ce >= 0)
        out->ecc_corrected_delta = ce >= ce0 ? ce - ce0 : ce;
}

/* The steady points' means, shares and extremes. */
static void s_steady(const struct mon_series *ser, int a, int len, const struct mon_thresh *th,
                     struct mon_rank_summary *out)
{
    struct s_mean util = { 0 }, fine = { 0 }, cpu = { 0 }, clock = { 0 }, power = { 0 };
    long util_known = 0, util_idle = 0, thr_known = 0, thr[3] = { 0 };
    double gaps[MON_SERIES_MAX + 1], peak = NAN;
    int ngaps = 0, gaps_known = 0;
    const struct mon_sample *last = NULL;
    for (int i = a; i < len; i++) {
        const struct mon_point *p;
        const struct mon_sample *s = mon_series_get(ser, i, &p);
        double w = p->samples;
        last = s;
        out->samples += p->samples;
        out->gpu_data |= !isnan(s->gpu_util) || !isnan(s->gpu_mem_used_mib) || !isnan(s->gpu_mem_proc_mib);
        s_mean_add(&util, s->gpu_util, w);
        s_mean_add(&fine, s->gpu_idle_frac, w);
        s_mean_add(&cpu, s->cpu_pct, w);
        s_mean_add(&clock, s->sm_clock_mhz, w);
        s_mean_add(&power, s->power_w, w);
        if (p->samples == 1 && !isnan(s->gpu_util)) /* exact at th's idle_util, whatever the series counted with */
            util_known++, util_idle += s->gpu_util <= th->idle_util;
        else
            util_known += p->util_known, util_idle += p->util_idle;
        thr_known += p->thr_known;
        thr[0] += p->thr_thermal, thr[1] += p->thr_power, thr[2] += p->thr_hw;
        gaps_known |= !isnan(s->gpu_idle_ms);
        if (s->gpu_idle_ms > 0)
            gaps[ngaps++] = s->gpu_idle_ms;
        if (p->gmem_peak_mib > peak || isnan(peak))
            peak = isnan(p->gmem_peak_mib) ? peak : p->gmem_peak_mib;
        if (!isnan(s->gpu_mem_total_mib))
            out->gmem_total_mib = s->gpu_mem_total_mib;
        if (!isnan(s->sm_clock_max_mhz))
            out->sm_clock_max_mhz = s->sm_clock_max_mhz;
        if (!isnan(s->power_limit_w))
            out->power_limit_w = s->power_limit_w;
        if (!isnan(s->temp_c) && !(s->temp_c <= out->temp_max_c))
            out->temp_max_c = s->temp_c;
        if (!isnan(s->host_avail_frac) && !(s->host_avail_frac >= out->host_avail_min_frac))
            out->host_avail_min_frac = s->host_avail_frac;
    }
    out->util_mean = s_mean_get(&util);
    out->cpu_mean = s_mean_get(&cpu);
    out->sm_clock_mean_mhz = s_mean_get(&clock);
    out->power_mean_w = s_mean_get(&power);
    /* idle evidence: NVML's fine samples, and the interval samples at or below idle_util; the stronger counts (on an
     * H200 a loop of 150 ms sleeps and 80 ms bursts left no fine sample at 0 %, but a quarter of the 1 s ones) */
    double fine_idle = fine.w > 0 ? s_mean_get(&fine) : NAN;
    double coarse_idle = util_known > 0 ? (double)util_idle / util_known : NAN;
    out->idle_frac = isnan(fine_idle) ? coarse_idle : isnan(coarse_idle) ? fine_idle : fmax(fine_idle, coarse_idle);
    if (ngaps > 0) {
        qsort(gaps, (size_t)ngaps, sizeof gaps[0], s_cmp_double);
        out->idle_gap_ms = ngaps % 2 ? gaps[ngaps / 2] : (gaps[ngaps / 2 - 1] + gaps[ngaps / 2]) / 2;
    } else if (gaps_known) {
        out->idle_gap_ms = 0;
    }
    if (thr_known > 0) {
        out->thr_thermal_frac = (double)thr[0] / thr_known;
        out->thr_power_frac = (double)thr[1] / thr_known;
        out->thr_hw_frac = (double)thr[2] / thr_known;
    }
    if (out->gmem_total_mib > 0 && !isnan(peak))
        out->gmem_peak_frac = fmin(1, peak / out->gmem_total_mib);
    if (last && out->gmem_total_mib > 0 && !isnan(last->gpu_mem_used_mib))
        out->gmem_headroom_mib = fmax(0, out->gmem_total_mib - last->gpu_mem_used_mib);
}

int mon_diag_rank(const struct mon_series *ser, const struct mon_thresh *th, struct mon_rank_summary *out)
{
    s_summary_clear(ser, out);
    int len = mon_series_len(ser);
    if (len == 0)
        return 0;
    s_events(ser, len, out);
    int gen = mon_series_get(ser, len - 1, NULL)->generation, first = len - 1;
    while (first > 0 && mon_series_get(ser, first - 1, NULL)->generation == gen)
        first--;
    int64_t steady_ms = mon_series_get(ser, first, NULL)->t_ms + (int64_t)llround(th->warmup_s * 1000);
    int a = first;
    while (a < len && mon_series_get(ser, a, NULL)->t_ms < steady_ms)
        a++;
    if (a == len)
        return 0;
    s_steady(ser, a, len, th, out);
    /* the span: first to last point, plus the last point's own samples at the spacing of the others */
    const struct mon_point *lp;
    const struct mon_sample *l = mon_series_get(ser, len - 1, &lp);
    double span_ms = (double)(l->t_ms - mon_series_get(ser, a, NULL)->t_ms);
    int before = out->samples - lp->samples;
    out->steady_s = before > 0 ? (span_ms + lp->samples * span_ms / before) / 1000 : 0;
    int use_proc = 0;
    for (int i = a; i < len; i++)
        use_proc |= !isnan(mon_series_get(ser, i, NULL)->gpu_mem_proc_mib);
    /* the newest sample is often taken while the worker exits and frees its memory: a leak that ends in a drop
     * would fail the straight-line test, so a lone newest sample stays out of the memory fits */
    int fit_len = lp->samples == 1 && len - a > 3 ? len - 1 : len;
    s_fit(ser, a, fit_len, offsetof(struct mon_sample, rss_mib), out->steady_s, &out->rss_slope_mib_min, &out->rss_r2,
          &out->rss_first_mib, &out->rss_last_mib);
    s_fit(ser, a, fit_len, use_proc ? offsetof(struct mon_sample, gpu_mem_proc_mib)
                                : offsetof(struct mon_sample, gpu_mem_used_mib),
          out->steady_s, &out->gmem_slope_mib_min, &out->gmem_r2, &out->gmem_first_mib, &out->gmem_last_mib);
    return 0;
}

/* ---- across ranks ----------------------------------------------------------------------------------------- */

static int s_judged(const struct mon_rank_summary *r, const struct mon_thresh *th)
{
    return r->samples > 0 && r->steady_s >= th->min_steady_s;
}

static int s_cmp_rank(const void *a, const void *b, void *arg)
{
    const struct mon_rank_summary *r = arg;
    int x = r[*(const int *)a].rank, y = r[*(const int *)b].rank;
    return (x > y) - (x < y);
}

static int s_cmp_node(const void *a, const void *b, void *arg)
{
    const struct mon_rank_summary *r = arg;
    int c = strcmp(r[*(const int *)a].node, r[*(const int *)b].node);
    return c ? c : s_cmp_rank(a, b, arg);
}

/* The indices of r[0..n) in rank order, or by node then rank; malloc'ed, NULL when memory ran out. */
static int *s_order(const struct mon_rank_summary *r, int n, int by_node)
{
    int *idx = malloc((size_t)n * sizeof *idx);
    if (!idx)
        return NULL;
    for (int i = 0; i < n; i++)
        idx[i] = i;
    qsort_r(idx, (size_t)n, sizeof *idx, by_node ? s_cmp_node : s_cmp_rank, (void *)r);
    return idx;
}

/* The median of sorted[0..m) without its element p. */
static double s_median_without(const double *sorted, int m, int p)
{
    int l = m - 1;
#define S_AT(k) sorted[(k) < p ? (k) : (k) + 1]
    return l % 2 ? S_AT(l / 2) : (S_AT(l / 2 - 1) + S_AT(l / 2)) / 2;
#undef S_AT
}

/* Marks the stragglers among the judged GPU ranks (cpu 0) or CPU workers (cpu 1): off their peers' median by more
 * than straggler_frac and straggler_min_pct. When more than half are off, the ranks split into groups and no rank is
 * "the" outlier: none is marked. 0, or -1 when memory ran out. */
static int s_stragglers(const struct mon_rank_summary *r, int n, const struct mon_thresh *th, int cpu,
                        struct mon_straggle *st, int *is)
{
    double *v = malloc((size_t)n * sizeof *v), *sorted = malloc((size_t)n * sizeof *sorted);
    int *who = malloc((size_t)n * sizeof *who), m = 0, marked = 0;
    if (!v || !sorted || !who) {
        free(v), free(sorted), free(who);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        double x = cpu ? r[i].cpu_mean : r[i].util_mean;
        if (s_judged(&r[i], th) && (!r[i].gpu_data) == cpu && isfinite(x))
            who[m] = i, v[m] = sorted[m] = x, m++;
    }
    if (m >= th->straggler_min_ranks && m >= 2) {
        qsort(sorted, (size_t)m, sizeof *sorted, s_cmp_double);
        for (int k = 0; k < m; k++) {
            int p = (int)((double *)bsearch(&v[k], sorted, (size_t)m, sizeof *sorted, s_cmp_double) - sorted);
            double med = s_median_without(sorted, m, p), d = fabs(v[k] - med);
            if (med > 0 && d > th->straggler_frac * med && d >= th->straggler_min_pct) {
                st[who[k]] = (struct mon_straggle){ .cpu = cpu, .value = v[k], .median = med, .peers = m - 1 };
                is[who[k]] = 1, marked++;
            }
        }
        if (2 * marked > m)
            for (int k = 0; k < m; k++)
                is[who[k]] = 0;
    }
    free(v), free(sorted), free(who);
    return 0;
}

int mon_diag_job(const struct mon_rank_summary *ranks, int n, const struct mon_thresh *th, struct mon_finding *out,
                 int max)
{
    if (n <= 0 || max <= 0)
        return 0;
    int *order = s_order(ranks, n, 0), *bynode = s_order(ranks, n, 1), *is = calloc((size_t)n, sizeof *is);
    int *host = calloc((size_t)n, sizeof *host), nf = -1;
    struct mon_straggle *st = calloc((size_t)n, sizeof *st);
    if (!order || !bynode || !is || !host || !st || s_stragglers(ranks, n, th, 0, st, is) < 0 ||
        s_stragglers(ranks, n, th, 1, st, is) < 0)
        goto out;
    /* host memory is the node's: its finding goes to the first rank of the node that saw it */
    for (int i = 0, found = 0; i < n; i++) {
        const struct mon_rank_summary *r = &ranks[bynode[i]];
        if (i > 0 && strcmp(r->node, ranks[bynode[i - 1]].node) != 0)
            found = 0;
        if (!found && s_judged(r, th) && r->host_avail_min_frac < 1 - th->host_near_full_frac)
            host[bynode[i]] = found = 1;
    }
    nf = 0;
    for (int k = 0; k < n && nf < max; k++) {
        int i = order[k];
        nf += mon_findings_rank(&ranks[i], th, s_judged(&ranks[i], th), host[i], is[i] ? &st[i] : NULL, out + nf,
                                max - nf);
    }
out:
    free(order), free(bynode), free(is), free(host), free(st);
    return nf;
}

/* ---- the block -------------------------------------------------------------------------------------------- */

/* Appends a line when all of it fits; -1 (and nothing appended) when not. */
static int s_put(char *buf, size_t cap, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int s_put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= cap - *len) {
        buf[*len] = '\0';
        return -1;
    }
    *len += (size_t)w;
    return 0;
}

/* "rank 3" or "ranks 4-7, 9" of the ranks not judged, in rank order (order may be NULL: as given). */
static void s_not_judged(const struct mon_rank_summary *r, int n, const int *order, const struct mon_thresh *th,
                         char *buf, size_t cap)
{
    size_t len = 0;
    int count = 0, run_start = -1, prev = -2;
    buf[0] = '\0';
    for (int k = 0; k <= n; k++) {
        const struct mon_rank_summary *x = k < n ? &r[order ? order[k] : k] : NULL;
        if (x && s_judged(x, th))
            continue;
        if (x && x->rank == prev + 1 && run_start >= 0) {
            prev = x->rank, count++;
            continue;
        }
        if (run_start >= 0 && len + 24 < cap)
            len += (size_t)snprintf(buf + len, cap - len, run_start == prev ? "%s%d" : "%s%d-%d",
                                    len ? ", " : "", run_start, prev);
        else if (run_start >= 0 && len + 5 < cap && !strstr(buf, "..."))
            len += (size_t)snprintf(buf + len, cap - len, ", ...");
        if (x)
            run_start = prev = x->rank, count++;
    }
    if (count == 0)
        buf[0] = '\0';
    else if (strlen(buf) + 8 < cap) {
        memmove(buf + (count > 1 ? 6 : 5), buf, strlen(buf) + 1);
        memcpy(buf, count > 1 ? "ranks " : "rank ", count > 1 ? 6 : 5);
    }
}

void mon_diag_block(const struct mon_rank_summary *ranks, int n, const struct mon_thresh *th,
                    const struct mon_finding *f, int nf, char *buf, size_t cap)
{
    size_t len = 0;
    if (!buf || cap == 0)
        return;
    buf[0] = '\0';
    if (n <= 0) {
        s_put(buf, cap, &len, "plaunch: health: no samples to judge (no rank was sampled)\n");
        return;
    }
    int judged = 0, nodes = 1, *order = s_order(ranks, n, 0), *bynode = s_order(ranks, n, 1);
    double best = 0, most = 0;
    for (int i = 0; i < n; i++) {
        most = fmax(most, ranks[i].steady_s);
        if (s_judged(&ranks[i], th))
            judged++, best = fmax(best, ranks[i].steady_s);
        if (bynode && i > 0 && strcmp(ranks[bynode[i]].node, ranks[bynode[i - 1]].node) != 0)
            nodes++;
    }
    char dur[24], warm[24], need[24], notj[200], tail[320] = "";
    s_not_judged(ranks, n, order, th, notj, sizeof notj);
    mon_findings_dur(th->warmup_s, warm, sizeof warm);
    mon_findings_dur(th->min_steady_s, need, sizeof need);
    if (notj[0])
        snprintf(tail, sizeof tail, "not judged: %s (less than %s of steady state after the %s warm-up)", notj, need,
                 warm);
    const char *rs = n == 1 ? "" : "s", *ns = nodes == 1 ? "" : "s";
    if (nf <= 0 && judged == 0) {
        s_put(buf, cap, &len, "plaunch: health: not enough steady state to judge (%s after the %s warm-up, %s "
              "needed)\n", mon_findings_dur(most, dur, sizeof dur), warm, need);
    } else if (nf <= 0) {
        char of[24] = "";
        if (judged < n)
            snprintf(of, sizeof of, "%d of ", judged);
        s_put(buf, cap, &len, "plaunch: health: %s%d rank%s on %d node%s healthy over %s of steady state (no "
              "finding)%s%s\n", of, n, rs, nodes, ns, mon_findings_dur(best, dur, sizeof dur), tail[0] ? "; " : "",
              tail);
    } else {
        s_put(buf, cap, &len, "plaunch: ===== health: %d finding%s over %d rank%s on %d node%s (steady state %s) "
              "=====\n", nf, nf == 1 ? "" : "s", n, rs, nodes, ns, mon_findings_dur(judged ? best : most, dur, sizeof dur));
        int shown = 0;
        size_t reserve = strlen(tail) + 64;
        for (; shown < nf && len + reserve < cap; shown++) {
            size_t before = len;
            if (s_put(buf, cap, &len, "  %-16s %s\n", mon_diag_kind_name(f[shown].kind), f[shown].text) < 0 ||
                len + reserve >= cap) {
                len = before, buf[len] = '\0';
                break;
            }
        }
        if (tail[0])
            s_put(buf, cap, &len, "  %s\n", tail);
        if (shown < nf)
            s_put(buf, cap, &len, "  ... %d more finding%s left out here\n", nf - shown, nf - shown == 1 ? "" : "s");
    }
    free(order), free(bynode);
}
