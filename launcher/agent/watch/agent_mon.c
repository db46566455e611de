/* agent_mon: this node's share of the health monitor: asks the sampler process for one sample of every running
 * worker each --monitor interval (a sampler that misses its deadline is killed and replaced by one without NVML,
 * so a wedged GPU never stalls the agent), writes monitor.NODE.csv (a row per rank per sample, rotated past
 * MON_CSV_ROTATE), keeps each rank's bounded series, runs the preflight checks before the first JOIN and gives
 * the coordinator this node's rank summaries. */
#include "launcher/agent/watch/agent_mon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "launcher/monitor/sampling/mon_csv.h"
#include "launcher/monitor/diagnosis/mon_diag.h"
#include "launcher/monitor/diagnosis/mon_json.h"
#include "launcher/monitor/sampling/mon_sampler.h"
#include "launcher/monitor/diagnosis/mon_series.h"
#include "common/ownfile.h"
#include "common/util.h"

#define PREFLIGHT_DEADLINE_MS 20000
/* A sample answer later than this is a stuck NVML call. */
#define SAMPLE_DEADLINE_MIN_MS 5000

struct agent_mon {
    const struct job *job;
    const struct mon_thresh *thresh;
    loop_t *loop;
    char exe[PATH_MAX];
    mon_sampler_t *sampler;
    int use_nvml;              /* 0 after NVML hung or the sampler died: host metrics only */
    int broken;                /* no sampler can be started: sampling stopped */
    int timer;
    int64_t interval_ms;
    int outstanding;           /* a request waits for its answer */
    uint64_t asked_ns;
    int noted;                 /* the NVML note is in plaunch.log */
    int dirfd, csv_fd;
    long long csv_size;
    int csv_failed;
    char csv_name[320];
    int nseries;
    struct mon_series **series; /* by local rank, allocated with its first sample */
    struct mon_sample *buf;
    struct mon_sample *last;   /* by local rank: its latest sample (the live view); t_ms 0 none */
    /* preflight */
    void (*done)(void *arg, int code);
    void *done_arg;
    int preflight;             /* 1 while its answer is awaited */
    int preflight_timer;
    char cuda_driver[32];
    /* the GPU memory wait's process query (agent_preflight.c) */
    void (*procs_done)(void *arg, const char *lines, int n, int ok);
    void *procs_arg;
    int procs;                 /* 1 while its answer is awaited */
    double rss_peak_mib;       /* the largest sum of the ranks' RSS in one round since the last reset */
};

static void s_drop_sampler(agent_mon_t *m)
{
    if (!m->sampler)
        return;
    loop_remove_fd(m->loop, mon_sampler_fd(m->sampler));
    mon_sampler_stop(&m->sampler);
    m->outstanding = 0;
}

static int s_on_answer(loop_t *loop, int fd, void *sock, short revents, void *arg);

static int s_start_sampler(agent_mon_t *m)
{
    char err[512];
    if (m->sampler)
        return 0;
    m->sampler = mon_sampler_start(m->exe, m->use_nvml, err, sizeof err);
    if (!m->sampler || loop_add_fd(m->loop, mon_sampler_fd(m->sampler), ZMQ_POLLIN, s_on_answer, m) < 0) {
        log_warn("monitor: cannot start the sampler (%s); no health metrics for this node", m->sampler ? "event loop"
                                                                                                        : err);
        mon_sampler_stop(&m->sampler);
        m->broken = 1;
        return -1;
    }
    return 0;
}

/* ---- the CSV ------------------------------------------------------------------------------------------ */

static int s_csv_open(agent_mon_t *m, char *err, size_t errlen)
{
    m->csv_fd = ownfile_open(m->dirfd, m->job->node.log_dir, m->csv_name, OWNFILE_TRUNC, "choose another --log-dir", err,
                             errlen);
    if (m->csv_fd < 0)
        return -1;
    const char *h = mon_csv_header();
    m->csv_size = (long long)strlen(h);
    return util_write_all(m->csv_fd, h, strlen(h)) < 0 ? -1 : 0;
}

static void s_csv_write(agent_mon_t *m, const char *line, size_t len)
{
    char err[512], old[340];
    if (m->csv_fd < 0)
        return;
    if (m->csv_size + (long long)len > MON_CSV_ROTATE) {
        snprintf(old, sizeof old, "%s.1", m->csv_name);
        close(m->csv_fd);
        m->csv_fd = -1;
        /* renameat replaces whatever is at .1, a planted link included, without following it */
        if (renameat(m->dirfd, m->csv_name, m->dirfd, old) < 0 || s_csv_open(m, err, sizeof err) < 0) {
            log_warn("monitor: cannot rotate %s/%s (%s); the monitor's file stops here", m->job->node.log_dir, m->csv_name,
                     m->csv_fd < 0 && errno ? strerror(errno) : err);
            return;
        }
    }
    if (util_write_all(m->csv_fd, line, len) < 0) {
        if (!m->csv_failed++)
            log_warn("monitor: cannot write %s/%s: %s (the samples are still judged)", m->job->node.log_dir, m->csv_name,
                     strerror(errno));
        return;
    }
    m->csv_size += (long long)len;
}

/* ---- samples ----------------------------------------------------------------------------------------- */

static void s_take(agent_mon_t *m, int n)
{
    char line[MON_CSV_LINE_MAX];
    double rss = 0;
    for (int i = 0; i < n; i++)
        rss += m->buf[i].rss_mib > 0 ? m->buf[i].rss_mib : 0;
    if (rss > m->rss_peak_mib)
        m->rss_peak_mib = rss;
    for (int i = 0; i < n; i++) {
        const struct mon_sample *s = &m->buf[i];
        int k = s->local_rank;
        if (k < 0 || k >= m->nseries)
            continue; /* the sampler answers for the targets it was given: anything else is dropped */
        if (!m->series[k] && (m->series[k] = malloc(sizeof *m->series[k])) != NULL) {
            mon_series_init(m->series[k], s->rank, m->job->node.node_label);
            m->series[k]->idle_util = m->thresh->idle_util;
        }
        if (m->series[k])
            mon_series_add(m->series[k], s);
        m->last[k] = *s;
        int len = mon_csv_format(s, m->job->node.node_label, line, sizeof line);
        if (len > 0)
            s_csv_write(m, line, (size_t)len);
    }
}

/* No answer from the sampler for the preflight (it hung in NVML, or died): go on without it, or refuse (strict). */
static void s_preflight_answer_lost(agent_mon_t *m)
{
    int strict = strcmp(m->job->opt.preflight, "strict") == 0;
    m->preflight = 0;
    m->preflight_timer = 0;
    log_warn("preflight: NVML gave no answer within %d s on %s (a GPU may be hung: nvidia-smi would hang too); %s",
             PREFLIGHT_DEADLINE_MS / 1000, m->job->node.hostname, strict ? "--preflight strict: not starting (exit status 125)"
                                                                       : "starting without the checks");
    m->use_nvml = 0;
    s_drop_sampler(m);
    m->done(m->done_arg, strict ? 125 : 0);
}

static void s_preflight_answer(agent_mon_t *m)
{
    int n = 0, nvml_ok = 0;
    const char *lines = mon_sampler_preflight(m->sampler, &n, m->cuda_driver, sizeof m->cuda_driver, &nvml_ok);
    int strict = strcmp(m->job->opt.preflight, "strict") == 0;
    m->preflight = 0;
    if (m->preflight_timer > 0)
        loop_timer_cancel(m->loop, m->preflight_timer);
    m->preflight_timer = 0;
    if (!nvml_ok)
        log_info("preflight: %s; GPU checks skipped", mon_sampler_note(m->sampler));
    else
        log_info("preflight: %d finding%s; the driver supports CUDA %s", n, n == 1 ? "" : "s",
                 m->cuda_driver[0] ? m->cuda_driver : "(unknown)");
    for (int i = 0; i < n && lines; i++, lines += strlen(lines) + 1)
        log_warn("preflight: %s", lines);
    if (strict && n > 0)
        log_error("--preflight strict: %d finding%s on %s; not starting (exit status 125: run the job on other "
                  "nodes, or --preflight warn to start anyway)", n, n == 1 ? "" : "s", m->job->node.hostname);
    m->done(m->done_arg, strict && n > 0 ? 125 : 0);
}

static int s_on_answer(loop_t *loop, int fd, void *sock, short revents, void *arg)
{
    agent_mon_t *m = arg;
    char err[512];
    int n = 0, rc = mon_sampler_read(m->sampler, m->buf, m->nseries, &n, err, sizeof err);
    if (rc == 0)
        return 0;
    if (rc < 0) {
        log_warn("monitor: the sampler stopped (%s); going on with %s", err, m->use_nvml ? "host metrics only"
                                                                                          : "no health metrics");
        m->broken = !m->use_nvml;
        m->use_nvml = 0;
        s_drop_sampler(m);
        if (m->preflight)
            s_preflight_answer_lost(m);
        if (m->procs) {
            m->procs = 0;
            m->procs_done(m->procs_arg, NULL, 0, 0);
        }
        return 0;
    }
    m->outstanding = 0;
    if (!m->noted && mon_sampler_note(m->sampler)[0] && m->job->node.gpu_mode) {
        m->noted = 1;
        log_info("monitor: %s", mon_sampler_note(m->sampler));
    }
    if (m->preflight) {
        s_preflight_answer(m);
    } else if (m->procs) {
        int lines = 0, ok = 0;
        char cuda[32];
        const char *text = mon_sampler_preflight(m->sampler, &lines, cuda, sizeof cuda, &ok);
        m->procs = 0;
        m->procs_done(m->procs_arg, text, lines, ok);
    } else {
        s_take(m, n);
    }
    return 0;
}

static int s_on_preflight_deadline(loop_t *loop, int id, void *arg)
{
    agent_mon_t *m = arg;
    if (id == m->preflight_timer && m->preflight)
        s_preflight_answer_lost(m);
    return 0;
}

/* Every interval: one request for every running worker, unless the last one is still unanswered. */
static int s_tick(loop_t *loop, int id, void *arg)
{
    agent_mon_t *m = arg;
    static struct mon_target t[MON_TARGETS_MAX];
    const struct job *job = m->job;
    uint64_t now = loop_now_ns();
    m->timer = loop_timer_after_ms(loop, m->interval_ms, s_tick, m);
    if (m->broken || m->preflight || m->procs)
        return 0;
    if (m->outstanding) {
        int64_t limit = 3 * m->interval_ms > SAMPLE_DEADLINE_MIN_MS ? 3 * m->interval_ms : SAMPLE_DEADLINE_MIN_MS;
        if ((int64_t)(now - m->asked_ns) / 1000000 < limit)
            return 0;
        log_warn("monitor: %s gave no sample within %.1f s (a GPU whose NVML calls hang?); %s", m->use_nvml ? "NVML"
                 : "the sampler", (double)limit / 1000, m->use_nvml ? "GPU metrics stop, host metrics go on"
                                                                    : "no more health metrics on this node");
        m->broken = !m->use_nvml;
        m->use_nvml = 0;
        s_drop_sampler(m);
        return 0;
    }
    int n = 0;
    for (int i = 0; i < job->node.nworkers && n < MON_TARGETS_MAX; i++) {
        const struct worker *w = &job->workers[i];
        if (w->state != W_RUNNING || w->pid <= 0)
            continue;
        t[n] = (struct mon_target){ .rank = w->rank, .local_rank = w->local_rank, .generation = job->gen.generation,
                                    .pid = w->pid };
        snprintf(t[n].gpu, sizeof t[n].gpu, "%s", w->gpu);
        n++;
    }
    if (n == 0 || s_start_sampler(m) < 0)
        return 0;
    if (mon_sampler_request(m->sampler, t, n) == 0) {
        m->outstanding = 1;
        m->asked_ns = now;
    }
    return 0;
}

agent_mon_t *agent_mon_new(const struct job *job, const struct mon_thresh *thresh, loop_t *loop, char *err, size_t errlen)
{
    if (job->opt.monitor <= 0)
        return NULL;
    agent_mon_t *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->job = job;
    m->thresh = thresh;
    m->loop = loop;
    m->csv_fd = m->dirfd = -1;
    m->use_nvml = job->node.gpu_mode; /* CPU workers: no GPU to ask about */
    m->interval_ms = (int64_t)(job->opt.monitor * 1000 + 0.5);
    m->nseries = job->node.nworkers;
    m->series = calloc((size_t)job->node.nworkers, sizeof *m->series);
    m->buf = calloc((size_t)job->node.nworkers, sizeof *m->buf);
    m->last = calloc((size_t)job->node.nworkers, sizeof *m->last);
    ssize_t len = readlink("/proc/self/exe", m->exe, sizeof m->exe - 1);
    snprintf(m->csv_name, sizeof m->csv_name, "monitor.%s.csv", job->node.node_label);
    if (!m->series || !m->buf || !m->last || len <= 0) {
        snprintf(err, errlen, "monitor: %s", len <= 0 ? "cannot find this program (/proc/self/exe)" : "out of memory");
        goto error;
    }
    m->exe[len] = '\0';
    m->dirfd = ownfile_open_dir(job->node.log_dir, "log directory", "choose another --log-dir", err, errlen);
    if (m->dirfd < 0 || s_csv_open(m, err, errlen) < 0)
        goto error;
    m->timer = loop_timer_after_ms(loop, m->interval_ms, s_tick, m);
    return m;
error:
    agent_mon_destroy(&m);
    return NULL;
}

/* The node's GPU entries, for a request about them. */
static int s_gpus(const struct job *job, const char **gpus)
{
    int n = 0;
    for (int i = 0; i < job->node.nworkers && n < MON_TARGETS_MAX; i++)
        gpus[n++] = job->workers[i].gpu;
    return n;
}

int agent_mon_preflight(agent_mon_t *m, void (*done)(void *arg, int code), void *arg)
{
    static const char *gpus[MON_TARGETS_MAX];
    const struct job *job = m ? m->job : NULL;
    if (!m || !job->node.gpu_mode || strcmp(job->opt.preflight, "off") == 0 || s_start_sampler(m) < 0)
        return 0;
    if (mon_sampler_request_preflight(m->sampler, gpus, s_gpus(job, gpus)) < 0)
        return 0;
    m->done = done;
    m->done_arg = arg;
    m->preflight = 1;
    m->preflight_timer = loop_timer_after_ms(m->loop, PREFLIGHT_DEADLINE_MS, s_on_preflight_deadline, m);
    return 1;
}

int agent_mon_gpu_procs(agent_mon_t *m, void (*done)(void *arg, const char *lines, int n, int ok), void *arg)
{
    static const char *gpus[MON_TARGETS_MAX];
    const struct job *job = m ? m->job : NULL;
    if (!m || !job->node.gpu_mode || !m->use_nvml || m->broken || m->preflight || m->procs || m->outstanding ||
        s_start_sampler(m) < 0)
        return 0;
    if (mon_sampler_request_procs(m->sampler, gpus, s_gpus(job, gpus)) < 0)
        return 0;
    m->procs_done = done;
    m->procs_arg = arg;
    m->procs = 1;
    return 1;
}

int agent_mon_can_ask_gpus(const agent_mon_t *m)
{
    return m && m->job->node.gpu_mode && m->use_nvml && !m->broken;
}

double agent_mon_rss_peak_mib(agent_mon_t *m, int reset)
{
    double v = m ? m->rss_peak_mib : 0;
    if (m && reset)
        m->rss_peak_mib = 0;
    return v;
}

char *agent_mon_health_json(agent_mon_t *m, size_t max_bytes)
{
    if (!m)
        return NULL;
    struct mon_rank_summary *sum = calloc((size_t)m->nseries, sizeof *sum);
    int n = 0, all;
    for (int i = 0; sum && i < m->nseries; i++)
        if (m->series[i] && m->series[i]->n > 0)
            mon_diag_rank(m->series[i], m->thresh, &sum[n++]);
    all = n;
    char *json = sum && n ? mon_json_encode(sum, n) : NULL;
    while (json && strlen(json) > max_bytes && n > 1) { /* a message has a bound: fewer ranks, said so */
        free(json);
        n /= 2;
        json = mon_json_encode(sum, n);
    }
    if (json && n < all)
        log_warn("monitor: the summaries of %d of this node's %d ranks fit in one report; the Health block covers "
                 "ranks %d-%d of this node only", n, all, sum[0].rank, sum[n - 1].rank);
    free(sum);
    return json;
}

const char *agent_mon_cuda_driver(const agent_mon_t *m)
{
    return m ? m->cuda_driver : "";
}

void agent_mon_destroy(agent_mon_t **mp)
{
    agent_mon_t *m = mp ? *mp : NULL;
    if (!m)
        return;
    if (m->timer > 0)
        loop_timer_cancel(m->loop, m->timer);
    if (m->preflight_timer > 0)
        loop_timer_cancel(m->loop, m->preflight_timer);
    s_drop_sampler(m);
    if (m->csv_fd >= 0)
        close(m->csv_fd);
    if (m->dirfd >= 0)
        close(m->dirfd);
    for (int i = 0; m->series && i < m->nseries; i++)
        free(m->series[i]);
    free(m->series);
    free(m->buf);
    free(m->last);
    free(m);
    *mp = NULL;
}

int agent_mon_latest(const agent_mon_t *m, int local_rank, int generation, struct mon_sample *out)
{
    if (!m || local_rank < 0 || local_rank >= m->nseries || !m->last[local_rank].t_ms ||
        m->last[local_rank].generation != generation)
        return 0;
    *out = m->last[local_rank];
    return 1;
}
