/* probe_html: the probe's report as one self-contained HTML page (inline CSS and SVG, no external resources). */
#ifndef PLAUNCH_PROBE_HTML_H
#define PLAUNCH_PROBE_HTML_H

#include "launcher/probe/analysis/probe_analysis.h"

#include <stdio.h>

/* Verdicts (flags first, each with its reason), the two charts, scaling, preflight, P2P and pairwise tables. */
void probe_html_page(FILE *out, const struct probe_meas *m, const struct probe_analysis *a);
/* Writes the page to path ("-" = stdout) through a temporary file and rename; -1 with err. */
int probe_html_write(const char *path, const struct probe_meas *m, const struct probe_analysis *a,
                     struct probe_err *err);

#endif
