/* Unit tests for proc: ownership of children (no signal, wait or reap of another owner's pid), deadlines, the
 * loop's reaper telling owners, strays, disowning. Real children (/bin/sh, sleep), no mocks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/proc.h"

#define MS 1000000ull

struct seen {
    int calls, late_calls;
    struct proc_exit last;
    int stop_after;   /* loop_stop once calls reaches this */
    loop_t *loop;
};

static void s_on_exit(void *owner, const struct proc_exit *e)
{
    struct seen *s = owner;
    s->calls++;
    s->last = *e;
    if (s->loop && s->calls == s->stop_after)
        loop_stop(s->loop);
}

static void s_on_late(void *owner, pid_t pid)
{
    struct seen *s = owner;
    s->late_calls++;
}

static int s_give_up(loop_t *l, int id, void *arg)
{
    *(int *)arg = 1;
    loop_stop(l);
    return 0;
}

/* sh -c SCRIPT for owner, in its own group when group. */
static pid_t s_sh(const char *script, int group, struct seen *owner)
{
    char *argv[] = { "sh", "-c", (char *)script, NULL };
    struct proc_spawn sp = PROC_SPAWN_INIT;
    sp.path = "/bin/sh";
    sp.argv = argv;
    sp.group = group;
    sp.stdio[0] = PROC_NULL;
    pid_t pid = proc_spawn(&sp, s_on_exit, owner);
    assert_true(pid > 0);
    return pid;
}

/* Whether pid is still an unreaped child of ours (running, or a zombie nobody waited for). */
static int s_unreaped(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static void test_other_owner_cannot_signal_or_wait(void **state)
{
    struct seen a = { 0 }, b = { 0 };
    pid_t pid = s_sh("exec sleep 30", 0, &a);
    assert_true(proc_owned(pid));
    assert_int_equal(proc_signal(pid, &b, SIGKILL), -1);
    assert_int_equal(errno, ESRCH);
    assert_int_equal(proc_signal_group(pid, &a, SIGKILL), -1); /* not a group leader */
    assert_int_equal(errno, ESRCH);
    assert_int_equal(proc_wait(pid, &b, 0, NULL), -1);
    assert_int_equal(errno, ESRCH);
    assert_int_equal(proc_deadline(pid, &b, loop_now_ns(), NULL), -1);
    proc_disown(pid, &b); /* ignored: not b's */
    assert_int_equal(kill(pid, 0), 0);
    /* A pid that is not ours at all (our own) is refused too. */
    assert_int_equal(proc_signal(getpid(), &a, 0), -1);
    /* Its owner may: a bounded look first, then the end. */
    assert_int_equal(proc_wait(pid, &a, 50, NULL), -1);
    assert_int_equal(errno, ETIMEDOUT);
    assert_true(proc_owned(pid));
    assert_int_equal(proc_signal(pid, &a, SIGKILL), 0);
    int st = 0;
    assert_int_equal(proc_wait(pid, &a, 5000, &st), 0);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_false(proc_owned(pid));
    assert_int_equal(a.calls, 0); /* waited for: no callback */
    assert_int_equal(proc_signal(pid, &a, 0), -1); /* reaped: no longer ours */
}

/* An ended child of a is a zombie only a may reap: b's wait and the strays' reaper leave it. */
static void test_no_reap_of_another_owners_zombie(void **state)
{
    struct seen a = { 0 }, b = { 0 };
    pid_t pid = s_sh("exit 7", 0, &a);
    for (int i = 0; i < 5000; i++) { /* until it has exited (a zombie), without reaping it */
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
            break;
        usleep(1000);
    }
    assert_int_equal(proc_wait(pid, &b, 100, NULL), -1);
    assert_int_equal(errno, ESRCH);
    pid_t list[1] = { pid };
    int n = 1;
    proc_reap_strays(list, &n, loop_now_ns());
    assert_true(s_unreaped(pid));
    int st = 0;
    assert_int_equal(proc_wait(pid, &a, 0, &st), 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    assert_false(s_unreaped(pid));
}

/* A one-shot child: started, waited for, its status. */
static void test_run(void **state)
{
    char *argv[] = { "sh", "-c", "exit 5", NULL };
    struct proc_spawn sp = PROC_SPAWN_INIT;
    sp.path = "sh";
    sp.argv = argv;
    sp.search = 1;
    int st = 0;
    assert_int_equal(proc_run(&sp, &st), 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 5);
    sp.path = "no-such-program-here";
    assert_int_equal(proc_run(&sp, &st), -1);
    assert_int_equal(errno, ENOENT);
}

static void test_group_signal(void **state)
{
    struct seen a = { 0 };
    pid_t pid = s_sh("sleep 30 & wait", 1, &a);
    assert_int_equal(proc_signal_group(pid, &a, SIGKILL), 0);
    int st = 0;
    assert_int_equal(proc_wait(pid, &a, 5000, &st), 0);
    assert_true(WIFSIGNALED(st));
}

/* The loop reaps: each owner hears of its own child only; a child nobody registered is reaped silently. */
static void test_loop_tells_owner(void **state)
{
    loop_t *l = loop_new();
    char err[256];
    struct seen a = { .loop = l, .stop_after = 1 }, b = { 0 };
    assert_int_equal(proc_attach(l, err, sizeof err), 0);
    pid_t stray = fork();
    if (stray == 0)
        _exit(0);
    pid_t pb = s_sh("exec sleep 30", 0, &b);
    pid_t pa = s_sh("exit 3", 0, &a);
    int gave_up = 0;
    loop_timer_after_ms(l, 10000, s_give_up, &gave_up);
    assert_int_equal(loop_run(l), 0);
    assert_false(gave_up);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.last.pid, pa);
    assert_true(WIFEXITED(a.last.status) && WEXITSTATUS(a.last.status) == 3);
    assert_int_equal(a.last.late, 0);
    assert_int_equal(b.calls, 0);
    assert_true(proc_owned(pb) && s_unreaped(pb));
    /* the stray is gone once its SIGCHLD was taken: wait for it briefly through another round */
    for (int i = 0; i < 200 && s_unreaped(stray); i++) {
        loop_timer_after_ms(l, 10, s_give_up, &gave_up);
        loop_run(l);
    }
    assert_false(s_unreaped(stray));
    proc_signal(pb, &b, SIGKILL);
    assert_int_equal(proc_wait(pb, &b, 5000, NULL), 0);
    proc_detach();
    loop_destroy(&l);
}

static void test_deadline_kills(void **state)
{
    loop_t *l = loop_new();
    char err[256];
    struct seen a = { .loop = l, .stop_after = 1 };
    assert_int_equal(proc_attach(l, err, sizeof err), 0);
    pid_t pid = s_sh("sleep 30 & wait", 1, &a);
    uint64_t start = loop_now_ns();
    assert_int_equal(proc_deadline(pid, &a, start + 100 * MS, s_on_late), 0);
    int gave_up = 0;
    loop_timer_after_ms(l, 10000, s_give_up, &gave_up);
    assert_int_equal(loop_run(l), 0);
    assert_false(gave_up);
    assert_true(loop_now_ns() >= start + 100 * MS); /* never early */
    assert_int_equal(a.late_calls, 1);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.last.late, 1);
    assert_true(WIFSIGNALED(a.last.status) && WTERMSIG(a.last.status) == SIGKILL);
    proc_detach();
    loop_destroy(&l);
}

/* A disowned child is reaped by the loop and told to nobody; strays never reap a registered child. */
static void test_disown_and_strays(void **state)
{
    loop_t *l = loop_new();
    char err[256];
    struct seen a = { 0 }, b = { 0 };
    assert_int_equal(proc_attach(l, err, sizeof err), 0);
    pid_t pa = s_sh("exit 0", 0, &a);
    pid_t pb = s_sh("exit 0", 0, &b);
    proc_disown(pa, &a);
    assert_true(proc_owned(pa));
    pid_t list[2] = { pb, pb };
    int n = 1;
    assert_int_equal(proc_reap_strays(list, &n, loop_now_ns() + 100 * MS), 0);
    assert_true(s_unreaped(pb)); /* b's: left alone, running or a zombie nobody reaped */
    pid_t stray = fork();
    if (stray == 0)
        _exit(0);
    list[0] = stray;
    n = 1;
    assert_int_equal(proc_reap_strays(list, &n, loop_now_ns() + 5000 * MS), 0);
    assert_false(s_unreaped(stray));
    int gave_up = 0;
    for (int i = 0; i < 200 && proc_owned(pa); i++) {
        loop_timer_after_ms(l, 10, s_give_up, &gave_up);
        loop_run(l);
    }
    assert_false(proc_owned(pa));
    assert_int_equal(a.calls, 0);
    assert_int_equal(b.calls, 1); /* reaped by the same rounds: told to b */
    assert_int_equal(b.last.pid, pb);
    proc_detach();
    loop_destroy(&l);
}

static void test_spawn_errors(void **state)
{
    struct seen a = { 0 };
    char *argv[] = { "nope", NULL };
    struct proc_spawn sp = PROC_SPAWN_INIT;
    sp.path = "/nonexistent/nope";
    sp.argv = argv;
    assert_int_equal(proc_spawn(&sp, s_on_exit, &a), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(proc_add(0, 0, NULL, &a), -1);
    assert_int_equal(errno, EINVAL);
    pid_t pid = s_sh("exit 0", 0, &a);
    assert_int_equal(proc_add(pid, 0, NULL, &a), -1); /* registered once */
    assert_int_equal(errno, EEXIST);
    proc_disown(pid, &a);
    assert_int_equal(proc_signal(pid, NULL, 0), -1); /* a disowned child is nobody's to signal */
    assert_int_equal(proc_wait(pid, NULL, 0, NULL), -1);
}

int main(void)
{
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_owner_cannot_signal_or_wait),
        cmocka_unit_test(test_no_reap_of_another_owners_zombie),
        cmocka_unit_test(test_run),
        cmocka_unit_test(test_group_signal),
        cmocka_unit_test(test_loop_tells_owner),
        cmocka_unit_test(test_deadline_kills),
        cmocka_unit_test(test_disown_and_strays),
        cmocka_unit_test(test_spawn_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
