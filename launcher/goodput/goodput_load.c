/* goodput_load: a model read back: from the ledger (goodput.jsonl: plaunch report) and from status.json or a STATUS
 * answer (plaunch status, top). Every field is checked for its type and range; text is kept as bytes and escaped
 * where it is shown. */
#include "launcher/goodput/goodput_priv.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gp_rd {
    const char *what;          /* "goodput.jsonl line 3", "status" */
    char *err;
    size_t errlen;
    int bad;
};

static double s_dbl(struct gp_rd *rd, const json_t *o, const char *key, double dflt)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return dflt;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < -1e12 ||
        json_number_value(v) > 1e12) {
        if (!rd->bad++)
            snprintf(rd->err, rd->errlen, "%s: field %s: expected a number", rd->what, key);
        return dflt;
    }
    return json_number_value(v);
}

static long long s_int(struct gp_rd *rd, const json_t *o, const char *key, long long lo, long long hi, long long dflt)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return dflt;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        if (!rd->bad++)
            snprintf(rd->err, rd->errlen, "%s: field %s: expected an integer in %lld..%lld", rd->what, key, lo, hi);
        return dflt;
    }
    return json_integer_value(v);
}

static void s_str(const json_t *o, const char *key, char *dst, size_t cap)
{
    const json_t *v = json_object_get(o, key);
    dst[0] = 0;
    if (json_is_string(v))
        snprintf(dst, cap, "%s", json_string_value(v));
}

static int s_name(const json_t *o, const char *key, const char *(*name)(int), int n)
{
    const char *s = json_string_value(json_object_get(o, key));
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, name(i)) == 0)
            return i;
    return -1;
}

static const char *s_cause_n(int i) { return gp_cause_name((enum gp_cause)i); }
static const char *s_phase_n(int i) { return gp_phase_name((enum gp_phase)i); }
static const char *s_state_n(int i) { return gp_node_state_name((enum gp_node_state)i); }

static int s_incident(gp_t *g, struct gp_rd *rd, const json_t *o)
{
    struct gp_incident *arr = gp_grow(g->inc, &g->cap_inc, g->ninc + 1, sizeof *g->inc);
    if (!arr || g->ninc >= GP_MAX_INCIDENTS)
        return 0;
    g->inc = arr;
    struct gp_incident *in = &g->inc[g->ninc];
    memset(in, 0, sizeof *in);
    int c = s_name(o, "cause", s_cause_n, GP_NCAUSES);
    if (c < 0) {
        if (!rd->bad++)
            snprintf(rd->err, rd->errlen, "%s: field cause: not one of the causes docs/goodput.md lists", rd->what);
        return -1;
    }
    in->cause = (enum gp_cause)c;
    in->id = (int)s_int(rd, o, "id", 0, GP_MAX_INCIDENTS, g->ninc);
    in->generation = (uint32_t)s_int(rd, o, "generation", 0, UINT32_MAX, 0);
    in->rank = (int)s_int(rd, o, "rank", -1, GP_MAX_RANKS, -1);
    in->node = (int)s_int(rd, o, "node", -1, GP_MAX_NODES, -1);
    in->exit_code = (int)s_int(rd, o, "exit_code", -1, 255, -1);
    in->signal = (int)s_int(rd, o, "signal", 0, 64, 0);
    s_str(o, "host", in->host, sizeof in->host);
    s_str(o, "text", in->text, sizeof in->text);
    s_str(o, "hang_groups", in->group, sizeof in->group);
    s_str(o, "replaced_by", in->replaced_by, sizeof in->replaced_by);
    const json_t *marks = json_object_get(o, "marks");
    for (int m = 0; m < GP_NMARKS; m++)
        in->at[m] = s_dbl(rd, marks, gp_mark_name((enum gp_mark)m), -1);
    in->end_t = s_dbl(rd, o, "end", -1);
    in->closed = in->end_t >= 0;
    in->final = json_is_true(json_object_get(o, "final"));
    in->step_before = s_int(rd, o, "step_before", -1, LLONG_MAX, -1);
    in->step_after = s_int(rd, o, "step_after", -1, LLONG_MAX, -1);
    in->steps_lost = s_int(rd, o, "steps_lost", 0, LLONG_MAX, 0);
    in->recompute_s = s_dbl(rd, o, "recompute_s", 0);
    g->ninc++;
    return rd->bad ? -1 : 0;
}

static void s_summary(gp_t *g, struct gp_rd *rd, const json_t *o)
{
    struct gp_summary *s = &g->fsum;
    s->wall_s = s_dbl(rd, o, "wall_s", NAN);
    s->startup_s = s_dbl(rd, o, "startup_s", 0);
    s->running_s = s_dbl(rd, o, "running_s", 0);
    s->ending_s = s_dbl(rd, o, "ending_s", 0);
    s->recompute_s = s_dbl(rd, o, "recompute_s", 0);
    s->lost_total_s = s_dbl(rd, o, "lost_total_s", 0);
    s->goodput = s_dbl(rd, o, "goodput", NAN);
    const json_t *lost = json_object_get(o, "lost_s"), *by = json_object_get(o, "incidents");
    for (int p = 0; p < GP_NPHASES; p++)
        s->lost_s[p] = s_dbl(rd, lost, gp_phase_name((enum gp_phase)p), 0);
    for (int c = 0; c < GP_NCAUSES; c++)
        s->incidents[c] = (int)s_int(rd, by, gp_cause_name((enum gp_cause)c), 0, INT32_MAX, 0);
    s->nincidents = (int)s_int(rd, o, "nincidents", 0, INT32_MAX, 0);
    s->restarts = (unsigned)s_int(rd, o, "restarts", 0, UINT32_MAX, 0);
    s->steps_reported = json_is_true(json_object_get(o, "steps_reported"));
    s->steps_lost = s_int(rd, o, "steps_lost", 0, LLONG_MAX, 0);
    int sl = s_name(o, "slowest_phase", s_phase_n, GP_NPHASES);
    s->slowest = sl < 0 ? GP_NPHASES : (enum gp_phase)sl;
    s->exit_status = (int)s_int(rd, o, "exit_status", -1, 255, -1);
    g->generation = (uint32_t)s_int(rd, o, "generation", 0, UINT32_MAX, 0);
    g->start_unix_ms = s_int(rd, o, "start_unix_ms", 0, INT64_MAX, 0);
    g->end_t = g->frozen_now = isnan(s->wall_s) ? 0 : s->wall_s;
}

gp_t *gp_ledger_load(const char *text, size_t len, char *err, size_t errlen)
{
    if (len > GP_LEDGER_MAX) {
        snprintf(err, errlen, "goodput.jsonl: %zu bytes, more than the %u a ledger may hold", len, GP_LEDGER_MAX);
        return NULL;
    }
    gp_t *g = gp_new("", 0, 0);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->frozen = 1;
    g->fsum.wall_s = NAN;
    g->fsum.goodput = NAN;
    g->fsum.slowest = GP_NPHASES;
    g->fsum.exit_status = -1;
    int lineno = 0, summary = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        char what[64];
        lineno++;
        snprintf(what, sizeof what, "goodput.jsonl line %d", lineno);
        struct gp_rd rd = { what, err, errlen, 0 };
        json_error_t je;
        json_t *o = n ? json_loadb(text + at, n, 0, &je) : NULL;
        at += n + 1;
        if (!n)
            continue;
        const char *type = json_string_value(json_object_get(o, "type"));
        if (!o || !type) {
            snprintf(err, errlen, "%s: not a ledger record (%s)", what, o ? "no type" : je.text);
            json_decref(o);
            gp_free(&g);
            return NULL;
        }
        if (!g->job_id[0])
            s_str(o, "job", g->job_id, sizeof g->job_id);
        if (strcmp(type, "incident") == 0 && s_incident(g, &rd, o) < 0) {
            json_decref(o);
            gp_free(&g);
            return NULL;
        }
        if (strcmp(type, "summary") == 0) {
            s_summary(g, &rd, o);
            summary = 1;
        }
        json_decref(o);
        if (rd.bad) {
            gp_free(&g);
            return NULL;
        }
    }
    if (!summary) { /* the job did not end (or is still running): its incidents alone */
        g->fsum.nincidents = g->ninc;
        for (int i = 0; i < g->ninc; i++)
            g->fsum.incidents[g->inc[i].cause]++;
    }
    return g;
}

static const char *s_spare_n(int i) { return gp_spare_state_name((enum gp_spare_state)i); }

/* status.json's spares and swaps: at most GP_STATUS_SPARES and GP_STATUS_SWAPS read, each field in range. */
static void s_spares(gp_t *g, struct gp_rd *rd, const json_t *o)
{
    struct gp_spare sp[GP_STATUS_SPARES];
    const json_t *x;
    size_t i;
    int n = 0;
    json_array_foreach(json_object_get(o, "spares"), i, x) {
        if (n >= GP_STATUS_SPARES)
            break;
        int st = s_name(x, "state", s_spare_n, GP_NSPARE_STATES);
        s_str(x, "host", sp[n].host, sizeof sp[n].host);
        sp[n++].state = st < 0 ? GP_SPARE_STANDBY : (enum gp_spare_state)st;
    }
    gp_spares_set(g, sp, n, (int)s_int(rd, o, "spares_standby", 0, GP_MAX_NODES, 0),
                  (int)s_int(rd, o, "spares_swapped_out", 0, GP_MAX_NODES, 0));
    int open = g->open;
    g->open = -1; /* a swap read back names no incident */
    json_array_foreach(json_object_get(o, "swaps"), i, x) {
        if (i >= GP_STATUS_SWAPS)
            break;
        char host[GP_HOST_MAX];
        s_str(x, "host", host, sizeof host);
        gp_spare_swap(g, (uint32_t)s_int(rd, x, "generation", 0, UINT32_MAX, 0),
                      (int)s_int(rd, x, "node", 0, GP_MAX_NODES - 1, 0), host, s_dbl(rd, x, "after_s", -1));
    }
    g->open = open;
    g->swaps_total = (int)s_int(rd, o, "swaps_total", 0, INT32_MAX, g->swaps_total);
}

gp_t *gp_status_load(const char *text, size_t len, uint64_t now_ns, char *err, size_t errlen)
{
    struct gp_rd rd = { "status", err, errlen, 0 };
    json_error_t je;
    if (len > GP_STATUS_MAX) {
        snprintf(err, errlen, "status: %zu bytes, more than %u", len, GP_STATUS_MAX);
        return NULL;
    }
    json_t *o = json_loadb(text, len, 0, &je);
    if (!o || s_int(&rd, o, "version", 1, 1, 0) != 1) {
        snprintf(err, errlen, "status: %s", o ? "not version 1 of the status document" : je.text);
        json_decref(o);
        return NULL;
    }
    gp_t *g = gp_new("", now_ns, 0);
    if (!g) {
        json_decref(o);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s_str(o, "job", g->job_id, sizeof g->job_id);
    g->frozen = 1;
    g->frozen_now = s_dbl(&rd, o, "now_s", 0);
    g->start_unix_ms = s_int(&rd, o, "start_unix_ms", 0, INT64_MAX, 0);
    g->generation = (uint32_t)s_int(&rd, o, "generation", 0, UINT32_MAX, 0);
    g->world = (int)s_int(&rd, o, "world", 0, GP_MAX_RANKS, 0);
    struct gp_summary *s = &g->fsum;
    s->wall_s = s_dbl(&rd, o, "wall_s", NAN);
    s->running_s = s_dbl(&rd, o, "running_s", 0);
    s->lost_total_s = s_dbl(&rd, o, "lost_total_s", 0);
    s->recompute_s = s_dbl(&rd, o, "recompute_s", 0);
    s->goodput = s_dbl(&rd, o, "goodput", NAN);
    s->restarts = (unsigned)s_int(&rd, o, "restarts", 0, UINT32_MAX, 0);
    s->nincidents = (int)s_int(&rd, o, "nincidents", 0, INT32_MAX, 0);
    s->exit_status = (int)s_int(&rd, o, "exit_status", -1, 255, -1);
    s->slowest = GP_NPHASES;
    const char *state = json_string_value(json_object_get(o, "state"));
    if (state && strcmp(state, "done") == 0)
        g->end_t = g->frozen_now;
    const json_t *c = json_object_get(o, "incident");
    if (json_is_object(c) && (g->inc = calloc(1, sizeof *g->inc))) {
        struct gp_incident *in = &g->inc[0];
        g->cap_inc = g->ninc = 1;
        g->open = 0;
        int cause = s_name(c, "cause", s_cause_n, GP_NCAUSES);
        in->cause = cause < 0 ? GP_CAUSE_WORKER : (enum gp_cause)cause;
        in->rank = (int)s_int(&rd, c, "rank", -1, GP_MAX_RANKS, -1);
        in->node = (int)s_int(&rd, c, "node", -1, GP_MAX_NODES, -1);
        in->exit_code = (int)s_int(&rd, c, "exit_code", -1, 255, -1);
        in->signal = (int)s_int(&rd, c, "signal", 0, 64, 0);
        s_str(c, "host", in->host, sizeof in->host);
        s_str(c, "text", in->text, sizeof in->text);
        for (int m = 0; m < GP_NMARKS; m++)
            in->at[m] = -1;
        in->at[GP_OCCURRED] = in->at[GP_DETECTED] = g->frozen_now - s_dbl(&rd, c, "detected_age_s", 0);
        int ph = s_name(c, "phase", s_phase_n, GP_NPHASES);
        for (int m = GP_TEARDOWN; ph >= 0 && m <= ph; m++)
            in->at[m] = in->at[GP_DETECTED]; /* the phase it is in shows; when each began is not carried */
        in->end_t = -1;
    }
    const json_t *nodes = json_object_get(o, "nodes"), *ranks = json_object_get(o, "ranks"), *x;
    size_t i;
    json_array_foreach(nodes, i, x) {
        if (i >= GP_STATUS_NODES)
            break;
        int nr = (int)s_int(&rd, x, "node", 0, GP_MAX_NODES - 1, 0);
        char host[GP_HOST_MAX];
        s_str(x, "host", host, sizeof host);
        int st = s_name(x, "state", s_state_n, GP_NNODE_STATES);
        gp_node_set(g, nr, host, (int)s_int(&rd, x, "first_rank", -1, GP_MAX_RANKS, -1),
                    (int)s_int(&rd, x, "nranks", 0, GP_MAX_RANKS, 0), st < 0 ? GP_NODE_RUNNING : st, now_ns);
        struct gp_node *n = &g->nodes[nr].n;
        n->seen_t = g->frozen_now - s_dbl(&rd, x, "seen_age_s", 0);
        n->gpu_util = s_dbl(&rd, x, "gpu_util", NAN);
        n->gpu_mem_mib = s_dbl(&rd, x, "gpu_mem_mib", NAN);
        n->gpu_mem_total_mib = s_dbl(&rd, x, "gpu_mem_total_mib", NAN);
    }
    json_array_foreach(ranks, i, x) {
        if (i >= GP_STATUS_RANKS)
            break;
        struct gp_rank_x *rx = gp_rank_get(g, (int)s_int(&rd, x, "rank", 0, GP_MAX_RANKS - 1, 0));
        if (!rx)
            break;
        struct gp_rank *q = &rx->r;
        q->node = (int)s_int(&rd, x, "node", -1, GP_MAX_NODES, -1);
        q->step = s_int(&rd, x, "step", -1, LLONG_MAX, -1);
        q->step_rate = s_dbl(&rd, x, "step_rate", NAN);
        double age = s_dbl(&rd, x, "out_age_s", -1);
        q->out_t = age >= 0 ? g->frozen_now - age : -1;
        q->gpu_util = s_dbl(&rd, x, "gpu_util", NAN);
        q->gpu_mem_mib = s_dbl(&rd, x, "gpu_mem_mib", NAN);
        q->gpu_mem_total_mib = s_dbl(&rd, x, "gpu_mem_total_mib", NAN);
    }
    s_spares(g, &rd, o);
    g->nodes_more = (int)s_int(&rd, o, "nodes_more", 0, GP_MAX_NODES, 0);
    g->ranks_more = (int)s_int(&rd, o, "ranks_more", 0, GP_MAX_RANKS, 0);
    json_decref(o);
    if (rd.bad) {
        gp_free(&g);
        return NULL;
    }
    return g;
}
