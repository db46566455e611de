/* sim_agent: what one simulated agent says and hears, as the real agent does (launcher/agent/agent_proto.c): JOIN
 * after HELLO, the ASSIGN's world, its simulated workers' NCCL id requests and barrier (as libplaunch makes them),
 * heartbeats at the job's interval, WORKER_EXIT and BYE at the end; and an agent that goes silent on purpose. */
#include "tests/agentsim/sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SA_MAX_LOG 20 /* error lines on stderr; the rest are counted */

uint64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sim_log(struct sim_run *run, const char *fmt, ...)
{
    if (atomic_fetch_add(&run->logged, 1) >= SA_MAX_LOG)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "pl_agentsim: %s\n", line);
}

static void s_fail(struct sim_agent *a)
{
    if (a->st != SA_FAILED)
        atomic_fetch_add(&a->th->run->failed, 1);
    a->st = SA_FAILED;
    sim_net_reset(a, 0);
}

static void s_send_join(struct sim_agent *a)
{
    const struct sim_opts *o = a->th->run->o;
    Plaunch__Join j = PLAUNCH__JOIN__INIT;
    wire_msg_t m;
    char host[32];
    uint32_t ports[SIM_MAX_NPROC];
    snprintf(host, sizeof host, "sim-%05d", a->idx);
    for (int l = 0; l < o->nproc; l++) /* never bound: simulated workers listen nowhere */
        ports[l] = 10000 + (uint32_t)((a->idx * o->nproc + l) % 50000);
    j.hostname = host;
    j.addr = a->addr;
    j.pid = (uint32_t)getpid();
    j.nproc = (uint32_t)o->nproc;
    j.requested_node_rank = a->assigned ? a->node_rank : o->ranks ? a->idx + 1 : -1;
    j.gpus = "";
    j.plaunch_version = PLAUNCH_VERSION;
    j.n_worker_ports = (size_t)o->nproc;
    j.worker_ports = ports;
    j.master_port = 9000 + (uint32_t)(a->idx % 1000);
    const char *rep = sim_host_join_endpoint(a);
    if (rep)
        j.relay_endpoint = (char *)rep;
    wire_init(&m, a->job_id, a->generation, WIRE_JOIN, &j);
    int sent = sim_net_send(a, &m) == 0;
    if (sent && !a->joined_once) {
        a->joined_once = 1;
        a->join_ns = sim_now_ns();
    }
    if (sent && a->host)
        sim_host_joined(a);
}

/* Worker l's next request: the id of key k (rank 0 publishes it first), or the barrier once it holds them all. */
static void s_worker_next(struct sim_agent *a, int l)
{
    const struct sim_opts *o = a->th->run->o;
    uint32_t rank = (uint32_t)(a->first_rank + l);
    wire_msg_t m;
    int k = a->step[l];
    if (k < o->nkeys) {
        if (rank == 0) {
            unsigned char id[WIRE_NCCL_ID_BYTES];
            Plaunch__NcclIdPut put = PLAUNCH__NCCL_ID_PUT__INIT;
            for (size_t i = 0; i < sizeof id; i++)
                id[i] = (unsigned char)rand();
            put.key = (char *)o->keys[k];
            put.rank = rank;
            put.id.data = id;
            put.id.len = sizeof id;
            wire_init(&m, a->job_id, a->generation, WIRE_NCCL_ID_PUT, &put);
            sim_net_send(a, &m);
        }
        Plaunch__NcclIdGet get = PLAUNCH__NCCL_ID_GET__INIT;
        get.key = (char *)o->keys[k];
        get.rank = rank;
        wire_init(&m, a->job_id, a->generation, WIRE_NCCL_ID_GET, &get);
        sim_net_send(a, &m);
    } else if (k == o->nkeys) {
        Plaunch__Barrier b = PLAUNCH__BARRIER__INIT;
        b.key = SIM_BARRIER;
        b.rank = rank;
        b.timeout_ms = 600000;
        wire_init(&m, a->job_id, a->generation, WIRE_BARRIER, &b);
        sim_net_send(a, &m);
    }
}

static void s_on_assign(struct sim_agent *a, const wire_msg_t *m)
{
    const struct sim_opts *o = a->th->run->o;
    const Plaunch__Assign *as = m->assign;
    if (a->assigned && a->st == SA_RUNNING && m->generation == a->generation)
        return; /* our rejoin after a broken session: the generation goes on */
    if (a->assigned || (int)as->nnodes != o->nnodes) {
        sim_log(a->th->run, "agent %d: ASSIGN of generation %u for %u nodes (expected generation 0, %d nodes)",
                a->idx, m->generation, as->nnodes, o->nnodes);
        a->errors++;
    }
    a->assigned = 1;
    a->generation = m->generation;
    a->node_rank = (int)as->node_rank;
    a->first_rank = (int)as->first_rank;
    a->world = (int)as->world_size;
    a->nnodes = (int)as->nnodes;
    a->assign_ns = sim_now_ns();
    a->last_heard_ns = a->assign_ns;
    a->st = SA_RUNNING;
    atomic_fetch_add(&a->th->run->assigned, 1);
    for (int l = 0; l < o->nproc; l++) {
        a->step[l] = 0;
        s_worker_next(a, l);
    }
}

static int s_key_index(const struct sim_opts *o, const char *key)
{
    for (int k = 0; k < o->nkeys; k++)
        if (strcmp(o->keys[k], key) == 0)
            return k;
    return -1;
}

/* Every copy of an id must be the first one anybody saw. */
static void s_check_id(struct sim_run *run, int k, const unsigned char *id)
{
    pthread_mutex_lock(&run->ref_lock);
    if (!run->have_ref[k]) {
        memcpy(run->ref[k], id, WIRE_NCCL_ID_BYTES);
        run->have_ref[k] = 1;
    } else if (memcmp(run->ref[k], id, WIRE_NCCL_ID_BYTES) != 0) {
        atomic_fetch_add(&run->id_mismatch, 1);
    }
    pthread_mutex_unlock(&run->ref_lock);
}

/* The agent hands an id to each of its workers waiting for that key (the coordinator answers an agent once). */
static void s_on_id(struct sim_agent *a, const Plaunch__NcclId *nid)
{
    const struct sim_opts *o = a->th->run->o;
    int k = s_key_index(o, nid->key), all = 1;
    if (k < 0 || nid->id.len != WIRE_NCCL_ID_BYTES) {
        a->errors++;
        return;
    }
    s_check_id(a->th->run, k, nid->id.data);
    for (int l = 0; l < o->nproc; l++) {
        if (a->step[l] == k) {
            a->step[l]++;
            s_worker_next(a, l);
        }
        all &= a->step[l] >= o->nkeys;
    }
    if (all && !a->have_ids) {
        a->have_ids = 1;
        a->ids_ns = sim_now_ns();
        atomic_fetch_add(&a->th->run->ids_done, 1);
    }
}

static void s_on_barrier_done(struct sim_agent *a, const Plaunch__BarrierDone *d)
{
    const struct sim_opts *o = a->th->run->o;
    int all = 1;
    if (d->status != PLAUNCH__BARRIER_DONE__STATUS__OK || strcmp(d->key, SIM_BARRIER) != 0) {
        sim_log(a->th->run, "agent %d: barrier '%s' ended with status %d", a->idx, d->key, d->status);
        a->errors++;
    }
    for (int l = 0; l < o->nproc; l++) {
        int named = d->n_ranks == 0;
        for (size_t i = 0; i < d->n_ranks; i++)
            named |= d->ranks[i] == (uint32_t)(a->first_rank + l);
        if (named && a->step[l] == o->nkeys)
            a->step[l]++;
        all &= a->step[l] > o->nkeys;
    }
    if (all && !a->passed) {
        a->passed = 1;
        a->barrier_ns = sim_now_ns();
        atomic_fetch_add(&a->th->run->barriers_done, 1);
    }
}

/* The workers ended (status 0, or SIGTERM after a STOP): one WORKER_EXIT each, then BYE, as the real agent. */
static void s_end_workers(struct sim_agent *a, int sig)
{
    const struct sim_opts *o = a->th->run->o;
    wire_msg_t m;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    for (int l = 0; l < o->nproc; l++) {
        Plaunch__WorkerExit x = PLAUNCH__WORKER_EXIT__INIT;
        x.global_rank = (uint32_t)(a->first_rank + l);
        x.local_rank = (uint32_t)l;
        x.pid = (uint32_t)getpid();
        x.signal = (uint32_t)sig;
        x.runtime_ms = (sim_now_ns() - a->assign_ns) / 1000000u;
        x.exit_time_unix_ms = (uint64_t)wall.tv_sec * 1000u + (uint64_t)wall.tv_nsec / 1000000u;
        wire_init(&m, a->job_id, a->generation, WIRE_WORKER_EXIT, &x);
        sim_net_send(a, &m);
    }
    Plaunch__Bye bye = PLAUNCH__BYE__INIT;
    bye.exit_status = sig ? 128u + (uint32_t)sig : 0;
    wire_init(&m, a->job_id, a->generation, WIRE_BYE, &bye);
    sim_net_send(a, &m);
    a->st = SA_ENDING;
}

void sim_agent_on_msg(struct sim_agent *a, const wire_msg_t *m)
{
    struct sim_run *run = a->th->run;
    char err[512];
    a->last_heard_ns = sim_now_ns();
    if (a->st == SA_FAILED || a->st == SA_DONE)
        return;
    if (m->body_case == WIRE_HELLO) {
        snprintf(a->job_id, sizeof a->job_id, "%s", m->job_id);
        if (a->st == SA_JOINING || a->st == SA_RUNNING)
            s_send_join(a); /* first contact, or a new session after a broken one */
        return;
    }
    if (m->body_case == WIRE_REFUSE && !m->refuse->request) {
        sim_log(run, "agent %d: refused: %s", a->idx, m->refuse->text);
        s_fail(a);
        return;
    }
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, a->job_id, err, sizeof err) < 0) {
        sim_log(run, "agent %d: %s", a->idx, err);
        s_fail(a);
        return;
    }
    switch (m->body_case) {
    case WIRE_HEARTBEAT:
        break;
    case WIRE_ASSIGN:
        s_on_assign(a, m);
        break;
    case WIRE_NCCL_ID:
        s_on_id(a, m->nccl_id);
        break;
    case WIRE_BARRIER_DONE:
        s_on_barrier_done(a, m->barrier_done);
        break;
    case WIRE_STOP:
        if (a->st == SA_RUNNING && !a->stop_ns) {
            a->stop_ns = sim_now_ns();
            a->stop_reason = m->stop->reason;
            atomic_fetch_add(&run->stopped, 1);
            s_end_workers(a, 15);
        }
        break;
    case WIRE_BYE:
        a->st = SA_DONE;
        atomic_fetch_add(&run->finished, 1);
        sim_net_reset(a, 0);
        break;
    case WIRE_REFUSE:
        sim_log(run, "agent %d: the coordinator refused %s '%s' of rank %u: %s", a->idx,
                wire_type_name((wire_type_t)m->refuse->request), m->refuse->key, m->refuse->rank, m->refuse->text);
        a->errors++;
        break;
    case WIRE_REPORT:
        break; /* the summary or the Health block: a real agent logs them */
    case WIRE_RELAY_START:
    case WIRE_RELAYED:
        sim_host_relay(a, m);
        break;
    default:
        a->errors++;
    }
}

void sim_agent_tick(struct sim_agent *a, uint64_t now)
{
    struct sim_run *run = a->th->run;
    const struct sim_opts *o = run->o;
    /* the real agent's tick, each agent at its own phase */
    long tick_ms = heartbeat_tick_ms(o->heartbeat, o->hb_timeout);
    uint64_t tick = (uint64_t)tick_ms * 1000000u;
    if (!a->next_tick_ns) {
        heartbeat_init(&a->hb, o->heartbeat, o->hb_timeout);
        a->next_tick_ns = heartbeat_first_ns(tick_ms, now, (unsigned)rand());
    }
    if (now < a->next_tick_ns)
        return;
    a->next_tick_ns += tick;
    if (a->next_tick_ns < now)
        a->next_tick_ns = now + tick;
    int phase = atomic_load(&run->phase);
    int silent = a->idx >= o->agents - o->silent && phase >= SIM_STEADY;
    if (!a->open || silent || a->st == SA_DONE || a->st == SA_FAILED)
        return;
    if (a->assigned && heartbeat_silent(&a->hb, a->last_heard_ns, now, 0)) {
        sim_log(run, "agent %d: lost the coordinator: no message for %.1f s", a->idx,
                (double)(now - a->last_heard_ns) / 1e9);
        a->errors++;
        s_fail(a);
        return;
    }
    if (a->assigned && heartbeat_due(&a->hb, now)) { /* as the real agent */
        Plaunch__Heartbeat hb;
        wire_msg_t m;
        heartbeat_msg(&a->hb, &hb, &m, a->job_id, a->generation);
        sim_net_send(a, &m);
    }
    if (phase == SIM_END && a->st == SA_RUNNING)
        s_end_workers(a, 0);
}
