/* probe_meas: loads and validates a probe measurement document (schema plaunch-probe/1). */
#include "probe_meas.h"
#include "probe_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "optfile.h"

double probe_algbw(uint64_t bytes, double time_us)
{
    return time_us > 0 ? (double)bytes / time_us / 1e3 : NAN;
}

double probe_busbw(double algbw, int n)
{
    return n > 0 ? algbw * 2.0 * (n - 1) / n : NAN;
}

/* An array of n ranks; absent means 0..n-1 when dflt. */
static int s_ranks(struct probe_jctx *ld, const json_t *o, const char *path, int n, int dflt, int **out)
{
    json_t *arr;
    int r = probe_json_arr(ld, o, path, "ranks", !dflt, PROBE_MAX_GPUS, &arr);
    if (r < 0)
        return -1;
    if (arr && json_array_size(arr) != (size_t)n)
        return probe_json_bad(ld, path, "ranks", "one rank per GPU of the group", arr);
    *out = calloc((size_t)n, sizeof **out);
    if (*out == NULL)
        return probe_err_set(ld->err, "%s: out of memory", ld->origin), -1;
    for (int i = 0; i < n; i++) {
        json_t *v = arr ? json_array_get(arr, (size_t)i) : NULL;
        if (arr && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= PROBE_MAX_GPUS))
            return probe_json_bad(ld, path, "ranks[]", "a rank (an integer >= 0)", v);
        (*out)[i] = arr ? (int)json_integer_value(v) : i;
    }
    return 0;
}

/* ---- sections ------------------------------------------------------------------------------------------ */

static int s_load_config(struct probe_jctx *ld, const json_t *root, struct probe_config *c)
{
    /* Integer knobs the worker ran with; only the sweep's range is required to read a report. */
    static const struct {
        const char *key;
        int required;
        long long min, max, dflt;
    } knobs[] = {
        { "min_bytes", 1, 1, INT64_MAX, 0 },  { "max_bytes", 1, 1, INT64_MAX, 0 },
        { "step_factor", 0, 2, 1024, 2 },     { "warmup_iters", 0, 0, 1000000, 0 },
        { "iters", 0, 0, 1000000, 0 },        { "grad_bytes", 0, 0, INT64_MAX, 0 },
        { "pairwise_bytes", 0, 0, INT64_MAX, 0 },
    };
    long long v[sizeof knobs / sizeof knobs[0]];
    json_t *o = json_object_get(root, "config");
    if (!json_is_object(o))
        return probe_json_bad(ld, "", "config", "an object", o);
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
        v[i] = knobs[i].dflt;
        if (probe_json_int(ld, o, "config", knobs[i].key, knobs[i].required, knobs[i].min, knobs[i].max, &v[i]) < 0)
            return -1;
    }
    c->min_bytes = (uint64_t)v[0];
    c->max_bytes = (uint64_t)v[1];
    c->factor = (int)v[2];
    c->warmup_iters = (int)v[3];
    c->iters = (int)v[4];
    c->grad_bytes = (uint64_t)v[5];
    c->pairwise_bytes = (uint64_t)v[6];
    c->step_gflop = 0;
    return probe_json_num(ld, o, "config", "step_gflop", 0, 0, &c->step_gflop) < 0 ? -1 : 0;
}

static int s_load_gpu(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_gpu *g)
{
    long long v;
    char cc[32] = "";
    if (probe_json_int(ld, o, path, "rank", 1, 0, PROBE_MAX_GPUS - 1, &v) < 0)
        return -1;
    g->rank = (int)v;
    v = 0;
    if (probe_json_int(ld, o, path, "local_rank", 0, 0, PROBE_MAX_GPUS - 1, &v) < 0)
        return -1;
    g->local_rank = (int)v;
    v = g->local_rank;
    if (probe_json_int(ld, o, path, "device", 0, 0, PROBE_MAX_GPUS - 1, &v) < 0)
        return -1;
    g->device = (int)v;
    if (probe_json_str(ld, o, path, "host", 1, g->host, sizeof g->host) < 0 ||
        probe_json_str(ld, o, path, "name", 0, g->name, sizeof g->name) < 0 ||
        probe_json_str(ld, o, path, "pci_bus_id", 0, g->pci_bus_id, sizeof g->pci_bus_id) < 0 ||
        probe_json_str(ld, o, path, "compute_capability", 0, cc, sizeof cc) < 0)
        return -1;
    if (cc[0] && sscanf(cc, "%d.%d", &g->cc_major, &g->cc_minor) != 2)
        return probe_json_bad(ld, path, "compute_capability", "a string \"MAJOR.MINOR\"", json_object_get(o, "compute_capability"));
    v = 0;
    if (probe_json_int(ld, o, path, "memory_bytes", 0, 0, INT64_MAX, &v) < 0)
        return -1;
    g->memory_bytes = (uint64_t)v;
    v = 0;
    if (probe_json_int(ld, o, path, "driver_cuda_version", 1, 0, 1000000, &v) < 0)
        return -1;
    g->driver_cuda = (int)v;
    if (probe_json_int(ld, o, path, "runtime_cuda_version", 1, 0, 1000000, &v) < 0)
        return -1;
    g->runtime_cuda = (int)v;
    v = 0;
    if (probe_json_int(ld, o, path, "nccl_version", 0, 0, 10000000, &v) < 0)
        return -1;
    g->nccl_version = (int)v;
    return 0;
}

static int s_load_p2p(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_p2p *p)
{
    json_t *rows;
    if (probe_json_str(ld, o, path, "host", 1, p->host, sizeof p->host) < 0 ||
        probe_json_arr(ld, o, path, "matrix", 1, PROBE_MAX_PAIRWISE, &rows) < 0)
        return -1;
    p->n = (int)json_array_size(rows);
    if (s_ranks(ld, o, path, p->n, 1, &p->ranks) < 0)
        return -1;
    p->can = calloc((size_t)p->n * (size_t)p->n + 1, sizeof *p->can);
    if (p->can == NULL)
        return probe_err_set(ld->err, "%s: out of memory", ld->origin), -1;
    for (int i = 0; i < p->n; i++) {
        json_t *row = json_array_get(rows, (size_t)i);
        if (!json_is_array(row) || json_array_size(row) != (size_t)p->n)
            return probe_json_bad(ld, path, "matrix[]", "a square matrix of booleans", row);
        for (int j = 0; j < p->n; j++) {
            json_t *c = json_array_get(row, (size_t)j);
            if (!json_is_boolean(c))
                return probe_json_bad(ld, path, "matrix[][]", "true or false", c);
            p->can[i * p->n + j] = json_is_true(c);
        }
    }
    return 0;
}

static int s_load_sweep(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_sweep *s)
{
    long long v;
    char group[32] = "first-n";
    json_t *res;
    if (probe_json_int(ld, o, path, "n", 1, 1, PROBE_MAX_GPUS, &v) < 0)
        return -1;
    s->n = (int)v;
    if (probe_json_str(ld, o, path, "group", 0, group, sizeof group) < 0)
        return -1;
    if (strcmp(group, "first-n") == 0)
        s->group = PROBE_GROUP_FIRST_N;
    else if (strcmp(group, "one-per-node") == 0)
        s->group = PROBE_GROUP_ONE_PER_NODE;
    else
        return probe_json_bad(ld, path, "group", "\"first-n\" or \"one-per-node\"", json_object_get(o, "group"));
    v = 1;
    if (probe_json_int(ld, o, path, "nodes", 0, 1, PROBE_MAX_GPUS, &v) < 0 ||
        s_ranks(ld, o, path, s->n, s->group == PROBE_GROUP_FIRST_N, &s->ranks) < 0 ||
        probe_json_arr(ld, o, path, "results", 1, PROBE_MAX_RESULTS, &res) < 0)
        return -1;
    s->nodes = (int)v;
    s->nresults = json_array_size(res);
    s->results = calloc(s->nresults + 1, sizeof *s->results);
    if (s->results == NULL)
        return probe_err_set(ld->err, "%s: out of memory", ld->origin), -1;
    for (size_t i = 0; i < s->nresults; i++) {
        struct probe_result *r = &s->results[i];
        char rpath[96];
        json_t *ro;
        snprintf(rpath, sizeof rpath, "%s.results[%zu]", path, i);
        if (probe_json_obj_at(ld, res, i, path, &ro) < 0 || probe_json_int(ld, ro, rpath, "bytes", 1, 1, INT64_MAX, &v) < 0)
            return -1;
        r->bytes = (uint64_t)v;
        if (probe_json_num(ld, ro, rpath, "time_us", 1, 1e-9, &r->time_us) < 0)
            return -1;
        json_t *ver = json_object_get(ro, "verified");
        if (!json_is_boolean(ver))
            return probe_json_bad(ld, rpath, "verified", "true or false", ver);
        r->verified = json_is_true(ver);
        r->algbw = probe_algbw(r->bytes, r->time_us);
        r->busbw = probe_busbw(r->algbw, s->n);
    }
    return 0;
}

static int s_load_step(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_step *st)
{
    long long v;
    st->compute_us = st->allreduce_us = NAN;
    if (probe_json_int(ld, o, path, "n", 1, 1, PROBE_MAX_GPUS, &v) < 0 ||
        probe_json_num(ld, o, path, "step_time_us", 1, 1e-9, &st->step_us) < 0 ||
        probe_json_num(ld, o, path, "compute_time_us", 0, 0, &st->compute_us) < 0 ||
        probe_json_num(ld, o, path, "allreduce_time_us", 0, 0, &st->allreduce_us) < 0)
        return -1;
    st->n = (int)v;
    int r = probe_json_num(ld, o, path, "throughput", 0, 1e-12, &st->throughput);
    if (r < 0)
        return -1;
    if (r == 0) /* one unit of work per GPU per step */
        st->throughput = st->n * 1e6 / st->step_us;
    return 0;
}

static int s_load_pairwise(struct probe_jctx *ld, const json_t *root, struct probe_meas *m)
{
    json_t *o = json_object_get(root, "pairwise"), *rows;
    long long v = 0;
    if (o == NULL || json_is_null(o))
        return 0;
    if (!json_is_object(o))
        return probe_json_bad(ld, "", "pairwise", "an object or null", o);
    if (probe_json_arr(ld, o, "pairwise", "gbps", 1, PROBE_MAX_PAIRWISE, &rows) < 0 ||
        probe_json_int(ld, o, "pairwise", "bytes", 0, 0, INT64_MAX, &v) < 0)
        return -1;
    m->pair_bytes = (uint64_t)v;
    int n = (int)json_array_size(rows);
    if (s_ranks(ld, o, "pairwise", n, 1, &m->pair_ranks) < 0)
        return -1;
    m->pair_gbps = calloc((size_t)n * (size_t)n + 1, sizeof *m->pair_gbps);
    if (m->pair_gbps == NULL)
        return probe_err_set(ld->err, "%s: out of memory", ld->origin), -1;
    m->pair_n = n;
    for (int i = 0; i < n; i++) {
        json_t *row = json_array_get(rows, (size_t)i);
        if (!json_is_array(row) || json_array_size(row) != (size_t)n)
            return probe_json_bad(ld, "pairwise", "gbps[]", "a square matrix of numbers or null", row);
        for (int j = 0; j < n; j++) {
            json_t *c = json_array_get(row, (size_t)j);
            if (!json_is_null(c) && (!json_is_number(c) || json_number_value(c) < 0))
                return probe_json_bad(ld, "pairwise", "gbps[][]", "a number >= 0 or null", c);
            m->pair_gbps[i * n + j] = json_is_null(c) ? NAN : json_number_value(c);
        }
    }
    return 0;
}

/* Loads array root[key] of objects into *out (elem bytes each) with fn. */
typedef int (*s_elem_fn)(struct probe_jctx *, const json_t *, const char *, void *);

static int s_load_list(struct probe_jctx *ld, const json_t *root, const char *key, int required, size_t max,
                       size_t elem, s_elem_fn fn, void **out, size_t *count)
{
    json_t *arr;
    if (probe_json_arr(ld, root, "", key, required, max, &arr) < 0)
        return -1;
    *count = arr ? json_array_size(arr) : 0;
    *out = calloc(*count + 1, elem);
    if (*out == NULL)
        return probe_err_set(ld->err, "%s: out of memory", ld->origin), -1;
    for (size_t i = 0; i < *count; i++) {
        char path[64];
        json_t *o;
        snprintf(path, sizeof path, "%s[%zu]", key, i);
        if (probe_json_obj_at(ld, arr, i, key, &o) < 0 || fn(ld, o, path, (char *)*out + i * elem) < 0)
            return -1;
    }
    return 0;
}

static int s_gpu_fn(struct probe_jctx *ld, const json_t *o, const char *p, void *x) { return s_load_gpu(ld, o, p, x); }
static int s_p2p_fn(struct probe_jctx *ld, const json_t *o, const char *p, void *x) { return s_load_p2p(ld, o, p, x); }
static int s_sweep_fn(struct probe_jctx *ld, const json_t *o, const char *p, void *x) { return s_load_sweep(ld, o, p, x); }
static int s_step_fn(struct probe_jctx *ld, const json_t *o, const char *p, void *x) { return s_load_step(ld, o, p, x); }

static int s_load_hosts(struct probe_jctx *ld, const json_t *root, struct probe_meas *m)
{
    json_t *arr;
    if (probe_json_arr(ld, root, "", "hosts", 1, PROBE_MAX_GPUS, &arr) < 0)
        return -1;
    m->hosts = calloc(json_array_size(arr) + 1, sizeof *m->hosts);
    if (m->hosts == NULL)
        return probe_err_set(ld->err, "%s: out of memory", ld->origin), -1;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *h = json_array_get(arr, i);
        if (!json_is_string(h))
            return probe_json_bad(ld, "", "hosts[]", "a host name string", h);
        if ((m->hosts[i] = strdup(json_string_value(h))) == NULL)
            return probe_err_set(ld->err, "%s: out of memory", ld->origin), -1;
        m->nhosts = i + 1;
    }
    return 0;
}

struct probe_meas *probe_meas_from_json(json_t *root, const char *origin, struct probe_err *err)
{
    struct probe_jctx ld = { origin, err };
    char schema[64] = "";
    struct probe_meas *m = calloc(1, sizeof *m);
    if (m == NULL) {
        probe_err_set(err, "%s: out of memory", origin);
        return NULL;
    }
    m->json = json_incref(root);
    if (!json_is_object(root)) {
        probe_json_bad(&ld, "", "(top level)", "an object", root);
        goto error;
    }
    if (probe_json_str(&ld, root, "", "schema", 1, schema, sizeof schema) < 0)
        goto error;
    if (strcmp(schema, PROBE_SCHEMA) != 0) {
        probe_err_set(err, "%s: field schema is \"%s\"; this plaunch reads \"%s\" (docs/probe.md)", origin,
                      schema, PROBE_SCHEMA);
        goto error;
    }
    if (probe_json_str(&ld, root, "", "source", 1, m->source, sizeof m->source) < 0 ||
        probe_json_str(&ld, root, "", "date", 1, m->date, sizeof m->date) < 0 || s_load_hosts(&ld, root, m) < 0 ||
        s_load_config(&ld, root, &m->config) < 0)
        goto error;
    json_t *pre = json_object_get(root, "preflight");
    if (!json_is_object(pre)) {
        probe_json_bad(&ld, "", "preflight", "an object", pre);
        goto error;
    }
    if (s_load_list(&ld, pre, "gpus", 1, PROBE_MAX_GPUS, sizeof *m->gpus, s_gpu_fn, (void **)&m->gpus, &m->ngpus) < 0 ||
        s_load_list(&ld, pre, "p2p", 0, PROBE_MAX_GPUS, sizeof *m->p2p, s_p2p_fn, (void **)&m->p2p, &m->np2p) < 0 ||
        s_load_list(&ld, root, "sweeps", 0, PROBE_MAX_SWEEPS, sizeof *m->sweeps, s_sweep_fn, (void **)&m->sweeps,
                    &m->nsweeps) < 0 ||
        s_load_list(&ld, root, "steps", 0, PROBE_MAX_SWEEPS, sizeof *m->steps, s_step_fn, (void **)&m->steps,
                    &m->nsteps) < 0 ||
        s_load_pairwise(&ld, root, m) < 0)
        goto error;
    return m;
error:
    probe_meas_destroy(&m);
    return NULL;
}

struct probe_meas *probe_meas_load(const char *path, struct probe_err *err)
{
    json_error_t je;
    char why[512];
    int fd = optfile_open(path, "measurement file", OPTFILE_MAX_REPORT, why, sizeof why);
    if (fd < 0) {
        probe_err_set(err, "%s; give the JSON file that `plaunch probe --json` or the probe worker's --out wrote", why);
        return NULL;
    }
    json_t *root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
    close(fd);
    if (root == NULL) {
        if (je.line < 1)
            probe_err_set(err, "%s: cannot read: %s; give the JSON file that `plaunch probe --json` or the "
                               "probe worker's --out wrote", path, je.text);
        else
            probe_err_set(err, "%s:%d:%d: not valid JSON: %s", path, je.line, je.column, je.text);
        return NULL;
    }
    struct probe_meas *m = probe_meas_from_json(root, path, err);
    json_decref(root);
    return m;
}

void probe_meas_destroy(struct probe_meas **mp)
{
    struct probe_meas *m = mp ? *mp : NULL;
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->nhosts; i++)
        free(m->hosts[i]);
    free(m->hosts);
    free(m->gpus);
    for (size_t i = 0; m->p2p && i < m->np2p; i++) {
        free(m->p2p[i].ranks);
        free(m->p2p[i].can);
    }
    free(m->p2p);
    for (size_t i = 0; m->sweeps && i < m->nsweeps; i++) {
        free(m->sweeps[i].ranks);
        free(m->sweeps[i].results);
    }
    free(m->sweeps);
    free(m->steps);
    free(m->pair_ranks);
    free(m->pair_gbps);
    json_decref(m->json);
    free(m);
    *mp = NULL;
}

const struct probe_sweep *probe_meas_sweep(const struct probe_meas *m, enum probe_group g, int n)
{
    for (size_t i = 0; i < m->nsweeps; i++)
        if (m->sweeps[i].group == g && m->sweeps[i].n == n)
            return &m->sweeps[i];
    return NULL;
}

const struct probe_result *probe_sweep_result(const struct probe_sweep *s, uint64_t bytes)
{
    for (size_t i = 0; s && i < s->nresults; i++)
        if (s->results[i].bytes == bytes)
            return &s->results[i];
    return NULL;
}

const struct probe_step *probe_meas_step(const struct probe_meas *m, int n)
{
    for (size_t i = 0; i < m->nsteps; i++)
        if (m->steps[i].n == n)
            return &m->steps[i];
    return NULL;
}

const struct probe_gpu *probe_meas_gpu(const struct probe_meas *m, int rank)
{
    for (size_t i = 0; i < m->ngpus; i++)
        if (m->gpus[i].rank == rank)
            return &m->gpus[i];
    return NULL;
}

static int s_cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

uint64_t *probe_meas_sizes(const struct probe_meas *m, size_t *n)
{
    size_t cap = 1;
    *n = 0;
    for (size_t i = 0; i < m->nsweeps; i++)
        cap += m->sweeps[i].nresults;
    uint64_t *sizes = calloc(cap, sizeof *sizes);
    for (size_t i = 0; sizes && i < m->nsweeps; i++)
        for (size_t k = 0; k < m->sweeps[i].nresults; k++) {
            size_t j = 0;
            while (j < *n && sizes[j] != m->sweeps[i].results[k].bytes)
                j++;
            if (j == *n)
                sizes[(*n)++] = m->sweeps[i].results[k].bytes;
        }
    if (sizes)
        qsort(sizes, *n, sizeof *sizes, s_cmp_u64);
    return sizes;
}
