/* probe_analysis: turns probe measurements into scaling figures and one verdict line per finding. */
#ifndef PLAUNCH_PROBE_ANALYSIS_H
#define PLAUNCH_PROBE_ANALYSIS_H

/* Ownership: probe_analyse returns an analysis the caller frees with probe_analysis_destroy; it borrows nothing
 * from the measurements, so either may be freed first. */

#include "launcher/probe/measure/probe_meas.h"
#include "launcher/probe/analysis/probe_thresholds.h"

/* Exit status of `plaunch probe` when at least one flag fired (docs/probe.md). */
#define PROBE_EXIT_FLAGGED 3

enum probe_sev { PROBE_SEV_OK, PROBE_SEV_NOTE, PROBE_SEV_FLAG };

struct probe_verdict {
    enum probe_sev sev;
    const char *kind;  /* static: "versions", "p2p", "slow-pair", "verification", "busbw-drop", ... */
    char text[512];    /* the finding, one sentence */
    char reason[1024]; /* why, where the data shows it; "" when it does not */
};

/* Per group size N (union of the first-n sweeps and the synthetic steps). NAN where not measured. */
struct probe_group_stat {
    int n, nodes;
    double busbw[PROBE_NOPS];     /* per collective: GB/s at ref_bytes */
    double busbw_rel[PROBE_NOPS]; /* busbw / busbw(base_n) of the same collective */
    int busbw_flag[PROBE_NOPS];
    int any_busbw_flag;
    double step_us, comm_us, throughput; /* the step's communication: every collective of config.ops */
    double efficiency; /* throughput(N) / (N * throughput(1)) */
    double threshold;  /* the efficiency floor for N from the thresholds */
    int eff_flag;
};

struct probe_analysis {
    uint64_t ref_bytes; /* the largest nominal size every multi-GPU first-n sweep measured; 0 when none */
    int base_n;         /* the smallest multi-GPU N with a sweep at ref_bytes; 0 when none */
    struct probe_group_stat *groups;
    size_t ngroups;
    struct probe_verdict *verdicts;
    size_t nverdicts, cap;
    int nflags;
};

/* NULL (+err) only when out of memory: gaps in the data become NOTE verdicts, not failures. */
struct probe_analysis *probe_analyse(const struct probe_meas *m, const struct probe_thresholds *t,
                                     struct probe_err *err);
/* Frees and sets *a to NULL; safe on NULL and twice. */
void probe_analysis_destroy(struct probe_analysis **a);
/* 0 when clean, PROBE_EXIT_FLAGGED when a flag fired. */
int probe_analysis_exit_status(const struct probe_analysis *a);
const struct probe_group_stat *probe_analysis_group(const struct probe_analysis *a, int n);

/* probe_verdict.c: appends a verdict (reason may be NULL); -1 when out of memory. For the probe_* analysis modules. */
int probe_verdict_add(struct probe_analysis *a, enum probe_sev sev, const char *kind, const char *reason,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
const char *probe_verdict_sev_name(enum probe_sev sev);

#endif
