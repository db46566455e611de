/* coord_peers: the coordinator's sessions, one per ROUTER routing id (or behind a relay: coord_via.c): found through
 * the connection they arrive on (conn_guard tags a connection with its session's index), created, freed, detached
 * from a member whose session broke, and moved to a member that rejoined on a new connection. */
#include "coord_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_router.h"
#include "log.h"

static int s_is(const struct peer *p, const unsigned char *rid, size_t len)
{
    return p->used && p->rid_len == len && len > 0 && memcmp(p->rid, rid, len) == 0;
}

/* Routing ids are indexed: the first frame of every new connection used to scan every session (16,384 nodes: a
 * quadratic rendezvous). An entry is stale once its peer holds another routing id, or none. */
struct s_rid {
    const coord_server_t *cs;
    const unsigned char *rid;
    size_t len;
};

static int s_rid_match(void *arg, int peer, uint32_t hash)
{
    const struct s_rid *r = arg;
    return peer >= 1 && peer < r->cs->npeers && s_is(&r->cs->peers[peer], r->rid, r->len);
}

static int s_rid_live(void *arg, int peer, uint32_t hash)
{
    const coord_server_t *cs = arg;
    const struct peer *p = peer >= 1 && peer < cs->npeers ? &cs->peers[peer] : NULL;
    return p && p->used && p->rid_len && hindex_hash(p->rid, p->rid_len, HINDEX_SEED) == hash;
}

static void s_index_rid(coord_server_t *cs, int peer)
{
    const struct peer *p = &cs->peers[peer];
    if (p->rid_len &&
        hindex_put(&cs->rids, hindex_hash(p->rid, p->rid_len, HINDEX_SEED), peer, s_rid_live, cs) < 0)
        cs->rid_broken = 1;
}

int coord_peers_find(coord_server_t *cs, int fd, const unsigned char *rid, size_t len)
{
    struct s_rid r = { cs, rid, len };
    int i = cs->tr.guard ? conn_guard_tag(cs->tr.guard, fd) : -1;
    if (i >= 1 && i < cs->npeers && s_is(&cs->peers[i], rid, len))
        return i; /* the session of the connection the frame came on: nearly always */
    /* a new connection, or a frame of one that is over, whose number another one took */
    if (!cs->rid_broken)
        return len ? hindex_find(&cs->rids, hindex_hash(rid, len, HINDEX_SEED), s_rid_match, &r) : -1;
    for (i = 1; i < cs->npeers; i++)
        if (s_is(&cs->peers[i], rid, len))
            return i;
    return -1;
}

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
        memcpy(p->rid, rid, len);
    p->rid_len = len;
    p->fd = fd;
    p->node_rank = -1;
    p->joined_gen = -1;
    p->req_rank = -1;
    p->last_heard_ns = loop_now_ns();
    snprintf(p->from, sizeof p->from, "%s", cs->tr.guard ? conn_guard_addr(cs->tr.guard, fd) : "?");
    s_index_rid(cs, i);
    return i;
}

int coord_peers_init(coord_server_t *cs)
{
    if (!(cs->peers = calloc(1, sizeof *cs->peers)))
        return -1;
    cs->npeers = 1;
    cs->cap = 1;
    cs->peers[0] = (struct peer){ .used = 1, .local = 1, .node_rank = -1, .joined_gen = -1, .req_rank = -1 };
    snprintf(cs->peers[0].from, sizeof cs->peers[0].from, "this node");
    return 0;
}

void coord_peers_free(coord_server_t *cs)
{
    if (cs->peers)
        free(cs->peers[0].ports);
    free(cs->peers);
    cs->peers = NULL;
    hindex_free(&cs->rids);
}

int coord_peers_flush(coord_server_t *cs, struct peer *p)
{
    return conn_router_flush(cs->tr.router, p->rid, p->rid_len, p->ch, cs->tr.frame);
}

/* Unties the peer from its connection (the connection may already carry another session). */
static void s_untag(coord_server_t *cs, int peer)
{
    struct peer *p = &cs->peers[peer];
    if (cs->tr.guard && p->fd >= 0 && conn_guard_tag(cs->tr.guard, p->fd) == peer)
        conn_guard_set_tag(cs->tr.guard, p->fd, -1);
    p->fd = -1;
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
    tls_chan_destroy(&p->ch);
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
    tls_chan_destroy(&p->ch);
    p->rid_len = 0; /* frames still arriving on its routing id belong to no session now */
}

void coord_peers_move(coord_server_t *cs, int from, int to)
{
    struct peer *p = &cs->peers[from], *o = &cs->peers[to];
    int fd = p->fd;
    tls_chan_destroy(&o->ch);
    s_untag(cs, to);
    s_stop_grace(cs, o);
    memcpy(o->rid, p->rid, p->rid_len);
    o->rid_len = p->rid_len;
    p->rid_len = 0;
    s_index_rid(cs, to);
    o->ch = p->ch;
    p->ch = NULL;
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
    o->fd = fd;
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
    if (p->ch) {
        tls_chan_close(p->ch);
        coord_peers_flush(cs, p);
    }
    struct crelay *r = p->via && !p->vclosed ? coord_via_relay(cs, p) : NULL;
    if (r) /* its relay ends the session, after what was queued for it */
        coord_via_queue(cs, r, p->handle, PLAUNCH__RELAY_ITEM__EVENT__DROP, NULL, 0, 0);
    int fd = p->fd;
    if (cs->tr.guard && fd >= 0 && conn_guard_tag(cs->tr.guard, fd) == peer)
        conn_guard_refuse(cs->tr.guard, fd); /* closed once the last message (a REFUSE, an alert) has left */
    coord_peers_release(cs, peer);
}
