/* probe_report: the probe's terminal table and its JSON report (the measurements plus the analysis). */
#ifndef PLAUNCH_PROBE_REPORT_H
#define PLAUNCH_PROBE_REPORT_H

#include "common/ownfile.h"
#include "launcher/probe/analysis/probe_analysis.h"

#include <jansson.h>
#include <stdio.h>

/* The human report: preflight, busbw per size and N, scaling per N, one verdict line per finding. */
void probe_report_table(FILE *out, const struct probe_meas *m, const struct probe_analysis *a);

/* The measurement document with algbw/busbw as recomputed and an "analysis" object added; a new reference,
 * NULL when out of memory. `plaunch probe --report` reads it back (it ignores "analysis"). */
json_t *probe_report_json(const struct probe_meas *m, const struct probe_analysis *a,
                          const struct probe_thresholds *t);
/* Writes probe_report_json to path ("-" = stdout) through a temporary file and rename; -1 with err. */
int probe_report_json_write(const char *path, const struct probe_meas *m, const struct probe_analysis *a,
                            const struct probe_thresholds *t, struct probe_err *err);

/* A stream for path: stdout for "-", else a new file under a random temporary name (common/ownfile.h: never a
 * planted link); NULL with err naming the path. */
FILE *probe_report_open(const char *path, struct ownfile_new *n, struct probe_err *err);
/* Renames the file into place (ok 0: the caller's writing failed, nothing is renamed); -1 with err. */
int probe_report_commit(FILE *f, struct ownfile_new *n, int ok, struct probe_err *err);

#endif
