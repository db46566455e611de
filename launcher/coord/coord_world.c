/* coord_world: every message from an agent: JOIN and rejoin (elastic growth, requested ranks), worker exits, BYE,
 * and the job-wide services (services/coord_services.c); the floor below coord_server.c. */
#include "launcher/coord/coord_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static void s_refuse(coord_server_t *cs, int peer, int code, const char *text)
{
    Plaunch__Refuse r;
    wire_msg_t m;
    wire_refuse_init(&m, &r, cs->job_id, cs->generation, code, text, 0, NULL, 0);
    coord_transport_send(cs, peer, &m);
}

static int s_rejoin(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    const Plaunch__Join *j = m->join;
    int i = coord_members_find(cs, j->hostname, j->pid, j->addr, peer);
    if (i < 0)
        return 0;
    coord_peers_move(cs, peer, i); /* keep the membership, take the new session and its connection */
    log_warn("node %d (%s) reconnected; generation %u goes on", cs->peers[i].node_rank, cs->peers[i].host,
             cs->generation);
    return 1;
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
        gp_mark(cs->gp, GP_TEARDOWN, loop_now_ns()); /* the first node back has stopped its workers */
    } else if (cs->state == CS_ENDING || cs->state == CS_DONE) {
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__SHUTTING_DOWN, "the job is ending");
        return;
    } else if (coord_assign_live(cs) >= o->nnodes + o->spares ||
               (cs->state == CS_RUNNING && o->nnodes_min == o->nnodes && !o->spares)) {
        snprintf(text, sizeof text, "job %s already has its %d node%s%s; start a new job or raise --nnodes%s",
                 cs->job_id, o->nnodes, o->nnodes == 1 ? "" : "s", o->spares ? " and its spares" : "",
                 o->spares ? " or --spares" : "");
        log_warn("refused %s (%s): %s", j->hostname, p->from, text);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__FULL, text);
        return;
    } else if (cs->state == CS_RUNNING) {
        /* elastic and below MAX: the newcomer joins the next generation; else it stands by as a spare */
        grow = o->nnodes_min < o->nnodes && coord_assign_live(cs) - coord_members_spares(cs, 0) < o->nnodes;
    }
    if (j->requested_node_rank >= o->nnodes + o->spares) {
        snprintf(text, sizeof text, "--node-rank %d is outside 0..%d", j->requested_node_rank,
                 o->nnodes + o->spares - 1);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, text);
        return;
    }
    int owner = j->requested_node_rank >= 0 ? coord_members_rank_owner(cs, j->requested_node_rank, peer) : -1;
    if (owner >= 0) {
        const struct peer *q = &cs->peers[owner];
        snprintf(text, sizeof text, "node rank %d is already taken by %s (%s)", j->requested_node_rank, q->host,
                 q->addr);
        log_warn("refused %s (%s): %s", j->hostname, p->from, text);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__RANK_TAKEN, text);
        return;
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
    coord_health_preflight(cs, p->host, j);
    coord_members_set(cs, peer, (int)cs->generation + grow);
    p->byed = 0;
    cs->bye_cursor = 0;
    log_info("node %s (%s, %u worker%s) joined for generation %d%s%s: %d of %d%s", p->host, p->addr, p->nproc,
             p->nproc == 1 ? "" : "s", p->joined_gen, p->via ? " through relay " : "",
             p->via ? cs->peers[p->via].host : "", coord_assign_members(cs, (uint32_t)p->joined_gen), o->nnodes,
             o->spares ? " and its spares" : "");
    coord_relay_consider(cs, peer, j->relay_endpoint); /* the layout's relays; or the first to join directly */
    if (grow) {
        snprintf(text, sizeof text, "node %s (%s) joined: growing to %d nodes", p->host, p->addr, coord_assign_live(cs));
        gp_incident_open(cs->gp, loop_now_ns(), GP_CAUSE_SCALE,
                         &(struct gp_cause_info){ .rank = -1, .node = -1, .host = p->host, .exit_code = -1,
                                                  .text = text });
        coord_end_restart(cs, text);
        return;
    }
    if (cs->state == CS_RUNNING) { /* a spare that came while the job runs */
        coord_assign_standby(cs, 0);
        return;
    }
    coord_assign_check_ready(cs);
}

/* `plaunch status --master`: the live view (the same document as status.json), to a peer that passed the job's
 * TLS handshake; one bounded answer per request, nothing kept. */
static void s_status(coord_server_t *cs, int peer, const Plaunch__StatusRequest *rq)
{
    char *json = gp_status_json(cs->gp, loop_now_ns());
    size_t len = json ? strlen(json) : 0;
    if (!json || len > rq->max_bytes || len > WIRE_MAX_STATUS) {
        char text[160];
        snprintf(text, sizeof text, "the status document is %zu bytes, more than the %u asked for", len,
                 rq->max_bytes);
        s_refuse(cs, peer, PLAUNCH__REFUSE__CODE__BAD_REQUEST, json ? text : "the coordinator is out of memory");
        free(json);
        return;
    }
    Plaunch__StatusAnswer a = PLAUNCH__STATUS_ANSWER__INIT;
    wire_msg_t m;
    a.json.data = (uint8_t *)json;
    a.json.len = len;
    wire_init(&m, cs->job_id, cs->generation, WIRE_STATUS_ANSWER, &a);
    coord_transport_send(cs, peer, &m);
    free(json);
}

void coord_world_on_message(coord_server_t *cs, int peer, const wire_msg_t *m)
{
    struct peer *p = &cs->peers[peer];
    char err[512];
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, cs->job_id, err, sizeof err) < 0) {
        log_warn("refused %s (%s): %s", p->host[0] ? p->host : "an agent", p->from, err);
        s_refuse(cs, peer, m->protocol_version != WIRE_PROTOCOL_VERSION ? PLAUNCH__REFUSE__CODE__BAD_VERSION
                                                                        : PLAUNCH__REFUSE__CODE__BAD_JOB, err);
        coord_peers_drop(cs, peer, NULL);
        return;
    }
    if (m->body_case == WIRE_STATUS_REQUEST) {
        s_status(cs, peer, m->status_request);
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
    case WIRE_WORKER_EXIT: {
        long long best = -1;
        int stepped = coord_hang_stepped(cs, &best);
        coord_end_worker_exit(cs, peer, m, stepped, best);
        break;
    }
    case WIRE_BYE:
        if (p->spare && cs->state != CS_ENDING && cs->state != CS_DONE) { /* stopped by a signal: one spare less */
            log_warn("spare %s (%s) left the job: status %u", p->host, p->addr, m->bye->exit_status);
            coord_peers_drop(cs, peer, NULL);
            break;
        }
        p->byed = 1;
        p->bye_status = (int)m->bye->exit_status;
        log_info("node %d (%s): workers done, status %d", p->node_rank, p->host, p->bye_status);
        if (p->bye_status != 0) /* its workers' status: no root cause of its own (the node's log has it) */
            coord_verdict_fail(&cs->verdict, COORD_VERDICT_TOLD, p->bye_status, NULL);
        coord_end_maybe_finish(cs);
        break;
    case WIRE_NCCL_ID_PUT:
    case WIRE_NCCL_ID_GET:
    case WIRE_BARRIER:
        coord_services_on_msg(cs->services, peer, m);
        break;
    case WIRE_REFUSE:
        log_warn("node %s refused: %s", p->host, m->refuse->text);
        break;
    case WIRE_REPORT:
        switch (m->report->kind_case) {
        case WIRE_R_HEALTH:
            coord_health_add(cs, peer, m->report->health);
            break;
        case WIRE_R_PROGRESS:
            coord_hang_progress(cs, peer, m->generation, m->report->progress);
            break;
        case WIRE_R_STACKS:
            coord_hang_stacks(cs, peer, m->report->stacks);
            break;
        case WIRE_R_STACKS_DONE:
            coord_hang_stacks_done(cs, peer, m->report->stacks_done);
            break;
        case WIRE_R_NODE_STATE:
            coord_goodput_node(cs, peer, m->generation, m->report->node_state);
            break;
        default:
            log_warn("node %s sent a REPORT %s, which a coordinator does not take", p->host,
                     wire_report_name(m->report->kind_case));
        }
        break;
    default:
        log_warn("unexpected %s from %s", wire_type_name(m->body_case), p->host);
    }
}

