/* probe_out.cu: rank 0 writes the measurement document (schema plaunch-probe/2, described in docs/probe.md). */
#include "worker/probe/probe_worker.h"

extern "C" {
#include "common/ownfile.h"
}

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef PLAUNCH_VERSION
#define PLAUNCH_VERSION "unknown"
#endif

/* Plain fprintf JSON, not a library: the worker must run on GPU machines that have only CUDA and NCCL. */
static void s_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void s_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6f", v);
    else
        fputs("null", f);
}

static void s_ranks(FILE *f, const int *ranks, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", ranks[i]);
    fputc(']', f);
}

/* Ranks of host h's GPUs in local-rank order (recs are in rank order; local ranks ascend within a host). */
static int s_host_ranks(const struct pw_ctx *c, const char *host, int *out)
{
    int n = 0;
    for (int r = 0; r < c->world; r++)
        if (strcmp(c->recs[r].host, host) == 0)
            out[n++] = r;
    return n;
}

static int s_first_of_host(const struct pw_ctx *c, int r)
{
    for (int q = 0; q < r; q++)
        if (strcmp(c->recs[q].host, c->recs[r].host) == 0)
            return 0;
    return 1;
}

static void s_preflight(FILE *f, const struct pw_ctx *c, int *tmp)
{
    fputs(" \"preflight\": {\n  \"gpus\": [", f);
    for (int r = 0; r < c->world; r++) {
        const struct pw_gpu_rec *g = &c->recs[r];
        fprintf(f, "%s\n   {\"rank\": %d, \"host\": ", r ? "," : "", g->rank);
        s_str(f, g->host);
        fprintf(f, ", \"local_rank\": %d, \"device\": %d, \"pci_bus_id\": ", g->local_rank, g->device);
        s_str(f, g->pci);
        fputs(", \"name\": ", f);
        s_str(f, g->name);
        fprintf(f, ", \"memory_bytes\": %llu, \"compute_capability\": \"%d.%d\", \"driver_cuda_version\": %d, "
                   "\"runtime_cuda_version\": %d, \"nccl_version\": %d}", (unsigned long long)g->memory,
                g->cc_major, g->cc_minor, g->driver, g->runtime, g->nccl);
    }
    fputs("\n  ],\n  \"p2p\": [", f);
    int first = 1;
    for (int r = 0; r < c->world; r++) {
        if (!s_first_of_host(c, r))
            continue;
        int n = s_host_ranks(c, c->recs[r].host, tmp);
        fprintf(f, "%s\n   {\"host\": ", first ? "" : ",");
        first = 0;
        s_str(f, c->recs[r].host);
        fputs(", \"ranks\": ", f);
        s_ranks(f, tmp, n);
        fputs(", \"matrix\": [", f);
        for (int i = 0; i < n; i++) {
            const struct pw_gpu_rec *a = &c->recs[tmp[i]];
            fputs(i ? ", [" : "[", f);
            for (int j = 0; j < n; j++) {
                int d = c->recs[tmp[j]].device;
                fprintf(f, "%s%s", j ? "," : "", i == j || (d < a->ndev && a->p2p[d]) ? "true" : "false");
            }
            fputc(']', f);
        }
        fputs("]}", f);
    }
    fputs("\n  ]\n },\n", f);
}

/* One placement's figures: time, nccl-tests' algbw and busbw, wrong elements, verified. */
static void s_placement(FILE *f, const struct pw_result *r, int ip, double factor)
{
    double algbw = (double)r->bytes / r->time_us[ip] / 1e3;
    fputs("\"time_us\": ", f);
    s_num(f, r->time_us[ip]);
    fputs(", \"algbw_gbps\": ", f);
    s_num(f, algbw);
    fputs(", \"busbw_gbps\": ", f);
    s_num(f, algbw * factor);
    fprintf(f, ", \"wrong\": %.0f, \"verified\": %s", r->wrong[ip], r->wrong[ip] == 0 ? "true" : "false");
}

static void s_sweeps(FILE *f, const struct pw_ctx *c)
{
    int first = 1;
    fputs(" \"sweeps\": [", f);
    for (int o = 0; o < c->o.nops; o++)
        for (int i = 0; i < c->ngroups; i++) {
            enum probe_op op = c->o.ops[o];
            const struct pw_group *g = &c->groups[i];
            fprintf(f, "%s\n  {\"op\": \"%s\", \"n\": %d, \"group\": \"%s\", \"nodes\": %d, \"ranks\": ",
                    first ? "" : ",", probe_op_name(op), g->n, g->one_per_node ? "one-per-node" : "first-n", g->nodes);
            first = 0;
            s_ranks(f, g->ranks, g->n);
            fputs(", \"results\": [", f);
            for (int k = 0; k < g->nres[op]; k++) {
                const struct pw_result *r = &g->res[op][k];
                fprintf(f, "%s\n   {\"bytes\": %llu, \"nominal_bytes\": %llu, \"count\": %zu, ", k ? "," : "",
                        (unsigned long long)r->bytes, (unsigned long long)r->nominal, r->count);
                s_placement(f, r, 0, probe_op_bus_factor(op, g->n));
                fputs(", \"in_place\": {", f);
                s_placement(f, r, 1, probe_op_bus_factor(op, g->n));
                fputs("}}", f);
            }
            fputs("]}", f);
        }
    fputs("\n ],\n", f);
}

static void s_pairwise(FILE *f, const struct pw_ctx *c, int *tmp)
{
    if (c->pair == NULL) {
        fputs(" \"pairwise\": null,\n", f);
        return;
    }
    fprintf(f, " \"pairwise\": {\"bytes\": %llu, \"ranks\": ",
            (unsigned long long)(c->o.pair_bytes < c->o.max_bytes ? c->o.pair_bytes : c->o.max_bytes));
    for (int r = 0; r < c->world; r++)
        tmp[r] = r;
    s_ranks(f, tmp, c->world);
    fputs(", \"gbps\": [", f);
    for (int i = 0; i < c->world; i++) {
        fputs(i ? ",\n  [" : "\n  [", f);
        for (int j = 0; j < c->world; j++) {
            fputs(j ? "," : "", f);
            s_num(f, i == j ? NAN : c->pair[i * c->world + j]);
        }
        fputc(']', f);
    }
    fputs("]},\n", f);
}

static void s_steps(FILE *f, const struct pw_ctx *c)
{
    int first = 1;
    fputs(" \"steps\": [", f);
    for (int i = 0; i < c->ngroups; i++) {
        const struct pw_group *g = &c->groups[i];
        if (g->one_per_node || g->step_us <= 0)
            continue;
        fprintf(f, "%s\n  {\"n\": %d, \"step_time_us\": ", first ? "" : ",", g->n);
        first = 0;
        s_num(f, g->step_us);
        fputs(", \"compute_time_us\": ", f);
        s_num(f, g->compute_us);
        fputs(", \"comm_time_us\": ", f);
        s_num(f, g->comm_us);
        fputs(", \"throughput\": ", f);
        s_num(f, g->n * 1e6 / g->step_us);
        fputc('}', f);
    }
    fputs("\n ]\n", f);
}

void pw_write_json(const struct pw_ctx *c)
{
    char date[32], err[4200];
    struct ownfile_new out;
    int *tmp = (int *)calloc((size_t)c->world + 1, sizeof *tmp);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (ownfile_new_open(&out, c->o.out, 0644, 0, err, sizeof err) < 0)
        pw_die("%s", err);
    FILE *f = (FILE *)ownfile_new_stream(&out);
    if (f == NULL || tmp == NULL)
        pw_die("cannot write %s: %s; give --out a path in a writable directory", c->o.out, strerror(errno));
    fprintf(f, "{\n \"schema\": \"plaunch-probe/2\",\n \"source\": ");
    char source[512];
    snprintf(source, sizeof source, "measured by plaunch-probe-worker %s (%d rank%s on %d host%s)", PLAUNCH_VERSION,
             c->world, c->world == 1 ? "" : "s", c->nnodes, c->nnodes == 1 ? "" : "s");
    s_str(f, source);
    fprintf(f, ",\n \"date\": \"%s\",\n \"hosts\": [", date);
    for (int r = 0, k = 0; r < c->world; r++)
        if (s_first_of_host(c, r)) {
            fputs(k++ ? ", " : "", f);
            s_str(f, c->recs[r].host);
        }
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    fprintf(f, "],\n \"config\": {\"min_bytes\": %llu, \"max_bytes\": %llu, \"step_factor\": %d, "
               "\"warmup_iters\": %d, \"iters\": %d, \"grad_bytes\": %llu, \"step_gflop\": %g, \"step_iters\": %d, "
               "\"pairwise_bytes\": %llu, \"ops\": [", (unsigned long long)c->o.min_bytes,
            (unsigned long long)c->o.max_bytes, c->o.factor, c->o.warmup, c->o.iters,
            (unsigned long long)c->o.grad_bytes, c->o.step_gflop, c->o.step_iters,
            (unsigned long long)c->o.pair_bytes);
    for (int i = 0; i < c->o.nops; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", probe_op_name(c->o.ops[i]));
    fprintf(f, "], \"dtype\": \"%s\", \"redop\": \"sum\", \"root\": 0, \"timing\": \"%s\", \"timing_label\": ",
            probe_dtype_name(c->o.dtype), probe_timing_name(c->o.timing));
    s_str(f, probe_timing_label(c->o.timing));
    fprintf(f, ", \"world_size\": %d, \"nnodes\": %d, \"nccl_nvls_enable\": \"%s\"},\n", c->world, c->nnodes,
            nvls ? nvls : "");
    s_preflight(f, c, tmp);
    s_sweeps(f, c);
    s_pairwise(f, c, tmp);
    s_steps(f, c);
    fputs("}\n", f);
    if (ownfile_new_commit(&out, 1, err, sizeof err) < 0)
        pw_die("%s", err);
    free(tmp);
    fprintf(stderr, "probe: measurements written to %s\n", c->o.out);
}
