/* mon_gpu: the GPU half of a sample: a CUDA_VISIBLE_DEVICES entry mapped to its NVML device, the device's metrics
 * read once per round however many ranks share it, the rank's own GPU memory (its process tree against the device's
 * compute processes), the fine utilization samples since the previous round, and Xid events from an event set
 * polled with timeout 0. Owned by the sampler process. Cost with NVML: each nvmlDeviceGetPcieThroughput call
 * measures for 20 ms, so a round takes at least 40 ms per GPU. */
#ifndef PLAUNCH_MON_GPU_H
#define PLAUNCH_MON_GPU_H

#include <sys/types.h>

#include "launcher/monitor/sampling/mon_nvml.h"
#include "launcher/monitor/sampling/mon_sample.h"

/* A fine sample below this utilization counts as idle. */
#define MON_GPU_IDLE_PCT 5.0

typedef struct mon_gpu mon_gpu_t;

/* nv stays the caller's and must outlive the result. NULL when out of memory. */
mon_gpu_t *mon_gpu_new(const struct mon_nvml *nv);
void mon_gpu_destroy(mon_gpu_t **g);
/* A new round (one request): each device is read again at its first use. */
void mon_gpu_round(mon_gpu_t *g);
/* Fills the GPU fields and pci of s for entry (left unknown when NVML cannot find it or does not say); tree holds
 * the rank's pids. */
void mon_gpu_sample(mon_gpu_t *g, const char *entry, const pid_t *tree, int ntree, struct mon_sample *s);

#endif
