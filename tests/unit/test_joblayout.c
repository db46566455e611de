/* Unit tests for joblayout: the fan-out tree by rank, property-checked for N 1..100,000 and several fan-outs
 * (every rank exactly one parent, a relay, depth <= log_K(N) + 1, relays the first ranks, children balanced). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/job/joblayout.h"

#define TJ_MAXN 100000

static int s_kids[TJ_MAXN + 1];

/* Every rank of an N-node layout: one parent (the coordinator or a relay), depth within the bound. */
static void s_check_all(const struct joblayout *l)
{
    int n = l->nnodes, r = l->nrelays, k = l->fanout, behind = 0;
    double bound = k >= 2 ? log((double)n) / log((double)k) + 1 + 1e-9 : 2;
    memset(s_kids, 0, sizeof(int) * (size_t)(r + 1));
    for (int c = 0; c < n; c++) {
        int p = joblayout_parent(l, c);
        int depth = p < 0 ? 1 : 2;
        if (p >= 0) {
            if (!joblayout_is_relay(l, p) || joblayout_parent(l, p) != -1 || p >= c)
                fail_msg("N %d K %d: rank %d has parent %d, no relay of depth 1 before it", n, k, c, p);
            s_kids[p]++;
            behind++;
        } else if (c != 0 && !joblayout_is_relay(l, c) && r) {
            fail_msg("N %d K %d: rank %d is neither the coordinator's node nor a relay, and has no parent", n, k, c);
        }
        if (joblayout_is_relay(l, c) && (c < 1 || c > r))
            fail_msg("N %d K %d: relay %d is not one of the first ranks 1..%d", n, k, c, r);
        if (depth > bound)
            fail_msg("N %d K %d: rank %d at depth %d > log_K(N) + 1 = %.2f", n, k, c, depth, bound);
    }
    assert_int_equal(behind, r ? n - 1 - r : 0);
    for (int p = 1; p <= r; p++) {
        if (s_kids[p] != joblayout_children(l, p) || s_kids[p] > k || s_kids[p] < s_kids[r] ||
            s_kids[p] > s_kids[1])
            fail_msg("N %d K %d: relay %d holds %d nodes (said %d)", n, k, p, s_kids[p], joblayout_children(l, p));
        assert_true(joblayout_max_children(l, 65535) >= s_kids[p]);
    }
}

/* The same without walking every rank: counts, and the parents of the first, last and some random ranks. */
static void s_check_sampled(const struct joblayout *l)
{
    int n = l->nnodes, r = l->nrelays, k = l->fanout, sum = 0;
    for (int p = 1; p <= r && r <= 512; p++) { /* every relay's share adds up to the nodes behind relays */
        int c = joblayout_children(l, p);
        assert_true(c <= k);
        sum += c;
    }
    if (r <= 512)
        assert_int_equal(sum, r ? n - 1 - r : 0);
    if (r) /* the largest and smallest shares */
        assert_true(joblayout_children(l, 1) <= k && joblayout_children(l, 1) - joblayout_children(l, r) <= 1);
    if (r)
        assert_true(r * (k + 1) >= n - 1 && (r - 1) * (k + 1) < n - 1); /* as few relays as K allows */
    int probe[] = { 0, 1, r, r + 1, n - 1, rand() % n, rand() % n, rand() % n, rand() % n };
    for (size_t i = 0; i < sizeof probe / sizeof *probe; i++) {
        int c = probe[i], p = joblayout_parent(l, c);
        if (c < 0 || c >= n)
            continue;
        assert_true(p == -1 || (joblayout_is_relay(l, p) && p < c && c > r));
        assert_true(p != -1 || c <= r);
    }
}

static void test_properties(void **state)
{
    const int fanouts[] = { -1, 1, 2, 3, 8, 64, 128, 1000 };
    srand(31);
    for (size_t f = 0; f < sizeof fanouts / sizeof *fanouts; f++)
        for (int n = 1; n <= TJ_MAXN; n++) {
            struct joblayout l;
            joblayout_plan(&l, n, fanouts[f]);
            assert_int_equal(l.nnodes, n);
            if (n <= 3000 || n % 997 == 0 || n == TJ_MAXN)
                s_check_all(&l);
            else
                s_check_sampled(&l);
        }
}

static void test_shapes(void **state)
{
    struct joblayout l;
    joblayout_plan(&l, 9, 2); /* tests/bb/relay_ranked.t's: relays 1..3, two nodes each */
    assert_int_equal(l.nrelays, 3);
    assert_int_equal(joblayout_parent(&l, 4), 1);
    assert_int_equal(joblayout_parent(&l, 5), 2);
    assert_int_equal(joblayout_parent(&l, 6), 3);
    assert_int_equal(joblayout_parent(&l, 7), 1);
    assert_int_equal(joblayout_parent(&l, 8), 2);
    assert_int_equal(joblayout_children(&l, 1), 2);
    assert_int_equal(joblayout_children(&l, 3), 1);
    joblayout_plan(&l, 16384, -1); /* the coordinator's own count (coord_relay.c): 127 relays of 128 */
    assert_int_equal(l.fanout, 128);
    assert_int_equal(l.nrelays, 127);
    joblayout_plan(&l, 512, -1); /* auto: no tree up to 512 nodes */
    assert_int_equal(l.nrelays, 0);
    joblayout_plan(&l, 100, 0); /* off */
    assert_int_equal(l.nrelays, 0);
    assert_int_equal(joblayout_parent(&l, 50), -1);
    joblayout_plan(&l, 5, 4); /* N - 1 <= K: the coordinator holds them all */
    assert_int_equal(l.nrelays, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_properties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
