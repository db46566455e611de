/* coord_health: the job's health on the coordinator: every node's rank summaries (REPORT HEALTH, checked as a
 * peer's bytes), and at the job's end the findings across all of them and the Health block. */
#include "coord_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int s_by_rank(const void *a, const void *b)
{
    const struct mon_rank_summary *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int coord_health_block(coord_server_t *cs, char *buf, size_t cap)
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
    free(cs->health.sum);
    free(cs->health.at);
    cs->health.sum = NULL;
    cs->health.at = NULL;
}
