/* Unit tests for mon_sampler: the agent's side against the real sampler (this binary run as `__monitor`, without
 * NVML) and against hostile ones that answer too much, too little, in pieces, out of turn, or never. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher/monitor/sampling/mon_sampler.h"
#include "launcher/monitor/sampling/mon_wire.h"
#include "common/util.h"

static char s_exe[PATH_MAX];
static char s_fifo[128];

/* ---- the hostile sampler: this binary as `__monitor` with TMS_MODE set -------------------------------------- */
static int s_read_request(struct mon_wire_hdr *h, unsigned char *body)
{
    size_t got = 0;
    while (got < sizeof *h) {
        ssize_t r = read(0, (char *)h + got, sizeof *h - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    for (got = 0; got < h->len;) {
        ssize_t r = read(0, body + got, h->len - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* An answer of samples to the request, with its count, note length or ranks changed by mode. */
static size_t s_answer(const char *mode, const struct mon_wire_hdr *req, const unsigned char *body,
                       unsigned char *out)
{
    struct mon_wire_hdr h = { .magic = MON_WIRE_MAGIC, .kind = MON_WIRE_SAMPLES, .count = req->count };
    uint32_t n = req->count + (strcmp(mode, "more") == 0);
    size_t o = sizeof h;
    for (uint32_t i = 0; i < n; i++) {
        struct mon_wire_target t;
        memcpy(&t, body + (i < req->count ? i : 0) * sizeof t, sizeof t);
        struct mon_sample s;
        mon_sample_clear(&s);
        s.rank = strcmp(mode, "wrongrank") == 0 ? t.rank + 100 : t.rank;
        s.local_rank = t.local_rank, s.generation = t.generation;
        memset(s.gpu, 'x', sizeof s.gpu); /* not terminated: the reader must cut it */
        memcpy(out + o, &s, sizeof s);
        o += sizeof s;
    }
    h.count = n;
    h.len = (uint32_t)(o - sizeof h);
    if (strcmp(mode, "hugenote") == 0)
        h.note_len = 60000;
    memcpy(out, &h, sizeof h);
    return o;
}

static int s_hostile(const char *mode)
{
    static unsigned char body[1 << 16], out[1 << 20];
    struct mon_wire_hdr req;
    if (strcmp(mode, "unasked") == 0)
        return util_write_all(1, "hello", 5) < 0;
    if (strcmp(mode, "exit") == 0)
        return 0;
    if (s_read_request(&req, body) < 0)
        return 1;
    if (strcmp(mode, "close") == 0) /* after the request: one that exits first races the test's write (EPIPE) */
        return 0;
    if (strcmp(mode, "hang") == 0)
        for (;;)
            pause();
    if (strcmp(mode, "halfexit") == 0)
        return util_write_all(1, "PLM", 3) < 0;
    if (strncmp(mode, "pf", 2) == 0) {
        /* a preflight answer: "pfcount" announces 2 lines and sends 3, "pflong" sends one line of 600 bytes */
        struct mon_wire_hdr h = { .magic = MON_WIRE_MAGIC, .kind = MON_WIRE_PREFLIGHT, .count = 2 };
        size_t o = sizeof h;
        memcpy(out + o, "12.4", 5), o += MON_WIRE_CUDA_MAX;
        if (strcmp(mode, "pfcount") == 0) {
            memcpy(out + o, "a\0b\0c\0", 6), o += 6;
        } else {
            memset(out + o, 'L', 600), o += 600;
            out[o++] = '\0';
            h.count = 1;
        }
        h.len = (uint32_t)(o - sizeof h);
        memcpy(out, &h, sizeof h);
        return util_write_all(1, out, o) < 0;
    }
    size_t len = s_answer(mode, &req, body, out);
    if (strcmp(mode, "pieces") != 0)
        return util_write_all(1, out, len) < 0;
    /* In two pieces: the second only once the test says so through the FIFO. */
    if (util_write_all(1, out, 10) < 0)
        return 1;
    int fd = open(getenv("TMS_FIFO"), O_RDONLY);
    char c;
    if (fd < 0 || read(fd, &c, 1) != 1)
        return 1;
    return util_write_all(1, out + 10, len - 10) < 0;
}

/* ---- helpers ----------------------------------------------------------------------------------------------- */
static mon_sampler_t *s_start(const char *mode, int use_nvml)
{
    char err[512] = "";
    if (mode)
        setenv("TMS_MODE", mode, 1);
    else
        unsetenv("TMS_MODE");
    mon_sampler_t *m = mon_sampler_start(s_exe, use_nvml, err, sizeof err);
    if (m == NULL)
        fail_msg("mon_sampler_start: %s", err);
    return m;
}

/* Polls and reads until a whole answer, an error, or timeout_ms: the last mon_sampler_read result, or 0. */
static int s_read(mon_sampler_t *m, struct mon_sample *out, int max, int *n, char *err, size_t errlen,
                  int timeout_ms)
{
    struct pollfd p = { .fd = mon_sampler_fd(m), .events = POLLIN };
    while (poll(&p, 1, timeout_ms) == 1) {
        int r = mon_sampler_read(m, out, max, n, err, errlen);
        if (r != 0)
            return r;
    }
    return 0;
}

static struct mon_target s_target(int rank, pid_t pid)
{
    struct mon_target t;
    memset(&t, 0, sizeof t);
    t.rank = rank, t.local_rank = rank, t.generation = 3, t.pid = pid;
    return t;
}

/* The sampler's pid is gone, not a zombie of ours. */
static void s_assert_gone(pid_t pid)
{
    assert_true(pid > 0);
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);
}

static void s_expect_error(const char *mode, const char *needle)
{
    mon_sampler_t *m = s_start(mode, 0);
    struct mon_target t[2] = { s_target(0, getpid()), s_target(1, getpid()) };
    struct mon_sample out[4];
    int n = -1;
    char err[512] = "";
    assert_int_equal(mon_sampler_request(m, t, 2), 0);
    int r = s_read(m, out, 4, &n, err, sizeof err, 5000);
    if (r != -1 || strstr(err, needle) == NULL)
        fail_msg("mode %s: read %d, err '%s' lacks '%s'", mode, r, err, needle);
    assert_true(n == 0);
    assert_int_equal(mon_sampler_request(m, t, 2), -1); /* dead after nonsense */
    assert_int_equal(errno, EPIPE);
    pid_t pid = mon_sampler_pid(m);
    mon_sampler_stop(&m);
    assert_null(m);
    s_assert_gone(pid);
}

/* ---- tests ------------------------------------------------------------------------------------------------- */
static void test_real_sampler_host_metrics(void **state)
{
    mon_sampler_t *m = s_start(NULL, 0);
    struct mon_target t[2] = { s_target(4, getpid()), s_target(5, getpid()) };
    snprintf(t[1].gpu, sizeof t[1].gpu, "0");
    struct mon_sample out[2];
    int n = 0;
    char err[512] = "";
    assert_string_equal(mon_sampler_note(m), "");
    assert_int_equal(mon_sampler_request(m, t, 2), 0);
    assert_int_equal(mon_sampler_request(m, t, 2), -1);
    assert_int_equal(errno, EBUSY);
    assert_int_equal(s_read(m, out, 2, &n, err, sizeof err, 10000), 1);
    assert_int_equal(n, 2);
    assert_string_equal(mon_sampler_note(m), "NVML not used (--no-nvml): host metrics only");
    assert_int_equal(out[0].rank, 4);
    assert_int_equal(out[1].rank, 5);
    assert_int_equal(out[1].generation, 3);
    assert_string_equal(out[1].gpu, "0");
    assert_true(out[0].procs >= 2); /* this process and the sampler, its child */
    assert_true(out[0].threads >= out[0].procs);
    assert_true(out[0].rss_mib > 1);
    assert_true(isnan(out[0].cpu_pct)); /* nothing to compare with yet */
    assert_true(isnan(out[1].gpu_util) && out[1].throttle == -1 && out[1].xid == -1);
    assert_true(out[0].host_avail_frac > 0 && out[0].host_avail_frac <= 1);
    /* The second round compares with the first; max 1 takes only the first sample. */
    assert_int_equal(mon_sampler_request(m, t, 2), 0);
    assert_int_equal(s_read(m, out, 1, &n, err, sizeof err, 10000), 1);
    assert_int_equal(n, 1);
    assert_true(out[0].cpu_pct >= 0);
    /* a preflight without NVML: no lines, nvml_ok 0, no CUDA version */
    const char *gpus[] = { "0", "GPU-1234" };
    assert_int_equal(mon_sampler_request_preflight(m, gpus, 2), 0);
    assert_int_equal(s_read(m, out, 2, &n, err, sizeof err, 10000), 1);
    char cuda[16] = "x";
    int lines = -1, ok = -1;
    const char *text = mon_sampler_preflight(m, &lines, cuda, sizeof cuda, &ok);
    assert_int_equal(lines, 0);
    assert_int_equal(ok, 0);
    assert_string_equal(cuda, "");
    assert_string_equal(text, "");
    pid_t pid = mon_sampler_pid(m);
    mon_sampler_stop(&m);
    mon_sampler_stop(&m);
    s_assert_gone(pid);
}

static void test_bad_arguments(void **state)
{
    mon_sampler_t *m = s_start("hang", 0);
    struct mon_target t = s_target(0, getpid());
    assert_int_equal(mon_sampler_request(m, &t, 0), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(mon_sampler_request(m, &t, MON_TARGETS_MAX + 1), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(mon_sampler_request(NULL, &t, 1), -1);
    assert_int_equal(mon_sampler_fd(NULL), -1);
    mon_sampler_stop(&m);
    char err[256] = "";
    assert_null(mon_sampler_start("/nonexistent/plaunch", 1, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/plaunch"));
}

static void test_largest_request(void **state)
{
    static struct mon_target t[MON_TARGETS_MAX];
    static struct mon_sample out[MON_TARGETS_MAX];
    for (int i = 0; i < MON_TARGETS_MAX; i++)
        t[i] = s_target(i, getpid());
    mon_sampler_t *m = s_start(NULL, 0);
    int n = 0;
    char err[512] = "";
    assert_int_equal(mon_sampler_request(m, t, MON_TARGETS_MAX), 0);
    assert_int_equal(s_read(m, out, MON_TARGETS_MAX, &n, err, sizeof err, 30000), 1);
    assert_int_equal(n, MON_TARGETS_MAX);
    assert_int_equal(out[MON_TARGETS_MAX - 1].rank, MON_TARGETS_MAX - 1);
    mon_sampler_stop(&m);
}

static void test_answer_in_pieces(void **state)
{
    snprintf(s_fifo, sizeof s_fifo, "/tmp/plaunch-tms-%d", (int)getpid());
    unlink(s_fifo);
    assert_int_equal(mkfifo(s_fifo, 0600), 0);
    setenv("TMS_FIFO", s_fifo, 1);
    mon_sampler_t *m = s_start("pieces", 0);
    struct mon_target t = s_target(7, getpid());
    struct mon_sample out;
    int n = -1;
    char err[512] = "";
    assert_int_equal(mon_sampler_request(m, &t, 1), 0);
    struct pollfd p = { .fd = mon_sampler_fd(m), .events = POLLIN };
    assert_int_equal(poll(&p, 1, 10000), 1);
    assert_int_equal(mon_sampler_read(m, &out, 1, &n, err, sizeof err), 0); /* 10 bytes: not yet */
    assert_int_equal(mon_sampler_read(m, &out, 1, &n, err, sizeof err), 0);
    int fd = open(s_fifo, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "g", 1), 1);
    close(fd);
    assert_int_equal(s_read(m, &out, 1, &n, err, sizeof err, 10000), 1);
    assert_int_equal(n, 1);
    assert_int_equal(out.rank, 7);
    assert_int_equal((int)strlen(out.gpu), MON_GPU_MAX - 1); /* cut at its bound */
    mon_sampler_stop(&m);
    unlink(s_fifo);
}

static void test_hostile_answers(void **state)
{
    s_expect_error("more", "answered 3 samples");
    s_expect_error("wrongrank", "which was not asked");
    s_expect_error("hugenote", "note of 60000 bytes");
    s_expect_error("halfexit", "stopped in the middle of an answer");
    s_expect_error("close", "closed its answers");
}

static void test_hostile_preflight(void **state)
{
    const char *modes[][2] = { { "pfcount", "sent 3 preflight lines where it announced 2" },
                               { "pflong", "preflight line of 601 bytes" } };
    for (int i = 0; i < 2; i++) {
        mon_sampler_t *m = s_start(modes[i][0], 0);
        const char *gpus[] = { "0" };
        struct mon_sample out;
        int n;
        char err[512] = "";
        assert_int_equal(mon_sampler_request_preflight(m, gpus, 1), 0);
        int r = s_read(m, &out, 1, &n, err, sizeof err, 10000);
        if (r != -1 || strstr(err, modes[i][1]) == NULL)
            fail_msg("%s: %d '%s'", modes[i][0], r, err);
        mon_sampler_stop(&m);
    }
}

static void test_unasked_and_dead(void **state)
{
    mon_sampler_t *m = s_start("unasked", 0);
    struct mon_sample out;
    int n;
    char err[512] = "";
    int r = s_read(m, &out, 1, &n, err, sizeof err, 10000);
    if (r != -1 || strstr(err, "spoke without being asked") == NULL)
        fail_msg("unasked: %d '%s'", r, err);
    mon_sampler_stop(&m);
    /* A sampler that died: EOF, the exit status when it is known, then requests refused. */
    m = s_start("exit", 0);
    r = s_read(m, &out, 1, &n, err, sizeof err, 10000);
    if (r != -1 || strstr(err, "closed its answers") == NULL)
        fail_msg("exit: %d '%s'", r, err);
    struct mon_target t = s_target(0, getpid());
    assert_int_equal(mon_sampler_request(m, &t, 1), -1);
    assert_int_equal(errno, EPIPE);
    pid_t pid = mon_sampler_pid(m);
    mon_sampler_stop(&m);
    s_assert_gone(pid);
}

static void test_hung_sampler_is_killed(void **state)
{
    mon_sampler_t *m = s_start("hang", 0);
    struct mon_target t = s_target(0, getpid());
    struct mon_sample out;
    int n;
    char err[512] = "";
    assert_int_equal(mon_sampler_request(m, &t, 1), 0);
    struct pollfd p = { .fd = mon_sampler_fd(m), .events = POLLIN };
    assert_int_equal(poll(&p, 1, 300), 0); /* the deadline passes: nothing to read */
    assert_int_equal(s_read(m, &out, 1, &n, err, sizeof err, 0), 0);
    pid_t pid = mon_sampler_pid(m);
    mon_sampler_stop(&m);
    s_assert_gone(pid);
    /* no child left at all: every sampler of this file was killed. One whose end took longer than the stop's
     * wait (a loaded machine) is reaped here as the supervisor's loop reaps it, within 10 s. */
    for (int i = 0;; i++) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r == -1 && errno == ECHILD)
            break;
        if (i >= 500)
            fail_msg("a child of the test still runs 10 s after every sampler was stopped");
        if (r == 0)
            poll(NULL, 0, 20);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "__monitor") == 0) {
        const char *mode = getenv("TMS_MODE");
        return mode ? s_hostile(mode) : mon_sampler_main(argc - 1, argv + 1);
    }
    ssize_t len = readlink("/proc/self/exe", s_exe, sizeof s_exe - 1);
    if (len < 0)
        return 1;
    s_exe[len] = '\0';
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_sampler_host_metrics),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_largest_request),
        cmocka_unit_test(test_answer_in_pieces),
        cmocka_unit_test(test_hostile_answers),
        cmocka_unit_test(test_hostile_preflight),
        cmocka_unit_test(test_unasked_and_dead),
        cmocka_unit_test(test_hung_sampler_is_killed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
