/* mon_nvml: loads NVML with dlopen, fills the call table, and the lookups (handle, PCI id, processes, CUDA version)
 * that the sample and the preflight share. */
#include "launcher/monitor/sampling/mon_nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MON_NVML_PROCS_MAX 65536u

static void *s_sym(void *lib, const char *name)
{
    return dlsym(lib, name);
}

/* Function pointers from dlsym: the cast goes through void * as POSIX allows. */
#define S_LOAD(field, name) memcpy(&nv->field, &(void *){ s_sym(nv->lib, name) }, sizeof nv->field)

int mon_nvml_open(struct mon_nvml *nv, const char *lib, char *note, size_t cap)
{
    memset(nv, 0, sizeof *nv);
    if (lib == NULL || lib[0] == '\0') {
        lib = getenv("PLAUNCH_NVML_LIBRARY");
        lib = lib && lib[0] ? lib : "libnvidia-ml.so.1";
    }
    nv->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (nv->lib == NULL) {
        const char *why = dlerror();
        snprintf(note, cap, "NVML absent (%s): host metrics only", why ? why : lib);
        return -1;
    }
    S_LOAD(init, "nvmlInit_v2");
    S_LOAD(shutdown, "nvmlShutdown");
    S_LOAD(error_string, "nvmlErrorString");
    S_LOAD(by_index, "nvmlDeviceGetHandleByIndex_v2");
    S_LOAD(by_uuid, "nvmlDeviceGetHandleByUUID");
    S_LOAD(parent_of_mig, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
    S_LOAD(is_mig, "nvmlDeviceIsMigDeviceHandle");
    S_LOAD(pci_info, "nvmlDeviceGetPciInfo_v3");
    S_LOAD(utilization, "nvmlDeviceGetUtilizationRates");
    S_LOAD(samples, "nvmlDeviceGetSamples");
    S_LOAD(memory, "nvmlDeviceGetMemoryInfo");
    S_LOAD(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
    S_LOAD(clock, "nvmlDeviceGetClockInfo");
    S_LOAD(max_clock, "nvmlDeviceGetMaxClockInfo");
    S_LOAD(power, "nvmlDeviceGetPowerUsage");
    S_LOAD(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    S_LOAD(temperature_v, "nvmlDeviceGetTemperatureV");
    S_LOAD(temperature, "nvmlDeviceGetTemperature");
    S_LOAD(clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (nv->clocks_event_reasons == NULL) /* drivers before 535 */
        S_LOAD(clocks_event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    S_LOAD(ecc_total, "nvmlDeviceGetTotalEccErrors");
    S_LOAD(pcie_throughput, "nvmlDeviceGetPcieThroughput");
    S_LOAD(event_set_create, "nvmlEventSetCreate");
    S_LOAD(register_events, "nvmlDeviceRegisterEvents");
    S_LOAD(event_set_wait, "nvmlEventSetWait_v2");
    S_LOAD(event_set_free, "nvmlEventSetFree");
    S_LOAD(retired_pages, "nvmlDeviceGetRetiredPages_v2");
    S_LOAD(retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
    S_LOAD(remapped_rows, "nvmlDeviceGetRemappedRows");
    S_LOAD(cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2");
    if (nv->cuda_driver_version == NULL)
        S_LOAD(cuda_driver_version, "nvmlSystemGetCudaDriverVersion");
    if (nv->init == NULL || nv->shutdown == NULL || (nv->by_index == NULL && nv->by_uuid == NULL)) {
        snprintf(note, cap, "NVML absent (%s has no nvmlInit_v2 or device lookup: not an NVML library): host "
                            "metrics only", lib);
        mon_nvml_close(nv);
        return -1;
    }
    mon_nvml_ret rc = nv->init();
    if (rc != MON_NVML_SUCCESS) {
        snprintf(note, cap, "NVML failed to start (%s: %s): host metrics only", lib, mon_nvml_error(nv, rc));
        nv->shutdown = NULL; /* nothing to shut down */
        mon_nvml_close(nv);
        return -1;
    }
    return 0;
}

void mon_nvml_close(struct mon_nvml *nv)
{
    if (nv->lib) {
        if (nv->shutdown)
            nv->shutdown();
        dlclose(nv->lib);
    }
    memset(nv, 0, sizeof *nv);
}

const char *mon_nvml_error(const struct mon_nvml *nv, mon_nvml_ret rc)
{
    static char buf[32];
    const char *s = nv->error_string ? nv->error_string(rc) : NULL;
    if (s && s[0])
        return s;
    snprintf(buf, sizeof buf, "error %d", rc);
    return buf;
}

mon_nvml_ret mon_nvml_lookup(const struct mon_nvml *nv, const char *entry, mon_nvml_dev *dev, mon_nvml_dev *parent)
{
    mon_nvml_ret rc = MON_NVML_ERROR_NOT_FOUND;
    size_t digits = strspn(entry, "0123456789");
    *dev = *parent = NULL;
    if (digits > 0 && digits < 10 && entry[digits] == '\0') {
        if (nv->by_index)
            rc = nv->by_index((unsigned)strtoul(entry, NULL, 10), dev);
    } else if (strncmp(entry, "GPU-", 4) == 0 || strncmp(entry, "MIG-", 4) == 0) {
        if (nv->by_uuid)
            rc = nv->by_uuid(entry, dev);
    }
    if (rc != MON_NVML_SUCCESS)
        return rc;
    *parent = *dev;
    unsigned mig = 0;
    if (nv->is_mig && nv->parent_of_mig && nv->is_mig(*dev, &mig) == MON_NVML_SUCCESS && mig) {
        mon_nvml_dev p = NULL;
        if (nv->parent_of_mig(*dev, &p) == MON_NVML_SUCCESS && p)
            *parent = p;
    }
    return rc;
}

void mon_nvml_pci(const struct mon_nvml *nv, mon_nvml_dev dev, char *buf, size_t cap)
{
    struct mon_nvml_pci pci;
    memset(&pci, 0, sizeof pci);
    buf[0] = '\0';
    if (nv->pci_info && nv->pci_info(dev, &pci) == MON_NVML_SUCCESS) {
        pci.bus_id[sizeof pci.bus_id - 1] = '\0';
        snprintf(buf, cap, "%s", pci.bus_id);
    }
}

int mon_nvml_procs(const struct mon_nvml *nv, mon_nvml_dev dev, struct mon_nvml_proc **list, unsigned *cap,
                   mon_nvml_ret *rc)
{
    if (nv->procs == NULL) {
        *rc = MON_NVML_ERROR_NOT_SUPPORTED;
        return -1;
    }
    /* The list can grow between the calls: a few tries, each with room for what the last one said. */
    for (int tries = 0; tries < 4; tries++) {
        if (*cap == 0 || *list == NULL) {
            struct mon_nvml_proc *p = realloc(*list, 64 * sizeof *p);
            if (p == NULL)
                return *rc = MON_NVML_ERROR_INSUFFICIENT_SIZE, -1;
            *list = p, *cap = 64;
        }
        unsigned n = *cap;
        *rc = nv->procs(dev, &n, *list);
        if (*rc == MON_NVML_SUCCESS)
            return (int)(n < *cap ? n : *cap);
        if (*rc != MON_NVML_ERROR_INSUFFICIENT_SIZE || n <= *cap || *cap >= MON_NVML_PROCS_MAX)
            return -1;
        unsigned want = n + 16 < MON_NVML_PROCS_MAX ? n + 16 : MON_NVML_PROCS_MAX;
        struct mon_nvml_proc *p = realloc(*list, want * sizeof *p);
        if (p == NULL)
            return -1;
        *list = p, *cap = want;
    }
    return -1;
}

void mon_nvml_cuda_version(const struct mon_nvml *nv, char *buf, size_t cap)
{
    int v = 0;
    buf[0] = '\0';
    if (nv->cuda_driver_version && nv->cuda_driver_version(&v) == MON_NVML_SUCCESS && v > 0)
        snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
}
