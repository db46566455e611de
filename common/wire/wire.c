/* wire: packs and unpacks control-plane envelopes; every decoded message passes wire_check before anyone sees it. */
#include "common/wire/wire_priv.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void wire_refuse_init(wire_msg_t *msg, Plaunch__Refuse *r, const char *job_id, uint32_t generation, int code,
                      const char *text, uint32_t request, const char *key, uint32_t rank)
{
    *r = (Plaunch__Refuse)PLAUNCH__REFUSE__INIT;
    r->code = code;
    r->text = (char *)text;
    r->request = request;
    if (key)
        r->key = (char *)key;
    r->rank = rank;
    wire_init(msg, job_id, generation, WIRE_REFUSE, r);
}

/* ---- memory: the unpacker may take at most WIRE_MAX_DECODED for one message ---------------------------------- */

struct budget {
    size_t used;
    int exceeded;
};

/* Counts every request plus malloc's own overhead, and never gives back: a bound on the total, not on the peak. */
static void *s_alloc(void *data, size_t size)
{
    struct budget *b = data;
    size_t cost = size + 16;
    if (b) {
        if (cost < size || cost > WIRE_MAX_DECODED - b->used) {
            b->exceeded = 1;
            return NULL;
        }
        b->used += cost;
    }
    return malloc(size ? size : 1);
}

static void s_free(void *data, void *p)
{
    (void)data;
    free(p);
}

static ProtobufCAllocator s_heap = { s_alloc, s_free, NULL };

/* ---- the wire format, walked before protobuf-c unpacks it ----------------------------------------------------- */

static int s_varint(const uint8_t *p, size_t len, size_t *i, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 64 && *i < len; shift += 7) {
        uint8_t c = p[(*i)++];
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

/* Walks the wire format before protobuf-c does, for what protobuf-c lets through and wire_check cannot see once the
 * message is unpacked, and so that the fuzzer, which sees only plaunch's own code, learns the wire format:
 * - field number 0 or above 2^29-1 (an overlong tag): protobuf-c keeps it as an unknown field, then packs it as
 *   bytes that no decoder accepts; group wire types, lengths past the end;
 * - a NUL byte inside a string: C code would see the string cut there, so a bound checked with strlen() misses
 *   the rest and "job\0x" compares equal to "job".
 * Walks the fields of message d in p[len] and, while depth > 0, of the embedded messages (the body). Problems inside
 * the body go to body_err (first one kept; the body may be dropped instead), the others to err with -1. */
struct scan {
    char *err, *body_err;
    size_t errlen, body_errlen;
};

static int s_scan_wire(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len, int depth,
                       const char *prefix, const struct scan *sc)
{
    const char *where = *prefix ? prefix : "envelope";
    size_t i = 0;
    uint64_t key, n;
    while (i < len) {
        const ProtobufCFieldDescriptor *f;
        if (s_varint(p, len, &i, &key) < 0)
            goto malformed;
        if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff)
            return wire_fail(sc->err, sc->errlen, "%s: field number %" PRIu64 " is not valid", where, key >> 3);
        f = protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
        switch (key & 7) {
        case 0:
            if (s_varint(p, len, &i, &n) < 0)
                goto malformed;
            break;
        case 1:
        case 5:
            n = (key & 7) == 1 ? 8 : 4;
            if (n > len - i)
                goto malformed;
            i += n;
            break;
        case 2:
            if (s_varint(p, len, &i, &n) < 0 || n > len - i)
                goto malformed;
            if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p + i, 0, n)) {
                if (!*prefix)
                    return wire_fail(sc->err, sc->errlen, "%s: contains a NUL byte", f->name);
                if (!sc->body_err[0])
                    wire_fail(sc->body_err, sc->body_errlen, "%s.%s: contains a NUL byte", prefix, f->name);
            }
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth > 0 &&
                s_scan_wire(f->descriptor, p + i, n, depth - 1, f->name, sc) < 0)
                return -1;
            i += n;
            break;
        default:
            goto malformed;
        }
    }
    return 0;
malformed:
    return wire_fail(sc->err, sc->errlen, "%s: malformed field near offset %zu", where, i);
}

/* ---- decode / encode ------------------------------------------------------------------------------------------ */

static const ProtobufCFieldDescriptor *s_body_field(wire_type_t type)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(&plaunch__envelope__descriptor, type);
    return f && f->type == PROTOBUF_C_TYPE_MESSAGE ? f : NULL;
}

static void s_drop_body(wire_msg_t *msg)
{
    const ProtobufCFieldDescriptor *f = s_body_field(msg->body_case);
    if (f) {
        ProtobufCMessage **body = (ProtobufCMessage **)((char *)msg + f->offset);
        protobuf_c_message_free_unpacked(*body, &s_heap);
        *body = NULL;
    }
    msg->body_case = PLAUNCH__ENVELOPE__BODY__NOT_SET;
}

wire_msg_t *wire_decode(const void *buf, size_t len, uint64_t allowed, char *err, size_t errlen)
{
    struct budget budget = { 0, 0 };
    ProtobufCAllocator alloc = { s_alloc, s_free, &budget };
    char body_err[256] = "";
    struct scan scan = { err, body_err, errlen, sizeof body_err };
    wire_msg_t *msg = NULL;
    if (len == 0 || !buf) {
        wire_fail(err, errlen, "empty message");
        goto error;
    }
    if (len > WIRE_MAX_MSG) {
        wire_fail(err, errlen, "message of %zu bytes, more than WIRE_MAX_MSG (%u)", len, WIRE_MAX_MSG);
        goto error;
    }
    if (s_scan_wire(&plaunch__envelope__descriptor, buf, len, 2, "", &scan) < 0) /* the body, RELAYED's items */
        goto error;
    msg = plaunch__envelope__unpack(&alloc, len, buf);
    if (!msg) {
        if (budget.exceeded)
            wire_fail(err, errlen, "message of %zu bytes needs more than WIRE_MAX_DECODED (%u) bytes unpacked", len,
                      WIRE_MAX_DECODED);
        else
            wire_fail(err, errlen, "%zu bytes that are not a plaunch message (protobuf unpack failed)", len);
        goto error;
    }
    if (wire_check_envelope(msg, err, errlen) < 0)
        goto error;
    if ((body_err[0] ? wire_fail(err, errlen, "%s", body_err) : wire_check_body(msg, allowed, err, errlen)) < 0) {
        /* A peer of another version gets its clear refusal from wire_check_peer, not a bound message. */
        if (msg->protocol_version == WIRE_PROTOCOL_VERSION)
            goto error;
        s_drop_body(msg);
        if (err && errlen > 0)
            err[0] = '\0';
    }
    return msg;
error:
    if (msg)
        plaunch__envelope__free_unpacked(msg, &s_heap);
    return NULL;
}

void wire_free(wire_msg_t **msg)
{
    if (msg && *msg) {
        plaunch__envelope__free_unpacked(*msg, &s_heap);
        *msg = NULL;
    }
}

void wire_init(wire_msg_t *msg, const char *job_id, uint32_t generation, wire_type_t type, void *body)
{
    const ProtobufCFieldDescriptor *f = s_body_field(type);
    assert(type == WIRE_NONE ? !body : f && body && ((ProtobufCMessage *)body)->descriptor == f->descriptor);
    plaunch__envelope__init(msg);
    msg->protocol_version = WIRE_PROTOCOL_VERSION;
    msg->job_id = (char *)job_id;
    msg->generation = generation;
    if (f) {
        msg->body_case = (Plaunch__Envelope__BodyCase)type;
        *(void **)((char *)msg + f->offset) = body;
    }
}

/* The packed size of a message that passes wire_check and fits WIRE_MAX_MSG; -1 otherwise. */
static ssize_t s_packed_size(const wire_msg_t *msg, char *err, size_t errlen)
{
    size_t n;
    if (wire_check(msg, err, errlen) < 0)
        return -1;
    n = plaunch__envelope__get_packed_size(msg);
    if (n > WIRE_MAX_MSG)
        return wire_fail(err, errlen, "%s: %zu bytes packed, more than WIRE_MAX_MSG (%u)",
                         wire_type_name(msg->body_case), n, WIRE_MAX_MSG);
    return (ssize_t)n;
}

ssize_t wire_encode(const wire_msg_t *msg, void *buf, size_t cap, char *err, size_t errlen)
{
    ssize_t n = s_packed_size(msg, err, errlen);
    if (n < 0)
        return -1;
    if ((size_t)n > cap)
        return wire_fail(err, errlen, "%s: %zd bytes packed, the buffer holds %zu",
                         wire_type_name(msg->body_case), n, cap);
    return (ssize_t)plaunch__envelope__pack(msg, buf);
}

void *wire_encode_alloc(const wire_msg_t *msg, size_t *len, char *err, size_t errlen)
{
    ssize_t n = s_packed_size(msg, err, errlen);
    uint8_t *buf;
    if (n < 0)
        return NULL;
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf) {
        wire_fail(err, errlen, "out of memory for %zd bytes", n);
        return NULL;
    }
    *len = plaunch__envelope__pack(msg, buf);
    return buf;
}

/* ---- ASSIGN's endpoints --------------------------------------------------------------------------------------- */

/* "addr:port", or "[addr]:port" for an IPv6 address; the length, or -1 if buf[len] is too small. */
static int s_endpoint(const char *addr, uint32_t port, char *buf, size_t len)
{
    int v6 = strchr(addr, ':') != NULL;
    int n = snprintf(buf, len, "%s%s%s:%" PRIu32, v6 ? "[" : "", addr, v6 ? "]" : "", port);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

int wire_assign_has_tables(const Plaunch__Assign *a)
{
    return a->n_node_addrs == a->nnodes && a->n_local_world_sizes == a->nnodes && a->n_endpoint_ports == a->world_size;
}

static void s_assert_assign(const Plaunch__Assign *a)
{
    assert(a && wire_assign_has_tables(a));
    (void)a;
}

char *wire_assign_endpoints(const Plaunch__Assign *a, char *err, size_t errlen)
{
    size_t cap = 1, off = 0;
    uint32_t rank = 0;
    char *out;
    s_assert_assign(a);
    for (size_t n = 0; n < a->nnodes; n++)
        cap += (size_t)a->local_world_sizes[n] * (strlen(a->node_addrs[n]) + sizeof "[]:65535,");
    out = malloc(cap);
    if (!out) {
        wire_fail(err, errlen, "out of memory for %zu bytes of endpoints", cap);
        return NULL;
    }
    out[0] = '\0';
    for (size_t n = 0; n < a->nnodes; n++) {
        for (uint32_t l = 0; l < a->local_world_sizes[n] && rank < a->world_size; l++, rank++) {
            int k;
            if (rank > 0)
                out[off++] = ',';
            k = s_endpoint(a->node_addrs[n], a->endpoint_ports[rank], out + off, cap - off);
            if (k < 0) {
                free(out);
                wire_fail(err, errlen, "endpoint of rank %" PRIu32 ": not a checked ASSIGN", rank);
                return NULL;
            }
            off += (size_t)k;
        }
    }
    return out;
}

int wire_assign_endpoint(const Plaunch__Assign *a, uint32_t rank, char *buf, size_t len, char *err, size_t errlen)
{
    uint32_t first = 0;
    s_assert_assign(a);
    for (size_t n = 0; n < a->nnodes; first += a->local_world_sizes[n], n++) {
        if (rank - first >= a->local_world_sizes[n])
            continue;
        if (s_endpoint(a->node_addrs[n], a->endpoint_ports[rank], buf, len) < 0)
            return wire_fail(err, errlen, "endpoint of rank %" PRIu32 ": buffer of %zu bytes too small", rank, len);
        return 0;
    }
    return wire_fail(err, errlen, "rank %" PRIu32 ": not below world size %" PRIu32, rank, a->world_size);
}

void wire_report_init(wire_msg_t *msg, Plaunch__Report *r, const char *job_id, uint32_t generation,
                      wire_report_t kind, void *body)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(&plaunch__report__descriptor, kind);
    assert(f && f->type == PROTOBUF_C_TYPE_MESSAGE && body && ((ProtobufCMessage *)body)->descriptor == f->descriptor);
    plaunch__report__init(r);
    r->kind_case = kind;
    *(void **)((char *)r + f->offset) = body;
    wire_init(msg, job_id, generation, WIRE_REPORT, r);
}
