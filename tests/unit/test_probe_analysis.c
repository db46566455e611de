/* test_probe_analysis: thresholds, flags and verdicts of `plaunch probe` on the fixtures in tests/fixtures/probe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "launcher/probe/analysis/probe_analysis.h"
#include "launcher/probe/report/probe_chart.h"
#include "launcher/probe/report/probe_html.h"
#include "launcher/probe/report/probe_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ----------------------------------------------------------------------------------------------- */

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

static struct probe_analysis *s_analyse(const struct probe_meas *m, const struct probe_thresholds *t)
{
    struct probe_thresholds dflt;
    struct probe_err err;
    probe_thresholds_default(&dflt);
    struct probe_analysis *a = probe_analyse(m, t ? t : &dflt, &err);
    assert_non_null(a);
    return a;
}

/* The first verdict of that severity and kind whose text contains needle (NULL: any). */
static const struct probe_verdict *s_find(const struct probe_analysis *a, enum probe_sev sev, const char *kind,
                                          const char *needle)
{
    for (size_t i = 0; i < a->nverdicts; i++)
        if (a->verdicts[i].sev == sev && strcmp(a->verdicts[i].kind, kind) == 0 &&
            (needle == NULL || strstr(a->verdicts[i].text, needle)))
            return &a->verdicts[i];
    return NULL;
}

static int s_count(const struct probe_analysis *a, enum probe_sev sev, const char *kind)
{
    int n = 0;
    for (size_t i = 0; i < a->nverdicts; i++)
        n += a->verdicts[i].sev == sev && strcmp(a->verdicts[i].kind, kind) == 0;
    return n;
}

static void s_set_throughput(struct probe_meas *m, int n, double thr)
{
    for (size_t i = 0; i < m->nsteps; i++)
        if (m->steps[i].n == n)
            m->steps[i].throughput = thr;
}

static struct probe_result *s_result(struct probe_meas *m, int n, uint64_t bytes)
{
    return (struct probe_result *)probe_sweep_result(probe_meas_sweep(m, PROBE_OP_ALLREDUCE, PROBE_GROUP_FIRST_N, n), bytes);
}

/* Writes text to a temporary .ini and loads it over the defaults; returns the load's result. */
static int s_load_ini(const char *text, struct probe_thresholds *t, struct probe_err *err, char *path, size_t len)
{
    snprintf(path, len, "/tmp/test_probe_XXXXXX.ini");
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    probe_thresholds_default(t);
    int rc = probe_thresholds_load(path, t, err);
    unlink(path);
    return rc;
}

/* ---- thresholds ---------------------------------------------------------------------------------------------- */

static void test_thresholds_default(void **state)
{
    struct probe_thresholds t;
    probe_thresholds_default(&t);
    assert_true(isnan(probe_threshold_for(&t, 1)));
    assert_true(probe_threshold_for(&t, 2) == 0.90);
    assert_true(probe_threshold_for(&t, 3) == 0.90);
    assert_true(probe_threshold_for(&t, 4) == 0.80);
    assert_true(probe_threshold_for(&t, 8) == 0.75);
    assert_true(probe_threshold_for(&t, 64) == 0.75);
    assert_true(t.busbw_max_drop == 0.10);
}

static void test_thresholds_example_file_matches_defaults(void **state)
{
    struct probe_thresholds dflt, t;
    struct probe_err err = { "" };
    char path[4096];
    const char *src = getenv("PLAUNCH_SRC");
    snprintf(path, sizeof path, "%s/conf/probe.ini", src && src[0] ? src : ".");
    probe_thresholds_default(&dflt);
    probe_thresholds_default(&t);
    if (probe_thresholds_load(path, &t, &err) < 0)
        fail_msg("%s", err.msg);
    assert_memory_equal(&t, &dflt, sizeof t);
}

static void test_thresholds_override_and_add(void **state)
{
    struct probe_thresholds t;
    struct probe_err err = { "" };
    char path[64];
    assert_int_equal(s_load_ini("[efficiency]\nmin_at_2 = 0.95\nmin_at_16 = 0.6 ; spans nodes\n[busbw]\n"
                                "max_drop = 0.2\n", &t, &err, path, sizeof path), 0);
    assert_true(probe_threshold_for(&t, 2) == 0.95);
    assert_true(probe_threshold_for(&t, 8) == 0.75);
    assert_true(probe_threshold_for(&t, 16) == 0.6);
    assert_true(probe_threshold_for(&t, 32) == 0.6);
    assert_true(t.busbw_max_drop == 0.2);
}

static void test_thresholds_unknown_key_names_file_line(void **state)
{
    struct probe_thresholds t;
    struct probe_err err = { "" };
    char path[64], want[128];
    assert_int_equal(s_load_ini("; comment\n[efficiency]\nmin_at_2 = 0.9\nmin_at_two = 0.9\n", &t, &err, path,
                                sizeof path), -1);
    snprintf(want, sizeof want, "%s:4: unknown key 'min_at_two' in [efficiency]", path);
    assert_non_null(strstr(err.msg, want));
    assert_int_equal(s_load_ini("[busbw]\nmax_dorp = 0.1\n", &t, &err, path, sizeof path), -1);
    snprintf(want, sizeof want, "%s:2: unknown key 'max_dorp' in [busbw]", path);
    assert_non_null(strstr(err.msg, want));
    assert_int_equal(s_load_ini("[effciency]\nmin_at_2 = 0.9\n", &t, &err, path, sizeof path), -1);
    assert_non_null(strstr(err.msg, ":2: unknown section [effciency]"));
    assert_int_equal(s_load_ini("max_drop = 0.1\n", &t, &err, path, sizeof path), -1);
    assert_non_null(strstr(err.msg, ":1: key 'max_drop' outside a section"));
}

static void test_thresholds_bad_values(void **state)
{
    struct probe_thresholds t, dflt;
    struct probe_err err = { "" };
    char path[64];
    probe_thresholds_default(&dflt);
    assert_int_equal(s_load_ini("[efficiency]\nmin_at_4 = 1.5\n", &t, &err, path, sizeof path), -1);
    assert_non_null(strstr(err.msg, ":2: min_at_4 = '1.5'"));
    assert_memory_equal(&t, &dflt, sizeof t); /* no partial side effects */
    assert_int_equal(s_load_ini("[efficiency]\nmin_at_1 = 0.5\n", &t, &err, path, sizeof path), -1);
    assert_non_null(strstr(err.msg, "from 2 to 4096"));
    assert_int_equal(s_load_ini("[pairwise]\nslow_fraction = fast\n", &t, &err, path, sizeof path), -1);
    assert_non_null(strstr(err.msg, ":2: slow_fraction = 'fast'"));
    probe_thresholds_default(&t);
    assert_int_equal(probe_thresholds_load("/nonexistent/probe.ini", &t, &err), -1);
    assert_non_null(strstr(err.msg, "cannot open thresholds file '/nonexistent/probe.ini'"));
}

/* ---- scaling flags --------------------------------------------------------------------------------------------- */

static void test_clean_fixture_has_no_flags(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-h200x8-clean.json");
    struct probe_analysis *a = s_analyse(m, NULL);
    assert_int_equal(a->nflags, 0);
    assert_int_equal(probe_analysis_exit_status(a), 0);
    assert_int_equal(a->ref_bytes, 1u << 30);
    assert_int_equal(a->base_n, 2);
    assert_non_null(s_find(a, PROBE_SEV_OK, "efficiency", NULL));
    assert_non_null(s_find(a, PROBE_SEV_OK, "busbw-drop", NULL));
    assert_non_null(s_find(a, PROBE_SEV_OK, "versions", NULL));
    assert_non_null(s_find(a, PROBE_SEV_OK, "p2p", NULL));
    assert_non_null(s_find(a, PROBE_SEV_OK, "slow-pair", NULL));
    assert_non_null(s_find(a, PROBE_SEV_OK, "verification", NULL));
    const struct probe_group_stat *g = probe_analysis_group(a, 8);
    assert_non_null(g);
    assert_true(fabs(g->efficiency - 0.91) < 1e-3);
    probe_analysis_destroy(&a);
    probe_analysis_destroy(&a); /* safe twice */
    probe_meas_destroy(&m);
}

static void test_efficiency_flags_at_thresholds(void **state)
{
    static const struct { int n; double at, below; } cases[] = { { 2, 180, 179.8 }, { 4, 320, 319.6 }, { 8, 600, 599 } };
    struct probe_meas *m = s_fixture("synthetic-h200x8-clean.json");
    s_set_throughput(m, 1, 100);
    for (size_t i = 0; i < 3; i++) {
        s_set_throughput(m, cases[i].n, cases[i].at); /* exactly the threshold: not below it */
        struct probe_analysis *a = s_analyse(m, NULL);
        assert_false(probe_analysis_group(a, cases[i].n)->eff_flag);
        assert_null(s_find(a, PROBE_SEV_FLAG, "efficiency", NULL));
        probe_analysis_destroy(&a);
        s_set_throughput(m, cases[i].n, cases[i].below);
        a = s_analyse(m, NULL);
        char needle[32];
        snprintf(needle, sizeof needle, "at N=%d:", cases[i].n);
        assert_true(probe_analysis_group(a, cases[i].n)->eff_flag);
        const struct probe_verdict *v = s_find(a, PROBE_SEV_FLAG, "efficiency", needle);
        assert_non_null(v);
        assert_non_null(strstr(v->reason, "the all-reduce of 87.0 MB takes")); /* the data's reason */
        assert_int_equal(probe_analysis_exit_status(a), PROBE_EXIT_FLAGGED);
        probe_analysis_destroy(&a);
        s_set_throughput(m, cases[i].n, cases[i].at);
    }
    probe_meas_destroy(&m);
}

static void test_busbw_drop_at_limit(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-h200x8-clean.json");
    s_result(m, 2, 1u << 30)->busbw = 100;
    s_result(m, 4, 1u << 30)->busbw = 100;
    s_result(m, 8, 1u << 30)->busbw = 90; /* exactly 10% down: allowed */
    struct probe_analysis *a = s_analyse(m, NULL);
    assert_null(s_find(a, PROBE_SEV_FLAG, "busbw-drop", NULL));
    assert_non_null(s_find(a, PROBE_SEV_OK, "busbw-drop", "lowest: 90% at N=8"));
    probe_analysis_destroy(&a);
    s_result(m, 8, 1u << 30)->busbw = 89.9;
    a = s_analyse(m, NULL);
    const struct probe_verdict *v = s_find(a, PROBE_SEV_FLAG, "busbw-drop", "busbw drop at N=8");
    assert_non_null(v);
    assert_non_null(strstr(v->reason, "no missing P2P, slow pair or extra node")); /* nothing in the data */
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

static void test_internode_reason(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-2node-flags.json");
    struct probe_analysis *a = s_analyse(m, NULL);
    const struct probe_verdict *v = s_find(a, PROBE_SEV_FLAG, "busbw-drop", "N=8");
    assert_non_null(v);
    assert_non_null(strstr(v->reason, "inter-node: the N=8 group spans 2 nodes"));
    assert_non_null(strstr(v->reason, "the network is the bottleneck"));
    assert_non_null(s_find(a, PROBE_SEV_FLAG, "efficiency", "N=8"));
    assert_non_null(s_find(a, PROBE_SEV_NOTE, "network", "inter-node vs intra-node"));
    assert_null(s_find(a, PROBE_SEV_FLAG, "slow-pair", NULL)); /* inter-node pairs judged against their own median */
    assert_int_equal(probe_analysis_group(a, 8)->nodes, 2);
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

/* ---- preflight verdicts ------------------------------------------------------------------------------------------ */

static void test_mismatch_verdict(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-pcie8-flags.json");
    struct probe_analysis *a = s_analyse(m, NULL);
    const struct probe_verdict *v = s_find(a, PROBE_SEV_FLAG, "versions", "CUDA mismatch");
    assert_non_null(v);
    assert_non_null(strstr(v->text, "ranks 0-7"));
    assert_non_null(strstr(v->text, "driver supports CUDA up to 12.2"));
    assert_non_null(strstr(v->text, "runtime is CUDA 12.4"));
    assert_non_null(strstr(v->reason, "install an NVIDIA driver for CUDA 12.4 or newer"));
    assert_int_equal(s_count(a, PROBE_SEV_FLAG, "versions"), 1); /* one line for the 8 alike GPUs */
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);

    m = s_fixture("synthetic-h200x8-clean.json"); /* one GPU across a major version */
    m->gpus[3].driver_cuda = 12080;
    a = s_analyse(m, NULL);
    v = s_find(a, PROBE_SEV_FLAG, "versions", "(ranks 3)");
    assert_non_null(v);
    assert_non_null(strstr(v->reason, "a CUDA 13 runtime cannot run on a CUDA 12 driver"));
    assert_null(s_find(a, PROBE_SEV_OK, "versions", NULL));
    probe_analysis_destroy(&a);
    m->gpus[3].driver_cuda = 13000;
    m->gpus[5].nccl_version = 22703;
    a = s_analyse(m, NULL);
    assert_non_null(s_find(a, PROBE_SEV_FLAG, "versions", "NCCL versions differ: rank 0 has 2.28.9, rank 5 has 2.27.3"));
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

static void test_p2p_missing_verdict(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-pcie8-flags.json");
    struct probe_analysis *a = s_analyse(m, NULL);
    const struct probe_verdict *v = s_find(a, PROBE_SEV_FLAG, "p2p", "no P2P between ranks 2 and 5 on host "
                                                                      "synthetic-pcie-box");
    assert_non_null(v);
    assert_non_null(strstr(v->reason, "cudaDeviceCanAccessPeer is 0"));
    assert_int_equal(s_count(a, PROBE_SEV_FLAG, "p2p"), 1);
    /* the scaling flags at N=8 name it as a reason; N=4 (ranks 0-3) does not contain the pair */
    v = s_find(a, PROBE_SEV_FLAG, "efficiency", "N=8");
    assert_non_null(v);
    assert_non_null(strstr(v->reason, "no P2P between ranks 2 and 5"));
    assert_non_null(s_find(a, PROBE_SEV_FLAG, "slow-pair", "ranks 1 and 6"));
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);

    m = s_fixture("synthetic-h200x8-clean.json"); /* no P2P at all: one line, not 28 */
    for (int i = 0; i < 64; i++)
        m->p2p[0].can[i] = i % 9 == 0;
    a = s_analyse(m, NULL);
    assert_int_equal(s_count(a, PROBE_SEV_FLAG, "p2p"), 1);
    assert_non_null(s_find(a, PROBE_SEV_FLAG, "p2p", "no P2P between any of the 8 GPUs"));
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

static void test_verification_flag(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-h200x8-clean.json");
    s_result(m, 4, 64u << 20)->verified = 0;
    struct probe_analysis *a = s_analyse(m, NULL);
    assert_non_null(s_find(a, PROBE_SEV_FLAG, "verification", "wrong AllReduce result at N=4 (first-n): 1 of 11 "
                                                              "sizes failed the check (out of place), the first at "
                                                              "64 MiB"));
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

/* ---- loading ------------------------------------------------------------------------------------------------------ */

static const char S_ONE_GPU[] =
    "{\"schema\":\"plaunch-probe/1\",\"source\":\"synthetic: unit test\",\"date\":\"2025-01-01T00:00:00Z\","
    "\"hosts\":[\"h\"],\"config\":{\"min_bytes\":1048576,\"max_bytes\":2097152,\"grad_bytes\":87000000},"
    "\"preflight\":{\"gpus\":[{\"rank\":0,\"host\":\"h\",\"name\":\"G\",\"driver_cuda_version\":13000,"
    "\"runtime_cuda_version\":13000,\"nccl_version\":22809}],\"p2p\":[]},"
    "\"sweeps\":[{\"n\":1,\"results\":[{\"bytes\":1048576,\"time_us\":10,\"verified\":true},"
    "{\"bytes\":2097152,\"time_us\":%s,\"verified\":true}]}],"
    "\"steps\":[{\"n\":1,\"step_time_us\":6000}]}";

static struct probe_meas *s_from_text(const char *time2, struct probe_err *err)
{
    char text[2048];
    json_error_t je;
    snprintf(text, sizeof text, S_ONE_GPU, time2);
    json_t *root = json_loads(text, 0, &je);
    assert_non_null(root);
    struct probe_meas *m = probe_meas_from_json(root, "one.json", err);
    json_decref(root);
    return m;
}

static void test_single_gpu_is_clean_with_notes(void **state)
{
    struct probe_err err = { "" };
    struct probe_meas *m = s_from_text("20", &err);
    if (m == NULL)
        fail_msg("%s", err.msg);
    assert_true(fabs(m->sweeps[0].results[0].algbw - 104.8576) < 1e-9); /* bytes / time, GB/s */
    assert_true(m->sweeps[0].results[0].busbw == 0);                  /* 2(n-1)/n = 0 at n = 1 */
    assert_int_equal(m->config.schema, 1); /* schema 1: AllReduce of float timed with CUDA events */
    assert_int_equal(m->sweeps[0].op, PROBE_OP_ALLREDUCE);
    assert_int_equal(m->config.timing, PROBE_TIMING_EVENTS);
    assert_false(m->sweeps[0].results[0].has_ip);
    assert_true(fabs(m->steps[0].throughput - 1e6 / 6000) < 1e-9);
    struct probe_analysis *a = s_analyse(m, NULL);
    assert_int_equal(a->nflags, 0);
    assert_non_null(s_find(a, PROBE_SEV_NOTE, "busbw-drop", "not checked"));
    assert_non_null(s_find(a, PROBE_SEV_NOTE, "efficiency", "only N=1"));
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

static void test_load_errors_name_the_field(void **state)
{
    struct probe_err err = { "" };
    assert_null(s_from_text("\"fast\"", &err));
    assert_string_equal(err.msg, "one.json: field sweeps[0].results[1].time_us: expected a number >= 1e-09, found a "
                                 "string (schema: docs/probe.md)");
    assert_null(s_from_text("-3", &err));
    assert_non_null(strstr(err.msg, "sweeps[0].results[1].time_us"));
    assert_null(probe_meas_load("/nonexistent/m.json", &err));
    assert_non_null(strstr(err.msg, "cannot open measurement file '/nonexistent/m.json'"));
    json_t *root = json_pack("{s:s}", "schema", "plaunch-probe/9");
    assert_null(probe_meas_from_json(root, "x.json", &err));
    assert_non_null(strstr(err.msg, "x.json: field schema is \"plaunch-probe/9\"; this plaunch reads "
                                    "\"plaunch-probe/2\" and \"plaunch-probe/1\""));
    json_object_set_new(root, "schema", json_string(PROBE_SCHEMA));
    assert_null(probe_meas_from_json(root, "x.json", &err));
    assert_string_equal(err.msg, "x.json: field source is missing; expected a string (schema: docs/probe.md)");
    json_decref(root);
}

/* ---- reports ---------------------------------------------------------------------------------------------------- */

static void test_reports_carry_flags_and_charts(void **state)
{
    struct probe_meas *m = s_fixture("synthetic-pcie8-flags.json");
    struct probe_analysis *a = s_analyse(m, NULL);
    struct probe_thresholds t;
    probe_thresholds_default(&t);
    json_t *doc = probe_report_json(m, a, &t);
    assert_non_null(doc);
    json_t *an = json_object_get(doc, "analysis");
    assert_int_equal(json_integer_value(json_object_get(an, "flags")), a->nflags);
    assert_int_equal(json_integer_value(json_object_get(an, "exit_status")), 3);
    json_decref(doc);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    probe_html_page(f, m, a);
    fclose(f);
    assert_non_null(strstr(buf, "<svg id=\"chart-busbw-allreduce\""));
    assert_non_null(strstr(buf, "<svg id=\"chart-efficiency\""));
    assert_non_null(strstr(buf, "<li class=\"flag\" data-kind=\"p2p\">"));
    assert_non_null(strstr(buf, "class=\"ideal\""));
    assert_null(strstr(buf, "http://example")); /* self-contained: no external resources */
    free(buf);
    probe_analysis_destroy(&a);
    probe_meas_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thresholds_default),
        cmocka_unit_test(test_thresholds_example_file_matches_defaults),
        cmocka_unit_test(test_thresholds_override_and_add),
        cmocka_unit_test(test_thresholds_unknown_key_names_file_line),
        cmocka_unit_test(test_thresholds_bad_values),
        cmocka_unit_test(test_clean_fixture_has_no_flags),
        cmocka_unit_test(test_efficiency_flags_at_thresholds),
        cmocka_unit_test(test_busbw_drop_at_limit),
        cmocka_unit_test(test_internode_reason),
        cmocka_unit_test(test_mismatch_verdict),
        cmocka_unit_test(test_p2p_missing_verdict),
        cmocka_unit_test(test_verification_flag),
        cmocka_unit_test(test_single_gpu_is_clean_with_notes),
        cmocka_unit_test(test_load_errors_name_the_field),
        cmocka_unit_test(test_reports_carry_flags_and_charts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
