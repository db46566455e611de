/* agent_inbox: how this node's agent takes the coordinator's messages: HELLO, ASSIGN (a generation's ranks),
 * STOP, answers for workers, reports (stacks requests, the Health block, the root cause) and the final BYE. */
#include "launcher/agent/agent_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/esc/esc.h"
#include "common/console.h"
#include "launcher/job/jobsetup.h"
#include "common/log.h"
#include "common/net.h"
#include "launcher/supervisor/output.h"

#define AI_DRAIN_TICK_MS 20
#define AI_DRAIN_MS 5000 /* the longest a relay waits after the BYE for its nodes to close their sessions */

/* A relay's nodes had their BYE queued just before the relay's own: each closes its session once it has it. The
 * relay stays until they all did, or for at most AI_DRAIN_MS (and the heartbeat timeout); then the node ends. */
static int s_drain_tick(loop_t *loop, int id, void *arg)
{
    agent_t *ac = arg;
    int left = agent_relay_children(ac);
    ac->drain_timer = 0;
    if (left > 0 && loop_now_ns() < ac->drain_until_ns &&
        (ac->drain_timer = loop_timer_after_ms(loop, AI_DRAIN_TICK_MS, s_drain_tick, ac)) > 0)
        return 0;
    if (left > 0)
        log_warn("the job is over, but %d node%s behind this relay still hold a session: %s learn of the end from "
                 "the heartbeat timeout", left, left == 1 ? "" : "s", left == 1 ? "it may" : "they may");
    supervise_finish(ac->sup, ac->bye_status);
    return 0;
}

static void s_bye(agent_t *ac, int status)
{
    int left = agent_relay_children(ac);
    double bound_s = ac->job->opt.heartbeat_timeout < AI_DRAIN_MS / 1000.0 ? ac->job->opt.heartbeat_timeout
                                                                            : AI_DRAIN_MS / 1000.0;
    agent_proto_set_state(ac, AC_DONE);
    ac->bye_status = status;
    ac->drain_until_ns = loop_now_ns() + (uint64_t)(bound_s * 1e9);
    if (left > 0 && ac->loop && ac->drain_timer <= 0 &&
        (ac->drain_timer = loop_timer_after_ms(ac->loop, AI_DRAIN_TICK_MS, s_drain_tick, ac)) > 0) {
        log_info("the job is over: waiting up to %.1f s for the %d node%s behind this relay to take %s BYE", bound_s,
                 left, left == 1 ? "" : "s", left == 1 ? "its" : "their");
        return;
    }
    if (ac->drain_timer <= 0)
        supervise_finish(ac->sup, status);
}

static int s_apply_assign(agent_t *ac, const wire_msg_t *m)
{
    struct job *job = ac->job;
    const Plaunch__Assign *a = m->assign;
    char err[512];
    if (a->local_world_size != (uint32_t)job->node.nworkers) {
        log_error("the coordinator assigned %u workers to this node, which runs %d", a->local_world_size,
                  job->node.nworkers);
        return -1;
    }
    int first_assign = job->gen.node_rank < 0;
    job->gen.generation = (int)m->generation;
    job->gen.node_rank = (int)a->node_rank;
    job->gen.nnodes = (int)a->nnodes;
    job->gen.rank_base = (int)a->first_rank;
    job->gen.world_size = (int)a->world_size;
    job->gen.master_port = (int)a->master_port;
    snprintf(job->gen.master_addr, sizeof job->gen.master_addr, "%s", a->master_addr);
    /* torch's gloo takes the address its host name resolves to (127.0.1.1 on many hosts), NCCL the first
     * interface that is not loopback: across hosts, both must use the one that reaches node rank 0. */
    char ifname[64] = "";
    if (job->node.multi && net_route_ifname(job->gen.master_addr, ifname, sizeof ifname) == 0 &&
        strcmp(ifname, job->gen.socket_ifname) != 0) {
        snprintf(job->gen.socket_ifname, sizeof job->gen.socket_ifname, "%s", ifname);
        log_info("workers reach MASTER_ADDR %s through interface %s (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME unless "
                 "set)", job->gen.master_addr, ifname);
    }
    free(job->gen.endpoints);
    job->gen.endpoints = NULL;
    if (wire_assign_has_tables(a) && !(job->gen.endpoints = wire_assign_endpoints(a, err, sizeof err))) {
        log_error("bad ASSIGN: %s", err);
        return -1;
    } else if (!job->gen.endpoints && first_assign) {
        log_info("%d nodes x %d ranks: the ASSIGN carries this node's part only; PADDLE_TRAINER_ENDPOINTS is empty",
                 job->gen.nnodes, job->gen.world_size);
    }
    for (int i = 0; i < job->node.nworkers; i++) {
        job->workers[i].rank = job->gen.rank_base + i;
        job->gen.endpoint_ports[i] = (int)a->local_ports[i];
    }
    if (!job->node.multi && jobsetup_pick_ports(job, err, sizeof err) < 0) { /* one node: its ports, here too */
        log_error("%s", err);
        return -1;
    }
    jobsetup_tee(job, &job->opt, err, sizeof err);
    if (output_open_logs(job, err, sizeof err) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (first_assign && job->node.multi && job->opt.node_rank < 0 && !job->opt.quiet) {
        char line[160]; /* through the console: it keeps the status line below the lines */
        int n = snprintf(line, sizeof line, "plaunch: this node is node rank %d of %d (ranks %d-%d of %d)\n",
                         job->gen.node_rank, job->gen.nnodes, job->gen.rank_base, job->gen.rank_base + job->node.nworkers - 1,
                         job->gen.world_size);
        console_put(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    if (job->node.multi)
        log_info("assigned: node rank %d of %d, ranks %d-%d of %d, generation %d, MASTER %s:%d", job->gen.node_rank,
                 job->gen.nnodes, job->gen.rank_base, job->gen.rank_base + job->node.nworkers - 1, job->gen.world_size, job->gen.generation,
                 job->gen.master_addr, job->gen.master_port);
    else
        log_info("assigned: ranks 0-%d, generation %d, MASTER_ADDR=%s MASTER_PORT=%d", job->node.nworkers - 1,
                 job->gen.generation, job->gen.master_addr, job->gen.master_port);
    return 0;
}

/* This node is a spare (--spares): no rank this generation; it waits, watched by heartbeats, for a restart that
 * may give it the rank of a lost or failing node. No workers, no worker logs until then. */
static void s_standby(agent_t *ac, const wire_msg_t *m)
{
    if (ac->st != AC_JOINING && ac->st != AC_RUNNING && ac->st != AC_STANDBY)
        return;
    if (ac->st == AC_RUNNING) /* it ran, and was swapped out for failing: its workers are gone already */
        log_warn("the coordinator swapped this node out (its workers failed twice in a row); it stands by");
    if (ac->st != AC_STANDBY) {
        const Plaunch__Standby *sb = m->report->standby;
        log_info("standing by as a spare (%u of %u) in generation %u of a %u-node job%s: this node takes the rank "
                 "of a lost or failing node", sb->spare, sb->spares, m->generation, sb->nnodes,
                 sb->swapped_out ? " (swapped out)" : "");
        if (!ac->job->opt.quiet && !ac->assigned)
            fprintf(stderr, "plaunch: this node is a spare: it waits to replace a node of the job\n");
    }
    ac->job->gen.generation = (int)m->generation;
    ac->assigned = 1; /* from now on heartbeats decide, as for a node with a rank */
    agent_proto_set_state(ac, AC_STANDBY);
    agent_relay_generation(ac); /* a spare may relay: its heartbeats carry the generation */
}

static void s_on_stop(agent_t *ac, const Plaunch__Stop *st)
{
    ac->stop_reason = st->reason;
    log_info("coordinator: stop (%s)", st->text);
    switch (ac->st) {
    case AC_RUNNING:
        supervise_stop(ac->sup, (int)st->signal);
        break;
    case AC_VERDICT:
    case AC_WAIT_END:
        /* stopped by a signal while the job went on: no next generation on this node */
        if (ac->end_wait_sig && st->reason == PLAUNCH__STOP__REASON__RESTART)
            agent_proto_end_by_signal(ac, ac->end_wait_sig);
        else if (st->reason == PLAUNCH__STOP__REASON__RESTART)
            agent_preflight_restart(ac);
        else if (ac->st == AC_VERDICT)
            agent_proto_send_bye(ac, ac->last_code);
        break;
    case AC_STANDBY: /* a spare: into the next generation's rendezvous, or out with the job */
        if (st->reason == PLAUNCH__STOP__REASON__RESTART) {
            ac->job->gen.generation++; /* the STOP's: it joins the next generation's rendezvous */
            agent_proto_set_state(ac, AC_JOINING);
            agent_proto_send_join(ac);
        } else {
            agent_proto_send_bye(ac, st->reason == PLAUNCH__STOP__REASON__SIGNAL ? 128 + (int)st->signal : 0);
        }
        break;
    case AC_JOINING:
        if (st->reason != PLAUNCH__STOP__REASON__RESTART)
            agent_proto_send_bye(ac, st->reason == PLAUNCH__STOP__REASON__SIGNAL ? 128 + (int)st->signal : 0);
        break;
    default:
        break;
    }
}

/* A REPORT from the coordinator, by kind; one of a kind that travels the other way is logged and dropped. */
static void s_report(agent_t *ac, const wire_msg_t *m)
{
    const Plaunch__Report *r = m->report;
    switch (r->kind_case) {
    case WIRE_R_STACKS_REQUEST: /* the job is hung: where is each of our ranks? */
        agent_stacks_request(ac->stacks, r->stacks_request);
        break;
    case WIRE_R_STANDBY: /* a spare of this generation */
        s_standby(ac, m);
        break;
    case WIRE_R_HEALTH_BLOCK: /* the job's Health block: this node's log keeps it */
        log_block(r->health_block->text, 0);
        break;
    case WIRE_R_SUMMARY: /* the job failed: every node keeps the root cause in its plaunch.log */
        log_block(r->summary->block, 0);
        if (ac->job->opt.quiet)
            break;
        if (r->summary->headline[0]) { /* a cause of one line (the coordinator's plaunch was stopped): said here too */
            char *safe = esc_term_dup(r->summary->headline, 0);
            fprintf(stderr, "%s\n", safe ? safe : "plaunch: the job was stopped");
            free(safe);
        } else {
            fprintf(stderr, "plaunch: the job failed; its root cause is in %s/%s and on the coordinator's terminal\n",
                    ac->job->node.log_dir, ac->job->node.log_name);
        }
        break;
    default:
        log_warn("unexpected REPORT %s from the coordinator", wire_report_name(r->kind_case));
    }
}

void agent_inbox_on_msg(agent_t *ac, const wire_msg_t *m)
{
    char err[512];
    ac->last_heard_ns = loop_now_ns();
    if (m->body_case == WIRE_HELLO) {
        snprintf(ac->coord_host, sizeof ac->coord_host, "%s", m->hello->hostname);
        if (strcmp(m->job_id, ac->job->node.job_id) != 0 && !ac->job_id_given) {
            snprintf(ac->job->node.job_id, sizeof ac->job->node.job_id, "%s", m->job_id);
            agent_ipc_set_job(ac->ipc, m->job_id);
        }
        /* With another --job-id we still JOIN: the coordinator refuses it and both logs say why. */
        if (!ac->heard && ac->job->node.multi)
            log_info("connected to the coordinator on %s (%s)", m->hello->hostname, ac->endpoint);
        else if (!ac->heard)
            log_info("one-node job: the coordinator runs inside this plaunch");
        ac->heard = 1;
        if (ac->preflight_pending && ac->st == AC_CONNECTING)
            ac->join_waiting = 1; /* no JOIN before the GPUs were checked (agent.c sends it) */
        else if (ac->st == AC_CONNECTING || ac->st == AC_JOINING || ac->st == AC_RUNNING || ac->st == AC_STANDBY)
            agent_proto_send_join(ac); /* first contact, or a new session after a broken one */
        return;
    }
    if (m->body_case == WIRE_REFUSE && !m->refuse->request && (ac->st == AC_CONNECTING || ac->st == AC_JOINING)) {
        /* before any HELLO the job id is not known yet: a refusal is the answer whatever its job */
        log_error("the coordinator at %s refused this node: %s", ac->endpoint, m->refuse->text);
        agent_proto_finish(ac, 2);
        return;
    }
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, ac->job->node.job_id, err, sizeof err) < 0) {
        log_error("coordinator: %s", err);
        agent_proto_finish(ac, 2);
        return;
    }
    switch (m->body_case) {
    case WIRE_HEARTBEAT:
        break;
    case WIRE_ASSIGN:
        if (ac->st == AC_RUNNING && (int)m->generation == ac->job->gen.generation)
            break; /* our rejoin after a broken session: the generation goes on */
        if (s_apply_assign(ac, m) < 0) {
            agent_proto_finish(ac, 125);
            break;
        }
        agent_proto_set_state(ac, AC_RUNNING);
        agent_relay_generation(ac);
        ac->stop_reason = 0;
        ac->assigned = 1;
        supervise_start(ac->sup);
        break;
    case WIRE_STOP:
        s_on_stop(ac, m->stop);
        break;
    case WIRE_NCCL_ID:
    case WIRE_BARRIER_DONE:
        agent_ipc_deliver(ac->ipc, m);
        break;
    case WIRE_REFUSE: /* of a worker's request: it goes to that worker */
        agent_ipc_deliver(ac->ipc, m);
        break;
    case WIRE_REPORT:
        s_report(ac, m);
        break;
    case WIRE_RELAY_START:
    case WIRE_RELAYED:
        agent_relay_on_msg(ac, m);
        break;
    case WIRE_BYE:
        log_info("coordinator: the job is over, exit status %u", m->bye->exit_status);
        s_bye(ac, (int)m->bye->exit_status);
        break;
    default:
        log_warn("unexpected %s from the coordinator", wire_type_name(m->body_case));
    }
}
