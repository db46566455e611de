/* goodput_sum: reading the model: the job's account (where every second of the wall clock went) and accessors. */
#include "launcher/goodput/goodput_priv.h"

#include <math.h>
#include <string.h>

const char *gp_job_id(const gp_t *g) { return g->job_id; }
int64_t gp_start_unix_ms(const gp_t *g) { return g->start_unix_ms; }
uint32_t gp_generation(const gp_t *g) { return g->generation; }
int gp_world(const gp_t *g) { return g->world; }
int gp_nincidents(const gp_t *g) { return g->ninc; }
const struct gp_incident *gp_incident(const gp_t *g, int i) { return i >= 0 && i < g->ninc ? &g->inc[i] : NULL; }
const struct gp_incident *gp_incident_current(const gp_t *g) { return g->open >= 0 ? &g->inc[g->open] : NULL; }
int gp_ngens(const gp_t *g) { return g->ngens; }
const struct gp_gen *gp_gen(const gp_t *g, int i) { return i >= 0 && i < g->ngens ? &g->gens[i] : NULL; }
int gp_nnodes(const gp_t *g) { return g->nnodes; }
const struct gp_node *gp_node(const gp_t *g, int i) { return i >= 0 && i < g->nnodes ? &g->nodes[i].n : NULL; }
int gp_nranks(const gp_t *g) { return g->nranks; }
const struct gp_rank *gp_rank(const gp_t *g, int i) { return i >= 0 && i < g->nranks ? &g->ranks[i].r : NULL; }

double gp_incident_phase(const struct gp_incident *in, enum gp_phase p)
{
    if (p >= GP_NPHASES || in->at[p] < 0)
        return -1;
    if (in->at[p + 1] >= 0)
        return in->at[p + 1] - in->at[p];
    for (int m = p + 1; m < GP_NMARKS; m++)
        if (in->at[m] >= 0)
            return -1; /* a later mark reached: this one was not (cannot happen: marks fill forward) */
    return in->end_t >= 0 ? in->end_t - in->at[p] : -1; /* the last mark reached: up to its end */
}

/* An incident's phases as of now: each reached phase, and the one it is in counted up to now. */
static void s_incident_lost(const struct gp_incident *in, double now, double *lost)
{
    for (int p = 0; p < GP_NPHASES; p++) {
        double d = gp_incident_phase(in, (enum gp_phase)p);
        if (d < 0 && in->end_t < 0 && in->at[p] >= 0 && in->at[p + 1] < 0)
            d = now - in->at[p];
        if (d > 0)
            lost[p] += d;
    }
}

void gp_summary(const gp_t *g, uint64_t now_ns, struct gp_summary *out)
{
    if (g->frozen) {
        *out = g->fsum;
        return;
    }
    memset(out, 0, sizeof *out);
    double now = g->end_t >= 0 ? g->end_t : gp_time(g, now_ns);
    out->wall_s = now;
    out->exit_status = g->exit_status;
    out->restarts = g->restarts;
    out->nincidents = g->ntotal;
    out->steps_reported = g->steps_reported;
    memcpy(out->incidents, g->count, sizeof out->incidents);
    double first = now;
    if (g->ngens && g->gens[0].run_t >= 0 && g->gens[0].run_t < first)
        first = g->gens[0].run_t;
    if (g->ninc && g->inc[0].at[GP_OCCURRED] < first)
        first = g->inc[0].at[GP_OCCURRED];
    out->startup_s = first;
    for (int i = 0; i < g->ngens; i++) {
        const struct gp_gen *gn = &g->gens[i];
        if (gn->run_t >= 0)
            out->running_s += (gn->end_t >= 0 ? gn->end_t : now) - gn->run_t;
    }
    for (int i = 0; i < g->ninc; i++) {
        const struct gp_incident *in = &g->inc[i];
        s_incident_lost(in, now, out->lost_s);
        out->steps_lost += in->steps_lost;
        out->recompute_s += in->recompute_s;
    }
    out->slowest = GP_NPHASES;
    for (int p = 0; p < GP_NPHASES; p++) {
        out->lost_total_s += out->lost_s[p];
        if (out->lost_s[p] > 0 && (out->slowest == GP_NPHASES || out->lost_s[p] > out->lost_s[out->slowest]))
            out->slowest = (enum gp_phase)p;
    }
    if (out->recompute_s > out->running_s)
        out->recompute_s = out->running_s;
    out->ending_s = now - out->startup_s - out->running_s - out->lost_total_s;
    if (out->ending_s < 0)
        out->ending_s = 0;
    out->goodput = now > 0 ? (out->running_s - out->recompute_s) / now : NAN;
}

const char *gp_cause_name(enum gp_cause c)
{
    static const char *n[] = { "worker-failure", "node-loss", "hang", "scale-change", "stop-request" };
    return c < GP_NCAUSES ? n[c] : "?";
}

const char *gp_phase_name(enum gp_phase p)
{
    static const char *n[] = { "detect", "teardown", "rendezvous", "start", "init" };
    return p < GP_NPHASES ? n[p] : "?";
}

const char *gp_mark_name(enum gp_mark m)
{
    static const char *n[] = { "occurred", "detected", "teardown_done", "rendezvous_done", "workers_started",
                               "first_progress" };
    return m < GP_NMARKS ? n[m] : "?";
}

const char *gp_node_state_name(enum gp_node_state s)
{
    static const char *n[] = { "joining", "running", "restarting", "lost", "done" };
    return s < GP_NNODE_STATES ? n[s] : "?";
}
