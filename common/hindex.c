/* hindex: open addressing with linear probing over keyed hashes; a slot holds a hash and a value, the caller decides
 * what is stale. */
#include "common/hindex.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define HI_MIN 64

struct hindex_slot {
    uint32_t hash;
    int value; /* -1: empty */
};

/* The process's SipHash key: random, so that a peer choosing its own routing id cannot aim entries at one slot. */
static uint64_t s_key[2];
static pthread_once_t s_key_once = PTHREAD_ONCE_INIT;

static void s_key_init(void)
{
    if (getrandom(s_key, sizeof s_key, 0) != (ssize_t)sizeof s_key) { /* no entropy: weaker, never wrong */
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        s_key[0] = (uint64_t)t.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
        s_key[1] = (uint64_t)t.tv_sec ^ (uint64_t)(uintptr_t)&t;
    }
}

#define S_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define S_ROUND(v0, v1, v2, v3) do { \
        v0 += v1; v1 = S_ROTL(v1, 13); v1 ^= v0; v0 = S_ROTL(v0, 32); \
        v2 += v3; v3 = S_ROTL(v3, 16); v3 ^= v2; \
        v0 += v3; v3 = S_ROTL(v3, 21); v3 ^= v0; \
        v2 += v1; v1 = S_ROTL(v1, 17); v1 ^= v2; v2 = S_ROTL(v2, 32); \
    } while (0)

uint64_t hindex_siphash(const uint64_t key[2], const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t v0 = key[0] ^ 0x736f6d6570736575ull, v1 = key[1] ^ 0x646f72616e646f6dull;
    uint64_t v2 = key[0] ^ 0x6c7967656e657261ull, v3 = key[1] ^ 0x7465646279746573ull;
    size_t whole = len & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = 0;
        for (int b = 7; b >= 0; b--)
            m = m << 8 | p[i + (size_t)b];
        v3 ^= m;
        S_ROUND(v0, v1, v2, v3);
        S_ROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t last = (uint64_t)len << 56;
    for (size_t b = 0; b < (len & 7); b++)
        last |= (uint64_t)p[whole + b] << (8 * b);
    v3 ^= last;
    S_ROUND(v0, v1, v2, v3);
    S_ROUND(v0, v1, v2, v3);
    v0 ^= last;
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        S_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

uint32_t hindex_hash(const void *data, size_t len, uint32_t seed)
{
    pthread_once(&s_key_once, s_key_init);
    uint64_t key[2] = { s_key[0] ^ seed, s_key[1] };
    return (uint32_t)hindex_siphash(key, data, len);
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
