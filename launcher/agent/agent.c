/* agent: the node agent of every job: joins the coordinator (remote over TLS, or in process on the
 * coordinator's node), starts the generations it is assigned, reports failures, obeys STOP and BYE, and
 * keeps heartbeats both ways so that losing the coordinator stops the workers. */
#include "launcher/agent/agent_metrics.h"
#include "launcher/agent/agent_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "common/console.h"
#include "launcher/coord/coord_server.h"
#include "launcher/agent/creds.h"
#include "launcher/supervisor/errfile.h"
#include "launcher/job/jobsetup.h"
#include "launcher/agent/link.h"
#include "common/log.h"
#include "common/net.h"
#include "launcher/supervisor/output.h"
#include "common/resolve.h"

/* The coordinator's address is known (a number, or a name that resolved): whether this node hosts it, the
 * address it advertises, its TLS credentials. 0, or -1 with a message (the caller exits 2). */
static int s_resolved(agent_t *ac, char *err, size_t errlen)
{
    struct job *job = ac->job;
    int insecure = 0;
    /* The node that owns the address hosts the coordinator; on a machine running several nodes (tests,
     * benchmarks on loopback) the first to take the port does, the others join it. */
    ac->hosts_coord = creds_is_local_addr(ac->master_ip) && creds_port_free(ac->master_ip, ac->master_port);
    if (!job->opt.host[0]) {
        if (ac->hosts_coord)
            snprintf(job->node.host_addr, sizeof job->node.host_addr, "%s", ac->master_ip);
        else if (net_route_addr(ac->master_ip, job->node.host_addr, sizeof job->node.host_addr) < 0) {
            snprintf(err, errlen, "no route from this node to the coordinator %s (%s): %s", job->opt.master,
                     ac->master_ip, strerror(errno));
            return -1;
        }
    }
    ac->tls = creds_tls(&job->opt, job->node.host_addr, job->node.hostname, ac->hosts_coord, ac->retry_hint, &insecure, err,
                        errlen);
    if (!ac->tls && !insecure)
        return -1;
    log_info("node %s (%s): %s the coordinator at %s:%d", job->node.hostname, job->node.host_addr,
             ac->hosts_coord ? "hosting" : "joining", ac->master_ip, ac->master_port);
    return 0;
}

/* The coordinator's name is looked up off the loop: pods start minutes apart and their DNS names appear late, so
 * a name that does not resolve yet is asked again every second until --rdzv-timeout, with a line every 5 s. */
#define RESOLVE_RETRY_MS 1000

static int s_resolve_retry(loop_t *loop, int id, void *arg);

/* Until the coordinator answers, its name is looked up again every few seconds: a pod that was replaced comes
 * back at another address, and the old one would be tried until --rdzv-timeout. */
static void s_recheck_later(agent_t *ac)
{
    if (!ac->heard && ac->st != AC_DONE)
        ac->state_timer_resolve = loop_timer_after_ms(ac->loop, (int64_t)(AGENT_SAY_NS / 1000000), s_resolve_retry,
                                                      ac);
}

/* The name now resolves elsewhere: a new link to the new address. */
static void s_relink(agent_t *ac, const char *ip)
{
    log_warn("the coordinator's name '%s' now resolves to %s (was %s): connecting there", ac->master_host, ip,
             ac->master_ip);
    snprintf(ac->master_ip, sizeof ac->master_ip, "%s", ip);
    if (!ac->job->opt.host[0])
        net_route_addr(ac->master_ip, ac->job->node.host_addr, sizeof ac->job->node.host_addr);
    link_destroy(&ac->link);
    if (agent_connect_link(ac, 1) < 0)
        agent_proto_finish(ac, 125);
}

static int s_resolve_done(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    agent_t *ac = arg;
    const struct opts *o = &ac->job->opt;
    char err[1024], why[256], ip[sizeof ac->master_ip];
    loop_remove_fd(loop, fd);
    int rc = resolve_result(ac->resolve, ip, sizeof ip, why, sizeof why);
    resolve_destroy(&ac->resolve);
    uint64_t now = loop_now_ns(), waited = now - ac->started_ns;
    if (!ac->resolving) { /* a recheck: a name that fails now keeps the address it had */
        if (rc == 0 && strcmp(ip, ac->master_ip) != 0 && !ac->heard && ac->link)
            s_relink(ac, ip);
        s_recheck_later(ac);
        return 0;
    }
    if (rc == 0) {
        ac->resolving = 0;
        snprintf(ac->master_ip, sizeof ac->master_ip, "%s", ip);
        if (waited > AGENT_SAY_NS)
            log_info("the coordinator's name '%s' resolved to %s after %.1f s", ac->master_host, ac->master_ip,
                     (double)waited / 1e9);
        if (s_resolved(ac, err, sizeof err) < 0) {
            log_error("%s", err);
            agent_proto_finish(ac, 2);
        } else if (agent_connect(ac) < 0) {
            agent_proto_finish(ac, 125);
        } else if (!ac->hosts_coord) {
            s_recheck_later(ac);
        }
        return 0;
    }
    if (waited >= (uint64_t)(o->rdzv_timeout * 1e9)) {
        log_error("the coordinator's name '%s' (--master %s) did not resolve within --rdzv-timeout %g s: %s; check "
                  "the name (for Kubernetes: the headless Service and the pod's subdomain)", ac->master_host, o->master,
                  o->rdzv_timeout, why);
        agent_proto_finish(ac, 125);
        return 0;
    }
    if (now - ac->said_ns >= AGENT_SAY_NS) {
        ac->said_ns = now;
        log_warn("waiting for the coordinator's name '%s' to resolve (%s); %.0f s of --rdzv-timeout %g s",
                 ac->master_host, why, (double)waited / 1e9, o->rdzv_timeout);
    }
    ac->state_timer_resolve = loop_timer_after_ms(loop, RESOLVE_RETRY_MS, s_resolve_retry, ac);
    return 0;
}

static int s_resolve_retry(loop_t *loop, int id, void *arg)
{
    agent_t *ac = arg;
    ac->state_timer_resolve = 0;
    if (ac->st == AC_DONE || (!ac->resolving && ac->heard))
        return 0;
    ac->resolve = resolve_start(ac->master_host);
    if (!ac->resolve || loop_add_fd(loop, resolve_fd(ac->resolve), ZMQ_POLLIN, s_resolve_done, ac) < 0) {
        log_error("cannot look up the coordinator's name '%s': %s", ac->master_host, strerror(errno));
        resolve_destroy(&ac->resolve);
        agent_proto_finish(ac, 125);
    }
    return 0;
}

static int s_resolve_begin(agent_t *ac)
{
    s_resolve_retry(ac->loop, 0, ac);
    return ac->st == AC_DONE ? -1 : 0;
}

/* The preflight's verdict: the JOIN a HELLO asked for goes out now, or this node ends (strict, a finding). */
static void s_preflight_done(void *arg, int code)
{
    agent_t *ac = arg;
    ac->preflight_pending = 0;
    if (code || (code = agent_preflight_node(ac)) != 0) { /* the node's checks, once the driver's CUDA is known */
        agent_proto_finish(ac, code);
    } else if (ac->join_waiting) {
        ac->join_waiting = 0;
        agent_proto_send_join(ac);
    }
}

/* ---- supervisor hooks ----------------------------------------------------------------------------- */

/* While the hang's stacks are taken, a worker's end stops none of the others (agent_stacks.h). */
static void s_stacks_hold(void *arg, int on)
{
    supervise_hold_stops(((agent_t *)arg)->sup, on);
}

/* The hang watch's reports (progress, stacks) on their way to the coordinator. */
static void s_hang_send(void *arg, wire_report_t kind, void *body)
{
    agent_t *ac = arg;
    wire_msg_t m;
    Plaunch__Report r;
    wire_report_init(&m, &r, ac->job->node.job_id, (uint32_t)ac->job->gen.generation, kind, body);
    agent_proto_up(ac, &m);
}

int agent_start(agent_t *ac, sup_t *s, loop_t *loop)
{
    char err[1024];
    ac->sup = s;
    ac->loop = loop;
    ac->started_ns = loop_now_ns();
    agent_proto_set_state(ac, AC_CONNECTING);
    console_attach(loop); /* a stalled console reader costs lines, never the loop */
    ac->zctx = zmq_ctx_new();
    if (!ac->zctx) {
        log_error("ZeroMQ context: %s", zmq_strerror(errno));
        return -1;
    }
    zmq_ctx_set(ac->zctx, ZMQ_BLOCKY, 0);
    ac->ipc = agent_ipc_new(ac->zctx, loop, ac->job->node.agent_endpoint, ac->job->node.job_id, agent_proto_worker_up, ac, err,
                            sizeof err);
    if (!ac->ipc) {
        log_error("%s", err);
        return -1;
    }
    ac->mon = agent_mon_new(ac->job, ac->thresh, loop, err, sizeof err);
    if (!ac->mon && ac->job->opt.monitor > 0) {
        log_error("%s", err);
        return -1;
    }
    ac->hang = agent_hang_new(ac->job, loop, s_hang_send, ac, err, sizeof err);
    ac->node = agent_node_new(ac->job, ac->mon, ac->hang, loop, s_hang_send, ac); /* NULL: no live view */
    if (ac->hang)
        ac->stacks = agent_stacks_new(ac->job, loop, s_hang_send, s_stacks_hold, ac, err, sizeof err);
    if ((!ac->hang || !ac->stacks) && ac->job->opt.hang_timeout > 0) {
        log_error("%s", err);
        return -1;
    }
    agent_metrics_start(ac);
    ac->preflight_pending = agent_mon_preflight(ac->mon, s_preflight_done, ac);
    int pf = ac->preflight_pending ? 0 : agent_preflight_node(ac);
    if (pf) { /* --preflight strict and a finding: nothing starts */
        agent_proto_finish(ac, pf);
        return 0;
    }
    heartbeat_init(&ac->hb, ac->job->opt.heartbeat, ac->job->opt.heartbeat_timeout);
    if (ac->job->node.multi)
        ac->hb_timer = loop_timer_after_ms(loop, (int64_t)(ac->job->opt.heartbeat * 1000), agent_proto_hb_tick, ac);
    ac->said_ns = loop_now_ns(); /* the first "waiting for ..." line comes after AGENT_SAY_NS */
    if (ac->etcd) {
        agent_connect_etcd_start(ac);
        return 0;
    }
    return ac->resolving ? s_resolve_begin(ac) : agent_connect(ac);
}

static void s_gen_start(void *arg, const struct job *job)
{
    agent_t *ac = arg;
    errfile_clear(job);
    agent_hang_generation(ac->hang);
    agent_node_generation(ac->node);
    agent_ipc_set_generation(ac->ipc, (uint32_t)job->gen.generation);
}

/* CUDA's "driver version is insufficient" (or torch's "driver on your system is too old") in a failed worker's
 * last lines: one more line naming the driver's CUDA version, which the preflight read. 1 when hint was made. */
static int s_driver_too_old(char **lines, size_t n, const char *driver_cuda, char *hint, size_t cap)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(lines[i], "driver version is insufficient") || strstr(lines[i], "driver on your system is too old")) {
            snprintf(hint, cap, "plaunch: the NVIDIA driver here supports CUDA %s, older than the CUDA the program "
                     "was built for (its message above): update the driver, or use a build for CUDA %s or older",
                     *driver_cuda ? driver_cuda : "(version unknown: NVML did not say)",
                     *driver_cuda ? driver_cuda : "that version");
            return 1;
        }
    return 0;
}

static void s_worker_exit(void *arg, const struct job *job, const struct worker *w)
{
    agent_t *ac = arg;
    if (WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0)
        return;
    Plaunch__WorkerExit x = PLAUNCH__WORKER_EXIT__INIT;
    wire_msg_t m;
    char tail[8192], *lines[20];
    size_t n = 0;
    output_tail(w, 20, tail, sizeof tail);
    for (char *line = strtok(tail, "\n"); line && n < 20; line = strtok(NULL, "\n"))
        lines[n++] = line;
    char hint[WIRE_MAX_TEXT + 1];
    if (s_driver_too_old(lines, n, agent_mon_cuda_driver(ac->mon), hint, sizeof hint)) {
        if (n == 20)
            memmove(lines, lines + 1, --n * sizeof *lines);
        lines[n++] = hint;
    }
    for (size_t i = 0; i < n; i++)
        if (strlen(lines[i]) > WIRE_MAX_TEXT)
            lines[i][WIRE_MAX_TEXT] = '\0';
    x.global_rank = (uint32_t)w->rank;
    x.local_rank = (uint32_t)w->local_rank;
    x.pid = (uint32_t)w->pid;
    x.exit_code = WIFEXITED(w->status) ? (uint32_t)WEXITSTATUS(w->status) : 0;
    x.signal = WIFSIGNALED(w->status) ? (uint32_t)WTERMSIG(w->status) : 0;
    x.runtime_ms = (w->exit_ns - w->start_ns) / 1000000;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* to the millisecond: the goodput ledger times detection from it */
    uint64_t since_exit_ms = (loop_now_ns() - w->exit_ns) / 1000000u;
    x.exit_time_unix_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u - since_exit_ms;
    x.n_log_tail = n;
    x.log_tail = lines;
    char quote[ERRFILE_MAX_LINES][ERRFILE_LINE], *qlines[ERRFILE_MAX_LINES], path[PATH_MAX + 32];
    errfile_path(job->node.log_dir, w->rank, path, sizeof path);
    x.n_error_quote = (size_t)errfile_quote(path, x.exit_time_unix_ms - x.runtime_ms, quote, ERRFILE_MAX_LINES);
    for (size_t i = 0; i < x.n_error_quote; i++)
        qlines[i] = quote[i];
    x.error_quote = qlines;
    x.error_file = x.n_error_quote ? path : "";
    wire_init(&m, job->node.job_id, (uint32_t)job->gen.generation, WIRE_WORKER_EXIT, &x);
    agent_proto_up(ac, &m);
}

static void s_gen_over(void *arg, const struct job *job, int code)
{
    agent_t *ac = arg;
    ac->last_code = code;
    if (ac->st == AC_DONE)
        return;
    if (ac->failover) { /* the coordinator was lost: its successor is elected now the workers are gone */
        agent_connect_failover(ac);
        return;
    }
    if (ac->stop_reason == PLAUNCH__STOP__REASON__RESTART) {
        agent_proto_set_state(ac, AC_VERDICT);
        agent_preflight_restart(ac); /* the JOIN, once the GPUs are free (bounded) */
    } else if (ac->stop_reason || code == 0) {
        agent_proto_send_bye(ac, code);
    } else {
        agent_proto_set_state(ac, AC_VERDICT); /* our failure: the coordinator decides between restart and the end */
    }
}

static void s_stop_signal(void *arg, int sig)
{
    agent_t *ac = arg;
    if (ac->cs)
        coord_server_stop_signal(ac->cs, sig);
    else
        agent_proto_stop_signal(ac, sig);
}

void agent_stop(agent_t *ac)
{
    agent_preflight_stop(ac);
    if (ac->hb_timer > 0)
        loop_timer_cancel(ac->loop, ac->hb_timer);
    if (ac->state_timer > 0)
        loop_timer_cancel(ac->loop, ac->state_timer);
    if (ac->drain_timer > 0)
        loop_timer_cancel(ac->loop, ac->drain_timer);
    if (ac->state_timer_resolve > 0)
        loop_timer_cancel(ac->loop, ac->state_timer_resolve);
    if (ac->resolve)
        loop_remove_fd(ac->loop, resolve_fd(ac->resolve));
    resolve_destroy(&ac->resolve);
    agent_etcd_finish(ac->etcd);
    agent_etcd_destroy(&ac->etcd);
    console_detach();
    agent_metrics_stop(ac); /* before what its collectors read */
    agent_node_destroy(&ac->node);
    agent_mon_destroy(&ac->mon);
    agent_hang_destroy(&ac->hang);
    agent_stacks_destroy(&ac->stacks);
    agent_relay_free(ac); /* before the link: its nodes' last messages leave first */
    link_destroy(&ac->link);
    coord_server_destroy(&ac->cs);
    agent_ipc_destroy(&ac->ipc);
    if (ac->zctx)
        zmq_ctx_term(ac->zctx);
    ac->zctx = NULL;
    tls_ctx_destroy(&ac->tls);
}

/* ---- setup ------------------------------------------------------------------------------------------ */

agent_t *agent_new(struct job *job, const struct mon_thresh *thresh, const char *retry_hint, char *err,
                   size_t errlen)
{
    agent_t *ac = calloc(1, sizeof *ac);
    if (!ac) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ac->job = job;
    ac->thresh = thresh;
    snprintf(ac->retry_hint, sizeof ac->retry_hint, "%s", retry_hint);
    ac->job_id_given = job->opt.job_id[0] != '\0';
    job->gen.node_rank = -1;
    if (!job->node.multi) { /* one node: the same path, with the coordinator in this process and no network */
        ac->hosts_coord = 1;
        snprintf(ac->master_ip, sizeof ac->master_ip, "%s", job->node.host_addr);
        return ac;
    }
    if (opts_is_etcd(&job->opt)) { /* the coordinator's node is elected (agent_connect.c) */
        if (agent_connect_etcd_new(ac, err, errlen) < 0)
            goto error;
        return ac;
    }
    if (creds_split_master(job->opt.master, ac->master_host, sizeof ac->master_host, &ac->master_port, err,
                           errlen) < 0)
        goto error;
    /* Under a scheduler no node can make a token for the others: every node needs credentials up front. */
    if (job->opt.sched_kind && creds_check_given(&job->opt, err, errlen) < 0)
        goto error;
    struct in_addr numeric;
    if (job->opt.sched_node0) {
        /* The scheduler's first node hosts the coordinator on every interface, without waiting for its own name. */
        int insecure = 0;
        ac->hosts_coord = 1;
        snprintf(ac->master_ip, sizeof ac->master_ip, "0.0.0.0");
        if (!job->opt.host[0])
            net_primary_addr(job->node.host_addr, sizeof job->node.host_addr);
        ac->tls = creds_tls(&job->opt, job->node.host_addr, job->node.hostname, 1, retry_hint, &insecure, err, errlen);
        if (!ac->tls && !insecure)
            goto error;
        log_info("node %s (%s): hosting the coordinator on port %d (%s's first node)", job->node.hostname,
                 job->node.host_addr, ac->master_port, job->opt.sched_what);
    } else if (inet_pton(AF_INET, ac->master_host, &numeric) == 1) {
        snprintf(ac->master_ip, sizeof ac->master_ip, "%s", ac->master_host);
        if (s_resolved(ac, err, errlen) < 0)
            goto error;
    } else {
        ac->resolving = 1; /* looked up by the loop (agent_start) */
    }
    return ac;
error:
    free(ac);
    return NULL;
}

void agent_ctl(agent_t *ac, struct sup_ctl *ctl)
{
    memset(ctl, 0, sizeof *ctl);
    ctl->arg = ac;
    ctl->gen_start = s_gen_start;
    ctl->worker_exit = s_worker_exit;
    ctl->gen_over = s_gen_over;
    ctl->stop_signal = s_stop_signal;
}

void agent_destroy(agent_t **ac)
{
    if (!ac || !*ac)
        return;
    free(*ac);
    *ac = NULL;
}
