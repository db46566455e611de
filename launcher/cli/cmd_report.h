/* cmd_report: the `plaunch report` subcommand: a job's health from its log directory (monitor files, plaunch logs)
 * as a terminal table, JSON and a self-contained HTML page. */
#ifndef PLAUNCH_CMD_REPORT_H
#define PLAUNCH_CMD_REPORT_H

/* argv[0] is "report". Returns 0; 1 when a file or line was refused or unreadable (the report is still made from the
 * rest) or memory ran out; 2 on bad usage, an unreadable thresholds file, an output that cannot be written, or no
 * monitor file in LOGDIR. */
int cmd_report(int argc, char **argv);

#endif
