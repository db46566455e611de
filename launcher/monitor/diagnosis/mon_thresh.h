/* mon_thresh: the diagnosis thresholds: defaults, conf/monitor.ini's [monitor] section (the file --monitor-config
 * names, or PLAUNCH_MONITOR_CONFIG), every key checked; one place that says what each number means. */
#ifndef PLAUNCH_MON_THRESH_H
#define PLAUNCH_MON_THRESH_H

#include <stddef.h>

struct mon_thresh {
    double warmup_s;            /* samples of the first warmup_s of a generation are not judged (default 60) */
    double min_steady_s;        /* no finding from less steady state than this (default 30) */
    /* input-bound: mean GPU busy below util_low % with idle (~0 %) periods at least idle_frac of the time */
    double util_low;            /* default 70 */
    double idle_frac;           /* default 0.15 */
    double idle_util;           /* a fine sample at or below this % counts as idle (default 5) */
    /* straggler: a rank whose GPU busy (or host CPU, for CPU workers) is off the median of its peers by more
     * than straggler_frac (relative), with at least straggler_min_ranks ranks */
    double straggler_frac;      /* default 0.25 */
    double straggler_min_pct;   /* and by at least this many points of % (default 10): 2 % against 1 % is noise */
    int straggler_min_ranks;    /* default 3 */
    /* memory growth: a least-squares slope of at least growth_mib_min MiB/min that held for at least
     * growth_min_s and added at least growth_min_mib in all */
    double growth_mib_min;      /* default 10 */
    double growth_min_s;        /* default 120 */
    double growth_min_mib;      /* default 256 */
    double growth_r2;           /* the fit explains at least this share of the variance (default 0.8): steady, not noise */
    /* throttling: a reason active in at least throttle_frac of the steady samples, with the mean SM clock below
     * throttle_clock_frac of its maximum (a power cap that costs 0.5 % of the clock is a GPU at work, not a fault) */
    double throttle_frac;       /* default 0.1 */
    double throttle_clock_frac; /* default 0.95 */
    /* memory near full: device memory at or above near_full_frac of its total in any steady sample */
    double near_full_frac;      /* default 0.95 */
    double host_near_full_frac; /* host RAM: the node's MemAvailable below 1 - this of MemTotal (default 0.95) */
    /* step rates (reported by the ranks: plaunch_progress, PLAUNCH_PROGRESS_FILE): a rank whose steps per second over
     * the last step_window_s stay below step_rate_frac of the median of at least 3 ranks is a straggler */
    double step_rate_frac;      /* default 0.8 */
    double step_window_s;       /* default 60 */
    /* ECC: any uncorrectable error is a finding; corrected ones when more than this many came during the job */
    double ecc_corrected_max;   /* default 1000 */
};

/* The defaults. */
void mon_thresh_default(struct mon_thresh *t);
/* Reads the [monitor] section of path over *t (keys as the field names, e.g. util_low = 60); 0, or -1 with a message
 * naming file:line and the key. A missing file is an error; an unknown key or section too; *t is left as it was.
 * The file is read within OPTFILE_MAX_CONFIG (1 MiB); a FIFO or device is refused. */
int mon_thresh_read(const char *path, struct mon_thresh *t, char *err, size_t errlen);

#endif
