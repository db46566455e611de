/* cmd_probe: `plaunch probe`, the AllReduce bandwidth sweep and scaling-efficiency report (docs/probe.md). */
#ifndef PLAUNCH_CMD_PROBE_H
#define PLAUNCH_CMD_PROBE_H

/* Exit statuses of `plaunch probe` (also in docs/probe.md). */
#define PROBE_EXIT_CLEAN 0
#define PROBE_EXIT_NOT_RUN 1 /* no GPU, no worker, or the worker failed: nothing was measured */
#define PROBE_EXIT_USAGE 2   /* bad option, unreadable or invalid input/threshold file, unwritable output */
/* PROBE_EXIT_FLAGGED (3, probe_analysis.h): measured or re-analysed, and at least one flag fired */

/* The subcommand's entry point for the launcher's dispatcher: argv[0] is "probe"; returns the exit status.
 * Uses getopt_long from a fresh state (optind = 0), so the caller may have parsed its own options before. */
int cmd_probe(int argc, char **argv);

#endif
