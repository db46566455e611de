/* agentctl: a node agent of a multi-node job: joins the coordinator (remote over TLS, or in process on the
 * coordinator's node), starts the generations it is assigned, reports failures, obeys STOP and BYE, and
 * keeps heartbeats both ways so that losing the coordinator stops the workers. */
#include "agentctl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "console.h"
#include "coord_server.h"
#include "creds.h"
#include "errfile.h"
#include "jobsetup.h"
#include "link.h"
#include "log.h"
#include "net.h"
#include "output.h"
#include "services.h"

enum ac_state {
    AC_CONNECTING, /* waiting for HELLO */
    AC_JOINING,    /* JOIN sent, waiting for ASSIGN */
    AC_RUNNING,    /* workers of a generation run */
    AC_VERDICT,    /* our workers failed and are gone: waiting for the coordinator's STOP */
    AC_WAIT_END,   /* BYE sent: waiting for the job's end */
    AC_DONE
};

struct agentctl {
    struct job *job;
    struct services sv;
    sup_t *sup;
    loop_t *loop;
    coord_server_t *cs;
    link_t *link;
    tls_ctx_t *tls;
    char endpoint[300];
    char master_ip[256];
    int master_port;
    int hosts_coord;
    int job_id_given;
    enum ac_state st;
    int stop_reason;           /* last STOP's reason; 0 none */
    int last_code;             /* this node's verdict for the generation */
    int heard;                 /* a HELLO came at least once */
    int assigned;              /* an ASSIGN came at least once: from then on heartbeats decide, before it
                                  --rdzv-timeout does (a coordinator forming a big world is late to answer) */
    uint64_t last_heard_ns, started_ns;
    uint64_t hb_seq, hb_sent_ns;
    int hb_timer;
    int state_timer;           /* the deadline of a state that waits on the coordinator */
};

static void s_send_join(agentctl_t *ac);
static void s_finish(agentctl_t *ac, int code);

/* What a message that cannot be encoded was meant to do would never happen, and someone would wait for it. */
static void s_fatal(agentctl_t *ac, const char *what, const char *why)
{
    log_error("this node's agent cannot send %s: %s; ending the job on this node (exit status 125)", what, why);
    s_finish(ac, 125);
}

static void s_up(agentctl_t *ac, const wire_msg_t *m)
{
    char err[256];
    if (ac->cs) {
        if (coord_server_local_in(ac->cs, m, err, sizeof err) < 0)
            s_fatal(ac, wire_type_name(m->body_case), err);
    } else if (ac->link && link_send(ac->link, m) < 0) {
        if (errno == EBADMSG)
            s_fatal(ac, wire_type_name(m->body_case), "it breaks a bound of the protocol (see plaunch.log)");
        else
            log_debug("agent: %s not sent: no session with the coordinator", wire_type_name(m->body_case));
    }
}

static int s_worker_up(void *arg, const wire_msg_t *m)
{
    agentctl_t *ac = arg;
    if (!m) {
        s_fatal(ac, "an answer to a worker", "it cannot be encoded (see plaunch.log)");
        return -1;
    }
    if (ac->st != AC_RUNNING)
        return -1;
    s_up(ac, m);
    return 0;
}

/* How long the agent waits in its state for the coordinator before it gives up (ms), 0 for no limit of its own:
 * while its workers run, and while a multi-node job's other nodes run after this one said BYE (heartbeats bound
 * that wait). Past the coordinator's own deadlines, so that its verdict comes first. */
static int64_t s_state_limit_ms(const agentctl_t *ac)
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
    agentctl_t *ac = arg;
    if (id != ac->state_timer)
        return 0;
    ac->state_timer = 0;
    log_error("the coordinator at %s left this node waiting %s for %.0f s; ending the job on this node "
              "(exit status 125)", ac->hosts_coord ? "this node" : ac->endpoint, waits[ac->st],
              (double)s_state_limit_ms(ac) / 1000);
    s_finish(ac, 125);
    return 0;
}

/* Every state that waits on the coordinator has a deadline. */
static void s_set_state(agentctl_t *ac, enum ac_state st)
{
    ac->st = st;
    if (!ac->loop)
        return;
    if (ac->state_timer > 0)
        loop_timer_cancel(ac->loop, ac->state_timer);
    int64_t ms = s_state_limit_ms(ac);
    ac->state_timer = ms > 0 ? loop_timer_after_ms(ac->loop, ms, s_on_state_deadline, ac) : 0;
}

static void s_send_bye(agentctl_t *ac, int code)
{
    Plaunch__Bye bye = PLAUNCH__BYE__INIT;
    wire_msg_t m;
    bye.exit_status = (uint32_t)(code & 0xff);
    wire_init(&m, ac->job->job_id, (uint32_t)ac->job->generation, WIRE_BYE, &bye);
    s_set_state(ac, AC_WAIT_END);
    s_up(ac, &m);
}

static void s_finish(agentctl_t *ac, int code)
{
    s_set_state(ac, AC_DONE);
    sup_finish(ac->sup, code);
}

/* ---- from the coordinator ------------------------------------------------------------------------ */

static int s_apply_assign(agentctl_t *ac, const wire_msg_t *m)
{
    struct job *job = ac->job;
    const Plaunch__Assign *a = m->assign;
    char err[512];
    if (a->local_world_sizes[a->node_rank] != (uint32_t)job->nworkers) {
        log_error("the coordinator assigned %u workers to this node, which runs %d", a->local_world_sizes[a->node_rank],
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
    free(job->endpoints);
    job->endpoints = wire_assign_endpoints(a, err, sizeof err);
    if (!job->endpoints) {
        log_error("bad ASSIGN: %s", err);
        return -1;
    }
    for (int i = 0; i < job->nworkers; i++) {
        job->workers[i].rank = job->rank_base + i;
        job->endpoint_ports[i] = (int)a->endpoint_ports[job->rank_base + i];
    }
    jobsetup_tee(job, &job->opt, err, sizeof err);
    if (output_open_logs(job, err, sizeof err) < 0) {
        log_error("%s", err);
        return -1;
    }
    if (first_assign && job->multi && job->opt.node_rank < 0 && !job->opt.quiet)
        fprintf(stderr, "plaunch: this node is node rank %d of %d (ranks %d-%d of %d)\n", job->node_rank, job->nnodes,
                job->rank_base, job->rank_base + job->nworkers - 1, job->world_size);
    log_info("assigned: node rank %d of %d, ranks %d-%d of %d, generation %d, MASTER %s:%d", job->node_rank,
             job->nnodes, job->rank_base, job->rank_base + job->nworkers - 1, job->world_size, job->generation,
             job->master_addr, job->master_port);
    return 0;
}

static void s_on_stop(agentctl_t *ac, const Plaunch__Stop *st)
{
    ac->stop_reason = st->reason;
    log_info("coordinator: stop (%s)", st->text);
    switch (ac->st) {
    case AC_RUNNING:
        sup_stop(ac->sup, (int)st->signal);
        break;
    case AC_VERDICT:
    case AC_WAIT_END:
        if (st->reason == PLAUNCH__STOP__REASON__RESTART)
            s_send_join(ac);
        else if (ac->st == AC_VERDICT)
            s_send_bye(ac, ac->last_code);
        break;
    case AC_JOINING:
        if (st->reason != PLAUNCH__STOP__REASON__RESTART)
            s_send_bye(ac, st->reason == PLAUNCH__STOP__REASON__SIGNAL ? 128 + (int)st->signal : 0);
        break;
    default:
        break;
    }
}

static void s_on_msg(agentctl_t *ac, const wire_msg_t *m)
{
    char err[512];
    ac->last_heard_ns = loop_now_ns();
    if (m->body_case == WIRE_HELLO) {
        if (strcmp(m->job_id, ac->job->job_id) != 0 && !ac->job_id_given) {
            snprintf(ac->job->job_id, sizeof ac->job->job_id, "%s", m->job_id);
            agent_ipc_set_job(ac->sv.ipc, m->job_id);
        }
        /* With another --job-id we still JOIN: the coordinator refuses it and both logs say why. */
        if (!ac->heard && ac->job->multi)
            log_info("connected to the coordinator on %s (%s)", m->hello->hostname, ac->endpoint);
        else if (!ac->heard)
            log_info("one-node job: the coordinator runs inside this plaunch");
        ac->heard = 1;
        if (ac->st == AC_CONNECTING || ac->st == AC_JOINING || ac->st == AC_RUNNING)
            s_send_join(ac); /* first contact, or a new session after a broken one */
        return;
    }
    if (m->body_case == WIRE_REFUSE && !m->refuse->request && (ac->st == AC_CONNECTING || ac->st == AC_JOINING)) {
        /* before any HELLO the job id is not known yet: a refusal is the answer whatever its job */
        log_error("the coordinator at %s refused this node: %s", ac->endpoint, m->refuse->text);
        s_finish(ac, 2);
        return;
    }
    if (wire_check_peer(m, WIRE_PROTOCOL_VERSION, ac->job->job_id, err, sizeof err) < 0) {
        log_error("coordinator: %s", err);
        s_finish(ac, 2);
        return;
    }
    switch (m->body_case) {
    case WIRE_HEARTBEAT:
        break;
    case WIRE_ASSIGN:
        if (ac->st == AC_RUNNING && (int)m->generation == ac->job->generation)
            break; /* our rejoin after a broken session: the generation goes on */
        if (s_apply_assign(ac, m) < 0) {
            s_finish(ac, 125);
            break;
        }
        s_set_state(ac, AC_RUNNING);
        ac->stop_reason = 0;
        ac->assigned = 1;
        sup_start(ac->sup);
        break;
    case WIRE_STOP:
        s_on_stop(ac, m->stop);
        break;
    case WIRE_NCCL_ID:
    case WIRE_BARRIER_DONE:
        agent_ipc_deliver(ac->sv.ipc, m);
        break;
    case WIRE_REFUSE: /* of a worker's request: it goes to that worker */
        agent_ipc_deliver(ac->sv.ipc, m);
        break;
    case WIRE_REPORT:
        if (strcmp(m->report->kind, "summary") == 0) {
            /* the job's root cause, as the coordinator printed it: every node keeps it in its plaunch.log */
            char *text = strndup((const char *)m->report->json.data, m->report->json.len);
            /* a summary that is not a root-cause block starts with its reason: the coordinator's plaunch got SIGINT */
            int reason_line = text && strstr(text, "plaunch: =====") != text && strchr(text, '\n');
            if (text)
                log_block(text, 0);
            if (!ac->job->opt.quiet && reason_line)
                fprintf(stderr, "%.*s\n", (int)(strchr(text, '\n') - text), text);
            else if (!ac->job->opt.quiet)
                fprintf(stderr, "plaunch: the job failed; its root cause is in %s/plaunch.log and on the "
                                "coordinator's terminal\n", ac->job->log_dir);
            free(text);
        }
        break;
    case WIRE_BYE:
        log_info("coordinator: the job is over, exit status %u", m->bye->exit_status);
        s_finish(ac, (int)m->bye->exit_status);
        break;
    default:
        log_warn("unexpected %s from the coordinator", wire_type_name(m->body_case));
    }
}

static void s_link_msg(void *arg, const wire_msg_t *m)
{
    s_on_msg(arg, m);
}

static void s_link_drop(void *arg, const char *reason, int fatal)
{
    agentctl_t *ac = arg;
    if (fatal) {
        log_error("%s; check that every node has the same --token or certificates of the same job CA", reason);
        s_finish(ac, 2);
        return;
    }
    log_warn("%s; starting a new session", reason);
}

static void s_local_msg(void *arg, const wire_msg_t *m)
{
    s_on_msg(arg, m);
}

/* ---- to the coordinator ------------------------------------------------------------------------- */

static void s_send_join(agentctl_t *ac)
{
    struct job *job = ac->job;
    Plaunch__Join j = PLAUNCH__JOIN__INIT;
    wire_msg_t m;
    int ports[WIRE_MAX_LOCAL + 1];
    uint32_t wports[WIRE_MAX_LOCAL];
    if (ac->st != AC_RUNNING && net_free_ports(job->host_addr, ports, job->nworkers + 1) < 0) {
        log_error("cannot find free TCP ports on %s: %s; set --host to an address of this node", job->host_addr,
                  strerror(errno));
        s_finish(ac, 125);
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
        s_set_state(ac, AC_JOINING);
    s_up(ac, &m);
}

static int s_hb_tick(loop_t *loop, int id, void *arg)
{
    agentctl_t *ac = arg;
    const struct opts *o = &ac->job->opt;
    uint64_t now = loop_now_ns();
    ac->hb_timer = 0;
    if (ac->st == AC_DONE)
        return 0;
    if (!ac->cs) {
        if (!ac->assigned && ac->heard && now - ac->started_ns > (uint64_t)(o->rdzv_timeout * 1e9)) {
            log_error("the coordinator at %s did not form the job within --rdzv-timeout %g s (not enough nodes "
                      "joined?)", ac->endpoint, o->rdzv_timeout);
            s_finish(ac, 125);
            return 0;
        }
        if (!ac->assigned && now - ac->started_ns > (uint64_t)(o->rdzv_timeout * 1e9)) {
            log_error("no answer from the coordinator at %s within --rdzv-timeout %g s: is plaunch running there, "
                      "with the same credentials, and is the port reachable?", ac->endpoint, o->rdzv_timeout);
            s_finish(ac, 125);
            return 0;
        }
        if (ac->assigned && now - ac->last_heard_ns > (uint64_t)(o->heartbeat_timeout * 1e9)) {
            log_error("lost the coordinator at %s: no message for %.1f s (--heartbeat-timeout %g); stopping the "
                      "workers", ac->endpoint, (double)(now - ac->last_heard_ns) / 1e9, o->heartbeat_timeout);
            s_finish(ac, 125);
            return 0;
        }
        if (ac->heard && link_is_open(ac->link) && now - ac->hb_sent_ns >= (uint64_t)(o->heartbeat * 1e9) * 9 / 10) {
            ac->hb_sent_ns = now;
            Plaunch__Heartbeat hb = PLAUNCH__HEARTBEAT__INIT;
            wire_msg_t m;
            hb.seq = ++ac->hb_seq;
            hb.mono_ns = now;
            wire_init(&m, ac->job->job_id, (uint32_t)ac->job->generation, WIRE_HEARTBEAT, &hb);
            s_up(ac, &m);
        }
    }
    ac->hb_timer = loop_timer_after_ms(loop, opts_heartbeat_tick_ms(o), s_hb_tick, ac);
    return 0;
}

/* ---- supervisor hooks ----------------------------------------------------------------------------- */

static int s_setup(void *arg, sup_t *s, loop_t *loop)
{
    agentctl_t *ac = arg;
    char err[1024];
    ac->sup = s;
    ac->loop = loop;
    ac->started_ns = loop_now_ns();
    s_set_state(ac, AC_CONNECTING);
    console_attach(loop); /* a stalled console reader costs lines, never the loop */
    if (services_open(&ac->sv, ac->job, loop, err, sizeof err) < 0) {
        log_error("%s", err);
        return -1;
    }
    ac->sv.up = s_worker_up;
    ac->sv.up_arg = ac;
    snprintf(ac->endpoint, sizeof ac->endpoint, "tcp://%s:%d", ac->master_ip, ac->master_port);
    if (ac->hosts_coord) {
        ac->cs = coord_server_new(ac->job, loop, ac->sv.zctx, ac->job->multi ? ac->endpoint : NULL, ac->tls,
                                  s_local_msg, ac, err, sizeof err);
        if (!ac->cs && errno == EADDRINUSE && ac->job->multi && !ac->job->opt.insecure) {
            /* another plaunch on this machine took the port between our check and our bind: join it */
            int insecure = 0;
            log_info("another plaunch here hosts the coordinator at %s: joining it", ac->endpoint);
            tls_ctx_destroy(&ac->tls);
            ac->tls = creds_tls(&ac->job->opt, ac->job->host_addr, ac->job->hostname, 0, "", &insecure, err,
                                sizeof err);
            ac->hosts_coord = 0;
            if (!ac->tls) {
                log_error("%s", err);
                return -1;
            }
        } else if (!ac->cs && errno == EADDRINUSE && ac->job->multi) {
            ac->hosts_coord = 0; /* plaintext: the same credentials (none) serve as a client */
        } else if (!ac->cs) {
            log_error("%s", err);
            return -1;
        } else {
            coord_server_local_hello(ac->cs);
        }
    }
    if (!ac->hosts_coord) {
        ac->link = link_new(ac->sv.zctx, loop, ac->endpoint, ac->tls, s_link_msg, s_link_drop, ac, err, sizeof err);
        if (!ac->link) {
            log_error("%s", err);
            return -1;
        }
    }
    if (ac->job->multi)
        ac->hb_timer = loop_timer_after_ms(loop, (int64_t)(ac->job->opt.heartbeat * 1000), s_hb_tick, ac);
    return 0;
}

static void s_gen_start(void *arg, const struct job *job)
{
    agentctl_t *ac = arg;
    errfile_clear(job);
    services_generation(&ac->sv, (uint32_t)job->generation, (uint32_t)job->world_size);
}

static void s_worker_exit(void *arg, const struct job *job, const struct worker *w)
{
    agentctl_t *ac = arg;
    if (WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0)
        return;
    Plaunch__WorkerExit x = PLAUNCH__WORKER_EXIT__INIT;
    wire_msg_t m;
    char tail[8192], *lines[20];
    size_t n = 0;
    output_tail(w, 20, tail, sizeof tail);
    for (char *line = strtok(tail, "\n"); line && n < 20; line = strtok(NULL, "\n"))
        lines[n++] = line[0] == ' ' && strlen(line) > 6 ? line + 6 : line; /* drop the "    | " indent */
    for (size_t i = 0; i < n; i++)
        if (strlen(lines[i]) > WIRE_MAX_TEXT)
            lines[i][WIRE_MAX_TEXT] = '\0';
    x.global_rank = (uint32_t)w->rank;
    x.local_rank = (uint32_t)w->local_rank;
    x.pid = (uint32_t)w->pid;
    x.exit_code = WIFEXITED(w->status) ? (uint32_t)WEXITSTATUS(w->status) : 0;
    x.signal = WIFSIGNALED(w->status) ? (uint32_t)WTERMSIG(w->status) : 0;
    x.runtime_ms = (w->exit_ns - w->start_ns) / 1000000;
    x.exit_time_unix_ms = (uint64_t)time(NULL) * 1000;
    x.n_log_tail = n;
    x.log_tail = lines;
    char quote[ERRFILE_MAX_LINES][ERRFILE_LINE], *qlines[ERRFILE_MAX_LINES], path[PATH_MAX + 32];
    errfile_path(job->log_dir, w->rank, path, sizeof path);
    x.n_error_quote = (size_t)errfile_quote(path, x.exit_time_unix_ms - x.runtime_ms, quote, ERRFILE_MAX_LINES);
    for (size_t i = 0; i < x.n_error_quote; i++)
        qlines[i] = quote[i];
    x.error_quote = qlines;
    wire_init(&m, job->job_id, (uint32_t)job->generation, WIRE_WORKER_EXIT, &x);
    s_up(ac, &m);
}

static void s_gen_over(void *arg, const struct job *job, int code)
{
    agentctl_t *ac = arg;
    ac->last_code = code;
    if (ac->st == AC_DONE)
        return;
    if (ac->stop_reason == PLAUNCH__STOP__REASON__RESTART) {
        s_set_state(ac, AC_VERDICT);
        s_send_join(ac);
    } else if (ac->stop_reason || code == 0) {
        s_send_bye(ac, code);
    } else {
        s_set_state(ac, AC_VERDICT); /* our failure: the coordinator decides between restart and the end */
    }
}

static void s_stop_signal(void *arg, int sig)
{
    agentctl_t *ac = arg;
    if (ac->cs) {
        coord_server_stop_signal(ac->cs, sig);
    } else if (ac->st != AC_RUNNING) {
        s_send_bye(ac, 128 + sig);
        s_finish(ac, 128 + sig);
    }
}

static void s_teardown(void *arg)
{
    agentctl_t *ac = arg;
    if (ac->hb_timer > 0)
        loop_timer_cancel(ac->loop, ac->hb_timer);
    if (ac->state_timer > 0)
        loop_timer_cancel(ac->loop, ac->state_timer);
    console_detach();
    link_destroy(&ac->link);
    coord_server_destroy(&ac->cs);
    services_close(&ac->sv);
    tls_ctx_destroy(&ac->tls);
}

/* ---- setup ------------------------------------------------------------------------------------------ */

agentctl_t *agentctl_new(struct job *job, const char *retry_hint, char *err, size_t errlen)
{
    agentctl_t *ac = calloc(1, sizeof *ac);
    char host[256];
    int insecure = 0;
    if (!ac) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ac->job = job;
    ac->job_id_given = job->opt.job_id[0] != '\0';
    job->node_rank = -1;
    if (!job->multi) { /* one node: the same path, with the coordinator in this process and no network */
        ac->hosts_coord = 1;
        snprintf(ac->master_ip, sizeof ac->master_ip, "%s", job->host_addr);
        return ac;
    }
    if (creds_parse_master(job->opt.master, host, sizeof host, ac->master_ip, sizeof ac->master_ip, &ac->master_port,
                           err, errlen) < 0)
        goto error;
    /* The node that owns the address hosts the coordinator; on a machine running several nodes (tests,
     * benchmarks on loopback) the first to take the port does, the others join it. */
    ac->hosts_coord = creds_is_local_addr(ac->master_ip) && creds_port_free(ac->master_ip, ac->master_port);
    if (!job->opt.host[0]) {
        if (ac->hosts_coord)
            snprintf(job->host_addr, sizeof job->host_addr, "%s", ac->master_ip);
        else if (creds_route_addr(ac->master_ip, ac->master_port, job->host_addr, sizeof job->host_addr) < 0) {
            snprintf(err, errlen, "no route from this node to the coordinator %s: %s", job->opt.master, strerror(errno));
            goto error;
        }
    }
    ac->tls = creds_tls(&job->opt, job->host_addr, job->hostname, ac->hosts_coord, retry_hint, &insecure, err, errlen);
    if (!ac->tls && !insecure)
        goto error;
    log_info("node %s (%s): %s the coordinator at %s:%d", job->hostname, job->host_addr,
             ac->hosts_coord ? "hosting" : "joining", ac->master_ip, ac->master_port);
    return ac;
error:
    free(ac);
    return NULL;
}

void agentctl_ctl(agentctl_t *ac, struct sup_ctl *ctl)
{
    memset(ctl, 0, sizeof *ctl);
    ctl->arg = ac;
    ctl->setup = s_setup;
    ctl->gen_start = s_gen_start;
    ctl->worker_exit = s_worker_exit;
    ctl->gen_over = s_gen_over;
    ctl->stop_signal = s_stop_signal;
    ctl->teardown = s_teardown;
}

void agentctl_destroy(agentctl_t **ac)
{
    if (!ac || !*ac)
        return;
    free(*ac);
    *ac = NULL;
}
