/* probe_coll.cu: one collective as nccl-tests calls it (buffers, offsets, in place), its data check, the waits. */
#include "worker/probe/probe_worker.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- the check pattern ------------------------------------------------------------------------------------
 * Rank at group position p sends v(p, k) = (7p + k) mod M at element k of its input. M = 5 for the sums, so a
 * sum over n ranks is an integer <= 4n and exact in every type while 4n fits the type's integers (float 2^24,
 * half 2048, bfloat16 256); M = 251 for the data movers, whose values are then exact in all three types. */

#define S_MOD_SUM 5u
#define S_MOD_MOVE 251u

template <typename T> __device__ T s_from(float v);
template <> __device__ float s_from<float>(float v) { return v; }
template <> __device__ __half s_from<__half>(float v) { return __float2half(v); }
template <> __device__ __nv_bfloat16 s_from<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
__device__ float s_to(float v) { return v; }
__device__ float s_to(__half v) { return __half2float(v); }
__device__ float s_to(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ float s_val(size_t pos, size_t k, unsigned m)
{
    return (float)((7 * pos + k) % m);
}

/* sum over p < n of (7p + k) mod 5: 7p runs through every residue in 5 consecutive p, which add up to 10 */
__device__ float s_sum(int n, size_t k)
{
    float s = 10.0f * (float)(n / 5);
    for (int t = 0; t < n % 5; t++)
        s += s_val((size_t)t, k, S_MOD_SUM);
    return s;
}

struct s_expect {
    int op, pos, n;
    size_t count;
    unsigned m;
    float tol;
};

template <typename T> __global__ void s_fill(T *buf, size_t elems, int pos, unsigned m)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < elems; i += (size_t)gridDim.x * blockDim.x)
        buf[i] = s_from<T>(s_val((size_t)pos, i, m));
}

template <typename T> __global__ void s_check(const T *out, size_t elems, s_expect e, unsigned long long *bad)
{
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < elems; i += (size_t)gridDim.x * blockDim.x) {
        float want;
        switch (e.op) {
        case PROBE_OP_ALLREDUCE: want = s_sum(e.n, i); break;
        case PROBE_OP_REDUCESCATTER: want = s_sum(e.n, (size_t)e.pos * e.count + i); break;
        case PROBE_OP_ALLGATHER: want = s_val(i / e.count, i % e.count, e.m); break;
        case PROBE_OP_ALLTOALL: want = s_val(i / e.count, (size_t)e.pos * e.count + i % e.count, e.m); break;
        default: want = s_val(0, i, e.m); break; /* broadcast from position 0 */
        }
        mine += !(fabsf(s_to(out[i]) - want) <= e.tol); /* a NaN (the poison) always fails */
    }
    if (mine)
        atomicAdd(bad, mine);
}

/* ---- helpers ------------------------------------------------------------------------------------------------ */

int pw_blocks(void)
{
    static int sms;
    if (sms == 0) {
        int dev;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    }
    return sms * 8;
}

double pw_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* std::chrono::steady_clock, which nccl-tests' timer reads */
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static ncclDataType_t s_nccl_type(enum probe_dtype t)
{
    return t == PROBE_DT_HALF ? ncclFloat16 : t == PROBE_DT_BFLOAT16 ? ncclBfloat16 : ncclFloat32;
}

/* Polls as nccl-tests' testStreamSynchronize does: query, look for NCCL's asynchronous error, yield. */
static void s_wait(struct pw_ctx *c, ncclComm_t comm, cudaStream_t stream, cudaEvent_t ev, const char *what)
{
    double t0 = pw_now_s();
    for (;;) {
        cudaError_t e = ev ? cudaEventQuery(ev) : cudaStreamQuery(stream);
        if (e == cudaSuccess)
            return;
        if (e != cudaErrorNotReady)
            CUDA_CHECK(e);
        if (comm) {
            ncclResult_t r = ncclSuccess;
            NCCL_CHECK(ncclCommGetAsyncError(comm, &r));
            if (r != ncclSuccess && r != ncclInProgress)
                pw_die("%s: NCCL reported an asynchronous error: %s; %s", what, ncclGetErrorString(r),
                       ncclGetLastError(comm));
        }
        if (pw_now_s() - t0 > PW_WAIT_S)
            pw_die("%s did not finish within %d s: a peer rank may have died or its GPU or link hangs; see the "
                   "other ranks' logs (workerlog.<rank>)", what, PW_WAIT_S);
        sched_yield();
    }
}

void pw_wait_stream(struct pw_ctx *c, ncclComm_t comm, const char *what)
{
    s_wait(c, comm, c->stream, NULL, what);
}

void pw_wait_event(struct pw_ctx *c, cudaEvent_t ev, const char *what)
{
    s_wait(c, NULL, c->stream, ev, what);
}

/* ---- the call ------------------------------------------------------------------------------------------------- */

struct pw_call pw_call_make(const struct pw_ctx *c, enum probe_op op, uint64_t bytes, const struct pw_group *g,
                            int in_place)
{
    struct pw_call k;
    memset(&k, 0, sizeof k);
    k.op = op, k.n = g->n, k.in_place = in_place, k.comm = g->comm;
    for (int i = 0; i < g->n; i++)
        if (g->ranks[i] == c->rank)
            k.pos = i;
    k.l = probe_op_layout(op, bytes, g->n, c->o.dtype);
    return k;
}

void pw_call_enqueue(struct pw_ctx *c, const struct pw_call *k, size_t shift, void *send, void *recv)
{
    size_t es = probe_dtype_size(c->o.dtype);
    char *sb = (char *)send + shift, *rb = (char *)recv + shift;
    /* in place, as nccl-tests: the input is inside the output buffer at send_ip * position elements */
    const void *in = k->in_place ? rb + k->l.send_ip * es * (size_t)k->pos : sb;
    void *out = rb + (k->in_place ? k->l.recv_ip * es * (size_t)k->pos : 0);
    ncclDataType_t t = s_nccl_type(c->o.dtype);
    switch (k->op) {
    case PROBE_OP_ALLREDUCE: NCCL_CHECK(ncclAllReduce(in, out, k->l.count, t, ncclSum, k->comm, c->stream)); break;
    case PROBE_OP_ALLGATHER: NCCL_CHECK(ncclAllGather(in, out, k->l.count, t, k->comm, c->stream)); break;
    case PROBE_OP_REDUCESCATTER:
        NCCL_CHECK(ncclReduceScatter(in, out, k->l.count, t, ncclSum, k->comm, c->stream));
        break;
    case PROBE_OP_BROADCAST: NCCL_CHECK(ncclBroadcast(in, out, k->l.count, t, 0, k->comm, c->stream)); break;
    case PROBE_OP_ALLTOALL:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
        NCCL_CHECK(ncclAlltoAll(in, out, k->l.count, t, k->comm, c->stream));
#else
        NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < k->n; r++) {
            NCCL_CHECK(ncclSend((const char *)in + r * k->l.count * es, k->l.count, t, r, k->comm, c->stream));
            NCCL_CHECK(ncclRecv((char *)out + r * k->l.count * es, k->l.count, t, r, k->comm, c->stream));
        }
        NCCL_CHECK(ncclGroupEnd());
#endif
        break;
    default: pw_die("internal error: collective %d", (int)k->op);
    }
}

template <typename T> static void s_fill_t(struct pw_ctx *c, void *buf, size_t elems, int pos, unsigned m)
{
    s_fill<T><<<pw_blocks(), 256, 0, 0>>>((T *)buf, elems, pos, m);
    CUDA_CHECK(cudaGetLastError());
}

template <typename T>
static void s_check_t(struct pw_ctx *c, const void *out, size_t elems, s_expect e, unsigned long long *bad)
{
    s_check<T><<<pw_blocks(), 256, 0, 0>>>((const T *)out, elems, e, bad);
    CUDA_CHECK(cudaGetLastError());
}

/* Waits for the legacy default stream, which the data set-up and check use as nccl-tests' do, then for the
 * device (it is idle by then, so cudaDeviceSynchronize returns at once). */
static void s_wait_default(struct pw_ctx *c, ncclComm_t comm, const char *what)
{
    s_wait(c, comm, 0, NULL, what);
    CUDA_CHECK(cudaDeviceSynchronize());
}

/* The input pattern of this rank, poisoned output around it (NaN in all three types), on the default stream
 * like nccl-tests' initData; the caller waits for it. */
static void s_prepare(struct pw_ctx *c, const struct pw_call *k, unsigned m)
{
    size_t es = probe_dtype_size(c->o.dtype);
    char *in = k->in_place ? (char *)c->drecv + k->l.send_ip * es * (size_t)k->pos : (char *)c->dsend;
    size_t span = (k->l.send > k->l.recv ? k->l.send : k->l.recv) * es;
    CUDA_CHECK(cudaMemset(c->drecv, 0xff, span));
    switch (c->o.dtype) {
    case PROBE_DT_HALF: s_fill_t<__half>(c, in, k->l.send, k->pos, m); break;
    case PROBE_DT_BFLOAT16: s_fill_t<__nv_bfloat16>(c, in, k->l.send, k->pos, m); break;
    default: s_fill_t<float>(c, in, k->l.send, k->pos, m); break;
    }
}

void pw_call_init(struct pw_ctx *c, const struct pw_call *k)
{
    s_prepare(c, k, probe_op_reduces(k->op) ? S_MOD_SUM : S_MOD_MOVE);
    s_wait_default(c, k->comm, "the data set-up before timing");
}

unsigned long long pw_call_check(struct pw_ctx *c, const struct pw_call *k)
{
    size_t es = probe_dtype_size(c->o.dtype);
    unsigned m = probe_op_reduces(k->op) ? S_MOD_SUM : S_MOD_MOVE;
    char *out = (char *)c->drecv + (k->in_place ? k->l.recv_ip * es * (size_t)k->pos : 0);
    s_prepare(c, k, m);
    s_wait_default(c, k->comm, "the data set-up of the check");
    pw_call_enqueue(c, k, 0, c->dsend, c->drecv);
    pw_wait_stream(c, k->comm, "the collective of the check");
    s_expect e = { (int)k->op, k->pos, k->n, k->l.count, m, 0.0f };
    double top = 4.0 * k->n, exact = c->o.dtype == PROBE_DT_FLOAT ? 16777216 : c->o.dtype == PROBE_DT_HALF ? 2048 : 256;
    if (probe_op_reduces(k->op) && top > exact) /* past the exact integers: allow the type's rounding */
        e.tol = (float)(top * (c->o.dtype == PROBE_DT_BFLOAT16 ? 1.0 / 128 : 1.0 / 1024));
    /* the count lives in mapped host memory allocated for this check and freed after it, as nccl-tests does */
    unsigned long long *hbad = NULL, *dbad = NULL, bad;
    CUDA_CHECK(cudaHostAlloc((void **)&hbad, sizeof *hbad, cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer((void **)&dbad, hbad, 0));
    *hbad = 0;
    switch (c->o.dtype) {
    case PROBE_DT_HALF: s_check_t<__half>(c, out, k->l.recv, e, dbad); break;
    case PROBE_DT_BFLOAT16: s_check_t<__nv_bfloat16>(c, out, k->l.recv, e, dbad); break;
    default: s_check_t<float>(c, out, k->l.recv, e, dbad); break;
    }
    s_wait_default(c, k->comm, "the data check");
    bad = *(volatile unsigned long long *)hbad;
    CUDA_CHECK(cudaFreeHost(hbad));
    return bad;
}
