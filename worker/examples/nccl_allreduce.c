/* nccl_allreduce: example GPU worker (NEEDS_NCCL): NCCL communicator from the plaunch-provided id, an
 * AllReduce of known values on the GPU, the sum checked on the host. Exit 0 only when every element is right. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <plaunch.h>

#define COUNT (1 << 20)

/* Names host, pid, file:line and the library's own message, as nccl-tests does. */
#define CHECK_CUDA(call)                                                                                  \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            fprintf(stderr, "%s pid %d %s:%d: CUDA error: %s\n", host, (int)getpid(), __FILE__, __LINE__, \
                    cudaGetErrorString(e_));                                                              \
            return 1;                                                                                     \
        }                                                                                                 \
    } while (0)
#define CHECK_NCCL(call)                                                                                  \
    do {                                                                                                  \
        ncclResult_t r_ = (call);                                                                         \
        if (r_ != ncclSuccess) {                                                                          \
            fprintf(stderr, "%s pid %d %s:%d: NCCL error: %s\n", host, (int)getpid(), __FILE__, __LINE__, \
                    ncclGetErrorString(r_));                                                              \
            return 1;                                                                                     \
        }                                                                                                 \
    } while (0)

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a line reaches the log even if the job is stopped right after */
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    plaunch_t *p = plaunch_open();
    if (!p)
        return 1;
    int rank = plaunch_rank(p), world = plaunch_world_size(p), local = plaunch_local_rank(p);
    ncclUniqueId id;
    if (plaunch_nccl_id(p, "allreduce", (unsigned char *)&id) < 0) {
        fprintf(stderr, "rank %d: %s\n", rank, plaunch_error(p));
        return 1;
    }
    CHECK_CUDA(cudaSetDevice(local));
    ncclComm_t comm;
    CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));
    float *buf, *host_buf = malloc(COUNT * sizeof *host_buf);
    for (int i = 0; i < COUNT; i++)
        host_buf[i] = (float)(rank + 1);
    CHECK_CUDA(cudaMalloc((void **)&buf, COUNT * sizeof *buf));
    CHECK_CUDA(cudaMemcpy(buf, host_buf, COUNT * sizeof *buf, cudaMemcpyHostToDevice));
    CHECK_NCCL(ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, 0));
    CHECK_CUDA(cudaStreamSynchronize(0));
    CHECK_CUDA(cudaMemcpy(host_buf, buf, COUNT * sizeof *buf, cudaMemcpyDeviceToHost));
    float want = (float)world * (float)(world + 1) / 2.0f;
    int bad = 0;
    for (int i = 0; i < COUNT; i++)
        bad += host_buf[i] != want;
    printf("rank %d/%d on GPU %s: allreduce of %d floats: %s (expected %.0f everywhere)\n", rank, world,
           getenv("PLAUNCH_GPU") ? getenv("PLAUNCH_GPU") : "?", COUNT, bad ? "WRONG" : "ok", want);
    ncclCommDestroy(comm);
    cudaFree(buf);
    free(host_buf);
    plaunch_close(&p);
    return bad ? 1 : 0;
}
