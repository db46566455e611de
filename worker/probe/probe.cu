/* probe.cu: plaunch-probe-worker, one rank of `plaunch probe`: options, preflight, NCCL setup, the measurements
 * in order. */
#include "worker/probe/probe_worker.h"
#include "worker/probe/probe_size.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_LIBPLAUNCH
#include "worker/plaunch.h"
#endif

static struct pw_ctx s_ctx; /* for the error paths: they name host, pid and rank */

void pw_die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "plaunch-probe-worker: host %s pid %ld rank %d: ", s_ctx.host[0] ? s_ctx.host : "?",
            (long)getpid(), s_ctx.rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void pw_die_call(const char *file, int line, const char *call, const char *lib, const char *msg)
{
    const char *detail = strcmp(lib, "NCCL") == 0 ? ncclGetLastError(NULL) : "";
    pw_die("%s:%d: %s failed: %s error: %s%s%s", file, line, call, lib, msg, detail && detail[0] ? "; " : "",
           detail ? detail : "");
}

static const char S_USAGE[] =
    "usage: plaunch-probe-worker --out FILE [-b SIZE] [-e SIZE] [-f FACTOR] [-n ITERS] [-w WARMUP]\n"
    "                           [--op LIST] [-d TYPE] [--timing host|events]\n"
    "                           [--grad-bytes SIZE] [--step-gflop G] [--step-iters N]\n"
    "                           [--pairwise-bytes SIZE] [--no-pairwise]\n"
    "One rank of `plaunch probe`; RANK, WORLD_SIZE and LOCAL_RANK come from the environment (default: one rank).\n"
    "--op: " PROBE_OPS_VALID "; -d: " PROBE_DTYPES_VALID ".\n"
    "Rank 0 writes the measurements (schema plaunch-probe/2, docs/probe.md) to --out.\n";

static long s_env_int(const char *name, long dflt, long min, long max)
{
    const char *v = getenv(name);
    char *end = NULL;
    if (v == NULL || v[0] == '\0')
        return dflt;
    errno = 0;
    long l = strtol(v, &end, 10);
    if (errno || *end || l < min || l > max)
        pw_die("%s='%s' is not a whole number from %ld to %ld; the launcher sets it, or set it by hand", name, v,
               min, max);
    return l;
}

static uint64_t s_size_arg(const char *flag, const char *v)
{
    uint64_t u;
    if (probe_size_parse(v, &u) < 0)
        pw_die("%s '%s' is not a byte size (examples: 1048576, 64K, 8M, 1G)", flag, v);
    return u;
}

static int s_int_arg(const char *flag, const char *v, int min)
{
    char *end = NULL;
    long l = strtol(v, &end, 10);
    if (end == v || *end || l < min || l > 1000000)
        pw_die("%s '%s': give a whole number from %d to 1000000", flag, v, min);
    return (int)l;
}

static void s_parse(int argc, char **argv, struct pw_opts *o)
{
    static const struct option longopts[] = {
        { "minbytes", required_argument, NULL, 'b' },   { "maxbytes", required_argument, NULL, 'e' },
        { "stepfactor", required_argument, NULL, 'f' }, { "iters", required_argument, NULL, 'n' },
        { "warmup_iters", required_argument, NULL, 'w' }, { "grad-bytes", required_argument, NULL, 'G' },
        { "step-gflop", required_argument, NULL, 'S' }, { "step-iters", required_argument, NULL, 'I' },
        { "pairwise-bytes", required_argument, NULL, 'B' }, { "no-pairwise", no_argument, NULL, 'P' },
        { "out", required_argument, NULL, 'o' },        { "help", no_argument, NULL, 'h' },
        { "op", required_argument, NULL, 'O' },         { "datatype", required_argument, NULL, 'd' },
        { "timing", required_argument, NULL, 'T' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    memset(o, 0, sizeof *o);
    o->min_bytes = 1 << 20, o->max_bytes = 1 << 30, o->factor = 2, o->iters = 20, o->warmup = 5;
    o->grad_bytes = 87000000, o->step_gflop = 350, o->step_iters = 20, o->pair_bytes = 64 << 20, o->pairwise = 1;
    o->ops[0] = PROBE_OP_ALLREDUCE, o->nops = 1, o->dtype = PROBE_DT_FLOAT, o->timing = PROBE_TIMING_HOST;
    char bad[64];
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:o:d:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b': o->min_bytes = s_size_arg("-b", optarg); break;
        case 'e': o->max_bytes = s_size_arg("-e", optarg); break;
        case 'f': o->factor = s_int_arg("-f", optarg, 2); break;
        case 'n': o->iters = s_int_arg("-n", optarg, 1); break;
        case 'w': o->warmup = s_int_arg("-w", optarg, 0); break;
        case 'G': o->grad_bytes = s_size_arg("--grad-bytes", optarg); break;
        case 'I': o->step_iters = s_int_arg("--step-iters", optarg, 1); break;
        case 'B': o->pair_bytes = s_size_arg("--pairwise-bytes", optarg); break;
        case 'P': o->pairwise = 0; break;
        case 'o': o->out = optarg; break;
        case 'O':
            if ((o->nops = probe_ops_parse_list(optarg, o->ops, bad, sizeof bad)) < 0)
                pw_die("--op '%s': '%s' is not a collective; give a comma-separated list of %s", optarg, bad,
                       PROBE_OPS_VALID);
            break;
        case 'd':
            if (probe_dtype_parse(optarg, &o->dtype) < 0)
                pw_die("-d '%s' is not a data type; give one of %s", optarg, PROBE_DTYPES_VALID);
            break;
        case 'T':
            if (probe_timing_parse(optarg, &o->timing) < 0)
                pw_die("--timing '%s': give one of %s", optarg, PROBE_TIMINGS_VALID);
            break;
        case 'S':
            o->step_gflop = strtod(optarg, NULL);
            if (!(o->step_gflop > 0))
                pw_die("--step-gflop '%s': give a positive number of GFLOP, e.g. 350", optarg);
            break;
        case 'h': fputs(S_USAGE, stdout); exit(0);
        default: fputs(S_USAGE, stderr); exit(2);
        }
    }
    if (optind < argc)
        pw_die("unexpected argument '%s'; see --help", argv[optind]);
    if (o->min_bytes < 4 || o->max_bytes < o->min_bytes)
        pw_die("-b %llu -e %llu: need 4 <= -b <= -e (bytes of data)", (unsigned long long)o->min_bytes,
               (unsigned long long)o->max_bytes);
}

/* Versions first: they need no GPU context, and a driver older than the runtime makes everything after fail. */
static void s_preflight(struct pw_ctx *c, struct pw_gpu_rec *r)
{
    int ndev = 0;
    memset(r, 0, sizeof *r);
    r->rank = c->rank, r->local_rank = c->local_rank, r->device = c->local_rank;
    snprintf(r->host, sizeof r->host, "%s", c->host);
    CUDA_CHECK(cudaDriverGetVersion(&r->driver));
    CUDA_CHECK(cudaRuntimeGetVersion(&r->runtime));
    NCCL_CHECK(ncclGetVersion(&r->nccl));
    if (r->driver == 0)
        pw_die("no NVIDIA driver is loaded on this host (cudaDriverGetVersion gives 0); the probe needs NVIDIA GPUs "
               "and their driver (check `nvidia-smi`)");
    if (r->driver < r->runtime)
        fprintf(stderr, "plaunch-probe-worker: host %s rank %d: CUDA mismatch: the NVIDIA driver supports CUDA up to "
                        "%d.%d but this program's runtime is CUDA %d.%d; %s\n", c->host, c->rank, r->driver / 1000,
                (r->driver % 1000) / 10, r->runtime / 1000, (r->runtime % 1000) / 10,
                r->driver / 1000 < r->runtime / 1000 ? "nothing CUDA can run: update the driver"
                                                      : "runs under minor-version compatibility, PTX JIT fails");
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if ((e != cudaSuccess || ndev == 0) && c->world == 1 && c->o.out) {
        /* one rank: leave the versions behind so `plaunch probe --report` can give the verdict */
        c->recs = r, c->nnodes = 1;
        pw_write_json(c);
    }
    if (e != cudaSuccess || ndev == 0)
        pw_die("no usable CUDA GPU (cudaGetDeviceCount: %s, %d devices; CUDA_VISIBLE_DEVICES=%s); check "
               "`nvidia-smi`", cudaGetErrorString(e), ndev, getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
    if (c->local_rank >= ndev)
        pw_die("LOCAL_RANK=%d but only %d GPU(s) are visible (CUDA_VISIBLE_DEVICES=%s); start one rank per GPU",
               c->local_rank, ndev, getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
    CUDA_CHECK(cudaSetDevice(c->local_rank));
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, c->local_rank));
    snprintf(r->name, sizeof r->name, "%s", p.name);
    r->memory = p.totalGlobalMem, r->cc_major = p.major, r->cc_minor = p.minor;
    CUDA_CHECK(cudaDeviceGetPCIBusId(r->pci, sizeof r->pci, c->local_rank));
    r->ndev = ndev < PW_MAX_DEV ? ndev : PW_MAX_DEV;
    for (int d = 0; d < r->ndev; d++) {
        int can = 1;
        if (d != c->local_rank)
            CUDA_CHECK(cudaDeviceCanAccessPeer(&can, c->local_rank, d));
        r->p2p[d] = (uint8_t)can;
    }
}

static void s_nccl_id(struct pw_ctx *c, ncclUniqueId *id)
{
    if (c->world == 1) {
        NCCL_CHECK(ncclGetUniqueId(id));
        return;
    }
#ifdef HAVE_LIBPLAUNCH
    static_assert(sizeof id->internal == PLAUNCH_NCCL_ID_BYTES, "ncclUniqueId is not 128 bytes");
    plaunch_t *p = plaunch_open();
    if (p == NULL)
        pw_die("plaunch_open: %s; a multi-rank probe must be started by plaunch (PLAUNCH_AGENT=%s)", strerror(errno),
               getenv("PLAUNCH_AGENT") ? getenv("PLAUNCH_AGENT") : "(unset)");
    if (plaunch_nccl_id(p, "probe", (unsigned char *)id->internal) < 0)
        pw_die("plaunch_nccl_id(\"probe\"): %s", plaunch_error(p));
    plaunch_close(&p);
#else
    pw_die("WORLD_SIZE=%d, but this worker was built without libplaunch (build/lib/libplaunch.a did not exist), so "
           "it cannot receive the shared NCCL id; rebuild it with `make` once libplaunch exists, or run a single "
           "rank (WORLD_SIZE=1)", c->world);
#endif
}

/* Every rank's preflight on every rank; node numbers from host names. */
static void s_gather(struct pw_ctx *c, const struct pw_gpu_rec *mine)
{
    size_t sz = sizeof *mine;
    void *d = NULL;
    c->recs = (struct pw_gpu_rec *)calloc((size_t)c->world, sz);
    if (c->recs == NULL)
        pw_die("out of memory for %d preflight records", c->world);
    CUDA_CHECK(cudaMalloc(&d, sz * (size_t)(c->world + 1)));
    CUDA_CHECK(cudaMemcpy((char *)d + sz * (size_t)c->world, mine, sz, cudaMemcpyHostToDevice));
    NCCL_CHECK(ncclAllGather((char *)d + sz * (size_t)c->world, d, sz, ncclChar, c->world_comm, c->stream));
    pw_wait_stream(c, c->world_comm, "the exchange of preflight records");
    CUDA_CHECK(cudaMemcpy(c->recs, d, sz * (size_t)c->world, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(d));
    c->nnodes = 0;
    for (int r = 0; r < c->world; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = strcmp(c->recs[q].host, c->recs[r].host) == 0;
        c->nnodes += !seen;
    }
}

static int s_nodes_of(const struct pw_ctx *c, const int *ranks, int n)
{
    int nodes = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(c->recs[ranks[j]].host, c->recs[ranks[i]].host) == 0;
        nodes += !seen;
    }
    return nodes;
}

/* The communicator settings nccl-tests uses (it turns NVLink-centric scheduling on from NCCL 2.28). */
static ncclConfig_t s_comm_config(void)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    cfg.nvlinkCentricSched = 1;
#endif
    return cfg;
}

/* N = 1, 2, 4, ... and the whole world as first-n groups; with several nodes, one GPU per node too. */
static void s_make_groups(struct pw_ctx *c)
{
    c->groups = (struct pw_group *)calloc(PW_MAX_GROUPS, sizeof *c->groups);
    if (c->groups == NULL)
        pw_die("out of memory for the group table");
    for (int n = 1;; n = n * 2 < c->world ? n * 2 : c->world) {
        struct pw_group *g = &c->groups[c->ngroups++];
        g->n = n;
        for (int i = 0; i < n; i++)
            g->ranks[i] = i;
        if (n == c->world)
            break;
    }
    if (c->nnodes > 1) {
        struct pw_group *g = &c->groups[c->ngroups++];
        g->one_per_node = 1;
        for (int r = 0; r < c->world; r++)
            if (c->recs[r].local_rank == 0)
                g->ranks[g->n++] = r;
    }
    for (int i = 0; i < c->ngroups; i++) {
        struct pw_group *g = &c->groups[i];
        g->nodes = s_nodes_of(c, g->ranks, g->n);
        g->step_us = g->compute_us = g->comm_us = -1;
        for (int k = 0; k < g->n; k++)
            g->member |= g->ranks[k] == c->rank;
        if (g->n == c->world && !g->one_per_node) {
            g->comm = c->world_comm;
            continue;
        }
        /* collective over the world: every rank calls it, non-members with NCCL_SPLIT_NOCOLOR */
        ncclConfig_t cfg = s_comm_config();
        NCCL_CHECK(ncclCommSplit(c->world_comm, g->member ? 0 : NCCL_SPLIT_NOCOLOR, c->rank, &g->comm, &cfg));
        g->owns_comm = g->member;
    }
}

int main(int argc, char **argv)
{
    struct pw_ctx *c = &s_ctx;
    struct pw_gpu_rec mine;
    ncclUniqueId id;
    /* NVLink multicast (NVLS) can take a shared host's GPUs out of service: never use it, whatever the caller set. */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    gethostname(c->host, sizeof c->host - 1);
    s_parse(argc, argv, &c->o);
    c->world = (int)s_env_int("WORLD_SIZE", 1, 1, PW_MAX_WORLD);
    c->rank = (int)s_env_int("RANK", c->world == 1 ? 0 : -1, 0, c->world - 1);
    c->local_rank = (int)s_env_int("LOCAL_RANK", c->world == 1 ? 0 : -1, 0, PW_MAX_DEV - 1);
    if (c->rank < 0 || c->local_rank < 0)
        pw_die("WORLD_SIZE=%d needs RANK and LOCAL_RANK too; start the probe through `plaunch probe`", c->world);
    if (c->rank == 0 && c->o.out == NULL)
        pw_die("--out FILE is required: rank 0 writes the measurements there");
    s_nccl_id(c, &id); /* first: it needs no GPU, and a build without libplaunch should say so at once */
    s_preflight(c, &mine);
    CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&c->ev0));
    CUDA_CHECK(cudaEventCreate(&c->ev1));
    ncclConfig_t cfg = s_comm_config();
    NCCL_CHECK(ncclCommInitRankConfig(&c->world_comm, c->world, id, c->rank, &cfg));
    s_gather(c, &mine);
    NCCL_CHECK(ncclMemAlloc(&c->dsend, c->o.max_bytes));
    NCCL_CHECK(ncclMemAlloc(&c->drecv, c->o.max_bytes));
    CUDA_CHECK(cudaMalloc((void **)&c->dscratch, ((size_t)c->world * c->world + 16) * sizeof(double)));
    s_make_groups(c);
    for (int k = 0; k < c->o.nops; k++) /* op by op, as one *_perf binary after the other */
        for (int i = 0; i < c->ngroups; i++) {
            pw_barrier(c);
            if (c->groups[i].member)
                pw_sweep(c, &c->groups[i], c->o.ops[k]);
        }
    pw_barrier(c);
    pw_pairwise(c);
    for (int i = 0; i < c->ngroups; i++) {
        pw_barrier(c);
        if (c->groups[i].member && !c->groups[i].one_per_node)
            pw_step(c, &c->groups[i]);
    }
    pw_barrier(c);
    if (c->rank == 0)
        pw_write_json(c);
    for (int i = 0; i < c->ngroups; i++)
        if (c->groups[i].owns_comm)
            NCCL_CHECK(ncclCommDestroy(c->groups[i].comm));
    NCCL_CHECK(ncclCommDestroy(c->world_comm));
    NCCL_CHECK(ncclMemFree(c->dsend));
    NCCL_CHECK(ncclMemFree(c->drecv));
    CUDA_CHECK(cudaFree(c->dscratch));
    free(c->recs);
    free(c->groups);
    free(c->pair);
    return 0;
}
