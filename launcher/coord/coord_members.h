/* coord_members: membership counted and indexed: by generation, identity, requested rank (coord_members.c;
 * below coord_peers.c, calls nothing above it). Private to launcher/coord/. */
#ifndef PLAUNCH_COORD_MEMBERS_H
#define PLAUNCH_COORD_MEMBERS_H

#include <stdint.h>

#include "launcher/coord/coord_server.h"
#include "common/hindex.h"

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
    /* spares (--spares), for the coordinator's decisions: members standing by, of them those swapped out for
     * failing (placed last); the swaps made are the goodput model's (gp_spare_swap), not counted here */
    int standby, standby_suspect;
    uint64_t seq;                   /* JOINs so far: each member's join order */
    uint64_t lost_ns;               /* an active node was lost or swapped out at (loop clock); 0 none pending */
};

/* What the status view shows for one spare (coord_members_spare_list). */
enum cm_spare_state {
    CM_SPARE_STANDBY,   /* idle, its preflight done, heartbeats watched: ready to take a rank */
    CM_SPARE_SUSPECT,   /* standing by after it was swapped out for failing twice in a row: taken last */
};
struct cm_spare {
    int peer;
    const char *host, *addr;
    enum cm_spare_state state;
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

/* Spares. A member stands by (on 1) or takes a rank (on 0); unset counts a leaving spare out. */
void coord_members_set_spare(coord_server_t *cs, int peer, int on);
/* Members standing by; healthy: only those not swapped out for failing. */
int coord_members_spares(const coord_server_t *cs, int healthy);
/* Up to cap spares into out (a scan of the members: for the status view, not per message); how many. */
int coord_members_spare_list(const coord_server_t *cs, struct cm_spare *out, int cap);

#endif
