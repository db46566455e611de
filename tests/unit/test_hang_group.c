/* Unit tests for hang_group: the issue's four-rank hang (three in all_reduce, one odd one out), native stacks that
 * differ only in addresses, group order, ranks without stacks, rank ranges, and the bounds of the summary and the
 * full text. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/hang/hang_group.h"

#define TORCH "/usr/lib/python3/dist-packages/torch/distributed/"

struct s_fr {
    const char *fn, *file;
    int line;
    const char *module;
    unsigned offset;
};

/* A CPython worker: Python frames (current thread) when py is set, native frames in its main thread. */
static struct hang_trace *s_rank(int pid, const struct s_fr *py, const struct s_fr *native)
{
    struct hang_trace *t = hang_trace_new();
    struct hang_proc *p = hang_trace_add_proc(t, pid, 1, pid);
    hang_trace_set(t, &p->comm, "python3", HANG_SHORT_MAX);
    p->python = 1;
    p->threads_total = 2;
    if (py) {
        struct hang_thread *other = hang_trace_add_thread(t, p, 1, 0); /* a loader thread, not current */
        hang_trace_add_frame(t, other, "wait", "/usr/lib/python3.11/threading.py", 327, NULL, 0);
        struct hang_thread *th = hang_trace_add_thread(t, p, 1, 0);
        th->current = 1;
        hang_trace_set(t, &th->id, "0x00007f0000000001", HANG_SHORT_MAX);
        for (; py->fn; py++)
            hang_trace_add_frame(t, th, py->fn, py->file, py->line, NULL, 0);
    }
    struct hang_thread *th = hang_trace_add_thread(t, p, 0, pid);
    for (; native && native->fn; native++)
        hang_trace_add_frame(t, th, native->fn, native->file, native->line, native->module, native->offset);
    return t;
}

static const struct s_fr s_allreduce[] = { { "all_reduce", TORCH "distributed_c10d.py", 2501, NULL, 0 },
                                           { "wrapper", TORCH "c10d_logger.py", 75, NULL, 0 },
                                           { "step", "/home/u/train.py", 40, NULL, 0 },
                                           { "<module>", "/home/u/train.py", 50, NULL, 0 },
                                           { NULL, NULL, 0, NULL, 0 } };
static const struct s_fr s_stuck[] = { { "sleep", "/usr/lib/python3.11/asyncio/tasks.py", 3, NULL, 0 },
                                       { "stuck_here", "/home/u/train.py", 12, NULL, 0 },
                                       { "step", "/home/u/train.py", 38, NULL, 0 },
                                       { NULL, NULL, 0, NULL, 0 } };
static const struct s_fr s_futex[] = { { "__futex_abstimed_wait_common", "futex-internal.c", 57, "libc.so.6", 0x8a1f2 },
                                       { "_PyEval_EvalFrameDefault", "", 0, "libpython3.11.so.1.0", 0x1000 },
                                       { NULL, NULL, 0, NULL, 0 } };

static void test_issue_scenario(void **state)
{
    struct hang_trace *t[4];
    struct hang_rank r[4];
    for (int i = 0; i < 4; i++) {
        t[i] = s_rank(100 + i, i == 2 ? s_stuck : s_allreduce, s_futex);
        r[i] = (struct hang_rank){ .rank = i, .node = i < 2 ? "node-a" : "node-b", .gpu = i % 2 ? "1" : "0",
                                   .pid = 100 + i, .trace = t[i] };
    }
    /* Input order does not matter. */
    struct hang_rank shuffled[4] = { r[3], r[2], r[0], r[1] };
    hang_group_t *g = hang_group_new(shuffled, 4);
    assert_non_null(g);
    assert_int_equal(hang_group_count(g), 2);
    int odd[4];
    assert_int_equal(hang_group_odd(g, odd, 4), 1);
    assert_int_equal(odd[0], 2);
    char *sum = hang_group_summary(g);
    assert_string_equal(sum, "ranks 0-1,3 share stack A (all_reduce in torch/distributed/distributed_c10d.py:2501 <- "
                             "train.py:40); rank 2: stack B (stuck_here in train.py:12) <- the odd one out");
    char *text = hang_group_text(g, 3);
    assert_non_null(text);
    assert_true(strncmp(text, "plaunch hang report, generation 3: 4 ranks, 2 distinct stacks\n\n", 62) == 0);
    assert_non_null(strstr(text, sum));
    assert_non_null(strstr(text, "== stack A: 3 ranks (0-1,3): all_reduce in"));
    assert_non_null(strstr(text, "== stack B: 1 rank (2), the odd one out: stuck_here in train.py:12"));
    assert_non_null(strstr(text, "  rank 3  node node-b  GPU 1  pid 103\n"));
    assert_non_null(strstr(text, "    Python thread 0x00007f0000000001 (current):\n"));
    assert_non_null(strstr(text, "      #1  wrapper  " TORCH "c10d_logger.py:75\n"));
    assert_non_null(strstr(text, "      #0  __futex_abstimed_wait_common  libc.so.6 futex-internal.c:57\n"));
    assert_non_null(strstr(text, "      #1  _PyEval_EvalFrameDefault  libpython3.11.so.1.0 +0x1000\n"));
    assert_true(strstr(text, "== stack A") < strstr(text, "== stack B"));
    free(text);
    free(sum);
    hang_group_destroy(&g);
    hang_group_destroy(&g); /* safe twice */
    for (int i = 0; i < 4; i++)
        hang_trace_destroy(&t[i]);
}

static void test_native(void **state)
{
    /* Same functions, other offsets and lines (a pc moving inside a loop): one group. */
    struct s_fr a[] = { { "pause", "pause.c", 29, "libc.so.6", 0xd3df2 },
                        { "stuck_in_named_function", "tests/tools/pl_stuck.c", 42, "pl_stuck", 0x16ec },
                        { "main", "tests/tools/pl_stuck.c", 98, "pl_stuck", 0x1337 },
                        { NULL, NULL, 0, NULL, 0 } };
    struct s_fr b[4];
    memcpy(b, a, sizeof b);
    b[0].offset = 0xd3e00, b[1].line = 43, b[1].offset = 0x16f0;
    struct s_fr nccl[] = { { "syscall", "", 0, "libc.so.6", 0x10 },
                           { "ncclAllReduce", "", 0, "libnccl.so.2", 0x4242 },
                           { "main", "/src/train.c", 120, "train", 0x99 },
                           { NULL, NULL, 0, NULL, 0 } };
    struct s_fr bare[] = { { "", "", 0, "libcuda.so.1", 0x1234 }, { NULL, NULL, 0, NULL, 0 } };
    struct hang_trace *t[6] = { s_rank(10, NULL, a), s_rank(11, NULL, b), s_rank(12, NULL, nccl),
                                s_rank(13, NULL, nccl), s_rank(14, NULL, nccl), s_rank(15, NULL, bare) };
    struct hang_rank r[6];
    for (int i = 0; i < 6; i++)
        r[i] = (struct hang_rank){ .rank = i, .node = "n", .gpu = "", .pid = 10 + i, .trace = t[i] };
    hang_group_t *g = hang_group_new(r, 6);
    char *sum = hang_group_summary(g);
    assert_string_equal(sum, "ranks 2-4 share stack A (ncclAllReduce in libnccl.so.2 <- train.c:120); ranks 0-1 share "
                             "stack B (stuck_in_named_function in pl_stuck.c:42); rank 5: stack C "
                             "(libcuda.so.1+0x1234) <- the odd one out");
    free(sum);
    char *text = hang_group_text(g, 0);
    assert_non_null(strstr(text, "  rank 0  node n  GPU -  pid 10\n"));
    free(text);
    hang_group_destroy(&g);
    for (int i = 0; i < 6; i++)
        hang_trace_destroy(&t[i]);
}

static void test_order_and_missing(void **state)
{
    /* Groups of 2 (ranks 5,6), 3 (7-9), 2 (1,2): the biggest first, then by their smallest rank; no odd one. */
    struct s_fr f[3][2] = { { { "x", "/a/x.py", 1, NULL, 0 }, { NULL, NULL, 0, NULL, 0 } },
                            { { "y", "/a/y.py", 2, NULL, 0 }, { NULL, NULL, 0, NULL, 0 } },
                            { { "z", "/a/z.py", 3, NULL, 0 }, { NULL, NULL, 0, NULL, 0 } } };
    int ranks[] = { 5, 6, 7, 8, 9, 1, 2, 10, 11 }, which[] = { 0, 0, 1, 1, 1, 2, 2, -1, -1 };
    struct hang_trace *t[9];
    struct hang_rank r[9];
    for (int i = 0; i < 9; i++) {
        t[i] = which[i] >= 0 ? s_rank(100 + i, f[which[i]], NULL) : NULL;
        r[i] = (struct hang_rank){ .rank = ranks[i], .node = "n", .pid = 100 + i, .trace = t[i],
                                   .error = which[i] < 0 ? "node-c was lost before its stacks came" : NULL };
    }
    /* A rank whose capture gave a process and its error but no frames. */
    t[8] = hang_trace_new();
    struct hang_proc *p = hang_trace_add_proc(t[8], 108, 1, 108);
    hang_trace_set(t[8], &p->error, "pid 108: thread 108 did not stop", HANG_ERR_MAX);
    r[8].trace = t[8], r[8].error = NULL;
    hang_group_t *g = hang_group_new(r, 9);
    assert_int_equal(hang_group_count(g), 3);
    int odd[4];
    assert_int_equal(hang_group_odd(g, odd, 4), 0);
    char *sum = hang_group_summary(g);
    assert_string_equal(sum, "ranks 7-9 share stack A (y in y.py:2); ranks 1-2 share stack B (z in z.py:3); ranks 5-6 "
                             "share stack C (x in x.py:1); ranks 10-11: no stack (rank 10: node-c was lost before its "
                             "stacks came)");
    free(sum);
    char *text = hang_group_text(g, 1);
    assert_non_null(strstr(text, "== no stack: 2 ranks\n  rank 10  node n  GPU -  pid 107  node-c was lost"));
    assert_non_null(strstr(text, "    (pid 108: thread 108 did not stop)\n"));
    free(text);
    hang_group_destroy(&g);
    /* Two singles beside a majority: both odd; two ranks apart, or three all different: nobody is. */
    struct hang_rank five[7];
    for (int i = 0; i < 7; i++)
        five[i] = (struct hang_rank){ .rank = i, .node = "n", .pid = 1, .trace = t[i < 5 ? 2 : i == 5 ? 0 : 5] };
    g = hang_group_new(five, 7);
    assert_int_equal(hang_group_odd(g, odd, 4), 2);
    sum = hang_group_summary(g);
    assert_non_null(strstr(sum, "rank 5: stack B (x in x.py:1) <- odd one out; rank 6: stack C (z in z.py:3) <- odd "
                                "one out"));
    free(sum);
    hang_group_destroy(&g);
    struct hang_rank two[2] = { { .rank = 0, .trace = t[0] }, { .rank = 1, .trace = t[2] } };
    g = hang_group_new(two, 2);
    assert_int_equal(hang_group_odd(g, odd, 4), 0);
    hang_group_destroy(&g);
    struct hang_rank three[3] = { { .rank = 0, .trace = t[0] }, { .rank = 1, .trace = t[2] },
                                  { .rank = 2, .trace = t[5] } };
    g = hang_group_new(three, 3);
    assert_int_equal(hang_group_odd(g, odd, 4), 0);
    hang_group_destroy(&g);
    g = hang_group_new(NULL, 0);
    sum = hang_group_summary(g);
    assert_string_equal(sum, "");
    free(sum);
    hang_group_destroy(&g);
    for (int i = 0; i < 9; i++)
        hang_trace_destroy(&t[i]);
}

static void test_ranges(void **state)
{
    char buf[64];
    int a[] = { 9, 3, 4, 5, 4 }, b[] = { 0, 1, 3 }, c[] = { 7 };
    assert_int_equal(hang_group_ranges(a, 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    hang_group_ranges(c, 1, buf, sizeof buf);
    assert_string_equal(buf, "7");
    hang_group_ranges(b, 3, buf, sizeof buf);
    assert_string_equal(buf, "0-1,3");
    hang_group_ranges(a, 5, buf, sizeof buf);
    assert_string_equal(buf, "3-5,9");
    int many[100];
    for (int i = 0; i < 100; i++)
        many[i] = i * 2;
    size_t n = hang_group_ranges(many, 100, buf, 20);
    assert_int_equal(n, strlen(buf));
    assert_true(n < 20);
    assert_string_equal(buf, "0,2,4,6,8,10,12,...");
}

static void test_bounds(void **state)
{
    /* 3000 ranks, each somewhere else, with 40 frames of long names: the summary and the text stay bounded. */
    enum { N = 3000 };
    static struct hang_rank r[N];
    static struct hang_trace *t[N];
    char fn[200], node[32];
    for (int i = 0; i < N; i++) {
        t[i] = hang_trace_new();
        struct hang_proc *p = hang_trace_add_proc(t[i], 1000 + i, 1, 1000 + i);
        struct hang_thread *th = hang_trace_add_thread(t[i], p, 0, 1000 + i);
        for (int k = 0; k < 40; k++) {
            snprintf(fn, sizeof fn, "function_%d_%d_%0150d", i, k, 0);
            hang_trace_add_frame(t[i], th, fn, "/some/where/src/a_rather_long_file_name.cc", k + 1, "libx.so", 1);
        }
        snprintf(node, sizeof node, "node-%d", i);
        r[i] = (struct hang_rank){ .rank = i, .node = strdup(node), .gpu = "0", .pid = 1000 + i, .trace = t[i] };
    }
    hang_group_t *g = hang_group_new(r, N);
    assert_int_equal(hang_group_count(g), N);
    char *sum = hang_group_summary(g);
    assert_true(strlen(sum) < HANG_GROUP_SUMMARY_MAX);
    assert_non_null(strstr(sum, "rank 0: stack A (function_0_0_"));
    free(sum);
    char *text = hang_group_text(g, 2);
    assert_true(strlen(text) < HANG_GROUP_TEXT_MAX);
    assert_non_null(strstr(text, "were left out to keep this file under"));
    assert_non_null(strstr(text, "  rank 2999  node node-2999  GPU 0  pid 3999\n")); /* every rank is listed */
    free(text);
    hang_group_destroy(&g);
    for (int i = 0; i < N; i++) {
        free((char *)r[i].node);
        hang_trace_destroy(&t[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_scenario),
        cmocka_unit_test(test_native),
        cmocka_unit_test(test_order_and_missing),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
