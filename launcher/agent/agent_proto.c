/* agent_proto: what this node's agent says to the coordinator (JOIN, heartbeats, worker requests, BYE) and how it
 * takes the coordinator's messages (HELLO, ASSIGN, STOP, answers for workers, BYE), with a deadline per state. */
#include "launcher/agent/agent_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/net.h"

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
        return ac->job->node.multi ? 0 : ms;
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
    Plaunch__Report r;
    Plaunch__Health h = PLAUNCH__HEALTH__INIT;
    wire_msg_t m;
    h.summaries.data = (uint8_t *)json;
    h.summaries.len = strlen(json);
    wire_report_init(&m, &r, ac->job->node.job_id, (uint32_t)ac->job->gen.generation, WIRE_R_HEALTH, &h);
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
    wire_init(&m, ac->job->node.job_id, (uint32_t)ac->job->gen.generation, WIRE_BYE, &bye);
    agent_proto_set_state(ac, AC_WAIT_END);
    agent_proto_up(ac, &m);
}

void agent_proto_finish(agent_t *ac, int code)
{
    agent_proto_set_state(ac, AC_DONE);
    supervise_finish(ac->sup, code);
}

/* This node ends as stopped by sig: its BYE says so, its exit status is 128 + sig. */
void agent_proto_end_by_signal(agent_t *ac, int sig)
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
    agent_proto_end_by_signal(ac, ac->end_wait_sig);
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
        agent_proto_end_by_signal(ac, sig);
}

/* ---- to the coordinator ------------------------------------------------------------------------- */

void agent_proto_send_join(agent_t *ac)
{
    struct job *job = ac->job;
    Plaunch__Join j = PLAUNCH__JOIN__INIT;
    wire_msg_t m;
    int ports[WIRE_MAX_LOCAL + 1];
    uint32_t wports[WIRE_MAX_LOCAL];
    if (ac->st != AC_RUNNING && net_free_ports(job->node.host_addr, ports, job->node.nworkers + 1) < 0) {
        log_error("cannot find free TCP ports on %s: %s; set --host to an address of this node", job->node.host_addr,
                  strerror(errno));
        agent_proto_finish(ac, 125);
        return;
    }
    if (ac->st == AC_RUNNING) { /* a rejoin keeps the ports the workers already use */
        ports[0] = job->gen.master_port;
        for (int i = 0; i < job->node.nworkers; i++)
            ports[i + 1] = job->gen.endpoint_ports[i];
    }
    for (int i = 0; i < job->node.nworkers; i++)
        wports[i] = (uint32_t)ports[i + 1];
    j.hostname = job->node.hostname;
    j.addr = job->node.host_addr;
    j.pid = (uint32_t)getpid();
    j.nproc = (uint32_t)job->node.nworkers;
    j.requested_node_rank = ac->st == AC_RUNNING ? job->gen.node_rank : job->opt.node_rank;
    j.gpus = (char *)job->opt.gpus; /* borrowed, as wire_init borrows */
    j.plaunch_version = PLAUNCH_VERSION;
    j.n_worker_ports = (size_t)job->node.nworkers;
    j.worker_ports = wports;
    j.master_port = (uint32_t)ports[0];
    char *pf[PF_FINDINGS_MAX];
    for (int i = 0; i < ac->pf.n && i < PF_FINDINGS_MAX; i++)
        pf[i] = ac->pf.line[i];
    j.n_preflight = (size_t)(ac->pf.n < PF_FINDINGS_MAX ? ac->pf.n : PF_FINDINGS_MAX);
    j.preflight = pf;
    const char *rep = agent_relay_join_endpoint(ac);
    if (rep)
        j.relay_endpoint = (char *)rep;
    uint32_t gen = ac->st == AC_VERDICT || ac->st == AC_WAIT_END ? (uint32_t)job->gen.generation + 1
                                                                 : (uint32_t)job->gen.generation;
    wire_init(&m, job->node.job_id, ac->st == AC_RUNNING ? (uint32_t)job->gen.generation : gen, WIRE_JOIN, &j);
    if (ac->st != AC_RUNNING && ac->st != AC_STANDBY) /* they rejoin on a new session: their state goes on */
        agent_proto_set_state(ac, AC_JOINING);
    agent_proto_up(ac, &m);
    agent_relay_joined(ac); /* after the JOIN on the same session: the coordinator knows the relay first */
}

int agent_proto_hb_tick(loop_t *loop, int id, void *arg)
{
    agent_t *ac = arg;
    const struct opts *o = &ac->job->opt;
    uint64_t now = loop_now_ns();
    ac->hb_timer = 0;
    if (ac->st == AC_DONE)
        return 0;
    /* a name still being looked up has its own deadline (agent.c), and so has an etcd election (agent_etcd.c) */
    if (!ac->cs && !ac->resolving && !ac->failover) {
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
            log_error("no answer from the coordinator at %s within --rdzv-timeout %g s: %s", ac->endpoint,
                      o->rdzv_timeout, link_no_answer_hint(ac->link));
            agent_proto_finish(ac, 125);
            return 0;
        }
        int silent = ac->assigned && heartbeat_silent(&ac->hb, ac->last_heard_ns, now, 0);
        if (silent && link_at_relay(ac->link)) {
            /* A relay that hangs takes no node with it: the coordinator serves them directly, and gets one more
             * heartbeat timeout to answer (an elastic job goes on with them; a fixed one ends by its verdict). */
            char why[160];
            snprintf(why, sizeof why, "no message through this node's relay for %.1f s (--heartbeat-timeout %g): "
                     "asking the coordinator to serve it directly", (double)(now - ac->last_heard_ns) / 1e9,
                     o->heartbeat_timeout);
            ac->last_heard_ns = now;
            link_reset(ac->link, why);
        } else if (silent && ac->etcd) { /* another node takes over (agent_connect.c) */
            char why[160];
            snprintf(why, sizeof why, "no message for %.1f s (--heartbeat-timeout %g)",
                     (double)(now - ac->last_heard_ns) / 1e9, o->heartbeat_timeout);
            agent_etcd_silent(ac->etcd, why);
        } else if (silent) {
            log_error("lost the coordinator at %s: no message for %.1f s (--heartbeat-timeout %g); stopping the "
                      "workers", ac->endpoint, (double)(now - ac->last_heard_ns) / 1e9, o->heartbeat_timeout);
            agent_proto_finish(ac, 125);
            return 0;
        }
        /* heartbeats once there is a generation to watch: before its first ASSIGN nobody checks them, and 16,384
         * nodes in a rendezvous sent the coordinator 32,768 a second for nothing */
        if (ac->heard && ac->assigned && link_is_open(ac->link) && heartbeat_due(&ac->hb, now)) {
            Plaunch__Heartbeat hb;
            wire_msg_t m;
            heartbeat_msg(&ac->hb, &hb, &m, ac->job->node.job_id, (uint32_t)ac->job->gen.generation);
            agent_proto_up(ac, &m);
        }
    }
    ac->hb_timer = loop_timer_after_ms(loop, heartbeat_tick_ms(o->heartbeat, o->heartbeat_timeout), agent_proto_hb_tick,
                                       ac);
    return 0;
}
