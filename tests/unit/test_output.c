/* Unit tests for output: worker pipe bytes into workerlog.<rank>, markers, the failure tail and --tee lines. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/console.h"
#include "launcher/supervisor/output.h"

static char s_dir[64];
static struct job s_job;
static struct worker s_w;

/* A fresh log directory and one worker, rank 3, with its log opened for generation 0. */
static int s_setup(void **state)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/plaunch-test-output-XXXXXX");
    if (!mkdtemp(s_dir))
        return -1;
    memset(&s_job, 0, sizeof s_job);
    s_w = (struct worker){ .local_rank = 0, .rank = 3, .pid = 4242, .out_fd = -1, .err_fd = -1, .exec_fd = -1, .log_fd = -1 };
    s_job.node.nworkers = 1;
    s_job.workers = &s_w;
    ((struct opts *)&s_job.opt)->max_restarts = 2; /* jobsetup_init's one write, by hand */
    snprintf(s_job.node.job_id, sizeof s_job.node.job_id, "jobt");
    snprintf(s_job.node.log_dir, sizeof s_job.node.log_dir, "%s", s_dir);
    char err[512];
    return output_open_logs(&s_job, err, sizeof err);
}

static int s_teardown(void **state)
{
    char cmd[128];
    output_close_logs(&s_job);
    assert_int_equal(s_w.log_fd, -1);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The whole log file; *len gets its size. Caller frees. */
static char *s_read_log(size_t *len)
{
    char path[128];
    snprintf(path, sizeof path, "%s/workerlog.3", s_dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 18];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char *copy = malloc(*len + 1);
    memcpy(copy, buf, *len);
    copy[*len] = '\0';
    return copy;
}

/* Hands data to the worker's pipe as the worker would; the write end is closed unless keep_open. */
static int s_worker_writes(const void *data, size_t len, int keep_open)
{
    int fds[2];
    assert_true(len <= 60000); /* below the pipe's capacity: no reader needed while writing */
    assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(write(fds[1], data, len), (ssize_t)len);
    s_w.out_fd = fds[0];
    if (keep_open)
        return fds[1];
    close(fds[1]);
    return -1;
}

/* Writes data through a pipe and pumps it to EOF, leaving the partial tee line in the worker. */
static void s_feed(const char *data, size_t len)
{
    s_worker_writes(data, len, 0);
    assert_int_equal(output_pump(&s_w, s_w.out_fd, 0), 1);
    close(s_w.out_fd);
    s_w.out_fd = -1;
}

#define FEED(s) s_feed(s, sizeof s - 1)

static void s_new_generation(int gen)
{
    char err[512];
    s_job.gen.generation = gen;
    assert_int_equal(output_open_logs(&s_job, err, sizeof err), 0);
    output_marker(&s_job, &s_w);
}

static void test_pump_copies_binary_exactly(void **state)
{
    static unsigned char data[60000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 7 + i / 251); /* every byte value, NULs included */
    int wr = s_worker_writes(data, sizeof data, 1);
    assert_int_equal(output_pump(&s_w, s_w.out_fd, 0), 0); /* writer still open: not EOF */
    assert_int_equal(write(wr, data, 1000), 1000);
    close(wr);
    assert_int_equal(output_pump(&s_w, s_w.out_fd, 0), 1);
    output_finish(&s_w);
    assert_int_equal(s_w.out_fd, -1);
    output_finish(&s_w); /* closed already: nothing to do */

    size_t len;
    char *log = s_read_log(&len);
    assert_int_equal(len, sizeof data + 1000);
    assert_memory_equal(log, data, sizeof data);
    assert_memory_equal(log + sizeof data, data, 1000);
    free(log);
}

static void test_marker_is_one_line(void **state)
{
    s_new_generation(0);
    size_t len;
    char *log = s_read_log(&len);
    const char *want = "==== plaunch: job jobt generation 0 (restart 0 of 2) rank 3 pid 4242 started ";
    assert_memory_equal(log, want, strlen(want));
    assert_true(len > 7 && memcmp(log + len - 7, "Z ====\n", 7) == 0);
    assert_ptr_equal(strchr(log, '\n'), log + len - 1);
    assert_int_equal(s_w.gen_log_start, (off_t)len);
    free(log);

    /* A restart appends. */
    FEED("out0\n");
    s_new_generation(1);
    log = s_read_log(&len);
    assert_non_null(strstr(log, "out0\n==== plaunch: job jobt generation 1 (restart 1 of 2) rank 3 pid 4242"));
    assert_int_equal(s_w.gen_log_start, (off_t)len);
    free(log);
    /* A new run (generation 0 again) keeps the earlier run's lines and appends after its own marker ... */
    s_new_generation(0);
    log = s_read_log(&len);
    assert_non_null(strstr(log, "out0\n==== plaunch: job jobt generation 1"));
    assert_non_null(strstr(log, "started 20"));
    assert_int_equal(s_w.gen_log_start, (off_t)len);
    free(log);
    /* ... unless Paddle's --log_overwrite asked for an empty log */
    ((struct opts *)&s_job.opt)->log_overwrite = 1;
    s_new_generation(0);
    ((struct opts *)&s_job.opt)->log_overwrite = 0;
    log = s_read_log(&len);
    assert_null(strstr(log, "out0"));
    free(log);
}

static void s_expect_tail(int nlines, const char *want)
{
    char buf[4096];
    assert_ptr_equal(output_tail(&s_w, nlines, buf, sizeof buf), buf);
    assert_string_equal(buf, want);
}

static void test_tail_of_current_generation_only(void **state)
{
    s_new_generation(0);
    FEED("old1\nold2\n");
    s_new_generation(1);
    s_expect_tail(3, "");
    FEED("l1\nl2\nl3\nl4\nl5\n");
    s_expect_tail(3, "l3\nl4\nl5\n");
    s_expect_tail(1, "l5\n");
    s_expect_tail(10, "l1\nl2\nl3\nl4\nl5\n");
    FEED("l6 partial");
    s_expect_tail(2, "l5\nl6 partial\n");
}

static void test_tail_escapes_unprintable(void **state)
{
    s_new_generation(0);
    FEED("ok\ta\x01" "b\x7f\x1b[31m\0z\r\n\xc3\xa9\n");
    s_expect_tail(5, "ok\ta\\x01b\\x7f\\x1b[31m\\x00z\\x0d\n\xc3\xa9\n");
}

static void test_tail_of_long_log(void **state)
{
    static char text[40000];
    size_t o = 0;
    s_new_generation(0);
    for (int i = 0; i < 3000; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, "line %04d\n", i);
    s_feed(text, o);
    s_expect_tail(2, "line 2998\nline 2999\n");
}

static void test_tail_small_buffers(void **state)
{
    char buf[16];
    s_new_generation(0);
    FEED("a long line that does not fit\n\x01\x02\x03\x04\x05\n");
    for (size_t cap = 1; cap <= sizeof buf; cap++) {
        memset(buf, 'Q', sizeof buf);
        output_tail(&s_w, 2, buf, cap);
        assert_true(memchr(buf, '\0', cap) != NULL);
        if (cap >= 15)
            assert_memory_equal(buf, "a long", 6); /* the tail begins with the first quoted line */
    }
}

/* A full file system, simulated with /dev/full in place of the log descriptor (writes fail with ENOSPC). */
static void test_tail_after_loss(void **state)
{
    s_new_generation(0);
    FEED("before1\nbefore2\n");
    int real = dup(s_w.log_fd), full = open("/dev/full", O_WRONLY);
    assert_true(real >= 0 && full >= 0);
    dup2(full, s_w.log_fd);
    FEED("lost1\nlost2\n");
    dup2(real, s_w.log_fd);
    assert_int_equal(s_w.log_gap, 12);
    assert_int_equal(s_w.log_lost, 12);
    /* The loss goes on: no line from before it is quoted. */
    s_expect_tail(5, "[plaunch: no tail: the last 12 bytes rank 3 wrote were lost (No space left on device)]\n");
    /* Space is back: the log marks the gap, the tail quotes only what came after it. */
    FEED("after1\nafter2\n");
    assert_int_equal(s_w.log_gap, 0);
    s_expect_tail(5, "[plaunch: incomplete: 12 bytes of this generation's output were lost before the lines "
                     "below (No space left on device)]\nafter1\nafter2\n");
    size_t len;
    char *log = s_read_log(&len);
    assert_non_null(strstr(log, "before2\n\n==== plaunch: 12 bytes of rank 3's output were lost here (No space left "
                                "on device) ====\nafter1\n"));
    free(log);
    /* A new generation starts with a clean tail; the total stays for the exit status. */
    s_new_generation(1);
    FEED("gen1\n");
    s_expect_tail(5, "gen1\n");
    assert_int_equal(output_final_status(&s_job, 0), 125);
    assert_int_equal(output_final_status(&s_job, 3), 3);
    close(real);
    close(full);
}

/* Runs fn with console stream cfd (1 or 2) sent to a file; returns what it printed (static buffer). */
static const char *s_capture(int cfd, void (*fn)(void))
{
    static char out[8192];
    char path[128];
    snprintf(path, sizeof path, "%s/console.%d", s_dir, cfd);
    char summary[256];
    fflush(stdout);
    console_finish(0, summary, sizeof summary); /* the console looks at fd 1 and 2 afresh: the file below */
    int saved = dup(cfd), fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, cfd);
    fn();
    console_finish(0, summary, sizeof summary);
    dup2(saved, cfd);
    close(saved);
    ssize_t n = pread(fd, out, sizeof out - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    return out;
}

static const char *s_capture_stdout(void (*fn)(void))
{
    return s_capture(STDOUT_FILENO, fn);
}

static void s_tee_session(void)
{
    FEED("hello\nwor");
    FEED("ld\n\nlast");
    s_worker_writes(" partial", 8, 0);
    output_finish(&s_w);
}

static void test_tee_lines_prefixed(void **state)
{
    s_new_generation(0);
    s_w.tee = 1;
    const char *out = s_capture_stdout(s_tee_session);
    assert_string_equal(out, "[rank 3] hello\n[rank 3] world\n[rank 3] \n[rank 3] last partial\n");
    size_t len;
    char *log = s_read_log(&len);
    assert_string_equal(log + s_w.gen_log_start, "hello\nworld\n\nlast partial");
    free(log);
}

/* A shown worker with its own stderr pipe: stderr lines go to the console's stderr, stdout's to stdout, both to
 * the log. */
static void s_two_pipes_session(void)
{
    int out[2], er[2];
    assert_int_equal(pipe2(out, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(pipe2(er, O_CLOEXEC | O_NONBLOCK), 0);
    s_w.out_fd = out[0];
    s_w.err_fd = er[0];
    assert_int_equal(write(out[1], "fine\n", 5), 5);
    assert_int_equal(output_pump(&s_w, s_w.out_fd, 0), 0);
    assert_int_equal(write(er[1], "oops\nhalf", 9), 9);
    close(er[1]);
    assert_int_equal(output_pump(&s_w, s_w.err_fd, 0), 1);
    output_finish_pipe(&s_w, s_w.err_fd); /* its partial line is shown at its end */
    assert_int_equal(s_w.err_fd, -1);
    close(out[1]);
    output_finish(&s_w);
    assert_int_equal(s_w.out_fd, -1);
}

static void s_two_pipes_stderr(void)
{
    static char err_seen[8192];
    snprintf(err_seen, sizeof err_seen, "%s", s_capture(STDERR_FILENO, s_two_pipes_session));
    assert_string_equal(err_seen, "[rank 3] oops\n[rank 3] half\n");
}

static void test_tee_stderr_to_stderr(void **state)
{
    s_new_generation(0);
    s_w.tee = JOB_TEE_OUT | JOB_TEE_ERR;
    assert_string_equal(s_capture_stdout(s_two_pipes_stderr), "[rank 3] fine\n");
    size_t len;
    char *log = s_read_log(&len);
    assert_string_equal(log + s_w.gen_log_start, "fine\noops\nhalf");
    free(log);
}

static void test_no_tee_prints_nothing(void **state)
{
    s_new_generation(0);
    s_w.tee = 0;
    assert_string_equal(s_capture_stdout(s_tee_session), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pump_copies_binary_exactly, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_marker_is_one_line, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tail_of_current_generation_only, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tail_escapes_unprintable, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tail_of_long_log, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tail_small_buffers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tail_after_loss, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tee_lines_prefixed, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tee_stderr_to_stderr, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_no_tee_prints_nothing, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
