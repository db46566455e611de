/* coord_relay: the fan-out tree of a job of many nodes: the first members to join directly are asked to relay
 * (RELAY_START), later newcomers are sent to the least loaded ready relay (REDIRECT), and what relays carry up
 * (RELAYED: their nodes' sessions opening and ending, their messages, their silence) reaches the membership logic
 * as if those nodes had their own sessions. Calls up only through cs->tr.ev. docs/design.md, "The fan-out tree". */
#include "launcher/coord/coord_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "launcher/job/joblayout.h"
#include "common/log.h"

/* A ZeroMQ routing id that starts with this asks to be served directly: a relay's own session, and a node whose
 * relay failed it (common to link.c; routing ids that libzmq makes start with a zero byte). */
#define CR_DIRECT "PLDIRECT"
void coord_relay_init(coord_server_t *cs)
{
    struct coord_tree *t = &cs->tree;
    const struct opts *o = &cs->job->opt;
    struct joblayout l;
    if (!cs->tls || !cs->tr.router)
        return;
    joblayout_plan(&l, o->nnodes + o->spares, o->relay_fanout); /* spares hold sessions like the others */
    if (!l.nrelays)
        return;
    t->fanout = l.fanout;
    t->want = l.nrelays;
    t->max_children = joblayout_max_children(&l, WIRE_MAX_RELAY_TO);
    t->ranked = o->node_hosts[0] && o->nnodes_min == o->nnodes;
    t->direct_left = t->ranked ? 0 : t->want + t->want / 8 + 2;
    t->asked = t->ranked ? t->want : 0; /* the layout's relays announce themselves */
    log_info("coordinator: %d nodes form a tree: %d relays of about %d nodes each (--relay-fanout %s)", o->nnodes,
             t->want, l.fanout, o->relay_fanout < 0 ? "auto" : "K");
    if (t->ranked)
        log_info("coordinator: ranked layout: relays are node ranks 1..%d; the others join them directly "
                 "(--node-hosts)", t->want);
}

void coord_relay_free(coord_server_t *cs)
{
    struct coord_tree *t = &cs->tree;
    if (t->resv_timer > 0)
        loop_timer_cancel(cs->loop, t->resv_timer);
    if (t->redirects)
        log_info("coordinator: %ld REDIRECT%s to relays, %ld never followed by a session there", t->redirects,
                 t->redirects == 1 ? "" : "s", t->released);
    free(t->resv);
    coord_via_free(cs);
}

/* ---- where a newcomer goes ------------------------------------------------------------------------------------ */

static int s_asks_direct(const unsigned char *rid, size_t rid_len)
{
    return rid_len >= sizeof CR_DIRECT - 1 && memcmp(rid, CR_DIRECT, sizeof CR_DIRECT - 1) == 0;
}

void coord_relay_direct(coord_server_t *cs, int peer)
{
    struct peer *p = &cs->peers[peer];
    if (cs->tree.want && cs->tree.direct_left > 0 && !s_asks_direct(p->sess.rid, p->sess.rid_len)) {
        cs->tree.direct_left--;
        p->direct_slot = 1;
    }
}

/* ---- reservations: a REDIRECT is sent before any authentication, so what it costs a relay expires -------------- */

/* A REDIRECT waits this long for its node's session at the relay: as long as the relay waits for a handshake. */
#define CR_RESV_MS CONN_AUTH_MS

static const struct peerlog_kind PL_UNUSED = { "released", "REDIRECT", "REDIRECTs",
                                               "no session opened at the relay in time (a peer without the job's "
                                               "credentials?)" };

static const struct peerlog_kind PL_AGAIN = { "redirected", "ClientHello", "ClientHellos",
                                              "again from an address whose REDIRECT was still unused" };

static struct coord_resv *s_resv_at(struct coord_tree *t, int i)
{
    return &t->resv[(t->resv_head + i) % t->resv_cap];
}

/* Reservation e no longer holds its relay's room (its node's session opened, or it went unused). */
static void s_resv_end(coord_server_t *cs, struct coord_resv *e, int unused)
{
    struct coord_tree *t = &cs->tree;
    if (e->relay < 0)
        return;
    struct crelay *r = &t->relays[e->relay];
    r->reserved -= r->reserved > 0;
    e->relay = -1;
    if (!unused)
        return;
    t->released++;
    peerlog_warn(cs->tr.plog, &PL_UNUSED, e->from, "released a REDIRECT of %s to relay %s: no session opened there "
                 "within %d s (%ld of %ld REDIRECTs unused so far)", e->from, r->endpoint, CR_RESV_MS / 1000,
                 t->released, t->redirects);
}

static int s_resv_tick(loop_t *loop, int id, void *arg);

/* Ends the reservations whose deadline passed (and drops used ones from the front); the timer follows the oldest. */
static void s_resv_expire(coord_server_t *cs)
{
    struct coord_tree *t = &cs->tree;
    uint64_t now = loop_now_ns();
    while (t->resv_n > 0 && (s_resv_at(t, 0)->relay < 0 || s_resv_at(t, 0)->deadline_ns <= now)) {
        s_resv_end(cs, s_resv_at(t, 0), 1);
        t->resv_head = (t->resv_head + 1) % t->resv_cap;
        t->resv_n--;
    }
    if (t->resv_n > 0 && t->resv_timer <= 0) {
        int64_t ms = (int64_t)((s_resv_at(t, 0)->deadline_ns - now) / 1000000) + 1;
        t->resv_timer = loop_timer_after_ms(cs->loop, ms, s_resv_tick, cs);
    }
}

static int s_resv_tick(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    cs->tree.resv_timer = 0;
    s_resv_expire(cs);
    return 0;
}

/* The live reservation from address `from` (to relay index `relay`, or any when -1), or NULL. */
static struct coord_resv *s_resv_find(struct coord_tree *t, const char *from, int relay)
{
    uint32_t h = hindex_hash(from, strlen(from), HINDEX_SEED);
    for (int i = 0; i < t->resv_n; i++) {
        struct coord_resv *e = s_resv_at(t, i);
        if (e->relay >= 0 && (relay < 0 || e->relay == relay) && e->hash == h && strcmp(e->from, from) == 0)
            return e;
    }
    return NULL;
}

/* Relay index `relay` holds room for a node from `from` until the deadline. A full ring releases its oldest. */
static void s_resv_add(coord_server_t *cs, int relay, const char *from)
{
    struct coord_tree *t = &cs->tree;
    if (!t->resv) {
        int cap = t->want * t->max_children;
        if (!(t->resv = calloc((size_t)cap, sizeof *t->resv)))
            return; /* out of memory: the REDIRECT costs the relay nothing until its node's session opens */
        t->resv_cap = cap;
    }
    if (t->resv_n == t->resv_cap) {
        s_resv_end(cs, s_resv_at(t, 0), 1);
        t->resv_head = (t->resv_head + 1) % t->resv_cap;
        t->resv_n--;
    }
    struct coord_resv *e = s_resv_at(t, t->resv_n++);
    e->deadline_ns = loop_now_ns() + (uint64_t)CR_RESV_MS * 1000000u;
    e->relay = relay;
    snprintf(e->from, sizeof e->from, "%s", from);
    e->hash = hindex_hash(e->from, strlen(e->from), HINDEX_SEED);
    t->relays[relay].reserved++;
    s_resv_expire(cs); /* arms the timer */
}

/* Node from `from` opened its session at relay index `relay`: its reservation (or that relay's oldest) is taken. */
static void s_resv_take(coord_server_t *cs, int relay, const char *from)
{
    struct coord_tree *t = &cs->tree;
    struct coord_resv *e = s_resv_find(t, from, relay);
    for (int i = 0; i < t->resv_n && !e; i++)
        if (s_resv_at(t, i)->relay == relay)
            e = s_resv_at(t, i);
    if (e)
        s_resv_end(cs, e, 0);
}

int coord_relay_route(coord_server_t *cs, int fd, const unsigned char *rid, size_t rid_len)
{
    struct coord_tree *t = &cs->tree;
    struct crelay *best = NULL;
    if (!t->want || s_asks_direct(rid, rid_len) || t->direct_left > 0) /* relays: the first to join directly */
        return 0;
    const char *from = conn_guard_addr(cs->tr.guard, fd);
    s_resv_expire(cs);
    struct coord_resv *again = s_resv_find(t, from, -1);
    if (again) { /* one reservation per address: a node that asks again holds one, and so does a flood */
        s_resv_end(cs, again, 0);
        t->released++;
        peerlog_warn(cs->tr.plog, &PL_AGAIN, from, "%s asked again before a session opened where its REDIRECT sent "
                     "it (%ld REDIRECTs so far)", from, t->redirects + 1);
    }
    for (int i = 0; i < t->nrelays; i++) {
        struct crelay *r = &t->relays[i];
        int used = r->load + r->reserved;
        if (r->ready && r->peer >= 1 && used < t->max_children && (!best || used < best->load + best->reserved))
            best = r;
    }
    if (!best) /* none ready yet, or all full: the coordinator takes it */
        return 0;
    Plaunch__Redirect rd = PLAUNCH__REDIRECT__INIT;
    wire_msg_t m;
    unsigned char buf[WIRE_MAX_ENDPOINT + 128];
    char err[128];
    rd.endpoint = best->endpoint;
    wire_init(&m, cs->job_id, cs->generation, WIRE_REDIRECT, &rd);
    ssize_t n = wire_encode(&m, buf, sizeof buf, err, sizeof err);
    if (n > 0 && zmq_send(cs->tr.router, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) == (int)rid_len &&
        zmq_send(cs->tr.router, buf, (size_t)n, ZMQ_DONTWAIT) == n) {
        t->redirects++;
        s_resv_add(cs, (int)(best - t->relays), from);
    }
    conn_guard_refuse(cs->tr.guard, fd); /* it leaves for its relay; closed after a linger or at its next frame */
    return 1;
}

int coord_relay_room(coord_server_t *cs)
{
    const struct coord_tree *t = &cs->tree;
    if (!t->want || t->direct_left > 0)
        return 0;
    for (int i = 0; i < t->nrelays; i++)
        if (t->relays[i].ready && t->relays[i].peer >= 1 && t->relays[i].load + t->relays[i].reserved < t->max_children)
            return 1;
    return 0;
}

/* Relay slot for member `peer`: its own (a session again), one that a relay at the same endpoint left, or a new one.
 * NULL out of memory. */
static struct crelay *s_slot(coord_server_t *cs, int peer, const char *endpoint)
{
    struct coord_tree *t = &cs->tree;
    struct peer *p = &cs->peers[peer];
    if (p->relay >= 1 && p->relay <= t->nrelays)
        return &t->relays[p->relay - 1];
    for (int i = 0; endpoint && i < t->nrelays; i++)
        if (t->relays[i].peer < 0 && strcmp(t->relays[i].endpoint, endpoint) == 0) {
            t->relays[i] = (struct crelay){ .peer = peer };
            p->relay = i + 1;
            return &t->relays[i];
        }
    if (t->nrelays == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        struct crelay *r = realloc(t->relays, (size_t)cap * sizeof *r);
        if (!r)
            return NULL;
        t->relays = r;
        t->cap = cap;
    }
    t->relays[t->nrelays] = (struct crelay){ .peer = peer };
    p->relay = ++t->nrelays;
    return &t->relays[t->nrelays - 1];
}

/* A relay of the ranked layout: it took its children before it joined; ready at once, no RELAY_START. */
static void s_ranked(coord_server_t *cs, int peer, const char *endpoint)
{
    struct peer *p = &cs->peers[peer];
    struct crelay *r = s_slot(cs, peer, endpoint);
    if (!r || r->ready)
        return;
    snprintf(r->endpoint, sizeof r->endpoint, "%s", endpoint);
    r->ready = 1;
    cs->tree.ranked_ready++;
    log_debug("node %s relays at %s (the ranked layout; %d relays so far)", p->host, r->endpoint,
              cs->tree.ranked_ready);
}

void coord_relay_consider(coord_server_t *cs, int peer, const char *ranked_ep)
{
    struct coord_tree *t = &cs->tree;
    struct peer *p = &cs->peers[peer];
    if (!t->want || p->local || p->via || !p->sess.ch)
        return;
    if (ranked_ep && strncmp(ranked_ep, "tcp://", 6) == 0) {
        s_ranked(cs, peer, ranked_ep);
        return;
    }
    if (t->asked >= t->want || p->relay)
        return;
    Plaunch__RelayStart rs = PLAUNCH__RELAY_START__INIT;
    wire_msg_t m;
    unsigned char buf[128];
    char err[128];
    rs.max_children = (uint32_t)t->max_children;
    rs.heartbeat_interval_ms = opts_ms(cs->job->opt.heartbeat);
    rs.heartbeat_timeout_ms = opts_ms(cs->job->opt.heartbeat_timeout);
    wire_init(&m, cs->job_id, cs->generation, WIRE_RELAY_START, &rs);
    if (!s_slot(cs, peer, NULL))
        return;
    t->asked++;
    ssize_t n = wire_encode(&m, buf, sizeof buf, err, sizeof err);
    if (n > 0)
        coord_via_send(cs, peer, buf, (size_t)n);
}

/* ---- what relays carry up ------------------------------------------------------------------------------------- */

static void s_ready(coord_server_t *cs, struct peer *p, const Plaunch__RelayReady *rr)
{
    struct coord_tree *t = &cs->tree;
    struct crelay *r = &t->relays[p->relay - 1];
    if (r->ready)
        return;
    if (!rr->endpoint[0] || strncmp(rr->endpoint, "tcp://", 6) != 0) {
        if (t->refused++ < 3)
            log_warn("node %s (%s) cannot relay: %s", p->host, p->from, rr->text[0] ? rr->text : "no endpoint");
        r->peer = -1;
        p->relay = 0;
        t->asked--;
        t->direct_left++; /* another member is asked instead */
        return;
    }
    snprintf(r->endpoint, sizeof r->endpoint, "%s", rr->endpoint);
    r->ready = 1;
    int ready = 0;
    for (int i = 0; i < t->nrelays; i++)
        ready += t->relays[i].ready && t->relays[i].peer >= 1;
    log_info("node %s relays at %s (%d of %d relays ready)", p->host, r->endpoint, ready, t->want);
}

/* A node behind relay member `relay` finished its TLS handshake there: a session of its own, as if direct. */
static void s_opened(coord_server_t *cs, int relay, struct crelay *r, const Plaunch__RelayItem *it)
{
    if (coord_via_find(cs, relay, it->from) >= 0)
        return;
    r->load++; /* an authenticated session at the relay (a DROP or its end takes it off) */
    s_resv_take(cs, (int)(r - cs->tree.relays), it->peer_addr);
    if (r->nodes >= 2 * cs->tree.max_children + 16) { /* more than it was ever sent: ended at once */
        coord_via_queue(cs, r, it->from, PLAUNCH__RELAY_ITEM__EVENT__DROP, NULL, 0, 0);
        return;
    }
    int v = coord_peers_new(cs, NULL, 0, -1); /* may move cs->peers */
    if (v < 0) {
        log_error("coordinator: out of memory for a node behind relay %s", cs->peers[relay].host);
        r->load--;
        return;
    }
    struct peer *p = &cs->peers[v];
    p->via = relay;
    p->handle = it->from;
    r->nodes++;
    p->st = PS_OPEN;
    snprintf(p->from, sizeof p->from, "%s", it->peer_addr);
    coord_via_index(cs, v); /* no line per node: its JOIN says who it is */
}

/* Its session at the relay ended: a member may come back (through any relay) within the grace, others go. */
static void s_closed(coord_server_t *cs, int v, const char *why)
{
    struct peer *p = &cs->peers[v];
    if (p->st != PS_MEMBER) {
        coord_peers_release(cs, v);
        return;
    }
    log_debug("node %d (%s): its session at its relay ended: %s", p->node_rank, p->host, why);
    p->vclosed = 1;
    p->last_heard_ns = loop_now_ns(); /* its heartbeats went to the relay: the timeout counts from now */
    coord_conns_grace(cs, v);
}

static void s_message(coord_server_t *cs, int v, const ProtobufCBinaryData *payload)
{
    char err[512];
    wire_msg_t *m = wire_decode(payload->data, payload->len, WIRE_TO_RELAY, err, sizeof err);
    if (!m) {
        log_warn("refused a message from %s (through a relay): %s", cs->peers[v].from, err);
        coord_peers_drop(cs, v, NULL);
        return;
    }
    cs->peers[v].last_heard_ns = loop_now_ns();
    cs->tr.ev.on_message(cs, v, m);
    wire_free(&m);
}

static void s_relayed(coord_server_t *cs, int relay, const Plaunch__Relayed *rel)
{
    char why[1200];
    for (size_t i = 0; i < rel->n_items; i++) {
        const Plaunch__RelayItem *it = rel->items[i];
        /* the other way's items; or the relay went meanwhile (what its nodes said may have ended it) */
        if (it->n_to || !cs->peers[relay].used || !cs->peers[relay].relay)
            continue;
        struct crelay *r = &cs->tree.relays[cs->peers[relay].relay - 1];
        if (it->event == PLAUNCH__RELAY_ITEM__EVENT__OPENED) {
            s_opened(cs, relay, r, it);
            continue;
        }
        int v = coord_via_find(cs, relay, it->from);
        if (v < 0)
            continue; /* a node whose session the coordinator ended already */
        switch (it->event) {
        case PLAUNCH__RELAY_ITEM__EVENT__MESSAGE:
            s_message(cs, v, &it->payload);
            break;
        case PLAUNCH__RELAY_ITEM__EVENT__CLOSED:
            r->load -= r->load > 0;
            s_closed(cs, v, it->text);
            break;
        case PLAUNCH__RELAY_ITEM__EVENT__SILENT:
            r->load -= r->load > 0;
            cs->peers[v].vclosed = 1;
            snprintf(why, sizeof why, "%s (its relay, %s, says)", it->text, cs->peers[relay].host);
            cs->tr.ev.peer_lost(cs, v, why);
            break;
        default:
            break;
        }
    }
}

void coord_relay_in(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    struct peer *p = &cs->peers[peer];
    if (p->st != PS_MEMBER || !p->relay || strcmp(m->job_id, cs->job_id) != 0) {
        log_warn("ignored %s from %s (%s): not a relay of this job", wire_type_name(m->body_case),
                 p->host[0] ? p->host : "an agent", p->from);
        return;
    }
    if (m->body_case == WIRE_RELAY_READY)
        s_ready(cs, p, m->relay_ready);
    else if (cs->tree.relays[p->relay - 1].ready)
        s_relayed(cs, peer, m->relayed);
}

/* ---- what goes down ------------------------------------------------------------------------------------------- */

int coord_relay_send(coord_server_t *cs, int peer, const void *buf, size_t len, int watch)
{
    if (len > WIRE_MAX_RELAYED) {
        cs->tr.ev.fatal(cs, "the coordinator has a message too big for a relay to carry");
        return -1;
    }
    const struct peer *p = &cs->peers[peer];
    struct crelay *r = coord_via_relay(cs, p);
    if (!r || p->vclosed)
        return -1;
    return coord_via_queue(cs, r, p->handle, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, buf, len, watch);
}

void coord_relay_flush(coord_server_t *cs, int peer)
{
    const struct peer *p = &cs->peers[peer];
    if (p->relay >= 1 && p->relay <= cs->tree.nrelays && cs->tree.relays[p->relay - 1].nout)
        coord_via_flush(cs, &cs->tree.relays[p->relay - 1]);
}

void coord_relay_gone(coord_server_t *cs, int peer, int lost, const char *why)
{
    struct coord_tree *t = &cs->tree;
    struct crelay *r = NULL;
    char text[1024];
    for (int i = 0; i < t->nrelays && !r; i++)
        if (t->relays[i].peer == peer)
            r = &t->relays[i];
    if (!r)
        return;
    const char *host = cs->peers[peer].host;
    snprintf(text, sizeof text, "its relay, %s, was lost: %s", host, why);
    r->peer = -1; /* no more redirects there; what was queued for it is dropped */
    if (r->ready && t->ranked && lost && t->asked > 0) /* re-planned: a member joining directly relays instead */
        t->asked--;
    r->ready = 0;
    for (int i = 0; i < t->resv_n; i++)
        if (s_resv_at(t, i)->relay == (int)(r - t->relays))
            s_resv_end(cs, s_resv_at(t, i), 0);
    coord_via_clear(r);
    if (cs->peers[peer].relay == (int)(r - t->relays) + 1)
        cs->peers[peer].relay = 0;
    int n = 0;
    for (int i = 1; i < cs->npeers; i++) {
        struct peer *c = &cs->peers[i];
        if (!c->used || c->via != peer)
            continue;
        n++;
        c->vclosed = 1;
        if (lost && c->st == PS_MEMBER)
            cs->tr.ev.peer_lost(cs, i, text);
        else
            s_closed(cs, i, text);
    }
    log_warn("relay %s: %s; %d node%s behind it %s", host, why, n, n == 1 ? "" : "s",
             lost ? "are lost with it" : "must come back through the coordinator");
}
