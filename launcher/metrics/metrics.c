/* metrics: the collectors of this process and the /metrics server that calls them (metrics.h says what). */
#include "launcher/metrics/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/metrics/metrics_http.h"

struct collector {
    metrics_collect_fn fn;
    void *arg;
};

struct metrics {
    metrics_http_t *http;
    char job_id[80], node[256];
    const char *base[4];
    int n;
    struct collector c[METRICS_COLLECTORS_MAX];
};

/* The server's own families, after every collector's. */
static void s_self(metrics_t *m, struct mtext *t)
{
    mtext_family(t, "plaunch_metrics_scrapes_total", "counter", "Scrapes of /metrics this agent answered.");
    mtext_sample(t, "plaunch_metrics_scrapes_total", NULL, 0, (double)metrics_http_scrapes(m->http));
}

char *metrics_render(metrics_t *m, size_t *len)
{
    struct mtext t;
    mtext_init(&t, m->base, 2);
    for (int i = 0; i < m->n; i++)
        m->c[i].fn(m->c[i].arg, &t);
    s_self(m, &t);
    if (!t.buf) {
        *len = 0;
        return strdup("");
    }
    *len = t.len;
    return t.buf;
}

static char *s_body(void *arg, size_t *len)
{
    return metrics_render(arg, len);
}

metrics_t *metrics_new(loop_t *loop, const char *addr, int port, const char *job_id, const char *node, char *err,
                       size_t errlen)
{
    metrics_t *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(m->job_id, sizeof m->job_id, "%s", job_id);
    snprintf(m->node, sizeof m->node, "%s", node);
    m->base[0] = "job_id", m->base[1] = m->job_id, m->base[2] = "node", m->base[3] = m->node;
    m->http = metrics_http_new(loop, addr, port, s_body, m, err, errlen);
    if (!m->http) {
        free(m);
        return NULL;
    }
    return m;
}

int metrics_add(metrics_t *m, metrics_collect_fn fn, void *arg)
{
    if (!m || m->n >= METRICS_COLLECTORS_MAX)
        return -1;
    m->c[m->n++] = (struct collector){ fn, arg };
    return 0;
}

void metrics_remove(metrics_t *m, metrics_collect_fn fn, void *arg)
{
    for (int i = 0; m && i < m->n; i++) {
        if (m->c[i].fn == fn && m->c[i].arg == arg) {
            memmove(&m->c[i], &m->c[i + 1], (size_t)(m->n - i - 1) * sizeof *m->c);
            m->n--;
            return;
        }
    }
}

int metrics_port(const metrics_t *m)
{
    return m ? metrics_http_port(m->http) : 0;
}

void metrics_destroy(metrics_t **mp)
{
    metrics_t *m = mp ? *mp : NULL;
    if (!m)
        return;
    metrics_http_destroy(&m->http);
    free(m);
    *mp = NULL;
}
