/* agent_metrics: what this node's /metrics shows (agent_metrics.h says what; docs/metrics.md lists it). */
#include "launcher/agent/agent_metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "launcher/agent/agent_priv.h"
#include "common/log.h"
#include "launcher/metrics/metrics.h"

#define MIB 1048576.0

/* One per-rank gauge family: the value of every running rank whose sample (or step) knows it. */
struct rank_gauge {
    const char *name, *help;
    double (*get)(const struct mon_sample *s);
};

static double s_gpu_util(const struct mon_sample *s) { return s->gpu_util / 100; }
static double s_gpu_mem(const struct mon_sample *s) { return s->gpu_mem_proc_mib * MIB; }
static double s_dev_used(const struct mon_sample *s) { return s->gpu_mem_used_mib * MIB; }
static double s_dev_total(const struct mon_sample *s) { return s->gpu_mem_total_mib * MIB; }
static double s_cpu(const struct mon_sample *s) { return s->cpu_pct / 100; }
static double s_rss(const struct mon_sample *s) { return s->rss_mib * MIB; }

static const struct rank_gauge s_gauges[] = {
    { "plaunch_rank_gpu_utilization_ratio", "Share of the last sample interval a kernel ran on the rank's GPU "
      "(NVML utilization.gpu), 0 to 1.", s_gpu_util },
    { "plaunch_rank_gpu_memory_bytes", "GPU memory used by the rank's processes.", s_gpu_mem },
    { "plaunch_rank_gpu_device_memory_used_bytes", "GPU memory used on the rank's device, by any process.",
      s_dev_used },
    { "plaunch_rank_gpu_device_memory_total_bytes", "GPU memory of the rank's device.", s_dev_total },
    { "plaunch_rank_cpu_cores", "CPU time of the rank's process tree over the last sample interval, in cores "
      "(2 = two cores busy).", s_cpu },
    { "plaunch_rank_resident_memory_bytes", "Resident memory (RSS) of the rank's process tree.", s_rss },
};

static void s_rank_labels(const struct worker *w, char *rank, char *local, const char **kv)
{
    snprintf(rank, 16, "%d", w->rank);
    snprintf(local, 16, "%d", w->local_rank);
    kv[0] = "rank", kv[1] = rank, kv[2] = "local_rank", kv[3] = local;
}

static void s_node(void *arg, struct mtext *t)
{
    agent_t *ac = arg;
    const struct job *job = ac->job;
    char rank[16], local[16];
    const char *kv[6];
    int running = 0;
    for (int i = 0; i < job->node.nworkers; i++)
        running += job->workers[i].state == W_RUNNING;
    mtext_family(t, "plaunch_info", "gauge", "Always 1: the plaunch version and this node's role.");
    kv[0] = "version", kv[1] = PLAUNCH_VERSION, kv[2] = "role", kv[3] = ac->cs ? "coordinator" : "agent";
    mtext_sample(t, "plaunch_info", kv, 2, 1);
    mtext_family(t, "plaunch_generation", "gauge", "The generation this node's workers run (0 first, +1 each restart).");
    mtext_sample(t, "plaunch_generation", NULL, 0, job->gen.generation);
    mtext_family(t, "plaunch_workers", "gauge", "Workers of this node.");
    mtext_sample(t, "plaunch_workers", NULL, 0, job->node.nworkers);
    mtext_family(t, "plaunch_workers_running", "gauge", "Workers of this node running now.");
    mtext_sample(t, "plaunch_workers_running", NULL, 0, running);

    /* output age, step and step rate: from this node's goodput model, as plaunch status shows them */
    const gp_t *g = agent_node_model(ac->node);
    double now = g ? gp_time(g, loop_now_ns()) : 0;
    static const char *const names[3] = { "plaunch_rank_output_age_seconds", "plaunch_rank_step",
                                          "plaunch_rank_steps_per_second" };
    static const char *const helps[3] = {
        "Seconds since the rank last wrote output.",
        "The last step the rank reported in this generation (PLAUNCH_PROGRESS_FILE, plaunch_progress), as the hang "
        "watch last read it.",
        "The rank's reported steps per second over its recent reports.",
    };
    for (int f = 0; f < 3; f++) {
        mtext_family(t, names[f], "gauge", helps[f]);
        for (int i = 0; g && i < job->node.nworkers; i++) {
            const struct worker *w = &job->workers[i];
            const struct gp_rank *r = w->state == W_RUNNING ? gp_rank(g, w->rank) : NULL;
            if (!r || r->rank != w->rank)
                continue;
            double v = f == 0 ? (r->out_t >= 0 ? now - r->out_t : NAN) : f == 1 ? (r->step >= 0 ? (double)r->step : NAN)
                                                                                 : r->step_rate;
            if (!isfinite(v) || v < 0)
                continue;
            s_rank_labels(w, rank, local, kv);
            mtext_sample(t, names[f], kv, 2, v);
        }
    }
    for (size_t m = 0; m < sizeof s_gauges / sizeof *s_gauges; m++) {
        mtext_family(t, s_gauges[m].name, "gauge", s_gauges[m].help);
        for (int i = 0; i < job->node.nworkers; i++) {
            struct mon_sample s;
            int have = job->workers[i].state == W_RUNNING && agent_mon_latest(ac->mon, i, job->gen.generation, &s);
            double v = have ? s_gauges[m].get(&s) : NAN;
            if (!isfinite(v) || v < 0)
                continue; /* unknown: no sample rather than NaN */
            s_rank_labels(&job->workers[i], rank, local, kv);
            kv[4] = "gpu", kv[5] = s.gpu;
            mtext_sample(t, s_gauges[m].name, kv, s.gpu[0] ? 3 : 2, v); /* a CPU worker has no gpu label */
        }
    }
}

void agent_metrics_start(agent_t *ac)
{
    char err[1024];
    const struct opts *o = &ac->job->opt;
    if (o->metrics_port <= 0)
        return;
    ac->metrics = metrics_new(ac->loop, o->metrics_addr, o->metrics_port, ac->job->node.job_id, ac->job->node.node_label, err,
                              sizeof err);
    if (!ac->metrics) {
        log_warn("metrics: %s; the job runs without /metrics on %s", err, ac->job->node.node_label);
        return;
    }
    metrics_add(ac->metrics, s_node, ac);
    log_info("metrics: serving http://%s:%d/metrics", o->metrics_addr, metrics_port(ac->metrics));
}

/* ---- the job's figures, on the coordinator's node: read from the goodput model alone ---- */

static void s_job(void *arg, struct mtext *t)
{
    const gp_t *g = arg;
    struct gp_summary sum;
    const char *kv[2];
    int bystate[GP_NNODE_STATES] = { 0 };
    gp_summary(g, loop_now_ns(), &sum);
    mtext_family(t, "plaunch_job_generation", "gauge", "The job's current generation (0 first, +1 each restart).");
    mtext_sample(t, "plaunch_job_generation", NULL, 0, gp_generation(g));
    mtext_family(t, "plaunch_job_world_size", "gauge", "Ranks in the job's current generation.");
    mtext_sample(t, "plaunch_job_world_size", NULL, 0, gp_world(g));
    for (int i = 0; i < gp_nnodes(g); i++) {
        const struct gp_node *n = gp_node(g, i);
        if (n && n->state >= 0 && n->state < GP_NNODE_STATES)
            bystate[n->state]++;
    }
    mtext_family(t, "plaunch_job_nodes", "gauge", "The job's nodes by state.");
    for (int s = 0; s < GP_NNODE_STATES; s++) {
        kv[0] = "state", kv[1] = gp_node_state_name((enum gp_node_state)s);
        mtext_sample(t, "plaunch_job_nodes", kv, 1, bystate[s]);
    }
    mtext_family(t, "plaunch_job_restarts_total", "counter", "Generations begun after the first (restarts of "
                 "the whole job).");
    mtext_sample(t, "plaunch_job_restarts_total", NULL, 0, sum.restarts);
    mtext_family(t, "plaunch_job_incidents_total", "counter", "Incidents by cause: worker-failure, node-loss, "
                 "hang, scale-change, stop-request.");
    for (int c = 0; c < GP_NCAUSES; c++) {
        kv[0] = "cause", kv[1] = gp_cause_name((enum gp_cause)c);
        mtext_sample(t, "plaunch_job_incidents_total", kv, 1, sum.incidents[c]);
    }
    const struct gp_incident *cur = gp_incident_current(g);
    mtext_family(t, "plaunch_job_incident_open", "gauge", "1 while an incident is open (detected, its restart not "
                 "yet at the first progress), by cause.");
    for (int c = 0; c < GP_NCAUSES; c++) {
        kv[0] = "cause", kv[1] = gp_cause_name((enum gp_cause)c);
        mtext_sample(t, "plaunch_job_incident_open", kv, 1, cur && cur->cause == (enum gp_cause)c);
    }
    mtext_family(t, "plaunch_job_lost_seconds_total", "counter", "Seconds lost to incidents, by phase: detect, "
                 "teardown, rendezvous, start, init (the open incident's phases included as they pass).");
    for (int p = 0; p < GP_NPHASES; p++) {
        kv[0] = "phase", kv[1] = gp_phase_name((enum gp_phase)p);
        mtext_sample(t, "plaunch_job_lost_seconds_total", kv, 1, sum.lost_s[p] > 0 ? sum.lost_s[p] : 0);
    }
    mtext_family(t, "plaunch_job_wall_seconds", "gauge", "Seconds since the job started.");
    mtext_sample(t, "plaunch_job_wall_seconds", NULL, 0, sum.wall_s);
    mtext_family(t, "plaunch_job_running_seconds", "gauge", "Seconds the job's generations ran (from each "
                 "one's first progress to its end).");
    mtext_sample(t, "plaunch_job_running_seconds", NULL, 0, sum.running_s);
    mtext_family(t, "plaunch_job_steps_lost_total", "counter", "Steps done again after restarts (when ranks "
                 "report steps).");
    mtext_sample(t, "plaunch_job_steps_lost_total", NULL, 0, (double)sum.steps_lost);
    mtext_family(t, "plaunch_job_goodput_ratio", "gauge", "Share of the wall time spent making progress: running "
                 "time less recomputed steps, over wall time (0 to 1).");
    if (isfinite(sum.goodput))
        mtext_sample(t, "plaunch_job_goodput_ratio", NULL, 0, sum.goodput);
    mtext_family(t, "plaunch_spares", "gauge", "Hot spares (--spares) standing by, by state: standby, or "
                 "swapped_out (its workers failed two generations in a row: taken last).");
    for (int s = 0; s < GP_NSPARE_STATES; s++) {
        kv[0] = "state", kv[1] = gp_spare_state_name((enum gp_spare_state)s);
        mtext_sample(t, "plaunch_spares", kv, 1, gp_spares_count(g, (enum gp_spare_state)s));
    }
    mtext_family(t, "plaunch_spare_swaps_total", "counter", "Spares that took a lost or swapped-out node's rank.");
    mtext_sample(t, "plaunch_spare_swaps_total", NULL, 0, gp_swaps_total(g));
}

void agent_metrics_coord(agent_t *ac, const gp_t *gp)
{
    if (ac->metrics && gp)
        metrics_add(ac->metrics, s_job, (void *)gp);
}

void agent_metrics_stop(agent_t *ac)
{
    metrics_destroy(&ac->metrics);
}
