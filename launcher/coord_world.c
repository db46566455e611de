/* coord_world: the coordinator's job logic: membership (JOIN), deterministic node ranks and the world of a
 * generation (ASSIGN), failures and lost nodes (STOP, restart or end), and the end of the job (BYE). */
#include "coord_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <time.h>

#include "log.h"

static const char *s_state_names[] = { "rendezvous", "running", "restarting", "ending", "done" };

static void s_set_state(coord_server_t *cs, enum cs_state st)
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

static int s_members(coord_server_t *cs, uint32_t gen)
{
    int n = 0;
    for (int i = 0; i < cs->npeers; i++)
        n += cs->peers[i].used && cs->peers[i].st == PS_MEMBER && cs->peers[i].joined_gen == (int)gen;
    return n;
}

/* Sends m to every member of the current generation. */
static void s_broadcast(coord_server_t *cs, const wire_msg_t *m)
{
    for (int i = 0; i < cs->npeers; i++)
        if (cs->peers[i].used && cs->peers[i].st == PS_MEMBER)
            cs_send(cs, i, m);
}

void cw_stop_all(coord_server_t *cs, int reason, int sig, const char *text)
{
    Plaunch__Stop st = PLAUNCH__STOP__INIT;
    wire_msg_t m;
    st.reason = reason;
    st.signal = (uint32_t)sig;
    st.grace_s = (uint32_t)cs->job->opt.grace;
    st.text = (char *)text;
    wire_init(&m, cs->job_id, cs->generation, WIRE_STOP, &st);
    if (cs->state == CS_RENDEZVOUS || cs->state == CS_RUNNING)
        s_set_state(cs, reason == PLAUNCH__STOP__REASON__RESTART ? CS_RESTARTING : CS_ENDING);
    s_broadcast(cs, &m);
}

/* The job is over for everyone: tell each member its exit status. */
static void s_finish(coord_server_t *cs)
{
    Plaunch__Bye bye = PLAUNCH__BYE__INIT;
    wire_msg_t m;
    int status = cs->status_set ? cs->job_status : 0;
    if (!cs->status_set)
        for (int i = 0; i < cs->npeers; i++)
            if (cs->peers[i].used && cs->peers[i].byed && cs->peers[i].bye_status && !status)
                status = cs->peers[i].bye_status;
    if (status != 0)
        log_block(cs->failure[0] ? cs->failure : "plaunch: the job failed\n", 1);
    log_info("job %s over: exit status %d", cs->job_id, status);
    bye.exit_status = (uint32_t)status;
    wire_init(&m, cs->job_id, cs->generation, WIRE_BYE, &bye);
    s_set_state(cs, CS_DONE);
    s_broadcast(cs, &m);
}

/* Ends the job when every member has reported that its workers are gone. */
static void s_maybe_finish(coord_server_t *cs)
{
    if (cs->state == CS_DONE || cs->state == CS_RESTARTING || cs->state == CS_RENDEZVOUS)
        return;
    for (int i = 0; i < cs->npeers; i++)
        if (cs->peers[i].used && cs->peers[i].st == PS_MEMBER && !cs->peers[i].byed)
            return;
    s_finish(cs);
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
    int n = cs->job->opt.nnodes, idx[WIRE_MAX_NODES], nidx = 0;
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
        a.heartbeat_interval_ms = (uint32_t)(cs->job->opt.heartbeat * 1000);
        a.heartbeat_timeout_ms = (uint32_t)(cs->job->opt.heartbeat_timeout * 1000);
        log_info("  node %d: %s (%s), ranks %u-%u%s", r, p->host, p->addr, first, first + p->nproc - 1,
                 p->req_rank >= 0 ? "" : " (rank assigned)");
        wire_init(&m, cs->job_id, cs->generation, WIRE_ASSIGN, &a);
        p->byed = 0;
        cs_send(cs, (int)(p - cs->peers), &m);
        first += p->nproc;
    }
    free(ports);
    s_set_state(cs, CS_RUNNING);
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
        struct peer *p = &cs->peers[peer];
        /* keep the membership, take the new session */
        unsigned char rid[CS_MAX_RID];
        size_t rid_len = p->rid_len;
        tls_chan_t *ch = p->ch;
        char from[80];
        memcpy(rid, p->rid, rid_len);
        snprintf(from, sizeof from, "%s", p->from);
        p->ch = NULL;
        p->used = 0;
        memcpy(o->rid, rid, rid_len);
        o->rid_len = rid_len;
        if (o->ch)
            tls_chan_destroy(&o->ch);
        o->ch = ch;
        snprintf(o->from, sizeof o->from, "%s", from);
        o->last_heard_ns = loop_now_ns();
        log_warn("node %d (%s) reconnected; generation %u goes on", o->node_rank, o->host, cs->generation);
        return 1;
    }
    return 0;
}

static void s_on_join(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    struct peer *p = &cs->peers[peer];
    const Plaunch__Join *j = m->join;
    char text[1024];
    if (s_rejoin(cs, peer, m))
        return;
    if (p->st == PS_MEMBER && cs->state == CS_RESTARTING) {
        /* a member coming back for the next generation, with fresh ports */
    } else if (cs->state != CS_RENDEZVOUS) {
        snprintf(text, sizeof text, "job %s already runs with %d nodes; start a new job or raise --nnodes",
                 cs->job_id, cs->job->opt.nnodes);
        log_warn("refused %s (%s): %s", j->hostname, p->from, text);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__FULL, text);
        return;
    } else if (s_members(cs, cs->generation) >= cs->job->opt.nnodes) {
        snprintf(text, sizeof text, "all %d places of job %s are taken", cs->job->opt.nnodes, cs->job_id);
        log_warn("refused %s (%s): %s", j->hostname, p->from, text);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__FULL, text);
        return;
    }
    if (j->requested_node_rank >= cs->job->opt.nnodes) {
        snprintf(text, sizeof text, "--node-rank %d is outside 0..%d", j->requested_node_rank, cs->job->opt.nnodes - 1);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, text);
        return;
    }
    for (int i = 0; i < cs->npeers && j->requested_node_rank >= 0; i++) {
        struct peer *o = &cs->peers[i];
        if (i != peer && o->used && o->st == PS_MEMBER && o->req_rank == j->requested_node_rank) {
            snprintf(text, sizeof text, "node rank %d is already taken by %s (%s)", j->requested_node_rank, o->host,
                     o->addr);
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
    p->joined_gen = (int)cs->generation;
    p->byed = 0;
    int have = s_members(cs, cs->generation);
    log_info("node %s (%s, %u worker%s) joined: %d of %d", p->host, p->addr, p->nproc, p->nproc == 1 ? "" : "s",
             have, cs->job->opt.nnodes);
    if (have == cs->job->opt.nnodes)
        s_assign(cs);
}

static void s_record_failure(coord_server_t *cs, int peer, const Plaunch__WorkerExit *x)
{
    struct peer *p = &cs->peers[peer];
    char how[96], when[40], tail[1400] = "";
    if (x->signal)
        snprintf(how, sizeof how, "killed by signal %u (SIG%s)", x->signal, sigabbrev_np((int)x->signal));
    else
        snprintf(how, sizeof how, "exit code %u", x->exit_code);
    time_t t = (time_t)(x->exit_time_unix_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    size_t o = 0;
    for (size_t i = 0; i < x->n_log_tail && o + 8 < sizeof tail; i++)
        o += (size_t)snprintf(tail + o, sizeof tail - o, "    | %s\n", x->log_tail[i]);
    char logpath[PATH_MAX + 64];
    if (p->local)
        snprintf(logpath, sizeof logpath, "%s/workerlog.%u", cs->job->log_dir, x->global_rank);
    else
        snprintf(logpath, sizeof logpath, "workerlog.%u in the --log-dir of %s", x->global_rank, p->host);
    snprintf(cs->failure, sizeof cs->failure,
             "plaunch: ===== job %s failed: root cause =====\n"
             "  first failure : rank %u (local rank %u) on node %d, %s (%s), generation %u\n"
             "  pid           : %u\n  status        : %s\n  time          : %s, after %.3f s of running\n"
             "  log           : %s\n"
             "  last lines of its log:\n%s",
             cs->job_id, x->global_rank, x->local_rank, p->node_rank, p->host, p->addr, cs->generation, x->pid, how,
             when, (double)x->runtime_ms / 1000, logpath, tail[0] ? tail : "    (empty)\n");
    cs->job_status = x->signal ? 128 + (int)x->signal : (int)x->exit_code;
    cs->status_set = 1;
}

static void s_on_worker_exit(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    const Plaunch__WorkerExit *x = m->worker_exit;
    struct peer *p = &cs->peers[peer];
    if (x->exit_code == 0 && x->signal == 0)
        return;
    if (cs->state != CS_RUNNING || m->generation != cs->generation) {
        log_info("rank %u on node %d (%s) ended by the stop: %s %u", x->global_rank, p->node_rank, p->host,
                 x->signal ? "signal" : "exit code", x->signal ? x->signal : x->exit_code);
        return; /* an effect of the stop already under way */
    }
    if (cs->job->multi)
        log_warn("rank %u on node %d (%s) failed: %s %u", x->global_rank, p->node_rank, p->host,
                 x->signal ? "signal" : "exit code", x->signal ? x->signal : x->exit_code);
    int restartable = !(x->signal == 0 && (x->exit_code == 126 || x->exit_code == 127));
    if (cs->restarts_left > 0 && restartable) {
        cs->restarts_left--;
        log_warn("restarting the job on every node: generation %u (restart %u of %d)", cs->generation + 1,
                 cs->generation + 1, cs->job->opt.max_restarts);
        cs->generation++; /* first: members come back for the new generation */
        cw_stop_all(cs, PLAUNCH__STOP__REASON__RESTART, 0, "a worker failed: restarting the job");
        return;
    }
    s_record_failure(cs, peer, x);
    if (cs->job->opt.max_restarts > 0 && restartable)
        log_error("restart budget exhausted (%d restart%s)", cs->job->opt.max_restarts,
                  cs->job->opt.max_restarts == 1 ? "" : "s");
    cw_stop_all(cs, PLAUNCH__STOP__REASON__WORKER_FAILED, 0, "a worker failed: the job ends");
}

void cw_on_message(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    struct peer *p = &cs->peers[peer];
    char err[512];
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, cs->job_id, err, sizeof err) < 0) {
        log_warn("refused %s (%s): %s", p->host[0] ? p->host : "an agent", p->from, err);
        s_refuse(cs, peer, m->protocol_version != WIRE_PROTOCOL_VERSION ? PLAUNCH__REFUSE__CODE__BAD_VERSION
                                                                        : PLAUNCH__REFUSE__CODE__BAD_JOB, err);
        cs_drop_peer(cs, peer, NULL);
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
        s_on_worker_exit(cs, peer, m);
        break;
    case WIRE_BYE:
        p->byed = 1;
        p->bye_status = (int)m->bye->exit_status;
        log_info("node %d (%s): workers done, status %d", p->node_rank, p->host, p->bye_status);
        if (p->bye_status != 0 && !cs->status_set) {
            cs->job_status = p->bye_status;
            cs->status_set = 1;
        }
        s_maybe_finish(cs);
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

void cw_peer_lost(coord_server_t *cs, int peer, const char *why)
{
    struct peer *p = &cs->peers[peer];
    int member = p->st == PS_MEMBER;
    if (!member) {
        cs_drop_peer(cs, peer, why);
        return;
    }
    log_error("node %d (%s, %s) lost: %s", p->node_rank, p->host, p->addr, why);
    if (cs->state == CS_RENDEZVOUS) {
        cs_drop_peer(cs, peer, NULL);
        return;
    }
    if (!cs->status_set) {
        snprintf(cs->failure, sizeof cs->failure,
                 "plaunch: ===== job %s failed: root cause =====\n"
                 "  node %d (%s, %s) was lost in generation %u: %s\n",
                 cs->job_id, p->node_rank, p->host, p->addr, cs->generation, why);
        cs->job_status = 125;
        cs->status_set = 1;
    }
    cs_drop_peer(cs, peer, NULL);
    cw_stop_all(cs, PLAUNCH__STOP__REASON__NODE_LOST, 0, "a node was lost: the job ends");
    s_maybe_finish(cs);
}

void cw_rendezvous_timeout(coord_server_t *cs)
{
    int have = s_members(cs, cs->generation);
    char text[256];
    snprintf(text, sizeof text, "only %d of %d nodes joined within --rdzv-timeout %g s", have, cs->job->opt.nnodes,
             cs->job->opt.rdzv_timeout);
    log_error("%s; check that every node runs plaunch with --master pointing here and the same credentials", text);
    snprintf(cs->failure, sizeof cs->failure, "plaunch: job %s failed: %s\n", cs->job_id, text);
    cs->job_status = 125;
    cs->status_set = 1;
    cw_stop_all(cs, PLAUNCH__STOP__REASON__ERROR, 0, text);
    s_finish(cs);
}
