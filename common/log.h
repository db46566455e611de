/* log: the launcher's own event log (plaunch.log) and its messages to the terminal. */
#ifndef PLAUNCH_LOG_H
#define PLAUNCH_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Opens DIR/NAME as the event log (emptied first, then appended; see ownfile.h for what is refused); until then
 * events go to stderr only. Returns 0, or -1 with a message in err. */
int log_open(const char *dir, const char *name, int overwrite, char *err, size_t errlen);
/* Finishes the console (console_finish: a stalled reader gets a deadline) and closes the file. */
void log_close(void);
/* Bytes of the event log lost to write errors (a full file system): a failure is reported on stderr at once. */
uint64_t log_lost_bytes(void);
/* Events at or above this level are echoed to stderr (default LOG_WARN). */
void log_set_stderr_level(enum log_level level);
/* Host name / node label printed in every file line. */
void log_set_origin(const char *origin);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap);
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* Write a block of text verbatim to the log file (and to stderr when to_stderr). Console output never blocks
 * (console.h). */
void log_block(const char *text, int to_stderr);

#endif
