/* coord_members: who is a member, counted and indexed as membership changes, so that a JOIN costs the same at
 * 16,384 nodes as at 2: members per generation they joined for, members by identity (host, pid, address: a node
 * that comes back on a new session), members by requested node rank. Scanning every peer on each JOIN made the
 * rendezvous quadratic (docs/design.md, "The coordinator at scale"). */
#include "coord_priv.h"

#include <stdlib.h>
#include <string.h>

#define CM_MIN_SLOTS 64

static struct cm_joined *s_slot_of(struct coord_members *m, uint32_t gen, int create)
{
    struct cm_joined *free_slot = NULL;
    for (int i = 0; i < CM_GENS; i++) {
        if (m->joined[i].n > 0 && m->joined[i].gen == gen)
            return &m->joined[i];
        if (m->joined[i].n == 0 && !free_slot)
            free_slot = &m->joined[i];
    }
    if (!create)
        return NULL;
    if (!free_slot) {
        m->overflow = 1; /* more generations at once than slots: coord_members_count scans from now on */
        return NULL;
    }
    free_slot->gen = gen;
    return free_slot;
}

static void s_count(struct coord_members *m, int gen, int delta)
{
    struct cm_joined *j = gen >= 0 ? s_slot_of(m, (uint32_t)gen, delta > 0) : NULL;
    if (j)
        j->n += delta;
}

static uint32_t s_hash(const char *host, uint32_t pid)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)host; *c; c++)
        h = (h ^ *c) * 16777619u;
    return (h ^ pid) * 16777619u;
}

static int s_is_member(const coord_server_t *cs, int peer)
{
    return peer >= 0 && peer < cs->npeers && cs->peers[peer].used && cs->peers[peer].st == PS_MEMBER;
}

/* Slots hold peer index + 1 (0: empty). An entry whose peer is no longer a member with that identity is stale:
 * lookups skip it and inserts reuse it, so nothing is ever deleted; a rebuild drops them when the table fills. */
static int s_id_insert(coord_server_t *cs, int peer)
{
    struct coord_members *m = &cs->members;
    const struct peer *p = &cs->peers[peer];
    if (m->idused + 1 > m->idcap / 2) {
        unsigned cap = m->idcap ? m->idcap : CM_MIN_SLOTS;
        while ((unsigned)m->live + 1 > cap / 4)
            cap *= 2;
        int *ids = calloc(cap, sizeof *ids);
        if (!ids)
            return -1;
        free(m->ids);
        m->ids = ids;
        m->idcap = cap;
        m->idused = 0;
        for (int i = 0; i < cs->npeers; i++)
            if (i != peer && s_is_member(cs, i) && s_id_insert(cs, i) < 0)
                return -1;
    }
    unsigned mask = m->idcap - 1, h = s_hash(p->host, p->pid) & mask, reuse = m->idcap;
    for (;; h = (h + 1) & mask) {
        int q = m->ids[h] - 1;
        if (q == peer)
            return 0;
        if (q < 0)
            break;
        if (reuse == m->idcap && !s_is_member(cs, q))
            reuse = h;
    }
    if (reuse == m->idcap)
        m->idused++;
    else
        h = reuse;
    m->ids[h] = peer + 1;
    return 0;
}

void coord_members_set(coord_server_t *cs, int peer, int gen)
{
    struct coord_members *m = &cs->members;
    struct peer *p = &cs->peers[peer];
    if (p->st == PS_MEMBER) {
        s_count(m, p->joined_gen, -1);
    } else {
        m->live++;
        p->st = PS_MEMBER;
    }
    p->joined_gen = gen;
    s_count(m, gen, +1);
    if (s_id_insert(cs, peer) < 0)
        m->id_broken = 1; /* out of memory: lookups scan */
    if (p->req_rank >= 0 && p->req_rank < WIRE_MAX_NODES) {
        if (p->req_rank >= m->nrank) {
            int n = m->nrank ? m->nrank : CM_MIN_SLOTS;
            while (n <= p->req_rank)
                n *= 2;
            int *owner = realloc(m->rank_owner, (size_t)n * sizeof *owner);
            if (owner) {
                memset(owner + m->nrank, 0, (size_t)(n - m->nrank) * sizeof *owner);
                m->rank_owner = owner;
                m->nrank = n;
            }
        }
        if (p->req_rank < m->nrank)
            m->rank_owner[p->req_rank] = peer + 1;
        else
            m->id_broken = 1;
    }
}

void coord_members_unset(coord_server_t *cs, int peer)
{
    struct peer *p = &cs->peers[peer];
    if (p->st != PS_MEMBER)
        return;
    cs->members.live--;
    s_count(&cs->members, p->joined_gen, -1);
}

int coord_members_count(const coord_server_t *cs, uint32_t gen)
{
    const struct coord_members *m = &cs->members;
    if (m->overflow) {
        int n = 0;
        for (int i = 0; i < cs->npeers; i++)
            n += s_is_member(cs, i) && cs->peers[i].joined_gen == (int)gen;
        return n;
    }
    for (int i = 0; i < CM_GENS; i++)
        if (m->joined[i].n > 0 && m->joined[i].gen == gen)
            return m->joined[i].n;
    return 0;
}

int coord_members_live(const coord_server_t *cs)
{
    return cs->members.live;
}

static int s_same(const struct peer *p, const char *host, uint32_t pid, const char *addr)
{
    return p->pid == pid && strcmp(p->host, host) == 0 && strcmp(p->addr, addr) == 0;
}

int coord_members_find(const coord_server_t *cs, const char *host, uint32_t pid, const char *addr, int except)
{
    const struct coord_members *m = &cs->members;
    if (m->id_broken || !m->idcap) {
        for (int i = 0; i < cs->npeers && m->id_broken; i++)
            if (i != except && s_is_member(cs, i) && s_same(&cs->peers[i], host, pid, addr))
                return i;
        return -1;
    }
    unsigned mask = m->idcap - 1;
    for (unsigned h = s_hash(host, pid) & mask; m->ids[h]; h = (h + 1) & mask) {
        int q = m->ids[h] - 1;
        if (q != except && s_is_member(cs, q) && s_same(&cs->peers[q], host, pid, addr))
            return q;
    }
    return -1;
}

int coord_members_rank_owner(const coord_server_t *cs, int rank, int except)
{
    const struct coord_members *m = &cs->members;
    if (m->id_broken) {
        for (int i = 0; i < cs->npeers; i++)
            if (i != except && s_is_member(cs, i) && cs->peers[i].req_rank == rank)
                return i;
        return -1;
    }
    int q = rank >= 0 && rank < m->nrank ? m->rank_owner[rank] - 1 : -1;
    return q != except && s_is_member(cs, q) && cs->peers[q].req_rank == rank ? q : -1;
}

void coord_members_free(coord_server_t *cs)
{
    free(cs->members.ids);
    free(cs->members.rank_owner);
    memset(&cs->members, 0, sizeof cs->members);
}
