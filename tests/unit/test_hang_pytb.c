/* Unit tests for hang_pytb: faulthandler dumps as CPython 3.11 writes them, cut at either end, interleaved with
 * other output, after a plaunch generation marker, past the bounds, and garbage. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/hang/hang_pytb.h"

/* A real dump (python3.11, PYTHONFAULTHANDLER=1, SIGABRT), after a line of the program's own output. */
static const char s_dump[] =
    "step 41 loss 0.25\n"
    "Fatal Python error: Aborted\n"
    "\n"
    "Thread 0x00007fc9e73496c0 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 327 in wait\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 629 in wait\n"
    "  File \"/tmp/stuck.py\", line 4 in worker_waits_here\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 982 in run\n"
    "\n"
    "Current thread 0x00007fc9e80acb80 (most recent call first):\n"
    "  File \"/tmp/data.py\", line 88 in load_batch\n"
    "  File \"/tmp/train.py\", line 14 in <module>\n"
    "\n"
    "Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n";

struct s_parsed {
    struct hang_trace *t;
    struct hang_proc *p;
    int n;
};

static struct s_parsed s_parse(const char *buf, size_t len)
{
    struct s_parsed r;
    r.t = hang_trace_new();
    assert_non_null(r.t);
    r.p = hang_trace_add_proc(r.t, 4242, 1, 4242);
    assert_non_null(r.p);
    r.n = hang_pytb_parse(r.t, r.p, buf, len);
    return r;
}

static void s_frame_is(const struct hang_thread *th, int i, const char *fn, const char *file, int line)
{
    assert_true(i < th->nframes);
    assert_string_equal(th->frames[i].fn, fn);
    assert_string_equal(th->frames[i].file, file);
    assert_int_equal(th->frames[i].line, line);
    assert_string_equal(th->frames[i].module, "");
}

static void test_good(void **state)
{
    struct s_parsed r = s_parse(s_dump, strlen(s_dump));
    assert_int_equal(r.n, 2);
    assert_int_equal(r.p->npy, 2);
    assert_string_equal(r.p->py_source, "faulthandler");
    assert_string_equal(r.p->py_error, "");
    const struct hang_thread *a = &r.p->py[0], *b = &r.p->py[1];
    assert_string_equal(a->id, "0x00007fc9e73496c0");
    assert_false(a->current);
    assert_int_equal(a->nframes, 4);
    s_frame_is(a, 0, "wait", "/usr/lib/python3.11/threading.py", 327);
    s_frame_is(a, 2, "worker_waits_here", "/tmp/stuck.py", 4);
    assert_string_equal(b->id, "0x00007fc9e80acb80");
    assert_true(b->current);
    assert_int_equal(b->nframes, 2);
    s_frame_is(b, 0, "load_batch", "/tmp/data.py", 88);
    s_frame_is(b, 1, "<module>", "/tmp/train.py", 14);
    assert_int_equal(hang_trace_main_python(r.p), 1);
    /* Parsing again replaces, never appends. */
    assert_int_equal(hang_pytb_parse(r.t, r.p, s_dump, strlen(s_dump)), 2);
    assert_int_equal(r.p->npy, 2);
    hang_trace_destroy(&r.t);
    /* A single-thread dump (faulthandler.dump_traceback(all_threads=False)), CRLF line ends, ??? fields. */
    const char one[] = "Fatal Python error: Segmentation fault\r\n\r\nStack (most recent call first):\r\n"
                       "  File \"a.py\", line ??? in f\r\n  File ???, line 3 in ???\r\n";
    r = s_parse(one, sizeof one - 1);
    assert_int_equal(r.n, 1);
    assert_true(r.p->py[0].current);
    assert_int_equal(r.p->py[0].nframes, 2);
    s_frame_is(&r.p->py[0], 0, "f", "a.py", 0);
    s_frame_is(&r.p->py[0], 1, "???", "???", 3);
    hang_trace_destroy(&r.t);
}

static void test_truncated(void **state)
{
    /* Cut at the start (the log tail began inside the first thread): the threads that are whole still count. */
    const char *from = strstr(s_dump, "line 629");
    struct s_parsed r = s_parse(from, strlen(from));
    assert_int_equal(r.n, 1);
    assert_true(r.p->py[0].current);
    s_frame_is(&r.p->py[0], 0, "load_batch", "/tmp/data.py", 88);
    hang_trace_destroy(&r.t);
    /* Cut at the end inside a frame line: that line is not trusted (it could read "load_ba"). */
    size_t cut = (size_t)(strstr(s_dump, "load_batch") - s_dump) + 7;
    r = s_parse(s_dump, cut);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.p->py[1].nframes, 0);
    hang_trace_destroy(&r.t);
    /* faulthandler's own limits: "  ..." after 100 frames, "..." after 100 threads. */
    const char lim[] = "Fatal Python error: Aborted\n\nThread 0x1 (most recent call first):\n"
                       "  File \"x.py\", line 1 in f\n  ...\n\n...\n";
    r = s_parse(lim, sizeof lim - 1);
    assert_int_equal(r.n, 1);
    assert_true(r.p->py[0].cut);
    assert_non_null(strstr(r.p->py_error, "faulthandler stopped at its own limit"));
    hang_trace_destroy(&r.t);
    /* Nothing but a header line cut in the middle. */
    r = s_parse("Fatal Python error: Abor", 24);
    assert_int_equal(r.n, 0);
    assert_int_equal(r.p->npy, 0);
    hang_trace_destroy(&r.t);
}

static void test_interleaved_and_generations(void **state)
{
    /* Another thread's output lands between the frame lines: skipped, frames still belong to their thread. */
    const char mixed[] = "Fatal Python error: Aborted\n\nCurrent thread 0x00000000000000aa (most recent call first):\n"
                         "  File \"t.py\", line 5 in inner\n"
                         "[rank 3] loss=nan\n"
                         "  File with spaces but no quotes, line 9 in nothing\n"
                         "  File \"t.py\", line 9\n"
                         "\n"
                         "  File \"t.py\", line 20 in outer\n";
    struct s_parsed r = s_parse(mixed, sizeof mixed - 1);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.p->py[0].nframes, 2);
    s_frame_is(&r.p->py[0], 0, "inner", "t.py", 5);
    s_frame_is(&r.p->py[0], 1, "outer", "t.py", 20);
    hang_trace_destroy(&r.t);
    /* Two dumps: the last one counts. */
    char two[4096];
    snprintf(two, sizeof two, "%s%s", s_dump,
             "Fatal Python error: Aborted\n\nCurrent thread 0x2 (most recent call first):\n"
             "  File \"later.py\", line 7 in again\n");
    r = s_parse(two, strlen(two));
    assert_int_equal(r.n, 1);
    s_frame_is(&r.p->py[0], 0, "again", "later.py", 7);
    hang_trace_destroy(&r.t);
    /* A dump followed by the marker of a later generation is that earlier generation's: not this hang. */
    snprintf(two, sizeof two, "%s%s", s_dump,
             "==== plaunch: job j generation 1 (restart 1 of 3) rank 0 pid 99 started ====\nstep 1\n");
    r = s_parse(two, strlen(two));
    assert_int_equal(r.n, 0);
    hang_trace_destroy(&r.t);
    /* A path holding ", line " and a name holding " in ". */
    const char odd[] = "Fatal Python error: Aborted\n\nCurrent thread 0x3 (most recent call first):\n"
                       "  File \"/x/a, line 2/b.py\", line 11 in f in g\n";
    r = s_parse(odd, sizeof odd - 1);
    assert_int_equal(r.n, 1);
    s_frame_is(&r.p->py[0], 0, "f in g", "/x/a, line 2/b.py", 11);
    hang_trace_destroy(&r.t);
}

static void test_bounds_and_garbage(void **state)
{
    /* 70 threads of 60 frames: 64 threads kept of 48 frames each, cut marked. */
    size_t cap = 1 << 20, o = 0;
    char *big = malloc(cap);
    o += (size_t)snprintf(big + o, cap - o, "Fatal Python error: Aborted\n\n");
    for (int t = 0; t < 70; t++) {
        o += (size_t)snprintf(big + o, cap - o, "Thread 0x%016x (most recent call first):\n", t + 1);
        for (int f = 0; f < 60; f++)
            o += (size_t)snprintf(big + o, cap - o, "  File \"m%d.py\", line %d in fn_%d\n", t, f + 1, f);
        o += (size_t)snprintf(big + o, cap - o, "\n");
    }
    struct s_parsed r = s_parse(big, o);
    assert_int_equal(r.n, HANG_PY_THREADS_MAX);
    assert_int_equal(r.p->py[63].nframes, HANG_FRAMES_MAX);
    assert_true(r.p->py[63].cut);
    s_frame_is(&r.p->py[63], 47, "fn_47", "m63.py", 48);
    assert_non_null(strstr(r.p->py_error, "more Python threads than the 64 kept"));
    hang_trace_destroy(&r.t);
    /* A frame line of 100 KiB: its strings are cut to their bound, with "...". */
    o = (size_t)snprintf(big, cap, "Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n"
                         "  File \"");
    memset(big + o, 'p', 100000);
    o += 100000;
    o += (size_t)snprintf(big + o, cap - o, "\", line 3 in ");
    memset(big + o, 'n', 50000);
    o += 50000;
    big[o++] = '\n';
    r = s_parse(big, o);
    assert_int_equal(r.n, 1);
    assert_int_equal(strlen(r.p->py[0].frames[0].file), HANG_STR_MAX - 1);
    assert_non_null(strstr(r.p->py[0].frames[0].fn, "nnn..."));
    hang_trace_destroy(&r.t);
    /* Random bytes, NULs and control characters: no crash, nothing found, or only sanitised strings. */
    unsigned seed = 12345;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(rand_r(&seed) % 4096);
        o = 0;
        for (size_t i = 0; i < n; i++)
            big[i] = (char)(rand_r(&seed) % 7 == 0 ? '\n' : rand_r(&seed) % 256);
        if (round % 3 == 0) /* a header and a frame line among the garbage */
            o = (size_t)snprintf(big + n / 2, cap - n, "\nThread 0x1f (most recent call first):\n  File \"\x01\xff"
                                 "z\", line 1 in \x7f\n") + n / 2;
        r = s_parse(big, n > o ? n : o);
        assert_true(r.n >= 0 && r.n <= HANG_PY_THREADS_MAX);
        for (int k = 0; k < r.p->npy; k++)
            for (int f = 0; f < r.p->py[k].nframes; f++)
                for (const char *c = r.p->py[k].frames[f].file; *c; c++)
                    assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
        hang_trace_destroy(&r.t);
    }
    free(big);
    /* Nothing at all. */
    r = s_parse("", 0);
    assert_int_equal(r.n, 0);
    hang_trace_destroy(&r.t);
}

static void test_attach(void **state)
{
    char err[256];
    struct hang_trace *t = hang_trace_new();
    /* An empty trace: a process is made for the pid. */
    assert_int_equal(hang_pytb_attach(t, 77, s_dump, strlen(s_dump), err, sizeof err), 2);
    assert_int_equal(t->nprocs, 1);
    assert_int_equal(t->procs[0].pid, 77);
    hang_trace_destroy(&t);
    /* A shell wrapping python: the CPython process gets it when the pid is not known. */
    t = hang_trace_new();
    hang_trace_add_proc(t, 10, 1, 10);
    struct hang_proc *py = hang_trace_add_proc(t, 11, 10, 10);
    py->python = 1;
    assert_int_equal(hang_pytb_attach(t, 0, s_dump, strlen(s_dump), err, sizeof err), 2);
    assert_int_equal(t->procs[1].npy, 2);
    assert_int_equal(t->procs[0].npy, 0);
    assert_int_equal(hang_trace_primary(t), 1);
    /* The pid named wins. */
    assert_int_equal(hang_pytb_attach(t, 10, s_dump, strlen(s_dump), err, sizeof err), 2);
    assert_int_equal(t->procs[0].npy, 2);
    hang_trace_destroy(&t);
    /* Nothing to attach to. */
    t = hang_trace_new();
    assert_int_equal(hang_pytb_attach(t, 0, s_dump, strlen(s_dump), err, sizeof err), -1);
    assert_non_null(strstr(err, "no process"));
    hang_trace_destroy(&t);
}

static void test_attach_fd(void **state)
{
    char path[] = "/tmp/plaunch-pytb-XXXXXX", err[256];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    /* 3 MiB of a program's output, then the dump: the tail alone is read. */
    char junk[4096];
    memset(junk, 'x', sizeof junk);
    junk[sizeof junk - 1] = '\n';
    for (int i = 0; i < 768; i++)
        assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    assert_int_equal(write(fd, s_dump, strlen(s_dump)), (ssize_t)strlen(s_dump));
    struct hang_trace *t = hang_trace_new();
    assert_int_equal(hang_pytb_attach_fd(t, 5, fd, 64u << 10, err, sizeof err), 2);
    assert_string_equal(t->procs[0].py[1].frames[0].fn, "load_batch");
    /* A tail too short for the dump's start still finds its last thread. */
    assert_int_equal(hang_pytb_attach_fd(t, 5, fd, 240, err, sizeof err), 1);
    assert_int_equal(lseek(fd, 0, SEEK_CUR), 768 * 4096 + (off_t)strlen(s_dump)); /* the offset is not moved */
    close(fd);
    /* A pipe is refused, not read (it could block). */
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(hang_pytb_attach_fd(t, 5, p[0], 4096, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a regular file"));
    close(p[0]);
    close(p[1]);
    hang_trace_destroy(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_interleaved_and_generations),
        cmocka_unit_test(test_bounds_and_garbage),
        cmocka_unit_test(test_attach),
        cmocka_unit_test(test_attach_fd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
