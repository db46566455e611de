/* probe_table: one sweep as nccl-tests prints it (*_perf's columns, units and number format, Avg bus bandwidth). */
#ifndef PLAUNCH_PROBE_TABLE_H
#define PLAUNCH_PROBE_TABLE_H

#include "launcher/probe/measure/probe_meas.h"

#include <stdio.h>

/* "AllReduce (all_reduce_perf), N=8, first-n, ranks 0-7, 1 node": what one sweep measured. */
void probe_table_title(const struct probe_sweep *s, char *buf, size_t len);
/* nccl-tests' redop and root columns for op: "sum" / "none", -1 / 0 (broadcast's root). */
const char *probe_table_redop(enum probe_op op);
int probe_table_root(enum probe_op op);
/* The elements per call: the recorded count, else (schema 1) the layout's. */
uint64_t probe_table_count(const struct probe_meas *m, const struct probe_sweep *s, const struct probe_result *r);

/* The sweep in *_perf's text format: "#"-prefixed title, timing and headers, one line per size with the
 * out-of-place and in-place figures ("-" for a file without in-place figures), then "# Avg bus bandwidth". */
void probe_table_sweep(FILE *out, const struct probe_meas *m, const struct probe_sweep *s);

#endif
