/* Unit tests for hang_json: a rank's stacks survive the trip to the coordinator exactly, a big trace is cut to its
 * bound keeping the main threads, and hostile JSON (wrong types, unknown keys, long strings, control characters,
 * too many threads or frames, numbers out of range, duplicates, another version) is refused by name. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/hang/hang_json.h"

/* A python3 worker (pid 100) under a shell (pid 99): native threads of both, Python threads of the first. */
static struct hang_trace *s_sample(void)
{
    struct hang_trace *t = hang_trace_new();
    struct hang_proc *sh = hang_trace_add_proc(t, 99, 98, 99);
    hang_trace_set(t, &sh->comm, "sh", HANG_SHORT_MAX);
    hang_trace_set(t, &sh->state, "S", HANG_SHORT_MAX);
    sh->threads_total = 1;
    struct hang_thread *th = hang_trace_add_thread(t, sh, 0, 99);
    hang_trace_add_frame(t, th, "wait4", "../sysdeps/unix/sysv/linux/wait4.c", 30, "libc.so.6", 0xe1234);
    struct hang_proc *p = hang_trace_add_proc(t, 100, 99, 99);
    hang_trace_set(t, &p->comm, "python3", HANG_SHORT_MAX);
    hang_trace_set(t, &p->exe, "/usr/bin/python3.11", HANG_STR_MAX);
    hang_trace_set(t, &p->state, "S", HANG_SHORT_MAX);
    hang_trace_set(t, &p->error, "", HANG_ERR_MAX);
    p->python = 1;
    p->threads_total = 3;
    th = hang_trace_add_thread(t, p, 0, 100);
    hang_trace_set(t, &th->name, "python3", HANG_SHORT_MAX);
    hang_trace_set(t, &th->state, "S", HANG_SHORT_MAX);
    hang_trace_set(t, &th->wchan, "futex_wait_queue", HANG_SHORT_MAX);
    hang_trace_add_frame(t, th, "__futex_abstimed_wait_common", "futex-internal.c", 57, "libc.so.6", 0x8a1f2);
    hang_trace_add_frame(t, th, "gloo::transport::tcp::UnboundBuffer::waitRecv(int*, std::chrono::duration<long, "
                         "std::ratio<1l, 1000l> >)", "", 0, "libtorch_cpu.so", 0x1234567);
    hang_trace_add_frame(t, th, "", "", 0, "libtorch_python.so", 77);
    th = hang_trace_add_thread(t, p, 0, 101);
    hang_trace_set(t, &th->error, "thread 101 did not stop before the deadline (state D)", HANG_ERR_MAX);
    th->cut = 1;
    hang_trace_set(t, &p->py_source, "faulthandler", HANG_SHORT_MAX);
    hang_trace_set(t, &p->py_error, "", HANG_ERR_MAX);
    th = hang_trace_add_thread(t, p, 1, 0);
    hang_trace_set(t, &th->id, "0x00007f0000000001", HANG_SHORT_MAX);
    th->current = 1;
    hang_trace_add_frame(t, th, "all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
                         2501, NULL, 0);
    hang_trace_add_frame(t, th, "<module>", "train.py", 40, NULL, 0);
    th = hang_trace_add_thread(t, p, 1, 0);
    hang_trace_set(t, &th->id, "0x00007f0000000002", HANG_SHORT_MAX);
    hang_trace_set(t, &th->name, "pin_memory", HANG_SHORT_MAX);
    return t;
}

static void s_same_thread(const struct hang_thread *a, const struct hang_thread *b)
{
    assert_int_equal(a->tid, b->tid);
    assert_string_equal(a->id, b->id);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->state, b->state);
    assert_string_equal(a->wchan, b->wchan);
    assert_string_equal(a->error, b->error);
    assert_int_equal(a->current, b->current);
    assert_int_equal(a->cut, b->cut);
    assert_int_equal(a->nframes, b->nframes);
    for (int i = 0; i < a->nframes; i++) {
        assert_string_equal(a->frames[i].fn, b->frames[i].fn);
        assert_string_equal(a->frames[i].file, b->frames[i].file);
        assert_string_equal(a->frames[i].module, b->frames[i].module);
        assert_int_equal(a->frames[i].line, b->frames[i].line);
        assert_int_equal(a->frames[i].offset, b->frames[i].offset);
    }
}

static void test_round_trip(void **state)
{
    struct hang_trace *in = s_sample();
    struct hang_json_rank who = { .rank = 7, .node = "node-b", .gpu = "GPU-7f2c", .pid = 99, .error = "" };
    char *text = hang_json_encode(in, &who, HANG_JSON_RANK_MAX);
    assert_non_null(text);
    assert_true(strlen(text) <= HANG_JSON_RANK_MAX);
    const char head[] = "{\"v\":1,\"rank\":7,\"node\":\"node-b\",\"gpu\":\"GPU-7f2c\",\"pid\":99,\"procs\":";
    assert_true(strncmp(text, head, sizeof head - 1) == 0);
    assert_null(strstr(text, "\"cut\":\"")); /* nothing dropped (a thread's "cut":true is its own) */
    struct hang_json_rank back;
    int has = 0;
    char err[256] = "";
    struct hang_trace *out = hang_json_decode(text, strlen(text), &back, &has, err, sizeof err);
    assert_non_null(out);
    assert_true(has);
    assert_int_equal(back.rank, 7);
    assert_string_equal(back.node, "node-b");
    assert_string_equal(back.gpu, "GPU-7f2c");
    assert_int_equal(back.pid, 99);
    assert_int_equal(out->nprocs, 2);
    for (int i = 0; i < 2; i++) {
        const struct hang_proc *a = &in->procs[i], *b = &out->procs[i];
        assert_int_equal(a->pid, b->pid);
        assert_int_equal(a->ppid, b->ppid);
        assert_int_equal(a->root, b->root);
        assert_string_equal(a->comm, b->comm);
        assert_string_equal(a->exe, b->exe);
        assert_string_equal(a->state, b->state);
        assert_string_equal(a->py_source, b->py_source);
        assert_int_equal(a->python, b->python);
        assert_int_equal(a->threads_total, b->threads_total);
        assert_int_equal(a->nthreads, b->nthreads);
        assert_int_equal(a->npy, b->npy);
        for (int k = 0; k < a->nthreads; k++)
            s_same_thread(&a->threads[k], &b->threads[k]);
        for (int k = 0; k < a->npy; k++)
            s_same_thread(&a->py[k], &b->py[k]);
    }
    /* The same document again, byte for byte. */
    char *again = hang_json_encode(out, &back, HANG_JSON_RANK_MAX);
    assert_string_equal(text, again);
    free(again);
    free(text);
    hang_trace_destroy(&out);
    /* Without rank keys (what __stacks prints): none come back. */
    text = hang_json_encode(in, NULL, 0);
    out = hang_json_decode(text, strlen(text), &back, &has, err, sizeof err);
    assert_non_null(out);
    assert_false(has);
    free(text);
    hang_trace_destroy(&out);
    hang_trace_destroy(&in);
}

/* 16 processes of 64 threads of 48 frames: far past 16 KiB (and within the trace's string budget). */
static struct hang_trace *s_big(void)
{
    struct hang_trace *t = hang_trace_new();
    char fn[300];
    for (int p = 0; p < HANG_TREE_MAX; p++) {
        struct hang_proc *pr = hang_trace_add_proc(t, 1000 + p, p ? 1000 : 1, 1000);
        pr->python = p == 0;
        pr->threads_total = 200;
        hang_trace_set(t, &pr->comm, p ? "pt_data_worker" : "python3", HANG_SHORT_MAX);
        for (int k = 0; k < HANG_THREADS_MAX; k++) {
            struct hang_thread *th = hang_trace_add_thread(t, pr, 0, k ? 5000 + p * 100 + k : 1000 + p);
            for (int f = 0; f < HANG_FRAMES_MAX; f++) {
                snprintf(fn, sizeof fn, "c10d::ProcessGroupGloo::AsyncWork::run_%d_%d", k, f);
                hang_trace_add_frame(t, th, fn, "std_function.h", 590 + f,
                                     "libtorch_cpu.so", 0x100000u + (unsigned)f);
            }
        }
        if (p == 0)
            for (int k = 0; k < 4; k++) {
                struct hang_thread *th = hang_trace_add_thread(t, pr, 1, 0);
                th->current = k == 2;
                for (int f = 0; f < HANG_FRAMES_MAX; f++)
                    hang_trace_add_frame(t, th, k == 2 && f == 0 ? "load_batch" : "inner", "data.py", f + 1, NULL, 0);
            }
    }
    return t;
}

static void test_bounded(void **state)
{
    struct hang_trace *in = s_big();
    struct hang_json_rank who = { .rank = 3, .node = "n", .gpu = "", .pid = 1000 };
    char err[256];
    size_t bounds[] = { HANG_JSON_MIN, 4096, HANG_JSON_RANK_MAX, 64u << 10, 256u << 10 };
    int last_frames = 0;
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        char *text = hang_json_encode(in, &who, bounds[b]);
        assert_non_null(text);
        assert_true(strlen(text) <= bounds[b]);
        assert_non_null(strstr(text, "\"cut\":\""));
        struct hang_trace *out = hang_json_decode(text, strlen(text), NULL, NULL, err, sizeof err);
        assert_non_null(out);
        assert_true(out->cut[0] != '\0');
        /* The main process stays, its main threads keep the most frames, and more room never keeps fewer. */
        if (bounds[b] >= 4096) {
            assert_true(out->nprocs >= 1);
            assert_int_equal(out->procs[0].pid, 1000);
            assert_int_equal(out->procs[0].threads_total, 200);
            const struct hang_proc *p = &out->procs[0];
            int mp = hang_trace_main_python(p);
            assert_true(mp >= 0);
            assert_string_equal(p->py[mp].frames[0].fn, "load_batch");
            assert_true(p->py[mp].nframes >= last_frames);
            last_frames = p->py[mp].nframes;
            assert_int_equal(p->threads[hang_trace_main_native(p)].tid, 1000);
        }
        hang_trace_destroy(&out);
        free(text);
    }
    assert_int_equal(last_frames, HANG_FRAMES_MAX);
    assert_null(hang_json_encode(in, &who, HANG_JSON_MIN - 1));
    char *all = hang_json_encode(in, &who, 0);
    assert_true(strlen(all) > (1u << 20));
    struct hang_trace *out = hang_json_decode(all, strlen(all), NULL, NULL, err, sizeof err);
    assert_non_null(out);
    assert_int_equal(out->nprocs, HANG_TREE_MAX);
    assert_int_equal(out->procs[5].nthreads, HANG_THREADS_MAX);
    assert_int_equal(out->procs[5].threads[9].nframes, HANG_FRAMES_MAX);
    hang_trace_destroy(&out);
    free(all);
    /* Stripped (what __stacks does past its bound): threads without frames, then headers alone. */
    hang_trace_strip(in, 1);
    assert_int_equal(in->procs[3].nthreads, HANG_THREADS_MAX);
    assert_int_equal(in->procs[3].threads[7].nframes, 0);
    assert_true(in->procs[3].threads[7].cut);
    assert_int_equal(in->procs[0].py[2].nframes, 0);
    hang_trace_strip(in, 0);
    assert_int_equal(in->procs[3].nthreads + in->procs[0].npy, 0);
    assert_int_equal(in->procs[3].threads_total, 200);
    all = hang_json_encode(in, NULL, 0);
    assert_true(strlen(all) < HANG_TREE_MAX * 200);
    free(all);
    hang_trace_destroy(&in);
}

static void s_refused(const char *text, const char *why)
{
    char err[512] = "";
    struct hang_trace *t = hang_json_decode(text, strlen(text), NULL, NULL, err, sizeof err);
    if (t || !strstr(err, why))
        fail_msg("'%s': expected a refusal naming '%s', got '%s'", text, why, t ? "accepted" : err);
}

/* prefix, then n objects {"key":1}, {"key":2}, ..., then suffix: refused naming why. */
static void s_refused_many(char *big, size_t cap, const char *prefix, const char *key, int n, const char *suffix,
                           const char *why)
{
    int o = snprintf(big, cap, "%s", prefix);
    for (int i = 0; i < n; i++)
        o += snprintf(big + o, cap - (size_t)o, "%s{\"%s\":%d}", i ? "," : "", key, i + 1);
    snprintf(big + o, cap - (size_t)o, "%s", suffix);
    s_refused(big, why);
}

static void test_hostile(void **state)
{
    s_refused("", "not JSON");
    s_refused("[]", "document: expected an object, found an array");
    s_refused("{\"procs\":[]}", "document.v: expected an integer, found nothing");
    s_refused("{\"v\":2,\"procs\":[]}", "document.v: 2 is out of range [1, 1]");
    s_refused("{\"v\":1,\"procs\":[],\"x\":1}", "document: unknown key 'x'");
    s_refused("{\"v\":1,\"v\":1}", "not JSON");                         /* a duplicate key */
    s_refused("{\"v\":1,\"procs\":{}}", "document.procs: expected an array");
    s_refused("{\"v\":1,\"procs\":[1]}", "procs[0]: expected an object, found an integer");
    s_refused("{\"v\":1,\"procs\":[{}]}", "procs[0].pid: expected an integer, found nothing");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":0}]}", "procs[0].pid: 0 is out of range");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":-5}]}", "out of range");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":99999999999}]}", "out of range");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1.5}]}", "expected an integer, found a real");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1},{\"pid\":1}]}", "process 1 appears twice");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1,\"comm\":7}]}", "procs[0].comm: expected a string, found an integer");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1,\"comm\":\"a\\u0000b\"}]}", "not JSON"); /* jansson refuses NUL */
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1,\"comm\":\"a\\nb\"}]}", "without control characters");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1,\"python\":1}]}", "procs[0].python: expected true or false");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1,\"threads\":[{\"tid\":1,\"frames\":[{\"fn\":\"f\",\"evil\":1}]}]}]}",
              "procs[0].threads[0].frames[0]: unknown key 'evil'");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1,\"py_threads\":[{\"tid\":0,\"frames\":[{\"module\":\"m\"}]}]}]}",
              "procs[0].py_threads[0].frames[0]: unknown key 'module'");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1,\"threads\":[{\"tid\":1,\"frames\":[{\"line\":-1}]}]}]}",
              "frames[0].line: -1 is out of range");
    s_refused("{\"v\":1,\"procs\":[{\"pid\":1,\"threads\":[{\"frames\":[]}]}]}", "threads[0].tid: expected an integer");
    s_refused("{\"v\":1,\"rank\":1,\"procs\":[]}", "document.pid: expected an integer, found nothing");
    s_refused("{\"v\":1,\"rank\":1,\"pid\":2,\"procs\":[]}", "document.node: missing or empty");
    s_refused("{\"v\":1,\"rank\":70000,\"pid\":2,\"node\":\"n\",\"procs\":[]}", "document.rank: 70000 is out of range");
    s_refused("{\"v\":1,\"node\":\"n\",\"procs\":[]}", "come only with rank");
    /* Strings past their bound, arrays past theirs. */
    size_t cap = 4u << 20;
    char *big = malloc(cap);
    int o = snprintf(big, cap, "{\"v\":1,\"procs\":[{\"pid\":1,\"comm\":\"");
    memset(big + o, 'c', HANG_SHORT_MAX);
    snprintf(big + o + HANG_SHORT_MAX, cap - (size_t)o - HANG_SHORT_MAX, "\"}]}");
    s_refused(big, "procs[0].comm: a string of 128 bytes; at most 127");
    s_refused_many(big, cap, "{\"v\":1,\"procs\":[{\"pid\":1,\"threads\":[", "tid", HANG_THREADS_MAX + 1, "]}]}",
                   "procs[0].threads: expected an array of at most 64");
    s_refused_many(big, cap, "{\"v\":1,\"procs\":[{\"pid\":1,\"threads\":[{\"tid\":1,\"frames\":[", "line",
                   HANG_FRAMES_MAX + 1, "]}]}]}", "procs[0].threads[0].frames: expected an array of at most 48");
    s_refused_many(big, cap, "{\"v\":1,\"procs\":[", "pid", HANG_PROCS_MAX + 1, "]}",
                   "document.procs: expected an array of at most 1024");
    /* Deep nesting and a document past HANG_JSON_MAX. */
    memset(big, '[', cap - 1);
    big[cap - 1] = '\0';
    s_refused(big, "not JSON");
    free(big);
    char err[128];
    assert_null(hang_json_decode("{}", HANG_JSON_MAX + 1, NULL, NULL, err, sizeof err));
    assert_non_null(strstr(err, "at most"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
