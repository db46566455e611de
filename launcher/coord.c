/* coord: the job-wide services the coordinator gives agents in a generation: NCCL unique ids by key and
 * barriers. Transport-free: messages come in through coord_on_msg and go out through the send callback. */
#include "coord.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

#define COORD_MAX_KEYS 1024 /* per generation; a program making more communicators is refused */
#define COORD_MAX_PEERS 64  /* distinct agents waiting on one key before it is answered; grows */

/* Agents waiting for an answer about one key. */
struct peerset {
    int *peers;
    int n, cap;
};

struct idrec {
    char key[WIRE_MAX_KEY + 1];
    int have;
    unsigned char id[WIRE_NCCL_ID_BYTES];
    struct peerset waiting;
};

struct barrier {
    char key[WIRE_MAX_KEY + 1];
    unsigned char *arrived; /* one byte per rank */
    uint32_t count;
    struct peerset waiting;
};

struct coord {
    char job_id[WIRE_MAX_JOB_ID + 1];
    uint32_t generation, world;
    coord_send_fn send;
    void *arg;
    struct idrec *ids;
    int nids;
    struct barrier *barriers;
    int nbarriers;
};

static int s_peer_add(struct peerset *ps, int peer)
{
    for (int i = 0; i < ps->n; i++)
        if (ps->peers[i] == peer)
            return 0;
    if (ps->n == ps->cap) {
        int cap = ps->cap ? ps->cap * 2 : 8;
        int *np = realloc(ps->peers, (size_t)cap * sizeof *np);
        if (!np)
            return -1;
        ps->peers = np;
        ps->cap = cap;
    }
    ps->peers[ps->n++] = peer;
    return 0;
}

coord_t *coord_new(const char *job_id, coord_send_fn send, void *arg)
{
    coord_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    strncpy(c->job_id, job_id, WIRE_MAX_JOB_ID);
    c->send = send;
    c->arg = arg;
    return c;
}

static void s_send_barrier_done(coord_t *c, struct barrier *b, int status)
{
    Plaunch__BarrierDone done = PLAUNCH__BARRIER_DONE__INIT;
    wire_msg_t m;
    done.key = b->key;
    done.status = status;
    wire_init(&m, c->job_id, c->generation, WIRE_BARRIER_DONE, &done);
    for (int i = 0; i < b->waiting.n; i++)
        c->send(c->arg, b->waiting.peers[i], &m);
}

static void s_clear(coord_t *c)
{
    for (int i = 0; i < c->nids; i++)
        free(c->ids[i].waiting.peers);
    for (int i = 0; i < c->nbarriers; i++) {
        s_send_barrier_done(c, &c->barriers[i], PLAUNCH__BARRIER_DONE__STATUS__ABORTED);
        free(c->barriers[i].arrived);
        free(c->barriers[i].waiting.peers);
    }
    free(c->ids);
    free(c->barriers);
    c->ids = NULL;
    c->barriers = NULL;
    c->nids = c->nbarriers = 0;
}

void coord_destroy(coord_t **cp)
{
    if (!cp || !*cp)
        return;
    (*cp)->send = NULL;
    for (int i = 0; i < (*cp)->nbarriers; i++)
        (*cp)->barriers[i].waiting.n = 0; /* nobody to tell any more */
    s_clear(*cp);
    free(*cp);
    *cp = NULL;
}

void coord_set_generation(coord_t *c, uint32_t gen, uint32_t world_size)
{
    s_clear(c);
    c->generation = gen;
    c->world = world_size;
}

static struct idrec *s_idrec(coord_t *c, const char *key)
{
    for (int i = 0; i < c->nids; i++)
        if (strcmp(c->ids[i].key, key) == 0)
            return &c->ids[i];
    if (c->nids >= COORD_MAX_KEYS)
        return NULL;
    struct idrec *n = realloc(c->ids, (size_t)(c->nids + 1) * sizeof *n);
    if (!n)
        return NULL;
    c->ids = n;
    memset(&c->ids[c->nids], 0, sizeof *n);
    strncpy(c->ids[c->nids].key, key, WIRE_MAX_KEY);
    return &c->ids[c->nids++];
}

static void s_refuse(coord_t *c, int peer, const char *text)
{
    Plaunch__Refuse r = PLAUNCH__REFUSE__INIT;
    wire_msg_t m;
    r.code = PLAUNCH__REFUSE__CODE__BAD_REQUEST;
    r.text = (char *)text;
    wire_init(&m, c->job_id, c->generation, WIRE_REFUSE, &r);
    c->send(c->arg, peer, &m);
}

static void s_send_id(coord_t *c, int peer, struct idrec *r)
{
    Plaunch__NcclId nid = PLAUNCH__NCCL_ID__INIT;
    wire_msg_t m;
    nid.key = r->key;
    nid.id.data = r->id;
    nid.id.len = WIRE_NCCL_ID_BYTES;
    wire_init(&m, c->job_id, c->generation, WIRE_NCCL_ID, &nid);
    c->send(c->arg, peer, &m);
}

static void s_on_put(coord_t *c, int peer, const Plaunch__NcclIdPut *put)
{
    struct idrec *r = s_idrec(c, put->key);
    if (!r) {
        s_refuse(c, peer, "too many NCCL id keys in this generation");
        return;
    }
    if (put->rank != 0) {
        log_warn("NCCL id for '%s' offered by rank %u, not rank 0: ignored", put->key, put->rank);
        return;
    }
    if (r->have && memcmp(r->id, put->id.data, WIRE_NCCL_ID_BYTES) != 0) {
        log_warn("rank 0 published a second NCCL id for key '%s' in generation %u; keeping the first", put->key,
                 c->generation);
        return;
    }
    memcpy(r->id, put->id.data, WIRE_NCCL_ID_BYTES);
    r->have = 1;
    log_info("generation %u: NCCL id for '%s' published", c->generation, put->key);
    for (int i = 0; i < r->waiting.n; i++)
        s_send_id(c, r->waiting.peers[i], r);
    r->waiting.n = 0;
}

static void s_on_get(coord_t *c, int peer, const Plaunch__NcclIdGet *get)
{
    struct idrec *r = s_idrec(c, get->key);
    if (!r) {
        s_refuse(c, peer, "too many NCCL id keys in this generation");
        return;
    }
    if (r->have)
        s_send_id(c, peer, r);
    else if (s_peer_add(&r->waiting, peer) < 0)
        s_refuse(c, peer, "out of memory");
}

static void s_on_barrier(coord_t *c, int peer, const Plaunch__Barrier *b)
{
    if (b->rank >= c->world) {
        s_refuse(c, peer, "barrier from a rank outside the world");
        return;
    }
    struct barrier *br = NULL;
    for (int i = 0; i < c->nbarriers && !br; i++)
        if (strcmp(c->barriers[i].key, b->key) == 0)
            br = &c->barriers[i];
    if (!br) {
        if (c->nbarriers >= COORD_MAX_KEYS) {
            s_refuse(c, peer, "too many barriers open at once");
            return;
        }
        struct barrier *n = realloc(c->barriers, (size_t)(c->nbarriers + 1) * sizeof *n);
        if (!n)
            return;
        c->barriers = n;
        br = &c->barriers[c->nbarriers];
        memset(br, 0, sizeof *br);
        strncpy(br->key, b->key, WIRE_MAX_KEY);
        br->arrived = calloc(c->world, 1);
        if (!br->arrived)
            return;
        c->nbarriers++;
    }
    if (!br->arrived[b->rank]) {
        br->arrived[b->rank] = 1;
        br->count++;
    }
    s_peer_add(&br->waiting, peer);
    if (br->count < c->world)
        return;
    s_send_barrier_done(c, br, PLAUNCH__BARRIER_DONE__STATUS__OK);
    /* Done: the key may be used again for the next round. */
    free(br->arrived);
    free(br->waiting.peers);
    *br = c->barriers[--c->nbarriers];
}

void coord_on_msg(coord_t *c, int peer, const wire_msg_t *m)
{
    if (m->generation != c->generation) {
        Plaunch__Refuse r = PLAUNCH__REFUSE__INIT;
        wire_msg_t out;
        r.code = PLAUNCH__REFUSE__CODE__STALE_GENERATION;
        r.text = "request from another generation";
        wire_init(&out, c->job_id, c->generation, WIRE_REFUSE, &r);
        c->send(c->arg, peer, &out);
        return;
    }
    switch (m->body_case) {
    case WIRE_NCCL_ID_PUT:
        s_on_put(c, peer, m->nccl_id_put);
        break;
    case WIRE_NCCL_ID_GET:
        s_on_get(c, peer, m->nccl_id_get);
        break;
    case WIRE_BARRIER:
        s_on_barrier(c, peer, m->barrier);
        break;
    default:
        log_warn("coordinator: unexpected %s from agent %d", wire_type_name(m->body_case), peer);
    }
}
