/* probe_measure.cu: the probe's measurements: collective sweeps timed as nccl-tests times them, the pairwise
 * send/recv matrix, and the synthetic training step. */
#include "worker/probe/probe_worker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The synthetic step's compute: per gradient element, fma_per_elem dependent FMAs in 4 independent chains (2
 * FLOP each), then the gradient is written, as a backward pass would write it before the collective. */
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

/* Elementwise op of k doubles over comm, in place on the host array v. */
static void s_reduce(struct pw_ctx *c, ncclComm_t comm, double *v, int k, ncclRedOp_t op)
{
    CUDA_CHECK(cudaMemcpyAsync(c->dscratch, v, k * sizeof(double), cudaMemcpyHostToDevice, c->stream));
    NCCL_CHECK(ncclAllReduce(c->dscratch, c->dscratch, (size_t)k, ncclDouble, op, comm, c->stream));
    CUDA_CHECK(cudaMemcpyAsync(v, c->dscratch, k * sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    pw_wait_stream(c, comm, "a reduction of the probe's results");
}

void pw_barrier(struct pw_ctx *c)
{
    double one = 1;
    s_reduce(c, c->world_comm, &one, 1, ncclSum);
}

/* nccl-tests' Barrier before each timed loop: a no-op for one rank, else every member of the group. */
static void s_group_barrier(struct pw_ctx *c, const struct pw_group *g)
{
    double one = 1;
    if (g->n > 1)
        s_reduce(c, g->comm, &one, 1, ncclSum);
}

/* Milliseconds between the two events recorded around the timed work. */
static double s_elapsed_ms(struct pw_ctx *c, const char *what)
{
    float ms = 0;
    pw_wait_event(c, c->ev1, what);
    CUDA_CHECK(cudaEventElapsedTime(&ms, c->ev0, c->ev1));
    return ms;
}

/* nccl-tests moves each iteration to a fresh slice of the -e sized buffers, so that small sizes are not timed
 * out of the L2 cache: iteration i uses offset size * (i mod (max / size)). */
static size_t s_shift(const struct pw_ctx *c, const struct pw_call *k, int iter)
{
    uint64_t steps = k->l.size ? c->o.max_bytes / k->l.size : 1;
    return steps ? (size_t)(k->l.size * ((uint64_t)iter % steps)) : 0;
}

/* One placement of one size, as nccl-tests' BenchTime: the data set up, one untimed call and its completion, the
 * barrier, then
 * -n calls enqueued back to back and timed (host: wall clock from before the first enqueue to the stream's
 * completion; events: between two events around them). Microseconds per call. */
static double s_time(struct pw_ctx *c, const struct pw_group *g, const struct pw_call *k)
{
    pw_call_init(c, k);
    pw_call_enqueue(c, k, s_shift(c, k, 0), c->dsend, c->drecv);
    pw_wait_stream(c, k->comm, "the collective before the timed loop");
    s_group_barrier(c, g);
    if (c->o.timing == PROBE_TIMING_EVENTS) {
        CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
        for (int i = 0; i < c->o.iters; i++)
            pw_call_enqueue(c, k, s_shift(c, k, i), c->dsend, c->drecv);
        CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
        return s_elapsed_ms(c, "the timed loop") * 1e3 / c->o.iters;
    }
    double t0 = pw_now_s();
    for (int i = 0; i < c->o.iters; i++)
        pw_call_enqueue(c, k, s_shift(c, k, i), c->dsend, c->drecv);
    pw_wait_stream(c, k->comm, "the timed loop");
    return (pw_now_s() - t0) * 1e6 / c->o.iters;
}

static void s_progress(const struct pw_ctx *c, const struct pw_group *g, enum probe_op op, const struct pw_result *r)
{
    double f = probe_op_bus_factor(op, g->n);
    fprintf(stderr, "probe: %-13s N=%-4d %s %12llu B %10zu", probe_op_name(op), g->n,
            g->one_per_node ? "1/node" : "first ", (unsigned long long)r->bytes, r->count);
    for (int ip = 0; ip < 2; ip++) {
        double algbw = (double)r->bytes / r->time_us[ip] / 1e3;
        fprintf(stderr, "  %s %9.2f us %8.2f %8.2f %s", ip ? "in" : "out", r->time_us[ip], algbw, algbw * f,
                r->wrong[ip] == 0 ? "ok" : "WRONG");
    }
    fputc('\n', stderr);
}

void pw_sweep(struct pw_ctx *c, struct pw_group *g, enum probe_op op)
{
    /* nccl-tests' warm-up: every size from -b to -e by x2, -w calls each, out of place */
    for (uint64_t bytes = c->o.min_bytes; bytes <= c->o.max_bytes; bytes *= 2) {
        struct pw_call k = pw_call_make(c, op, bytes, g, 0);
        if (k.l.count == 0)
            continue;
        for (int i = 0; i < c->o.warmup; i++)
            pw_call_enqueue(c, &k, s_shift(c, &k, i), c->dsend, c->drecv);
        pw_wait_stream(c, k.comm, "the warm-up");
        if (bytes * 2 <= bytes)
            break;
    }
    for (uint64_t bytes = c->o.min_bytes; bytes <= c->o.max_bytes && g->nres[op] < PW_MAX_SIZES;
         bytes = bytes * (uint64_t)c->o.factor) {
        struct pw_call k[2] = { pw_call_make(c, op, bytes, g, 0), pw_call_make(c, op, bytes, g, 1) };
        if (k[0].l.count > 0) { /* a size below 16 bytes per rank has nothing to move (nccl-tests' count 0) */
            struct pw_result *r = &g->res[op][g->nres[op]++];
            r->bytes = k[0].l.size, r->nominal = bytes, r->count = k[0].l.count;
            for (int ip = 0; ip < 2; ip++) {
                r->time_us[ip] = s_time(c, g, &k[ip]);
                r->wrong[ip] = (double)pw_call_check(c, &k[ip]);
            }
            double v[4] = { r->time_us[0], r->time_us[1], r->wrong[0], r->wrong[1] };
            s_reduce(c, g->comm, v, 4, ncclSum); /* nccl-tests: the time averaged, wrong elements summed */
            r->time_us[0] = v[0] / g->n, r->time_us[1] = v[1] / g->n, r->wrong[0] = v[2], r->wrong[1] = v[3];
            if (c->rank == g->ranks[0])
                s_progress(c, g, op, r);
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
    double us = s_elapsed_ms(c, "the pairwise send/recv") * 1e3 / c->o.iters;
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

/* The step's communication: each op the user named, out of place, over the gradient bytes (nccl-tests' size:
 * a reduce-scatter reads them, an all-gather writes them). */
static void s_step_comm(struct pw_ctx *c, const struct pw_call *k, float *grad, float *out)
{
    for (int i = 0; i < c->o.nops; i++)
        if (k[i].l.count > 0)
            pw_call_enqueue(c, &k[i], 0, grad, out);
}

void pw_step(struct pw_ctx *c, struct pw_group *g)
{
    static float *grad, *out;
    size_t count = c->o.grad_bytes / sizeof(float);
    struct pw_call k[PROBE_NOPS];
    if (grad == NULL) {
        CUDA_CHECK(cudaMalloc((void **)&grad, count * sizeof(float)));
        CUDA_CHECK(cudaMalloc((void **)&out, count * sizeof(float)));
    }
    for (int i = 0; i < c->o.nops; i++)
        k[i] = pw_call_make(c, c->o.ops[i], c->o.grad_bytes, g, 0);
    double fma = c->o.step_gflop * 1e9 / 2.0 / (double)count;
    int fma_per_elem = fma < 4 ? 4 : fma > 1e8 ? 100000000 : (int)fma;
    double t[3], t0 = 0;
    for (int phase = 0; phase < 3; phase++) { /* 0: compute + communication, 1: compute alone, 2: comm alone */
        for (int it = -2; it < c->o.step_iters; it++) {
            if (it == 0 && c->o.timing == PROBE_TIMING_EVENTS)
                CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
            if (it == 0 && c->o.timing == PROBE_TIMING_HOST) {
                pw_wait_stream(c, g->comm, "the synthetic step's warm-up");
                t0 = pw_now_s();
            }
            if (phase != 2) {
                pw_compute<<<pw_blocks(), 256, 0, c->stream>>>(grad, count, fma_per_elem, 1.0f + it * 1e-3f);
                CUDA_CHECK(cudaGetLastError());
            }
            if (phase != 1)
                s_step_comm(c, k, grad, out);
        }
        if (c->o.timing == PROBE_TIMING_EVENTS) {
            CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
            t[phase] = s_elapsed_ms(c, "the synthetic step") * 1e3 / c->o.step_iters;
        } else {
            pw_wait_stream(c, g->comm, "the synthetic step");
            t[phase] = (pw_now_s() - t0) * 1e6 / c->o.step_iters;
        }
    }
    s_reduce(c, g->comm, t, 3, ncclMax);
    g->step_us = t[0], g->compute_us = t[1], g->comm_us = t[2];
    if (c->rank == g->ranks[0])
        fprintf(stderr, "probe: N=%-4d step %.3f ms (compute %.3f ms, communication %.3f ms)\n", g->n, t[0] / 1e3,
                t[1] / 1e3, t[2] / 1e3);
}
