/* probe_meas_load: the sections of a measurement document (config, GPUs, P2P, sweeps, steps, pairwise), each
 * read and checked field by field. */
#include "launcher/probe/measure/probe_meas_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nccl-tests' algbw and busbw (probe_meas.c exports the same for the reports; this floor calls no one above). */
static double s_algbw(uint64_t bytes, double time_us)
{
    return time_us > 0 ? (double)bytes / time_us / 1e3 : NAN;
}

static double s_busbw(enum probe_op op, double algbw, int n)
{
    return algbw * probe_op_bus_factor(op, n);
}

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

/* config.ops, dtype and timing; schema 1 knew AllReduce of float32 timed with CUDA events only. */
static int s_load_kinds(struct probe_jctx *ld, const json_t *o, struct probe_config *c)
{
    char name[32] = "float";
    json_t *ops;
    c->ops[0] = PROBE_OP_ALLREDUCE, c->nops = 1;
    c->dtype = PROBE_DT_FLOAT;
    c->timing = c->schema == 1 ? PROBE_TIMING_EVENTS : PROBE_TIMING_HOST;
    if (probe_json_str(ld, o, "config", "dtype", 0, name, sizeof name) < 0)
        return -1;
    if (probe_dtype_parse(name, &c->dtype) < 0)
        return probe_json_bad(ld, "config", "dtype", "one of " PROBE_DTYPES_VALID, json_object_get(o, "dtype"));
    if (c->schema == 1)
        return 0;
    snprintf(name, sizeof name, "host");
    if (probe_json_str(ld, o, "config", "timing", 0, name, sizeof name) < 0)
        return -1;
    if (probe_timing_parse(name, &c->timing) < 0)
        return probe_json_bad(ld, "config", "timing", "\"host\" or \"events\"", json_object_get(o, "timing"));
    if (probe_json_arr(ld, o, "config", "ops", 0, PROBE_NOPS, &ops) < 0)
        return -1;
    for (size_t i = 0; ops && i < json_array_size(ops); i++) {
        json_t *v = json_array_get(ops, i);
        enum probe_op op;
        if (!json_is_string(v) || probe_op_parse(json_string_value(v), strlen(json_string_value(v)), &op) < 0)
            return probe_json_bad(ld, "config", "ops[]", "one of " PROBE_OPS_VALID, v);
        c->ops[i] = op;
        c->nops = (int)i + 1;
    }
    return 0;
}

/* An in-place or out-of-place figure: time_us (required), verified (required), wrong (optional). */
static int s_load_place(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_place *p)
{
    p->wrong = NAN;
    if (probe_json_num(ld, o, path, "time_us", 1, 1e-9, &p->time_us) < 0 ||
        probe_json_num(ld, o, path, "wrong", 0, 0, &p->wrong) < 0)
        return -1;
    json_t *ver = json_object_get(o, "verified");
    if (!json_is_boolean(ver))
        return probe_json_bad(ld, path, "verified", "true or false", ver);
    p->verified = json_is_true(ver);
    return 0;
}

int probe_meas_load_config(struct probe_jctx *ld, const json_t *root, struct probe_config *c)
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
    if (probe_json_num(ld, o, "config", "step_gflop", 0, 0, &c->step_gflop) < 0)
        return -1;
    return s_load_kinds(ld, o, c);
}

int probe_meas_load_gpu(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_gpu *g)
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

int probe_meas_load_p2p(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_p2p *p)
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

int probe_meas_load_sweep(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_sweep *s)
{
    long long v;
    char group[32] = "first-n", op[32] = "allreduce";
    json_t *res;
    if (probe_json_int(ld, o, path, "n", 1, 1, PROBE_MAX_GPUS, &v) < 0 ||
        probe_json_str(ld, o, path, "op", 0, op, sizeof op) < 0)
        return -1;
    s->n = (int)v;
    if (probe_op_parse(op, strlen(op), &s->op) < 0)
        return probe_json_bad(ld, path, "op", "one of " PROBE_OPS_VALID, json_object_get(o, "op"));
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
        r->bytes = r->nominal = (uint64_t)v;
        v = 0;
        if (probe_json_int(ld, ro, rpath, "nominal_bytes", 0, 1, INT64_MAX, &v) < 0)
            return -1;
        r->nominal = v ? (uint64_t)v : r->bytes;
        v = 0;
        if (probe_json_int(ld, ro, rpath, "count", 0, 0, INT64_MAX, &v) < 0)
            return -1;
        r->count = (uint64_t)v;
        struct probe_place out;
        if (s_load_place(ld, ro, rpath, &out) < 0)
            return -1;
        r->time_us = out.time_us, r->wrong = out.wrong, r->verified = out.verified;
        r->algbw = s_algbw(r->bytes, r->time_us);
        r->busbw = s_busbw(s->op, r->algbw, s->n);
        json_t *ip = json_object_get(ro, "in_place");
        if (ip == NULL || json_is_null(ip))
            continue;
        char ippath[112];
        snprintf(ippath, sizeof ippath, "%s.in_place", rpath);
        if (!json_is_object(ip))
            return probe_json_bad(ld, rpath, "in_place", "an object or null", ip);
        if (s_load_place(ld, ip, ippath, &r->ip) < 0)
            return -1;
        r->has_ip = 1;
        r->ip.algbw = s_algbw(r->bytes, r->ip.time_us);
        r->ip.busbw = s_busbw(s->op, r->ip.algbw, s->n);
    }
    return 0;
}

int probe_meas_load_step(struct probe_jctx *ld, const json_t *o, const char *path, struct probe_step *st)
{
    long long v;
    st->compute_us = st->comm_us = NAN;
    if (probe_json_int(ld, o, path, "n", 1, 1, PROBE_MAX_GPUS, &v) < 0 ||
        probe_json_num(ld, o, path, "step_time_us", 1, 1e-9, &st->step_us) < 0 ||
        probe_json_num(ld, o, path, "compute_time_us", 0, 0, &st->compute_us) < 0 ||
        probe_json_num(ld, o, path, "comm_time_us", 0, 0, &st->comm_us) < 0 ||
        (isnan(st->comm_us) && probe_json_num(ld, o, path, "allreduce_time_us", 0, 0, &st->comm_us) < 0))
        return -1;
    st->n = (int)v;
    int r = probe_json_num(ld, o, path, "throughput", 0, 1e-12, &st->throughput);
    if (r < 0)
        return -1;
    if (r == 0) /* one unit of work per GPU per step */
        st->throughput = st->n * 1e6 / st->step_us;
    return 0;
}

int probe_meas_load_pairwise(struct probe_jctx *ld, const json_t *root, struct probe_meas *m)
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

