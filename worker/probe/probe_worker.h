/* probe_worker.h: what the parts of plaunch-probe-worker share (probe.cu, probe_measure.cu, probe_out.cu). */
#ifndef PLAUNCH_PROBE_WORKER_H
#define PLAUNCH_PROBE_WORKER_H

/* C-like C++ compiled by nvcc. Every CUDA and NCCL call goes through CUDA_CHECK / NCCL_CHECK, which end the
 * process with host, pid, rank, file:line and the library's own message; there is no recovery path. */

#include <cuda_runtime.h>
#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

#define PW_MAX_DEV 32    /* GPUs per node in the P2P row */
#define PW_MAX_SIZES 64  /* message sizes in one sweep */
#define PW_MAX_GROUPS 40 /* sweeps: first-n groups plus the one-per-node group */
#define PW_MAX_PAIR_WORLD 64 /* the pairwise matrix is O(world^2) pairs: skipped above this */
#define PW_MAX_WORLD 4096

void pw_die_call(const char *file, int line, const char *call, const char *lib, const char *msg);
void pw_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define CUDA_CHECK(call)                                                                         \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess)                                                                   \
            pw_die_call(__FILE__, __LINE__, #call, "CUDA", cudaGetErrorString(e_));              \
    } while (0)
#define NCCL_CHECK(call)                                                                         \
    do {                                                                                         \
        ncclResult_t r_ = (call);                                                                \
        if (r_ != ncclSuccess)                                                                   \
            pw_die_call(__FILE__, __LINE__, #call, "NCCL", ncclGetErrorString(r_));              \
    } while (0)

/* One rank's preflight, exchanged between ranks as raw bytes (ncclAllGather), so plain fixed-size data. */
struct pw_gpu_rec {
    int32_t rank, local_rank, device, cc_major, cc_minor, driver, runtime, nccl, ndev;
    uint64_t memory;
    char host[64], name[256], pci[32];
    uint8_t p2p[PW_MAX_DEV]; /* cudaDeviceCanAccessPeer(this device, d) */
};

struct pw_result {
    uint64_t bytes;
    double time_us; /* the slowest rank's mean over the timed iterations */
    int verified;
};

struct pw_group {
    int n, nodes, one_per_node, member;
    int ranks[PW_MAX_WORLD];
    ncclComm_t comm; /* NULL on ranks outside the group */
    int owns_comm;   /* split from the world (destroy it), or the world itself */
    int nres;
    struct pw_result res[PW_MAX_SIZES];
    double step_us, compute_us, allreduce_us; /* the synthetic step; < 0 when not run */
};

struct pw_opts {
    uint64_t min_bytes, max_bytes, grad_bytes, pair_bytes;
    int factor, iters, warmup, step_iters, pairwise;
    double step_gflop;
    const char *out;
};

struct pw_ctx {
    struct pw_opts o;
    int rank, world, local_rank, nnodes;
    char host[64];
    ncclComm_t world_comm;
    cudaStream_t stream;
    cudaEvent_t ev0, ev1;
    struct pw_gpu_rec *recs; /* world entries, in rank order */
    struct pw_group *groups;
    int ngroups;
    double *pair; /* world*world GB/s on rank 0 after the exchange; NULL when not measured */
    void *dsend, *drecv; /* max_bytes each */
    double *dscratch;    /* world*world + 16 doubles for reductions */
};

/* probe_measure.cu */
void pw_barrier(struct pw_ctx *c);
void pw_sweep(struct pw_ctx *c, struct pw_group *g);
void pw_pairwise(struct pw_ctx *c);
void pw_step(struct pw_ctx *c, struct pw_group *g);
/* probe_out.cu: rank 0 writes the measurement document (schema plaunch-probe/1, docs/probe.md) */
void pw_write_json(const struct pw_ctx *c);

#endif
