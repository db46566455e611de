/* coord_peers: the coordinator's sessions, one per ROUTER routing id (or behind a relay: coord_via.c): created,
 * freed, detached from a member whose session broke, and moved to a member that rejoined on a new connection. They
 * are found by routing id and served by launcher/conn/conn_session.c (the connection's tag, then its index). */
#include "launcher/coord/coord_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

int coord_peers_new(coord_server_t *cs, const unsigned char *rid, size_t len, int fd)
{
    int i = cs->free_hint > 1 ? cs->free_hint : 1; /* a scan from 1 made 16,384 sessions cost seconds */
    while (i < cs->npeers && cs->peers[i].used)
        i++;
    cs->free_hint = i + 1;
    if (i == cs->npeers) {
        if (cs->npeers == cs->cap) { /* geometric: a thousand agents must not mean a million copies */
            int cap = cs->cap * 2;
            struct peer *np = realloc(cs->peers, (size_t)cap * sizeof *np);
            if (!np)
                return -1;
            cs->peers = np;
            cs->cap = cap;
        }
        cs->npeers++;
    }
    struct peer *p = &cs->peers[i];
    memset(p, 0, sizeof *p);
    p->used = 1;
    if (len)
        memcpy(p->sess.rid, rid, len);
    p->sess.rid_len = len;
    p->sess.fd = fd;
    p->node_rank = -1;
    p->joined_gen = -1;
    p->req_rank = -1;
    p->last_rank = -1;
    p->last_heard_ns = loop_now_ns();
    snprintf(p->from, sizeof p->from, "%s", cs->tr.guard ? conn_guard_addr(cs->tr.guard, fd) : "?");
    return i;
}

int coord_peers_init(coord_server_t *cs)
{
    if (!(cs->peers = calloc(1, sizeof *cs->peers)))
        return -1;
    cs->npeers = 1;
    cs->cap = 1;
    cs->peers[0] = (struct peer){ .used = 1, .local = 1, .sess.fd = -1, .node_rank = -1, .joined_gen = -1,
                                  .last_rank = -1, .req_rank = -1 };
    snprintf(cs->peers[0].from, sizeof cs->peers[0].from, "this node");
    return 0;
}

void coord_peers_free(coord_server_t *cs)
{
    if (cs->peers)
        free(cs->peers[0].ports);
    free(cs->peers);
    cs->peers = NULL;
}

/* Unties the peer from its connection (the connection may already carry another session). */
static void s_untag(coord_server_t *cs, int peer)
{
    struct peer *p = &cs->peers[peer];
    if (cs->tr.guard && p->sess.fd >= 0 && conn_guard_tag(cs->tr.guard, p->sess.fd) == peer)
        conn_guard_set_tag(cs->tr.guard, p->sess.fd, -1);
    p->sess.fd = -1;
}

static void s_stop_grace(coord_server_t *cs, struct peer *p)
{
    if (p->grace_timer > 0) {
        loop_timer_cancel(cs->loop, p->grace_timer);
        cs->ngrace--;
    }
    p->grace_timer = 0;
    p->reconnecting = 0;
}

void coord_peers_release(coord_server_t *cs, int peer)
{
    struct peer *p = &cs->peers[peer];
    if (!p->used || p->local)
        return;
    tls_chan_destroy(&p->sess.ch);
    s_untag(cs, peer);
    s_stop_grace(cs, p);
    if (p->via)
        coord_via_forget(cs, p);
    cs->tree.direct_left += p->direct_slot; /* a handshake that never authenticated gives its place back */
    p->direct_slot = 0;
    free(p->ports);
    p->ports = NULL;
    coord_members_unset(cs, peer);
    p->used = 0;
    p->st = PS_GONE;
    if (peer < cs->free_hint)
        cs->free_hint = peer;
}

void coord_peers_detach(coord_server_t *cs, int peer)
{
    struct peer *p = &cs->peers[peer];
    tls_chan_destroy(&p->sess.ch);
    p->sess.rid_len = 0; /* frames still arriving on its routing id belong to no session now */
}

void coord_peers_move(coord_server_t *cs, int from, int to)
{
    struct peer *p = &cs->peers[from], *o = &cs->peers[to];
    int fd = p->sess.fd;
    tls_chan_destroy(&o->sess.ch);
    s_untag(cs, to);
    s_stop_grace(cs, o);
    memcpy(o->sess.rid, p->sess.rid, p->sess.rid_len);
    o->sess.rid_len = p->sess.rid_len;
    p->sess.rid_len = 0;
    conn_session_index(cs->tr.sess, to);
    o->sess.ch = p->sess.ch;
    p->sess.ch = NULL;
    if (o->via) /* its old session behind a relay is over */
        coord_via_forget(cs, o);
    o->via = p->via; /* the new session's place: direct, or behind a relay */
    o->handle = p->handle;
    o->vclosed = p->vclosed;
    p->via = 0;
    if (o->via)
        coord_via_index(cs, to);
    memcpy(o->from, p->from, sizeof o->from);
    o->last_heard_ns = loop_now_ns();
    s_untag(cs, from);
    free(p->ports);
    p->ports = NULL;
    coord_members_unset(cs, from);
    p->used = 0;
    p->st = PS_GONE;
    if (from < cs->free_hint)
        cs->free_hint = from;
    o->sess.fd = fd;
    if (cs->tr.guard && fd >= 0)
        conn_guard_set_tag(cs->tr.guard, fd, to);
}

void coord_peers_drop(coord_server_t *cs, int peer, const char *why)
{
    struct peer *p = &cs->peers[peer];
    if (!p->used || p->local)
        return;
    if (why)
        log_info("dropping the session with %s (%s): %s", p->host[0] ? p->host : "a peer", p->from, why);
    if (p->sess.ch) {
        tls_chan_close(p->sess.ch);
        conn_session_flush(cs->tr.sess, &p->sess);
    }
    struct crelay *r = p->via && !p->vclosed ? coord_via_relay(cs, p) : NULL;
    if (r) /* its relay ends the session, after what was queued for it */
        coord_via_queue(cs, r, p->handle, PLAUNCH__RELAY_ITEM__EVENT__DROP, NULL, 0, 0);
    int fd = p->sess.fd;
    if (cs->tr.guard && fd >= 0 && conn_guard_tag(cs->tr.guard, fd) == peer)
        conn_guard_refuse(cs->tr.guard, fd); /* closed once the last message (a REFUSE, an alert) has left */
    coord_peers_release(cs, peer);
}
