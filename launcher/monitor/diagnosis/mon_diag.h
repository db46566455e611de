/* mon_diag: why training is slow, from the samples: per rank (input-bound, memory growth, throttling, ECC/Xid,
 * memory near full) on each node, then across ranks (stragglers) on the coordinator, and the Health block. Pure
 * functions over series and summaries: the agent, the coordinator and plaunch report share them. */
#ifndef PLAUNCH_MON_DIAG_H
#define PLAUNCH_MON_DIAG_H

#include <stddef.h>

#include "launcher/monitor/sampling/mon_sample.h"
#include "launcher/monitor/diagnosis/mon_series.h"
#include "launcher/monitor/diagnosis/mon_thresh.h"

enum mon_kind {
    MON_INPUT_BOUND,       /* the GPU waits for input */
    MON_STRAGGLER,         /* a rank slower than its peers */
    MON_GPU_MEM_GROWTH,    /* GPU memory grows steadily: a possible leak */
    MON_HOST_MEM_GROWTH,   /* host memory (RSS of the rank's processes) grows steadily */
    MON_THROTTLE,          /* clocks held down: thermal, power, hardware slowdown */
    MON_ECC,               /* uncorrectable (or fast-growing corrected) ECC errors */
    MON_XID,               /* Xid events */
    MON_MEM_NEAR_FULL,     /* device memory near full: OOM risk */
    MON_NKINDS
};

#define MON_FINDING_TEXT 480

/* One finding: who, and one sentence with the evidence (numbers) and a suggested next step, e.g.
 * "rank 3 (GPU 3 on node-b): GPU busy 41 % of the time, idle gaps of ~200 ms: the GPU waits for input; more
 * DataLoader workers, pinned memory, a faster data path". */
struct mon_finding {
    enum mon_kind kind;
    int rank;
    char node[MON_NODE_MAX];
    char gpu[MON_GPU_MAX];
    char text[MON_FINDING_TEXT];
};

/* What one rank's steady state looked like: small and bounded, so every node can send its ranks' summaries to the
 * coordinator (REPORT HEALTH, mon_json.h) instead of raw series. NAN where unknown (-1 for the ECC counts).
 * Steady state: the latest generation's points after its first warmup_s. Events (ECC, Xid) count over the whole
 * series, every generation and the warm-ups included: an Xid that ended generation 0 is what matters most. */
struct mon_rank_summary {
    int rank;
    char node[MON_NODE_MAX];
    char gpu[MON_GPU_MAX], pci[MON_PCI_MAX];
    int gpu_data;                  /* NVML said something about this rank's GPU */
    int samples;                   /* judged (after the warm-up) */
    double steady_s;               /* the span they cover */
    double util_mean, idle_frac, idle_gap_ms; /* idle_frac: NVML's fine samples, else the share of samples at or
                                               * below idle_util; idle_gap_ms: the median longest idle run */
    double cpu_mean;
    /* growth: a least-squares line over the steady span; first/last are the line's values at its start and end
     * (last - first = slope x steady_s) */
    double rss_first_mib, rss_last_mib, rss_slope_mib_min, rss_r2;
    /* GPU memory: the rank's own processes' where NVML says, else the device's */
    double gmem_first_mib, gmem_last_mib, gmem_slope_mib_min, gmem_r2, gmem_total_mib, gmem_peak_frac;
    double gmem_headroom_mib;      /* the device's total less its used memory at the last steady point */
    double thr_thermal_frac, thr_power_frac, thr_hw_frac;
    double sm_clock_mean_mhz, sm_clock_max_mhz, temp_max_c, power_mean_w, power_limit_w; /* throttling evidence */
    long long ecc_uncorrected, ecc_corrected_delta; /* the latest total; the increase over the series */
    long long ecc_uncorrected_delta;
    int xid_count, xid_last;
    double host_avail_min_frac;    /* the node's least MemAvailable/MemTotal seen; NAN unknown */
};

/* Summarises one rank's series (the steady state after the warm-up of its latest generation); 0. */
int mon_diag_rank(const struct mon_series *ser, const struct mon_thresh *th, struct mon_rank_summary *out);
/* The findings of every rank (from its summary alone) and across ranks (stragglers), in rank order, at most max
 * into out; the count (0: healthy), or -1 when memory ran out. Summaries carry no findings, so the coordinator of a
 * big job holds only summaries, and the same thresholds judge every node's ranks. A rank with less than
 * min_steady_s of steady state is judged only on its events (ECC, Xid). */
int mon_diag_job(const struct mon_rank_summary *ranks, int n, const struct mon_thresh *th, struct mon_finding *out,
                 int max);
/* The Health block for the terminal and plaunch.log (th: the thresholds mon_diag_job judged with):
 *   plaunch: ===== health: 2 findings over 8 ranks on 2 nodes (steady state 12.3 min) =====
 *     input-bound         rank 3 (GPU 3 on node-b): ...
 *     not judged: ranks 6-7 (less than 30 s of steady state after the 60 s warm-up)
 * or one line "plaunch: health: 8 ranks on 2 nodes healthy over 12.3 min of steady state (no finding)"; and
 * "plaunch: health: not enough steady state to judge (N s after the 60 s warm-up, 30 s needed)" when no rank has
 * enough. Lines that do not fit in cap are left out, and counted in a last line. */
void mon_diag_block(const struct mon_rank_summary *ranks, int n, const struct mon_thresh *th,
                    const struct mon_finding *f, int nf, char *buf, size_t cap);
/* A finding's kind as the block and the JSON name it ("input-bound", "straggler", ...). */
const char *mon_diag_kind_name(enum mon_kind k);

#endif
