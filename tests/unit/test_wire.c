/* test_wire: round trips of every message, every bound refused by name, hostile bytes, version and job checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/wire/wire.h"
#include "tests/unit/wire_samples.h"

#ifndef PLAUNCH_VERSION
#define PLAUNCH_VERSION "unknown"
#endif

/* ---- helpers -------------------------------------------------------------------------------------------------- */

/* Storage the mutations of one case allocate, freed by s_release(). */
static void *s_kept[8];
static size_t s_nkept;

static void *s_keep(void *p)
{
    assert_non_null(p);
    assert_true(s_nkept < sizeof s_kept / sizeof s_kept[0]);
    s_kept[s_nkept++] = p;
    return p;
}

static void s_release(void)
{
    while (s_nkept > 0)
        free(s_kept[--s_nkept]);
}

/* Packs msg as protobuf-c does, without wire_check: what a broken or hostile peer could send. */
static uint8_t *s_pack_raw(const wire_msg_t *msg, size_t *len)
{
    uint8_t *buf = malloc(plaunch__envelope__get_packed_size(msg) + 1);
    assert_non_null(buf);
    *len = plaunch__envelope__pack(msg, buf);
    return buf;
}

static uint8_t *s_encode(const wire_msg_t *msg, size_t *len)
{
    char err[256] = "";
    uint8_t *buf = wire_encode_alloc(msg, len, err, sizeof err);
    if (!buf)
        fail_msg("wire_encode_alloc: %s", err);
    return buf;
}

/* True when field f of m differs from its default, so that a round trip tests it. */
static int s_is_set(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    const char *p = (const char *)m + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return *(const size_t *)((const char *)m + f->quantifier_offset) > 0;
    switch (f->type) {
    case PROTOBUF_C_TYPE_MESSAGE:
        return 1;
    case PROTOBUF_C_TYPE_STRING:
        return *(char *const *)p && **(char *const *)p;
    case PROTOBUF_C_TYPE_BYTES:
        return ((const ProtobufCBinaryData *)p)->len > 0;
    case PROTOBUF_C_TYPE_UINT64:
        return *(const uint64_t *)p != 0;
    default:
        return *(const uint32_t *)p != 0;
    }
}

static void s_assert_all_set(const ProtobufCMessage *m)
{
    for (unsigned i = 0; i < m->descriptor->n_fields; i++)
        if (!s_is_set(m, &m->descriptor->fields[i]))
            fail_msg("sample %s leaves %s at its default", m->descriptor->short_name, m->descriptor->fields[i].name);
}

static ProtobufCMessage *s_body(const wire_msg_t *msg)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&plaunch__envelope__descriptor, msg->body_case);
    assert_non_null(f);
    return *(ProtobufCMessage **)((char *)msg + f->offset);
}

/* ---- round trips ---------------------------------------------------------------------------------------------- */

static void test_round_trip_every_type(void **state)
{
    static const uint64_t masks[] = { WIRE_TO_COORD, WIRE_TO_AGENT, WIRE_TO_AGENT_IPC, WIRE_TO_WORKER,
                                      WIRE_TO_AGENT_PLAIN, WIRE_TO_STATUS };
    for (size_t i = 0; i < SAMPLE_NTYPES; i++) {
        struct sample s;
        char err[256] = "";
        uint8_t fixed[4096];
        size_t len, len2;
        ssize_t n;
        uint64_t any_mask = 0;
        wire_msg_t *in;
        uint8_t *buf, *buf2;
        sample_init(&s, sample_types[i]);
        s_assert_all_set(&s.msg.base);
        s_assert_all_set(s_body(&s.msg));
        buf = s_encode(&s.msg, &len);
        n = wire_encode(&s.msg, fixed, sizeof fixed, err, sizeof err);
        assert_int_equal(n, len);
        assert_memory_equal(fixed, buf, len);
        in = wire_decode(buf, len, WIRE_ANY, err, sizeof err);
        if (!in)
            fail_msg("%s: %s", wire_type_name(sample_types[i]), err);
        assert_int_equal(in->body_case, sample_types[i]);
        assert_int_equal(in->protocol_version, WIRE_PROTOCOL_VERSION);
        assert_string_equal(in->job_id, SAMPLE_JOB);
        assert_int_equal(in->generation, SAMPLE_GEN);
        assert_int_equal(wire_check_peer(in, WIRE_PROTOCOL_VERSION, SAMPLE_JOB, err, sizeof err), 0);
        /* protobuf-c packs fields in number order, so equal bytes mean equal fields. */
        buf2 = s_encode(in, &len2);
        assert_int_equal(len2, len);
        assert_memory_equal(buf2, buf, len);
        for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++)
            any_mask |= masks[m];
        assert_true(any_mask & WIRE_BIT(sample_types[i]));
        wire_free(&in);
        assert_null(in);
        wire_free(&in);
        free(buf);
        free(buf2);
    }
}

static void test_round_trip_values(void **state)
{
    struct sample s;
    char err[256] = "";
    size_t len;
    uint8_t *buf;
    wire_msg_t *in;
    sample_init(&s, WIRE_NCCL_ID);
    buf = s_encode(&s.msg, &len);
    in = wire_decode(buf, len, WIRE_TO_WORKER, err, sizeof err);
    assert_non_null(in);
    assert_string_equal(in->nccl_id->key, "tp-group");
    assert_int_equal(in->nccl_id->id.len, WIRE_NCCL_ID_BYTES);
    assert_memory_equal(in->nccl_id->id.data, s.id, WIRE_NCCL_ID_BYTES);
    wire_free(&in);
    free(buf);

    sample_init(&s, WIRE_JOIN);
    s.join.requested_node_rank = -1;
    buf = s_encode(&s.msg, &len);
    in = wire_decode(buf, len, WIRE_TO_COORD, err, sizeof err);
    assert_non_null(in);
    assert_int_equal(in->join->requested_node_rank, -1);
    assert_string_equal(in->join->hostname, "gpu-07");
    assert_int_equal(in->join->n_worker_ports, 4);
    assert_int_equal(in->join->worker_ports[3], 6004);
    wire_free(&in);
    free(buf);
}

static void test_assign_endpoints(void **state)
{
    struct sample s;
    char err[256] = "", one[64];
    char *all;
    sample_init(&s, WIRE_ASSIGN);
    all = wire_assign_endpoints(&s.assign, err, sizeof err);
    assert_non_null(all);
    assert_string_equal(all, "10.0.0.1:6001,10.0.0.1:6002,[fd00::2]:7001,[fd00::2]:7002,[fd00::2]:7003,"
                             "[fd00::2]:7004");
    free(all);
    assert_int_equal(wire_assign_endpoint(&s.assign, 1, one, sizeof one, err, sizeof err), 0);
    assert_string_equal(one, "10.0.0.1:6002");
    assert_int_equal(wire_assign_endpoint(&s.assign, 3, one, sizeof one, err, sizeof err), 0);
    assert_string_equal(one, "[fd00::2]:7002");
    assert_int_equal(wire_assign_endpoint(&s.assign, 6, one, sizeof one, err, sizeof err), -1);
    assert_string_equal(err, "rank 6: not below world size 6");
    assert_int_equal(wire_assign_endpoint(&s.assign, 3, one, 8, err, sizeof err), -1);
}

/* ---- every bound ---------------------------------------------------------------------------------------------- */

enum op {
    SET_VALUE, /* a number or enum */
    SET_LEN,   /* a string or bytes field of arg bytes */
    SET_STR,   /* a string field to str */
    SET_COUNT, /* a repeated field to arg copies of its first entry */
    SET_ELEM,  /* the first entry of a repeated field: value arg, or a string of arg bytes */
};

struct bad {
    const char *field; /* "join.hostname", or "job_id" for the envelope's own fields */
    enum op op;
    int64_t arg;
    const char *str;
    const char *want;  /* the whole error message */
};

static const struct bad s_bad[] = {
    { "protocol_version", SET_VALUE, 0, NULL, "protocol_version: 0 outside 1..4294967295" },
    { "job_id", SET_LEN, 0, NULL, "job_id: empty, must be set" },
    { "job_id", SET_LEN, 65, NULL, "job_id: 65 bytes, more than the bound of 64" },
    { "job_id", SET_STR, 0, "job 1", "job_id: byte 0x20 at offset 3 is not allowed (printable ASCII, no spaces)" },
    { "hello.hostname", SET_LEN, 0, NULL, "hello.hostname: empty, must be set" },
    { "hello.hostname", SET_LEN, 256, NULL, "hello.hostname: 256 bytes, more than the bound of 255" },
    { "hello.plaunch_version", SET_LEN, 65, NULL, "hello.plaunch_version: 65 bytes, more than the bound of 64" },
    { "join.hostname", SET_LEN, 256, NULL, "join.hostname: 256 bytes, more than the bound of 255" },
    { "join.hostname", SET_STR, 0, "gpu\t7",
      "join.hostname: byte 0x09 at offset 3 is not allowed (printable ASCII, no spaces)" },
    { "join.addr", SET_LEN, 0, NULL, "join.addr: empty, must be set" },
    { "join.addr", SET_LEN, 256, NULL, "join.addr: 256 bytes, more than the bound of 255" },
    { "join.pid", SET_VALUE, 0, NULL, "join.pid: 0 outside 1..2147483647" },
    { "join.pid", SET_VALUE, 2147483648, NULL, "join.pid: 2147483648 outside 1..2147483647" },
    { "join.nproc", SET_VALUE, 0, NULL, "join.nproc: 0 outside 1..1024" },
    { "join.nproc", SET_VALUE, 1025, NULL, "join.nproc: 1025 outside 1..1024" },
    { "join.requested_node_rank", SET_VALUE, -2, NULL, "join.requested_node_rank: -2 outside -1..65535" },
    { "join.requested_node_rank", SET_VALUE, 65536, NULL, "join.requested_node_rank: 65536 outside -1..65535" },
    { "join.gpus", SET_LEN, 1025, NULL, "join.gpus: 1025 bytes, more than the bound of 1024" },
    { "join.plaunch_version", SET_LEN, 0, NULL, "join.plaunch_version: empty, must be set" },
    { "join.worker_ports", SET_COUNT, 1025, NULL, "join.worker_ports: 1025 entries, more than the bound of 1024" },
    { "join.worker_ports", SET_COUNT, 3, NULL, "join.worker_ports: 3 entries, join.nproc (one port per worker) is 4" },
    { "join.preflight", SET_COUNT, 17, NULL, "join.preflight: 17 entries, more than the bound of 16" },
    { "join.preflight", SET_ELEM, 1025, NULL, "join.preflight[0]: 1025 bytes, more than the bound of 1024" },
    { "join.preflight", SET_ELEM, 0, NULL, "join.preflight[0]: empty, must be set" },
    { "join.worker_ports", SET_ELEM, 0, NULL, "join.worker_ports[0]: 0 outside 1..65535" },
    { "join.worker_ports", SET_ELEM, 65536, NULL, "join.worker_ports[0]: 65536 outside 1..65535" },
    { "join.master_port", SET_VALUE, 0, NULL, "join.master_port: 0 outside 1..65535" },
    { "assign.node_rank", SET_VALUE, 65536, NULL, "assign.node_rank: 65536 outside 0..65535" },
    { "assign.node_rank", SET_VALUE, 2, NULL, "assign.node_rank: 2, not below assign.nnodes 2" },
    { "assign.nnodes", SET_VALUE, 0, NULL, "assign.nnodes: 0 outside 1..65536" },
    { "assign.nnodes", SET_VALUE, 65537, NULL, "assign.nnodes: 65537 outside 1..65536" },
    { "assign.nnodes", SET_VALUE, 3, NULL, "assign.local_world_sizes: 2 entries, assign.nnodes is 3" },
    { "assign.first_rank", SET_VALUE, 65536, NULL, "assign.first_rank: 65536 outside 0..65535" },
    { "assign.first_rank", SET_VALUE, 1, NULL, "assign.first_rank: 1, but the nodes before node 1 run 2 workers" },
    { "assign.world_size", SET_VALUE, 0, NULL, "assign.world_size: 0 outside 1..65536" },
    { "assign.world_size", SET_VALUE, 65537, NULL, "assign.world_size: 65537 outside 1..65536" },
    { "assign.world_size", SET_VALUE, 7, NULL, "assign.endpoint_ports: 6 entries, assign.world_size is 7" },
    { "assign.local_world_sizes", SET_COUNT, 2049, NULL,
      "assign.local_world_sizes: 2049 entries, more than the bound of 2048" },
    { "assign.local_world_sizes", SET_ELEM, 0, NULL, "assign.local_world_sizes[0]: 0 outside 1..1024" },
    { "assign.local_world_sizes", SET_ELEM, 1025, NULL, "assign.local_world_sizes[0]: 1025 outside 1..1024" },
    { "assign.local_world_sizes", SET_ELEM, 3, NULL,
      "assign.world_size: 6, but assign.local_world_sizes add up to 7" },
    { "assign.master_addr", SET_LEN, 0, NULL, "assign.master_addr: empty, must be set" },
    { "assign.master_addr", SET_LEN, 256, NULL, "assign.master_addr: 256 bytes, more than the bound of 255" },
    { "assign.master_port", SET_VALUE, 65536, NULL, "assign.master_port: 65536 outside 1..65535" },
    { "assign.node_addrs", SET_COUNT, 2049, NULL, "assign.node_addrs: 2049 entries, more than the bound of 2048" },
    { "assign.node_addrs", SET_COUNT, 3, NULL, "assign.node_addrs: 3 entries, assign.nnodes is 2" },
    { "assign.node_addrs", SET_ELEM, 0, NULL, "assign.node_addrs[0]: empty, must be set" },
    { "assign.node_addrs", SET_ELEM, 256, NULL, "assign.node_addrs[0]: 256 bytes, more than the bound of 255" },
    { "assign.endpoint_ports", SET_COUNT, 65537, NULL,
      "assign.endpoint_ports: 65537 entries, more than the bound of 65536" },
    { "assign.endpoint_ports", SET_ELEM, 0, NULL, "assign.endpoint_ports[0]: 0 outside 1..65535" },
    { "assign.max_restarts", SET_VALUE, 100001, NULL, "assign.max_restarts: 100001 outside 0..100000" },
    { "assign.heartbeat_interval_ms", SET_VALUE, 0, NULL, "assign.heartbeat_interval_ms: 0 outside 1..86400000" },
    { "assign.heartbeat_timeout_ms", SET_VALUE, 86400001, NULL,
      "assign.heartbeat_timeout_ms: 86400001 outside 1..86400000" },
    { "assign.local_world_size", SET_VALUE, 0, NULL, "assign.local_world_size: 0 outside 1..1024" },
    { "assign.local_world_size", SET_VALUE, 3, NULL, "assign.local_ports: 4 entries, assign.local_world_size is 3" },
    { "assign.local_ports", SET_ELEM, 0, NULL, "assign.local_ports[0]: 0 outside 1..65535" },
    { "assign.local_ports", SET_ELEM, 7, NULL, "assign.local_ports[0]: 7, but endpoint_ports[2] is 7001" },
    { "assign.heartbeat_timeout_ms", SET_VALUE, 1000, NULL,
      "assign.heartbeat_timeout_ms: 1000, not above the interval of 1000" },
    { "refuse.code", SET_VALUE, 0, NULL, "refuse.code: 0 is not a valid Code" },
    { "refuse.code", SET_VALUE, 9, NULL, "refuse.code: 9 is not a valid Code" },
    { "refuse.text", SET_LEN, 1025, NULL, "refuse.text: 1025 bytes, more than the bound of 1024" },
    { "refuse.request", SET_VALUE, 18, NULL, "refuse.request: 18 outside 0..17" },
    { "refuse.key", SET_LEN, 129, NULL, "refuse.key: 129 bytes, more than the bound of 128" },
    { "refuse.key", SET_STR, 0, "a b",
      "refuse.key: byte 0x20 at offset 1 is not allowed (printable ASCII, no spaces)" },
    { "refuse.rank", SET_VALUE, 65536, NULL, "refuse.rank: 65536 outside 0..65535" },
    { "worker_exit.global_rank", SET_VALUE, 65536, NULL, "worker_exit.global_rank: 65536 outside 0..65535" },
    { "worker_exit.local_rank", SET_VALUE, 1024, NULL, "worker_exit.local_rank: 1024 outside 0..1023" },
    { "worker_exit.pid", SET_VALUE, 0, NULL, "worker_exit.pid: 0 outside 1..2147483647" },
    { "worker_exit.exit_code", SET_VALUE, 256, NULL, "worker_exit.exit_code: 256 outside 0..255" },
    { "worker_exit.signal", SET_VALUE, 65, NULL, "worker_exit.signal: 65 outside 0..64" },
    { "worker_exit.log_tail", SET_COUNT, 65, NULL, "worker_exit.log_tail: 65 entries, more than the bound of 64" },
    { "worker_exit.log_tail", SET_ELEM, 1025, NULL,
      "worker_exit.log_tail[0]: 1025 bytes, more than the bound of 1024" },
    { "worker_exit.error_quote", SET_COUNT, 65, NULL,
      "worker_exit.error_quote: 65 entries, more than the bound of 64" },
    { "worker_exit.error_quote", SET_ELEM, 1025, NULL,
      "worker_exit.error_quote[0]: 1025 bytes, more than the bound of 1024" },
    { "worker_exit.error_file", SET_LEN, 4097, NULL,
      "worker_exit.error_file: 4097 bytes, more than the bound of 4096" },
    { "stop.reason", SET_VALUE, 0, NULL, "stop.reason: 0 is not a valid Reason" },
    { "stop.reason", SET_VALUE, 7, NULL, "stop.reason: 7 is not a valid Reason" },
    { "stop.signal", SET_VALUE, 65, NULL, "stop.signal: 65 outside 0..64" },
    { "stop.grace_s", SET_VALUE, 3601, NULL, "stop.grace_s: 3601 outside 0..3600" },
    { "stop.text", SET_LEN, 1025, NULL, "stop.text: 1025 bytes, more than the bound of 1024" },
    { "nccl_id_put.key", SET_LEN, 0, NULL, "nccl_id_put.key: empty, must be set" },
    { "nccl_id_put.key", SET_LEN, 129, NULL, "nccl_id_put.key: 129 bytes, more than the bound of 128" },
    { "nccl_id_put.key", SET_STR, 0, "tp\x7f",
      "nccl_id_put.key: byte 0x7f at offset 2 is not allowed (printable ASCII, no spaces)" },
    { "nccl_id_put.rank", SET_VALUE, 65536, NULL, "nccl_id_put.rank: 65536 outside 0..65535" },
    { "nccl_id_put.id", SET_LEN, 0, NULL, "nccl_id_put.id: 0 bytes, must be exactly 128" },
    { "nccl_id_put.id", SET_LEN, 127, NULL, "nccl_id_put.id: 127 bytes, must be exactly 128" },
    { "nccl_id_put.id", SET_LEN, 129, NULL, "nccl_id_put.id: 129 bytes, must be exactly 128" },
    { "nccl_id_get.key", SET_LEN, 129, NULL, "nccl_id_get.key: 129 bytes, more than the bound of 128" },
    { "nccl_id_get.rank", SET_VALUE, 65536, NULL, "nccl_id_get.rank: 65536 outside 0..65535" },
    { "nccl_id.key", SET_LEN, 0, NULL, "nccl_id.key: empty, must be set" },
    { "nccl_id.id", SET_LEN, 127, NULL, "nccl_id.id: 127 bytes, must be exactly 128" },
    { "barrier.key", SET_LEN, 129, NULL, "barrier.key: 129 bytes, more than the bound of 128" },
    { "barrier.rank", SET_VALUE, 65536, NULL, "barrier.rank: 65536 outside 0..65535" },
    { "barrier.timeout_ms", SET_VALUE, 86400001, NULL, "barrier.timeout_ms: 86400001 outside 0..86400000" },
    { "barrier_done.key", SET_LEN, 0, NULL, "barrier_done.key: empty, must be set" },
    { "barrier_done.status", SET_VALUE, 0, NULL, "barrier_done.status: 0 is not a valid Status" },
    { "barrier_done.status", SET_VALUE, 4, NULL, "barrier_done.status: 4 is not a valid Status" },
    { "barrier_done.ranks", SET_COUNT, 1025, NULL, "barrier_done.ranks: 1025 entries, more than the bound of 1024" },
    { "barrier_done.ranks", SET_ELEM, 65536, NULL, "barrier_done.ranks[0]: 65536 outside 0..65535" },
    { "report.progress.ranks", SET_COUNT, 0, NULL, "report.progress.ranks: 0 entries, must be 1..1024" },
    { "report.progress.ranks", SET_COUNT, 1025, NULL, "report.progress.ranks: 1025 entries, must be 1..1024" },
    { "report.progress.ranks.rank", SET_VALUE, 65536, NULL, "report.progress.ranks.rank: 65536 outside 0..65535" },
    { "report.progress.ranks.step", SET_VALUE, -2, NULL,
      "report.progress.ranks.step: -2 outside -1..9223372036854775807" },
    { "report.progress.ranks.out_age_ms", SET_VALUE, 31536000001, NULL,
      "report.progress.ranks.out_age_ms: 31536000001 outside 0..31536000000" },
    { "report.progress.ranks.step_age_ms", SET_VALUE, -2, NULL,
      "report.progress.ranks.step_age_ms: -2 outside -1..31536000000" },
    { "report.stacks_request.deadline_ms", SET_VALUE, 999, NULL,
      "report.stacks_request.deadline_ms: 999 outside 1000..600000" },
    { "report.stacks_request.deadline_ms", SET_VALUE, 600001, NULL,
      "report.stacks_request.deadline_ms: 600001 outside 1000..600000" },
    { "report.stacks.rank", SET_VALUE, 65536, NULL, "report.stacks.rank: 65536 outside 0..65535" },
    { "report.stacks.doc", SET_LEN, 0, NULL, "report.stacks.doc: empty, must be set" },
    { "report.stacks.doc", SET_LEN, 262145, NULL, "report.stacks.doc: 262145 bytes, more than the bound of 262144" },
    { "report.stacks_done.ranks", SET_VALUE, 1025, NULL, "report.stacks_done.ranks: 1025 outside 0..1024" },
    { "report.health.summaries", SET_LEN, 0, NULL, "report.health.summaries: empty, must be set" },
    { "report.health.summaries", SET_LEN, 262145, NULL,
      "report.health.summaries: 262145 bytes, more than the bound of 262144" },
    { "report.health_block.text", SET_LEN, 0, NULL, "report.health_block.text: empty, must be set" },
    { "report.health_block.text", SET_LEN, 262145, NULL,
      "report.health_block.text: 262145 bytes, more than the bound of 262144" },
    { "report.summary.exit_status", SET_VALUE, 0, NULL, "report.summary.exit_status: 0 outside 1..255" },
    { "report.summary.exit_status", SET_VALUE, 256, NULL, "report.summary.exit_status: 256 outside 1..255" },
    { "report.summary.block", SET_LEN, 0, NULL, "report.summary.block: empty, must be set" },
    { "report.summary.headline", SET_LEN, 1025, NULL,
      "report.summary.headline: 1025 bytes, more than the bound of 1024" },
    { "bye.exit_status", SET_VALUE, 256, NULL, "bye.exit_status: 256 outside 0..255" },
    { "relay_start.max_children", SET_VALUE, 0, NULL, "relay_start.max_children: 0 outside 1..65535" },
    { "relay_start.max_children", SET_VALUE, 65536, NULL, "relay_start.max_children: 65536 outside 1..65535" },
    { "relay_start.heartbeat_timeout_ms", SET_VALUE, 500, NULL,
      "relay_start.heartbeat_timeout_ms: 500, not above the interval of 500" },
    { "relay_ready.endpoint", SET_LEN, 301, NULL, "relay_ready.endpoint: 301 bytes, more than the bound of 300" },
    { "relay_ready.endpoint", SET_STR, 0, "tcp://a b:1",
      "relay_ready.endpoint: byte 0x20 at offset 7 is not allowed (printable ASCII, no spaces)" },
    { "redirect.endpoint", SET_LEN, 0, NULL, "redirect.endpoint: empty, must be set" },
    { "redirect.endpoint", SET_LEN, 301, NULL, "redirect.endpoint: 301 bytes, more than the bound of 300" },
};

/* Makes a sample whose body holds the field path names, and returns the message and field to change. */
static ProtobufCMessage *s_target(struct sample *s, const char *path, const ProtobufCFieldDescriptor **f)
{
    const char *dot = strchr(path, '.');
    const ProtobufCFieldDescriptor *bf;
    char body[32];
    ProtobufCMessage *m;
    if (!dot) {
        sample_init(s, WIRE_HEARTBEAT);
        *f = protobuf_c_message_descriptor_get_field_by_name(&plaunch__envelope__descriptor, path);
        assert_non_null(*f);
        return &s->msg.base;
    }
    snprintf(body, sizeof body, "%.*s", (int)(dot - path), path);
    bf = protobuf_c_message_descriptor_get_field_by_name(&plaunch__envelope__descriptor, body);
    assert_non_null(bf);
    sample_init(s, bf->id);
    m = s_body(&s->msg);
    /* Deeper: "report.KIND.field" (that kind's sample), "report.progress.ranks.field" (the first entry). */
    for (const char *next; (next = strchr(dot + 1, '.')) != NULL; dot = next) {
        snprintf(body, sizeof body, "%.*s", (int)(next - dot - 1), dot + 1);
        bf = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, body);
        if (!bf || bf->type != PROTOBUF_C_TYPE_MESSAGE)
            fail_msg("no message field %s in %s", body, path);
        if (m == &s->report.base)
            sample_report(s, (wire_report_t)bf->id);
        void *p = (char *)m + bf->offset;
        m = bf->label == PROTOBUF_C_LABEL_REPEATED ? (*(ProtobufCMessage ***)p)[0] : *(ProtobufCMessage **)p;
    }
    *f = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, dot + 1);
    if (!*f)
        fail_msg("no field %s", path);
    return m;
}

static char *s_string_of(size_t n)
{
    char *str = s_keep(malloc(n + 1));
    memset(str, 'a', n);
    str[n] = '\0';
    return str;
}

static void s_set_scalar(const ProtobufCFieldDescriptor *f, void *p, int64_t v)
{
    if (f->type == PROTOBUF_C_TYPE_UINT64 || f->type == PROTOBUF_C_TYPE_SINT64)
        *(uint64_t *)p = (uint64_t)v;
    else
        *(uint32_t *)p = (uint32_t)v;
}

static void s_apply(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, const struct bad *b)
{
    char *p = (char *)m + f->offset;
    size_t *count = (size_t *)((char *)m + f->quantifier_offset);
    size_t es = f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE ? sizeof(void *)
                                                                                          : sizeof(uint32_t);
    char *arr;
    switch (b->op) {
    case SET_VALUE:
        s_set_scalar(f, p, b->arg);
        break;
    case SET_STR:
        *(const char **)p = b->str;
        break;
    case SET_LEN:
        if (f->type == PROTOBUF_C_TYPE_STRING) {
            *(char **)p = s_string_of((size_t)b->arg);
        } else {
            ProtobufCBinaryData *bin = (ProtobufCBinaryData *)p;
            bin->len = (size_t)b->arg;
            bin->data = s_keep(malloc(bin->len + 1));
            memset(bin->data, 0x5a, bin->len);
        }
        break;
    case SET_COUNT:
        arr = s_keep(calloc((size_t)b->arg, es));
        for (int64_t i = 0; i < b->arg; i++)
            memcpy(arr + (size_t)i * es, *(char **)p, es);
        *count = (size_t)b->arg;
        *(char **)p = arr;
        break;
    case SET_ELEM:
        if (f->type == PROTOBUF_C_TYPE_STRING)
            (*(char ***)p)[0] = s_string_of((size_t)b->arg);
        else
            (*(uint32_t **)p)[0] = (uint32_t)b->arg;
        break;
    }
}

/* Every kind of REPORT, every field set, survives a round trip as the same kind; a REPORT without a kind, or
 * whose kind's message is another's, is refused by name. */
static void test_round_trip_every_report(void **state)
{
    for (size_t i = 0; i < SAMPLE_NREPORTS; i++) {
        struct sample s;
        char err[256] = "";
        size_t len, len2;
        sample_init(&s, WIRE_REPORT);
        sample_report(&s, sample_reports[i]);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(&plaunch__report__descriptor, sample_reports[i]);
        assert_non_null(f);
        const ProtobufCMessage *k = *(ProtobufCMessage **)((char *)&s.report + f->offset);
        s_assert_all_set(k);
        if (sample_reports[i] == WIRE_R_PROGRESS)
            s_assert_all_set(&s.progress_ranks[0].base);
        uint8_t *buf = s_encode(&s.msg, &len);
        wire_msg_t *in = wire_decode(buf, len, WIRE_TO_COORD | WIRE_TO_AGENT, err, sizeof err);
        if (!in)
            fail_msg("%s: %s", wire_report_name(sample_reports[i]), err);
        assert_int_equal(in->body_case, WIRE_REPORT);
        assert_int_equal(in->report->kind_case, sample_reports[i]);
        uint8_t *buf2 = s_encode(in, &len2);
        assert_int_equal(len2, len);
        assert_memory_equal(buf2, buf, len);
        assert_string_not_equal(wire_report_name(sample_reports[i]), "UNKNOWN");
        wire_free(&in);
        free(buf);
        free(buf2);
    }
    struct sample s;
    char err[256] = "";
    size_t len;
    sample_init(&s, WIRE_REPORT);
    s.report.kind_case = WIRE_R_NONE;
    s.report.stacks = NULL;
    assert_int_equal(wire_check(&s.msg, err, sizeof err), -1);
    assert_string_equal(err, "report: no kind set (empty, or of a newer protocol)");
    uint8_t *buf = s_pack_raw(&s.msg, &len);
    assert_null(wire_decode(buf, len, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "report: no kind set (empty, or of a newer protocol)");
    free(buf);
    sample_init(&s, WIRE_REPORT);
    s.report.stacks = (Plaunch__Stacks *)&s.stacks_done; /* the kind says STACKS, the message is another */
    assert_int_equal(wire_check(&s.msg, err, sizeof err), -1);
    assert_string_equal(err, "report.stacks: missing or of another type");
    assert_string_equal(wire_report_name((wire_report_t)99), "UNKNOWN");
}

static void test_every_bound_refused_by_name(void **state)
{
    for (size_t i = 0; i < sizeof s_bad / sizeof s_bad[0]; i++) {
        const struct bad *b = &s_bad[i];
        const ProtobufCFieldDescriptor *f;
        struct sample s;
        char err[512] = "";
        uint8_t *buf;
        size_t len;
        wire_msg_t *in;
        ProtobufCMessage *m = s_target(&s, b->field, &f);
        s_apply(m, f, b);
        buf = s_pack_raw(&s.msg, &len);
        assert_true(len <= WIRE_MAX_MSG);
        in = wire_decode(buf, len, WIRE_ANY, err, sizeof err);
        if (in)
            fail_msg("%s: decoded though out of bounds", b->field);
        if (strcmp(err, b->want) != 0)
            fail_msg("decode %s: got '%s', want '%s'", b->field, err, b->want);
        err[0] = '\0';
        assert_int_equal(wire_encode(&s.msg, buf, len, err, sizeof err), -1);
        if (strcmp(err, b->want) != 0)
            fail_msg("encode %s: got '%s', want '%s'", b->field, err, b->want);
        free(buf);
        s_release();
    }
}

static void test_body_rules(void **state)
{
    struct sample s;
    char err[256] = "";
    uint8_t *buf;
    size_t len;
    wire_msg_t *in;

    sample_init(&s, WIRE_JOIN);
    buf = s_encode(&s.msg, &len);
    assert_null(wire_decode(buf, len, WIRE_TO_AGENT, err, sizeof err));
    assert_string_equal(err, "JOIN: not accepted by this receiver (sent to the wrong side?)");
    in = wire_decode(buf, len, WIRE_TO_COORD, err, sizeof err);
    assert_non_null(in);
    wire_free(&in);
    free(buf);

    /* A REPORT speaks for a node: an agent takes none from its workers, a relay passes its nodes' on. */
    sample_init(&s, WIRE_REPORT);
    buf = s_encode(&s.msg, &len);
    assert_null(wire_decode(buf, len, WIRE_TO_AGENT_IPC, err, sizeof err));
    assert_string_equal(err, "REPORT: not accepted by this receiver (sent to the wrong side?)");
    in = wire_decode(buf, len, WIRE_TO_RELAY, err, sizeof err);
    assert_non_null(in);
    wire_free(&in);
    free(buf);

    wire_init(&s.msg, SAMPLE_JOB, 0, WIRE_NONE, NULL);
    assert_int_equal(wire_encode(&s.msg, NULL, 0, err, sizeof err), -1);
    assert_string_equal(err, "message has no body (empty, or of a newer protocol)");
    buf = s_pack_raw(&s.msg, &len);
    assert_null(wire_decode(buf, len, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "message has no body (empty, or of a newer protocol)");
    free(buf);

    sample_init(&s, WIRE_BYE);
    s.msg.bye = NULL;
    assert_int_equal(wire_encode(&s.msg, NULL, 0, err, sizeof err), -1);
    assert_string_equal(err, "bye: body missing or of another type");

    sample_init(&s, WIRE_ASSIGN);
    s.node_addrs[1] = NULL;
    assert_int_equal(wire_encode(&s.msg, NULL, 0, err, sizeof err), -1);
    assert_string_equal(err, "assign.node_addrs[1]: NULL entry");

    sample_init(&s, WIRE_JOIN);
    buf = malloc(64);
    assert_int_equal(wire_encode(&s.msg, buf, 10, err, sizeof err), -1);
    assert_true(strstr(err, "JOIN: ") == err && strstr(err, "the buffer holds 10"));
    free(buf);
}

/* RELAYED: every item is checked field by field, then against what its event needs. */
static void s_relayed_refused(struct sample *s, const char *want)
{
    char err[256] = "";
    assert_int_equal(wire_encode(&s->msg, NULL, 0, err, sizeof err), -1);
    if (strcmp(err, want) != 0)
        fail_msg("got '%s', want '%s'", err, want);
}

static void test_relayed_rules(void **state)
{
    struct sample s;
    char err[256] = "";
    uint8_t *buf;
    size_t len;

    sample_init(&s, WIRE_RELAYED); /* valid as sampled, and only between a relay and the coordinator */
    buf = s_encode(&s.msg, &len);
    wire_msg_t *in = wire_decode(buf, len, WIRE_TO_COORD, err, sizeof err);
    assert_non_null(in);
    assert_int_equal(in->relayed->n_items, 3);
    assert_int_equal(in->relayed->items[1]->payload.len, sizeof s.relay_payload);
    assert_string_equal(in->relayed->items[0]->peer_addr, "10.0.0.9");
    wire_free(&in);
    assert_null(wire_decode(buf, len, WIRE_TO_RELAY, err, sizeof err));
    assert_string_equal(err, "RELAYED: not accepted by this receiver (sent to the wrong side?)");
    assert_null(wire_decode(buf, len, WIRE_TO_WORKER, err, sizeof err));
    free(buf);

    sample_init(&s, WIRE_RELAYED);
    s.relayed.n_items = 0;
    s_relayed_refused(&s, "relayed.items: 0 entries, must be 1..4096");
    sample_init(&s, WIRE_RELAYED);
    s.items[1].from = 0;
    s_relayed_refused(&s, "relayed.items[1]: names its children neither or both ways (from and to)");
    sample_init(&s, WIRE_RELAYED);
    s.items[1].n_to = 1;
    s.items[1].to = s.relay_to;
    s_relayed_refused(&s, "relayed.items[1]: names its children neither or both ways (from and to)");
    sample_init(&s, WIRE_RELAYED);
    s.items[1].payload.len = 0;
    s_relayed_refused(&s, "relayed.items[1]: MESSAGE without a payload");
    sample_init(&s, WIRE_RELAYED);
    s.items[2].payload = s.items[1].payload;
    s_relayed_refused(&s, "relayed.items[2]: a payload without MESSAGE");
    sample_init(&s, WIRE_RELAYED);
    s.items[0].peer_addr = "";
    s_relayed_refused(&s, "relayed.items[0]: OPENED without from, peer_addr and peer_name");
    sample_init(&s, WIRE_RELAYED);
    s.items[0].peer_addr = "10.0.0.9 x";
    s_relayed_refused(&s, "relayed.items.peer_addr: byte 0x20 at offset 8 is not allowed (printable ASCII, no spaces)");
    sample_init(&s, WIRE_RELAYED);
    s.items[2].from = 0;
    s.items[2].n_to = 2;
    s.items[2].to = s.relay_to;
    s_relayed_refused(&s, "relayed.items[2]: an event for children in to");
    sample_init(&s, WIRE_RELAYED); /* the coordinator's way: DROP names children in to */
    s.items[2].event = PLAUNCH__RELAY_ITEM__EVENT__DROP;
    s_relayed_refused(&s, "relayed.items[2]: DROP without to");
    s.items[2].from = 0;
    s.items[2].n_to = 3;
    s.items[2].to = s.relay_to;
    s.items[0].event = PLAUNCH__RELAY_ITEM__EVENT__MESSAGE;
    s.items[0].from = 0;
    s.items[0].n_to = 3;
    s.items[0].to = s.relay_to;
    s.items[0].payload = s.items[1].payload;
    s.items[0].watch = 1;
    s.items[0].peer_addr = "";
    s.items[0].peer_name = "";
    s.relayed.n_items = 1;
    s.item_ptrs[1] = &s.items[2];
    s.relayed.n_items = 2;
    buf = s_encode(&s.msg, &len);
    in = wire_decode(buf, len, WIRE_TO_AGENT, err, sizeof err);
    if (!in)
        fail_msg("a MESSAGE to 3 children and a DROP: %s", err);
    assert_int_equal(in->relayed->items[0]->n_to, 3);
    assert_true(in->relayed->items[0]->watch);
    wire_free(&in);
    free(buf);
    s.items[0].to[1] = 0;
    s_relayed_refused(&s, "relayed.items.to[1]: 0 outside 1..4294967295");
    s.items[0].to[1] = 2;
    s.items[2].event = 9;
    s_relayed_refused(&s, "relayed.items.event: 9 is not a valid Event");
}

/* ---- hostile bytes -------------------------------------------------------------------------------------------- */

/* Replaces the first occurrence of `what` in buf[len] by `with` (same length). */
static void s_patch(uint8_t *buf, size_t len, const char *what, const char *with, size_t n)
{
    uint8_t *at = memmem(buf, len, what, n);
    assert_non_null(at);
    memcpy(at, with, n);
}

static void test_nul_in_strings(void **state)
{
    struct sample s;
    char err[256] = "";
    uint8_t *buf;
    size_t len;
    sample_init(&s, WIRE_JOIN);
    buf = s_encode(&s.msg, &len);
    s_patch(buf, len, "gpu-07", "gpu\00007", 6);
    assert_null(wire_decode(buf, len, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "join.hostname: contains a NUL byte");
    s_patch(buf, len, "gpu\00007", "gpu-07", 6);
    s_patch(buf, len, SAMPLE_JOB, "job\0001", 5);
    assert_null(wire_decode(buf, len, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "job_id: contains a NUL byte");
    free(buf);

    /* From a newer peer, a NUL in the body drops the body, not the message. */
    sample_init(&s, WIRE_JOIN);
    s.msg.protocol_version = WIRE_PROTOCOL_VERSION + 1;
    buf = s_encode(&s.msg, &len);
    s_patch(buf, len, "gpu-07", "gpu\00007", 6);
    {
        wire_msg_t *in = wire_decode(buf, len, WIRE_ANY, err, sizeof err);
        assert_non_null(in);
        assert_int_equal(in->body_case, WIRE_NONE);
        wire_free(&in);
    }
    free(buf);
}

static void test_wire_format_refused(void **state)
{
    /* version 1, then field 0 as an overlong tag (protobuf-c would keep it as an unknown field) */
    static const uint8_t tag0[] = { 0x08, 0x01, 0x82, 0x00, 0x00 };
    /* version 1, then a group (wire type 3) */
    static const uint8_t group[] = { 0x08, 0x01, 0x13, 0x14 };
    /* version 1, then a string field whose length runs past the end */
    static const uint8_t past[] = { 0x08, 0x01, 0x12, 0x05, 'j', 'o' };
    char err[256];
    assert_null(wire_decode(tag0, sizeof tag0, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "envelope: field number 0 is not valid");
    assert_null(wire_decode(group, sizeof group, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "envelope: malformed field near offset 3");
    assert_null(wire_decode(past, sizeof past, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "envelope: malformed field near offset 4");
}

static size_t s_put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    for (; v >= 0x80; v >>= 7)
        out[n++] = (uint8_t)(v | 0x80);
    out[n++] = (uint8_t)v;
    return n;
}

static void test_size_limits(void **state)
{
    char err[256] = "";
    size_t n = 500000, len = 0;
    uint8_t *buf = calloc(WIRE_MAX_MSG + 1, 1);
    assert_non_null(buf);
    assert_null(wire_decode(buf, WIRE_MAX_MSG + 1, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "message of 1048577 bytes, more than WIRE_MAX_MSG (1048576)");
    assert_null(wire_decode(buf, 0, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "empty message");
    /* protocol_version (this one), then an ASSIGN of 500000 empty node_addrs: 1 MB on the wire, 12 MB and more
     * unpacked. */
    buf[len++] = 0x08;
    buf[len++] = WIRE_PROTOCOL_VERSION;
    buf[len++] = 0x32;
    len += s_put_varint(buf + len, 2 * n);
    for (size_t i = 0; i < n; i++) {
        buf[len++] = 0x42;
        buf[len++] = 0x00;
    }
    assert_true(len <= WIRE_MAX_MSG);
    assert_null(wire_decode(buf, len, WIRE_ANY, err, sizeof err));
    assert_string_equal(err, "message of 1000006 bytes needs more than WIRE_MAX_DECODED (4194304) bytes unpacked");
    free(buf);
}

static void test_truncated_refused(void **state)
{
    for (size_t i = 0; i < SAMPLE_NTYPES; i++) {
        struct sample s;
        char err[256];
        size_t len;
        uint8_t *buf, *copy;
        sample_init(&s, sample_types[i]);
        buf = s_encode(&s.msg, &len);
        for (size_t cut = 0; cut < len; cut++) {
            /* A copy of exactly `cut` bytes, so that ASan sees any read past the end. */
            copy = malloc(cut + 1);
            memcpy(copy, buf, cut);
            err[0] = '\0';
            if (wire_decode(copy, cut, WIRE_ANY, err, sizeof err))
                fail_msg("%s cut to %zu of %zu bytes was accepted", wire_type_name(sample_types[i]), cut, len);
            assert_true(err[0] != '\0');
            free(copy);
        }
        free(buf);
    }
}

static void test_random_bytes_refused(void **state)
{
    char err[256];
    uint8_t buf[512];
    srandom(20240601);
    for (int i = 0; i < 50000; i++) {
        size_t len = (size_t)random() % sizeof buf;
        for (size_t j = 0; j < len; j++)
            buf[j] = (uint8_t)random();
        if (i % 2)
            buf[0] = 0x08, buf[1] = WIRE_PROTOCOL_VERSION;
        assert_null(wire_decode(buf, len, WIRE_ANY, err, sizeof err));
    }
}

/* Flipped bytes in valid messages: whatever decodes must encode again, to the same bytes. */
static void test_mutated_messages(void **state)
{
    char err[256];
    size_t accepted = 0;
    srandom(7);
    for (size_t i = 0; i < SAMPLE_NTYPES; i++) {
        struct sample s;
        size_t len;
        uint8_t *buf;
        sample_init(&s, sample_types[i]);
        buf = s_encode(&s.msg, &len);
        for (int k = 0; k < 3000; k++) {
            uint8_t *copy = malloc(len);
            wire_msg_t *in;
            memcpy(copy, buf, len);
            for (int flips = 1 + (int)(random() % 3); flips > 0; flips--)
                copy[(size_t)random() % len] ^= (uint8_t)(1u << (random() % 8));
            in = wire_decode(copy, len, WIRE_ANY, err, sizeof err);
            if (in) {
                size_t len2, len3;
                uint8_t *again = s_encode(in, &len2);
                wire_msg_t *in2 = wire_decode(again, len2, WIRE_ANY, err, sizeof err);
                uint8_t *third;
                if (!in2)
                    fail_msg("%s, flipped, decoded, encoded again: %s", wire_type_name(sample_types[i]), err);
                third = s_encode(in2, &len3);
                assert_int_equal(len3, len2);
                assert_memory_equal(third, again, len2);
                free(third);
                free(again);
                wire_free(&in2);
                wire_free(&in);
                accepted++;
            }
            free(copy);
        }
        free(buf);
    }
    /* Some flips land in values that stay in bounds (a port, a text byte): both paths run. */
    assert_true(accepted > 0);
}

/* ---- peers of another version or job -------------------------------------------------------------------------- */

/* Encodes s->msg, decodes it as `allowed` would, and returns wire_check_peer's verdict in err. */
static int s_peer_verdict(struct sample *s, uint64_t allowed, uint32_t version, const char *job, char *err,
                          size_t errlen)
{
    size_t len;
    uint8_t *buf = s_pack_raw(&s->msg, &len);
    wire_msg_t *in = wire_decode(buf, len, allowed, err, errlen);
    int rc;
    if (!in)
        fail_msg("decode: %s", err);
    rc = wire_check_peer(in, version, job, err, errlen);
    wire_free(&in);
    free(buf);
    return rc;
}

static void test_version_mismatch(void **state)
{
    struct sample s;
    char err[512];

    sample_init(&s, WIRE_JOIN);
    s.msg.protocol_version = 6;
    s.join.plaunch_version = "0.2.0";
    assert_int_equal(s_peer_verdict(&s, WIRE_TO_COORD, 5, SAMPLE_JOB, err, sizeof err), -1);
    assert_string_equal(err, "agent on node gpu-07 (plaunch 0.2.0) speaks protocol 6, coordinator (plaunch "
                             PLAUNCH_VERSION ") speaks protocol 5: upgrade plaunch on the coordinator's node");

    sample_init(&s, WIRE_JOIN);
    assert_int_equal(s_peer_verdict(&s, WIRE_TO_COORD, 6, SAMPLE_JOB, err, sizeof err), -1);
    assert_string_equal(err, "agent on node gpu-07 (plaunch 0.1.0) speaks protocol 5, coordinator (plaunch "
                             PLAUNCH_VERSION ") speaks protocol 6: upgrade plaunch on node gpu-07");

    sample_init(&s, WIRE_HELLO);
    s.msg.protocol_version = 6;
    s.hello.plaunch_version = "0.2.0";
    assert_int_equal(s_peer_verdict(&s, WIRE_TO_AGENT, 5, NULL, err, sizeof err), -1);
    assert_string_equal(err, "coordinator on node head-0 (plaunch 0.2.0) speaks protocol 6, agent (plaunch "
                             PLAUNCH_VERSION ") speaks protocol 5: upgrade plaunch on the agent's node");

    /* A newer peer's JOIN that breaks this version's bounds: the body is dropped, the version still reported. */
    sample_init(&s, WIRE_JOIN);
    s.msg.protocol_version = 7;
    s.join.nproc = 2000;
    s.join.n_worker_ports = 0;
    assert_int_equal(s_peer_verdict(&s, WIRE_TO_COORD, 5, SAMPLE_JOB, err, sizeof err), -1);
    assert_string_equal(err, "peer speaks protocol 7, this node (plaunch " PLAUNCH_VERSION
                             ") speaks protocol 5: upgrade plaunch on this node");

    sample_init(&s, WIRE_HEARTBEAT);
    assert_int_equal(s_peer_verdict(&s, WIRE_ANY, 5, SAMPLE_JOB, err, sizeof err), 0);
}

static void test_newer_body_type(void **state)
{
    /* protocol_version 6, job_id "job-1", then field 30 (a body this version does not know), 2 bytes. */
    static const uint8_t buf[] = { 0x08, 0x06, 0x12, 0x05, 'j', 'o', 'b', '-', '1', 0xf2, 0x01, 0x02, 0x08, 0x01 };
    char err[512];
    wire_msg_t *in = wire_decode(buf, sizeof buf, WIRE_ANY, err, sizeof err);
    assert_non_null(in);
    assert_int_equal(in->body_case, WIRE_NONE);
    assert_int_equal(wire_check_peer(in, 5, SAMPLE_JOB, err, sizeof err), -1);
    assert_string_equal(err, "peer speaks protocol 6, this node (plaunch " PLAUNCH_VERSION
                             ") speaks protocol 5: upgrade plaunch on this node");
    wire_free(&in);
    /* The same from a peer of this version is refused by the decoder: same version, same schema. */
    {
        uint8_t v1[sizeof buf];
        memcpy(v1, buf, sizeof buf);
        v1[1] = 0x05;
        assert_null(wire_decode(v1, sizeof v1, WIRE_ANY, err, sizeof err));
        assert_string_equal(err, "envelope: field 30 is not in protocol 5 (a peer built from other sources?)");
    }
}

static void test_job_mismatch(void **state)
{
    struct sample s;
    char err[512];
    sample_init(&s, WIRE_JOIN);
    s.msg.job_id = "job-2";
    assert_int_equal(s_peer_verdict(&s, WIRE_TO_COORD, WIRE_PROTOCOL_VERSION, SAMPLE_JOB, err, sizeof err), -1);
    assert_string_equal(err, "agent on node gpu-07 (plaunch 0.1.0) is in job 'job-2', coordinator (plaunch "
                             PLAUNCH_VERSION ") runs job 'job-1': start every node with the same job id");
    assert_int_equal(s_peer_verdict(&s, WIRE_TO_COORD, WIRE_PROTOCOL_VERSION, NULL, err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_type),
        cmocka_unit_test(test_round_trip_every_report),
        cmocka_unit_test(test_round_trip_values),
        cmocka_unit_test(test_assign_endpoints),
        cmocka_unit_test(test_every_bound_refused_by_name),
        cmocka_unit_test(test_body_rules),
        cmocka_unit_test(test_relayed_rules),
        cmocka_unit_test(test_nul_in_strings),
        cmocka_unit_test(test_wire_format_refused),
        cmocka_unit_test(test_size_limits),
        cmocka_unit_test(test_truncated_refused),
        cmocka_unit_test(test_random_bytes_refused),
        cmocka_unit_test(test_mutated_messages),
        cmocka_unit_test(test_version_mismatch),
        cmocka_unit_test(test_newer_body_type),
        cmocka_unit_test(test_job_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
