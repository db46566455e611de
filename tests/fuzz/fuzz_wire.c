/* fuzz_wire: libFuzzer target for wire_decode; whatever it accepts must encode again and decode to the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire/wire.h"

/* A broken property is a crash, so that libFuzzer keeps the input. */
static void s_die(const char *what, const char *err)
{
    fprintf(stderr, "fuzz_wire: %s: %s\n", what, err);
    abort();
}

/* Encodes msg; it passed wire_decode, so wire_encode must take it. */
static uint8_t *s_encode(const wire_msg_t *msg, size_t *len)
{
    char err[512] = "";
    uint8_t *buf = wire_encode_alloc(msg, len, err, sizeof err);
    if (!buf)
        s_die("decoded message does not encode", err);
    return buf;
}

/* Touches what callers read from a decoded message, so that ASan sees any bad pointer or length. */
static void s_use(const wire_msg_t *msg)
{
    const uint32_t *ranks;
    char err[512] = "", one[WIRE_MAX_HOST + 16], *all;
    wire_check_peer(msg, WIRE_PROTOCOL_VERSION, "job-1", err, sizeof err);
    if (msg->body_case != WIRE_ASSIGN)
        return;
    all = wire_assign_endpoints(msg->assign, err, sizeof err);
    if (!all)
        s_die("endpoints of a decoded ASSIGN", err);
    free(all);
    ranks = (const uint32_t[]){ 0, msg->assign->first_rank, msg->assign->world_size - 1 };
    for (int i = 0; i < 3; i++)
        if (wire_assign_endpoint(msg->assign, ranks[i], one, sizeof one, err, sizeof err) < 0)
            s_die("endpoint of a rank of a decoded ASSIGN", err);
}

/* A receiver that accepts fewer body types takes the message if and only if its type is one of them. */
static void s_check_mask(const uint8_t *data, size_t size, const wire_msg_t *msg)
{
    static const uint64_t masks[] = { WIRE_TO_COORD, WIRE_TO_AGENT, WIRE_TO_AGENT_IPC, WIRE_TO_WORKER };
    uint64_t mask = masks[size % 4];
    char err[512] = "";
    wire_msg_t *in = wire_decode(data, size, mask, err, sizeof err);
    int want = msg->protocol_version != WIRE_PROTOCOL_VERSION || (mask & WIRE_BIT(msg->body_case));
    if (!in != !want)
        s_die("direction mask", in ? "accepted a body outside the mask" : err);
    wire_free(&in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    size_t len, len2;
    uint8_t *again, *third;
    wire_msg_t *in2;
    wire_msg_t *in = wire_decode(data, size, WIRE_ANY, err, sizeof err);
    if (!in) {
        if (!err[0])
            s_die("refused without a message", "(empty)");
        return 0;
    }
    s_use(in);
    s_check_mask(data, size, in);
    again = s_encode(in, &len);
    if (wire_encode(in, again, len, err, sizeof err) != (ssize_t)len ||
        wire_encode(in, again, len - 1, err, sizeof err) != -1)
        s_die("wire_encode into a buffer of the exact size, and of one byte less", err);
    in2 = wire_decode(again, len, WIRE_ANY, err, sizeof err);
    if (!in2)
        s_die("re-encoded message does not decode", err);
    third = s_encode(in2, &len2);
    if (len2 != len || memcmp(third, again, len) != 0)
        s_die("encode(decode(x)) is not a fixed point", wire_type_name(in->body_case));
    free(third);
    free(again);
    wire_free(&in2);
    wire_free(&in);
    return 0;
}
