/* mon_series: a rank's samples in bounded memory: points of `merged` samples, neighbouring pairs merged when full. */
#include "launcher/monitor/diagnosis/mon_series.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The averaged fields of a sample. */
static const size_t s_means[] = {
    offsetof(struct mon_sample, gpu_util),         offsetof(struct mon_sample, gpu_idle_frac),
    offsetof(struct mon_sample, gpu_mem_proc_mib), offsetof(struct mon_sample, gpu_mem_used_mib),
    offsetof(struct mon_sample, gpu_mem_total_mib), offsetof(struct mon_sample, sm_clock_mhz),
    offsetof(struct mon_sample, sm_clock_max_mhz), offsetof(struct mon_sample, power_w),
    offsetof(struct mon_sample, power_limit_w),    offsetof(struct mon_sample, pcie_tx_mibs),
    offsetof(struct mon_sample, pcie_rx_mibs),     offsetof(struct mon_sample, rss_mib),
    offsetof(struct mon_sample, cpu_pct),
};


void mon_series_init(struct mon_series *ser, int rank, const char *node)
{
    memset(ser, 0, sizeof *ser);
    ser->rank = rank;
    snprintf(ser->node, sizeof ser->node, "%s", node ? node : "");
    ser->merged = 1;
    ser->idle_util = 5;
    mon_sample_clear(&ser->acc);
}

static double s_max(double a, double b)
{
    return isnan(a) ? b : isnan(b) ? a : a > b ? a : b;
}

static double s_min(double a, double b)
{
    return isnan(a) ? b : isnan(b) ? a : a < b ? a : b;
}

/* Merges point b (its counts pb) into a (pa), b being the later one. */
static void s_merge(struct mon_sample *a, struct mon_point *pa, const struct mon_sample *b,
                    const struct mon_point *pb)
{
    double wa = pa->samples, wb = pb->samples;
    for (size_t i = 0; i < sizeof s_means / sizeof s_means[0]; i++) {
        double *x = (double *)((char *)a + s_means[i]);
        double y = *(const double *)((const char *)b + s_means[i]);
        if (isnan(*x))
            *x = y;
        else if (!isnan(y))
            *x = (*x * wa + y * wb) / (wa + wb);
    }
    a->gpu_idle_ms = s_max(a->gpu_idle_ms, b->gpu_idle_ms);
    a->temp_c = s_max(a->temp_c, b->temp_c);
    a->host_avail_frac = s_min(a->host_avail_frac, b->host_avail_frac);
    a->threads = b->threads > a->threads ? b->threads : a->threads;
    a->procs = b->procs > a->procs ? b->procs : a->procs;
    if (b->throttle >= 0)
        a->throttle = a->throttle >= 0 ? a->throttle | b->throttle : b->throttle;
    if (b->ecc_corrected >= 0)
        a->ecc_corrected = b->ecc_corrected;
    if (b->ecc_uncorrected >= 0)
        a->ecc_uncorrected = b->ecc_uncorrected;
    if (b->xid > 0 || (b->xid == 0 && a->xid < 0))
        a->xid = b->xid;
    a->rank = b->rank, a->local_rank = b->local_rank, a->generation = b->generation;
    memcpy(a->gpu, b->gpu, sizeof a->gpu);
    memcpy(a->pci, b->pci, sizeof a->pci);
    pa->samples += pb->samples;
    pa->util_known += pb->util_known, pa->util_idle += pb->util_idle;
    pa->thr_known += pb->thr_known;
    pa->thr_thermal += pb->thr_thermal, pa->thr_power += pb->thr_power, pa->thr_hw += pb->thr_hw;
    pa->xids += pb->xids;
    pa->gmem_peak_mib = s_max(pa->gmem_peak_mib, pb->gmem_peak_mib);
}

/* The counts of one sample. */
static void s_count(const struct mon_series *ser, const struct mon_sample *s, struct mon_point *p)
{
    memset(p, 0, sizeof *p);
    p->samples = 1;
    if (!isnan(s->gpu_util)) {
        p->util_known = 1;
        p->util_idle = s->gpu_util <= ser->idle_util;
    }
    if (s->throttle >= 0) {
        uint64_t t = (uint64_t)s->throttle;
        p->thr_known = 1;
        p->thr_thermal = (t & (MON_THR_SW_THERMAL | MON_THR_HW_THERMAL)) != 0;
        p->thr_power = (t & (MON_THR_SW_POWER | MON_THR_HW_POWER_BRAKE)) != 0;
        /* NVML sets HW_SLOWDOWN along with HW_THERMAL or HW_POWER_BRAKE: only the rest is a class of its own */
        p->thr_hw = (t & MON_THR_HW_SLOWDOWN) && !(t & (MON_THR_HW_THERMAL | MON_THR_HW_POWER_BRAKE));
    }
    p->xids = s->xid > 0;
    p->gmem_peak_mib = !isnan(s->gpu_mem_used_mib) ? s->gpu_mem_used_mib : s->gpu_mem_proc_mib;
}

/* Halves the points: pairs merge within a generation, or when both are older than the newest point's. */
static void s_halve(struct mon_series *ser)
{
    int latest = ser->s[ser->n - 1].generation, k = 0;
    for (int i = 0; i < ser->n; k++) {
        if (k != i) {
            ser->s[k] = ser->s[i];
            ser->pt[k] = ser->pt[i];
        }
        int j = i + 1;
        if (j < ser->n && (ser->s[j].generation == ser->s[i].generation ||
                           (ser->s[i].generation != latest && ser->s[j].generation != latest))) {
            s_merge(&ser->s[k], &ser->pt[k], &ser->s[j], &ser->pt[j]);
            j++;
        }
        i = j;
    }
    ser->n = k;
    ser->merged *= 2;
}

/* Moves the pending point into the array (halving it first when full). */
static void s_push(struct mon_series *ser)
{
    if (ser->n == MON_SERIES_MAX)
        s_halve(ser);
    ser->s[ser->n] = ser->acc;
    ser->pt[ser->n] = ser->acc_pt;
    ser->n++;
    ser->pending = 0;
    mon_sample_clear(&ser->acc);
    memset(&ser->acc_pt, 0, sizeof ser->acc_pt);
}

void mon_series_add(struct mon_series *ser, const struct mon_sample *s)
{
    struct mon_point p;
    if (ser->pending > 0 && s->generation != ser->acc.generation)
        s_push(ser);
    s_count(ser, s, &p);
    if (ser->pending == 0) {
        ser->acc = *s;
        ser->acc_pt = p;
    } else {
        s_merge(&ser->acc, &ser->acc_pt, s, &p);
    }
    ser->pending++;
    if (s->gpu[0])
        memcpy(ser->gpu, s->gpu, sizeof ser->gpu);
    if (s->pci[0])
        memcpy(ser->pci, s->pci, sizeof ser->pci);
    if (ser->pending < ser->merged)
        return;
    if (ser->n == MON_SERIES_MAX) {
        /* full: halve now and let the pending point grow to the new size, so points stay alike */
        s_halve(ser);
        if (ser->pending < ser->merged)
            return;
    }
    s_push(ser);
}

int mon_series_len(const struct mon_series *ser)
{
    return ser->n + (ser->pending > 0);
}

const struct mon_sample *mon_series_get(const struct mon_series *ser, int i, const struct mon_point **pt)
{
    const struct mon_sample *s = i < ser->n ? &ser->s[i] : &ser->acc;
    if (pt)
        *pt = i < ser->n ? &ser->pt[i] : &ser->acc_pt;
    return s;
}
