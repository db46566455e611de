/* sim_host: simulated agents that can relay: one thread per process runs the real agent's event loop with each
 * one's link (launcher/agent/link.c) and relay (launcher/relay/) in it, so that the coordinator's tree is served by
 * the code a real relay runs (a real agent runs its one relay in its own loop alike); what they say and hear
 * otherwise is sim_agent.c's, like every simulated agent. */
#include "tests/agentsim/sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/job/joblayout.h"
#include "launcher/agent/link.h"
#include "launcher/relay/relay.h"

#define SH_TICK_MS 50 /* what sim_agent_tick watches needs no finer grain (a real agent's tick is coarser) */

struct sim_host {
    struct sim_agent *a;
    struct sim_thread th;        /* its own: run pointer and scratch, as sim_agent.c expects */
    loop_t *loop;                /* the process's hosts' one loop */
    link_t *link;
    relay_t *relay;
    char hello_host[WIRE_MAX_HOST + 1];
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
    if (h->relay && !over && h->th.run->o->ranked) /* as the real agent: the waiting children wait on */
        relay_hold(h->relay);
    if (h->relay && !over) /* after the BYE its nodes close their sessions themselves, as they take theirs */
        relay_drop_all(h->relay, reason);
    if (!over)
        sim_log(h->th.run, "agent %d (a relay): %s%s", h->a->idx, reason, fatal ? " (fatal)" : "");
    if (fatal)
        h->a->errors++;
}

/* Every host's own tick (sim_agent_tick), and the end of the run. */
static int s_tick(loop_t *loop, int id, void *arg)
{
    struct sim_run *run = arg;
    if (atomic_load(&run->phase) == SIM_QUIT) {
        loop_stop(loop);
        return 0;
    }
    int kids = 0;
    for (int i = 0; i < run->nhosts; i++) {
        if (run->hosts[i].link)
            sim_agent_tick(run->hosts[i].a, sim_now_ns());
        kids += run->hosts[i].relay ? relay_children(run->hosts[i].relay) : 0;
    }
    atomic_store(&run->relay_kids, kids);
    return loop_timer_after_ms(loop, SH_TICK_MS, s_tick, run) < 0 ? -1 : 0;
}

static int s_relay_up(void *arg, const Plaunch__Relayed *batch);

void sim_host_relay_ep(const struct sim_opts *o, int j, char *out, size_t cap)
{
    if (o->addr)
        snprintf(out, cap, "tcp://%s:%d", o->addr, o->relay_port + j);
    else
        snprintf(out, cap, "tcp://127.%d.%d.%d:%d", 1 + j / 65536, j / 256 % 256, j % 256, o->relay_port);
}

/* Ranked: this host's relay from the start, held until its JOIN is sent (as launcher/agent/agent_relay.c). */
static int s_start_ranked(struct sim_host *h)
{
    struct sim_run *run = h->th.run;
    const struct sim_opts *o = run->o;
    struct joblayout l;
    char err[512], ep[WIRE_MAX_ENDPOINT + 1], bind[64];
    int port;
    joblayout_plan(&l, o->nnodes, o->fanout);
    sim_host_relay_ep(o, h->a->idx, ep, sizeof ep);
    if (sscanf(ep, "tcp://%63[^:]:%d", bind, &port) != 2)
        return -1;
    struct relay_cfg cfg = { .bind_addr = bind, .job_id = "pending", .hello_host = "coordinator",
                             .max_children = joblayout_max_children(&l, WIRE_MAX_RELAY_TO),
                             .hb_interval_ms = (int)(o->heartbeat * 1000), .hb_timeout_ms = (int)(o->hb_timeout * 1000),
                             .port = port, .held = 1 };
    h->relay = relay_new(run->zctx, h->loop, run->server_tls, &cfg, s_relay_up, h, err, sizeof err);
    if (!h->relay) {
        sim_log(run, "agent %d: cannot relay at %s: %s", h->a->idx, ep, err);
        s_up_byte(run, SIM_UP_NORELAY);
        return -1;
    }
    h->a->relaying = 1;
    s_up_byte(run, SIM_UP_RELAY);
    return 0;
}

const char *sim_host_join_endpoint(const struct sim_agent *a)
{
    return a->host && a->host->relay && a->th->run->o->ranked ? relay_endpoint(a->host->relay) : NULL;
}

void sim_host_joined(struct sim_agent *a)
{
    struct sim_host *h = a->host;
    if (h && h->relay && a->th->run->o->ranked)
        relay_release(h->relay, a->job_id, h->hello_host);
}

static void *s_thread(void *arg)
{
    struct sim_run *run = arg;
    loop_t *loop = loop_new();
    char err[512];
    for (int i = 0; i < run->nhosts; i++) {
        struct sim_host *h = &run->hosts[i];
        h->loop = loop;
        h->a->sessions = 1;
        /* a relay is always served directly: a ranked one from its first session on; one the coordinator will ask
         * joins as a newcomer first (taking one of the places it keeps for relays), as a real agent does */
        struct link_first first = { .direct = run->o->ranked };
        if (loop && run->o->ranked)
            s_start_ranked(h);
        if (!loop || !(h->link = link_new(run->zctx, loop, h->a->endpoint, run->tls, &first, s_on_msg, s_on_drop, h, err,
                                          sizeof err))) {
            sim_log(run, "agent %d (a relay): %s", h->a->idx, loop ? err : "out of memory");
            h->a->errors++;
            h->a->st = SA_FAILED;
            atomic_fetch_add(&run->failed, 1);
            continue;
        }
        link_set_direct(h->link, 1);
    }
    if (loop && loop_timer_after_ms(loop, SH_TICK_MS, s_tick, run) > 0)
        loop_run(loop);
    for (int i = 0; i < run->nhosts; i++) {
        relay_destroy(&run->hosts[i].relay);
        link_destroy(&run->hosts[i].link);
    }
    loop_destroy(&loop);
    return NULL;
}

int sim_host_start(struct sim_run *run)
{
    if (!run->nhosts)
        return 0;
    if (pthread_create(&run->host_tid, NULL, s_thread, run) != 0)
        return -1;
    run->hosts_started = 1;
    return 0;
}

void sim_host_join(struct sim_run *run)
{
    if (run->hosts_started)
        pthread_join(run->host_tid, NULL);
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
    if (h->relay) { /* asked again, or ranked: it relays already */
        s_ready(a, relay_endpoint(h->relay), "");
        return;
    }
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
