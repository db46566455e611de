/* console: plaunch's stdout and stderr, written without ever blocking the event loop: whole lines go out at once
 * while the reader keeps up, wait in a bounded queue while it lags, and are dropped (counted, and the gap
 * reported) while it does not read at all. The log files, not the console, are the record. */
#ifndef PLAUNCH_CONSOLE_H
#define PLAUNCH_CONSOLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"

#define CONSOLE_QUEUE (256 * 1024) /* bytes waiting per stream before lines are dropped */

/* Hands whole lines (data ends with a newline) to fd 1 or 2: written now, queued, or dropped whole; never blocks.
 * A terminal or pipe is written through a non-blocking descriptor of its own (the descriptor plaunch was given, and
 * shares with the shell, keeps its flags); a regular file is written directly. */
void console_put(int fd, const char *data, size_t len);
/* The status line (issue 29): one line kept at the bottom of an interactive stderr while lines scroll above it. */
#define CONSOLE_STATUS_MAX 480
/* 1 when stderr is a terminal that takes it (isatty, TERM set and not "dumb"): never on a pipe or a file. */
int console_status_able(void);
/* Shows line (plain text the caller made safe for a terminal and fit to its width, no newline) as the status line,
 * replacing the last; NULL or "" removes it. Call only when console_status_able() said so. */
void console_status(const char *line);
/* Where the user finds what was dropped from fd, for the drop notice ("every line is in DIR/workerlog.N"). */
void console_set_hint(int fd, const char *hint);
/* Queued output is finished from this loop when the reader comes back; detach before the loop goes away. */
void console_attach(loop_t *loop);
void console_detach(void);
/* At exit: gives the readers what is queued, waiting while they make progress (giving up after idle_ms without
 * any), then reports dropped lines in the stream itself or, when it cannot take them, on stderr. Writes a summary
 * for plaunch.log into summary (empty when nothing was dropped) and returns the number of lines dropped. The next
 * console_put starts afresh. */
uint64_t console_finish(int idle_ms, char *summary, size_t cap);

#endif
