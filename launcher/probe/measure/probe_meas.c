/* probe_meas: loads and validates a probe measurement document (schemas plaunch-probe/2 and /1). */
#include "launcher/probe/measure/probe_meas.h"
#include "launcher/probe/measure/probe_json.h"
#include "launcher/probe/measure/probe_meas_load.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/optfile.h"

double probe_algbw(uint64_t bytes, double time_us)
{
    return time_us > 0 ? (double)bytes / time_us / 1e3 : NAN;
}

double probe_busbw(enum probe_op op, double algbw, int n)
{
    return n > 0 ? algbw * probe_op_bus_factor(op, n) : NAN;
}

double probe_sweep_avg_busbw(const struct probe_sweep *s)
{
    double sum = 0;
    int k = 0;
    for (size_t i = 0; s && i < s->nresults; i++) {
        sum += s->results[i].busbw, k++;
        if (s->results[i].has_ip)
            sum += s->results[i].ip.busbw, k++;
    }
    return k ? sum / k : NAN;
}

/* An array of n ranks; absent means 0..n-1 when dflt. */
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

static int s_gpu_fn(struct probe_jctx *ld, const json_t *o, const char *p, void *x) { return probe_meas_load_gpu(ld, o, p, x); }
static int s_p2p_fn(struct probe_jctx *ld, const json_t *o, const char *p, void *x) { return probe_meas_load_p2p(ld, o, p, x); }
static int s_sweep_fn(struct probe_jctx *ld, const json_t *o, const char *p, void *x) { return probe_meas_load_sweep(ld, o, p, x); }
static int s_step_fn(struct probe_jctx *ld, const json_t *o, const char *p, void *x) { return probe_meas_load_step(ld, o, p, x); }

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

/* A document without config.ops names its collectives by its sweeps, in their order. */
static void s_ops_from_sweeps(const json_t *root, struct probe_meas *m)
{
    if (json_object_get(json_object_get(root, "config"), "ops") != NULL || m->nsweeps == 0)
        return;
    m->config.nops = 0;
    for (size_t i = 0; i < m->nsweeps; i++) {
        int seen = 0;
        for (int k = 0; k < m->config.nops; k++)
            seen |= m->config.ops[k] == m->sweeps[i].op;
        if (!seen)
            m->config.ops[m->config.nops++] = m->sweeps[i].op;
    }
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
    m->config.schema = strcmp(schema, PROBE_SCHEMA) == 0 ? 2 : strcmp(schema, PROBE_SCHEMA_1) == 0 ? 1 : 0;
    if (m->config.schema == 0) {
        probe_err_set(err, "%s: field schema is \"%s\"; this plaunch reads \"%s\" and \"%s\" (docs/probe.md)",
                      origin, schema, PROBE_SCHEMA, PROBE_SCHEMA_1);
        goto error;
    }
    if (probe_json_str(&ld, root, "", "source", 1, m->source, sizeof m->source) < 0 ||
        probe_json_str(&ld, root, "", "date", 1, m->date, sizeof m->date) < 0 || s_load_hosts(&ld, root, m) < 0 ||
        probe_meas_load_config(&ld, root, &m->config) < 0)
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
        probe_meas_load_pairwise(&ld, root, m) < 0)
        goto error;
    s_ops_from_sweeps(root, m);
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

const struct probe_sweep *probe_meas_sweep(const struct probe_meas *m, enum probe_op op, enum probe_group g, int n)
{
    for (size_t i = 0; i < m->nsweeps; i++)
        if (m->sweeps[i].op == op && m->sweeps[i].group == g && m->sweeps[i].n == n)
            return &m->sweeps[i];
    return NULL;
}

const struct probe_result *probe_sweep_result(const struct probe_sweep *s, uint64_t nominal)
{
    for (size_t i = 0; s && i < s->nresults; i++)
        if (s->results[i].nominal == nominal)
            return &s->results[i];
    return NULL;
}

int probe_meas_has_op(const struct probe_meas *m, enum probe_op op)
{
    for (size_t i = 0; i < m->nsweeps; i++)
        if (m->sweeps[i].op == op)
            return 1;
    return 0;
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
            while (j < *n && sizes[j] != m->sweeps[i].results[k].nominal)
                j++;
            if (j == *n)
                sizes[(*n)++] = m->sweeps[i].results[k].nominal;
        }
    if (sizes)
        qsort(sizes, *n, sizeof *sizes, s_cmp_u64);
    return sizes;
}
