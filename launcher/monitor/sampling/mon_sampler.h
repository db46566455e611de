/* mon_sampler: the sampler, a process of its own (this binary, exec'ed as `plaunch __monitor`) that owns NVML
 * (loaded at run time) and reads /proc: the agent asks for one sample of each rank and reads the answer when its
 * descriptor is readable, so a GPU whose NVML call hangs for minutes stalls the sampler, never the agent. The
 * agent kills a sampler that misses its deadline and goes on with host metrics only. Also the preflight checks. */
#ifndef PLAUNCH_MON_SAMPLER_H
#define PLAUNCH_MON_SAMPLER_H

#include <stddef.h>
#include <sys/types.h>

#include "launcher/monitor/sampling/mon_sample.h"

#define MON_TARGETS_MAX 1024  /* ranks of one node */

typedef struct mon_sampler mon_sampler_t;

/* What to sample: one rank's worker. */
struct mon_target {
    int rank, local_rank, generation;
    pid_t pid;                 /* the worker; its descendants count too */
    char gpu[MON_GPU_MAX];     /* its CUDA_VISIBLE_DEVICES entry (an index or a UUID); "" for a CPU worker */
};

/* Starts the sampler: exe is this binary (NULL: /proc/self/exe), use_nvml 0 for host metrics only. The library is
 * PLAUNCH_NVML_LIBRARY, else libnvidia-ml.so.1. NULL with a message. */
mon_sampler_t *mon_sampler_start(const char *exe, int use_nvml, char *err, size_t errlen);
/* Readable when an answer (or EOF: the sampler died) is there. */
int mon_sampler_fd(const mon_sampler_t *m);
/* The sampler's pid (registered with the child registry, proc.h, so no stray killer touches it), -1 for NULL. */
pid_t mon_sampler_pid(const mon_sampler_t *m);
/* Asks for one sample of each target (n <= MON_TARGETS_MAX); never blocks. 0, or -1 (a request is outstanding, or
 * the sampler is gone). The caller ignores SIGPIPE (plaunch does): a write to a dead sampler is then EPIPE. errno:
 * EBUSY outstanding, EPIPE gone, EINVAL bad n, E2BIG larger than the request pipe takes at once. */
int mon_sampler_request(mon_sampler_t *m, const struct mon_target *t, int n);
/* Asks for the preflight checks of these GPU entries (before any worker runs). 0 or -1, as above. */
int mon_sampler_request_preflight(mon_sampler_t *m, const char *const *gpus, int n);
/* Asks for the compute processes on these GPU entries (the GPU memory wait of a restart); the answer's lines (see
 * mon_sampler_preflight) are "ENTRY PID USED_MIB". 0 or -1, as above. */
int mon_sampler_request_procs(mon_sampler_t *m, const char *const *gpus, int n);
/* After mon_sampler_fd was readable: 1 when an answer is complete (samples in out, their count in *n; or, for a
 * preflight, its lines, see below, and *n 0), 0 when more is to come, -1 when the sampler died or spoke nonsense
 * (err). Never reads past the answer it expects; after -1 only mon_sampler_stop is left to do. */
int mon_sampler_read(mon_sampler_t *m, struct mon_sample *out, int max, int *n, char *err, size_t errlen);
/* The preflight's answer after mon_sampler_read returned 1 for it: findings, one line each (NUL-separated, count
 * in *n), the driver's CUDA version ("12.4", "" unknown) and whether NVML answered at all. */
const char *mon_sampler_preflight(const mon_sampler_t *m, int *n, char *cuda_driver, size_t cap, int *nvml_ok);
/* "NVML absent (libnvidia-ml.so.1: cannot open ...): host metrics only", or "" while NVML works; it comes with
 * every answer, so it is "" until the first one. */
const char *mon_sampler_note(const mon_sampler_t *m);
/* Kills (SIGKILL) and reaps the sampler, waiting at most 3 s for it to end (one stuck in the kernel is left to
 * the loop's reaper, proc.h); safe twice; sets *m to NULL. */
void mon_sampler_stop(mon_sampler_t **m);

/* The sampler's own main (`plaunch __monitor`): reads requests on stdin, answers on stdout; exit 0 at EOF. */
int mon_sampler_main(int argc, char **argv);

#endif
