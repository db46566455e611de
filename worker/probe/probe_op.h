/* probe_op.h: the collectives and data types `plaunch probe` measures, with nccl-tests' byte counts and busbw. */
#ifndef PLAUNCH_PROBE_OP_H
#define PLAUNCH_PROBE_OP_H

/* Header-only (C11 and the worker's C++) so that the launcher's analysis and the GPU worker count bytes and
 * bus bandwidth from one table. The definitions are nccl-tests' (docs/probe.md, "Collectives"):
 *   size   = max(send bytes, receive bytes) of one rank: the "size" column of *_perf;
 *   algbw  = size / time;
 *   busbw  = algbw * factor(n): allreduce 2(n-1)/n, allgather, reducescatter and alltoall (n-1)/n,
 *            broadcast 1. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum probe_op {
    PROBE_OP_ALLREDUCE,
    PROBE_OP_ALLGATHER,
    PROBE_OP_REDUCESCATTER,
    PROBE_OP_BROADCAST,
    PROBE_OP_ALLTOALL,
    PROBE_NOPS
};

enum probe_dtype { PROBE_DT_FLOAT, PROBE_DT_HALF, PROBE_DT_BFLOAT16, PROBE_NDTYPES };

enum probe_timing { PROBE_TIMING_HOST, PROBE_TIMING_EVENTS, PROBE_NTIMINGS };

#define PROBE_OPS_VALID "allreduce, allgather, reducescatter, broadcast, alltoall, or all (every one)"
#define PROBE_DTYPES_VALID "float, half, bfloat16"
#define PROBE_TIMINGS_VALID "host (nccl-tests' method, the default), events"

/* "allreduce": the name on the command line and in JSON. */
static inline const char *probe_op_name(enum probe_op op)
{
    static const char *const names[] = { "allreduce", "allgather", "reducescatter", "broadcast", "alltoall" };
    return (unsigned)op < PROBE_NOPS ? names[op] : "?";
}

/* "AllReduce": the name nccl-tests' own output uses. */
static inline const char *probe_op_title(enum probe_op op)
{
    static const char *const titles[] = { "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AlltoAll" };
    return (unsigned)op < PROBE_NOPS ? titles[op] : "?";
}

/* "all-reduce": the name in prose. */
static inline const char *probe_op_prose(enum probe_op op)
{
    static const char *const prose[] = { "all-reduce", "all-gather", "reduce-scatter", "broadcast", "all-to-all" };
    return (unsigned)op < PROBE_NOPS ? prose[op] : "?";
}

/* "all_reduce_perf": the matching nccl-tests binary. */
static inline const char *probe_op_perf(enum probe_op op)
{
    static const char *const perf[] = { "all_reduce_perf", "all_gather_perf", "reduce_scatter_perf",
                                        "broadcast_perf", "alltoall_perf" };
    return (unsigned)op < PROBE_NOPS ? perf[op] : "?";
}

/* Reductions sum their inputs; the others move data. */
static inline int probe_op_reduces(enum probe_op op)
{
    return op == PROBE_OP_ALLREDUCE || op == PROBE_OP_REDUCESCATTER;
}

/* nccl-tests' busbw/algbw factor for n ranks (0 at n = 1 except broadcast's 1). */
static inline double probe_op_bus_factor(enum probe_op op, int n)
{
    if (n < 1)
        return 0;
    switch (op) {
    case PROBE_OP_ALLREDUCE: return 2.0 * (n - 1) / n;
    case PROBE_OP_ALLGATHER:
    case PROBE_OP_REDUCESCATTER:
    case PROBE_OP_ALLTOALL: return (double)(n - 1) / n;
    case PROBE_OP_BROADCAST: return 1.0;
    default: return 0;
    }
}

/* One rank's buffers for a step of `bytes` (the sweep's size) as nccl-tests lays them out: count is the
 * element count handed to NCCL, send/recv the elements each buffer holds, and the in-place offsets (elements,
 * times the rank's position in the group) where the input (send_ip) and the output (recv_ip) sit inside the
 * one buffer of an in-place call. Per-rank blocks are rounded down to 16 bytes, as nccl-tests does. */
struct probe_layout {
    size_t count, send, recv, send_ip, recv_ip;
    uint64_t size; /* max(send, recv) * element size: the bytes algbw divides */
};

static inline size_t probe_dtype_size(enum probe_dtype t)
{
    return t == PROBE_DT_FLOAT ? 4 : 2;
}

static inline struct probe_layout probe_op_layout(enum probe_op op, uint64_t bytes, int n, enum probe_dtype t)
{
    struct probe_layout l;
    size_t es = probe_dtype_size(t), elems = (size_t)(bytes / es);
    size_t block = n > 0 ? (elems / (size_t)n) & ~(16 / es - 1) : 0;
    memset(&l, 0, sizeof l);
    switch (op) {
    case PROBE_OP_ALLGATHER: l.count = block, l.send = block, l.recv = block * (size_t)n, l.send_ip = block; break;
    case PROBE_OP_REDUCESCATTER: l.count = block, l.send = block * (size_t)n, l.recv = block, l.recv_ip = block; break;
    case PROBE_OP_ALLTOALL: l.count = block, l.send = l.recv = block * (size_t)n; break;
    default: l.count = l.send = l.recv = elems; break;
    }
    l.size = (uint64_t)(l.send > l.recv ? l.send : l.recv) * es;
    return l;
}

/* nccl-tests' names for -d: "float", "half", "bfloat16". */
static inline const char *probe_dtype_name(enum probe_dtype t)
{
    static const char *const names[] = { "float", "half", "bfloat16" };
    return (unsigned)t < PROBE_NDTYPES ? names[t] : "?";
}

static inline const char *probe_timing_name(enum probe_timing t)
{
    return t == PROBE_TIMING_EVENTS ? "events" : "host";
}

/* How every output names the timing method. */
static inline const char *probe_timing_label(enum probe_timing t)
{
    return t == PROBE_TIMING_EVENTS
               ? "CUDA events around the timed loop (--timing events; not nccl-tests' method)"
               : "host wall clock around the timed loop, nccl-tests' method";
}

/* 0 and *out on a known name, -1 otherwise; "float32" is the schema-1 spelling of float. */
static inline int probe_dtype_parse(const char *s, enum probe_dtype *out)
{
    static const char *const names[] = { "float", "half", "bfloat16" };
    for (int i = 0; i < PROBE_NDTYPES; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum probe_dtype)i;
            return 0;
        }
    if (strcmp(s, "float32") == 0) {
        *out = PROBE_DT_FLOAT;
        return 0;
    }
    return -1;
}

static inline int probe_timing_parse(const char *s, enum probe_timing *out)
{
    if (strcmp(s, "host") == 0 || strcmp(s, "events") == 0) {
        *out = s[0] == 'h' ? PROBE_TIMING_HOST : PROBE_TIMING_EVENTS;
        return 0;
    }
    return -1;
}

static inline int probe_op_parse(const char *s, size_t len, enum probe_op *out)
{
    for (int i = 0; i < PROBE_NOPS; i++) {
        const char *name = probe_op_name((enum probe_op)i);
        if (strlen(name) == len && strncmp(s, name, len) == 0) {
            *out = (enum probe_op)i;
            return 0;
        }
    }
    return -1;
}

/* A comma-separated list ("reducescatter,allgather", or "all" for every op in table order) into ops[], in
 * the order given, without repeats; returns how many (>= 1), or -1 on an empty or unknown name, with the
 * offending name copied into bad (for the message). */
static inline int probe_ops_parse_list(const char *list, enum probe_op ops[PROBE_NOPS], char *bad, size_t badlen)
{
    int n = 0;
    if (strcmp(list, "all") == 0) {
        for (int i = 0; i < PROBE_NOPS; i++)
            ops[i] = (enum probe_op)i;
        return PROBE_NOPS;
    }
    for (const char *p = list;; p++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        enum probe_op op;
        if (probe_op_parse(p, len, &op) < 0) {
            size_t k = len < badlen - 1 ? len : badlen - 1;
            memcpy(bad, p, k);
            bad[k] = '\0';
            return -1;
        }
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen |= ops[i] == op;
        if (!seen)
            ops[n++] = op;
        if (end == NULL)
            return n;
        p = end;
    }
}

#endif
