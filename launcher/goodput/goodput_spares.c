/* goodput_spares: the hot spares in the model: who stands by in which state and the swaps (a spare that took a lost
 * or swapped-out node's rank), fed by the coordinator where it decides them; read by status.json, the status
 * text, the ledger's incidents (replaced_by) and the metrics. */
#include "launcher/goodput/goodput_priv.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gp_spare_state_name(enum gp_spare_state s)
{
    return s == GP_SPARE_STANDBY ? "standby" : s == GP_SPARE_SWAPPED_OUT ? "swapped_out" : "?";
}

void gp_spares_set(gp_t *g, const struct gp_spare *list, int n, int standby, int swapped_out)
{
    if (!g)
        return;
    if (!g->spares && n > 0 && !(g->spares = calloc(GP_STATUS_SPARES, sizeof *g->spares)))
        n = 0; /* out of memory: counted, not listed */
    g->nspares = n < GP_STATUS_SPARES ? (n > 0 ? n : 0) : GP_STATUS_SPARES;
    for (int i = 0; i < g->nspares; i++) {
        snprintf(g->spares[i].host, sizeof g->spares[i].host, "%s", list[i].host);
        g->spares[i].state = list[i].state == GP_SPARE_SWAPPED_OUT ? GP_SPARE_SWAPPED_OUT : GP_SPARE_STANDBY;
    }
    g->spares_in[GP_SPARE_STANDBY] = standby > 0 ? standby : 0;
    g->spares_in[GP_SPARE_SWAPPED_OUT] = swapped_out > 0 ? swapped_out : 0;
}

void gp_spare_swap(gp_t *g, uint32_t generation, int node_rank, const char *host, double after_s)
{
    if (!g)
        return;
    g->swaps_total++;
    if (g->open >= 0) { /* the incident this swap resolves */
        char *rb = g->inc[g->open].replaced_by;
        size_t l = strlen(rb);
        if (l + strlen(host) + 3 < GP_HOST_MAX)
            snprintf(rb + l, GP_HOST_MAX - l, "%s%s", l ? ", " : "", host);
    }
    if (!g->swaps && !(g->swaps = calloc(GP_STATUS_SWAPS, sizeof *g->swaps)))
        return;
    if (g->nswaps == GP_STATUS_SWAPS) /* keep the last ones */
        memmove(g->swaps, g->swaps + 1, (GP_STATUS_SWAPS - 1) * sizeof *g->swaps);
    else
        g->nswaps++;
    struct gp_swap *w = &g->swaps[g->nswaps - 1];
    w->generation = generation;
    w->node_rank = node_rank;
    snprintf(w->host, sizeof w->host, "%s", host ? host : "");
    w->after_s = after_s >= 0 && isfinite(after_s) ? after_s : -1;
}

int gp_spares_count(const gp_t *g, enum gp_spare_state s)
{
    return s >= 0 && s < GP_NSPARE_STATES ? g->spares_in[s] : 0;
}

int gp_nspares(const gp_t *g) { return g->nspares; }
const struct gp_spare *gp_spare(const gp_t *g, int i) { return i >= 0 && i < g->nspares ? &g->spares[i] : NULL; }
int gp_swaps_total(const gp_t *g) { return g->swaps_total; }
int gp_nswaps(const gp_t *g) { return g->nswaps; }
const struct gp_swap *gp_swap(const gp_t *g, int i) { return i >= 0 && i < g->nswaps ? &g->swaps[i] : NULL; }

size_t gp_spares_text(const gp_t *g, char *buf, size_t cap)
{
    int sb = g->spares_in[GP_SPARE_STANDBY], so = g->spares_in[GP_SPARE_SWAPPED_OUT];
    size_t n = 0;
    if (!cap)
        return 0;
    buf[0] = 0;
    if (sb + so == 0 && g->swaps_total == 0)
        return 0;
#define S_ADD(...) (n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__), n = n < cap ? n : cap - 1)
    S_ADD("spares: %d standing by", sb + so);
    for (int i = 0; i < g->nspares; i++)
        S_ADD("%s%s%s", i ? ", " : " (", g->spares[i].host,
              g->spares[i].state == GP_SPARE_SWAPPED_OUT ? " swapped out" : "");
    if (g->nspares < sb + so && g->nspares)
        S_ADD(", %d more", sb + so - g->nspares);
    if (g->nspares)
        S_ADD(")");
    S_ADD(", %d swap%s", g->swaps_total, g->swaps_total == 1 ? "" : "s");
    if (g->nswaps) {
        const struct gp_swap *w = &g->swaps[g->nswaps - 1];
        S_ADD(": %snode rank %d -> %s", g->swaps_total > 1 ? "last " : "", w->node_rank, w->host);
        if (w->after_s >= 0)
            S_ADD(" in %.2f s", w->after_s);
        S_ADD(" (generation %u)", w->generation);
    }
#undef S_ADD
    return n;
}

void gp_spares_json(const gp_t *g, json_t *o)
{
    json_t *sp = json_array(), *sw = json_array();
    for (int i = 0; i < g->nspares; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "host", json_string(g->spares[i].host));
        json_object_set_new(x, "state", json_string(gp_spare_state_name(g->spares[i].state)));
        json_array_append_new(sp, x);
    }
    for (int i = 0; i < g->nswaps; i++) {
        const struct gp_swap *w = &g->swaps[i];
        json_t *x = json_object();
        json_object_set_new(x, "generation", json_integer(w->generation));
        json_object_set_new(x, "node", json_integer(w->node_rank));
        json_object_set_new(x, "host", json_string(w->host));
        json_object_set_new(x, "after_s", w->after_s >= 0 ? json_real(round(w->after_s * 1000) / 1000) : json_null());
        json_array_append_new(sw, x);
    }
    json_object_set_new(o, "spares", sp);
    json_object_set_new(o, "spares_standby", json_integer(g->spares_in[GP_SPARE_STANDBY]));
    json_object_set_new(o, "spares_swapped_out", json_integer(g->spares_in[GP_SPARE_SWAPPED_OUT]));
    json_object_set_new(o, "swaps", sw);
    json_object_set_new(o, "swaps_total", json_integer(g->swaps_total));
}
