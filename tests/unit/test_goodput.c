/* Unit tests for the goodput model: the account partitions the wall clock, incidents fold and supersede, the ledger
 * and status.json read back into the same figures, bad ledgers are refused with the line named. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/goodput/goodput.h"

#define S(x) ((uint64_t)((x) * 1e9) + 1000000000ull) /* seconds since the job's start as CLOCK_MONOTONIC */
#define MS(x) ((uint64_t)((x) * 1000))

static void s_assert_partition(const gp_t *g, uint64_t now)
{
    struct gp_summary s;
    gp_summary(g, now, &s);
    double sum = s.startup_s + s.running_s + s.lost_total_s + s.ending_s;
    if (fabs(sum - s.wall_s) > 1e-6)
        fail_msg("startup %.3f + running %.3f + lost %.3f + ending %.3f = %.3f, wall %.3f", s.startup_s, s.running_s,
                 s.lost_total_s, s.ending_s, sum, s.wall_s);
}

/* A 2-node job: generation 0 runs from 1 s, rank 3 fails at 10 s (seen at 10.5 s), the first node is back at 11 s,
 * ASSIGN at 11.2 s, every node started by 11.5 s, first progress at 14 s; the job ends at 20 s. */
static gp_t *s_job(void)
{
    gp_t *g = gp_new("job-1", S(0), 1700000000000);
    assert_non_null(g);
    gp_gen_begin(g, 0, 4, 2, S(0.2));
    gp_node_set(g, 0, "a", 0, 2, GP_NODE_RUNNING, S(0.2));
    gp_node_set(g, 1, "b", 2, 2, GP_NODE_RUNNING, S(0.2));
    gp_node_heard(g, 0, S(1.5), MS(1.0), MS(0.5), -1, 0, 0); /* started at 0.5, first progress at 1.0 */
    gp_node_heard(g, 1, S(1.5), MS(1.1), MS(0.4), -1, 0, 0);
    for (int r = 0; r < 4; r++)
        gp_rank_progress(g, r, r / 2, 100, 0, S(2));
    for (int r = 0; r < 4; r++)
        gp_rank_progress(g, r, r / 2, 1000, 0, S(9.9));
    int id = gp_incident_open(g, S(10.5), GP_CAUSE_WORKER,
                              &(struct gp_cause_info){ .rank = 3, .node = 1, .host = "b", .exit_code = 1,
                                                       .occurred_ago_ms = 500 });
    assert_int_equal(id, 0);
    /* the node dies with its rank: the same incident */
    assert_int_equal(gp_incident_open(g, S(10.6), GP_CAUSE_NODE, NULL), 0);
    gp_mark(g, GP_TEARDOWN, S(11));
    gp_gen_begin(g, 1, 4, 2, S(11.2));
    gp_node_set(g, 0, "a", 0, 2, GP_NODE_RUNNING, S(11.2));
    gp_node_set(g, 1, "b", 2, 2, GP_NODE_RUNNING, S(11.2));
    gp_node_heard(g, 0, S(11.6), MS(0.2), 0, 50, 1000, 80000); /* started at 11.4 */
    gp_node_heard(g, 1, S(11.6), MS(0.1), 0, 70, 2000, 80000); /* started at 11.5 */
    gp_node_heard(g, 0, S(14.5), MS(0.3), MS(0.5), 50, 1000, 80000); /* first progress at 14.0 */
    gp_rank_progress(g, 0, 0, 900, 0, S(15));
    return g;
}

static void test_account(void **state)
{
    (void)state;
    gp_t *g = s_job();
    const struct gp_incident *in = gp_incident(g, 0);
    assert_int_equal(gp_nincidents(g), 1);
    assert_int_equal(in->cause, GP_CAUSE_WORKER);
    assert_int_equal(in->rank, 3);
    assert_true(in->closed);
    double want[GP_NMARKS] = { 10.0, 10.5, 11.0, 11.2, 11.5, 14.0 };
    for (int m = 0; m < GP_NMARKS; m++)
        if (fabs(in->at[m] - want[m]) > 1e-6)
            fail_msg("mark %s at %.3f, want %.3f", gp_mark_name((enum gp_mark)m), in->at[m], want[m]);
    assert_true(fabs(gp_incident_phase(in, GP_PH_INIT) - 2.5) < 1e-6);
    assert_int_equal(in->step_before, 1000);
    assert_int_equal(in->step_after, 900);
    assert_int_equal(in->steps_lost, 101);
    s_assert_partition(g, S(16));
    gp_finish(g, S(20), 0);
    struct gp_summary s;
    gp_summary(g, 0, &s);
    assert_true(fabs(s.wall_s - 20) < 1e-6);
    assert_true(fabs(s.startup_s - 1.0) < 1e-6);  /* gen 0's first progress: node 1's, at 1.1 */
    assert_true(fabs(s.running_s - (9.0 + 6.0)) < 1e-6);
    assert_true(fabs(s.lost_total_s - 4.0) < 1e-6);
    assert_int_equal(s.slowest, GP_PH_INIT);
    assert_int_equal(s.restarts, 1);
    assert_int_equal(s.incidents[GP_CAUSE_WORKER], 1);
    assert_int_equal(s.incidents[GP_CAUSE_NODE], 0);
    /* recompute: 101 steps at 9 s per 900 steps */
    assert_true(fabs(s.recompute_s - 101 * 0.01) < 1e-6);
    assert_true(fabs(s.goodput - (15.0 - 1.01) / 20) < 1e-6);
    s_assert_partition(g, 0);
    gp_free(&g);
    assert_null(g);
}

/* A second failure before the next generation progressed ends the first incident where it starts. */
static void test_supersede(void **state)
{
    (void)state;
    gp_t *g = gp_new("job-2", S(0), 0);
    gp_gen_begin(g, 0, 1, 1, S(0));
    gp_node_set(g, 0, "a", 0, 1, GP_NODE_RUNNING, S(0));
    gp_node_heard(g, 0, S(1), MS(0.9), MS(0.8), -1, 0, 0);
    gp_incident_open(g, S(5), GP_CAUSE_WORKER, NULL);
    gp_mark(g, GP_TEARDOWN, S(5.5));
    gp_gen_begin(g, 1, 1, 1, S(6));
    assert_int_equal(gp_incident_open(g, S(8), GP_CAUSE_HANG,
                                      &(struct gp_cause_info){ .rank = 0, .node = -1, .occurred_ago_ms = 1000 }),
                     1);
    const struct gp_incident *a = gp_incident(g, 0), *b = gp_incident(g, 1);
    assert_true(a->closed);
    assert_true(fabs(a->end_t - 7.0) < 1e-6);
    assert_true(fabs(gp_incident_phase(a, GP_PH_START) - 1.0) < 1e-6); /* from its ASSIGN to the next occurrence */
    assert_true(fabs(b->at[GP_OCCURRED] - 7.0) < 1e-6);
    assert_ptr_equal(gp_incident_current(g), b);
    s_assert_partition(g, S(9));
    gp_finish(g, S(10), 124);
    assert_true(b->final);
    s_assert_partition(g, 0);
    gp_free(&g);
}

static char *s_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    return buf;
}

static void test_ledger_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_goodput.XXXXXX", err[512], path[64], blk1[8192], blk2[8192];
    assert_non_null(mkdtemp(dir));
    gp_t *g = s_job();
    assert_int_equal(gp_ledger_open(g, dir, err, sizeof err), 0);
    assert_int_equal(gp_ledger_flush(g, err, sizeof err), 0);
    gp_finish(g, S(20), 0);
    assert_int_equal(gp_ledger_flush(g, err, sizeof err), 0);
    assert_int_equal(gp_ledger_flush(g, err, sizeof err), 0); /* nothing twice */
    snprintf(path, sizeof path, "%s/goodput.jsonl", dir);
    size_t len;
    char *text = s_read(path, &len);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 2);
    gp_t *back = gp_ledger_load(text, len, err, sizeof err);
    if (!back)
        fail_msg("%s", err);
    gp_block(g, 0, blk1, sizeof blk1);
    gp_block(back, 0, blk2, sizeof blk2);
    assert_string_equal(blk1, blk2);
    assert_non_null(strstr(blk1, "incident 0  worker-failure rank 3 node 1 (b) exit 1"));
    /* a damaged line is refused, named */
    char bad[] = "{\"type\":\"incident\",\"cause\":\"meteor\"}\n";
    gp_t *no = gp_ledger_load(bad, strlen(bad), err, sizeof err);
    assert_null(no);
    assert_non_null(strstr(err, "goodput.jsonl line 1: field cause"));
    free(text);
    gp_free(&back);
    gp_free(&g);
    unlink(path);
    rmdir(dir);
}

static void test_status_round_trip(void **state)
{
    (void)state;
    char err[512], txt[8192];
    gp_t *g = s_job();
    gp_incident_open(g, S(16), GP_CAUSE_STOP, &(struct gp_cause_info){ .rank = -1, .node = -1, .text = "SIGTERM" });
    char *json = gp_status_json(g, S(16.5));
    assert_non_null(json);
    gp_t *v = gp_status_load(json, strlen(json), S(100), err, sizeof err);
    if (!v)
        fail_msg("%s", err);
    assert_int_equal(gp_generation(v), 1);
    assert_int_equal(gp_world(v), 4);
    assert_int_equal(gp_nnodes(v), 2);
    assert_string_equal(gp_node(v, 1)->host, "b");
    assert_true(fabs(gp_node(v, 0)->gpu_util - 50) < 1e-6);
    assert_int_equal(gp_rank(v, 0)->step, 900);
    assert_non_null(gp_incident_current(v));
    gp_status_text(v, S(100), 100, 0, txt, sizeof txt);
    assert_non_null(strstr(txt, "restarting"));
    assert_non_null(strstr(txt, "incident: stop-request"));
    assert_non_null(strstr(txt, "rank 3"));
    /* a host name with a terminal escape is shown escaped */
    gp_node_set(g, 1, "b\033[2J", 2, 2, GP_NODE_RUNNING, S(17));
    free(json);
    json = gp_status_json(g, S(17));
    gp_free(&v);
    v = gp_status_load(json, strlen(json), S(100), err, sizeof err);
    gp_status_text(v, S(100), 0, 0, txt, sizeof txt);
    assert_null(strchr(txt, '\033'));
    gp_status_line(g, S(17), 60, txt, sizeof txt);
    assert_true(strlen(txt) <= 60);
    free(json);
    gp_free(&v);
    gp_free(&g);
    assert_null(gp_status_load("{\"version\":2}", 13, 0, err, sizeof err));
}

/* The spares: status.json carries who stands by and the swaps, read back bounded; the ledger's incident names the
 * spare that replaced its node. */
static void test_spares_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_goodput.XXXXXX", err[512], txt[8192], path[64];
    assert_non_null(mkdtemp(dir));
    gp_t *g = gp_new("job-2", S(0), 1700000000000);
    assert_non_null(g);
    assert_int_equal(gp_ledger_open(g, dir, err, sizeof err), 0);
    struct gp_spare sp[2] = { { "c", GP_SPARE_STANDBY }, { "d", GP_SPARE_SWAPPED_OUT } };
    gp_gen_begin(g, 0, 2, 2, S(0.2));
    gp_node_set(g, 0, "a", 0, 1, GP_NODE_RUNNING, S(0.2));
    gp_node_set(g, 1, "b", 1, 1, GP_NODE_RUNNING, S(0.2));
    gp_spares_set(g, sp, 2, 1, 1);
    gp_node_heard(g, 0, S(1.5), MS(1.0), MS(0.5), -1, 0, 0);
    gp_node_heard(g, 1, S(1.5), MS(1.0), MS(0.5), -1, 0, 0);
    gp_incident_open(g, S(5), GP_CAUSE_NODE, &(struct gp_cause_info){ .rank = -1, .node = 1, .host = "b",
                                                                       .exit_code = -1, .text = "lost" });
    gp_gen_begin(g, 1, 2, 2, S(5.28));
    gp_node_set(g, 1, "c", 1, 1, GP_NODE_RUNNING, S(5.28));
    gp_spare_swap(g, 1, 1, "c", 0.28);
    gp_spares_set(g, sp + 1, 1, 0, 1);
    gp_node_heard(g, 0, S(6), MS(0.5), MS(0.2), -1, 0, 0);
    gp_node_heard(g, 1, S(6), MS(0.5), MS(0.2), -1, 0, 0);
    assert_null(gp_incident_current(g));
    assert_string_equal(gp_incident(g, 0)->replaced_by, "c");
    assert_int_equal(gp_spares_count(g, GP_SPARE_SWAPPED_OUT), 1);
    assert_int_equal(gp_swaps_total(g), 1);
    /* status.json and back */
    char *json = gp_status_json(g, S(7));
    assert_non_null(json);
    gp_t *v = gp_status_load(json, strlen(json), S(100), err, sizeof err);
    if (!v)
        fail_msg("%s", err);
    assert_int_equal(gp_nspares(v), 1);
    assert_string_equal(gp_spare(v, 0)->host, "d");
    assert_int_equal(gp_spare(v, 0)->state, GP_SPARE_SWAPPED_OUT);
    assert_int_equal(gp_spares_count(v, GP_SPARE_STANDBY), 0);
    assert_int_equal(gp_spares_count(v, GP_SPARE_SWAPPED_OUT), 1);
    assert_int_equal(gp_swaps_total(v), 1);
    assert_int_equal(gp_nswaps(v), 1);
    assert_int_equal(gp_swap(v, 0)->generation, 1);
    assert_int_equal(gp_swap(v, 0)->node_rank, 1);
    assert_string_equal(gp_swap(v, 0)->host, "c");
    assert_true(fabs(gp_swap(v, 0)->after_s - 0.28) < 1e-6);
    gp_status_text(v, S(100), 0, 0, txt, sizeof txt);
    assert_non_null(strstr(txt, "spares: 1 standing by (d swapped out), 1 swap: node rank 1 -> c in 0.28 s"));
    gp_free(&v);
    free(json);
    /* bounded: a node rank out of range is refused; a long list is cut at GP_STATUS_SPARES */
    const char *bad = "{\"version\":1,\"swaps\":[{\"generation\":1,\"node\":-5,\"host\":\"x\"}]}";
    assert_null(gp_status_load(bad, strlen(bad), 0, err, sizeof err));
    assert_non_null(strstr(err, "field node"));
    char many[8192] = "{\"version\":1,\"spares_standby\":40,\"spares\":[";
    for (int i = 0; i < 40; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s{\"host\":\"h%d\",\"state\":\"standby\"}",
                 i ? "," : "", i);
    strcat(many, "]}");
    v = gp_status_load(many, strlen(many), 0, err, sizeof err);
    if (!v)
        fail_msg("%s", err);
    assert_int_equal(gp_nspares(v), GP_STATUS_SPARES);
    assert_int_equal(gp_spares_count(v, GP_SPARE_STANDBY), 40);
    gp_free(&v);
    /* the ledger: the incident names its replacement, read back */
    gp_finish(g, S(8), 0);
    assert_int_equal(gp_ledger_flush(g, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/goodput.jsonl", dir);
    size_t len;
    char *text = s_read(path, &len);
    assert_non_null(strstr(text, "\"replaced_by\":\"c\""));
    gp_t *back = gp_ledger_load(text, len, err, sizeof err);
    if (!back)
        fail_msg("%s", err);
    assert_string_equal(gp_incident(back, 0)->replaced_by, "c");
    gp_block(back, 0, txt, sizeof txt);
    assert_non_null(strstr(txt, "replaced by c"));
    free(text);
    gp_free(&back);
    gp_free(&g);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_account),
        cmocka_unit_test(test_supersede),
        cmocka_unit_test(test_ledger_round_trip),
        cmocka_unit_test(test_status_round_trip),
        cmocka_unit_test(test_spares_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
