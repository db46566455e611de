/* coord_members: who is a member, counted and indexed as membership changes, so that a JOIN costs the same at
 * 16,384 nodes as at 2: members per generation they joined for, members by identity (host, pid, address: a node
 * that comes back on a new session), members by requested node rank. Scanning every peer on each JOIN made the
 * rendezvous quadratic (docs/design.md, "The coordinator at scale"). */
#include "launcher/coord/coord_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/goodput/goodput.h"

#define CM_MIN_RANKS 64

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
    return hindex_hash(&pid, sizeof pid, hindex_hash(host, strlen(host), HINDEX_SEED));
}

static int s_is_member(const coord_server_t *cs, int peer)
{
    return peer >= 0 && peer < cs->npeers && cs->peers[peer].used && cs->peers[peer].st == PS_MEMBER;
}

/* An entry of the identity index still stands for its hash: a member with that identity. */
static int s_id_live(void *arg, int peer, uint32_t hash)
{
    const coord_server_t *cs = arg;
    return s_is_member(cs, peer) && s_hash(cs->peers[peer].host, cs->peers[peer].pid) == hash;
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
    if (!p->seq)
        p->seq = ++m->seq;
    s_count(m, gen, +1);
    if (hindex_put(&m->ids, s_hash(p->host, p->pid), peer, s_id_live, cs) < 0)
        m->id_broken = 1; /* out of memory: lookups scan */
    if (p->req_rank >= 0 && p->req_rank < WIRE_MAX_NODES) {
        if (p->req_rank >= m->nrank) {
            int n = m->nrank ? m->nrank : CM_MIN_RANKS;
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
    coord_members_set_spare(cs, peer, 0);
    cs->members.live--;
    s_count(&cs->members, p->joined_gen, -1);
}

/* The spares into the job's model (status view, metrics): after each change, a scan of the members (spares change
 * at a generation's start or when one leaves, not per message). */
static void s_spares_model(coord_server_t *cs)
{
    struct cm_spare l[GP_STATUS_SPARES];
    struct gp_spare sp[GP_STATUS_SPARES];
    int n = coord_members_spare_list(cs, l, GP_STATUS_SPARES);
    for (int i = 0; i < n; i++) {
        snprintf(sp[i].host, sizeof sp[i].host, "%s", l[i].host);
        sp[i].state = l[i].state == CM_SPARE_SUSPECT ? GP_SPARE_SWAPPED_OUT : GP_SPARE_STANDBY;
    }
    gp_spares_set(cs->gp, sp, n, cs->members.standby - cs->members.standby_suspect, cs->members.standby_suspect);
}

void coord_members_set_spare(coord_server_t *cs, int peer, int on)
{
    struct coord_members *m = &cs->members;
    struct peer *p = &cs->peers[peer];
    if (p->spare == on)
        return;
    int d = on ? 1 : -1;
    m->standby += d;
    m->standby_suspect += p->suspect ? d : 0;
    p->spare = on;
    if (!on)
        p->suspect = 0; /* it runs again: the next failures are judged afresh */
    s_spares_model(cs);
}

int coord_members_spares(const coord_server_t *cs, int healthy)
{
    return cs->members.standby - (healthy ? cs->members.standby_suspect : 0);
}

int coord_members_spare_list(const coord_server_t *cs, struct cm_spare *out, int cap)
{
    int n = 0;
    for (int i = 0; i < cs->npeers && n < cap; i++)
        if (s_is_member(cs, i) && cs->peers[i].spare)
            out[n++] = (struct cm_spare){ i, cs->peers[i].host, cs->peers[i].addr,
                                          cs->peers[i].suspect ? CM_SPARE_SUSPECT : CM_SPARE_STANDBY };
    return n;
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

struct s_ident {
    const coord_server_t *cs;
    const char *host, *addr;
    uint32_t pid;
    int except;
};

static int s_id_match(void *arg, int peer, uint32_t hash)
{
    const struct s_ident *id = arg;
    return peer != id->except && s_is_member(id->cs, peer) && s_same(&id->cs->peers[peer], id->host, id->pid, id->addr);
}

int coord_members_find(const coord_server_t *cs, const char *host, uint32_t pid, const char *addr, int except)
{
    struct s_ident id = { cs, host, addr, pid, except };
    if (!cs->members.id_broken)
        return hindex_find(&cs->members.ids, s_hash(host, pid), s_id_match, &id);
    for (int i = 0; i < cs->npeers; i++)
        if (s_id_match(&id, i, 0))
            return i;
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
    hindex_free(&cs->members.ids);
    free(cs->members.rank_owner);
    memset(&cs->members, 0, sizeof cs->members);
}
