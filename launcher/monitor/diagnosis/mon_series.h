/* mon_series: one rank's samples in memory, bounded: past MON_SERIES_MAX points, neighbouring pairs are merged (the
 * spacing doubles), so a job of any length costs the same memory and still spans its whole run. */
#ifndef PLAUNCH_MON_SERIES_H
#define PLAUNCH_MON_SERIES_H

#include "launcher/monitor/sampling/mon_sample.h"

#define MON_SERIES_MAX 1024

/* What a merged point's values would hide, counted over the samples merged into it: the shares (idle, throttled)
 * and events (Xid) mon_diag judges stay exact however long the job ran, and the memory peak survives the means. */
struct mon_point {
    int samples;                   /* samples merged into the point */
    int util_known, util_idle;     /* with gpu_util known; of them at or below the series' idle_util */
    int thr_known;                 /* with the throttle reasons known; of them, with a reason of a class active: */
    int thr_thermal;               /*   SW or HW thermal slowdown */
    int thr_power;                 /*   SW power cap or HW power brake */
    int thr_hw;                    /*   HW slowdown that is neither thermal nor power brake */
    int xids;                      /* that saw an Xid event */
    double gmem_peak_mib;          /* the most device memory used (else the rank's own) in any of them; NAN unknown */
};

struct mon_series {
    int rank;
    char node[MON_NODE_MAX];
    char gpu[MON_GPU_MAX], pci[MON_PCI_MAX]; /* the latest non-empty ones the samples gave */
    int n;                      /* points held */
    int merged;                 /* samples per point (a power of two) */
    int pending;                /* samples waiting in acc to make the next point */
    struct mon_sample acc;      /* their running merge */
    struct mon_point acc_pt;    /* and their counts */
    double idle_util;           /* gpu_util at or below this % counts as idle in the points' counts (mon_series_init
                                 * sets 5, mon_thresh's default; set the thresholds' idle_util before the first add) */
    struct mon_sample s[MON_SERIES_MAX];
    struct mon_point pt[MON_SERIES_MAX]; /* s[i]'s counts */
};

/* An empty series of rank on node. */
void mon_series_init(struct mon_series *ser, int rank, const char *node);
/* Adds one sample (in time order). Merging rules, for the samples of a point and for two points merged:
 *   t_ms                 the first sample's (a point covers [t_ms, the next point's t_ms))
 *   ids, gpu, pci        the latest
 *   gauges               averaged (utilisation, idle share, memory, clocks, power, PCIe, RSS, CPU), weighted by
 *                        samples; an unknown value is left out of the mean (all unknown: unknown)
 *   gpu_idle_ms, temp_c  the worst (max); host_avail_frac the worst (min); threads, procs the max
 *   throttle             the reasons of every sample (OR); the share of each class is in mon_point
 *   ECC totals           the latest known (they are counters); xid the latest event (0 none), their count in
 *                        mon_point
 * Points never mix generations of the latest one: a sample of a new generation closes the pending point, and when
 * the array is full, pairs are merged only within a generation, or across earlier generations. */
void mon_series_add(struct mon_series *ser, const struct mon_sample *s);
/* Points to read: n, plus the pending one while pending > 0. */
int mon_series_len(const struct mon_series *ser);
/* Point i (0 <= i < mon_series_len) and its counts (when pt is not NULL); i == n is the pending one. */
const struct mon_sample *mon_series_get(const struct mon_series *ser, int i, const struct mon_point **pt);

#endif
