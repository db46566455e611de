/* mon_gpu: per-device NVML metrics, once per round; per-rank GPU memory; fine utilization samples; Xid events. */
#include "launcher/monitor/sampling/mon_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MIB (1024.0 * 1024.0)
#define S_FINE_MAX 1024u  /* fine samples read per device and round (NVML keeps fewer) */
#define S_EVENTS_MAX 256  /* events taken per drain */

/* A CUDA_VISIBLE_DEVICES entry and the device it names (an index and a UUID of one GPU share the device). */
struct s_entry {
    char entry[MON_GPU_MAX];
    int dev;
};

struct s_dev {
    mon_nvml_dev h, parent;   /* parent: the physical GPU (h itself unless h is a MIG instance) */
    unsigned long long last_ts; /* the newest fine sample seen, µs */
    int registered;           /* for Xid: 1 yes, -1 NVML refused */
    int xid_pending;          /* the last Xid seen since the device's previous round, 0 none */
    int round;                /* the round whose values m holds */
    struct mon_sample m;      /* the device's fields */
    int nprocs;               /* -1 unknown */
    struct mon_nvml_proc *procs;
    unsigned pcap;
};

struct mon_gpu {
    const struct mon_nvml *nv;
    struct s_dev *dev;
    int n, cap, round;
    struct s_entry *entries;
    int nentries, ecap;
    mon_nvml_events events;
    int events_ok;            /* 0 not tried, 1 created, -1 cannot */
    struct mon_nvml_sample fine[S_FINE_MAX];
};

mon_gpu_t *mon_gpu_new(const struct mon_nvml *nv)
{
    mon_gpu_t *g = calloc(1, sizeof *g);
    if (g)
        g->nv = nv, g->round = 1;
    return g;
}

void mon_gpu_destroy(mon_gpu_t **gp)
{
    if (gp == NULL || *gp == NULL)
        return;
    mon_gpu_t *g = *gp;
    for (int i = 0; i < g->n; i++)
        free(g->dev[i].procs);
    if (g->events_ok == 1 && g->nv->event_set_free)
        g->nv->event_set_free(g->events);
    free(g->dev);
    free(g->entries);
    free(g);
    *gp = NULL;
}

void mon_gpu_round(mon_gpu_t *g)
{
    g->round++;
}

/* The device of entry, looked up at its first use (and again at the next round while NVML cannot find it). */
static struct s_dev *s_find(mon_gpu_t *g, const char *entry)
{
    for (int i = 0; i < g->nentries; i++)
        if (strcmp(g->entries[i].entry, entry) == 0)
            return &g->dev[g->entries[i].dev];
    mon_nvml_dev h, parent;
    if (mon_nvml_lookup(g->nv, entry, &h, &parent) != MON_NVML_SUCCESS)
        return NULL;
    if (g->nentries == g->ecap) {
        int cap = g->ecap ? g->ecap * 2 : 8;
        struct s_entry *e = realloc(g->entries, (size_t)cap * sizeof *e);
        if (e == NULL)
            return NULL;
        g->entries = e, g->ecap = cap;
    }
    int k = 0;
    while (k < g->n && g->dev[k].h != h)
        k++;
    if (k == g->n) {
        if (g->n == g->cap) {
            int cap = g->cap ? g->cap * 2 : 8;
            struct s_dev *d = realloc(g->dev, (size_t)cap * sizeof *d);
            if (d == NULL)
                return NULL;
            g->dev = d, g->cap = cap;
        }
        struct s_dev *d = &g->dev[g->n++];
        memset(d, 0, sizeof *d);
        d->h = h, d->parent = parent;
    }
    struct s_entry *e = &g->entries[g->nentries++];
    snprintf(e->entry, sizeof e->entry, "%s", entry);
    e->dev = k;
    return &g->dev[k];
}

static double s_value(int type, union mon_nvml_value v)
{
    switch (type) {
    case 0: return v.d;
    case 1: return v.ui;
    case 2: return (double)v.ul;
    case 3: return (double)v.ull;
    case 4: return (double)v.sll;
    case 5: return v.si;
    case 6: return v.us;
    default: return NAN;
    }
}

static int s_ts_cmp(const void *a, const void *b)
{
    unsigned long long x = ((const struct mon_nvml_sample *)a)->timestamp;
    unsigned long long y = ((const struct mon_nvml_sample *)b)->timestamp;
    return (x > y) - (x < y);
}

/* The fine utilization samples newer than the last seen: the idle share and the longest idle run. Each sample
 * stands for the time since the one before it (the first of a batch: since the last one seen, else the batch's
 * mean spacing). */
static void s_fine(mon_gpu_t *g, struct s_dev *d)
{
    unsigned n = S_FINE_MAX;
    int type = 1;
    if (g->nv->samples == NULL ||
        g->nv->samples(d->h, MON_NVML_GPU_UTILIZATION_SAMPLES, d->last_ts, &type, &n, g->fine) != MON_NVML_SUCCESS)
        return;
    if (n > S_FINE_MAX)
        n = S_FINE_MAX;
    struct mon_nvml_sample *f = g->fine;
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) /* NVML filters by last_ts; a buggy one must not make us count twice */
        if (f[i].timestamp > d->last_ts)
            f[k++] = f[i];
    if (k == 0)
        return;
    qsort(f, k, sizeof *f, s_ts_cmp);
    double mean = k > 1 ? (double)(f[k - 1].timestamp - f[0].timestamp) / (k - 1) : 0;
    double first = d->last_ts ? (double)(f[0].timestamp - d->last_ts) : mean;
    double run = 0, longest = 0;
    unsigned idle = 0;
    for (unsigned i = 0; i < k; i++) {
        double span = i ? (double)(f[i].timestamp - f[i - 1].timestamp) : first;
        double v = s_value(type, f[i].value);
        if (v < MON_GPU_IDLE_PCT) {
            idle++;
            run += span;
            longest = run > longest ? run : longest;
        } else {
            run = 0;
        }
    }
    d->last_ts = f[k - 1].timestamp;
    d->m.gpu_idle_frac = (double)idle / k;
    d->m.gpu_idle_ms = longest / 1000.0;
}

/* Takes every event waiting (timeout 0): the last Xid of each device is kept until its round reports it. */
static void s_events(mon_gpu_t *g)
{
    const struct mon_nvml *nv = g->nv;
    if (g->events_ok != 1 || nv->event_set_wait == NULL)
        return;
    for (int i = 0; i < S_EVENTS_MAX; i++) {
        struct mon_nvml_event ev;
        memset(&ev, 0, sizeof ev);
        if (nv->event_set_wait(g->events, &ev, 0) != MON_NVML_SUCCESS)
            return;
        if (!(ev.type & MON_NVML_EVENT_XID))
            continue;
        for (int j = 0; j < g->n; j++)
            if (g->dev[j].parent == ev.device || g->dev[j].h == ev.device)
                g->dev[j].xid_pending = ev.data > 0 && ev.data < 1000000 ? (int)ev.data : 999;
    }
}

static void s_register(mon_gpu_t *g, struct s_dev *d)
{
    const struct mon_nvml *nv = g->nv;
    if (g->events_ok == 0)
        g->events_ok = nv->event_set_create && nv->register_events && nv->event_set_wait &&
                               nv->event_set_create(&g->events) == MON_NVML_SUCCESS
                           ? 1
                           : -1;
    if (g->events_ok == 1 && d->registered == 0)
        d->registered = nv->register_events(d->parent, MON_NVML_EVENT_XID, g->events) == MON_NVML_SUCCESS ? 1 : -1;
}

static void s_read_device(mon_gpu_t *g, struct s_dev *d)
{
    const struct mon_nvml *nv = g->nv;
    struct mon_sample *m = &d->m;
    unsigned u;
    unsigned long long ull;
    mon_sample_clear(m);
    mon_nvml_pci(nv, d->parent, m->pci, sizeof m->pci);
    struct mon_nvml_util util;
    if (nv->utilization && nv->utilization(d->h, &util) == MON_NVML_SUCCESS)
        m->gpu_util = util.gpu;
    s_fine(g, d);
    struct mon_nvml_memory mem;
    if (nv->memory && nv->memory(d->h, &mem) == MON_NVML_SUCCESS)
        m->gpu_mem_used_mib = (double)mem.used / S_MIB, m->gpu_mem_total_mib = (double)mem.total / S_MIB;
    mon_nvml_ret rc;
    d->nprocs = mon_nvml_procs(nv, d->h, &d->procs, &d->pcap, &rc);
    if (nv->clock && nv->clock(d->parent, MON_NVML_CLOCK_SM, &u) == MON_NVML_SUCCESS)
        m->sm_clock_mhz = u;
    if (nv->max_clock && nv->max_clock(d->parent, MON_NVML_CLOCK_SM, &u) == MON_NVML_SUCCESS)
        m->sm_clock_max_mhz = u;
    if (nv->power && nv->power(d->parent, &u) == MON_NVML_SUCCESS)
        m->power_w = u / 1000.0;
    if (nv->power_limit && nv->power_limit(d->parent, &u) == MON_NVML_SUCCESS)
        m->power_limit_w = u / 1000.0;
    struct mon_nvml_temperature t = { .version = (unsigned)sizeof t | 1u << 24, .sensor = MON_NVML_TEMPERATURE_GPU };
    if (nv->temperature_v && nv->temperature_v(d->parent, &t) == MON_NVML_SUCCESS)
        m->temp_c = t.temperature;
    else if (nv->temperature && nv->temperature(d->parent, MON_NVML_TEMPERATURE_GPU, &u) == MON_NVML_SUCCESS)
        m->temp_c = u;
    if (nv->clocks_event_reasons && nv->clocks_event_reasons(d->parent, &ull) == MON_NVML_SUCCESS)
        m->throttle = (int64_t)(ull & 0x7fffffffffffffffull);
    if (nv->ecc_total &&
        nv->ecc_total(d->parent, MON_NVML_ECC_CORRECTED, MON_NVML_ECC_VOLATILE, &ull) == MON_NVML_SUCCESS)
        m->ecc_corrected = (int64_t)(ull & 0x7fffffffffffffffull);
    if (nv->ecc_total &&
        nv->ecc_total(d->parent, MON_NVML_ECC_UNCORRECTED, MON_NVML_ECC_VOLATILE, &ull) == MON_NVML_SUCCESS)
        m->ecc_uncorrected = (int64_t)(ull & 0x7fffffffffffffffull);
    /* KB/s over NVML's own 20 ms window (each call takes those 20 ms) */
    if (nv->pcie_throughput && nv->pcie_throughput(d->parent, MON_NVML_PCIE_TX, &u) == MON_NVML_SUCCESS)
        m->pcie_tx_mibs = u / 1024.0;
    if (nv->pcie_throughput && nv->pcie_throughput(d->parent, MON_NVML_PCIE_RX, &u) == MON_NVML_SUCCESS)
        m->pcie_rx_mibs = u / 1024.0;
    s_register(g, d);
    s_events(g);
    m->xid = d->registered == 1 ? d->xid_pending : -1;
    d->xid_pending = 0;
    d->round = g->round;
}

void mon_gpu_sample(mon_gpu_t *g, const char *entry, const pid_t *tree, int ntree, struct mon_sample *s)
{
    if (g == NULL || g->nv->lib == NULL || entry[0] == '\0')
        return;
    struct s_dev *d = s_find(g, entry);
    if (d == NULL)
        return;
    if (d->round != g->round)
        s_read_device(g, d);
    const struct mon_sample *m = &d->m;
    memcpy(s->pci, m->pci, sizeof s->pci);
    s->gpu_util = m->gpu_util, s->gpu_idle_frac = m->gpu_idle_frac, s->gpu_idle_ms = m->gpu_idle_ms;
    s->gpu_mem_used_mib = m->gpu_mem_used_mib, s->gpu_mem_total_mib = m->gpu_mem_total_mib;
    s->sm_clock_mhz = m->sm_clock_mhz, s->sm_clock_max_mhz = m->sm_clock_max_mhz;
    s->power_w = m->power_w, s->power_limit_w = m->power_limit_w;
    s->temp_c = m->temp_c;
    s->throttle = m->throttle, s->ecc_corrected = m->ecc_corrected, s->ecc_uncorrected = m->ecc_uncorrected;
    s->pcie_tx_mibs = m->pcie_tx_mibs, s->pcie_rx_mibs = m->pcie_rx_mibs;
    s->xid = m->xid;
    if (d->nprocs < 0)
        return;
    double mib = 0;
    for (int i = 0; i < d->nprocs; i++)
        for (int j = 0; j < ntree; j++)
            if ((pid_t)d->procs[i].pid == tree[j]) {
                if (d->procs[i].used_gpu_memory == MON_NVML_VALUE_NOT_AVAILABLE)
                    return; /* NVML does not say (for instance without the permission) */
                mib += (double)d->procs[i].used_gpu_memory / S_MIB;
                break;
            }
    s->gpu_mem_proc_mib = mib;
}
