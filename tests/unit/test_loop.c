/* Unit tests for loop: deadline order, cancelling, pipe handlers, removal inside a handler, stop and errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/loop.h"

#define MS 1000000ull

/* What the handlers saw: the order of timer tags and handler calls. */
struct trace {
    int order[16];
    int n;
    int stop_at;      /* loop_stop once n reaches this */
    int fail_at;      /* return -1 once n reaches this */
    int cancel_id;    /* a timer to cancel from inside the first handler */
    int fd_calls;
    char data[64];
    size_t got;
};

struct tagged {
    struct trace *tr;
    int tag;
};

static int s_record(loop_t *l, struct trace *tr, int tag)
{
    tr->order[tr->n++] = tag;
    if (tr->cancel_id) {
        loop_timer_cancel(l, tr->cancel_id);
        tr->cancel_id = 0;
    }
    if (tr->n == tr->fail_at)
        return -1;
    if (tr->n == tr->stop_at)
        loop_stop(l);
    return 0;
}

static int s_on_timer(loop_t *l, int id, void *arg)
{
    struct tagged *t = arg;
    return s_record(l, t->tr, t->tag);
}

static int s_stop_timer(loop_t *l, int id, void *arg)
{
    loop_stop(l);
    return 0;
}

static void s_pipe(int fds[2])
{
    assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
}

static void test_timers_fire_in_deadline_order(void **state)
{
    loop_t *l = loop_new();
    struct trace tr = { .stop_at = 4 };
    struct tagged t[4] = { { &tr, 30 }, { &tr, 10 }, { &tr, 40 }, { &tr, 20 } };
    uint64_t now = loop_now_ns();
    for (int i = 0; i < 4; i++)
        assert_true(loop_timer_at(l, now + (uint64_t)t[i].tag * MS, s_on_timer, &t[i]) > 0);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(tr.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tr.order[i], (i + 1) * 10);
    assert_true(loop_now_ns() >= now + 40 * MS); /* never early */
    loop_destroy(&l);
    assert_null(l);
    loop_destroy(&l); /* safe twice */
}

/* Timers already due when the loop polls still fire earliest first. */
static void test_due_timers_fire_earliest_first(void **state)
{
    loop_t *l = loop_new();
    struct trace tr = { .stop_at = 3 };
    struct tagged t[3] = { { &tr, 3 }, { &tr, 1 }, { &tr, 2 } };
    uint64_t past = loop_now_ns() - 100 * MS;
    for (int i = 0; i < 3; i++)
        loop_timer_at(l, past + (uint64_t)t[i].tag * MS, s_on_timer, &t[i]);
    assert_int_equal(loop_run(l), 0);
    assert_memory_equal(tr.order, ((int[]){ 1, 2, 3 }), 3 * sizeof(int));
    loop_destroy(&l);
}

static void test_cancel(void **state)
{
    loop_t *l = loop_new();
    struct trace tr = { 0 };
    struct tagged a = { &tr, 1 }, b = { &tr, 2 }, c = { &tr, 3 };
    int ida = loop_timer_after_ms(l, 5, s_on_timer, &a);
    int idb = loop_timer_after_ms(l, 10, s_on_timer, &b);
    loop_timer_after_ms(l, 15, s_on_timer, &c);
    loop_timer_after_ms(l, 40, s_stop_timer, NULL);
    assert_true(ida > 0 && idb > 0 && ida != idb);
    loop_timer_cancel(l, ida);
    loop_timer_cancel(l, ida);   /* cancelled twice: ignored */
    loop_timer_cancel(l, 12345); /* unknown: ignored */
    loop_timer_cancel(l, idb);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(tr.n, 1);
    assert_int_equal(tr.order[0], 3);
    loop_destroy(&l);
}

/* A handler may cancel another timer that is already due in the same round. */
static void test_cancel_from_handler(void **state)
{
    loop_t *l = loop_new();
    struct trace tr = { 0 };
    struct tagged a = { &tr, 1 }, b = { &tr, 2 };
    uint64_t past = loop_now_ns() - 10 * MS;
    loop_timer_at(l, past, s_on_timer, &a);
    tr.cancel_id = loop_timer_at(l, past + 1 * MS, s_on_timer, &b);
    loop_timer_after_ms(l, 20, s_stop_timer, NULL);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(tr.n, 1);
    assert_int_equal(tr.order[0], 1);
    loop_destroy(&l);
}

static int s_on_read(loop_t *l, int fd, void *sock, short revents, void *arg)
{
    struct trace *tr = arg;
    tr->fd_calls++;
    assert_null(sock);
    assert_true(revents & ZMQ_POLLIN);
    ssize_t n = read(fd, tr->data + tr->got, sizeof tr->data - 1 - tr->got);
    if (n > 0)
        tr->got += (size_t)n;
    if (strchr(tr->data, '!'))
        loop_stop(l);
    return 0;
}

static int s_write_later(loop_t *l, int id, void *arg)
{
    int fd = *(int *)arg;
    assert_int_equal(write(fd, "there!", 6), 6);
    return 0;
}

static void test_fd_handler_on_pipe(void **state)
{
    int fds[2];
    s_pipe(fds);
    loop_t *l = loop_new();
    struct trace tr = { 0 };
    assert_int_equal(loop_add_fd(l, fds[0], ZMQ_POLLIN, s_on_read, &tr), 0);
    assert_int_equal(loop_add_fd(l, fds[0], ZMQ_POLLIN, s_on_read, &tr), -1);
    assert_int_equal(errno, EEXIST);
    assert_int_equal(write(fds[1], "hi ", 3), 3);
    loop_timer_after_ms(l, 20, s_write_later, &fds[1]);
    assert_int_equal(loop_run(l), 0);
    assert_string_equal(tr.data, "hi there!");
    assert_true(tr.fd_calls >= 2);
    assert_int_equal(loop_remove_fd(l, fds[0]), 0);
    assert_int_equal(loop_remove_fd(l, fds[0]), -1);
    assert_int_equal(errno, ENOENT);
    loop_destroy(&l);
    close(fds[0]);
    close(fds[1]);
}

/* Removes its own fd without reading: had the removal not stuck, the level-triggered fd would fire again. */
static int s_remove_self(loop_t *l, int fd, void *sock, short revents, void *arg)
{
    struct trace *tr = arg;
    tr->fd_calls++;
    assert_int_equal(loop_remove_fd(l, fd), 0);
    return 0;
}

static void test_remove_fd_inside_own_handler(void **state)
{
    int a[2], b[2];
    s_pipe(a);
    s_pipe(b);
    loop_t *l = loop_new();
    struct trace tra = { 0 }, trb = { 0 };
    assert_int_equal(loop_add_fd(l, a[0], ZMQ_POLLIN, s_remove_self, &tra), 0);
    assert_int_equal(loop_add_fd(l, b[0], ZMQ_POLLIN, s_remove_self, &trb), 0);
    assert_int_equal(write(a[1], "x", 1), 1);
    assert_int_equal(write(b[1], "y", 1), 1);
    loop_timer_after_ms(l, 30, s_stop_timer, NULL);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(tra.fd_calls, 1);
    assert_int_equal(trb.fd_calls, 1);
    /* Once removed, the fd can be registered again and is watched. */
    assert_int_equal(loop_add_fd(l, a[0], ZMQ_POLLIN, s_remove_self, &tra), 0);
    loop_timer_after_ms(l, 30, s_stop_timer, NULL);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(tra.fd_calls, 2);
    loop_destroy(&l);
    close(a[0]), close(a[1]), close(b[0]), close(b[1]);
}

static int s_fail_io(loop_t *l, int fd, void *sock, short revents, void *arg)
{
    (*(int *)arg)++;
    return -1;
}

static void test_handler_error_stops_with_minus_one(void **state)
{
    int fds[2], calls = 0;
    s_pipe(fds);
    loop_t *l = loop_new();
    assert_int_equal(loop_add_fd(l, fds[0], ZMQ_POLLIN, s_fail_io, &calls), 0);
    assert_int_equal(write(fds[1], "x", 1), 1);
    loop_timer_after_ms(l, 2000, s_stop_timer, NULL);
    assert_int_equal(loop_run(l), -1);
    assert_int_equal(calls, 1);
    loop_destroy(&l);
    close(fds[0]);
    close(fds[1]);

    /* A timer handler's -1 stops the loop too, before later timers run. */
    l = loop_new();
    struct trace tr = { .fail_at = 1 };
    struct tagged a = { &tr, 1 }, b = { &tr, 2 };
    loop_timer_after_ms(l, 1, s_on_timer, &a);
    loop_timer_after_ms(l, 5, s_on_timer, &b);
    assert_int_equal(loop_run(l), -1);
    assert_int_equal(tr.n, 1);
    loop_destroy(&l);
}

static void test_stop_returns_zero_and_loop_restarts(void **state)
{
    loop_t *l = loop_new();
    struct trace tr = { .stop_at = 1 };
    struct tagged a = { &tr, 1 }, b = { &tr, 2 };
    loop_timer_after_ms(l, 1, s_on_timer, &a);
    loop_timer_after_ms(l, 1, s_on_timer, &b);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(tr.n, 1);
    tr.stop_at = 2; /* the second run picks up the timer still pending */
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(tr.n, 2);
    loop_destroy(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timers_fire_in_deadline_order),
        cmocka_unit_test(test_due_timers_fire_earliest_first),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_cancel_from_handler),
        cmocka_unit_test(test_fd_handler_on_pipe),
        cmocka_unit_test(test_remove_fd_inside_own_handler),
        cmocka_unit_test(test_handler_error_stops_with_minus_one),
        cmocka_unit_test(test_stop_returns_zero_and_loop_restarts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
