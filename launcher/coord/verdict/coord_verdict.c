/* coord_verdict: the job's exit status, root cause and restart budget, by the one rule in coord_verdict.h. */
#include "launcher/coord/verdict/coord_verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

void coord_verdict_init(struct coord_verdict *v, int max_restarts)
{
    memset(v, 0, sizeof *v);
    v->max_restarts = max_restarts;
    v->restarts_left = max_restarts;
}

int coord_verdict_worker_status(uint32_t code, uint32_t signal)
{
    return signal ? 128 + (int)signal : (int)code;
}

int coord_verdict_restartable(uint32_t code, uint32_t signal)
{
    return !(signal == 0 && (code == 126 || code == 127));
}

int coord_verdict_restart(struct coord_verdict *v, int want)
{
    if (want && v->restarts_left > 0) {
        v->restarts_left--;
        return v->max_restarts - v->restarts_left;
    }
    if (want && v->max_restarts > 0)
        log_error("restart budget exhausted (%d restart%s)", v->max_restarts, v->max_restarts == 1 ? "" : "s");
    return 0;
}

void coord_verdict_no_progress(struct coord_verdict *v, int k)
{
    v->max_no_progress = k;
}

int coord_verdict_failed(struct coord_verdict *v, const char *job_id, const char *node, int progressed,
                         const char *detail, const char *what)
{
    int bits = node[0] && strcmp(node, v->node) == 0 ? COORD_VERDICT_NODE_FAULT : 0;
    snprintf(v->node, sizeof v->node, "%s", node);
    if (progressed) {
        v->no_progress = 0;
        return bits;
    }
    if (v->max_no_progress > 0 && v->no_progress >= v->max_no_progress && v->restarts_left > 0) {
        log_error("%d restart%s in a row made no progress (--max-no-progress-restarts %d): the job ends",
                  v->no_progress, v->no_progress == 1 ? "" : "s", v->max_no_progress);
        coord_verdict_fail(v, COORD_VERDICT_JUDGED, COORD_VERDICT_NO_PROGRESS,
                           "plaunch: ===== job %s failed: restarts made no progress =====\n"
                           "  %d restart%s in a row (--max-no-progress-restarts %d) failed again before any "
                           "progress; the last: %s\n"
                           "  the first failure of the series:\n%s",
                           job_id, v->no_progress, v->no_progress == 1 ? "" : "s", v->max_no_progress, what,
                           v->first);
        return bits | COORD_VERDICT_STOPPED;
    }
    if (v->no_progress++ == 0 && snprintf(v->first, sizeof v->first, "%s", detail) >= (int)sizeof v->first)
        v->first[sizeof v->first - 2] = '\n'; /* cut: the block still ends a line */
    return bits;
}

int coord_verdict_used(const struct coord_verdict *v)
{
    return v->max_restarts - v->restarts_left;
}

void coord_verdict_resume(struct coord_verdict *v, int used)
{
    used = used < 0 ? 0 : used > v->max_restarts ? v->max_restarts : used;
    v->restarts_left = v->max_restarts - used;
}

int coord_verdict_fail(struct coord_verdict *v, enum coord_verdict_rank rank, int status, const char *fmt, ...)
{
    if (rank <= v->rank)
        return 0; /* the first of equal ranks stands; a lower one never replaces a higher */
    v->rank = rank;
    v->status = status;
    v->cause[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(v->cause, sizeof v->cause, fmt, ap);
        va_end(ap);
        if (n >= (int)sizeof v->cause) /* cut: the block still ends a line */
            v->cause[sizeof v->cause - 2] = '\n';
    }
    return 1;
}

void coord_verdict_hold(struct coord_verdict *v, int on)
{
    v->held = on;
}

int coord_verdict_held(const struct coord_verdict *v)
{
    return v->held;
}

int coord_verdict_status(const struct coord_verdict *v)
{
    return v->rank != COORD_VERDICT_NONE ? v->status : 0;
}

const char *coord_verdict_cause(const struct coord_verdict *v)
{
    return v->cause;
}

enum coord_verdict_rank coord_verdict_rank(const struct coord_verdict *v)
{
    return v->rank;
}
