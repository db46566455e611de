/* Unit tests for hindex: lookups through the caller's match, stale entries reused and dropped, growth, the keyed
 * hash. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "common/hindex.h"

#define N 5000

/* keys[v]: value v's key (0: none, a stale entry). */
static unsigned keys[N];

static int s_match(void *arg, int v, uint32_t hash)
{
    return keys[v] == *(const unsigned *)arg;
}

static int s_live(void *arg, int v, uint32_t hash)
{
    return keys[v] && hindex_hash(&keys[v], sizeof keys[v], HINDEX_SEED) == hash;
}

static uint32_t s_h(unsigned key)
{
    return hindex_hash(&key, sizeof key, HINDEX_SEED);
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

/* The reference vectors of SipHash-2-4 (key 00..0f, message 00..n-1), and the process key in use. */
static void test_keyed_hash(void **state)
{
    const uint64_t key[2] = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };
    unsigned char msg[15];
    for (int i = 0; i < 15; i++)
        msg[i] = (unsigned char)i;
    assert_true(hindex_siphash(key, msg, 0) == 0x726fdb47dd0e0e31ull);
    assert_true(hindex_siphash(key, msg, 1) == 0x74f839c593dc67fdull);
    assert_true(hindex_siphash(key, msg, 8) == 0x93f5f5799a932462ull);
    assert_true(hindex_siphash(key, msg, 15) == 0xa129ca6149be45e5ull);
    /* the index's hash is keyed by this process: stable within it, not the unkeyed function */
    assert_int_equal(hindex_hash(msg, 15, HINDEX_SEED), hindex_hash(msg, 15, HINDEX_SEED));
    assert_int_not_equal(hindex_hash(msg, 15, HINDEX_SEED), hindex_hash(msg, 15, 1));
    const uint64_t zero[2] = { 0, 0 };
    assert_int_not_equal(hindex_hash(msg, 15, HINDEX_SEED), (uint32_t)hindex_siphash(zero, msg, 15));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_find),
        cmocka_unit_test(test_stale_entries_go),
        cmocka_unit_test(test_keyed_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
