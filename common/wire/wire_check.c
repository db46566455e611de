/* wire_check: the wire table (the bound of every field of every message) and the walk that checks a message's own
 * fields against it; the rules between fields and of whole messages are wire_rules.c's, above it. */
#include "common/wire/wire_priv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* CS_TOKEN: printable ASCII without spaces, for names that end up in logs, environment variables and file names. */
enum charset { CS_ANY, CS_TOKEN };

/* One bound: numbers lie in lo..hi; strings and bytes are lo..hi bytes long; a repeated field has at most
 * max_count entries, each within lo..hi. Enums must be a value the schema names, and >= lo. */
struct rule {
    const ProtobufCMessageDescriptor *msg;
    const char *field;
    int64_t lo;
    uint64_t hi;
    uint32_t max_count;
    enum charset cs;
};

#define ENV &plaunch__envelope__descriptor
#define HELLO &plaunch__hello__descriptor
#define JOIN &plaunch__join__descriptor
#define ASSIGN &plaunch__assign__descriptor
#define REFUSE &plaunch__refuse__descriptor
#define HBEAT &plaunch__heartbeat__descriptor
#define WEXIT &plaunch__worker_exit__descriptor
#define STOP &plaunch__stop__descriptor
#define IDPUT &plaunch__nccl_id_put__descriptor
#define IDGET &plaunch__nccl_id_get__descriptor
#define NCCLID &plaunch__nccl_id__descriptor
#define BARRIER &plaunch__barrier__descriptor
#define BDONE &plaunch__barrier_done__descriptor
#define REPORT &plaunch__report__descriptor
#define BYE &plaunch__bye__descriptor
#define RSTART &plaunch__relay_start__descriptor
#define RREADY &plaunch__relay_ready__descriptor
#define REDIR &plaunch__redirect__descriptor
#define RITEM &plaunch__relay_item__descriptor
#define PRANK &plaunch__progress_rank__descriptor
#define SREQ &plaunch__stacks_request__descriptor
#define STACKS &plaunch__stacks__descriptor
#define SDONE &plaunch__stacks_done__descriptor
#define HEALTH &plaunch__health__descriptor
#define HBLOCK &plaunch__health_block__descriptor
#define SUMMARY &plaunch__summary__descriptor
#define NSTATE &plaunch__node_state__descriptor
#define NRGPU &plaunch__node_rank_gpu__descriptor
#define STANDBY &plaunch__standby__descriptor
#define STREQ &plaunch__status_request__descriptor
#define STANS &plaunch__status_answer__descriptor

/* Every non-message field of wire.proto has a row; a field without one fails every check (and the unit tests). */
static const struct rule s_rules[] = {
    { ENV, "protocol_version", 1, UINT32_MAX, 0, CS_ANY },
    { ENV, "job_id", 1, WIRE_MAX_JOB_ID, 0, CS_TOKEN },
    { ENV, "generation", 0, UINT32_MAX, 0, CS_ANY },
    { HELLO, "hostname", 1, WIRE_MAX_HOST, 0, CS_TOKEN },
    { HELLO, "plaunch_version", 1, WIRE_MAX_VERSION_STR, 0, CS_TOKEN },
    { JOIN, "hostname", 1, WIRE_MAX_HOST, 0, CS_TOKEN },
    { JOIN, "addr", 1, WIRE_MAX_HOST, 0, CS_TOKEN },
    { JOIN, "pid", 1, INT32_MAX, 0, CS_ANY },
    { JOIN, "nproc", 1, WIRE_MAX_LOCAL, 0, CS_ANY },
    { JOIN, "requested_node_rank", -1, WIRE_MAX_NODES - 1, 0, CS_ANY },
    { JOIN, "gpus", 0, WIRE_MAX_GPUS_STR, 0, CS_TOKEN },
    { JOIN, "plaunch_version", 1, WIRE_MAX_VERSION_STR, 0, CS_TOKEN },
    { JOIN, "worker_ports", 1, 65535, WIRE_MAX_LOCAL, CS_ANY },
    { JOIN, "master_port", 1, 65535, 0, CS_ANY },
    { JOIN, "preflight", 1, WIRE_MAX_TEXT, WIRE_MAX_PREFLIGHT, CS_ANY },
    { JOIN, "relay_endpoint", 0, WIRE_MAX_ENDPOINT, 0, CS_TOKEN },
    { ASSIGN, "node_rank", 0, WIRE_MAX_NODES - 1, 0, CS_ANY },
    { ASSIGN, "nnodes", 1, WIRE_MAX_NODES, 0, CS_ANY },
    { ASSIGN, "first_rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { ASSIGN, "world_size", 1, WIRE_MAX_WORLD, 0, CS_ANY },
    { ASSIGN, "local_world_sizes", 1, WIRE_MAX_LOCAL, WIRE_MAX_TABLE_NODES, CS_ANY },
    { ASSIGN, "master_addr", 1, WIRE_MAX_HOST, 0, CS_TOKEN },
    { ASSIGN, "master_port", 1, 65535, 0, CS_ANY },
    { ASSIGN, "node_addrs", 1, WIRE_MAX_HOST, WIRE_MAX_TABLE_NODES, CS_TOKEN },
    { ASSIGN, "endpoint_ports", 1, 65535, WIRE_MAX_WORLD, CS_ANY },
    { ASSIGN, "restart_count", 0, WIRE_MAX_RESTARTS, 0, CS_ANY },
    { ASSIGN, "max_restarts", 0, WIRE_MAX_RESTARTS, 0, CS_ANY },
    { ASSIGN, "heartbeat_interval_ms", 1, WIRE_MAX_MS, 0, CS_ANY },
    { ASSIGN, "heartbeat_timeout_ms", 1, WIRE_MAX_MS, 0, CS_ANY },
    { ASSIGN, "local_world_size", 1, WIRE_MAX_LOCAL, 0, CS_ANY },
    { ASSIGN, "local_ports", 1, 65535, WIRE_MAX_LOCAL, CS_ANY },
    { REFUSE, "code", 1, INT32_MAX, 0, CS_ANY },
    { REFUSE, "text", 0, WIRE_MAX_TEXT, 0, CS_ANY },
    { REFUSE, "request", 0, WIRE_BYE, 0, CS_ANY },
    { REFUSE, "key", 0, WIRE_MAX_KEY, 0, CS_TOKEN },
    { REFUSE, "rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { HBEAT, "seq", 0, UINT64_MAX, 0, CS_ANY },
    { HBEAT, "mono_ns", 0, UINT64_MAX, 0, CS_ANY },
    { WEXIT, "global_rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { WEXIT, "local_rank", 0, WIRE_MAX_LOCAL - 1, 0, CS_ANY },
    { WEXIT, "pid", 1, INT32_MAX, 0, CS_ANY },
    { WEXIT, "exit_code", 0, 255, 0, CS_ANY },
    { WEXIT, "signal", 0, WIRE_MAX_SIGNAL, 0, CS_ANY },
    { WEXIT, "runtime_ms", 0, UINT64_MAX, 0, CS_ANY },
    { WEXIT, "exit_time_unix_ms", 0, UINT64_MAX, 0, CS_ANY },
    { WEXIT, "log_tail", 0, WIRE_MAX_TEXT, WIRE_MAX_LOG_LINES, CS_ANY },
    { WEXIT, "error_quote", 0, WIRE_MAX_TEXT, WIRE_MAX_LOG_LINES, CS_ANY },
    { WEXIT, "error_file", 0, WIRE_MAX_PATH, 0, CS_ANY },
    { STOP, "reason", 1, INT32_MAX, 0, CS_ANY },
    { STOP, "signal", 0, WIRE_MAX_SIGNAL, 0, CS_ANY },
    { STOP, "grace_s", 0, WIRE_MAX_GRACE_S, 0, CS_ANY },
    { STOP, "text", 0, WIRE_MAX_TEXT, 0, CS_ANY },
    { IDPUT, "key", 1, WIRE_MAX_KEY, 0, CS_TOKEN },
    { IDPUT, "rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { IDPUT, "id", WIRE_NCCL_ID_BYTES, WIRE_NCCL_ID_BYTES, 0, CS_ANY },
    { IDGET, "key", 1, WIRE_MAX_KEY, 0, CS_TOKEN },
    { IDGET, "rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { NCCLID, "key", 1, WIRE_MAX_KEY, 0, CS_TOKEN },
    { NCCLID, "id", WIRE_NCCL_ID_BYTES, WIRE_NCCL_ID_BYTES, 0, CS_ANY },
    { BARRIER, "key", 1, WIRE_MAX_KEY, 0, CS_TOKEN },
    { BARRIER, "rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { BARRIER, "timeout_ms", 0, WIRE_MAX_MS, 0, CS_ANY },
    { BDONE, "key", 1, WIRE_MAX_KEY, 0, CS_TOKEN },
    { BDONE, "status", 1, INT32_MAX, 0, CS_ANY },
    { BDONE, "ranks", 0, WIRE_MAX_WORLD - 1, WIRE_MAX_LOCAL, CS_ANY },
    { PRANK, "rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { PRANK, "step", -1, INT64_MAX, 0, CS_ANY },
    { PRANK, "out_age_ms", 0, WIRE_MAX_AGE_MS, 0, CS_ANY },
    { PRANK, "step_age_ms", -1, WIRE_MAX_AGE_MS, 0, CS_ANY },
    { NSTATE, "started_ago_ms", 0, WIRE_MAX_AGE_MS, 0, CS_ANY },
    { NSTATE, "progress_ago_ms", 0, WIRE_MAX_AGE_MS, 0, CS_ANY },
    { NRGPU, "rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { NRGPU, "util_permille", -1, 1000, 0, CS_ANY },
    { NRGPU, "mem_mib", -1, 1u << 24, 0, CS_ANY },
    { NRGPU, "total_mib", -1, 1u << 24, 0, CS_ANY },
    { STANDBY, "spare", 1, WIRE_MAX_NODES, 0, CS_ANY },
    { STANDBY, "spares", 1, WIRE_MAX_NODES, 0, CS_ANY },
    { STANDBY, "nnodes", 1, WIRE_MAX_NODES, 0, CS_ANY },
    { STANDBY, "swapped_out", 0, 1, 0, CS_ANY },
    { SREQ, "deadline_ms", WIRE_MIN_STACKS_MS, WIRE_MAX_STACKS_MS, 0, CS_ANY },
    { SREQ, "abort", 0, 1, 0, CS_ANY },
    { STACKS, "rank", 0, WIRE_MAX_WORLD - 1, 0, CS_ANY },
    { STACKS, "doc", 1, WIRE_MAX_REPORT, 0, CS_ANY },
    { SDONE, "ranks", 0, WIRE_MAX_LOCAL, 0, CS_ANY },
    { HEALTH, "summaries", 1, WIRE_MAX_REPORT, 0, CS_ANY },
    { HBLOCK, "text", 1, WIRE_MAX_REPORT, 0, CS_ANY },
    { SUMMARY, "exit_status", 1, 255, 0, CS_ANY },
    { SUMMARY, "block", 1, WIRE_MAX_REPORT, 0, CS_ANY },
    { SUMMARY, "headline", 0, WIRE_MAX_TEXT, 0, CS_ANY },
    { BYE, "exit_status", 0, 255, 0, CS_ANY },
    { RSTART, "max_children", 1, WIRE_MAX_RELAY_TO, 0, CS_ANY },
    { RSTART, "heartbeat_interval_ms", 1, WIRE_MAX_MS, 0, CS_ANY },
    { RSTART, "heartbeat_timeout_ms", 1, WIRE_MAX_MS, 0, CS_ANY },
    { RREADY, "endpoint", 0, WIRE_MAX_ENDPOINT, 0, CS_TOKEN },
    { RREADY, "text", 0, WIRE_MAX_TEXT, 0, CS_ANY },
    { REDIR, "endpoint", 1, WIRE_MAX_ENDPOINT, 0, CS_TOKEN },
    { RITEM, "event", 0, INT32_MAX, 0, CS_ANY },
    { RITEM, "from", 0, UINT32_MAX, 0, CS_ANY },
    { RITEM, "to", 1, UINT32_MAX, WIRE_MAX_RELAY_TO, CS_ANY },
    { RITEM, "payload", 0, WIRE_MAX_RELAYED, 0, CS_ANY },
    { RITEM, "watch", 0, 1, 0, CS_ANY },
    { RITEM, "peer_addr", 0, WIRE_MAX_ADDR, 0, CS_TOKEN },
    { RITEM, "peer_name", 0, WIRE_MAX_HOST, 0, CS_ANY },
    { RITEM, "text", 0, WIRE_MAX_TEXT, 0, CS_ANY },
    { STREQ, "max_bytes", 1, WIRE_MAX_STATUS, 0, CS_ANY },
    { STANS, "json", 1, WIRE_MAX_STATUS, 0, CS_ANY },
};

/* Where a value sits, named only when a check fails: "join.worker_ports[3]". idx < 0 for a singular field. */
struct where {
    const char *prefix; /* the body's field name in the envelope; "" for the envelope's own fields */
    const char *field;
    long idx;
};

static int s_fail_at(const struct where *w, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int s_fail_at(const struct where *w, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (!err || errlen == 0)
        return -1;
    n = snprintf(err, errlen, "%s%s%s", w->prefix, *w->prefix ? "." : "", w->field);
    if (n >= 0 && (size_t)n < errlen && w->idx >= 0)
        n += snprintf(err + n, errlen - (size_t)n, "[%ld]", w->idx);
    if (n >= 0 && (size_t)n < errlen)
        n += snprintf(err + n, errlen - (size_t)n, ": ");
    if (n >= 0 && (size_t)n < errlen) {
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const struct rule *s_rule(const ProtobufCMessageDescriptor *msg, const char *field)
{
    for (size_t i = 0; i < sizeof s_rules / sizeof s_rules[0]; i++)
        if (s_rules[i].msg == msg && strcmp(s_rules[i].field, field) == 0)
            return &s_rules[i];
    return NULL;
}

static int s_check_length(const struct where *w, size_t n, const struct rule *r, char *err, size_t errlen)
{
    if (r->lo == (int64_t)r->hi && n != r->hi)
        return s_fail_at(w, err, errlen, "%zu bytes, must be exactly %" PRIu64, n, r->hi);
    if (n == 0 && r->lo > 0)
        return s_fail_at(w, err, errlen, "empty, must be set");
    if ((int64_t)n < r->lo)
        return s_fail_at(w, err, errlen, "%zu bytes, fewer than %" PRId64, n, r->lo);
    if (n > r->hi)
        return s_fail_at(w, err, errlen, "%zu bytes, more than the bound of %" PRIu64, n, r->hi);
    return 0;
}

static int s_check_string(const struct where *w, const char *s, const struct rule *r, char *err, size_t errlen)
{
    size_t n;
    if (!s && w->idx >= 0)
        return s_fail_at(w, err, errlen, "NULL entry");
    n = s ? strlen(s) : 0;
    if (s_check_length(w, n, r, err, errlen) < 0)
        return -1;
    for (size_t i = 0; r->cs == CS_TOKEN && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c > 0x7e)
            return s_fail_at(w, err, errlen, "byte 0x%02x at offset %zu is not allowed (printable ASCII, no spaces)",
                             c, i);
    }
    return 0;
}

/* Reads a numeric field: returns 1 and sets *s for signed types, 0 and *u for unsigned ones, -1 otherwise. */
static int s_read_number(ProtobufCType type, const void *p, int64_t *s, uint64_t *u)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        *s = *(const int32_t *)p;
        return 1;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        *s = *(const int64_t *)p;
        return 1;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        *u = *(const uint32_t *)p;
        return 0;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        *u = *(const uint64_t *)p;
        return 0;
    case PROTOBUF_C_TYPE_BOOL:
        *u = (uint64_t)*(const protobuf_c_boolean *)p;
        return 0;
    default:
        return -1;
    }
}

static int s_check_number(const struct where *w, const ProtobufCFieldDescriptor *f, const void *p,
                          const struct rule *r, char *err, size_t errlen)
{
    int64_t s = 0;
    uint64_t u = 0;
    int is_signed = s_read_number(f->type, p, &s, &u);
    if (is_signed < 0)
        return s_fail_at(w, err, errlen, "field type %d has no checker in wire_check.c", (int)f->type);
    if (f->type == PROTOBUF_C_TYPE_ENUM &&
        (s < r->lo || !protobuf_c_enum_descriptor_get_value(f->descriptor, (int)s)))
        return s_fail_at(w, err, errlen, "%" PRId64 " is not a valid %s", s,
                         ((const ProtobufCEnumDescriptor *)f->descriptor)->short_name);
    if (is_signed && s < 0) {
        if (s >= r->lo)
            return 0;
        return s_fail_at(w, err, errlen, "%" PRId64 " outside %" PRId64 "..%" PRIu64, s, r->lo, r->hi);
    }
    if (is_signed)
        u = (uint64_t)s;
    if ((r->lo > 0 && u < (uint64_t)r->lo) || u > r->hi)
        return s_fail_at(w, err, errlen, "%" PRIu64 " outside %" PRId64 "..%" PRIu64, u, r->lo, r->hi);
    return 0;
}

static size_t s_elem_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

/* One value of field f at p. */
static int s_check_value(const struct where *w, const ProtobufCFieldDescriptor *f, const void *p,
                         const struct rule *r, char *err, size_t errlen)
{
    const ProtobufCBinaryData *b = p;
    if (f->type == PROTOBUF_C_TYPE_STRING)
        return s_check_string(w, *(char *const *)p, r, err, errlen);
    if (f->type != PROTOBUF_C_TYPE_BYTES)
        return s_check_number(w, f, p, r, err, errlen);
    if (b->len > 0 && !b->data)
        return s_fail_at(w, err, errlen, "%zu bytes at NULL", b->len);
    return s_check_length(w, b->len, r, err, errlen);
}

int wire_check_fields(const ProtobufCMessage *m, const char *prefix, char *err, size_t errlen)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *p = (const char *)m + f->offset;
        struct where w = { prefix, f->name, -1 };
        const struct rule *r;
        size_t n;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE)
            continue;
        r = s_rule(d, f->name);
        if (!r)
            return s_fail_at(&w, err, errlen, "no bound in wire_check.c");
        if (f->label != PROTOBUF_C_LABEL_REPEATED) {
            if (s_check_value(&w, f, p, r, err, errlen) < 0)
                return -1;
            continue;
        }
        n = *(const size_t *)((const char *)m + f->quantifier_offset);
        if (n > r->max_count)
            return s_fail_at(&w, err, errlen, "%zu entries, more than the bound of %" PRIu32, n, r->max_count);
        for (w.idx = 0; (size_t)w.idx < n; w.idx++)
            if (s_check_value(&w, f, *(const char *const *)p + (size_t)w.idx * s_elem_size(f->type), r, err,
                              errlen) < 0)
                return -1;
    }
    return 0;
}

int wire_check_unknown(const ProtobufCMessage *m, const char *name, char *err, size_t errlen)
{
    if (m->n_unknown_fields == 0)
        return 0;
    return wire_fail(err, errlen, "%s: field %" PRIu32 " is not in protocol %u (a peer built from other sources?)",
                     name, m->unknown_fields[0].tag, WIRE_PROTOCOL_VERSION);
}
