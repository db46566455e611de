/* Unit tests for the monitor's data: CSV rows (round trip, header, bad columns named), the bounded series (merging
 * keeps the memory, the span, the counts and the generations apart) and conf/monitor.ini (file:line errors). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/monitor/sampling/mon_csv.h"
#include "launcher/monitor/diagnosis/mon_series.h"
#include "launcher/monitor/diagnosis/mon_thresh.h"
#include "tests/unit/test_util.h"

static void s_full_sample(struct mon_sample *s)
{
    mon_sample_clear(s);
    s->t_ms = 1700000000123LL;
    s->rank = 13, s->local_rank = 5, s->generation = 2;
    snprintf(s->gpu, sizeof s->gpu, "GPU-7f2c4e1a-0b9d-4c1e-9a11");
    snprintf(s->pci, sizeof s->pci, "00000000:3B:00.0");
    s->gpu_util = 41.5, s->gpu_idle_frac = 0.375, s->gpu_idle_ms = 212.5;
    s->gpu_mem_proc_mib = 20480.25, s->gpu_mem_used_mib = 21000.5, s->gpu_mem_total_mib = 81559;
    s->sm_clock_mhz = 1410, s->sm_clock_max_mhz = 1980, s->power_w = 698.25, s->power_limit_w = 700;
    s->temp_c = 83, s->throttle = 0x24, s->ecc_corrected = 12345678901LL, s->ecc_uncorrected = 2;
    s->pcie_tx_mibs = 1234.5, s->pcie_rx_mibs = 0.125, s->xid = 79;
    s->rss_mib = 7890.125, s->cpu_pct = 412.5, s->threads = 57, s->procs = 9, s->host_avail_frac = 0.03125;
}

static void s_expect_same(const struct mon_sample *a, const struct mon_sample *b)
{
    assert_true(a->t_ms == b->t_ms);
    assert_int_equal(a->rank, b->rank);
    assert_int_equal(a->local_rank, b->local_rank);
    assert_int_equal(a->generation, b->generation);
    assert_string_equal(a->gpu, b->gpu);
    assert_string_equal(a->pci, b->pci);
    const double *da[] = { &a->gpu_util, &a->gpu_idle_frac, &a->gpu_idle_ms, &a->gpu_mem_proc_mib,
                           &a->gpu_mem_used_mib, &a->gpu_mem_total_mib, &a->sm_clock_mhz, &a->sm_clock_max_mhz,
                           &a->power_w, &a->power_limit_w, &a->temp_c, &a->pcie_tx_mibs, &a->pcie_rx_mibs,
                           &a->rss_mib, &a->cpu_pct, &a->host_avail_frac };
    for (size_t i = 0; i < sizeof da / sizeof da[0]; i++) {
        double x = *da[i], y = *(const double *)((const char *)b + ((const char *)da[i] - (const char *)a));
        if (!(isnan(x) && isnan(y)) && x != y)
            fail_msg("double field %zu: %.17g != %.17g", i, x, y);
    }
    assert_true(a->throttle == b->throttle);
    assert_true(a->ecc_corrected == b->ecc_corrected);
    assert_true(a->ecc_uncorrected == b->ecc_uncorrected);
    assert_int_equal(a->xid, b->xid);
    assert_int_equal(a->threads, b->threads);
    assert_int_equal(a->procs, b->procs);
}

static void test_csv_header(void **state)
{
    const char *h = mon_csv_header();
    const char *start = "v1_time_unix_ms,node,rank,local_rank,generation,gpu,pci,gpu_util_pct,";
    assert_true(strncmp(h, start, strlen(start)) == 0);
    assert_true(h[strlen(h) - 1] == '\n');
    assert_true(mon_csv_is_header(h));
    char crlf[MON_CSV_LINE_MAX];
    snprintf(crlf, sizeof crlf, "%.*s\r\n", (int)strlen(h) - 1, h);
    assert_true(mon_csv_is_header(crlf));
    struct mon_sample s;
    char node[MON_NODE_MAX], err[256] = "";
    assert_int_equal(mon_csv_parse(h, &s, node, err, sizeof err), -1);
    assert_non_null(strstr(err, "header"));
    assert_int_equal(mon_csv_parse("v2_time_unix_ms,node,rank\n", &s, node, err, sizeof err), -1);
    assert_non_null(strstr(err, "v2_time_unix_ms"));
    assert_non_null(strstr(err, "v1_time_unix_ms"));
    assert_false(mon_csv_is_header("v2_time_unix_ms,node,rank\n"));
}

static void test_csv_round_trip(void **state)
{
    struct mon_sample a, b;
    char line[MON_CSV_LINE_MAX], node[MON_NODE_MAX], err[256] = "";
    s_full_sample(&a);
    int len = mon_csv_format(&a, "node-b.cluster.example", line, sizeof line);
    assert_true(len > 0 && (size_t)len == strlen(line) && line[len - 1] == '\n');
    assert_false(mon_csv_is_header(line));
    if (mon_csv_parse(line, &b, node, err, sizeof err) < 0)
        fail_msg("%s: %s", line, err);
    assert_string_equal(node, "node-b.cluster.example");
    s_expect_same(&a, &b);
    /* every metric unknown: empty fields, read back as unknown */
    mon_sample_clear(&a);
    a.t_ms = 5, a.rank = 1;
    assert_true(mon_csv_format(&a, "n", line, sizeof line) > 0);
    char want[64] = "5,n,1,0,0";
    for (int i = 0; i < 24; i++)
        strcat(want, ",");
    strcat(want, "\n");
    assert_string_equal(line, want);
    assert_int_equal(mon_csv_parse(line, &b, node, err, sizeof err), 0);
    s_expect_same(&a, &b);
    /* a row without its newline, or with \r\n */
    line[strlen(line) - 1] = '\0';
    assert_int_equal(mon_csv_parse(line, &b, node, err, sizeof err), 0);
    strcat(line, "\r\n");
    assert_int_equal(mon_csv_parse(line, &b, node, err, sizeof err), 0);
    /* a value of full precision keeps 7 significant digits */
    s_full_sample(&a);
    a.rss_mib = 1234567.891;
    assert_true(mon_csv_format(&a, "n", line, sizeof line) > 0);
    assert_int_equal(mon_csv_parse(line, &b, node, err, sizeof err), 0);
    assert_true(fabs(b.rss_mib - 1234567.891) < 1);
}

static void test_csv_format_refuses(void **state)
{
    struct mon_sample s;
    char line[MON_CSV_LINE_MAX];
    s_full_sample(&s);
    assert_int_equal(mon_csv_format(&s, "node,b", line, sizeof line), -1);
    assert_int_equal(mon_csv_format(&s, "node\nb", line, sizeof line), -1);
    assert_int_equal(mon_csv_format(&s, "", line, sizeof line), -1);
    snprintf(s.gpu, sizeof s.gpu, "0,1");
    assert_int_equal(mon_csv_format(&s, "n", line, sizeof line), -1);
    s_full_sample(&s);
    assert_int_equal(mon_csv_format(&s, "n", line, 40), -1);  /* does not fit */
}

/* Parses a row made from a good one with column col (1-based) replaced by value; the message must hold want. */
static void s_expect_bad_column(int col, const char *value, const char *want)
{
    struct mon_sample s;
    char good[MON_CSV_LINE_MAX], row[MON_CSV_LINE_MAX * 2], node[MON_NODE_MAX], err[256] = "";
    s_full_sample(&s);
    assert_true(mon_csv_format(&s, "node-a", good, sizeof good) > 0);
    size_t len = 0;
    char *p = good;
    for (int c = 1; *p; c++) {
        size_t w = strcspn(p, ",\n");
        len += (size_t)snprintf(row + len, sizeof row - len, "%s%.*s", c > 1 ? "," : "", c == col ? (int)strlen(value) : (int)w,
                                c == col ? value : p);
        p += w + (p[w] != '\0');
    }
    if (mon_csv_parse(row, &s, node, err, sizeof err) != -1)
        fail_msg("accepted: %s", row);
    if (!strstr(err, want))
        fail_msg("'%s': message '%s' does not hold '%s'", row, err, want);
}

static void test_csv_bad_columns_named(void **state)
{
    s_expect_bad_column(8, "abc", "column 8 (gpu_util_pct): 'abc' is not a number");
    s_expect_bad_column(8, "150", "column 8 (gpu_util_pct): '150' is not a number from 0 to 100");
    s_expect_bad_column(8, "41x", "column 8 (gpu_util_pct)");
    s_expect_bad_column(8, "nan", "column 8 (gpu_util_pct)");
    s_expect_bad_column(8, "inf", "column 8 (gpu_util_pct)");
    s_expect_bad_column(8, " 41", "column 8 (gpu_util_pct)");
    s_expect_bad_column(1, "", "column 1 (v1_time_unix_ms) is empty");
    s_expect_bad_column(3, "", "column 3 (rank) is empty");
    s_expect_bad_column(3, "-1", "column 3 (rank)");
    s_expect_bad_column(3, "3.5", "column 3 (rank)");
    s_expect_bad_column(3, "99999999999", "column 3 (rank)");
    s_expect_bad_column(2, "", "column 2 (node) is empty");
    s_expect_bad_column(6, "GPU-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "column 6 (gpu)");
    s_expect_bad_column(6, "\033[31m", "column 6 (gpu)");
    s_expect_bad_column(29, "1.5", "column 29 (host_avail_frac)");
    s_expect_bad_column(19, "-5", "column 19 (throttle)");
    struct mon_sample s;
    char node[MON_NODE_MAX], err[256] = "";
    assert_int_equal(mon_csv_parse("1,n,0\n", &s, node, err, sizeof err), -1);
    assert_non_null(strstr(err, "3 columns"));
    char row[MON_CSV_LINE_MAX];
    s_full_sample(&s);
    mon_csv_format(&s, "n", row, sizeof row);
    row[strlen(row) - 1] = '\0';
    strcat(row, ",7\n");
    assert_int_equal(mon_csv_parse(row, &s, node, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than 29 columns"));
    char big[MON_CSV_LINE_MAX + 100];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(mon_csv_parse(big, &s, node, err, sizeof err), -1);
    assert_non_null(strstr(err, "longer than"));
}

static void s_sample_at(struct mon_sample *s, int i, int gen)
{
    mon_sample_clear(s);
    s->t_ms = 1000LL * i;
    s->generation = gen;
    s->gpu_util = i % 2 ? 100 : 0;   /* half idle */
    s->rss_mib = i;                  /* a ramp: a point's mean is its middle */
    s->throttle = i % 4 == 0 ? (int64_t)MON_THR_SW_POWER : 0;
    s->xid = i == 777 ? 79 : 0;
    s->temp_c = i == 12345 ? 99 : 50;
}

static void test_series_merge_bounded(void **state)
{
    static struct mon_series ser;
    mon_series_init(&ser, 3, "node-a");
    const int total = 100000;
    for (int i = 0; i < total; i++) {
        struct mon_sample s;
        s_sample_at(&s, i, 0);
        mon_series_add(&ser, &s);
        assert_true(ser.n <= MON_SERIES_MAX);
    }
    assert_int_equal(ser.merged, 128);  /* 100000 samples / 1024 points, rounded up to a power of two */
    assert_true(ser.n > MON_SERIES_MAX / 2);
    int len = mon_series_len(&ser), samples = 0, idle = 0, thr = 0, xids = 0;
    double hot = 0;
    for (int i = 0; i < len; i++) {
        const struct mon_point *p;
        const struct mon_sample *s = mon_series_get(&ser, i, &p);
        samples += p->samples, idle += p->util_idle, thr += p->thr_power, xids += p->xids;
        hot = fmax(hot, s->temp_c);
        if (i < ser.n)
            assert_int_equal(p->samples, ser.merged);
        /* the mean of a ramp over the point's samples: its first plus half its length */
        assert_true(fabs(s->rss_mib - ((double)s->t_ms / 1000 + (p->samples - 1) / 2.0)) < 1e-6);
    }
    assert_int_equal(samples, total);           /* the span: every sample is in some point */
    assert_int_equal(idle, total / 2);
    assert_int_equal(thr, total / 4);
    assert_int_equal(xids, 1);
    assert_true(hot == 99);                     /* the worst temperature survives the means */
    assert_true(mon_series_get(&ser, 0, NULL)->t_ms == 0);
    const struct mon_point *lp;
    const struct mon_sample *last = mon_series_get(&ser, len - 1, &lp);
    assert_true(last->t_ms + 1000LL * (lp->samples - 1) == 1000LL * (total - 1));
    assert_int_equal(mon_series_get(&ser, 0, NULL)->xid, 0);
    assert_int_equal(ser.rank, 3);
    assert_string_equal(ser.node, "node-a");
}

static void test_series_generations_kept_apart(void **state)
{
    static struct mon_series ser;
    mon_series_init(&ser, 0, "n");
    int per_gen[4] = { 1500, 3, 2500, 1100 };
    for (int g = 0, i = 0; g < 4; g++)
        for (int k = 0; k < per_gen[g]; k++, i++) {
            struct mon_sample s;
            s_sample_at(&s, i, g);
            mon_series_add(&ser, &s);
        }
    int latest = 0, len = mon_series_len(&ser);
    for (int i = 0; i < len; i++) {
        const struct mon_point *p;
        if (mon_series_get(&ser, i, &p)->generation == 3)
            latest += p->samples;
    }
    assert_int_equal(latest, 1100);  /* no sample of generation 2 merged into the latest's points */
    assert_true(ser.n <= MON_SERIES_MAX);
}

static void test_thresholds_defaults_and_example_file(void **state)
{
    struct mon_thresh d, t;
    char err[512] = "", path[4096];
    mon_thresh_default(&d);
    assert_true(d.warmup_s == 60 && d.min_steady_s == 30 && d.util_low == 70 && d.idle_frac == 0.15);
    assert_true(d.idle_util == 5 && d.straggler_frac == 0.25 && d.straggler_min_ranks == 3);
    assert_true(d.growth_mib_min == 10 && d.growth_min_s == 120 && d.growth_min_mib == 256 && d.growth_r2 == 0.8);
    assert_true(d.throttle_frac == 0.1 && d.throttle_clock_frac == 0.95 && d.near_full_frac == 0.95 && d.host_near_full_frac == 0.95);
    const char *src = getenv("PLAUNCH_SRC");
    snprintf(path, sizeof path, "%s/conf/monitor.ini", src && src[0] ? src : ".");
    memset(&t, 0x5a, sizeof t);
    mon_thresh_default(&t);
    if (mon_thresh_read(path, &t, err, sizeof err) < 0)
        fail_msg("%s", err);
    assert_memory_equal(&t, &d, sizeof t);
}

/* Writes text into a fresh file and reads it over the defaults; 0 or -1 (err). */
static int s_read_text(const char *text, struct mon_thresh *t, char *err, size_t errlen, char *path, size_t cap)
{
    char *dir = tu_mkdtemp("monthresh");
    snprintf(path, cap, "%s/monitor.ini", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    mon_thresh_default(t);
    int rc = mon_thresh_read(path, t, err, errlen);
    tu_rmtree(dir);
    return rc;
}

static void s_expect_thresh_error(const char *text, int line, const char *want)
{
    struct mon_thresh t, d;
    char err[512] = "", path[256], where[300];
    if (s_read_text(text, &t, err, sizeof err, path, sizeof path) != -1)
        fail_msg("accepted: %s", text);
    snprintf(where, sizeof where, "%s:%d: ", path, line);
    if (!strstr(err, where) || !strstr(err, want))
        fail_msg("message '%s' lacks '%s' or '%s'", err, where, want);
    mon_thresh_default(&d);
    assert_memory_equal(&t, &d, sizeof t);  /* nothing changed */
}

static void test_thresholds_read(void **state)
{
    struct mon_thresh t;
    char err[512] = "", path[256];
    assert_int_equal(s_read_text("; mine\n[monitor]\nutil_low = 60\nstraggler_min_ranks = 8 ; a comment\n"
                                 "warmup_s=0\n", &t, err, sizeof err, path, sizeof path), 0);
    assert_true(t.util_low == 60 && t.straggler_min_ranks == 8 && t.warmup_s == 0 && t.idle_frac == 0.15);
    s_expect_thresh_error("[monitor]\nutil_low = 60\nutil_lo = 50\n", 3, "unknown key 'util_lo' in [monitor]");
    s_expect_thresh_error("[monitor]\n\n\n\nutil_low = high\n", 5, "util_low = 'high'");
    s_expect_thresh_error("[monitor]\nutil_low = 150\n", 2, "from 0 (excluded) to 100");
    s_expect_thresh_error("[monitor]\nidle_frac = 0\n", 2, "idle_frac");
    s_expect_thresh_error("[monitor]\nstraggler_min_ranks = 2.5\n", 2, "a whole number");
    s_expect_thresh_error("[monitor]\nwarmup_s = nan\n", 2, "warmup_s");
    s_expect_thresh_error("[monitor]\nwarmup_s = 1e999\n", 2, "warmup_s");
    s_expect_thresh_error("util_low = 60\n", 1, "outside a section");
    s_expect_thresh_error("[plaunch]\nutil_low = 60\n", 2, "unknown section [plaunch]");
    s_expect_thresh_error("[monitor]\nthis is not a setting\n", 2, "not 'key = value'");
    char longline[400];
    snprintf(longline, sizeof longline, "[monitor]\nutil_low = %0300d\n", 6);
    s_expect_thresh_error(longline, 2, "longer than");
    /* a long comment is fine */
    snprintf(longline, sizeof longline, "[monitor]\n; %0300d\nutil_low = 50\n", 6);
    assert_int_equal(s_read_text(longline, &t, err, sizeof err, path, sizeof path), 0);
    assert_true(t.util_low == 50);
    /* a missing file, a directory, a device */
    mon_thresh_default(&t);
    assert_int_equal(mon_thresh_read("/nonexistent/monitor.ini", &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/monitor.ini"));
    assert_int_equal(mon_thresh_read("/dev/zero", &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "/dev/zero"));
    assert_int_equal(mon_thresh_read("/tmp", &t, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_header),
        cmocka_unit_test(test_csv_round_trip),
        cmocka_unit_test(test_csv_format_refuses),
        cmocka_unit_test(test_csv_bad_columns_named),
        cmocka_unit_test(test_series_merge_bounded),
        cmocka_unit_test(test_series_generations_kept_apart),
        cmocka_unit_test(test_thresholds_defaults_and_example_file),
        cmocka_unit_test(test_thresholds_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
