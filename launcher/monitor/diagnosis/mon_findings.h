/* mon_findings: the findings' sentences (who, the evidence in numbers, a next step) from one rank's summary; only
 * mon_diag.c calls it, after it has decided what needs the other ranks (stragglers, one host finding per node). */
#ifndef PLAUNCH_MON_FINDINGS_H
#define PLAUNCH_MON_FINDINGS_H

#include "launcher/monitor/diagnosis/mon_diag.h"

/* A straggler: the rank's value (GPU busy %, or host CPU % of a core when cpu) against its peers' median. */
struct mon_straggle {
    int cpu;
    double value, median;
    int peers;
};

/* Appends rank r's findings, kinds in enum order, at most max; the count. judged 0: less than min_steady_s of
 * steady state, so only its events (ECC, Xid); st: it is a straggler (NULL: not); host_full: it carries its node's
 * finding of host memory near full. */
int mon_findings_rank(const struct mon_rank_summary *r, const struct mon_thresh *th, int judged, int host_full,
                      const struct mon_straggle *st, struct mon_finding *out, int max);
/* "12 s", "12.3 min", "2.5 h" into buf. */
const char *mon_findings_dur(double s, char *buf, size_t cap);

#endif
