/* lograte: messages that can repeat without bound, logged at most once per interval with a count of the rest. */
#include "common/lograte.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/loop.h"

void lograte_init(struct lograte *r, unsigned seconds)
{
    memset(r, 0, sizeof *r);
    r->interval_ns = (uint64_t)seconds * 1000000000u;
}

static void s_summary(struct lograte *r, enum log_level level, uint64_t now)
{
    if (r->left_out == 0)
        return;
    log_msg(level, "... and %lu more like it in the last %.1f s, the last: %s", r->left_out,
            (double)(now - r->last_ns) / 1e9, r->last);
    r->left_out = 0;
}

void lograte_msg(struct lograte *r, enum log_level level, const char *fmt, ...)
{
    uint64_t now = loop_now_ns();
    va_list ap;
    va_start(ap, fmt);
    if (r->last_ns && now - r->last_ns < r->interval_ns) {
        vsnprintf(r->last, sizeof r->last, fmt, ap);
        r->left_out++;
    } else {
        s_summary(r, level, now);
        log_vmsg(level, fmt, ap);
        r->last_ns = now;
    }
    va_end(ap);
}

void lograte_flush(struct lograte *r, enum log_level level)
{
    s_summary(r, level, loop_now_ns());
    r->last_ns = 0;
}
