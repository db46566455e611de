/* mon_series: one rank's samples in memory, bounded: past MON_SERIES_MAX points, neighbouring pairs are merged (the
 * spacing doubles), so a job of any length costs the same memory and still spans its whole run. */
#ifndef PLAUNCH_MON_SERIES_H
#define PLAUNCH_MON_SERIES_H

#include "mon_sample.h"

#define MON_SERIES_MAX 1024

struct mon_series {
    int rank;
    char node[MON_NODE_MAX];
    char gpu[MON_GPU_MAX], pci[MON_PCI_MAX];
    int n;                      /* points held */
    int merged;                 /* samples per point (a power of two) */
    int pending;                /* samples waiting in acc to make the next point */
    struct mon_sample acc;      /* their running merge */
    struct mon_sample s[MON_SERIES_MAX];
};

/* An empty series of rank on node. */
void mon_series_init(struct mon_series *ser, int rank, const char *node);
/* Adds one sample (in time order). Counters (ECC, Xid) keep the latest, gauges are averaged, idle runs and
 * throttle bits keep the worst. */
void mon_series_add(struct mon_series *ser, const struct mon_sample *s);

#endif
