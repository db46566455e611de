/* summary: the root-cause block printed when a job fails: who failed first, how, when, and its last lines. */
#ifndef PLAUNCH_SUMMARY_H
#define PLAUNCH_SUMMARY_H

#include "job.h"

/* Prints the block to stderr and plaunch.log. */
void summary_print(const struct job *job, const struct failure *f, int exit_code);

#endif
