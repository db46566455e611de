/* errfile: TORCHELASTIC_ERROR_FILE, one per rank in the log directory: its name, its removal before each
 * generation, and the lines the root-cause block quotes from it (torch's @record writes it on an exception). */
#ifndef PLAUNCH_ERRFILE_H
#define PLAUNCH_ERRFILE_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/job/job.h"

#define ERRFILE_MAX_LINES 10  /* quoted: up to 3 lines of the message, then the traceback's last lines */
#define ERRFILE_LINE      200 /* bytes per quoted line, with its terminator */

/* LOG_DIR/error.<rank>.json into buf. */
void errfile_path(const char *log_dir, int rank, char *buf, size_t cap);
/* Removes every worker's error file of this node (a link is removed, never followed), so that a file present
 * after a failure was written by this generation. Warns in the log when one cannot be removed. */
void errfile_clear(const struct job *job);
/* Quotes the error file at path when the worker wrote one after since_unix_ms: the message, then the last
 * lines of the Python traceback, printable, each at most ERRFILE_LINE - 1 bytes. Anything else that stands
 * there (not ours, not a regular file, not torch's JSON) gives one line saying so. Returns the line count
 * (0: no file). */
int errfile_quote(const char *path, uint64_t since_unix_ms, char lines[][ERRFILE_LINE], int max);

#endif
