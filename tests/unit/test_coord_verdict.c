/* Unit tests for coord_verdict: the exit-status rule and the restart budget, as a table of event sequences (what
 * the coordinator reports, the way coord_end.c, coord_hang.c, coord_world.c and coord_server.c report it) and the
 * outcome: each event's answer (restart number, or 0: the job ends), the job's exit status and root cause. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "launcher/coord/verdict/coord_verdict.h"
#include "common/log.h"

enum ev { END_, WORKER, HANG, SIGNAL, LOST, BYE, RDZV, FATAL };

struct event {
    enum ev ev;
    int a, b;   /* WORKER: exit code, signal; HANG: --on-hang restart; SIGNAL: signal; BYE: its status */
    int answer; /* WORKER, HANG: the restart's number, 0 the job ends; others: 1 the outcome was set, 0 not */
};

struct scenario {
    const char *name;
    int max_restarts;
    struct event evs[8];
    int status;
    const char *cause; /* the root cause starts with this ("" none) */
};

/* One event, as the coordinator reports it. */
static int s_report(struct coord_verdict *v, const struct event *e)
{
    int n;
    switch (e->ev) {
    case WORKER:
        n = coord_verdict_restart(v, coord_verdict_restartable((uint32_t)e->a, (uint32_t)e->b));
        if (!n)
            coord_verdict_fail(v, COORD_VERDICT_JUDGED, coord_verdict_worker_status((uint32_t)e->a, (uint32_t)e->b),
                               "worker %d/%d", e->a, e->b);
        return n;
    case HANG:
        n = coord_verdict_restart(v, e->a);
        if (!n)
            coord_verdict_fail(v, COORD_VERDICT_JUDGED, COORD_VERDICT_HUNG, "hung");
        return n;
    case SIGNAL:
        return coord_verdict_fail(v, COORD_VERDICT_TOLD, 128 + e->a, "signal %d", e->a);
    case LOST:
        return coord_verdict_fail(v, COORD_VERDICT_TOLD, COORD_VERDICT_PLAUNCH, "lost");
    case BYE:
        return e->a ? coord_verdict_fail(v, COORD_VERDICT_TOLD, e->a, NULL) : 0;
    case RDZV:
        return coord_verdict_fail(v, COORD_VERDICT_JUDGED, COORD_VERDICT_PLAUNCH, "rendezvous");
    case FATAL:
        return coord_verdict_fail(v, COORD_VERDICT_FATAL, COORD_VERDICT_PLAUNCH, "fatal");
    default:
        return -1;
    }
}

static const struct scenario S[] = {
    { "nothing failed", 3, { { BYE, 0, 0, 0 }, { BYE, 0, 0, 0 } }, 0, "" },
    { "a worker fails, no budget", 0, { { WORKER, 3, 0, 0 } }, 3, "worker 3/0" },
    { "a worker killed by a signal", 0, { { WORKER, 0, 9, 0 } }, 137, "worker 0/9" },
    { "restarts spent one by one, then the end", 2,
      { { WORKER, 1, 0, 1 }, { WORKER, 1, 0, 2 }, { WORKER, 7, 0, 0 } }, 7, "worker 7/0" },
    { "exit 127 is never restarted", 5, { { WORKER, 127, 0, 0 } }, 127, "worker 127/0" },
    { "exit 126 is never restarted", 5, { { WORKER, 126, 0, 0 } }, 126, "worker 126/0" },
    { "a signal 126 is restarted", 1, { { WORKER, 0, 126, 1 } }, 0, "" },
    { "hangs and failures share one budget", 2,
      { { HANG, 1, 0, 1 }, { WORKER, 1, 0, 2 }, { HANG, 1, 0, 0 } }, 124, "hung" },
    { "--on-hang stop ends the job, budget or not", 3, { { HANG, 0, 0, 0 } }, 124, "hung" },
    { "a restart spends budget and sets nothing", 1, { { HANG, 1, 0, 1 } }, 0, "" },
    { "a stop signal", 0, { { SIGNAL, 15, 0, 1 } }, 143, "signal 15" },
    { "the first of equal ranks wins: signal, then a lost node", 0,
      { { SIGNAL, 2, 0, 1 }, { LOST, 0, 0, 0 }, { BYE, 143, 0, 0 } }, 130, "signal 2" },
    { "the first of equal ranks wins: a lost node, then a signal", 0,
      { { LOST, 0, 0, 1 }, { SIGNAL, 15, 0, 0 } }, 125, "lost" },
    { "a node's BYE status, no cause of its own", 0, { { BYE, 3, 0, 1 }, { BYE, 5, 0, 0 } }, 3, "" },
    { "the coordinator's judgement replaces what it was told", 0,
      { { BYE, 143, 0, 1 }, { WORKER, 2, 0, 0 } }, 2, "worker 2/0" },
    { "a hang replaces a signal", 0, { { SIGNAL, 15, 0, 1 }, { HANG, 1, 0, 0 } }, 124, "hung" },
    { "what it is told never replaces a judgement", 0,
      { { WORKER, 4, 0, 0 }, { SIGNAL, 15, 0, 0 }, { LOST, 0, 0, 0 } }, 4, "worker 4/0" },
    { "the rendezvous deadline", 0, { { RDZV, 0, 0, 1 }, { SIGNAL, 15, 0, 0 } }, 125, "rendezvous" },
    { "the coordinator's own failure replaces anything", 0,
      { { WORKER, 4, 0, 0 }, { FATAL, 0, 0, 1 }, { FATAL, 0, 0, 0 }, { RDZV, 0, 0, 0 } }, 125, "fatal" },
};

static void test_the_rule(void **state)
{
    for (size_t i = 0; i < sizeof S / sizeof S[0]; i++) {
        struct coord_verdict v;
        coord_verdict_init(&v, S[i].max_restarts);
        for (const struct event *e = S[i].evs; e->ev != END_; e++) {
            int got = s_report(&v, e);
            if (got != e->answer)
                fail_msg("%s: event %d answered %d, not %d", S[i].name, (int)(e - S[i].evs), got, e->answer);
        }
        if (coord_verdict_status(&v) != S[i].status)
            fail_msg("%s: exit status %d, not %d", S[i].name, coord_verdict_status(&v), S[i].status);
        if (strncmp(coord_verdict_cause(&v), S[i].cause, strlen(S[i].cause)) != 0 ||
            (!S[i].cause[0] && coord_verdict_cause(&v)[0]))
            fail_msg("%s: root cause '%s', not '%s'", S[i].name, coord_verdict_cause(&v), S[i].cause);
    }
}

static void test_hold(void **state)
{
    struct coord_verdict v;
    coord_verdict_init(&v, 0);
    assert_false(coord_verdict_held(&v));
    coord_verdict_hold(&v, 1);
    assert_true(coord_verdict_held(&v));
    coord_verdict_hold(&v, 0);
    assert_false(coord_verdict_held(&v));
    assert_int_equal(coord_verdict_rank(&v), COORD_VERDICT_NONE);
}

/* A coordinator that takes over (etcd) goes on from the restarts its predecessor spent, never beyond the budget. */
static void test_resume(void **state)
{
    struct coord_verdict v;
    coord_verdict_init(&v, 3);
    assert_int_equal(coord_verdict_restart(&v, 1), 1);
    assert_int_equal(coord_verdict_used(&v), 1);
    coord_verdict_init(&v, 3);
    coord_verdict_resume(&v, 2);
    assert_int_equal(coord_verdict_used(&v), 2);
    assert_int_equal(coord_verdict_restart(&v, 1), 3);
    assert_int_equal(coord_verdict_restart(&v, 1), 0);
    coord_verdict_resume(&v, 99);
    assert_int_equal(coord_verdict_used(&v), 3);
    coord_verdict_resume(&v, -1);
    assert_int_equal(coord_verdict_used(&v), 0);
}

static void test_long_cause_is_cut(void **state)
{
    struct coord_verdict v;
    char big[8192];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    coord_verdict_init(&v, 0);
    assert_int_equal(coord_verdict_fail(&v, COORD_VERDICT_JUDGED, 1, "%s", big), 1);
    assert_int_equal(strlen(coord_verdict_cause(&v)), sizeof v.cause - 1);
}

/* Restarts without progress, as coord_end.c reports a worker failure: coord_verdict_failed first, then the budget. */
static int s_failed(struct coord_verdict *v, const char *node, int progressed)
{
    int bits = coord_verdict_failed(v, "j", node, progressed, "  first failure : x\n", "what");
    if (bits & COORD_VERDICT_STOPPED)
        return -1;
    int n = coord_verdict_restart(v, 1);
    if (!n)
        coord_verdict_fail(v, COORD_VERDICT_JUDGED, 1, "worker");
    return bits & COORD_VERDICT_NODE_FAULT ? 100 + n : n;
}

static void test_no_progress(void **state)
{
    struct coord_verdict v;
    coord_verdict_init(&v, 50);
    coord_verdict_no_progress(&v, 2);
    assert_int_equal(s_failed(&v, "a", 0), 1);
    assert_int_equal(s_failed(&v, "b", 1), 2);     /* progress: the series starts again */
    assert_int_equal(s_failed(&v, "a", 0), 3);
    assert_int_equal(s_failed(&v, "a", 0), 104);   /* the same node twice in a row: the node's */
    assert_int_equal(s_failed(&v, "b", 0), -1);    /* K restarts without progress, a third failure: the end */
    assert_int_equal(coord_verdict_status(&v), COORD_VERDICT_NO_PROGRESS);
    assert_non_null(strstr(coord_verdict_cause(&v), "restarts made no progress"));
    assert_non_null(strstr(coord_verdict_cause(&v), "first failure : x"));
    /* the budget ending at the same failure: its ending stands */
    coord_verdict_init(&v, 2);
    coord_verdict_no_progress(&v, 2);
    assert_int_equal(s_failed(&v, "a", 0), 1);
    assert_int_equal(s_failed(&v, "b", 0), 2);
    assert_int_equal(s_failed(&v, "a", 0), 0);
    assert_int_equal(coord_verdict_status(&v), 1);
    /* 0: off */
    coord_verdict_init(&v, 5);
    for (int i = 1; i <= 5; i++)
        assert_int_equal(s_failed(&v, i % 2 ? "a" : "b", 0), i);
}

int main(void)
{
    log_set_stderr_level(LOG_ERROR + 1); /* "restart budget exhausted" is expected */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_rule),
        cmocka_unit_test(test_hold),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_long_cause_is_cut),
        cmocka_unit_test(test_no_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
