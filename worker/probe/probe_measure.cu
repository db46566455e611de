/* probe_measure.cu: the probe's measurements: AllReduce sweep, pairwise send/recv matrix, synthetic DP step. */
#include "probe_worker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* send[i] = (rank + 1) + (i mod 7): every group's sum is an exact small integer in float32, so the check after
 * timing is exact and a stale or unwritten output (poisoned with NaN) never passes. */
__global__ void pw_fill(float *send, size_t count, int rank)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        send[i] = (float)(rank + 1) + (float)(i % 7);
}

__global__ void pw_check(const float *recv, size_t count, float base, float n, unsigned long long *bad)
{
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        mine += recv[i] != base + n * (float)(i % 7);
    if (mine)
        atomicAdd(bad, mine);
}

/* The synthetic step's compute: per gradient element, fma_per_elem dependent FMAs in 4 independent chains (2
 * FLOP each), then the gradient is written, as a backward pass would write it before the all-reduce. */
__global__ void pw_compute(float *grad, size_t count, int fma_per_elem, float seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float a = seed + (float)(i & 1023) * 1e-6f, b = a + 0.5f, cc = a + 0.25f, d = a + 0.125f;
        for (int k = 0; k < fma_per_elem; k += 4) {
            a = fmaf(a, 0.9999f, 1e-4f);
            b = fmaf(b, 0.9999f, 1e-4f);
            cc = fmaf(cc, 0.9999f, 1e-4f);
            d = fmaf(d, 0.9999f, 1e-4f);
        }
        grad[i] = a + b + cc + d;
    }
}

static int s_blocks(void)
{
    static int sms;
    if (sms == 0) {
        int dev;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    }
    return sms * 8;
}

/* Elementwise max (or sum) of k doubles over comm, in place on the host array v. */
static void s_reduce(struct pw_ctx *c, ncclComm_t comm, double *v, int k, ncclRedOp_t op)
{
    CUDA_CHECK(cudaMemcpyAsync(c->dscratch, v, k * sizeof(double), cudaMemcpyHostToDevice, c->stream));
    NCCL_CHECK(ncclAllReduce(c->dscratch, c->dscratch, (size_t)k, ncclDouble, op, comm, c->stream));
    CUDA_CHECK(cudaMemcpyAsync(v, c->dscratch, k * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
}

void pw_barrier(struct pw_ctx *c)
{
    double one = 1;
    s_reduce(c, c->world_comm, &one, 1, ncclSum);
}

/* Milliseconds between the two events recorded around the timed work. */
static double s_elapsed_ms(struct pw_ctx *c)
{
    float ms = 0;
    CUDA_CHECK(cudaEventSynchronize(c->ev1));
    CUDA_CHECK(cudaEventElapsedTime(&ms, c->ev0, c->ev1));
    return ms;
}

void pw_sweep(struct pw_ctx *c, struct pw_group *g)
{
    float base = 0;
    for (int k = 0; k < g->n; k++)
        base += (float)(g->ranks[k] + 1);
    size_t maxcount = c->o.max_bytes / sizeof(float);
    pw_fill<<<s_blocks(), 256, 0, c->stream>>>((float *)c->dsend, maxcount, c->rank);
    CUDA_CHECK(cudaGetLastError());
    for (uint64_t bytes = c->o.min_bytes; bytes <= c->o.max_bytes && g->nres < PW_MAX_SIZES;
         bytes = bytes * (uint64_t)c->o.factor) {
        size_t count = bytes / sizeof(float);
        struct pw_result *r = &g->res[g->nres++];
        r->bytes = count * sizeof(float);
        CUDA_CHECK(cudaMemsetAsync(c->drecv, 0xff, r->bytes, c->stream)); /* NaN: an unwritten output fails */
        for (int i = 0; i < c->o.warmup; i++)
            NCCL_CHECK(ncclAllReduce(c->dsend, c->drecv, count, ncclFloat, ncclSum, g->comm, c->stream));
        CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
        for (int i = 0; i < c->o.iters; i++)
            NCCL_CHECK(ncclAllReduce(c->dsend, c->drecv, count, ncclFloat, ncclSum, g->comm, c->stream));
        CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
        double v[2] = { s_elapsed_ms(c) * 1e3 / c->o.iters, 0 };
        unsigned long long *dbad = (unsigned long long *)(c->dscratch + 8);
        CUDA_CHECK(cudaMemsetAsync(dbad, 0, sizeof *dbad, c->stream));
        pw_check<<<s_blocks(), 256, 0, c->stream>>>((const float *)c->drecv, count, base, (float)g->n, dbad);
        CUDA_CHECK(cudaGetLastError());
        unsigned long long bad = 0;
        CUDA_CHECK(cudaMemcpyAsync(&bad, dbad, sizeof bad, cudaMemcpyDeviceToHost, c->stream));
        CUDA_CHECK(cudaStreamSynchronize(c->stream));
        v[1] = (double)bad;
        s_reduce(c, g->comm, v, 2, ncclMax); /* the slowest rank's time; any rank's wrong sum */
        r->time_us = v[0];
        r->verified = v[1] == 0;
        if (c->rank == g->ranks[0]) {
            double algbw = (double)r->bytes / r->time_us / 1e3;
            fprintf(stderr, "probe: N=%-4d %s %12llu B %10.2f us  algbw %8.2f  busbw %8.2f GB/s  %s\n", g->n,
                    g->one_per_node ? "1/node" : "first ", (unsigned long long)r->bytes, r->time_us, algbw,
                    algbw * 2.0 * (g->n - 1) / g->n, r->verified ? "ok" : "WRONG SUM");
        }
        if (bytes * (uint64_t)c->o.factor <= bytes)
            break; /* overflow guard */
    }
}

/* Bidirectional send/recv between two ranks on the world communicator; GB/s each way. */
static double s_pair(struct pw_ctx *c, int peer)
{
    size_t bytes = c->o.pair_bytes < c->o.max_bytes ? c->o.pair_bytes : c->o.max_bytes;
    for (int it = -c->o.warmup - 1; it < c->o.iters; it++) {
        if (it == 0)
            CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(c->dsend, bytes, ncclChar, peer, c->world_comm, c->stream));
        NCCL_CHECK(ncclRecv(c->drecv, bytes, ncclChar, peer, c->world_comm, c->stream));
        NCCL_CHECK(ncclGroupEnd());
    }
    CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
    double us = s_elapsed_ms(c) * 1e3 / c->o.iters;
    return (double)bytes / us / 1e3;
}

void pw_pairwise(struct pw_ctx *c)
{
    int w = c->world;
    if (!c->o.pairwise || w < 2 || w > PW_MAX_PAIR_WORLD)
        return;
    double *m = (double *)calloc((size_t)w * w, sizeof *m);
    if (m == NULL)
        pw_die("out of memory for the %dx%d pairwise matrix", w, w);
    for (int i = 0; i < w; i++)
        for (int j = i + 1; j < w; j++) {
            if (c->rank == i)
                m[i * w + j] = s_pair(c, j);
            else if (c->rank == j)
                m[j * w + i] = s_pair(c, i);
            pw_barrier(c); /* one pair at a time: pairs must not share links while measured */
        }
    s_reduce(c, c->world_comm, m, w * w, ncclSum); /* each entry was written by one rank only */
    if (c->rank == 0) {
        c->pair = m;
        fprintf(stderr, "probe: pairwise matrix of %d ranks measured\n", w);
    } else {
        free(m);
    }
}

void pw_step(struct pw_ctx *c, struct pw_group *g)
{
    static float *grad;
    size_t count = c->o.grad_bytes / sizeof(float);
    if (grad == NULL)
        CUDA_CHECK(cudaMalloc((void **)&grad, count * sizeof(float)));
    double fma = c->o.step_gflop * 1e9 / 2.0 / (double)count;
    int fma_per_elem = fma < 4 ? 4 : fma > 1e8 ? 100000000 : (int)fma;
    double t[3];
    for (int phase = 0; phase < 3; phase++) { /* 0: compute + all-reduce, 1: compute alone, 2: all-reduce alone */
        for (int it = -2; it < c->o.step_iters; it++) {
            if (it == 0)
                CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
            if (phase != 2) {
                pw_compute<<<s_blocks(), 256, 0, c->stream>>>(grad, count, fma_per_elem, 1.0f + it * 1e-3f);
                CUDA_CHECK(cudaGetLastError());
            }
            if (phase != 1)
                NCCL_CHECK(ncclAllReduce(grad, grad, count, ncclFloat, ncclSum, g->comm, c->stream));
        }
        CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
        t[phase] = s_elapsed_ms(c) * 1e3 / c->o.step_iters;
    }
    s_reduce(c, g->comm, t, 3, ncclMax);
    g->step_us = t[0], g->compute_us = t[1], g->allreduce_us = t[2];
    if (c->rank == g->ranks[0])
        fprintf(stderr, "probe: N=%-4d step %.3f ms (compute %.3f ms, all-reduce %.3f ms)\n", g->n, t[0] / 1e3,
                t[1] / 1e3, t[2] / 1e3);
}
