/* probe_worker.h: what the parts of plaunch-probe-worker share (probe.cu, probe_coll.cu, probe_measure.cu,
 * probe_out.cu). */
#ifndef PLAUNCH_PROBE_WORKER_H
#define PLAUNCH_PROBE_WORKER_H

/* C-like C++ compiled by nvcc. Every CUDA and NCCL call goes through CUDA_CHECK / NCCL_CHECK, which end the
 * process with host, pid, rank, file:line and the library's own message; there is no recovery path. */

#include <cuda_runtime.h>
#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/probe/probe_op.h"

#define PW_MAX_DEV 32    /* GPUs per node in the P2P row */
#define PW_MAX_SIZES 64  /* message sizes in one sweep */
#define PW_MAX_GROUPS 40 /* sweeps: first-n groups plus the one-per-node group */
#define PW_MAX_PAIR_WORLD 64 /* the pairwise matrix is O(world^2) pairs: skipped above this */
#define PW_MAX_WORLD 4096
#define PW_WAIT_S 300 /* the longest any wait for the GPU or the peers may take before the worker gives up */

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

/* One size of one collective: [0] out of place, [1] in place, as nccl-tests' two column groups. */
struct pw_result {
    uint64_t bytes;   /* nccl-tests' size column: max(send, recv) bytes of one rank */
    uint64_t nominal; /* the sweep's step (-b, -b*f, ...), the same for every op and N */
    size_t count;     /* elements handed to NCCL (nccl-tests' count column) */
    double time_us[2]; /* mean over the timed iterations, averaged over the ranks (nccl-tests' -a 1) */
    double wrong[2];   /* wrong elements after timing, summed over the ranks */
};

struct pw_group {
    int n, nodes, one_per_node, member;
    int ranks[PW_MAX_WORLD];
    ncclComm_t comm; /* NULL on ranks outside the group */
    int owns_comm;   /* split from the world (destroy it), or the world itself */
    int nres[PROBE_NOPS];
    struct pw_result res[PROBE_NOPS][PW_MAX_SIZES];
    double step_us, compute_us, comm_us; /* the synthetic step; < 0 when not run */
};

struct pw_opts {
    uint64_t min_bytes, max_bytes, grad_bytes, pair_bytes;
    int factor, iters, warmup, step_iters, pairwise;
    double step_gflop;
    enum probe_op ops[PROBE_NOPS];
    int nops;
    enum probe_dtype dtype;
    enum probe_timing timing;
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
    void *dsend, *drecv; /* max_bytes each, from ncclMemAlloc as nccl-tests allocates them */
    double *dscratch;    /* world*world + 16 doubles for reductions */
};

/* probe_coll.cu: one collective as nccl-tests calls it, its data check, and waits with a deadline */
struct pw_call {
    enum probe_op op;
    struct probe_layout l;
    int pos, n;    /* this rank's position in the group, the group's size */
    int in_place;
    ncclComm_t comm;
};
struct pw_call pw_call_make(const struct pw_ctx *c, enum probe_op op, uint64_t bytes, const struct pw_group *g,
                            int in_place);
/* Enqueues the call on c->stream with buffers shifted by `shift` bytes (nccl-tests' per-iteration offset). */
void pw_call_enqueue(struct pw_ctx *c, const struct pw_call *k, size_t shift, void *send, void *recv);
/* nccl-tests' initData before timing: the input filled, the output poisoned, the device synchronised. */
void pw_call_init(struct pw_ctx *c, const struct pw_call *k);
/* Fills the input with the check pattern, poisons the output, runs the call once, and counts wrong elements
 * on this rank (0 = correct). */
unsigned long long pw_call_check(struct pw_ctx *c, const struct pw_call *k);
/* Waits for c->stream (or one event) by polling, as nccl-tests does, watching comm's asynchronous errors;
 * ends the process past PW_WAIT_S with what it waited for. */
void pw_wait_stream(struct pw_ctx *c, ncclComm_t comm, const char *what);
void pw_wait_event(struct pw_ctx *c, cudaEvent_t ev, const char *what);
int pw_blocks(void);
double pw_now_s(void);

/* probe_measure.cu */
void pw_barrier(struct pw_ctx *c);
void pw_sweep(struct pw_ctx *c, struct pw_group *g, enum probe_op op);
void pw_pairwise(struct pw_ctx *c);
void pw_step(struct pw_ctx *c, struct pw_group *g);
/* probe_out.cu: rank 0 writes the measurement document (schema plaunch-probe/1, docs/probe.md) */
void pw_write_json(const struct pw_ctx *c);

#endif
