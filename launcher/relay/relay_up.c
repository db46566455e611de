/* relay_up: what a relay says to the coordinator, batched: its children's messages and news, queued in order and
 * handed to the host as one RELAYED per turn of the loop (or sooner when a batch is full). */
#include "launcher/relay/relay_up.h"

#include <stdlib.h>
#include <string.h>

/* A RELAYED stays well inside WIRE_MAX_MSG: a batch this full is sent before it takes more. */
#define UP_MAX_BYTES (512u << 10)
#define UP_ITEM_BYTES 64 /* an item's own fields, generously */

static char *s_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void s_clear(struct relay_up *u)
{
    for (int i = 0; i < u->n; i++) {
        struct relay_up_item *it = &u->items[i];
        free(it->payload);
        free(it->addr);
        free(it->name);
        free(it->text);
    }
    u->n = 0;
    u->bytes = 0;
}

int relay_up_queue(struct relay_up *u, int event, uint32_t from, const void *payload, size_t len, const char *addr,
                   const char *name, const char *text)
{
    if (u->n >= WIRE_MAX_RELAY_ITEMS || (u->n && u->bytes + len + UP_ITEM_BYTES > UP_MAX_BYTES))
        relay_up_flush(u);
    if (u->n == u->cap) {
        int cap = u->cap ? u->cap * 2 : 32;
        struct relay_up_item *items = realloc(u->items, (size_t)cap * sizeof *items);
        if (!items)
            return -1;
        u->items = items;
        u->cap = cap;
    }
    struct relay_up_item *it = &u->items[u->n];
    *it = (struct relay_up_item){ .event = event, .from = from, .len = len };
    if ((len && !(it->payload = malloc(len))) || (addr && !(it->addr = s_dup(addr))) ||
        (name && !(it->name = s_dup(name))) || (text && !(it->text = s_dup(text)))) {
        free(it->payload);
        free(it->addr);
        free(it->name);
        return -1;
    }
    if (len)
        memcpy(it->payload, payload, len);
    u->n++;
    u->bytes += len + UP_ITEM_BYTES + (text ? strlen(text) : 0);
    return 0;
}

void relay_up_flush(struct relay_up *u)
{
    if (!u->n)
        return;
    Plaunch__RelayItem *items = calloc((size_t)u->n, sizeof *items);
    Plaunch__RelayItem **ptrs = calloc((size_t)u->n, sizeof *ptrs);
    if (items && ptrs) {
        Plaunch__Relayed rel = PLAUNCH__RELAYED__INIT;
        for (int i = 0; i < u->n; i++) {
            const struct relay_up_item *it = &u->items[i];
            plaunch__relay_item__init(&items[i]);
            items[i].event = (Plaunch__RelayItem__Event)it->event;
            items[i].from = it->from;
            items[i].payload.data = it->payload;
            items[i].payload.len = it->len;
            if (it->addr)
                items[i].peer_addr = it->addr;
            if (it->name)
                items[i].peer_name = it->name;
            if (it->text)
                items[i].text = it->text;
            ptrs[i] = &items[i];
        }
        rel.n_items = (size_t)u->n;
        rel.items = ptrs;
        if (u->fn(u->arg, &rel) < 0)
            u->lost += u->n, u->failed = 1;
    } else {
        u->lost += u->n;
        u->failed = 1;
    }
    free(items);
    free(ptrs);
    s_clear(u);
}

void relay_up_free(struct relay_up *u)
{
    s_clear(u);
    free(u->items);
    u->items = NULL;
    u->cap = 0;
}
