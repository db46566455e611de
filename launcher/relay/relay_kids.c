/* relay_kids: a relay's children: their sessions (by routing id, and by the handle the coordinator knows them
 * by), their TLS, HELLO, and their frames: a ClientHello opens a session within the caps, messages go up. */
#include "relay_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_router.h"
#include "log.h"

static const struct peerlog_kind PL_NOT_TLS = { "refused", "connection", "connections",
                                                "their first frame is not a TLS ClientHello" };
static const struct peerlog_kind PL_HANDSHAKE = { "refused", "TLS handshake", "TLS handshakes", "failed" };
static const struct peerlog_kind PL_FULL = { "refused", "session", "sessions", "the relay is full" };

/* ---- the children's table ------------------------------------------------------------------------------------- */

struct s_key {
    const relay_t *r;
    const unsigned char *rid;
    size_t len;
    uint32_t handle;
};

static int s_rid_match(void *arg, int i, uint32_t hash)
{
    const struct s_key *k = arg;
    const struct rchild *c = &k->r->kids[i];
    return i < k->r->nkids && c->used && c->rid_len == k->len && memcmp(c->rid, k->rid, k->len) == 0;
}

static int s_handle_match(void *arg, int i, uint32_t hash)
{
    const struct s_key *k = arg;
    return i < k->r->nkids && k->r->kids[i].used && k->r->kids[i].handle == k->handle;
}

static int s_rid_live(void *arg, int i, uint32_t hash)
{
    const relay_t *r = arg;
    const struct rchild *c = &r->kids[i];
    return i < r->nkids && c->used && hindex_hash(c->rid, c->rid_len, HINDEX_SEED) == hash;
}

static int s_handle_live(void *arg, int i, uint32_t hash)
{
    const relay_t *r = arg;
    return i < r->nkids && r->kids[i].used && hindex_hash(&r->kids[i].handle, 4, HINDEX_SEED) == hash;
}

static int s_find_rid(const relay_t *r, const unsigned char *rid, size_t len)
{
    struct s_key k = { r, rid, len, 0 };
    if (!r->index_broken)
        return hindex_find(&r->by_rid, hindex_hash(rid, len, HINDEX_SEED), s_rid_match, &k);
    for (int i = 0; i < r->nkids; i++)
        if (s_rid_match(&k, i, 0))
            return i;
    return -1;
}

int relay_kids_find_handle(const relay_t *r, uint32_t handle)
{
    struct s_key k = { r, NULL, 0, handle };
    if (!r->index_broken)
        return hindex_find(&r->by_handle, hindex_hash(&handle, 4, HINDEX_SEED), s_handle_match, &k);
    for (int i = 0; i < r->nkids; i++)
        if (s_handle_match(&k, i, 0))
            return i;
    return -1;
}

static int s_new_child(relay_t *r, const unsigned char *rid, size_t len, int fd)
{
    int i = 0;
    while (i < r->nkids && r->kids[i].used)
        i++;
    if (i == r->nkids) {
        if (r->nkids == r->cap) {
            int cap = r->cap ? r->cap * 2 : 64;
            struct rchild *k = realloc(r->kids, (size_t)cap * sizeof *k);
            if (!k)
                return -1;
            r->kids = k;
            r->cap = cap;
        }
        r->nkids++;
    }
    struct rchild *c = &r->kids[i];
    *c = (struct rchild){ .used = 1, .rid_len = len, .fd = fd, .handle = ++r->next_handle, .last_ns = loop_now_ns() };
    if (!r->next_handle)
        c->handle = r->next_handle = 1; /* never 0 */
    memcpy(c->rid, rid, len);
    if (!(c->ch = tls_chan_new(r->tls))) {
        c->used = 0;
        return -1;
    }
    if (hindex_put(&r->by_rid, hindex_hash(rid, len, HINDEX_SEED), i, s_rid_live, r) < 0 ||
        hindex_put(&r->by_handle, hindex_hash(&c->handle, 4, HINDEX_SEED), i, s_handle_live, r) < 0)
        r->index_broken = 1;
    r->live++;
    return i;
}

void relay_kids_flush(relay_t *r, struct rchild *c)
{
    conn_router_flush(r->router, c->rid, c->rid_len, c->ch, r->frame);
}

void relay_kids_end(relay_t *r, int i, const char *why, int say_bye)
{
    struct rchild *c = &r->kids[i];
    if (!c->used)
        return;
    if (say_bye && c->ch && tls_chan_close(c->ch) == 0)
        relay_kids_flush(r, c);
    if (why && c->opened)
        relay_up_queue(&r->up, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, c->handle, NULL, 0, NULL, NULL, why);
    if (c->fd >= 0 && conn_guard_tag(r->guard, c->fd) == i) {
        conn_guard_set_tag(r->guard, c->fd, -1);
        conn_guard_refuse(r->guard, c->fd); /* closed once what was sent has left */
    }
    tls_chan_destroy(&c->ch);
    c->used = 0;
    r->live--;
}

int relay_kids_send(relay_t *r, struct rchild *c, const void *buf, size_t len)
{
    if (!c->ch || tls_chan_send(c->ch, buf, len) < 0)
        return -1;
    relay_kids_flush(r, c);
    return 0;
}

/* ---- frames from children ------------------------------------------------------------------------------------- */

static void s_hello(relay_t *r, int i)
{
    struct rchild *c = &r->kids[i];
    Plaunch__Hello h = PLAUNCH__HELLO__INIT;
    wire_msg_t m;
    unsigned char buf[512];
    char err[128];
    h.hostname = r->hello_host;
    h.plaunch_version = PLAUNCH_VERSION;
    wire_init(&m, r->job_id, r->generation, WIRE_HELLO, &h);
    ssize_t n = wire_encode(&m, buf, sizeof buf, err, sizeof err);
    if (n > 0)
        relay_kids_send(r, c, buf, (size_t)n);
    c->opened = 1;
    relay_up_queue(&r->up, PLAUNCH__RELAY_ITEM__EVENT__OPENED, c->handle, NULL, 0, conn_guard_addr(r->guard, c->fd),
                   tls_chan_peer_name(c->ch), NULL);
}

static void s_on_child_frame(relay_t *r, int i, const void *data, size_t len)
{
    struct rchild *c = &r->kids[i];
    char err[512], why[700];
    const char *addr = conn_guard_addr(r->guard, c->fd);
    int failed = tls_chan_feed(c->ch, data, len) < 0;
    relay_kids_flush(r, c); /* the handshake's answer, or an alert */
    if (failed) {
        if (!c->opened)
            peerlog_warn(r->plog, &PL_HANDSHAKE, addr, "relay: refused %s: %s", addr, tls_chan_error(c->ch));
        snprintf(why, sizeof why, "its TLS session failed: %s", tls_chan_error(c->ch));
        relay_kids_end(r, i, why, 0);
        return;
    }
    if (!c->opened && tls_chan_is_established(c->ch)) {
        conn_guard_trust(r->guard, c->fd);
        s_hello(r, i);
    }
    void *msg;
    size_t mlen;
    while (r->kids[i].used && r->kids[i].ch && tls_chan_recv(r->kids[i].ch, &msg, &mlen) == 1) {
        wire_msg_t *m = wire_decode(msg, mlen, WIRE_TO_RELAY, err, sizeof err);
        c->last_ns = loop_now_ns();
        if (!m) {
            log_warn("relay: refused a message from %s: %s", addr, err);
            snprintf(why, sizeof why, "bad message: %s", err);
            relay_kids_end(r, i, why, 1);
        } else if (m->body_case != WIRE_HEARTBEAT) { /* heartbeats end here */
            relay_up_queue(&r->up, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, c->handle, msg, mlen, NULL, NULL, NULL);
        }
        wire_free(&m);
        free(msg);
    }
    if (r->kids[i].used && tls_chan_state(r->kids[i].ch) == TLS_CHAN_CLOSED)
        relay_kids_end(r, i, "it closed its TLS session", 0);
}

/* A frame whose routing id has no session: a ClientHello opens one (within the caps), anything else is refused. */
static void s_on_new_frame(relay_t *r, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len)
{
    const char *addr;
    enum conn_state st = conn_guard_lookup(r->guard, fd, 1, &addr);
    if (st == CONN_REFUSED || st == CONN_CLOSING) {
        if (st == CONN_REFUSED)
            conn_guard_close(r->guard, fd, CONN_REFUSAL);
        return;
    }
    if (!tls_chan_is_client_hello(data, len)) {
        peerlog_warn(r->plog, &PL_NOT_TLS, addr, "relay: refused %s: its first frame is not a TLS ClientHello", addr);
        conn_router_refuse(r->router, rid, rid_len, r->job_id, r->generation, "relay"); /* it can stop and say why */
        conn_guard_refuse(r->guard, fd);
        return;
    }
    if (r->live >= r->max_children + r->max_children / 4 + 8) {
        peerlog_warn(r->plog, &PL_FULL, addr, "relay: refused %s: %d sessions already", addr, r->live);
        conn_guard_close(r->guard, fd, CONN_TOTAL);
        return;
    }
    int moved = conn_guard_pending(r->guard, fd);
    if (moved == 2) {
        conn_guard_close(r->guard, fd, CONN_HANDSHAKES);
        return;
    }
    if (moved < 0)
        return;
    int i = s_new_child(r, rid, rid_len, fd);
    if (i < 0) {
        conn_guard_close(r->guard, fd, CONN_REFUSAL);
        return;
    }
    conn_guard_set_tag(r->guard, fd, i);
    s_on_child_frame(r, i, data, len);
}


void relay_kids_frame(relay_t *r, int fd, const unsigned char *rid, size_t rid_len, const void *data, size_t len)
{
    int i = s_find_rid(r, rid, rid_len);
    if (i >= 0 && tls_chan_is_client_hello(data, len)) { /* the same socket starts over, on the same connection */
        if (r->kids[i].fd >= 0 && conn_guard_tag(r->guard, r->kids[i].fd) == i)
            conn_guard_set_tag(r->guard, r->kids[i].fd, -1);
        r->kids[i].fd = -1; /* the connection stays: the new session is on it */
        relay_kids_end(r, i, "it started a new TLS session", 0);
        i = -1;
    }
    if (i >= 0)
        s_on_child_frame(r, i, data, len);
    else
        s_on_new_frame(r, fd, rid, rid_len, data, len);
}

void relay_kids_free(relay_t *r)
{
    for (int i = 0; i < r->nkids; i++)
        if (r->kids[i].used && r->kids[i].ch) {
            tls_chan_close(r->kids[i].ch);
            relay_kids_flush(r, &r->kids[i]);
            tls_chan_destroy(&r->kids[i].ch);
        }
    hindex_free(&r->by_rid);
    hindex_free(&r->by_handle);
    free(r->kids);
}
