/* mon_thresh: the diagnosis thresholds: their defaults, and conf/monitor.ini's [monitor] section read over them. */
#include "launcher/monitor/diagnosis/mon_thresh.h"

#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/optfile.h"

void mon_thresh_default(struct mon_thresh *t)
{
    memset(t, 0, sizeof *t); /* padding too: callers may compare thresholds with memcmp */
    t->warmup_s = 60;
    t->min_steady_s = 30;
    t->util_low = 70;
    t->idle_frac = 0.15;
    t->idle_util = 5;
    t->straggler_frac = 0.25;
    t->straggler_min_pct = 10;
    t->straggler_min_ranks = 3;
    t->growth_mib_min = 10;
    t->growth_min_s = 120;
    t->growth_min_mib = 256;
    t->growth_r2 = 0.8;
    t->throttle_frac = 0.1;
    t->throttle_clock_frac = 0.95;
    t->near_full_frac = 0.95;
    t->host_near_full_frac = 0.95;
    t->ecc_corrected_max = 1000;
    t->step_rate_frac = 0.8;
    t->step_window_s = 60;
}

/* One key: its field, its range ([lo, hi], lo excluded when lo_open) and what it means, for the messages. */
struct s_key {
    const char *name;
    size_t off;
    int is_int, lo_open;
    double lo, hi;
    const char *unit;
};

#define S_D(f) #f, offsetof(struct mon_thresh, f), 0
#define S_I(f) #f, offsetof(struct mon_thresh, f), 1

static const struct s_key s_keys[] = {
    { S_D(warmup_s), 0, 0, 86400, "seconds" },
    { S_D(min_steady_s), 0, 0, 86400, "seconds" },
    { S_D(util_low), 1, 0, 100, "% GPU busy" },
    { S_D(idle_frac), 1, 0, 1, "a share of the time" },
    { S_D(idle_util), 0, 0, 100, "% GPU busy" },
    { S_D(straggler_frac), 1, 0, 10, "a relative deviation (0.25 = 25 %)" },
    { S_D(straggler_min_pct), 0, 0, 10000, "points of %" },
    { S_I(straggler_min_ranks), 0, 2, 65536, "ranks" },
    { S_D(growth_mib_min), 1, 0, 1e9, "MiB per minute" },
    { S_D(growth_min_s), 0, 0, 1e9, "seconds" },
    { S_D(growth_min_mib), 0, 0, 1e12, "MiB" },
    { S_D(growth_r2), 0, 0, 1, "a share of the variance" },
    { S_D(throttle_frac), 1, 0, 1, "a share of the time" },
    { S_D(throttle_clock_frac), 1, 0, 1, "a share of the maximum SM clock" },
    { S_D(near_full_frac), 1, 0, 1, "a share of the device's memory" },
    { S_D(host_near_full_frac), 1, 0, 1, "a share of the node's RAM" },
    { S_D(ecc_corrected_max), 0, 0, 1e15, "corrected errors" },
    { S_D(step_rate_frac), 1, 0, 1, "a share of the median step rate" },
    { S_D(step_window_s), 0, 1, 86400, "seconds" },
};

#define S_NKEYS (sizeof s_keys / sizeof s_keys[0])

/* The parse: the file in memory, fed to inih a line at a time so that errors can name the line (the Debian inih
 * reports no line to the handler). */
struct s_parse {
    struct mon_thresh t;
    const char *path, *end, *pos;
    int lineno;
    char *err;
    size_t errlen;
    int failed;
};

static void s_fail(struct s_parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_fail(struct s_parse *p, const char *fmt, ...)
{
    if (p->failed)
        return;
    int w = snprintf(p->err, p->errlen, "%s:%d: ", p->path, p->lineno);
    va_list ap;
    va_start(ap, fmt);
    if (w >= 0 && (size_t)w < p->errlen)
        vsnprintf(p->err + w, p->errlen - (size_t)w, fmt, ap);
    va_end(ap);
    p->failed = 1;
}

/* inih's reader: the next line into buf[size]. A line longer than inih's buffer is an error, unless a comment. */
static char *s_next_line(char *buf, int size, void *stream)
{
    struct s_parse *p = stream;
    if (p->failed || p->pos >= p->end)
        return NULL;
    const char *nl = memchr(p->pos, '\n', (size_t)(p->end - p->pos));
    size_t len = (size_t)((nl ? nl + 1 : p->end) - p->pos);
    p->lineno++;
    if (memchr(p->pos, '\0', len)) {
        s_fail(p, "a NUL byte: not a text file");
        return NULL;
    }
    if (len + 1 > (size_t)size) {
        const char *q = p->pos + strspn(p->pos, " \t");
        if (*q != ';' && *q != '#') {
            s_fail(p, "line longer than %d characters", size - 2);
            return NULL;
        }
        snprintf(buf, (size_t)size, ";\n");
    } else {
        memcpy(buf, p->pos, len);
        buf[len] = '\0';
    }
    p->pos += len;
    return buf;
}

static int s_set(struct s_parse *p, const struct s_key *k, const char *value)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    int bad = errno || end == value || *end || !isfinite(v) || v > k->hi || v < k->lo || (k->lo_open && v == k->lo);
    if (!bad && k->is_int && v != floor(v))
        bad = 1;
    if (bad) {
        s_fail(p, "%s = '%s': give %s from %g%s to %g (%s)", k->name, value, k->is_int ? "a whole number" : "a number",
               k->lo, k->lo_open ? " (excluded)" : "", k->hi, k->unit);
        return 0;
    }
    if (k->is_int)
        *(int *)((char *)&p->t + k->off) = (int)v;
    else
        *(double *)((char *)&p->t + k->off) = v;
    return 1;
}

static int s_handler(void *user, const char *section, const char *name, const char *value)
{
    struct s_parse *p = user;
    if (p->failed)
        return 1;
    if (strcmp(section, "monitor") != 0) {
        if (section[0])
            s_fail(p, "unknown section [%s]; the thresholds belong in [monitor]", section);
        else
            s_fail(p, "key '%s' outside a section; put it under [monitor]", name);
        return 1;
    }
    for (size_t i = 0; i < S_NKEYS; i++)
        if (strcmp(name, s_keys[i].name) == 0)
            return s_set(p, &s_keys[i], value), 1;
    char keys[768];
    size_t len = 0;
    for (size_t i = 0; i < S_NKEYS && len < sizeof keys; i++)
        len += (size_t)snprintf(keys + len, sizeof keys - len, "%s%s", i ? ", " : "", s_keys[i].name);
    s_fail(p, "unknown key '%s' in [monitor]; the keys are %s (conf/monitor.ini)", name, keys);
    return 1;
}

int mon_thresh_read(const char *path, struct mon_thresh *t, char *err, size_t errlen)
{
    struct s_parse p = { .t = *t, .path = path, .err = err, .errlen = errlen };
    size_t len = 0;
    char *text = malloc(OPTFILE_MAX_CONFIG + 1);
    if (!text) {
        snprintf(err, errlen, "monitor config file '%s': out of memory", path);
        return -1;
    }
    int fd = optfile_open(path, "monitor config file", OPTFILE_MAX_CONFIG, err, errlen);
    if (fd < 0 ||
        optfile_read_fd(fd, path, "monitor config file", text, OPTFILE_MAX_CONFIG + 1, &len, err, errlen) < 0) {
        if (fd >= 0)
            close(fd);
        free(text);
        return -1;
    }
    close(fd);
    p.pos = text;
    p.end = text + len;
    int rc = ini_parse_stream(s_next_line, &p, s_handler, &p);
    free(text);
    if (p.failed)
        return -1;
    if (rc != 0) {
        snprintf(err, errlen, "%s:%d: not 'key = value' or '[section]' (see conf/monitor.ini)", path, rc);
        return -1;
    }
    *t = p.t;
    return 0;
}
