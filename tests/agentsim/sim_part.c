/* sim_part: one process's share of the simulated agents: its descriptor limit, ZeroMQ context and TLS context,
 * its threads, the phases sim_main.c tells it through a pipe, and its agents' results sent back at the end. */
#include "tests/agentsim/sim.h"
#include "launcher/job/joblayout.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zmq.h>

#define SP_END_MS 60000 /* from 'E' to every agent's BYE */

/* SIM_FDS_PER_AGENT descriptors per agent, the connections of the relays' children, and some room. */
static int s_raise_fds(int agents, int relays, int children)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)agents * SIM_FDS_PER_AGENT + (rlim_t)relays * (rlim_t)(children + 16) + 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
        return 0;
    rl.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
    if (rl.rlim_cur < need)
        rl.rlim_cur = rl.rlim_max = need; /* with CAP_SYS_RESOURCE the hard limit may go up to fs.nr_open */
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        return 0;
    fprintf(stderr, "pl_agentsim: %d agents in one process need %lu descriptors and the limit cannot be raised: %s "
            "(use more --procs)\n", agents, (unsigned long)need, strerror(errno));
    return -1;
}

static int s_setup(struct sim_run *run, const struct sim_opts *o)
{
    char err[512];
    unsigned char key[TLS_TOKEN_MAX_BYTES];
    size_t keylen;
    const char *tok = getenv("PLAUNCH_TOKEN");
    if (!tok || tls_token_parse_hex(tok, key, sizeof key, &keylen, err, sizeof err) < 0 ||
        !(run->tls = tls_ctx_new_psk(0, key, keylen, err, sizeof err))) {
        fprintf(stderr, "pl_agentsim: PLAUNCH_TOKEN: %s\n", tok ? err : "not set (the job's token, hex)");
        return -1;
    }
    int k = o->want ? o->agents / o->want + 1 : 0, nh = (int)((long)o->relays * (run->first + run->n) / o->agents) -
                                                         (int)((long)o->relays * run->first / o->agents);
    if (o->ranked) /* the layout's relays: agents 0..want-1, wherever they fall */
        nh = run->first < o->want ? (run->first + run->n < o->want ? run->n : o->want - run->first) : 0;
    if (nh > run->n)
        nh = run->n;
    if (nh && !(run->server_tls = tls_ctx_new_psk(1, key, keylen, err, sizeof err))) {
        fprintf(stderr, "pl_agentsim: PLAUNCH_TOKEN: %s\n", err);
        return -1;
    }
    /* room for sockets closed but not yet reaped by libzmq when sessions are started over */
    if (s_raise_fds(run->n, nh, k + k / 4 + 2) < 0 || !(run->zctx = zmq_ctx_new()) ||
        zmq_ctx_set(run->zctx, ZMQ_IO_THREADS, o->threads) < 0 ||
        zmq_ctx_set(run->zctx, ZMQ_MAX_SOCKETS, 8 * run->n + 1024) < 0) { /* a REDIRECT's old sockets: reaped late */
        fprintf(stderr, "pl_agentsim: ZeroMQ context: %s\n", zmq_strerror(errno));
        return -1;
    }
    if (!(run->threads = calloc((size_t)o->threads, sizeof *run->threads)))
        return -1;
    struct joblayout layout;
    joblayout_plan(&layout, o->nnodes, o->fanout);
    for (int t = 0; t < o->threads; t++) {
        struct sim_thread *th = &run->threads[t];
        th->run = run;
        th->id = t;
        th->first = run->first + (int)((long)run->n * t / o->threads);
        th->n = run->first + (int)((long)run->n * (t + 1) / o->threads) - th->first;
        if (!(th->agents = calloc((size_t)(th->n ? th->n : 1), sizeof *th->agents)) ||
            (th->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
            return -1;
        for (int i = 0; i < th->n; i++) {
            struct sim_agent *a = &th->agents[i];
            *a = (struct sim_agent){ .idx = th->first + i, .th = th, .st = SA_WAIT, .node_rank = -1 };
            if (o->addr)
                snprintf(a->addr, sizeof a->addr, "%s", o->addr);
            else
                snprintf(a->addr, sizeof a->addr, "127.%d.%d.%d", 1 + a->idx / 65536, a->idx / 256 % 256,
                         a->idx % 256);
            snprintf(a->endpoint, sizeof a->endpoint, "tcp://%s:0;%s", a->addr, o->endpoint + strlen("tcp://"));
            if (o->ranked && joblayout_parent(&layout, a->idx + 1) >= 1) /* straight to its relay */
                sim_host_relay_ep(o, joblayout_parent(&layout, a->idx + 1) - 1, a->relay_ep, sizeof a->relay_ep);
        }
    }
    /* the agents that can relay: the first nh of this process's share, spread over its threads' arrays */
    struct sim_agent **hosted = calloc((size_t)(nh ? nh : 1), sizeof *hosted);
    int got = 0;
    for (int t = 0; hosted && t < o->threads; t++)
        for (int i = 0; i < run->threads[t].n && got < nh; i++)
            if (run->threads[t].agents[i].idx < run->first + nh)
                hosted[got++] = &run->threads[t].agents[i];
    int rc = hosted ? sim_host_setup(run, hosted, got) : -1;
    free(hosted);
    return rc;
}

static int s_hosts_joined(struct sim_run *r)
{
    return atomic_load(&r->hosts_joined) + atomic_load(&r->failed) >= r->nhosts;
}

/* Waits until cond() holds (checked every 10 ms), a byte comes down or the deadline (ns, 0 none) passes; returns
 * the byte, 0 for the condition, -1 when the parent is gone, -2 at the deadline. */
static int s_wait(struct sim_run *run, int down, int (*cond)(struct sim_run *), uint64_t deadline)
{
    for (;;) {
        if (cond && cond(run))
            return 0;
        if (deadline && sim_now_ns() >= deadline)
            return -2;
        struct pollfd pfd = { .fd = down, .events = POLLIN };
        int r = poll(&pfd, 1, 10);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r > 0) {
            char c;
            return read(down, &c, 1) == 1 ? c : -1;
        }
    }
}

static int s_formed(struct sim_run *r)
{
    return atomic_load(&r->barriers_done) + atomic_load(&r->failed) >= r->n;
}

static int s_live(const struct sim_run *r)
{
    int first_silent = r->o->agents - r->o->silent, end = r->first + r->n;
    return end <= first_silent ? r->n : first_silent > r->first ? first_silent - r->first : 0;
}

static int s_stopped(struct sim_run *r)
{
    return atomic_load(&r->stopped) + atomic_load(&r->failed) >= s_live(r);
}

/* Every agent has the coordinator's BYE, and this process's relays hold no session: their nodes, wherever they run,
 * have taken theirs (a relay ended with its process would lose what it has not yet delivered). */
static int s_finished(struct sim_run *r)
{
    return atomic_load(&r->finished) + atomic_load(&r->failed) >= s_live(r) && atomic_load(&r->relay_kids) == 0;
}

static int s_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int s_send_results(struct sim_run *run, int up)
{
    struct sim_part_report rep = { .n = run->n, .failed = atomic_load(&run->failed),
                                   .id_mismatch = atomic_load(&run->id_mismatch), .drops = atomic_load(&run->drops),
                                   .logged = atomic_load(&run->logged), .finished = atomic_load(&run->finished) };
    memcpy(rep.have_ref, run->have_ref, sizeof rep.have_ref);
    memcpy(rep.ref, run->ref, sizeof rep.ref);
    char tag = SIM_UP_DONE;
    if (s_write_all(up, &tag, 1) < 0 || s_write_all(up, &rep, sizeof rep) < 0)
        return -1;
    for (int t = 0; t < run->o->threads; t++)
        for (int i = 0; i < run->threads[t].n; i++) {
            const struct sim_agent *a = &run->threads[t].agents[i];
            struct sim_result r = { .idx = a->idx, .node_rank = a->node_rank, .first_rank = a->first_rank,
                                    .world = a->world, .nnodes = a->nnodes, .assigned = a->assigned,
                                    .have_ids = a->have_ids, .passed = a->passed, .errors = a->errors,
                                    .sessions = a->sessions, .stop_reason = a->stop_reason,
                                    .joined = a->joined_once, .redirected = a->redirected,
                                    .relaying = a->relaying, .join_ns = a->join_ns, .assign_ns = a->assign_ns,
                                    .ids_ns = a->ids_ns, .barrier_ns = a->barrier_ns, .stop_ns = a->stop_ns };
            if (s_write_all(up, &r, sizeof r) < 0)
                return -1;
        }
    return 0;
}

int sim_part_run(const struct sim_opts *o, int first, int n, int up, int down)
{
    struct sim_run run = { .o = o, .first = first, .n = n };
    char tag;
    pthread_mutex_init(&run.ref_lock, NULL);
    run.up = up;
    if (s_setup(&run, o) < 0 || sim_host_start(&run) < 0)
        return 1;
    for (int t = 0; t < o->threads; t++)
        pthread_create(&run.threads[t].tid, NULL, sim_net_thread, &run.threads[t]);
    /* the agents that can relay join first: the coordinator asks the first to join directly */
    int c = s_wait(&run, down, s_hosts_joined, 0);
    if (c == 0) {
        tag = SIM_UP_JOINED;
        s_write_all(up, &tag, 1);
        c = s_wait(&run, down, NULL, 0);
    }
    if (c == SIM_DOWN_GO) {
        atomic_store(&run.phase, SIM_FORM);
        c = s_wait(&run, down, s_formed, 0);
    }
    if (c == 0) {
        tag = SIM_UP_FORMED;
        s_write_all(up, &tag, 1);
        c = s_wait(&run, down, NULL, 0);
    }
    if (c == SIM_DOWN_STEADY) {
        atomic_store(&run.phase, SIM_STEADY);
        if (o->silent && (c = s_wait(&run, down, s_stopped, 0)) == 0) {
            tag = SIM_UP_STOPPED;
            s_write_all(up, &tag, 1);
        }
        if (c == 0 || c == SIM_DOWN_STEADY)
            c = s_wait(&run, down, NULL, 0);
    }
    if (c == SIM_DOWN_END) {
        atomic_store(&run.phase, SIM_END);
        s_wait(&run, -1, s_finished, sim_now_ns() + SP_END_MS * 1000000ull);
    }
    atomic_store(&run.phase, SIM_QUIT);
    for (int t = 0; t < o->threads; t++)
        pthread_join(run.threads[t].tid, NULL);
    sim_host_join(&run);
    int rc = s_send_results(&run, up) < 0;
    for (int t = 0; t < o->threads; t++) {
        free(run.threads[t].agents);
        close(run.threads[t].epfd);
    }
    free(run.threads);
    free(run.hosts);
    zmq_ctx_term(run.zctx);
    tls_ctx_destroy(&run.tls);
    tls_ctx_destroy(&run.server_tls);
    return rc;
}
