/* mon_csv: monitor.NODE.csv, a row per rank per sample: the header, a row written from a sample, a row read back
 * (plaunch report). Columns, units and empty-means-unknown are documented in docs/monitor.md; the first column
 * names the format version so a reader refuses what it does not know. */
#ifndef PLAUNCH_MON_CSV_H
#define PLAUNCH_MON_CSV_H

#include <stddef.h>

#include "launcher/monitor/sampling/mon_sample.h"

#define MON_CSV_LINE_MAX 1024
/* monitor.NODE.csv is renamed to monitor.NODE.csv.1 (replacing the older one) when it reaches this size (the
 * agent, agent_mon.c): at most twice this on disk per node, the recent past always in full. */
#define MON_CSV_ROTATE (64ll << 20)

/* The header line (with its newline): v1_time_unix_ms,node, then mon_sample's fields in their order (rank, ...,
 * host_avail_frac; gpu_util as gpu_util_pct). */
const char *mon_csv_header(void);
/* One row for s on node (with its newline) into buf; its length, or -1 when it does not fit, or when node is empty or
 * node, gpu or pci hold a comma, a quote or a control character (refused, never quoted). Numbers: "%.7g" in the C
 * locale, whole numbers as such; an unknown value (NAN, -1) is an empty field. */
int mon_csv_format(const struct mon_sample *s, const char *node, char *buf, size_t cap);
/* Parses one row (without or with its newline) into s and node (MON_NODE_MAX); 0, or -1 with a message naming
 * the column. The header line is not a row (-1, "header"): callers check mon_csv_is_header first. */
int mon_csv_parse(const char *line, struct mon_sample *s, char *node, char *err, size_t errlen);
int mon_csv_is_header(const char *line);

#endif
