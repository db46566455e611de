/* mon_report_out: plaunch report's terminal table and JSON document. */
#include "launcher/monitor/report/mon_report_out.h"

#include "common/esc/esc.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "launcher/monitor/diagnosis/mon_json.h"
#include "launcher/monitor/report/mon_report_log.h"

#define S_NODE_W 24 /* node and GPU columns wider than this are cut (the JSON has them whole) */
#define S_GPU_W 12

const char *mon_report_out_num(double v, int decimals, char *buf, size_t cap)
{
    if (isfinite(v))
        snprintf(buf, cap, "%.*f", decimals, v);
    else
        snprintf(buf, cap, "-");
    return buf;
}

int mon_report_out_nodes(const struct mon_report *r)
{
    int n = 0;
    for (int i = 0; i < r->nnodes; i++)
        n += r->node_ranks[i] > 0;
    return n;
}

static void s_dur(double s, char *buf, size_t cap)
{
    if (s < 120)
        snprintf(buf, cap, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.1f min", s / 60);
    else
        snprintf(buf, cap, "%.1f h", s / 3600);
}

/* UTC: what = 0 date and time, 1 the date, 2 the time */
static void s_time(int64_t ms, int what, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    size_t n = 0;
    if (gmtime_r(&t, &tm))
        n = what == 0 ? strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm)
            : what == 1 ? strftime(buf, cap, "%Y-%m-%d", &tm) : strftime(buf, cap, "%H:%M:%SZ", &tm);
    if (n == 0)
        snprintf(buf, cap, "?");
}

void mon_report_out_headline(const struct mon_report *r, char *buf, size_t cap)
{
    char dur[32], from[32], to[32], day0[16], day1[16];
    s_dur((double)(r->t_last - r->t_first) / 1000, dur, sizeof dur);
    s_time(r->t_first, 0, from, sizeof from);
    s_time(r->t_first, 1, day0, sizeof day0);
    s_time(r->t_last, 1, day1, sizeof day1);
    s_time(r->t_last, strcmp(day0, day1) ? 0 : 2, to, sizeof to);
    int nodes = mon_report_out_nodes(r);
    size_t o = (size_t)snprintf(buf, cap, "%s: %d rank%s on %d node%s", r->dir, r->nranks, r->nranks == 1 ? "" : "s",
                                nodes, nodes == 1 ? "" : "s");
    if (r->rows && o < cap)
        o += (size_t)snprintf(buf + o, cap - o, ", %s of samples (%s to %s), %lld rows", dur, from, to, r->rows);
    if (o < cap)
        snprintf(buf + o, cap - o, "%s", r->health_logged || r->root_cause
                                             ? "; the job ended"
                                             : "; no Health block in the logs: running, or stopped before its end");
}

/* s cut to w columns ("~" marks the cut). */
static const char *s_cut(const char *s, int w, char *buf, size_t cap)
{
    if ((int)strlen(s) <= w)
        return s;
    snprintf(buf, cap, "%.*s~", w - 1, s);
    return buf;
}

static void s_table(FILE *out, const struct mon_report *r)
{
    int nw = 4, gw = 3;
    for (int i = 0; i < r->nranks; i++) {
        int l = (int)strlen(r->sum[i].node), g = (int)strlen(r->sum[i].gpu);
        nw = l > nw ? (l < S_NODE_W ? l : S_NODE_W) : nw;
        gw = g > gw ? (g < S_GPU_W ? g : S_GPU_W) : gw;
    }
    fprintf(out, "%4s  %-*s  %-*s  %9s  %5s  %5s  %6s  %-15s  %-22s  %s\n", "rank", nw, "node", gw, "GPU",
            "samples", "busy%", "idle%", "CPU%", "RSS MiB", "GPU MiB (of total)", "throttle% th/pw/hw");
    for (int i = 0; i < r->nranks; i++) {
        const struct mon_rank_summary *s = &r->sum[i];
        char nb[S_NODE_W + 2], gb[S_GPU_W + 2], smp[32], a[24], b[24], c[24], d[24], e[24], rss[64], gm[96], th[96];
        snprintf(smp, sizeof smp, "%d/%lld", s->samples, r->ranks[i].rows);
        snprintf(rss, sizeof rss, "%s->%s", mon_report_out_num(s->rss_first_mib, 0, a, sizeof a),
                 mon_report_out_num(s->rss_last_mib, 0, b, sizeof b));
        snprintf(gm, sizeof gm, "%s->%s/%s", mon_report_out_num(s->gmem_first_mib, 0, a, sizeof a),
                 mon_report_out_num(s->gmem_last_mib, 0, b, sizeof b),
                 mon_report_out_num(s->gmem_total_mib, 0, c, sizeof c));
        if (!s->gpu_data)
            snprintf(gm, sizeof gm, "-");
        snprintf(th, sizeof th, "%s/%s/%s", mon_report_out_num(s->thr_thermal_frac * 100, 0, a, sizeof a),
                 mon_report_out_num(s->thr_power_frac * 100, 0, b, sizeof b),
                 mon_report_out_num(s->thr_hw_frac * 100, 0, c, sizeof c));
        fprintf(out, "%4d  %-*s  %-*s  %9s  %5s  %5s  %6s  %-15s  %-22s  %s\n", s->rank, nw,
                s_cut(s->node, nw, nb, sizeof nb), gw, s_cut(s->gpu[0] ? s->gpu : "-", gw, gb, sizeof gb), smp,
                mon_report_out_num(s->util_mean, 1, d, sizeof d),
                mon_report_out_num(s->idle_frac * 100, 1, e, sizeof e),
                mon_report_out_num(s->cpu_mean, 1, c, sizeof c), rss, gm, th);
    }
}

void mon_report_out_text(FILE *out, const struct mon_report *r)
{
    char head[PATH_MAX + 512];
    mon_report_out_headline(r, head, sizeof head);
    fprintf(out, "plaunch report: %s\n", head);
    if (r->nranks == 0) {
        fputs("no row could be read from the monitor files\n", out);
    } else {
        fputs("samples: judged (after the warm-up of the latest generation) / read; the other columns are the judged "
              "steady state\n", out);
        s_table(out, r);
    }
    if (r->moved)
        fprintf(out, "note: %d earlier series left out: %s ran on another node in a later generation (an elastic "
                     "restart); the latest one counts\n", r->moved, r->moved == 1 ? "its rank" : "their ranks");
    if (r->partial)
        fprintf(out, "note: the last line of %lld file%s was still being written: ignored\n", r->partial,
                r->partial == 1 ? "" : "s");
    fprintf(out, "\n%s", r->block ? r->block : "");
    if (r->block && r->block[0] && r->block[strlen(r->block) - 1] != '\n')
        fputc('\n', out);
    if (r->root_cause)
        fprintf(out, "\nroot cause, from %s/%s:\n%s", r->dir, r->log_file, r->root_cause);
    if (r->goodput) {
        static char blk[16 << 10];
        if (gp_block(r->goodput, 0, blk, sizeof blk))
            fprintf(out, "\nfrom %s/goodput.jsonl:\n%s", r->dir, blk);
    }
}

/* ---- JSON ---------------------------------------------------------------------------------------------- */

/* A string from the files, escaped to valid UTF-8 without controls (json_string refuses invalid UTF-8, and the
 * JSON may be printed); json null for NULL. */
static json_t *s_str(const char *s)
{
    if (!s)
        return json_null();
    char *c = esc_term_dup(s, ESC_LINES);
    if (!c)
        return NULL;
    json_t *j = json_string(c);
    free(c);
    return j;
}

/* obj[key] = v, failing on a NULL v (out of memory). */
static int s_set(json_t *obj, const char *key, json_t *v)
{
    return v ? json_object_set_new(obj, key, v) : -1;
}

static json_t *s_job(const struct mon_report *r)
{
    json_t *job = json_object(), *names, *span;
    /* the containers go in first, so that each is owned by the document whatever fails later */
    int bad = !job || s_set(job, "logdir", s_str(r->dir)) < 0 ||
              s_set(job, "nodes", json_integer(mon_report_out_nodes(r))) < 0 ||
              s_set(job, "node_names", json_array()) < 0 || s_set(job, "ranks", json_integer(r->nranks)) < 0 ||
              s_set(job, "span", json_object()) < 0;
    names = bad ? NULL : json_object_get(job, "node_names");
    span = bad ? NULL : json_object_get(job, "span");
    for (int i = 0; !bad && i < r->nnodes; i++)
        if (r->node_ranks[i] > 0)
            bad |= json_array_append_new(names, s_str(r->nodes[i])) < 0;
    bad = bad || s_set(span, "first_unix_ms", r->rows ? json_integer(r->t_first) : json_null()) < 0 ||
          s_set(span, "last_unix_ms", r->rows ? json_integer(r->t_last) : json_null()) < 0 ||
          s_set(span, "seconds", json_real(r->rows ? (double)(r->t_last - r->t_first) / 1000 : 0)) < 0;
    bad = bad || s_set(job, "rows", json_integer(r->rows)) < 0 || s_set(job, "files", json_integer(r->nfiles)) < 0 ||
          s_set(job, "ended", json_boolean(r->health_logged || r->root_cause)) < 0 ||
          s_set(job, "partial_files", json_integer(r->partial)) < 0 ||
          s_set(job, "moved_series", json_integer(r->moved)) < 0;
    if (bad) {
        json_decref(job);
        return NULL;
    }
    return job;
}

/* mon_json_encode's objects, so that {"version":1,"ranks":...} of this document decodes with mon_json_decode. */
static json_t *s_ranks(const struct mon_report *r)
{
    char *text = mon_json_encode(r->sum, r->nranks);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_t *ranks = json_incref(json_object_get(doc, "ranks"));
    json_decref(doc);
    return json_is_array(ranks) ? ranks : (json_decref(ranks), NULL);
}

static json_t *s_findings(const struct mon_report *r)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < r->nf; i++) {
        const struct mon_finding *f = &r->f[i];
        json_t *o = json_object();
        if (!o || s_set(o, "kind", json_string(mon_diag_kind_name(f->kind))) < 0 ||
            s_set(o, "rank", json_integer(f->rank)) < 0 || s_set(o, "node", s_str(f->node)) < 0 ||
            s_set(o, "gpu", s_str(f->gpu)) < 0 || s_set(o, "text", s_str(f->text)) < 0 ||
            json_array_append_new(arr, o) < 0) {
            json_decref(o);
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* The goodput ledger's summary and incidents (gp_report_json), or null without a ledger. */
static json_t *s_goodput(const struct mon_report *r)
{
    char *text = r->goodput ? gp_report_json(r->goodput, 0) : NULL;
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return o ? o : json_null();
}

char *mon_report_out_json(const struct mon_report *r)
{
    json_t *doc = json_object(), *warn;
    int bad = !doc || s_set(doc, "version", json_integer(1)) < 0 || s_set(doc, "job", s_job(r)) < 0 ||
              s_set(doc, "ranks", s_ranks(r)) < 0 || s_set(doc, "findings", s_findings(r)) < 0 ||
              s_set(doc, "health", s_str(r->block)) < 0 || s_set(doc, "health_logged", s_str(r->health_logged)) < 0 ||
              s_set(doc, "root_cause", s_str(r->root_cause)) < 0 ||
              s_set(doc, "root_cause_log", r->root_cause ? s_str(r->log_file) : json_null()) < 0 ||
              s_set(doc, "goodput", s_goodput(r)) < 0 || s_set(doc, "warnings", json_array()) < 0 ||
              s_set(doc, "warnings_dropped", json_integer(r->notes_dropped)) < 0;
    warn = bad ? NULL : json_object_get(doc, "warnings");
    for (int i = 0; !bad && i < r->nnotes; i++)
        bad |= json_array_append_new(warn, s_str(r->notes[i])) < 0;
    char *text = bad ? NULL : json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
    json_decref(doc);
    return text;
}
