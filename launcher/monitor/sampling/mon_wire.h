/* mon_wire: the sampler's protocol on its two pipes, and the checks both readers make. Both ends are the same
 * binary on the same host (the agent runs /proc/self/exe), so numbers travel in host order; every count and length
 * is still checked against what was asked, and the agent reads no byte past the answer it expects.
 *
 * A frame is a header and a payload of hdr.len bytes:
 *   header (16 bytes): magic "PLM1", kind ('S' samples, 'P' preflight), flags, note_len, count, len
 * Requests (agent -> sampler stdin), flags and note_len 0:
 *   'S': count (1..MON_TARGETS_MAX) x struct mon_wire_target (80 bytes): rank, local_rank, generation, pid (int32),
 *        gpu[MON_GPU_MAX = 64] (a CUDA_VISIBLE_DEVICES entry, NUL-terminated and padded)
 *   'P': count (1..MON_TARGETS_MAX) x gpu[MON_GPU_MAX]
 *   'G': the same: the compute processes on these GPUs (the GPU memory wait of a restart)
 * Answers (sampler stdout -> agent), one per request, in order; flags bit 0: NVML answered (nvml_ok):
 *   'S': note[note_len] (no NUL; "" while NVML works), then count x struct mon_sample: count is what was asked,
 *        each sample's rank and generation those of the target at its place
 *   'P': note[note_len], cuda[16] (the driver's CUDA version, "12.4", NUL-padded), then count lines, each ending in
 *        a NUL, at most MON_WIRE_LINE_MAX bytes each and MON_WIRE_TEXT_MAX in all
 *   'G': as 'P', each line "ENTRY PID USED_MIB" for one process on the GPU of that CUDA_VISIBLE_DEVICES entry
 * The sampler exits 0 at EOF on stdin and 2 (a message on stderr) on a frame it cannot take. */
#ifndef PLAUNCH_MON_WIRE_H
#define PLAUNCH_MON_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "launcher/monitor/sampling/mon_sample.h"
#include "launcher/monitor/sampling/mon_sampler.h"

#define MON_WIRE_MAGIC 0x314d4c50u /* "PLM1" */
#define MON_WIRE_SAMPLES 'S'
#define MON_WIRE_PREFLIGHT 'P'
#define MON_WIRE_PROCS 'G'
#define MON_WIRE_NVML_OK 1u
#define MON_WIRE_NOTE_MAX 512
#define MON_WIRE_CUDA_MAX 16
#define MON_WIRE_LINE_MAX 512
#define MON_WIRE_TEXT_MAX 65536
#define MON_WIRE_LINES_MAX (MON_WIRE_TEXT_MAX / 2)

struct mon_wire_hdr {
    uint32_t magic;
    uint8_t kind, flags;
    uint16_t note_len;
    uint32_t count, len;
};

struct mon_wire_target {
    int32_t rank, local_rank, generation, pid;
    char gpu[MON_GPU_MAX];
};

/* The payload length a request of kind with count items has (0 for a kind that is not a request). */
size_t mon_wire_request_len(int kind, uint32_t count);
/* A request header as the sampler reads it: 0, or -1 with a message. */
int mon_wire_check_request(const struct mon_wire_hdr *h, char *err, size_t errlen);
/* The most an answer to (kind, count) can be, header included. */
size_t mon_wire_answer_max(int kind, uint32_t count);
/* An answer header as the agent reads it, against what it asked (kind, count): 0, or -1 with a message. */
int mon_wire_check_answer(const struct mon_wire_hdr *h, int kind, uint32_t count, char *err, size_t errlen);

#endif
