/* coord_health: the job's health on the coordinator: every node's rank summaries (REPORT "health", checked as a
 * peer's bytes), and at the job's end the findings across all of them and the Health block. */
#include "coord_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esc.h"
#include "log.h"
#include "mon_json.h"

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

int coord_health_add(coord_server_t *cs, int peer, const Plaunch__Report *r)
{
    struct peer *p = &cs->peers[peer];
    struct mon_rank_summary *in = calloc(WIRE_MAX_LOCAL, sizeof *in);
    char err[256];
    int n = in ? mon_json_decode((const char *)r->json.data, r->json.len, in, WIRE_MAX_LOCAL, err, sizeof err) : -1;
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
