/* mon_chart: plaunch report's time-series charts as inline SVG: one chart per metric against the time since the
 * job's first sample, a line per rank up to MON_CHART_LINES ranks, past that the ranks' min-max band and median
 * with the lines of the ranks the findings name; every line at most MON_CHART_POINTS points. */
#ifndef PLAUNCH_MON_CHART_H
#define PLAUNCH_MON_CHART_H

#include <stdio.h>

#include "launcher/monitor/report/mon_report.h"

#define MON_CHART_LINES 8   /* ranks drawn one line each; more are drawn as a band */
#define MON_CHART_POINTS 600

enum mon_chart_metric {
    MON_CHART_UTIL,  /* GPU busy % */
    MON_CHART_GMEM,  /* GPU memory MiB (the rank's processes', else the device's), with the device total */
    MON_CHART_GMEM_CHANGE, /* the same less the rank's first value: growth at a scale where it shows */
    MON_CHART_RSS,   /* host RSS MiB of the rank's processes (the axis fits the values: growth shows) */
    MON_CHART_CPU,   /* host CPU % of one core */
    MON_CHART_TEMP,  /* GPU temperature, degrees C */
    MON_CHART_POWER, /* GPU power W, with the limit */
    MON_CHART_N
};

/* The metric's id ("util", "gmem", ...: the chart is <svg id="chart-ID">) and its title. */
const char *mon_chart_id(enum mon_chart_metric m);
const char *mon_chart_title(enum mon_chart_metric m);
/* Draws metric m of r's ranks; named[0..nnamed) are ranks to show by name (the findings'). 0 drawn; 1 when no rank
 * has a value of m (nothing written); -1 when out of memory (nothing written). */
int mon_chart_draw(FILE *out, const struct mon_report *r, enum mon_chart_metric m, const int *named, int nnamed);
/* An axis step: the smallest of 1, 2, 2.5, 5 times a power of ten that is >= v (1 when v is not positive); the
 * probe's charts use it too. */
double mon_chart_nice(double v);

#endif
