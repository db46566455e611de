/* mon_report_out: plaunch report's terminal text (a per-rank table, the Health block, the root cause) and its JSON
 * document, from a read and judged mon_report. */
#ifndef PLAUNCH_MON_REPORT_OUT_H
#define PLAUNCH_MON_REPORT_OUT_H

#include <stdio.h>

#include "launcher/monitor/report/mon_report.h"

/* The report's first line ("LOGDIR: 8 ranks on 2 nodes, 15.0 min of samples (FROM to TO), ...") into buf. */
void mon_report_out_headline(const struct mon_report *r, char *buf, size_t cap);
/* The number of nodes that still hold a rank. */
int mon_report_out_nodes(const struct mon_report *r);
/* A value for a table cell: "-" when unknown (NAN), else with decimals. */
const char *mon_report_out_num(double v, int decimals, char *buf, size_t cap);
/* The headline, the table, the Health block and the root cause. */
void mon_report_out_text(FILE *out, const struct mon_report *r);
/* The JSON document, malloc'ed (NULL when out of memory):
 *   {"version": 1,
 *    "job": {"logdir": "log", "nodes": 2, "node_names": ["node-a", ...], "ranks": 8,
 *            "span": {"first_unix_ms": ..., "last_unix_ms": ..., "seconds": 895.0},   (nulls when no row)
 *            "rows": 1440, "files": 2, "ended": true (a root cause or Health block in the logs),
 *            "partial_files": 0 (a last line still being written), "moved_series": 0},
 *    "ranks": [mon_json_encode's summary objects, in rank order: {"version":1,"ranks":...} of this document decodes
 *              with mon_json_decode],
 *    "findings": [{"kind": "input-bound" (mon_diag_kind_name), "rank": 1, "node": "node-a", "gpu": "1",
 *                  "text": "rank 1 (GPU 1 on node-a): ..."}, ...],
 *    "health": the Health block as the terminal shows it,
 *    "health_logged": the job's own Health block from its plaunch log, or null,
 *    "root_cause": the root-cause block, or null; "root_cause_log": the log it came from, or null,
 *    "warnings": ["log/monitor.x.csv is a FIFO (named pipe), not a regular file: refused", ...],
 *    "warnings_dropped": 0}
 * Strings from the files are escaped to valid UTF-8 without control characters (common/esc). */
char *mon_report_out_json(const struct mon_report *r);

#endif
