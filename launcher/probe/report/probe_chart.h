/* probe_chart: the inline SVG charts of the probe's HTML page (busbw vs size per N, efficiency vs N). */
#ifndef PLAUNCH_PROBE_CHART_H
#define PLAUNCH_PROBE_CHART_H

#include "launcher/probe/analysis/probe_analysis.h"

#include <stdio.h>

/* <svg id="chart-busbw-OP">: op's busbw against message size (log2 axis), one line per group size N; with one
 * GPU only, N=1's algbw instead (its busbw is 0 by definition, but for Broadcast). Unverified points are drawn
 * hollow red. */
void probe_chart_busbw(FILE *out, const struct probe_meas *m, enum probe_op op);
/* <svg id="chart-efficiency">: efficiency against N (log2 axis) with the ideal line at 1 and a marker at each
 * N's threshold; flagged points red. */
void probe_chart_efficiency(FILE *out, const struct probe_analysis *a);

#endif
