/* coord_end: how a multi-node job's generations end: worker failures (restart or end), lost nodes, stop
 * signals, rendezvous deadlines, and the end of the job for everyone (root-cause summary, BYE). */
#include "launcher/coord/coord_priv.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/esc/esc.h"
#include "common/log.h"

void coord_end_stop_all(coord_server_t *cs, int reason, int sig, const char *text)
{
    Plaunch__Stop st = PLAUNCH__STOP__INIT;
    wire_msg_t m;
    st.reason = reason;
    st.signal = (uint32_t)sig;
    st.grace_s = (uint32_t)cs->job->opt.grace;
    st.text = (char *)text;
    wire_init(&m, cs->job_id, cs->generation, WIRE_STOP, &st);
    if (reason != PLAUNCH__STOP__REASON__RESTART && cs->state != CS_DONE) {
        coord_assign_set_state(cs, CS_ENDING);
        coord_transport_rendezvous_deadline(cs, 0);
        coord_transport_last_call(cs, -1);
    }
    coord_assign_broadcast(cs, &m);
}

void coord_end_restart(coord_server_t *cs, const char *why)
{
    const struct opts *o = &cs->job->opt;
    cs->generation++; /* first: members come back for the new generation */
    coord_assign_set_state(cs, CS_RESTARTING);
    cs->wait_for_more = 0;
    coord_transport_last_call(cs, -1);
    coord_transport_rendezvous_deadline(cs, o->nnodes_min < o->nnodes ? o->elastic_timeout : o->rdzv_timeout);
    log_warn("restarting the job%s: generation %u (%s)", o->nnodes > 1 ? " on every node" : "", cs->generation, why);
    for (int i = 0; i < cs->npeers; i++)
        if (cs->peers[i].used && cs->peers[i].st == PS_MEMBER)
            gp_node_set(cs->gp, cs->peers[i].node_rank, NULL, -1, 0, GP_NODE_RESTARTING, loop_now_ns());
    coord_end_stop_all(cs, PLAUNCH__STOP__REASON__RESTART, 0, why);
    coord_assign_check_ready(cs);
}

/* The Health block, next to the root cause: on this terminal when worth it, in every node's plaunch.log. */
static void s_health(coord_server_t *cs)
{
    static char text[64 << 10];
    wire_msg_t m;
    int loud = coord_health_block(cs, text, sizeof text);
    if (!text[0])
        return;
    Plaunch__Report r;
    Plaunch__HealthBlock hb = PLAUNCH__HEALTH_BLOCK__INIT;
    hb.text = text;
    wire_report_init(&m, &r, cs->job_id, cs->generation, WIRE_R_HEALTH_BLOCK, &hb);
    for (int i = 1; i < cs->npeers; i++) /* the local agent shares this process's log */
        if (cs->peers[i].used && cs->peers[i].st == PS_MEMBER)
            coord_transport_send(cs, i, &m);
    log_block(text, loud && !cs->job->opt.quiet);
}

/* The spares at the end of the job, from the job's model: how many stand by, the swaps made (plaunch.log, and the
 * terminal with any). */
static void s_spares_summary(coord_server_t *cs)
{
    const gp_t *g = cs->gp;
    int n = gp_swaps_total(g), kept = gp_nswaps(g);
    size_t l;
    char text[GP_STATUS_SWAPS * (GP_HOST_MAX + 64) + 256];
    l = (size_t)snprintf(text, sizeof text, "plaunch: spares: %d of --spares %d standing by at the end (%d swapped "
                         "out for failing); %d swap%s%s", gp_spares_count(g, GP_SPARE_STANDBY) +
                         gp_spares_count(g, GP_SPARE_SWAPPED_OUT), cs->job->opt.spares,
                         gp_spares_count(g, GP_SPARE_SWAPPED_OUT), n, n == 1 ? "" : "s", n > kept ? " (the last)" : "");
    for (int i = 0; i < kept && l < sizeof text; i++) {
        const struct gp_swap *w = gp_swap(g, i);
        l += (size_t)snprintf(text + l, sizeof text - l, "%sgeneration %u: node rank %d to %s, %.3f s",
                              i ? "; " : ": ", w->generation, w->node_rank, w->host, w->after_s > 0 ? w->after_s : 0);
    }
    if (l < sizeof text)
        snprintf(text + l, sizeof text - l, "\n");
    log_block(text, n > 0 && !cs->job->opt.quiet);
}

/* The job is over for everyone: the root cause (printed here, written to every node's plaunch.log) and each
 * member's exit status. */
static void s_finish(coord_server_t *cs)
{
    static char text[sizeof cs->verdict.cause + 64];
    Plaunch__Bye bye = PLAUNCH__BYE__INIT;
    wire_msg_t m;
    int status = coord_verdict_status(&cs->verdict);
    if (status != 0) {
        const char *cause = coord_verdict_cause(&cs->verdict);
        snprintf(text, sizeof text, "%s", cause[0] ? cause : "plaunch: the job failed\n");
        snprintf(text + strlen(text), sizeof text - strlen(text),
                 cs->job->opt.nnodes > 1 ? "plaunch: every node exits with %d\n" : "plaunch: exit status %d\n",
                 status);
        Plaunch__Report r;
        Plaunch__Summary sum = PLAUNCH__SUMMARY__INIT;
        char headline[WIRE_MAX_TEXT + 1] = "";
        const char *first = strchr(text, '\n'); /* the text is the cause, then the line of the exit status */
        if (first && strchr(first + 1, '\n') == text + strlen(text) - 1) /* a cause of one line: said on every node */
            snprintf(headline, sizeof headline, "%.*s", (int)(first - text), text);
        sum.exit_status = (uint32_t)status;
        sum.block = text;
        sum.headline = headline;
        wire_report_init(&m, &r, cs->job_id, cs->generation, WIRE_R_SUMMARY, &sum);
        for (int i = 1; i < cs->npeers; i++) /* the local agent shares this process's log */
            if (cs->peers[i].used && cs->peers[i].st == PS_MEMBER)
                coord_transport_send(cs, i, &m);
        log_block(text, 1);
    }
    s_health(cs);
    coord_goodput_finish(cs, status);
    if (cs->job->opt.spares > 0)
        s_spares_summary(cs);
    log_info("job %s over: exit status %d", cs->job_id, status);
    bye.exit_status = (uint32_t)status;
    wire_init(&m, cs->job_id, cs->generation, WIRE_BYE, &bye);
    coord_assign_set_state(cs, CS_DONE);
    coord_assign_broadcast(cs, &m);
}

void coord_end_maybe_finish(coord_server_t *cs)
{
    if (cs->state != CS_ENDING && cs->state != CS_RUNNING)
        return;
    /* from where the last look stopped: a BYE never takes one back, and a JOIN or ASSIGN resets the cursor */
    for (; cs->bye_cursor < cs->npeers; cs->bye_cursor++) {
        const struct peer *p = &cs->peers[cs->bye_cursor];
        if (p->used && p->st == PS_MEMBER && !p->byed && !p->spare) /* spares have no workers to end */
            return;
    }
    s_finish(cs);
}

#define CE_QUOTE_LINE 200 /* bytes of one quoted line of an error file shown (its node cuts them shorter) */
#define CE_QUOTE_LINES 10

/* n lines a node sent, each under prefix, cut at max bytes and made safe for a terminal (esc_term: a worker's
 * output or its error file may hold escape sequences, and this block is printed on the coordinator's terminal).
 * Into out (cap >= 1, NUL-terminated): the last whole lines that fit. */
static void s_quote_lines(const char *prefix, char *const *lines, size_t n, size_t max, char *out, size_t cap)
{
    char safe[WIRE_MAX_TEXT * 4 + 1];
    size_t first = n, need = 1, plen = strlen(prefix);
    while (first > 0) { /* the last lines matter most: count back while they fit */
        size_t k = plen + esc_term(safe, sizeof safe, lines[first - 1], strnlen(lines[first - 1], max), 0) + 1;
        if (need + k > cap)
            break;
        need += k;
        first--;
    }
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = first; i < n; i++) {
        esc_term(safe, sizeof safe, lines[i], strnlen(lines[i], max), 0);
        o += (size_t)snprintf(out + o, cap - o, "%s%s\n", prefix, safe);
    }
}

/* The lines the failed rank's agent quoted from its TORCHELASTIC_ERROR_FILE (torch's @record), under a heading
 * that says where the file is (the path its node sent; on another node, its name there); nothing when the rank
 * wrote none. */
static void s_quote_error_file(const struct peer *p, const Plaunch__WorkerExit *x, char *out, size_t cap)
{
    char where[WIRE_MAX_PATH + WIRE_MAX_HOST + 64];
    if (!x->n_error_quote)
        return;
    const char *name = strrchr(x->error_file, '/') ? strrchr(x->error_file, '/') + 1 : x->error_file;
    if (!name[0])
        name = "its error file"; /* a node that did not say */
    if (p->local)
        snprintf(where, sizeof where, "%s", x->error_file[0] ? x->error_file : name);
    else
        snprintf(where, sizeof where, "%s in the --log-dir of %s", name, p->host);
    char safe[sizeof where * 4];
    esc_term(safe, sizeof safe, where, strlen(where), 0);
    size_t o = (size_t)snprintf(out, cap, "  error file    : %s (TORCHELASTIC_ERROR_FILE)\n", safe);
    if (o < cap)
        s_quote_lines("    > ", x->error_quote, x->n_error_quote < CE_QUOTE_LINES ? x->n_error_quote : CE_QUOTE_LINES,
                      CE_QUOTE_LINE, out + o, cap - o);
}

/* The lines that describe a failed worker, for a root cause (after its heading). */
static void s_failure_text(coord_server_t *cs, int peer, const Plaunch__WorkerExit *x, char *out, size_t cap)
{
    struct peer *p = &cs->peers[peer];
    char how[96], when[40], tail[1400] = "";
    if (x->signal)
        snprintf(how, sizeof how, "killed by signal %u (SIG%s)", x->signal, sigabbrev_np((int)x->signal));
    else
        snprintf(how, sizeof how, "exit code %u", x->exit_code);
    time_t t = (time_t)(x->exit_time_unix_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    s_quote_lines("    | ", x->log_tail, x->n_log_tail, WIRE_MAX_TEXT, tail, sizeof tail);
    char logpath[PATH_MAX + 64], where[WIRE_MAX_HOST * 2 + 64], errq[CE_QUOTE_LINES * (CE_QUOTE_LINE + 8)] = "";
    if (p->local)
        snprintf(logpath, sizeof logpath, "%s/workerlog.%u", cs->job->node.log_dir, x->global_rank);
    else
        snprintf(logpath, sizeof logpath, "workerlog.%u in the --log-dir of %s", x->global_rank, p->host);
    if (cs->job->opt.nnodes > 1)
        snprintf(where, sizeof where, "(local rank %u) on node %d, %s (%s)", x->local_rank, p->node_rank, p->host,
                 p->addr);
    else
        snprintf(where, sizeof where, "on %s", p->host);
    s_quote_error_file(p, x, errq, sizeof errq);
    if (snprintf(out, cap,
                 "  first failure : rank %u %s, generation %u\n"
                 "  pid           : %u\n  status        : %s\n  time          : %s, after %.3f s of running\n"
                 "  log           : %s\n"
                 "%s"
                 "  last lines of its log:\n%s",
                 x->global_rank, where, cs->generation, x->pid, how, when, (double)x->runtime_ms / 1000, logpath,
                 errq, tail[0] ? tail : "    (empty)\n") >= (int)cap)
        out[cap - 2] = '\n'; /* cut: the block still ends a line */
}

static void s_record_failure(coord_server_t *cs, const Plaunch__WorkerExit *x, const char *text)
{
    coord_verdict_fail(&cs->verdict, COORD_VERDICT_JUDGED, coord_verdict_worker_status(x->exit_code, x->signal),
                       "plaunch: ===== job %s failed: root cause =====\n%s", cs->job_id, text);
}

/* Did the failed generation progress (stepped, best: coord_hang_stepped)? 1 or 0, and what says so into what. */
static int s_progressed(coord_server_t *cs, int stepped, long long best, char *what, size_t cap)
{
    double ran = (double)(loop_now_ns() - cs->gen_ns) / 1e9, need = cs->job->opt.no_progress_time;
    if (stepped == 1) {
        snprintf(what, cap, "a step beyond %lld in generation %u", best, cs->generation);
        return 1;
    }
    if (stepped == 0) {
        snprintf(what, cap, "generation %u reported no step beyond %lld (the best before it)", cs->generation, best);
        return 0;
    }
    snprintf(what, cap, "generation %u ran %.1f s, %s --no-progress-time %g s (no steps reported)", cs->generation,
             ran, ran >= need ? "at least" : "less than", need);
    return ran >= need;
}

/* The node of this failure failed the generation before too: the failure is the node's. With a spare standing
 * by, the node is swapped out (it becomes the last spare); without one it is retried. */
static void s_node_fault(coord_server_t *cs, int peer)
{
    struct peer *p = &cs->peers[peer];
    if (coord_members_spares(cs, 1) > 0) {
        p->suspect = 1;
        cs->members.lost_ns = loop_now_ns();
        log_warn("node %d (%s, %s) failed two generations in a row: the failure is the node's; a spare takes node "
                 "rank %d", p->node_rank, p->host, p->addr, p->node_rank);
    } else if (cs->job->opt.spares > 0) {
        log_warn("node %d (%s, %s) failed two generations in a row: the failure is the node's, but no spare stands "
                 "by (--spares): it is retried", p->node_rank, p->host, p->addr);
    }
}

void coord_end_worker_exit(coord_server_t *cs, int peer, const wire_msg_t *m, int stepped, long long best)
{
    const Plaunch__WorkerExit *x = m->worker_exit;
    struct peer *p = &cs->peers[peer];
    if (x->exit_code == 0 && x->signal == 0)
        return;
    if (coord_verdict_held(&cs->verdict)) {
        log_info("rank %u on node %d (%s) ended while the hung job's stacks are taken: %s %u", x->global_rank,
                 p->node_rank, p->host, x->signal ? "signal" : "exit code", x->signal ? x->signal : x->exit_code);
        return; /* ended for its traceback (SIGABRT), or by the hang itself: the verdict is the hang's */
    }
    if (cs->state != CS_RUNNING || m->generation != cs->generation) {
        log_info("rank %u on node %d (%s) ended by the stop: %s %u", x->global_rank, p->node_rank, p->host,
                 x->signal ? "signal" : "exit code", x->signal ? x->signal : x->exit_code);
        return; /* an effect of the stop already under way */
    }
    if (cs->job->node.multi)
        log_warn("rank %u on node %d (%s) failed: %s %u", x->global_rank, p->node_rank, p->host,
                 x->signal ? "signal" : "exit code", x->signal ? x->signal : x->exit_code);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t wall_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    gp_incident_open(cs->gp, loop_now_ns(), GP_CAUSE_WORKER,
                     &(struct gp_cause_info){ .rank = (int)x->global_rank, .node = p->node_rank, .host = p->host,
                                              .exit_code = x->signal ? -1 : (int)x->exit_code, .signal = (int)x->signal,
                                              .occurred_ago_ms = x->exit_time_unix_ms && wall_ms > x->exit_time_unix_ms
                                                                     ? wall_ms - x->exit_time_unix_ms : 0 });
    static char text[4096];
    char what[200], node[WIRE_MAX_HOST * 2 + 24];
    int want = coord_verdict_restartable(x->exit_code, x->signal);
    s_failure_text(cs, peer, x, text, sizeof text);
    if (want) {
        int progressed = s_progressed(cs, stepped, best, what, sizeof what);
        snprintf(node, sizeof node, "%s %s %u", p->host, p->addr, p->pid);
        int bits = coord_verdict_failed(&cs->verdict, cs->job_id, node, progressed, text, what);
        if (bits & COORD_VERDICT_STOPPED) {
            coord_end_stop_all(cs, PLAUNCH__STOP__REASON__WORKER_FAILED, 0, "restarts made no progress: the job ends");
            return;
        }
        if (!progressed && cs->job->opt.max_no_progress > 0)
            log_warn("no progress before this failure: %s (%d of --max-no-progress-restarts %d)", what,
                     cs->verdict.no_progress, cs->job->opt.max_no_progress);
        if (bits & COORD_VERDICT_NODE_FAULT)
            s_node_fault(cs, peer);
    }
    int n = coord_verdict_restart(&cs->verdict, want);
    if (n > 0) {
        char why[160];
        snprintf(why, sizeof why, "rank %u failed: restart %d of %d", x->global_rank, n, cs->job->opt.max_restarts);
        coord_end_restart(cs, why);
        return;
    }
    s_record_failure(cs, x, text);
    coord_end_stop_all(cs, PLAUNCH__STOP__REASON__WORKER_FAILED, 0, "a worker failed: the job ends");
}

static void s_peer_lost(coord_server_t *cs, int peer, const char *why);

void coord_end_peer_lost(coord_server_t *cs, int peer, const char *why)
{
    int relay = cs->peers[peer].relay;
    s_peer_lost(cs, peer, why); /* the relay first: the root cause names it, not one of the nodes behind it */
    if (relay)
        coord_relay_gone(cs, peer, 1, why);
}

static void s_peer_lost(coord_server_t *cs, int peer, const char *why)
{
    struct peer *p = &cs->peers[peer];
    const struct opts *o = &cs->job->opt;
    if (p->st != PS_MEMBER) {
        coord_peers_drop(cs, peer, why);
        return;
    }
    if (p->spare) {
        log_warn("spare %s (%s) lost: %s; %d spare%s left", p->host, p->addr, why, coord_members_spares(cs, 0) - 1,
                 coord_members_spares(cs, 0) == 2 ? "" : "s");
        coord_peers_drop(cs, peer, NULL);
        if (cs->state == CS_RESTARTING || cs->state == CS_RENDEZVOUS)
            coord_assign_check_ready(cs);
        return;
    }
    log_error("node %d (%s, %s) lost: %s", p->node_rank, p->host, p->addr, why);
    int was_running = cs->state == CS_RUNNING;
    if (was_running || cs->state == CS_RESTARTING)
        cs->members.lost_ns = loop_now_ns(); /* a spare's swap time counts from here */
    char text[512];
    if (snprintf(text, sizeof text, "node %d (%s, %s) was lost in generation %u: %s", p->node_rank, p->host, p->addr,
                 cs->generation, why) >= (int)sizeof text)
        memcpy(text + sizeof text - 4, "...", 4); /* a cut reason says so */
    if (cs->state != CS_RENDEZVOUS && cs->state != CS_DONE) {
        gp_incident_open(cs->gp, loop_now_ns(), GP_CAUSE_NODE,
                         &(struct gp_cause_info){ .rank = -1, .node = p->node_rank, .host = p->host, .exit_code = -1,
                                                  .text = text });
        gp_node_set(cs->gp, p->node_rank, NULL, -1, 0, GP_NODE_LOST, loop_now_ns());
    }
    coord_peers_drop(cs, peer, NULL);
    if (cs->state == CS_RENDEZVOUS || cs->state == CS_RESTARTING) {
        coord_assign_check_ready(cs);
        return;
    }
    if (was_running && o->nnodes_min < o->nnodes) {
        coord_end_restart(cs, text); /* elastic: on the survivors (and whoever joins) */
        return;
    }
    if (was_running && coord_members_spares(cs, 0) > 0) {
        /* a spare takes its rank: same world, same ranks elsewhere; no restart spent (no worker failed) */
        size_t l = strlen(text);
        snprintf(text + l, sizeof text - l, "; a spare takes its node rank");
        coord_end_restart(cs, text);
        return;
    }
    coord_verdict_fail(&cs->verdict, COORD_VERDICT_TOLD, COORD_VERDICT_PLAUNCH,
                       "plaunch: ===== job %s failed: root cause =====\n  %s\n", cs->job_id, text);
    if (was_running)
        coord_end_stop_all(cs, PLAUNCH__STOP__REASON__NODE_LOST, 0, "a node was lost: the job ends");
    coord_end_maybe_finish(cs);
}

void coord_end_rendezvous_timeout(coord_server_t *cs)
{
    const struct opts *o = &cs->job->opt;
    int have = coord_assign_members(cs, cs->generation), elastic = o->nnodes_min < o->nnodes;
    char text[256];
    if (cs->state == CS_RESTARTING && elastic)
        snprintf(text, sizeof text, "only %d of at least %d nodes came back within --elastic-timeout %g s", have,
                 o->nnodes_min, o->elastic_timeout);
    else
        snprintf(text, sizeof text, "only %d of %d nodes joined within --rdzv-timeout %g s", have,
                 elastic ? o->nnodes_min : o->nnodes, o->rdzv_timeout);
    log_error("%s; check that every node runs plaunch with --master pointing here and the same credentials", text);
    coord_verdict_fail(&cs->verdict, COORD_VERDICT_JUDGED, COORD_VERDICT_PLAUNCH,
                       "plaunch: ===== job %s failed =====\n  %s\n", cs->job_id, text);
    coord_end_stop_all(cs, PLAUNCH__STOP__REASON__ERROR, 0, text);
    s_finish(cs);
}

void coord_end_fatal(coord_server_t *cs, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    if (coord_verdict_rank(&cs->verdict) == COORD_VERDICT_FATAL || cs->state == CS_DONE)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    log_error("%s; ending the job (exit status 125)", text);
    coord_verdict_fail(&cs->verdict, COORD_VERDICT_FATAL, COORD_VERDICT_PLAUNCH,
                       "plaunch: ===== job %s failed =====\n  %s\n", cs->job_id, text);
    s_finish(cs);
}
