/* Unit tests for sched_hostlist: Slurm host lists expanded as scontrol does, every refusal named, the bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "launcher/sched/sched_hostlist.h"

#define TH_MAX 64  /* hosts one test collects */

struct th_hosts {
    int n, stop_at;  /* stop_at: the index whose callback returns 1 (-1: never) */
    char name[TH_MAX][SCHED_HOSTLIST_NAME_MAX + 1];
};

static int s_collect(void *arg, int index, const char *name)
{
    struct th_hosts *h = arg;
    assert_int_equal(index, h->n);
    assert_true(h->n < TH_MAX);
    assert_true(strlen(name) <= SCHED_HOSTLIST_NAME_MAX);
    strcpy(h->name[h->n++], name);
    return index == h->stop_at;
}

static int s_never(void *arg, int index, const char *name)
{
    fail_msg("callback called for host %d '%s' of a list that is refused", index, name);
    return 1;
}

/* Expands expr and checks it gives exactly the space-separated hosts of want, by each and by nth. */
static void s_expect(const char *expr, const char *want)
{
    struct th_hosts h = { .stop_at = -1 };
    char err[256] = "", words[4096], out[SCHED_HOSTLIST_NAME_MAX + 1];
    int n = sched_hostlist_each(expr, TH_MAX, s_collect, &h, err, sizeof err);
    if (n < 0)
        fail_msg("'%s' refused: %s", expr, err);
    assert_int_equal(n, h.n);
    assert_int_equal(sched_hostlist_each(expr, TH_MAX, NULL, NULL, err, sizeof err), n);
    snprintf(words, sizeof words, "%s", want);
    int i = 0;
    for (char *save, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save), i++) {
        if (i >= n)
            fail_msg("'%s' gives %d hosts, want more (next '%s')", expr, n, w);
        if (strcmp(h.name[i], w) != 0)
            fail_msg("'%s' host %d is '%s', want '%s'", expr, i, h.name[i], w);
        assert_int_equal(sched_hostlist_nth(expr, i, out, sizeof out, err, sizeof err), 0);
        if (strcmp(out, w) != 0)
            fail_msg("'%s' nth %d is '%s', want '%s'", expr, i, out, w);
    }
    if (i != n)
        fail_msg("'%s' gives %d hosts, want %d", expr, n, i);
}

/* Checks that expr is refused (by each with max hosts, and by nth) with a message holding every needle. */
static void s_expect_error_max(const char *expr, int max, ...)
{
    char err[256] = "", out[16];
    int n = sched_hostlist_each(expr, max, s_never, NULL, err, sizeof err);
    if (n != -1)
        fail_msg("'%s' was accepted (%d hosts)", expr ? expr : "(null)", n);
    va_list ap;
    va_start(ap, max);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;)
        if (!strstr(err, needle))
            fail_msg("'%s': message '%s' does not contain '%s'", expr ? expr : "(null)", err, needle);
    va_end(ap);
    if (max == TH_MAX && !strstr(err, "more than"))  /* nth has no bound but INT_MAX */
        assert_int_equal(sched_hostlist_nth(expr, 0, out, sizeof out, err, sizeof err), -1);
}
#define s_expect_error(expr, ...) s_expect_error_max(expr, TH_MAX, __VA_ARGS__, NULL)

static void test_plain_names_and_lists(void **state)
{
    s_expect("node1", "node1");
    s_expect("a,b,c", "a b c");
    s_expect("node[1-3]", "node1 node2 node3");
    s_expect("gpu[001-004,010],login-a", "gpu001 gpu002 gpu003 gpu004 gpu010 login-a");
    s_expect("[1-2]", "1 2");             /* no prefix */
    s_expect("a1[2-3]", "a12 a13");       /* digits before the group stay */
    s_expect("a[5-5],b[7]", "a5 b7");
    s_expect("a.b_c:d+e[1],-x", "a.b_c:d+e1 -x");  /* any other character is part of a name */
    s_expect("\xc3\xa9[1-2]", "\xc3\xa9" "1 \xc3\xa9" "2");
}

/* Widths as `scontrol show hostnames` prints them: the low end's digits, whatever the high end has. */
static void test_zero_padding(void **state)
{
    s_expect("a[8-10]", "a8 a9 a10");
    s_expect("a[08-10]", "a08 a09 a10");
    s_expect("a[008-10]", "a008 a009 a010");
    s_expect("a[8-010]", "a8 a9 a10");
    s_expect("a[0-02]", "a0 a1 a2");
    s_expect("a[00-02]", "a00 a01 a02");
    s_expect("a[007]", "a007");
    s_expect("a[01-1],b[001-0002]", "a01 b001 b002");
    s_expect("a[9-10],b[09-10]", "a9 a10 b09 b10");
}

/* Several groups: the last varies fastest, then the first, the second, ... (scontrol's order). */
static void test_cartesian_order(void **state)
{
    s_expect("rack[1-2]-n[01-02]", "rack1-n01 rack1-n02 rack2-n01 rack2-n02");
    s_expect("a[1-2]b[1-2]c[1-2]", "a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 a1b2c2 a2b2c1 a2b2c2");
    s_expect("w[1-2]x[1-3]y[1-2]", "w1x1y1 w1x1y2 w2x1y1 w2x1y2 w1x2y1 w1x2y2 w2x2y1 w2x2y2 "
                                   "w1x3y1 w1x3y2 w2x3y1 w2x3y2");
    s_expect("a[1-2,5]b[1-2]", "a1b1 a1b2 a2b1 a2b2 a5b1 a5b2");
    s_expect("a[1,3]b[1,3]c[1,3]", "a1b1c1 a1b1c3 a3b1c1 a3b1c3 a1b3c1 a1b3c3 a3b3c1 a3b3c3");
    s_expect("a[1][2]", "a12");
    s_expect("x[1-2]y[3-4]z[5-6],q", "x1y3z5 x1y3z6 x2y3z5 x2y3z6 x1y4z5 x1y4z6 x2y4z5 x2y4z6 q");
    s_expect("a[1]b[2]c[3]d[4]e[5]f[6]g[7]h[8]", "a1b2c3d4e5f6g7h8");  /* SCHED_HOSTLIST_GROUPS_MAX */
}

static void test_duplicates_kept_in_order(void **state)
{
    s_expect("a[1,1,2]", "a1 a1 a2");
    s_expect("a,a", "a a");
    s_expect("a[1-2],a1", "a1 a2 a1");
    s_expect("a[1-3,2]", "a1 a2 a3 a2");
}

static void test_large_numbers(void **state)
{
    s_expect("a[99999999999]", "a99999999999");
    s_expect("a[18446744073709551614-18446744073709551615]", "a18446744073709551614 a18446744073709551615");
    s_expect_error("a[18446744073709551616]", "number 18446744073709551616 is too large");
    s_expect_error("a[1-99999999999999999999]", "number 99999999999999999999 is too large");
    char expr[SCHED_HOSTLIST_NAME_MAX + 8] = "a[";
    memset(expr + 2, '0', SCHED_HOSTLIST_NAME_MAX + 1);
    strcpy(expr + 2 + SCHED_HOSTLIST_NAME_MAX + 1, "]");
    s_expect_error(expr, "has 256 digits (at most 255)");
}

static void test_malformed_parts_named(void **state)
{
    s_expect_error("gpu[3-1]", "'gpu[3-1]': range 3-1 goes down");
    s_expect_error("a[1-2],b[10-9]", "range 10-9 goes down");
    s_expect_error("a[x]", "range 'x' at character 3 is not N or N-M");
    s_expect_error("login-[a-c]", "range 'a-c' at character 8");
    s_expect_error("a[+1]", "range '+1'");
    s_expect_error("a[ 1]", "range ' 1'");
    s_expect_error("a[1-]", "range '1-'");
    s_expect_error("a[-1]", "range '-1'");
    s_expect_error("a[1-2-3]", "range '1-2-3'");
    s_expect_error("a[1--2]", "range '1--2'");
    s_expect_error("a[0x1]", "range '0x1'");
    s_expect_error("a[1,2,y]", "range 'y' at character 7");
    s_expect_error("a[]", "empty range at character 3");
    s_expect_error("a[1,]", "empty range at character 5");
    s_expect_error("a[,1]", "empty range at character 3");
}

static void test_brackets(void **state)
{
    s_expect_error("a]", "']' at character 2 without '['");
    s_expect_error("a[1]]", "']' at character 5 without '['");
    s_expect_error("a[1-2", "'[' at character 2 is never closed");
    s_expect_error("a[1-2],b[", "'[' at character 9 is never closed");
    s_expect_error("a[[1]]", "'[' inside '[' at character 3");
    s_expect_error("a[1[2]]", "'[' inside '[' at character 4");
    s_expect_error("a[1-2]b", "'b' at character 7 follows the last ']' of an item");
    s_expect_error("a[1-2].ex.com", "'.ex.com' at character 7 follows");
    s_expect_error("a[1-2]b[3-4]c", "'c' at character 13 follows");
    s_expect_error("a[1]b[2]c[3]d[4]e[5]f[6]g[7]h[8]i[9]", "more than 8 bracket groups");
}

/* scontrol skips empty items and splits at white space; here both are refused. */
static void test_empty_items_and_spaces(void **state)
{
    s_expect_error(NULL, "the host list is empty");
    s_expect_error("", "the host list is empty");
    s_expect_error("a,,b", "empty item at character 3");
    s_expect_error("a,", "empty item at character 3");
    s_expect_error(",a", "empty item at character 1");
    s_expect_error(",", "empty item at character 1");
    s_expect_error("a b", "a space at character 2");
    s_expect_error("a, b", "a space at character 3");
    s_expect_error("a\tb", "a tab at character 2");
    s_expect_error("a\n", "a newline at character 2");
    s_expect_error("a\x01", "control character 0x01 at character 2");
    s_expect_error("a\x7f", "control character 0x7f");
}

static void test_name_length(void **state)
{
    char expr[SCHED_HOSTLIST_NAME_MAX + 16];
    memset(expr, 'n', SCHED_HOSTLIST_NAME_MAX);
    expr[SCHED_HOSTLIST_NAME_MAX] = '\0';
    s_expect(expr, expr);
    strcpy(expr + SCHED_HOSTLIST_NAME_MAX - 2, "[9-10]");  /* 253 + up to 2 digits: fits */
    assert_int_equal(sched_hostlist_each(expr, TH_MAX, NULL, NULL, NULL, 0), 2);
    strcpy(expr + SCHED_HOSTLIST_NAME_MAX - 2, "[9-100]");  /* 100 makes 256 */
    s_expect_error(expr, "gives names of 256 characters (at most 255)");
    memset(expr, 'n', SCHED_HOSTLIST_NAME_MAX + 1);
    expr[SCHED_HOSTLIST_NAME_MAX + 1] = '\0';
    s_expect_error(expr, "names of 256 characters");
}

/* The bound: at most max hosts, counted without walking a range, and before any callback. */
static void test_max_hosts(void **state)
{
    assert_int_equal(sched_hostlist_each("a[1-3]", 3, NULL, NULL, NULL, 0), 3);
    s_expect_error_max("a[1-3]", 2, "more than 2 hosts", NULL);
    s_expect_error_max("a,b,c", 2, "more than 2 hosts (counted up to the item at character 5)", NULL);
    s_expect_error_max("a[1-2]b[1-2]", 3, "more than 3 hosts", NULL);
    s_expect_error_max("a[1-2],b[3-1]", 1, "more than 1 hosts", NULL);
    s_expect_error_max("a[1-2],b[3-1]", 10, "range 3-1", NULL);  /* no partial walk before the bad part */
    s_expect_error_max("a", 0, "at most 0 hosts asked for", NULL);

    clock_t t0 = clock();
    s_expect_error("a[0-999999999]", "more than 64 hosts");
    s_expect_error_max("a[0-18446744073709551615]b[0-18446744073709551615]", INT_MAX, "more than 2147483647",
                       NULL);
    assert_int_equal(sched_hostlist_each("a[0-999999999]", INT_MAX, NULL, NULL, NULL, 0), 1000000000);
    char out[32], err[256];
    assert_int_equal(sched_hostlist_nth("a[0-999999999]", 999999999, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "a999999999");
    /* z varies fastest, then x, then y: index = z + 2 * (x + 10 * y). */
    const char *xyz = "x[0-9]y[0-99999999]z[0-1]";
    assert_int_equal(sched_hostlist_nth(xyz, 1999999999, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "x9y99999999z1");
    assert_int_equal(sched_hostlist_nth(xyz, 246913566, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "x3y12345678z0");
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 0.1);
}

static void test_callback_stops(void **state)
{
    struct th_hosts h = { .stop_at = 2 };
    char err[256];
    assert_int_equal(sched_hostlist_each("n[1-5]", 10, s_collect, &h, err, sizeof err), SCHED_HOSTLIST_STOPPED);
    assert_int_equal(h.n, 3);
    assert_string_equal(h.name[2], "n3");
    assert_non_null(strstr(err, "stopped by the caller at host 2 'n3'"));
}

static void test_nth_errors(void **state)
{
    char out[8] = "x", err[256] = "";
    assert_int_equal(sched_hostlist_nth("a[1-3]", 3, out, sizeof out, err, sizeof err), -1);
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "no host at index 3 (the list has 3: 0..2)"));
    assert_int_equal(sched_hostlist_nth("a[1-3]", -1, out, sizeof out, err, sizeof err), -1);
    assert_non_null(strstr(err, "no host at index -1"));
    assert_int_equal(sched_hostlist_nth("abcdefgh", 0, out, sizeof out, err, sizeof err), -1);
    assert_non_null(strstr(err, "host 0 'abcdefgh' has 8 characters, more than fit in 8 bytes"));
    assert_int_equal(sched_hostlist_nth("abcdefg", 0, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "abcdefg");
    assert_int_equal(sched_hostlist_nth("a", 0, NULL, 0, err, sizeof err), -1);
    assert_int_equal(sched_hostlist_nth("a[3-1]", 0, out, sizeof out, NULL, 0), -1);
}

static void test_long_expression_message(void **state)
{
    char expr[4096], err[256];
    memset(expr, 'a', sizeof expr - 1);
    expr[sizeof expr - 1] = '\0';
    memcpy(expr + 4000, "[3-1]", 5);
    assert_int_equal(sched_hostlist_each(expr, 8, NULL, NULL, err, sizeof err), -1);
    /* The expression is shortened so the bad part still fits. */
    assert_non_null(strstr(err, "aaa...': range 3-1 goes down"));
    char small[24];
    assert_int_equal(sched_hostlist_each(expr, 8, NULL, NULL, small, sizeof small), -1);
    assert_true(strlen(small) < sizeof small);
    assert_int_equal(sched_hostlist_each("a\nb[", 8, NULL, NULL, err, sizeof err), -1);
    assert_null(strchr(err, '\n'));  /* control characters of the expression are shown as '?' */
    assert_non_null(strstr(err, "'a?b['"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_names_and_lists),
        cmocka_unit_test(test_zero_padding),
        cmocka_unit_test(test_cartesian_order),
        cmocka_unit_test(test_duplicates_kept_in_order),
        cmocka_unit_test(test_large_numbers),
        cmocka_unit_test(test_malformed_parts_named),
        cmocka_unit_test(test_brackets),
        cmocka_unit_test(test_empty_items_and_spaces),
        cmocka_unit_test(test_name_length),
        cmocka_unit_test(test_max_hosts),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_nth_errors),
        cmocka_unit_test(test_long_expression_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
