/* probe_preflight: verdicts on the GPUs and links before any bandwidth: versions, P2P, slow pairs, sums. */
#ifndef PLAUNCH_PROBE_PREFLIGHT_H
#define PLAUNCH_PROBE_PREFLIGHT_H

#include "launcher/probe/analysis/probe_analysis.h"

/* Appends the preflight, pairwise and verification verdicts to a; -1 when out of memory. */
int probe_preflight_check(const struct probe_meas *m, const struct probe_thresholds *t, struct probe_analysis *a);

/* Writes into buf the link problems among ranks[0..n) that involve at least one rank outside base[0..nbase)
 * ("no P2P between ranks 2 and 5 on host a; ..."); buf is "" when the data shows none. */
void probe_preflight_links(const struct probe_meas *m, const struct probe_thresholds *t, const int *ranks, int n,
                           const int *base, int nbase, char *buf, size_t len);

/* The median of the measured pairs of one kind (intra-node when inter == 0); NAN when none. */
double probe_preflight_pair_median(const struct probe_meas *m, int inter);

#endif
