/* Unit tests for conn_session (launcher/conn/): a real ROUTER on loopback read by conn_reader (its socket monitor
 * feeding a real conn_guard, the closes held until the ROUTER is read), real ZeroMQ DEALERs as clients with TLS 1.3 PSK sessions, and a small owner's table behind struct
 * conn_session_ops. A session opens and carries messages both ways; a failed handshake is one bounded warning; a
 * plaintext client gets the plaintext REFUSE and its next frame closes it, counted; a stale TLS record is counted
 * and not answered; a ClientHello on a routing id with a session starts over; the owner's gate and its wait for a
 * handshake slot. Every wait is a loop run bounded by a deadline. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "launcher/conn/conn_reader.h"
#include "launcher/conn/conn_router.h"
#include "launcher/conn/conn_session.h"
#include "common/log.h"
#include "tests/unit/test_util.h"
#include "tests/unit/tls_fixture.h"
#include "common/wire/wire.h"
#include "common/zrouter.h"

#define DEADLINE_MS 5000
#define NENT 16
#define NCLI 8

struct ent {
    int used;
    struct conn_session_slot sess;
    int ready, failed, handshake, nmsg, closed;
    char last[64];
};

struct cli {
    void *sock, *mon;
    tls_chan_t *ch;
    int refused, disconnected, nmsg;
    int hold; /* nothing the server sends is read while set */
    char last[128];
};

struct fx {
    loop_t *loop;
    void *zctx, *router;
    conn_reader_t *reader;
    conn_guard_t *guard;
    peerlog_t *plog;
    conn_session_t *s;
    tls_ctx_t *sctx, *cctx, *bad;
    char endpoint[64];
    struct ent ent[NENT];
    struct cli cli[NCLI];
    int ncli, restarts, gated, waits;
    /* the ClientHello kept by s_wait */
    int w_fd;
    unsigned char w_rid[CONN_MAX_RID], w_hello[4096];
    size_t w_rid_len, w_len;
    int (*cond)(struct fx *, void *);
    void *cond_arg;
    int met, timer;
    uint64_t deadline;
};

static unsigned char s_frame[TLS_CHAN_FRAME_MAX];
static char *s_dir;
static char s_log[512];

/* ---- the owner ------------------------------------------------------------------------------------------- */

static struct conn_session_slot *s_slot(void *arg, int i)
{
    struct fx *f = arg;
    return i >= 0 && i < NENT && f->ent[i].used ? &f->ent[i].sess : NULL;
}

static int s_nslots(void *arg)
{
    return NENT;
}

static int s_open(void *arg, int fd, const unsigned char *rid, size_t rid_len)
{
    struct fx *f = arg;
    for (int i = 0; i < NENT; i++)
        if (!f->ent[i].used) {
            f->ent[i] = (struct ent){ .used = 1, .sess = { .rid_len = rid_len, .fd = fd } };
            memcpy(f->ent[i].sess.rid, rid, rid_len);
            return i;
        }
    return -1;
}

static void s_end(struct fx *f, int i)
{
    tls_chan_destroy(&f->ent[i].sess.ch);
    f->ent[i].used = 0;
    if (f->ent[i].sess.fd >= 0 && conn_guard_tag(f->guard, f->ent[i].sess.fd) == i)
        conn_guard_set_tag(f->guard, f->ent[i].sess.fd, -1);
}

static void s_release(void *arg, int i)
{
    s_end(arg, i);
}

static void s_restart(void *arg, int i)
{
    struct fx *f = arg;
    f->restarts++;
    s_end(f, i);
}

static void s_ready(void *arg, int i)
{
    struct fx *f = arg;
    f->ent[i].ready = 1;
}

static void s_message(void *arg, int i, const void *msg, size_t len)
{
    struct fx *f = arg;
    f->ent[i].nmsg++;
    snprintf(f->ent[i].last, sizeof f->ent[i].last, "%.*s", (int)len, (const char *)msg);
}

static void s_failed(void *arg, int i, int handshake, const char *why)
{
    struct fx *f = arg;
    f->ent[i].failed = 1;
    f->ent[i].handshake = handshake;
    s_end(f, i);
}

static void s_closed(void *arg, int i)
{
    struct fx *f = arg;
    f->ent[i].closed = 1;
    s_end(f, i);
}

static int s_gate(void *arg, int fd, const unsigned char *rid, size_t rid_len)
{
    struct fx *f = arg;
    if (rid_len < 4 || memcmp(rid, "GATE", 4) != 0)
        return 0;
    f->gated++;
    conn_guard_close(f->guard, fd, CONN_REFUSAL);
    return 1;
}

static int s_wait(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *hello, size_t len)
{
    struct fx *f = arg;
    if (f->waits++ || len > sizeof f->w_hello)
        return -1;
    f->w_fd = fd;
    memcpy(f->w_rid, rid, rid_len);
    f->w_rid_len = rid_len;
    memcpy(f->w_hello, hello, len);
    f->w_len = len;
    return 0;
}

static uint32_t s_generation(void *arg)
{
    return 7;
}

static const struct conn_session_ops s_ops = {
    .slot = s_slot, .nslots = s_nslots, .open = s_open, .release = s_release, .restart = s_restart,
    .ready = s_ready, .message = s_message, .failed = s_failed, .closed = s_closed, .gate = s_gate,
    .wait = s_wait, .generation = s_generation,
};

/* ---- the server's socket ---------------------------------------------------------------------------------- */

static void s_on_end(void *arg, int fd, int tag, enum conn_state was, enum conn_why why, const char *addr)
{
    struct fx *f = arg;
    if (tag >= 0 && tag < NENT && f->ent[tag].used && f->ent[tag].sess.fd == fd)
        s_end(f, tag);
}

static void s_on_frame(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len)
{
    conn_session_frame(((struct fx *)arg)->s, fd, rid, rid_len, data, len);
}

static const struct conn_reader_ops s_reader_ops = { .frame = s_on_frame };

static struct fx *s_fx_new(const struct conn_limits *lim)
{
    static struct fx f;
    char err[256];
    size_t len = sizeof f.endpoint;
    int zero = 0;
    memset(&f, 0, sizeof f);
    f.loop = loop_new();
    f.zctx = zmq_ctx_new();
    f.sctx = tf_psk(1, tf_token);
    f.cctx = tf_psk(0, tf_token);
    f.bad = tf_psk(0, tf_other_token);
    f.router = zmq_socket(f.zctx, ZMQ_ROUTER);
    zmq_setsockopt(f.router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(f.router, ZMQ_ROUTER_MANDATORY, (int[]){ 1 }, sizeof(int));
    assert_non_null(f.guard = conn_guard_new(f.loop, lim, s_on_end, &f));
    assert_non_null(f.plog = peerlog_new(f.loop, 0));
    if (!(f.reader = conn_reader_new(f.zctx, f.loop, f.router, f.guard, &s_reader_ops, &f, err, sizeof err)))
        fail_msg("conn_reader_new: %s", err);
    assert_int_equal(zmq_bind(f.router, "tcp://127.0.0.1:*"), 0);
    assert_int_equal(zmq_getsockopt(f.router, ZMQ_LAST_ENDPOINT, f.endpoint, &len), 0);
    struct conn_session_cfg cfg = { .router = f.router, .guard = f.guard, .plog = f.plog, .tls = f.sctx,
                                    .job_id = "sessjob", .who = "test server", .prefix = "test: " };
    if (!(f.s = conn_session_new(&cfg, &s_ops, &f, err, sizeof err)))
        fail_msg("conn_session_new: %s", err);
    return &f;
}

static const struct conn_limits s_lim = { .max_unauth = 16, .max_per_addr = 16, .max_pending = 8,
                                          .auth_ms = 4000, .stall_ms = 4000, .linger_ms = 200 };

/* ---- clients ---------------------------------------------------------------------------------------------- */

static void s_cli_flush(struct cli *c)
{
    size_t n;
    while (c->ch && (n = tls_chan_pull(c->ch, s_frame, sizeof s_frame)) > 0)
        assert_int_equal(zmq_send(c->sock, s_frame, n, 0), (int)n);
}

/* A client connected to the server; ctx NULL: plaintext (nothing sent yet), else its ClientHello is on its way. */
static int s_cli_new(struct fx *f, tls_ctx_t *ctx, const char *rid)
{
    char ep[64];
    int zero = 0, i = f->ncli++;
    struct cli *c = &f->cli[i];
    memset(c, 0, sizeof *c);
    snprintf(ep, sizeof ep, "inproc://test-conn-session-cli-%d", i);
    c->sock = zmq_socket(f->zctx, ZMQ_DEALER);
    zmq_setsockopt(c->sock, ZMQ_LINGER, &zero, sizeof zero);
    if (rid)
        zmq_setsockopt(c->sock, ZMQ_ROUTING_ID, rid, strlen(rid));
    assert_int_equal(zmq_socket_monitor(c->sock, ep, ZMQ_EVENT_DISCONNECTED), 0);
    c->mon = zmq_socket(f->zctx, ZMQ_PAIR);
    assert_int_equal(zmq_connect(c->mon, ep), 0);
    assert_int_equal(zmq_connect(c->sock, f->endpoint), 0);
    if (ctx) {
        c->ch = tls_chan_new(ctx);
        assert_int_equal(tls_chan_connect(c->ch), 0);
        s_cli_flush(c);
    }
    return i;
}

/* What the server sent: TLS records to the client's channel, anything else decoded as a plaintext message. */
static void s_cli_pump(struct cli *c)
{
    zmq_msg_t msg;
    uint16_t event;
    for (;;) {
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, c->mon, ZMQ_DONTWAIT) < 0)
            break;
        if (zmq_msg_size(&msg) >= 2 && (memcpy(&event, zmq_msg_data(&msg), 2), event == ZMQ_EVENT_DISCONNECTED))
            c->disconnected = 1;
        zmq_msg_close(&msg);
    }
    zmq_msg_close(&msg);
    for (; !c->hold;) {
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, c->sock, ZMQ_DONTWAIT) < 0)
            break;
        const unsigned char *b = zmq_msg_data(&msg);
        size_t n = zmq_msg_size(&msg);
        char err[256];
        wire_msg_t *m;
        if (c->ch && n >= 5 && b[0] >= 0x14 && b[0] <= 0x17 && b[1] == 0x03) {
            void *data;
            size_t len;
            tls_chan_feed(c->ch, b, n);
            s_cli_flush(c);
            while (tls_chan_recv(c->ch, &data, &len) == 1) {
                c->nmsg++;
                snprintf(c->last, sizeof c->last, "%.*s", (int)len, (const char *)data);
                free(data);
            }
        } else if ((m = wire_decode(b, n, WIRE_TO_AGENT_PLAIN, err, sizeof err)) != NULL) {
            c->refused |= m->body_case == WIRE_REFUSE;
            if (m->body_case == WIRE_REFUSE)
                snprintf(c->last, sizeof c->last, "%s", m->refuse->text);
            wire_free(&m);
        }
        zmq_msg_close(&msg);
    }
    zmq_msg_close(&msg);
}

static void s_cli_close(struct cli *c)
{
    tls_chan_destroy(&c->ch);
    zmq_socket_monitor(c->sock, NULL, 0);
    zmq_close(c->sock);
    zmq_close(c->mon);
}

static void s_fx_free(struct fx *f)
{
    for (int i = 0; i < f->ncli; i++)
        s_cli_close(&f->cli[i]);
    for (int i = 0; i < NENT; i++)
        if (f->ent[i].used)
            s_end(f, i);
    conn_session_destroy(&f->s);
    conn_session_destroy(&f->s); /* safe twice */
    if (f->timer > 0)
        loop_timer_cancel(f->loop, f->timer);
    conn_reader_destroy(&f->reader);
    conn_reader_destroy(&f->reader); /* safe twice */
    zmq_close(f->router);
    conn_guard_destroy(&f->guard);
    peerlog_destroy(&f->plog);
    tls_ctx_destroy(&f->sctx);
    tls_ctx_destroy(&f->cctx);
    tls_ctx_destroy(&f->bad);
    zmq_ctx_term(f->zctx);
    loop_destroy(&f->loop);
}

/* ---- waiting: the loop runs, clients are pumped every 2 ms, until cond holds or the deadline ----------------- */

static int s_check(loop_t *loop, int id, void *arg)
{
    struct fx *f = arg;
    for (int i = 0; i < f->ncli; i++)
        s_cli_pump(&f->cli[i]);
    if ((f->met = f->cond(f, f->cond_arg)) || loop_now_ns() >= f->deadline) {
        f->timer = 0;
        loop_stop(loop);
        return 0;
    }
    f->timer = loop_timer_after_ms(loop, 2, s_check, f);
    return 0;
}

static void s_until(struct fx *f, int (*cond)(struct fx *, void *), void *arg, const char *what)
{
    f->cond = cond;
    f->cond_arg = arg;
    f->met = 0;
    f->deadline = loop_now_ns() + (uint64_t)DEADLINE_MS * 1000000;
    f->timer = loop_timer_after_ms(f->loop, 0, s_check, f);
    loop_run(f->loop);
    if (!f->met)
        fail_msg("timed out waiting for %s", what);
}

#define UNTIL(f, cond, arg) s_until((f), (cond), (arg), #cond)

static int c_ready(struct fx *f, void *arg)
{
    int n = 0;
    for (int i = 0; i < NENT; i++)
        n += f->ent[i].used && f->ent[i].ready;
    return n >= *(int *)arg;
}

static int c_cli_msg(struct fx *f, void *arg)
{
    return f->cli[*(int *)arg].nmsg > 0;
}

static int c_ent_msg(struct fx *f, void *arg)
{
    for (int i = 0; i < NENT; i++)
        if (f->ent[i].used && f->ent[i].nmsg >= *(int *)arg)
            return 1;
    return 0;
}

static int c_failed(struct fx *f, void *arg)
{
    for (int i = 0; i < NENT; i++)
        if (f->ent[i].failed)
            return 1;
    return 0;
}

static int c_refused(struct fx *f, void *arg)
{
    return f->cli[*(int *)arg].refused;
}

static int c_disconnected(struct fx *f, void *arg)
{
    return f->cli[*(int *)arg].disconnected;
}

static int c_waits(struct fx *f, void *arg)
{
    return f->waits > 0;
}

static int c_pending(struct fx *f, void *arg)
{
    return conn_guard_count(f->guard, CONN_PENDING) > 0;
}

static int c_gated(struct fx *f, void *arg)
{
    return f->gated > 0 && c_disconnected(f, arg);
}

static int c_restarted(struct fx *f, void *arg)
{
    return f->restarts > 0 && c_ready(f, &(int){ 1 });
}

/* Lines of the log that contain text. */
static int s_lines(const char *text)
{
    return tu_count_lines(s_log, text);
}

static int s_ent_of(struct fx *f)
{
    for (int i = 0; i < NENT; i++)
        if (f->ent[i].used)
            return i;
    return -1;
}

/* ---- tests ------------------------------------------------------------------------------------------------ */

/* A ClientHello opens a session: the connection is trusted, messages go both ways. */
static void test_open_and_messages(void **state)
{
    struct fx *f = s_fx_new(&s_lim);
    int k = s_cli_new(f, f->cctx, NULL);
    UNTIL(f, c_ready, &(int){ 1 });
    assert_int_equal(conn_guard_count(f->guard, CONN_TRUSTED), 1);
    int e = s_ent_of(f);
    assert_int_equal(conn_session_send(f->s, &f->ent[e].sess, "hello client", 12), 0);
    UNTIL(f, c_cli_msg, &k);
    assert_string_equal(f->cli[k].last, "hello client");
    assert_int_equal(tls_chan_send(f->cli[k].ch, "hello server", 12), 0);
    s_cli_flush(&f->cli[k]);
    UNTIL(f, c_ent_msg, &(int){ 1 });
    assert_string_equal(f->ent[e].last, "hello server");
    assert_int_equal(conn_session_find(f->s, f->ent[e].sess.fd, f->ent[e].sess.rid, f->ent[e].sess.rid_len), e);
    s_fx_free(f);
}

/* A wrong token: the handshake fails, the owner hears it as a handshake failure, one warning with the prefix. */
static void test_handshake_fails(void **state)
{
    struct fx *f = s_fx_new(&s_lim);
    s_cli_new(f, f->bad, NULL);
    UNTIL(f, c_failed, NULL);
    int failed = -1;
    for (int i = 0; i < NENT; i++)
        if (f->ent[i].failed)
            failed = i;
    assert_true(f->ent[failed].handshake);
    assert_int_equal(s_lines("test: refused 127.0.0.1: TLS handshake failed"), 1);
    assert_int_equal(conn_guard_count(f->guard, CONN_TRUSTED), 0);
    s_fx_free(f);
}

/* A plaintext client: the plaintext REFUSE names who requires TLS, one warning; its next frame closes it and is
 * counted. */
static void test_plaintext_refused(void **state)
{
    struct fx *f = s_fx_new(&s_lim);
    int k = s_cli_new(f, NULL, NULL);
    assert_int_equal(zmq_send(f->cli[k].sock, "JOIN me", 7, 0), 7);
    UNTIL(f, c_refused, &k);
    assert_non_null(strstr(f->cli[k].last, "this test server requires TLS"));
    assert_int_equal(s_lines("test: refused 127.0.0.1: its first frame is not a TLS ClientHello"), 1);
    assert_int_equal(zmq_send(f->cli[k].sock, "again", 5, 0), 5);
    UNTIL(f, c_disconnected, &k);
    peerlog_flush(f->plog);
    assert_int_equal(s_lines("refused 1 frame from 127.0.0.1 in the last"), 1);
    assert_int_equal(s_ent_of(f), -1);
    s_fx_free(f);
}

/* A TLS record without a session is counted, not answered: the same client's ClientHello then opens a session. */
static void test_stale_record(void **state)
{
    struct fx *f = s_fx_new(&s_lim);
    int k = s_cli_new(f, NULL, NULL);
    unsigned char rec[5 + 16] = { 0x17, 0x03, 0x03, 0x00, 16 };
    assert_int_equal(zmq_send(f->cli[k].sock, rec, sizeof rec, 0), (int)sizeof rec);
    f->cli[k].ch = tls_chan_new(f->cctx);
    assert_int_equal(tls_chan_connect(f->cli[k].ch), 0);
    s_cli_flush(&f->cli[k]);
    UNTIL(f, c_ready, &(int){ 1 });
    assert_false(f->cli[k].refused);
    peerlog_flush(f->plog);
    assert_int_equal(s_lines("ignored 1 TLS record from 127.0.0.1 in the last"), 1);
    s_fx_free(f);
}

/* The same routing id sends a new ClientHello: the owner's entry starts over, a new session opens. */
static void test_restart(void **state)
{
    struct fx *f = s_fx_new(&s_lim);
    int k = s_cli_new(f, f->cctx, "same-rid");
    UNTIL(f, c_ready, &(int){ 1 });
    int before = s_ent_of(f);
    tls_chan_destroy(&f->cli[k].ch);
    f->cli[k].ch = tls_chan_new(f->cctx);
    assert_int_equal(tls_chan_connect(f->cli[k].ch), 0);
    s_cli_flush(&f->cli[k]);
    UNTIL(f, c_restarted, NULL);
    int after = s_ent_of(f);
    assert_int_equal(f->restarts, 1);
    assert_true(f->ent[after].ready);
    assert_int_equal(conn_session_find(f->s, f->ent[after].sess.fd, (const unsigned char *)"same-rid", 8), after);
    (void)before;
    s_fx_free(f);
}

/* The owner's gate takes a ClientHello before any handshake slot; with every slot taken, its wait keeps one that
 * conn_session_hello takes in later. */
static void test_gate_and_wait(void **state)
{
    struct conn_limits lim = s_lim;
    lim.max_pending = 1;
    struct fx *f = s_fx_new(&lim);
    int g = s_cli_new(f, f->cctx, "GATE-1");
    UNTIL(f, c_gated, &g);
    assert_int_equal(s_ent_of(f), -1);

    /* a ClientHello whose client never answers holds the only slot; the next one waits */
    int a = s_cli_new(f, f->cctx, "first");
    f->cli[a].hold = 1; /* its answers are not read: the handshake stays under way */
    UNTIL(f, c_pending, NULL);
    int b = s_cli_new(f, f->cctx, "second");
    UNTIL(f, c_waits, NULL);
    assert_int_equal(conn_guard_count(f->guard, CONN_PENDING), 1);
    assert_int_equal(s_ent_of(f), 0); /* the first's entry only */
    /* the first completes: its slot frees, and the kept ClientHello is handed back */
    f->cli[a].hold = 0;
    UNTIL(f, c_ready, &(int){ 1 });
    conn_session_hello(f->s, f->w_fd, f->w_rid, f->w_rid_len, f->w_hello, f->w_len);
    UNTIL(f, c_ready, &(int){ 2 });
    (void)b;
    s_fx_free(f);
}

static int setup(void **state)
{
    return tu_log_begin("connsess", &s_dir, s_log, sizeof s_log);
}

static int teardown(void **state)
{
    tu_log_end(s_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_and_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handshake_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plaintext_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gate_and_wait, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
