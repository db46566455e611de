/* agent_hang: this node's progress reports for the hang watch (agent_hang.h says how). */
#include "launcher/agent/watch/agent_hang.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ah_worker {
    long long step;               /* the last step its progress file said; -1 none */
    uint64_t step_ns;
};


struct agent_hang {
    const struct job *job;
    loop_t *loop;
    agent_hang_send_fn send;
    void *arg;
    int timer;
    int64_t tick_ms;
    struct ah_worker *w;
    int nw;
    uint64_t first_step_ns;       /* this generation's first step report read here; 0 none yet */
};

/* ---- progress ---------------------------------------------------------------------------------------- */

static void s_read_progress(agent_hang_t *h, int i, uint64_t now)
{
    char path[PATH_MAX + 32], b[64];
    snprintf(path, sizeof path, "%s/progress.%d", h->job->node.run_dir, i);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, b, sizeof b - 1, 0) : -1;
    close(fd);
    if (n <= 0)
        return; /* not written yet, or emptied by an open("w") before its write: nothing new */
    b[n] = '\0';
    char *p = b, *end;
    while (*p == ' ')
        p++;
    errno = 0;
    unsigned long long v = isdigit((unsigned char)*p) ? strtoull(p, &end, 10) : 0;
    if (!isdigit((unsigned char)*p) || errno || v > LLONG_MAX || (*end && !isspace((unsigned char)*end)))
        return; /* not a number: the file is the worker's to write, a bad line is only no news */
    struct ah_worker *w = &h->w[i];
    if ((long long)v != w->step)
        w->step = (long long)v, w->step_ns = now;
    if (!h->first_step_ns)
        h->first_step_ns = now;
}

long long agent_hang_step(const agent_hang_t *h, int local_rank)
{
    return h && local_rank >= 0 && local_rank < h->nw ? h->w[local_rank].step : -1;
}

static int s_tick(loop_t *loop, int id, void *arg)
{
    agent_hang_t *h = arg;
    const struct job *job = h->job;
    h->timer = loop_timer_after_ms(loop, h->tick_ms, s_tick, h);
    uint64_t now = loop_now_ns();
    Plaunch__ProgressRank *r = calloc((size_t)(job->node.nworkers > 0 ? job->node.nworkers : 1), sizeof *r);
    Plaunch__ProgressRank **rp = calloc((size_t)(job->node.nworkers > 0 ? job->node.nworkers : 1), sizeof *rp);
    Plaunch__Progress pr = PLAUNCH__PROGRESS__INIT;
    size_t n = 0;
    for (int i = 0; r && rp && i < job->node.nworkers && i < h->nw && n < WIRE_MAX_LOCAL; i++) {
        const struct worker *wk = &job->workers[i];
        if (wk->state != W_RUNNING)
            continue;
        s_read_progress(h, i, now);
        const struct ah_worker *w = &h->w[i];
        plaunch__progress_rank__init(&r[n]);
        r[n].rank = (uint32_t)wk->rank;
        r[n].step = w->step;
        r[n].out_age_ms = now > wk->out_ns ? (now - wk->out_ns) / 1000000 : 0;
        r[n].step_age_ms = w->step >= 0 ? (int64_t)((now - w->step_ns) / 1000000) : -1;
        rp[n] = &r[n];
        n++;
    }
    pr.n_ranks = n;
    pr.ranks = rp;
    if (n > 0)
        h->send(h->arg, WIRE_R_PROGRESS, &pr);
    free(rp);
    free(r);
    return 0;
}

void agent_hang_generation(agent_hang_t *h)
{
    char path[PATH_MAX + 32];
    if (!h)
        return;
    for (int i = 0; i < h->nw; i++) {
        snprintf(path, sizeof path, "%s/progress.%d", h->job->node.run_dir, i);
        unlink(path);
        h->w[i].step = -1;
    }
    h->first_step_ns = 0;
}

uint64_t agent_hang_first_step_ns(const agent_hang_t *h)
{
    return h ? h->first_step_ns : 0;
}

agent_hang_t *agent_hang_new(const struct job *job, loop_t *loop, agent_hang_send_fn send, void *arg, char *err,
                             size_t errlen)
{
    if (job->opt.hang_timeout <= 0)
        return NULL;
    agent_hang_t *h = calloc(1, sizeof *h);
    if (!h || (h->w = calloc((size_t)job->node.nworkers + 1, sizeof *h->w)) == NULL) {
        snprintf(err, errlen, "hang watch: out of memory");
        free(h);
        return NULL;
    }
    h->job = job, h->loop = loop, h->send = send, h->arg = arg, h->nw = job->node.nworkers;
    for (int i = 0; i < h->nw; i++)
        h->w[i].step = -1;
    h->tick_ms = opts_hang_tick_ms(&job->opt);
    h->timer = loop_timer_after_ms(loop, h->tick_ms, s_tick, h);
    return h;
}

void agent_hang_destroy(agent_hang_t **hp)
{
    agent_hang_t *h = hp ? *hp : NULL;
    if (!h)
        return;
    if (h->timer > 0)
        loop_timer_cancel(h->loop, h->timer);
    free(h->w);
    free(h);
    *hp = NULL;
}
