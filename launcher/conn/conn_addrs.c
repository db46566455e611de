/* conn_addrs: connections grouped by remote address: an open-addressing table of addresses, each with a count and
 * a list of its descriptors in the order they joined. */
#include "launcher/conn/conn_addrs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CA_MIN_SLOTS 64

struct ca_addr {
    sa_family_t family;       /* 0: never used */
    unsigned char ip[16];
    int n, head, tail;        /* n 0: free for another address, but still a link of its probe chain */
};

struct ca_fd {
    int slot;                 /* its address's slot, -1 none */
    int prev, next;
};

struct conn_addrs {
    struct ca_addr *slots;
    unsigned cap, used;       /* slots ever given an address since the last rebuild */
    struct ca_fd *fds;        /* by descriptor */
    int nfds;
};

conn_addrs_t *conn_addrs_new(void)
{
    return calloc(1, sizeof(struct conn_addrs));
}

void conn_addrs_destroy(conn_addrs_t **pa)
{
    if (!pa || !*pa)
        return;
    free((*pa)->slots);
    free((*pa)->fds);
    free(*pa);
    *pa = NULL;
}

static uint32_t s_hash(sa_family_t family, const unsigned char ip[16])
{
    uint32_t h = 2166136261u ^ family; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ ip[i]) * 16777619u;
    return h;
}

/* The slot of the address, or -1; with room, the slot it would take (a free one of its chain, or the empty end). */
static int s_find(const conn_addrs_t *a, sa_family_t family, const unsigned char ip[16], int *room)
{
    if (room)
        *room = -1;
    if (!a->cap)
        return -1;
    unsigned mask = a->cap - 1;
    for (unsigned h = s_hash(family, ip) & mask;; h = (h + 1) & mask) {
        const struct ca_addr *s = &a->slots[h];
        if (!s->family) {
            if (room && *room < 0)
                *room = (int)h;
            return -1;
        }
        if (s->n > 0 && s->family == family && memcmp(s->ip, ip, 16) == 0)
            return (int)h;
        if (room && *room < 0 && s->n == 0)
            *room = (int)h;
    }
}

/* A table twice as big as the live addresses need, holding only them; every descriptor's slot follows. */
static int s_rebuild(conn_addrs_t *a)
{
    unsigned live = 0, cap = CA_MIN_SLOTS;
    for (unsigned i = 0; i < a->cap; i++)
        live += a->slots[i].n > 0;
    while (cap < 4 * (live + 1))
        cap *= 2;
    struct ca_addr *old = a->slots, *slots = calloc(cap, sizeof *slots);
    unsigned oldcap = a->cap;
    if (!slots)
        return -1;
    a->slots = slots;
    a->cap = cap;
    a->used = 0;
    for (unsigned i = 0; i < oldcap; i++) {
        if (old[i].n <= 0)
            continue;
        int room;
        s_find(a, old[i].family, old[i].ip, &room);
        a->slots[room] = old[i];
        a->used++;
        for (int fd = old[i].head; fd >= 0; fd = a->fds[fd].next)
            a->fds[fd].slot = room;
    }
    free(old);
    return 0;
}

static int s_fd_room(conn_addrs_t *a, int fd)
{
    if (fd < a->nfds)
        return 0;
    int n = a->nfds ? a->nfds : 64;
    while (n <= fd)
        n *= 2;
    struct ca_fd *fds = realloc(a->fds, (size_t)n * sizeof *fds);
    if (!fds)
        return -1;
    for (int i = a->nfds; i < n; i++)
        fds[i] = (struct ca_fd){ -1, -1, -1 };
    a->fds = fds;
    a->nfds = n;
    return 0;
}

int conn_addrs_add(conn_addrs_t *a, int fd, sa_family_t family, const unsigned char ip[16])
{
    int room, slot;
    if (fd < 0 || s_fd_room(a, fd) < 0)
        return -1;
    if ((slot = s_find(a, family, ip, &room)) < 0) {
        if ((a->used + 1 > a->cap / 2 || room < 0) && (s_rebuild(a) < 0 || (s_find(a, family, ip, &room), room < 0)))
            return -1;
        slot = room;
        if (!a->slots[slot].family)
            a->used++;
        a->slots[slot] = (struct ca_addr){ .family = family, .n = 0, .head = -1, .tail = -1 };
        memcpy(a->slots[slot].ip, ip, 16);
    }
    struct ca_addr *s = &a->slots[slot];
    a->fds[fd] = (struct ca_fd){ .slot = slot, .prev = s->tail, .next = -1 };
    if (s->tail >= 0)
        a->fds[s->tail].next = fd;
    else
        s->head = fd;
    s->tail = fd;
    s->n++;
    return 0;
}

void conn_addrs_remove(conn_addrs_t *a, int fd)
{
    if (fd < 0 || fd >= a->nfds || a->fds[fd].slot < 0)
        return;
    struct ca_fd *f = &a->fds[fd];
    struct ca_addr *s = &a->slots[f->slot];
    if (f->prev >= 0)
        a->fds[f->prev].next = f->next;
    else
        s->head = f->next;
    if (f->next >= 0)
        a->fds[f->next].prev = f->prev;
    else
        s->tail = f->prev;
    s->n--;
    *f = (struct ca_fd){ -1, -1, -1 };
}

int conn_addrs_count(const conn_addrs_t *a, sa_family_t family, const unsigned char ip[16])
{
    int slot = s_find(a, family, ip, NULL);
    return slot < 0 ? 0 : a->slots[slot].n;
}

int conn_addrs_first(const conn_addrs_t *a, sa_family_t family, const unsigned char ip[16])
{
    int slot = s_find(a, family, ip, NULL);
    return slot < 0 ? -1 : a->slots[slot].head;
}

int conn_addrs_next(const conn_addrs_t *a, int fd)
{
    return fd >= 0 && fd < a->nfds ? a->fds[fd].next : -1;
}
