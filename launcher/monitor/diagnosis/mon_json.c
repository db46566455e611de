/* mon_json: rank summaries to and from JSON (jansson): one table of fields, types and ranges for both ways. */
#include "launcher/monitor/diagnosis/mon_json.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire/wire.h"

_Static_assert(MON_JSON_MAX == WIRE_MAX_REPORT, "a health REPORT's bound is the wire's");

enum s_type { S_INT, S_LL, S_DBL, S_NUM, S_STR, S_BOOL }; /* S_DBL may be null (NAN), S_NUM may not */

struct s_field {
    const char *name;
    enum s_type type;
    size_t off, size;
    double lo, hi;
};

#define S_OF(f) offsetof(struct mon_rank_summary, f), sizeof(((struct mon_rank_summary *)0)->f)
#define S_MIB 1e12 /* a bound for MiB, MiB/min, ms: past it a number is nonsense */

static const struct s_field s_fields[] = {
    { "rank", S_INT, S_OF(rank), 0, WIRE_MAX_WORLD - 1 },
    { "node", S_STR, S_OF(node), 0, 0 },
    { "gpu", S_STR, S_OF(gpu), 0, 0 },
    { "pci", S_STR, S_OF(pci), 0, 0 },
    { "gpu_data", S_BOOL, S_OF(gpu_data), 0, 1 },
    { "samples", S_INT, S_OF(samples), 0, INT_MAX },
    { "steady_s", S_NUM, S_OF(steady_s), 0, 1e10 },
    { "util_mean", S_DBL, S_OF(util_mean), 0, 100 },
    { "idle_frac", S_DBL, S_OF(idle_frac), 0, 1 },
    { "idle_gap_ms", S_DBL, S_OF(idle_gap_ms), 0, S_MIB },
    { "cpu_mean", S_DBL, S_OF(cpu_mean), 0, 1e8 },
    { "rss_first_mib", S_DBL, S_OF(rss_first_mib), -S_MIB, S_MIB },
    { "rss_last_mib", S_DBL, S_OF(rss_last_mib), -S_MIB, S_MIB },
    { "rss_slope_mib_min", S_DBL, S_OF(rss_slope_mib_min), -S_MIB, S_MIB },
    { "rss_r2", S_DBL, S_OF(rss_r2), 0, 1 },
    { "gmem_first_mib", S_DBL, S_OF(gmem_first_mib), -S_MIB, S_MIB },
    { "gmem_last_mib", S_DBL, S_OF(gmem_last_mib), -S_MIB, S_MIB },
    { "gmem_slope_mib_min", S_DBL, S_OF(gmem_slope_mib_min), -S_MIB, S_MIB },
    { "gmem_r2", S_DBL, S_OF(gmem_r2), 0, 1 },
    { "gmem_total_mib", S_DBL, S_OF(gmem_total_mib), 0, S_MIB },
    { "gmem_peak_frac", S_DBL, S_OF(gmem_peak_frac), 0, 1 },
    { "gmem_headroom_mib", S_DBL, S_OF(gmem_headroom_mib), 0, S_MIB },
    { "thr_thermal_frac", S_DBL, S_OF(thr_thermal_frac), 0, 1 },
    { "thr_power_frac", S_DBL, S_OF(thr_power_frac), 0, 1 },
    { "thr_hw_frac", S_DBL, S_OF(thr_hw_frac), 0, 1 },
    { "sm_clock_mean_mhz", S_DBL, S_OF(sm_clock_mean_mhz), 0, 1e6 },
    { "sm_clock_max_mhz", S_DBL, S_OF(sm_clock_max_mhz), 0, 1e6 },
    { "temp_max_c", S_DBL, S_OF(temp_max_c), -273, 1000 },
    { "power_mean_w", S_DBL, S_OF(power_mean_w), 0, 1e6 },
    { "power_limit_w", S_DBL, S_OF(power_limit_w), 0, 1e6 },
    { "ecc_uncorrected", S_LL, S_OF(ecc_uncorrected), -1, 1e15 },
    { "ecc_corrected_delta", S_LL, S_OF(ecc_corrected_delta), -1, 1e15 },
    { "ecc_uncorrected_delta", S_LL, S_OF(ecc_uncorrected_delta), -1, 1e15 },
    { "xid_count", S_INT, S_OF(xid_count), 0, INT_MAX },
    { "xid_last", S_INT, S_OF(xid_last), -1, INT_MAX },
    { "host_avail_min_frac", S_DBL, S_OF(host_avail_min_frac), 0, 1 },
};

#define S_NFIELDS (sizeof s_fields / sizeof s_fields[0])

static double s_clamp(double v, const struct s_field *f)
{
    return v < f->lo ? f->lo : v > f->hi ? f->hi : v;
}

/* A field's JSON. What the decoder would refuse is never sent: a number out of its range (from a bogus sample) goes
 * as unknown (null), or at its bound where it may not be null, so one bad sample cannot void a node's report. */
static json_t *s_value(const struct mon_rank_summary *r, const struct s_field *f)
{
    const char *p = (const char *)r + f->off;
    switch (f->type) {
    case S_INT:
        return json_integer((json_int_t)s_clamp(*(const int *)p, f));
    case S_LL:
        return json_integer((json_int_t)s_clamp((double)*(const long long *)p, f));
    case S_DBL: {
        double v = *(const double *)p;
        return isfinite(v) && v >= f->lo && v <= f->hi ? json_real(v) : json_null();
    }
    case S_NUM: {
        double v = *(const double *)p;
        return json_real(isfinite(v) ? s_clamp(v, f) : f->lo);
    }
    case S_STR:
        return json_stringn(p, strnlen(p, f->size));
    case S_BOOL:
        return json_boolean(*(const int *)p);
    }
    return NULL;
}

char *mon_json_encode(const struct mon_rank_summary *r, int n)
{
    json_t *root = json_object(), *arr = json_array();
    char *text = NULL;
    if (!root || !arr || json_object_set_new(root, "version", json_integer(1)) < 0 ||
        json_object_set(root, "ranks", arr) < 0)
        goto out;
    for (int i = 0; i < n; i++) {
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o) < 0)
            goto out;
        for (size_t k = 0; k < S_NFIELDS; k++)
            if (json_object_set_new(o, s_fields[k].name, s_value(&r[i], &s_fields[k])) < 0)
                goto out;
    }
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
out:
    json_decref(arr);
    json_decref(root);
    return text;
}

static const char *s_type_name(const json_t *v)
{
    static const char *const names[] = { "an object", "an array", "a string", "an integer",
                                         "a real",    "true",     "false",    "null" };
    return v ? names[json_typeof(v)] : "nothing";
}

/* Reads field f of o into r; 0, or -1 with a message. */
static int s_read(const json_t *o, int i, const struct s_field *f, struct mon_rank_summary *r, char *err,
                  size_t errlen)
{
    json_t *v = json_object_get(o, f->name);
    char *p = (char *)r + f->off;
    const char *want = "";
    switch (f->type) {
    case S_INT:
    case S_LL: {
        if (!json_is_integer(v))
            goto bad;
        json_int_t x = json_integer_value(v);
        if ((double)x < f->lo || (double)x > f->hi)
            goto range;
        if (f->type == S_INT)
            *(int *)p = (int)x;
        else
            *(long long *)p = x;
        return 0;
    }
    case S_DBL:
    case S_NUM:
        if (f->type == S_DBL && json_is_null(v)) {
            *(double *)p = NAN;
            return 0;
        }
        if (!json_is_number(v))
            goto bad;
        double d = json_number_value(v);
        if (!isfinite(d) || d < f->lo || d > f->hi)
            goto range;
        *(double *)p = d;
        return 0;
    case S_STR: {
        if (!json_is_string(v))
            goto bad;
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        int clean = strlen(s) == len;
        for (size_t k = 0; clean && k < len; k++)
            clean = (unsigned char)s[k] >= 0x20 && s[k] != 0x7f;
        if (len >= f->size || !clean) {
            snprintf(err, errlen, "health report: ranks[%d].%s: a string of %zu bytes; at most %zu without control "
                     "characters", i, f->name, len, f->size - 1);
            return -1;
        }
        memcpy(p, s, len + 1);
        return 0;
    }
    case S_BOOL:
        if (!json_is_boolean(v))
            goto bad;
        *(int *)p = json_is_true(v);
        return 0;
    }
bad:
    want = f->type == S_STR ? "a string" : f->type == S_BOOL ? "true or false" : f->type == S_DBL
           ? "a number or null" : f->type == S_NUM ? "a number" : "an integer";
    snprintf(err, errlen, "health report: ranks[%d].%s: expected %s, found %s", i, f->name, want, s_type_name(v));
    return -1;
range:
    snprintf(err, errlen, "health report: ranks[%d].%s: out of range [%g, %g]", i, f->name, f->lo, f->hi);
    return -1;
}

/* One summary: an object of exactly the table's keys. */
static int s_read_rank(const json_t *o, int i, struct mon_rank_summary *r, char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    if (!json_is_object(o)) {
        snprintf(err, errlen, "health report: ranks[%d]: expected an object, found %s", i, s_type_name(o));
        return -1;
    }
    json_object_foreach((json_t *)o, key, v) {
        size_t k = 0;
        while (k < S_NFIELDS && strcmp(key, s_fields[k].name) != 0)
            k++;
        if (k == S_NFIELDS) {
            snprintf(err, errlen, "health report: ranks[%d]: unknown key '%.40s'", i, key);
            return -1;
        }
    }
    memset(r, 0, sizeof *r);
    for (size_t k = 0; k < S_NFIELDS; k++)
        if (s_read(o, i, &s_fields[k], r, err, errlen) < 0)
            return -1;
    return 0;
}

static int s_cmp_rank(const void *a, const void *b)
{
    int x = ((const struct mon_rank_summary *)a)->rank, y = ((const struct mon_rank_summary *)b)->rank;
    return (x > y) - (x < y);
}

int mon_json_decode(const char *text, size_t len, struct mon_rank_summary *out, int max, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = NULL, *ver, *ranks;
    struct mon_rank_summary *tmp = NULL, *sorted = NULL;
    int n = -1;
    if (len > MON_JSON_MAX) {
        snprintf(err, errlen, "health report: %zu bytes, at most %u", len, MON_JSON_MAX);
        return -1;
    }
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "health report: not JSON (line %d: %s)", je.line, je.text);
        return -1;
    }
    ver = json_object_get(root, "version");
    ranks = json_object_get(root, "ranks");
    if (!json_is_object(root) || json_object_size(root) != 2 || !ver || !ranks) {
        snprintf(err, errlen, "health report: expected an object of exactly 'version' and 'ranks'");
        goto out;
    }
    if (!json_is_integer(ver) || json_integer_value(ver) != 1) {
        snprintf(err, errlen, "health report: version %s%lld unknown (this plaunch reads version 1)",
                 json_is_integer(ver) ? "" : "(not an integer) ",
                 json_is_integer(ver) ? (long long)json_integer_value(ver) : 0LL);
        goto out;
    }
    if (!json_is_array(ranks)) {
        snprintf(err, errlen, "health report: ranks: expected an array, found %s", s_type_name(ranks));
        goto out;
    }
    size_t count = json_array_size(ranks);
    if (count > (size_t)(max > 0 ? max : 0)) {
        snprintf(err, errlen, "health report: %zu ranks, at most %d here", count, max > 0 ? max : 0);
        goto out;
    }
    tmp = calloc(count ? count : 1, sizeof *tmp);
    sorted = calloc(count ? count : 1, sizeof *sorted);
    if (!tmp || !sorted) {
        snprintf(err, errlen, "health report: out of memory for %zu ranks", count);
        goto out;
    }
    for (size_t i = 0; i < count; i++)
        if (s_read_rank(json_array_get(ranks, i), (int)i, &tmp[i], err, errlen) < 0)
            goto out;
    memcpy(sorted, tmp, count * sizeof *tmp);
    qsort(sorted, count, sizeof *sorted, s_cmp_rank);
    for (size_t i = 1; i < count; i++)
        if (sorted[i].rank == sorted[i - 1].rank) {
            snprintf(err, errlen, "health report: rank %d is summarised twice", sorted[i].rank);
            goto out;
        }
    memcpy(out, tmp, count * sizeof *tmp);
    n = (int)count;
out:
    free(tmp);
    free(sorted);
    json_decref(root);
    return n;
}
