/* Unit tests for metrics_text: the Prometheus text format's escaping, values, base labels and the bound. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "launcher/metrics/metrics_text.h"

static const char *const s_base[] = { "job_id", "j1", "node", "n\"1" };

static void test_family_and_labels(void **state)
{
    struct mtext t;
    mtext_init(&t, s_base, 2);
    const char *kv[] = { "rank", "3", "cause", "a\\b\nc\"d" };
    mtext_family(&t, "plaunch_x_total", "counter", "Help with \\ and\nnewline \"kept\".");
    mtext_sample(&t, "plaunch_x_total", kv, 2, 7);
    assert_string_equal(mtext_str(&t),
                        "# HELP plaunch_x_total Help with \\\\ and\\nnewline \"kept\".\n"
                        "# TYPE plaunch_x_total counter\n"
                        "plaunch_x_total{job_id=\"j1\",node=\"n\\\"1\",rank=\"3\",cause=\"a\\\\b\\nc\\\"d\"} 7\n");
    mtext_free(&t);
}

static void test_values(void **state)
{
    struct mtext t;
    mtext_init(&t, NULL, 0);
    mtext_sample(&t, "a", NULL, 0, NAN);
    mtext_sample(&t, "b", NULL, 0, INFINITY);
    mtext_sample(&t, "c", NULL, 0, -INFINITY);
    mtext_sample(&t, "d", NULL, 0, 0.25);
    mtext_sample(&t, "e", NULL, 0, 12345678901.0);
    mtext_sample(&t, "f", NULL, 0, -3);
    assert_string_equal(mtext_str(&t), "a NaN\nb +Inf\nc -Inf\nd 0.25\ne 12345678901\nf -3\n");
    mtext_free(&t);
}

/* Past MTEXT_MAX samples are left out whole: the text still ends with a complete line. */
static void test_bound(void **state)
{
    struct mtext t;
    char v[200];
    memset(v, 'x', sizeof v - 1);
    v[sizeof v - 1] = '\0';
    const char *kv[] = { "v", v };
    mtext_init(&t, s_base, 2);
    mtext_family(&t, "big", "gauge", "big");
    for (int i = 0; i < 40000; i++)
        mtext_sample(&t, "big", kv, 1, i);
    assert_true(t.truncated);
    assert_true(t.len <= MTEXT_MAX);
    assert_int_equal(t.buf[t.len - 1], '\n');
    assert_int_equal(strlen(mtext_str(&t)), t.len);
    mtext_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_and_labels),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
