/* Unit tests for coord: NCCL ids by key (put before or after get, one answer per waiting agent), barriers (complete,
 * reusable, aborted by a new generation, timed out for every rank by the loop's deadlines), refusals that name the
 * request they refuse; and the coordinator ending the job when a message it must send cannot be encoded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "launcher/coord/services/coord_services.h"
#include "launcher/coord/coord_server.h"
#include "launcher/job/job.h"

#define JOB "job-unit"

/* Everything the coordinator sent, decoded back: what each agent would receive. With a loop, the first message
 * stops it (a barrier's deadline passed). */
struct sent {
    int peer[64];
    wire_msg_t *msg[64];
    int n;
    loop_t *loop;
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
    if (s->loop)
        loop_stop(s->loop);
    return 0;
}

static void s_reset(struct sent *s)
{
    for (int i = 0; i < s->n; i++)
        wire_free(&s->msg[i]);
    s->n = 0;
}

static void s_put(coord_services_t *c, uint32_t gen, int peer, const char *key, unsigned char fill)
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
    coord_services_on_msg(c, peer, &m);
}

static void s_get(coord_services_t *c, uint32_t gen, int peer, const char *key, uint32_t rank)
{
    Plaunch__NcclIdGet get = PLAUNCH__NCCL_ID_GET__INIT;
    wire_msg_t m;
    get.key = (char *)key;
    get.rank = rank;
    wire_init(&m, JOB, gen, WIRE_NCCL_ID_GET, &get);
    coord_services_on_msg(c, peer, &m);
}

static void s_barrier_ms(coord_services_t *c, uint32_t gen, int peer, const char *key, uint32_t rank, uint32_t timeout_ms)
{
    Plaunch__Barrier b = PLAUNCH__BARRIER__INIT;
    wire_msg_t m;
    b.key = (char *)key;
    b.rank = rank;
    b.timeout_ms = timeout_ms;
    wire_init(&m, JOB, gen, WIRE_BARRIER, &b);
    coord_services_on_msg(c, peer, &m);
}

static void s_barrier(coord_services_t *c, uint32_t gen, int peer, const char *key, uint32_t rank)
{
    s_barrier_ms(c, gen, peer, key, rank, 0);
}

static int s_give_up(loop_t *loop, int id, void *arg)
{
    *(int *)arg = 1;
    loop_stop(loop);
    return 0;
}

/* Runs the loop until something is sent (a deadline passed); fails after 10 s. Returns the milliseconds it took. */
static double s_run_until_sent(struct sent *s)
{
    int gave_up = 0;
    uint64_t t0 = loop_now_ns();
    int guard = loop_timer_after_ms(s->loop, 10000, s_give_up, &gave_up);
    assert_int_equal(loop_run(s->loop), 0);
    loop_timer_cancel(s->loop, guard);
    assert_false(gave_up);
    return (double)(loop_now_ns() - t0) / 1e6;
}

static void s_expect_done(const struct sent *s, int i, int peer, int status, int nranks, uint32_t rank)
{
    assert_int_equal(s->peer[i], peer);
    assert_int_equal(s->msg[i]->body_case, WIRE_BARRIER_DONE);
    assert_int_equal(s->msg[i]->barrier_done->status, status);
    assert_int_equal(s->msg[i]->barrier_done->n_ranks, nranks);
    if (nranks)
        assert_int_equal(s->msg[i]->barrier_done->ranks[0], rank);
}

static void s_expect_refuse(const struct sent *s, int i, wire_type_t request, const char *key, uint32_t rank,
                            const char *text)
{
    assert_int_equal(s->msg[i]->body_case, WIRE_REFUSE);
    assert_int_equal(s->msg[i]->refuse->request, request);
    assert_string_equal(s->msg[i]->refuse->key, key);
    assert_int_equal(s->msg[i]->refuse->rank, rank);
    if (!strstr(s->msg[i]->refuse->text, text))
        fail_msg("refusal '%s' does not say '%s'", s->msg[i]->refuse->text, text);
}

static void test_id_get_before_put(void **state)
{
    struct sent s = { 0 };
    coord_services_t *c = coord_services_new(JOB, NULL, s_capture, &s);
    coord_services_set_generation(c, 0, 4);
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
    coord_services_destroy(&c);
    assert_null(c);
}

static void test_keys_are_separate_and_first_put_wins(void **state)
{
    struct sent s = { 0 };
    coord_services_t *c = coord_services_new(JOB, NULL, s_capture, &s);
    coord_services_set_generation(c, 0, 2);
    s_put(c, 0, 0, "a", 0x11);
    s_put(c, 0, 0, "b", 0x22);
    s_put(c, 0, 0, "a", 0x33); /* a second id for the same key is ignored */
    s_get(c, 0, 1, "a", 1);
    s_get(c, 0, 1, "b", 1);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.msg[0]->nccl_id->id.data[5], 0x11);
    assert_int_equal(s.msg[1]->nccl_id->id.data[5], 0x22);
    s_reset(&s);
    coord_services_destroy(&c);
}

static void test_new_generation_forgets_ids(void **state)
{
    struct sent s = { 0 };
    coord_services_t *c = coord_services_new(JOB, NULL, s_capture, &s);
    coord_services_set_generation(c, 0, 2);
    s_put(c, 0, 0, "world", 0x44);
    coord_services_set_generation(c, 1, 2);
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
    coord_services_destroy(&c);
}

static void test_barrier_completes_and_is_reusable(void **state)
{
    struct sent s = { 0 };
    coord_services_t *c = coord_services_new(JOB, NULL, s_capture, &s);
    coord_services_set_generation(c, 0, 3);
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
    coord_services_destroy(&c);
}

static void test_barrier_aborted_by_new_generation(void **state)
{
    struct sent s = { 0 };
    coord_services_t *c = coord_services_new(JOB, NULL, s_capture, &s);
    coord_services_set_generation(c, 0, 2);
    s_barrier(c, 0, 1, "sync", 0);
    coord_services_set_generation(c, 1, 2);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.msg[0]->barrier_done->status, PLAUNCH__BARRIER_DONE__STATUS__ABORTED);
    s_reset(&s);
    s_barrier(c, 1, 1, "sync", 5); /* rank outside a world of 2 */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.msg[0]->body_case, WIRE_REFUSE);
    s_reset(&s);
    coord_services_destroy(&c);
}


static void test_barrier_timeout_decides_for_every_rank(void **state)
{
    struct sent s = { .loop = loop_new() };
    coord_services_t *c = coord_services_new(JOB, s.loop, s_capture, &s);
    coord_services_set_generation(c, 0, 3);
    s_barrier_ms(c, 0, 1, "t", 0, 50);
    assert_int_equal(s.n, 0);
    double ms = s_run_until_sent(&s);
    assert_true(ms >= 40);
    assert_int_equal(s.n, 1); /* the waiting rank's agent: TIMEOUT for every rank waiting there */
    s_expect_done(&s, 0, 1, PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT, 0, 0);
    s_reset(&s);
    /* Late ranks of that barrier are told TIMEOUT at once, each for itself, whatever their own timeout. */
    s_barrier_ms(c, 0, 2, "t", 1, 60000);
    assert_int_equal(s.n, 1);
    s_expect_done(&s, 0, 2, PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT, 1, 1);
    s_reset(&s);
    s_barrier(c, 0, 2, "t", 2);
    assert_int_equal(s.n, 1);
    s_expect_done(&s, 0, 2, PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT, 1, 2);
    s_reset(&s);
    /* Every rank has been told: the key starts a new barrier. */
    s_barrier(c, 0, 1, "t", 0);
    s_barrier(c, 0, 2, "t", 1);
    assert_int_equal(s.n, 0);
    s_barrier(c, 0, 2, "t", 2);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.msg[0]->barrier_done->status, PLAUNCH__BARRIER_DONE__STATUS__OK);
    s_reset(&s);
    coord_services_destroy(&c);
    loop_destroy(&s.loop);
}

static void test_barrier_shortest_timeout_decides(void **state)
{
    struct sent s = { .loop = loop_new() };
    coord_services_t *c = coord_services_new(JOB, s.loop, s_capture, &s);
    coord_services_set_generation(c, 0, 3);
    s_barrier_ms(c, 0, 1, "s", 0, 60000);
    s_barrier_ms(c, 0, 2, "s", 1, 30); /* a later rank with a shorter timeout */
    double ms = s_run_until_sent(&s);
    assert_true(ms < 5000);
    assert_int_equal(s.n, 2);
    for (int i = 0; i < 2; i++)
        assert_int_equal(s.msg[i]->barrier_done->status, PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT);
    s_reset(&s);
    coord_services_destroy(&c);
    loop_destroy(&s.loop);
}

static void test_barrier_rank_retrying_after_timeout(void **state)
{
    struct sent s = { .loop = loop_new() };
    coord_services_t *c = coord_services_new(JOB, s.loop, s_capture, &s);
    coord_services_set_generation(c, 0, 2);
    s_barrier_ms(c, 0, 1, "r", 0, 20);
    s_run_until_sent(&s);
    s_reset(&s);
    s_barrier_ms(c, 0, 1, "r", 0, 60000); /* rank 0 tries again: the next round of the key */
    assert_int_equal(s.n, 0);
    s_barrier_ms(c, 0, 2, "r", 1, 60000); /* rank 1's first arrival is at the round that timed out */
    assert_int_equal(s.n, 1);
    s_expect_done(&s, 0, 2, PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT, 1, 1);
    s_reset(&s);
    s_barrier_ms(c, 0, 2, "r", 1, 60000); /* its second meets rank 0's */
    assert_int_equal(s.n, 2);
    s_expect_done(&s, 0, 1, PLAUNCH__BARRIER_DONE__STATUS__OK, 0, 0);
    s_expect_done(&s, 1, 2, PLAUNCH__BARRIER_DONE__STATUS__OK, 0, 0);
    s_reset(&s);
    coord_services_destroy(&c);
    loop_destroy(&s.loop);
}

static void test_refusals_name_the_request(void **state)
{
    struct sent s = { 0 };
    char key[32];
    coord_services_t *c = coord_services_new(JOB, NULL, s_capture, &s);
    coord_services_set_generation(c, 0, 4);
    for (int i = 0; i < COORD_MAX_KEYS; i++) {
        snprintf(key, sizeof key, "k%d", i);
        s_get(c, 0, 1, key, 2);
    }
    assert_int_equal(s.n, 0);
    s_get(c, 0, 3, "one-too-many", 2);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.peer[0], 3);
    assert_int_equal(s.msg[0]->refuse->code, PLAUNCH__REFUSE__CODE__BAD_REQUEST);
    s_expect_refuse(&s, 0, WIRE_NCCL_ID_GET, "one-too-many", 2, "too many NCCL id keys in generation 0: at most 1024");
    s_reset(&s);
    s_put(c, 0, 1, "one-too-many", 0x01);
    s_expect_refuse(&s, 0, WIRE_NCCL_ID_PUT, "one-too-many", 0, "too many NCCL id keys");
    s_reset(&s);
    s_get(c, 1, 1, "k0", 3);
    assert_int_equal(s.msg[0]->refuse->code, PLAUNCH__REFUSE__CODE__STALE_GENERATION);
    s_expect_refuse(&s, 0, WIRE_NCCL_ID_GET, "k0", 3, "request from generation 1; the job is in generation 0");
    s_reset(&s);
    {
        unsigned char id[WIRE_NCCL_ID_BYTES] = { 0 };
        Plaunch__NcclIdPut put = PLAUNCH__NCCL_ID_PUT__INIT;
        wire_msg_t m;
        put.key = "k1";
        put.rank = 3;
        put.id.data = id;
        put.id.len = sizeof id;
        wire_init(&m, JOB, 0, WIRE_NCCL_ID_PUT, &put);
        coord_services_on_msg(c, 2, &m);
        s_expect_refuse(&s, 0, WIRE_NCCL_ID_PUT, "k1", 3, "only rank 0 of the generation publishes ids");
        s_reset(&s);
    }
    for (int i = 0; i < COORD_MAX_BARRIERS; i++) {
        snprintf(key, sizeof key, "b%d", i);
        s_barrier(c, 0, 1, key, 0);
    }
    assert_int_equal(s.n, 0);
    s_barrier(c, 0, 1, "b-too-many", 1);
    s_expect_refuse(&s, 0, WIRE_BARRIER, "b-too-many", 1, "too many barriers open at once");
    s_reset(&s);
    coord_services_destroy(&c); /* tells nobody: the agents are gone too */
}

/* The coordinator of a one-node job whose ASSIGN cannot be encoded (heartbeat interval = timeout, which the parser
 * refuses but nothing else would): the job ends with BYE 125 to the agent, not with an agent waiting forever. */
struct local_rx {
    coord_server_t *cs;
    loop_t *loop;
    int byes;
    uint32_t bye_status;
};

static void s_local(void *arg, const wire_msg_t *m)
{
    struct local_rx *rx = arg;
    char err[256];
    if (m->body_case == WIRE_HELLO) {
        Plaunch__Join j = PLAUNCH__JOIN__INIT;
        uint32_t port = 40001;
        wire_msg_t out;
        j.hostname = "unit-host";
        j.addr = "127.0.0.1";
        j.pid = 1;
        j.nproc = 1;
        j.requested_node_rank = -1;
        j.gpus = "";
        j.plaunch_version = PLAUNCH_VERSION;
        j.n_worker_ports = 1;
        j.worker_ports = &port;
        j.master_port = 40000;
        wire_init(&out, m->job_id, 0, WIRE_JOIN, &j);
        assert_int_equal(coord_server_local_in(rx->cs, &out, err, sizeof err), 0);
    } else if (m->body_case == WIRE_BYE) {
        rx->byes++;
        rx->bye_status = m->bye->exit_status;
        loop_stop(rx->loop);
    }
}

static void test_encode_failure_ends_the_job(void **state)
{
    static struct job job;
    struct local_rx rx = { .loop = loop_new() };
    char err[512];
    int gave_up = 0;
    memset(&job, 0, sizeof job);
    snprintf(job.node.job_id, sizeof job.node.job_id, "%s", JOB);
    snprintf(job.node.hostname, sizeof job.node.hostname, "unit-host");
    snprintf(job.node.log_dir, sizeof job.node.log_dir, "/tmp");
    struct opts *o = (struct opts *)&job.opt; /* jobsetup_init's one write, by hand */
    o->nnodes = o->nnodes_min = 1;
    o->heartbeat = o->heartbeat_timeout = 1.0;
    o->rdzv_timeout = 60;
    static struct mon_thresh thresh;
    mon_thresh_default(&thresh);
    rx.cs = coord_server_new(&job, rx.loop, NULL, NULL, NULL, &thresh, s_local, &rx, err, sizeof err);
    assert_non_null(rx.cs);
    coord_server_local_hello(rx.cs);
    int guard = loop_timer_after_ms(rx.loop, 10000, s_give_up, &gave_up);
    assert_int_equal(loop_run(rx.loop), 0);
    loop_timer_cancel(rx.loop, guard);
    assert_false(gave_up);
    assert_int_equal(rx.byes, 1);
    assert_int_equal(rx.bye_status, 125);
    coord_server_destroy(&rx.cs);
    loop_destroy(&rx.loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_get_before_put),
        cmocka_unit_test(test_keys_are_separate_and_first_put_wins),
        cmocka_unit_test(test_new_generation_forgets_ids),
        cmocka_unit_test(test_barrier_completes_and_is_reusable),
        cmocka_unit_test(test_barrier_aborted_by_new_generation),
        cmocka_unit_test(test_barrier_timeout_decides_for_every_rank),
        cmocka_unit_test(test_barrier_shortest_timeout_decides),
        cmocka_unit_test(test_barrier_rank_retrying_after_timeout),
        cmocka_unit_test(test_refusals_name_the_request),
        cmocka_unit_test(test_encode_failure_ends_the_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
