/* mon_preflight: the per-GPU checks before a job starts (found, answering, retired pages, remapped rows,
 * uncorrectable ECC, foreign processes), one finding per line. */
#include "launcher/monitor/sampling/mon_preflight.h"

#include "launcher/monitor/sampling/mon_wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_TREE_MAX 4096
#define S_RESERVE 96 /* kept free for the "N more findings" line */

struct s_out {
    char *text;
    size_t cap, len;
    int lines, dropped;
};

__attribute__((format(printf, 3, 4))) static void s_line(struct s_out *o, const char *who, const char *fmt, ...)
{
    char line[MON_WIRE_LINE_MAX];
    int k = snprintf(line, sizeof line, "%s: ", who);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
    va_end(ap);
    size_t need = strlen(line) + 1;
    if (o->len + need + S_RESERVE > o->cap) {
        o->dropped++;
        return;
    }
    memcpy(o->text + o->len, line, need);
    o->len += need;
    o->lines++;
}

static void s_count(char *buf, size_t cap, mon_nvml_ret rc, unsigned long long v)
{
    if (rc == MON_NVML_SUCCESS)
        snprintf(buf, cap, "%llu", v);
    else
        snprintf(buf, cap, "?");
}

static unsigned s_retired(const struct mon_nvml *nv, mon_nvml_dev h)
{
    unsigned total = 0;
    for (int cause = MON_NVML_RETIRE_SBE; cause <= MON_NVML_RETIRE_DBE; cause++) {
        unsigned long long addr[1], ts[1];
        unsigned count = 0;
        mon_nvml_ret rc = nv->retired_pages(h, cause, &count, addr, ts);
        if (rc == MON_NVML_SUCCESS || rc == MON_NVML_ERROR_INSUFFICIENT_SIZE)
            total += count;
    }
    return total;
}

static void s_memory_health(const struct mon_nvml *nv, mon_nvml_dev h, const char *who, struct s_out *o)
{
    int pending = 0;
    if (nv->retired_pending && nv->retired_pending(h, &pending) == MON_NVML_SUCCESS && pending)
        s_line(o, who, "page retirement pending (%u pages retired): reset the GPU or drain the node",
               nv->retired_pages ? s_retired(nv, h) : 0);
    unsigned corr = 0, unc = 0, rpending = 0, failed = 0;
    if (nv->remapped_rows && nv->remapped_rows(h, &corr, &unc, &rpending, &failed) == MON_NVML_SUCCESS) {
        if (failed)
            s_line(o, who, "a row remapping failed (%u rows remapped for uncorrectable errors): the GPU needs "
                           "service; drain the node", unc);
        else if (rpending)
            s_line(o, who, "row remapping pending (%u rows remapped for uncorrectable errors, %u for correctable "
                           "ones): reset the GPU or drain the node", unc, corr);
    }
    unsigned long long vol = 0, agg = 0;
    mon_nvml_ret rv = nv->ecc_total ? nv->ecc_total(h, MON_NVML_ECC_UNCORRECTED, MON_NVML_ECC_VOLATILE, &vol)
                                    : MON_NVML_ERROR_NOT_SUPPORTED;
    mon_nvml_ret ra = nv->ecc_total ? nv->ecc_total(h, MON_NVML_ECC_UNCORRECTED, MON_NVML_ECC_AGGREGATE, &agg)
                                    : MON_NVML_ERROR_NOT_SUPPORTED;
    if ((rv == MON_NVML_SUCCESS && vol > 0) || (ra == MON_NVML_SUCCESS && agg > 0)) {
        char v[24], a[24];
        s_count(v, sizeof v, rv, vol);
        s_count(a, sizeof a, ra, agg);
        s_line(o, who, "uncorrectable ECC errors: %s since the driver loaded, %s in the GPU's life: check "
                       "`nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`; drain the node if they grow", v, a);
    }
}

/* Compute processes on the GPU that are not in the tree of ours. */
static void s_foreign(const struct mon_nvml *nv, mon_nvml_dev h, const pid_t *tree, int ntree, const char *who,
                      struct s_out *o)
{
    struct mon_nvml_proc *list = NULL;
    unsigned cap = 0;
    mon_nvml_ret rc;
    int n = mon_nvml_procs(nv, h, &list, &cap, &rc), others = 0;
    char names[320] = "";
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        int mine = 0;
        for (int j = 0; j < ntree && !mine; j++)
            mine = (pid_t)list[i].pid == tree[j];
        if (mine)
            continue;
        if (others++ < 4 && k < sizeof names - 64) {
            unsigned long long b = list[i].used_gpu_memory;
            if (b == MON_NVML_VALUE_NOT_AVAILABLE)
                k += (size_t)snprintf(names + k, sizeof names - k, "%spid %u", k ? ", " : "", list[i].pid);
            else
                k += (size_t)snprintf(names + k, sizeof names - k, "%spid %u with %.1f GiB", k ? ", " : "",
                                      list[i].pid, (double)b / (1024.0 * 1024.0 * 1024.0));
        }
    }
    if (others)
        s_line(o, who, "%d other process%s already on it (%s%s): another job is using this GPU; see `nvidia-smi`",
               others, others == 1 ? "" : "es", names, others > 4 ? ", ..." : "");
    free(list);
}

int mon_preflight_run(const struct mon_nvml *nv, mon_proc_t *p, pid_t ours, const char *const *gpus, int n,
                      char *text, size_t cap, size_t *len)
{
    struct s_out o = { .text = text, .cap = cap };
    pid_t *tree = calloc(S_TREE_MAX, sizeof *tree);
    int ntree = tree ? mon_proc_tree(p, ours, tree, S_TREE_MAX) : 0;
    for (int i = 0; i < n && nv->lib; i++) {
        char who[MON_GPU_MAX + 48], pci[32];
        mon_nvml_dev h, parent;
        mon_nvml_ret rc = mon_nvml_lookup(nv, gpus[i], &h, &parent);
        if (rc == MON_NVML_ERROR_GPU_IS_LOST) {
            snprintf(who, sizeof who, "GPU %s", gpus[i]);
            s_line(&o, who, "it has fallen off the bus (%s): drain the node; the GPU needs a reset or service",
                   mon_nvml_error(nv, rc));
            continue;
        }
        if (rc != MON_NVML_SUCCESS) {
            snprintf(who, sizeof who, "GPU %s", gpus[i]);
            s_line(&o, who, "NVML cannot find it (%s): compare --gpus or CUDA_VISIBLE_DEVICES with `nvidia-smi -L`",
                   mon_nvml_error(nv, rc));
            continue;
        }
        mon_nvml_pci(nv, parent, pci, sizeof pci);
        if (pci[0])
            snprintf(who, sizeof who, "GPU %s (%s)", gpus[i], pci);
        else
            snprintf(who, sizeof who, "GPU %s", gpus[i]);
        struct mon_nvml_memory mem;
        rc = nv->memory ? nv->memory(h, &mem) : MON_NVML_SUCCESS;
        if (rc == MON_NVML_ERROR_GPU_IS_LOST) {
            s_line(&o, who, "it does not answer (%s): drain the node; the GPU needs a reset or service",
                   mon_nvml_error(nv, rc));
            continue;
        }
        s_memory_health(nv, parent, who, &o);
        s_foreign(nv, h, tree, ntree, who, &o);
    }
    free(tree);
    if (o.dropped) {
        int k = snprintf(o.text + o.len, cap - o.len, "%d more findings not shown", o.dropped);
        o.len += (size_t)k + 1;
        o.lines++;
    }
    *len = o.len;
    return o.lines;
}

int mon_preflight_procs(const struct mon_nvml *nv, int nvml_ok, const char *const *gpus, int n, char *text, size_t cap,
                        size_t *len)
{
    struct s_out o = { .text = text, .cap = cap };
    struct mon_nvml_proc *list = NULL;
    unsigned lcap = 0;
    for (int i = 0; i < n && nvml_ok && nv->lib; i++) {
        mon_nvml_dev h, parent;
        mon_nvml_ret rc;
        if (mon_nvml_lookup(nv, gpus[i], &h, &parent) != MON_NVML_SUCCESS)
            continue;
        int k = mon_nvml_procs(nv, h, &list, &lcap, &rc);
        for (int j = 0; j < k; j++) {
            char line[MON_WIRE_LINE_MAX];
            unsigned long long mib = list[j].used_gpu_memory == MON_NVML_VALUE_NOT_AVAILABLE
                                         ? 0 : list[j].used_gpu_memory >> 20;
            size_t need = (size_t)snprintf(line, sizeof line, "%s %u %llu", gpus[i], list[j].pid, mib) + 1;
            if (o.len + need > o.cap)
                break;
            memcpy(o.text + o.len, line, need);
            o.len += need;
            o.lines++;
        }
    }
    free(list);
    *len = o.len;
    return o.lines;
}
