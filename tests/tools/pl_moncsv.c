/* pl_moncsv: writes a synthetic monitor.NODE.csv for tests/bb/report.t, through mon_csv_header and mon_csv_format,
 * so the rows are byte for byte what an agent writes; each rank's metrics follow the spec given (with a little
 * deterministic wobble, as measured metrics have). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/monitor/sampling/mon_csv.h"
#include "launcher/monitor/sampling/mon_sample.h"

#define PM_RANKS 1024

/* One rank's spec: values at the start and slopes per minute; NAN leaves a metric unknown. */
struct pm_rank {
    int rank, local;
    char gpu[MON_GPU_MAX];
    double util, idle, idle_ms, gmem, gslope, total, rss, rslope, cpu, temp, power, limit;
    long long throttle;
};

static const char s_usage[] =
    "usage: pl_moncsv FILE NODE [--t0 MS] [--interval S] [--from S] [--to S] [--gen G] [--append] SPEC...\n"
    "Writes FILE (the header, then a row per rank every S seconds of [from, to) after t0; --append: no header,\n"
    "appended). SPEC: key=value,... for one rank, keys rank local gpu (- for a CPU worker) util idle (0..1)\n"
    "idle_ms gmem gslope (MiB/min) total rss rslope (MiB/min) cpu temp power limit throttle (NVML bits).\n";

static int s_spec(const char *spec, struct pm_rank *r)
{
    char buf[512], *save = NULL;
    *r = (struct pm_rank){ .rank = -1, .local = -1, .gpu = "", .util = NAN, .idle = NAN, .idle_ms = NAN,
                           .gmem = NAN, .gslope = 0, .total = NAN, .rss = 1000, .rslope = 0, .cpu = 100, .temp = NAN,
                           .power = NAN, .limit = NAN, .throttle = -1 };
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return -1;
        *eq++ = '\0';
        double v = strcmp(kv, "gpu") ? strtod(eq, NULL) : 0;
        if (strcmp(kv, "rank") == 0) r->rank = (int)v;
        else if (strcmp(kv, "local") == 0) r->local = (int)v;
        else if (strcmp(kv, "gpu") == 0) snprintf(r->gpu, sizeof r->gpu, "%s", strcmp(eq, "-") ? eq : "");
        else if (strcmp(kv, "util") == 0) r->util = v;
        else if (strcmp(kv, "idle") == 0) r->idle = v;
        else if (strcmp(kv, "idle_ms") == 0) r->idle_ms = v;
        else if (strcmp(kv, "gmem") == 0) r->gmem = v;
        else if (strcmp(kv, "gslope") == 0) r->gslope = v;
        else if (strcmp(kv, "total") == 0) r->total = v;
        else if (strcmp(kv, "rss") == 0) r->rss = v;
        else if (strcmp(kv, "rslope") == 0) r->rslope = v;
        else if (strcmp(kv, "cpu") == 0) r->cpu = v;
        else if (strcmp(kv, "temp") == 0) r->temp = v;
        else if (strcmp(kv, "power") == 0) r->power = v;
        else if (strcmp(kv, "limit") == 0) r->limit = v;
        else if (strcmp(kv, "throttle") == 0) r->throttle = (long long)v;
        else return -1;
    }
    if (r->local < 0)
        r->local = r->rank;
    return r->rank < 0 ? -1 : 0;
}

static double s_clamp(double v, double lo, double hi)
{
    return isnan(v) ? v : v < lo ? lo : v > hi ? hi : v;
}

/* Sample k of rank r at t seconds after t0. */
static void s_sample(const struct pm_rank *r, int gen, long long t0, double t, int k, struct mon_sample *s)
{
    double wob = sin(k * 0.7 + r->rank), min = t / 60;
    mon_sample_clear(s);
    s->t_ms = t0 + (long long)llround(t * 1000);
    s->rank = r->rank;
    s->local_rank = r->local;
    s->generation = gen;
    snprintf(s->gpu, sizeof s->gpu, "%s", r->gpu);
    if (r->gpu[0]) {
        snprintf(s->pci, sizeof s->pci, "00000000:%02X:00.0", 0x18 + r->local % 200);
        s->gpu_util = s_clamp(r->util + 2 * wob, 0, 100);
        s->gpu_idle_frac = s_clamp(r->idle + 0.01 * wob, 0, 1);
        s->gpu_idle_ms = r->idle_ms;
        s->gpu_mem_proc_mib = r->gmem + r->gslope * min + 6 * sin(k * 1.3);
        s->gpu_mem_used_mib = s->gpu_mem_proc_mib + 500;
        s->gpu_mem_total_mib = r->total;
        s->sm_clock_mhz = 1980;
        s->sm_clock_max_mhz = 1980;
        s->temp_c = r->temp + 1.5 * wob;
        s->power_w = r->power + 10 * wob;
        s->power_limit_w = r->limit;
        s->throttle = r->throttle;
        s->ecc_corrected = 0;
        s->ecc_uncorrected = 0;
        s->xid = 0;
    }
    s->rss_mib = r->rss + r->rslope * min + 4 * sin(k * 0.9);
    s->cpu_pct = s_clamp(r->cpu + 3 * wob, 0, 1e6);
    s->threads = 12;
    s->procs = 3;
    s->host_avail_frac = 0.7;
}

int main(int argc, char **argv)
{
    static struct pm_rank ranks[PM_RANKS];
    long long t0 = 1796284800000LL; /* 2026-12-03T08:00:00Z */
    double interval = 5, from = 0, to = 900;
    int gen = 0, append = 0, n = 0;
    if (argc < 4) {
        fputs(s_usage, stderr);
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--append") == 0)
            append = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--t0") == 0)
            t0 = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--interval") == 0)
            interval = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--from") == 0)
            from = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--to") == 0)
            to = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--gen") == 0)
            gen = atoi(argv[++i]);
        else if (n < PM_RANKS && s_spec(argv[i], &ranks[n]) == 0)
            n++;
        else {
            fprintf(stderr, "pl_moncsv: bad argument '%s'\n%s", argv[i], s_usage);
            return 2;
        }
    }
    if (n == 0 || !(interval > 0)) {
        fputs(s_usage, stderr);
        return 2;
    }
    FILE *f = fopen(argv[1], append ? "a" : "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    if (!append)
        fputs(mon_csv_header(), f);
    char line[MON_CSV_LINE_MAX];
    for (int k = (int)ceil(from / interval); k * interval < to; k++)
        for (int i = 0; i < n; i++) {
            struct mon_sample s;
            s_sample(&ranks[i], gen, t0, k * interval, k, &s);
            if (mon_csv_format(&s, argv[2], line, sizeof line) < 0) {
                fprintf(stderr, "pl_moncsv: rank %d at %g s: mon_csv_format refused the row\n", ranks[i].rank,
                        k * interval);
                return 1;
            }
            fputs(line, f);
        }
    return fclose(f) == 0 ? 0 : 1;
}
