/* probe_thresholds: the limits that make `plaunch probe` flag a finding, read from conf/probe.ini (inih). */
#include "launcher/probe/analysis/probe_thresholds.h"

#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/optfile.h"

void probe_thresholds_default(struct probe_thresholds *t)
{
    memset(t, 0, sizeof *t);
    t->neff = 3;
    t->eff_n[0] = 2, t->eff_min[0] = 0.90;
    t->eff_n[1] = 4, t->eff_min[1] = 0.80;
    t->eff_n[2] = 8, t->eff_min[2] = 0.75;
    t->busbw_max_drop = 0.10;
    t->pair_slow_fraction = 0.70;
}

double probe_threshold_for(const struct probe_thresholds *t, int n)
{
    double v = NAN;
    for (size_t i = 0; i < t->neff && t->eff_n[i] <= n; i++)
        v = t->eff_min[i];
    return v;
}

/* The parse state: the first failure's text; ini_parse tells us its line. */
struct s_parse {
    struct probe_thresholds t;
    char msg[512];
};

static int s_fail(struct s_parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int s_fail(struct s_parse *p, const char *fmt, ...)
{
    if (p->msg[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->msg, sizeof p->msg, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* A fraction in (0, 1]; allow_zero admits 0 too (a drop of 0 flags any fall). */
static int s_fraction(const char *value, int allow_zero, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end != '\0' || !isfinite(v) || v > 1 || v < 0 || (v == 0 && !allow_zero))
        return -1;
    *out = v;
    return 0;
}

static int s_set_efficiency(struct s_parse *p, const char *name, const char *value)
{
    char *end = NULL;
    double v;
    if (strncmp(name, "min_at_", 7) != 0 || name[7] < '1' || name[7] > '9')
        return s_fail(p, "unknown key '%s' in [efficiency]; keys there are min_at_N (N = GPUs in the group, "
                         "e.g. min_at_4 = 0.80)", name);
    long n = strtol(name + 7, &end, 10);
    if (*end != '\0' || n < 2 || n > PROBE_MAX_GPUS)
        return s_fail(p, "key '%s' in [efficiency]: N must be a whole number of GPUs from 2 to 4096", name);
    if (s_fraction(value, 0, &v) < 0)
        return s_fail(p, "%s = '%s': give an efficiency between 0 (exclusive) and 1, e.g. 0.80", name, value);
    size_t i = 0;
    while (i < p->t.neff && p->t.eff_n[i] < n)
        i++;
    if (i == p->t.neff || p->t.eff_n[i] != n) {
        if (p->t.neff == PROBE_MAX_EFF_KEYS)
            return s_fail(p, "too many min_at_N keys (at most 32); %s is one too many", name);
        memmove(&p->t.eff_n[i + 1], &p->t.eff_n[i], (p->t.neff - i) * sizeof p->t.eff_n[0]);
        memmove(&p->t.eff_min[i + 1], &p->t.eff_min[i], (p->t.neff - i) * sizeof p->t.eff_min[0]);
        p->t.neff++;
    }
    p->t.eff_n[i] = (int)n;
    p->t.eff_min[i] = v;
    return 1;
}

static int s_handler(void *user, const char *section, const char *name, const char *value)
{
    struct s_parse *p = user;
    if (strcmp(section, "efficiency") == 0)
        return s_set_efficiency(p, name, value);
    if (strcmp(section, "busbw") == 0) {
        if (strcmp(name, "max_drop") != 0)
            return s_fail(p, "unknown key '%s' in [busbw]; the key there is max_drop (e.g. 0.10)", name);
        if (s_fraction(value, 1, &p->t.busbw_max_drop) < 0)
            return s_fail(p, "max_drop = '%s': give a fraction from 0 to 1, e.g. 0.10 for 10%%", value);
        return 1;
    }
    if (strcmp(section, "pairwise") == 0) {
        if (strcmp(name, "slow_fraction") != 0)
            return s_fail(p, "unknown key '%s' in [pairwise]; the key there is slow_fraction (e.g. 0.70)", name);
        if (s_fraction(value, 1, &p->t.pair_slow_fraction) < 0)
            return s_fail(p, "slow_fraction = '%s': give a fraction from 0 to 1, e.g. 0.70", value);
        return 1;
    }
    if (section[0] == '\0')
        return s_fail(p, "key '%s' outside a section; put it under [efficiency], [busbw] or [pairwise]",
                      name);
    return s_fail(p, "unknown section [%s] (key '%s'); sections are [efficiency], [busbw] and [pairwise]",
                  section, name);
}

int probe_thresholds_load(const char *path, struct probe_thresholds *t, struct probe_err *err)
{
    struct s_parse p;
    memset(&p, 0, sizeof p);
    p.t = *t;
    char why[512];
    FILE *f = optfile_fopen(path, "thresholds file", OPTFILE_MAX_THRESHOLDS, why, sizeof why);
    if (!f) {
        probe_err_set(err, "%s; give --thresholds an existing file (example: conf/probe.ini)", why);
        return -1;
    }
    int rc = ini_parse_file(f, s_handler, &p);
    fclose(f);
    if (rc == -2) {
        probe_err_set(err, "%s: out of memory while parsing", path);
        return -1;
    }
    if (rc > 0) {
        probe_err_set(err, "%s:%d: %s", path, rc,
                      p.msg[0] ? p.msg : "not 'key = value' or '[section]'; see conf/probe.ini for the format");
        return -1;
    }
    *t = p.t;
    return 0;
}
