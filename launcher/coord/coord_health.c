/* coord_health: the job's health on the coordinator: every node's rank summaries (REPORT HEALTH, checked as a
 * peer's bytes), and at the job's end the findings across all of them and the Health block; and the goodput model's
 * feed of what only nodes know (REPORT NODE_STATE), status.json once a second, the ledger and the Goodput block. */
#include "launcher/coord/coord_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/console.h"
#include "common/esc/esc.h"
#include "common/log.h"
#include "common/loop.h"
#include "launcher/monitor/diagnosis/mon_json.h"

/* The place of rank's summary in cs->health.sum, or -1 (an index by rank: a scan per rank made 65,536 ranks' reports
 * cost billions of comparisons). */
static int s_at(coord_server_t *cs, int rank)
{
    return rank < cs->health.nat && cs->health.at[rank] > 0 ? cs->health.at[rank] - 1 : -1;
}

static int s_index(coord_server_t *cs, int rank, int k)
{
    if (rank >= cs->health.nat) {
        int n = cs->health.nat ? cs->health.nat : 256;
        while (n <= rank)
            n *= 2;
        int *at = realloc(cs->health.at, (size_t)n * sizeof *at);
        if (!at)
            return -1;
        memset(at + cs->health.nat, 0, (size_t)(n - cs->health.nat) * sizeof *at);
        cs->health.at = at;
        cs->health.nat = n;
    }
    cs->health.at[rank] = k + 1;
    return 0;
}

/* The first few refused reports are logged, the rest counted (a node gets no log line per frame). */
static void s_refused(coord_server_t *cs, const struct peer *p, const char *what, int rank)
{
    if (++cs->health.bad <= 3)
        log_warn("node %d (%s): health report%s dropped: %s%s", p->node_rank, p->host, rank >= 0 ? " of a rank" : "",
                 what, cs->health.bad == 3 ? " (further ones are not logged)" : "");
}

int coord_health_add(coord_server_t *cs, int peer, const Plaunch__Health *r)
{
    struct peer *p = &cs->peers[peer];
    struct mon_rank_summary *in = calloc(WIRE_MAX_LOCAL, sizeof *in);
    char err[256];
    int n = in ? mon_json_decode((const char *)r->summaries.data, r->summaries.len, in, WIRE_MAX_LOCAL, err, sizeof err) : -1;
    if (n < 0) {
        s_refused(cs, p, in ? err : "out of memory", -1);
        free(in);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (in[i].rank < 0 || in[i].rank >= WIRE_MAX_WORLD) {
            s_refused(cs, p, "no such rank", in[i].rank < 0 ? 0 : in[i].rank);
            continue;
        }
        int k = s_at(cs, in[i].rank);
        if (k < 0) {
            k = cs->health.n;
            if (cs->health.n == cs->health.cap) {
                int cap = cs->health.cap ? 2 * cs->health.cap : 64;
                struct mon_rank_summary *h = realloc(cs->health.sum, (size_t)cap * sizeof *h);
                if (!h)
                    break;
                cs->health.sum = h;
                cs->health.cap = cap;
            }
            if (s_index(cs, in[i].rank, k) < 0)
                break;
            cs->health.n++;
        }
        cs->health.sum[k] = in[i];
    }
    free(in);
    return 0;
}

void coord_health_preflight(coord_server_t *cs, const char *host, const Plaunch__Join *j)
{
    struct coord_health *h = &cs->health;
    int k = 0;
    while (k < h->npf && strcmp(h->pf[k].host, host) != 0)
        k++;
    if (k == h->npf && j->n_preflight == 0)
        return;
    if (k == h->npf) {
        if (h->npf == COORD_PF_NODES || (!h->pf && !(h->pf = calloc(COORD_PF_NODES, sizeof *h->pf)))) {
            h->pf_lost++;
            return;
        }
        h->npf++;
        snprintf(h->pf[k].host, sizeof h->pf[k].host, "%s", host);
    }
    size_t len = 0; /* the wire bounds them: at most WIRE_MAX_PREFLIGHT lines of WIRE_MAX_TEXT bytes */
    for (size_t i = 0; i < j->n_preflight; i++)
        len += strlen(j->preflight[i]) + 1;
    char *lines = malloc(len + 1);
    if (!lines)
        return;
    free(h->pf[k].lines);
    h->pf[k].lines = lines;
    h->pf[k].n = (int)j->n_preflight;
    for (size_t i = 0; i < j->n_preflight; i++) {
        size_t l = strlen(j->preflight[i]) + 1;
        memcpy(lines, j->preflight[i], l);
        lines += l;
    }
}

/* The preflight's lines of the block: "health: preflight: N findings on M nodes", then each, escaped. */
static int s_monitor_block(coord_server_t *cs, char *buf, size_t cap);

static size_t s_preflight_block(const struct coord_health *h, char *buf, size_t cap)
{
    int n = 0, nodes = 0;
    size_t len = 0;
    for (int k = 0; k < h->npf; k++) {
        n += h->pf[k].n;
        nodes += h->pf[k].n > 0;
    }
    if (n == 0 || cap < 2)
        return 0;
    len += (size_t)snprintf(buf, cap, "plaunch: health: preflight: %d finding%s on %d node%s%s (plaunch.log has "
                            "them)\n", n, n == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s",
                            h->pf_lost ? ", more on nodes not listed" : "");
    for (int k = 0; k < h->npf && len < cap; k++) {
        const char *l = h->pf[k].lines;
        for (int i = 0; i < h->pf[k].n && len + 64 < cap; i++, l += strlen(l) + 1) {
            char safe[4 * WIRE_MAX_TEXT + 1];
            esc_term(safe, sizeof safe, l, strlen(l), 0);
            len += (size_t)snprintf(buf + len, cap - len, "plaunch:   %s: %s\n", h->pf[k].host, safe);
        }
    }
    return len < cap ? len : cap - 1;
}

static int s_by_rank(const void *a, const void *b)
{
    const struct mon_rank_summary *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int coord_health_block(coord_server_t *cs, char *buf, size_t cap)
{
    size_t pre = s_preflight_block(&cs->health, buf, cap);
    if (pre == 0)
        return s_monitor_block(cs, buf, cap);
    s_monitor_block(cs, buf + pre, cap - pre);
    return 1; /* a finding before the start is worth the terminal */
}

static int s_monitor_block(coord_server_t *cs, char *buf, size_t cap)
{
    const struct mon_thresh *th = cs->thresh;
    buf[0] = '\0';
    if (cs->health.n == 0) {
        if (cs->steplag[0])
            snprintf(buf, cap, "plaunch: ===== health: step rates =====\n%s", cs->steplag);
        return cs->steplag[0] != '\0';
    }
    qsort(cs->health.sum, (size_t)cs->health.n, sizeof *cs->health.sum, s_by_rank);
    for (int i = 0; i < cs->health.n; i++) /* the index follows the sort (reports may still come) */
        cs->health.at[cs->health.sum[i].rank] = i + 1;
    int max = 4 * cs->health.n + 16;
    struct mon_finding *f = calloc((size_t)max, sizeof *f);
    int nf = f ? mon_diag_job(cs->health.sum, cs->health.n, th, f, max) : 0;
    mon_diag_block(cs->health.sum, cs->health.n, th, f, nf, buf, cap);
    free(f);
    size_t len = strlen(buf);
    if (cs->steplag[0] && len + strlen(cs->steplag) < cap) /* the step-rate stragglers (coord_hang.c) */
        memcpy(buf + len, cs->steplag, strlen(cs->steplag) + 1);
    int judged = 0;
    for (int i = 0; i < cs->health.n && !judged; i++)
        judged = cs->health.sum[i].steady_s >= th->min_steady_s;
    return nf > 0 || judged || cs->steplag[0];
}

void coord_health_free(coord_server_t *cs)
{
    for (int k = 0; k < cs->health.npf; k++)
        free(cs->health.pf[k].lines);
    free(cs->health.pf);
    cs->health.pf = NULL;
    cs->health.npf = 0;
    free(cs->health.sum);
    free(cs->health.at);
    cs->health.sum = NULL;
    cs->health.at = NULL;
}

/* ---- goodput: the model of the job's time (launcher/goodput/), fed from what the coordinator sees ------------ */

#define CG_STATUS_MS 1000 /* status.json at most once a second */

static int s_gp_tick(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    char err[512];
    (void)id;
    cs->gp_timer = loop_timer_after_ms(loop, CG_STATUS_MS, s_gp_tick, cs);
    if (gp_ledger_flush(cs->gp, err, sizeof err) < 0 && !cs->gp_warned++)
        log_warn("goodput ledger: %s (the Goodput block at the end still comes)", err);
    if (gp_status_write(cs->gp, cs->job->node.log_dir, loop_now_ns(), err, sizeof err) < 0 && !cs->gp_status_warned++)
        log_warn("status.json: %s (plaunch status --master still answers)", err);
    if (cs->status_line) {
        char line[CONSOLE_STATUS_MAX + 1];
        struct winsize ws;
        int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
        gp_status_line(cs->gp, loop_now_ns(), cols < CONSOLE_STATUS_MAX ? cols : CONSOLE_STATUS_MAX, line,
                       sizeof line);
        console_status(line);
    }
    return 0;
}

int coord_goodput_start(coord_server_t *cs)
{
    char err[512];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    cs->gp = gp_new(cs->job_id, loop_now_ns(), (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (!cs->gp)
        return -1;
    if (gp_ledger_open(cs->gp, cs->job->node.log_dir, err, sizeof err) < 0)
        log_warn("goodput ledger: %s (the Goodput block at the end still comes)", err);
    cs->gp_timer = loop_timer_after_ms(cs->loop, CG_STATUS_MS, s_gp_tick, cs);
    /* the status line: only on an interactive terminal, never on a pipe or a file */
    cs->status_line = !cs->job->opt.quiet && console_status_able();
    return 0;
}

void coord_goodput_free(coord_server_t *cs)
{
    if (cs->gp_timer > 0)
        loop_timer_cancel(cs->loop, cs->gp_timer);
    cs->gp_timer = 0;
    if (cs->status_line)
        console_status(NULL);
    cs->status_line = 0;
    gp_free(&cs->gp);
}

/* A node's REPORT NODE_STATE (agent_node.c), its fields bound by the wire table: only the node's own ranks count;
 * one of another generation says nothing. */
int coord_goodput_node(coord_server_t *cs, int peer, uint32_t generation, const Plaunch__NodeState *ns)
{
    const struct peer *p = &cs->peers[peer];
    const struct gp_node *gn = gp_node(cs->gp, p->node_rank);
    if (generation != (uint32_t)cs->generation || cs->state != CS_RUNNING)
        return 0;
    double util = 0, mem = 0, total = 0;
    int n = 0;
    for (size_t i = 0; i < ns->n_ranks; i++) {
        const Plaunch__NodeRankGpu *e = ns->ranks[i];
        if (!gn || (int64_t)e->rank < gn->first_rank || (int64_t)e->rank >= gn->first_rank + gn->nranks) {
            if (++cs->health.bad <= 3)
                log_warn("node %d (%s): node state dropped: rank %u is not this node's", p->node_rank, p->host,
                         e->rank);
            return -1;
        }
        double u = e->util_permille < 0 ? NAN : e->util_permille / 10.0;
        double m = e->mem_mib < 0 ? NAN : (double)e->mem_mib, t = e->total_mib < 0 ? NAN : (double)e->total_mib;
        gp_rank_gpu(cs->gp, (int)e->rank, u, m, t);
        if (!isnan(u))
            util += u, mem += isnan(m) ? 0 : m, total += isnan(t) ? 0 : t, n++;
    }
    gp_node_heard(cs->gp, p->node_rank, loop_now_ns(), ns->started_ago_ms, ns->progress_ago_ms, n ? util / n : -1,
                  mem, total);
    return 0;
}

void coord_goodput_finish(coord_server_t *cs, int status)
{
    static char text[16 << 10];
    char err[512];
    uint64_t now = loop_now_ns();
    if (cs->status_line)
        console_status(NULL);
    cs->status_line = 0;
    gp_mark(cs->gp, GP_TEARDOWN, now); /* a final incident: every node's workers stopped */
    gp_finish(cs->gp, now, status);
    if (gp_ledger_flush(cs->gp, err, sizeof err) < 0)
        log_warn("goodput ledger: %s", err);
    if (gp_status_write(cs->gp, cs->job->node.log_dir, now, err, sizeof err) < 0)
        log_warn("status.json: %s", err);
    struct gp_summary s;
    gp_summary(cs->gp, now, &s);
    gp_block(cs->gp, now, text, sizeof text);
    /* on the terminal when something cost time, or the job ran long enough for the figure to mean something */
    if (text[0])
        log_block(text, (s.nincidents > 0 || s.wall_s >= 60) && !cs->job->opt.quiet);
}
