/* Unit tests for hindex: lookups through the caller's match, stale entries reused and dropped, growth. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "hindex.h"

#define N 5000

/* keys[v]: value v's key (0: none, a stale entry). */
static unsigned keys[N];

static int s_match(void *arg, int v, uint32_t hash)
{
    return keys[v] == *(const unsigned *)arg;
}

static int s_live(void *arg, int v, uint32_t hash)
{
    return keys[v] && hindex_hash(&keys[v], sizeof keys[v], 2166136261u) == hash;
}

static uint32_t s_h(unsigned key)
{
    return hindex_hash(&key, sizeof key, 2166136261u);
}

static void test_put_find(void **state)
{
    hindex_t h = HINDEX_ZERO;
    unsigned k = 7;
    assert_int_equal(hindex_find(&h, s_h(k), s_match, &k), -1);
    for (int v = 0; v < N; v++) {
        keys[v] = 1000 + (unsigned)v;
        assert_int_equal(hindex_put(&h, s_h(keys[v]), v, s_live, NULL), 0);
    }
    assert_int_equal(hindex_put(&h, s_h(keys[3]), 3, s_live, NULL), 0); /* the same entry once */
    for (int v = 0; v < N; v++) {
        unsigned key = 1000 + (unsigned)v;
        assert_int_equal(hindex_find(&h, s_h(key), s_match, &key), v);
    }
    k = 999;
    assert_int_equal(hindex_find(&h, s_h(k), s_match, &k), -1);
    hindex_free(&h);
}

static void test_stale_entries_go(void **state)
{
    hindex_t h = HINDEX_ZERO;
    /* values come and go many times over: the table stays bounded by the live ones */
    for (int round = 0; round < 50; round++) {
        for (int v = 0; v < 100; v++) {
            keys[v] = (unsigned)(round * 100 + v + 1);
            assert_int_equal(hindex_put(&h, s_h(keys[v]), v, s_live, NULL), 0);
        }
        for (int v = 0; v < 100; v++) {
            unsigned key = (unsigned)(round * 100 + v + 1), old = key > 100 ? key - 100 : 0;
            assert_int_equal(hindex_find(&h, s_h(key), s_match, &key), v);
            if (old)
                assert_int_equal(hindex_find(&h, s_h(old), s_match, &old), -1); /* its value has another key */
        }
    }
    assert_true(h.cap <= 1024);
    hindex_free(&h);
    assert_null(h.slots);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_find),
        cmocka_unit_test(test_stale_entries_go),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
