/* fake_nvml: a stand-in NVML for the black-box tests: FAKE_NVML_COUNT GPUs (default 1) that answer nothing but
 * their count (probe_report.t), or GPUs whose every value is scripted per step (monitor_sampler.t).
 * Build: cc -shared -fPIC -o libfake_nvml.so fake_nvml.c fake_nvml_script.c
 * Use:   PLAUNCH_NVML_LIBRARY=/path/libfake_nvml.so
 *
 * Environment:
 *   FAKE_NVML_COUNT=N       the number of GPUs (wins over the script's `count`)
 *   FAKE_NVML_SCRIPT=FILE   the script below, read by nvmlInit_v2 (an error in it: a message on stderr naming
 *                           FILE:LINE, and nvmlInit_v2 fails with NVML_ERROR_UNKNOWN)
 *   FAKE_NVML_HANG=FN[@K]   the NVML function FN sleeps forever from its (K+1)-th call on, counted over all GPUs
 *                           (K 0 by default: the first call hangs)
 *   FAKE_NVML_INIT_FAIL=RC  nvmlInit_v2 returns RC (9: driver not loaded)
 *
 * Script, one statement a line, '#' starts a comment:
 *   count N                 GPUs (default: the highest index used + 1)
 *   driver V                nvmlSystemGetCudaDriverVersion(_v2): 12040 is "12.4" (unset: not known)
 *   gpu I KEY=VALUE...      GPU I's values from step 0 on
 *   gpu I step K KEY=VALUE  its values from step K on (each holds until a later step sets it again)
 * A GPU enters its next step at each nvmlDeviceGetUtilizationRates call on it (the first call enters step 0; past
 * the last scripted step it stays there). A key never set makes its call answer NVML_ERROR_NOT_SUPPORTED.
 * Keys:
 *   uuid=GPU-...|MIG-...    (default GPU-00000000-0000-0000-0000-0000000000II)   pci=00000000:3B:00.0
 *   util=PCT                nvmlDeviceGetUtilizationRates .gpu
 *   fine=V,V,...            fine utilization samples (%) that appear when the GPU enters this step, fine_ms apart
 *   fine_ms=MS              their spacing (default 100)
 *   mem_used=MIB mem_total=MIB          nvmlDeviceGetMemoryInfo
 *   proc=WHO:MIB,...        compute processes: WHO is a pid; or localN: the child of the caller's parent (the
 *                           agent) whose environment holds LOCAL_RANK=N (resolved at each call); or localN.K: the
 *                           K-th child (1 first) of that process; proc=- for none
 *   sm=MHZ sm_max=MHZ       clocks (SM; graphics answers the same)
 *   power=W power_limit=W   temp=C   throttle=BITS (0x44 or decimal)
 *   ecc_corr=N ecc_uncorr=N (volatile)   ecc_corr_agg=N ecc_uncorr_agg=N (aggregate)
 *   pcie_tx=KBPS pcie_rx=KBPS
 *   xid=N                   one Xid event when the GPU enters this step (delivered once it is registered)
 *   retired=N retired_pending=0|1       retired pages (all double-bit) and the pending status
 *   remap_corr=N remap_unc=N remap_pending=0|1 remap_failed=0|1   nvmlDeviceGetRemappedRows
 *   lost=1                  every call on the GPU answers NVML_ERROR_GPU_IS_LOST
 *   unsupported=FN,FN...    these functions answer NVML_ERROR_NOT_SUPPORTED on this GPU (unsupported=- none) */
#define _GNU_SOURCE
#include "tests/bb/fake_nvml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The GPU of a handle, after the common checks: NULL with *rc set. */
static struct f_gpu *f_dev(void *h, const char *fn, int *rc)
{
    f_call(fn);
    struct f_gpu *g = h;
    double lost = 0;
    *rc = OK;
    if (g < f_gpu || g >= f_gpu + f_count)
        return *rc = INVALID, NULL;
    if (f_get(g, K_LOST, &lost) && lost)
        return *rc = LOST, NULL;
    const struct f_step *s = f_held(g, offsetof(struct f_step, unsup_set));
    char needle[160];
    snprintf(needle, sizeof needle, ",%s,", fn);
    if (s && strstr(s->unsup, needle))
        return *rc = UNSUPPORTED, NULL;
    return g;
}

#define F_DEV(h)                                                                                                   \
    int rc;                                                                                                        \
    struct f_gpu *g = f_dev(h, __func__, &rc);                                                                     \
    if (g == NULL)                                                                                                 \
    return rc

/* ---- the NVML API ----------------------------------------------------------------------------------------- */
typedef struct { unsigned gpu, memory; } f_util_t;
typedef struct { unsigned long long total, free, used; } f_mem_t;
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } f_procinfo_t;
typedef struct { char legacy[16]; unsigned domain, bus, device, id, subsys; char bus_id[32]; } f_pci_t;
typedef struct { unsigned version; int sensor; int temperature; } f_temp_t;

int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int rc);
int nvmlDeviceGetCount_v2(unsigned *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h);
int nvmlDeviceGetHandleByUUID(const char *uuid, void **h);
int nvmlDeviceGetUUID(void *h, char *buf, unsigned len);
int nvmlDeviceGetPciInfo_v3(void *h, f_pci_t *p);
int nvmlDeviceGetUtilizationRates(void *h, f_util_t *u);
int nvmlDeviceGetSamples(void *h, int type, unsigned long long last, int *vt, unsigned *n, struct f_sample *out);
int nvmlDeviceGetMemoryInfo(void *h, f_mem_t *m);
int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *n, f_procinfo_t *out);
int nvmlDeviceGetClockInfo(void *h, int type, unsigned *mhz);
int nvmlDeviceGetMaxClockInfo(void *h, int type, unsigned *mhz);
int nvmlDeviceGetPowerUsage(void *h, unsigned *mw);
int nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned *mw);
int nvmlDeviceGetTemperature(void *h, int sensor, unsigned *c);
int nvmlDeviceGetTemperatureV(void *h, f_temp_t *t);
int nvmlDeviceGetCurrentClocksEventReasons(void *h, unsigned long long *bits);
int nvmlDeviceGetCurrentClocksThrottleReasons(void *h, unsigned long long *bits);
int nvmlDeviceGetTotalEccErrors(void *h, int type, int counter, unsigned long long *n);
int nvmlDeviceGetPcieThroughput(void *h, int counter, unsigned *kbps);
int nvmlEventSetCreate(void **set);
int nvmlDeviceRegisterEvents(void *h, unsigned long long types, void *set);
int nvmlEventSetWait_v2(void *set, struct f_event *ev, unsigned timeout_ms);
int nvmlEventSetFree(void *set);
int nvmlDeviceGetRetiredPages_v2(void *h, int cause, unsigned *n, unsigned long long *addr, unsigned long long *ts);
int nvmlDeviceGetRetiredPagesPendingStatus(void *h, int *pending);
int nvmlDeviceGetRemappedRows(void *h, unsigned *corr, unsigned *unc, unsigned *pending, unsigned *failed);
int nvmlSystemGetCudaDriverVersion(int *v);
int nvmlSystemGetCudaDriverVersion_v2(int *v);

int nvmlInit_v2(void)
{
    const char *fail = getenv("FAKE_NVML_INIT_FAIL");
    int loaded = f_load();
    f_call(__func__);
    if (fail && atoi(fail))
        return atoi(fail);
    return loaded < 0 ? UNKNOWN : OK;
}

int nvmlShutdown(void)
{
    return OK;
}

const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case OK: return "Success";
    case INVALID: return "Invalid Argument";
    case UNSUPPORTED: return "Not Supported";
    case NOT_FOUND: return "Not Found";
    case 9: return "Driver Not Loaded";
    case TIMEOUT: return "Timeout";
    case LOST: return "GPU is lost";
    default: return "fake NVML error";
    }
}

int nvmlDeviceGetCount_v2(unsigned *n)
{
    f_call(__func__);
    f_load();
    *n = (unsigned)f_count;
    return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h)
{
    f_call(__func__);
    if (f_load() < 0 || i >= (unsigned)f_count)
        return INVALID;
    *h = &f_gpu[i];
    return OK;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, void **h)
{
    f_call(__func__);
    for (int i = 0; f_load() == 0 && i < f_count; i++)
        if (strcmp(uuid, f_gpu[i].uuid) == 0)
            return *h = &f_gpu[i], OK;
    return NOT_FOUND;
}

int nvmlDeviceGetUUID(void *h, char *buf, unsigned len)
{
    F_DEV(h);
    snprintf(buf, len, "%s", g->uuid);
    return OK;
}

int nvmlDeviceGetPciInfo_v3(void *h, f_pci_t *p)
{
    F_DEV(h);
    memset(p, 0, sizeof *p);
    snprintf(p->bus_id, sizeof p->bus_id, "%s", g->pci);
    snprintf(p->legacy, sizeof p->legacy, "%s", g->pci + (strlen(g->pci) > 12 ? 4 : 0));
    sscanf(g->pci, "%x:%x:%x", &p->domain, &p->bus, &p->device);
    return OK;
}

/* Enters the GPU's next step: its fine samples appear and its Xid is queued. */
int nvmlDeviceGetUtilizationRates(void *h, f_util_t *u)
{
    F_DEV(h);
    if (g->entered && g->cur + 1 < F_STEPS)
        g->cur++;
    g->entered = 1;
    const struct f_step *s = &g->steps[g->cur];
    double ms = 100;
    f_get(g, K_FINE_MS, &ms);
    for (int i = 0; s->fine_set && i < s->nfine; i++) {
        g->clock_us += (unsigned long long)(ms * 1000);
        g->ring[g->nring % F_RING] = (struct f_sample){ g->clock_us, (unsigned long long)(unsigned)s->fine[i] };
        g->nring++;
    }
    if (s->xid && f_nqueue < F_EVENTS)
        f_queue[f_nqueue++] = (struct f_event){ g, 8, (unsigned long long)s->xid, 0xffffffffu, 0xffffffffu };
    double v;
    if (!f_get(g, K_UTIL, &v))
        return UNSUPPORTED;
    u->gpu = (unsigned)v, u->memory = 0;
    return OK;
}

int nvmlDeviceGetSamples(void *h, int type, unsigned long long last, int *vt, unsigned *n, struct f_sample *out)
{
    F_DEV(h);
    if (type != 1)
        return UNSUPPORTED;
    if (g->nring == 0 && !f_held(g, offsetof(struct f_step, fine_set)))
        return UNSUPPORTED;
    unsigned k = 0;
    int first = g->nring > F_RING ? g->nring - F_RING : 0;
    for (int i = first; i < g->nring; i++) {
        const struct f_sample *s = &g->ring[i % F_RING];
        if (s->ts <= last)
            continue;
        if (out && k < *n)
            out[k] = *s;
        k++;
    }
    *vt = 1;
    if (k == 0)
        return NOT_FOUND;
    *n = out && k > *n ? *n : k;
    return OK;
}

#define F_VALUE(key, expr)                                                                                         \
    double v;                                                                                                      \
    if (!f_get(g, key, &v))                                                                                        \
        return UNSUPPORTED;                                                                                        \
    expr;                                                                                                          \
    return OK

int nvmlDeviceGetMemoryInfo(void *h, f_mem_t *m)
{
    F_DEV(h);
    double used, total;
    if (!f_get(g, K_MEM_USED, &used) || !f_get(g, K_MEM_TOTAL, &total))
        return UNSUPPORTED;
    m->used = (unsigned long long)(used * 1048576), m->total = (unsigned long long)(total * 1048576);
    m->free = m->total > m->used ? m->total - m->used : 0;
    return OK;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *n, f_procinfo_t *out)
{
    F_DEV(h);
    const struct f_step *s = f_held(g, offsetof(struct f_step, procs_set));
    f_procinfo_t list[F_PROCS];
    unsigned k = 0;
    for (int i = 0; s && i < s->nprocs; i++) {
        const char *w = s->procs[i].who;
        unsigned pid = strncmp(w, "local", 5) == 0 ? f_local(w + 5) : (unsigned)strtoul(w, NULL, 10);
        if (pid)
            list[k++] = (f_procinfo_t){ pid, (unsigned long long)(s->procs[i].mib * 1048576), ~0u, ~0u };
    }
    if (*n < k) {
        *n = k;
        return INSUFFICIENT;
    }
    memcpy(out, list, k * sizeof *list);
    *n = k;
    return OK;
}

int nvmlDeviceGetClockInfo(void *h, int type, unsigned *mhz)
{
    F_DEV(h);
    if (type > 1)
        return UNSUPPORTED;
    F_VALUE(K_SM, *mhz = (unsigned)v);
}

int nvmlDeviceGetMaxClockInfo(void *h, int type, unsigned *mhz)
{
    F_DEV(h);
    if (type > 1)
        return UNSUPPORTED;
    F_VALUE(K_SM_MAX, *mhz = (unsigned)v);
}

int nvmlDeviceGetPowerUsage(void *h, unsigned *mw)
{
    F_DEV(h);
    F_VALUE(K_POWER, *mw = (unsigned)(v * 1000));
}

int nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned *mw)
{
    F_DEV(h);
    F_VALUE(K_POWER_LIMIT, *mw = (unsigned)(v * 1000));
}

int nvmlDeviceGetTemperature(void *h, int sensor, unsigned *c)
{
    F_DEV(h);
    if (sensor != 0)
        return UNSUPPORTED;
    F_VALUE(K_TEMP, *c = (unsigned)v);
}

int nvmlDeviceGetTemperatureV(void *h, f_temp_t *t)
{
    F_DEV(h);
    if (t->sensor != 0 || t->version != ((unsigned)sizeof *t | 1u << 24))
        return INVALID;
    F_VALUE(K_TEMP, t->temperature = (int)v);
}

int nvmlDeviceGetCurrentClocksEventReasons(void *h, unsigned long long *bits)
{
    F_DEV(h);
    F_VALUE(K_THROTTLE, *bits = (unsigned long long)v);
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void *h, unsigned long long *bits)
{
    F_DEV(h);
    F_VALUE(K_THROTTLE, *bits = (unsigned long long)v);
}

int nvmlDeviceGetTotalEccErrors(void *h, int type, int counter, unsigned long long *n)
{
    F_DEV(h);
    static const int key[2][2] = { { K_ECC_CORR, K_ECC_CORR_AGG }, { K_ECC_UNCORR, K_ECC_UNCORR_AGG } };
    if (type < 0 || type > 1 || counter < 0 || counter > 1)
        return INVALID;
    F_VALUE(key[type][counter], *n = (unsigned long long)v);
}

int nvmlDeviceGetPcieThroughput(void *h, int counter, unsigned *kbps)
{
    F_DEV(h);
    if (counter < 0 || counter > 1)
        return INVALID;
    F_VALUE(counter ? K_PCIE_RX : K_PCIE_TX, *kbps = (unsigned)v);
}

static int f_set; /* the one event set */

int nvmlEventSetCreate(void **set)
{
    f_call(__func__);
    *set = &f_set;
    return OK;
}

int nvmlDeviceRegisterEvents(void *h, unsigned long long types, void *set)
{
    F_DEV(h);
    if (set != &f_set || !(types & 8))
        return INVALID;
    g->registered = 1;
    return OK;
}

int nvmlEventSetWait_v2(void *set, struct f_event *ev, unsigned timeout_ms)
{
    (void)timeout_ms; /* nothing ever comes later: answer at once */
    f_call(__func__);
    for (int i = 0; set == &f_set && i < f_nqueue; i++)
        if (((struct f_gpu *)f_queue[i].device)->registered) {
            *ev = f_queue[i];
            memmove(&f_queue[i], &f_queue[i + 1], (size_t)(f_nqueue - i - 1) * sizeof *f_queue);
            f_nqueue--;
            return OK;
        }
    return TIMEOUT;
}

int nvmlEventSetFree(void *set)
{
    return set == &f_set ? OK : INVALID;
}

int nvmlDeviceGetRetiredPages_v2(void *h, int cause, unsigned *n, unsigned long long *addr, unsigned long long *ts)
{
    F_DEV(h);
    double v;
    if (!f_get(g, K_RETIRED, &v))
        return UNSUPPORTED;
    unsigned k = cause == 1 ? (unsigned)v : 0;
    if (*n < k) {
        *n = k;
        return INSUFFICIENT;
    }
    for (unsigned i = 0; i < k; i++)
        addr[i] = 0x1000ull * (i + 1), ts[i] = 1700000000ull;
    *n = k;
    return OK;
}

int nvmlDeviceGetRetiredPagesPendingStatus(void *h, int *pending)
{
    F_DEV(h);
    F_VALUE(K_RETIRED_PENDING, *pending = v != 0);
}

int nvmlDeviceGetRemappedRows(void *h, unsigned *corr, unsigned *unc, unsigned *pending, unsigned *failed)
{
    F_DEV(h);
    double c = 0, u = 0, p = 0, f = 0;
    int any = f_get(g, K_REMAP_CORR, &c) | f_get(g, K_REMAP_UNC, &u) | f_get(g, K_REMAP_PENDING, &p) |
              f_get(g, K_REMAP_FAILED, &f);
    if (!any)
        return UNSUPPORTED;
    *corr = (unsigned)c, *unc = (unsigned)u, *pending = p != 0, *failed = f != 0;
    return OK;
}

static int f_driver_version(const char *fn, int *v)
{
    f_call(fn);
    f_load();
    if (f_driver < 0)
        return NO_FN;
    *v = f_driver;
    return OK;
}

int nvmlSystemGetCudaDriverVersion(int *v)
{
    return f_driver_version(__func__, v);
}

int nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    return f_driver_version(__func__, v);
}
