/* agent_connect: how this node reaches its coordinator: in process (this node hosts it) or over a link; and with
 * --master etcd://, which node hosts it: the election's outcome, a takeover from the job's durable state when the
 * coordinator's node is lost, and the workers stopped meanwhile (docs/resilience.md, its etcd part). Below agent.c. */
#include "launcher/agent/agent_metrics.h"
#include "launcher/agent/agent_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/agent/creds.h"
#include "common/log.h"
#include "common/net.h"

static void s_link_msg(void *arg, const wire_msg_t *m)
{
    agent_inbox_on_msg(arg, m);
}

static void s_link_drop(void *arg, const char *reason, int fatal)
{
    agent_t *ac = arg;
    if (ac->st == AC_DONE) { /* the BYE came: the coordinator's close is no news, and a relay's nodes keep theirs */
        log_debug("%s after the job's end", reason);
        return;
    }
    if (fatal) {
        log_error("%s; check that every node has the same --token or certificates of the same job CA", reason);
        agent_proto_finish(ac, 2);
        return;
    }
    log_warn("%s; starting a new session", reason);
    agent_relay_drop(ac, reason); /* its nodes go back to the coordinator */
}

static void s_local_msg(void *arg, const wire_msg_t *m)
{
    agent_inbox_on_msg(arg, m);
}

int agent_connect_link(agent_t *ac, int again)
{
    char err[1024];
    struct link_first first = { 0 };
    if (again)
        agent_relay_first(ac, &first); /* the plan made at the first link (agent_relay_plan) */
    else
        agent_relay_plan(ac, &first);
    snprintf(ac->endpoint, sizeof ac->endpoint, "tcp://%s:%d", ac->master_ip, ac->master_port);
    ac->link = link_new(ac->zctx, ac->loop, ac->endpoint, ac->tls, &first, s_link_msg, s_link_drop, ac, err,
                        sizeof err);
    if (!ac->link)
        log_error("%s", err);
    return ac->link ? 0 : -1;
}

/* ---- the etcd election's outcome ---------------------------------------------------------------- */

static void s_durable(void *arg, uint32_t generation, int restarts_used, int nnodes)
{
    agent_etcd_save(((agent_t *)arg)->etcd, generation, restarts_used, nnodes);
}

/* The coordinator this node now hosts: a first one starts the job afresh (whatever an earlier job of that name
 * left), one that takes over goes on from the durable state with the next generation. */
static void s_etcd_coord(agent_t *ac)
{
    struct agent_etcd_state st;
    coord_server_on_generation(ac->cs, s_durable, ac);
    if (!ac->took_over) {
        agent_etcd_save(ac->etcd, 0, 0, 0);
        return;
    }
    char text[1024];
    if (agent_etcd_load(ac->etcd, &st) < 0)
        memset(&st, 0, sizeof st);
    coord_server_resume(ac->cs, st.generation + 1, st.restarts_used, st.alive);
    snprintf(text, sizeof text, "generation %u: the coordinator at %.300s was lost (%.300s); %.100s (%.100s) took over from "
             "generation %u with %d node%s alive, %d restart%s spent", st.generation + 1, ac->lost_addr, ac->lost_why,
             ac->job->node.hostname, ac->job->node.host_addr, st.generation, st.alive, st.alive == 1 ? "" : "s",
             st.restarts_used, st.restarts_used == 1 ? "" : "s");
    log_warn("%s", text);
    agent_etcd_incident(ac->etcd, st.generation + 1, text);
}

static void s_elected(void *arg, int leader, const char *addr)
{
    agent_t *ac = arg;
    const struct job *job = ac->job;
    char err[1024];
    int insecure = 0;
    if (creds_split_master(addr, ac->master_ip, sizeof ac->master_ip, &ac->master_port, err, sizeof err) < 0) {
        log_error("etcd names the coordinator '%s': %s", addr, err);
        agent_proto_finish(ac, 125);
        return;
    }
    char moved[300];
    int port;
    if (leader && !creds_port_free(job->node.host_addr, ac->master_port)) { /* taken since the lease was granted */
        if (net_free_ports(job->node.host_addr, &port, 1) < 0) {
            log_error("no free TCP port on %s for the coordinator this node was elected to host: %s", job->node.host_addr,
                      strerror(errno));
            agent_proto_finish(ac, 125);
            return;
        }
        snprintf(moved, sizeof moved, "%s:%d", job->node.host_addr, port);
        if (agent_etcd_move(ac->etcd, moved) < 0) {
            agent_proto_finish(ac, 125);
            return;
        }
        ac->master_port = port;
        addr = moved;
    }
    snprintf(ac->coord_addr, sizeof ac->coord_addr, "%s", addr);
    ac->failover = 0;
    ac->heard = 0;
    ac->last_heard_ns = loop_now_ns();
    ac->hosts_coord = leader;
    tls_ctx_destroy(&ac->tls);
    ac->tls = creds_tls(&job->opt, job->node.host_addr, job->node.hostname, leader, ac->retry_hint, &insecure, err, sizeof err);
    if (!ac->tls && !insecure) {
        log_error("%s", err);
        agent_proto_finish(ac, 2);
        return;
    }
    if (agent_connect(ac) < 0)
        agent_proto_finish(ac, 125);
}

static void s_fail(void *arg, int code, const char *why)
{
    log_error("%s; ending the job on this node (exit status %d)", why, code);
    agent_proto_finish(arg, code);
}

/* The workers of the generation are gone (or there were none): a new election. */
void agent_connect_failover(agent_t *ac)
{
    agent_relay_drop(ac, "the coordinator was lost");
    link_destroy(&ac->link);
    ac->heard = 0;
    ac->took_over = 1;
    agent_proto_set_state(ac, AC_CONNECTING);
    agent_etcd_elect(ac->etcd, ac->lost_addr, NULL);
}

static void s_lost(void *arg, const char *why)
{
    agent_t *ac = arg;
    if (ac->failover || ac->cs || ac->st == AC_DONE || ac->st == AC_WAIT_END)
        return;
    ac->failover = 1;
    snprintf(ac->lost_addr, sizeof ac->lost_addr, "%s", ac->coord_addr);
    snprintf(ac->lost_why, sizeof ac->lost_why, "%s", why);
    log_warn("the coordinator at %s is lost: %s; %selecting a new one through etcd", ac->coord_addr, why,
             ac->st == AC_RUNNING ? "stopping this node's workers and " : "");
    if (ac->st == AC_RUNNING) { /* the generation's end (agent.c's gen_over) goes on with the election */
        ac->stop_reason = PLAUNCH__STOP__REASON__RESTART;
        supervise_stop(ac->sup, 0);
        return;
    }
    agent_connect_failover(ac);
}

/* This node's address towards etcd, the port it would host the coordinator at, credentials given up front (any
 * node may host it), the lease. 0, or -1 with a message (the caller exits 2). */
int agent_connect_etcd_new(agent_t *ac, char *err, size_t errlen)
{
    struct job *job = ac->job;
    char host[256], ip[64], me[300];
    if (creds_check_given(&job->opt, err, errlen) < 0)
        return -1;
    if (agent_etcd_host(job->opt.master, host, sizeof host) < 0) {
        snprintf(err, errlen, "--master %s: no etcd host", job->opt.master);
        return -1;
    }
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "etcd's host '%s' (--master %s) does not resolve: %s", host, job->opt.master,
                 gai_strerror(rc));
        return -1;
    }
    inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, ip, sizeof ip);
    freeaddrinfo(res);
    if (!job->opt.host[0] && net_route_addr(ip, job->node.host_addr, sizeof job->node.host_addr) < 0) {
        snprintf(err, errlen, "no route from this node to etcd at %s (%s): %s", host, ip, strerror(errno));
        return -1;
    }
    int port = OPTS_DEFAULT_PORT; /* the coordinator's port where free (firewalls), else any: etcd publishes it */
    if (!creds_port_free(job->node.host_addr, port) && net_free_ports(job->node.host_addr, &port, 1) < 0) {
        snprintf(err, errlen, "no free TCP port on %s for the coordinator: %s", job->node.host_addr, strerror(errno));
        return -1;
    }
    snprintf(me, sizeof me, "%s:%d", job->node.host_addr, port);
    ac->etcd = agent_etcd_new(job, me, err, errlen);
    return ac->etcd ? 0 : -1;
}

void agent_connect_etcd_start(agent_t *ac)
{
    struct agent_etcd_cb cb = { .elected = s_elected, .lost = s_lost, .fail = s_fail, .arg = ac };
    agent_etcd_start(ac->etcd, ac->loop, &cb);
}

/* ---- the coordinator in this process, or the link to it ---------------------------------------- */

int agent_connect(agent_t *ac)
{
    char err[1024];
    loop_t *loop = ac->loop;
    snprintf(ac->endpoint, sizeof ac->endpoint, "tcp://%s:%d", ac->master_ip, ac->master_port);
    if (ac->hosts_coord) {
        ac->cs = coord_server_new(ac->job, loop, ac->zctx, ac->job->node.multi ? ac->endpoint : NULL, ac->tls,
                                  ac->thresh, s_local_msg, ac, err, sizeof err);
        if (!ac->cs && errno == EADDRINUSE && ac->job->opt.sched_node0) {
            /* the scheduler's first node has no other plaunch to join: the port is someone else's */
            log_error("%s; on %s another program holds port %d: give this job another one with --master-port",
                      err, ac->job->node.hostname, ac->master_port);
            return -1;
        } else if (!ac->cs && errno == EADDRINUSE && ac->job->node.multi && !ac->job->opt.insecure && !ac->etcd) {
            /* another plaunch on this machine took the port between our check and our bind: join it */
            int insecure = 0;
            log_info("another plaunch here hosts the coordinator at %s: joining it", ac->endpoint);
            tls_ctx_destroy(&ac->tls);
            ac->tls = creds_tls(&ac->job->opt, ac->job->node.host_addr, ac->job->node.hostname, 0, "", &insecure, err,
                                sizeof err);
            ac->hosts_coord = 0;
            if (!ac->tls) {
                log_error("%s", err);
                return -1;
            }
        } else if (!ac->cs && errno == EADDRINUSE && ac->job->node.multi && !ac->etcd) {
            ac->hosts_coord = 0; /* plaintext: the same credentials (none) serve as a client */
        } else if (!ac->cs) {
            log_error("%s", err);
            return -1;
        } else {
            if (ac->etcd)
                s_etcd_coord(ac);
            agent_metrics_coord(ac, coord_server_goodput(ac->cs));
            coord_server_local_hello(ac->cs);
        }
    }
    if (!ac->hosts_coord)
        return agent_connect_link(ac, 0);
    return 0;
}
