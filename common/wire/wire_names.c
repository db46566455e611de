/* wire_names: the message-type names and the error formatter that the rest of the wire module builds on. */
#include "common/wire/wire_priv.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const s_type_names[] = {
    [WIRE_NONE] = "NONE",
    [WIRE_HELLO] = "HELLO",
    [WIRE_JOIN] = "JOIN",
    [WIRE_ASSIGN] = "ASSIGN",
    [WIRE_REFUSE] = "REFUSE",
    [WIRE_HEARTBEAT] = "HEARTBEAT",
    [WIRE_WORKER_EXIT] = "WORKER_EXIT",
    [WIRE_STOP] = "STOP",
    [WIRE_NCCL_ID_PUT] = "NCCL_ID_PUT",
    [WIRE_NCCL_ID_GET] = "NCCL_ID_GET",
    [WIRE_NCCL_ID] = "NCCL_ID",
    [WIRE_BARRIER] = "BARRIER",
    [WIRE_BARRIER_DONE] = "BARRIER_DONE",
    [WIRE_REPORT] = "REPORT",
    [WIRE_BYE] = "BYE",
    [WIRE_RELAY_START] = "RELAY_START",
    [WIRE_RELAY_READY] = "RELAY_READY",
    [WIRE_REDIRECT] = "REDIRECT",
    [WIRE_RELAYED] = "RELAYED",
    [WIRE_STATUS_REQUEST] = "STATUS_REQUEST",
    [WIRE_STATUS_ANSWER] = "STATUS_ANSWER",
};

static const char *const s_report_names[] = {
    [WIRE_R_NONE] = "NONE",
    [WIRE_R_PROGRESS] = "PROGRESS",
    [WIRE_R_STACKS_REQUEST] = "STACKS_REQUEST",
    [WIRE_R_STACKS] = "STACKS",
    [WIRE_R_STACKS_DONE] = "STACKS_DONE",
    [WIRE_R_HEALTH] = "HEALTH",
    [WIRE_R_HEALTH_BLOCK] = "HEALTH_BLOCK",
    [WIRE_R_SUMMARY] = "SUMMARY",
    [WIRE_R_NODE_STATE] = "NODE_STATE",
    [WIRE_R_STANDBY] = "STANDBY",
};

int wire_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *wire_type_name(wire_type_t type)
{
    if ((unsigned)type < sizeof s_type_names / sizeof s_type_names[0] && s_type_names[type])
        return s_type_names[type];
    return "UNKNOWN";
}

const char *wire_report_name(wire_report_t kind)
{
    if ((unsigned)kind < sizeof s_report_names / sizeof s_report_names[0] && s_report_names[kind])
        return s_report_names[kind];
    return "UNKNOWN";
}
