/* preflight: the node and container checks before any worker starts (the traps that make a job fail or crawl
 * outside the training code): /dev/shm, the locked-memory limit under InfiniBand, a CUDA runtime newer than the
 * driver, CUDA_VISIBLE_DEVICES and NCCL/GLOO_SOCKET_IFNAME naming what is not there, a memory cgroup below what the
 * workers used. Each finding is one sentence naming the problem and the fix. Pure checks: nothing is logged. */
#ifndef PLAUNCH_PREFLIGHT_H
#define PLAUNCH_PREFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#define PF_FINDINGS_MAX 16       /* findings kept (the JOIN carries at most this many) */
#define PF_LINE 1024    /* bytes of one, NUL included (WIRE_MAX_TEXT) */

struct pf_findings {
    int n;              /* kept, <= PF_FINDINGS_MAX */
    int dropped;        /* found beyond PF_FINDINGS_MAX */
    char line[PF_FINDINGS_MAX][PF_LINE];
};

struct pf_input {
    int gpu_workers, cpu_workers;
    uint64_t shm_per_gpu, shm_per_cpu; /* bytes of /dev/shm each worker needs */
    const char *shm_path;              /* "/dev/shm" */
    const char *ib_dir;                /* "/sys/class/infiniband" */
    const char *net_dir;               /* "/sys/class/net" */
    const char *ld_library_path;       /* the workers' (NULL: none) */
    const char *driver_cuda;           /* the driver's CUDA version from NVML ("12.4"); "" or NULL unknown */
    const char *visible;               /* the inherited CUDA_VISIBLE_DEVICES, NULL unset */
    int driver_gpus;                   /* GPUs the driver has, -1 unknown (no driver: the check is skipped) */
    const char *nccl_ifname, *gloo_ifname; /* the user's values, NULL unset */
};

/* Runs every check of in into out (emptied first). Returns out->n + out->dropped. */
int preflight_node(const struct pf_input *in, struct pf_findings *out);

/* The memory cgroup check of a restart: the lowest memory.max of this process's cgroup and its ancestors under
 * cgroot ("/sys/fs/cgroup"), against used_mib, what the workers used last generation. Adds a finding to out. */
void preflight_cgroup(const char *cgroot, const char *self_cgroup, double used_mib, int generation,
                      struct pf_findings *out);

/* Adds one finding (printf-style); counts it in out->dropped when out is full. */
void preflight_add(struct pf_findings *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "64 MiB", "1.5 GiB" */
void preflight_size(uint64_t bytes, char *buf, size_t cap);
/* Parses "1G", "256M", "512K", "1048576" (bytes); -1 on anything else. */
int preflight_parse_size(const char *s, uint64_t *out);

/* NCCL's NCCL_SOCKET_IFNAME syntax ("^" excludes, "=" matches exactly, else prefixes; a comma list; Gloo's names
 * are exact) against the interfaces under net_dir: 0 when some interface it selects is up (or it only excludes),
 * else 1 with the finding, naming var, in buf. */
int preflight_ifname(const char *net_dir, const char *var, const char *value, int nccl_syntax, char *buf, size_t cap);

/* ---- the GPU memory wait of a restart (preflight_gpuwait.c) ------------------------------------------------ */

/* One compute process on one of the job's GPUs, as NVML lists it. */
struct pf_gpu_proc {
    char gpu[64];              /* the CUDA_VISIBLE_DEVICES entry */
    unsigned pid;
    unsigned long long used_mib;
};

enum pf_gpuwait_state { PF_GPUWAIT_WAITING, PF_GPUWAIT_RELEASED, PF_GPUWAIT_TIMEOUT };

/* A wait, and after it what the incident timeline shows: when, how long, and what held the GPUs. */
struct pf_gpuwait {
    int generation;            /* the generation about to start */
    uint64_t start_ns, end_ns, deadline_ns;
    enum pf_gpuwait_state state;
    int polls;
    int held;                  /* processes holding memory at the last poll */
    unsigned long long held_mib;
    char what[256];            /* "GPU 0: pid 4242 (exited), 1024 MiB; ..." of the last poll that found some */
    const int *prev;           /* the previous generation's worker pids (borrowed until the wait ends) */
    int nprev;
};

/* Starts a wait for generation at now_ns, bounded by timeout_ns. */
void pf_gpuwait_begin(struct pf_gpuwait *w, int generation, const int *prev, int nprev, uint64_t now_ns,
                      uint64_t timeout_ns);
/* One answer of the process query: procs[0..n) on the job's GPUs. A process holds the GPUs for this job when it is
 * one of the previous generation's workers or no longer exists (the driver has not freed a dead process's memory
 * yet); anyone else's live process is not waited for (the preflight names it). alive(pid) says whether pid exists
 * (NULL: kill(pid, 0)). Returns the new state: WAITING (ask again), RELEASED or TIMEOUT. */
enum pf_gpuwait_state pf_gpuwait_feed(struct pf_gpuwait *w, const struct pf_gpu_proc *procs, int n,
                                      int (*alive)(unsigned pid), uint64_t now_ns);
/* Seconds the wait took (so far, while waiting: up to now_ns). */
double pf_gpuwait_seconds(const struct pf_gpuwait *w, uint64_t now_ns);

#endif
