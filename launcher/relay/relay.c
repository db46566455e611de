/* relay: an agent's service to the nodes the coordinator sends it (its children): a ROUTER on the agent's own
 * address, a TLS 1.3 server session per child (launcher/conn/conn_session.c, the relay's policy in
 * relay_kids.c), the coordinator's limits on peers that never authenticate (conn_guard fed by conn_reader, the
 * ROUTER's read loop shared with the coordinator; peerlog), heartbeats to each child, and their messages both ways (up: relay_up.c's batches). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "launcher/conn/conn_reader.h"
#include "common/log.h"
#include "launcher/relay/relay_priv.h"

static const struct peerlog_kind PL_CLOSED = { "closed", "connection", "connections",
                                               "unauthenticated, over a limit or past the deadline" };

/* ---- connections ---------------------------------------------------------------------------------------------- */

static void s_on_conn_end(void *arg, int fd, int tag, enum conn_state was, enum conn_why why, const char *addr)
{
    relay_t *r = arg;
    if (why != CONN_GONE && why != CONN_REFUSAL && (was == CONN_NEW || was == CONN_PENDING))
        peerlog_warn(r->plog, &PL_CLOSED, addr, "relay: closed a connection from %s (limits: docs/security.md)", addr);
    if (tag >= 0 && tag < r->nkids && r->kids[tag].used && r->kids[tag].sess.fd == fd)
        relay_kids_end(r, tag, "its connection closed", 0);
}

static void s_drain(void *arg)
{
    conn_reader_drain(((relay_t *)arg)->reader);
}

/* What waits goes up; what could not (the relay's own session is down) means its children's sessions must end:
 * the coordinator will never hear of them. */
static void s_up_flush(relay_t *r)
{
    relay_up_flush(&r->up);
    if (r->up.failed) {
        r->up.failed = 0;
        relay_drop_all(r, NULL);
    }
}

static void s_frame(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len)
{
    conn_session_frame(((relay_t *)arg)->sess, fd, rid, rid_len, data, len);
}

static void s_after_read(void *arg)
{
    s_up_flush(arg);
}

static const struct conn_reader_ops s_reader_ops = { .frame = s_frame, .after = s_after_read };

/* ---- heartbeats ----------------------------------------------------------------------------------------------- */

static int s_hb_tick(loop_t *loop, int id, void *arg)
{
    relay_t *r = arg;
    uint64_t now = loop_now_ns();
    unsigned char buf[128];
    ssize_t n = -1;
    char err[128], why[160];
    r->hb_timer = 0;
    if (heartbeat_due(&r->hb, now)) {
        Plaunch__Heartbeat hb;
        wire_msg_t m;
        heartbeat_msg(&r->hb, &hb, &m, r->job_id, r->generation);
        n = wire_encode(&m, buf, sizeof buf, err, sizeof err);
    }
    for (int i = 0; i < r->nkids; i++) {
        struct rchild *c = &r->kids[i];
        if (!c->used || !c->opened)
            continue;
        if (c->watched && heartbeat_silent(&r->hb, c->last_ns, now, 0)) {
            snprintf(why, sizeof why, "no message for %.1f s (--heartbeat-timeout %g)",
                     (double)(now - c->last_ns) / 1e9, r->hb_timeout_ms / 1000.0);
            relay_up_queue(&r->up, PLAUNCH__RELAY_ITEM__EVENT__SILENT, c->handle, NULL, 0, NULL, NULL, why);
            c->opened = 0; /* SILENT said it all: no CLOSED after it */
            relay_kids_end(r, i, NULL, 1);
        } else if (n > 0 && c->watched) { /* as the coordinator: a node without its ASSIGN watches no heartbeats */
            relay_kids_send(r, c, buf, (size_t)n);
        }
    }
    s_up_flush(r);
    r->hb_timer = loop_timer_after_ms(loop, r->hb_tick_ms, s_hb_tick, r);
    return 0;
}

/* ---- from the coordinator ------------------------------------------------------------------------------------- */

void relay_down(relay_t *r, const Plaunch__Relayed *batch)
{
    for (size_t k = 0; k < batch->n_items; k++) {
        const Plaunch__RelayItem *it = batch->items[k];
        int drop = it->event == PLAUNCH__RELAY_ITEM__EVENT__DROP;
        if (!drop && it->event != PLAUNCH__RELAY_ITEM__EVENT__MESSAGE)
            continue;
        for (size_t j = 0; j < it->n_to; j++) {
            int i = relay_kids_find_handle(r, it->to[j]);
            if (i < 0) {
                r->unknown++;
                continue;
            }
            struct rchild *c = &r->kids[i];
            if (drop) {
                c->opened = 0; /* the coordinator asked: no CLOSED */
                relay_kids_end(r, i, NULL, 1);
                continue;
            }
            if (it->watch) {
                c->watched = 1;
                c->last_ns = loop_now_ns();
            }
            relay_kids_send(r, c, it->payload.data, it->payload.len);
        }
    }
    s_up_flush(r);
}

void relay_set_generation(relay_t *r, uint32_t gen)
{
    r->generation = gen;
}

void relay_release(relay_t *r, const char *job_id, const char *hello_host)
{
    if (!r->held)
        return;
    r->held = 0;
    snprintf(r->job_id, sizeof r->job_id, "%s", job_id);
    snprintf(r->hello_host, sizeof r->hello_host, "%s", hello_host);
    for (int i = 0; i < r->nkids; i++)
        if (r->kids[i].used && r->kids[i].waiting)
            relay_kids_hello(r, i);
    s_up_flush(r);
}

void relay_hold(relay_t *r)
{
    r->held = 1;
}

void relay_drop_all(relay_t *r, const char *why)
{
    for (int i = 0; i < r->nkids; i++) /* those the coordinator knows; a held relay's waiting ones keep waiting */
        if (r->kids[i].used && (r->kids[i].opened || !r->held)) {
            r->kids[i].opened = 0;
            relay_kids_end(r, i, NULL, 1);
        }
    if (why)
        log_warn("relay: every node's session here ended: %s", why);
}

int relay_children(const relay_t *r)
{
    return r->live;
}

const char *relay_endpoint(const relay_t *r)
{
    return r->endpoint;
}

/* ---- life cycle ----------------------------------------------------------------------------------------------- */

static int s_listen(relay_t *r, const char *bind_addr, int port, char *err, size_t errlen)
{
    char ep[WIRE_MAX_ENDPOINT + 16];
    int zero = 0, hs_ivl = CONN_AUTH_MS + 1000, backlog = r->max_children * 2 + 64;
    int64_t maxmsg = TLS_CHAN_FRAME_MAX + 64;
    size_t len = sizeof r->endpoint;
    int v6 = strchr(bind_addr, ':') != NULL;
    char pnum[16] = "*";
    if (port > 0)
        snprintf(pnum, sizeof pnum, "%d", port);
    snprintf(ep, sizeof ep, "tcp://%s%s%s:%s", v6 ? "[" : "", bind_addr, v6 ? "]" : "", pnum);
    if (!(r->router = zmq_socket(r->zctx, ZMQ_ROUTER)) ||
        zmq_setsockopt(r->router, ZMQ_IPV6, (int[]){ v6 }, sizeof(int)) < 0 ||
        zmq_setsockopt(r->router, ZMQ_LINGER, &zero, sizeof zero) < 0 ||
        zmq_setsockopt(r->router, ZMQ_ROUTER_MANDATORY, (int[]){ 1 }, sizeof(int)) < 0 ||
        zmq_setsockopt(r->router, ZMQ_SNDHWM, &zero, sizeof zero) < 0 || /* a refused frame: a broken session */
        zmq_setsockopt(r->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) < 0 ||
        zmq_setsockopt(r->router, ZMQ_HANDSHAKE_IVL, &hs_ivl, sizeof hs_ivl) < 0 ||
        zmq_setsockopt(r->router, ZMQ_BACKLOG, &backlog, sizeof backlog) < 0) {
        snprintf(err, errlen, "relay socket: %s", zmq_strerror(errno));
        return -1;
    }
    if (!(r->reader = conn_reader_new(r->zctx, r->loop, r->router, r->guard, &s_reader_ops, r, err, errlen)))
        return -1;
    if (zmq_bind(r->router, ep) < 0 || zmq_getsockopt(r->router, ZMQ_LAST_ENDPOINT, r->endpoint, &len) < 0) {
        snprintf(err, errlen, "the relay cannot listen on %s: %s", ep, zmq_strerror(errno));
        return -1;
    }
    return 0;
}

/* What the relay would have to say must fit the protocol: refused up front, with the field named. */
static int s_check_cfg(const struct relay_cfg *cfg, char *err, size_t errlen)
{
    Plaunch__Hello h = PLAUNCH__HELLO__INIT;
    wire_msg_t m;
    unsigned char buf[1024];
    if (cfg->max_children < 1 || cfg->max_children > WIRE_MAX_RELAY_TO) {
        snprintf(err, errlen, "relay: max_children %d outside 1..%d", cfg->max_children, WIRE_MAX_RELAY_TO);
        return -1;
    }
    if (cfg->hb_interval_ms < 1 || cfg->hb_timeout_ms <= cfg->hb_interval_ms) {
        snprintf(err, errlen, "relay: heartbeat timeout %d ms not above the interval of %d ms", cfg->hb_timeout_ms,
                 cfg->hb_interval_ms);
        return -1;
    }
    h.hostname = (char *)cfg->hello_host;
    h.plaunch_version = PLAUNCH_VERSION;
    wire_init(&m, cfg->job_id, cfg->generation, WIRE_HELLO, &h);
    return wire_encode(&m, buf, sizeof buf, err, errlen) < 0 ? -1 : 0;
}

relay_t *relay_new(void *zctx, loop_t *loop, tls_ctx_t *server_tls, const struct relay_cfg *cfg, relay_up_fn up,
                   void *arg, char *err, size_t errlen)
{
    if (s_check_cfg(cfg, err, errlen) < 0)
        return NULL;
    relay_t *r = calloc(1, sizeof *r);
    struct conn_limits lim;
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->zctx = zctx;
    r->loop = loop;
    r->tls = server_tls;
    snprintf(r->job_id, sizeof r->job_id, "%s", cfg->job_id);
    snprintf(r->hello_host, sizeof r->hello_host, "%s", cfg->hello_host);
    r->generation = cfg->generation;
    r->max_children = cfg->max_children;
    r->hb_interval_ms = cfg->hb_interval_ms;
    r->hb_timeout_ms = cfg->hb_timeout_ms;
    r->held = cfg->held;
    r->up = (struct relay_up){ .fn = up, .arg = arg };
    /* the coordinator's limits, sized for this relay's nodes: they all may handshake at once */
    conn_guard_limits(&lim, r->max_children);
    if (lim.max_pending < r->max_children + 8)
        lim.max_pending = r->max_children + 8;
    if (lim.max_unauth < 2 * r->max_children + 16)
        lim.max_unauth = 2 * r->max_children + 16;
    if (!(r->guard = conn_guard_new(loop, &lim, s_on_conn_end, r)) || !(r->plog = peerlog_new(loop, 0))) {
        snprintf(err, errlen, "out of memory");
        goto error;
    }
    if (s_listen(r, cfg->bind_addr, cfg->port, err, errlen) < 0 || !(r->sess = relay_kids_server(r, s_drain, err, errlen)))
        goto error;
    heartbeat_init(&r->hb, r->hb_interval_ms / 1000.0, r->hb_timeout_ms / 1000.0);
    r->hb.sent_ns = loop_now_ns(); /* the first one an interval from now: no node has its ASSIGN yet */
    r->hb_tick_ms = heartbeat_tick_ms(r->hb_interval_ms / 1000.0, r->hb_timeout_ms / 1000.0);
    if ((r->hb_timer = loop_timer_after_ms(loop, r->hb_tick_ms, s_hb_tick, r)) < 0) {
        snprintf(err, errlen, "event loop: %s", strerror(errno));
        goto error;
    }
    log_info("relay: listening on %s for up to %d nodes", r->endpoint, r->max_children);
    return r;
error:
    relay_destroy(&r);
    return NULL;
}

void relay_destroy(relay_t **pr)
{
    relay_t *r = pr ? *pr : NULL;
    if (!r)
        return;
    *pr = NULL;
    relay_kids_free(r);
    relay_up_flush(&r->up);
    relay_up_free(&r->up);
    if (r->hb_timer > 0)
        loop_timer_cancel(r->loop, r->hb_timer);
    conn_reader_destroy(&r->reader);
    if (r->router) {
        int linger = RL_LINGER_MS; /* the children's last messages (BYE, close_notify) leave */
        zmq_setsockopt(r->router, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(r->router);
    }
    conn_guard_destroy(&r->guard);
    peerlog_destroy(&r->plog);
    free(r);
}
