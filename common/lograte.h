/* lograte: messages that can repeat without bound (refused requests, hostile peers), logged at most once per
 * interval per limiter with the count of those left out, so that a loop in someone else's program cannot fill
 * the log or the terminal. */
#ifndef PLAUNCH_LOGRATE_H
#define PLAUNCH_LOGRATE_H

#include <stdint.h>

#include "common/log.h"

#define LOGRATE_INTERVAL_S 10

struct lograte {
    uint64_t interval_ns;
    uint64_t last_ns;          /* when the last line was written; 0 never */
    unsigned long left_out;    /* messages counted, not written, since then */
    char last[512];            /* the last of them, for the summary */
};

void lograte_init(struct lograte *r, unsigned seconds);
/* Logs the message when the limiter's last line is older than its interval (saying how many were left out
 * since, and the last of them), else counts it. */
void lograte_msg(struct lograte *r, enum log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Logs the count of messages left out, if any (at the end of a phase, so no count is lost). */
void lograte_flush(struct lograte *r, enum log_level level);

#endif
