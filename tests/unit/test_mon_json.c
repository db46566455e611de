/* Unit tests for mon_json: summaries survive the trip to the coordinator exactly, and a peer's hostile JSON (wrong
 * types, huge strings, too many ranks, NaN/Inf, control characters, another version) is refused by name. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/monitor/diagnosis/mon_json.h"

static struct mon_series s_ser;

/* Sample i of rank: the GPU rank 7 (growing memory, throttled, an Xid) or the CPU worker 2 (mostly unknown). */
static void s_sample(struct mon_sample *s, int rank, int i)
{
    mon_sample_clear(s);
    s->t_ms = 1700000000000LL + 1000LL * i;
    s->rank = rank;
    s->cpu_pct = rank == 7 ? 130 : 95;
    if (rank != 7)
        return;
    snprintf(s->gpu, sizeof s->gpu, "GPU-7f2c");
    snprintf(s->pci, sizeof s->pci, "00000000:3B:00.0");
    s->gpu_util = 60 + i % 7, s->gpu_idle_frac = 0.1, s->gpu_idle_ms = 30 + i % 5;
    s->gpu_mem_proc_mib = 1000 + i / 3.0, s->gpu_mem_used_mib = 1500 + i / 3.0, s->gpu_mem_total_mib = 81559;
    s->sm_clock_mhz = 1400 + i % 3, s->sm_clock_max_mhz = 1980, s->power_w = 650, s->power_limit_w = 700;
    s->temp_c = 80, s->throttle = i % 3 ? 0 : 4, s->ecc_corrected = i, s->ecc_uncorrected = 1;
    s->xid = i == 9 ? 13 : 0, s->rss_mib = 4000 + i % 11, s->host_avail_frac = 0.5;
}

/* Two summaries: rank 7 over 1500 s on node-b, rank 2 over 100 s on node-a. */
static void s_two(struct mon_rank_summary *r)
{
    struct mon_thresh th;
    mon_thresh_default(&th);
    for (int k = 0; k < 2; k++) {
        int rank = k ? 2 : 7;
        mon_series_init(&s_ser, rank, k ? "node-a" : "node-b");
        for (int i = 0; i < (k ? 100 : 1500); i++) {
            struct mon_sample s;
            s_sample(&s, rank, i);
            mon_series_add(&s_ser, &s);
        }
        assert_int_equal(mon_diag_rank(&s_ser, &th, &r[k]), 0);
    }
}

static void test_round_trip(void **state)
{
    struct mon_rank_summary in[2], out[4];
    char err[256] = "";
    s_two(in);
    assert_true(isnan(in[1].util_mean) && in[1].ecc_uncorrected == -1 && in[0].samples > 0);
    char *text = mon_json_encode(in, 2);
    assert_non_null(text);
    assert_true(strncmp(text, "{\"version\":1,\"ranks\":[{\"rank\":7,\"node\":\"node-b\"", 46) == 0);
    assert_non_null(strstr(text, "\"util_mean\":null"));
    memset(out, 0x5a, sizeof out);
    int n = mon_json_decode(text, strlen(text), out, 4, err, sizeof err);
    if (n != 2)
        fail_msg("%d: %s", n, err);
    assert_memory_equal(&out[0], &in[0], sizeof in[0]);
    assert_memory_equal(&out[1], &in[1], sizeof in[1]);
    free(text);
    /* what the decoder would refuse is sent as unknown or at its bound */
    in[0].util_mean = 101, in[0].gmem_peak_frac = -0.5, in[0].steady_s = INFINITY, in[0].xid_last = -7;
    text = mon_json_encode(in, 1);
    assert_int_equal(mon_json_decode(text, strlen(text), out, 4, err, sizeof err), 1);
    assert_true(isnan(out[0].util_mean) && isnan(out[0].gmem_peak_frac) && out[0].steady_s == 0);
    assert_int_equal(out[0].xid_last, -1);
    free(text);
    /* none at all */
    text = mon_json_encode(in, 0);
    assert_string_equal(text, "{\"version\":1,\"ranks\":[]}");
    assert_int_equal(mon_json_decode(text, strlen(text), out, 4, err, sizeof err), 0);
    free(text);
}

/* The encoding of the two summaries with the first occurrence of from replaced by to. */
static char *s_edited(const char *from, const char *to)
{
    struct mon_rank_summary in[2];
    s_two(in);
    char *text = mon_json_encode(in, 2), *at = strstr(text, from);
    if (!at)
        fail_msg("'%s' is not in %s", from, text);
    size_t len = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(len);
    snprintf(out, len, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    free(text);
    return out;
}

/* The encoding with the first value of key (up to its ',' or '}') replaced by value. */
static char *s_with_value(const char *key, const char *value)
{
    struct mon_rank_summary in[2];
    char from[64];
    s_two(in);
    char *text = mon_json_encode(in, 2);
    snprintf(from, sizeof from, "\"%s\":", key);
    char *at = strstr(text, from);
    assert_non_null(at);
    at += strlen(from);
    size_t keep = strcspn(at, ",}");
    size_t len = strlen(text) + strlen(value) + 1;
    char *out = malloc(len);
    snprintf(out, len, "%.*s%s%s", (int)(at - text), text, value, at + keep);
    free(text);
    return out;
}

static void s_expect_refused_text(const char *text, size_t len, int max, const char *want)
{
    struct mon_rank_summary out[4], before[4];
    char err[256] = "";
    memset(out, 0x33, sizeof out);
    memcpy(before, out, sizeof out);
    int n = mon_json_decode(text, len, out, max, err, sizeof err);
    if (n != -1)
        fail_msg("accepted (%d): %.300s", n, text);
    if (!strstr(err, want))
        fail_msg("message '%s' does not hold '%s'", err, want);
    assert_memory_equal(out, before, sizeof out);  /* untouched */
}

static void s_expect_refused(const char *from, const char *to, const char *want)
{
    char *text = s_edited(from, to);
    s_expect_refused_text(text, strlen(text), 4, want);
    free(text);
}

static void test_hostile_fields(void **state)
{
    s_expect_refused("\"rank\":7", "\"rank\":\"7\"", "ranks[0].rank: expected an integer, found a string");
    s_expect_refused("\"rank\":7", "\"rank\":7.5", "ranks[0].rank: expected an integer, found a real");
    s_expect_refused("\"rank\":7", "\"rank\":-1", "ranks[0].rank: out of range");
    s_expect_refused("\"rank\":7", "\"rank\":99999999999999", "ranks[0].rank: out of range");
    s_expect_refused("\"rank\":7,", "", "ranks[0].rank: expected an integer, found nothing");
    s_expect_refused("\"rank\":7", "\"rank\":7,\"extra\":1", "ranks[0]: unknown key 'extra'");
    s_expect_refused("\"rank\":7", "\"rank\":7,\"rank\":8", "not JSON");
    s_expect_refused("\"gpu_data\":true", "\"gpu_data\":1", "ranks[0].gpu_data: expected true or false");
    s_expect_refused("\"idle_frac\":0.1", "\"idle_frac\":-0.1", "ranks[0].idle_frac: out of range [0, 1]");
    s_expect_refused("\"idle_frac\":0.1", "\"idle_frac\":NaN", "not JSON");
    s_expect_refused("\"idle_frac\":0.1", "\"idle_frac\":Infinity", "not JSON");
    s_expect_refused("\"idle_frac\":0.1", "\"idle_frac\":1e999", "not JSON");
    char *text = s_with_value("steady_s", "null");
    s_expect_refused_text(text, strlen(text), 4, "ranks[0].steady_s: expected a number, found null");
    free(text);
    text = s_with_value("gmem_peak_frac", "1.0000001");
    s_expect_refused_text(text, strlen(text), 4, "ranks[0].gmem_peak_frac: out of range [0, 1]");
    free(text);
    text = s_with_value("ecc_uncorrected", "-2");
    s_expect_refused_text(text, strlen(text), 4, "ranks[0].ecc_uncorrected: out of range");
    free(text);
    s_expect_refused("\"util_mean\":null", "\"util_mean\":\"50\"", "ranks[1].util_mean: expected a number or null");
    s_expect_refused("\"node\":\"node-b\"", "\"node\":\"node\\u001b[31m-b\"", "ranks[0].node");
    s_expect_refused("\"node\":\"node-b\"", "\"node\":\"node\\u0000-b\"", "not JSON"); /* jansson refuses NUL */
    s_expect_refused("\"pci\":\"00000000:3B:00.0\"", "\"pci\":\"00000000:3B:00.0:0000\"", "ranks[0].pci: a string of 21 bytes; at most 19");
    s_expect_refused("\"rank\":2", "\"rank\":7", "rank 7 is summarised twice");
    s_expect_refused("{\"version\":1,", "{\"version\":2,", "version 2 unknown");
    s_expect_refused("{\"version\":1,", "{\"version\":\"1\",", "version (not an integer)");
    s_expect_refused("{\"version\":1,", "{", "exactly 'version' and 'ranks'");
    s_expect_refused("{\"version\":1,", "{\"version\":1,\"more\":0,", "exactly 'version' and 'ranks'");
    s_expect_refused("\"ranks\":[", "\"ranks\":[3,", "ranks[0]: expected an object, found an integer");
    /* a huge string */
    size_t big = 4000;
    char *huge = malloc(big + 16);
    memset(huge, 'a', big + 16);
    memcpy(huge, "\"node\":\"", 8);
    memcpy(huge + big, "\"", 2);
    s_expect_refused("\"node\":\"node-b\"", huge, "ranks[0].node: a string of 3992 bytes; at most 63");
    free(huge);
}

static void test_hostile_documents(void **state)
{
    char *text = s_edited("{", "{");
    s_expect_refused_text(text, strlen(text), 1, "2 ranks, at most 1");
    s_expect_refused_text(text, strlen(text) - 1, 4, "not JSON");  /* cut short */
    free(text);
    s_expect_refused_text("[]", 2, 4, "exactly 'version' and 'ranks'");
    s_expect_refused_text("", 0, 4, "not JSON");
    s_expect_refused_text("{\"version\":1,\"ranks\":{}}", 24, 4, "ranks: expected an array, found an object");
    s_expect_refused_text("{\"version\":1,\"ranks\":[]} x", 26, 4, "not JSON");
    /* larger than a REPORT may be: refused before parsing */
    size_t len = MON_JSON_MAX + 1;
    char *big = malloc(len);
    memset(big, ' ', len);
    s_expect_refused_text(big, len, 4, "at most");
    free(big);
    /* deep nesting within the bound */
    len = 200000;
    big = malloc(len);
    memset(big, '[', len);
    s_expect_refused_text(big, len, 4, "not JSON");
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_hostile_fields),
        cmocka_unit_test(test_hostile_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
