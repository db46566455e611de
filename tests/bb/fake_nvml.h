/* fake_nvml: the state of the stand-in NVML (tests/bb/fake_nvml.c documents it): the scripted GPUs, steps and
 * events, shared by the script reader (fake_nvml_script.c) and the API (fake_nvml.c). */
#ifndef FAKE_NVML_H
#define FAKE_NVML_H

#include <stddef.h>

#define F_GPUS 16
#define F_STEPS 64
#define F_PROCS 16
#define F_FINE 64
#define F_RING 1024
#define F_EVENTS 64

enum { OK = 0, INVALID = 2, UNSUPPORTED = 3, NOT_FOUND = 6, INSUFFICIENT = 7, TIMEOUT = 10, NO_FN = 13, LOST = 15,
       UNKNOWN = 999 };

enum { K_UTIL, K_MEM_USED, K_MEM_TOTAL, K_SM, K_SM_MAX, K_POWER, K_POWER_LIMIT, K_TEMP, K_THROTTLE, K_ECC_CORR,
       K_ECC_UNCORR, K_ECC_CORR_AGG, K_ECC_UNCORR_AGG, K_PCIE_TX, K_PCIE_RX, K_RETIRED, K_RETIRED_PENDING,
       K_REMAP_CORR, K_REMAP_UNC, K_REMAP_PENDING, K_REMAP_FAILED, K_FINE_MS, K_LOST, K_N };

struct f_proc {
    char who[24];
    double mib;
};
struct f_step {
    int set[K_N];
    double v[K_N];
    int xid, nfine, fine_set, nprocs, procs_set, unsup_set;
    double fine[F_FINE];
    struct f_proc procs[F_PROCS];
    char unsup[512];
};
struct f_sample {
    unsigned long long ts;
    unsigned long long v; /* union nvmlValue_t, read as unsigned int */
};
struct f_gpu {
    char uuid[96], pci[32];
    int cur, entered, registered;
    unsigned long long clock_us;
    struct f_sample ring[F_RING];
    int nring;
    struct f_step steps[F_STEPS];
};
struct f_event {
    void *device;
    unsigned long long type, data;
    unsigned gi, ci;
};

#define F_HIDDEN __attribute__((visibility("hidden")))

F_HIDDEN extern struct f_gpu f_gpu[F_GPUS];
F_HIDDEN extern int f_count, f_driver;
F_HIDDEN extern struct f_event f_queue[F_EVENTS];
F_HIDDEN extern int f_nqueue;

/* Reads the environment and FAKE_NVML_SCRIPT once: 0, or -1 (a message on stderr). */
F_HIDDEN int f_load(void);
/* FAKE_NVML_HANG: never returns when fn is the named function and its calls are past the count. */
F_HIDDEN void f_call(const char *fn);
/* The value of key k at GPU g's current step: 1 when some step up to it set the key. */
F_HIDDEN int f_get(const struct f_gpu *g, int k, double *v);
/* The latest step up to the current one whose int flag at flag_offset is set, or NULL. */
F_HIDDEN const struct f_step *f_held(const struct f_gpu *g, size_t flag_offset);
/* who "N": the child of our parent (the agent) whose environment holds LOCAL_RANK=N; "N.K": that process's K-th
 * child; 0 when there is none. */
F_HIDDEN unsigned f_local(const char *who);

#endif
