/* mon_diag: why training is slow, from the samples: per rank (input-bound, memory growth, throttling, ECC/Xid,
 * memory near full) on each node, then across ranks (stragglers) on the coordinator, and the Health block. Pure
 * functions over series and summaries: the agent, the coordinator and plaunch report share them. */
#ifndef PLAUNCH_MON_DIAG_H
#define PLAUNCH_MON_DIAG_H

#include <stddef.h>

#include "mon_sample.h"
#include "mon_series.h"
#include "mon_thresh.h"

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
 * coordinator (REPORT "health", mon_json.h) instead of raw series. NAN where unknown. */
struct mon_rank_summary {
    int rank;
    char node[MON_NODE_MAX];
    char gpu[MON_GPU_MAX], pci[MON_PCI_MAX];
    int gpu_data;                  /* NVML said something about this rank's GPU */
    int samples;                   /* judged (after the warm-up) */
    double steady_s;               /* the span they cover */
    double util_mean, idle_frac, idle_gap_ms;
    double cpu_mean;
    double rss_first_mib, rss_last_mib, rss_slope_mib_min;
    double gmem_first_mib, gmem_last_mib, gmem_slope_mib_min, gmem_total_mib, gmem_peak_frac;
    double thr_thermal_frac, thr_power_frac, thr_hw_frac;
    long long ecc_uncorrected, ecc_corrected_delta;
    int xid_count, xid_last;
    double host_avail_min_frac;    /* the node's least MemAvailable/MemTotal seen; NAN unknown */
};

/* Summarises one rank's series (the steady state after the warm-up of its latest generation); 0. */
int mon_diag_rank(const struct mon_series *ser, const struct mon_thresh *th, struct mon_rank_summary *out);
/* The findings of every rank (from its summary alone) and across ranks (stragglers), in rank order, at most max
 * into out; the count (0: healthy). Summaries carry no findings, so the coordinator of a big job holds only
 * summaries, and the same thresholds judge every node's ranks. */
int mon_diag_job(const struct mon_rank_summary *ranks, int n, const struct mon_thresh *th, struct mon_finding *out,
                 int max);
/* The Health block for the terminal and plaunch.log:
 *   plaunch: ===== health: 2 findings over 8 ranks on 2 nodes (steady state 12.3 min) =====
 *     input-bound  rank 3 (GPU 3 on node-b): ...
 * or one line "plaunch: health: 8 ranks on 2 nodes healthy over 12.3 min of steady state (no finding)"; and
 * "plaunch: health: not enough steady state to judge (N s after the warm-up)" when that is so. */
void mon_diag_block(const struct mon_rank_summary *ranks, int n, const struct mon_finding *f, int nf, char *buf,
                    size_t cap);
/* A finding's kind as the block and the JSON name it ("input-bound", "straggler", ...). */
const char *mon_diag_kind_name(enum mon_kind k);

#endif
