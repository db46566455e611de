/* wire_rules: the rules of whole messages and wire_check() itself: the counts and sums between fields (JOIN,
 * ASSIGN), RELAYED's items and REPORT's kinds, each message's own fields checked against the wire table first
 * (wire_check.c); names and the error formatter: wire_names.c; the peer's version and job: wire_peer.c. */
#include "common/wire/wire_priv.h"

#include <inttypes.h>
#include <stdio.h>

#define RITEM &plaunch__relay_item__descriptor
#define PRANK &plaunch__progress_rank__descriptor

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
        else if (wire_check_unknown(&it->base, "relayed.items", err, errlen) < 0 ||
                 wire_check_fields(&it->base, "relayed.items", err, errlen) < 0)
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

/* REPORT: exactly one kind, its message checked field by field (PROGRESS: 1..WIRE_MAX_LOCAL ranks, each checked).
 * Which way a kind travels is the receiver's to check. */
static int s_check_report(const Plaunch__Report *r, char *err, size_t errlen)
{
    char name[64];
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&plaunch__report__descriptor, (unsigned)r->kind_case);
    if (r->kind_case == WIRE_R_NONE || !f || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return wire_fail(err, errlen, "report: no kind set (empty, or of a newer protocol)");
    const ProtobufCMessage *k = *(const ProtobufCMessage *const *)((const char *)r + f->offset);
    snprintf(name, sizeof name, "report.%s", f->name);
    if (!k || k->descriptor != f->descriptor)
        return wire_fail(err, errlen, "%s: missing or of another type", name);
    if (wire_check_unknown(k, name, err, errlen) < 0 || wire_check_fields(k, name, err, errlen) < 0)
        return -1;
    if (r->kind_case == WIRE_R_NODE_STATE) {
        const Plaunch__NodeState *n = r->node_state;
        if (n->n_ranks > WIRE_MAX_LOCAL)
            return wire_fail(err, errlen, "report.node_state.ranks: %zu entries, more than %u", n->n_ranks,
                             WIRE_MAX_LOCAL);
        for (size_t i = 0; i < n->n_ranks; i++) {
            const Plaunch__NodeRankGpu *e = n->ranks[i];
            if (!e || e->base.descriptor != &plaunch__node_rank_gpu__descriptor)
                return wire_fail(err, errlen, "report.node_state.ranks[%zu]: missing", i);
            if (wire_check_unknown(&e->base, "report.node_state.ranks", err, errlen) < 0 ||
                wire_check_fields(&e->base, "report.node_state.ranks", err, errlen) < 0)
                return -1;
        }
        return 0;
    }
    if (r->kind_case != WIRE_R_PROGRESS)
        return 0;
    const Plaunch__Progress *p = r->progress;
    if (p->n_ranks < 1 || p->n_ranks > WIRE_MAX_LOCAL)
        return wire_fail(err, errlen, "report.progress.ranks: %zu entries, must be 1..%u", p->n_ranks,
                         WIRE_MAX_LOCAL);
    for (size_t i = 0; i < p->n_ranks; i++) {
        const Plaunch__ProgressRank *e = p->ranks[i];
        if (!e || e->base.descriptor != PRANK)
            return wire_fail(err, errlen, "report.progress.ranks[%zu]: missing", i);
        if (wire_check_unknown(&e->base, "report.progress.ranks", err, errlen) < 0 ||
            wire_check_fields(&e->base, "report.progress.ranks", err, errlen) < 0)
            return -1;
    }
    return 0;
}

int wire_check_envelope(const wire_msg_t *msg, char *err, size_t errlen)
{
    if (msg->protocol_version == WIRE_PROTOCOL_VERSION && wire_check_unknown(&msg->base, "envelope", err, errlen) < 0)
        return -1;
    return wire_check_fields(&msg->base, "", err, errlen);
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
    if (wire_check_unknown(body, f->name, err, errlen) < 0 || wire_check_fields(body, f->name, err, errlen) < 0)
        return -1;
    if (type == WIRE_JOIN)
        return s_check_join(msg->join, err, errlen);
    if (type == WIRE_ASSIGN)
        return s_check_assign(msg->assign, err, errlen);
    if (type == WIRE_RELAYED)
        return s_check_relayed(msg->relayed, err, errlen);
    if (type == WIRE_REPORT)
        return s_check_report(msg->report, err, errlen);
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
