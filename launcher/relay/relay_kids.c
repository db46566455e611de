/* relay_kids: a relay's children: their table (by the handle the coordinator knows them by), and the relay's policy
 * for their sessions, which launcher/conn/conn_session.c serves: its cap on children, HELLO and OPENED once a
 * child authenticated, its messages up, CLOSED when its session ends. */
#include "launcher/relay/relay_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static const struct peerlog_kind PL_FULL = { "refused", "session", "sessions", "the relay is full" };

/* ---- the children's table ------------------------------------------------------------------------------------- */

struct s_key {
    const relay_t *r;
    uint32_t handle;
};

static int s_handle_match(void *arg, int i, uint32_t hash)
{
    const struct s_key *k = arg;
    return i < k->r->nkids && k->r->kids[i].used && k->r->kids[i].handle == k->handle;
}

static int s_handle_live(void *arg, int i, uint32_t hash)
{
    const relay_t *r = arg;
    return i < r->nkids && r->kids[i].used && hindex_hash(&r->kids[i].handle, 4, HINDEX_SEED) == hash;
}

int relay_kids_find_handle(const relay_t *r, uint32_t handle)
{
    struct s_key k = { r, handle };
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
    *c = (struct rchild){ .used = 1, .sess = { .rid_len = len, .fd = fd }, .handle = ++r->next_handle,
                          .last_ns = loop_now_ns() };
    if (!r->next_handle)
        c->handle = r->next_handle = 1; /* never 0 */
    memcpy(c->sess.rid, rid, len);
    if (hindex_put(&r->by_handle, hindex_hash(&c->handle, 4, HINDEX_SEED), i, s_handle_live, r) < 0)
        r->index_broken = 1;
    r->live++;
    return i;
}

void relay_kids_end(relay_t *r, int i, const char *why, int say_bye)
{
    struct rchild *c = &r->kids[i];
    if (!c->used)
        return;
    if (say_bye && c->sess.ch && tls_chan_close(c->sess.ch) == 0)
        conn_session_flush(r->sess, &c->sess);
    if (why && c->opened)
        relay_up_queue(&r->up, PLAUNCH__RELAY_ITEM__EVENT__CLOSED, c->handle, NULL, 0, NULL, NULL, why);
    if (c->sess.fd >= 0 && conn_guard_tag(r->guard, c->sess.fd) == i) {
        conn_guard_set_tag(r->guard, c->sess.fd, -1);
        conn_guard_refuse(r->guard, c->sess.fd); /* closed once what was sent has left */
    }
    tls_chan_destroy(&c->sess.ch);
    c->used = 0;
    r->live--;
}

int relay_kids_send(relay_t *r, struct rchild *c, const void *buf, size_t len)
{
    return conn_session_send(r->sess, &c->sess, buf, len);
}

/* A child authenticated: HELLO to it (the relay speaks first, as the coordinator does), OPENED up; or, while the
 * relay is held, both wait. */
void relay_kids_hello(relay_t *r, int i)
{
    struct rchild *c = &r->kids[i];
    c->waiting = r->held;
    if (r->held)
        return;
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
    relay_up_queue(&r->up, PLAUNCH__RELAY_ITEM__EVENT__OPENED, c->handle, NULL, 0,
                   conn_guard_addr(r->guard, c->sess.fd), tls_chan_peer_name(c->sess.ch), NULL);
}

/* ---- the relay's policy for its children's sessions (struct conn_session_ops) ---------------------------------- */

static struct conn_session_slot *s_sess_slot(void *arg, int i)
{
    relay_t *r = arg;
    return i >= 0 && i < r->nkids && r->kids[i].used ? &r->kids[i].sess : NULL;
}

static int s_sess_nslots(void *arg)
{
    return ((relay_t *)arg)->nkids;
}

/* A child's session opens within the relay's own cap (a few more than the coordinator sends it, for nodes that
 * reconnect); a ClientHello beyond it is refused and its connection closed. */
static int s_sess_gate(void *arg, int fd, const unsigned char *rid, size_t rid_len)
{
    relay_t *r = arg;
    if (r->live < r->max_children + r->max_children / 4 + 8)
        return 0;
    const char *addr = conn_guard_addr(r->guard, fd);
    peerlog_warn(r->plog, &PL_FULL, addr, "relay: refused %s: %d sessions already", addr, r->live);
    conn_guard_close(r->guard, fd, CONN_TOTAL);
    return 1;
}

static int s_sess_open(void *arg, int fd, const unsigned char *rid, size_t rid_len)
{
    return s_new_child(arg, rid, rid_len, fd);
}

static void s_sess_release(void *arg, int i)
{
    relay_kids_end(arg, i, NULL, 0);
}

static void s_sess_restart(void *arg, int i)
{
    relay_t *r = arg;
    struct rchild *c = &r->kids[i];
    if (c->sess.fd >= 0 && conn_guard_tag(r->guard, c->sess.fd) == i)
        conn_guard_set_tag(r->guard, c->sess.fd, -1);
    c->sess.fd = -1; /* the connection stays: the new session is on it */
    relay_kids_end(r, i, "it started a new TLS session", 0);
}

static void s_sess_ready(void *arg, int i)
{
    relay_kids_hello(arg, i);
}

static void s_sess_message(void *arg, int i, const void *msg, size_t len)
{
    relay_t *r = arg;
    struct rchild *c = &r->kids[i];
    char err[512], why[700];
    wire_msg_t *m = wire_decode(msg, len, WIRE_TO_RELAY, err, sizeof err);
    c->last_ns = loop_now_ns();
    if (!m) {
        log_warn("relay: refused a message from %s: %s", conn_guard_addr(r->guard, c->sess.fd), err);
        snprintf(why, sizeof why, "bad message: %s", err);
        relay_kids_end(r, i, why, 1);
    } else if (m->body_case != WIRE_HEARTBEAT) { /* heartbeats end here */
        relay_up_queue(&r->up, PLAUNCH__RELAY_ITEM__EVENT__MESSAGE, c->handle, msg, len, NULL, NULL, NULL);
    }
    wire_free(&m);
}

static void s_sess_failed(void *arg, int i, int handshake, const char *err)
{
    char why[700];
    snprintf(why, sizeof why, "its TLS session failed: %s", err);
    relay_kids_end(arg, i, why, 0);
}

static void s_sess_closed(void *arg, int i)
{
    relay_kids_end(arg, i, "it closed its TLS session", 0);
}

static uint32_t s_sess_generation(void *arg)
{
    return ((relay_t *)arg)->generation;
}

conn_session_t *relay_kids_server(relay_t *r, void (*drain)(void *arg), char *err, size_t errlen)
{
    const struct conn_session_ops ops = {
        .slot = s_sess_slot,
        .nslots = s_sess_nslots,
        .open = s_sess_open,
        .release = s_sess_release,
        .restart = s_sess_restart,
        .ready = s_sess_ready,
        .message = s_sess_message,
        .failed = s_sess_failed,
        .closed = s_sess_closed,
        .gate = s_sess_gate,
        .drain = drain,
        .generation = s_sess_generation,
    };
    const struct conn_session_cfg cfg = { .router = r->router, .guard = r->guard, .plog = r->plog, .tls = r->tls,
                                          .job_id = r->job_id, .who = "relay", .prefix = "relay: " };
    return conn_session_new(&cfg, &ops, r, err, errlen);
}

void relay_kids_free(relay_t *r)
{
    for (int i = 0; i < r->nkids; i++)
        if (r->kids[i].used && r->kids[i].sess.ch) {
            tls_chan_close(r->kids[i].sess.ch);
            if (r->sess)
                conn_session_flush(r->sess, &r->kids[i].sess);
            tls_chan_destroy(&r->kids[i].sess.ch);
        }
    hindex_free(&r->by_handle);
    free(r->kids);
    conn_session_destroy(&r->sess);
}
