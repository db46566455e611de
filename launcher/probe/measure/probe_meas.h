/* probe_meas: what `plaunch probe` measured (schemas plaunch-probe/2 and /1, docs/probe.md), loaded from JSON. */
#ifndef PLAUNCH_PROBE_MEAS_H
#define PLAUNCH_PROBE_MEAS_H

/* Ownership: probe_meas_load/_from_json return a record the caller frees with probe_meas_destroy; the record
 * keeps a reference to the JSON it came from (json) so reports can re-emit fields the loader does not model. */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "launcher/probe/measure/probe_err.h"
#include "worker/probe/probe_op.h"

#define PROBE_SCHEMA "plaunch-probe/2"
#define PROBE_SCHEMA_1 "plaunch-probe/1" /* read too: AllReduce alone, out of place, CUDA-event timing */
#define PROBE_MAX_GPUS 4096
#define PROBE_MAX_SWEEPS 256 /* five collectives over up to 40 groups, and the steps */
#define PROBE_MAX_RESULTS 64
#define PROBE_MAX_PAIRWISE 512


struct probe_gpu {
    int rank, local_rank, device;
    char host[256];
    char name[256];
    char pci_bus_id[32];
    uint64_t memory_bytes;
    int cc_major, cc_minor;
    int driver_cuda;  /* as cudaDriverGetVersion: 1000*major + 10*minor; 0 = unknown */
    int runtime_cuda; /* as cudaRuntimeGetVersion */
    int nccl_version; /* as ncclGetVersion (NCCL_VERSION_CODE); 0 = unknown */
};

/* cudaDeviceCanAccessPeer between the GPUs of one host, in local-rank order. */
struct probe_p2p {
    char host[256];
    int n;
    int *ranks; /* n global ranks */
    int *can;   /* n*n: can[i*n+j] = 1 when GPU i can access GPU j's memory */
};

/* One placement of one size (nccl-tests' out-of-place or in-place column group). */
struct probe_place {
    double time_us;
    double algbw, busbw; /* GB/s (1e9 B/s), recomputed from bytes, time_us, the op and n as nccl-tests does */
    double wrong;        /* wrong elements over all ranks; NAN when the file does not say */
    int verified;
};

/* The out-of-place figures sit at the top, as in the JSON; the in-place ones in ip when has_ip. */
struct probe_result {
    uint64_t bytes;   /* nccl-tests' size column: max(send, recv) bytes of one rank */
    uint64_t nominal; /* the sweep's step (-b, -b*f, ...): the key across ops and N; = bytes in schema 1 */
    uint64_t count;   /* elements per call (nccl-tests' count column); 0 when not recorded */
    double time_us;
    double algbw, busbw;
    double wrong;
    int verified;
    int has_ip;
    struct probe_place ip;
};

enum probe_group { PROBE_GROUP_FIRST_N, PROBE_GROUP_ONE_PER_NODE };

struct probe_sweep {
    enum probe_op op;
    int n;
    enum probe_group group;
    int nodes;  /* hosts the group spans */
    int *ranks; /* n global ranks */
    size_t nresults;
    struct probe_result *results;
};

struct probe_step {
    int n;
    double step_us, compute_us, comm_us; /* compute/communication: NAN when not measured */
    double throughput;                        /* work units per second over the whole group */
};

struct probe_config {
    int schema; /* 1 or 2 */
    uint64_t min_bytes, max_bytes, grad_bytes, pairwise_bytes;
    int factor, warmup_iters, iters;
    double step_gflop;
    enum probe_op ops[PROBE_NOPS]; /* as named by --op, in order; the synthetic step runs each of them */
    int nops;
    enum probe_dtype dtype;
    enum probe_timing timing; /* schema 1 files were timed with CUDA events */
};

struct probe_meas {
    json_t *json; /* the document, one reference owned */
    char source[512];
    char date[64];
    char **hosts;
    size_t nhosts;
    struct probe_config config;
    struct probe_gpu *gpus;
    size_t ngpus;
    struct probe_p2p *p2p;
    size_t np2p;
    struct probe_sweep *sweeps;
    size_t nsweeps;
    int pair_n;          /* 0 when no pairwise matrix was measured */
    int *pair_ranks;     /* pair_n global ranks */
    double *pair_gbps;   /* pair_n*pair_n, NAN where not measured (diagonal) */
    uint64_t pair_bytes;
    struct probe_step *steps;
    size_t nsteps;
};

/* Reads and validates a measurement file; NULL with err naming the file and the field on failure. */
struct probe_meas *probe_meas_load(const char *path, struct probe_err *err);
/* The same from a parsed document (takes its own reference); origin names it in messages. */
struct probe_meas *probe_meas_from_json(json_t *root, const char *origin, struct probe_err *err);
/* Frees and sets *m to NULL; safe on NULL and twice. */
void probe_meas_destroy(struct probe_meas **m);

/* nccl-tests' definitions: algbw = bytes / time; busbw = algbw * the op's factor for n ranks (probe_op.h). GB/s. */
double probe_algbw(uint64_t bytes, double time_us);
double probe_busbw(enum probe_op op, double algbw, int n);
/* nccl-tests' "Avg bus bandwidth": the mean busbw over every out-of-place and in-place figure; NAN when none. */
double probe_sweep_avg_busbw(const struct probe_sweep *s);

/* Lookups; NULL / -1 when absent. Results are found by their nominal size. */
const struct probe_sweep *probe_meas_sweep(const struct probe_meas *m, enum probe_op op, enum probe_group g, int n);
const struct probe_result *probe_sweep_result(const struct probe_sweep *s, uint64_t nominal);
const struct probe_step *probe_meas_step(const struct probe_meas *m, int n);
const struct probe_gpu *probe_meas_gpu(const struct probe_meas *m, int rank);
/* 1 when the measurements hold at least one sweep of op. */
int probe_meas_has_op(const struct probe_meas *m, enum probe_op op);
/* Every nominal message size any sweep measured, ascending, without repeats; caller frees; NULL when out of
 * memory. */
uint64_t *probe_meas_sizes(const struct probe_meas *m, size_t *n);

#endif
