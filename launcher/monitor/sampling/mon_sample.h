/* mon_sample: one sample of one rank (GPU and host metrics at one instant), the unit every part of the monitor
 * passes around: the sampler fills it, the agent writes it to monitor.NODE.csv and keeps it in a series, the
 * diagnosis reads series of it, plaunch report reads it back from the CSV. Unknown values: NAN, or -1. */
#ifndef PLAUNCH_MON_SAMPLE_H
#define PLAUNCH_MON_SAMPLE_H

#include <stdint.h>

/* A CUDA_VISIBLE_DEVICES entry ("3", "GPU-7f2c...", "MIG-...") with its NUL: a GPU UUID is 40 characters ("GPU-"
 * and 36), a MIG one 40 too, or up to 56 in the older "MIG-GPU-<uuid>/GI/CI" form. */
#define MON_GPU_MAX 64
#define MON_PCI_MAX 20  /* a PCI bus id, "00000000:3B:00.0" */
#define MON_NODE_MAX 64 /* a node's name as the CSV and the Health block show it */

/* NVML's clocks-event (throttle) reasons, as nvmlDeviceGetCurrentClocksEventReasons returns them. */
#define MON_THR_GPU_IDLE 0x1ull
#define MON_THR_SW_POWER 0x4ull
#define MON_THR_HW_SLOWDOWN 0x8ull
#define MON_THR_SW_THERMAL 0x20ull
#define MON_THR_HW_THERMAL 0x40ull
#define MON_THR_HW_POWER_BRAKE 0x80ull

struct mon_sample {
    int64_t t_ms;              /* Unix time of the sample, ms */
    int rank, local_rank;      /* global and local rank */
    int generation;
    char gpu[MON_GPU_MAX];     /* the rank's CUDA_VISIBLE_DEVICES entry; "" for a CPU worker */
    char pci[MON_PCI_MAX];     /* its PCI bus id; "" unknown */
    /* GPU: NAN (or -1) without NVML, for CPU workers, or when NVML does not say */
    double gpu_util;           /* % of the last interval a kernel ran (NVML utilization.gpu), 0..100 */
    double gpu_idle_frac;      /* share of NVML's fine utilization samples in the interval at (near) 0 %, 0..1 */
    double gpu_idle_ms;        /* the longest run of such idle fine samples in the interval, ms */
    double gpu_mem_proc_mib;   /* GPU memory used by the rank's processes */
    double gpu_mem_used_mib;   /* GPU memory used on the device, by anyone */
    double gpu_mem_total_mib;
    double sm_clock_mhz, sm_clock_max_mhz;
    double power_w, power_limit_w;
    double temp_c;
    int64_t throttle;          /* MON_THR_* bits at the sample; -1 unknown */
    int64_t ecc_corrected;     /* volatile ECC error totals since the driver loaded; -1 unknown */
    int64_t ecc_uncorrected;
    double pcie_tx_mibs, pcie_rx_mibs; /* MiB/s */
    int xid;                   /* the last Xid event seen since the previous sample, 0 none, -1 unknown */
    /* host: the rank's process tree (the worker and its descendants) */
    double rss_mib;
    double cpu_pct;            /* over the last interval, % of one core (400 = four cores busy) */
    int threads, procs;        /* -1 unknown */
    double host_avail_frac;    /* the node's MemAvailable / MemTotal, 0..1 */
};

/* Every field unknown, the ids zero. */
void mon_sample_clear(struct mon_sample *s);

#endif
