/* mon_nvml: NVML loaded at run time (dlopen, never linked, no nvml.h needed): the few types and calls the sampler
 * uses, declared here from NVIDIA's API reference, and the lookups every user of them shares. Only the sampler
 * process loads it. A function the library lacks is NULL, and whatever needs it is unknown. */
#ifndef PLAUNCH_MON_NVML_H
#define PLAUNCH_MON_NVML_H

#include <stddef.h>
#include <sys/types.h>

typedef int mon_nvml_ret;       /* nvmlReturn_t: 0 success */
typedef void *mon_nvml_dev;     /* nvmlDevice_t (an opaque pointer) */
typedef void *mon_nvml_events;  /* nvmlEventSet_t */

#define MON_NVML_SUCCESS 0
#define MON_NVML_ERROR_NOT_SUPPORTED 3
#define MON_NVML_ERROR_NOT_FOUND 6
#define MON_NVML_ERROR_INSUFFICIENT_SIZE 7
#define MON_NVML_ERROR_TIMEOUT 10
#define MON_NVML_ERROR_GPU_IS_LOST 15
#define MON_NVML_VALUE_NOT_AVAILABLE 0xffffffffffffffffull

#define MON_NVML_CLOCK_SM 1
#define MON_NVML_TEMPERATURE_GPU 0
#define MON_NVML_ECC_CORRECTED 0
#define MON_NVML_ECC_UNCORRECTED 1
#define MON_NVML_ECC_VOLATILE 0
#define MON_NVML_ECC_AGGREGATE 1
#define MON_NVML_PCIE_TX 0
#define MON_NVML_PCIE_RX 1
#define MON_NVML_GPU_UTILIZATION_SAMPLES 1
#define MON_NVML_EVENT_XID 0x8ull            /* nvmlEventTypeXidCriticalError */
#define MON_NVML_RETIRE_SBE 0                /* NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS */
#define MON_NVML_RETIRE_DBE 1                /* NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR */

/* nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3) */
struct mon_nvml_pci {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};
/* nvmlUtilization_t */
struct mon_nvml_util {
    unsigned gpu, memory;
};
/* nvmlMemory_t (v1: total, free, used) */
struct mon_nvml_memory {
    unsigned long long total, free, used;
};
/* nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it */
struct mon_nvml_proc {
    unsigned pid;
    unsigned long long used_gpu_memory;
    unsigned gpu_instance_id, compute_instance_id;
};
/* nvmlSample_t: a CPU timestamp in µs and an nvmlValue_t (a union of 8 bytes) */
union mon_nvml_value {
    double d;
    int si;
    unsigned ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    unsigned short us;
};
struct mon_nvml_sample {
    unsigned long long timestamp;
    union mon_nvml_value value;
};
/* nvmlEventData_t */
struct mon_nvml_event {
    mon_nvml_dev device;
    unsigned long long type, data;
    unsigned gpu_instance_id, compute_instance_id;
};
/* nvmlTemperature_v1_t (nvmlDeviceGetTemperatureV) */
struct mon_nvml_temperature {
    unsigned version;
    int sensor;
    int temperature;
};

struct mon_nvml {
    void *lib;
    mon_nvml_ret (*init)(void);
    mon_nvml_ret (*shutdown)(void);
    const char *(*error_string)(mon_nvml_ret);
    mon_nvml_ret (*by_index)(unsigned, mon_nvml_dev *);
    mon_nvml_ret (*by_uuid)(const char *, mon_nvml_dev *);
    mon_nvml_ret (*parent_of_mig)(mon_nvml_dev, mon_nvml_dev *);
    mon_nvml_ret (*is_mig)(mon_nvml_dev, unsigned *);
    mon_nvml_ret (*pci_info)(mon_nvml_dev, struct mon_nvml_pci *);
    mon_nvml_ret (*utilization)(mon_nvml_dev, struct mon_nvml_util *);
    mon_nvml_ret (*samples)(mon_nvml_dev, int, unsigned long long, int *, unsigned *, struct mon_nvml_sample *);
    mon_nvml_ret (*memory)(mon_nvml_dev, struct mon_nvml_memory *);
    mon_nvml_ret (*procs)(mon_nvml_dev, unsigned *, struct mon_nvml_proc *);
    mon_nvml_ret (*clock)(mon_nvml_dev, int, unsigned *);
    mon_nvml_ret (*max_clock)(mon_nvml_dev, int, unsigned *);
    mon_nvml_ret (*power)(mon_nvml_dev, unsigned *);
    mon_nvml_ret (*power_limit)(mon_nvml_dev, unsigned *);
    mon_nvml_ret (*temperature_v)(mon_nvml_dev, struct mon_nvml_temperature *);
    mon_nvml_ret (*temperature)(mon_nvml_dev, int, unsigned *);
    mon_nvml_ret (*clocks_event_reasons)(mon_nvml_dev, unsigned long long *);
    mon_nvml_ret (*ecc_total)(mon_nvml_dev, int, int, unsigned long long *);
    mon_nvml_ret (*pcie_throughput)(mon_nvml_dev, int, unsigned *);
    mon_nvml_ret (*event_set_create)(mon_nvml_events *);
    mon_nvml_ret (*register_events)(mon_nvml_dev, unsigned long long, mon_nvml_events);
    mon_nvml_ret (*event_set_wait)(mon_nvml_events, struct mon_nvml_event *, unsigned);
    mon_nvml_ret (*event_set_free)(mon_nvml_events);
    mon_nvml_ret (*retired_pages)(mon_nvml_dev, int, unsigned *, unsigned long long *, unsigned long long *);
    mon_nvml_ret (*retired_pending)(mon_nvml_dev, int *);
    mon_nvml_ret (*remapped_rows)(mon_nvml_dev, unsigned *, unsigned *, unsigned *, unsigned *);
    mon_nvml_ret (*cuda_driver_version)(int *);
};

/* Loads lib (PLAUNCH_NVML_LIBRARY when NULL or "", else libnvidia-ml.so.1) and starts NVML: 0, or -1 with note
 * set to "NVML absent (LIB: WHY): host metrics only" (or "NVML failed to start (...)") and nv zeroed. */
int mon_nvml_open(struct mon_nvml *nv, const char *lib, char *note, size_t cap);
void mon_nvml_close(struct mon_nvml *nv);
/* NVML's words for rc ("Not Supported"), or "error N". */
const char *mon_nvml_error(const struct mon_nvml *nv, mon_nvml_ret rc);
/* The handle of a CUDA_VISIBLE_DEVICES entry: an index (NVML's, which is the PCI order) or a GPU-/MIG- UUID.
 * *parent is the physical GPU (itself unless entry is a MIG instance). NVML's code, or NOT_FOUND for an entry of
 * neither form. */
mon_nvml_ret mon_nvml_lookup(const struct mon_nvml *nv, const char *entry, mon_nvml_dev *dev, mon_nvml_dev *parent);
/* The PCI bus id of dev into buf ("00000000:3B:00.0"); "" when NVML does not say. */
void mon_nvml_pci(const struct mon_nvml *nv, mon_nvml_dev dev, char *buf, size_t cap);
/* The compute processes on dev into *list (grown with realloc, *cap entries, at most 65536): their count, or -1
 * with *rc. */
int mon_nvml_procs(const struct mon_nvml *nv, mon_nvml_dev dev, struct mon_nvml_proc **list, unsigned *cap,
                   mon_nvml_ret *rc);
/* The driver's CUDA version as "12.4" into buf; "" unknown. */
void mon_nvml_cuda_version(const struct mon_nvml *nv, char *buf, size_t cap);

#endif
