/* agent_proto: what this node's agent says to the coordinator (JOIN, heartbeats, worker requests, BYE) and how it
 * takes the coordinator's messages (HELLO, ASSIGN, STOP, answers for workers, BYE), with a deadline per state. */
#include "agent_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "console.h"
#include "creds.h"
#include "jobsetup.h"
#include "log.h"
#include "net.h"
#include "output.h"

#define AP_DRAIN_TICK_MS 20
#define AP_DRAIN_MS 5000 /* the longest a relay waits after the BYE for its nodes to close their sessions */
#define AP_END_WAIT_MS 3000 /* the longest a stop signal after this node's BYE waits for the job's end */

/* What a message that cannot be encoded was meant to do would never happen, and someone would wait for it. */
void agent_proto_fatal(agent_t *ac, const char *what, const char *why)
{
    log_error("this node's agent cannot send %s: %s; ending the job on this node (exit status 125)", what, why);
    agent_proto_finish(ac, 125);
}

void agent_proto_up(agent_t *ac, const wire_msg_t *m)
{
    char err[256];
    if (ac->cs) {
        if (coord_server_local_in(ac->cs, m, err, sizeof err) < 0)
            agent_proto_fatal(ac, wire_type_name(m->body_case), err);
    } else if (ac->link && link_send(ac->link, m) < 0) {
        if (errno == EBADMSG)
            agent_proto_fatal(ac, wire_type_name(m->body_case), "it breaks a bound of the protocol (see plaunch.log)");
        else
            log_debug("agent: %s not sent: no session with the coordinator", wire_type_name(m->body_case));
    }
}

int agent_proto_worker_up(void *arg, const wire_msg_t *m)
{
    agent_t *ac = arg;
    if (!m) {
        agent_proto_fatal(ac, "an answer to a worker", "it cannot be encoded (see plaunch.log)");
        return -1;
    }
    if (ac->st != AC_RUNNING)
        return -1;
    agent_proto_up(ac, m);
    return 0;
}

/* How long the agent waits in its state for the coordinator before it gives up (ms), 0 for no limit of its own:
 * while its workers run, and while a multi-node job's other nodes run after this one said BYE (heartbeats bound
 * that wait). Past the coordinator's own deadlines, so that its verdict comes first. */
static int64_t s_state_limit_ms(const agent_t *ac)
{
    const struct opts *o = &ac->job->opt;
    double wait = o->nnodes_min < o->nnodes && o->elastic_timeout > o->rdzv_timeout ? o->elastic_timeout
                                                                                    : o->rdzv_timeout;
    int64_t ms = (int64_t)((wait + o->heartbeat_timeout) * 1000);
    switch (ac->st) {
    case AC_CONNECTING:
    case AC_JOINING:
    case AC_VERDICT:
        return ms;
    case AC_WAIT_END:
        return ac->job->multi ? 0 : ms;
    default:
        return 0;
    }
}

static int s_on_state_deadline(loop_t *loop, int id, void *arg)
{
    static const char *const waits[] = {
        [AC_CONNECTING] = "to hear from it", [AC_JOINING] = "for the world of the next generation",
        [AC_VERDICT] = "for its verdict on this node's failed workers", [AC_WAIT_END] = "for the end of the job",
    };
    agent_t *ac = arg;
    if (id != ac->state_timer)
        return 0;
    ac->state_timer = 0;
    log_error("the coordinator at %s left this node waiting %s for %.0f s; ending the job on this node "
              "(exit status 125)", ac->hosts_coord ? "this node" : ac->endpoint, waits[ac->st],
              (double)s_state_limit_ms(ac) / 1000);
    agent_proto_finish(ac, 125);
    return 0;
}

/* Every state that waits on the coordinator has a deadline. */
void agent_proto_set_state(agent_t *ac, enum ac_state st)
{
    ac->st = st;
    if (!ac->loop)
        return;
    if (ac->state_timer > 0)
        loop_timer_cancel(ac->loop, ac->state_timer);
    int64_t ms = s_state_limit_ms(ac);
    ac->state_timer = ms > 0 ? loop_timer_after_ms(ac->loop, ms, s_on_state_deadline, ac) : 0;
}

/* This node's ranks' health summaries, just before its BYE: the coordinator judges the whole job at its end. */
static void s_send_health(agent_t *ac)
{
    char *json = agent_mon_health_json(ac->mon, WIRE_MAX_REPORT);
    if (!json)
        return;
    Plaunch__Report r = PLAUNCH__REPORT__INIT;
    wire_msg_t m;
    r.kind = "health";
    r.json.data = (uint8_t *)json;
    r.json.len = strlen(json);
    wire_init(&m, ac->job->job_id, (uint32_t)ac->job->generation, WIRE_REPORT, &r);
    agent_proto_up(ac, &m);
    free(json);
}

void agent_proto_send_bye(agent_t *ac, int code)
{
    Plaunch__Bye bye = PLAUNCH__BYE__INIT;
    wire_msg_t m;
    if (ac->st != AC_WAIT_END && ac->st != AC_DONE)
        s_send_health(ac);
    bye.exit_status = (uint32_t)(code & 0xff);
    wire_init(&m, ac->job->job_id, (uint32_t)ac->job->generation, WIRE_BYE, &bye);
    agent_proto_set_state(ac, AC_WAIT_END);
    agent_proto_up(ac, &m);
}

void agent_proto_finish(agent_t *ac, int code)
{
    agent_proto_set_state(ac, AC_DONE);
    supervise_finish(ac->sup, code);
}

/* This node ends as stopped by sig: its BYE says so, its exit status is 128 + sig. */
static void s_end_by_signal(agent_t *ac, int sig)
{
    agent_proto_send_bye(ac, 128 + sig);
    agent_proto_finish(ac, 128 + sig);
}

static int s_end_wait_over(loop_t *loop, int id, void *arg)
{
    agent_t *ac = arg;
    if (id != ac->state_timer)
        return 0;
    ac->state_timer = 0;
    log_warn("no end of the job from the coordinator within %d s of SIG%s: this node ends as stopped by it",
             AP_END_WAIT_MS / 1000, sigabbrev_np(ac->end_wait_sig) ? sigabbrev_np(ac->end_wait_sig) : "?");
    s_end_by_signal(ac, ac->end_wait_sig);
    return 0;
}

/* A node that said BYE ends with the job's status, which the coordinator's BYE brings: a stop signal then (Slurm's
 * --kill-on-bad-exit signals every node once the first one exits with a failure) waits for it a while, so that
 * the job's exit status stays its root cause's; a second signal ends the node at once. */
void agent_proto_stop_signal(agent_t *ac, int sig)
{
    const char *name = sigabbrev_np(sig) ? sigabbrev_np(sig) : "?";
    if (ac->st == AC_DONE && ac->drain_timer > 0) { /* the job's end came; a relay waits for its nodes' BYEs */
        loop_timer_cancel(ac->loop, ac->drain_timer);
        ac->drain_timer = 0;
        log_info("SIG%s: not waiting for the nodes behind this relay; the job ended with %d", name, ac->bye_status);
        supervise_finish(ac->sup, ac->bye_status);
        return;
    }
    if (ac->st == AC_WAIT_END && !ac->end_wait_sig && ac->loop) {
        if (ac->state_timer > 0)
            loop_timer_cancel(ac->loop, ac->state_timer);
        ac->end_wait_sig = sig;
        ac->state_timer = loop_timer_after_ms(ac->loop, AP_END_WAIT_MS, s_end_wait_over, ac);
        if (ac->state_timer > 0) {
            log_info("SIG%s: this node's workers are done; waiting up to %d s for the job's end from the coordinator "
                     "(a second signal ends this node now)", name, AP_END_WAIT_MS / 1000);
            return;
        }
    }
    if (ac->st != AC_RUNNING)
        s_end_by_signal(ac, sig);
}

/* ---- from the coordinator ------------------------------------------------------------------------ */

/* A relay's nodes had their BYE queued just before the relay's own: each closes its session once it has it. The
 * relay stays until they all did, or for at most AP_DRAIN_MS (and the heartbeat timeout); then the node ends. */
static int s_drain_tick(loop_t *loop, int id, void *arg)
{
    agent_t *ac = arg;
    int left = agent_relay_children(ac);
    ac->drain_timer = 0;
    if (left > 0 && loop_now_ns() < ac->drain_until_ns &&
        (ac->drain_timer = loop_timer_after_ms(loop, AP_DRAIN_TICK_MS, s_drain_tick, ac)) > 0)
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
    double bound_s = ac->job->opt.heartbeat_timeout < AP_DRAIN_MS / 1000.0 ? ac->job->opt.heartbeat_timeout
                                                                            : AP_DRAIN_MS / 1000.0;
    agent_proto_set_state(ac, AC_DONE);
    ac->bye_status = status;
    ac->drain_until_ns = loop_now_ns() + (uint64_t)(bound_s * 1e9);
    if (left > 0 && ac->loop && ac->drain_timer <= 0 &&
        (ac->drain_timer = loop_timer_after_ms(ac->loop, AP_DRAIN_TICK_MS, s_drain_tick, ac)) > 0) {
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
    if (first_assign && job->multi && job->opt.node_rank < 0 && !job->opt.quiet)
        fprintf(stderr, "plaunch: this node is node rank %d of %d (ranks %d-%d of %d)\n", job->node_rank, job->nnodes,
                job->rank_base, job->rank_base + job->nworkers - 1, job->world_size);
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
            s_end_by_signal(ac, ac->end_wait_sig);
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

void agent_proto_on_msg(agent_t *ac, const wire_msg_t *m)
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

/* ---- to the coordinator ------------------------------------------------------------------------- */

void agent_proto_send_join(agent_t *ac)
{
    struct job *job = ac->job;
    Plaunch__Join j = PLAUNCH__JOIN__INIT;
    wire_msg_t m;
    int ports[WIRE_MAX_LOCAL + 1];
    uint32_t wports[WIRE_MAX_LOCAL];
    if (ac->st != AC_RUNNING && net_free_ports(job->host_addr, ports, job->nworkers + 1) < 0) {
        log_error("cannot find free TCP ports on %s: %s; set --host to an address of this node", job->host_addr,
                  strerror(errno));
        agent_proto_finish(ac, 125);
        return;
    }
    if (ac->st == AC_RUNNING) { /* a rejoin keeps the ports the workers already use */
        ports[0] = job->master_port;
        for (int i = 0; i < job->nworkers; i++)
            ports[i + 1] = job->endpoint_ports[i];
    }
    for (int i = 0; i < job->nworkers; i++)
        wports[i] = (uint32_t)ports[i + 1];
    j.hostname = job->hostname;
    j.addr = job->host_addr;
    j.pid = (uint32_t)getpid();
    j.nproc = (uint32_t)job->nworkers;
    j.requested_node_rank = ac->st == AC_RUNNING ? job->node_rank : job->opt.node_rank;
    j.gpus = job->opt.gpus;
    j.plaunch_version = PLAUNCH_VERSION;
    j.n_worker_ports = (size_t)job->nworkers;
    j.worker_ports = wports;
    j.master_port = (uint32_t)ports[0];
    uint32_t gen = ac->st == AC_VERDICT || ac->st == AC_WAIT_END ? (uint32_t)job->generation + 1
                                                                 : (uint32_t)job->generation;
    wire_init(&m, job->job_id, ac->st == AC_RUNNING ? (uint32_t)job->generation : gen, WIRE_JOIN, &j);
    if (ac->st != AC_RUNNING)
        agent_proto_set_state(ac, AC_JOINING);
    agent_proto_up(ac, &m);
}

int agent_proto_hb_tick(loop_t *loop, int id, void *arg)
{
    agent_t *ac = arg;
    const struct opts *o = &ac->job->opt;
    uint64_t now = loop_now_ns();
    ac->hb_timer = 0;
    if (ac->st == AC_DONE)
        return 0;
    if (!ac->cs && !ac->resolving) { /* a name still being looked up has its own deadline (agent.c) */
        if (!ac->heard && now - ac->said_ns >= (uint64_t)AGENT_SAY_NS) {
            /* pods and scheduled nodes start minutes apart: say what this node waits for, every few seconds */
            ac->said_ns = now;
            log_warn("waiting for the coordinator at %s: no answer yet (%.0f s of --rdzv-timeout %g s)", ac->endpoint,
                     (double)(now - ac->started_ns) / 1e9, o->rdzv_timeout);
        }
        if (!ac->assigned && ac->heard && now - ac->started_ns > (uint64_t)(o->rdzv_timeout * 1e9)) {
            log_error("the coordinator at %s did not form the job within --rdzv-timeout %g s (not enough nodes "
                      "joined?)", ac->endpoint, o->rdzv_timeout);
            agent_proto_finish(ac, 125);
            return 0;
        }
        if (!ac->assigned && now - ac->started_ns > (uint64_t)(o->rdzv_timeout * 1e9)) {
            log_error("no answer from the coordinator at %s within --rdzv-timeout %g s: is plaunch running there, "
                      "with the same credentials, and is the port reachable?", ac->endpoint, o->rdzv_timeout);
            agent_proto_finish(ac, 125);
            return 0;
        }
        int silent = ac->assigned && now - ac->last_heard_ns > (uint64_t)(o->heartbeat_timeout * 1e9);
        if (silent && link_at_relay(ac->link)) {
            /* A relay that hangs takes no node with it: the coordinator serves them directly, and gets one more
             * heartbeat timeout to answer (an elastic job goes on with them; a fixed one ends by its verdict). */
            char why[160];
            snprintf(why, sizeof why, "no message through this node's relay for %.1f s (--heartbeat-timeout %g): "
                     "asking the coordinator to serve it directly", (double)(now - ac->last_heard_ns) / 1e9,
                     o->heartbeat_timeout);
            ac->last_heard_ns = now;
            link_reset(ac->link, why);
        } else if (silent) {
            log_error("lost the coordinator at %s: no message for %.1f s (--heartbeat-timeout %g); stopping the "
                      "workers", ac->endpoint, (double)(now - ac->last_heard_ns) / 1e9, o->heartbeat_timeout);
            agent_proto_finish(ac, 125);
            return 0;
        }
        /* heartbeats once there is a generation to watch: before its first ASSIGN nobody checks them, and 16,384
         * nodes in a rendezvous sent the coordinator 32,768 a second for nothing */
        if (ac->heard && ac->assigned && link_is_open(ac->link) &&
            now - ac->hb_sent_ns >= (uint64_t)(o->heartbeat * 1e9) * 9 / 10) {
            ac->hb_sent_ns = now;
            Plaunch__Heartbeat hb = PLAUNCH__HEARTBEAT__INIT;
            wire_msg_t m;
            hb.seq = ++ac->hb_seq;
            hb.mono_ns = now;
            wire_init(&m, ac->job->job_id, (uint32_t)ac->job->generation, WIRE_HEARTBEAT, &hb);
            agent_proto_up(ac, &m);
        }
    }
    ac->hb_timer = loop_timer_after_ms(loop, opts_heartbeat_tick_ms(o), agent_proto_hb_tick, ac);
    return 0;
}
