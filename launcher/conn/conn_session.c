/* conn_session: the server side of TLS sessions over a ROUTER that takes unauthenticated peers: the rules for a
 * frame without a session, a session's frames and its handshake, and the sessions by routing id. */
#include "launcher/conn/conn_session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/conn/conn_router.h"
#include "common/hindex.h"
#include "common/wire/wire.h"

/* Warnings about peers that never authenticated: counted and summed up (peerlog), never one line per frame. */
static const struct peerlog_kind PL_NOT_TLS = { "refused", "connection", "connections",
                                                "their first frame is not a TLS ClientHello" };
static const struct peerlog_kind PL_FRAMES = { "refused", "frame", "frames", "sent on refused connections" };
static const struct peerlog_kind PL_HANDSHAKE = { "refused", "TLS handshake", "TLS handshakes", "failed" };
static const struct peerlog_kind PL_STALE = { "ignored", "TLS record", "TLS records", "for sessions that are over" };
static const struct peerlog_kind PL_MEMORY = { "refused", "session", "sessions", "out of memory" };

struct conn_session {
    void *router;
    conn_guard_t *guard;
    peerlog_t *plog;
    tls_ctx_t *tls;
    struct conn_session_ops ops;
    void *arg;
    char job_id[WIRE_MAX_JOB_ID + 1];
    const char *who, *prefix;
    unsigned char *frame; /* scratch for one TLS record's frame */
    hindex_t rids;        /* sessions by routing id; an entry whose slot holds another routing id (or none) is stale */
    int rid_broken;       /* out of memory once: lookups scan */
};

conn_session_t *conn_session_new(const struct conn_session_cfg *cfg, const struct conn_session_ops *ops, void *arg,
                                 char *err, size_t errlen)
{
    conn_session_t *s = calloc(1, sizeof *s);
    if (!s || !(s->frame = malloc(TLS_CHAN_FRAME_MAX))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->router = cfg->router;
    s->guard = cfg->guard;
    s->plog = cfg->plog;
    s->tls = cfg->tls;
    s->ops = *ops;
    s->arg = arg;
    snprintf(s->job_id, sizeof s->job_id, "%s", cfg->job_id ? cfg->job_id : "");
    s->who = cfg->who ? cfg->who : "server";
    s->prefix = cfg->prefix ? cfg->prefix : "";
    return s;
}

void conn_session_destroy(conn_session_t **ps)
{
    conn_session_t *s = ps ? *ps : NULL;
    if (!s)
        return;
    *ps = NULL;
    hindex_free(&s->rids);
    free(s->frame);
    free(s);
}

/* ---- the sessions by routing id ------------------------------------------------------------------------------- */

struct s_key {
    const conn_session_t *s;
    const unsigned char *rid;
    size_t len;
};

static int s_is(const struct conn_session_slot *e, const unsigned char *rid, size_t len)
{
    return e && e->rid_len == len && len > 0 && memcmp(e->rid, rid, len) == 0;
}

static int s_rid_match(void *arg, int slot, uint32_t hash)
{
    const struct s_key *k = arg;
    return s_is(k->s->ops.slot(k->s->arg, slot), k->rid, k->len);
}

static int s_rid_live(void *arg, int slot, uint32_t hash)
{
    const conn_session_t *s = arg;
    const struct conn_session_slot *e = s->ops.slot(s->arg, slot);
    return e && e->rid_len && hindex_hash(e->rid, e->rid_len, HINDEX_SEED) == hash;
}

void conn_session_index(conn_session_t *s, int slot)
{
    const struct conn_session_slot *e = s ? s->ops.slot(s->arg, slot) : NULL;
    if (e && e->rid_len &&
        hindex_put(&s->rids, hindex_hash(e->rid, e->rid_len, HINDEX_SEED), slot, s_rid_live, s) < 0)
        s->rid_broken = 1;
}

int conn_session_find(const conn_session_t *s, int fd, const unsigned char *rid, size_t len)
{
    if (!s || !len)
        return -1;
    int i = conn_guard_tag(s->guard, fd);
    if (i >= 0 && s_is(s->ops.slot(s->arg, i), rid, len))
        return i; /* the session of the connection the frame came on: nearly always */
    /* a new connection, or a frame of one that is over, whose number another one took; a scan of every session
     * per new connection made a rendezvous of 16,384 nodes quadratic */
    struct s_key k = { s, rid, len };
    if (!s->rid_broken)
        return hindex_find(&s->rids, hindex_hash(rid, len, HINDEX_SEED), s_rid_match, &k);
    for (i = 0; i < s->ops.nslots(s->arg); i++)
        if (s_rid_match(&k, i, 0))
            return i;
    return -1;
}

/* ---- a session's frames --------------------------------------------------------------------------------------- */

int conn_session_flush(conn_session_t *s, struct conn_session_slot *e)
{
    return conn_router_flush(s->router, e->rid, e->rid_len, e->ch, s->frame);
}

int conn_session_send(conn_session_t *s, struct conn_session_slot *e, const void *msg, size_t len)
{
    if (!e->ch || tls_chan_send(e->ch, msg, len) < 0)
        return -1;
    conn_session_flush(s, e); /* a connection that is gone: its end is news of its own */
    return 0;
}

/* A frame of slot's session. first: its ClientHello, from a connection that may be over by now (its descriptor
 * then names another connection): the session is tied to the connection only once its answer could be sent. */
static void s_on_session_frame(conn_session_t *s, int fd, int slot, int first, const void *data, size_t len)
{
    struct conn_session_slot *e = s->ops.slot(s->arg, slot);
    const char *addr = conn_guard_addr(s->guard, fd);
    int handshake = tls_chan_state(e->ch) == TLS_CHAN_HANDSHAKE;
    int failed = tls_chan_feed(e->ch, data, len) < 0;
    if (conn_session_flush(s, e) < 0 && errno == EHOSTUNREACH && first) { /* the alert tells the peer why */
        s->ops.release(s->arg, slot); /* no route back: the frame came from a connection that is over */
        peerlog_count(s->plog, &PL_FRAMES, addr, 1);
        return;
    }
    if (first)
        conn_guard_set_tag(s->guard, fd, slot);
    if (failed) {
        if (handshake)
            peerlog_warn(s->plog, &PL_HANDSHAKE, addr, "%srefused %s: %s", s->prefix, addr, tls_chan_error(e->ch));
        s->ops.failed(s->arg, slot, handshake, tls_chan_error(e->ch));
        return;
    }
    if (handshake && tls_chan_is_established(e->ch)) {
        conn_guard_trust(s->guard, fd);
        s->ops.ready(s->arg, slot);
    }
    void *msg;
    size_t mlen;
    /* a handler may end this session, or any other (the owner's table may move): the entry is looked up again */
    while ((e = s->ops.slot(s->arg, slot)) != NULL && e->ch && tls_chan_recv(e->ch, &msg, &mlen) == 1) {
        s->ops.message(s->arg, slot, msg, mlen);
        free(msg);
    }
    if (s->ops.closed && (e = s->ops.slot(s->arg, slot)) != NULL && e->ch && tls_chan_state(e->ch) == TLS_CHAN_CLOSED)
        s->ops.closed(s->arg, slot);
}

void conn_session_hello(conn_session_t *s, int fd, const unsigned char *rid, size_t rid_len, const void *data,
                        size_t len)
{
    if (s->ops.gate && s->ops.gate(s->arg, fd, rid, rid_len))
        return;
    int moved = conn_guard_pending(s->guard, fd), slot;
    if (moved == 2) { /* every handshake slot is taken by a live handshake */
        if (!s->ops.wait || s->ops.wait(s->arg, fd, rid, rid_len, data, len) < 0)
            conn_guard_close(s->guard, fd, CONN_HANDSHAKES);
        return;
    }
    if (moved < 0) /* no live connection */
        return;
    struct conn_session_slot *e = NULL;
    if ((slot = s->ops.open(s->arg, fd, rid, rid_len)) < 0 || !(e = s->ops.slot(s->arg, slot)) ||
        !(e->ch = tls_chan_new(s->tls))) {
        const char *addr = conn_guard_addr(s->guard, fd);
        peerlog_warn(s->plog, &PL_MEMORY, addr, "%sout of memory for a session with %s", s->prefix, addr);
        if (slot >= 0)
            s->ops.release(s->arg, slot);
        conn_guard_close(s->guard, fd, CONN_REFUSAL);
        return;
    }
    conn_session_index(s, slot);
    s_on_session_frame(s, fd, slot, 1, data, len);
    if (moved && !s->ops.slot(s->arg, slot) && conn_guard_tag(s->guard, fd) < 0)
        conn_guard_unpend(s->guard, fd); /* it was not this connection's handshake */
}

/* ---- frames without a session --------------------------------------------------------------------------------- */

static int s_is_tls_record(const unsigned char *b, size_t len)
{
    return len >= 5 && b[0] >= 0x14 && b[0] <= 0x17 && b[1] == 0x03; /* content type 20-23, version 3.x */
}

/* A frame whose routing id has no session: the first of a connection, or one that a connection sent before it
 * ended (its descriptor may be another connection's by now: the monitor's news is taken in first). */
static void s_on_new_frame(conn_session_t *s, int fd, const unsigned char *rid, size_t rid_len, const void *data,
                           size_t len)
{
    const char *addr;
    if (s->ops.drain)
        s->ops.drain(s->arg);
    enum conn_state st = conn_guard_lookup(s->guard, fd, 1, &addr);
    if (st == CONN_REFUSED || st == CONN_CLOSING) { /* a flood: counted, never answered */
        if (st == CONN_REFUSED)
            conn_guard_close(s->guard, fd, CONN_REFUSAL);
        peerlog_count(s->plog, &PL_FRAMES, addr, 1);
    } else if (!s->tls) { /* plaintext mode: the owner's rule */
        if (s->ops.plain)
            s->ops.plain(s->arg, fd, rid, rid_len, data, len);
    } else if (tls_chan_is_client_hello(data, len)) {
        conn_session_hello(s, fd, rid, rid_len, data, len);
    } else if (s_is_tls_record(data, len)) {
        peerlog_count(s->plog, &PL_STALE, addr, 1); /* a session that is over, or an old socket reconnected */
    } else if (conn_router_refuse(s->router, rid, rid_len, s->job_id, s->ops.generation(s->arg), s->who) == 0) {
        /* sent: the frame's connection is this live one; the client can stop and say why */
        peerlog_warn(s->plog, &PL_NOT_TLS, addr, "%srefused %s: its first frame is not a TLS ClientHello (a "
                     "plaintext ZeroMQ client? give it the job's --token or --tls-dir)", s->prefix, addr);
        conn_guard_refuse(s->guard, fd);
    } else {
        peerlog_count(s->plog, &PL_FRAMES, addr, 1);
    }
}

void conn_session_frame(conn_session_t *s, int fd, const unsigned char *rid, size_t rid_len, const void *data,
                        size_t len)
{
    int slot = conn_session_find(s, fd, rid, rid_len);
    struct conn_session_slot *e;
    if (slot < 0) {
        s_on_new_frame(s, fd, rid, rid_len, data, len);
        return;
    }
    if (conn_guard_tag(s->guard, fd) == slot)
        conn_guard_active(s->guard, fd);
    if (!s->tls) {
        if (len > 0)
            s->ops.message(s->arg, slot, data, len);
    } else if (tls_chan_is_client_hello(data, len)) { /* the same connection starts over */
        s->ops.restart(s->arg, slot);
        conn_session_hello(s, fd, rid, rid_len, data, len);
    } else if ((e = s->ops.slot(s->arg, slot)) != NULL && e->ch) {
        s_on_session_frame(s, fd, slot, 0, data, len);
    }
}
