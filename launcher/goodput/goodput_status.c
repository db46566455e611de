/* goodput_status: the live view: status.json (bounded, written by temporary name and rename at most once a second),
 * the STATUS answer (the same document), and the text of `plaunch status` and `plaunch top`. */
#include "launcher/goodput/goodput_priv.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/esc/esc.h"
#include "common/ownfile.h"

static json_t *s_num(double v, double scale)
{
    return isnan(v) || v < 0 ? json_null() : json_real(round(v * scale) / scale);
}

/* A node's or rank's GPU figures into x. */
static void s_gpu_json(json_t *x, double util, double mem, double total)
{
    json_object_set_new(x, "gpu_util", s_num(util, 10));
    json_object_set_new(x, "gpu_mem_mib", s_num(mem, 10));
    json_object_set_new(x, "gpu_mem_total_mib", s_num(total, 10));
}

static const char *s_phase_now(const struct gp_incident *in)
{
    int last = GP_OCCURRED;
    for (int m = 0; m < GP_NMARKS; m++)
        if (in->at[m] >= 0)
            last = m;
    return last < GP_PROGRESS ? gp_phase_name((enum gp_phase)last) : "done";
}

static char *s_status_json(const gp_t *g, uint64_t now_ns, int max_nodes, int max_ranks)
{
    struct gp_summary s;
    double now = g->end_t >= 0 ? g->end_t : gp_time(g, now_ns);
    gp_summary(g, now_ns, &s);
    json_t *o = json_object(), *nodes = json_array(), *ranks = json_array();
    json_object_set_new(o, "version", json_integer(1));
    json_object_set_new(o, "job", json_string(g->job_id));
    json_object_set_new(o, "start_unix_ms", json_integer(g->start_unix_ms));
    json_object_set_new(o, "now_s", s_num(now, 1000));
    json_object_set_new(o, "state", json_string(g->end_t >= 0 ? "done" : g->open >= 0 ? "restarting" : "running"));
    json_object_set_new(o, "exit_status", g->exit_status >= 0 ? json_integer(g->exit_status) : json_null());
    json_object_set_new(o, "generation", json_integer(g->generation));
    json_object_set_new(o, "world", json_integer(g->world));
    json_object_set_new(o, "restarts", json_integer(s.restarts));
    json_object_set_new(o, "nincidents", json_integer(s.nincidents));
    json_object_set_new(o, "wall_s", s_num(s.wall_s, 1000));
    json_object_set_new(o, "running_s", s_num(s.running_s, 1000));
    json_object_set_new(o, "lost_total_s", s_num(s.lost_total_s, 1000));
    json_object_set_new(o, "recompute_s", s_num(s.recompute_s, 1000));
    json_object_set_new(o, "goodput", s_num(s.goodput, 1e5));
    const struct gp_incident *in = gp_incident_current(g);
    if (in) {
        json_t *c = json_object();
        json_object_set_new(c, "cause", json_string(gp_cause_name(in->cause)));
        json_object_set_new(c, "rank", json_integer(in->rank));
        json_object_set_new(c, "node", json_integer(in->node));
        json_object_set_new(c, "host", json_string(in->host));
        json_object_set_new(c, "exit_code", json_integer(in->exit_code));
        json_object_set_new(c, "signal", json_integer(in->signal));
        json_object_set_new(c, "text", json_string(in->text));
        json_object_set_new(c, "phase", json_string(s_phase_now(in)));
        json_object_set_new(c, "detected_age_s", s_num(now - in->at[GP_DETECTED], 1000));
        json_object_set_new(o, "incident", c);
    } else {
        json_object_set_new(o, "incident", json_null());
    }
    int listed = 0, more = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const struct gp_node *n = &g->nodes[i].n;
        if (n->nranks <= 0 && n->seen_t < 0)
            continue; /* a node rank nobody held (an agent's own view knows only its node) */
        if (listed >= max_nodes) {
            more++;
            continue;
        }
        json_t *x = json_object();
        json_object_set_new(x, "node", json_integer(n->node_rank));
        json_object_set_new(x, "host", json_string(n->host));
        json_object_set_new(x, "first_rank", json_integer(n->first_rank));
        json_object_set_new(x, "nranks", json_integer(n->nranks));
        json_object_set_new(x, "state", json_string(gp_node_state_name(n->state)));
        json_object_set_new(x, "seen_age_s", n->seen_t >= 0 ? s_num(now - n->seen_t, 1000) : json_null());
        s_gpu_json(x, n->gpu_util, n->gpu_mem_mib, n->gpu_mem_total_mib);
        json_array_append_new(nodes, x);
        listed++;
    }
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "nodes_more", json_integer(more));
    int n = g->nranks < g->world ? g->nranks : g->world, rl = 0;
    more = 0;
    for (int i = 0; i < n; i++) {
        const struct gp_rank *r = &g->ranks[i].r;
        if (r->node < 0)
            continue; /* a rank of another node, in a node's own view */
        if (rl >= max_ranks) {
            more++;
            continue;
        }
        json_t *x = json_object();
        json_object_set_new(x, "rank", json_integer(r->rank));
        json_object_set_new(x, "node", json_integer(r->node));
        json_object_set_new(x, "step", r->step >= 0 ? json_integer(r->step) : json_null());
        json_object_set_new(x, "step_rate", s_num(r->step_rate, 1000));
        json_object_set_new(x, "out_age_s", r->out_t >= 0 ? s_num(now - r->out_t, 1000) : json_null());
        s_gpu_json(x, r->gpu_util, r->gpu_mem_mib, r->gpu_mem_total_mib);
        json_array_append_new(ranks, x);
        rl++;
    }
    json_object_set_new(o, "ranks", ranks);
    json_object_set_new(o, "ranks_more", json_integer(more));
    gp_spares_json(g, o);
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(o);
    return text;
}

char *gp_status_json(const gp_t *g, uint64_t now_ns)
{
    int nodes = GP_STATUS_NODES, ranks = GP_STATUS_RANKS;
    for (;;) { /* long host names can make the listed part too big: list fewer until it fits */
        char *text = s_status_json(g, now_ns, nodes, ranks);
        if (!text || strlen(text) < GP_STATUS_MAX || (!nodes && !ranks))
            return text;
        free(text);
        nodes /= 2, ranks /= 2;
    }
}

int gp_status_write(gp_t *g, const char *log_dir, uint64_t now_ns, char *err, size_t errlen)
{
    return gp_status_write_as(g, log_dir, "status.json", now_ns, err, errlen);
}

int gp_status_write_as(gp_t *g, const char *log_dir, const char *name, uint64_t now_ns, char *err, size_t errlen)
{
    if (g->status_any && now_ns - g->status_ns < 1000000000ull && g->end_t < 0)
        return 1;
    g->status_any = 1;
    g->status_ns = now_ns;
    char *text = gp_status_json(g, now_ns);
    if (!text) {
        snprintf(err, errlen, "status.json: out of memory");
        return -1;
    }
    char path[PATH_MAX + 32];
    struct ownfile_new nf;
    snprintf(path, sizeof path, "%s/%s", log_dir, name);
    if (ownfile_new_open(&nf, path, 0644, OWNFILE_NOSYNC, err, errlen) < 0) {
        free(text);
        return -1;
    }
    size_t len = strlen(text);
    text[len] = '\n';
    ssize_t w = write(nf.fd, text, len + 1);
    free(text);
    return ownfile_new_commit(&nf, w == (ssize_t)(len + 1), err, errlen);
}

/* ---- text --------------------------------------------------------------------------------------------------- */

struct gp_txt {
    char *p;
    size_t cap, len;
    int width, rows, used, left;
};

static void s_line(struct gp_txt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_line(struct gp_txt *t, const char *fmt, ...)
{
    char raw[1024], safe[4096];
    if (t->rows && t->used >= t->rows - 1) {
        t->left++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t n = esc_term(safe, sizeof safe, raw, strlen(raw), 0);
    if (t->width > 0 && n > (size_t)t->width)
        safe[n = (size_t)t->width] = 0; /* ASCII columns; a host's UTF-8 may be cut: esc_term left it valid up to here */
    if (t->len + n + 2 > t->cap) {
        t->left++;
        return;
    }
    memcpy(t->p + t->len, safe, n);
    t->len += n;
    t->p[t->len++] = '\n';
    t->p[t->len] = 0;
    t->used++;
}

/* v with decimals digits and a unit; "-" when unknown (NAN or negative) */
static void s_fmt(char *b, size_t cap, double v, int decimals, const char *unit)
{
    if (isnan(v) || v < 0)
        snprintf(b, cap, "-");
    else
        snprintf(b, cap, "%.*f%s", decimals, v, unit);
}

static void s_gpu(char *b, size_t cap, double util, double mem, double total)
{
    char u[16], m[16], tt[16];
    s_fmt(u, sizeof u, util, 0, "%");
    s_fmt(m, sizeof m, mem / 1024, 1, "");
    s_fmt(tt, sizeof tt, total / 1024, 1, "");
    snprintf(b, cap, "%5s %6s/%-6s", u, m, tt);
}

size_t gp_status_text(const gp_t *g, uint64_t now_ns, int width, int rows, char *buf, size_t cap)
{
    struct gp_txt t = { buf, cap, 0, width, rows, 0, 0 };
    struct gp_summary s;
    char gp[32], a[32], b[32], c[32], gpu[64];
    if (cap)
        buf[0] = 0;
    if (cap < 64)
        return 0;
    double now = g->end_t >= 0 ? g->end_t : gp_time(g, now_ns);
    gp_summary(g, now_ns, &s);
    s_fmt(gp, sizeof gp, s.goodput * 100, 1, " %");
    const char *state = g->end_t >= 0 ? "done" : g->open >= 0 ? "restarting" : "running";
    if (g->frozen && g->fsum.exit_status >= 0)
        state = "done";
    s_line(&t, "job %s  %s  generation %u  world %d  restarts %u  goodput %s  wall %.1f s", g->job_id, state,
           g->generation, g->world, s.restarts, gp, s.wall_s);
    const struct gp_incident *in = gp_incident_current(g);
    if (in)
        s_line(&t, "incident: %s rank %d node %d %s: %s, %.1f s since detection: %s", gp_cause_name(in->cause),
               in->rank, in->node, in->host, s_phase_now(in), now - in->at[GP_DETECTED], in->text);
    else
        s_line(&t, "incident: none (%d so far, %.1f s lost)", s.nincidents, s.lost_total_s);
    char sp[1024];
    if (gp_spares_text(g, sp, sizeof sp))
        s_line(&t, "%s", sp);
    s_line(&t, "%-5s %-20s %-11s %-10s %10s %8s %8s %5s %13s", "NODE", "HOST", "RANKS", "STATE", "STEP", "STEP/S",
           "OUT AGE", "GPU", "MEM GiB");
    for (int i = 0; i < g->nnodes; i++) {
        const struct gp_node *n = &g->nodes[i].n;
        if (n->nranks <= 0 && n->seen_t < 0)
            continue;
        char rk[32];
        long long step = -1;
        double rate = NAN, age = NAN;
        for (int r = n->first_rank; n->first_rank >= 0 && r < n->first_rank + n->nranks && r < g->nranks; r++) {
            const struct gp_rank *x = &g->ranks[r].r;
            if (x->step >= 0 && (step < 0 || x->step < step))
                step = x->step; /* the node is as far as its slowest rank */
            if (!isnan(x->step_rate) && (isnan(rate) || x->step_rate < rate))
                rate = x->step_rate;
            if (x->out_t >= 0 && (isnan(age) || now - x->out_t > age))
                age = now - x->out_t;
        }
        if (n->nranks == 1)
            snprintf(rk, sizeof rk, "%d", n->first_rank);
        else
            snprintf(rk, sizeof rk, "%d-%d", n->first_rank, n->first_rank + n->nranks - 1);
        s_fmt(a, sizeof a, (double)step, 0, "");
        s_fmt(b, sizeof b, rate, 2, "");
        s_fmt(c, sizeof c, age, 1, " s");
        s_gpu(gpu, sizeof gpu, n->gpu_util, n->gpu_mem_mib, n->gpu_mem_total_mib);
        s_line(&t, "%-5d %-20.20s %-11s %-10s %10s %8s %8s %s", n->node_rank, n->host, n->nranks > 0 ? rk : "-",
               gp_node_state_name(n->state), a, b, c, gpu);
        for (int r = n->first_rank; n->first_rank >= 0 && r < n->first_rank + n->nranks && r < g->nranks; r++) {
            const struct gp_rank *x = &g->ranks[r].r;
            char rn[32];
            snprintf(rn, sizeof rn, "rank %d", r);
            s_fmt(a, sizeof a, (double)x->step, 0, "");
            s_fmt(b, sizeof b, x->step_rate, 2, "");
            s_fmt(c, sizeof c, x->out_t >= 0 ? now - x->out_t : NAN, 1, " s");
            s_gpu(gpu, sizeof gpu, x->gpu_util, x->gpu_mem_mib, x->gpu_mem_total_mib);
            s_line(&t, "  %-24s %-11s %-10s %10s %8s %8s %s", rn, "", "", a, b, c, gpu);
        }
    }
    if (g->nodes_more || g->ranks_more)
        s_line(&t, "(%d more nodes and %d more ranks not listed)", g->nodes_more, g->ranks_more);
    if (t.left) {
        char more[64];
        int n = snprintf(more, sizeof more, "(%d more lines)\n", t.left);
        if (t.len + (size_t)n < t.cap) {
            memcpy(t.p + t.len, more, (size_t)n + 1);
            t.len += (size_t)n;
        }
    }
    return t.len;
}

size_t gp_status_line(const gp_t *g, uint64_t now_ns, int width, char *buf, size_t cap)
{
    struct gp_summary s;
    char raw[512], step[64] = "", gp[32];
    if (!cap)
        return 0;
    gp_summary(g, now_ns, &s);
    long long lo = -1;
    double rate = NAN;
    for (int i = 0; i < g->nranks && i < g->world; i++) { /* the job is as far as its slowest rank */
        const struct gp_rank *r = &g->ranks[i].r;
        if (r->step >= 0 && (lo < 0 || r->step < lo))
            lo = r->step, rate = r->step_rate;
    }
    if (lo >= 0)
        snprintf(step, sizeof step, " | step %lld%s", lo, "");
    if (lo >= 0 && !isnan(rate))
        snprintf(step + strlen(step), sizeof step - strlen(step), " (%.2f/s)", rate);
    s_fmt(gp, sizeof gp, s.goodput * 100, 1, " %");
    const struct gp_incident *in = gp_incident_current(g);
    int live = 0;
    for (int i = 0; i < g->nnodes; i++)
        live += g->nodes[i].n.nranks > 0 && g->nodes[i].n.state != GP_NODE_LOST;
    if (in)
        snprintf(raw, sizeof raw, "plaunch: generation %u | %s (%s) | %.1f s | goodput %s", g->generation,
                 gp_cause_name(in->cause), s_phase_now(in), gp_time(g, now_ns) - in->at[GP_DETECTED], gp);
    else
        snprintf(raw, sizeof raw, "plaunch: generation %u | %d rank%s on %d node%s | %s%s | goodput %s | %d incident%s",
                 g->generation, g->world, g->world == 1 ? "" : "s", live, live == 1 ? "" : "s",
                 g->end_t >= 0 ? "done" : "running", step, gp, s.nincidents, s.nincidents == 1 ? "" : "s");
    size_t n = esc_term(buf, cap, raw, strlen(raw), 0);
    if (width > 0 && n > (size_t)width)
        buf[n = (size_t)width] = 0;
    return n;
}
