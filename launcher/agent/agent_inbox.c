/* agent_inbox: how this node's agent takes the coordinator's messages: HELLO, ASSIGN (a generation's ranks),
 * STOP, answers for workers, reports (stacks requests, the Health block, the root cause) and the final BYE. */
#include "agent_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "console.h"
#include "jobsetup.h"
#include "log.h"
#include "net.h"
#include "output.h"

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
    if (a->local_world_size != (uint32_t)job->nworkers) {
        log_error("the coordinator assigned %u workers to this node, which runs %d", a->local_world_size,
                  job->nworkers);
        return -1;
    }
    int first_assign = job->node_rank < 0;
    job->generation = (int)m->generation;
    job->node_rank = (int)a->node_rank;
    job->nnodes = (int)a->nnodes;
    job->rank_base = (int)a->first_rank;
    job->world_size = (int)a->world_size;
    job->master_port = (int)a->master_port;
    snprintf(job->master_addr, sizeof job->master_addr, "%s", a->master_addr);
    /* torch's gloo takes the address its host name resolves to (127.0.1.1 on many hosts), NCCL the first
     * interface that is not loopback: across hosts, both must use the one that reaches node rank 0. */
    char ifname[64] = "";
    if (job->multi && net_route_ifname(job->master_addr, ifname, sizeof ifname) == 0 &&
        strcmp(ifname, job->socket_ifname) != 0) {
        snprintf(job->socket_ifname, sizeof job->socket_ifname, "%s", ifname);
        log_info("workers reach MASTER_ADDR %s through interface %s (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME unless "
                 "set)", job->master_addr, ifname);
    }
    free(job->endpoints);
    job->endpoints = NULL;
    if (wire_assign_has_tables(a) && !(job->endpoints = wire_assign_endpoints(a, err, sizeof err))) {
        log_error("bad ASSIGN: %s", err);
        return -1;
    } else if (!job->endpoints && first_assign) {
        log_info("%d nodes x %d ranks: the ASSIGN carries this node's part only; PADDLE_TRAINER_ENDPOINTS is empty",
                 job->nnodes, job->world_size);
    }
    for (int i = 0; i < job->nworkers; i++) {
        job->workers[i].rank = job->rank_base + i;
        job->endpoint_ports[i] = (int)a->local_ports[i];
    }
    jobsetup_tee(job, &job->opt, err, sizeof err);
    if (output_open_logs(job, err, sizeof err) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (first_assign && job->multi && job->opt.node_rank < 0 && !job->opt.quiet) {
        char line[160]; /* through the console: it keeps the status line below the lines */
        int n = snprintf(line, sizeof line, "plaunch: this node is node rank %d of %d (ranks %d-%d of %d)\n",
                         job->node_rank, job->nnodes, job->rank_base, job->rank_base + job->nworkers - 1,
                         job->world_size);
        console_put(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    if (job->multi)
        log_info("assigned: node rank %d of %d, ranks %d-%d of %d, generation %d, MASTER %s:%d", job->node_rank,
                 job->nnodes, job->rank_base, job->rank_base + job->nworkers - 1, job->world_size, job->generation,
                 job->master_addr, job->master_port);
    else /* one node: the workers' MASTER_PORT is picked when the generation starts (supervise.c logs it) */
        log_info("assigned: ranks 0-%d, generation %d", job->nworkers - 1, job->generation);
    return 0;
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
            agent_proto_send_join(ac);
        else if (ac->st == AC_VERDICT)
            agent_proto_send_bye(ac, ac->last_code);
        break;
    case AC_JOINING:
        if (st->reason != PLAUNCH__STOP__REASON__RESTART)
            agent_proto_send_bye(ac, st->reason == PLAUNCH__STOP__REASON__SIGNAL ? 128 + (int)st->signal : 0);
        break;
    default:
        break;
    }
}

void agent_inbox_on_msg(agent_t *ac, const wire_msg_t *m)
{
    char err[512];
    ac->last_heard_ns = loop_now_ns();
    if (m->body_case == WIRE_HELLO) {
        snprintf(ac->coord_host, sizeof ac->coord_host, "%s", m->hello->hostname);
        if (strcmp(m->job_id, ac->job->job_id) != 0 && !ac->job_id_given) {
            snprintf(ac->job->job_id, sizeof ac->job->job_id, "%s", m->job_id);
            agent_ipc_set_job(ac->ipc, m->job_id);
        }
        /* With another --job-id we still JOIN: the coordinator refuses it and both logs say why. */
        if (!ac->heard && ac->job->multi)
            log_info("connected to the coordinator on %s (%s)", m->hello->hostname, ac->endpoint);
        else if (!ac->heard)
            log_info("one-node job: the coordinator runs inside this plaunch");
        ac->heard = 1;
        if (ac->preflight_pending && ac->st == AC_CONNECTING)
            ac->join_waiting = 1; /* no JOIN before the GPUs were checked (agent.c sends it) */
        else if (ac->st == AC_CONNECTING || ac->st == AC_JOINING || ac->st == AC_RUNNING)
            agent_proto_send_join(ac); /* first contact, or a new session after a broken one */
        return;
    }
    if (m->body_case == WIRE_REFUSE && !m->refuse->request && (ac->st == AC_CONNECTING || ac->st == AC_JOINING)) {
        /* before any HELLO the job id is not known yet: a refusal is the answer whatever its job */
        log_error("the coordinator at %s refused this node: %s", ac->endpoint, m->refuse->text);
        agent_proto_finish(ac, 2);
        return;
    }
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, ac->job->job_id, err, sizeof err) < 0) {
        log_error("coordinator: %s", err);
        agent_proto_finish(ac, 2);
        return;
    }
    switch (m->body_case) {
    case WIRE_HEARTBEAT:
        break;
    case WIRE_ASSIGN:
        if (ac->st == AC_RUNNING && (int)m->generation == ac->job->generation)
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
        if (strcmp(m->report->kind, "stacks-request") == 0) { /* the job is hung: where is each of our ranks? */
            agent_stacks_request(ac->stacks, (const char *)m->report->json.data, m->report->json.len);
        } else if (strcmp(m->report->kind, "health-block") == 0) { /* the job's Health block: this node's log keeps it */
            char *text = strndup((const char *)m->report->json.data, m->report->json.len);
            if (text)
                log_block(text, 0);
            free(text);
        } else if (strcmp(m->report->kind, "summary") == 0) {
            /* the job's root cause, as the coordinator printed it: every node keeps it in its plaunch.log */
            char *text = strndup((const char *)m->report->json.data, m->report->json.len);
            /* a summary that is not a root-cause block starts with its reason: the coordinator's plaunch got SIGINT */
            int reason_line = text && strstr(text, "plaunch: =====") != text && strchr(text, '\n');
            if (text)
                log_block(text, 0);
            if (!ac->job->opt.quiet && reason_line)
                fprintf(stderr, "%.*s\n", (int)(strchr(text, '\n') - text), text);
            else if (!ac->job->opt.quiet)
                fprintf(stderr, "plaunch: the job failed; its root cause is in %s/%s and on the coordinator's "
                                "terminal\n", ac->job->log_dir, ac->job->log_name);
            free(text);
        }
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
