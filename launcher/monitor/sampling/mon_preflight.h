/* mon_preflight: the checks of the job's GPUs before any worker runs, in the sampler process: each GPU is found and
 * answers, has no page retirement or row remapping pending or failed, no uncorrectable ECC errors, and no compute
 * process of someone else on it. One finding per line, naming the GPU and what to do. */
#ifndef PLAUNCH_MON_PREFLIGHT_H
#define PLAUNCH_MON_PREFLIGHT_H

#include <stddef.h>
#include <sys/types.h>

#include "launcher/monitor/sampling/mon_nvml.h"
#include "launcher/monitor/sampling/mon_proc.h"

/* Checks gpus[0..n); ours is the process whose tree counts as ours (the agent). The findings go into text as
 * NUL-terminated lines (at most MON_WIRE_LINE_MAX each, cap in all; what does not fit is counted in a last line);
 * *len is the bytes used. Returns the number of lines. */
int mon_preflight_run(const struct mon_nvml *nv, mon_proc_t *p, pid_t ours, const char *const *gpus, int n,
                      char *text, size_t cap, size_t *len);

/* The compute processes on gpus[0..n) (nvml_ok 0: none known), one line each "ENTRY PID USED_MIB" into text as
 * mon_preflight_run writes its lines. Returns the number of lines. */
int mon_preflight_procs(const struct mon_nvml *nv, int nvml_ok, const char *const *gpus, int n, char *text, size_t cap,
                        size_t *len);

#endif
