/* test_tls_zmq: TLS channels over real ZeroMQ sockets: agent DEALER -> coordinator ROUTER on tcp://127.0.0.1. */
#include "tests/unit/tls_fixture.h"

#include <time.h>
#include <zmq.h>

#define DEADLINE_MS 5000

/* One agent and the coordinator side of it, driven the way the real event loops will be. */
struct zrun {
    void *zctx, *router, *dealer;
    tls_ctx_t *sctx, *cctx;
    tls_chan_t *cli, *srv;       /* srv appears with the first frame from the agent's routing id */
    unsigned char id[256];
    size_t idlen;
    size_t frames;
    int replaced;                /* sessions replaced by a new ClientHello from the same routing id */
    int drop_next_cli_frame;     /* simulate a frame lost on the way to the coordinator */
};

static long long s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void s_open(struct zrun *z, tls_ctx_t *cctx, tls_ctx_t *sctx)
{
    char ep[256];
    size_t eplen = sizeof ep;
    int zero = 0;
    memset(z, 0, sizeof *z);
    z->zctx = zmq_ctx_new();
    z->router = zmq_socket(z->zctx, ZMQ_ROUTER);
    z->dealer = zmq_socket(z->zctx, ZMQ_DEALER);
    assert_non_null(z->router);
    assert_non_null(z->dealer);
    zmq_setsockopt(z->router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(z->dealer, ZMQ_LINGER, &zero, sizeof zero);
    assert_int_equal(zmq_bind(z->router, "tcp://127.0.0.1:*"), 0);
    assert_int_equal(zmq_getsockopt(z->router, ZMQ_LAST_ENDPOINT, ep, &eplen), 0);
    assert_int_equal(zmq_connect(z->dealer, ep), 0);
    z->sctx = sctx;
    z->cctx = cctx;
    if (cctx) {
        z->cli = tls_chan_new(cctx);
        assert_int_equal(tls_chan_connect(z->cli), 0);
    }
}

static void s_close(struct zrun *z)
{
    tls_chan_destroy(&z->cli);
    tls_chan_destroy(&z->srv);
    tls_ctx_destroy(&z->sctx);
    tls_ctx_destroy(&z->cctx);
    zmq_close(z->router);
    zmq_close(z->dealer);
    zmq_ctx_term(z->zctx);
}

static void s_flush(struct zrun *z)
{
    static unsigned char frame[TLS_CHAN_FRAME_MAX];
    size_t n;
    while (z->cli && (n = tls_chan_pull(z->cli, frame, sizeof frame)) > 0) {
        assert_true(n <= TLS_CHAN_FRAME_MAX);
        z->frames++;
        if (z->drop_next_cli_frame) {
            z->drop_next_cli_frame = 0;
            continue;
        }
        assert_int_equal(zmq_send(z->dealer, frame, n, 0), (int)n);
    }
    while (z->srv && (n = tls_chan_pull(z->srv, frame, sizeof frame)) > 0) {
        assert_true(n <= TLS_CHAN_FRAME_MAX);
        z->frames++;
        assert_int_equal(zmq_send(z->router, z->id, z->idlen, ZMQ_SNDMORE), (int)z->idlen);
        assert_int_equal(zmq_send(z->router, frame, n, 0), (int)n);
    }
}

/* ROUTER: [routing id][frame]. A frame from an unknown id starts a new server session. */
static void s_router_in(struct zrun *z)
{
    zmq_msg_t id, data;
    zmq_msg_init(&id);
    zmq_msg_init(&data);
    while (zmq_msg_recv(&id, z->router, ZMQ_DONTWAIT) >= 0) {
        assert_true(zmq_msg_more(&id));
        assert_true(zmq_msg_recv(&data, z->router, 0) >= 0);
        /* A new ClientHello from a known peer: it restarted its handshake, so its old session is over. */
        if (z->srv && tls_chan_is_client_hello(zmq_msg_data(&data), zmq_msg_size(&data))) {
            tls_chan_destroy(&z->srv);
            z->replaced++;
        }
        if (!z->srv) {
            z->srv = tls_chan_new(z->sctx);
            assert_true(zmq_msg_size(&id) <= sizeof z->id);
            z->idlen = zmq_msg_size(&id);
            memcpy(z->id, zmq_msg_data(&id), z->idlen);
        }
        tls_chan_feed(z->srv, zmq_msg_data(&data), zmq_msg_size(&data));
    }
    zmq_msg_close(&id);
    zmq_msg_close(&data);
}

static void s_dealer_in(struct zrun *z)
{
    zmq_msg_t data;
    zmq_msg_init(&data);
    while (zmq_msg_recv(&data, z->dealer, ZMQ_DONTWAIT) >= 0)
        if (z->cli)
            tls_chan_feed(z->cli, zmq_msg_data(&data), zmq_msg_size(&data));
    zmq_msg_close(&data);
}

static void s_step(struct zrun *z)
{
    zmq_pollitem_t items[2] = { { z->router, 0, ZMQ_POLLIN, 0 }, { z->dealer, 0, ZMQ_POLLIN, 0 } };
    s_flush(z);
    if (zmq_poll(items, 2, 20) <= 0)
        return;
    if (items[0].revents & ZMQ_POLLIN)
        s_router_in(z);
    if (items[1].revents & ZMQ_POLLIN)
        s_dealer_in(z);
    s_flush(z);
}

/* cond is evaluated once per round (it may take a message), and the loop is bounded in time. */
#define UNTIL(z, cond)                                                                                             \
    do {                                                                                                           \
        long long until_deadline = s_now_ms() + DEADLINE_MS;                                                       \
        int until_ok;                                                                                              \
        while (!(until_ok = (cond)) && s_now_ms() < until_deadline)                                                \
            s_step(z);                                                                                             \
        if (!until_ok)                                                                                             \
            fail_msg("timed out waiting for %s; client: \"%s\", server: \"%s\"", #cond,                           \
                     (z)->cli ? tls_chan_error((z)->cli) : "-", (z)->srv ? tls_chan_error((z)->srv) : "-");       \
    } while (0)

static int s_has(tls_chan_t *ch, char **msg)
{
    size_t len;
    return ch && tls_chan_recv(ch, (void **)msg, &len) == 1;
}

static int s_failed(tls_chan_t *ch)
{
    return ch && tls_chan_state(ch) == TLS_CHAN_FAILED;
}

/* Handshake, then the coordinator speaks first: the agent knows it was accepted when "welcome" arrives. */
static void s_welcome(struct zrun *z)
{
    char *m = NULL;
    UNTIL(z, z->srv && tls_chan_is_established(z->srv));
    assert_int_equal(tls_chan_send(z->srv, "welcome", 7), 0);
    UNTIL(z, s_has(z->cli, &m));
    assert_string_equal(m, "welcome");
    free(m);
}

static void test_ca_over_zmq(void **state)
{
    struct pki *p = *state;
    struct zrun z;
    char *m = NULL, *big = malloc(300000);
    size_t len = 0;
    memset(big, 'q', 300000);
    s_open(&z, tf_ca(0, p->ca1, "node1"), tf_ca(1, p->ca1, "coord"));
    s_welcome(&z);
    assert_string_equal(tls_chan_peer_name(z.srv), "node1");
    assert_string_equal(tls_chan_peer_name(z.cli), "coord");
    assert_int_equal(tls_chan_send(z.cli, big, 300000), 0);
    assert_int_equal(tls_chan_send(z.cli, "join", 4), 0);
    UNTIL(&z, tls_chan_recv(z.srv, (void **)&m, &len) == 1);
    assert_int_equal(len, 300000);
    assert_memory_equal(m, big, 300000);
    free(m);
    assert_true(z.frames >= 300000 / TLS_CHAN_FRAME_MAX + 1);
    UNTIL(&z, s_has(z.srv, &m));
    assert_string_equal(m, "join");
    free(m);
    assert_int_equal(tls_chan_close(z.cli), 0);
    UNTIL(&z, tls_chan_state(z.srv) == TLS_CHAN_CLOSED);
    free(big);
    s_close(&z);
}

static void test_psk_over_zmq(void **state)
{
    struct zrun z;
    char *m = NULL;
    s_open(&z, tf_psk(0, tf_token), tf_psk(1, tf_token));
    s_welcome(&z);
    assert_int_equal(tls_chan_send(z.cli, "join", 4), 0);
    UNTIL(&z, s_has(z.srv, &m));
    assert_string_equal(m, "join");
    free(m);
    assert_string_equal(tls_chan_peer_name(z.srv), TLS_PEER_PSK);
    s_close(&z);
    (void)state;
}

/* TLS 1.3: the client finishes its side of the handshake before the server has judged its certificate; the
 * alert that follows is what tells it. Both sides must say why. */
static void test_expired_client_over_zmq(void **state)
{
    struct pki *p = *state;
    struct zrun z;
    tls_ctx_t *old;
    tu_capture_begin();
    old = tf_ca(0, p->ca1, "old");
    tu_capture_end();
    s_open(&z, old, tf_ca(1, p->ca1, "coord"));
    UNTIL(&z, s_failed(z.srv) && s_failed(z.cli));
    tf_expect_error(z.srv, "peer certificate 'old' expired on");
    tf_expect_error(z.cli, "peer rejected our certificate: certificate expired");
    s_close(&z);
}

static void test_wrong_token_over_zmq(void **state)
{
    struct zrun z;
    s_open(&z, tf_psk(0, tf_other_token), tf_psk(1, tf_token));
    UNTIL(&z, s_failed(z.srv) && s_failed(z.cli));
    tf_expect_error(z.srv, "bad PSK / token mismatch");
    tf_expect_error(z.cli, "bad PSK / token mismatch");
    s_close(&z);
    (void)state;
}

static void test_plaintext_client_over_zmq(void **state)
{
    struct zrun z;
    s_open(&z, NULL, tf_psk(1, tf_token));
    assert_int_equal(zmq_send(z.dealer, "JOIN node1 gpus=8", 17, 0), 17);
    UNTIL(&z, s_failed(z.srv));
    tf_expect_error(z.srv, "not a TLS record (plaintext client?)");
    assert_int_equal(tls_chan_pending(z.srv), 0);
    s_close(&z);
    (void)state;
}

/* A lost frame breaks the record sequence: both sides fail, the agent starts a new handshake on the same socket,
 * and the coordinator, seeing a ClientHello for a routing id it knows, replaces that session. */
static void test_lost_frame_then_new_handshake(void **state)
{
    struct zrun z;
    s_open(&z, tf_psk(0, tf_token), tf_psk(1, tf_token));
    s_welcome(&z);
    z.drop_next_cli_frame = 1;
    assert_int_equal(tls_chan_send(z.cli, "lost", 4), 0);
    s_flush(&z);
    assert_int_equal(tls_chan_send(z.cli, "after the gap", 13), 0);
    UNTIL(&z, s_failed(z.srv) && s_failed(z.cli));
    tf_expect_error(z.srv, "failed authentication");
    tf_expect_error(z.cli, "bad record mac");

    /* The agent starts over; the coordinator still holds the failed session and replaces it. */
    tls_chan_destroy(&z.cli);
    z.cli = tls_chan_new(z.cctx);
    assert_int_equal(tls_chan_connect(z.cli), 0);
    s_welcome(&z);
    assert_int_equal(z.replaced, 1);
    s_close(&z);
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ca_over_zmq),
        cmocka_unit_test(test_psk_over_zmq),
        cmocka_unit_test(test_expired_client_over_zmq),
        cmocka_unit_test(test_wrong_token_over_zmq),
        cmocka_unit_test(test_plaintext_client_over_zmq),
        cmocka_unit_test(test_lost_frame_then_new_handshake),
    };
    return cmocka_run_group_tests(tests, tf_pki_setup, tf_pki_teardown);
}
