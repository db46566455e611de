/* Unit tests for coord: NCCL ids by key (put before or after get, one answer per waiting agent), barriers (complete,
 * reusable, aborted by a new generation), refusals of other generations and of ranks outside the world. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "coord.h"

#define JOB "job-unit"

/* Everything the coordinator sent, decoded back: what each agent would receive. */
struct sent {
    int peer[64];
    wire_msg_t *msg[64];
    int n;
};

static int s_capture(void *arg, int peer, const wire_msg_t *m)
{
    struct sent *s = arg;
    char err[256];
    size_t len;
    void *buf = wire_encode_alloc(m, &len, err, sizeof err);
    assert_non_null(buf);
    assert_true(s->n < 64);
    s->peer[s->n] = peer;
    s->msg[s->n] = wire_decode(buf, len, WIRE_TO_AGENT, err, sizeof err);
    assert_non_null(s->msg[s->n]);
    s->n++;
    free(buf);
    return 0;
}

static void s_reset(struct sent *s)
{
    for (int i = 0; i < s->n; i++)
        wire_free(&s->msg[i]);
    s->n = 0;
}

static void s_put(coord_t *c, uint32_t gen, int peer, const char *key, unsigned char fill)
{
    unsigned char id[WIRE_NCCL_ID_BYTES];
    Plaunch__NcclIdPut put = PLAUNCH__NCCL_ID_PUT__INIT;
    wire_msg_t m;
    memset(id, fill, sizeof id);
    put.key = (char *)key;
    put.rank = 0;
    put.id.data = id;
    put.id.len = sizeof id;
    wire_init(&m, JOB, gen, WIRE_NCCL_ID_PUT, &put);
    coord_on_msg(c, peer, &m);
}

static void s_get(coord_t *c, uint32_t gen, int peer, const char *key, uint32_t rank)
{
    Plaunch__NcclIdGet get = PLAUNCH__NCCL_ID_GET__INIT;
    wire_msg_t m;
    get.key = (char *)key;
    get.rank = rank;
    wire_init(&m, JOB, gen, WIRE_NCCL_ID_GET, &get);
    coord_on_msg(c, peer, &m);
}

static void s_barrier(coord_t *c, uint32_t gen, int peer, const char *key, uint32_t rank)
{
    Plaunch__Barrier b = PLAUNCH__BARRIER__INIT;
    wire_msg_t m;
    b.key = (char *)key;
    b.rank = rank;
    wire_init(&m, JOB, gen, WIRE_BARRIER, &b);
    coord_on_msg(c, peer, &m);
}

static void test_id_get_before_put(void **state)
{
    struct sent s = { 0 };
    coord_t *c = coord_new(JOB, NULL, s_capture, &s);
    coord_set_generation(c, 0, 4);
    s_get(c, 0, 1, "world", 1);
    s_get(c, 0, 1, "world", 2); /* same agent twice: one answer serves both of its workers */
    s_get(c, 0, 2, "world", 3);
    assert_int_equal(s.n, 0);
    s_put(c, 0, 0, "world", 0xab);
    assert_int_equal(s.n, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(s.msg[i]->body_case, WIRE_NCCL_ID);
        assert_string_equal(s.msg[i]->nccl_id->key, "world");
        assert_int_equal(s.msg[i]->nccl_id->id.data[0], 0xab);
        assert_int_equal(s.msg[i]->nccl_id->id.data[127], 0xab);
    }
    assert_true((s.peer[0] == 1 && s.peer[1] == 2) || (s.peer[0] == 2 && s.peer[1] == 1));
    s_reset(&s);
    s_get(c, 0, 3, "world", 0); /* late: answered at once */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.peer[0], 3);
    s_reset(&s);
    coord_destroy(&c);
    assert_null(c);
}

static void test_keys_are_separate_and_first_put_wins(void **state)
{
    struct sent s = { 0 };
    coord_t *c = coord_new(JOB, NULL, s_capture, &s);
    coord_set_generation(c, 0, 2);
    s_put(c, 0, 0, "a", 0x11);
    s_put(c, 0, 0, "b", 0x22);
    s_put(c, 0, 0, "a", 0x33); /* a second id for the same key is ignored */
    s_get(c, 0, 1, "a", 1);
    s_get(c, 0, 1, "b", 1);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.msg[0]->nccl_id->id.data[5], 0x11);
    assert_int_equal(s.msg[1]->nccl_id->id.data[5], 0x22);
    s_reset(&s);
    coord_destroy(&c);
}

static void test_new_generation_forgets_ids(void **state)
{
    struct sent s = { 0 };
    coord_t *c = coord_new(JOB, NULL, s_capture, &s);
    coord_set_generation(c, 0, 2);
    s_put(c, 0, 0, "world", 0x44);
    coord_set_generation(c, 1, 2);
    s_get(c, 1, 1, "world", 1);
    assert_int_equal(s.n, 0); /* generation 1 waits for its own rank 0 */
    s_get(c, 0, 1, "world", 1); /* a request of generation 0 is refused */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.msg[0]->body_case, WIRE_REFUSE);
    assert_int_equal(s.msg[0]->refuse->code, PLAUNCH__REFUSE__CODE__STALE_GENERATION);
    s_reset(&s);
    s_put(c, 1, 0, "world", 0x55);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.msg[0]->nccl_id->id.data[0], 0x55);
    s_reset(&s);
    coord_destroy(&c);
}

static void test_barrier_completes_and_is_reusable(void **state)
{
    struct sent s = { 0 };
    coord_t *c = coord_new(JOB, NULL, s_capture, &s);
    coord_set_generation(c, 0, 3);
    for (int round = 0; round < 2; round++) {
        s_barrier(c, 0, 1, "step", 0);
        s_barrier(c, 0, 1, "step", 0); /* a repeated arrival counts once */
        s_barrier(c, 0, 2, "step", 1);
        assert_int_equal(s.n, 0);
        s_barrier(c, 0, 2, "step", 2);
        assert_int_equal(s.n, 2); /* one BARRIER_DONE per agent that has a rank there */
        for (int i = 0; i < 2; i++) {
            assert_int_equal(s.msg[i]->body_case, WIRE_BARRIER_DONE);
            assert_int_equal(s.msg[i]->barrier_done->status, PLAUNCH__BARRIER_DONE__STATUS__OK);
        }
        s_reset(&s);
    }
    coord_destroy(&c);
}

static void test_barrier_aborted_by_new_generation(void **state)
{
    struct sent s = { 0 };
    coord_t *c = coord_new(JOB, NULL, s_capture, &s);
    coord_set_generation(c, 0, 2);
    s_barrier(c, 0, 1, "sync", 0);
    coord_set_generation(c, 1, 2);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.msg[0]->barrier_done->status, PLAUNCH__BARRIER_DONE__STATUS__ABORTED);
    s_reset(&s);
    s_barrier(c, 1, 1, "sync", 5); /* rank outside a world of 2 */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.msg[0]->body_case, WIRE_REFUSE);
    s_reset(&s);
    coord_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_get_before_put),
        cmocka_unit_test(test_keys_are_separate_and_first_put_wins),
        cmocka_unit_test(test_new_generation_forgets_ids),
        cmocka_unit_test(test_barrier_completes_and_is_reusable),
        cmocka_unit_test(test_barrier_aborted_by_new_generation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
