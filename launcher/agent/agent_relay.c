/* agent_relay: an agent that the coordinator asked to relay (RELAY_START): its relay (launcher/relay/) on the
 * agent's loop and address, with the agent's own credentials, its RELAY_READY, and RELAYED both ways. Below
 * agent_proto.c; calls only link.c, creds.c and launcher/relay/. */
#include "launcher/agent/agent_relay.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "launcher/agent/agent_priv.h"
#include "launcher/agent/creds.h"
#include "launcher/job/joblayout.h"
#include "launcher/agent/link.h"
#include "common/log.h"
#include "launcher/relay/relay.h"

/* How long a node waits for its relay before it joins the coordinator directly: relays start with the job, so a
 * few seconds, at least twice the heartbeat timeout, never more than a third of --rdzv-timeout. */
static int s_relay_wait_ms(const struct opts *o)
{
    double s = 2 * o->heartbeat_timeout < 5 ? 5 : 2 * o->heartbeat_timeout;
    if (s > o->rdzv_timeout / 3)
        s = o->rdzv_timeout / 3;
    return (int)(s * 1000) < 1 ? 1 : (int)(s * 1000);
}

/* tcp://HOST:PORT of host (a name, an IPv4 or IPv6 address) into out. */
static void s_endpoint(char *out, size_t cap, const char *host, int port)
{
    int v6 = strchr(host, ':') != NULL;
    snprintf(out, cap, "tcp://%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

static void s_ready(agent_t *ac, const char *endpoint, const char *text)
{
    Plaunch__RelayReady rr = PLAUNCH__RELAY_READY__INIT;
    wire_msg_t m;
    rr.endpoint = (char *)endpoint;
    rr.text = (char *)text;
    wire_init(&m, ac->job->node.job_id, (uint32_t)(ac->job->gen.generation > 0 ? ac->job->gen.generation : 0), WIRE_RELAY_READY,
              &rr);
    if (ac->link)
        link_send(ac->link, &m);
}

/* The relay's batches up, over the agent's own session. */
static int s_up(void *arg, const Plaunch__Relayed *batch)
{
    agent_t *ac = arg;
    wire_msg_t m;
    wire_init(&m, ac->job->node.job_id, (uint32_t)(ac->job->gen.generation > 0 ? ac->job->gen.generation : 0), WIRE_RELAYED,
              (Plaunch__Relayed *)batch);
    return ac->link ? link_send(ac->link, &m) : -1;
}

/* This node relays by the layout: its relay listens at its own host and --master's port + 1 from the start. */
static int s_start_ranked(agent_t *ac, const struct joblayout *l, const char *host, int port)
{
    const struct opts *o = &ac->job->opt;
    char err[1024];
    int insecure = 0;
    if (!(ac->relay_tls = creds_tls(o, ac->job->node.host_addr, ac->job->node.hostname, 1, "", &insecure, err, sizeof err))) {
        log_warn("cannot relay for the nodes behind rank %d: %s; they will join the coordinator directly",
                 o->node_rank, err);
        return -1;
    }
    unsigned char num[16];
    /* ZeroMQ binds to addresses, never to names: a name in --node-hosts (gpu001) is this node's own address */
    int numeric = inet_pton(AF_INET, host, num) == 1 || inet_pton(AF_INET6, host, num) == 1;
    struct relay_cfg cfg = { .bind_addr = numeric ? host : ac->job->node.host_addr, .job_id = ac->job->node.job_id[0] ? ac->job->node.job_id : "pending",
                             .hello_host = ac->master_host[0] ? ac->master_host : "coordinator",
                             .max_children = joblayout_max_children(l, WIRE_MAX_RELAY_TO),
                             .hb_interval_ms = (int)opts_ms(o->heartbeat),
                             .hb_timeout_ms = (int)opts_ms(o->heartbeat_timeout), .port = port, .held = 1 };
    if (!(ac->relay = relay_new(ac->zctx, ac->loop, ac->relay_tls, &cfg, s_up, ac, err, sizeof err))) {
        log_warn("cannot relay for the nodes behind rank %d: %s; they will join the coordinator directly",
                 o->node_rank, err);
        tls_ctx_destroy(&ac->relay_tls);
        return -1;
    }
    ac->ranked_relay = 1;
    log_info("node rank %d relays for %d nodes of the layout (--relay-fanout %d) at %s", o->node_rank,
             joblayout_children(l, o->node_rank), l->fanout, relay_endpoint(ac->relay));
    return 0;
}

/* The layout's relay has not taken this node in time (not up yet, gone, or its own session with the coordinator is
 * not): the coordinator serves it directly. Bounded: one wait, then the coordinator. */
static int s_first_due(loop_t *loop, int id, void *arg)
{
    agent_t *ac = arg;
    char why[600];
    ac->first_timer = 0;
    if (!ac->link || link_is_open(ac->link) || !link_at_relay(ac->link))
        return 0;
    snprintf(why, sizeof why, "this node's relay at %s (the ranked layout's) did not take it within %.1f s: joining "
             "the coordinator directly", ac->first_relay, ac->first_wait_ms / 1000.0);
    link_reset(ac->link, why);
    return 0;
}

void agent_relay_plan(agent_t *ac, struct link_first *first)
{
    const struct opts *o = &ac->job->opt;
    struct joblayout l;
    char host[256], err[512];
    if (o->node_rank < 1 || o->nnodes < 2 || o->nnodes_min < o->nnodes || !o->node_hosts[0] || o->insecure ||
        ac->master_port >= 65535)
        return;
    joblayout_plan(&l, o->nnodes + o->spares, o->relay_fanout); /* spares hold sessions like the others */
    int parent = joblayout_parent(&l, o->node_rank);
    int me = joblayout_is_relay(&l, o->node_rank) ? o->node_rank : parent;
    if (me < 1)
        return;
    if (opts_node_host(o, me, host, sizeof host, err, sizeof err) < 0) {
        log_warn("--node-hosts: rank %d: %s; joining the coordinator", me, err);
        return;
    }
    if (parent < 0) {
        first->direct = s_start_ranked(ac, &l, host, ac->master_port + 1) == 0; /* never sent to another relay */
        return;
    }
    s_endpoint(ac->first_relay, sizeof ac->first_relay, host, ac->master_port + 1);
    ac->first_wait_ms = s_relay_wait_ms(o);
    ac->first_timer = loop_timer_after_ms(ac->loop, ac->first_wait_ms, s_first_due, ac);
    agent_relay_first(ac, first);
    log_info("node rank %d joins through its relay, rank %d, at %s (the ranked layout; the coordinator directly if "
             "it has not answered within %.1f s)", o->node_rank, parent, ac->first_relay,
             ac->first_wait_ms / 1000.0);
}

void agent_relay_first(const agent_t *ac, struct link_first *first)
{
    /* the relay only while its wait lasts: a later link goes to the coordinator */
    *first = (struct link_first){ .direct = ac->ranked_relay,
                                  .relay = ac->first_timer > 0 ? ac->first_relay : NULL };
}

const char *agent_relay_join_endpoint(const agent_t *ac)
{
    return ac->ranked_relay && ac->relay ? relay_endpoint(ac->relay) : NULL;
}

void agent_relay_joined(agent_t *ac)
{
    if (ac->ranked_relay && ac->relay)
        relay_release(ac->relay, ac->job->node.job_id, ac->coord_host[0] ? ac->coord_host : ac->master_host);
}

static void s_start(agent_t *ac, const Plaunch__RelayStart *rs)
{
    char err[1024];
    int insecure = 0;
    if (ac->relay) { /* asked again, or a relay of the ranked layout: it relays already */
        s_ready(ac, relay_endpoint(ac->relay), "");
        return;
    }
    if (!ac->relay_tls)
        ac->relay_tls = creds_tls(&ac->job->opt, ac->job->node.host_addr, ac->job->node.hostname, 1, "", &insecure, err,
                                  sizeof err);
    if (!ac->relay_tls) {
        log_warn("cannot relay for other nodes: %s", insecure ? "no TLS (--insecure)" : err);
        s_ready(ac, "", insecure ? "no TLS (--insecure)" : err);
        return;
    }
    struct relay_cfg cfg = { .bind_addr = ac->job->node.host_addr, .job_id = ac->job->node.job_id,
                             .hello_host = ac->coord_host, .generation = (uint32_t)(ac->job->gen.generation > 0
                                                                                        ? ac->job->gen.generation : 0),
                             .max_children = (int)rs->max_children, .hb_interval_ms = (int)rs->heartbeat_interval_ms,
                             .hb_timeout_ms = (int)rs->heartbeat_timeout_ms };
    if (!(ac->relay = relay_new(ac->zctx, ac->loop, ac->relay_tls, &cfg, s_up, ac, err, sizeof err))) {
        log_warn("cannot relay for other nodes: %s", err);
        s_ready(ac, "", err);
        return;
    }
    link_set_direct(ac->link, 1); /* a relay's own sessions never go through another relay */
    log_info("relaying for up to %u other nodes at %s", rs->max_children, relay_endpoint(ac->relay));
    s_ready(ac, relay_endpoint(ac->relay), "");
}

void agent_relay_on_msg(agent_t *ac, const wire_msg_t *m)
{
    if (m->body_case == WIRE_RELAY_START)
        s_start(ac, m->relay_start);
    else if (m->body_case == WIRE_RELAYED && ac->relay)
        relay_down(ac->relay, m->relayed);
    else if (m->body_case == WIRE_RELAYED)
        log_warn("RELAYED from the coordinator, but this node relays for nobody");
}

void agent_relay_drop(agent_t *ac, const char *why)
{
    if (ac->ranked_relay && ac->relay) /* new children, and those still waiting, wait for the next JOIN */
        relay_hold(ac->relay);
    if (ac->relay)
        relay_drop_all(ac->relay, why);
}

int agent_relay_children(const agent_t *ac)
{
    return ac->relay ? relay_children(ac->relay) : 0;
}

void agent_relay_generation(agent_t *ac)
{
    if (ac->relay)
        relay_set_generation(ac->relay, (uint32_t)ac->job->gen.generation);
}

void agent_relay_free(agent_t *ac)
{
    if (ac->first_timer > 0)
        loop_timer_cancel(ac->loop, ac->first_timer);
    ac->first_timer = 0;
    relay_destroy(&ac->relay);
    tls_ctx_destroy(&ac->relay_tls);
}
