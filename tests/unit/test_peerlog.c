/* Unit tests for peerlog: a burst of detailed lines per kind and address, then one summary with the count;
 * counted events; a cap on detailed lines of all addresses; addresses beyond the table summed up together; the
 * interval's timer writing the summaries. Lines are read back from a real log file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "launcher/conn/peerlog.h"
#include "tests/unit/test_util.h"

static const struct peerlog_kind K_FRAMES = { "refused", "frame", "frames", "not TLS" };
static const struct peerlog_kind K_CONNS = { "closed", "connection", "connections", "too many" };

static char *s_dir;
static char s_path[512];

static int setup(void **state)
{
    return tu_log_begin("peerlog", &s_dir, s_path, sizeof s_path);
}

static int teardown(void **state)
{
    tu_log_end(s_dir);
    return 0;
}

/* Lines of the log that contain text. */
static int s_lines(const char *text)
{
    return tu_count_lines(s_path, text);
}

static void test_burst_then_one_summary(void **state)
{
    loop_t *loop = loop_new();
    peerlog_t *r = peerlog_new(loop, 0);
    int logged = 0;
    for (int i = 0; i < 19873; i++)
        logged += peerlog_warn(r, &K_FRAMES, "198.18.0.9", "refused 198.18.0.9: frame %d", i);
    assert_int_equal(logged, PEERLOG_BURST);
    assert_int_equal(s_lines("refused 198.18.0.9: frame"), PEERLOG_BURST);
    assert_int_equal(s_lines("in the last"), 0);
    peerlog_destroy(&r); /* what is still counted is written, not lost */
    assert_null(r);
    assert_int_equal(s_lines("refused 19,873 frames from 198.18.0.9 in the last 1 s: not TLS (the first ones are "
                             "logged above)"), 1);
    loop_destroy(&loop);
}

static void test_counts_alone_make_a_summary(void **state)
{
    peerlog_t *r = peerlog_new(NULL, 0);
    peerlog_count(r, &K_FRAMES, "10.0.0.1", 999);
    peerlog_count(r, &K_FRAMES, "10.0.0.1", 1);
    peerlog_count(r, &K_CONNS, "10.0.0.1", 2);
    peerlog_flush(r);
    assert_int_equal(s_lines("refused 1,000 frames from 10.0.0.1 in the last"), 1);
    assert_int_equal(s_lines("closed 2 connections from 10.0.0.1"), 1);
    peerlog_flush(r); /* nothing new: nothing written */
    assert_int_equal(s_lines("in the last"), 2);
    peerlog_destroy(&r);
}

static void test_line_cap_and_other_addresses(void **state)
{
    peerlog_t *r = peerlog_new(NULL, 0);
    char addr[32];
    for (int i = 0; i < PEERLOG_ADDRS + 32; i++) {
        snprintf(addr, sizeof addr, "10.1.0.%d", i);
        peerlog_warn(r, &K_CONNS, addr, "closed a connection from %s", addr);
    }
    assert_int_equal(s_lines("closed a connection from"), PEERLOG_ADDRS < PEERLOG_LINES ? PEERLOG_ADDRS : PEERLOG_LINES);
    peerlog_flush(r);
    /* followed addresses without a line of their own get a summary each; the rest one together */
    assert_int_equal(s_lines("closed 1 connection from 10.1.0."), 0); /* the first ones have their own lines */
    assert_int_equal(s_lines("closed 32 connections from other addresses"), 1);
    for (int i = 0; i < PEERLOG_ADDRS * PEERLOG_BURST; i++) { /* bursts of several addresses: capped overall */
        snprintf(addr, sizeof addr, "10.3.0.%d", i % PEERLOG_ADDRS);
        peerlog_warn(r, &K_FRAMES, addr, "refused a frame from %s", addr);
    }
    assert_int_equal(s_lines("refused a frame from"), PEERLOG_LINES);
    peerlog_destroy(&r);
}

static int s_stop(loop_t *l, int id, void *arg)
{
    loop_stop(l);
    return 0;
}

static void test_the_interval_writes_the_summary(void **state)
{
    loop_t *loop = loop_new();
    peerlog_t *r = peerlog_new(loop, 50);
    for (int i = 0; i < 10; i++)
        peerlog_warn(r, &K_FRAMES, "10.2.0.1", "refused 10.2.0.1");
    loop_timer_after_ms(loop, 200, s_stop, NULL);
    assert_int_equal(loop_run(loop), 0);
    assert_int_equal(s_lines("refused 10 frames from 10.2.0.1 in the last 1 s"), 1);
    /* a new interval: a new burst */
    assert_int_equal(peerlog_warn(r, &K_FRAMES, "10.2.0.1", "refused 10.2.0.1 again"), 1);
    peerlog_destroy(&r);
    loop_destroy(&loop);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_burst_then_one_summary),
        T(test_counts_alone_make_a_summary),
        T(test_line_cap_and_other_addresses),
        T(test_the_interval_writes_the_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
