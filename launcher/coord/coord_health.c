/* coord_health: the job's health on the coordinator: every node's rank summaries (REPORT "health", checked as a
 * peer's bytes), and at the job's end the findings across all of them and the Health block. */
#include "coord_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mon_json.h"

int coord_health_add(coord_server_t *cs, int peer, const Plaunch__Report *r)
{
    struct peer *p = &cs->peers[peer];
    struct mon_rank_summary *in = calloc(WIRE_MAX_LOCAL, sizeof *in);
    char err[256];
    int n = in ? mon_json_decode((const char *)r->json.data, r->json.len, in, WIRE_MAX_LOCAL, err, sizeof err) : -1;
    if (n < 0) {
        log_warn("node %d (%s): health report dropped: %s", p->node_rank, p->host, in ? err : "out of memory");
        free(in);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (in[i].rank < 0 || in[i].rank >= WIRE_MAX_WORLD) {
            log_warn("node %d (%s): health report of rank %d dropped: no such rank", p->node_rank, p->host,
                     in[i].rank);
            continue;
        }
        int k = 0;
        while (k < cs->nhealth && cs->health[k].rank != in[i].rank)
            k++;
        if (k == cs->nhealth) {
            if (cs->nhealth == cs->health_cap) {
                int cap = cs->health_cap ? 2 * cs->health_cap : 64;
                struct mon_rank_summary *h = realloc(cs->health, (size_t)cap * sizeof *h);
                if (!h)
                    break;
                cs->health = h;
                cs->health_cap = cap;
            }
            cs->nhealth++;
        }
        cs->health[k] = in[i];
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
    const struct mon_thresh *th = &cs->job->mon_thresh;
    buf[0] = '\0';
    if (cs->nhealth == 0) {
        if (cs->steplag[0])
            snprintf(buf, cap, "plaunch: ===== health: step rates =====\n%s", cs->steplag);
        return cs->steplag[0] != '\0';
    }
    qsort(cs->health, (size_t)cs->nhealth, sizeof *cs->health, s_by_rank);
    int max = 4 * cs->nhealth + 16;
    struct mon_finding *f = calloc((size_t)max, sizeof *f);
    int nf = f ? mon_diag_job(cs->health, cs->nhealth, th, f, max) : 0;
    mon_diag_block(cs->health, cs->nhealth, th, f, nf, buf, cap);
    free(f);
    size_t len = strlen(buf);
    if (cs->steplag[0] && len + strlen(cs->steplag) < cap) /* the step-rate stragglers (coord_hang.c) */
        memcpy(buf + len, cs->steplag, strlen(cs->steplag) + 1);
    int judged = 0;
    for (int i = 0; i < cs->nhealth && !judged; i++)
        judged = cs->health[i].steady_s >= th->min_steady_s;
    return nf > 0 || judged || cs->steplag[0];
}
