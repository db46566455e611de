/* probe_verdict: the findings list of a probe analysis: appending a verdict, naming a severity. The bottom floor
 * of the analysis: probe_analysis.c and probe_preflight.c both add to it, it calls neither. */
#include "launcher/probe/analysis/probe_analysis.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *probe_verdict_sev_name(enum probe_sev sev)
{
    return sev == PROBE_SEV_FLAG ? "FLAG" : sev == PROBE_SEV_NOTE ? "note" : "ok";
}

int probe_verdict_add(struct probe_analysis *a, enum probe_sev sev, const char *kind, const char *reason,
                       const char *fmt, ...)
{
    if (a->nverdicts == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        struct probe_verdict *v = realloc(a->verdicts, cap * sizeof *v);
        if (v == NULL)
            return -1;
        a->verdicts = v;
        a->cap = cap;
    }
    struct probe_verdict *v = &a->verdicts[a->nverdicts++];
    v->sev = sev;
    v->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->text, sizeof v->text, fmt, ap);
    va_end(ap);
    snprintf(v->reason, sizeof v->reason, "%s", reason ? reason : "");
    a->nflags += sev == PROBE_SEV_FLAG;
    return 0;
}
