/* Unit tests for console: a stdout nobody reads never blocks; lines are dropped whole, counted, and the gap is
 * reported in the stream when the reader is back (or on stderr at the end); a regular file gets every line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/console.h"
#include "common/loop.h"

static int s_saved_out = -1, s_saved_err = -1;
static char s_errpath[64];

/* fd 1 becomes the write end of a new pipe (returned: its read end, non-blocking); fd 2 a temporary file. */
static int s_redirect(void)
{
    int p[2];
    fflush(stdout);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    snprintf(s_errpath, sizeof s_errpath, "/tmp/plaunch-test-console-XXXXXX");
    int e = mkstemp(s_errpath);
    assert_true(e >= 0);
    s_saved_out = dup(1);
    s_saved_err = dup(2);
    dup2(p[1], 1);
    dup2(e, 2);
    close(p[1]);
    close(e);
    return p[0];
}

static void s_restore(void)
{
    dup2(s_saved_out, 1);
    dup2(s_saved_err, 2);
    close(s_saved_out);
    close(s_saved_err);
}

/* What went to fd 2 (static buffer); removes the file. */
static const char *s_stderr_text(void)
{
    static char buf[4096];
    FILE *f = fopen(s_errpath, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    unlink(s_errpath);
    return buf;
}

/* Reads what the pipe holds now into a growing buffer. */
static size_t s_read_all(int fd, char **buf, size_t len)
{
    for (;;) {
        *buf = realloc(*buf, len + 65536 + 1);
        ssize_t n = read(fd, *buf + len, 65536);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    (*buf)[len] = '\0';
    return len;
}

static size_t s_count(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void s_put_lines(int from, int count)
{
    char line[128];
    for (int i = from; i < from + count; i++) {
        int n = snprintf(line, sizeof line, "line %06d %080d\n", i, 0);
        console_put(1, line, (size_t)n);
    }
}

static void test_stalled_pipe_never_blocks(void **state)
{
    int rd = s_redirect();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    s_put_lines(0, 100000); /* 9.6 MB into a 64 KiB pipe that nobody reads */
    char summary[256];
    uint64_t dropped = console_finish(50, summary, sizeof summary);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char *got = NULL;
    s_read_all(rd, &got, 0);
    close(rd);
    s_restore();
    const char *err = s_stderr_text();
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs < 5.0);
    size_t through = s_count(got, "line ");
    assert_true(through > 0 && dropped > 0);
    assert_int_equal(through + dropped, 100000);
    assert_non_null(strstr(err, "console lines dropped (stdout was not read)"));
    assert_non_null(strstr(summary, "console lines dropped on stdout (not read)"));
    /* whole lines only: every line that got through is complete */
    assert_int_equal(s_count(got, "\n"), through);
    free(got);
}

static int s_stop(loop_t *loop, int id, void *arg)
{
    loop_stop(loop);
    return 0;
}

static void test_notice_where_lines_are_missing(void **state)
{
    int rd = s_redirect();
    console_set_hint(1, "every line is in L/workerlog.N");
    s_put_lines(0, 20000);
    char *got = NULL;
    size_t len = s_read_all(rd, &got, 0);
    loop_t *loop = loop_new();
    console_attach(loop);
    /* The reader is back: the loop hands it the queue, then the notice, then what comes next. */
    for (int i = 0; i < 100; i++) {
        len = s_read_all(rd, &got, len);
        loop_timer_after_ms(loop, 1, s_stop, NULL);
        loop_run(loop);
    }
    s_put_lines(50000, 1);
    len = s_read_all(rd, &got, len);
    char summary[256];
    console_finish(50, summary, sizeof summary);
    console_set_hint(1, "");
    loop_destroy(&loop);
    close(rd);
    s_restore();
    s_stderr_text();
    const char *note = strstr(got, "plaunch: ");
    assert_non_null(note);
    assert_non_null(strstr(note, "console lines dropped (stdout was not read); every line is in L/workerlog.N\n"));
    assert_non_null(strstr(note, "\nline 050000 "));
    assert_null(strstr(note, "\nline 019999 ")); /* the last lines were dropped: nothing of them after the notice */
    free(got);
}

static void test_regular_file_gets_every_line(void **state)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/plaunch-test-console-XXXXXX");
    int f = mkstemp(path);
    assert_true(f >= 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(f, 1);
    s_put_lines(0, 20000);
    char summary[256];
    uint64_t dropped = console_finish(50, summary, sizeof summary);
    dup2(saved, 1);
    close(saved);
    off_t size = lseek(f, 0, SEEK_END);
    close(f);
    unlink(path);
    assert_int_equal(dropped, 0);
    assert_int_equal(size, 20000 * 93);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stalled_pipe_never_blocks),
        cmocka_unit_test(test_notice_where_lines_are_missing),
        cmocka_unit_test(test_regular_file_gets_every_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
