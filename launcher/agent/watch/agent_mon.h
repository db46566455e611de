/* agent_mon: this node's share of the health monitor: the sampler asked every --monitor seconds with a deadline,
 * LOG_DIR/monitor.NODE.csv, a bounded series per local rank, the preflight before the first JOIN, and this node's
 * rank summaries for the coordinator. A floor below agent_proto.c; calls launcher/monitor/, job, common. */
#ifndef PLAUNCH_AGENT_MON_H
#define PLAUNCH_AGENT_MON_H

#include <stddef.h>

#include "launcher/job/job.h"
#include "launcher/monitor/sampling/mon_sample.h"
#include "launcher/monitor/diagnosis/mon_thresh.h"
#include "common/loop.h"

typedef struct agent_mon agent_mon_t;

/* The monitor of job (--monitor 0: NULL without error, nothing is sampled). Opens monitor.NODE.csv in the log
 * directory (proved ours, emptied). NULL with a message in err on failure. */
agent_mon_t *agent_mon_new(const struct job *job, const struct mon_thresh *thresh, loop_t *loop, char *err, size_t errlen);
/* Before any worker starts, in GPU mode with --preflight on or strict: asks the sampler for its checks; done(arg,
 * code) is called from the loop with 0 (go on) or an exit status (strict and a finding: 125). Returns 1 when
 * done will be called, 0 when there is nothing to check (done is not called). */
int agent_mon_preflight(agent_mon_t *m, void (*done)(void *arg, int code), void *arg);
/* This node's rank summaries as JSON for the coordinator (REPORT HEALTH), at most max_bytes (fewer ranks, with
 * a warning, past it), malloc'ed; NULL when there is nothing (no sample yet) or out of memory. */
char *agent_mon_health_json(agent_mon_t *m, size_t max_bytes);
/* The GPU memory wait's query: the compute processes on the job's GPUs, asked of the sampler; done(arg, lines, n,
 * ok) from the loop with n lines "ENTRY PID USED_MIB" (ok 0: no answer, the sampler died). Returns 1 when done
 * will be called, 0 when it cannot ask now (busy with another request: ask again later; or no NVML). */
int agent_mon_gpu_procs(agent_mon_t *m, void (*done)(void *arg, const char *lines, int n, int ok), void *arg);
/* Whether NVML can be asked at all on this node (GPU mode, NVML loaded, the sampler alive). */
int agent_mon_can_ask_gpus(const agent_mon_t *m);
/* The most memory (MiB) the ranks' processes held together in one sampling round since the last reset. */
double agent_mon_rss_peak_mib(agent_mon_t *m, int reset);
/* The driver's CUDA version from the preflight ("12.4"), "" when unknown. */
const char *agent_mon_cuda_driver(const agent_mon_t *m);
/* The latest sample of a local rank in generation (the live view: GPU utilisation and memory); 1, or 0 none. */
int agent_mon_latest(const agent_mon_t *m, int local_rank, int generation, struct mon_sample *out);
/* Stops the sampler and closes the CSV; sets *m to NULL, safe twice. */
void agent_mon_destroy(agent_mon_t **m);

#endif
