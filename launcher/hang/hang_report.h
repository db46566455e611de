/* hang_report: a hung job's stacks, as the agents sent them (one JSON document per rank), into the summary of
 * the root-cause block and the text of hang.GENERATION.txt, grouped by identical stack (launcher/hang/). */
#ifndef PLAUNCH_HANG_REPORT_H
#define PLAUNCH_HANG_REPORT_H

#include <stddef.h>

/* stacks[r]: rank r's document (REPORT STACKS) or NULL (no answer); one that names another rank is dropped. odd: the rank the verdict named, -1 none. Writes the lines for
 * the root-cause block into summary and the whole report into text; returns the odd one out (odd when given, else
 * the rank the grouping sets apart), -1 when none stands out. */
int hang_report_text(const char *job_id, unsigned generation, const char *why, const char *const *stacks, int n,
                    int odd, int dropped, char *summary, size_t scap, char *text, size_t tcap);

#endif
