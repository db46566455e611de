/* agent_relay: an agent that the coordinator asked to relay (RELAY_START): its relay (launcher/relay/) on the
 * agent's loop and address, with the agent's own credentials, its RELAY_READY, and RELAYED both ways. Below
 * agent_proto.c; calls only link.c, creds.c and launcher/relay/. */
#include "agent_relay.h"

#include <stdio.h>

#include "agent_priv.h"
#include "creds.h"
#include "log.h"
#include "relay.h"

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

static void s_start(agent_t *ac, const Plaunch__RelayStart *rs)
{
    char err[1024];
    int insecure = 0;
    if (ac->relay)
        return; /* asked again: it relays already */
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
    relay_destroy(&ac->relay);
    tls_ctx_destroy(&ac->relay_tls);
}
