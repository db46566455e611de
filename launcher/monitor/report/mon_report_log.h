/* mon_report_log: what a job's plaunch logs and goodput ledger say about its end, for plaunch report: the root-cause block ("plaunch:
 * ===== job ID failed: root cause =====" and its indented lines) and the Health block ("plaunch: ===== health ..."
 * or the one line "plaunch: health: ..."), from LOG_DIR/plaunch.log or plaunch.NODE.log. The logs hold what programs
 * wrote (a worker's last lines), so the text is cleaned for terminals, HTML and JSON. */
#ifndef PLAUNCH_MON_REPORT_LOG_H
#define PLAUNCH_MON_REPORT_LOG_H

#include <stddef.h>

#include "launcher/goodput/goodput.h"

#define MON_REPORT_LOG_BLOCK (16u << 10) /* a block's text; longer ones are cut with a note */
#define MON_REPORT_LOG_LINE 4096         /* a log line; longer ones are cut */
#define MON_REPORT_LOG_TAIL (16ll << 20) /* of one log, the end read (its blocks are written last) */
#define MON_REPORT_LOG_TOTAL (256ll << 20) /* of all the logs: the others are left out, with a note */
#define MON_REPORT_LOG_NOTES 4
#define MON_REPORT_LOG_NOTE_LEN 400

struct mon_report_log {
    char *root_cause, *health;    /* malloc'ed, escaped (esc_term_dup, ESC_LINES); NULL: none */
    gp_t *goodput;                /* LOG_DIR/goodput.jsonl read back (launcher/goodput/); NULL: none */
    char file[80];                /* the log the root cause came from */
    char notes[MON_REPORT_LOG_NOTES][MON_REPORT_LOG_NOTE_LEN]; /* logs refused or unreadable */
    int nnotes, notes_dropped;
};

/* Reads the plaunch logs of the directory dfd (named dir in the notes) into lg (zeroed first): the last blocks of
 * the first log (plaunch.log, then plaunch.NODE.log by name) that has one. Only the bytes a log held when it was
 * opened are read; a log that is not a regular file (a link, a FIFO) is refused with a note. The goodput ledger
 * (goodput.jsonl, at most GP_LEDGER_MAX bytes, a regular file) is read back as the goodput model. */
void mon_report_log_read(int dfd, const char *dir, struct mon_report_log *lg);
/* Frees lg's blocks; safe twice. */
void mon_report_log_free(struct mon_report_log *lg);

#endif
