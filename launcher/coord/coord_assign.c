/* coord_assign: the world of a generation: the coordinator's state, who is a member, when the world is complete
 * (every live member back; MAX nodes, or MIN after a last call), deterministic node ranks, the ASSIGN to each and
 * the census of sessions as it starts (docs/design.md, "The fan-out tree"). */
#include "launcher/coord/coord_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/job/joblayout.h"
#include "common/log.h"

static const char *s_state_names[] = { "rendezvous", "running", "restarting", "ending", "done" };

void coord_assign_set_state(coord_server_t *cs, enum cs_state st)
{
    if (cs->state != st)
        log_debug("coordinator: %s -> %s", s_state_names[cs->state], s_state_names[st]);
    cs->state = st;
}

int coord_assign_members(coord_server_t *cs, uint32_t gen)
{
    return coord_members_count(cs, gen);
}

int coord_assign_live(coord_server_t *cs)
{
    return coord_members_live(cs);
}

void coord_assign_broadcast(coord_server_t *cs, const wire_msg_t *m)
{
    size_t len;
    void *buf = coord_transport_encode(cs, -1, m, &len); /* once, not once per node */
    /* nodes behind a relay first: their relay's own copy (a BYE ends it) then leaves after theirs */
    for (int behind = 1; behind >= 0; behind--)
        for (int i = 0; buf && i < cs->npeers; i++)
            if (cs->peers[i].used && cs->peers[i].st == PS_MEMBER && (cs->peers[i].via != 0) == behind)
                coord_transport_send_encoded(cs, i, buf, len);
    free(buf);
}

/* Orders members for rank assignment: requested ranks first, the rest by address, host name, pid. */
static int s_cmp_peer(const void *a, const void *b)
{
    const struct peer *pa = *(struct peer *const *)a, *pb = *(struct peer *const *)b;
    int c = strcmp(pa->addr, pb->addr);
    if (c)
        return c;
    c = strcmp(pa->host, pb->host);
    return c ? c : (pa->pid > pb->pid) - (pa->pid < pb->pid);
}

/* Who runs when more members are here than ranks (spares): healthy before swapped-out ones, nodes that asked
 * for no spare's rank before those that did (--node-rank >= N), then join order. */
static int s_cmp_pick(const void *a, const void *b)
{
    const struct peer *pa = *(struct peer *const *)a, *pb = *(struct peer *const *)b;
    if (pa->suspect != pb->suspect)
        return pa->suspect - pb->suspect;
    int sa = pa->req_rank >= 0, sb = pb->req_rank >= 0; /* left for this pass: a rank of a spare, or taken */
    if (sa != sb)
        return sa - sb;
    return (pa->seq > pb->seq) - (pa->seq < pb->seq);
}

/* Node ranks 0..n-1: requested ones first; with spares, each survivor keeps the rank it had (so a spare takes
 * exactly the lost node's); then the others in address order (deterministic whatever order they joined in; a
 * sort, since an insertion sort of 16,384 members took seconds). by_rank[n] gets each; members beyond n stand by. */
static int s_rank_members(coord_server_t *cs, int n, struct peer **by_rank)
{
    int joined = coord_assign_members(cs, cs->generation), nrest = 0, holes = 0;
    struct peer **rest = malloc((size_t)(joined ? joined : 1) * sizeof *rest);
    int sticky = cs->job->opt.spares > 0;
    if (!rest)
        return -1;
    memset(by_rank, 0, (size_t)n * sizeof *by_rank);
    for (int pass = 0; pass < 1 + sticky; pass++)
        for (int i = 0; i < cs->npeers; i++) {
            struct peer *p = &cs->peers[i];
            if (!p->used || p->st != PS_MEMBER || p->joined_gen != (int)cs->generation)
                continue;
            int want = pass == 0 ? p->req_rank : p->last_rank;
            if (pass == 0)
                p->node_rank = -1;
            if (p->node_rank < 0 && !p->suspect && want >= 0 && want < n && !by_rank[want]) {
                by_rank[want] = p;
                p->node_rank = want;
            }
        }
    for (int i = 0; i < cs->npeers; i++) {
        struct peer *p = &cs->peers[i];
        if (p->used && p->st == PS_MEMBER && p->joined_gen == (int)cs->generation && p->node_rank < 0 &&
            nrest < joined)
            rest[nrest++] = p;
    }
    for (int r = 0; r < n; r++)
        holes += !by_rank[r];
    if (nrest > holes) /* spares: who runs */
        qsort(rest, (size_t)nrest, sizeof *rest, s_cmp_pick);
    qsort(rest, (size_t)(nrest < holes ? nrest : holes), sizeof *rest, s_cmp_peer);
    for (int r = 0, k = 0; r < n && k < nrest; r++)
        if (!by_rank[r]) {
            by_rank[r] = rest[k++];
            by_rank[r]->node_rank = r;
        }
    free(rest);
    return 0;
}

/* The tables every node needs only for PADDLE_TRAINER_ENDPOINTS (every node's size and address, every rank's
 * port); NULL tables when the job is too big for them to travel (WIRE_TABLES_MAX). 0, or -1 out of memory. */
struct s_tables {
    uint32_t *sizes, *ports;
    char **addrs;
};

static int s_tables(struct peer **by_rank, int n, uint32_t world, struct s_tables *t)
{
    *t = (struct s_tables){ 0 };
    if ((uint64_t)n * world > WIRE_TABLES_MAX)
        return 0;
    t->sizes = malloc((size_t)n * sizeof *t->sizes);
    t->addrs = malloc((size_t)n * sizeof *t->addrs);
    t->ports = malloc((size_t)(world ? world : 1) * sizeof *t->ports);
    if (!t->sizes || !t->addrs || !t->ports)
        return -1;
    for (int r = 0, k = 0; r < n; r++) {
        t->sizes[r] = by_rank[r]->nproc;
        t->addrs[r] = by_rank[r]->addr;
        for (uint32_t l = 0; l < by_rank[r]->nproc; l++)
            t->ports[k++] = by_rank[r]->ports[l];
    }
    return 0;
}

/* A member that takes a rank after standing by: the swap, logged with its time from the loss that caused it, and
 * recorded in the job's model (the status view, the ledger, the metrics and the end-of-job line read it there). */
static void s_promote(coord_server_t *cs, struct peer *p, int r)
{
    struct coord_members *m = &cs->members;
    double after = -1;
    coord_members_set_spare(cs, (int)(p - cs->peers), 0);
    if (m->lost_ns) {
        after = (double)(loop_now_ns() - m->lost_ns) / 1e9;
        m->lost_ns = 0;
    }
    log_warn("generation %u: spare %s (%s) takes node rank %d, %.3f s after the node was lost or swapped out",
             cs->generation, p->host, p->addr, r, after > 0 ? after : 0);
    gp_spare_swap(cs->gp, cs->generation, r, p->host, after);
}

void coord_assign_standby(coord_server_t *cs, int all)
{
    int k = 0;
    for (int i = 0; i < cs->npeers; i++) {
        struct peer *p = &cs->peers[i];
        if (!p->used || p->st != PS_MEMBER || p->joined_gen != (int)cs->generation || p->node_rank >= 0)
            continue;
        if (p->spare && !all && ++k) /* told already in this generation */
            continue;
        Plaunch__Report rep;
        Plaunch__Standby sb = PLAUNCH__STANDBY__INIT;
        wire_msg_t m;
        coord_members_set_spare(cs, i, 1);
        p->last_rank = -1;
        p->byed = 0;
        p->last_heard_ns = loop_now_ns();
        sb.spare = (uint32_t)++k;
        sb.spares = (uint32_t)cs->job->opt.spares;
        sb.nnodes = (uint32_t)cs->job->opt.nnodes;
        sb.swapped_out = p->suspect != 0;
        log_info("  spare %d: %s (%s) stands by%s", k, p->host, p->addr,
                 p->suspect ? " (swapped out: its workers failed twice in a row)" : "");
        wire_report_init(&m, &rep, cs->job_id, cs->generation, WIRE_R_STANDBY, &sb);
        coord_transport_send(cs, i, &m);
    }
}

/* Who holds a session where as a generation starts: logged, and kept for coord_server_census. */
static void s_census(coord_server_t *cs)
{
    struct coord_tree *t = &cs->tree;
    struct coord_census c = { .generation = cs->generation, .redirects = t->redirects };
    struct joblayout l;
    const struct opts *o = &cs->job->opt;
    if (cs->state != CS_RUNNING || t->census_gen == cs->generation + 1)
        return;
    t->census_gen = cs->generation + 1;
    joblayout_plan(&l, o->nnodes + o->spares, o->relay_fanout); /* spares hold sessions like the others */
    for (int i = 1; i < cs->npeers; i++) {
        const struct peer *p = &cs->peers[i];
        if (!p->used || p->st != PS_MEMBER || p->local)
            continue;
        if (p->via) {
            c.behind++;
            continue;
        }
        c.direct++;
        c.relays += p->relay >= 1;
        c.fallback += t->ranked && p->req_rank >= 0 && joblayout_parent(&l, p->req_rank) >= 1;
    }
    t->census = c;
    log_info("coordinator: census of generation %u: %d session%s here (%d relay%s, %d other node%s), %d node%s "
             "behind relays, %d fell back from their relay, %ld REDIRECT%s sent", c.generation, c.direct,
             c.direct == 1 ? "" : "s", c.relays, c.relays == 1 ? "" : "s", c.direct - c.relays,
             c.direct - c.relays == 1 ? "" : "s", c.behind, c.behind == 1 ? "" : "s", c.fallback, c.redirects,
             c.redirects == 1 ? "" : "s");
}

static void s_assign(coord_server_t *cs)
{
    int n = coord_assign_members(cs, cs->generation);
    n = n < cs->job->opt.nnodes ? n : cs->job->opt.nnodes; /* the rest are spares */
    struct peer **by_rank = malloc((size_t)(n ? n : 1) * sizeof *by_rank);
    struct s_tables t = { 0 };
    uint32_t world = 0;
    coord_transport_rendezvous_deadline(cs, 0);
    coord_transport_last_call(cs, -1);
    if (by_rank && s_rank_members(cs, n, by_rank) == 0)
        for (int r = 0; r < n; r++)
            world += by_rank[r]->nproc;
    if (!by_rank || s_tables(by_rank, n, world, &t) < 0) {
        free(by_rank);
        free(t.sizes), free(t.addrs), free(t.ports);
        char text[96];
        snprintf(text, sizeof text, "the coordinator is out of memory for the world of %d nodes", n);
        cs->tr.ev.fatal(cs, text); /* up through the handlers: coord_end.c is above this floor */
        return;
    }
    cs->world = (int)world;
    cs->gen_ns = loop_now_ns();
    coord_services_set_generation(cs->services, cs->generation, world);
    log_info("generation %u: %d node%s, %u rank%s%s", cs->generation, n, n == 1 ? "" : "s", world,
             world == 1 ? "" : "s", t.sizes ? "" : " (ASSIGN without the tables of every node: too big a job)");
    if (cs->durable)
        cs->durable(cs->durable_arg, cs->generation, coord_verdict_used(&cs->verdict), n);
    uint32_t first = 0;
    gp_gen_begin(cs->gp, cs->generation, (int)world, n, loop_now_ns());
    for (int r = 0; r < n; r++) {
        struct peer *p = by_rank[r];
        gp_node_set(cs->gp, r, p->host, (int)first, (int)p->nproc, GP_NODE_RUNNING, loop_now_ns());
        Plaunch__Assign a = PLAUNCH__ASSIGN__INIT;
        wire_msg_t m;
        a.node_rank = (uint32_t)r;
        a.nnodes = (uint32_t)n;
        a.first_rank = first;
        a.world_size = world;
        a.local_world_size = p->nproc;
        a.n_local_ports = p->nproc;
        a.local_ports = p->ports;
        if (t.sizes) {
            a.n_local_world_sizes = (size_t)n;
            a.local_world_sizes = t.sizes;
            a.n_node_addrs = (size_t)n;
            a.node_addrs = t.addrs;
            a.n_endpoint_ports = world;
            a.endpoint_ports = t.ports;
        }
        a.master_addr = by_rank[0]->addr;
        a.master_port = by_rank[0]->master_port;
        a.restart_count = cs->generation;
        a.max_restarts = (uint32_t)cs->job->opt.max_restarts;
        a.heartbeat_interval_ms = opts_ms(cs->job->opt.heartbeat);
        a.heartbeat_timeout_ms = opts_ms(cs->job->opt.heartbeat_timeout);
        log_info("  node %d: %s (%s), ranks %u-%u%s", r, p->host, p->addr, first, first + p->nproc - 1,
                 p->req_rank >= 0 ? "" : " (rank assigned)");
        if (p->spare)
            s_promote(cs, p, r);
        p->suspect = 0; /* it runs: its next failures are judged afresh */
        p->last_rank = r;
        wire_init(&m, cs->job_id, cs->generation, WIRE_ASSIGN, &a);
        p->byed = 0;
        p->last_heard_ns = loop_now_ns(); /* heartbeat deadlines count from the start of the generation */
        coord_transport_send(cs, (int)(p - cs->peers), &m);
        first += p->nproc;
    }
    free(by_rank);
    free(t.sizes), free(t.addrs), free(t.ports);
    coord_assign_standby(cs, 1);
    cs->bye_cursor = 0; /* every BYE is counted afresh */
    coord_assign_set_state(cs, CS_RUNNING);
    s_census(cs); /* who holds a session where, as the generation starts */
}

/* A node that was a member comes back on a new session (its link broke): the job goes on. */

/* After a JOIN or a loss: is the world of this generation complete? Every live member must be back; then the
 * job starts at MAX nodes at once, or, elastic and at least MIN, after a last call for stragglers (first
 * rendezvous only: after a restart the survivors go on without waiting). */
void coord_assign_check_ready(coord_server_t *cs)
{
    const struct opts *o = &cs->job->opt;
    if (cs->state != CS_RENDEZVOUS && cs->state != CS_RESTARTING)
        return;
    int joined = coord_assign_members(cs, cs->generation);
    if (joined == 0 || joined < coord_assign_live(cs))
        return;
    int resumed = cs->resume_expect > 0 && joined >= cs->resume_expect; /* a takeover: every node alive is back */
    if (joined >= o->nnodes || (joined >= o->nnodes_min && (!cs->wait_for_more || resumed))) {
        s_assign(cs);
    } else if (joined >= o->nnodes_min && cs->tr.last_call_timer <= 0) {
        log_info("%d of %d-%d nodes here: starting in %d ms unless more join", joined, o->nnodes_min, o->nnodes,
                 CS_LAST_CALL_MS);
        coord_transport_last_call(cs, CS_LAST_CALL_MS);
    }
}

void coord_assign_last_call(coord_server_t *cs)
{
    const struct opts *o = &cs->job->opt;
    int joined = coord_assign_members(cs, cs->generation);
    if ((cs->state == CS_RENDEZVOUS || cs->state == CS_RESTARTING) && joined >= o->nnodes_min &&
        joined == coord_assign_live(cs))
        s_assign(cs);
}
