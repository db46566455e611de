/* mon_findings: one rank's findings as sentences: who (rank, GPU, node), the evidence in numbers, a next step. */
#include "launcher/monitor/diagnosis/mon_findings.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *mon_findings_dur(double s, char *buf, size_t cap)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, cap, "? s");
    else if (s < 120)
        snprintf(buf, cap, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.1f min", s / 60);
    else
        snprintf(buf, cap, "%.1f h", s / 3600);
    return buf;
}

/* A memory size: MiB below 1 GiB, else GiB. */
static const char *s_mem(double mib, char *buf, size_t cap)
{
    if (fabs(mib) < 1024)
        snprintf(buf, cap, "%.0f MiB", mib);
    else
        snprintf(buf, cap, "%.1f GiB", mib / 1024);
    return buf;
}

/* "rank 3 (GPU 3 on node-b)", "rank 3 (GPU 3, PCI 00000000:3B:00.0, on node-b)", "rank 3 (CPU worker on node-b)". */
static const char *s_who(const struct mon_rank_summary *r, int with_pci, char *buf, size_t cap)
{
    const char *g = r->gpu;
    int named = strncmp(g, "GPU-", 4) == 0 || strncmp(g, "MIG-", 4) == 0;
    if (!g[0] && !r->gpu_data)
        snprintf(buf, cap, "rank %d (CPU worker on %s)", r->rank, r->node);
    else if (with_pci && r->pci[0])
        snprintf(buf, cap, "rank %d (%s%s, PCI %s, on %s)", r->rank, named ? "" : "GPU ", g[0] ? g : "?", r->pci,
                 r->node);
    else
        snprintf(buf, cap, "rank %d (%s%s on %s)", r->rank, named ? "" : "GPU ", g[0] ? g : "?", r->node);
    return buf;
}

struct s_out {
    const struct mon_rank_summary *r;
    struct mon_finding *f;
    int n, max;
};

static void s_add(struct s_out *o, enum mon_kind kind, int with_pci, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void s_add(struct s_out *o, enum mon_kind kind, int with_pci, const char *fmt, ...)
{
    if (o->n >= o->max)
        return;
    struct mon_finding *f = &o->f[o->n++];
    char who[MON_NODE_MAX + MON_GPU_MAX + MON_PCI_MAX + 48];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->rank = o->r->rank;
    snprintf(f->node, sizeof f->node, "%s", o->r->node);
    snprintf(f->gpu, sizeof f->gpu, "%s", o->r->gpu);
    int w = snprintf(f->text, sizeof f->text, "%s: ", s_who(o->r, with_pci, who, sizeof who));
    if (w < 0 || (size_t)w >= sizeof f->text)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text + w, sizeof f->text - (size_t)w, fmt, ap);
    va_end(ap);
}

static void s_input_bound(struct s_out *o, const struct mon_thresh *th)
{
    const struct mon_rank_summary *r = o->r;
    if (!r->gpu_data || !(r->util_mean < th->util_low) || !(r->idle_frac >= th->idle_frac))
        return;
    char gaps[48] = "";
    if (r->idle_gap_ms > 0)
        snprintf(gaps, sizeof gaps, " in gaps of ~%.0f ms", r->idle_gap_ms);
    s_add(o, MON_INPUT_BOUND, 0,
          "GPU busy %.0f %% of the time, idle %.0f %% of it%s: the GPU waits for input; more DataLoader workers, "
          "pinned memory, prefetching, a faster data path",
          r->util_mean, 100 * r->idle_frac, gaps);
}

static void s_straggler(struct s_out *o, const struct mon_straggle *st)
{
    double dev = 100 * (st->value - st->median) / st->median;
    const char *what = st->cpu ? "host CPU" : "GPU busy";
    const char *unit = st->cpu ? " of a core" : "";
    if (st->value < st->median)
        s_add(o, MON_STRAGGLER, 0,
              "%s %.0f %%%s against a median of %.0f %% on its %d peers (%+.0f %%): slower than the others, who "
              "wait for it at every synchronisation; look at this rank's input pipeline, its %s and its node's load",
              what, st->value, unit, st->median, st->peers, dev, st->cpu ? "CPU share" : "GPU's clocks");
    else
        s_add(o, MON_STRAGGLER, 0,
              "%s %.0f %%%s against a median of %.0f %% on its %d peers (%+.0f %%): it does more than the others "
              "(an uneven share of the data, or extra work on this rank), who wait for it; balance the work",
              what, st->value, unit, st->median, st->peers, dev);
}

/* Steady growth of a least-squares line: first/last/slope/r2 as mon_rank_summary has them. */
static int s_grows(const struct mon_rank_summary *r, const struct mon_thresh *th, double slope, double r2,
                   double first, double last)
{
    return slope >= th->growth_mib_min && r2 >= th->growth_r2 && r->steady_s >= th->growth_min_s &&
           last - first >= th->growth_min_mib;
}

static void s_growth(struct s_out *o, const struct mon_thresh *th)
{
    const struct mon_rank_summary *r = o->r;
    char span[24], d[24], a[24], b[24], tot[40] = "", eta[48] = "";
    mon_findings_dur(r->steady_s, span, sizeof span);
    if (s_grows(r, th, r->gmem_slope_mib_min, r->gmem_r2, r->gmem_first_mib, r->gmem_last_mib)) {
        if (r->gmem_total_mib > 0)
            snprintf(tot, sizeof tot, " of %s", s_mem(r->gmem_total_mib, d, sizeof d));
        if (r->gmem_headroom_mib >= 0)
            snprintf(eta, sizeof eta, ", out of memory in ~%s at this rate",
                     mon_findings_dur(60 * r->gmem_headroom_mib / r->gmem_slope_mib_min, d, sizeof d));
        s_add(o, MON_GPU_MEM_GROWTH, 0,
              "GPU memory +%.0f MiB/min over %s (+%s, %s -> %s%s)%s: it grows steadily, a possible leak; look for "
              "tensors kept across steps (a loss summed with its graph, growing lists or caches), "
              "torch.cuda.memory_summary() shows where",
              r->gmem_slope_mib_min, span, s_mem(r->gmem_last_mib - r->gmem_first_mib, d, sizeof d),
              s_mem(r->gmem_first_mib, a, sizeof a), s_mem(r->gmem_last_mib, b, sizeof b), tot, eta);
    }
    if (s_grows(r, th, r->rss_slope_mib_min, r->rss_r2, r->rss_first_mib, r->rss_last_mib))
        s_add(o, MON_HOST_MEM_GROWTH, 0,
              "host memory (RSS of the rank's processes) +%.0f MiB/min over %s (+%s, %s -> %s): it grows "
              "steadily, a possible leak; DataLoader workers copying Python objects on read (keep datasets in "
              "numpy arrays), caches without a bound; tracemalloc or memray find it",
              r->rss_slope_mib_min, span, s_mem(r->rss_last_mib - r->rss_first_mib, d, sizeof d),
              s_mem(r->rss_first_mib, a, sizeof a), s_mem(r->rss_last_mib, b, sizeof b));
}

static void s_throttle(struct s_out *o, const struct mon_thresh *th)
{
    static const char *const why[] = { "by the power cap", "by temperature", "by a hardware slowdown" };
    static const char *const next[] = {
        "the GPU runs at its power limit; compare it with the board's default (nvidia-smi -q -d POWER)",
        "the GPU is too hot; check cooling, airflow and fans (nvidia-smi -q -d TEMPERATURE,PERFORMANCE)",
        "a power-supply or brake signal; report the node to its administrators",
    };
    const struct mon_rank_summary *r = o->r;
    double share[3] = { r->thr_power_frac, r->thr_thermal_frac, r->thr_hw_frac };
    int order[3] = { 0, 1, 2 }, nover = 0;
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (share[order[j]] > share[order[i]] || (isnan(share[order[i]]) && !isnan(share[order[j]]))) {
                int t = order[i];
                order[i] = order[j], order[j] = t;
            }
    char list[160] = "", ev[160] = "";
    size_t len = 0, elen = 0;
    for (int i = 0; i < 3; i++) {
        if (!(share[order[i]] >= th->throttle_frac && share[order[i]] > 0) || len >= sizeof list)
            continue;
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s %.0f %%%s", nover ? ", " : "", why[order[i]],
                                100 * share[order[i]], nover ? "" : " of the time");
        nover++;
    }
    if (!nover)
        return;
    if (isfinite(r->sm_clock_mean_mhz) && r->sm_clock_max_mhz > 0 &&
        !(r->sm_clock_mean_mhz < th->throttle_clock_frac * r->sm_clock_max_mhz))
        return;
    if (isfinite(r->sm_clock_mean_mhz) && r->sm_clock_max_mhz > 0)
        elen += (size_t)snprintf(ev + elen, sizeof ev - elen, "SM clock %.0f of %.0f MHz on average",
                                 r->sm_clock_mean_mhz, r->sm_clock_max_mhz);
    if (isfinite(r->temp_max_c) && elen < sizeof ev)
        elen += (size_t)snprintf(ev + elen, sizeof ev - elen, "%sup to %.0f C", elen ? ", " : "", r->temp_max_c);
    if (isfinite(r->power_mean_w) && r->power_limit_w > 0 && elen < sizeof ev)
        elen += (size_t)snprintf(ev + elen, sizeof ev - elen, "%s%.0f of %.0f W", elen ? ", " : "",
                                 r->power_mean_w, r->power_limit_w);
    s_add(o, MON_THROTTLE, 0, "clocks held down %s%s%s%s: %s", list, elen ? " (" : "", ev, elen ? ")" : "",
          next[order[0]]);
}

static void s_ecc(struct s_out *o, const struct mon_thresh *th)
{
    const struct mon_rank_summary *r = o->r;
    char during[64] = "", corr[64] = "";
    if (r->ecc_corrected_delta > th->ecc_corrected_max)
        snprintf(corr, sizeof corr, "; %lld corrected ones during the job", r->ecc_corrected_delta);
    if (r->ecc_uncorrected > 0) {
        if (r->ecc_uncorrected_delta > 0)
            snprintf(during, sizeof during, ", %lld of them during this job", r->ecc_uncorrected_delta);
        s_add(o, MON_ECC, 1,
              "%lld uncorrectable ECC error%s (volatile count since the driver loaded%s)%s: the GPU's memory is "
              "failing; drain the node and have the GPU checked (nvidia-smi -q -d ECC,ROW_REMAPPER; a reset may be "
              "pending)",
              r->ecc_uncorrected, r->ecc_uncorrected == 1 ? "" : "s", during, corr);
    } else if (corr[0]) {
        s_add(o, MON_ECC, 1,
              "%lld corrected ECC errors during the job (more than %.0f): the GPU's memory is degrading; watch it "
              "and plan a check (nvidia-smi -q -d ECC,ROW_REMAPPER)",
              r->ecc_corrected_delta, th->ecc_corrected_max);
    }
}

/* What an Xid means, for the common ones; hw 1: the hardware or driver, 0: usually the program. */
static const char *s_xid_meaning(int xid, int *hw)
{
    static const struct { int xid, hw; const char *what; } xids[] = {
        { 13, 0, "graphics engine exception" }, { 31, 0, "GPU memory page fault" },
        { 43, 0, "GPU stopped processing" },    { 45, 0, "preemptive cleanup" },
        { 48, 1, "double-bit ECC error" },      { 61, 1, "internal micro-controller breakpoint" },
        { 62, 1, "internal micro-controller halt" }, { 63, 1, "ECC page retirement or row remapping" },
        { 64, 1, "ECC row remapping failure" }, { 74, 1, "NVLink error" },
        { 79, 1, "GPU has fallen off the bus" }, { 92, 1, "high single-bit ECC error rate" },
        { 94, 1, "contained ECC error" },       { 95, 1, "uncontained ECC error" },
        { 109, 1, "context switch timeout" },   { 119, 1, "GSP RPC timeout" },
        { 120, 1, "GSP error" },
    };
    for (size_t i = 0; i < sizeof xids / sizeof xids[0]; i++)
        if (xids[i].xid == xid)
            return *hw = xids[i].hw, xids[i].what;
    *hw = 1;
    return "see NVIDIA's Xid catalogue";
}

static void s_xid(struct s_out *o)
{
    const struct mon_rank_summary *r = o->r;
    if (r->xid_count <= 0 && r->xid_last <= 0)
        return;
    int hw, count = r->xid_count > 0 ? r->xid_count : 1;
    const char *what = s_xid_meaning(r->xid_last, &hw);
    s_add(o, MON_XID, 1, "%d Xid event%s, the last Xid %d (%s): %s", count, count == 1 ? "" : "s", r->xid_last,
          what,
          hw ? "a hardware or driver fault; drain the node, reset the GPU (nvidia-smi -r) and report it"
             : "usually the program itself (a bad access in a kernel); run it under compute-sanitizer");
}

static void s_near_full(struct s_out *o, const struct mon_thresh *th, int host_full)
{
    const struct mon_rank_summary *r = o->r;
    char a[24], b[24];
    if (r->gmem_peak_frac >= th->near_full_frac && r->gmem_total_mib > 0)
        s_add(o, MON_MEM_NEAR_FULL, 0,
              "GPU memory peaked at %s of %s (%.1f %%): close to out of memory; a smaller batch, activation "
              "checkpointing, or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation",
              s_mem(r->gmem_peak_frac * r->gmem_total_mib, a, sizeof a), s_mem(r->gmem_total_mib, b, sizeof b),
              100 * r->gmem_peak_frac);
    if (host_full)
        s_add(o, MON_MEM_NEAR_FULL, 0,
              "the node's available memory fell to %.1f %% of its RAM: every rank there risks the OOM killer; "
              "fewer DataLoader workers, a smaller prefetch_factor, or more memory for the job",
              100 * r->host_avail_min_frac);
}

int mon_findings_rank(const struct mon_rank_summary *r, const struct mon_thresh *th, int judged, int host_full,
                      const struct mon_straggle *st, struct mon_finding *out, int max)
{
    struct s_out o = { .r = r, .f = out, .max = max };
    if (judged) {
        s_input_bound(&o, th);
        if (st)
            s_straggler(&o, st);
        s_growth(&o, th);
        s_throttle(&o, th);
    }
    s_ecc(&o, th);
    s_xid(&o);
    if (judged)
        s_near_full(&o, th, host_full);
    return o.n;
}
