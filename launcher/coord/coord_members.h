/* coord_members: membership counted and indexed: by generation, identity, requested rank (coord_members.c;
 * below coord_peers.c, calls nothing above it). Private to launcher/coord/. */
#ifndef PLAUNCH_COORD_MEMBERS_H
#define PLAUNCH_COORD_MEMBERS_H

#include <stdint.h>

#include "coord_server.h"
#include "hindex.h"

#define CM_GENS 4                   /* generations with members at once: the current, the next, stragglers */
struct cm_joined {
    uint32_t gen;
    int n;
};
struct coord_members {
    int live;                       /* peers in PS_MEMBER */
    struct cm_joined joined[CM_GENS]; /* members by the generation they joined for */
    int overflow;                   /* more generations than slots: counts are taken by a scan */
    hindex_t ids;                   /* members by (host, pid) */
    int *rank_owner;                /* requested node rank -> peer + 1 (checked on lookup) */
    int nrank;
    int id_broken;                  /* out of memory once: lookups scan */
};

/* Peer becomes (or stays) a member, for generation gen; its host, pid, addr and req_rank are set already. */
void coord_members_set(coord_server_t *cs, int peer, int gen);
/* Peer stops being a member (before its slot is freed). */
void coord_members_unset(coord_server_t *cs, int peer);
/* Members that joined for gen; members whatever generation they joined for. */
int coord_members_count(const coord_server_t *cs, uint32_t gen);
int coord_members_live(const coord_server_t *cs);
/* The member (other than except) with that identity, or -1. */
int coord_members_find(const coord_server_t *cs, const char *host, uint32_t pid, const char *addr, int except);
/* The member (other than except) that asked for node rank `rank`, or -1. */
int coord_members_rank_owner(const coord_server_t *cs, int rank, int except);
void coord_members_free(coord_server_t *cs);

#endif
