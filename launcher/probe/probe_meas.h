/* probe_meas: what `plaunch probe` measured (schema plaunch-probe/1, docs/probe.md), loaded from JSON. */
#ifndef PLAUNCH_PROBE_MEAS_H
#define PLAUNCH_PROBE_MEAS_H

/* Ownership: probe_meas_load/_from_json return a record the caller frees with probe_meas_destroy; the record
 * keeps a reference to the JSON it came from (json) so reports can re-emit fields the loader does not model. */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "probe_err.h"

#define PROBE_SCHEMA "plaunch-probe/1"
#define PROBE_MAX_GPUS 4096
#define PROBE_MAX_SWEEPS 64
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

struct probe_result {
    uint64_t bytes;
    double time_us;
    double algbw, busbw; /* GB/s (1e9 B/s), recomputed from bytes, time_us and n as nccl-tests does */
    int verified;
};

enum probe_group { PROBE_GROUP_FIRST_N, PROBE_GROUP_ONE_PER_NODE };

struct probe_sweep {
    int n;
    enum probe_group group;
    int nodes;  /* hosts the group spans */
    int *ranks; /* n global ranks */
    size_t nresults;
    struct probe_result *results;
};

struct probe_step {
    int n;
    double step_us, compute_us, allreduce_us; /* compute/allreduce: NAN when not measured */
    double throughput;                        /* work units per second over the whole group */
};

struct probe_config {
    uint64_t min_bytes, max_bytes, grad_bytes, pairwise_bytes;
    int factor, warmup_iters, iters;
    double step_gflop;
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

/* nccl-tests' definitions: algbw = bytes / time; busbw = algbw * 2(n-1)/n. GB/s. */
double probe_algbw(uint64_t bytes, double time_us);
double probe_busbw(double algbw, int n);

/* Lookups; NULL / -1 when absent. */
const struct probe_sweep *probe_meas_sweep(const struct probe_meas *m, enum probe_group g, int n);
const struct probe_result *probe_sweep_result(const struct probe_sweep *s, uint64_t bytes);
const struct probe_step *probe_meas_step(const struct probe_meas *m, int n);
const struct probe_gpu *probe_meas_gpu(const struct probe_meas *m, int rank);
/* Every message size any sweep measured, ascending, without repeats; caller frees; NULL when out of memory. */
uint64_t *probe_meas_sizes(const struct probe_meas *m, size_t *n);

#endif
