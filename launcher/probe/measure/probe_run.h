/* probe_run: the live side of `plaunch probe`: is there a GPU, where is the worker, how it is started. */
#ifndef PLAUNCH_PROBE_RUN_H
#define PLAUNCH_PROBE_RUN_H

/* Calling rules: nothing here initialises CUDA in the launcher (a child forked after CUDA init fails), so GPUs
 * are counted through NVML loaded at run time and every CUDA call happens in the worker process. */

#include "launcher/probe/measure/probe_meas.h"

/* What the worker measures; strings as the user gave them (validated by cmd_probe), NULL = worker default. */
struct probe_run_opts {
    const char *min_bytes, *max_bytes, *factor, *iters, *warmup, *grad_bytes, *step_gflop, *ops, *dtype, *timing;
    int no_pairwise;
};

/* The number of NVIDIA GPUs this process may use (>= 1), or -1 with err saying there is none and why, in plain
 * words and with what to do. NVML is dlopen'ed: PLAUNCH_NVML_LIBRARY overrides "libnvidia-ml.so.1". */
int probe_run_gpu_check(struct probe_err *err);

/* The probe worker's path: PLAUNCH_PROBE_WORKER, else plaunch-probe-worker beside this executable. Caller
 * frees; NULL with err when it is not there or not executable. */
char *probe_run_worker_path(struct probe_err *err);

/* The worker's NULL-terminated argv for one rank writing its measurement to out_path (rank 0 only writes).
 * The launcher core uses it to start one worker per GPU. Free with probe_run_argv_free. */
char **probe_run_worker_argv(const char *worker, const struct probe_run_opts *o, const char *out_path);
void probe_run_argv_free(char ***argv);

/* Starts argv as the single rank of a one-GPU world on GPU gpu (RANK=0, WORLD_SIZE=1, LOCAL_RANK=0,
 * CUDA_VISIBLE_DEVICES=gpu, NCCL_NVLS_ENABLE=0) and waits. Returns its exit status (128+signal when killed),
 * or -1 with err when it could not be started. */
int probe_run_local(char *const argv[], const char *gpu, struct probe_err *err);

#endif
