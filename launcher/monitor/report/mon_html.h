/* mon_html: plaunch report's page: one self-contained HTML file (inline CSS and SVG; no script, nothing loaded from
 * anywhere) with the findings on top, the root cause, the time-series charts (mon_chart.h) and the per-rank table.
 * Every string that came from the files (node names, GPU ids, the log's text) is escaped. */
#ifndef PLAUNCH_MON_HTML_H
#define PLAUNCH_MON_HTML_H

#include <stdio.h>

#include "launcher/monitor/report/mon_report.h"

/* Writes the page of a read and judged report; 0, or -1 when out of memory (the page is incomplete). */
int mon_html_page(FILE *out, const struct mon_report *r);

#endif
