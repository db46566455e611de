/* hindex: an index from a 32-bit hash to small integers (table slots, peer numbers) that the caller checks: lookups
 * offer each candidate of the hash to a match function, and an entry whose owner has gone is simply stale (the
 * caller's `live` says so): inserts reuse stale entries and a rebuild drops them, so nothing is ever deleted. */
#ifndef PLAUNCH_HINDEX_H
#define PLAUNCH_HINDEX_H

#include <stddef.h>
#include <stdint.h>

/* 1 when value is what the caller looks for (match) or still stands for its hash (live). */
typedef int (*hindex_fn)(void *arg, int value, uint32_t hash);

typedef struct hindex {
    struct hindex_slot *slots;
    unsigned cap, used;       /* used: slots ever filled since the last rebuild */
} hindex_t;

#define HINDEX_ZERO { NULL, 0, 0 }

/* SipHash-2-4 of len bytes under this process's random key with seed folded in (HINDEX_SEED to start, a previous
 * hash to chain): peers that choose their keys (ZeroMQ routing ids, host names) cannot make them collide. */
#define HINDEX_SEED 0u
uint32_t hindex_hash(const void *data, size_t len, uint32_t seed);
/* SipHash-2-4 of len bytes under key (its 64-bit result; for the tests' reference vectors). */
uint64_t hindex_siphash(const uint64_t key[2], const void *data, size_t len);
/* Indexes value under hash (value >= 0); an entry of the same value and hash is not added twice. 0, or -1 out of
 * memory (the index then misses value: callers fall back to a scan). */
int hindex_put(hindex_t *h, uint32_t hash, int value, hindex_fn live, void *arg);
/* The first value indexed under hash for which match says 1, or -1. */
int hindex_find(const hindex_t *h, uint32_t hash, hindex_fn match, void *arg);
void hindex_free(hindex_t *h);

#endif
