/* coord_transport: the coordinator's transport: a ZeroMQ ROUTER whose peers are agents behind TLS 1.3 sessions
 * (or plaintext with --insecure), the in-process agent of its own node, heartbeats, and the coordinator's policy
 * for the sessions' server of launcher/conn/conn_session.c (redirects, the admission queue, a member that keeps
 * its place while it reconnects). Connections and their limits: coord_conns.c; the table of sessions:
 * coord_peers.c. */
#include "launcher/coord/coord_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/log.h"

void *coord_transport_encode(coord_server_t *cs, int peer, const wire_msg_t *m, size_t *len)
{
    char err[256];
    void *buf = wire_encode_alloc(m, len, err, sizeof err);
    if (!buf) {
        /* What the coordinator cannot say, nobody waiting for it would ever hear: end the job. */
        const struct peer *p = peer >= 0 ? &cs->peers[peer] : NULL;
        char text[1024];
        snprintf(text, sizeof text, "the coordinator cannot encode %s for %s: %s", wire_type_name(m->body_case),
                 !p ? "every node" : p->local ? "this node" : p->host[0] ? p->host : p->from, err);
        cs->tr.ev.fatal(cs, text);
    }
    return buf;
}

/* watch: an ASSIGN (or a spare's standby) to a node behind a relay, which from then on watches its heartbeats */
static int s_send(coord_server_t *cs, int peer, const void *buf, size_t len, int watch)
{
    struct peer *p = &cs->peers[peer];
    int rc = 0;
    if (p->relay) /* what it carries for its nodes was queued first and leaves first */
        coord_relay_flush(cs, peer);
    if (!p->used) {
        rc = -1;
    } else if (p->via) {
        rc = coord_relay_send(cs, peer, buf, len, watch);
    } else if (p->local) {
        rc = coord_mail_post(cs, 1, buf, len);
    } else if (!cs->tls) {
        rc = zmq_send(cs->tr.router, p->sess.rid, p->sess.rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
                     zmq_send(cs->tr.router, buf, len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
    } else {
        rc = conn_session_send(cs->tr.sess, &p->sess, buf, len);
    }
    return rc;
}

int coord_transport_send(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    size_t len;
    if (!cs->peers[peer].used)
        return -1;
    void *buf = coord_transport_encode(cs, peer, m, &len);
    if (!buf)
        return -1;
    int watch = m->body_case == WIRE_ASSIGN || (m->body_case == WIRE_REPORT && m->report->kind_case == WIRE_R_STANDBY);
    int rc = s_send(cs, peer, buf, len, watch);
    free(buf);
    return rc;
}

int coord_transport_send_encoded(coord_server_t *cs, int peer, const void *buf, size_t len)
{
    return s_send(cs, peer, buf, len, 0);
}

int coord_transport_hello(coord_server_t *cs, int peer)
{
    Plaunch__Hello h = PLAUNCH__HELLO__INIT;
    wire_msg_t m;
    h.hostname = (char *)cs->job->node.hostname;
    h.plaunch_version = PLAUNCH_VERSION;
    wire_init(&m, cs->job_id, cs->generation, WIRE_HELLO, &h);
    cs->peers[peer].st = PS_OPEN;
    return coord_transport_send(cs, peer, &m);
}

/* ---- messages from agents ------------------------------------------------------------------------ */

/* A whole message from a peer: decode with every bound checked, then the world logic. */
static void s_on_message(coord_server_t *cs, int peer, const void *data, size_t len)
{
    struct peer *p = &cs->peers[peer];
    char err[512];
    wire_msg_t *m = wire_decode(data, len, WIRE_TO_COORD, err, sizeof err);
    if (!m) {
        log_warn("refused a message from %s: %s", p->from, err);
        coord_peers_drop(cs, peer, NULL);
        return;
    }
    p->last_heard_ns = loop_now_ns();
    if (m->body_case == WIRE_RELAY_READY || m->body_case == WIRE_RELAYED)
        coord_relay_in(cs, peer, m); /* a relay's, and its nodes' */
    else
        cs->tr.ev.on_message(cs, peer, m);
    wire_free(&m);
}

/* ---- the coordinator's policy for its sessions' server (struct conn_session_ops) ------------------------------ */

static struct conn_session_slot *s_sess_slot(void *arg, int peer)
{
    coord_server_t *cs = arg;
    struct peer *p = peer >= 1 && peer < cs->npeers ? &cs->peers[peer] : NULL;
    return p && p->used && !p->local ? &p->sess : NULL;
}

static int s_sess_nslots(void *arg)
{
    return ((coord_server_t *)arg)->npeers;
}

static int s_sess_open(void *arg, int fd, const unsigned char *rid, size_t rid_len)
{
    coord_server_t *cs = arg;
    int peer = coord_peers_new(cs, rid, rid_len, fd);
    if (peer >= 0)
        coord_relay_direct(cs, peer); /* it may hold one of the tree's direct places while it authenticates */
    return peer;
}

static void s_sess_release(void *arg, int peer)
{
    coord_peers_release(arg, peer);
}

static void s_sess_restart(void *arg, int peer)
{
    coord_server_t *cs = arg;
    struct peer *p = &cs->peers[peer];
    if (p->st != PS_MEMBER) {
        coord_peers_release(cs, peer);
        return;
    }
    /* the member keeps its place until it rejoins on the new session or is lost */
    log_warn("node %d (%s) started a new TLS session", p->node_rank, p->host);
    if (p->relay)
        coord_relay_gone(cs, peer, 0, "it started a new session");
    coord_peers_detach(cs, peer);
}

static void s_sess_ready(void *arg, int peer)
{
    coord_server_t *cs = arg;
    struct peer *p = &cs->peers[peer];
    log_info("TLS session with %s as '%s'", p->from, tls_chan_peer_name(p->sess.ch));
    p->direct_slot = 0; /* its place among the nodes taken directly is spent for good */
    coord_transport_hello(cs, peer); /* the coordinator speaks first: the agent learns it was accepted */
}

static void s_sess_message(void *arg, int peer, const void *data, size_t len)
{
    s_on_message(arg, peer, data, len);
}

static void s_sess_failed(void *arg, int peer, int handshake, const char *why)
{
    coord_server_t *cs = arg;
    struct peer *p = &cs->peers[peer];
    if (!handshake)
        log_warn("session with %s (%s) failed: %s", p->host[0] ? p->host : "an agent", p->from, why);
    if (p->st == PS_MEMBER && p->relay)
        coord_relay_gone(cs, peer, 0, "its session with the coordinator failed");
    if (p->st == PS_MEMBER)
        coord_peers_detach(cs, peer); /* it comes back on a new session, or the heartbeat timeout ends it */
    else
        coord_peers_drop(cs, peer, NULL);
}

static int s_sess_gate(void *arg, int fd, const unsigned char *rid, size_t rid_len)
{
    return coord_relay_route(arg, fd, rid, rid_len); /* 1: sent to a relay, before any handshake */
}

static int s_sess_wait(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *hello, size_t len)
{
    return coord_admit_push(arg, fd, rid, rid_len, hello, len); /* every handshake slot is taken: it waits its turn */
}

static void s_sess_drain(void *arg)
{
    conn_reader_drain(((coord_server_t *)arg)->tr.reader);
}

/* Plaintext (--insecure): every peer is taken in. */
static void s_sess_plain(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len)
{
    coord_server_t *cs = arg;
    int peer = coord_peers_new(cs, rid, rid_len, fd);
    if (peer < 0)
        return;
    conn_session_index(cs->tr.sess, peer);
    if (coord_transport_hello(cs, peer) < 0) {
        coord_peers_release(cs, peer); /* no route back: a frame of a connection that is over */
        return;
    }
    conn_guard_set_tag(cs->tr.guard, fd, peer);
    conn_guard_trust(cs->tr.guard, fd);
    if (len > 0)
        s_on_message(cs, peer, data, len);
}

static uint32_t s_sess_generation(void *arg)
{
    return ((coord_server_t *)arg)->generation;
}

static const struct conn_session_ops s_sess_ops = {
    .slot = s_sess_slot,
    .nslots = s_sess_nslots,
    .open = s_sess_open,
    .release = s_sess_release,
    .restart = s_sess_restart,
    .ready = s_sess_ready,
    .message = s_sess_message,
    .failed = s_sess_failed,
    .gate = s_sess_gate,
    .wait = s_sess_wait,
    .drain = s_sess_drain,
    .plain = s_sess_plain,
    .generation = s_sess_generation,
};

/* Waiting ClientHellos, oldest first, while handshake slots are free (after every round of reading). */
static void s_admit(void *arg)
{
    coord_server_t *cs = arg;
    struct admit *a;
    if (!cs->tr.admit_head)
        return;
    conn_reader_drain(cs->tr.reader);
    /* one sent to a relay takes no handshake slot: the queue moves on while relays have room */
    while ((a = cs->tr.admit_head) != NULL && (conn_guard_pending_room(cs->tr.guard) || coord_relay_room(cs))) {
        a = coord_admit_pop(cs);
        if (coord_admit_current(cs, a) && conn_session_find(cs->tr.sess, a->fd, a->data, a->rid_len) < 0)
            conn_session_hello(cs->tr.sess, a->fd, a->data, a->rid_len, a->data + a->rid_len, a->len);
        free(a);
    }
}

static void s_frame(void *arg, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len)
{
    conn_session_frame(((coord_server_t *)arg)->tr.sess, fd, rid, rid_len, data, len);
}

static const struct conn_reader_ops s_reader_ops = { .frame = s_frame, .after = s_admit };

/* ---- heartbeats ----------------------------------------------------------------------------------- */

/* Nodes that a scheduler starts minutes apart: every few seconds of a rendezvous, who is there and who is awaited. */
static void s_say_rendezvous(coord_server_t *cs, uint64_t now)
{
    const struct opts *o = &cs->job->opt;
    char names[512] = "";
    size_t used = 0;
    int members = 0;
    cs->tr.said_ns = now;
    for (int i = 0; i < cs->npeers; i++) {
        const struct peer *p = &cs->peers[i];
        if (!p->used || p->st != PS_MEMBER)
            continue;
        if (used + strlen(p->host) + 8 < sizeof names)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", members ? ", " : "", p->host);
        members++;
    }
    log_warn("waiting for nodes: %d of %d joined%s%s%s (%.0f s of --rdzv-timeout %g s)", members,
             o->nnodes_min < o->nnodes ? o->nnodes_min : o->nnodes, members ? " (" : "", names, members ? ")" : "",
             (double)(now - cs->tr.started_ns) / 1e9, o->rdzv_timeout);
}

static int s_hb_tick(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    const struct opts *o = &cs->job->opt;
    uint64_t now = loop_now_ns();
    uint64_t unassigned = (uint64_t)((o->rdzv_timeout + o->heartbeat_timeout) * 1e9);
    unsigned char hbuf[128];
    ssize_t hlen = -1;
    if (heartbeat_due(&cs->tr.hb, now)) { /* one encoding per round: the same heartbeat (its number) to every node */
        Plaunch__Heartbeat hb;
        wire_msg_t m;
        char err[128];
        heartbeat_msg(&cs->tr.hb, &hb, &m, cs->job_id, cs->generation);
        hlen = wire_encode(&m, hbuf, sizeof hbuf, err, sizeof err);
    }
    for (int i = 1; i < cs->npeers; i++) {
        struct peer *p = &cs->peers[i];
        if (!p->used || p->st == PS_HANDSHAKE || (p->via && !p->vclosed && coord_via_relay(cs, p)))
            continue; /* its relay watches it and sends it heartbeats */
        /* During the first rendezvous nobody is lost by heartbeat: with hundreds of agents starting on a few
         * cores the coordinator itself is late; --rdzv-timeout bounds that phase instead. A node that has had no
         * ASSIGN yet sends no heartbeats (it has no generation to lose): it waits within the agent's own bound. */
        if (cs->state != CS_RENDEZVOUS && heartbeat_silent(&cs->tr.hb, p->last_heard_ns, now,
                                                            p->node_rank >= 0 || p->spare ? 0 : unassigned)) {
            char why[160];
            snprintf(why, sizeof why, "no message for %.1f s (--heartbeat-timeout %g)",
                     (double)(now - p->last_heard_ns) / 1e9, o->heartbeat_timeout);
            cs->tr.ev.peer_lost(cs, i, why);
            continue;
        }
        /* A node without an ASSIGN yet does not watch the coordinator's heartbeats (its --rdzv-timeout bounds
         * that wait): during a rendezvous of 16,384 nodes they were half of what the coordinator sent. */
        if (hlen > 0 && (p->node_rank >= 0 || p->spare) && !p->via)
            coord_transport_send_encoded(cs, i, hbuf, (size_t)hlen);
    }
    if (cs->state == CS_RENDEZVOUS && now - cs->tr.said_ns >= CS_SAY_NS)
        s_say_rendezvous(cs, now);
    /* closes to take in; slots freed by handshakes that ended without a frame (closed, past their deadline) */
    conn_reader_read(cs->tr.reader);
    if (cs->state != CS_DONE)
        cs->tr.hb_timer = loop_timer_after_ms(loop, heartbeat_tick_ms(o->heartbeat, o->heartbeat_timeout), s_hb_tick, cs);
    return 0;
}

static int s_rdzv_tick(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    if (id != cs->tr.rdzv_timer)
        return 0;
    cs->tr.rdzv_timer = 0;
    if (cs->state == CS_RENDEZVOUS || cs->state == CS_RESTARTING)
        cs->tr.ev.rendezvous_timeout(cs);
    return 0;
}

void coord_transport_rendezvous_deadline(coord_server_t *cs, double seconds)
{
    if (cs->tr.rdzv_timer > 0)
        loop_timer_cancel(cs->loop, cs->tr.rdzv_timer);
    cs->tr.rdzv_timer = seconds > 0 ? loop_timer_after_ms(cs->loop, (int64_t)(seconds * 1000), s_rdzv_tick, cs) : 0;
}

static int s_last_call_tick(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    if (id == cs->tr.last_call_timer) {
        cs->tr.last_call_timer = 0;
        cs->tr.ev.last_call(cs);
    }
    return 0;
}

void coord_transport_last_call(coord_server_t *cs, int ms)
{
    if (cs->tr.last_call_timer > 0)
        loop_timer_cancel(cs->loop, cs->tr.last_call_timer);
    cs->tr.last_call_timer = ms >= 0 ? loop_timer_after_ms(cs->loop, ms, s_last_call_tick, cs) : 0;
}

/* ---- life cycle ------------------------------------------------------------------------------------ */

int coord_transport_open(coord_server_t *cs, const char *endpoint, const struct coord_events *ev, char *err,
                         size_t errlen)
{
    int zero = 0, one = 1;
    int64_t maxmsg = TLS_CHAN_FRAME_MAX + 64;
    cs->tr.ev = *ev;
    if (!endpoint) /* one node: the agent of this process is the only member; nothing listens */
        return 0;
    cs->tr.router = zmq_socket(cs->zctx, ZMQ_ROUTER);
    if (!cs->tr.router || zmq_setsockopt(cs->tr.router, ZMQ_LINGER, &zero, sizeof zero) < 0 ||
        zmq_setsockopt(cs->tr.router, ZMQ_ROUTER_MANDATORY, &one, sizeof one) < 0 ||
        /* no high-water mark: a frame refused for a full queue would be a TLS record lost, the session broken (a
         * relay busy with its nodes fell behind so at 16,384 nodes); what waits is bounded by what this side sends */
        zmq_setsockopt(cs->tr.router, ZMQ_SNDHWM, &zero, sizeof zero) < 0 ||
        zmq_setsockopt(cs->tr.router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) < 0) {
        snprintf(err, errlen, "coordinator socket: %s", zmq_strerror(errno));
        return -1;
    }
    if (coord_conns_open(cs, &s_reader_ops, err, errlen) < 0)
        return -1;
    struct conn_session_cfg sc = { .router = cs->tr.router, .guard = cs->tr.guard, .plog = cs->tr.plog,
                                   .tls = cs->tls, .job_id = cs->job_id, .who = "coordinator", .prefix = "" };
    if (!(cs->tr.sess = conn_session_new(&sc, &s_sess_ops, cs, err, errlen)))
        return -1;
    if (zmq_bind(cs->tr.router, endpoint) < 0) {
        snprintf(err, errlen, "the coordinator cannot listen on %s: %s%s", endpoint, zmq_strerror(errno),
                 errno == EADDRINUSE ? " (another job uses that port: pick another --master port)" : "");
        return -1;
    }
    const struct opts *o = &cs->job->opt;
    cs->tr.started_ns = cs->tr.said_ns = loop_now_ns();
    heartbeat_init(&cs->tr.hb, o->heartbeat, o->heartbeat_timeout);
    cs->tr.hb_timer = loop_timer_after_ms(cs->loop, heartbeat_tick_ms(o->heartbeat, o->heartbeat_timeout), s_hb_tick,
                                       cs);
    return 0;
}

void coord_transport_close(coord_server_t *cs)
{
    for (int i = 1; cs->peers && i < cs->npeers; i++)
        coord_peers_drop(cs, i, NULL); /* close_notify to each */
    if (cs->tr.hb_timer > 0)
        loop_timer_cancel(cs->loop, cs->tr.hb_timer);
    if (cs->tr.rdzv_timer > 0)
        loop_timer_cancel(cs->loop, cs->tr.rdzv_timer);
    if (cs->tr.last_call_timer > 0)
        loop_timer_cancel(cs->loop, cs->tr.last_call_timer);
    cs->tr.hb_timer = cs->tr.rdzv_timer = cs->tr.last_call_timer = 0;
    coord_mail_free(cs);
    if (cs->tr.router) {
        int linger = 500; /* the last BYEs must leave before the process does */
        zmq_setsockopt(cs->tr.router, ZMQ_LINGER, &linger, sizeof linger);
    }
    coord_admit_free(cs);
    conn_session_destroy(&cs->tr.sess);
    coord_conns_close(cs);
    if (cs->tr.router)
        zmq_close(cs->tr.router);
    cs->tr.router = NULL;
}
