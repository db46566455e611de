/* Unit tests for the relay (launcher/relay/): a real relay_t in a real loop_t with a TLS 1.3 PSK context, children
 * that are real ZeroMQ DEALERs with client TLS sessions (as tests/agentsim drives them), and an `up` that records
 * every item. HELLO first, OPENED, exact bytes up, heartbeats both ways, relay_down's MESSAGE/watch/DROP, SILENT,
 * CLOSED, batching, plaintext and over-cap clients refused, stale TLS records ignored. Every wait is a loop run
 * bounded by a deadline. */
#include "tests/unit/tls_fixture.h"

#include <zmq.h>

#include "common/wire/heartbeat.h"
#include "common/log.h"
#include "common/loop.h"
#include "launcher/relay/relay.h"
#include "common/wire/wire.h"

#define DEADLINE_MS 5000
#define HB_MS 100
#define HB_TIMEOUT_MS 400
#define MAXK 16
#define MAXI 512

struct rec {
    int event, batch;          /* batch: the number of the `up` call that carried it */
    uint32_t from;
    unsigned char *payload;
    size_t len;
    char addr[128], name[300], text[1100];
    uint64_t at_ns;
};

struct kid {
    void *sock, *mon;
    tls_chan_t *ch;            /* NULL: a plaintext client */
    int types[256], ntypes;    /* what it received, in order (HEARTBEATs counted apart) */
    int heartbeats;
    char hello_host[300], hello_job[80];
    int tls_closed, disconnected, refused;
    uint64_t hb_every_ns, hb_last_ns; /* >0: sends a HEARTBEAT this often */
};

struct fx {
    loop_t *loop;
    void *zctx;
    tls_ctx_t *sctx, *cctx;
    relay_t *r;
    struct rec items[MAXI];
    int nitems, up_calls, up_fail;
    struct kid kids[MAXK];
    int nkids;
    int (*cond)(struct fx *, void *);
    void *cond_arg;
    int met, timer;
    uint64_t deadline;
};

static unsigned char s_frame[TLS_CHAN_FRAME_MAX];

/* ---- the coordinator's side: `up` --------------------------------------------------------------------- */

static int s_up(void *arg, const Plaunch__Relayed *batch)
{
    struct fx *f = arg;
    wire_msg_t m;
    char err[256];
    /* what the host sends must pass every bound of RELAYED */
    wire_init(&m, "relayjob", 0, WIRE_RELAYED, (void *)batch);
    if (wire_check(&m, err, sizeof err) < 0)
        fail_msg("the relay's batch breaks a bound: %s", err);
    f->up_calls++;
    for (size_t i = 0; i < batch->n_items && f->nitems < MAXI; i++) {
        const Plaunch__RelayItem *it = batch->items[i];
        struct rec *e = &f->items[f->nitems++];
        e->event = it->event;
        e->batch = f->up_calls;
        e->from = it->from;
        e->len = it->payload.len;
        e->payload = malloc(e->len + 1);
        if (e->len)
            memcpy(e->payload, it->payload.data, e->len);
        snprintf(e->addr, sizeof e->addr, "%s", it->peer_addr);
        snprintf(e->name, sizeof e->name, "%s", it->peer_name);
        snprintf(e->text, sizeof e->text, "%s", it->text);
        e->at_ns = loop_now_ns();
    }
    return f->up_fail ? -1 : 0;
}

/* Items of event (for child `from`, 0: any) recorded so far. */
static int s_count(struct fx *f, int event, uint32_t from)
{
    int n = 0;
    for (int i = 0; i < f->nitems; i++)
        n += f->items[i].event == event && (!from || f->items[i].from == from);
    return n;
}

static const struct rec *s_find(struct fx *f, int event, uint32_t from)
{
    for (int i = 0; i < f->nitems; i++)
        if (f->items[i].event == event && (!from || f->items[i].from == from))
            return &f->items[i];
    return NULL;
}

/* ---- children ------------------------------------------------------------------------------------------ */

static void s_kid_flush(struct kid *k)
{
    size_t n;
    while (k->ch && k->sock && (n = tls_chan_pull(k->ch, s_frame, sizeof s_frame)) > 0)
        assert_int_equal(zmq_send(k->sock, s_frame, n, ZMQ_DONTWAIT), (int)n);
}

static void s_kid_deliver(struct kid *k, const void *data, size_t len)
{
    char err[256];
    wire_msg_t *m = wire_decode(data, len, k->ch ? WIRE_TO_AGENT : WIRE_TO_AGENT_PLAIN, err, sizeof err);
    if (!m)
        fail_msg("a child got a bad message: %s", err);
    if (m->body_case == WIRE_HEARTBEAT) {
        k->heartbeats++;
    } else if (k->ntypes < 256) {
        k->types[k->ntypes++] = m->body_case;
        if (m->body_case == WIRE_HELLO) {
            snprintf(k->hello_host, sizeof k->hello_host, "%s", m->hello->hostname);
            snprintf(k->hello_job, sizeof k->hello_job, "%s", m->job_id);
        }
        k->refused |= m->body_case == WIRE_REFUSE;
    }
    wire_free(&m);
}

static void s_kid_pump(struct kid *k)
{
    zmq_msg_t msg;
    while (k->mon) {
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, k->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        uint16_t event = 0;
        if (zmq_msg_size(&msg) >= 2)
            memcpy(&event, zmq_msg_data(&msg), 2);
        k->disconnected |= event == ZMQ_EVENT_DISCONNECTED;
        zmq_msg_close(&msg);
    }
    while (k->sock) {
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, k->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        if (!k->ch) {
            s_kid_deliver(k, zmq_msg_data(&msg), zmq_msg_size(&msg));
        } else {
            void *data;
            size_t len;
            tls_chan_feed(k->ch, zmq_msg_data(&msg), zmq_msg_size(&msg));
            s_kid_flush(k);
            while (tls_chan_recv(k->ch, &data, &len) == 1) {
                s_kid_deliver(k, data, len);
                free(data);
            }
            k->tls_closed |= tls_chan_state(k->ch) == TLS_CHAN_CLOSED;
        }
        zmq_msg_close(&msg);
    }
}

/* Encodes m and sends it over the child's session (or in plaintext); the bytes sent in *buf when buf is given. */
static size_t s_kid_send(struct fx *f, int i, const wire_msg_t *m, unsigned char *buf, size_t cap)
{
    static unsigned char own[1 << 20];
    struct kid *k = &f->kids[i];
    char err[256];
    ssize_t n = wire_encode(m, buf ? buf : own, buf ? cap : sizeof own, err, sizeof err);
    if (n < 0)
        fail_msg("encode: %s", err);
    if (k->ch) {
        assert_int_equal(tls_chan_send(k->ch, buf ? buf : own, (size_t)n), 0);
        s_kid_flush(k);
    } else {
        assert_int_equal(zmq_send(k->sock, buf ? buf : own, (size_t)n, 0), (int)n);
    }
    return (size_t)n;
}

static void s_kid_heartbeat(struct fx *f, int i)
{
    Plaunch__Heartbeat hb = PLAUNCH__HEARTBEAT__INIT;
    wire_msg_t m;
    hb.seq = 1;
    wire_init(&m, "relayjob", 0, WIRE_HEARTBEAT, &hb);
    s_kid_send(f, i, &m, NULL, 0);
}

/* A new child connected to the relay: its ClientHello is on its way (plaintext: nothing sent yet). */
static int s_kid_new(struct fx *f, int tls)
{
    char ep[64];
    int zero = 0, i = f->nkids++;
    struct kid *k = &f->kids[i];
    memset(k, 0, sizeof *k);
    snprintf(ep, sizeof ep, "inproc://test-relay-kid-%d", i);
    k->sock = zmq_socket(f->zctx, ZMQ_DEALER);
    assert_non_null(k->sock);
    zmq_setsockopt(k->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(k->sock, ZMQ_IPV6, &(int){ 1 }, sizeof(int));
    assert_int_equal(zmq_socket_monitor(k->sock, ep, ZMQ_EVENT_DISCONNECTED), 0);
    k->mon = zmq_socket(f->zctx, ZMQ_PAIR);
    assert_int_equal(zmq_connect(k->mon, ep), 0);
    assert_int_equal(zmq_connect(k->sock, relay_endpoint(f->r)), 0);
    if (tls) {
        k->ch = tls_chan_new(f->cctx);
        assert_int_equal(tls_chan_connect(k->ch), 0);
        s_kid_flush(k);
    }
    return i;
}

static void s_kid_close(struct kid *k)
{
    tls_chan_destroy(&k->ch);
    if (k->sock) {
        zmq_socket_monitor(k->sock, NULL, 0);
        zmq_close(k->sock);
    }
    if (k->mon)
        zmq_close(k->mon);
    k->sock = k->mon = NULL;
}

/* ---- waiting: the loop runs, children are pumped every 2 ms, until cond holds or the deadline ---------- */

static int s_check(loop_t *loop, int id, void *arg)
{
    struct fx *f = arg;
    uint64_t now = loop_now_ns();
    for (int i = 0; i < f->nkids; i++) {
        s_kid_pump(&f->kids[i]);
        struct kid *k = &f->kids[i];
        if (k->hb_every_ns && k->ch && now - k->hb_last_ns >= k->hb_every_ns && !k->tls_closed) {
            k->hb_last_ns = now;
            s_kid_heartbeat(f, i);
        }
    }
    if ((f->met = f->cond(f, f->cond_arg)) || now >= f->deadline) {
        f->timer = 0;
        loop_stop(loop);
        return 0;
    }
    f->timer = loop_timer_after_ms(loop, 2, s_check, f);
    return 0;
}

static int s_run(struct fx *f, int (*cond)(struct fx *, void *), void *arg, int ms)
{
    f->cond = cond;
    f->cond_arg = arg;
    f->met = 0;
    f->deadline = loop_now_ns() + (uint64_t)ms * 1000000;
    f->timer = loop_timer_after_ms(f->loop, 0, s_check, f);
    loop_run(f->loop);
    return f->met;
}

#define UNTIL(f, cond, arg)                                                                                        \
    do {                                                                                                           \
        if (!s_run((f), (cond), (arg), DEADLINE_MS))                                                               \
            fail_msg("timed out waiting for %s (%d items, %d children)", #cond, (f)->nitems,                      \
                     relay_children((f)->r));                                                                      \
    } while (0)

static int c_hello(struct fx *f, void *arg)
{
    return f->kids[*(int *)arg].ntypes > 0;
}

static int c_items(struct fx *f, void *arg)
{
    return f->nitems >= *(int *)arg;
}

static int c_event(struct fx *f, void *arg)
{
    const int *ev = arg; /* event, from */
    return s_count(f, ev[0], (uint32_t)ev[1]) > 0;
}

static int c_types(struct fx *f, void *arg)
{
    const int *a = arg; /* child, messages */
    return f->kids[a[0]].ntypes >= a[1];
}

static int c_disconnected(struct fx *f, void *arg)
{
    return f->kids[*(int *)arg].disconnected;
}

static int c_never(struct fx *f, void *arg)
{
    return 0;
}

/* A child with an open session: HELLO received and OPENED recorded. Returns its index; *handle its handle. */
static int s_open_kid(struct fx *f, uint32_t *handle)
{
    int before = s_count(f, PLAUNCH__RELAY_ITEM__EVENT__OPENED, 0), i = s_kid_new(f, 1), want = before + 1;
    UNTIL(f, c_hello, &i);
    assert_int_equal(f->kids[i].types[0], WIRE_HELLO);
    while (s_count(f, PLAUNCH__RELAY_ITEM__EVENT__OPENED, 0) < want)
        UNTIL(f, c_items, &(int){ f->nitems + 1 });
    const struct rec *e = NULL;
    for (int j = f->nitems - 1; j >= 0 && !e; j--)
        if (f->items[j].event == PLAUNCH__RELAY_ITEM__EVENT__OPENED)
            e = &f->items[j];
    *handle = e->from;
    return i;
}

/* ---- fixture --------------------------------------------------------------------------------------------- */

static int s_fx_held; /* the next fixture's relay is held (a relay of the ranked layout before its JOIN) */

static struct fx *s_fx_at(const char *addr, int max_children)
{
    static struct fx f;
    struct relay_cfg cfg = { .bind_addr = addr, .job_id = "relayjob", .hello_host = "coordhost",
                             .generation = 0, .max_children = max_children, .hb_interval_ms = HB_MS,
                             .hb_timeout_ms = HB_TIMEOUT_MS, .held = s_fx_held };
    char err[512];
    memset(&f, 0, sizeof f);
    f.loop = loop_new();
    f.zctx = zmq_ctx_new();
    f.sctx = tf_psk(1, tf_token);
    f.cctx = tf_psk(0, tf_token);
    f.r = relay_new(f.zctx, f.loop, f.sctx, &cfg, s_up, &f, err, sizeof err);
    if (!f.r)
        fail_msg("relay_new: %s", err);
    return &f;
}

static struct fx *s_fx_new(int max_children)
{
    struct fx *f = s_fx_at("127.0.0.1", max_children);
    assert_true(strncmp(relay_endpoint(f->r), "tcp://127.0.0.1:", 16) == 0);
    return f;
}

static void s_fx_free(struct fx *f)
{
    for (int i = 0; i < f->nkids; i++)
        s_kid_close(&f->kids[i]);
    relay_destroy(&f->r);
    relay_destroy(&f->r); /* safe twice */
    if (f->timer > 0)
        loop_timer_cancel(f->loop, f->timer);
    for (int i = 0; i < f->nitems; i++)
        free(f->items[i].payload);
    tls_ctx_destroy(&f->sctx);
    tls_ctx_destroy(&f->cctx);
    zmq_ctx_term(f->zctx);
    loop_destroy(&f->loop);
}

static void s_join(wire_msg_t *m, Plaunch__Join *j, const char *host)
{
    static uint32_t ports[1] = { 29500 };
    plaunch__join__init(j);
    j->hostname = (char *)host;
    j->addr = "127.0.0.1";
    j->pid = 4242;
    j->nproc = 1;
    j->requested_node_rank = -1;
    j->plaunch_version = PLAUNCH_VERSION;
    j->n_worker_ports = 1;
    j->worker_ports = ports;
    j->master_port = 29400;
    wire_init(m, "relayjob", 0, WIRE_JOIN, j);
}

/* The coordinator's RELAYED with one item: MESSAGE (a STOP saying text) or DROP, for the children in to. */
static void s_down(struct fx *f, int event, uint32_t *to, size_t n_to, int watch, const char *text)
{
    Plaunch__Stop st = PLAUNCH__STOP__INIT;
    Plaunch__RelayItem it = PLAUNCH__RELAY_ITEM__INIT, *items[1] = { &it };
    Plaunch__Relayed batch = PLAUNCH__RELAYED__INIT;
    wire_msg_t m;
    unsigned char buf[256];
    char err[128];
    st.reason = PLAUNCH__STOP__REASON__RESTART;
    st.text = (char *)(text ? text : "");
    wire_init(&m, "relayjob", 0, WIRE_STOP, &st);
    ssize_t n = wire_encode(&m, buf, sizeof buf, err, sizeof err);
    assert_true(n > 0);
    it.event = (Plaunch__RelayItem__Event)event;
    it.n_to = n_to;
    it.to = to;
    it.watch = watch;
    if (event == PLAUNCH__RELAY_ITEM__EVENT__MESSAGE) {
        it.payload.data = buf;
        it.payload.len = (size_t)n;
    }
    batch.n_items = 1;
    batch.items = items;
    relay_down(f->r, &batch);
}

/* ---- tests ------------------------------------------------------------------------------------------------ */

/* HELLO first, OPENED with who the child is, a JOIN up as its exact bytes, HEARTBEAT stopping at the relay, the
 * relay's heartbeats reaching the child. */
static void test_open_join_heartbeat(void **state)
{
    struct fx *f = s_fx_new(4);
    uint32_t h;
    int i = s_open_kid(f, &h);
    assert_int_equal(h, 1);
    assert_string_equal(f->kids[i].hello_host, "coordhost");
    assert_string_equal(f->kids[i].hello_job, "relayjob");
    const struct rec *o = s_find(f, PLAUNCH__RELAY_ITEM__EVENT__OPENED, h);
    assert_string_equal(o->addr, "127.0.0.1");
    assert_string_equal(o->name, TLS_PEER_PSK);
    assert_int_equal(relay_children(f->r), 1);

    wire_msg_t m;
    Plaunch__Join j;
    unsigned char join[1024], rep[1024];
    s_join(&m, &j, "node7");
    size_t n = s_kid_send(f, i, &m, join, sizeof join);
    s_kid_heartbeat(f, i); /* stops at the relay */
    Plaunch__Report r;
    Plaunch__Health hl = PLAUNCH__HEALTH__INIT;
    hl.summaries.data = (uint8_t *)"[]";
    hl.summaries.len = 2;
    wire_report_init(&m, &r, "relayjob", 0, WIRE_R_HEALTH, &hl);
    size_t rn = s_kid_send(f, i, &m, rep, sizeof rep);
    UNTIL(f, c_items, &(int){ 3 });
    assert_int_equal(f->items[1].event, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE);
    assert_int_equal(f->items[1].from, h);
    assert_int_equal(f->items[1].len, n);
    assert_memory_equal(f->items[1].payload, join, n);
    assert_int_equal(f->items[2].event, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE); /* the REPORT: no HEARTBEAT between */
    assert_int_equal(f->items[2].len, rn);
    assert_memory_equal(f->items[2].payload, rep, rn);
    assert_int_equal(s_count(f, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, 0), 2);
    /* no heartbeats before its ASSIGN (a watched message), as from the coordinator; then every HB_MS */
    s_run(f, c_never, NULL, 3 * HB_MS);
    assert_int_equal(f->kids[i].heartbeats, 0);
    f->kids[i].hb_every_ns = HB_MS * 1000000ull; /* and it sends its own, so that it is not found silent */
    s_down(f, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, &h, 1, 1, "watch");
    s_run(f, c_never, NULL, 3 * HB_MS);
    assert_true(f->kids[i].heartbeats >= 2);
    assert_int_equal(s_count(f, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, 0), 2);
    s_fx_free(f);
}

/* A held relay completes a child's handshake but says nothing (no HELLO down, no OPENED up) until relay_release,
 * keeps it when its own session breaks meanwhile, and then greets it with the job and host it was given. */
static void test_held_until_release(void **state)
{
    s_fx_held = 1;
    struct fx *f = s_fx_new(4);
    s_fx_held = 0;
    int i = s_kid_new(f, 1);
    s_run(f, c_never, NULL, 300);
    assert_int_equal(f->kids[i].ntypes, 0);
    assert_int_equal(f->nitems, 0);
    assert_int_equal(relay_children(f->r), 1); /* its TLS session is open */
    relay_drop_all(f->r, NULL);                  /* the relay's own session broke before its JOIN */
    s_run(f, c_never, NULL, 100);
    assert_int_equal(relay_children(f->r), 1);
    assert_false(f->kids[i].disconnected);
    relay_release(f->r, "thejob", "thecoord");
    UNTIL(f, c_hello, &i);
    assert_int_equal(f->kids[i].types[0], WIRE_HELLO);
    assert_string_equal(f->kids[i].hello_host, "thecoord");
    assert_string_equal(f->kids[i].hello_job, "thejob");
    UNTIL(f, c_event, ((int[]){ PLAUNCH__RELAY_ITEM__EVENT__OPENED, 1 }));
    relay_hold(f->r); /* held again: the child the coordinator knows goes, as before */
    relay_drop_all(f->r, NULL);
    UNTIL(f, c_disconnected, &i);
    s_fx_free(f);
}

/* A STOP from the coordinator for children 1 and 3 reaches those two, not child 2. */
static void test_down_reaches_exactly_to(void **state)
{
    struct fx *f = s_fx_new(4);
    uint32_t h[3];
    int k[3];
    for (int i = 0; i < 3; i++)
        k[i] = s_open_kid(f, &h[i]);
    uint32_t to[3] = { h[0], h[2], 999 }; /* 999: no such child, ignored */
    s_down(f, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, to, 3, 0, "restart");
    UNTIL(f, c_types, ((int[]){ k[0], 2 }));
    UNTIL(f, c_types, ((int[]){ k[2], 2 }));
    assert_int_equal(f->kids[k[0]].types[1], WIRE_STOP);
    assert_int_equal(f->kids[k[2]].types[1], WIRE_STOP);
    /* child 2 gets a message after the STOP would have reached it: it has that one only */
    s_down(f, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, &h[1], 1, 0, "restart");
    UNTIL(f, c_types, ((int[]){ k[1], 2 }));
    assert_int_equal(f->kids[k[1]].ntypes, 2);
    assert_int_equal(f->kids[k[0]].ntypes, 2);
    assert_int_equal(f->kids[k[2]].ntypes, 2);
    s_fx_free(f);
}

/* A watched child that says nothing is reported SILENT within the timeout and one tick of the relay's clock, and
 * its session ends with nothing more about it; a watched child that sends heartbeats is not. */
static void test_watch_silent(void **state)
{
    struct fx *f = s_fx_new(4);
    uint32_t quiet, chatty;
    int q = s_open_kid(f, &quiet), c = s_open_kid(f, &chatty);
    f->kids[c].hb_every_ns = HB_MS * 1000000ull;
    uint32_t to[2] = { quiet, chatty };
    /* quiet's silence clock starts now, whatever it said before */
    s_run(f, c_never, NULL, HB_MS);
    uint64_t t0 = loop_now_ns();
    s_down(f, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, to, 2, 1, "watch"); /* watch comes with any message */
    UNTIL(f, c_event, ((int[]){ PLAUNCH__RELAY_ITEM__EVENT__SILENT, (int)quiet }));
    const struct rec *e = s_find(f, PLAUNCH__RELAY_ITEM__EVENT__SILENT, quiet);
    double ms = (double)(e->at_ns - t0) / 1e6, tick = (double)heartbeat_tick_ms(HB_MS / 1000.0, HB_TIMEOUT_MS / 1000.0);
    /* within the timeout and one tick of the relay (a quarter of the interval), plus what a loaded machine (make
     * test runs tests side by side, SAN=1) may add to a timer's wake-up */
    if (ms < HB_TIMEOUT_MS || ms > HB_TIMEOUT_MS + tick + 40)
        fail_msg("SILENT after %.1f ms; expected within %d ms + a tick of %.0f ms", ms, HB_TIMEOUT_MS, tick);
    assert_non_null(strstr(e->text, "no message for 0."));
    assert_non_null(strstr(e->text, "(--heartbeat-timeout 0.4)"));
    UNTIL(f, c_disconnected, &q); /* a close_notify, then the connection closes */
    assert_true(f->kids[q].tls_closed);
    s_run(f, c_never, NULL, HB_TIMEOUT_MS); /* the chatty one lives on */
    assert_int_equal(s_count(f, PLAUNCH__RELAY_ITEM__EVENT__SILENT, 0), 1);
    assert_int_equal(s_count(f, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, 0), 0);
    assert_int_equal(relay_children(f->r), 1);
    assert_false(f->kids[c].tls_closed);
    s_fx_free(f);
}

/* A child whose connection closes, one that closes its TLS session, one that sends bytes that are no message and
 * one that starts a new session: CLOSED for each, saying why. */
static void test_closed(void **state)
{
    struct fx *f = s_fx_new(4);
    uint32_t h[4];
    int k[4];
    for (int i = 0; i < 4; i++)
        k[i] = s_open_kid(f, &h[i]);
    s_kid_close(&f->kids[k[0]]);
    UNTIL(f, c_event, ((int[]){ PLAUNCH__RELAY_ITEM__EVENT__CLOSED, (int)h[0] }));
    assert_string_equal(s_find(f, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, h[0])->text, "its connection closed");

    tls_chan_close(f->kids[k[1]].ch);
    s_kid_flush(&f->kids[k[1]]);
    UNTIL(f, c_event, ((int[]){ PLAUNCH__RELAY_ITEM__EVENT__CLOSED, (int)h[1] }));
    assert_string_equal(s_find(f, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, h[1])->text, "it closed its TLS session");

    assert_int_equal(tls_chan_send(f->kids[k[2]].ch, "not a message", 13), 0);
    s_kid_flush(&f->kids[k[2]]);
    UNTIL(f, c_event, ((int[]){ PLAUNCH__RELAY_ITEM__EVENT__CLOSED, (int)h[2] }));
    assert_non_null(strstr(s_find(f, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, h[2])->text, "bad message: "));
    UNTIL(f, c_disconnected, &k[2]);
    assert_true(f->kids[k[2]].tls_closed);

    /* the same DEALER (routing id) starts over: the old handle ends, a new one opens */
    struct kid *kid = &f->kids[k[3]];
    tls_chan_destroy(&kid->ch);
    kid->ch = tls_chan_new(f->cctx);
    kid->ntypes = 0;
    assert_int_equal(tls_chan_connect(kid->ch), 0);
    s_kid_flush(kid);
    UNTIL(f, c_hello, &k[3]);
    UNTIL(f, c_event, ((int[]){ PLAUNCH__RELAY_ITEM__EVENT__OPENED, (int)h[3] + 1 }));
    assert_string_equal(s_find(f, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, h[3])->text, "it started a new TLS session");
    assert_int_equal(relay_children(f->r), 1);
    /* every handle opened once, closed once, in that order */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s_count(f, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, h[i]), 1);
        assert_true(s_find(f, PLAUNCH__RELAY_ITEM__EVENT__OPENED, h[i]) <
                    s_find(f, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, h[i]));
    }
    s_fx_free(f);
}

/* DROP ends the session (close_notify, then the connection) and nothing comes back about it; later items for the
 * dropped handle are ignored. */
static void test_drop(void **state)
{
    struct fx *f = s_fx_new(4);
    uint32_t h, other;
    int k = s_open_kid(f, &h);
    s_open_kid(f, &other);
    int before = f->nitems;
    s_down(f, PLAUNCH__RELAY_ITEM__EVENT__DROP, &h, 1, 0, NULL);
    assert_int_equal(relay_children(f->r), 1);
    s_down(f, PLAUNCH__RELAY_ITEM__EVENT__DROP, &h, 1, 0, NULL); /* again: an ended handle, ignored */
    UNTIL(f, c_disconnected, &k);
    assert_true(f->kids[k].tls_closed);
    assert_int_equal(f->nitems, before);
    assert_int_equal(relay_children(f->r), 1);
    s_fx_free(f);
}

/* A client that speaks no TLS gets a plaintext REFUSE and its connection closes; the coordinator hears nothing. */
static void test_plaintext_refused(void **state)
{
    struct fx *f = s_fx_new(4);
    int k = s_kid_new(f, 0);
    wire_msg_t m;
    Plaunch__Join j;
    s_join(&m, &j, "plain");
    s_kid_send(f, k, &m, NULL, 0);
    UNTIL(f, c_disconnected, &k);
    assert_true(f->kids[k].refused);
    assert_int_equal(f->nitems, 0);
    assert_int_equal(f->up_calls, 0);
    assert_int_equal(relay_children(f->r), 0);
    s_fx_free(f);
}

/* A TLS record without a session (one a child sent on a session that is over) is counted, not answered: the
 * connection is not refused, and the same child's ClientHello after it opens a session (the coordinator's rule). */
static void test_stale_record(void **state)
{
    struct fx *f = s_fx_new(4);
    int k = s_kid_new(f, 0);
    struct kid *kid = &f->kids[k];
    unsigned char rec[5 + 16] = { 0x17, 0x03, 0x03, 0x00, 16 };
    assert_int_equal(zmq_send(kid->sock, rec, sizeof rec, 0), (int)sizeof rec);
    kid->ch = tls_chan_new(f->cctx);
    assert_int_equal(tls_chan_connect(kid->ch), 0);
    s_kid_flush(kid);
    UNTIL(f, c_hello, &k);
    assert_int_equal(kid->types[0], WIRE_HELLO);
    assert_false(kid->refused);
    assert_int_equal(relay_children(f->r), 1);
    s_fx_free(f);
}

/* max_children 1: sessions are capped at 1 + 0 + 8; the tenth ClientHello is refused (its connection closed). */
static void test_cap(void **state)
{
    struct fx *f = s_fx_new(1);
    uint32_t h;
    for (int i = 0; i < 9; i++)
        s_open_kid(f, &h);
    assert_int_equal(relay_children(f->r), 9);
    int k = s_kid_new(f, 1);
    UNTIL(f, c_disconnected, &k);
    assert_int_equal(f->kids[k].ntypes, 0);
    assert_int_equal(s_count(f, PLAUNCH__RELAY_ITEM__EVENT__OPENED, 0), 9);
    assert_int_equal(relay_children(f->r), 9);
    s_fx_free(f);
}

/* Messages that arrive together go up in one batch; a batch never passes RELAY_BATCH_BYTES (s_up checks every
 * bound of RELAYED); order is kept across batches. */
static void test_batches(void **state)
{
    struct fx *f = s_fx_new(4);
    uint32_t h;
    int k = s_open_kid(f, &h), before = f->nitems, calls = f->up_calls;
    static char json[200 << 10];
    wire_msg_t m;
    Plaunch__Report r;
    Plaunch__Health hl = PLAUNCH__HEALTH__INIT;
    unsigned char buf[256];
    char err[128];
    hl.summaries.data = (uint8_t *)"[]";
    hl.summaries.len = 2;
    wire_report_init(&m, &r, "relayjob", 0, WIRE_R_HEALTH, &hl);
    ssize_t n = wire_encode(&m, buf, sizeof buf, err, sizeof err);
    for (int i = 0; i < 50; i++) /* 50 messages in one frame: one handler run */
        assert_int_equal(tls_chan_send(f->kids[k].ch, buf, (size_t)n), 0);
    s_kid_flush(&f->kids[k]);
    UNTIL(f, c_items, &(int){ before + 50 });
    assert_int_equal(f->up_calls, calls + 1);
    memset(json, 'x', sizeof json);
    hl.summaries.data = (uint8_t *)json;
    hl.summaries.len = sizeof json;
    for (int i = 0; i < 5; i++) { /* 1 MB: at least two batches */
        json[0] = (char)('0' + i);
        s_kid_send(f, k, &m, NULL, 0);
    }
    UNTIL(f, c_items, &(int){ before + 55 });
    assert_true(f->up_calls >= calls + 3);
    for (int i = 0; i < 5; i++) {
        wire_msg_t *d = wire_decode(f->items[before + 50 + i].payload, f->items[before + 50 + i].len, WIRE_TO_RELAY,
                                    err, sizeof err);
        assert_non_null(d);
        assert_int_equal(d->report->health->summaries.data[0], '0' + i);
        wire_free(&d);
    }
    s_fx_free(f);
}

/* The relay's own session broke: every child gets a close_notify, nothing goes up; a failed `up` does the same. */
static void test_drop_all(void **state)
{
    struct fx *f = s_fx_new(4);
    uint32_t h;
    int a = s_open_kid(f, &h), b = s_open_kid(f, &h), before = f->nitems;
    relay_drop_all(f->r, "lost the coordinator");
    assert_int_equal(relay_children(f->r), 0);
    UNTIL(f, c_disconnected, &a);
    UNTIL(f, c_disconnected, &b);
    assert_true(f->kids[a].tls_closed && f->kids[b].tls_closed);
    assert_int_equal(f->nitems, before);
    /* a child that comes now is served; when its OPENED cannot be sent, it is dropped */
    f->up_fail = 1;
    int c = s_kid_new(f, 1);
    UNTIL(f, c_disconnected, &c);
    assert_true(f->kids[c].tls_closed);
    assert_int_equal(relay_children(f->r), 0);
    s_fx_free(f);
}

/* An IPv6 address: the endpoint has it in brackets, and a child's address comes up as the relay saw it. */
static void test_ipv6(void **state)
{
    struct fx *f = s_fx_at("::1", 2);
    uint32_t h;
    assert_true(strncmp(relay_endpoint(f->r), "tcp://[::1]:", 12) == 0);
    s_open_kid(f, &h);
    assert_string_equal(s_find(f, PLAUNCH__RELAY_ITEM__EVENT__OPENED, h)->addr, "::1");
    s_fx_free(f);
}

/* What the relay could not say within the protocol's bounds is refused up front, with a message. */
static void test_bad_cfg(void **state)
{
    loop_t *loop = loop_new();
    void *zctx = zmq_ctx_new();
    tls_ctx_t *sctx = tf_psk(1, tf_token);
    char err[512];
    struct relay_cfg ok = { .bind_addr = "127.0.0.1", .job_id = "relayjob", .hello_host = "coordhost",
                            .max_children = 4, .hb_interval_ms = HB_MS, .hb_timeout_ms = HB_TIMEOUT_MS };
    struct relay_cfg bad[4] = { ok, ok, ok, ok };
    const char *why[4] = { "max_children", "heartbeat", "hello.hostname", "job_id" };
    bad[0].max_children = 0;
    bad[1].hb_timeout_ms = HB_MS;
    bad[2].hello_host = "";
    bad[3].job_id = "a job";
    for (int i = 0; i < 4; i++) {
        err[0] = '\0';
        assert_null(relay_new(zctx, loop, sctx, &bad[i], s_up, NULL, err, sizeof err));
        if (!strstr(err, why[i]))
            fail_msg("case %d: \"%s\" does not name %s", i, err, why[i]);
    }
    tls_ctx_destroy(&sctx);
    zmq_ctx_term(zctx);
    loop_destroy(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_join_heartbeat),
        cmocka_unit_test(test_held_until_release),
        cmocka_unit_test(test_down_reaches_exactly_to),
        cmocka_unit_test(test_watch_silent),
        cmocka_unit_test(test_closed),
        cmocka_unit_test(test_drop),
        cmocka_unit_test(test_plaintext_refused),
        cmocka_unit_test(test_stale_record),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_drop_all),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_bad_cfg),
    };
    log_set_stderr_level(LOG_ERROR + 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
