/* mon_wire: sizes and header checks of the sampler's protocol (the frames are described in mon_wire.h). */
#include "launcher/monitor/sampling/mon_wire.h"

#include <stdio.h>

_Static_assert(sizeof(struct mon_wire_hdr) == 16, "the header is 16 bytes on the wire");
_Static_assert(sizeof(struct mon_wire_target) == 16 + MON_GPU_MAX, "a target is 80 bytes on the wire");

size_t mon_wire_request_len(int kind, uint32_t count)
{
    if (kind == MON_WIRE_SAMPLES)
        return (size_t)count * sizeof(struct mon_wire_target);
    if (kind == MON_WIRE_PREFLIGHT || kind == MON_WIRE_PROCS)
        return (size_t)count * MON_GPU_MAX;
    return 0;
}

int mon_wire_check_request(const struct mon_wire_hdr *h, char *err, size_t errlen)
{
    if (h->magic != MON_WIRE_MAGIC) {
        snprintf(err, errlen, "not a request of this plaunch (magic 0x%08x)", (unsigned)h->magic);
        return -1;
    }
    if (h->kind != MON_WIRE_SAMPLES && h->kind != MON_WIRE_PREFLIGHT && h->kind != MON_WIRE_PROCS) {
        snprintf(err, errlen, "unknown request kind %u", (unsigned)h->kind);
        return -1;
    }
    if (h->count < 1 || h->count > MON_TARGETS_MAX) {
        snprintf(err, errlen, "request for %u items (1 to %d)", (unsigned)h->count, MON_TARGETS_MAX);
        return -1;
    }
    if (h->len != mon_wire_request_len(h->kind, h->count) || h->flags || h->note_len) {
        snprintf(err, errlen, "request of %u items with %u bytes (want %zu)", (unsigned)h->count, (unsigned)h->len,
                 mon_wire_request_len(h->kind, h->count));
        return -1;
    }
    return 0;
}

size_t mon_wire_answer_max(int kind, uint32_t count)
{
    size_t body = kind == MON_WIRE_SAMPLES ? (size_t)count * sizeof(struct mon_sample)
                                           : MON_WIRE_CUDA_MAX + MON_WIRE_TEXT_MAX;
    return sizeof(struct mon_wire_hdr) + MON_WIRE_NOTE_MAX + body;
}

int mon_wire_check_answer(const struct mon_wire_hdr *h, int kind, uint32_t count, char *err, size_t errlen)
{
    if (h->magic != MON_WIRE_MAGIC || h->kind != kind) {
        snprintf(err, errlen, "the sampler answered nonsense (magic 0x%08x, kind %u; want an answer of kind '%c')",
                 (unsigned)h->magic, (unsigned)h->kind, kind);
        return -1;
    }
    if (h->note_len > MON_WIRE_NOTE_MAX || (h->flags & ~MON_WIRE_NVML_OK)) {
        snprintf(err, errlen, "the sampler's answer has a note of %u bytes (at most %d) or flags 0x%x",
                 (unsigned)h->note_len, MON_WIRE_NOTE_MAX, (unsigned)h->flags);
        return -1;
    }
    if (kind == MON_WIRE_SAMPLES) {
        if (h->count != count || h->len != h->note_len + (size_t)count * sizeof(struct mon_sample)) {
            snprintf(err, errlen, "the sampler answered %u samples in %u bytes for %u asked (want %zu bytes)",
                     (unsigned)h->count, (unsigned)h->len, (unsigned)count,
                     h->note_len + (size_t)count * sizeof(struct mon_sample));
            return -1;
        }
        return 0;
    }
    size_t fixed = (size_t)h->note_len + MON_WIRE_CUDA_MAX;
    if (h->count > MON_WIRE_LINES_MAX || h->len < fixed + h->count || h->len - fixed > MON_WIRE_TEXT_MAX) {
        snprintf(err, errlen, "the sampler's preflight answer has %u lines in %u bytes (at most %d bytes of text)",
                 (unsigned)h->count, (unsigned)h->len, MON_WIRE_TEXT_MAX);
        return -1;
    }
    return 0;
}
