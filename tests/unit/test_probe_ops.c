/* test_probe_ops: the probe's collectives: nccl-tests' busbw factors and byte counts checked by hand, option
 * lists, the multi-op fixtures through analysis, tables, JSON and HTML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "launcher/probe/analysis/probe_analysis.h"
#include "launcher/probe/measure/probe_fmt.h"
#include "launcher/probe/report/probe_html.h"
#include "launcher/probe/report/probe_report.h"
#include "launcher/probe/report/probe_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct probe_meas *s_fixture(const char *name)
{
    char path[4096];
    struct probe_err err = { "" };
    const char *src = getenv("PLAUNCH_SRC");
    snprintf(path, sizeof path, "%s/tests/fixtures/probe/%s", src && src[0] ? src : ".", name);
    struct probe_meas *m = probe_meas_load(path, &err);
    if (m == NULL)
        fail_msg("%s", err.msg);
    return m;
}

static struct probe_analysis *s_analyse(const struct probe_meas *m)
{
    struct probe_thresholds t;
    struct probe_err err;
    probe_thresholds_default(&t);
    struct probe_analysis *a = probe_analyse(m, &t, &err);
    assert_non_null(a);
    return a;
}

static const struct probe_verdict *s_find(const struct probe_analysis *a, enum probe_sev sev, const char *kind,
                                          const char *needle)
{
    for (size_t i = 0; i < a->nverdicts; i++)
        if (a->verdicts[i].sev == sev && strcmp(a->verdicts[i].kind, kind) == 0 &&
            (needle == NULL || strstr(a->verdicts[i].text, needle)))
            return &a->verdicts[i];
    return NULL;
}

/* Everything f printed, as one string the caller frees. */
static char *s_capture_table(const struct probe_meas *m, const struct probe_analysis *a, int html)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    if (html)
        probe_html_page(f, m, a);
    else
        probe_report_table(f, m, a);
    fclose(f);
    return buf;
}

/* ---- nccl-tests' definitions, by hand ------------------------------------------------------------------------ */

static void test_bus_factors_by_hand(void **state)
{
    static const struct { enum probe_op op; int n; double factor; } cases[] = {
        { PROBE_OP_ALLREDUCE, 1, 0.0 },      { PROBE_OP_ALLREDUCE, 2, 1.0 },      { PROBE_OP_ALLREDUCE, 8, 1.75 },
        { PROBE_OP_ALLREDUCE, 3, 4.0 / 3 },  { PROBE_OP_ALLGATHER, 1, 0.0 },      { PROBE_OP_ALLGATHER, 2, 0.5 },
        { PROBE_OP_ALLGATHER, 8, 0.875 },    { PROBE_OP_REDUCESCATTER, 4, 0.75 }, { PROBE_OP_REDUCESCATTER, 8, 0.875 },
        { PROBE_OP_BROADCAST, 1, 1.0 },      { PROBE_OP_BROADCAST, 8, 1.0 },      { PROBE_OP_ALLTOALL, 8, 0.875 },
        { PROBE_OP_ALLTOALL, 16, 0.9375 },   { PROBE_OP_ALLTOALL, 1, 0.0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_true(fabs(probe_op_bus_factor(cases[i].op, cases[i].n) - cases[i].factor) < 1e-12);
    /* 1 GiB in 1000 us is 1073.741824 GB/s algbw; AllReduce on 8 ranks: times 1.75 */
    assert_true(fabs(probe_algbw(1u << 30, 1000) - 1073.741824) < 1e-9);
    assert_true(fabs(probe_busbw(PROBE_OP_ALLREDUCE, 1073.741824, 8) - 1879.048192) < 1e-9);
    assert_true(fabs(probe_busbw(PROBE_OP_ALLGATHER, 1073.741824, 8) - 939.524096) < 1e-9);
}

static void test_layout_by_hand(void **state)
{
    /* 1 MiB of float over 3 ranks: 262144 elements, 87381 per rank rounded down to 16 bytes (4 floats) = 87380,
     * so nccl-tests' size column reads 87380 * 3 * 4 = 1048560 */
    struct probe_layout l = probe_op_layout(PROBE_OP_ALLGATHER, 1 << 20, 3, PROBE_DT_FLOAT);
    assert_int_equal(l.count, 87380);
    assert_int_equal(l.send, 87380);
    assert_int_equal(l.recv, 262140);
    assert_int_equal(l.send_ip, 87380);
    assert_int_equal(l.recv_ip, 0);
    assert_int_equal(l.size, 1048560);
    l = probe_op_layout(PROBE_OP_REDUCESCATTER, 1 << 20, 3, PROBE_DT_FLOAT);
    assert_int_equal(l.count, 87380);
    assert_int_equal(l.send, 262140);
    assert_int_equal(l.recv_ip, 87380);
    assert_int_equal(l.size, 1048560);
    /* half: 524288 elements, 174762 per rank rounded down to 8 halves = 174760 */
    l = probe_op_layout(PROBE_OP_ALLTOALL, 1 << 20, 3, PROBE_DT_HALF);
    assert_int_equal(l.count, 174760);
    assert_int_equal(l.send, 524280);
    assert_int_equal(l.size, 1048560);
    l = probe_op_layout(PROBE_OP_ALLREDUCE, 1 << 20, 3, PROBE_DT_BFLOAT16);
    assert_int_equal(l.count, 524288);
    assert_int_equal(l.size, 1 << 20);
    l = probe_op_layout(PROBE_OP_BROADCAST, 1 << 20, 8, PROBE_DT_FLOAT);
    assert_int_equal(l.count, 262144);
    assert_int_equal(l.size, 1 << 20);
    l = probe_op_layout(PROBE_OP_ALLGATHER, 1 << 20, 8, PROBE_DT_FLOAT);
    assert_int_equal(l.count, 32768);
    assert_int_equal(l.size, 1 << 20);
    l = probe_op_layout(PROBE_OP_ALLGATHER, 8, 1, PROBE_DT_FLOAT); /* under 16 bytes a rank: nothing to move */
    assert_int_equal(l.count, 0);
}

static void test_option_lists(void **state)
{
    enum probe_op ops[PROBE_NOPS];
    enum probe_dtype t;
    enum probe_timing tm;
    char bad[64];
    assert_int_equal(probe_ops_parse_list("reducescatter,allgather", ops, bad, sizeof bad), 2);
    assert_int_equal(ops[0], PROBE_OP_REDUCESCATTER);
    assert_int_equal(ops[1], PROBE_OP_ALLGATHER);
    assert_int_equal(probe_ops_parse_list("all", ops, bad, sizeof bad), PROBE_NOPS);
    assert_int_equal(ops[4], PROBE_OP_ALLTOALL);
    assert_int_equal(probe_ops_parse_list("allreduce,allreduce", ops, bad, sizeof bad), 1);
    assert_int_equal(probe_ops_parse_list("allreduce,all_gather", ops, bad, sizeof bad), -1);
    assert_string_equal(bad, "all_gather");
    assert_int_equal(probe_ops_parse_list("allreduce,", ops, bad, sizeof bad), -1);
    assert_string_equal(bad, "");
    assert_int_equal(probe_ops_parse_list("", ops, bad, sizeof bad), -1);
    assert_int_equal(probe_dtype_parse("bfloat16", &t), 0);
    assert_int_equal(t, PROBE_DT_BFLOAT16);
    assert_int_equal(probe_dtype_size(t), 2);
    assert_int_equal(probe_dtype_parse("fp16", &t), -1);
    assert_int_equal(probe_timing_parse("events", &tm), 0);
    assert_int_equal(tm, PROBE_TIMING_EVENTS);
    assert_int_equal(probe_timing_parse("cpu", &tm), -1);
    assert_non_null(strstr(PROBE_OPS_VALID, "reducescatter"));
}

static void test_number_format_as_nccl_tests(void **state)
{
    char b[32];
    probe_fmt_float(0.5, 6, b, sizeof b);
    assert_string_equal(b, "  0.50");
    probe_fmt_float(1234.5678, 6, b, sizeof b);
    assert_string_equal(b, "1234.6");
    probe_fmt_float(123456.7, 6, b, sizeof b);
    assert_string_equal(b, "123457");
    probe_fmt_float(1234567, 6, b, sizeof b);
    assert_string_equal(b, " 1e+06");
    probe_fmt_float(12345678, 7, b, sizeof b);
    assert_string_equal(b, "1.2e+07");
}

/* ---- the every-op fixture --------------------------------------------------------------------------------------- */

/* busbw/algbw per collective and N, written out by hand (not through probe_op.h) */
static double s_hand_factor(enum probe_op op, int n)
{
    switch (n) {
    case 1: return op == PROBE_OP_BROADCAST ? 1.0 : 0.0;
    case 2: return op == PROBE_OP_ALLREDUCE ? 1.0 : op == PROBE_OP_BROADCAST ? 1.0 : 0.5;
    case 4: return op == PROBE_OP_ALLREDUCE ? 1.5 : op == PROBE_OP_BROADCAST ? 1.0 : 0.75;
    case 8: return op == PROBE_OP_ALLREDUCE ? 1.75 : op == PROBE_OP_BROADCAST ? 1.0 : 0.875;
    }
    fail_msg("no hand factor for n=%d", n);
    return NAN;
}

static void test_every_op_busbw_by_hand(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-h200x8-ops.json");
    int seen[PROBE_NOPS] = { 0 };
    assert_int_equal(m->config.schema, 2);
    assert_int_equal(m->config.nops, PROBE_NOPS);
    assert_int_equal(m->config.timing, PROBE_TIMING_HOST);
    assert_int_equal(m->nsweeps, 20);
    for (size_t i = 0; i < m->nsweeps; i++) {
        const struct probe_sweep *s = &m->sweeps[i];
        double sum = 0;
        seen[s->op]++;
        for (size_t k = 0; k < s->nresults; k++) {
            const struct probe_result *r = &s->results[k];
            double algbw = (double)r->bytes / r->time_us / 1e3, ip = (double)r->bytes / r->ip.time_us / 1e3;
            assert_true(r->has_ip);
            assert_true(fabs(r->algbw - algbw) < 1e-9 * algbw);
            assert_true(fabs(r->busbw - algbw * s_hand_factor(s->op, s->n)) < 1e-9 * algbw);
            assert_true(fabs(r->ip.busbw - ip * s_hand_factor(s->op, s->n)) < 1e-9 * ip);
            sum += r->busbw + r->ip.busbw;
        }
        /* nccl-tests' "Avg bus bandwidth": over both placements of every size */
        assert_true(fabs(probe_sweep_avg_busbw(s) - sum / (2.0 * s->nresults)) < 1e-9 * (1 + sum));
    }
    for (int op = 0; op < PROBE_NOPS; op++)
        assert_int_equal(seen[op], 4);
    /* one figure by hand: AllGather on 8 GPUs at 1 GiB: 1 GiB / t, times 7/8 */
    const struct probe_result *r =
        probe_sweep_result(probe_meas_sweep(m, PROBE_OP_ALLGATHER, PROBE_GROUP_FIRST_N, 8), 1u << 30);
    assert_non_null(r);
    assert_int_equal(r->bytes, 1u << 30);
    assert_int_equal(r->count, 1u << 25); /* 2^28 floats over 8 ranks */
    assert_true(fabs(r->busbw - 1073741824.0 / r->time_us / 1e3 * 7 / 8) < 1e-6);
    struct probe_analysis *a = s_analyse(m);
    assert_int_equal(a->nflags, 0);
    for (int op = 0; op < PROBE_NOPS; op++)
        assert_non_null(s_find(a, PROBE_SEV_OK, "busbw-drop", probe_op_title((enum probe_op)op)));
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

static void test_fsdp_flags_name_the_op(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-fsdp8-flags.json");
    struct probe_analysis *a = s_analyse(m);
    assert_int_equal(m->config.nops, 2);
    assert_int_equal(m->config.ops[0], PROBE_OP_REDUCESCATTER);
    assert_int_equal(a->nflags, 3);
    const struct probe_group_stat *g = probe_analysis_group(a, 8);
    assert_true(g->busbw_flag[PROBE_OP_ALLGATHER]);
    assert_false(g->busbw_flag[PROBE_OP_REDUCESCATTER]);
    assert_true(isnan(g->busbw[PROBE_OP_ALLREDUCE])); /* not measured */
    assert_non_null(s_find(a, PROBE_SEV_FLAG, "busbw-drop", "AllGather busbw drop at N=8"));
    assert_non_null(s_find(a, PROBE_SEV_OK, "busbw-drop", "ReduceScatter busbw holds"));
    assert_non_null(s_find(a, PROBE_SEV_FLAG, "verification", "wrong AllGather result at N=4 (first-n): 1 of 11 "
                                                              "sizes failed the check (in place), the first at 64 MiB"));
    const struct probe_verdict *v = s_find(a, PROBE_SEV_FLAG, "efficiency", "N=8");
    assert_non_null(v);
    assert_non_null(strstr(v->reason, "AllGather busbw at N=8 is 28% below N=2"));
    assert_non_null(strstr(v->reason, "the reduce-scatter + all-gather of 87.0 MB takes"));
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

static void test_reports_for_every_op(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-h200x8-ops.json");
    struct probe_analysis *a = s_analyse(m);
    struct probe_thresholds t;
    char *text = s_capture_table(m, a, 0), *html = s_capture_table(m, a, 1), want[128];
    for (int op = 0; op < PROBE_NOPS; op++) {
        snprintf(want, sizeof want, "# %s (%s), N=8, first-n, ranks 0-7, 1 node", probe_op_title((enum probe_op)op),
                 probe_op_perf((enum probe_op)op));
        assert_non_null(strstr(text, want));
        snprintf(want, sizeof want, "<svg id=\"chart-busbw-%s\"", probe_op_name((enum probe_op)op));
        assert_non_null(strstr(html, want));
        snprintf(want, sizeof want, "<table class=\"sweep\" data-op=\"%s\" data-n=\"8\">",
                 probe_op_name((enum probe_op)op));
        assert_non_null(strstr(html, want));
    }
    assert_non_null(strstr(text, "timing: host wall clock around the timed loop, nccl-tests' method"));
    assert_non_null(strstr(text, "#       size         count      type   redop    root     time   algbw   busbw  #wrong"));
    assert_non_null(strstr(text, "  1073741824     268435456     float     sum      -1"));
    assert_non_null(strstr(text, "     float    none       0")); /* broadcast: no reduction, root 0 */
    assert_non_null(strstr(text, "# Avg bus bandwidth    : "));
    assert_non_null(strstr(html, "id=\"timing\">timing: host wall clock"));
    free(text);
    free(html);
    probe_thresholds_default(&t);
    json_t *doc = probe_report_json(m, a, &t);
    assert_non_null(doc);
    json_t *sw = json_array_get(json_object_get(doc, "sweeps"), 0);
    assert_string_equal(json_string_value(json_object_get(sw, "op")), "allreduce");
    assert_true(json_is_real(json_object_get(sw, "avg_busbw_gbps")));
    json_t *an = json_object_get(doc, "analysis");
    assert_string_equal(json_string_value(json_object_get(an, "timing")), "host");
    json_t *g8 = json_array_get(json_object_get(an, "groups"), 3);
    assert_int_equal(json_integer_value(json_object_get(g8, "n")), 8);
    assert_int_equal(json_object_size(json_object_get(g8, "by_op")), PROBE_NOPS);
    json_decref(doc);
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

static void test_events_timing_is_labelled(void **state)
{
    struct probe_meas *m = s_fixture("measured-h200x1-2026-12-02.json"); /* schema 1: CUDA events */
    struct probe_analysis *a = s_analyse(m);
    char *text = s_capture_table(m, a, 0), *html = s_capture_table(m, a, 1);
    assert_int_equal(m->config.timing, PROBE_TIMING_EVENTS);
    assert_non_null(strstr(text, "timing: CUDA events around the timed loop (--timing events; not nccl-tests' method)"));
    assert_non_null(strstr(html, "timing: CUDA events around the timed loop"));
    /* no in-place figures in schema 1: dashes, and the count derived from the size */
    assert_non_null(strstr(text, "     1048576        262144     float     sum      -1"));
    assert_non_null(strstr(text, "        -       -       -       -"));
    free(text);
    free(html);
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bus_factors_by_hand),
        cmocka_unit_test(test_layout_by_hand),
        cmocka_unit_test(test_option_lists),
        cmocka_unit_test(test_number_format_as_nccl_tests),
        cmocka_unit_test(test_every_op_busbw_by_hand),
        cmocka_unit_test(test_fsdp_flags_name_the_op),
        cmocka_unit_test(test_reports_for_every_op),
        cmocka_unit_test(test_events_timing_is_labelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
