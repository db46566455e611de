/* probe_err: the error record every probe function that can fail fills. */
#include "launcher/probe/measure/probe_err.h"

#include <stdarg.h>
#include <stdio.h>

void probe_err_set(struct probe_err *err, const char *fmt, ...)
{
    if (err == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}
