/* sim_host: simulated agents that can relay: each on a thread of its own with the real agent's event loop, link
 * (launcher/agent/link.c) and relay (launcher/relay/), so that the coordinator's tree is served by the code a real
 * relay runs; what they say and hear otherwise is sim_agent.c's, like every simulated agent. */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link.h"
#include "relay.h"

#define SH_TICK_MS 50 /* what sim_agent_tick watches needs no finer grain (a real agent's tick is coarser) */

struct sim_host {
    struct sim_agent *a;
    struct sim_thread th;        /* its own: run pointer and scratch, as sim_agent.c expects */
    pthread_t tid;
    loop_t *loop;
    link_t *link;
    relay_t *relay;
    char hello_host[WIRE_MAX_HOST + 1];
    int started;
};

static void s_up_byte(struct sim_run *run, char c)
{
    if (write(run->up, &c, 1) != 1)
        sim_log(run, "the pipe to the main process is gone");
}

static void s_on_msg(void *arg, const wire_msg_t *m)
{
    struct sim_host *h = arg;
    struct sim_agent *a = h->a;
    if (m->body_case == WIRE_HELLO) {
        snprintf(h->hello_host, sizeof h->hello_host, "%s", m->hello->hostname);
        a->open = 1;
        if (a->st == SA_WAIT || a->st == SA_HANDSHAKE)
            a->st = SA_JOINING;
    }
    int first_join = !a->joined_once;
    sim_agent_on_msg(a, m);
    if (first_join && a->joined_once)
        atomic_fetch_add(&h->th.run->hosts_joined, 1);
}

static void s_on_drop(void *arg, const char *reason, int fatal)
{
    struct sim_host *h = arg;
    int over = h->a->st == SA_DONE || h->a->st == SA_FAILED; /* the coordinator's BYE came: its close is no news */
    h->a->open = 0;
    if (h->relay)
        relay_drop_all(h->relay, over ? NULL : reason);
    if (!over)
        sim_log(h->th.run, "agent %d (a relay): %s%s", h->a->idx, reason, fatal ? " (fatal)" : "");
    if (fatal)
        h->a->errors++;
}

static int s_tick(loop_t *loop, int id, void *arg)
{
    struct sim_host *h = arg;
    if (atomic_load(&h->th.run->phase) == SIM_QUIT) {
        loop_stop(loop);
        return 0;
    }
    sim_agent_tick(h->a, sim_now_ns());
    if (loop_timer_after_ms(loop, SH_TICK_MS, s_tick, h) < 0)
        return -1;
    return 0;
}

static void *s_thread(void *arg)
{
    struct sim_host *h = arg;
    struct sim_run *run = h->th.run;
    char err[512];
    h->a->sessions = 1;
    if (!(h->loop = loop_new()) ||
        !(h->link = link_new(run->zctx, h->loop, h->a->endpoint, run->tls, s_on_msg, s_on_drop, h, err,
                             sizeof err)) ||
        loop_timer_after_ms(h->loop, SH_TICK_MS, s_tick, h) < 0) {
        sim_log(run, "agent %d (a relay): %s", h->a->idx, h->loop ? err : "out of memory");
        h->a->errors++;
        h->a->st = SA_FAILED;
        atomic_fetch_add(&run->failed, 1);
    } else {
        link_set_direct(h->link, 1); /* a relay is always served directly */
        loop_run(h->loop);
    }
    relay_destroy(&h->relay);
    link_destroy(&h->link);
    loop_destroy(&h->loop);
    return NULL;
}

int sim_host_start(struct sim_run *run)
{
    for (int i = 0; i < run->nhosts; i++) {
        struct sim_host *h = &run->hosts[i];
        if (pthread_create(&h->tid, NULL, s_thread, h) != 0)
            return -1;
        h->started = 1;
    }
    return 0;
}

void sim_host_join(struct sim_run *run)
{
    for (int i = 0; i < run->nhosts; i++)
        if (run->hosts[i].started)
            pthread_join(run->hosts[i].tid, NULL);
}

int sim_host_send(struct sim_agent *a, const wire_msg_t *m)
{
    return a->host->link && link_send(a->host->link, m) == 0 ? 0 : -1;
}

/* The relay's news and its children's messages, up over the hosted agent's own session. */
static int s_relay_up(void *arg, const Plaunch__Relayed *batch)
{
    struct sim_host *h = arg;
    wire_msg_t m;
    wire_init(&m, h->a->job_id, h->a->generation, WIRE_RELAYED, (Plaunch__Relayed *)batch);
    return sim_host_send(h->a, &m);
}

static void s_ready(struct sim_agent *a, const char *endpoint, const char *text)
{
    Plaunch__RelayReady rr = PLAUNCH__RELAY_READY__INIT;
    wire_msg_t m;
    rr.endpoint = (char *)endpoint;
    rr.text = (char *)text;
    wire_init(&m, a->job_id, a->generation, WIRE_RELAY_READY, &rr);
    sim_net_send(a, &m);
    s_up_byte(a->th->run, endpoint[0] ? SIM_UP_RELAY : SIM_UP_NORELAY);
}

void sim_host_relay(struct sim_agent *a, const wire_msg_t *m)
{
    struct sim_host *h = a->host;
    char err[512];
    if (m->body_case == WIRE_RELAYED) {
        if (h && h->relay)
            relay_down(h->relay, m->relayed);
        else
            a->errors++;
        return;
    }
    if (!h) {
        s_ready(a, "", "a simulated agent of pl_agentsim's epoll threads cannot relay");
        return;
    }
    if (h->relay)
        return; /* asked again: it relays already */
    const Plaunch__RelayStart *rs = m->relay_start;
    struct relay_cfg cfg = { .bind_addr = a->addr, .job_id = a->job_id, .hello_host = h->hello_host,
                             .generation = a->generation, .max_children = (int)rs->max_children,
                             .hb_interval_ms = (int)rs->heartbeat_interval_ms,
                             .hb_timeout_ms = (int)rs->heartbeat_timeout_ms };
    h->relay = relay_new(a->th->run->zctx, h->loop, a->th->run->server_tls, &cfg, s_relay_up, h, err, sizeof err);
    if (!h->relay) {
        sim_log(a->th->run, "agent %d: cannot relay: %s", a->idx, err);
        s_ready(a, "", err);
        return;
    }
    a->relaying = 1;
    s_ready(a, relay_endpoint(h->relay), "");
}

/* The agents of a process that can relay: set up by sim_part.c before any thread runs. */
int sim_host_setup(struct sim_run *run, struct sim_agent **agents, int n)
{
    if (!(run->hosts = calloc((size_t)(n ? n : 1), sizeof *run->hosts)))
        return -1;
    run->nhosts = n;
    for (int i = 0; i < n; i++) {
        struct sim_host *h = &run->hosts[i];
        h->a = agents[i];
        h->th = *agents[i]->th; /* its run; its own scratch frame */
        h->th.agents = NULL;
        h->th.n = 0;
        h->a->host = h;
        h->a->th = &h->th;
    }
    return 0;
}
