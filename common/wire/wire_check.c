/* wire_check: the bound of every field of every message and the cross-field rules (names and the error formatter:
 * wire_names.c; the peer's version and job: wire_peer.c). */
#include "wire_priv.h"

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
    { REPORT, "kind", 1, WIRE_MAX_KIND, 0, CS_TOKEN },
    { REPORT, "json", 1, WIRE_MAX_REPORT, 0, CS_ANY },
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

/* Every non-message field of m against its rule; prefix names m in messages ("" for the envelope). */
static int s_check_fields(const ProtobufCMessage *m, const char *prefix, char *err, size_t errlen)
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

static int s_check_count(const char *name, size_t n, const char *what, uint64_t want, char *err, size_t errlen)
{
    if (n == want)
        return 0;
    return wire_fail(err, errlen, "%s: %zu entries, %s is %" PRIu64, name, n, what, want);
}

static int s_check_join(const Plaunch__Join *j, char *err, size_t errlen)
{
    return s_check_count("join.worker_ports", j->n_worker_ports, "join.nproc (one port per worker)", j->nproc,
                         err, errlen);
}

static int s_check_assign(const Plaunch__Assign *a, char *err, size_t errlen)
{
    uint64_t sum = 0, before = 0;
    if (a->node_rank >= a->nnodes)
        return wire_fail(err, errlen, "assign.node_rank: %" PRIu32 ", not below assign.nnodes %" PRIu32, a->node_rank,
                         a->nnodes);
    if (s_check_count("assign.local_ports", a->n_local_ports, "assign.local_world_size", a->local_world_size, err,
                      errlen) < 0)
        return -1;
    if ((uint64_t)a->first_rank + a->local_world_size > a->world_size)
        return wire_fail(err, errlen, "assign.first_rank %" PRIu32 " + local_world_size %" PRIu32
                         ": beyond assign.world_size %" PRIu32, a->first_rank, a->local_world_size, a->world_size);
    if (a->heartbeat_timeout_ms <= a->heartbeat_interval_ms)
        return wire_fail(err, errlen, "assign.heartbeat_timeout_ms: %" PRIu32 ", not above the interval of %" PRIu32,
                         a->heartbeat_timeout_ms, a->heartbeat_interval_ms);
    if (!a->n_local_world_sizes && !a->n_node_addrs && !a->n_endpoint_ports)
        return 0; /* no tables: this node's part only */
    if (s_check_count("assign.local_world_sizes", a->n_local_world_sizes, "assign.nnodes", a->nnodes, err,
                      errlen) < 0 ||
        s_check_count("assign.node_addrs", a->n_node_addrs, "assign.nnodes", a->nnodes, err, errlen) < 0 ||
        s_check_count("assign.endpoint_ports", a->n_endpoint_ports, "assign.world_size", a->world_size, err,
                      errlen) < 0)
        return -1;
    for (size_t i = 0; i < a->n_local_world_sizes; i++) {
        if (i == a->node_rank)
            before = sum;
        sum += a->local_world_sizes[i];
    }
    if (sum != a->world_size)
        return wire_fail(err, errlen, "assign.world_size: %" PRIu32 ", but assign.local_world_sizes add up to %" PRIu64,
                         a->world_size, sum);
    if (a->first_rank != before)
        return wire_fail(err, errlen, "assign.first_rank: %" PRIu32 ", but the nodes before node %" PRIu32
                         " run %" PRIu64 " workers", a->first_rank, a->node_rank, before);
    if (a->local_world_sizes[a->node_rank] != a->local_world_size)
        return wire_fail(err, errlen, "assign.local_world_size: %" PRIu32 ", but local_world_sizes[%" PRIu32
                         "] is %" PRIu32, a->local_world_size, a->node_rank, a->local_world_sizes[a->node_rank]);
    for (uint32_t l = 0; l < a->local_world_size; l++)
        if (a->local_ports[l] != a->endpoint_ports[a->first_rank + l])
            return wire_fail(err, errlen, "assign.local_ports[%" PRIu32 "]: %" PRIu32 ", but endpoint_ports[%" PRIu32
                             "] is %" PRIu32, l, a->local_ports[l], a->first_rank + l,
                             a->endpoint_ports[a->first_rank + l]);
    /* restart_count is the generation: membership changes of an elastic job restart it without spending the
     * budget, so it may pass max_restarts. */
    return 0;
}

/* Same protocol version, same schema: a field this build does not know means a peer built from other sources. */
static int s_check_unknown(const ProtobufCMessage *m, const char *name, char *err, size_t errlen)
{
    if (m->n_unknown_fields == 0)
        return 0;
    return wire_fail(err, errlen, "%s: field %" PRIu32 " is not in protocol %u (a peer built from other sources?)",
                     name, m->unknown_fields[0].tag, WIRE_PROTOCOL_VERSION);
}

/* RELAYED: 1..WIRE_MAX_RELAY_ITEMS items, each checked field by field, then what its event needs: a child named
 * one way only (from >= 1, or 1.. entries in to), a payload with MESSAGE and none without, who the child is with
 * OPENED, and the children to drop with DROP. Which way it travels is the receiver's to check. */
static int s_check_relayed(const Plaunch__Relayed *r, char *err, size_t errlen)
{
    if (r->n_items < 1 || r->n_items > WIRE_MAX_RELAY_ITEMS)
        return wire_fail(err, errlen, "relayed.items: %zu entries, must be 1..%u", r->n_items, WIRE_MAX_RELAY_ITEMS);
    for (size_t i = 0; i < r->n_items; i++) {
        const Plaunch__RelayItem *it = r->items[i];
        int ev = it ? (int)it->event : -1;
        const char *bad = NULL;
        if (!it || it->base.descriptor != RITEM)
            bad = "missing";
        else if (s_check_unknown(&it->base, "relayed.items", err, errlen) < 0 ||
                 s_check_fields(&it->base, "relayed.items", err, errlen) < 0)
            return -1;
        else if ((it->from != 0) == (it->n_to != 0))
            bad = "names its children neither or both ways (from and to)";
        else if ((ev == PLAUNCH__RELAY_ITEM__EVENT__MESSAGE) != (it->payload.len > 0))
            bad = ev == PLAUNCH__RELAY_ITEM__EVENT__MESSAGE ? "MESSAGE without a payload" : "a payload without MESSAGE";
        else if (ev == PLAUNCH__RELAY_ITEM__EVENT__OPENED && (!it->peer_addr[0] || !it->peer_name[0] || !it->from))
            bad = "OPENED without from, peer_addr and peer_name";
        else if ((ev == PLAUNCH__RELAY_ITEM__EVENT__DROP) != (it->n_to > 0 && ev != PLAUNCH__RELAY_ITEM__EVENT__MESSAGE))
            bad = ev == PLAUNCH__RELAY_ITEM__EVENT__DROP ? "DROP without to" : "an event for children in to";
        if (bad)
            return wire_fail(err, errlen, "relayed.items[%zu]: %s", i, bad);
    }
    return 0;
}

int wire_check_envelope(const wire_msg_t *msg, char *err, size_t errlen)
{
    if (msg->protocol_version == WIRE_PROTOCOL_VERSION && s_check_unknown(&msg->base, "envelope", err, errlen) < 0)
        return -1;
    return s_check_fields(&msg->base, "", err, errlen);
}

int wire_check_body(const wire_msg_t *msg, uint64_t allowed, char *err, size_t errlen)
{
    unsigned type = (unsigned)msg->body_case;
    const ProtobufCFieldDescriptor *f;
    const ProtobufCMessage *body;
    if (type == WIRE_NONE)
        return wire_fail(err, errlen, "message has no body (empty, or of a newer protocol)");
    f = protobuf_c_message_descriptor_get_field(&plaunch__envelope__descriptor, type);
    if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE || type >= 64)
        return wire_fail(err, errlen, "body type %u is unknown", type);
    if (!(allowed & WIRE_BIT(type)))
        return wire_fail(err, errlen, "%s: not accepted by this receiver (sent to the wrong side?)",
                         wire_type_name(type));
    body = *(const ProtobufCMessage *const *)((const char *)msg + f->offset);
    if (!body || body->descriptor != f->descriptor)
        return wire_fail(err, errlen, "%s: body missing or of another type", f->name);
    if (s_check_unknown(body, f->name, err, errlen) < 0 || s_check_fields(body, f->name, err, errlen) < 0)
        return -1;
    if (type == WIRE_JOIN)
        return s_check_join(msg->join, err, errlen);
    if (type == WIRE_ASSIGN)
        return s_check_assign(msg->assign, err, errlen);
    if (type == WIRE_RELAYED)
        return s_check_relayed(msg->relayed, err, errlen);
    if (type == WIRE_RELAY_START && msg->relay_start->heartbeat_timeout_ms <= msg->relay_start->heartbeat_interval_ms)
        return wire_fail(err, errlen, "relay_start.heartbeat_timeout_ms: %" PRIu32 ", not above the interval of %" PRIu32,
                         msg->relay_start->heartbeat_timeout_ms, msg->relay_start->heartbeat_interval_ms);
    return 0;
}

int wire_check(const wire_msg_t *msg, char *err, size_t errlen)
{
    if (wire_check_envelope(msg, err, errlen) < 0)
        return -1;
    /* A message of another version may come without a body (wire_decode dropped it). */
    if (msg->protocol_version != WIRE_PROTOCOL_VERSION && msg->body_case == WIRE_NONE)
        return 0;
    return wire_check_body(msg, WIRE_ANY, err, errlen);
}
