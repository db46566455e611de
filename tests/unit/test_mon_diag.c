/* Unit tests for mon_diag: synthetic series of each pattern fire their finding with the numbers worked out by hand,
 * healthy and noisy-but-flat series stay silent, warm-up and earlier generations are not judged, and the block. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/monitor/diagnosis/mon_diag.h"

#define T0 1700000000000LL
#define NR 6

static struct mon_series s_ser[NR];
static struct mon_rank_summary s_sum[NR];
static struct mon_finding s_f[32];
static struct mon_thresh s_th;

/* A healthy GPU rank's sample at second sec: busy 92 %, 20000 MiB of its own on a 32 GiB GPU, no throttling. */
static void s_healthy(struct mon_sample *s, int rank, int sec)
{
    mon_sample_clear(s);
    s->t_ms = T0 + 1000LL * sec;
    s->rank = s->local_rank = rank;
    snprintf(s->gpu, sizeof s->gpu, "%d", rank);
    snprintf(s->pci, sizeof s->pci, "00000000:%02X:00.0", 0x3B + rank);
    s->gpu_util = 92, s->gpu_idle_frac = 0.01, s->gpu_idle_ms = 0;
    s->gpu_mem_proc_mib = 20000, s->gpu_mem_used_mib = 20500, s->gpu_mem_total_mib = 32768;
    s->sm_clock_mhz = s->sm_clock_max_mhz = 1980;
    s->power_w = 500, s->power_limit_w = 700, s->temp_c = 65;
    s->throttle = 0, s->ecc_corrected = 0, s->ecc_uncorrected = 0, s->xid = 0;
    s->rss_mib = 8000, s->cpu_pct = 120, s->threads = 40, s->procs = 9, s->host_avail_frac = 0.6;
}

/* A deterministic noise in [-1, 1]. */
static double s_noise(unsigned *x)
{
    *x = *x * 1103515245u + 12345u;
    return ((*x >> 8) & 0xffff) / 32767.5 - 1;
}

typedef void (*s_shape_fn)(struct mon_sample *s, int sec, int i);

/* Fills series r (node) with secs samples at 1 s, each healthy then shaped. */
static void s_fill(int r, const char *node, int secs, s_shape_fn shape)
{
    mon_series_init(&s_ser[r], r, node);
    for (int i = 0; i < secs; i++) {
        struct mon_sample s;
        s_healthy(&s, r, i);
        if (shape)
            shape(&s, i, r);
        mon_series_add(&s_ser[r], &s);
    }
}

/* Summaries of series 0..n-1 and their findings; the count. */
static int s_judge(int n)
{
    for (int r = 0; r < n; r++)
        assert_int_equal(mon_diag_rank(&s_ser[r], &s_th, &s_sum[r]), 0);
    return mon_diag_job(s_sum, n, &s_th, s_f, 32);
}

static void s_expect_text(const char *text, ...)
{
    va_list ap;
    va_start(ap, text);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;)
        if (!strstr(text, needle))
            fail_msg("'%s' does not contain '%s'", text, needle);
    va_end(ap);
}

/* Exactly one finding, of kind k, with every needle in its text. */
#define S_ONE(nf, k, ...)                                                                                        \
    do {                                                                                                         \
        if ((nf) != 1)                                                                                           \
            fail_msg("%d findings, want 1 (first: %s)", (nf), (nf) > 0 ? s_f[0].text : "-");                     \
        assert_int_equal(s_f[0].kind, (k));                                                                      \
        s_expect_text(s_f[0].text, __VA_ARGS__, NULL);                                                           \
    } while (0)

static int s_setup(void **state)
{
    mon_thresh_default(&s_th);
    return 0;
}

static void s_expect_healthy(int nf)
{
    if (nf != 0)
        fail_msg("%d findings on a healthy job, first: %s", nf, s_f[0].text);
}

static void test_healthy_is_silent(void **state)
{
    s_fill(0, "node-a", 900, NULL);
    s_expect_healthy(s_judge(1));
    assert_int_equal(s_sum[0].samples, 840);
    assert_true(fabs(s_sum[0].steady_s - 840) < 1e-9);
    assert_true(fabs(s_sum[0].util_mean - 92) < 1e-9);
    char block[2048];
    mon_diag_block(s_sum, 1, &s_th, s_f, 0, block, sizeof block);
    assert_string_equal(block, "plaunch: health: 1 rank on 1 node healthy over 14.0 min of steady state (no finding)\n");
}

static void s_noisy(struct mon_sample *s, int sec, int r)
{
    static unsigned x = 7;
    s->gpu_util = 85 + 10 * s_noise(&x);
    s->gpu_idle_frac = 0.03 + 0.03 * s_noise(&x);
    s->gpu_idle_ms = 20 + 20 * s_noise(&x);
    s->gpu_mem_proc_mib = 20000 + 300 * s_noise(&x);
    s->gpu_mem_used_mib = s->gpu_mem_proc_mib + 500;
    s->rss_mib = 8000 + 200 * s_noise(&x);
    s->cpu_pct = 120 + 40 * s_noise(&x);
    s->throttle = sec % 20 == 0 ? (int64_t)MON_THR_SW_POWER : 0;  /* 5 %: below throttle_frac */
    s->temp_c = 70 + 5 * s_noise(&x);
}

static void test_noisy_but_flat_is_silent(void **state)
{
    for (int r = 0; r < 4; r++)
        s_fill(r, "node-a", 1800, s_noisy);
    s_expect_healthy(s_judge(4));
    assert_true(fabs(s_sum[0].gmem_slope_mib_min) < 5);
    assert_true(s_sum[0].gmem_r2 < 0.1);
}

static void s_input_fine(struct mon_sample *s, int sec, int r)
{
    s->gpu_util = 41, s->gpu_idle_frac = 0.4, s->gpu_idle_ms = 200;
}

static void test_input_bound_from_fine_samples(void **state)
{
    s_fill(3, "node-b", 600, s_input_fine);
    mon_diag_rank(&s_ser[3], &s_th, &s_sum[0]);
    S_ONE(mon_diag_job(s_sum, 1, &s_th, s_f, 32), MON_INPUT_BOUND, "rank 3 (GPU 3 on node-b): GPU busy 41 % of the time",
          "idle 40 %", "gaps of ~200 ms", "waits for input", "DataLoader workers");
}

/* Without NVML's fine samples: busy 0 % and 82 % in turn, a mean of 41 % and half of the samples idle. */
static void s_input_coarse(struct mon_sample *s, int sec, int r)
{
    s->gpu_util = sec % 2 ? 82 : 0;
    s->gpu_idle_frac = s->gpu_idle_ms = NAN;
}

static void test_input_bound_from_interval_samples(void **state)
{
    s_fill(1, "node-a", 600, s_input_coarse);
    mon_diag_rank(&s_ser[1], &s_th, &s_sum[0]);
    S_ONE(mon_diag_job(s_sum, 1, &s_th, s_f, 32), MON_INPUT_BOUND, "GPU busy 41 %", "idle 50 %");
    assert_null(strstr(s_f[0].text, "gaps"));
}

/* From second 60 the rank's GPU memory grows 310 MiB/min on a 32 GiB GPU; 12 min of steady state. */
static void s_gmem_leak(struct mon_sample *s, int sec, int r)
{
    if (sec >= 60)
        s->gpu_mem_proc_mib = 20000 + 310.0 * (sec - 60) / 60;
    s->gpu_mem_used_mib = s->gpu_mem_proc_mib + 500;
}

static void test_gpu_memory_growth(void **state)
{
    s_fill(2, "node-a", 780, s_gmem_leak);
    mon_diag_rank(&s_ser[2], &s_th, &s_sum[0]);
    /* 12 min of steady state (t = 60..779 s, the last sample's second included): +310 * 12 = 3720 MiB (3.6 GiB),
     * 20000 (19.5 GiB) -> 23720 (23.2 GiB); the last sample's device memory is 20000 + 310 * 719/60 + 500 =
     * 24214.8 of 32768 MiB: 8553.2 MiB left at 310 MiB/min = 27.6 min */
    assert_true(fabs(s_sum[0].gmem_slope_mib_min - 310) < 1e-6);
    assert_true(fabs(s_sum[0].steady_s - 720) < 1e-6);
    S_ONE(mon_diag_job(s_sum, 1, &s_th, s_f, 32), MON_GPU_MEM_GROWTH, "GPU memory +310 MiB/min over 12.0 min",
          "(+3.6 GiB, 19.5 GiB -> 23.2 GiB of 32.0 GiB)", "out of memory in ~27.6 min", "possible leak");
}

static void s_rss_leak(struct mon_sample *s, int sec, int r)
{
    s->rss_mib = 8000 + 50.0 * sec / 60;
}

static void test_host_memory_growth(void **state)
{
    s_fill(0, "node-a", 1260, s_rss_leak);
    mon_diag_rank(&s_ser[0], &s_th, &s_sum[0]);
    /* 20 min of steady state: +50 * 20 = 1000 MiB, 8050 (7.9 GiB) -> 9050 (8.8 GiB); the series merged pairs
     * past 1024 samples, which changes neither */
    S_ONE(mon_diag_job(s_sum, 1, &s_th, s_f, 32), MON_HOST_MEM_GROWTH, "host memory", "+50 MiB/min over 20.0 min",
          "(+1000 MiB, 7.9 GiB -> 8.8 GiB)");
}

/* The power cap in 34 % of the samples, temperature in 12 % (with HW slowdown, which then is not a class of its
 * own), GPU idle always (ignored). */
static void s_throttled(struct mon_sample *s, int sec, int r)
{
    s->throttle = (int64_t)MON_THR_GPU_IDLE;
    if (sec % 100 < 34)
        s->throttle |= (int64_t)MON_THR_SW_POWER;
    else if (sec % 100 < 46)
        s->throttle |= (int64_t)(MON_THR_HW_THERMAL | MON_THR_HW_SLOWDOWN);
    s->sm_clock_mhz = 1410, s->power_w = 698, s->temp_c = sec % 100 == 40 ? 87 : 80;
}

static void test_throttling_shares(void **state)
{
    s_fill(0, "node-a", 1060, s_throttled);
    mon_diag_rank(&s_ser[0], &s_th, &s_sum[0]);
    S_ONE(mon_diag_job(s_sum, 1, &s_th, s_f, 32), MON_THROTTLE,
          "clocks held down by the power cap 34 % of the time, by temperature 12 %",
          "SM clock 1410 of 1980 MHz on average, up to 87 C, 698 of 700 W", "power limit");
    assert_true(s_sum[0].thr_hw_frac == 0);
}

/* An H200 under a long matmul (2026-12-03): the power cap reason in 58 % of the samples, the clock 1971 of 1980. */
static void s_power_capped_at_work(struct mon_sample *s, int sec, int r)
{
    s->throttle = sec % 100 < 58 ? (int64_t)MON_THR_SW_POWER : 0;
    s->sm_clock_mhz = sec % 100 < 58 ? 1964.5 : 1980, s->power_w = 697;
}

static void test_power_cap_at_full_clock_is_healthy(void **state)
{
    s_fill(0, "node-a", 600, s_power_capped_at_work);
    mon_diag_rank(&s_ser[0], &s_th, &s_sum[0]);
    assert_true(s_sum[0].thr_power_frac > 0.5); /* 290 of the 540 steady seconds */
    s_expect_healthy(s_judge(1));
}

static void s_idle_reason_only(struct mon_sample *s, int sec, int r)
{
    s->throttle = (int64_t)MON_THR_GPU_IDLE;
}

static void test_gpu_idle_reason_is_not_throttling(void **state)
{
    s_fill(0, "node-a", 600, s_idle_reason_only);
    s_expect_healthy(s_judge(1));
}

static void s_ecc(struct mon_sample *s, int sec, int r)
{
    s->ecc_uncorrected = sec < 300 ? 1 : 3;
    s->ecc_corrected = 10 + sec;
}

static void test_ecc_named_with_pci(void **state)
{
    s_fill(2, "node-a", 600, s_ecc);
    mon_diag_rank(&s_ser[2], &s_th, &s_sum[0]);
    S_ONE(mon_diag_job(s_sum, 1, &s_th, s_f, 32), MON_ECC, "rank 2 (GPU 2, PCI 00000000:3D:00.0, on node-a)",
          "3 uncorrectable ECC errors", "2 of them during this job", "drain the node");
    assert_int_equal(s_sum[0].ecc_corrected_delta, 599);
}

/* Xid 13 in the warm-up, Xid 79 later; the job is too short to judge anything else. */
static void s_xid(struct mon_sample *s, int sec, int r)
{
    s->xid = sec == 10 ? 13 : sec == 70 ? 79 : 0;
    s->gpu_util = 0; /* would be input-bound, were there enough steady state */
}

static void test_xid_counted_even_without_steady_state(void **state)
{
    s_fill(1, "node-c", 80, s_xid);
    mon_diag_rank(&s_ser[1], &s_th, &s_sum[0]);
    S_ONE(mon_diag_job(s_sum, 1, &s_th, s_f, 32), MON_XID, "rank 1 (GPU 1, PCI 00000000:3C:00.0, on node-c)",
          "2 Xid events, the last Xid 79 (GPU has fallen off the bus)", "drain the node");
    char block[2048];
    mon_diag_block(s_sum, 1, &s_th, s_f, 1, block, sizeof block);
    s_expect_text(block, "plaunch: ===== health: 1 finding over 1 rank on 1 node", "  xid ",
                  "not judged: rank 1 (less than 30 s of steady state after the 60 s warm-up)", NULL);
}

static void s_gpu_full(struct mon_sample *s, int sec, int r)
{
    s->gpu_mem_total_mib = 81559;
    s->gpu_mem_used_mib = sec == 400 ? 78000 : 70000;
}

static void s_host_full(struct mon_sample *s, int sec, int r)
{
    s->host_avail_frac = sec > 300 ? 0.03 : 0.5;
}

static void test_memory_near_full(void **state)
{
    s_fill(0, "node-a", 600, s_gpu_full);
    mon_diag_rank(&s_ser[0], &s_th, &s_sum[0]);
    /* 78000 / 81559 = 95.6 % */
    S_ONE(mon_diag_job(s_sum, 1, &s_th, s_f, 32), MON_MEM_NEAR_FULL, "GPU memory peaked at 76.2 GiB of 79.6 GiB (95.6 %)",
          "out of memory");
    /* the node's RAM: one finding for the node, on its first rank, not one per rank */
    s_fill(0, "node-a", 600, NULL);
    s_fill(1, "node-b", 600, s_host_full);
    s_fill(2, "node-b", 600, s_host_full);
    int nf = s_judge(3);
    S_ONE(nf, MON_MEM_NEAR_FULL, "rank 1 (GPU 1 on node-b): the node's available memory fell to 3.0 % of its RAM");
}

static void s_slow_rank(struct mon_sample *s, int sec, int r)
{
    s->gpu_util = r == 2 ? 50 : 91 + r % 3; /* 91, 92, 50, 93: no idle, so not input-bound */
    if (r == 3)
        s->gpu_util = 93;
}

static void test_straggler_one_of_four(void **state)
{
    for (int r = 0; r < 4; r++)
        s_fill(r, r < 2 ? "node-a" : "node-b", 600, s_slow_rank);
    /* rank 2's peers: 91, 92, 93, median 92; (50 - 92) / 92 = -46 % */
    S_ONE(s_judge(4), MON_STRAGGLER, "rank 2 (GPU 2 on node-b): GPU busy 50 % against a median of 92 % on its 3 peers "
          "(-46 %)");
    for (int r = 0; r < 4; r++)
        s_fill(r, "node-a", 600, NULL);
    s_expect_healthy(s_judge(4));
    /* below straggler_min_ranks: two ranks cannot say which one is off */
    s_fill(0, "node-a", 600, NULL);
    s_fill(2, "node-a", 600, s_slow_rank);
    assert_int_equal(mon_diag_rank(&s_ser[0], &s_th, &s_sum[0]), 0);
    assert_int_equal(mon_diag_rank(&s_ser[2], &s_th, &s_sum[1]), 0);
    s_expect_healthy(mon_diag_job(s_sum, 2, &s_th, s_f, 32));
}

static void s_cpu_worker(struct mon_sample *s, int sec, int r)
{
    struct mon_sample c;
    mon_sample_clear(&c);
    c.t_ms = s->t_ms, c.rank = s->rank, c.local_rank = s->local_rank;
    c.rss_mib = 500, c.cpu_pct = r == 1 ? 30 : 100, c.host_avail_frac = 0.7;
    *s = c;
}

static void test_straggler_cpu_workers(void **state)
{
    for (int r = 0; r < 4; r++)
        s_fill(r, "node-a", 600, s_cpu_worker);
    S_ONE(s_judge(4), MON_STRAGGLER, "rank 1 (CPU worker on node-a): host CPU 30 % of a core against a median of 100 %");
}

/* The first 60 s: GPU idle and memory climbing from 0 to 20000 MiB; flat after. */
static void s_warmup_only(struct mon_sample *s, int sec, int r)
{
    if (sec < 60) {
        s->gpu_util = 0, s->gpu_idle_frac = 1, s->gpu_idle_ms = 1000;
        s->gpu_mem_proc_mib = 20000.0 * sec / 60, s->gpu_mem_used_mib = s->gpu_mem_proc_mib + 500;
        s->rss_mib = 100 * sec;
    }
}

static void test_warmup_excluded(void **state)
{
    s_fill(0, "node-a", 660, s_warmup_only);
    s_expect_healthy(s_judge(1));
    assert_int_equal(s_sum[0].samples, 600);
}

/* Generation 0 was input-bound and ended at 600 s; generation 1 is healthy. */
static void test_only_latest_generation_judged(void **state)
{
    mon_series_init(&s_ser[0], 0, "node-a");
    for (int i = 0; i < 1300; i++) {
        struct mon_sample s;
        s_healthy(&s, 0, i);
        s.generation = i < 600 ? 0 : 1;
        if (i < 600)
            s_input_fine(&s, i, 0);
        mon_series_add(&s_ser[0], &s);
    }
    s_expect_healthy(s_judge(1));
    assert_int_equal(s_sum[0].samples, 640); /* 700 of generation 1, less its 60 s warm-up */
}

static void test_not_enough_steady_state(void **state)
{
    s_fill(0, "node-a", 80, s_input_fine);
    s_fill(1, "node-a", 80, NULL);
    assert_int_equal(s_judge(2), 0);
    assert_true(fabs(s_sum[0].steady_s - 20) < 1e-9);
    char block[1024];
    mon_diag_block(s_sum, 2, &s_th, s_f, 0, block, sizeof block);
    assert_string_equal(block, "plaunch: health: not enough steady state to judge (20 s after the 60 s warm-up, 30 s "
                               "needed)\n");
}

static void test_block_lists_findings_and_fits(void **state)
{
    s_fill(0, "node-a", 900, NULL);
    s_fill(1, "node-a", 900, s_input_fine);
    s_fill(2, "node-b", 900, s_gpu_full);
    s_fill(3, "node-b", 70, NULL);
    int nf = s_judge(4);
    assert_int_equal(nf, 2);
    assert_int_equal(s_f[0].rank, 1);
    assert_int_equal(s_f[1].rank, 2);
    char block[4096];
    mon_diag_block(s_sum, 4, &s_th, s_f, nf, block, sizeof block);
    s_expect_text(block, "plaunch: ===== health: 2 findings over 4 ranks on 2 nodes (steady state 14.0 min) =====\n",
                  "\n  input-bound      rank 1 (GPU 1 on node-a): GPU busy 41 %",
                  "\n  mem-near-full    rank 2 (GPU 2 on node-b)",
                  "\n  not judged: rank 3 (less than 30 s of steady state after the 60 s warm-up)\n", NULL);
    /* too small for both: one is left out, and said so */
    char small[520];
    mon_diag_block(s_sum, 4, &s_th, s_f, nf, small, sizeof small);
    s_expect_text(small, "plaunch: ===== health", "input-bound", "... 1 more finding left out here\n", NULL);
    assert_true(strlen(small) < sizeof small);
    /* healthy but partly judged */
    s_fill(1, "node-a", 900, NULL);
    s_fill(2, "node-b", 900, NULL);
    assert_int_equal(s_judge(4), 0);
    mon_diag_block(s_sum, 4, &s_th, s_f, 0, block, sizeof block);
    assert_string_equal(block, "plaunch: health: 3 of 4 ranks on 2 nodes healthy over 14.0 min of steady state (no "
                               "finding); not judged: rank 3 (less than 30 s of steady state after the 60 s "
                               "warm-up)\n");
    mon_diag_block(s_sum, 0, &s_th, s_f, 0, block, sizeof block);
    s_expect_text(block, "no samples", NULL);
}

/* A 10-hour job at 1 s: the series merged 64 samples a point; shares and slopes are still right. */
static void s_long(struct mon_sample *s, int sec, int r)
{
    s->throttle = sec % 100 < 34 ? (int64_t)MON_THR_SW_POWER : 0;
    s->sm_clock_mhz = sec % 100 < 34 ? 1410 : 1980;
    s->rss_mib = 8000 + 20.0 * sec / 60;
}

static void test_long_merged_series(void **state)
{
    s_fill(0, "node-a", 36000, s_long);
    assert_true(s_ser[0].merged >= 32);
    mon_diag_rank(&s_ser[0], &s_th, &s_sum[0]);
    assert_true(fabs(s_sum[0].thr_power_frac - 0.34) < 0.005);
    assert_true(fabs(s_sum[0].rss_slope_mib_min - 20) < 0.01);
    assert_true(fabs(s_sum[0].steady_s - 35940) < 70);
    int nf = mon_diag_job(s_sum, 1, &s_th, s_f, 32);
    assert_int_equal(nf, 2);
    assert_int_equal(s_f[0].kind, MON_HOST_MEM_GROWTH);
    s_expect_text(s_f[0].text, "+20 MiB/min over 10.0 h", NULL);
    s_expect_text(s_f[1].text, "by the power cap 34 % of the time", NULL);
}

static void test_kind_names(void **state)
{
    assert_string_equal(mon_diag_kind_name(MON_INPUT_BOUND), "input-bound");
    assert_string_equal(mon_diag_kind_name(MON_STRAGGLER), "straggler");
    for (int k = 0; k < MON_NKINDS; k++)
        assert_string_not_equal(mon_diag_kind_name((enum mon_kind)k), "unknown");
    assert_string_equal(mon_diag_kind_name(MON_NKINDS), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_healthy_is_silent, s_setup),
        cmocka_unit_test_setup(test_noisy_but_flat_is_silent, s_setup),
        cmocka_unit_test_setup(test_input_bound_from_fine_samples, s_setup),
        cmocka_unit_test_setup(test_input_bound_from_interval_samples, s_setup),
        cmocka_unit_test_setup(test_gpu_memory_growth, s_setup),
        cmocka_unit_test_setup(test_host_memory_growth, s_setup),
        cmocka_unit_test_setup(test_throttling_shares, s_setup),
        cmocka_unit_test_setup(test_power_cap_at_full_clock_is_healthy, s_setup),
        cmocka_unit_test_setup(test_gpu_idle_reason_is_not_throttling, s_setup),
        cmocka_unit_test_setup(test_ecc_named_with_pci, s_setup),
        cmocka_unit_test_setup(test_xid_counted_even_without_steady_state, s_setup),
        cmocka_unit_test_setup(test_memory_near_full, s_setup),
        cmocka_unit_test_setup(test_straggler_one_of_four, s_setup),
        cmocka_unit_test_setup(test_straggler_cpu_workers, s_setup),
        cmocka_unit_test_setup(test_warmup_excluded, s_setup),
        cmocka_unit_test_setup(test_only_latest_generation_judged, s_setup),
        cmocka_unit_test_setup(test_not_enough_steady_state, s_setup),
        cmocka_unit_test_setup(test_block_lists_findings_and_fits, s_setup),
        cmocka_unit_test_setup(test_long_merged_series, s_setup),
        cmocka_unit_test_setup(test_kind_names, s_setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
