/* mon_report: plaunch report's reading of a job's log directory: every node's monitor.NODE.csv (its rotated .1 part
 * first) into one bounded series per rank, judged as the job would be (mon_diag), with the job's root cause and
 * Health block from its plaunch logs (mon_report_log.h). Bounded against hostile files: see the limits below. */
#ifndef PLAUNCH_MON_REPORT_H
#define PLAUNCH_MON_REPORT_H

#include "launcher/monitor/sampling/mon_csv.h"

#include <limits.h>
#include <stdint.h>

#include "launcher/goodput/goodput.h"
#include "launcher/monitor/diagnosis/mon_diag.h"
#include "launcher/monitor/diagnosis/mon_series.h"
#include "launcher/monitor/diagnosis/mon_thresh.h"

#define MON_REPORT_FILES_MAX 8192 /* monitor files in one log directory (two per node) */
#define MON_REPORT_NODES_MAX 4096 /* distinct node names in them */
#define MON_REPORT_RANKS_MAX 4096 /* ranks in all: each holds a mon_series (~350 KiB) */
#define MON_REPORT_NOTES 12       /* warnings kept (each names its file and line); the others are counted */
#define MON_REPORT_NOTE_LEN 600
#define MON_REPORT_BLOCK_MAX (64u << 10) /* the Health block's text */
/* What a report reads of the monitor files: of one, a little more than the agent lets it grow to before it
 * rotates; of all, 64 such files (a larger file is read that far, the files past the total are left out, each
 * with a warning naming it). */
#define MON_REPORT_FILE_MAX (MON_CSV_ROTATE + (1ll << 20))
#define MON_REPORT_TOTAL_MAX (64 * MON_REPORT_FILE_MAX)

struct mon_report_rank {
    struct mon_series *ser;
    long long rows;               /* rows read for it */
    int64_t t_first, t_last;      /* its first and last row */
    int node;                     /* index into nodes */
};

struct mon_report {
    char dir[PATH_MAX];
    int nfiles;                   /* monitor files matched (read or refused) */
    int nnodes;
    char (*nodes)[MON_NODE_MAX];  /* node names as the rows give them, in the order first seen */
    int *node_ranks;              /* ranks per node */
    int nranks;
    struct mon_report_rank *ranks; /* in rank order after mon_report_read */
    long long rows;               /* rows read in all */
    long long partial;            /* files whose last line was cut (a running job): ignored */
    int errors;                   /* files and lines refused (warnings in notes) */
    int moved;                    /* series left out: a rank that ran on another node in a later generation */
    int64_t t_first, t_last;      /* the job's first and last row, Unix ms */
    char notes[MON_REPORT_NOTES][MON_REPORT_NOTE_LEN];
    int nnotes, notes_dropped;
    /* from the plaunch logs (NULL: none); cleaned of control characters and invalid UTF-8 */
    char *root_cause, *health_logged;
    char log_file[80];            /* the log the root cause came from */
    gp_t *goodput;                /* the goodput ledger read back (NULL: none); its Goodput block is shown */
    /* mon_report_judge */
    struct mon_rank_summary *sum; /* nranks, in rank order */
    struct mon_finding *f;
    int nf;
    char *block;                  /* the Health block (mon_diag_block) */
};

/* Reads dir's monitor files (monitor.NODE.csv.1, then monitor.NODE.csv, NODE in [A-Za-z0-9._-]) into r; each series
 * counts idle samples at th->idle_util. A file that is not a regular file (a symlink, FIFO, device), a line longer
 * than MON_CSV_LINE_MAX, a row that does not parse and a rank past the limits are refused with a warning in
 * r->notes naming file and line (r->errors counts them) and the rest is read; a partial last line is ignored. Only
 * the bytes a file held when it was opened are read, so a growing file never keeps this from ending.
 * 0; -2 when dir cannot be opened or holds no monitor file (err says so); -1 when out of memory (err). */
int mon_report_read(const char *dir, const struct mon_thresh *th, struct mon_report *r, char *err, size_t errlen);
/* Summaries, findings and the Health block of what was read; 0, or -1 when out of memory. */
int mon_report_judge(struct mon_report *r, const struct mon_thresh *th);
/* Adds a warning to r->notes (counted past MON_REPORT_NOTES) and counts an error. */
void mon_report_note(struct mon_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees what r holds; safe twice. */
void mon_report_free(struct mon_report *r);

#endif
