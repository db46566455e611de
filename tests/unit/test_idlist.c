/* Unit tests for idlist_parse: id lists, ascending ranges, limits and messages that name the bad part. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/idlist.h"

/* Parses spec as rank ids in [0, 99] (at most 8) and checks the ids match want[0..nwant). */
static void s_expect_ids(const char *spec, const int *want, int nwant)
{
    int ids[8];
    char err[256] = "";
    int n = idlist_parse(spec, "rank", 99, ids, 8, err, sizeof err);
    if (n != nwant)
        fail_msg("'%s': got %d ids (err '%s'), want %d", spec, n, err, nwant);
    for (int i = 0; i < nwant; i++)
        assert_int_equal(ids[i], want[i]);
}

/* Parses spec expecting failure; the message must contain each of the NULL-terminated needles. */
static void s_expect_error(const char *spec, int maxval, int max, ...)
{
    int ids[8];
    char err[256] = "";
    assert_true(max <= 8);
    int n = idlist_parse(spec, "rank", maxval, ids, max, err, sizeof err);
    if (n != -1)
        fail_msg("'%s' was accepted (%d ids)", spec ? spec : "(null)", n);
    va_list ap;
    va_start(ap, max);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;)
        if (!strstr(err, needle))
            fail_msg("'%s': message '%s' does not contain '%s'", spec ? spec : "(null)", err, needle);
    va_end(ap);
}

static void test_single_ids_and_lists(void **state)
{
    s_expect_ids("0", (int[]){ 0 }, 1);
    s_expect_ids("7", (int[]){ 7 }, 1);
    s_expect_ids("3,1,2", (int[]){ 3, 1, 2 }, 3);  /* order is kept, not sorted */
    s_expect_ids("99", (int[]){ 99 }, 1);          /* maxval itself is allowed */
    s_expect_ids("007", (int[]){ 7 }, 1);
}

static void test_ranges(void **state)
{
    s_expect_ids("0-3", (int[]){ 0, 1, 2, 3 }, 4);
    s_expect_ids("5-5", (int[]){ 5 }, 1);
    s_expect_ids("0,2-3,7", (int[]){ 0, 2, 3, 7 }, 4);
    s_expect_ids("6-7,0-1", (int[]){ 6, 7, 0, 1 }, 4);
}

static void test_duplicates_rejected(void **state)
{
    s_expect_error("0,0", 99, 8, "rank 0 is listed twice", NULL);
    s_expect_error("0-3,2", 99, 8, "rank 2 is listed twice", NULL);
    s_expect_error("1-2,2-3", 99, 8, "rank 2 is listed twice", NULL);
}

static void test_malformed_parts_named(void **state)
{
    s_expect_error("0-", 99, 8, "'0-'", "ascending range", NULL);
    s_expect_error("-1", 99, 8, "'-1'", NULL);
    s_expect_error("a", 99, 8, "'a'", "not a rank id", NULL);
    s_expect_error("3-1", 99, 8, "'3-1'", "ascending", NULL);
    s_expect_error("1,,2", 99, 8, "''", NULL);
    s_expect_error("1,", 99, 8, "''", NULL);
    s_expect_error(",1", 99, 8, "''", NULL);
    s_expect_error("0,x1,2", 99, 8, "'x1'", NULL);
    s_expect_error(" 1", 99, 8, "' 1'", NULL);
    s_expect_error("1 ", 99, 8, "'1 '", NULL);
    s_expect_error("+1", 99, 8, "'+1'", NULL);
    s_expect_error("1-2-3", 99, 8, "'1-2-3'", NULL);
    s_expect_error("0x1", 99, 8, "'0x1'", NULL);
}

static void test_empty_and_null(void **state)
{
    s_expect_error("", 99, 8, "empty rank list", NULL);
    s_expect_error(NULL, 99, 8, "empty rank list", NULL);
}

static void test_out_of_range_names_limit(void **state)
{
    s_expect_error("100", 99, 8, "'100'", "0..99", NULL);
    s_expect_error("98-100", 99, 8, "'98-100'", NULL);
    /* Overlong numbers must not wrap around into a small id. */
    s_expect_error("4294967296", 1 << 24, 8, "'4294967296'", NULL);
    s_expect_error("99999999999999999999", 1 << 24, 8, "'99999999999999999999'", NULL);
}

static void test_too_many_ids(void **state)
{
    s_expect_error("0-8", 99, 8, "more than 8 rank ids", NULL);
    s_expect_error("0,1,2", 99, 2, "more than 2 rank ids", NULL);
    /* A huge range is refused at the count limit, not walked to its end. */
    s_expect_error("0-16777215", 1 << 24, 8, "more than 8", NULL);
}

static void test_long_spec_message_is_truncated_safely(void **state)
{
    char spec[4096], err[64];
    int ids[4];
    memset(spec, '9', sizeof spec - 1);
    spec[sizeof spec - 1] = '\0';
    assert_int_equal(idlist_parse(spec, "GPU", 1023, ids, 4, err, sizeof err), -1);
    assert_true(strlen(err) < sizeof err);
    assert_non_null(strstr(err, "'999"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_ids_and_lists),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_duplicates_rejected),
        cmocka_unit_test(test_malformed_parts_named),
        cmocka_unit_test(test_empty_and_null),
        cmocka_unit_test(test_out_of_range_names_limit),
        cmocka_unit_test(test_too_many_ids),
        cmocka_unit_test(test_long_spec_message_is_truncated_safely),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
