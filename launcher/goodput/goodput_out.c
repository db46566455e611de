/* goodput_out: the model written out and read back: the ledger LOG_DIR/goodput.jsonl (one JSON line per incident,
 * then the job's summary line; docs/goodput.md), the Goodput block of the terminal summary and of plaunch report,
 * and the report's JSON. */
#include "launcher/goodput/goodput_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/esc/esc.h"
#include "common/ownfile.h"

#define GP_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12))

/* A time or span in seconds rounded to the millisecond; null when unknown (< 0 or NAN). */
static json_t *s_sec(double s)
{
    return isnan(s) || s < 0 ? json_null() : json_real(round(s * 1000) / 1000);
}

static void s_close(gp_t *g)
{
    if (g->ledger_fd >= 0)
        close(g->ledger_fd);
    g->ledger_fd = -1;
}

int gp_ledger_open(gp_t *g, const char *log_dir, char *err, size_t errlen)
{
    const char *fix = "choose another --log-dir";
    int dfd = ownfile_open_dir(log_dir, "log directory", fix, err, errlen);
    if (dfd < 0)
        return -1;
    int fd = ownfile_open(dfd, log_dir, "goodput.jsonl", OWNFILE_TRUNC | OWNFILE_APPEND, fix, err, errlen);
    close(dfd);
    if (fd < 0)
        return -1;
    s_close(g);
    g->ledger_fd = fd;
    snprintf(g->ledger_path, sizeof g->ledger_path, "%s/goodput.jsonl", log_dir);
    return 0;
}

static json_t *s_incident_json(const gp_t *g, const struct gp_incident *in)
{
    json_t *o = json_object(), *marks = json_object(), *ph = json_object();
    json_object_set_new(o, "type", json_string("incident"));
    json_object_set_new(o, "job", json_string(g->job_id));
    json_object_set_new(o, "id", json_integer(in->id));
    json_object_set_new(o, "cause", json_string(gp_cause_name(in->cause)));
    json_object_set_new(o, "generation", json_integer(in->generation));
    json_object_set_new(o, "rank", in->rank >= 0 ? json_integer(in->rank) : json_null());
    json_object_set_new(o, "node", in->node >= 0 ? json_integer(in->node) : json_null());
    json_object_set_new(o, "host", json_string(in->host));
    json_object_set_new(o, "exit_code", in->exit_code >= 0 ? json_integer(in->exit_code) : json_null());
    json_object_set_new(o, "signal", json_integer(in->signal));
    json_object_set_new(o, "hang_groups", json_string(in->group));
    json_object_set_new(o, "replaced_by", in->replaced_by[0] ? json_string(in->replaced_by) : json_null());
    json_object_set_new(o, "text", json_string(in->text));
    json_object_set_new(o, "occurred_unix_ms",
                        json_integer(g->start_unix_ms + (json_int_t)llround(in->at[GP_OCCURRED] * 1000)));
    for (int m = 0; m < GP_NMARKS; m++)
        json_object_set_new(marks, gp_mark_name((enum gp_mark)m), s_sec(in->at[m]));
    json_object_set_new(o, "marks", marks);
    json_object_set_new(o, "end", s_sec(in->end_t));
    double lost = 0;
    for (int p = 0; p < GP_NPHASES; p++) {
        double d = gp_incident_phase(in, (enum gp_phase)p);
        json_object_set_new(ph, gp_phase_name((enum gp_phase)p), s_sec(d));
        lost += d > 0 ? d : 0;
    }
    json_object_set_new(o, "phases_s", ph);
    json_object_set_new(o, "lost_s", s_sec(lost));
    json_object_set_new(o, "final", json_boolean(in->final));
    json_object_set_new(o, "step_before", in->step_before >= 0 ? json_integer(in->step_before) : json_null());
    json_object_set_new(o, "step_after", in->step_after >= 0 ? json_integer(in->step_after) : json_null());
    json_object_set_new(o, "steps_lost", json_integer(in->steps_lost));
    json_object_set_new(o, "recompute_s", s_sec(in->recompute_s));
    return o;
}

static json_t *s_summary_json(const gp_t *g, const struct gp_summary *s)
{
    json_t *o = json_object(), *lost = json_object(), *by = json_object();
    json_object_set_new(o, "type", json_string("summary"));
    json_object_set_new(o, "job", json_string(g->job_id));
    json_object_set_new(o, "start_unix_ms", json_integer(g->start_unix_ms));
    json_object_set_new(o, "exit_status", s->exit_status >= 0 ? json_integer(s->exit_status) : json_null());
    json_object_set_new(o, "wall_s", s_sec(s->wall_s));
    json_object_set_new(o, "startup_s", s_sec(s->startup_s));
    json_object_set_new(o, "running_s", s_sec(s->running_s));
    json_object_set_new(o, "ending_s", s_sec(s->ending_s));
    json_object_set_new(o, "recompute_s", s_sec(s->recompute_s));
    for (int p = 0; p < GP_NPHASES; p++)
        json_object_set_new(lost, gp_phase_name((enum gp_phase)p), s_sec(s->lost_s[p]));
    json_object_set_new(o, "lost_s", lost);
    json_object_set_new(o, "lost_total_s", s_sec(s->lost_total_s));
    json_object_set_new(o, "goodput", isnan(s->goodput) ? json_null() : json_real(round(s->goodput * 1e5) / 1e5));
    for (int c = 0; c < GP_NCAUSES; c++)
        json_object_set_new(by, gp_cause_name((enum gp_cause)c), json_integer(s->incidents[c]));
    json_object_set_new(o, "incidents", by);
    json_object_set_new(o, "nincidents", json_integer(s->nincidents));
    json_object_set_new(o, "restarts", json_integer(s->restarts));
    json_object_set_new(o, "generation", json_integer(g->generation));
    json_object_set_new(o, "steps_reported", json_boolean(s->steps_reported));
    json_object_set_new(o, "steps_lost", json_integer(s->steps_lost));
    json_object_set_new(o, "slowest_phase",
                        s->slowest < GP_NPHASES ? json_string(gp_phase_name(s->slowest)) : json_null());
    return o;
}

static int s_write_line(gp_t *g, json_t *o, char *err, size_t errlen)
{
    char *text = json_dumps(o, GP_JSON_FLAGS);
    json_decref(o);
    if (!text) {
        snprintf(err, errlen, "%s: out of memory", g->ledger_path);
        return -1;
    }
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps' NUL becomes the line's end: one write, one whole line (O_APPEND) */
    ssize_t w = write(g->ledger_fd, text, len + 1);
    int e = errno;
    free(text);
    if (w != (ssize_t)(len + 1)) {
        snprintf(err, errlen, "cannot write %s: %s", g->ledger_path, w < 0 ? strerror(e) : "short write");
        return -1;
    }
    return 0;
}

int gp_ledger_flush(gp_t *g, char *err, size_t errlen)
{
    if (g->ledger_fd < 0 || g->frozen)
        return 0;
    while (g->ledger_written < g->ninc) {
        const struct gp_incident *in = &g->inc[g->ledger_written];
        /* complete: closed, and its lost steps known (the next generation's first step, or nothing to wait for) */
        int steps_known = in->step_after >= 0 || in->step_before < 0 || g->ledger_written + 1 < g->ninc ||
                          g->end_t >= 0;
        if (!in->closed || !steps_known)
            break;
        if (s_write_line(g, s_incident_json(g, in), err, errlen) < 0)
            return -1;
        g->ledger_written++;
    }
    if (g->end_t >= 0 && !g->summary_written && g->ledger_written == g->ninc) {
        struct gp_summary s;
        gp_summary(g, 0, &s);
        if (s_write_line(g, s_summary_json(g, &s), err, errlen) < 0)
            return -1;
        g->summary_written = 1;
    }
    return 0;
}

char *gp_report_json(const gp_t *g, uint64_t now_ns)
{
    struct gp_summary s;
    gp_summary(g, now_ns, &s);
    json_t *o = s_summary_json(g, &s), *arr = json_array();
    for (int i = 0; i < g->ninc; i++)
        json_array_append_new(arr, s_incident_json(g, &g->inc[i]));
    json_object_set_new(o, "incident_records", arr);
    char *text = json_dumps(o, GP_JSON_FLAGS);
    json_decref(o);
    return text;
}

/* ---- the block ------------------------------------------------------------------------------------------ */

struct gp_buf {
    char *p;
    size_t cap, len;
    int dropped;
};

static void s_put(struct gp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_put(struct gp_buf *b, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    if (b->len + (size_t)n + 64 >= b->cap) { /* room kept for the "lines left out" line */
        b->dropped++;
        return;
    }
    memcpy(b->p + b->len, line, (size_t)n + 1);
    b->len += (size_t)n;
}

static void s_phases(char *out, size_t cap, const double *d)
{
    size_t n = 0;
    out[0] = 0;
    for (int p = 0; p < GP_NPHASES && n < cap; p++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s %.1f s", p ? ", " : "", gp_phase_name((enum gp_phase)p),
                              d[p] > 0 ? d[p] : 0);
}

static void s_cause(const struct gp_incident *in, char *out, size_t cap)
{
    char host[GP_HOST_MAX * 4];
    esc_term(host, sizeof host, in->host, strlen(in->host), 0); /* an agent's words */
    size_t n = (size_t)snprintf(out, cap, "%s", gp_cause_name(in->cause));
    if (in->rank >= 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, " rank %d", in->rank);
    if (in->node >= 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, " node %d%s%s%s", in->node, host[0] ? " (" : "", host,
                              host[0] ? ")" : "");
    if (in->signal > 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, " signal %d", in->signal);
    else if (in->exit_code >= 0 && n < cap)
        n += (size_t)snprintf(out + n, cap - n, " exit %d", in->exit_code);
}

size_t gp_block(const gp_t *g, uint64_t now_ns, char *buf, size_t cap)
{
    struct gp_buf b = { buf, cap, 0, 0 };
    struct gp_summary s;
    char ph[512], cause[1200];
    if (!cap)
        return 0;
    buf[0] = 0;
    gp_summary(g, now_ns, &s);
    if (isnan(s.wall_s))
        return 0;
    s_put(&b, "plaunch: ===== goodput %.1f %% of %.1f s wall: %s %.1f s =====\n",
          isnan(s.goodput) ? 0 : s.goodput * 100, s.wall_s, s.steps_reported ? "time in steps" : "running",
          s.running_s - s.recompute_s);
    s_put(&b, "  startup %.1f s, running %.1f s, lost %.1f s, ending %.1f s; %d incident%s, %u restart%s\n",
          s.startup_s, s.running_s, s.lost_total_s, s.ending_s, s.nincidents, s.nincidents == 1 ? "" : "s",
          s.restarts, s.restarts == 1 ? "" : "s");
    for (int i = 0; i < g->ninc; i++) {
        const struct gp_incident *in = &g->inc[i];
        double d[GP_NPHASES], lost = 0;
        for (int p = 0; p < GP_NPHASES; p++) {
            d[p] = gp_incident_phase(in, (enum gp_phase)p);
            lost += d[p] > 0 ? d[p] : 0;
        }
        s_cause(in, cause, sizeof cause);
        s_phases(ph, sizeof ph, d);
        char rb[GP_HOST_MAX * 4 + 32] = "";
        if (in->replaced_by[0]) {
            strcpy(rb, "; replaced by ");
            esc_term(rb + strlen(rb), sizeof rb - strlen(rb), in->replaced_by, strlen(in->replaced_by), 0);
        }
        s_put(&b, "  incident %d  %s, generation %u, at %.1f s: lost %.1f s (%s)%s%s\n", in->id, cause,
              in->generation, in->at[GP_OCCURRED], lost, ph, rb, in->final ? "; the job ended in it" : "");
    }
    if (s.nincidents > g->ninc)
        s_put(&b, "  (%d more incidents counted, not listed)\n", s.nincidents - g->ninc);
    if (s.nincidents) {
        s_phases(ph, sizeof ph, s.lost_s);
        s_put(&b, "  lost by phase: %s; slowest: %s\n", ph,
              s.slowest < GP_NPHASES ? gp_phase_name(s.slowest) : "none");
    }
    if (s.steps_reported && s.nincidents)
        s_put(&b, "  steps lost to restarts: %lld (recomputed in %.1f s)\n", s.steps_lost, s.recompute_s);
    if (b.dropped) {
        int n = snprintf(buf + b.len, cap - b.len, "  (%d lines left out)\n", b.dropped);
        b.len += n > 0 && (size_t)n < cap - b.len ? (size_t)n : 0;
    }
    return b.len;
}
