/* probe_thresholds: the limits that make `plaunch probe` flag a finding, read from conf/probe.ini (inih). */
#ifndef PLAUNCH_PROBE_THRESHOLDS_H
#define PLAUNCH_PROBE_THRESHOLDS_H

#include "launcher/probe/measure/probe_meas.h"

#define PROBE_MAX_EFF_KEYS 32

struct probe_thresholds {
    size_t neff;
    int eff_n[PROBE_MAX_EFF_KEYS];     /* group sizes, ascending */
    double eff_min[PROBE_MAX_EFF_KEYS]; /* minimum scaling efficiency from that size up to the next key */
    double busbw_max_drop;             /* flag when busbw(N) < (1 - this) * busbw(smallest multi-GPU N) */
    double pair_slow_fraction;         /* flag a pair slower than this fraction of the median pair */
};

/* 0.90 at 2 GPUs, 0.80 at 4, 0.75 at 8 and more; busbw drop 0.10; slow pair 0.70. */
void probe_thresholds_default(struct probe_thresholds *t);
/* Overlays the file's keys on *t (call probe_thresholds_default first). Unknown sections or keys and bad
 * values are errors naming FILE:LINE; -1 with err set, *t unchanged. */
int probe_thresholds_load(const char *path, struct probe_thresholds *t, struct probe_err *err);
/* The efficiency floor for a group of n GPUs: the largest key <= n; NAN below the smallest key (n = 1). */
double probe_threshold_for(const struct probe_thresholds *t, int n);

#endif
