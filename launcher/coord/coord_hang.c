/* coord_hang: the hang watch of the whole job: every node's progress reports (output and step numbers per rank),
 * the verdict "hung" (no rank progressed for --hang-timeout, or one rank's step stood still that long while others
 * went on), every rank's stacks gathered from every node with a deadline, hang.GENERATION.txt, the root cause and
 * --on-hang; and the step-rate stragglers, named live and in the Health block. */
#include "launcher/coord/coord_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/hang/hang_report.h"
#include "common/log.h"
#include "common/ownfile.h"

/* The stacks of one rank as its agent sent them (REPORT STACKS); the agents' collection deadline, and ours. */
#define HANG_STACKS_MAX (64u << 10)
#define HANG_STACKS_ALL (64u << 20)   /* all ranks together: beyond this a rank's stacks are counted, not kept */
#define HANG_COLLECT_MS 6000
#define HANG_SLACK_MS 2000
#define HANG_RING 64                  /* step samples kept per rank for its rate */

enum hang_state { HS_WATCH, HS_COLLECT, HS_OVER };

struct hang_rank {
    int seen;                         /* a progress report named it in this generation */
    long long step;                   /* -1: none reported */
    uint64_t prog_ns, step_ns;        /* last output or step change; last step change (coordinator's clock) */
    uint64_t rt[HANG_RING];           /* (time, step) at each report, for the step rate */
    long long rs[HANG_RING];
    int rhead, rn;
    int slow;                         /* named as a straggler (until its rate recovers) */
    char node[WIRE_MAX_HOST + 1];
};

struct coord_hang {
    enum hang_state st;
    uint32_t gen;
    uint64_t gen_ns;                  /* the generation began running (the first report after its ASSIGN) */
    int timer, collect_timer;
    int64_t tick_ms;
    struct hang_rank *r;
    int nr;
    char why[512];
    int odd;                          /* the rank the verdict names, -1 none */
    int warn;                         /* this collection only warns: the job goes on (silence without steps) */
    int waiting;                      /* members that have not sent STACKS_DONE */
    char **stacks;                    /* by rank, the JSON its agent sent */
    size_t stacks_bytes;
    int stacks_dropped;
    int bad;                          /* reports refused: the first few are logged, not one line per frame */
    long long best;                   /* the highest step of the generations before this one; -1 none */
};

static void s_reset(coord_server_t *cs, struct coord_hang *h)
{
    for (int i = 0; h->r && i < h->nr; i++)
        h->best = h->r[i].step > h->best ? h->r[i].step : h->best;
    for (int i = 0; h->stacks && i < h->nr; i++)
        free(h->stacks[i]);
    free(h->stacks);
    h->stacks = NULL;
    h->stacks_bytes = 0;
    h->stacks_dropped = 0;
    free(h->r);
    h->nr = cs->world > 0 ? cs->world : 0;
    h->r = h->nr ? calloc((size_t)h->nr, sizeof *h->r) : NULL;
    if (!h->r)
        h->nr = 0;
    uint64_t now = loop_now_ns();
    for (int i = 0; i < h->nr; i++)
        h->r[i].step = -1, h->r[i].prog_ns = h->r[i].step_ns = now;
    h->gen = cs->generation;
    h->gen_ns = now;
    h->st = HS_WATCH;
    h->odd = -1;
    coord_verdict_hold(&cs->verdict, 0);
}

/* ---- step rates: stragglers -------------------------------------------------------------------------- */

/* Steps per second over the last window, -1 without a window's worth of samples. */
static double s_rate(const struct hang_rank *r, uint64_t now, double window_s)
{
    if (r->rn < 2)
        return -1;
    int newest = (r->rhead + HANG_RING - 1) % HANG_RING;
    for (int k = r->rn - 1; k >= 1; k--) {
        int i = (r->rhead + HANG_RING - 1 - k) % HANG_RING;
        double dt = (double)(r->rt[newest] - r->rt[i]) / 1e9;
        if (dt >= window_s && now - r->rt[newest] < (uint64_t)(window_s * 1e9))
            return (double)(r->rs[newest] - r->rs[i]) / dt;
    }
    return -1;
}

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void s_stragglers(coord_server_t *cs, struct coord_hang *h, uint64_t now)
{
    const struct mon_thresh *th = cs->thresh;
    double *rates = malloc((size_t)(h->nr ? h->nr : 1) * sizeof *rates), *sorted;
    int n = 0;
    for (int i = 0; rates && i < h->nr; i++)
        if ((rates[i] = s_rate(&h->r[i], now, th->step_window_s)) >= 0)
            n++;
    if (!rates || n < 3 || !(sorted = malloc((size_t)n * sizeof *sorted))) {
        free(rates);
        return;
    }
    for (int i = 0, k = 0; i < h->nr; i++)
        if (rates[i] >= 0)
            sorted[k++] = rates[i];
    qsort(sorted, (size_t)n, sizeof *sorted, s_cmp_double);
    double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    for (int i = 0; median > 0 && i < h->nr; i++) {
        struct hang_rank *r = &h->r[i];
        if (rates[i] < 0)
            continue;
        int slow = rates[i] < th->step_rate_frac * median;
        if (slow && !r->slow) {
            char line[400];
            if (snprintf(line, sizeof line, "  step-straggler   rank %d (on %.64s): %.3g steps/s over the last %.0f s, "
                         "%.0f %% of the median %.3g of %d ranks: the others wait for it; look at its input, its GPU's "
                         "clocks and its node's load\n", i, r->node, rates[i], th->step_window_s,
                         100 * rates[i] / median, median, n) >= (int)sizeof line)
                line[sizeof line - 2] = '\n';
            log_warn("straggler: %s", line + 19);
            size_t len = strlen(cs->steplag);
            if (len + strlen(line) < sizeof cs->steplag)
                memcpy(cs->steplag + len, line, strlen(line) + 1);
        }
        r->slow = slow;
    }
    free(sorted);
    free(rates);
}

int coord_hang_stepped(coord_server_t *cs, long long *best)
{
    struct coord_hang *h = cs->hang;
    long long top = -1;
    if (!h)
        return -1;
    for (int i = 0; h->gen == cs->generation && h->r && i < h->nr; i++)
        top = h->r[i].step > top ? h->r[i].step : top;
    *best = h->best;
    return top > h->best ? 1 : top >= 0 || h->best >= 0 ? 0 : -1;
}

/* ---- progress reports -------------------------------------------------------------------------------- */

int coord_hang_progress(coord_server_t *cs, int peer, uint32_t generation, const Plaunch__Progress *pr)
{
    struct coord_hang *h = cs->hang;
    struct peer *p = &cs->peers[peer];
    if (!h || cs->state != CS_RUNNING)
        return 0;
    if (h->gen != cs->generation || !h->r)
        s_reset(cs, h);
    if (generation != cs->generation)
        return 0; /* a report of the generation before: nothing to learn */
    uint64_t now = loop_now_ns();
    for (size_t i = 0; i < pr->n_ranks; i++) { /* each field within its bound (the wire layer checked) */
        const Plaunch__ProgressRank *e = pr->ranks[i];
        if ((int64_t)e->rank >= h->nr) {
            if (++h->bad <= 3)
                log_warn("node %d (%s): progress report dropped: rank %u is not a rank of this job", p->node_rank,
                         p->host, e->rank);
            return -1;
        }
        struct hang_rank *r = &h->r[e->rank];
        uint64_t out_ns = now - e->out_age_ms * 1000000ull;
        r->seen = 1;
        snprintf(r->node, sizeof r->node, "%s", p->host);
        if (e->step >= 0) {
            if (e->step != r->step)
                r->step_ns = e->step_age_ms >= 0 ? now - (uint64_t)e->step_age_ms * 1000000ull : now;
            r->step = e->step;
            r->rt[r->rhead] = now, r->rs[r->rhead] = e->step;
            r->rhead = (r->rhead + 1) % HANG_RING;
            r->rn += r->rn < HANG_RING;
        }
        gp_rank_progress(cs->gp, (int)e->rank, p->node_rank, e->step, e->out_age_ms, now);
        uint64_t prog = r->step >= 0 && r->step_ns > out_ns ? r->step_ns : out_ns;
        if (prog > r->prog_ns)
            r->prog_ns = prog;
    }
    return 0;
}

/* ---- the verdict ------------------------------------------------------------------------------------- */

static void s_request_stacks(coord_server_t *cs, struct coord_hang *h)
{
    wire_msg_t m;
    Plaunch__Report r;
    Plaunch__StacksRequest req = PLAUNCH__STACKS_REQUEST__INIT;
    req.deadline_ms = HANG_COLLECT_MS;
    req.abort = !h->warn;
    wire_report_init(&m, &r, cs->job_id, cs->generation, WIRE_R_STACKS_REQUEST, &req);
    h->waiting = 0;
    for (int i = 0; i < cs->npeers; i++)
        if (cs->peers[i].used && cs->peers[i].st == PS_MEMBER && coord_transport_send(cs, i, &m) == 0)
            h->waiting++;
}

static int s_on_collect_deadline(loop_t *loop, int id, void *arg);

struct s_going {
    long long step;
    uint64_t ns;
    int idx;
};

static int s_cmp_going(const void *a, const void *b)
{
    const struct s_going *x = a, *y = b;
    return (x->step > y->step) - (x->step < y->step);
}

/* No rank progressed for the timeout, or one rank's step stood still while others went on: -1 when neither. */
static int s_verdict(coord_server_t *cs, struct coord_hang *h, uint64_t now, char *why, size_t cap)
{
    uint64_t t_ns = (uint64_t)(cs->job->opt.hang_timeout * 1e9), newest = 0;
    if (now - h->gen_ns < t_ns || h->nr == 0)
        return -1;
    for (int i = 0; i < h->nr; i++)
        newest = h->r[i].prog_ns > newest ? h->r[i].prog_ns : newest;
    if (now - newest >= t_ns) {
        snprintf(why, cap, "no rank progressed (wrote output or reported a step) for %.0f s (--hang-timeout %g)",
                 (double)(now - newest) / 1e9, cs->job->opt.hang_timeout);
        return h->nr; /* no rank named yet: the stacks say which */
    }
    /* The ranks still stepping, by step, each with the latest step change at or above its step: for a rank that
     * stood still, one binary search finds whether some rank went past it (a pair scan was quadratic in ranks). */
    struct s_going *g = NULL;
    int ng = 0, odd = -1, stood = 0;
    for (int i = 0; i < h->nr && !stood; i++)
        stood = h->r[i].step >= 0 && now - h->r[i].step_ns >= t_ns;
    for (int i = 0; stood && i < h->nr; i++) {
        const struct hang_rank *q = &h->r[i];
        if (q->step < 0 || now - q->step_ns >= t_ns)
            continue;
        if (!g && !(g = malloc((size_t)h->nr * sizeof *g)))
            return -1; /* out of memory: no verdict this tick */
        g[ng++] = (struct s_going){ q->step, q->step_ns, i };
    }
    if (ng == 0)
        return -1;
    qsort(g, (size_t)ng, sizeof *g, s_cmp_going);
    for (int j = ng - 2; j >= 0; j--) /* g[j] now holds the latest change among g[j..] */
        if (g[j + 1].ns > g[j].ns)
            g[j].ns = g[j + 1].ns, g[j].idx = g[j + 1].idx;
    for (int i = 0; i < h->nr && odd < 0; i++) {
        const struct hang_rank *r = &h->r[i];
        if (r->step < 0 || now - r->step_ns < t_ns)
            continue;
        int lo = 0, hi = ng; /* the first going rank past r's step */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (g[mid].step > r->step)
                hi = mid;
            else
                lo = mid + 1;
        }
        /* it went past r and kept going for at least half the timeout after r stopped: ranks that stop together
         * (all waiting for one) with different counts are not behind each other */
        if (lo < ng && g[lo].ns > r->step_ns + t_ns / 2) {
            const struct hang_rank *q = &h->r[g[lo].idx];
            snprintf(why, cap, "rank %d's step stood at %lld for %.0f s (--hang-timeout %g) while rank %d went on "
                     "to step %lld", i, r->step, (double)(now - r->step_ns) / 1e9, cs->job->opt.hang_timeout,
                     g[lo].idx, q->step);
            odd = i;
        }
    }
    free(g);
    return odd;
}

static int s_tick(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    struct coord_hang *h = cs->hang;
    h->timer = loop_timer_after_ms(loop, h->tick_ms, s_tick, cs);
    if (cs->state != CS_RUNNING)
        return 0;
    if (h->gen != cs->generation || !h->r)
        s_reset(cs, h);
    uint64_t now = loop_now_ns();
    s_stragglers(cs, h, now);
    if (h->st != HS_WATCH)
        return 0;
    int odd = s_verdict(cs, h, now, h->why, sizeof h->why);
    if (odd < 0)
        return 0;
    h->odd = odd < h->nr ? odd : -1;
    h->st = HS_COLLECT;
    /* Silence alone, in a job that reports no steps, is no proof of a hang (an evaluation, a checkpoint write):
     * unless the user named --on-hang, its stacks are taken without ending anything, and the job goes on. */
    int steps = 0;
    for (int i = 0; i < h->nr && !steps; i++)
        steps = h->r[i].step >= 0;
    h->warn = h->odd < 0 && !steps && !cs->job->opt.on_hang_given;
    coord_verdict_hold(&cs->verdict, !h->warn); /* the ranks ended for their tracebacks are no failure */
    if (h->warn) {
        log_warn("%s; taking every rank's stacks (the job goes on)", h->why);
    } else {
        log_error("the job is hung: %s; taking every rank's stacks", h->why);
        gp_incident_open(cs->gp, now, GP_CAUSE_HANG,
                         &(struct gp_cause_info){ .rank = h->odd, .node = -1, .exit_code = -1, .text = h->why,
                                                  .occurred_ago_ms = (uint64_t)(cs->job->opt.hang_timeout * 1000) });
    }
    for (int i = 0; h->stacks && i < h->nr; i++) /* a warning's collection may have come before */
        free(h->stacks[i]);
    free(h->stacks);
    h->stacks = calloc((size_t)h->nr, sizeof *h->stacks);
    h->stacks_bytes = 0;
    h->stacks_dropped = 0;
    s_request_stacks(cs, h);
    h->collect_timer = loop_timer_after_ms(loop, HANG_COLLECT_MS + HANG_SLACK_MS, s_on_collect_deadline, cs);
    return 0;
}

/* ---- stacks and the end of it ------------------------------------------------------------------------ */

static void s_write_file(coord_server_t *cs, const char *text, char *path, size_t cap)
{
    char name[64], err[512];
    snprintf(name, sizeof name, "hang.%u.txt", cs->generation);
    snprintf(path, cap, "%s/%s", cs->job->node.log_dir, name);
    int dirfd = ownfile_open_dir(cs->job->node.log_dir, "log directory", "choose another --log-dir", err, sizeof err);
    int fd = dirfd >= 0 ? ownfile_open(dirfd, cs->job->node.log_dir, name, OWNFILE_TRUNC, "choose another --log-dir",
                                       err, sizeof err) : -1;
    size_t len = strlen(text);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
        log_warn("cannot write %s: %s; the stacks are in plaunch.log only", path, fd < 0 ? err : strerror(errno));
        log_block(text, 0);
        snprintf(path, cap, "plaunch.log (hang.%u.txt could not be written)", cs->generation);
    }
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
}

static void s_conclude(coord_server_t *cs, struct coord_hang *h)
{
    static char text[1 << 20];
    char summary[2048], path[4200], why[700], cause[sizeof cs->verdict.cause];
    if (h->collect_timer > 0)
        loop_timer_cancel(cs->loop, h->collect_timer);
    h->collect_timer = 0;
    h->st = HS_OVER;
    int odd = hang_report_text(cs->job_id, cs->generation, h->why, (const char *const *)h->stacks, h->nr, h->odd,
                              h->stacks_dropped, summary, sizeof summary, text, sizeof text);
    s_write_file(cs, text, path, sizeof path);
    if (h->warn) {
        char block[sizeof summary + 6000];
        snprintf(block, sizeof block,
                 "plaunch: ===== job %s: no progress, stacks taken; the job goes on =====\n  %s, generation %u\n%s"
                 "  stacks        : %s\n  silence alone ends no job that reports no steps: report steps "
                 "(PLAUNCH_PROGRESS_FILE, plaunch_progress) or give --on-hang restart|stop to act on it\n",
                 cs->job_id, h->why, cs->generation, summary, path);
        log_block(block, !cs->job->opt.quiet);
        uint64_t now = loop_now_ns(); /* the next warning after another --hang-timeout of silence */
        for (int i = 0; i < h->nr; i++)
            h->r[i].prog_ns = now;
        h->st = HS_WATCH;
        h->warn = 0;
        return;
    }
    int n = coord_verdict_restart(&cs->verdict, strcmp(cs->job->opt.on_hang, "restart") == 0);
    if (snprintf(cause, sizeof cause,
                 "plaunch: ===== job %s hung: root cause =====\n  %s, generation %u\n%s  stacks        : %s\n",
                 cs->job_id, h->why, cs->generation, summary, path) >= (int)sizeof cause)
        cause[sizeof cause - 2] = '\n'; /* cut: still whole lines' end */
    coord_verdict_hold(&cs->verdict, 0);
    gp_incident_group(cs->gp, summary);
    if (n > 0) {
        log_block(cause, !cs->job->opt.quiet);
        if (odd >= 0)
            snprintf(why, sizeof why, "rank %d hung: restart %d of %d", odd, n, cs->job->opt.max_restarts);
        else
            snprintf(why, sizeof why, "the job hung: restart %d of %d", n, cs->job->opt.max_restarts);
        coord_end_restart(cs, why);
        return;
    }
    coord_verdict_fail(&cs->verdict, COORD_VERDICT_JUDGED, COORD_VERDICT_HUNG, "%s", cause);
    coord_end_stop_all(cs, PLAUNCH__STOP__REASON__WORKER_FAILED, 0, "the job hung: it ends (exit status 124)");
}

static int s_on_collect_deadline(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    struct coord_hang *h = cs->hang;
    if (id != h->collect_timer || h->st != HS_COLLECT)
        return 0;
    h->collect_timer = 0;
    log_warn("stacks: %d node%s did not answer within %.0f s; the report covers the others", h->waiting,
             h->waiting == 1 ? "" : "s", (double)(HANG_COLLECT_MS + HANG_SLACK_MS) / 1000);
    s_conclude(cs, h);
    return 0;
}

int coord_hang_stacks_done(coord_server_t *cs, int peer, const Plaunch__StacksDone *d)
{
    struct coord_hang *h = cs->hang;
    if (!h || h->st != HS_COLLECT)
        return 0; /* late, or unasked: dropped without a word (a hostile peer gets no log line per frame) */
    if (--h->waiting <= 0)
        s_conclude(cs, h);
    return 0;
}

int coord_hang_stacks(coord_server_t *cs, int peer, const Plaunch__Stacks *st)
{
    struct coord_hang *h = cs->hang;
    struct peer *p = &cs->peers[peer];
    if (!h || h->st != HS_COLLECT)
        return 0; /* late, or unasked: dropped without a word (a hostile peer gets no log line per frame) */
    int rank = (int)st->rank;
    if (rank >= h->nr || st->doc.len > HANG_STACKS_MAX) {
        if (++h->bad <= 3)
            log_warn("node %d (%s): stacks report dropped: not one rank's stacks of this job (at most %u KiB)",
                     p->node_rank, p->host, HANG_STACKS_MAX >> 10);
        return -1;
    }
    if (!h->stacks || h->stacks[rank] || h->stacks_bytes + st->doc.len > HANG_STACKS_ALL) {
        h->stacks_dropped++;
        return 0;
    }
    h->stacks[rank] = strndup((const char *)st->doc.data, st->doc.len);
    h->stacks_bytes += h->stacks[rank] ? st->doc.len : 0;
    return 0;
}

int coord_hang_start(coord_server_t *cs)
{
    if (cs->job->opt.hang_timeout <= 0)
        return 0; /* no progress reports come: no hang watch, no step-rate stragglers */
    struct coord_hang *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    h->tick_ms = opts_hang_tick_ms(&cs->job->opt);
    h->gen = UINT32_MAX;
    h->odd = -1;
    h->best = -1;
    h->timer = loop_timer_after_ms(cs->loop, h->tick_ms, s_tick, cs);
    cs->hang = h;
    return 0;
}

void coord_hang_destroy(coord_server_t *cs)
{
    struct coord_hang *h = cs->hang;
    if (!h)
        return;
    if (h->timer > 0)
        loop_timer_cancel(cs->loop, h->timer);
    if (h->collect_timer > 0)
        loop_timer_cancel(cs->loop, h->collect_timer);
    for (int i = 0; h->stacks && i < h->nr; i++)
        free(h->stacks[i]);
    free(h->stacks);
    free(h->r);
    free(h);
    cs->hang = NULL;
}
