/* mon_sample: the one-rank sample's constructor: every metric unknown (NAN, or -1), the ids zero. */
#include "launcher/monitor/sampling/mon_sample.h"

#include <math.h>
#include <string.h>

void mon_sample_clear(struct mon_sample *s)
{
    memset(s, 0, sizeof *s);
    s->gpu_util = s->gpu_idle_frac = s->gpu_idle_ms = NAN;
    s->gpu_mem_proc_mib = s->gpu_mem_used_mib = s->gpu_mem_total_mib = NAN;
    s->sm_clock_mhz = s->sm_clock_max_mhz = NAN;
    s->power_w = s->power_limit_w = NAN;
    s->temp_c = NAN;
    s->throttle = -1;
    s->ecc_corrected = s->ecc_uncorrected = -1;
    s->pcie_tx_mibs = s->pcie_rx_mibs = NAN;
    s->xid = -1;
    s->rss_mib = s->cpu_pct = NAN;
    s->threads = s->procs = -1;
    s->host_avail_frac = NAN;
}
