/* coord_services: the job-wide services the coordinator gives agents in a generation: NCCL unique ids by key and
 * barriers with deadlines. Transport-free: messages come in through coord_services_on_msg and go out through the send
 * callback; barrier deadlines are timers of the caller's loop. */
#include "launcher/coord/services/coord_services.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/lograte.h"

/* Agents waiting for an answer about one key, each once: a bit per agent says who is in (a scan of the list on
 * every request made 16,384 agents asking for an id that was not there yet quadratic). */
struct peerset {
    int *peers;
    int n, cap;
    unsigned char *in;      /* bit `peer` set: peer is in peers[] */
    int incap;              /* bytes of in */
};

struct idrec {
    char key[WIRE_MAX_KEY + 1];
    int have;
    unsigned char id[WIRE_NCCL_ID_BYTES];
    struct peerset waiting;
};

/* One instance of a barrier: the ranks that arrived at it. A timed-out instance stays until every rank has
 * arrived at it, so that a rank that comes late is told TIMEOUT for the barrier the others gave up on instead
 * of completing it. */
struct barrier {
    char key[WIRE_MAX_KEY + 1];
    unsigned char *arrived; /* one byte per rank */
    uint32_t count;
    struct peerset waiting;
    int timed_out;
    uint64_t deadline_ns;   /* the earliest deadline of the ranks that arrived; 0 none */
    int timer;
};

struct coord {
    char job_id[WIRE_MAX_JOB_ID + 1];
    loop_t *loop;
    uint32_t generation, world;
    coord_services_send_fn send;
    void *arg;
    struct idrec *ids;
    int nids;
    struct barrier *barriers; /* in the order they opened: a rank's next arrival goes to the first it owes */
    int nbarriers;
    struct lograte refusals, timeouts; /* a program asking in a loop must not fill the log */
};

static int s_peer_add(struct peerset *ps, int peer)
{
    if (peer / 8 >= ps->incap) {
        int cap = ps->incap ? ps->incap : 64;
        while (cap <= peer / 8)
            cap *= 2;
        unsigned char *in = realloc(ps->in, (size_t)cap);
        if (!in)
            return -1;
        memset(in + ps->incap, 0, (size_t)(cap - ps->incap));
        ps->in = in;
        ps->incap = cap;
    }
    if (ps->in[peer / 8] & (1u << (peer % 8)))
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
    ps->in[peer / 8] |= (unsigned char)(1u << (peer % 8));
    return 0;
}

/* Empties the set (its members were answered). */
static void s_peer_clear(struct peerset *ps)
{
    for (int i = 0; i < ps->n; i++)
        ps->in[ps->peers[i] / 8] = 0;
    ps->n = 0;
}

static void s_peer_free(struct peerset *ps)
{
    free(ps->peers);
    free(ps->in);
}

coord_services_t *coord_services_new(const char *job_id, loop_t *loop, coord_services_send_fn send, void *arg)
{
    coord_services_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    strncpy(c->job_id, job_id, WIRE_MAX_JOB_ID);
    c->loop = loop;
    c->send = send;
    c->arg = arg;
    lograte_init(&c->refusals, LOGRATE_INTERVAL_S);
    lograte_init(&c->timeouts, LOGRATE_INTERVAL_S);
    return c;
}

/* BARRIER_DONE to every agent waiting on b, or to one agent for one rank (rank >= 0). */
static void s_send_barrier_done(coord_services_t *c, struct barrier *b, int status, int peer, int rank)
{
    Plaunch__BarrierDone done = PLAUNCH__BARRIER_DONE__INIT;
    uint32_t one = (uint32_t)rank;
    wire_msg_t m;
    done.key = b->key;
    done.status = status;
    if (rank >= 0) {
        done.n_ranks = 1;
        done.ranks = &one;
    }
    wire_init(&m, c->job_id, c->generation, WIRE_BARRIER_DONE, &done);
    if (rank >= 0) {
        c->send(c->arg, peer, &m);
        return;
    }
    for (int i = 0; i < b->waiting.n; i++)
        c->send(c->arg, b->waiting.peers[i], &m);
    s_peer_clear(&b->waiting);
}

static void s_barrier_free(coord_services_t *c, struct barrier *b)
{
    if (b->timer > 0 && c->loop)
        loop_timer_cancel(c->loop, b->timer);
    free(b->arrived);
    s_peer_free(&b->waiting);
}

/* Removes barrier i, keeping the order of the others. */
static void s_barrier_remove(coord_services_t *c, int i)
{
    s_barrier_free(c, &c->barriers[i]);
    memmove(&c->barriers[i], &c->barriers[i + 1], (size_t)(c->nbarriers - i - 1) * sizeof *c->barriers);
    c->nbarriers--;
}

static void s_clear(coord_services_t *c)
{
    for (int i = 0; i < c->nids; i++)
        s_peer_free(&c->ids[i].waiting);
    for (int i = 0; i < c->nbarriers; i++) {
        if (c->send)
            s_send_barrier_done(c, &c->barriers[i], PLAUNCH__BARRIER_DONE__STATUS__ABORTED, -1, -1);
        s_barrier_free(c, &c->barriers[i]);
    }
    free(c->ids);
    free(c->barriers);
    c->ids = NULL;
    c->barriers = NULL;
    c->nids = c->nbarriers = 0;
}

void coord_services_destroy(coord_services_t **cp)
{
    if (!cp || !*cp)
        return;
    (*cp)->send = NULL; /* nobody to tell any more */
    s_clear(*cp);
    lograte_flush(&(*cp)->refusals, LOG_INFO);
    lograte_flush(&(*cp)->timeouts, LOG_INFO);
    free(*cp);
    *cp = NULL;
}

void coord_services_set_generation(coord_services_t *c, uint32_t gen, uint32_t world_size)
{
    s_clear(c);
    lograte_flush(&c->refusals, LOG_INFO);
    lograte_flush(&c->timeouts, LOG_INFO);
    c->generation = gen;
    c->world = world_size;
}

static struct idrec *s_idrec(coord_services_t *c, const char *key)
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

/* Refuses one worker request (request = its body type) back to the agent, which hands the refusal to the worker
 * that asked (and reports it); logged here at most once per LOGRATE_INTERVAL_S, with a count. */
static void s_refuse(coord_services_t *c, int peer, int code, wire_type_t request, const char *key, uint32_t rank,
                     const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void s_refuse(coord_services_t *c, int peer, int code, wire_type_t request, const char *key, uint32_t rank,
                     const char *fmt, ...)
{
    Plaunch__Refuse r;
    char text[WIRE_MAX_TEXT];
    wire_msg_t m;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    wire_refuse_init(&m, &r, c->job_id, c->generation, code, text, (uint32_t)request, key, rank);
    lograte_msg(&c->refusals, LOG_INFO, "coordinator refused %s '%s' of rank %u: %s", wire_type_name(request), key,
                rank, text);
    c->send(c->arg, peer, &m);
}

static void s_send_id(coord_services_t *c, int peer, struct idrec *r)
{
    Plaunch__NcclId nid = PLAUNCH__NCCL_ID__INIT;
    wire_msg_t m;
    nid.key = r->key;
    nid.id.data = r->id;
    nid.id.len = WIRE_NCCL_ID_BYTES;
    wire_init(&m, c->job_id, c->generation, WIRE_NCCL_ID, &nid);
    c->send(c->arg, peer, &m);
}

static void s_on_put(coord_services_t *c, int peer, const Plaunch__NcclIdPut *put)
{
    if (put->rank != 0) {
        s_refuse(c, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, WIRE_NCCL_ID_PUT, put->key, put->rank,
                 "the NCCL id for '%s' was offered by rank %u: only rank 0 of the generation publishes ids",
                 put->key, put->rank);
        return;
    }
    struct idrec *r = s_idrec(c, put->key);
    if (!r) {
        s_refuse(c, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, WIRE_NCCL_ID_PUT, put->key, put->rank,
                 "too many NCCL id keys in generation %u: at most %d per generation; reuse keys", c->generation,
                 COORD_MAX_KEYS);
        return;
    }
    if (r->have) /* every rank takes the first id (libplaunch asks for it after its PUT) */
        return;
    memcpy(r->id, put->id.data, WIRE_NCCL_ID_BYTES);
    r->have = 1;
    log_info("generation %u: NCCL id for '%s' published", c->generation, put->key);
    for (int i = 0; i < r->waiting.n; i++)
        s_send_id(c, r->waiting.peers[i], r);
    s_peer_clear(&r->waiting);
}

static void s_on_get(coord_services_t *c, int peer, const Plaunch__NcclIdGet *get)
{
    struct idrec *r = s_idrec(c, get->key);
    if (!r) {
        s_refuse(c, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, WIRE_NCCL_ID_GET, get->key, get->rank,
                 "too many NCCL id keys in generation %u: at most %d per generation; reuse keys", c->generation,
                 COORD_MAX_KEYS);
        return;
    }
    if (r->have)
        s_send_id(c, peer, r);
    else if (s_peer_add(&r->waiting, peer) < 0)
        s_refuse(c, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, WIRE_NCCL_ID_GET, get->key, get->rank,
                 "the coordinator is out of memory");
}

static int s_on_deadline(loop_t *loop, int id, void *arg)
{
    coord_services_t *c = arg;
    for (int i = 0; i < c->nbarriers; i++) {
        struct barrier *b = &c->barriers[i];
        if (b->timer != id)
            continue;
        b->timer = 0;
        b->timed_out = 1;
        lograte_msg(&c->timeouts, LOG_INFO, "generation %u: barrier '%s' timed out with %u of %u ranks",
                    c->generation, b->key, b->count, c->world);
        s_send_barrier_done(c, b, PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT, -1, -1);
        break;
    }
    return 0;
}

/* The instance rank's arrival belongs to: the first of key that it has not arrived at, or the one it is still
 * waiting in (a repeated arrival counts once). NULL: a new one. */
static struct barrier *s_barrier_for(coord_services_t *c, const char *key, uint32_t rank)
{
    for (int i = 0; i < c->nbarriers; i++) {
        struct barrier *b = &c->barriers[i];
        if (strcmp(b->key, key) == 0 && (!b->arrived[rank] || !b->timed_out))
            return b;
    }
    return NULL;
}

static struct barrier *s_barrier_open(coord_services_t *c, const char *key)
{
    if (c->nbarriers >= COORD_MAX_BARRIERS)
        return NULL;
    struct barrier *n = realloc(c->barriers, (size_t)(c->nbarriers + 1) * sizeof *n);
    if (!n)
        return NULL;
    c->barriers = n;
    struct barrier *b = &c->barriers[c->nbarriers];
    memset(b, 0, sizeof *b);
    strncpy(b->key, key, WIRE_MAX_KEY);
    if (!(b->arrived = calloc(c->world, 1)))
        return NULL;
    c->nbarriers++;
    return b;
}

static void s_on_barrier(coord_services_t *c, int peer, const Plaunch__Barrier *msg)
{
    if (msg->rank >= c->world) {
        s_refuse(c, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, WIRE_BARRIER, msg->key, msg->rank,
                 "barrier '%s' from rank %u, outside the world of %u ranks", msg->key, msg->rank, c->world);
        return;
    }
    struct barrier *b = s_barrier_for(c, msg->key, msg->rank);
    if (!b && !(b = s_barrier_open(c, msg->key))) {
        s_refuse(c, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, WIRE_BARRIER, msg->key, msg->rank,
                 "too many barriers open at once: at most %d (barriers that timed out stay open until every rank "
                 "arrived at them)", COORD_MAX_BARRIERS);
        return;
    }
    if (!b->arrived[msg->rank]) {
        b->arrived[msg->rank] = 1;
        b->count++;
    }
    if (b->timed_out) {
        s_send_barrier_done(c, b, PLAUNCH__BARRIER_DONE__STATUS__TIMEOUT, peer, (int)msg->rank);
    } else {
        if (s_peer_add(&b->waiting, peer) < 0) {
            s_refuse(c, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, WIRE_BARRIER, msg->key, msg->rank,
                     "the coordinator is out of memory");
            return;
        }
        uint64_t deadline = msg->timeout_ms ? loop_now_ns() + (uint64_t)msg->timeout_ms * 1000000u : 0;
        if (deadline && c->loop && (!b->deadline_ns || deadline < b->deadline_ns)) {
            if (b->timer > 0)
                loop_timer_cancel(c->loop, b->timer);
            b->deadline_ns = deadline;
            b->timer = loop_timer_at(c->loop, deadline, s_on_deadline, c);
        }
        if (b->count == c->world)
            s_send_barrier_done(c, b, PLAUNCH__BARRIER_DONE__STATUS__OK, -1, -1);
    }
    /* Over for every rank: the key may be used again for the next round. */
    if (b->count == c->world)
        s_barrier_remove(c, (int)(b - c->barriers));
}

void coord_services_on_msg(coord_services_t *c, int peer, const wire_msg_t *m)
{
    const char *key = m->body_case == WIRE_NCCL_ID_PUT   ? m->nccl_id_put->key
                      : m->body_case == WIRE_NCCL_ID_GET ? m->nccl_id_get->key
                      : m->body_case == WIRE_BARRIER     ? m->barrier->key : "";
    uint32_t rank = m->body_case == WIRE_NCCL_ID_PUT   ? m->nccl_id_put->rank
                    : m->body_case == WIRE_NCCL_ID_GET ? m->nccl_id_get->rank
                    : m->body_case == WIRE_BARRIER     ? m->barrier->rank : 0;
    if (m->generation != c->generation) {
        s_refuse(c, peer, PLAUNCH__REFUSE__CODE__STALE_GENERATION, m->body_case, key, rank,
                 "request from generation %u; the job is in generation %u", m->generation, c->generation);
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
