/* hindex: open addressing with linear probing; a slot holds a hash and a value, the caller decides what is stale. */
#include "hindex.h"

#include <stdlib.h>

#define HI_MIN 64

struct hindex_slot {
    uint32_t hash;
    int value; /* -1: empty */
};

uint32_t hindex_hash(const void *data, size_t len, uint32_t seed)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        seed = (seed ^ p[i]) * 16777619u;
    return seed;
}

static void s_place(hindex_t *h, uint32_t hash, int value)
{
    unsigned mask = h->cap - 1, i = hash & mask;
    while (h->slots[i].value >= 0)
        i = (i + 1) & mask;
    h->slots[i] = (struct hindex_slot){ hash, value };
    h->used++;
}

/* A table four times the live entries, holding only them. */
static int s_rebuild(hindex_t *h, hindex_fn live, void *arg)
{
    unsigned n = 0, cap = HI_MIN;
    for (unsigned i = 0; i < h->cap; i++)
        n += h->slots[i].value >= 0 && live(arg, h->slots[i].value, h->slots[i].hash);
    while (cap < 4 * (n + 1))
        cap *= 2;
    struct hindex_slot *old = h->slots, *s = malloc(cap * sizeof *s);
    unsigned oldcap = h->cap;
    if (!s)
        return -1;
    for (unsigned i = 0; i < cap; i++)
        s[i].value = -1;
    h->slots = s;
    h->cap = cap;
    h->used = 0;
    for (unsigned i = 0; i < oldcap; i++)
        if (old[i].value >= 0 && live(arg, old[i].value, old[i].hash))
            s_place(h, old[i].hash, old[i].value);
    free(old);
    return 0;
}

int hindex_put(hindex_t *h, uint32_t hash, int value, hindex_fn live, void *arg)
{
    if ((h->used + 1 > h->cap / 2) && s_rebuild(h, live, arg) < 0)
        return -1;
    unsigned mask = h->cap - 1, i = hash & mask, reuse = h->cap;
    for (; h->slots[i].value >= 0; i = (i + 1) & mask) {
        if (h->slots[i].value == value && h->slots[i].hash == hash)
            return 0;
        if (reuse == h->cap && !live(arg, h->slots[i].value, h->slots[i].hash))
            reuse = i;
    }
    if (reuse < h->cap)
        h->slots[reuse] = (struct hindex_slot){ hash, value };
    else
        s_place(h, hash, value);
    return 0;
}

int hindex_find(const hindex_t *h, uint32_t hash, hindex_fn match, void *arg)
{
    if (!h->cap)
        return -1;
    unsigned mask = h->cap - 1;
    for (unsigned i = hash & mask; h->slots[i].value >= 0; i = (i + 1) & mask)
        if (h->slots[i].hash == hash && match(arg, h->slots[i].value, hash))
            return h->slots[i].value;
    return -1;
}

void hindex_free(hindex_t *h)
{
    free(h->slots);
    *h = (hindex_t)HINDEX_ZERO;
}
