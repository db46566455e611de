/* coord_via: the nodes behind a relay: found by (relay, handle) through an index the caller validates, and what goes
 * down to each relay (messages, the same bytes for several of its nodes in a row sent once, and DROPs), encoded as
 * one RELAYED and sent to the relay's own session at the end of the loop's turn, or at once when the queue is full. */
#include "launcher/coord/coord_priv.h"

#include <stdlib.h>
#include <string.h>


/* A RELAYED stays well inside WIRE_MAX_MSG: a queue this full is flushed before it takes more. */
#define VIA_MAX_BYTES (WIRE_MAX_MSG - 8192)
#define VIA_ITEM_BYTES 24 /* what an item costs beyond its payload and handles, generously */
#define VIA_HANDLE_BYTES 6

static uint32_t s_hash(int relay, uint32_t handle)
{
    uint32_t key[2] = { (uint32_t)relay, handle };
    return hindex_hash(key, sizeof key, HINDEX_SEED);
}

struct s_key {
    const coord_server_t *cs;
    int relay;
    uint32_t handle;
};

static int s_match(void *arg, int peer, uint32_t hash)
{
    const struct s_key *k = arg;
    const struct peer *p = peer >= 1 && peer < k->cs->npeers ? &k->cs->peers[peer] : NULL;
    return p && p->used && p->via == k->relay && p->handle == k->handle;
}

static int s_live(void *arg, int peer, uint32_t hash)
{
    const coord_server_t *cs = arg;
    const struct peer *p = peer >= 1 && peer < cs->npeers ? &cs->peers[peer] : NULL;
    return p && p->used && p->via && s_hash(p->via, p->handle) == hash;
}

int coord_via_find(coord_server_t *cs, int relay, uint32_t handle)
{
    struct s_key k = { cs, relay, handle };
    if (!cs->tree.via_broken)
        return hindex_find(&cs->tree.vias, s_hash(relay, handle), s_match, &k);
    for (int i = 1; i < cs->npeers; i++)
        if (s_match(&k, i, 0))
            return i;
    return -1;
}

void coord_via_index(coord_server_t *cs, int peer)
{
    const struct peer *p = &cs->peers[peer];
    if (hindex_put(&cs->tree.vias, s_hash(p->via, p->handle), peer, s_live, cs) < 0)
        cs->tree.via_broken = 1;
}

struct crelay *coord_via_relay(coord_server_t *cs, const struct peer *p)
{
    if (p->via < 1 || p->via >= cs->npeers)
        return NULL;
    const struct peer *r = &cs->peers[p->via];
    if (!r->used || r->relay < 1 || r->relay > cs->tree.nrelays)
        return NULL;
    struct crelay *c = &cs->tree.relays[r->relay - 1];
    return c->peer == p->via ? c : NULL;
}

static void s_item_free(struct via_item *it)
{
    free(it->to);
    free(it->payload);
}

/* A new item at the end of r's queue; NULL out of memory. */
static struct via_item *s_item_new(struct crelay *r, int event, const void *payload, size_t len, int watch)
{
    if (r->nout == r->capout) {
        int cap = r->capout ? r->capout * 2 : 16;
        struct via_item *o = realloc(r->out, (size_t)cap * sizeof *o);
        if (!o)
            return NULL;
        r->out = o;
        r->capout = cap;
    }
    struct via_item *it = &r->out[r->nout];
    *it = (struct via_item){ .event = event, .watch = watch, .len = len };
    if (len && !(it->payload = malloc(len)))
        return NULL;
    if (len)
        memcpy(it->payload, payload, len);
    r->nout++;
    r->bytes += len + VIA_ITEM_BYTES;
    return it;
}

static int s_flush_tick(loop_t *loop, int id, void *arg);

/* Something was queued: it leaves at the end of this turn of the loop, so that a broadcast to every node goes to
 * each relay once. */
static void s_soon(coord_server_t *cs)
{
    if (cs->tree.flush_timer <= 0)
        cs->tree.flush_timer = loop_timer_after_ms(cs->loop, 0, s_flush_tick, cs);
}

int coord_via_queue(coord_server_t *cs, struct crelay *r, uint32_t handle, int event, const void *payload,
                    size_t len, int watch)
{
    struct via_item *it = r->nout ? &r->out[r->nout - 1] : NULL;
    int same = it && it->event == event && it->watch == watch && it->len == len && it->nto < WIRE_MAX_RELAY_TO &&
               (!len || memcmp(it->payload, payload, len) == 0);
    size_t need = same ? VIA_HANDLE_BYTES : len + VIA_ITEM_BYTES + VIA_HANDLE_BYTES;
    if (r->nout >= WIRE_MAX_RELAY_ITEMS || r->bytes + need > VIA_MAX_BYTES) {
        coord_via_flush(cs, r); /* flushed now: the queue is empty again */
        same = 0;
    }
    if (!same && !(it = s_item_new(r, event, payload, len, watch)))
        return -1;
    if (it->nto == it->capto) {
        size_t cap = it->capto ? it->capto * 2 : 4;
        uint32_t *to = realloc(it->to, cap * sizeof *to);
        if (!to)
            return -1;
        it->to = to;
        it->capto = cap;
    }
    it->to[it->nto++] = handle;
    r->bytes += VIA_HANDLE_BYTES;
    if (event == PLAUNCH__RELAY_ITEM__EVENT__DROP && r->load > 0)
        r->load--;
    s_soon(cs);
    return 0;
}

/* The RELAYED for relay r encoded (caller frees), its queue emptied; NULL when nothing waits (or out of memory:
 * *failed set). */
static void *s_take(coord_server_t *cs, struct crelay *r, size_t *len, int *failed)
{
    char err[256];
    void *buf = NULL;
    *failed = 0;
    if (!r->nout)
        return NULL;
    Plaunch__RelayItem *items = calloc((size_t)r->nout, sizeof *items);
    Plaunch__RelayItem **ptrs = calloc((size_t)r->nout, sizeof *ptrs);
    if (items && ptrs) {
        Plaunch__Relayed rel = PLAUNCH__RELAYED__INIT;
        wire_msg_t m;
        for (int i = 0; i < r->nout; i++) {
            const struct via_item *it = &r->out[i];
            plaunch__relay_item__init(&items[i]);
            items[i].event = (Plaunch__RelayItem__Event)it->event;
            items[i].n_to = it->nto;
            items[i].to = it->to;
            items[i].payload.data = it->payload;
            items[i].payload.len = it->len;
            items[i].watch = it->watch;
            ptrs[i] = &items[i];
        }
        rel.n_items = (size_t)r->nout;
        rel.items = ptrs;
        wire_init(&m, cs->job_id, cs->generation, WIRE_RELAYED, &rel);
        buf = wire_encode_alloc(&m, len, err, sizeof err);
    }
    *failed = !buf;
    free(items);
    free(ptrs);
    coord_via_clear(r);
    return buf;
}

void coord_via_send(coord_server_t *cs, int peer, const void *buf, size_t len)
{
    struct peer *p = peer >= 1 ? &cs->peers[peer] : NULL;
    if (buf && p && p->used)
        conn_session_send(cs->tr.sess, &p->sess, buf, len);
}

void coord_via_flush(coord_server_t *cs, struct crelay *r)
{
    int failed = 0;
    size_t len = 0;
    void *buf = s_take(cs, r, &len, &failed);
    if (failed) {
        cs->tr.ev.fatal(cs, "the coordinator cannot encode what a relay must carry (out of memory?)");
        return;
    }
    coord_via_send(cs, r->peer, buf, len);
    free(buf);
}

static int s_flush_tick(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    cs->tree.flush_timer = 0;
    for (int i = 0; i < cs->tree.nrelays; i++)
        if (cs->tree.relays[i].nout)
            coord_via_flush(cs, &cs->tree.relays[i]);
    return 0;
}

void coord_via_clear(struct crelay *r)
{
    for (int i = 0; i < r->nout; i++)
        s_item_free(&r->out[i]);
    r->nout = 0;
    r->bytes = 0;
}

void coord_via_forget(coord_server_t *cs, struct peer *p)
{
    struct crelay *r = coord_via_relay(cs, p);
    if (r && r->nodes > 0)
        r->nodes--;
    p->via = 0;
    p->vclosed = 0;
}

void coord_via_free(coord_server_t *cs)
{
    if (cs->tree.flush_timer > 0)
        loop_timer_cancel(cs->loop, cs->tree.flush_timer);
    for (int i = 0; i < cs->tree.nrelays; i++) {
        coord_via_clear(&cs->tree.relays[i]);
        free(cs->tree.relays[i].out);
    }
    free(cs->tree.relays);
    hindex_free(&cs->tree.vias);
}
