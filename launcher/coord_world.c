/* coord_world: the coordinator's membership logic: JOIN, who is expected back after a restart, elastic
 * growth and last calls, deterministic node ranks and the world of a generation (ASSIGN). */
#include "coord_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *s_state_names[] = { "rendezvous", "running", "restarting", "ending", "done" };

void cw_set_state(coord_server_t *cs, enum cs_state st)
{
    if (cs->state != st)
        log_debug("coordinator: %s -> %s", s_state_names[cs->state], s_state_names[st]);
    cs->state = st;
}

static void s_refuse(coord_server_t *cs, int peer, int code, const char *text)
{
    Plaunch__Refuse r = PLAUNCH__REFUSE__INIT;
    wire_msg_t m;
    r.code = code;
    r.text = (char *)text;
    wire_init(&m, cs->job_id, cs->generation, WIRE_REFUSE, &r);
    cs_send(cs, peer, &m);
}

int cw_members(coord_server_t *cs, uint32_t gen)
{
    int n = 0;
    for (int i = 0; i < cs->npeers; i++)
        n += cs->peers[i].used && cs->peers[i].st == PS_MEMBER && cs->peers[i].joined_gen == (int)gen;
    return n;
}

/* Members, whatever generation they last joined for (after a restart some are still on their way back). */
static int s_live(coord_server_t *cs)
{
    int n = 0;
    for (int i = 0; i < cs->npeers; i++)
        n += cs->peers[i].used && cs->peers[i].st == PS_MEMBER;
    return n;
}

void cw_broadcast(coord_server_t *cs, const wire_msg_t *m)
{
    for (int i = 0; i < cs->npeers; i++)
        if (cs->peers[i].used && cs->peers[i].st == PS_MEMBER)
            cs_send(cs, i, m);
}

static void s_assign(coord_server_t *cs);

/* After a JOIN or a loss: is the world of this generation complete? Every live member must be back; then the
 * job starts at MAX nodes at once, or, elastic and at least MIN, after a last call for stragglers (first
 * rendezvous only: after a restart the survivors go on without waiting). */
void cw_check_ready(coord_server_t *cs)
{
    const struct opts *o = &cs->job->opt;
    if (cs->state != CS_RENDEZVOUS && cs->state != CS_RESTARTING)
        return;
    int joined = cw_members(cs, cs->generation);
    if (joined == 0 || joined < s_live(cs))
        return;
    if (joined >= o->nnodes || (joined >= o->nnodes_min && !cs->wait_for_more)) {
        s_assign(cs);
    } else if (joined >= o->nnodes_min && cs->last_call_timer <= 0) {
        log_info("%d of %d-%d nodes here: starting in %d ms unless more join", joined, o->nnodes_min, o->nnodes,
                 CS_LAST_CALL_MS);
        cs_last_call(cs, CS_LAST_CALL_MS);
    }
}

void cw_last_call(coord_server_t *cs)
{
    const struct opts *o = &cs->job->opt;
    int joined = cw_members(cs, cs->generation);
    if ((cs->state == CS_RENDEZVOUS || cs->state == CS_RESTARTING) && joined >= o->nnodes_min &&
        joined == s_live(cs))
        s_assign(cs);
}

/* Orders members for rank assignment: requested ranks first, the rest by address, host name, pid. */
static int s_cmp_peer(const void *a, const void *b, void *arg)
{
    const struct peer *pa = a, *pb = b;
    int c = strcmp(pa->addr, pb->addr);
    if (c)
        return c;
    c = strcmp(pa->host, pb->host);
    return c ? c : (pa->pid > pb->pid) - (pa->pid < pb->pid);
}

static void s_assign(coord_server_t *cs)
{
    int n = cw_members(cs, cs->generation), idx[WIRE_MAX_NODES], nidx = 0;
    cs_rendezvous_deadline(cs, 0);
    cs_last_call(cs, -1);
    struct peer *by_rank[WIRE_MAX_NODES] = { 0 };
    for (int i = 0; i < cs->npeers; i++) {
        struct peer *p = &cs->peers[i];
        if (!p->used || p->st != PS_MEMBER || p->joined_gen != (int)cs->generation)
            continue;
        p->node_rank = -1;
        if (p->req_rank >= 0 && p->req_rank < n && !by_rank[p->req_rank]) {
            by_rank[p->req_rank] = p;
            p->node_rank = p->req_rank;
        } else {
            idx[nidx++] = i;
        }
    }
    /* insertion sort of the rest: deterministic whatever order they joined in */
    for (int a = 1; a < nidx; a++)
        for (int b = a; b > 0 && s_cmp_peer(&cs->peers[idx[b - 1]], &cs->peers[idx[b]], NULL) > 0; b--) {
            int t = idx[b];
            idx[b] = idx[b - 1];
            idx[b - 1] = t;
        }
    for (int r = 0, k = 0; r < n && k < nidx; r++)
        if (!by_rank[r]) {
            by_rank[r] = &cs->peers[idx[k++]];
            by_rank[r]->node_rank = r;
        }
    uint32_t local_sizes[WIRE_MAX_NODES], world = 0;
    char *addrs[WIRE_MAX_NODES];
    for (int r = 0; r < n; r++) {
        local_sizes[r] = by_rank[r]->nproc;
        addrs[r] = by_rank[r]->addr;
        world += by_rank[r]->nproc;
    }
    uint32_t *ports = calloc(world ? world : 1, sizeof *ports);
    if (!ports)
        return;
    for (int r = 0, k = 0; r < n; r++)
        for (uint32_t l = 0; l < by_rank[r]->nproc; l++)
            ports[k++] = by_rank[r]->ports[l];
    cs->world = (int)world;
    coord_set_generation(cs->coord, cs->generation, world);
    log_info("generation %u: %d node%s, %u rank%s", cs->generation, n, n == 1 ? "" : "s", world, world == 1 ? "" : "s");
    uint32_t first = 0;
    for (int r = 0; r < n; r++) {
        struct peer *p = by_rank[r];
        Plaunch__Assign a = PLAUNCH__ASSIGN__INIT;
        wire_msg_t m;
        a.node_rank = (uint32_t)r;
        a.nnodes = (uint32_t)n;
        a.first_rank = first;
        a.world_size = world;
        a.n_local_world_sizes = (size_t)n;
        a.local_world_sizes = local_sizes;
        a.master_addr = by_rank[0]->addr;
        a.master_port = by_rank[0]->master_port;
        a.n_node_addrs = (size_t)n;
        a.node_addrs = addrs;
        a.n_endpoint_ports = world;
        a.endpoint_ports = ports;
        a.restart_count = cs->generation;
        a.max_restarts = (uint32_t)cs->job->opt.max_restarts;
        a.heartbeat_interval_ms = opts_ms(cs->job->opt.heartbeat);
        a.heartbeat_timeout_ms = opts_ms(cs->job->opt.heartbeat_timeout);
        log_info("  node %d: %s (%s), ranks %u-%u%s", r, p->host, p->addr, first, first + p->nproc - 1,
                 p->req_rank >= 0 ? "" : " (rank assigned)");
        wire_init(&m, cs->job_id, cs->generation, WIRE_ASSIGN, &a);
        p->byed = 0;
        p->last_heard_ns = loop_now_ns(); /* heartbeat deadlines count from the start of the generation */
        cs_send(cs, (int)(p - cs->peers), &m);
        first += p->nproc;
    }
    free(ports);
    cw_set_state(cs, CS_RUNNING);
}

/* A node that was a member comes back on a new session (its link broke): the job goes on. */
static int s_rejoin(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    const Plaunch__Join *j = m->join;
    for (int i = 0; i < cs->npeers; i++) {
        struct peer *o = &cs->peers[i];
        if (i == peer || !o->used || o->st != PS_MEMBER || o->pid != j->pid || strcmp(o->host, j->hostname) ||
            strcmp(o->addr, j->addr))
            continue;
        cp_move(cs, peer, i); /* keep the membership, take the new session and its connection */
        log_warn("node %d (%s) reconnected; generation %u goes on", o->node_rank, o->host, cs->generation);
        return 1;
    }
    return 0;
}

static void s_on_join(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    struct peer *p = &cs->peers[peer];
    const Plaunch__Join *j = m->join;
    const struct opts *o = &cs->job->opt;
    char text[1024];
    int grow = 0;
    if (s_rejoin(cs, peer, m))
        return;
    if (p->st == PS_MEMBER) {
        if (cs->state != CS_RESTARTING && cs->state != CS_RENDEZVOUS)
            return; /* nothing to do: this member is already in the running generation */
    } else if (cs->state == CS_ENDING || cs->state == CS_DONE) {
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__SHUTTING_DOWN, "the job is ending");
        return;
    } else if (s_live(cs) >= o->nnodes || (cs->state == CS_RUNNING && o->nnodes_min == o->nnodes)) {
        snprintf(text, sizeof text, "job %s already has its %d node%s; start a new job or raise --nnodes", cs->job_id,
                 o->nnodes, o->nnodes == 1 ? "" : "s");
        log_warn("refused %s (%s): %s", j->hostname, p->from, text);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__FULL, text);
        return;
    } else if (cs->state == CS_RUNNING) {
        grow = 1; /* elastic and below MAX: the newcomer joins the next generation */
    }
    if (j->requested_node_rank >= o->nnodes) {
        snprintf(text, sizeof text, "--node-rank %d is outside 0..%d", j->requested_node_rank, o->nnodes - 1);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, text);
        return;
    }
    for (int i = 0; i < cs->npeers && j->requested_node_rank >= 0; i++) {
        struct peer *q = &cs->peers[i];
        if (i != peer && q->used && q->st == PS_MEMBER && q->req_rank == j->requested_node_rank) {
            snprintf(text, sizeof text, "node rank %d is already taken by %s (%s)", j->requested_node_rank, q->host,
                     q->addr);
            log_warn("refused %s (%s): %s", j->hostname, p->from, text);
            s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__RANK_TAKEN, text);
            return;
        }
    }
    uint32_t *ports = malloc(j->n_worker_ports * sizeof *ports);
    if (!ports)
        return;
    memcpy(ports, j->worker_ports, j->n_worker_ports * sizeof *ports);
    free(p->ports);
    p->ports = ports;
    snprintf(p->host, sizeof p->host, "%s", j->hostname);
    snprintf(p->addr, sizeof p->addr, "%s", j->addr);
    p->pid = j->pid;
    p->nproc = j->nproc;
    p->master_port = j->master_port;
    p->req_rank = j->requested_node_rank;
    p->st = PS_MEMBER;
    p->joined_gen = (int)cs->generation + grow;
    p->byed = 0;
    log_info("node %s (%s, %u worker%s) joined for generation %d: %d of %d", p->host, p->addr, p->nproc,
             p->nproc == 1 ? "" : "s", p->joined_gen, cw_members(cs, (uint32_t)p->joined_gen), o->nnodes);
    if (grow) {
        snprintf(text, sizeof text, "node %s (%s) joined: growing to %d nodes", p->host, p->addr, s_live(cs));
        cw_restart(cs, text);
        return;
    }
    cw_check_ready(cs);
}

void cw_on_message(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    struct peer *p = &cs->peers[peer];
    char err[512];
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, cs->job_id, err, sizeof err) < 0) {
        log_warn("refused %s (%s): %s", p->host[0] ? p->host : "an agent", p->from, err);
        s_refuse(cs, peer, m->protocol_version != WIRE_PROTOCOL_VERSION ? PLAUNCH__REFUSE__CODE__BAD_VERSION
                                                                        : PLAUNCH__REFUSE__CODE__BAD_JOB, err);
        cp_drop(cs, peer, NULL);
        return;
    }
    if (m->body_case != WIRE_JOIN && m->body_case != WIRE_HEARTBEAT && p->st != PS_MEMBER) {
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, "JOIN first");
        return;
    }
    switch (m->body_case) {
    case WIRE_JOIN:
        s_on_join(cs, peer, m);
        break;
    case WIRE_HEARTBEAT:
        break;
    case WIRE_WORKER_EXIT:
        cw_on_worker_exit(cs, peer, m);
        break;
    case WIRE_BYE:
        p->byed = 1;
        p->bye_status = (int)m->bye->exit_status;
        log_info("node %d (%s): workers done, status %d", p->node_rank, p->host, p->bye_status);
        if (p->bye_status != 0 && !cs->status_set) {
            cs->job_status = p->bye_status;
            cs->status_set = 1;
        }
        cw_maybe_finish(cs);
        break;
    case WIRE_NCCL_ID_PUT:
    case WIRE_NCCL_ID_GET:
    case WIRE_BARRIER:
        coord_on_msg(cs->coord, peer, m);
        break;
    case WIRE_REFUSE:
        log_warn("node %s refused: %s", p->host, m->refuse->text);
        break;
    default:
        log_warn("unexpected %s from %s", wire_type_name(m->body_case), p->host);
    }
}

