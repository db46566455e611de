/* goodput: the model of the job's time (goodput.h). STUB: the interface compiles and answers "nothing yet"; the
 * bodies come in the next commits. */
#include "goodput.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct goodput {
    char job_id[65];
    uint64_t start_ns;
    int64_t start_unix_ms;
};

gp_t *gp_new(const char *job_id, uint64_t mono_ns, int64_t unix_ms)
{
    gp_t *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->job_id, sizeof g->job_id, "%s", job_id ? job_id : "");
    g->start_ns = mono_ns;
    g->start_unix_ms = unix_ms;
    return g;
}

void gp_free(gp_t **g)
{
    free(*g);
    *g = NULL;
}

double gp_time(const gp_t *g, uint64_t mono_ns) { return ((double)mono_ns - (double)g->start_ns) / 1e9; }
int gp_incident_open(gp_t *g, uint64_t now_ns, enum gp_cause cause, const struct gp_cause_info *ci)
{
    (void)g, (void)now_ns, (void)cause, (void)ci;
    return -1;
}
void gp_incident_group(gp_t *g, const char *groups) { (void)g, (void)groups; }
void gp_mark(gp_t *g, enum gp_mark m, uint64_t now_ns) { (void)g, (void)m, (void)now_ns; }
void gp_gen_begin(gp_t *g, uint32_t gen, int world, int nnodes, uint64_t now_ns)
{
    (void)g, (void)gen, (void)world, (void)nnodes, (void)now_ns;
}
void gp_node_set(gp_t *g, int node_rank, const char *host, int first_rank, int nranks, enum gp_node_state st,
                 uint64_t now_ns)
{
    (void)g, (void)node_rank, (void)host, (void)first_rank, (void)nranks, (void)st, (void)now_ns;
}
void gp_node_heard(gp_t *g, int node_rank, uint64_t now_ns, uint64_t started_ago_ms, uint64_t progress_ago_ms,
                   double gpu_util, double gpu_mem_mib, double gpu_mem_total_mib)
{
    (void)g, (void)node_rank, (void)now_ns, (void)started_ago_ms, (void)progress_ago_ms, (void)gpu_util,
        (void)gpu_mem_mib, (void)gpu_mem_total_mib;
}
void gp_rank_progress(gp_t *g, int rank, int node, long long step, uint64_t out_age_ms, uint64_t now_ns)
{
    (void)g, (void)rank, (void)node, (void)step, (void)out_age_ms, (void)now_ns;
}
void gp_rank_gpu(gp_t *g, int rank, double util, double mem_mib, double mem_total_mib)
{
    (void)g, (void)rank, (void)util, (void)mem_mib, (void)mem_total_mib;
}
void gp_finish(gp_t *g, uint64_t now_ns, int exit_status) { (void)g, (void)now_ns, (void)exit_status; }
const char *gp_job_id(const gp_t *g) { return g->job_id; }
int64_t gp_start_unix_ms(const gp_t *g) { return g->start_unix_ms; }
uint32_t gp_generation(const gp_t *g) { (void)g; return 0; }
int gp_world(const gp_t *g) { (void)g; return 0; }
void gp_summary(const gp_t *g, uint64_t now_ns, struct gp_summary *out)
{
    memset(out, 0, sizeof *out);
    out->wall_s = gp_time(g, now_ns);
    out->goodput = NAN;
    out->slowest = GP_NPHASES;
    out->exit_status = -1;
}
int gp_nincidents(const gp_t *g) { (void)g; return 0; }
const struct gp_incident *gp_incident(const gp_t *g, int i) { (void)g, (void)i; return NULL; }
const struct gp_incident *gp_incident_current(const gp_t *g) { (void)g; return NULL; }
int gp_ngens(const gp_t *g) { (void)g; return 0; }
const struct gp_gen *gp_gen(const gp_t *g, int i) { (void)g, (void)i; return NULL; }
int gp_nnodes(const gp_t *g) { (void)g; return 0; }
const struct gp_node *gp_node(const gp_t *g, int i) { (void)g, (void)i; return NULL; }
int gp_nranks(const gp_t *g) { (void)g; return 0; }
const struct gp_rank *gp_rank(const gp_t *g, int i) { (void)g, (void)i; return NULL; }
double gp_incident_phase(const struct gp_incident *in, enum gp_phase p)
{
    if (in->at[p] < 0 || in->at[p + 1] < 0)
        return -1;
    return in->at[p + 1] - in->at[p];
}
const char *gp_cause_name(enum gp_cause c)
{
    static const char *n[] = {"worker-failure", "node-loss", "hang", "scale-change", "stop-request"};
    return c < GP_NCAUSES ? n[c] : "?";
}
const char *gp_phase_name(enum gp_phase p)
{
    static const char *n[] = {"detect", "teardown", "rendezvous", "start", "init"};
    return p < GP_NPHASES ? n[p] : "?";
}
const char *gp_mark_name(enum gp_mark m)
{
    static const char *n[] = {"occurred", "detected", "teardown_done", "rendezvous_done", "workers_started",
                              "first_progress"};
    return m < GP_NMARKS ? n[m] : "?";
}
const char *gp_node_state_name(enum gp_node_state s)
{
    static const char *n[] = {"joining", "running", "restarting", "lost", "done"};
    return s < GP_NNODE_STATES ? n[s] : "?";
}
int gp_ledger_open(gp_t *g, int dirfd, const char *dirpath, char *err, size_t errlen)
{
    (void)g, (void)dirfd, (void)dirpath, (void)err, (void)errlen;
    return 0;
}
int gp_ledger_flush(gp_t *g, char *err, size_t errlen) { (void)g, (void)err, (void)errlen; return 0; }
gp_t *gp_ledger_load(const char *text, size_t len, char *err, size_t errlen)
{
    (void)text, (void)len;
    snprintf(err, errlen, "goodput ledger: not implemented yet");
    return NULL;
}
size_t gp_block(const gp_t *g, uint64_t now_ns, char *buf, size_t cap)
{
    (void)g, (void)now_ns;
    if (cap)
        buf[0] = 0;
    return 0;
}
char *gp_report_json(const gp_t *g, uint64_t now_ns) { (void)g, (void)now_ns; return strdup("{}"); }
char *gp_status_json(const gp_t *g, uint64_t now_ns) { (void)g, (void)now_ns; return strdup("{}"); }
int gp_status_write(gp_t *g, const char *log_dir, uint64_t now_ns, char *err, size_t errlen)
{
    (void)g, (void)log_dir, (void)now_ns, (void)err, (void)errlen;
    return 1;
}
gp_t *gp_status_load(const char *text, size_t len, uint64_t now_ns, char *err, size_t errlen)
{
    (void)text, (void)len, (void)now_ns;
    snprintf(err, errlen, "status: not implemented yet");
    return NULL;
}
size_t gp_status_text(const gp_t *g, uint64_t now_ns, int width, int rows, char *buf, size_t cap)
{
    (void)g, (void)now_ns, (void)width, (void)rows;
    if (cap)
        buf[0] = 0;
    return 0;
}
